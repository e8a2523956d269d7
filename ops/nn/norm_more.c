/* norm_more.c - InstanceNormalization, MeanVarianceNormalization, LRN and
** GlobalMaxPool on float32 of any rank >= 3 (N, C, spatial...), as direct
** loops accumulating in double. Each part computes whole (n, c) planes or
** its share of elements. Gradients: norm_more_grad.c.
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "ops/nn/nn_priv.h"
#include "ops/util/oputil.h"

static int64_t plane_of(const popc_view *x)
{
    int64_t n = 1;

    for (int d = 2; d < x->rank; d++)
        n *= x->dims[d];
    return n;
}

static popc_status same_shape_infer(popc_infer_ctx *ic, const char *op,
                                    int min_rank)
{
    popc_status st;

    if ((st = opu_want_f32(ic, op, 0, "input X")) != POPC_OK)
        return st;
    if (ic->inputs[0].rank < min_rank)
        return opu_error(POPC_EINVAL, op, ic->node_name, "input must have "
                         "rank >= %d", min_rank);
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, ic->inputs[0].dims,
             ic->inputs[0].rank);
    return POPC_OK;
}

/* ---- InstanceNormalization ------------------------------------------------ */

static popc_status instance_norm_infer(popc_infer_ctx *ic)
{
    return same_shape_infer(ic, "InstanceNormalization", 3);
}

static popc_status instance_norm_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0];
    const float *xd = x->data, *scale = kc->inputs[1].data;
    const float *bias = kc->inputs[2].data;
    float *y = kc->outputs[0].data;
    double eps = popc_attr_float(kc->attrs, "epsilon", 1e-5);
    int64_t P = plane_of(x), C = x->dims[1], s, e;

    opu_range(x->dims[0] * C, kc->part, kc->n_parts, &s, &e);
    for (int64_t nc = s; nc < e; nc++) {
        const float *p = xd + nc * P;
        double mean = 0, var = 0, inv;

        for (int64_t i = 0; i < P; i++)
            mean += p[i];
        mean /= (double)P;
        for (int64_t i = 0; i < P; i++)
            var += (p[i] - mean) * (p[i] - mean);
        inv = 1.0 / sqrt(var / (double)P + eps);
        for (int64_t i = 0; i < P; i++)
            y[nc * P + i] = (float)((p[i] - mean) * inv * scale[nc % C] +
                                    bias[nc % C]);
    }
    return POPC_OK;
}

/* ---- MeanVarianceNormalization ---------------------------------------------- */

static popc_status mvn_infer(popc_infer_ctx *ic)
{
    return same_shape_infer(ic, "MeanVarianceNormalization", 1);
}

int64_t nn_mvn_groups(const popc_view *x, const popc_attrs *attrs,
                      uint8_t *red)
{
    int64_t axes[POPC_MAX_RANK] = {0, 2, 3};
    int64_t n = popc_attr_ints(attrs, "axes", axes, POPC_MAX_RANK), groups = 1;

    memset(red, 0, POPC_MAX_RANK);
    if (n < 0)
        n = 3;
    for (int64_t i = 0; i < n && i < POPC_MAX_RANK; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + x->rank : axes[i];

        if (a >= 0 && a < x->rank)
            red[a] = 1;
    }
    for (int d = 0; d < x->rank; d++)
        if (!red[d])
            groups *= x->dims[d];
    return groups;
}

int64_t nn_mvn_offset(const popc_view *x, const uint8_t *red, int64_t g,
                      int64_t i)
{
    int64_t idx[POPC_MAX_RANK], off = 0, stride = 1;

    for (int d = x->rank - 1; d >= 0; d--) {
        if (red[d]) {
            idx[d] = i % x->dims[d];
            i /= x->dims[d];
        } else {
            idx[d] = g % x->dims[d];
            g /= x->dims[d];
        }
    }
    for (int d = x->rank - 1; d >= 0; d--) {
        off += idx[d] * stride;
        stride *= x->dims[d];
    }
    return off;
}

/* Normalised over the axes (default 0, 2, 3): each group of elements that
** share the kept coordinates. */
static popc_status mvn_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0];
    const float *xd = x->data;
    float *y = kc->outputs[0].data;
    uint8_t red[POPC_MAX_RANK];
    int64_t groups = nn_mvn_groups(x, kc->attrs, red);
    int64_t per = groups ? popc_view_numel(x) / groups : 0;

    for (int64_t g = 0; g < groups; g++) {
        double mean = 0, var = 0, inv = 0;

        for (int64_t i = 0; i < per; i++)
            mean += xd[nn_mvn_offset(x, red, g, i)];
        mean /= (double)per;
        for (int64_t i = 0; i < per; i++) {
            int64_t off = nn_mvn_offset(x, red, g, i);

            var += (xd[off] - mean) * (xd[off] - mean);
        }
        inv = 1.0 / (sqrt(var / (double)per) + 1e-9);
        for (int64_t i = 0; i < per; i++) {
            int64_t off = nn_mvn_offset(x, red, g, i);

            y[off] = (float)((xd[off] - mean) * inv);
        }
    }
    return POPC_OK;
}

/* ---- LRN ------------------------------------------------------------------------ */

static popc_status lrn_infer(popc_infer_ctx *ic)
{
    return same_shape_infer(ic, "LRN", 3);
}

static popc_status lrn_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0];
    const float *xd = x->data;
    float *y = kc->outputs[0].data;
    double alpha = popc_attr_float(kc->attrs, "alpha", 1e-4);
    double beta = popc_attr_float(kc->attrs, "beta", 0.75);
    double bias = popc_attr_float(kc->attrs, "bias", 1.0);
    int64_t size = popc_attr_int(kc->attrs, "size", 1);
    int64_t C = x->dims[1], P = plane_of(x), s, e;
    int64_t lo_off = (size - 1) / 2, hi_off = size - 1 - lo_off;

    opu_range(popc_view_numel(x), kc->part, kc->n_parts, &s, &e);
    for (int64_t i = s; i < e; i++) {
        int64_t c = (i / P) % C, base = i - c * P;
        double sq = 0;

        for (int64_t k = c - lo_off; k <= c + hi_off; k++)
            if (k >= 0 && k < C)
                sq += (double)xd[base + k * P] * xd[base + k * P];
        y[i] = (float)(xd[i] / pow(bias + alpha / (double)size * sq, beta));
    }
    return POPC_OK;
}

/* ---- GlobalMaxPool ---------------------------------------------------------------- */

static popc_status global_max_pool_infer(popc_infer_ctx *ic)
{
    int64_t d[POPC_MAX_RANK];
    popc_status st;

    if ((st = same_shape_infer(ic, "GlobalMaxPool", 3)) != POPC_OK)
        return st;
    memcpy(d, ic->inputs[0].dims, sizeof d);
    for (int k = 2; k < ic->inputs[0].rank; k++)
        d[k] = 1;
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d, ic->inputs[0].rank);
    return POPC_OK;
}

static popc_status global_max_pool_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0];
    const float *xd = x->data;
    float *y = kc->outputs[0].data;
    int64_t P = plane_of(x), s, e;

    opu_range(x->dims[0] * x->dims[1], kc->part, kc->n_parts, &s, &e);
    for (int64_t nc = s; nc < e; nc++) {
        float m = -INFINITY;

        for (int64_t i = 0; i < P; i++)
            if (xd[nc * P + i] > m || xd[nc * P + i] != xd[nc * P + i])
                m = xd[nc * P + i];
        y[nc] = m;
    }
    return POPC_OK;
}

#define DEF(NAME, VER, MIN_IN, MAX_IN, P, GRAD, DOC)                        \
    {                                                                       \
        .size = sizeof(popc_op_def), .domain = "ai.onnx", .name = NAME,     \
        .since_version = VER, .min_inputs = MIN_IN, .max_inputs = MAX_IN,   \
        .min_outputs = 1, .max_outputs = 1, .flags = POPC_OP_SPLIT,         \
        .infer = P##_infer, .forward = P##_forward, .grad = GRAD,           \
        .doc = DOC                                                          \
    }

static const popc_op_def more_ops[] = {
    DEF("InstanceNormalization", 6, 3, 3, instance_norm,
        nn_instance_norm_grad,
        "normalise each (n, c) plane; scale and bias per channel"),
    DEF("LRN", 13, 1, 1, lrn, nn_lrn_grad,
        "local response normalisation across channels"),
    DEF("GlobalMaxPool", 1, 1, 1, global_max_pool, nn_global_max_pool_grad,
        "max over each plane"),
    {.size = sizeof(popc_op_def), .domain = "ai.onnx",
     .name = "MeanVarianceNormalization", .since_version = 13,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .flags = 0, .infer = mvn_infer, .forward = mvn_forward,
     .grad = nn_mvn_grad, .doc = "(x - mean) / std over axes"},
};

popc_status nn_register_norm_more(const popc_host *h, popc_registrar *r)
{
    popc_status st;

    if ((st = opu_register_ops(h, r, more_ops,
                               (int)(sizeof more_ops / sizeof more_ops[0]))) !=
        POPC_OK)
        return st;
    return nn_register_norm_more_grad(h, r);
}
