/* softmax.c - ai.onnx Softmax and LogSoftmax (opset 13: along one axis)
** and their gradient ops popc::SoftmaxGrad and popc::LogSoftmaxGrad.
**
** The input is viewed as [outer, n, inner] with n the axis. A "lane" is
** one vector along the axis; lanes are the units split over parts. When
** inner > 1 a block of up to LANES neighbouring lanes is processed
** together so memory is read row by row. Sums are kept in double. A
** contiguous row (the last axis) takes vectorized loops and a polynomial
** exp (sm_row).
** torch: softmax = exp(x - max) * (1 / sum), log_softmax = x - max -
** log(sum); grads y * (g - sum(g * y)) and g - exp(y) * sum(g).
*/
#include "config.h"

/* GCC's -O2 vectorizes only loops that need no runtime alias check. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <math.h>
#include <string.h>

#include "ops/util/sums.h"
#include "ops/nn/nn_priv.h"
#include "ops/util/oputil.h"

#define LANES 256

enum { SM_SOFTMAX = 0, SM_LOG = 1 };

typedef struct sm_p {
    int64_t outer, n, inner;
} sm_p;

static popc_status sm_params(const char *op, const char *node,
                             const popc_view *x, const popc_attrs *attrs,
                             sm_p *p)
{
    int axis;
    popc_status st;

    if ((st = opu_axis(op, node, popc_attr_int(attrs, "axis", -1),
                        x->rank, "axis", &axis)) != POPC_OK)
        return st;
    p->outer = 1;
    p->inner = 1;
    p->n = x->dims[axis];
    for (int i = 0; i < x->rank; i++) {
        if (i < axis)
            p->outer *= x->dims[i];
        else if (i > axis)
            p->inner *= x->dims[i];
    }
    return POPC_OK;
}

/* Lanes [l0, l0 + w) all in the same outer slice. */
static void sm_block(const float *x, float *y, const sm_p *p, int64_t l0,
                     int64_t w, int mode)
{
    int64_t o = l0 / p->inner, i0 = l0 % p->inner;
    int64_t base = o * p->n * p->inner + i0;
    float mx[LANES];
    double sum[LANES];

    for (int64_t i = 0; i < w; i++) {
        mx[i] = -INFINITY;
        sum[i] = 0.0;
    }
    for (int64_t k = 0; k < p->n; k++) {
        const float *xr = x + base + k * p->inner;

        for (int64_t i = 0; i < w; i++)
            if (xr[i] > mx[i] || isnan(xr[i]))
                mx[i] = xr[i];
    }
    for (int64_t k = 0; k < p->n; k++) {
        const float *xr = x + base + k * p->inner;
        float *yr = y + base + k * p->inner;

        for (int64_t i = 0; i < w; i++) {
            float e = expf(xr[i] - mx[i]);

            sum[i] += e;
            if (mode == SM_SOFTMAX)
                yr[i] = e;
        }
    }
    for (int64_t k = 0; k < p->n; k++) {
        const float *xr = x + base + k * p->inner;
        float *yr = y + base + k * p->inner;

        for (int64_t i = 0; i < w; i++) {
            if (mode == SM_SOFTMAX)
                yr[i] *= (float)(1.0 / sum[i]);
            else
                yr[i] = xr[i] - mx[i] - (float)log(sum[i]);
        }
    }
}

/* exp(x) for x <= 0 (softmax's x - max), in straight-line arithmetic
** that vectorizes: x = n ln 2 + r with |r| <= ln 2 / 2, a degree-6
** polynomial for exp(r) (relative error under 2e-7, as expf's), and 2^n
** from the exponent bits. Below -87.3 the result is exp(-87.3), about
** 1e-38, where expf would give a subnormal: both vanish beside a sum of
** at least 1. NaN stays NaN. */
static inline float exp_nonpositive(float x)
{
    const float shifter = 12582912.0f; /* 1.5 * 2^23: rounds to integer */
    float n, r, p;
    union {
        uint32_t u;
        float f;
    } two_n;

    x = x < -87.3f ? -87.3f : x;
    n = (x * 1.44269504088896341f + shifter) - shifter;
    r = x - n * 0.693145751953125f;
    r = r - n * 1.42860682030941723212e-6f;
    p = 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    two_n.u = (uint32_t)((int32_t)n + 127) << 23;
    return p * two_n.f;
}

/* One contiguous row (inner == 1): each loop vectorizes, the maximum
** notes a NaN apart, and the sum runs in eight double lanes. */
static void sm_row(const float *x, float *y, int64_t n, int mode);

void nn_softmax_row(const float *x, float *y, int64_t n)
{
    sm_row(x, y, n, SM_SOFTMAX);
}

static void sm_row(const float *x, float *y, int64_t n, int mode)
{
    float mx = -INFINITY, r;
    int nan = 0;
    double acc[8] = {0};
    double sum;

    for (int64_t k = 0; k < n; k++) {
        mx = x[k] > mx ? x[k] : mx;
        nan |= x[k] != x[k];
    }
    if (nan)
        mx = NAN;
    for (int64_t k = 0; k < n; k++)
        y[k] = exp_nonpositive(x[k] - mx);
    opu_sum8_add(acc, y, n);
    sum = opu_sum8_total(acc);
    if (mode == SM_SOFTMAX) {
        r = (float)(1.0 / sum);
        for (int64_t k = 0; k < n; k++)
            y[k] *= r;
    } else {
        r = (float)log(sum);
        for (int64_t k = 0; k < n; k++)
            y[k] = x[k] - mx - r;
    }
}

/* Width of the lane block starting at l0: it never crosses an outer
** slice, never passes hi and is at most LANES wide. */
static int64_t lane_block(const sm_p *p, int64_t l0, int64_t hi)
{
    int64_t w = p->inner - l0 % p->inner;

    if (w > LANES)
        w = LANES;
    if (w > hi - l0)
        w = hi - l0;
    return w;
}

static popc_status sm_infer_common(popc_infer_ctx *ic, const char *op)
{
    sm_p p;
    popc_status st;

    if ((st = opu_want_f32(ic, op, 0, "input")) != POPC_OK ||
        (st = sm_params(op, ic->node_name, &ic->inputs[0], ic->attrs, &p)) !=
            POPC_OK)
        return st;
    opu_set_like(&ic->outputs[0], &ic->inputs[0]);
    return POPC_OK;
}

static popc_status sm_forward_common(const popc_kernel_ctx *kc, const char *op,
                                     int mode)
{
    const float *x = kc->inputs[0].data;
    float *y = kc->outputs[0].data;
    int64_t lo, hi;
    sm_p p;
    popc_status st;

    if ((st = sm_params(op, kc->node_name, &kc->inputs[0], kc->attrs, &p)) !=
        POPC_OK)
        return st;
    opu_range(p.outer * p.inner, kc->part, kc->n_parts, &lo, &hi);
    if (p.inner == 1) {
        for (int64_t r = lo; r < hi; r++)
            sm_row(x + r * p.n, y + r * p.n, p.n, mode);
        return POPC_OK;
    }
    for (int64_t l0 = lo, w; l0 < hi; l0 += w) {
        w = lane_block(&p, l0, hi);
        sm_block(x, y, &p, l0, w, mode);
    }
    return POPC_OK;
}

static popc_status softmax_infer(popc_infer_ctx *ic)
{
    return sm_infer_common(ic, "Softmax");
}

static popc_status logsoftmax_infer(popc_infer_ctx *ic)
{
    return sm_infer_common(ic, "LogSoftmax");
}

static popc_status softmax_forward(const popc_kernel_ctx *kc)
{
    return sm_forward_common(kc, "Softmax", SM_SOFTMAX);
}

static popc_status logsoftmax_forward(const popc_kernel_ctx *kc)
{
    return sm_forward_common(kc, "LogSoftmax", SM_LOG);
}

static popc_status sm_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    double n = (double)popc_view_numel(&ic->inputs[0]);

    c->flops = 5.0 * n;
    c->bytes = 8.0 * n;
    c->temp_bytes = 0;
    return POPC_OK;
}

static popc_status sm_grad_common(popc_grad_ctx *gc, const char *grad_op)
{
    popc_attr a =
        popc_attr_make_int("axis", popc_attr_int(gc->attrs, "axis", -1));
    int in[2];

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    in[0] = gc->output_grads[0];
    in[1] = gc->outputs[0];
    return opu_grad_node(gc, "popc", grad_op, in, 2, &a, 1, &gc->input_grads[0]);
}

static popc_status softmax_grad(popc_grad_ctx *gc)
{
    return sm_grad_common(gc, "SoftmaxGrad");
}

static popc_status logsoftmax_grad(popc_grad_ctx *gc)
{
    return sm_grad_common(gc, "LogSoftmaxGrad");
}

/* ---- SoftmaxGrad / LogSoftmaxGrad: (dY, Y) -> dX ------------------------- */

static popc_status smg_infer_common(popc_infer_ctx *ic, const char *op)
{
    char s1[OPU_DIMS_LEN], s2[OPU_DIMS_LEN];
    const popc_view *g = &ic->inputs[0], *y = &ic->inputs[1];
    sm_p p;
    popc_status st;

    if ((st = opu_want_f32(ic, op, 0, "dY")) != POPC_OK ||
        (st = opu_want_f32(ic, op, 1, "Y")) != POPC_OK ||
        (st = sm_params(op, ic->node_name, y, ic->attrs, &p)) != POPC_OK)
        return st;
    if (g->rank != y->rank ||
        memcmp(g->dims, y->dims, sizeof g->dims[0] * (size_t)g->rank))
        return ic->host->set_error(
            POPC_EINVAL, "%s '%s': dY %s must have Y's shape %s", op,
            ic->node_name, opu_dims(g, s1), opu_dims(y, s2));
    opu_set_like(&ic->outputs[0], y);
    return POPC_OK;
}

static void smg_block(const float *g, const float *y, float *dx, const sm_p *p,
                      int64_t l0, int64_t w, int mode)
{
    int64_t o = l0 / p->inner, i0 = l0 % p->inner;
    int64_t base = o * p->n * p->inner + i0;
    double sum[LANES];

    for (int64_t i = 0; i < w; i++)
        sum[i] = 0.0;
    for (int64_t k = 0; k < p->n; k++) {
        const float *gr = g + base + k * p->inner;
        const float *yr = y + base + k * p->inner;

        for (int64_t i = 0; i < w; i++)
            sum[i] += mode == SM_SOFTMAX ? (double)gr[i] * yr[i] : gr[i];
    }
    for (int64_t k = 0; k < p->n; k++) {
        const float *gr = g + base + k * p->inner;
        const float *yr = y + base + k * p->inner;
        float *dr = dx + base + k * p->inner;

        for (int64_t i = 0; i < w; i++)
            dr[i] = mode == SM_SOFTMAX ? yr[i] * (gr[i] - (float)sum[i])
                                       : gr[i] - expf(yr[i]) * (float)sum[i];
    }
}

static popc_status smg_forward_common(const popc_kernel_ctx *kc, const char *op,
                                      int mode)
{
    const float *g = kc->inputs[0].data, *y = kc->inputs[1].data;
    float *dx = kc->outputs[0].data;
    int64_t lo, hi;
    sm_p p;
    popc_status st;

    if ((st = sm_params(op, kc->node_name, &kc->inputs[1], kc->attrs, &p)) !=
        POPC_OK)
        return st;
    opu_range(p.outer * p.inner, kc->part, kc->n_parts, &lo, &hi);
    if (p.inner == 1) {
        for (int64_t r = lo; r < hi; r++)
            smg_block(g, y, dx, &p, r, 1, mode);
        return POPC_OK;
    }
    for (int64_t l0 = lo, w; l0 < hi; l0 += w) {
        w = lane_block(&p, l0, hi);
        smg_block(g, y, dx, &p, l0, w, mode);
    }
    return POPC_OK;
}

static popc_status softmaxgrad_infer(popc_infer_ctx *ic)
{
    return smg_infer_common(ic, "SoftmaxGrad");
}

static popc_status logsoftmaxgrad_infer(popc_infer_ctx *ic)
{
    return smg_infer_common(ic, "LogSoftmaxGrad");
}

static popc_status softmaxgrad_forward(const popc_kernel_ctx *kc)
{
    return smg_forward_common(kc, "SoftmaxGrad", SM_SOFTMAX);
}

static popc_status logsoftmaxgrad_forward(const popc_kernel_ctx *kc)
{
    return smg_forward_common(kc, "LogSoftmaxGrad", SM_LOG);
}

static popc_status smg_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    double n = (double)popc_view_numel(&ic->inputs[0]);

    c->flops = 4.0 * n;
    c->bytes = 12.0 * n;
    c->temp_bytes = 0;
    return POPC_OK;
}

#define SM_DEF(NAME, DOMAIN, VER, N_IN, INFER, FWD, GRAD, COST, DOC)           \
    {                                                                          \
        .size = sizeof(popc_op_def), .domain = DOMAIN, .name = NAME,           \
        .since_version = VER, .min_inputs = N_IN, .max_inputs = N_IN,          \
        .min_outputs = 1, .max_outputs = 1, .flags = POPC_OP_SPLIT,            \
        .infer = INFER, .forward = FWD, .grad = GRAD, .cost = COST,            \
        .doc = DOC,                                                            \
    }

static const popc_op_def softmax_ops[] = {
    SM_DEF("Softmax", "ai.onnx", 13, 1, softmax_infer, softmax_forward,
           softmax_grad, sm_cost, "softmax along one axis"),
    SM_DEF("LogSoftmax", "ai.onnx", 13, 1, logsoftmax_infer, logsoftmax_forward,
           logsoftmax_grad, sm_cost, "log-softmax along one axis"),
    SM_DEF("SoftmaxGrad", "popc", 1, 2, softmaxgrad_infer, softmaxgrad_forward,
           NULL, smg_cost, "Softmax input gradient (dY, Y)"),
    SM_DEF("LogSoftmaxGrad", "popc", 1, 2, logsoftmaxgrad_infer,
           logsoftmaxgrad_forward, NULL, smg_cost,
           "LogSoftmax input gradient (dY, Y)"),
};

popc_status nn_register_softmax(const popc_host *h, popc_registrar *r)
{
    return opu_register_ops(h, r, softmax_ops,
                            (int)(sizeof softmax_ops / sizeof softmax_ops[0]));
}
