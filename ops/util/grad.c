/* grad.c - gradient-graph builders of the op utility library (oputil.h). */
#include "config.h"

#include <string.h>

#include "ops/util/oputil.h"

static int same_dims(const popc_view *v, const int64_t *dims, int rank)
{
    if (v->rank != rank)
        return 0;
    for (int i = 0; i < rank; i++)
        if (v->dims[i] != dims[i])
            return 0;
    return 1;
}

popc_status opu_grad_scalar(popc_grad_ctx *gc, popc_dtype dt, double v,
                            int *out)
{
    union {
        float f;
        uint16_t h;
        int32_t i;
        int64_t l;
        uint8_t b;
    } u;
    popc_view view;

    memset(&u, 0, sizeof u);
    switch (dt) {
    case POPC_DTYPE_F32: u.f = (float)v; break;
    case POPC_DTYPE_F16: u.h = opu_f2h((float)v); break;
    case POPC_DTYPE_I32: u.i = (int32_t)v; break;
    case POPC_DTYPE_I64: u.l = (int64_t)v; break;
    default: u.b = v != 0; break;
    }
    memset(&view, 0, sizeof view);
    view.dtype = dt;
    view.rank = 0;
    view.data = &u;
    return gc->host->grad_constant(gc, &view, out);
}

popc_status opu_grad_ints(popc_grad_ctx *gc, const int64_t *v, int n,
                          int *out)
{
    int64_t buf[64];
    popc_view view;

    if (n > 64)
        return gc->host->set_error(POPC_EINTERNAL,
                                   "'%s': constant of %d ints is too long",
                                   gc->node_name, n);
    memcpy(buf, v, (size_t)n * sizeof *buf);
    memset(&view, 0, sizeof view);
    view.dtype = POPC_DTYPE_I64;
    view.rank = 1;
    view.dims[0] = n;
    view.data = buf;
    return gc->host->grad_constant(gc, &view, out);
}

popc_status opu_grad_node(popc_grad_ctx *gc, const char *domain,
                          const char *op, const int *in, int n_in,
                          const popc_attr *attrs, int n_attrs, int *out)
{
    return gc->host->grad_add_node(gc, domain, op, in, n_in, out, 1, attrs,
                                   n_attrs);
}

popc_status opu_grad_sum_to_dims(popc_grad_ctx *gc, int value,
                                 const int64_t *dims, int rank, int *out)
{
    popc_view vi;
    popc_attr a = popc_attr_make_ints("shape", dims, rank);
    popc_status st;

    if ((st = gc->host->value_info(gc, value, &vi)) != POPC_OK)
        return st;
    if (same_dims(&vi, dims, rank)) {
        *out = value;
        return POPC_OK;
    }
    return opu_grad_node(gc, "popc", "SumToShape", &value, 1, &a, 1, out);
}

popc_status opu_grad_sum_to(popc_grad_ctx *gc, int g, const popc_view *target,
                            int *out)
{
    return opu_grad_sum_to_dims(gc, g, target->dims, target->rank, out);
}

popc_status opu_grad_reshape_dims(popc_grad_ctx *gc, int value,
                                  const int64_t *dims, int rank, int *out)
{
    popc_view vi;
    popc_attr a = popc_attr_make_int("allowzero", 1);
    popc_status st;
    int in[2];

    if ((st = gc->host->value_info(gc, value, &vi)) != POPC_OK)
        return st;
    if (same_dims(&vi, dims, rank)) {
        *out = value;
        return POPC_OK;
    }
    in[0] = value;
    if ((st = opu_grad_ints(gc, dims, rank, &in[1])) != POPC_OK)
        return st;
    /* allowzero: a 0 in the target is a real empty dimension */
    return opu_grad_node(gc, NULL, "Reshape", in, 2, &a, 1, out);
}

popc_status opu_grad_reshape(popc_grad_ctx *gc, int g,
                             const popc_view *target, int *out)
{
    return opu_grad_reshape_dims(gc, g, target->dims, target->rank, out);
}

popc_status opu_grad_scale(popc_grad_ctx *gc, int value, double s, int *out)
{
    int in[2];
    popc_status st;

    if (s == 1.0) {
        *out = value;
        return POPC_OK;
    }
    in[0] = value;
    if ((st = opu_grad_scalar(gc, POPC_DTYPE_F32, s, &in[1])) != POPC_OK)
        return st;
    return opu_grad_node(gc, NULL, "Mul", in, 2, NULL, 0, out);
}

popc_status opu_no_grad_output(const popc_grad_ctx *gc, const char *op, int j,
                                const char *what)
{
    if (j >= gc->n_outputs || gc->output_grads[j] < 0)
        return POPC_OK;
    return gc->host->set_error(POPC_EUNSUPPORTED,
                               "%s '%s': a gradient flows into its %s output, "
                               "which is not differentiable; use that output "
                               "only outside the loss",
                               op, gc->node_name, what);
}
