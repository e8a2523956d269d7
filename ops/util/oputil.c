/* oputil.c - ONNX dtype numbers, scalars and numpy broadcasting of the op
** utility library (oputil.h). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "ops/util/oputil.h"

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

popc_status opu_broadcast(const char *op,
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

                return opu_error(POPC_EINVAL, op, node,
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
