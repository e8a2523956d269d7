/* norm_more_grad.c - gradients of InstanceNormalization,
** MeanVarianceNormalization, LRN and GlobalMaxPool, the chain rule through
** the arithmetic of norm_more.c's forward loops, in double:
**   popc::InstanceNormalizationGrad(dY, X, scale) -> dX, dScale, dB
**   popc::MeanVarianceNormalizationGrad(dY, X) -> dX (its 1e-9 on std kept)
**   popc::LRNGrad(dY, X) -> dX
**   GlobalMaxPool through popc::ReduceMaxGrad (shared among ties)
** One part each: the planes add into shared scale and bias sums.
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

/* ---- builders ------------------------------------------------------------ */

popc_status nn_instance_norm_grad(popc_grad_ctx *gc)
{
    int in[3] = {gc->output_grads[0], gc->inputs[0], gc->inputs[1]}, out[3];
    popc_status st;

    if (in[0] < 0)
        return POPC_OK;
    if ((st = gc->host->grad_add_node(gc, "popc", "InstanceNormalizationGrad",
                                      in, 3, out, 3, gc->attrs->items,
                                      gc->attrs->n)) != POPC_OK)
        return st;
    for (int i = 0; i < 3; i++)
        gc->input_grads[i] = out[i];
    return POPC_OK;
}

static popc_status two_input_grad(popc_grad_ctx *gc, const char *op)
{
    int in[2] = {gc->output_grads[0], gc->inputs[0]};

    if (in[0] < 0)
        return POPC_OK;
    return opu_grad_node(gc, "popc", op, in, 2, gc->attrs->items, gc->attrs->n,
                      &gc->input_grads[0]);
}

popc_status nn_mvn_grad(popc_grad_ctx *gc)
{
    return two_input_grad(gc, "MeanVarianceNormalizationGrad");
}

popc_status nn_lrn_grad(popc_grad_ctx *gc)
{
    return two_input_grad(gc, "LRNGrad");
}

popc_status nn_global_max_pool_grad(popc_grad_ctx *gc)
{
    int64_t axes[POPC_MAX_RANK];
    int rank = gc->input_info[0].rank;
    popc_attr a[2];
    int in[3] = {gc->output_grads[0], gc->inputs[0], gc->outputs[0]};

    if (in[0] < 0)
        return POPC_OK;
    for (int d = 2; d < rank; d++)
        axes[d - 2] = d;
    a[0] = popc_attr_make_ints("axes", axes, rank - 2);
    a[1] = popc_attr_make_int("keepdims", 1);
    return opu_grad_node(gc, "popc", "ReduceMaxGrad", in, 3, a, 2,
                      &gc->input_grads[0]);
}

/* ---- InstanceNormalizationGrad -------------------------------------------- */

static popc_status in_grad_infer(popc_infer_ctx *ic)
{
    const popc_view *x = &ic->inputs[1];
    popc_status st;

    for (int i = 0; i < 3; i++)
        if ((st = opu_want_f32(ic, "InstanceNormalizationGrad", i,
                                "every input")) != POPC_OK)
            return st;
    if (x->rank < 3 || popc_view_numel(&ic->inputs[0]) != popc_view_numel(x) ||
        popc_view_numel(&ic->inputs[2]) != x->dims[1])
        return opu_error(POPC_EINVAL, "InstanceNormalizationGrad",
                         ic->node_name, "dY must match X [N, C, ...] and "
                         "scale have C elements");
    opu_set_like(&ic->outputs[0], x);
    opu_set_like(&ic->outputs[1], &ic->inputs[2]);
    opu_set_like(&ic->outputs[2], &ic->inputs[2]);
    return POPC_OK;
}

static popc_status in_grad_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[1];
    const float *dy = kc->inputs[0].data, *xd = x->data;
    const float *scale = kc->inputs[2].data;
    float *dx = kc->outputs[0].data, *ds = kc->outputs[1].data;
    float *db = kc->outputs[2].data;
    double eps = popc_attr_float(kc->attrs, "epsilon", 1e-5);
    int64_t P = plane_of(x), C = x->dims[1];

    memset(ds, 0, sizeof(float) * (size_t)C);
    memset(db, 0, sizeof(float) * (size_t)C);
    for (int64_t nc = 0; nc < x->dims[0] * C; nc++) {
        const float *p = xd + nc * P, *g = dy + nc * P;
        int64_t c = nc % C;
        double mean = 0, var = 0, inv, sum = 0, dot = 0;

        for (int64_t i = 0; i < P; i++)
            mean += p[i];
        mean /= (double)P;
        for (int64_t i = 0; i < P; i++)
            var += (p[i] - mean) * (p[i] - mean);
        inv = 1.0 / sqrt(var / (double)P + eps);
        for (int64_t i = 0; i < P; i++) {
            sum += g[i];
            dot += g[i] * (p[i] - mean) * inv;
        }
        ds[c] += (float)dot;
        db[c] += (float)sum;
        for (int64_t i = 0; i < P; i++) {
            double xhat = (p[i] - mean) * inv;

            dx[nc * P + i] = (float)(scale[c] * inv *
                                     (g[i] - sum / (double)P -
                                      xhat * dot / (double)P));
        }
    }
    return POPC_OK;
}

/* ---- MeanVarianceNormalizationGrad ------------------------------------------ */

static popc_status same_as_x_infer(popc_infer_ctx *ic, const char *op)
{
    popc_status st;

    if ((st = opu_want_f32(ic, op, 0, "dY")) != POPC_OK ||
        (st = opu_want_f32(ic, op, 1, "X")) != POPC_OK)
        return st;
    if (popc_view_numel(&ic->inputs[0]) != popc_view_numel(&ic->inputs[1]))
        return opu_error(POPC_EINVAL, op, ic->node_name, "dY and X differ "
                         "in size");
    opu_set_like(&ic->outputs[0], &ic->inputs[1]);
    return POPC_OK;
}

static popc_status mvn_grad_infer(popc_infer_ctx *ic)
{
    return same_as_x_infer(ic, "MeanVarianceNormalizationGrad");
}

/* y = (x - m) / D, D = sigma + 1e-9, sigma = sqrt(mean((x - m)^2)):
** dx = (dy - mean(dy)) / D - (x - m) S / (D^2 n sigma), S = sum dy (x - m) */
static popc_status mvn_grad_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[1];
    const float *dy = kc->inputs[0].data, *xd = x->data;
    float *dx = kc->outputs[0].data;
    uint8_t red[POPC_MAX_RANK];
    int64_t groups = nn_mvn_groups(x, kc->attrs, red), per;

    per = groups ? popc_view_numel(x) / groups : 0;
    for (int64_t g = 0; g < groups; g++) {
        double mean = 0, var = 0, gsum = 0, S = 0, sigma, D;

        for (int64_t i = 0; i < per; i++) {
            int64_t off = nn_mvn_offset(x, red, g, i);

            mean += xd[off];
            gsum += dy[off];
        }
        mean /= (double)per;
        for (int64_t i = 0; i < per; i++) {
            int64_t off = nn_mvn_offset(x, red, g, i);

            var += (xd[off] - mean) * (xd[off] - mean);
            S += dy[off] * (xd[off] - mean);
        }
        sigma = sqrt(var / (double)per);
        D = sigma + 1e-9;
        for (int64_t i = 0; i < per; i++) {
            int64_t off = nn_mvn_offset(x, red, g, i);
            double v = (dy[off] - gsum / (double)per) / D;

            if (sigma > 0)
                v -= (xd[off] - mean) * S / (D * D * (double)per * sigma);
            dx[off] = (float)v;
        }
    }
    return POPC_OK;
}

/* ---- LRNGrad -------------------------------------------------------------------- */

static popc_status lrn_grad_infer(popc_infer_ctx *ic)
{
    return same_as_x_infer(ic, "LRNGrad");
}

/* y_i = x_i d_i^-b, d_i = bias + a/size sum_{k in win(i)} x_k^2:
** dx_k = dy_k d_k^-b - 2 (a/size) b x_k sum_{i: k in win(i)} dy_i x_i
** d_i^(-b-1) */
static popc_status lrn_grad_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[1];
    const float *dy = kc->inputs[0].data, *xd = x->data;
    float *dx = kc->outputs[0].data;
    double alpha = popc_attr_float(kc->attrs, "alpha", 1e-4);
    double beta = popc_attr_float(kc->attrs, "beta", 0.75);
    double bias = popc_attr_float(kc->attrs, "bias", 1.0);
    int64_t size = popc_attr_int(kc->attrs, "size", 1);
    int64_t C = x->dims[1], P = plane_of(x), total = popc_view_numel(x);
    int64_t lo_off = (size - 1) / 2, hi_off = size - 1 - lo_off;
    double *d = kc->host->alloc(sizeof(double) * (size_t)(total + 1));

    if (!d)
        return opu_error(POPC_ENOMEM, "LRNGrad", kc->node_name, "out of "
                         "memory");
    for (int64_t i = 0; i < total; i++) {
        int64_t c = (i / P) % C, base = i - c * P;
        double sq = 0;

        for (int64_t k = c - lo_off; k <= c + hi_off; k++)
            if (k >= 0 && k < C)
                sq += (double)xd[base + k * P] * xd[base + k * P];
        d[i] = bias + alpha / (double)size * sq;
    }
    for (int64_t i = 0; i < total; i++) {
        int64_t c = (i / P) % C, base = i - c * P;
        double acc = 0;

        /* outputs j whose window holds channel c: c in [j - lo, j + hi] */
        for (int64_t j = c - hi_off; j <= c + lo_off; j++)
            if (j >= 0 && j < C) {
                int64_t o = base + j * P;

                acc += dy[o] * xd[o] * pow(d[o], -beta - 1.0);
            }
        dx[i] = (float)(dy[i] * pow(d[i], -beta) -
                        2.0 * alpha / (double)size * beta * xd[i] * acc);
    }
    kc->host->free(d);
    return POPC_OK;
}

static const popc_op_def grad_ops[] = {
    {.size = sizeof(popc_op_def), .domain = "popc",
     .name = "InstanceNormalizationGrad", .since_version = 1,
     .min_inputs = 3, .max_inputs = 3, .min_outputs = 3, .max_outputs = 3,
     .infer = in_grad_infer, .forward = in_grad_forward,
     .doc = "(dY, X, scale) -> dX, dScale, dB"},
    {.size = sizeof(popc_op_def), .domain = "popc",
     .name = "MeanVarianceNormalizationGrad", .since_version = 1,
     .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
     .infer = mvn_grad_infer, .forward = mvn_grad_forward,
     .doc = "(dY, X) -> dX"},
    {.size = sizeof(popc_op_def), .domain = "popc", .name = "LRNGrad",
     .since_version = 1, .min_inputs = 2, .max_inputs = 2, .min_outputs = 1,
     .max_outputs = 1, .infer = lrn_grad_infer, .forward = lrn_grad_forward,
     .doc = "(dY, X) -> dX"},
};

popc_status nn_register_norm_more_grad(const popc_host *h, popc_registrar *r)
{
    return opu_register_ops(h, r, grad_ops,
                            (int)(sizeof grad_ops / sizeof grad_ops[0]));
}
