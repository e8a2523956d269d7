/* matmul_serial.h - poptorch.serializedMatMul for the nn plugin: a MatMul
** or Gemm whose work is cut into `factor` products computed one after the
*other,
** to lower its peak temporary memory (module-internal, hidden symbols).
**
** For A [.., M, K] times B [.., K, N], the attributes
**   serialization_mode    "input_channels" (split M), "reducing_dim"
**                         (split K), "output_channels" (split N) or "none"
**   serialization_factor  (POPC_ATTR_SERIAL_FACTOR) the number of products;
**                         it must divide the split dimension
**   keep_precision        for a float16 node (POPC_ATTR_FLOAT16): add the
**                         products of reducing_dim in float32, not float16
** Splitting M or N changes no sum, so those results equal the plain
** MatMul's. Splitting K adds the factor partial products in order; a
** float16 node without keep_precision rounds each product and each running
** sum to float16, as an IPU adding half partials does.
**
** Gemm takes the same attributes for op(A) op(B). Gradients are
** serialized too, as PopART does: each backward product splits the
** forward's split dimension in the role it plays there (for MatMul,
** input_channels gives dA input_channels and dB reducing_dim; reducing_dim
** gives dA output_channels and dB input_channels; output_channels gives dA
** reducing_dim and dB output_channels).
*/
#ifndef POPC_OPS_NN_MATMUL_SERIAL_H
#define POPC_OPS_NN_MATMUL_SERIAL_H

#include <stdint.h>

#include "popc/plugin.h"

typedef enum mms_mode {
    MMS_NONE = 0,
    MMS_INPUT_CHANNELS,
    MMS_REDUCING_DIM,
    MMS_OUTPUT_CHANNELS
} mms_mode;

typedef struct mms {
    mms_mode mode;
    int64_t factor;            /* 1 when mode is MMS_NONE */
    int keep_precision;
    int float16;               /* the node carries POPC_ATTR_FLOAT16 */
} mms;

/* Reads the attributes of a MatMul or Gemm (`op`) whose product has
** matrix dims M, N, K. POPC_EINVAL naming the node for an unknown mode, a
** factor below 1, or a factor that does not divide the dimension it
** splits. */
popc_status mms_parse(const char *op, const char *node,
                      const popc_attrs *attrs, int64_t M, int64_t N,
                      int64_t K, mms *s);

/* Temporary bytes of a (batched) MatMul: copies of the operands in the
** matrix units' layout (a_elems and b_elems elements, 2 bytes each for a
** float16 node, else 4) plus float32 partials of the output (out_elems);
** a serialized MatMul holds one product's share of the split operands and
** partials at a time. */
double mms_temp_bytes(const mms *s, double a_elems, double b_elems,
                      double out_elems);

/* The attributes of a backward product of a serialized MatMul or Gemm:
** roles[d] is the mode in which the backward product splits the forward
** dimension d (0: M, 1: N, 2: K), i.e. whether d is its M, K or N.
** Nothing (*n = 0) when s is not serialized. */
void mms_grad_attrs(const mms *s, const mms_mode roles[3], popc_attr out[3],
                    int *n);

/* Roles of the forward dims in the backward products of C = op(A) op(B):
** dA = dC op(B)^T when A is not transposed, op(B) dC^T when it is;
** dB = op(A)^T dC when B is not transposed, dC^T op(A) when it is. */
void mms_roles_da(int trans_a, mms_mode roles[3]);
void mms_roles_db(int trans_b, mms_mode roles[3]);

/* C rows [0, rows) = op(A) op(B) (cblas row-major conventions: A points
** at row 0 of op(A), lda and ldb its leading dimensions) as s->factor
** products over slices of K added in order (the reducing_dim rule above).
** POPC_ENOMEM for its scratch rows. */
popc_status mms_reduce_rows(const popc_kernel_ctx *kc, const mms *s,
                            int trans_a, int trans_b, const float *A,
                            int64_t lda, const float *B, int64_t ldb,
                            float *C, int64_t rows, int64_t N, int64_t K);

#endif /* POPC_OPS_NN_MATMUL_SERIAL_H */
