/* layer/shape.h - the tensor shape check, for the readers of tensor files
** in the layers (data/npy.c) and the tensor functions above the core
** (tensorops/): a file's dtype and dims are refused with the same message
** popc_tensor_new gives, and the size is computed without overflow before
** anything is allocated; and shapes as text. */
#ifndef POPC_LAYER_SHAPE_H
#define POPC_LAYER_SHAPE_H

#include <stddef.h>
#include <stdint.h>

#include "popc/tensor.h"

/* Checks dtype, rank and dims and computes the element count and byte size
** without overflow. what names the caller in the message ("popc_tensor_new",
** a file name). Returns POPC_OK or POPC_EINVAL with a message. */
popc_status popci_shape_size(const char *what, popc_dtype dt,
                             const int64_t *dims, int rank, int64_t *numel,
                             size_t *nbytes);

/* "[2, 3]" into buf (always terminated). Returns buf. */
char *popci_dims_str(const int64_t *dims, int rank, char *buf, size_t size);

#endif /* POPC_LAYER_SHAPE_H */
