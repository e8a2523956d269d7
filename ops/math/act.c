/* act.c - activations: Relu, LeakyRelu, Gelu, Sigmoid, Tanh, Elu, Celu,
** Softplus, Clip and their gradient helpers (popc::ReluGrad,
** LeakyReluGrad, GeluGrad, SigmoidGrad, TanhGrad, EluGrad, CeluGrad,
** SoftplusGrad, ClipGrad), with torch's formulas so results match PyTorch.
**
** Gelu follows ONNX opset 20 (attribute approximate = "none" | "tanh");
** it is registered from version 1 so opset-17 graphs can use it.
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
#include "ops/util/elem.h"

#define SQRT1_2 0.70710678118654752440f
#define GELU_BETA 0.79788456080286535588f   /* sqrt(2 / pi) */
#define GELU_KAPPA 0.044715f
#define INV_SQRT_2PI 0.39894228040143267794f

/* ---- run functions ------------------------------------------------------ */

MOP_UNARY(relu_f32, float, float, x < 0.0f ? 0.0f : x)
MOP_UNARY(relu_int32_t, int32_t, int32_t, x < 0 ? 0 : x)
MOP_UNARY(relu_int64_t, int64_t, int64_t, x < 0 ? 0 : x)
MOP_UNARY(leaky_f32, float, float, x > 0.0f ? x : x * p->alpha)
MOP_UNARY(sigmoid_f32, float, float, 1.0f / (1.0f + expf(-x)))
MOP_UNARY(tanh_f32, float, float, tanhf(x))
MOP_UNARY(elu_f32, float, float, x > 0.0f ? x : p->alpha * expm1f(x))
MOP_UNARY(celu_f32, float, float,
          x > 0.0f ? x : p->alpha * expm1f(x / p->alpha))
/* torch's softplus (beta 1, threshold 20) */
MOP_UNARY(softplus_f32, float, float, x > 20.0f ? x : log1pf(expf(x)))
MOP_UNARY(clip_f32, float, float, x < p->lo ? p->lo : x > p->hi ? p->hi : x)
MOP_UNARY(clip_int32_t, int32_t, int32_t,
          x < p->ilo ? (int32_t)p->ilo : x > p->ihi ? (int32_t)p->ihi : x)
MOP_UNARY(clip_int64_t, int64_t, int64_t,
          x < p->ilo ? p->ilo : x > p->ihi ? p->ihi : x)

static inline float gelu_erf(float x)
{
    return 0.5f * x * (1.0f + erff(x * SQRT1_2));
}

static inline float gelu_tanh(float x)
{
    float inner = GELU_BETA * (x + GELU_KAPPA * x * x * x);

    return 0.5f * x * (1.0f + tanhf(inner));
}

static inline float gelu_erf_grad(float dy, float x)
{
    float cdf = 0.5f * (1.0f + erff(x * SQRT1_2));
    float pdf = expf(-0.5f * x * x) * INV_SQRT_2PI;

    return dy * (cdf + x * pdf);
}

static inline float gelu_tanh_grad(float dy, float x)
{
    float x_sq = x * x;
    float inner = GELU_BETA * (x + GELU_KAPPA * x_sq * x);
    float t = tanhf(inner);
    float left = 0.5f * x;
    float right = 1.0f + t;
    float dleft = 0.5f * right;
    float dright = left * (1.0f - t * t) * GELU_BETA *
                   (1.0f + 3.0f * GELU_KAPPA * x_sq);

    return dy * (dleft + dright);
}

static void gelu_f32(void *const *o_, const void *const *in_, const int *st,
                     int64_t n, const mop_params *p)
{
    float *o = o_[0];
    const float *a = in_[0];

    (void)st;
    if (p->approx)
        for (int64_t i = 0; i < n; i++)
            o[i] = gelu_tanh(a[i]);
    else
        for (int64_t i = 0; i < n; i++)
            o[i] = gelu_erf(a[i]);
}

static void gelu_grad_f32(void *const *o_, const void *const *in_,
                          const int *st, int64_t n, const mop_params *p)
{
    float *o = o_[0];
    const float *g = in_[0], *a = in_[1];

    (void)st;
    if (p->approx)
        for (int64_t i = 0; i < n; i++)
            o[i] = gelu_tanh_grad(g[i], a[i]);
    else
        for (int64_t i = 0; i < n; i++)
            o[i] = gelu_erf_grad(g[i], a[i]);
}

/* (dY, Y) or (dY, X): x is dY, y the saved tensor */
MOP_BINARY(relu_grad_f32, float, float, y > 0.0f ? x : 0.0f)
MOP_BINARY(leaky_grad_f32, float, float, y > 0.0f ? x : x * p->alpha)
MOP_BINARY(sigmoid_grad_f32, float, float, x * (1.0f - y) * y)
MOP_BINARY(tanh_grad_f32, float, float, x * (1.0f - y * y))
MOP_BINARY(elu_grad_f32, float, float,
           y > 0.0f ? x : x * p->alpha * expf(y))
MOP_BINARY(celu_grad_f32, float, float,
           y > 0.0f ? x : x * expf(y / p->alpha))
MOP_BINARY(softplus_grad_f32, float, float,
           y > 20.0f ? x : x * (expf(y) / (expf(y) + 1.0f)))
/* Strictly inside (min, max), as torch's hardtanh and ReLU6 (where exported
** Clips mostly come from) pass it: a value exactly at a bound, such as the 0
** a constant channel gives after a training BatchNormalization, gets no
** gradient. (torch.clamp passes it at the bounds; the rules differ only
** there.) */
MOP_BINARY(clip_grad_f32, float, float, y > p->lo && y < p->hi ? x : 0.0f)

#define KF(f) {f, NULL, NULL, NULL, NULL, NULL}

static const mop_kernels k_relu = {relu_f32, relu_int32_t, relu_int64_t,
                                   NULL, NULL, NULL};
static const mop_kernels k_clip = {clip_f32, clip_int32_t, clip_int64_t,
                                   NULL, NULL, NULL};
static const mop_kernels k_leaky = KF(leaky_f32), k_gelu = KF(gelu_f32),
                         k_sigmoid = KF(sigmoid_f32), k_tanh = KF(tanh_f32),
                         k_relu_grad = KF(relu_grad_f32),
                         k_leaky_grad = KF(leaky_grad_f32),
                         k_gelu_grad = KF(gelu_grad_f32),
                         k_sigmoid_grad = KF(sigmoid_grad_f32),
                         k_tanh_grad = KF(tanh_grad_f32),
                         k_clip_grad = KF(clip_grad_f32),
                         k_elu = KF(elu_f32), k_celu = KF(celu_f32),
                         k_softplus = KF(softplus_f32),
                         k_elu_grad = KF(elu_grad_f32),
                         k_celu_grad = KF(celu_grad_f32),
                         k_softplus_grad = KF(softplus_grad_f32);

/* ---- parameters ------------------------------------------------------------- */

static popc_status gelu_mode(const char *op,
                             const char *node, const popc_attrs *a, int *out)
{
    const char *mode = popc_attr_string(a, "approximate", "none");

    if (strcmp(mode, "none") == 0)
        *out = 0;
    else if (strcmp(mode, "tanh") == 0)
        *out = 1;
    else
        return opu_error(POPC_EINVAL, op, node,
                         "approximate=\"%s\" is not supported; use \"none\" "
                         "(erf, the default) or \"tanh\"", mode);
    return POPC_OK;
}

/* Clip's optional min (input first) and max (first + 1) must be scalars
** of the data's dtype. */
static popc_status clip_check(const popc_infer_ctx *ic, const char *op,
                              int first)
{
    for (int i = first; i < first + 2 && i < ic->n_inputs; i++) {
        const popc_view *v = &ic->inputs[i];

        if (!opu_present(v))
            continue;
        if (popc_view_numel(v) != 1)
            return opu_error(POPC_EINVAL, op, ic->node_name,
                             "%s must be a scalar, got %lld elements",
                             i == first ? "min" : "max",
                             (long long)popc_view_numel(v));
        if (v->dtype != ic->inputs[0].dtype)
            return opu_error(POPC_EINVAL, op, ic->node_name,
                             "%s is %s but the input is %s; they must match",
                             i == first ? "min" : "max",
                             popc_dtype_name(v->dtype),
                             popc_dtype_name(ic->inputs[0].dtype));
    }
    return POPC_OK;
}

static void clip_params(const popc_kernel_ctx *kc, int first, mop_params *p)
{
    const popc_view *lo = kc->n_inputs > first ? &kc->inputs[first] : NULL;
    const popc_view *hi = kc->n_inputs > first + 1 ? &kc->inputs[first + 1]
                                                   : NULL;

    memset(p, 0, sizeof *p);
    p->lo = -INFINITY;
    p->hi = INFINITY;
    p->ilo = INT64_MIN;
    p->ihi = INT64_MAX;
    if (opu_present(lo) && lo->data) {
        if (lo->dtype == POPC_DTYPE_I32 || lo->dtype == POPC_DTYPE_I64)
            p->ilo = lo->dtype == POPC_DTYPE_I32 ? *(const int32_t *)lo->data
                                                 : *(const int64_t *)lo->data;
        else
            p->lo = (float)opu_scalar(lo);
    }
    if (opu_present(hi) && hi->data) {
        if (hi->dtype == POPC_DTYPE_I32 || hi->dtype == POPC_DTYPE_I64)
            p->ihi = hi->dtype == POPC_DTYPE_I32 ? *(const int32_t *)hi->data
                                                 : *(const int64_t *)hi->data;
        else
            p->hi = (float)opu_scalar(hi);
    }
}

/* ---- infer and forward ---------------------------------------------------- */

#define UNDEF POPC_DTYPE_UNDEFINED

static popc_status relu_infer(popc_infer_ctx *ic)
{
    return mop_infer_ew(ic, "Relu", 1, MOP_F | MOP_I, UNDEF);
}

static popc_status relu_forward(const popc_kernel_ctx *kc)
{
    return mop_map(kc, &k_relu, kc->inputs, 1, kc->outputs, 1, NULL);
}

static popc_status leaky_infer(popc_infer_ctx *ic)
{
    return mop_infer_ew(ic, "LeakyRelu", 1, MOP_F, UNDEF);
}

static popc_status leaky_forward(const popc_kernel_ctx *kc)
{
    mop_params p = {.alpha = (float)popc_attr_float(kc->attrs, "alpha", 0.01)};

    return mop_map(kc, &k_leaky, kc->inputs, 1, kc->outputs, 1, &p);
}

static popc_status gelu_infer(popc_infer_ctx *ic)
{
    int approx;
    popc_status st;

    if ((st = gelu_mode("Gelu", ic->node_name, ic->attrs,
                        &approx)) != POPC_OK)
        return st;
    return mop_infer_ew(ic, "Gelu", 1, MOP_F, UNDEF);
}

static popc_status gelu_forward(const popc_kernel_ctx *kc)
{
    mop_params p = {0};
    popc_status st;

    if ((st = gelu_mode("Gelu", kc->node_name, kc->attrs,
                        &p.approx)) != POPC_OK)
        return st;
    return mop_map(kc, &k_gelu, kc->inputs, 1, kc->outputs, 1, &p);
}

static popc_status sigmoid_infer(popc_infer_ctx *ic)
{
    return mop_infer_ew(ic, "Sigmoid", 1, MOP_F, UNDEF);
}

static popc_status sigmoid_forward(const popc_kernel_ctx *kc)
{
    return mop_map(kc, &k_sigmoid, kc->inputs, 1, kc->outputs, 1, NULL);
}

static popc_status tanh_infer(popc_infer_ctx *ic)
{
    return mop_infer_ew(ic, "Tanh", 1, MOP_F, UNDEF);
}

static popc_status tanh_forward(const popc_kernel_ctx *kc)
{
    return mop_map(kc, &k_tanh, kc->inputs, 1, kc->outputs, 1, NULL);
}

/* Elu and Celu (and their helpers) take a float attribute alpha (1.0). */
#define ALPHA_OP(NAME, OPNAME, NIN, KERNELS)                                \
    static popc_status NAME##_infer(popc_infer_ctx *ic)                     \
    {                                                                       \
        return mop_infer_ew(ic, OPNAME, NIN, MOP_F, UNDEF);                 \
    }                                                                       \
    static popc_status NAME##_forward(const popc_kernel_ctx *kc)            \
    {                                                                       \
        mop_params p = {0};                                                 \
        p.alpha = (float)popc_attr_float(kc->attrs, "alpha", 1.0);          \
        return mop_map(kc, &KERNELS, kc->inputs, NIN, kc->outputs, 1, &p);  \
    }

ALPHA_OP(elu, "Elu", 1, k_elu)
ALPHA_OP(celu, "Celu", 1, k_celu)
ALPHA_OP(elu_grad, "EluGrad", 2, k_elu_grad)
ALPHA_OP(celu_grad, "CeluGrad", 2, k_celu_grad)

static popc_status softplus_infer(popc_infer_ctx *ic)
{
    return mop_infer_ew(ic, "Softplus", 1, MOP_F, UNDEF);
}

static popc_status softplus_forward(const popc_kernel_ctx *kc)
{
    return mop_map(kc, &k_softplus, kc->inputs, 1, kc->outputs, 1, NULL);
}

static popc_status clip_infer(popc_infer_ctx *ic)
{
    popc_status st;

    if ((st = mop_infer_ew(ic, "Clip", 1, MOP_F | MOP_I | MOP_WF | MOP_WI,
                           UNDEF)) != POPC_OK)
        return st;
    return clip_check(ic, "Clip", 1);
}

/* The other dtypes, element by element in double (exact for them). */
static popc_status clip_wide(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *o = &kc->outputs[0];
    double lo = -INFINITY, hi = INFINITY;
    int64_t s, e;

    if (kc->n_inputs > 1 && opu_present(&kc->inputs[1]))
        lo = opu_load_f(&kc->inputs[1], 0);
    if (kc->n_inputs > 2 && opu_present(&kc->inputs[2]))
        hi = opu_load_f(&kc->inputs[2], 0);
    opu_range(popc_view_numel(o), kc->part, kc->n_parts, &s, &e);
    for (int64_t i = s; i < e; i++) {
        double v = opu_load_f(x, i);

        opu_store_f(o, i, v < lo ? lo : v > hi ? hi : v);
    }
    return POPC_OK;
}

static popc_status clip_forward(const popc_kernel_ctx *kc)
{
    mop_params p;

    if (((MOP_WF | MOP_WI) >> kc->inputs[0].dtype) & 1u)
        return clip_wide(kc);
    clip_params(kc, 1, &p);
    return mop_map(kc, &k_clip, kc->inputs, 1, kc->outputs, 1, &p);
}

/* The helpers take (dY, saved) of one shape and dtype. */
#define GRAD_HELPER(NAME, OPNAME, KERNELS)                                  \
    static popc_status NAME##_infer(popc_infer_ctx *ic)                     \
    {                                                                       \
        return mop_infer_ew(ic, OPNAME, 2, MOP_F, UNDEF);                   \
    }                                                                       \
    static popc_status NAME##_forward(const popc_kernel_ctx *kc)            \
    {                                                                       \
        return mop_map(kc, &KERNELS, kc->inputs, 2, kc->outputs, 1, NULL);  \
    }

GRAD_HELPER(relu_grad, "ReluGrad", k_relu_grad)
GRAD_HELPER(sigmoid_grad, "SigmoidGrad", k_sigmoid_grad)
GRAD_HELPER(tanh_grad, "TanhGrad", k_tanh_grad)
GRAD_HELPER(softplus_grad, "SoftplusGrad", k_softplus_grad)

static popc_status leaky_grad_infer(popc_infer_ctx *ic)
{
    return mop_infer_ew(ic, "LeakyReluGrad", 2, MOP_F, UNDEF);
}

static popc_status leaky_grad_forward(const popc_kernel_ctx *kc)
{
    mop_params p = {.alpha = (float)popc_attr_float(kc->attrs, "alpha", 0.01)};

    return mop_map(kc, &k_leaky_grad, kc->inputs, 2, kc->outputs, 1, &p);
}

static popc_status gelu_grad_infer(popc_infer_ctx *ic)
{
    int approx;
    popc_status st;

    if ((st = gelu_mode("GeluGrad", ic->node_name, ic->attrs,
                        &approx)) != POPC_OK)
        return st;
    return mop_infer_ew(ic, "GeluGrad", 2, MOP_F, UNDEF);
}

static popc_status gelu_grad_forward(const popc_kernel_ctx *kc)
{
    mop_params p = {0};
    popc_status st;

    if ((st = gelu_mode("GeluGrad", kc->node_name, kc->attrs,
                        &p.approx)) != POPC_OK)
        return st;
    return mop_map(kc, &k_gelu_grad, kc->inputs, 2, kc->outputs, 1, &p);
}

/* ClipGrad(dY, X, min?, max?) */
static popc_status clip_grad_infer(popc_infer_ctx *ic)
{
    popc_status st;

    if ((st = mop_infer_ew(ic, "ClipGrad", 2, MOP_F, UNDEF)) != POPC_OK)
        return st;
    return clip_check(ic, "ClipGrad", 2);
}

static popc_status clip_grad_forward(const popc_kernel_ctx *kc)
{
    mop_params p;

    clip_params(kc, 2, &p);
    return mop_map(kc, &k_clip_grad, kc->inputs, 2, kc->outputs, 1, &p);
}

/* ---- gradients -------------------------------------------------------------- */

static popc_status relu_grad(popc_grad_ctx *gc)
{
    return mop_grad_unary_helper(gc, "ReluGrad", gc->outputs[0], NULL, 0);
}

static popc_status leaky_grad(popc_grad_ctx *gc)
{
    popc_attr a = {.name = "alpha", .type = POPC_ATTR_FLOAT};

    a.f = popc_attr_float(gc->attrs, "alpha", 0.01);
    return mop_grad_unary_helper(gc, "LeakyReluGrad", gc->inputs[0], &a, 1);
}

static popc_status gelu_grad(popc_grad_ctx *gc)
{
    popc_attr a = {.name = "approximate", .type = POPC_ATTR_STRING};

    a.s = popc_attr_string(gc->attrs, "approximate", "none");
    return mop_grad_unary_helper(gc, "GeluGrad", gc->inputs[0], &a, 1);
}

static popc_status sigmoid_grad(popc_grad_ctx *gc)
{
    return mop_grad_unary_helper(gc, "SigmoidGrad", gc->outputs[0], NULL, 0);
}

static popc_status tanh_grad(popc_grad_ctx *gc)
{
    return mop_grad_unary_helper(gc, "TanhGrad", gc->outputs[0], NULL, 0);
}

static popc_status alpha_grad(popc_grad_ctx *gc, const char *op)
{
    popc_attr a = {.name = "alpha", .type = POPC_ATTR_FLOAT};

    a.f = popc_attr_float(gc->attrs, "alpha", 1.0);
    return mop_grad_unary_helper(gc, op, gc->inputs[0], &a, 1);
}

static popc_status elu_grad(popc_grad_ctx *gc)
{
    return alpha_grad(gc, "EluGrad");
}

static popc_status celu_grad(popc_grad_ctx *gc)
{
    return alpha_grad(gc, "CeluGrad");
}

static popc_status softplus_grad(popc_grad_ctx *gc)
{
    return mop_grad_unary_helper(gc, "SoftplusGrad", gc->inputs[0], NULL, 0);
}

static popc_status clip_grad(popc_grad_ctx *gc)
{
    int in[4];

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    in[0] = gc->output_grads[0];
    in[1] = gc->inputs[0];
    in[2] = gc->n_inputs > 1 ? gc->inputs[1] : -1;
    in[3] = gc->n_inputs > 2 ? gc->inputs[2] : -1;
    return opu_grad_node(gc, "popc", "ClipGrad", in, 4, NULL, 0,
                         &gc->input_grads[0]);
}

/* ---- costs ------------------------------------------------------------------ */

static popc_status act_cost(const popc_infer_ctx *ic, popc_cost *c,
                            double per_elem)
{
    double bytes = (double)popc_view_nbytes(&ic->outputs[0]);

    for (int i = 0; i < ic->n_inputs; i++)
        if (opu_present(&ic->inputs[i]))
            bytes += (double)popc_view_nbytes(&ic->inputs[i]);
    c->flops = per_elem * (double)popc_view_numel(&ic->outputs[0]);
    c->bytes = bytes;
    c->temp_bytes = 0;
    return POPC_OK;
}

static popc_status gelu_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    return act_cost(ic, c, 30.0);
}

static popc_status exp_like_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    return act_cost(ic, c, 20.0);
}

/* ---- table ------------------------------------------------------------------ */

/* every op here maps element i of X (or dY) to element i of its output */
#define DEF(DOMAIN, NAME, VER, MIN_IN, MAX_IN, P, GRAD, COST, DOC)          \
    OPU_DEF(DOMAIN, NAME, VER, MIN_IN, MAX_IN, 1, 1,                        \
            POPC_OP_SPLIT | POPC_OP_INPLACE, P, GRAD, COST, DOC)

const popc_op_def mop_act_ops[] = {
    DEF("ai.onnx", "Relu", 14, 1, 1, relu, relu_grad, NULL, "max(X, 0)"),
    DEF("ai.onnx", "LeakyRelu", 16, 1, 1, leaky, leaky_grad, NULL,
        "X if X > 0 else alpha * X (alpha 0.01)"),
    DEF("ai.onnx", "Gelu", 1, 1, 1, gelu, gelu_grad, gelu_cost,
        "GELU, approximate \"none\" (erf) or \"tanh\" (opset-20 semantics)"),
    DEF("ai.onnx", "Sigmoid", 13, 1, 1, sigmoid, sigmoid_grad, exp_like_cost,
        "1 / (1 + exp(-X))"),
    DEF("ai.onnx", "Tanh", 13, 1, 1, tanh, tanh_grad, exp_like_cost,
        "tanh(X)"),
    DEF("ai.onnx", "Elu", 6, 1, 1, elu, elu_grad, exp_like_cost,
        "X if X > 0 else alpha * (exp(X) - 1) (alpha 1)"),
    DEF("ai.onnx", "Celu", 12, 1, 1, celu, celu_grad, exp_like_cost,
        "X if X > 0 else alpha * (exp(X / alpha) - 1) (alpha 1)"),
    DEF("ai.onnx", "Softplus", 1, 1, 1, softplus, softplus_grad,
        exp_like_cost, "log(1 + exp(X)) (X above 20 passes through)"),
    DEF("ai.onnx", "Clip", 13, 1, 3, clip, clip_grad, NULL,
        "clamp X to optional scalar inputs min and max"),
    DEF("popc", "ReluGrad", 1, 2, 2, relu_grad, NULL, NULL,
        "(dY, Y) -> dY where Y > 0"),
    DEF("popc", "LeakyReluGrad", 1, 2, 2, leaky_grad, NULL, NULL,
        "(dY, X) -> dY * (X > 0 ? 1 : alpha)"),
    DEF("popc", "GeluGrad", 1, 2, 2, gelu_grad, NULL, gelu_cost,
        "(dY, X) -> dX of Gelu (attribute approximate)"),
    DEF("popc", "SigmoidGrad", 1, 2, 2, sigmoid_grad, NULL, NULL,
        "(dY, Y) -> dY * Y * (1 - Y)"),
    DEF("popc", "TanhGrad", 1, 2, 2, tanh_grad, NULL, NULL,
        "(dY, Y) -> dY * (1 - Y^2)"),
    DEF("popc", "EluGrad", 1, 2, 2, elu_grad, NULL, exp_like_cost,
        "(dY, X) -> dY * (X > 0 ? 1 : alpha * exp(X))"),
    DEF("popc", "CeluGrad", 1, 2, 2, celu_grad, NULL, exp_like_cost,
        "(dY, X) -> dY * (X > 0 ? 1 : exp(X / alpha))"),
    DEF("popc", "SoftplusGrad", 1, 2, 2, softplus_grad, NULL, exp_like_cost,
        "(dY, X) -> dY * sigmoid(X)"),
    DEF("popc", "ClipGrad", 1, 2, 4, clip_grad, NULL, NULL,
        "(dY, X, min?, max?) -> dY where min <= X <= max"),
};

const int mop_act_count = sizeof mop_act_ops / sizeof mop_act_ops[0];
