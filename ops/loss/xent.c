/* xent.c - ai.onnx SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss
** (opset 13), matching torch.nn.functional.cross_entropy / nll_loss, and
** their gradient ops popc::SoftmaxCrossEntropyLossGrad and
** popc::NegativeLogLikelihoodLossGrad.
**
** Scores are [N, C] or [N, C, d...]; labels [N] or [N, d...] (int32 or
** int64); optional per-class weights [C]. A "lane" is one (n, d...)
** position. "mean" divides by the summed weight of the labels that are not
** ignore_index (NaN when every label is ignored, as torch). A label outside
** [0, C) that is not ignore_index fails the run with POPC_EINVAL naming
** the node, the label and the class count.
**
** The losses themselves reduce to a scalar and run unsplit; the gradient
** ops split over lanes (each part recomputes the total weight, in the same
** order, so parts agree).
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/loss/loss_priv.h"
#include "ops/util/oputil.h"

typedef struct xent_p {
    int64_t N, C, inner, lanes;
    int red;
    int has_ignore;
    int64_t ignore;
} xent_p;

static popc_status xent_params(const char *op, const char *node,
                               const popc_view *scores, const popc_view *labels,
                               const popc_view *weights,
                               const popc_attrs *attrs, xent_p *p)
{
    char s1[OPU_DIMS_LEN], s2[OPU_DIMS_LEN];
    const popc_attr *ig = popc_attrs_find(attrs, "ignore_index");
    int ok;
    popc_status st;

    memset(p, 0, sizeof *p);
    if ((st = opu_reduction(op, node, attrs, &p->red)) != POPC_OK)
        return st;
    p->has_ignore = ig != NULL;
    p->ignore = ig ? popc_attr_int(attrs, "ignore_index", 0) : 0;
    if (scores->rank < 2)
        return opu_error(POPC_EINVAL, op, node, "scores %s must be [N, C] or "
                         "[N, C, d...]", opu_dims(scores, s1));
    if (labels->dtype != POPC_DTYPE_I32 && labels->dtype != POPC_DTYPE_I64)
        return opu_error(POPC_EINVAL, op, node, "labels must be int32 or "
                         "int64, got %s", popc_dtype_name(labels->dtype));
    p->N = scores->dims[0];
    p->C = scores->dims[1];
    p->inner = 1;
    for (int i = 2; i < scores->rank; i++)
        p->inner *= scores->dims[i];
    p->lanes = p->N * p->inner;
    ok = labels->rank == scores->rank - 1 && labels->dims[0] == p->N;
    for (int i = 1; ok && i < labels->rank; i++)
        ok = labels->dims[i] == scores->dims[i + 1];
    if (!ok)
        return opu_error(POPC_EINVAL, op, node, "labels %s must be scores %s "
                         "without the class dimension", opu_dims(labels, s1),
                         opu_dims(scores, s2));
    if (weights && (weights->dtype != POPC_DTYPE_F32 || weights->rank != 1 ||
                    weights->dims[0] != p->C))
        return opu_error(POPC_EINVAL, op, node, "weights %s %s must be "
                         "float32 [%lld], one per class of scores %s",
                         popc_dtype_name(weights->dtype),
                         opu_dims(weights, s1), (long long)p->C,
                         opu_dims(scores, s2));
    return POPC_OK;
}

static int64_t label_at(const popc_view *labels, int64_t i)
{
    if (labels->dtype == POPC_DTYPE_I32)
        return ((const int32_t *)labels->data)[i];
    return ((const int64_t *)labels->data)[i];
}

/* Weight of lane l's label (0 when ignored); POPC_EINVAL when the label
** is out of range. */
static popc_status lane_weight(const char *op, const char *node,
                               const xent_p *p, const popc_view *labels,
                               const float *weights, int64_t l, int64_t *label,
                               float *w)
{
    int64_t lab = label_at(labels, l);

    *label = lab;
    if (p->has_ignore && lab == p->ignore) {
        *w = 0.0f;
        return POPC_OK;
    }
    if (lab < 0 || lab >= p->C) {
        char extra[64] = "";

        if (p->has_ignore)
            snprintf(extra, sizeof extra, " (or ignore_index %lld)",
                     (long long)p->ignore);
        return opu_error(POPC_EINVAL, op, node, "label %lld at position %lld "
                         "is out of range for %lld classes; labels must be "
                         "in 0..%lld%s", (long long)lab, (long long)l,
                         (long long)p->C, (long long)(p->C - 1), extra);
    }
    *w = weights ? weights[lab] : 1.0f;
    return POPC_OK;
}

/* Sum of the weights of all lanes' labels, checking every label. */
static popc_status total_weight(const char *op, const char *node,
                                const xent_p *p, const popc_view *labels,
                                const float *weights, double *tw)
{
    double s = 0.0;
    int64_t lab;
    float w;
    popc_status st;

    for (int64_t l = 0; l < p->lanes; l++) {
        if ((st = lane_weight(op, node, p, labels, weights, l, &lab, &w)) !=
            POPC_OK)
            return st;
        s += w;
    }
    *tw = s;
    return POPC_OK;
}

/* max and log(sum(exp(x - max))) of one lane (stride inner). */
static void lane_lse(const float *x, int64_t C, int64_t inner, float *mx,
                     double *sum)
{
    float m = -INFINITY;
    double s = 0.0;

    for (int64_t c = 0; c < C; c++)
        if (x[c * inner] > m || isnan(x[c * inner]))
            m = x[c * inner];
    for (int64_t c = 0; c < C; c++)
        s += expf(x[c * inner] - m);
    *mx = m;
    *sum = s;
}

static void loss_out_shape(const xent_p *p, const popc_view *labels,
                           popc_view *out)
{
    if (p->red == OPU_RED_NONE)
        opu_set(out, POPC_DTYPE_F32, labels->dims, labels->rank);
    else
        opu_set(out, POPC_DTYPE_F32, NULL, 0);
}

/* Writes the reduced (or per-lane) loss. */
static void loss_store(const xent_p *p, float *out, double sum, double tw)
{
    if (p->red == OPU_RED_SUM)
        out[0] = (float)sum;
    else if (p->red == OPU_RED_MEAN)
        out[0] = (float)(sum / tw);
}

static popc_attr *grad_attrs(const popc_grad_ctx *gc, popc_attr *a, int *n)
{
    *n = 0;
    a[(*n)++] = popc_attr_make_string(
        "reduction", popc_attr_string(gc->attrs, "reduction", "mean"));
    if (popc_attrs_find(gc->attrs, "ignore_index"))
        a[(*n)++] = popc_attr_make_int("ignore_index",
                                  popc_attr_int(gc->attrs, "ignore_index", 0));
    return a;
}

static int has_weights(const popc_grad_ctx *gc, int i)
{
    return gc->n_inputs > i && gc->inputs[i] >= 0 &&
           gc->input_info[i].dtype != POPC_DTYPE_UNDEFINED;
}

/* ---- SoftmaxCrossEntropyLoss --------------------------------------------- */

#define SCE "SoftmaxCrossEntropyLoss"

static popc_status sce_infer(popc_infer_ctx *ic)
{
    const popc_view *w =
        opu_present_at(ic->inputs, ic->n_inputs, 2) ? &ic->inputs[2] : NULL;
    xent_p p;
    popc_status st;

    if ((st = opu_want_f32(ic, SCE, 0, "scores")) != POPC_OK ||
        (st = xent_params(SCE, ic->node_name, &ic->inputs[0], &ic->inputs[1], w,
                          ic->attrs, &p)) != POPC_OK)
        return st;
    loss_out_shape(&p, &ic->inputs[1], &ic->outputs[0]);
    if (ic->n_outputs > 1)
        opu_set_like(&ic->outputs[1], &ic->inputs[0]);
    return POPC_OK;
}

static popc_status sce_forward(const popc_kernel_ctx *kc)
{
    const popc_view *labels = &kc->inputs[1];
    const float *x = kc->inputs[0].data;
    const float *wt =
        opu_present_at(kc->inputs, kc->n_inputs, 2) ? kc->inputs[2].data : NULL;
    float *out = kc->outputs[0].data;
    float *lp = opu_out_ready(kc, 1) ? kc->outputs[1].data : NULL;
    double sum = 0.0, tw = 0.0;
    xent_p p;
    popc_status st;

    if ((st = xent_params(SCE, kc->node_name, &kc->inputs[0], labels, NULL,
                          kc->attrs, &p)) != POPC_OK)
        return st;
    for (int64_t l = 0; l < p.lanes; l++) {
        int64_t n = l / p.inner, i = l % p.inner, lab;
        const float *xl = x + n * p.C * p.inner + i;
        float mx, ls, w, loss = 0.0f;
        double s;

        lane_lse(xl, p.C, p.inner, &mx, &s);
        ls = (float)log(s);
        if (lp)
            for (int64_t c = 0; c < p.C; c++)
                lp[n * p.C * p.inner + c * p.inner + i] =
                    xl[c * p.inner] - mx - ls;
        if ((st = lane_weight(SCE, kc->node_name, &p, labels, wt, l, &lab,
                              &w)) != POPC_OK)
            return st;
        if (!(p.has_ignore && lab == p.ignore))
            loss = -(xl[lab * p.inner] - mx - ls) * w;
        if (p.red == OPU_RED_NONE)
            out[l] = loss;
        sum += loss;
        tw += w;
    }
    loss_store(&p, out, sum, tw);
    return POPC_OK;
}

static popc_status sce_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    double n = (double)popc_view_numel(&ic->inputs[0]);

    c->flops = 6.0 * n;
    c->bytes = 4.0 * n * (ic->n_outputs > 1 ? 2.0 : 1.0) +
               (double)popc_view_nbytes(&ic->inputs[1]);
    c->temp_bytes = 0;
    return POPC_OK;
}

static popc_status sce_grad(popc_grad_ctx *gc)
{
    int dl = gc->output_grads[0];
    int dlp = gc->n_outputs > 1 ? gc->output_grads[1] : -1;
    int in[4], n_in = 3, ds = -1, t, sum[2];
    popc_attr a[2];
    int na;
    popc_status st;

    if (dl >= 0) {
        in[0] = dl;
        in[1] = gc->inputs[0];
        in[2] = gc->inputs[1];
        if (has_weights(gc, 2))
            in[n_in++] = gc->inputs[2];
        grad_attrs(gc, a, &na);
        if ((st = opu_grad_node(gc, "popc", "SoftmaxCrossEntropyLossGrad", in,
                             n_in, a, na, &ds)) != POPC_OK)
            return st;
    }
    if (dlp >= 0) {
        /* log_prob = LogSoftmax(scores, axis 1) */
        a[0] = popc_attr_make_int("axis", 1);
        in[0] = dlp;
        in[1] = gc->outputs[1];
        if ((st = opu_grad_node(gc, "popc", "LogSoftmaxGrad", in, 2, a, 1, &t)) !=
            POPC_OK)
            return st;
        if (ds >= 0) {
            sum[0] = ds;
            sum[1] = t;
            if ((st = opu_grad_node(gc, NULL, "Add", sum, 2, NULL, 0, &ds)) !=
                POPC_OK)
                return st;
        } else {
            ds = t;
        }
    }
    gc->input_grads[0] = ds;
    return POPC_OK;
}

/* ---- SoftmaxCrossEntropyLossGrad: (dL, scores, labels[, w]) -> dScores --- */

#define SCEG "SoftmaxCrossEntropyLossGrad"

static popc_status sceg_infer(popc_infer_ctx *ic)
{
    const popc_view *w =
        opu_present_at(ic->inputs, ic->n_inputs, 3) ? &ic->inputs[3] : NULL;
    char s1[OPU_DIMS_LEN], s2[OPU_DIMS_LEN];
    popc_view want;
    xent_p p;
    popc_status st;

    if ((st = opu_want_f32(ic, SCEG, 0, "dL")) != POPC_OK ||
        (st = opu_want_f32(ic, SCEG, 1, "scores")) != POPC_OK ||
        (st = xent_params(SCEG, ic->node_name, &ic->inputs[1], &ic->inputs[2],
                          w, ic->attrs, &p)) != POPC_OK)
        return st;
    loss_out_shape(&p, &ic->inputs[2], &want);
    if (want.rank != ic->inputs[0].rank ||
        memcmp(want.dims, ic->inputs[0].dims,
               sizeof want.dims[0] * (size_t)want.rank))
        return ic->host->set_error(POPC_EINVAL,
                                   "%s '%s': dL %s must have the loss's "
                                   "shape %s",
                                   SCEG, ic->node_name,
                                   opu_dims(&ic->inputs[0], s1),
                                   opu_dims(&want, s2));
    opu_set_like(&ic->outputs[0], &ic->inputs[1]);
    return POPC_OK;
}

static popc_status sceg_forward(const popc_kernel_ctx *kc)
{
    const float *dl = kc->inputs[0].data, *x = kc->inputs[1].data;
    const popc_view *labels = &kc->inputs[2];
    const float *wt =
        opu_present_at(kc->inputs, kc->n_inputs, 3) ? kc->inputs[3].data : NULL;
    float *dx = kc->outputs[0].data;
    double tw = 1.0;
    int64_t lo, hi;
    xent_p p;
    popc_status st;

    if ((st = xent_params(SCEG, kc->node_name, &kc->inputs[1], labels, NULL,
                          kc->attrs, &p)) != POPC_OK)
        return st;
    if (p.red == OPU_RED_MEAN &&
        (st = total_weight(SCEG, kc->node_name, &p, labels, wt, &tw)) !=
            POPC_OK)
        return st;
    opu_range(p.lanes, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t l = lo; l < hi; l++) {
        int64_t n = l / p.inner, i = l % p.inner, lab;
        const float *xl = x + n * p.C * p.inner + i;
        float *dxl = dx + n * p.C * p.inner + i;
        float mx, r, w, g;
        double s;

        if ((st = lane_weight(SCEG, kc->node_name, &p, labels, wt, l, &lab,
                              &w)) != POPC_OK)
            return st;
        if (p.has_ignore && lab == p.ignore) {
            for (int64_t c = 0; c < p.C; c++)
                dxl[c * p.inner] = 0.0f;
            continue;
        }
        g = p.red == OPU_RED_NONE  ? dl[l]
            : p.red == OPU_RED_SUM ? dl[0]
                                    : (float)(dl[0] / tw);
        lane_lse(xl, p.C, p.inner, &mx, &s);
        r = (float)(1.0 / s);
        for (int64_t c = 0; c < p.C; c++)
            dxl[c * p.inner] = expf(xl[c * p.inner] - mx) * r * w * g;
        dxl[lab * p.inner] -= w * g;
    }
    return POPC_OK;
}

static popc_status sceg_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    double n = (double)popc_view_numel(&ic->inputs[1]);

    c->flops = 6.0 * n;
    c->bytes = 8.0 * n + (double)popc_view_nbytes(&ic->inputs[2]);
    c->temp_bytes = 0;
    return POPC_OK;
}

/* ---- NegativeLogLikelihoodLoss ------------------------------------------- */

#define NLL "NegativeLogLikelihoodLoss"

static popc_status nll_infer(popc_infer_ctx *ic)
{
    const popc_view *w =
        opu_present_at(ic->inputs, ic->n_inputs, 2) ? &ic->inputs[2] : NULL;
    xent_p p;
    popc_status st;

    if ((st = opu_want_f32(ic, NLL, 0, "input")) != POPC_OK ||
        (st = xent_params(NLL, ic->node_name, &ic->inputs[0], &ic->inputs[1], w,
                          ic->attrs, &p)) != POPC_OK)
        return st;
    loss_out_shape(&p, &ic->inputs[1], &ic->outputs[0]);
    return POPC_OK;
}

static popc_status nll_forward(const popc_kernel_ctx *kc)
{
    const popc_view *labels = &kc->inputs[1];
    const float *x = kc->inputs[0].data;
    const float *wt =
        opu_present_at(kc->inputs, kc->n_inputs, 2) ? kc->inputs[2].data : NULL;
    float *out = kc->outputs[0].data;
    double sum = 0.0, tw = 0.0;
    xent_p p;
    popc_status st;

    if ((st = xent_params(NLL, kc->node_name, &kc->inputs[0], labels, NULL,
                          kc->attrs, &p)) != POPC_OK)
        return st;
    for (int64_t l = 0; l < p.lanes; l++) {
        int64_t n = l / p.inner, i = l % p.inner, lab;
        float w, loss = 0.0f;

        if ((st = lane_weight(NLL, kc->node_name, &p, labels, wt, l, &lab,
                              &w)) != POPC_OK)
            return st;
        if (!(p.has_ignore && lab == p.ignore))
            loss = -x[(n * p.C + lab) * p.inner + i] * w;
        if (p.red == OPU_RED_NONE)
            out[l] = loss;
        sum += loss;
        tw += w;
    }
    loss_store(&p, out, sum, tw);
    return POPC_OK;
}

static popc_status nll_grad(popc_grad_ctx *gc)
{
    const popc_view *xi = &gc->input_info[0];
    int in[3], n_in = 2;
    popc_attr a[3];
    int na;

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    in[0] = gc->output_grads[0];
    in[1] = gc->inputs[1];
    if (has_weights(gc, 2))
        in[n_in++] = gc->inputs[2];
    grad_attrs(gc, a, &na);
    a[na++] = popc_attr_make_ints("input_shape", xi->dims, xi->rank);
    return opu_grad_node(gc, "popc", "NegativeLogLikelihoodLossGrad", in, n_in, a,
                      na, &gc->input_grads[0]);
}

/* ---- NegativeLogLikelihoodLossGrad: (dL, labels[, weights]) -> dInput -------
** attr input_shape gives the input's shape. */

#define NLLG "NegativeLogLikelihoodLossGrad"

static popc_status nllg_params(const char *node, const popc_view *in, int n_in,
                               const popc_attrs *attrs, popc_view *xshape,
                               xent_p *p, int check_w)
{
    int64_t d[POPC_MAX_RANK];
    int64_t r = popc_attr_ints(attrs, "input_shape", d, POPC_MAX_RANK);
    const popc_view *w = check_w && opu_present_at(in, n_in, 2) ? &in[2] : NULL;

    if (r < 2 || r > POPC_MAX_RANK)
        return opu_error(POPC_EINVAL, NLLG, node, "attribute input_shape "
                         "must give the input's shape ([N, C, ...])");
    opu_set(xshape, POPC_DTYPE_F32, d, (int)r);
    return xent_params(NLLG, node, xshape, &in[1], w, attrs, p);
}

static popc_status nllg_infer(popc_infer_ctx *ic)
{
    char s1[OPU_DIMS_LEN], s2[OPU_DIMS_LEN];
    popc_view xs, want;
    xent_p p;
    popc_status st;

    if ((st = opu_want_f32(ic, NLLG, 0, "dL")) != POPC_OK ||
        (st = nllg_params(ic->node_name, ic->inputs, ic->n_inputs, ic->attrs,
                          &xs, &p, 1)) != POPC_OK)
        return st;
    loss_out_shape(&p, &ic->inputs[1], &want);
    if (want.rank != ic->inputs[0].rank ||
        memcmp(want.dims, ic->inputs[0].dims,
               sizeof want.dims[0] * (size_t)want.rank))
        return ic->host->set_error(POPC_EINVAL,
                                   "%s '%s': dL %s must have the loss's "
                                   "shape %s",
                                   NLLG, ic->node_name,
                                   opu_dims(&ic->inputs[0], s1),
                                   opu_dims(&want, s2));
    opu_set_like(&ic->outputs[0], &xs);
    return POPC_OK;
}

static popc_status nllg_forward(const popc_kernel_ctx *kc)
{
    const float *dl = kc->inputs[0].data;
    const popc_view *labels = &kc->inputs[1];
    const float *wt =
        opu_present_at(kc->inputs, kc->n_inputs, 2) ? kc->inputs[2].data : NULL;
    float *dx = kc->outputs[0].data;
    double tw = 1.0;
    int64_t lo, hi;
    popc_view xs;
    xent_p p;
    popc_status st;

    if ((st = nllg_params(kc->node_name, kc->inputs, kc->n_inputs, kc->attrs,
                          &xs, &p, 0)) != POPC_OK)
        return st;
    if (p.red == OPU_RED_MEAN &&
        (st = total_weight(NLLG, kc->node_name, &p, labels, wt, &tw)) !=
            POPC_OK)
        return st;
    opu_range(p.lanes, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t l = lo; l < hi; l++) {
        int64_t n = l / p.inner, i = l % p.inner, lab;
        float *dxl = dx + n * p.C * p.inner + i;
        float w, g;

        if ((st = lane_weight(NLLG, kc->node_name, &p, labels, wt, l, &lab,
                              &w)) != POPC_OK)
            return st;
        for (int64_t c = 0; c < p.C; c++)
            dxl[c * p.inner] = 0.0f;
        if (p.has_ignore && lab == p.ignore)
            continue;
        g = p.red == OPU_RED_NONE  ? dl[l]
            : p.red == OPU_RED_SUM ? dl[0]
                                    : (float)(dl[0] / tw);
        dxl[lab * p.inner] = -w * g;
    }
    return POPC_OK;
}

static const popc_op_def xent_ops[] = {
    {
        .size = sizeof(popc_op_def),
        .domain = "ai.onnx",
        .name = SCE,
        .since_version = 13,
        .min_inputs = 2,
        .max_inputs = 3,
        .min_outputs = 1,
        .max_outputs = 2,
        .flags = POPC_OP_LOSS,
        .infer = sce_infer,
        .forward = sce_forward,
        .grad = sce_grad,
        .cost = sce_cost,
        .doc = "torch cross_entropy (weights, ignore_index, log_prob)",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "ai.onnx",
        .name = NLL,
        .since_version = 13,
        .min_inputs = 2,
        .max_inputs = 3,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_LOSS,
        .infer = nll_infer,
        .forward = nll_forward,
        .grad = nll_grad,
        .doc = "torch nll_loss (weights, ignore_index)",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = SCEG,
        .since_version = 1,
        .min_inputs = 3,
        .max_inputs = 4,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = sceg_infer,
        .forward = sceg_forward,
        .cost = sceg_cost,
        .doc = "SoftmaxCrossEntropyLoss gradient (dL, scores, labels[, w])",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = NLLG,
        .since_version = 1,
        .min_inputs = 2,
        .max_inputs = 3,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = nllg_infer,
        .forward = nllg_forward,
        .doc = "NegativeLogLikelihoodLoss gradient (dL, labels[, w])",
    },
};

popc_status loss_register_xent(const popc_host *h, popc_registrar *r)
{
    popc_status st;

    for (size_t i = 0; i < sizeof xent_ops / sizeof xent_ops[0]; i++)
        if ((st = h->register_op(r, &xent_ops[i])) != POPC_OK)
            return st;
    return POPC_OK;
}
