/* util.c - helpers shared by the nn, loss and popc op plugins (see util.h). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "ops/nn/util.h"

const popc_host *opsu_host;

char *opsu_dims_n(const int64_t *dims, int rank, char *buf)
{
    size_t len = 0;

    buf[len++] = '[';
    for (int i = 0; i < rank && len < OPSU_DIMS_LEN - 24; i++)
        len += (size_t)snprintf(buf + len, OPSU_DIMS_LEN - len, "%s%lld",
                                i ? ", " : "", (long long)dims[i]);
    buf[len++] = ']';
    buf[len] = '\0';
    return buf;
}

char *opsu_dims(const popc_view *v, char *buf)
{
    return opsu_dims_n(v->dims, v->rank, buf);
}

void opsu_range(int64_t n, int part, int n_parts, int64_t *lo, int64_t *hi)
{
    if (n_parts < 1) {
        part = 0;
        n_parts = 1;
    }
    *lo = n * part / n_parts;
    *hi = n * (part + 1) / n_parts;
}

int opsu_present(const popc_view *views, int n, int i)
{
    return i >= 0 && i < n && views[i].dtype != POPC_DTYPE_UNDEFINED;
}

int opsu_out_ready(const popc_kernel_ctx *kc, int i)
{
    return opsu_present(kc->outputs, kc->n_outputs, i) &&
           kc->outputs[i].data != NULL;
}

popc_status opsu_want_f32(const popc_infer_ctx *ic, const char *op, int i,
                          const char *what)
{
    const popc_view *v = &ic->inputs[i];

    if (v->dtype == POPC_DTYPE_F32)
        return POPC_OK;
    return ic->host->set_error(POPC_EINVAL,
                               "%s '%s': %s must be float32, got %s; cast "
                               "it to float32 first",
                               op, ic->node_name, what,
                               popc_dtype_name(v->dtype));
}

void opsu_set(popc_view *dst, popc_dtype dt, const int64_t *dims, int rank)
{
    memset(dst, 0, sizeof *dst);
    dst->dtype = dt;
    dst->rank = rank;
    for (int i = 0; i < rank; i++)
        dst->dims[i] = dims[i];
}

void opsu_set_like(popc_view *dst, const popc_view *src)
{
    opsu_set(dst, src->dtype, src->dims, src->rank);
}

popc_status opsu_axis(const char *op, const char *node, int64_t axis, int rank,
                      int *out)
{
    int64_t a = axis < 0 ? axis + rank : axis;

    if (a < 0 || a >= rank || rank == 0)
        return opsu_host->set_error(POPC_EINVAL,
                                    "%s '%s': axis %lld is out of range for "
                                    "an input of rank %d (valid: %d..%d)",
                                    op, node, (long long)axis, rank, -rank,
                                    rank - 1);
    *out = (int)a;
    return POPC_OK;
}

popc_status opsu_reduction(const char *op, const char *node,
                           const popc_attrs *attrs, int *out)
{
    const char *s = popc_attr_string(attrs, "reduction", "mean");

    if (strcmp(s, "mean") == 0)
        *out = OPSU_RED_MEAN;
    else if (strcmp(s, "sum") == 0)
        *out = OPSU_RED_SUM;
    else if (strcmp(s, "none") == 0)
        *out = OPSU_RED_NONE;
    else
        return opsu_host->set_error(POPC_EINVAL,
                                    "%s '%s': reduction '%s' is not "
                                    "supported; use \"mean\", \"sum\" or "
                                    "\"none\"",
                                    op, node, s);
    return POPC_OK;
}

popc_status opsu_node1(popc_grad_ctx *gc, const char *domain, const char *op,
                       const int *inputs, int n_inputs, const popc_attr *attrs,
                       int n_attrs, int *out)
{
    return gc->host->grad_add_node(gc, domain, op, inputs, n_inputs, out, 1,
                                   attrs, n_attrs);
}

popc_status opsu_const_i64(popc_grad_ctx *gc, const int64_t *v, int n, int *out)
{
    popc_view view;
    int64_t copy[POPC_MAX_RANK];

    if (n > POPC_MAX_RANK)
        return gc->host->set_error(POPC_EINTERNAL,
                                   "'%s': constant of %d ints is too long",
                                   gc->node_name, n);
    for (int i = 0; i < n; i++)
        copy[i] = v[i];
    memset(&view, 0, sizeof view);
    view.dtype = POPC_DTYPE_I64;
    view.rank = 1;
    view.dims[0] = n;
    view.data = copy;
    return gc->host->grad_constant(gc, &view, out);
}

popc_status opsu_const_f32(popc_grad_ctx *gc, float v, int *out)
{
    popc_view view;

    memset(&view, 0, sizeof view);
    view.dtype = POPC_DTYPE_F32;
    view.rank = 0;
    view.data = &v;
    return gc->host->grad_constant(gc, &view, out);
}

popc_status opsu_reshape(popc_grad_ctx *gc, int value, const int64_t *dims,
                         int rank, int *out)
{
    int in[2];
    popc_status st;

    in[0] = value;
    if ((st = opsu_const_i64(gc, dims, rank, &in[1])) != POPC_OK)
        return st;
    return opsu_node1(gc, NULL, "Reshape", in, 2, NULL, 0, out);
}

popc_status opsu_sum_to(popc_grad_ctx *gc, int value, const int64_t *dims,
                        int rank, int *out)
{
    popc_view info;
    popc_attr a = popc_attr_make_ints("shape", dims, rank);
    popc_status st;
    int same;

    if ((st = gc->host->value_info(gc, value, &info)) != POPC_OK)
        return st;
    same = info.rank == rank;
    for (int i = 0; same && i < rank; i++)
        same = info.dims[i] == dims[i];
    if (same) {
        *out = value;
        return POPC_OK;
    }
    return opsu_node1(gc, "popc", "SumToShape", &value, 1, &a, 1, out);
}

popc_status opsu_scale(popc_grad_ctx *gc, int value, double s, int *out)
{
    int in[2];
    popc_status st;

    if (s == 1.0) {
        *out = value;
        return POPC_OK;
    }
    in[0] = value;
    if ((st = opsu_const_f32(gc, (float)s, &in[1])) != POPC_OK)
        return st;
    return opsu_node1(gc, NULL, "Mul", in, 2, NULL, 0, out);
}

popc_status opsu_no_grad_output(const popc_grad_ctx *gc, const char *op, int j,
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

void opsu_copy_share(const popc_kernel_ctx *kc)
{
    for (int i = 0; i < kc->n_outputs && i < kc->n_inputs; i++) {
        const popc_view *x = &kc->inputs[i];
        int64_t lo, hi;
        size_t nb;

        if (!opsu_out_ready(kc, i) || !x->data)
            continue;
        nb = popc_view_nbytes(x);
        opsu_range((int64_t)nb, kc->part, kc->n_parts, &lo, &hi);
        if (hi > lo && kc->outputs[i].data != x->data)
            memcpy((char *)kc->outputs[i].data + lo, (const char *)x->data + lo,
                   (size_t)(hi - lo));
    }
}
