/* wide.c - elementwise ONNX ops over every dtype the op allows, through
** one kernel per op computing in double (float types) or int64 (integer
** types and bool), element by element (ops/util/elem.h). These are the ops
** models rarely spend time in (inverse trigonometry, rounding, logic,
** Mod, BitShift...); the hot ops keep the vectorised engine of ew.c.
** Kernels are split-safe (each part writes its own share of the output)
** and deterministic. Gradients: wide_grad.c.
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "ops/math/mathops.h"
#include "ops/util/elem.h"

#define W_FLOAT (1u << POPC_DTYPE_F32 | 1u << POPC_DTYPE_F16 |             \
                 1u << POPC_DTYPE_F64 | 1u << POPC_DTYPE_BF16)
#define W_SINT (1u << POPC_DTYPE_I8 | 1u << POPC_DTYPE_I16 |                \
                1u << POPC_DTYPE_I32 | 1u << POPC_DTYPE_I64)
#define W_UINT (1u << POPC_DTYPE_U8 | 1u << POPC_DTYPE_U16 |                \
                1u << POPC_DTYPE_U32 | 1u << POPC_DTYPE_U64)
#define W_NUM (W_FLOAT | W_SINT | W_UINT)
#define W_BOOL (1u << POPC_DTYPE_BOOL)

typedef double (*wide_f)(double x, double y, const popc_attrs *a);
typedef int64_t (*wide_i)(int64_t x, int64_t y, popc_dtype dt,
                          const popc_attrs *a);

typedef struct wide_op {
    const char *name;
    int n_in;           /* 1 or 2 (broadcast) */
    unsigned allowed;   /* dtype mask of the inputs */
    popc_dtype out;     /* UNDEFINED: the input's dtype */
    wide_f f;           /* float inputs */
    wide_i i;           /* integer and bool inputs */
} wide_op;

static popc_status wide_infer(popc_infer_ctx *ic, const wide_op *w)
{
    return mop_infer_ew(ic, w->name, w->n_in, w->allowed, w->out);
}

static popc_status wide_forward(const popc_kernel_ctx *kc, const wide_op *w)
{
    const popc_view *out = &kc->outputs[0];
    popc_dtype dt = kc->inputs[0].dtype;
    int use_float = popc_dtype_is_float(dt) || !w->i;
    opu_bcast b;
    opu_bcast_iter it;
    int64_t s, e;

    opu_bcast_init(&b, out, kc->inputs, w->n_in);
    opu_range(popc_view_numel(out), kc->part, kc->n_parts, &s, &e);
    opu_bcast_begin(&it, &b, s, e);
    while (opu_bcast_next(&it)) {
        for (int64_t k = 0; k < it.n; k++) {
            int64_t o = it.out_off + k;
            int64_t i0 = it.in_off[0] + k * b.inner[0];
            int64_t i1 = w->n_in > 1 ? it.in_off[1] + k * b.inner[1] : 0;

            if (use_float) {
                double x = opu_load_f(&kc->inputs[0], i0);
                double y = w->n_in > 1 ? opu_load_f(&kc->inputs[1], i1) : 0;

                opu_store_f(out, o, w->f(x, y, kc->attrs));
            } else {
                int64_t x = opu_load_i(&kc->inputs[0], i0);
                int64_t y = w->n_in > 1 ? opu_load_i(&kc->inputs[1], i1) : 0;

                opu_store_i(out, o, w->i(x, y, dt, kc->attrs));
            }
        }
    }
    return POPC_OK;
}

/* ---- functions ------------------------------------------------------------ */

#define F1(NAME, EXPR)                                                      \
    static double NAME(double x, double y, const popc_attrs *a)             \
    {                                                                       \
        (void)y;                                                            \
        (void)a;                                                            \
        return (EXPR);                                                      \
    }

F1(f_acos, acos(x))
F1(f_asin, asin(x))
F1(f_atan, atan(x))
F1(f_acosh, acosh(x))
F1(f_asinh, asinh(x))
F1(f_atanh, atanh(x))
F1(f_cosh, cosh(x))
F1(f_sinh, sinh(x))
F1(f_tan, tan(x))
F1(f_softsign, x / (1.0 + fabs(x)))
F1(f_ceil, ceil(x))
F1(f_floor, floor(x))
F1(f_round, nearbyint(x)) /* the default rounding mode: half to even */
F1(f_isnan, x != x)
F1(f_sign, x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x)
F1(f_hardswish, x * fmax(0.0, fmin(1.0, x / 6.0 + 0.5)))

static double f_isinf(double x, double y, const popc_attrs *a)
{
    (void)y;
    if (!isinf(x))
        return 0;
    return x > 0 ? popc_attr_int(a, "detect_positive", 1) != 0
                 : popc_attr_int(a, "detect_negative", 1) != 0;
}

static double f_selu(double x, double y, const popc_attrs *a)
{
    double alpha = opu_attr_num(a, "alpha", 1.67326319217681884765625);
    double gamma = opu_attr_num(a, "gamma", 1.05070102214813232421875);

    (void)y;
    return x > 0 ? gamma * x : gamma * (alpha * exp(x) - alpha);
}

static double f_hardsigmoid(double x, double y, const popc_attrs *a)
{
    double alpha = opu_attr_num(a, "alpha", 0.2), beta = opu_attr_num(a, "beta", 0.5);

    (void)y;
    return fmax(0.0, fmin(1.0, alpha * x + beta));
}

static double f_thresholded_relu(double x, double y, const popc_attrs *a)
{
    (void)y;
    return x > opu_attr_num(a, "alpha", 1.0) ? x : 0.0;
}

static double f_shrink(double x, double y, const popc_attrs *a)
{
    double bias = opu_attr_num(a, "bias", 0.0), lambd = opu_attr_num(a, "lambd", 0.5);

    (void)y;
    return x < -lambd ? x + bias : x > lambd ? x - bias : 0.0;
}

static int64_t i_shrink(int64_t x, int64_t y, popc_dtype dt,
                        const popc_attrs *a)
{
    (void)dt;
    return opu_sat_i64(f_shrink((double)x, (double)y, a));
}

static int64_t i_sign(int64_t x, int64_t y, popc_dtype dt,
                      const popc_attrs *a)
{
    (void)y;
    (void)a;
    if (dt == POPC_DTYPE_U64)
        return x != 0;
    return x > 0 ? 1 : x < 0 ? -1 : 0;
}

static double f_prelu(double x, double slope, const popc_attrs *a)
{
    (void)a;
    return x < 0 ? slope * x : x;
}

static int64_t i_prelu(int64_t x, int64_t slope, popc_dtype dt,
                       const popc_attrs *a)
{
    (void)dt;
    (void)a;
    return x < 0 ? slope * x : x;
}

/* Mod: fmod = 1 is C's fmod (sign of the dividend); fmod = 0 (integers
** only) takes the sign of the divisor, as Python's %. */
static double f_mod(double x, double y, const popc_attrs *a)
{
    double r = fmod(x, y);

    if (!popc_attr_int(a, "fmod", 0) && r != 0 && ((r < 0) != (y < 0)))
        r += y;
    return r;
}

static int64_t i_mod(int64_t x, int64_t y, popc_dtype dt,
                     const popc_attrs *a)
{
    int64_t r;

    if (y == 0)
        return 0; /* undefined in ONNX; no trap */
    if (dt == POPC_DTYPE_U64)
        return (int64_t)((uint64_t)x % (uint64_t)y);
    if (y == -1)
        return 0;
    r = x % y;
    if (!popc_attr_int(a, "fmod", 0) && r != 0 && ((r < 0) != (y < 0)))
        r += y;
    return r;
}

static int64_t i_bitshift(int64_t x, int64_t y, popc_dtype dt,
                          const popc_attrs *a)
{
    const popc_attr *d = popc_attrs_find(a, "direction");
    int left = d && d->s && strcmp(d->s, "LEFT") == 0;
    unsigned bits = (unsigned)popc_dtype_size(dt) * 8;
    uint64_t ux = (uint64_t)x, n = (uint64_t)y;

    if (bits < 64)
        ux &= ((uint64_t)1 << bits) - 1;
    if (n >= bits)
        return 0;
    return (int64_t)(left ? ux << n : ux >> n);
}

static int64_t i_and(int64_t x, int64_t y, popc_dtype dt,
                     const popc_attrs *a)
{
    (void)dt;
    (void)a;
    return x && y;
}

static int64_t i_or(int64_t x, int64_t y, popc_dtype dt, const popc_attrs *a)
{
    (void)dt;
    (void)a;
    return x || y;
}

static int64_t i_xor(int64_t x, int64_t y, popc_dtype dt,
                     const popc_attrs *a)
{
    (void)dt;
    (void)a;
    return !x != !y;
}

/* ---- ops ------------------------------------------------------------------- */

#define WIDE(ID, NAME, N_IN, ALLOWED, OUT, F, I)                            \
    static const wide_op w_##ID = {NAME, N_IN, ALLOWED, OUT, F, I};         \
    static popc_status ID##_infer(popc_infer_ctx *ic)                       \
    {                                                                       \
        return wide_infer(ic, &w_##ID);                                     \
    }                                                                       \
    static popc_status ID##_forward(const popc_kernel_ctx *kc)              \
    {                                                                       \
        return wide_forward(kc, &w_##ID);                                   \
    }

WIDE(acos, "Acos", 1, W_FLOAT, POPC_DTYPE_UNDEFINED, f_acos, NULL)
WIDE(asin, "Asin", 1, W_FLOAT, POPC_DTYPE_UNDEFINED, f_asin, NULL)
WIDE(atan, "Atan", 1, W_FLOAT, POPC_DTYPE_UNDEFINED, f_atan, NULL)
WIDE(acosh, "Acosh", 1, W_FLOAT, POPC_DTYPE_UNDEFINED, f_acosh, NULL)
WIDE(asinh, "Asinh", 1, W_FLOAT, POPC_DTYPE_UNDEFINED, f_asinh, NULL)
WIDE(atanh, "Atanh", 1, W_FLOAT, POPC_DTYPE_UNDEFINED, f_atanh, NULL)
WIDE(cosh, "Cosh", 1, W_FLOAT, POPC_DTYPE_UNDEFINED, f_cosh, NULL)
WIDE(sinh, "Sinh", 1, W_FLOAT, POPC_DTYPE_UNDEFINED, f_sinh, NULL)
WIDE(tan, "Tan", 1, W_FLOAT, POPC_DTYPE_UNDEFINED, f_tan, NULL)
WIDE(softsign, "Softsign", 1, W_FLOAT, POPC_DTYPE_UNDEFINED, f_softsign,
     NULL)
WIDE(selu, "Selu", 1, W_FLOAT, POPC_DTYPE_UNDEFINED, f_selu, NULL)
WIDE(hardsigmoid, "HardSigmoid", 1, W_FLOAT, POPC_DTYPE_UNDEFINED,
     f_hardsigmoid, NULL)
WIDE(hardswish, "HardSwish", 1, W_FLOAT, POPC_DTYPE_UNDEFINED, f_hardswish,
     NULL)
WIDE(thresholded_relu, "ThresholdedRelu", 1, W_FLOAT, POPC_DTYPE_UNDEFINED,
     f_thresholded_relu, NULL)
WIDE(ceil, "Ceil", 1, W_FLOAT, POPC_DTYPE_UNDEFINED, f_ceil, NULL)
WIDE(floor, "Floor", 1, W_FLOAT, POPC_DTYPE_UNDEFINED, f_floor, NULL)
WIDE(round, "Round", 1, W_FLOAT, POPC_DTYPE_UNDEFINED, f_round, NULL)
WIDE(isnan, "IsNaN", 1, W_FLOAT, POPC_DTYPE_BOOL, f_isnan, NULL)
WIDE(isinf, "IsInf", 1, W_FLOAT, POPC_DTYPE_BOOL, f_isinf, NULL)
WIDE(sign, "Sign", 1, W_NUM, POPC_DTYPE_UNDEFINED, f_sign, i_sign)
WIDE(shrink, "Shrink", 1, W_NUM, POPC_DTYPE_UNDEFINED, f_shrink, i_shrink)
WIDE(prelu, "PRelu", 2, W_NUM & ~W_UINT, POPC_DTYPE_UNDEFINED, f_prelu,
     i_prelu)
WIDE(mod, "Mod", 2, W_NUM, POPC_DTYPE_UNDEFINED, f_mod, i_mod)
WIDE(bitshift, "BitShift", 2, W_UINT, POPC_DTYPE_UNDEFINED, NULL, i_bitshift)
WIDE(and, "And", 2, W_BOOL, POPC_DTYPE_BOOL, NULL, i_and)
WIDE(or, "Or", 2, W_BOOL, POPC_DTYPE_BOOL, NULL, i_or)
WIDE(xor, "Xor", 2, W_BOOL, POPC_DTYPE_BOOL, NULL, i_xor)

/* Mod on floats needs fmod = 1 (ONNX); checked at infer. */
static popc_status mod_checked_infer(popc_infer_ctx *ic)
{
    if (ic->n_inputs > 0 && popc_dtype_is_float(ic->inputs[0].dtype) &&
        !popc_attr_int(ic->attrs, "fmod", 0))
        return opu_error(POPC_EINVAL, "Mod", ic->node_name,
                         "floating-point inputs need fmod = 1");
    return mod_infer(ic);
}

static popc_status mod_checked_forward(const popc_kernel_ctx *kc)
{
    return mod_forward(kc);
}

/* ---- gradients (wide_grad.c) ------------------------------------------------ */

#define WGRAD(ID, NAME)                                                     \
    static popc_status ID##_grad(popc_grad_ctx *gc)                         \
    {                                                                       \
        return mop_wide_grad(gc, NAME);                                     \
    }

WGRAD(acos, "Acos")
WGRAD(asin, "Asin")
WGRAD(atan, "Atan")
WGRAD(acosh, "Acosh")
WGRAD(asinh, "Asinh")
WGRAD(atanh, "Atanh")
WGRAD(cosh, "Cosh")
WGRAD(sinh, "Sinh")
WGRAD(tan, "Tan")
WGRAD(softsign, "Softsign")
WGRAD(selu, "Selu")
WGRAD(hardsigmoid, "HardSigmoid")
WGRAD(hardswish, "HardSwish")
WGRAD(thresholded_relu, "ThresholdedRelu")
WGRAD(ceil, "Ceil")
WGRAD(floor, "Floor")
WGRAD(round, "Round")
WGRAD(sign, "Sign")
WGRAD(shrink, "Shrink")
WGRAD(prelu, "PRelu")

/* Mod: floating point (fmod = 1) only; integer Mod has no gradient. */
static popc_status mod_grad(popc_grad_ctx *gc)
{
    if (!popc_dtype_is_float(gc->input_info[0].dtype))
        return opu_error(POPC_EUNSUPPORTED, "Mod", gc->node_name,
                         "integer Mod has no gradient");
    return mop_wide_grad(gc, "Mod");
}

#define WDEF(NAME, VER, N_IN, P, DOC)                                       \
    OPU_DEF("ai.onnx", NAME, VER, N_IN, N_IN, 1, 1, POPC_OP_SPLIT, P, NULL, \
            NULL, DOC)
#define WDEFG(NAME, VER, N_IN, P, DOC)                                      \
    OPU_DEF("ai.onnx", NAME, VER, N_IN, N_IN, 1, 1, POPC_OP_SPLIT, P,       \
            P##_grad, NULL, DOC)

const popc_op_def mop_wide_ops[] = {
    WDEFG("Acos", 7, 1, acos, "arc cosine"),
    WDEFG("Asin", 7, 1, asin, "arc sine"),
    WDEFG("Atan", 7, 1, atan, "arc tangent"),
    WDEFG("Acosh", 9, 1, acosh, "inverse hyperbolic cosine"),
    WDEFG("Asinh", 9, 1, asinh, "inverse hyperbolic sine"),
    WDEFG("Atanh", 9, 1, atanh, "inverse hyperbolic tangent"),
    WDEFG("Cosh", 9, 1, cosh, "hyperbolic cosine"),
    WDEFG("Sinh", 9, 1, sinh, "hyperbolic sine"),
    WDEFG("Tan", 7, 1, tan, "tangent"),
    WDEFG("Softsign", 1, 1, softsign, "x / (1 + |x|)"),
    WDEFG("Selu", 6, 1, selu, "scaled ELU (alpha, gamma)"),
    WDEFG("HardSigmoid", 6, 1, hardsigmoid, "max(0, min(1, alpha x + beta))"),
    WDEFG("HardSwish", 14, 1, hardswish, "x * HardSigmoid(x; 1/6, 1/2)"),
    WDEFG("ThresholdedRelu", 10, 1, thresholded_relu, "x if x > alpha else 0"),
    WDEFG("Ceil", 13, 1, ceil, "round up"),
    WDEFG("Floor", 13, 1, floor, "round down"),
    WDEFG("Round", 11, 1, round, "round half to even"),
    WDEF("IsNaN", 13, 1, isnan, "x is NaN (bool)"),
    WDEF("IsInf", 10, 1, isinf, "x is +-inf (detect_positive/negative)"),
    WDEFG("Sign", 13, 1, sign, "-1, 0 or 1"),
    WDEFG("Shrink", 9, 1, shrink, "shrink toward 0 (bias, lambd)"),
    WDEFG("PRelu", 16, 2, prelu, "x < 0 ? slope x : x (slope broadcast)"),
    OPU_DEF("ai.onnx", "Mod", 13, 2, 2, 1, 1, POPC_OP_SPLIT, mod_checked,
            mod_grad, NULL, "remainder (fmod: C's fmod; else divisor's sign)"),
    WDEF("BitShift", 11, 2, bitshift, "unsigned shift (direction)"),
    WDEF("And", 7, 2, and, "logical and"),
    WDEF("Or", 7, 2, or, "logical or"),
    WDEF("Xor", 7, 2, xor, "logical xor"),
};

const int mop_wide_count = sizeof mop_wide_ops / sizeof mop_wide_ops[0];
