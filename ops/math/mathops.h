/* mathops.h - internals of the math plugin (elementwise ops).
**
** Every elementwise kernel is a "run function" that handles one contiguous
** run of output elements; mop_map walks the output share of the current
** part in runs along the innermost broadcast dimension and calls it once per
** run (never per element). Input strides inside a run are 0 (broadcast) or
** 1. float16 data goes through the float32 run function in chunks of
** OPU_CHUNK converted elements, so every float op supports float16.
**
** The per-file op tables are hidden symbols of this module only.
*/
#ifndef POPC_OPS_MATHOPS_H
#define POPC_OPS_MATHOPS_H

#include <math.h>
#include <stdint.h>

#include "ops/util/oputil.h"

/* Op parameters decoded from attributes / constant inputs per call. */
typedef struct mop_params {
    float alpha;      /* LeakyRelu slope, Dropout scale */
    float lo, hi;     /* Clip bounds (float kernels) */
    int64_t ilo, ihi; /* Clip bounds (integer kernels) */
    int approx;       /* Gelu: 1 for "tanh" */
} mop_params;

/* o[j] outputs and in[k] inputs point at the first element of the run;
** st[k] is input k's stride (0 or 1); n elements. */
typedef void (*mop_fn)(void *const *o, const void *const *in, const int *st,
                       int64_t n, const mop_params *p);

/* Element functions for the dtypes without a run function (float64,
** bfloat16, int8/16, uint8/16/32/64): computed in double for floats and
** int64 for integers and bool, one element at a time. */
typedef double (*mop_wide_f)(double x, double y);
typedef int64_t (*mop_wide_i)(int64_t x, int64_t y);

/* Run functions by the dtype of input 0; float16 uses f32. NULL: the dtype
** is not supported (infer rejects it first), unless a wide function
** serves it. */
typedef struct mop_kernels {
    mop_fn f32, i32, i64, b8;
    mop_wide_f wf;
    mop_wide_i wi;
} mop_kernels;

/* Apply k elementwise: in[0..n_in) broadcast to out[0] (every output has
** out[0]'s shape), over this part's share of the output elements. */
popc_status mop_map(const popc_kernel_ctx *kc, const mop_kernels *k,
                    const popc_view *in, int n_in, const popc_view *out,
                    int n_out, const mop_params *p);

/* Shared infer of op `op`: inputs 0..n_in-1 must be present with one dtype
** in the allowed mask (1u << dtype); output 0 is their broadcast with dtype
** out_dt (UNDEFINED: the inputs' dtype). */
popc_status mop_infer_ew(popc_infer_ctx *ic, const char *op, int n_in,
                         unsigned allowed, popc_dtype out_dt);

#define MOP_F (1u << POPC_DTYPE_F32 | 1u << POPC_DTYPE_F16)
#define MOP_I (1u << POPC_DTYPE_I32 | 1u << POPC_DTYPE_I64)
#define MOP_B (1u << POPC_DTYPE_BOOL)
/* The dtypes that go through the wide element functions. */
#define MOP_WF (1u << POPC_DTYPE_F64 | 1u << POPC_DTYPE_BF16)
#define MOP_WI (1u << POPC_DTYPE_I8 | 1u << POPC_DTYPE_I16 |                 \
                1u << POPC_DTYPE_U8 | 1u << POPC_DTYPE_U16 |                 \
                1u << POPC_DTYPE_U32 | 1u << POPC_DTYPE_U64)

/* Unsigned twins for wrapping integer arithmetic (no signed overflow). */
#define MOP_U_int32_t uint32_t
#define MOP_U_int64_t uint64_t

/* A unary run function: o = EXPR(x). */
#define MOP_UNARY(NAME, T, TO, EXPR)                                        \
    static void NAME(void *const *o_, const void *const *in_,               \
                     const int *st, int64_t n, const mop_params *p)        \
    {                                                                       \
        TO *o = o_[0];                                                      \
        const T *a = in_[0];                                                \
        (void)p;                                                            \
        if (st[0]) {                                                        \
            for (int64_t i = 0; i < n; i++) {                              \
                const T x = a[i];                                           \
                o[i] = (TO)(EXPR);                                          \
            }                                                               \
        } else {                                                            \
            const T x = a[0];                                               \
            const TO r = (TO)(EXPR);                                        \
            for (int64_t i = 0; i < n; i++)                                \
                o[i] = r;                                                   \
        }                                                                   \
    }

/* A binary run function: o = EXPR(x, y), specialised per stride pattern so
** each loop vectorises. */
#define MOP_BINARY(NAME, T, TO, EXPR)                                       \
    static void NAME(void *const *o_, const void *const *in_,               \
                     const int *st, int64_t n, const mop_params *p)        \
    {                                                                       \
        TO *o = o_[0];                                                      \
        const T *a = in_[0], *b = in_[1];                                   \
        (void)p;                                                            \
        if (st[0] && st[1]) {                                               \
            for (int64_t i = 0; i < n; i++) {                              \
                const T x = a[i], y = b[i];                                 \
                o[i] = (TO)(EXPR);                                          \
            }                                                               \
        } else if (st[0]) {                                                 \
            const T y = b[0];                                               \
            for (int64_t i = 0; i < n; i++) {                              \
                const T x = a[i];                                           \
                o[i] = (TO)(EXPR);                                          \
            }                                                               \
        } else if (st[1]) {                                                 \
            const T x = a[0];                                               \
            for (int64_t i = 0; i < n; i++) {                              \
                const T y = b[i];                                           \
                o[i] = (TO)(EXPR);                                          \
            }                                                               \
        } else {                                                            \
            const T x = a[0], y = b[0];                                     \
            const TO r = (TO)(EXPR);                                        \
            for (int64_t i = 0; i < n; i++)                                \
                o[i] = r;                                                   \
        }                                                                   \
    }

/* Gradient helpers shared by the files of this plugin. */
popc_status mop_grad_unary_helper(popc_grad_ctx *gc, const char *op, int t,
                                  const popc_attr *attrs, int n_attrs);

/* Op tables of each file. */
extern const popc_op_def mop_arith_ops[];
extern const int mop_arith_count;
extern const popc_op_def mop_act_ops[];
extern const int mop_act_count;
extern const popc_op_def mop_misc_ops[];
extern const int mop_misc_count;
extern const popc_op_def mop_minmax_ops[];
extern const int mop_minmax_count;
extern const popc_op_def mop_wide_ops[];
extern const int mop_wide_count;
extern const popc_op_def mop_wide_grad_ops[];
extern const int mop_wide_grad_count;
/* The grad() of a differentiable op of wide.c, by its ONNX name. */
popc_status mop_wide_grad(popc_grad_ctx *gc, const char *op);
extern const popc_op_def mop_quant_ops[];
extern const int mop_quant_count;
extern const popc_op_def mop_train_ops[];
extern const int mop_train_count;

#endif /* POPC_OPS_MATHOPS_H */
