/* tensor_reshape.c - popc_tensor_reshape (popc/tensor.h): the same
** elements under a new shape, one dimension of which may be inferred (-1),
** built on the core's public tensor API; the core never reshapes a
** tensor.
*/
#include "config.h"

#include <stdint.h>

#include "popc/tensor.h"
#include "core/layer/shape.h"

popc_status popc_tensor_reshape(const popc_tensor *t, const int64_t *dims,
                                int rank, popc_tensor **out)
{
    int64_t shape[POPC_MAX_RANK];
    int64_t known = 1, numel;
    int infer = -1;
    char want[256], have[256];
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_tensor_reshape: out is NULL");
    *out = NULL;
    if (!t)
        return popc_set_error(POPC_EINVAL, "popc_tensor_reshape: t is NULL");
    if (rank < 0 || rank > POPC_MAX_RANK || (rank > 0 && !dims))
        return popc_set_error(POPC_EINVAL, "popc_tensor_reshape: rank %d is "
                              "outside 0..%d", rank, POPC_MAX_RANK);
    numel = popc_tensor_numel(t);
    popci_dims_str(popc_tensor_dims(t), popc_tensor_rank(t), have,
                   sizeof have);
    popci_dims_str(dims, rank, want, sizeof want);
    for (int i = 0; i < rank; i++) {
        shape[i] = dims[i];
        if (dims[i] == -1) {
            if (infer >= 0)
                return popc_set_error(POPC_EINVAL, "popc_tensor_reshape: "
                                      "shape %s has more than one -1", want);
            infer = i;
        } else if (dims[i] < 0) {
            return popc_set_error(POPC_EINVAL, "popc_tensor_reshape: shape %s "
                                  "has dimension %lld; use >= 0 or one -1",
                                  want, (long long)dims[i]);
        } else if (known != 0 && dims[i] != 0 && known > INT64_MAX / dims[i]) {
            return popc_set_error(POPC_EINVAL, "popc_tensor_reshape: shape %s "
                                  "overflows", want);
        } else {
            known *= dims[i];
        }
    }
    if (infer >= 0) {
        if (known == 0 || numel % known != 0)
            return popc_set_error(POPC_EINVAL, "popc_tensor_reshape: cannot "
                                  "reshape %s (%lld elements) into %s", have,
                                  (long long)numel, want);
        shape[infer] = numel / known;
        known = numel;
    }
    if (known != numel)
        return popc_set_error(POPC_EINVAL, "popc_tensor_reshape: cannot "
                              "reshape %s (%lld elements) into %s (%lld "
                              "elements)", have, (long long)numel, want,
                              (long long)known);
    st = popc_tensor_from_data(popc_tensor_dtype(t), shape, rank,
                               popc_tensor_cdata(t), out);
    if (st == POPC_ENOMEM)
        return popc_set_error(POPC_ENOMEM, "popc_tensor_reshape: out of "
                              "memory for %zu bytes", popc_tensor_nbytes(t));
    return st;
}
