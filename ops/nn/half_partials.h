/* half_partials.h - Precision.setPartialsType(torch.half) for the nn
** plugin: float16 MatMul, Gemm and 1-D/2-D Conv (with their gradient ops)
** keep their partial sums in float16, as an IPU's AMP units do with half
** partials.
**
** The rule: each output's running sum starts at 0 and, after every
** multiply-add, is rounded to float16 (the product and the addition in
** float32, where the product of two float16 values is exact). Terms are
** added in a fixed order (below, per op); alpha, beta, C and a bias are
** applied to the finished sum, and the result rounded to float16 once.
**
** An operation is float16 when model.half() (popc_graph_to_half) ran it in
** float32 between casts: such nodes, and the backward nodes the core
** derives from them, carry POPC_ATTR_FLOAT16. Half partials apply when the
** kernel flag POPC_KERNEL_HALF_PARTIALS is set and the node carries the
** mark. Module-internal (hidden symbols).
*/
#ifndef POPC_OPS_NN_HALF_PARTIALS_H
#define POPC_OPS_NN_HALF_PARTIALS_H

#include <stdint.h>

#include "ops/nn/conv_priv.h"
#include "popc/plugin.h"

/* Whether this kernel call keeps float16 partial sums. */
int nn_half_partials(const popc_kernel_ctx *kc);

/* Whether a forward node's attributes carry the float16 mark (for the
** gradient builders). */
int nn_is_float16_node(const popc_attrs *attrs);

/* Rounds v[0..n) to float16 values in place (F16C when the CPU has it). */
void nn_round_half_n(float *v, int64_t n);

/* Rows [r0, r1) and columns [c0, c1) of C = alpha * op(A) op(B) + beta * C
** with float16 partial sums over k = 0..K-1 (cblas row-major
** conventions). POPC_ENOMEM for its scratch rows, naming the node. */
popc_status nn_gemm_half(const popc_kernel_ctx *kc, int trans_a,
                         int trans_b, int64_t K, float alpha, const float *A,
                         int64_t lda, const float *B, int64_t ldb, float beta,
                         float *C, int64_t ldc, int64_t r0, int64_t r1,
                         int64_t c0, int64_t c1);

/* Conv with float16 partials; units (image, output channel) split over
** the parts. Sums run over the group's input channels, then kernel rows,
** then kernel columns. */
popc_status nn_conv_half_forward(const popc_kernel_ctx *kc, const conv_p *p,
                                 const float *x, const float *wt,
                                 const float *bias, float *y);
/* ConvGradInput: units (image, input channel); sums over the group's
** output channels, then kernel rows, then kernel columns. */
popc_status nn_conv_half_grad_input(const popc_kernel_ctx *kc,
                                    const conv_p *p, const float *dy,
                                    const float *wt, float *dx);
/* ConvGradWeight (p->S == 0): units output channels; dW sums over images,
** then output rows, then output columns; dB (NULL: none) the same way. */
popc_status nn_conv_half_grad_weight(const popc_kernel_ctx *kc,
                                     const conv_p *p, const float *x,
                                     const float *dy, float *dw, float *db);

#endif /* POPC_OPS_NN_HALF_PARTIALS_H */
