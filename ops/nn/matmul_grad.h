/* matmul_grad.h - the fused weight and bias gradient of a Gemm
** (matmul_grad.c), for Gemm's gradient builder (matmul.c). */
#ifndef POPC_OPS_NN_MATMUL_GRAD_H
#define POPC_OPS_NN_MATMUL_GRAD_H

#include "popc/plugin.h"

/* The gradients of inputs B and C of the Gemm gc differentiates
** (transA ta, transB tb) as one popc::GemmGradWeightBias node, when C is
** float32, the same for every row ([N], [1, N], [1], a scalar) and the
** Gemm is not float16: *done = 1. Otherwise *done = 0 and nothing is
** added; the caller emits a Gemm and a SumToShape. */
popc_status nn_gemm_grad_weight_bias(popc_grad_ctx *gc, int ta, int tb,
                                     double alpha, double beta, int *done);

#endif /* POPC_OPS_NN_MATMUL_GRAD_H */
