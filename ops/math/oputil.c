/* oputil.c - see oputil.h. Compiled into the math and tensor plugins. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "ops/math/oputil.h"

popc_dtype opu_dtype_from_onnx(int64_t onnx)
{
    switch (onnx) {
    case OPU_ONNX_FLOAT: return POPC_DTYPE_F32;
    case OPU_ONNX_FLOAT16: return POPC_DTYPE_F16;
    case OPU_ONNX_INT32: return POPC_DTYPE_I32;
    case OPU_ONNX_INT64: return POPC_DTYPE_I64;
    case OPU_ONNX_UINT8: return POPC_DTYPE_U8;
    case OPU_ONNX_BOOL: return POPC_DTYPE_BOOL;
    case OPU_ONNX_DOUBLE: return POPC_DTYPE_F64;
    case OPU_ONNX_INT8: return POPC_DTYPE_I8;
    case OPU_ONNX_INT16: return POPC_DTYPE_I16;
    case OPU_ONNX_UINT16: return POPC_DTYPE_U16;
    case OPU_ONNX_UINT32: return POPC_DTYPE_U32;
    case OPU_ONNX_UINT64: return POPC_DTYPE_U64;
    case OPU_ONNX_BFLOAT16: return POPC_DTYPE_BF16;
    default: return POPC_DTYPE_UNDEFINED;
    }
}

int64_t opu_dtype_to_onnx(popc_dtype dt)
{
    switch (dt) {
    case POPC_DTYPE_F32: return OPU_ONNX_FLOAT;
    case POPC_DTYPE_F16: return OPU_ONNX_FLOAT16;
    case POPC_DTYPE_I32: return OPU_ONNX_INT32;
    case POPC_DTYPE_I64: return OPU_ONNX_INT64;
    case POPC_DTYPE_U8: return OPU_ONNX_UINT8;
    case POPC_DTYPE_BOOL: return OPU_ONNX_BOOL;
    case POPC_DTYPE_F64: return OPU_ONNX_DOUBLE;
    case POPC_DTYPE_I8: return OPU_ONNX_INT8;
    case POPC_DTYPE_I16: return OPU_ONNX_INT16;
    case POPC_DTYPE_U16: return OPU_ONNX_UINT16;
    case POPC_DTYPE_U32: return OPU_ONNX_UINT32;
    case POPC_DTYPE_U64: return OPU_ONNX_UINT64;
    case POPC_DTYPE_BF16: return OPU_ONNX_BFLOAT16;
    default: return 0;
    }
}

char *opu_dims_str(const int64_t *dims, int rank, char *buf, size_t size)
{
    size_t len = 0;

    if (size == 0)
        return buf;
    buf[0] = '\0';
    len += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < rank && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld",
                                i ? ", " : "", (long long)dims[i]);
    if (len < size)
        snprintf(buf + len, size - len, "]");
    return buf;
}

char *opu_shape_str(const popc_view *v, char *buf, size_t size)
{
    return opu_dims_str(v->dims, v->rank, buf, size);
}

popc_status opu_error(const popc_host *h, popc_status st, const char *op,
                      const char *node, const char *fmt, ...)
{
    char msg[1536];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return h->set_error(st, "%s '%s': %s", op, node ? node : "?", msg);
}

popc_status opu_axis(const popc_host *h, const char *op, const char *node,
                     int64_t axis, int rank, const char *what, int *out)
{
    if (axis < -(int64_t)rank || axis >= rank)
        return opu_error(h, POPC_EINVAL, op, node,
                         "%s %lld is out of range for a rank-%d input; use a "
                         "value in [%d, %d]", what, (long long)axis, rank,
                         -rank, rank - 1);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return POPC_OK;
}

popc_status opu_const_ints(const popc_host *h, const char *op,
                           const char *node, const popc_view *v,
                           const char *what, int64_t *out, int cap, int *n)
{
    int64_t count;

    *n = 0;
    if (!opu_present(v))
        return opu_error(h, POPC_EINVAL, op, node, "%s is missing", what);
    if (v->dtype != POPC_DTYPE_I64 && v->dtype != POPC_DTYPE_I32)
        return opu_error(h, POPC_EINVAL, op, node,
                         "%s must be int64 or int32, got %s", what,
                         popc_dtype_name(v->dtype));
    if (v->rank > 1)
        return opu_error(h, POPC_EINVAL, op, node,
                         "%s must be a scalar or 1-D tensor, got rank %d",
                         what, v->rank);
    if (!v->data)
        return opu_error(h, POPC_EINVAL, op, node,
                         "%s must be a constant or initializer known at "
                         "compile time (shapes are static); fold it into a "
                         "constant", what);
    count = popc_view_numel(v);
    if (count > cap)
        return opu_error(h, POPC_EINVAL, op, node,
                         "%s has %lld values; at most %d are supported", what,
                         (long long)count, cap);
    for (int64_t i = 0; i < count; i++)
        out[i] = v->dtype == POPC_DTYPE_I64 ? ((const int64_t *)v->data)[i]
                                            : ((const int32_t *)v->data)[i];
    *n = (int)count;
    return POPC_OK;
}

double opu_scalar(const popc_view *v)
{
    switch (v->dtype) {
    case POPC_DTYPE_F32: return *(const float *)v->data;
    case POPC_DTYPE_F16: return opu_h2f(*(const uint16_t *)v->data);
    case POPC_DTYPE_I32: return *(const int32_t *)v->data;
    case POPC_DTYPE_I64: return (double)*(const int64_t *)v->data;
    case POPC_DTYPE_U8: case POPC_DTYPE_BOOL:
        return *(const uint8_t *)v->data;
    default: return 0;
    }
}

popc_status opu_broadcast(const popc_host *h, const char *op,
                          const char *node, const popc_view *in, int n,
                          popc_view *out)
{
    int rank = 0;

    for (int k = 0; k < n; k++)
        if (in[k].rank > rank)
            rank = in[k].rank;
    for (int d = 0; d < rank; d++) {
        int64_t dim = 1;
        int owner = -1;

        for (int k = 0; k < n; k++) {
            int kd = d - (rank - in[k].rank);
            int64_t v;

            if (kd < 0)
                continue;
            v = in[k].dims[kd];
            if (v == 1)
                continue;
            if (dim != 1 && v != dim) {
                char a[160], b[160];

                return opu_error(
                    h, POPC_EINVAL, op, node,
                    "cannot broadcast input %d of shape %s with input %d of "
                    "shape %s (dimension %d from the right is %lld vs "
                    "%lld); each dimension must be equal or 1 (numpy "
                    "rules)", owner, opu_shape_str(&in[owner], a, sizeof a),
                    k, opu_shape_str(&in[k], b, sizeof b), rank - d,
                    (long long)dim, (long long)v);
            }
            dim = v;
            owner = k;
        }
        out->dims[d] = dim;
    }
    out->rank = rank;
    return POPC_OK;
}

void opu_bcast_init(opu_bcast *b, const popc_view *out, const popc_view *in,
                    int n_in)
{
    int64_t dims[POPC_MAX_RANK];
    int64_t st[OPU_MAX_IN][POPC_MAX_RANK];
    int rank = 0;

    memset(b, 0, sizeof *b);
    b->n_in = n_in;
    /* full strides, dropping output dims of extent 1 */
    for (int d = 0; d < out->rank; d++) {
        if (out->dims[d] == 1)
            continue;
        dims[rank] = out->dims[d];
        for (int k = 0; k < n_in; k++) {
            int kd = d - (out->rank - in[k].rank);
            int64_t s = 0;

            if (kd >= 0 && in[k].dims[kd] != 1) {
                s = 1;
                for (int j = kd + 1; j < in[k].rank; j++)
                    s *= in[k].dims[j];
            }
            st[k][rank] = s;
        }
        rank++;
    }
    if (rank == 0) {
        dims[0] = 1;
        for (int k = 0; k < n_in; k++)
            st[k][0] = 1;
        rank = 1;
    }
    /* merge dim d into d-1 when every input walks them as one */
    b->rank = 0;
    for (int d = 0; d < rank; d++) {
        int merge = b->rank > 0;

        for (int k = 0; merge && k < n_in; k++)
            if (b->stride[k][b->rank - 1] != st[k][d] * dims[d])
                merge = 0;
        if (merge) {
            b->dims[b->rank - 1] *= dims[d];
            for (int k = 0; k < n_in; k++)
                b->stride[k][b->rank - 1] = st[k][d];
        } else {
            b->dims[b->rank] = dims[d];
            for (int k = 0; k < n_in; k++)
                b->stride[k][b->rank] = st[k][d];
            b->rank++;
        }
    }
    for (int k = 0; k < n_in; k++)
        b->inner[k] = (int)b->stride[k][b->rank - 1];
}

void opu_bcast_begin(opu_bcast_iter *it, const opu_bcast *b, int64_t start,
                     int64_t end)
{
    int64_t rem = start;

    it->b = b;
    it->pos = start;
    it->end = end;
    for (int k = 0; k < b->n_in; k++)
        it->cur[k] = 0;
    /* nothing to walk (maybe an empty output with a 0 dim) */
    if (start >= end)
        return;
    for (int d = b->rank - 1; d >= 0; d--) {
        it->idx[d] = rem % b->dims[d];
        rem /= b->dims[d];
        for (int k = 0; k < b->n_in; k++)
            it->cur[k] += it->idx[d] * b->stride[k][d];
    }
}

int opu_bcast_next(opu_bcast_iter *it)
{
    const opu_bcast *b = it->b;
    int last = b->rank - 1;
    int64_t n;

    if (it->pos >= it->end)
        return 0;
    n = b->dims[last] - it->idx[last];
    if (n > it->end - it->pos)
        n = it->end - it->pos;
    it->out_off = it->pos;
    it->n = n;
    for (int k = 0; k < b->n_in; k++) {
        it->in_off[k] = it->cur[k];
        it->cur[k] += n * b->stride[k][last];
    }
    it->pos += n;
    it->idx[last] += n;
    for (int d = last; d > 0 && it->idx[d] == b->dims[d]; d--) {
        it->idx[d] = 0;
        it->idx[d - 1]++;
        for (int k = 0; k < b->n_in; k++)
            it->cur[k] += b->stride[k][d - 1] - b->dims[d] * b->stride[k][d];
    }
    return 1;
}

/* ---- gradient builders ----------------------------------------------------- */

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

popc_status opu_grad_sum_to(popc_grad_ctx *gc, int g, const popc_view *target,
                            int *out)
{
    popc_view gi;
    popc_attr a;
    popc_status st;

    if ((st = gc->host->value_info(gc, g, &gi)) != POPC_OK)
        return st;
    if (opu_same_shape(&gi, target)) {
        *out = g;
        return POPC_OK;
    }
    memset(&a, 0, sizeof a);
    a.name = "shape";
    a.type = POPC_ATTR_INTS;
    a.n = target->rank;
    a.ints = target->dims;
    return opu_grad_node(gc, "popc", "SumToShape", &g, 1, &a, 1, out);
}

popc_status opu_grad_reshape(popc_grad_ctx *gc, int g,
                             const popc_view *target, int *out)
{
    popc_view gi;
    popc_attr a;
    popc_status st;
    int in[2];

    if ((st = gc->host->value_info(gc, g, &gi)) != POPC_OK)
        return st;
    if (opu_same_shape(&gi, target)) {
        *out = g;
        return POPC_OK;
    }
    in[0] = g;
    if ((st = opu_grad_ints(gc, target->dims, target->rank, &in[1])) !=
        POPC_OK)
        return st;
    /* allowzero: a 0 in the target is a real empty dimension */
    memset(&a, 0, sizeof a);
    a.name = "allowzero";
    a.type = POPC_ATTR_INT;
    a.i = 1;
    return opu_grad_node(gc, NULL, "Reshape", in, 2, &a, 1, out);
}
