/* arith.c - arithmetic and comparison ops with numpy broadcasting: Add,
** Sub, Mul, Div, Pow, Sum, Neg, Abs, Sqrt, Exp, Log, Reciprocal, Erf, Sin,
** Cos, Equal, Less, Greater, LessOrEqual, GreaterOrEqual, Not, and their
** gradient helpers.
**
** Integer arithmetic wraps (two's complement, like numpy); integer division
** truncates toward zero and division by zero gives 0 instead of trapping.
*/
#include "config.h"

/* GCC's -O2 vectorizes only loops that need no runtime alias check; the
** run functions below do need one (outputs may alias inputs), so ask for
** the full cost model. Elementwise IEEE arithmetic gives the same bits
** either way. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <math.h>
#include <string.h>

#include "ops/math/mathops.h"

/* ---- run functions ------------------------------------------------------ */

#define WRAP(T, EXPR) ((T)(EXPR))
#define U(T) MOP_U_##T

#define INT_ARITH(T)                                                        \
    MOP_BINARY(add_##T, T, T, WRAP(T, (U(T))x + (U(T))y))                  \
    MOP_BINARY(sub_##T, T, T, WRAP(T, (U(T))x - (U(T))y))                  \
    MOP_BINARY(mul_##T, T, T, WRAP(T, (U(T))x * (U(T))y))                  \
    MOP_BINARY(div_##T, T, T,                                              \
               y == 0 ? 0 : y == -1 ? WRAP(T, (U(T))0 - (U(T))x) : x / y)  \
    MOP_UNARY(neg_##T, T, T, WRAP(T, (U(T))0 - (U(T))x))                   \
    MOP_UNARY(abs_##T, T, T, x < 0 ? WRAP(T, (U(T))0 - (U(T))x) : x)       \
    MOP_UNARY(copy_##T, T, T, x)                                           \
    MOP_BINARY(eq_##T, T, uint8_t, x == y)                                 \
    MOP_BINARY(lt_##T, T, uint8_t, x < y)                                  \
    MOP_BINARY(gt_##T, T, uint8_t, x > y)                                  \
    MOP_BINARY(le_##T, T, uint8_t, x <= y)                                 \
    MOP_BINARY(ge_##T, T, uint8_t, x >= y)

INT_ARITH(int32_t)
INT_ARITH(int64_t)

MOP_BINARY(add_f32, float, float, x + y)
MOP_BINARY(sub_f32, float, float, x - y)
MOP_BINARY(mul_f32, float, float, x * y)
MOP_BINARY(div_f32, float, float, x / y)
/* x * x for squares (LayerNorm's variance): torch's own special case */
MOP_BINARY(pow_f32, float, float, y == 2.0f ? x * x : powf(x, y))
MOP_UNARY(neg_f32, float, float, -x)
MOP_UNARY(abs_f32, float, float, fabsf(x))
MOP_UNARY(sqrt_f32, float, float, sqrtf(x))
MOP_UNARY(exp_f32, float, float, expf(x))
MOP_UNARY(log_f32, float, float, logf(x))
MOP_UNARY(copy_f32, float, float, x)
MOP_UNARY(recip_f32, float, float, 1.0f / x)
MOP_UNARY(erf_f32, float, float, erff(x))
MOP_UNARY(sin_f32, float, float, sinf(x))
MOP_UNARY(cos_f32, float, float, cosf(x))
MOP_BINARY(eq_f32, float, uint8_t, x == y)
MOP_BINARY(lt_f32, float, uint8_t, x < y)
MOP_BINARY(gt_f32, float, uint8_t, x > y)
MOP_BINARY(le_f32, float, uint8_t, x <= y)
MOP_BINARY(ge_f32, float, uint8_t, x >= y)
MOP_BINARY(eq_b8, uint8_t, uint8_t, (x != 0) == (y != 0))
MOP_UNARY(not_b8, uint8_t, uint8_t, !x)
MOP_UNARY(copy_b8, uint8_t, uint8_t, x)

/* torch: grad / (2 * result) */
MOP_BINARY(sqrt_grad_f32, float, float, x / (2.0f * y))
/* torch: grad * sgn(x), 0 at 0 */
MOP_BINARY(abs_grad_f32, float, float,
           y > 0.0f ? x : y < 0.0f ? -x : 0.0f * x)

/* torch: -grad * y * y; and grad * 2/sqrt(pi) * exp(-x^2) */
MOP_BINARY(recip_grad_f32, float, float, -x * y * y)
MOP_BINARY(erf_grad_f32, float, float,
           x * 1.12837916709551257390f * expf(-y * y))

/* PowGrad(g, a, b) -> (dA, dB) at the broadcast shape, as torch's
** pow_backward_self / pow_backward_exponent. */
static void pow_grad_f32(void *const *o_, const void *const *in_,
                         const int *st, int64_t n, const mop_params *p)
{
    float *ga = o_[0], *gb = o_[1];
    const float *g = in_[0], *a = in_[1], *b = in_[2];

    (void)p;
    for (int64_t i = 0; i < n; i++) {
        float gv = g[i * st[0]], av = a[i * st[1]], bv = b[i * st[2]];

        float pm1 = bv == 2.0f ? av : powf(av, bv - 1.0f);
        float pw = bv == 2.0f ? av * av : powf(av, bv);

        ga[i] = bv == 0.0f ? 0.0f : gv * bv * pm1;
        gb[i] = av == 0.0f && bv >= 0.0f ? 0.0f : gv * pw * logf(av);
    }
}

/* Wide element functions (mathops.h): the other float and integer
** dtypes. Integer arithmetic wraps as NumPy's does. */
#define WF2(NAME, EXPR)                                                     \
    static double NAME##_wf(double x, double y)                             \
    {                                                                       \
        (void)y;                                                            \
        return (EXPR);                                                      \
    }
#define WI2(NAME, EXPR)                                                     \
    static int64_t NAME##_wi(int64_t x, int64_t y)                          \
    {                                                                       \
        (void)y;                                                            \
        return (EXPR);                                                      \
    }
WF2(add, x + y)
WF2(sub, x - y)
WF2(mul, x * y)
WF2(div, x / y)
WF2(pow, pow(x, y))
WF2(neg, -x)
WF2(abs, fabs(x))
WF2(sqrt, sqrt(x))
WF2(exp, exp(x))
WF2(log, log(x))
WF2(recip, 1.0 / x)
WF2(erf, erf(x))
WF2(sin, sin(x))
WF2(cos, cos(x))
WF2(eq, x == y)
WF2(lt, x < y)
WF2(gt, x > y)
WF2(le, x <= y)
WF2(ge, x >= y)
WI2(add, (int64_t)((uint64_t)x + (uint64_t)y))
WI2(sub, (int64_t)((uint64_t)x - (uint64_t)y))
WI2(mul, (int64_t)((uint64_t)x * (uint64_t)y))
WI2(div, y == 0 || (y == -1 && x == INT64_MIN) ? 0 : x / y)
WI2(neg, (int64_t)(0 - (uint64_t)x))
WI2(abs, x < 0 ? (int64_t)(0 - (uint64_t)x) : x)
WI2(eq, x == y)
WI2(lt, x < y)
WI2(gt, x > y)
WI2(le, x <= y)
WI2(ge, x >= y)

/* Integer powers by squaring (wrapping); a negative exponent gives 0
** except for bases 1 and -1. */
static int64_t pow_wi(int64_t x, int64_t y)
{
    uint64_t r = 1, b = (uint64_t)x;

    if (y < 0)
        return x == 1 ? 1 : x == -1 ? (y % 2 ? -1 : 1) : 0;
    while (y) {
        if (y & 1)
            r *= b;
        b *= b;
        y >>= 1;
    }
    return (int64_t)r;
}

#define KF(f) {f, NULL, NULL, NULL, NULL, NULL}
#define KFW(f, n) {f, NULL, NULL, NULL, n##_wf, NULL}
#define KFI(n) {n##_f32, n##_int32_t, n##_int64_t, NULL, n##_wf, n##_wi}

static const mop_kernels k_add = KFI(add), k_sub = KFI(sub), k_mul = KFI(mul),
                         k_div = KFI(div), k_neg = KFI(neg), k_abs = KFI(abs),
                         k_lt = KFI(lt), k_gt = KFI(gt), k_le = KFI(le),
                         k_ge = KFI(ge);
static const mop_kernels k_copy = {copy_f32, copy_int32_t, copy_int64_t,
                                   copy_b8, NULL, NULL};
static const mop_kernels k_eq = {eq_f32, eq_int32_t, eq_int64_t, eq_b8,
                                 eq_wf, eq_wi};
static const mop_kernels k_not = {NULL, NULL, NULL, not_b8, NULL, NULL};
static const mop_kernels k_pow = {pow_f32, NULL, NULL, NULL, pow_wf, pow_wi};
static const mop_kernels k_sqrt = KFW(sqrt_f32, sqrt),
                         k_exp = KFW(exp_f32, exp), k_log = KFW(log_f32, log),
                         k_sqrt_grad = KF(sqrt_grad_f32),
                         k_abs_grad = KF(abs_grad_f32),
                         k_pow_grad = KF(pow_grad_f32),
                         k_recip = KFW(recip_f32, recip),
                         k_erf = KFW(erf_f32, erf),
                         k_sin = KFW(sin_f32, sin), k_cos = KFW(cos_f32, cos),
                         k_recip_grad = KF(recip_grad_f32),
                         k_erf_grad = KF(erf_grad_f32);

/* ---- infer and forward ---------------------------------------------------- */

#define EW_OP(NAME, OPNAME, NIN, ALLOWED, OUTDT, KERNELS)                   \
    static popc_status NAME##_infer(popc_infer_ctx *ic)                     \
    {                                                                       \
        return mop_infer_ew(ic, OPNAME, NIN, ALLOWED, OUTDT);               \
    }                                                                       \
    static popc_status NAME##_forward(const popc_kernel_ctx *kc)            \
    {                                                                       \
        return mop_map(kc, &KERNELS, kc->inputs, NIN, kc->outputs, 1,      \
                       NULL);                                               \
    }

#define NUM (MOP_F | MOP_I | MOP_WF | MOP_WI)
#define FLT (MOP_F | MOP_WF)
#define UNDEF POPC_DTYPE_UNDEFINED
#define BOOL POPC_DTYPE_BOOL

EW_OP(add, "Add", 2, NUM, UNDEF, k_add)
EW_OP(sub, "Sub", 2, NUM, UNDEF, k_sub)
EW_OP(mul, "Mul", 2, NUM, UNDEF, k_mul)
EW_OP(div, "Div", 2, NUM, UNDEF, k_div)
/* Pow-12 and later allow an exponent of another numeric dtype; the result
** has the base's dtype. */
static popc_status pow_infer(popc_infer_ctx *ic)
{
    popc_view same[2];
    popc_infer_ctx one = *ic;
    popc_dtype base = ic->inputs[0].dtype, ex = ic->inputs[1].dtype;

    if (!((NUM >> ex) & 1u))
        return opu_error(POPC_EINVAL, "Pow", ic->node_name,
                         "exponent has dtype %s, which Pow does not "
                         "support", popc_dtype_name(ex));
    same[0] = ic->inputs[0];
    same[1] = ic->inputs[1];
    same[1].dtype = base;
    one.inputs = same;
    return mop_infer_ew(&one, "Pow", 2, NUM, UNDEF);
}

static popc_status pow_forward(const popc_kernel_ctx *kc)
{
    return mop_map(kc, &k_pow, kc->inputs, 2, kc->outputs, 1, NULL);
}
EW_OP(neg, "Neg", 1, NUM, UNDEF, k_neg)
EW_OP(abs, "Abs", 1, NUM, UNDEF, k_abs)
EW_OP(sqrt, "Sqrt", 1, FLT, UNDEF, k_sqrt)
EW_OP(exp, "Exp", 1, FLT, UNDEF, k_exp)
EW_OP(log, "Log", 1, FLT, UNDEF, k_log)
EW_OP(recip, "Reciprocal", 1, FLT, UNDEF, k_recip)
EW_OP(erf, "Erf", 1, FLT, UNDEF, k_erf)
EW_OP(sin, "Sin", 1, FLT, UNDEF, k_sin)
EW_OP(cos, "Cos", 1, FLT, UNDEF, k_cos)
EW_OP(equal, "Equal", 2, NUM | MOP_B, BOOL, k_eq)
EW_OP(less, "Less", 2, NUM, BOOL, k_lt)
EW_OP(greater, "Greater", 2, NUM, BOOL, k_gt)
EW_OP(less_equal, "LessOrEqual", 2, NUM, BOOL, k_le)
EW_OP(greater_equal, "GreaterOrEqual", 2, NUM, BOOL, k_ge)
EW_OP(not, "Not", 1, MOP_B, BOOL, k_not)
EW_OP(sqrt_grad, "SqrtGrad", 2, MOP_F, UNDEF, k_sqrt_grad)
EW_OP(abs_grad, "AbsGrad", 2, MOP_F, UNDEF, k_abs_grad)
EW_OP(recip_grad, "ReciprocalGrad", 2, MOP_F, UNDEF, k_recip_grad)
EW_OP(erf_grad, "ErfGrad", 2, MOP_F, UNDEF, k_erf_grad)

static popc_status sum_infer(popc_infer_ctx *ic)
{
    return mop_infer_ew(ic, "Sum", ic->n_inputs, NUM, UNDEF);
}

/* Left to right: out = in0 + in1, then out += in_k, each step over this
** part's share only, so the rounding is the same however it is split. */
static popc_status sum_forward(const popc_kernel_ctx *kc)
{
    popc_view pair[2];
    popc_status st;

    if (kc->n_inputs == 1)
        return mop_map(kc, &k_copy, kc->inputs, 1, kc->outputs, 1, NULL);
    if ((st = mop_map(kc, &k_add, kc->inputs, 2, kc->outputs, 1, NULL)) !=
        POPC_OK)
        return st;
    pair[0] = kc->outputs[0];
    for (int k = 2; k < kc->n_inputs; k++) {
        pair[1] = kc->inputs[k];
        if ((st = mop_map(kc, &k_add, pair, 2, kc->outputs, 1, NULL)) !=
            POPC_OK)
            return st;
    }
    return POPC_OK;
}

static popc_status pow_grad_infer(popc_infer_ctx *ic)
{
    popc_status st;

    if ((st = mop_infer_ew(ic, "PowGrad", 3, MOP_F, UNDEF)) != POPC_OK)
        return st;
    ic->outputs[1] = ic->outputs[0];
    return POPC_OK;
}

static popc_status pow_grad_forward(const popc_kernel_ctx *kc)
{
    return mop_map(kc, &k_pow_grad, kc->inputs, 3, kc->outputs, 2, NULL);
}

/* ---- gradients -------------------------------------------------------------- */

static popc_status add_sub_grad(popc_grad_ctx *gc, int negate_b)
{
    int g = gc->output_grads[0], nb;
    popc_status st;

    if (g < 0)
        return POPC_OK;
    if ((st = opu_grad_sum_to(gc, g, &gc->input_info[0],
                              &gc->input_grads[0])) != POPC_OK)
        return st;
    if (!negate_b)
        return opu_grad_sum_to(gc, g, &gc->input_info[1],
                               &gc->input_grads[1]);
    if ((st = opu_grad_node(gc, NULL, "Neg", &g, 1, NULL, 0, &nb)) !=
        POPC_OK)
        return st;
    return opu_grad_sum_to(gc, nb, &gc->input_info[1], &gc->input_grads[1]);
}

static popc_status add_grad(popc_grad_ctx *gc)
{
    return add_sub_grad(gc, 0);
}

static popc_status sub_grad(popc_grad_ctx *gc)
{
    return add_sub_grad(gc, 1);
}

static popc_status mul_grad(popc_grad_ctx *gc)
{
    int g = gc->output_grads[0];
    int in[2], t;
    popc_status st;

    if (g < 0)
        return POPC_OK;
    for (int i = 0; i < 2; i++) {
        in[0] = g;
        in[1] = gc->inputs[1 - i];
        if ((st = opu_grad_node(gc, NULL, "Mul", in, 2, NULL, 0, &t)) !=
            POPC_OK)
            return st;
        if ((st = opu_grad_sum_to(gc, t, &gc->input_info[i],
                                  &gc->input_grads[i])) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

/* dA = g / b; dB = -(g / b) * (a / b) = -(g / b) * y */
static popc_status div_grad(popc_grad_ctx *gc)
{
    int g = gc->output_grads[0];
    int in[2], q, t, nt;
    popc_status st;

    if (g < 0)
        return POPC_OK;
    in[0] = g;
    in[1] = gc->inputs[1];
    if ((st = opu_grad_node(gc, NULL, "Div", in, 2, NULL, 0, &q)) != POPC_OK)
        return st;
    if ((st = opu_grad_sum_to(gc, q, &gc->input_info[0],
                              &gc->input_grads[0])) != POPC_OK)
        return st;
    in[0] = q;
    in[1] = gc->outputs[0];
    if ((st = opu_grad_node(gc, NULL, "Mul", in, 2, NULL, 0, &t)) != POPC_OK)
        return st;
    if ((st = opu_grad_node(gc, NULL, "Neg", &t, 1, NULL, 0, &nt)) !=
        POPC_OK)
        return st;
    return opu_grad_sum_to(gc, nt, &gc->input_info[1], &gc->input_grads[1]);
}

static popc_status pow_grad(popc_grad_ctx *gc)
{
    int g = gc->output_grads[0];
    int in[3], out[2];
    popc_status st;

    if (g < 0)
        return POPC_OK;
    in[0] = g;
    in[1] = gc->inputs[0];
    in[2] = gc->inputs[1];
    if ((st = gc->host->grad_add_node(gc, "popc", "PowGrad", in, 3, out, 2,
                                      NULL, 0)) != POPC_OK)
        return st;
    if ((st = opu_grad_sum_to(gc, out[0], &gc->input_info[0],
                              &gc->input_grads[0])) != POPC_OK)
        return st;
    return opu_grad_sum_to(gc, out[1], &gc->input_info[1],
                           &gc->input_grads[1]);
}

static popc_status sum_grad(popc_grad_ctx *gc)
{
    int g = gc->output_grads[0];
    popc_status st;

    if (g < 0)
        return POPC_OK;
    for (int i = 0; i < gc->n_inputs; i++)
        if ((st = opu_grad_sum_to(gc, g, &gc->input_info[i],
                                  &gc->input_grads[i])) != POPC_OK)
            return st;
    return POPC_OK;
}

static popc_status neg_grad(popc_grad_ctx *gc)
{
    int g = gc->output_grads[0];

    if (g < 0)
        return POPC_OK;
    return opu_grad_node(gc, NULL, "Neg", &g, 1, NULL, 0,
                         &gc->input_grads[0]);
}

static popc_status abs_grad(popc_grad_ctx *gc)
{
    return mop_grad_unary_helper(gc, "AbsGrad", gc->inputs[0], NULL, 0);
}

static popc_status sqrt_grad(popc_grad_ctx *gc)
{
    return mop_grad_unary_helper(gc, "SqrtGrad", gc->outputs[0], NULL, 0);
}

/* Exp: g * y; Log: g / x */
static popc_status exp_log_grad(popc_grad_ctx *gc, const char *op, int t)
{
    int in[2];

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    in[0] = gc->output_grads[0];
    in[1] = t;
    return opu_grad_node(gc, NULL, op, in, 2, NULL, 0, &gc->input_grads[0]);
}

static popc_status exp_grad(popc_grad_ctx *gc)
{
    return exp_log_grad(gc, "Mul", gc->outputs[0]);
}

static popc_status log_grad(popc_grad_ctx *gc)
{
    return exp_log_grad(gc, "Div", gc->inputs[0]);
}

static popc_status recip_grad(popc_grad_ctx *gc)
{
    return mop_grad_unary_helper(gc, "ReciprocalGrad", gc->outputs[0], NULL,
                                 0);
}

static popc_status erf_grad(popc_grad_ctx *gc)
{
    return mop_grad_unary_helper(gc, "ErfGrad", gc->inputs[0], NULL, 0);
}

/* Sin: g * cos(x); Cos: -(g * sin(x)) */
static popc_status sin_cos_grad(popc_grad_ctx *gc, const char *other,
                                int negate)
{
    int in[2], t;
    popc_status st;

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if ((st = opu_grad_node(gc, NULL, other, &gc->inputs[0], 1, NULL, 0,
                            &in[1])) != POPC_OK)
        return st;
    in[0] = gc->output_grads[0];
    if (!negate)
        return opu_grad_node(gc, NULL, "Mul", in, 2, NULL, 0,
                             &gc->input_grads[0]);
    if ((st = opu_grad_node(gc, NULL, "Mul", in, 2, NULL, 0, &t)) != POPC_OK)
        return st;
    return opu_grad_node(gc, NULL, "Neg", &t, 1, NULL, 0,
                         &gc->input_grads[0]);
}

static popc_status sin_grad(popc_grad_ctx *gc)
{
    return sin_cos_grad(gc, "Cos", 0);
}

static popc_status cos_grad(popc_grad_ctx *gc)
{
    return sin_cos_grad(gc, "Sin", 1);
}

/* ---- costs ------------------------------------------------------------------ */

/* Transcendental functions cost about this many flops per element. */
#define TRANSCENDENTAL 20.0

static void ew_cost(const popc_infer_ctx *ic, popc_cost *c, double per_elem)
{
    double bytes = (double)popc_view_nbytes(&ic->outputs[0]);

    for (int i = 0; i < ic->n_inputs; i++)
        if (opu_present(&ic->inputs[i]))
            bytes += (double)popc_view_nbytes(&ic->inputs[i]);
    c->flops = per_elem * (double)popc_view_numel(&ic->outputs[0]);
    c->bytes = bytes;
    c->temp_bytes = 0;
}

static popc_status transcendental_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    ew_cost(ic, c, TRANSCENDENTAL);
    return POPC_OK;
}

static popc_status sum_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    ew_cost(ic, c, ic->n_inputs > 1 ? ic->n_inputs - 1 : 1);
    return POPC_OK;
}

/* ---- table ------------------------------------------------------------------ */

#define DEF(DOMAIN, NAME, VER, MIN_IN, MAX_IN, MIN_OUT, MAX_OUT, P, GRAD,     \
            COST, DOC)                                                      \
    OPU_DEF(DOMAIN, NAME, VER, MIN_IN, MAX_IN, MIN_OUT, MAX_OUT,            \
            POPC_OP_SPLIT, P, GRAD, COST, DOC)

/* the same, for an op the core's passes build (popc_op_role) */
#define ROLE_DEF(ROLE, DOMAIN, NAME, VER, MIN_IN, MAX_IN, P, GRAD, COST, DOC) \
    OPU_ROLE_DEF(ROLE, DOMAIN, NAME, VER, MIN_IN, MAX_IN, 1, 1,              \
                 POPC_OP_SPLIT, P, GRAD, COST, DOC)

/* elementwise through mop_map: output element i reads element i of input
** 0 only, so it may run in place (POPC_OP_INPLACE) */
#define DEFI(DOMAIN, NAME, VER, MIN_IN, MAX_IN, P, GRAD, COST, DOC)         \
    OPU_DEF(DOMAIN, NAME, VER, MIN_IN, MAX_IN, 1, 1,                        \
            POPC_OP_SPLIT | POPC_OP_INPLACE, P, GRAD, COST, DOC)
#define ROLE_DEFI(ROLE, DOMAIN, NAME, VER, P, GRAD, DOC)                    \
    OPU_ROLE_DEF(ROLE, DOMAIN, NAME, VER, 2, 2, 1, 1,                        \
                 POPC_OP_SPLIT | POPC_OP_INPLACE, P, GRAD, NULL, DOC)

#define ONNX "ai.onnx"

const popc_op_def mop_arith_ops[] = {
    ROLE_DEFI(POPC_ROLE_ADD, ONNX, "Add", 14, add, add_grad,
        "A + B with numpy broadcasting"),
    DEFI(ONNX, "Sub", 14, 2, 2, sub, sub_grad, NULL,
        "A - B with numpy broadcasting"),
    ROLE_DEFI(POPC_ROLE_MUL, ONNX, "Mul", 14, mul, mul_grad,
        "A * B with numpy broadcasting"),
    DEFI(ONNX, "Div", 14, 2, 2, div, div_grad, NULL,
        "A / B with numpy broadcasting (integers truncate)"),
    DEF(ONNX, "Pow", 15, 2, 2, 1, 1, pow, pow_grad, transcendental_cost,
        "X ** Y with numpy broadcasting"),
    ROLE_DEF(POPC_ROLE_SUM, ONNX, "Sum", 13, 1, 64, sum, sum_grad, sum_cost,
        "elementwise sum of 1..64 inputs with broadcasting"),
    DEFI(ONNX, "Neg", 13, 1, 1, neg, neg_grad, NULL, "-X"),
    DEFI(ONNX, "Abs", 13, 1, 1, abs, abs_grad, NULL, "|X|"),
    DEFI(ONNX, "Sqrt", 13, 1, 1, sqrt, sqrt_grad, transcendental_cost,
        "square root"),
    DEFI(ONNX, "Exp", 13, 1, 1, exp, exp_grad, transcendental_cost,
        "e ** X"),
    DEFI(ONNX, "Log", 13, 1, 1, log, log_grad, transcendental_cost,
        "natural logarithm"),
    DEFI(ONNX, "Reciprocal", 13, 1, 1, recip, recip_grad, NULL, "1 / X"),
    DEFI(ONNX, "Erf", 13, 1, 1, erf, erf_grad, transcendental_cost,
        "error function"),
    DEFI(ONNX, "Sin", 7, 1, 1, sin, sin_grad, transcendental_cost,
        "sine"),
    DEFI(ONNX, "Cos", 7, 1, 1, cos, cos_grad, transcendental_cost,
        "cosine"),
    DEF(ONNX, "Equal", 13, 2, 2, 1, 1, equal, NULL, NULL, "A == B (bool)"),
    DEF(ONNX, "Less", 13, 2, 2, 1, 1, less, NULL, NULL, "A < B (bool)"),
    DEF(ONNX, "Greater", 13, 2, 2, 1, 1, greater, NULL, NULL,
        "A > B (bool)"),
    DEF(ONNX, "LessOrEqual", 16, 2, 2, 1, 1, less_equal, NULL, NULL,
        "A <= B (bool)"),
    DEF(ONNX, "GreaterOrEqual", 16, 2, 2, 1, 1, greater_equal, NULL, NULL,
        "A >= B (bool)"),
    DEF(ONNX, "Not", 1, 1, 1, 1, 1, not, NULL, NULL, "logical not"),
    DEFI("popc", "SqrtGrad", 1, 2, 2, sqrt_grad, NULL, NULL,
        "gradient of Sqrt: (dY, Y) -> dY / (2 Y)"),
    DEFI("popc", "AbsGrad", 1, 2, 2, abs_grad, NULL, NULL,
        "gradient of Abs: (dY, X) -> dY * sign(X)"),
    DEFI("popc", "ReciprocalGrad", 1, 2, 2, recip_grad, NULL, NULL,
        "gradient of Reciprocal: (dY, Y) -> -dY * Y^2"),
    DEFI("popc", "ErfGrad", 1, 2, 2, erf_grad, NULL, transcendental_cost,
        "gradient of Erf: (dY, X) -> dY * 2/sqrt(pi) * exp(-X^2)"),
    DEF("popc", "PowGrad", 1, 3, 3, 2, 2, pow_grad, NULL,
        transcendental_cost,
        "gradient of Pow: (dZ, X, Y) -> (dX, dY) at the broadcast shape"),
};

const int mop_arith_count = sizeof mop_arith_ops / sizeof mop_arith_ops[0];
