/* norm.c - ai.onnx BatchNormalization (opset 15) and LayerNormalization
** (opset 17), with gradient ops popc::BatchNormalizationGrad and
** popc::LayerNormalizationGrad.
**
** Numerics follow torch's CPU kernels: statistics in double, two passes
** (mean, then squared deviations), the normalisation applied as
** y = x * a + b with a = invstd * scale, b = bias - mean * a in float.
** In training BatchNormalization normalises with the biased batch
** variance and updates running_var with the unbiased one, as torch does;
** momentum is ONNX's (running = running * momentum + batch * (1 -
** momentum)), so torch's momentum 0.1 is 0.9 here.
**
** Splits: BatchNormalization and its grad by channel, LayerNormalization
** by row; LayerNormalizationGrad gives each part a block of rows of dX and
** a block of columns of dScale/dB.
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "ops/nn/nn_priv.h"
#include "ops/util/sums.h"
#include "ops/util/oputil.h"

/* ---- BatchNormalization -------------------------------------------------- */

typedef struct bn_p {
    int64_t N, C, inner; /* X viewed as [N, C, inner] */
    double eps, momentum;
} bn_p;

static popc_status bn_params(const char *op, const char *node,
                             const popc_view *in, int n_params,
                             const popc_attrs *attrs, bn_p *p)
{
    static const char *const names[] = {"scale", "B", "input_mean",
                                        "input_var"};
    const popc_view *x = &in[0];
    char s1[OPU_DIMS_LEN], s2[OPU_DIMS_LEN];

    memset(p, 0, sizeof *p);
    if (x->rank < 2)
        return opu_error(POPC_EINVAL, op, node, "input X %s must be [N, C, "
                         "...]", opu_dims(x, s1));
    p->N = x->dims[0];
    p->C = x->dims[1];
    p->inner = 1;
    for (int i = 2; i < x->rank; i++)
        p->inner *= x->dims[i];
    for (int i = 1; i <= n_params; i++)
        if (in[i].rank != 1 || in[i].dims[0] != p->C)
            return opu_error(POPC_EINVAL, op, node, "%s %s must be [%lld], "
                             "one value per channel of X %s", names[i - 1],
                             opu_dims(&in[i], s1), (long long)p->C,
                             opu_dims(x, s2));
    p->eps = popc_attr_float(attrs, "epsilon", 1e-5);
    p->momentum = popc_attr_float(attrs, "momentum", 0.9);
    return POPC_OK;
}

static int bn_training(int ctx_training, const popc_attrs *attrs)
{
    return ctx_training || popc_attr_int(attrs, "training_mode", 0) != 0;
}

static popc_status bn_need_two(const char *op, const char *node,
                               const popc_view *x, const bn_p *p)
{
    char s[OPU_DIMS_LEN];

    if (p->N * p->inner > 1)
        return POPC_OK;
    return opu_error(POPC_EINVAL, op, node, "expected more than 1 value per "
                     "channel when training, got input X %s", opu_dims(x, s));
}

static popc_status bn_infer(popc_infer_ctx *ic)
{
    bn_p p;
    popc_status st;

    for (int i = 0; i < 5; i++)
        if ((st = opu_want_f32(ic, "BatchNormalization", i,
                                i == 0 ? "input X" : "every parameter")) !=
            POPC_OK)
            return st;
    if ((st = bn_params("BatchNormalization", ic->node_name, ic->inputs, 4,
                        ic->attrs, &p)) != POPC_OK)
        return st;
    if (bn_training(ic->training, ic->attrs) &&
        (st = bn_need_two("BatchNormalization", ic->node_name, &ic->inputs[0],
                          &p)) != POPC_OK)
        return st;
    opu_set_like(&ic->outputs[0], &ic->inputs[0]);
    for (int i = 1; i < ic->n_outputs && i < 3; i++)
        opu_set(&ic->outputs[i], POPC_DTYPE_F32, &p.C, 1);
    return POPC_OK;
}

/* Batch mean and biased variance of channel c, summed in double: about
** the mean in a second pass (enableStableNorm), else from one pass of
** sums and sums of squares (PopART's default). */
static void bn_stats(const float *x, const bn_p *p, int64_t c, int stable,
                     double *mean, double *var)
{
    double s[8] = {0}, q[8] = {0}, m;
    int64_t S = p->N * p->inner;

    for (int64_t n = 0; n < p->N; n++)
        opu_sum8_add(s, x + (n * p->C + c) * p->inner, p->inner);
    m = S > 0 ? opu_sum8_total(s) / (double)S : 0.0;
    for (int64_t n = 0; n < p->N; n++)
        opu_sqdev8_add(q, x + (n * p->C + c) * p->inner, p->inner,
                       stable ? m : 0.0);
    *mean = m;
    *var = S > 0 ? opu_sum8_total(q) / (double)S : 0.0;
    if (!stable) {
        *var -= m * m;
        if (*var < 0.0) /* rounding of a near-constant channel */
            *var = 0.0;
    }
}

static popc_status bn_forward(const popc_kernel_ctx *kc)
{
    const float *x = kc->inputs[0].data, *scale = kc->inputs[1].data;
    const float *bias = kc->inputs[2].data, *rm = kc->inputs[3].data;
    const float *rv = kc->inputs[4].data;
    float *y = kc->outputs[0].data;
    float *rm_out = opu_out_ready(kc, 1) ? kc->outputs[1].data : NULL;
    float *rv_out = opu_out_ready(kc, 2) ? kc->outputs[2].data : NULL;
    int training = bn_training(kc->training, kc->attrs);
    bn_p p;
    int64_t lo, hi;
    popc_status st;

    if ((st = bn_params("BatchNormalization", kc->node_name, kc->inputs, 4,
                        kc->attrs, &p)) != POPC_OK)
        return st;
    if (training && (st = bn_need_two("BatchNormalization", kc->node_name,
                                      &kc->inputs[0], &p)) != POPC_OK)
        return st;
    opu_range(p.C, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t c = lo; c < hi; c++) {
        double mean, var;
        float a, b;

        if (training) {
            double S = (double)(p.N * p.inner);

            bn_stats(x, &p, c, kc->flags & POPC_KERNEL_STABLE_NORM, &mean,
                     &var);
            if (rm_out)
                rm_out[c] =
                    (float)(rm[c] * p.momentum + mean * (1.0 - p.momentum));
            if (rv_out)
                rv_out[c] = (float)(rv[c] * p.momentum +
                                    var * S / (S - 1.0) * (1.0 - p.momentum));
        } else {
            mean = rm[c];
            var = rv[c];
            if (rm_out)
                rm_out[c] = rm[c];
            if (rv_out)
                rv_out[c] = rv[c];
        }
        a = (float)(1.0 / sqrt(var + p.eps)) * scale[c];
        b = bias[c] - (float)mean * a;
        for (int64_t n = 0; n < p.N; n++) {
            const float *xr = x + (n * p.C + c) * p.inner;
            float *yr = y + (n * p.C + c) * p.inner;

            for (int64_t i = 0; i < p.inner; i++)
                yr[i] = xr[i] * a + b;
        }
    }
    return POPC_OK;
}

static popc_status bn_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    double n = (double)popc_view_numel(&ic->inputs[0]);
    int training = bn_training(ic->training, ic->attrs);

    c->flops = (training ? 5.0 : 2.0) * n;
    c->bytes = 4.0 * ((training ? 3.0 : 2.0) * n +
                      6.0 * (double)ic->inputs[1].dims[0]);
    c->temp_bytes = 0;
    return POPC_OK;
}

static popc_status bn_grad(popc_grad_ctx *gc)
{
    popc_attr a = popc_attr_make_float(
        "epsilon", popc_attr_float(gc->attrs, "epsilon", 1e-5));
    int in[3], out[3];
    popc_status st;

    if ((st = opu_no_grad_output(gc, "BatchNormalization", 1,
                                  "running_mean")) != POPC_OK ||
        (st = opu_no_grad_output(gc, "BatchNormalization", 2,
                                  "running_var")) != POPC_OK)
        return st;
    if (gc->output_grads[0] < 0)
        return POPC_OK;
    in[0] = gc->output_grads[0];
    in[1] = gc->inputs[0];
    in[2] = gc->inputs[1];
    if ((st = gc->host->grad_add_node(gc, "popc", "BatchNormalizationGrad", in,
                                      3, out, 3, &a, 1)) != POPC_OK)
        return st;
    for (int i = 0; i < 3; i++)
        gc->input_grads[i] = out[i];
    return POPC_OK;
}

/* ---- BatchNormalizationGrad: (dY, X, scale) -> dX, dScale, dB --------------
** Training-mode gradient (batch statistics recomputed from X). */

static popc_status bng_infer(popc_infer_ctx *ic)
{
    const char *op = "BatchNormalizationGrad";
    char s1[OPU_DIMS_LEN], s2[OPU_DIMS_LEN];
    popc_view in[2];
    bn_p p;
    popc_status st;

    for (int i = 0; i < 3; i++)
        if ((st = opu_want_f32(ic, op, i, "every input")) != POPC_OK)
            return st;
    in[0] = ic->inputs[1];
    in[1] = ic->inputs[2];
    if ((st = bn_params(op, ic->node_name, in, 1, ic->attrs, &p)) != POPC_OK)
        return st;
    if (ic->inputs[0].rank != ic->inputs[1].rank ||
        memcmp(ic->inputs[0].dims, ic->inputs[1].dims,
               sizeof ic->inputs[0].dims[0] * (size_t)ic->inputs[1].rank))
        return ic->host->set_error(POPC_EINVAL,
                                   "%s '%s': dY %s must have X's shape %s", op,
                                   ic->node_name, opu_dims(&ic->inputs[0], s1),
                                   opu_dims(&ic->inputs[1], s2));
    opu_set_like(&ic->outputs[0], &ic->inputs[1]);
    for (int i = 1; i < ic->n_outputs && i < 3; i++)
        opu_set(&ic->outputs[i], POPC_DTYPE_F32, &p.C, 1);
    return POPC_OK;
}

static popc_status bng_forward(const popc_kernel_ctx *kc)
{
    const float *dy = kc->inputs[0].data, *x = kc->inputs[1].data;
    const float *scale = kc->inputs[2].data;
    float *dx = kc->outputs[0].data;
    float *ds = opu_out_ready(kc, 1) ? kc->outputs[1].data : NULL;
    float *db = opu_out_ready(kc, 2) ? kc->outputs[2].data : NULL;
    popc_view in[2] = {kc->inputs[1], kc->inputs[2]};
    bn_p p;
    int64_t lo, hi;
    popc_status st;

    if ((st = bn_params("BatchNormalizationGrad", kc->node_name, in, 1,
                        kc->attrs, &p)) != POPC_OK)
        return st;
    opu_range(p.C, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t c = lo; c < hi; c++) {
        double mean, var, dotp, sum, S = (double)(p.N * p.inner);
        double sums[8] = {0}, dots[8] = {0};
        float m, invstd, k, gm, w;

        bn_stats(x, &p, c, kc->flags & POPC_KERNEL_STABLE_NORM, &mean,
                 &var);
        m = (float)mean;
        invstd = (float)(1.0 / sqrt(var + p.eps));
        for (int64_t n = 0; n < p.N; n++) {
            const float *xr = x + (n * p.C + c) * p.inner;
            const float *gr = dy + (n * p.C + c) * p.inner;

            opu_sum8_add(sums, gr, p.inner);
            opu_dot8_add(dots, xr, gr, p.inner, m);
        }
        sum = opu_sum8_total(sums);
        dotp = opu_sum8_total(dots);
        if (ds)
            ds[c] = (float)(dotp * invstd);
        if (db)
            db[c] = (float)sum;
        /* torch: dx = (dy - mean(dy) - (x - mean) * k) * invstd * w */
        k = (float)(dotp * invstd * invstd / S);
        gm = (float)(sum / S);
        w = invstd * scale[c];
        for (int64_t n = 0; n < p.N; n++) {
            const float *xr = x + (n * p.C + c) * p.inner;
            const float *gr = dy + (n * p.C + c) * p.inner;
            float *dr = dx + (n * p.C + c) * p.inner;

            for (int64_t i = 0; i < p.inner; i++)
                dr[i] = (gr[i] - gm - (xr[i] - m) * k) * w;
        }
    }
    return POPC_OK;
}

static popc_status bng_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    double n = (double)popc_view_numel(&ic->inputs[1]);

    c->flops = 10.0 * n;
    c->bytes = 4.0 * (5.0 * n + 3.0 * (double)ic->inputs[2].dims[0]);
    c->temp_bytes = 0;
    return POPC_OK;
}

/* ---- LayerNormalization -------------------------------------------------- */

typedef struct ln_p {
    int axis;
    int64_t R, D; /* rows, normalised size */
    double eps;
} ln_p;

/* X's geometry; checks a parameter view (scale or bias) if given. */
static popc_status ln_params(const char *op, const char *node,
                             const popc_view *x, const popc_view *param,
                             const char *pname, const popc_attrs *attrs,
                             ln_p *p)
{
    char s1[OPU_DIMS_LEN], s2[OPU_DIMS_LEN];
    popc_status st;
    int ok;

    memset(p, 0, sizeof *p);
    if ((st = opu_axis(op, node, popc_attr_int(attrs, "axis", -1),
                        x->rank, "axis", &p->axis)) != POPC_OK)
        return st;
    p->R = 1;
    p->D = 1;
    for (int i = 0; i < x->rank; i++)
        *(i < p->axis ? &p->R : &p->D) *= x->dims[i];
    p->eps = popc_attr_float(attrs, "epsilon", 1e-5);
    if (!param)
        return POPC_OK;
    /* the parameter has the normalised shape (leading 1s allowed) */
    ok = popc_view_numel(param) == p->D;
    for (int i = 0; ok && i < param->rank; i++) {
        int xi = x->rank - param->rank + i;

        ok =
            xi >= p->axis ? param->dims[i] == x->dims[xi] : param->dims[i] == 1;
    }
    if (!ok)
        return opu_error(POPC_EINVAL, op, node, "%s %s must have the "
                         "normalised shape of X %s from axis %d", pname,
                         opu_dims(param, s1), opu_dims(x, s2), p->axis);
    return POPC_OK;
}

static void ln_stat_dims(const popc_view *x, int axis, popc_view *out)
{
    int64_t d[POPC_MAX_RANK];

    for (int i = 0; i < x->rank; i++)
        d[i] = i < axis ? x->dims[i] : 1;
    opu_set(out, POPC_DTYPE_F32, d, x->rank);
}

static popc_status ln_infer(popc_infer_ctx *ic)
{
    const char *op = "LayerNormalization";
    int has_b = opu_present_at(ic->inputs, ic->n_inputs, 2);
    ln_p p;
    popc_status st;

    if ((st = opu_want_f32(ic, op, 0, "input X")) != POPC_OK ||
        (st = opu_want_f32(ic, op, 1, "Scale")) != POPC_OK ||
        (has_b && (st = opu_want_f32(ic, op, 2, "B")) != POPC_OK))
        return st;
    if ((st = ln_params(op, ic->node_name, &ic->inputs[0], &ic->inputs[1],
                        "Scale", ic->attrs, &p)) != POPC_OK ||
        (has_b &&
         (st = ln_params(op, ic->node_name, &ic->inputs[0], &ic->inputs[2], "B",
                         ic->attrs, &p)) != POPC_OK))
        return st;
    if (popc_attr_int(ic->attrs, "stash_type", 1) != 1)
        return ic->host->set_error(POPC_EUNSUPPORTED,
                                   "%s '%s': only stash_type 1 (float) is "
                                   "supported",
                                   op, ic->node_name);
    opu_set_like(&ic->outputs[0], &ic->inputs[0]);
    for (int i = 1; i < ic->n_outputs && i < 3; i++)
        ln_stat_dims(&ic->inputs[0], p.axis, &ic->outputs[i]);
    return POPC_OK;
}

/* Mean and 1/std of a row; stable as in bn_stats. */
static void ln_row_stats(const float *xr, int64_t D, double eps, int stable,
                         double *mean, double *invstd)
{
    double s = 0.0, q = 0.0, m, var;

    for (int64_t j = 0; j < D; j++)
        s += xr[j];
    m = D > 0 ? s / (double)D : 0.0;
    for (int64_t j = 0; j < D; j++) {
        double d = stable ? xr[j] - m : (double)xr[j];

        q += d * d;
    }
    var = D > 0 ? q / (double)D : 0.0;
    if (!stable)
        var = var - m * m > 0.0 ? var - m * m : 0.0;
    *mean = m;
    *invstd = 1.0 / sqrt(var + eps);
}

static popc_status ln_forward(const popc_kernel_ctx *kc)
{
    const float *x = kc->inputs[0].data, *g = kc->inputs[1].data;
    const float *b =
        opu_present_at(kc->inputs, kc->n_inputs, 2) ? kc->inputs[2].data : NULL;
    float *y = kc->outputs[0].data;
    float *mo = opu_out_ready(kc, 1) ? kc->outputs[1].data : NULL;
    float *io = opu_out_ready(kc, 2) ? kc->outputs[2].data : NULL;
    ln_p p;
    int64_t lo, hi;
    popc_status st;

    if ((st = ln_params("LayerNormalization", kc->node_name, &kc->inputs[0],
                        NULL, NULL, kc->attrs, &p)) != POPC_OK)
        return st;
    opu_range(p.R, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const float *xr = x + r * p.D;
        float *yr = y + r * p.D;
        double mean, invstd;
        float a, c;

        ln_row_stats(xr, p.D, p.eps, kc->flags & POPC_KERNEL_STABLE_NORM,
                     &mean, &invstd);
        if (mo)
            mo[r] = (float)mean;
        if (io)
            io[r] = (float)invstd;
        a = (float)invstd;
        c = (float)(-invstd * mean);
        if (b)
            for (int64_t j = 0; j < p.D; j++)
                yr[j] = (xr[j] * a + c) * g[j] + b[j];
        else
            for (int64_t j = 0; j < p.D; j++)
                yr[j] = (xr[j] * a + c) * g[j];
    }
    return POPC_OK;
}

static popc_status ln_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    double n = (double)popc_view_numel(&ic->inputs[0]);

    c->flops = 8.0 * n;
    c->bytes = 4.0 * (2.0 * n + 2.0 * (double)popc_view_numel(&ic->inputs[1]));
    c->temp_bytes = 0;
    return POPC_OK;
}

static popc_status ln_grad(popc_grad_ctx *gc)
{
    popc_attr a[2];
    int in[5], out[3], stats[3];
    int has_b = gc->n_inputs > 2 && gc->inputs[2] >= 0;
    popc_status st;

    if ((st = opu_no_grad_output(gc, "LayerNormalization", 1, "Mean")) !=
            POPC_OK ||
        (st = opu_no_grad_output(gc, "LayerNormalization", 2, "InvStdDev")) !=
            POPC_OK)
        return st;
    if (gc->output_grads[0] < 0)
        return POPC_OK;
    a[0] = popc_attr_make_int("axis", popc_attr_int(gc->attrs, "axis", -1));
    a[1] = popc_attr_make_float("epsilon",
                                popc_attr_float(gc->attrs, "epsilon", 1e-5));
    if (gc->n_outputs >= 3 && gc->outputs[1] >= 0 && gc->outputs[2] >= 0) {
        stats[1] = gc->outputs[1];
        stats[2] = gc->outputs[2];
    } else {
        /* the forward node kept no statistics: recompute them */
        if ((st = gc->host->grad_add_node(gc, NULL, "LayerNormalization",
                                          gc->inputs, 2, stats, 3, a, 2)) !=
            POPC_OK)
            return st;
    }
    in[0] = gc->output_grads[0];
    in[1] = gc->inputs[0];
    in[2] = gc->inputs[1];
    in[3] = stats[1];
    in[4] = stats[2];
    if ((st = gc->host->grad_add_node(gc, "popc", "LayerNormalizationGrad", in,
                                      5, out, has_b ? 3 : 2, a, 1)) != POPC_OK)
        return st;
    gc->input_grads[0] = out[0];
    gc->input_grads[1] = out[1];
    if (has_b)
        gc->input_grads[2] = out[2];
    return POPC_OK;
}

/* ---- LayerNormalizationGrad: (dY, X, Scale, Mean, InvStdDev) -> dX, dScale,
** dB --------------------------------------------------------------------- */

static popc_status lng_infer(popc_infer_ctx *ic)
{
    const char *op = "LayerNormalizationGrad";
    char s1[OPU_DIMS_LEN], s2[OPU_DIMS_LEN];
    const popc_view *x = &ic->inputs[1];
    ln_p p;
    popc_status st;

    for (int i = 0; i < 5; i++)
        if ((st = opu_want_f32(ic, op, i, "every input")) != POPC_OK)
            return st;
    if ((st = ln_params(op, ic->node_name, x, &ic->inputs[2], "Scale",
                        ic->attrs, &p)) != POPC_OK)
        return st;
    if (ic->inputs[0].rank != x->rank ||
        memcmp(ic->inputs[0].dims, x->dims,
               sizeof x->dims[0] * (size_t)x->rank))
        return ic->host->set_error(
            POPC_EINVAL, "%s '%s': dY %s must have X's shape %s", op,
            ic->node_name, opu_dims(&ic->inputs[0], s1), opu_dims(x, s2));
    for (int i = 3; i < 5; i++)
        if (popc_view_numel(&ic->inputs[i]) != p.R)
            return ic->host->set_error(POPC_EINVAL,
                                       "%s '%s': %s %s must hold one value "
                                       "per row of X %s (%lld)",
                                       op, ic->node_name,
                                       i == 3 ? "Mean" : "InvStdDev",
                                       opu_dims(&ic->inputs[i], s1),
                                       opu_dims(x, s2), (long long)p.R);
    opu_set_like(&ic->outputs[0], x);
    for (int i = 1; i < ic->n_outputs && i < 3; i++)
        opu_set_like(&ic->outputs[i], &ic->inputs[2]);
    return POPC_OK;
}

static popc_status lng_forward(const popc_kernel_ctx *kc)
{
    const float *dy = kc->inputs[0].data, *x = kc->inputs[1].data;
    const float *g = kc->inputs[2].data, *mean = kc->inputs[3].data;
    const float *inv = kc->inputs[4].data;
    float *dx = kc->outputs[0].data;
    float *ds = opu_out_ready(kc, 1) ? kc->outputs[1].data : NULL;
    float *db = opu_out_ready(kc, 2) ? kc->outputs[2].data : NULL;
    double *acc = NULL;
    ln_p p;
    int64_t lo, hi;
    popc_status st;

    if ((st = ln_params("LayerNormalizationGrad", kc->node_name, &kc->inputs[1],
                        NULL, NULL, kc->attrs, &p)) != POPC_OK)
        return st;
    /* rows of dX */
    opu_range(p.R, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const float *xr = x + r * p.D, *gr = dy + r * p.D;
        float *dr = dx + r * p.D;
        double m = mean[r], is = inv[r], sg = 0.0, sgx = 0.0;

        for (int64_t j = 0; j < p.D; j++) {
            double t = (double)gr[j] * g[j];

            sg += t;
            sgx += t * (xr[j] - m) * is;
        }
        sg /= (double)p.D;
        sgx /= (double)p.D;
        for (int64_t j = 0; j < p.D; j++) {
            double xh = (xr[j] - m) * is;

            dr[j] = (float)(is * ((double)gr[j] * g[j] - sg - xh * sgx));
        }
    }
    /* columns of dScale and dB, summed over all rows in order */
    opu_range(p.D, kc->part, kc->n_parts, &lo, &hi);
    if (hi <= lo || (!ds && !db))
        return POPC_OK;
    if (!(acc = kc->host->alloc(sizeof *acc * 2 * (size_t)(hi - lo))))
        return kc->host->set_error(POPC_ENOMEM,
                                   "LayerNormalizationGrad '%s': out of "
                                   "memory",
                                   kc->node_name);
    for (int64_t r = 0; r < p.R; r++) {
        const float *xr = x + r * p.D, *gr = dy + r * p.D;
        double m = mean[r], is = inv[r];

        for (int64_t j = lo; j < hi; j++) {
            acc[j - lo] += (double)gr[j] * ((xr[j] - m) * is);
            acc[hi - lo + j - lo] += gr[j];
        }
    }
    for (int64_t j = lo; j < hi; j++) {
        if (ds)
            ds[j] = (float)acc[j - lo];
        if (db)
            db[j] = (float)acc[hi - lo + j - lo];
    }
    kc->host->free(acc);
    return POPC_OK;
}

static popc_status lng_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    double n = (double)popc_view_numel(&ic->inputs[1]);

    c->flops = 12.0 * n;
    c->bytes = 4.0 * 3.0 * n;
    c->temp_bytes = 16.0 * (double)popc_view_numel(&ic->inputs[2]);
    return POPC_OK;
}

static const popc_op_def norm_ops[] = {
    {
        .size = sizeof(popc_op_def),
        .domain = "ai.onnx",
        .name = "BatchNormalization",
        .since_version = 15,
        .min_inputs = 5,
        .max_inputs = 5,
        .min_outputs = 1,
        .max_outputs = 3,
        .flags = POPC_OP_SPLIT,
        .infer = bn_infer,
        .forward = bn_forward,
        .grad = bn_grad,
        .cost = bn_cost,
        .doc = "batch norm; training: batch stats + running stat updates",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "ai.onnx",
        .name = "LayerNormalization",
        .since_version = 17,
        .min_inputs = 2,
        .max_inputs = 3,
        .min_outputs = 1,
        .max_outputs = 3,
        .flags = POPC_OP_SPLIT,
        .infer = ln_infer,
        .forward = ln_forward,
        .grad = ln_grad,
        .cost = ln_cost,
        .doc = "layer norm over the dims from axis (Mean, InvStdDev)",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "BatchNormalizationGrad",
        .since_version = 1,
        .min_inputs = 3,
        .max_inputs = 3,
        .min_outputs = 1,
        .max_outputs = 3,
        .flags = POPC_OP_SPLIT,
        .infer = bng_infer,
        .forward = bng_forward,
        .cost = bng_cost,
        .doc = "training BatchNormalization gradient (dY, X, scale)",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "LayerNormalizationGrad",
        .since_version = 1,
        .min_inputs = 5,
        .max_inputs = 5,
        .min_outputs = 1,
        .max_outputs = 3,
        .flags = POPC_OP_SPLIT,
        .infer = lng_infer,
        .forward = lng_forward,
        .cost = lng_cost,
        .doc = "LayerNormalization gradient (dY, X, Scale, Mean, InvStdDev)",
    },
};

popc_status nn_register_norm(const popc_host *h, popc_registrar *r)
{
    return opu_register_ops(h, r, norm_ops,
                            (int)(sizeof norm_ops / sizeof norm_ops[0]));
}
