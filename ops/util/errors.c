/* errors.c - the error texts ops share (oputil.h); the wording is the
** host's (popc/services.h), so every op names itself the same way. */
#include "config.h"

#include <stdarg.h>
#include <string.h>

#include "ops/util/oputil.h"

popc_status opu_error(popc_status st, const char *op, const char *node,
                      const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    st = opu_svc.op_error(st, op, node, fmt, ap);
    va_end(ap);
    return st;
}

popc_status opu_axis(const char *op, const char *node,
                     int64_t axis, int rank, const char *what, int *out)
{
    if (axis < -(int64_t)rank || axis >= rank)
        return opu_error(POPC_EINVAL, op, node,
                         "%s %lld is out of range for a rank-%d input; use a "
                         "value in [%d, %d]", what, (long long)axis, rank,
                         -rank, rank - 1);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return POPC_OK;
}

popc_status opu_const_ints(const char *op,
                           const char *node, const popc_view *v,
                           const char *what, int64_t *out, int cap, int *n)
{
    int64_t count;

    *n = 0;
    if (!opu_present(v))
        return opu_error(POPC_EINVAL, op, node, "%s is missing", what);
    if (v->dtype != POPC_DTYPE_I64 && v->dtype != POPC_DTYPE_I32)
        return opu_error(POPC_EINVAL, op, node,
                         "%s must be int64 or int32, got %s", what,
                         popc_dtype_name(v->dtype));
    if (v->rank > 1)
        return opu_error(POPC_EINVAL, op, node,
                         "%s must be a scalar or 1-D tensor, got rank %d",
                         what, v->rank);
    if (!v->data)
        return opu_error(POPC_EINVAL, op, node,
                         "%s must be a constant or initializer known at "
                         "compile time (shapes are static); fold it into a "
                         "constant", what);
    count = popc_view_numel(v);
    if (count > cap)
        return opu_error(POPC_EINVAL, op, node,
                         "%s has %lld values; at most %d are supported", what,
                         (long long)count, cap);
    for (int64_t i = 0; i < count; i++)
        out[i] = v->dtype == POPC_DTYPE_I64 ? ((const int64_t *)v->data)[i]
                                            : ((const int32_t *)v->data)[i];
    *n = (int)count;
    return POPC_OK;
}

popc_status opu_want_f32(const popc_infer_ctx *ic, const char *op, int i,
                         const char *what)
{
    if (ic->inputs[i].dtype == POPC_DTYPE_F32)
        return POPC_OK;
    return opu_svc.op_dtype_error(op, ic->node_name, what,
                                  ic->inputs[i].dtype, "float32");
}

popc_status opu_reduction(const char *op, const char *node,
                           const popc_attrs *attrs, int *out)
{
    const char *s = popc_attr_string(attrs, "reduction", "mean");

    if (strcmp(s, "mean") == 0)
        *out = OPU_RED_MEAN;
    else if (strcmp(s, "sum") == 0)
        *out = OPU_RED_SUM;
    else if (strcmp(s, "none") == 0)
        *out = OPU_RED_NONE;
    else
        return opu_error(POPC_EINVAL, op, node, "reduction '%s' is not "
                         "supported; use \"mean\", \"sum\" or \"none\"", s);
    return POPC_OK;
}

popc_status opu_need_dtype(const popc_infer_ctx *ic, const char *op)
{
    if (ic->n_inputs < 1 || popc_dtype_size(ic->inputs[0].dtype) == 0)
        return opu_error(POPC_EINVAL, op, ic->node_name,
                         "input 0 has no known dtype");
    return POPC_OK;
}
