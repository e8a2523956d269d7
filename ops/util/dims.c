/* dims.c - shapes as text for error messages: "[2, 3, 4]", written by the
** host's popc_dims_format service. */
#include "config.h"

#include "ops/util/oputil.h"

char *opu_dims_str(const int64_t *dims, int rank, char *buf, size_t size)
{
    return opu_svc.dims_format(dims, rank, buf, size);
}

char *opu_shape_str(const popc_view *v, char *buf, size_t size)
{
    return opu_dims_str(v->dims, v->rank, buf, size);
}

char *opu_dims_n(const int64_t *dims, int rank, char *buf)
{
    return opu_dims_str(dims, rank, buf, OPU_DIMS_LEN);
}

char *opu_dims(const popc_view *v, char *buf)
{
    return opu_dims_str(v->dims, v->rank, buf, OPU_DIMS_LEN);
}
