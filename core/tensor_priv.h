/* tensor_priv.h - shape validation (core/layer/shape.h), and
** float16 rounding of float arrays. */
#ifndef POPC_TENSOR_PRIV_H
#define POPC_TENSOR_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "popc/tensor.h"
#include "core/layer/shape.h" /* popci_shape_size, popci_dims_str */


/* Rounds each element to the nearest float16 (ties to even), in place:
** float arrays that hold values a device keeps in half precision. */
void popci_round_f16(float *x, int64_t n);

#endif /* POPC_TENSOR_PRIV_H */
