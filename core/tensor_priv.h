/* tensor_priv.h - shape validation shared by tensor.c and npy.c, and
** float16 rounding of float arrays. */
#ifndef POPC_TENSOR_PRIV_H
#define POPC_TENSOR_PRIV_H

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

/* Rounds each element to the nearest float16 (ties to even), in place:
** float arrays that hold values a device keeps in half precision. */
void popci_round_f16(float *x, int64_t n);

#endif /* POPC_TENSOR_PRIV_H */
