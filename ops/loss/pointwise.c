/* pointwise.c - popc::MseLoss and popc::L1Loss (inputs x, target of the
** same shape; attr reduction "mean" | "sum" | "none"), matching
** torch.nn.functional.mse_loss / l1_loss, and their gradient ops
** popc::MseLossGrad and popc::L1LossGrad ((dL, x, target) -> dx; the
** target's gradient is -dx, added as an ai.onnx Neg node).
**
** The losses reduce over everything and run unsplit (sums in double);
** the gradient ops are elementwise and split over elements.
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "ops/loss/loss_priv.h"
#include "ops/util/oputil.h"

enum { PW_MSE = 0, PW_L1 = 1 };

static const char *const pw_names[] = {"MseLoss", "L1Loss"};
static const char *const pw_grad_names[] = {"MseLossGrad", "L1LossGrad"};

static popc_status same_shape(const char *op, const char *node, const char *an,
                              const popc_view *a, const char *bn,
                              const popc_view *b)
{
    char s1[OPU_DIMS_LEN], s2[OPU_DIMS_LEN];

    if (a->rank == b->rank &&
        !memcmp(a->dims, b->dims, sizeof a->dims[0] * (size_t)a->rank))
        return POPC_OK;
    return opu_error(POPC_EINVAL, op, node, "%s %s and %s %s must have the "
                     "same shape", an, opu_dims(a, s1), bn, opu_dims(b, s2));
}

static popc_status pw_infer(popc_infer_ctx *ic, int kind)
{
    const char *op = pw_names[kind];
    int red;
    popc_status st;

    if ((st = opu_want_f32(ic, op, 0, "input x")) != POPC_OK ||
        (st = opu_want_f32(ic, op, 1, "target")) != POPC_OK ||
        (st = same_shape(op, ic->node_name, "input x", &ic->inputs[0], "target",
                         &ic->inputs[1])) != POPC_OK ||
        (st = opu_reduction(op, ic->node_name, ic->attrs, &red)) != POPC_OK)
        return st;
    if (red == OPU_RED_NONE)
        opu_set_like(&ic->outputs[0], &ic->inputs[0]);
    else
        opu_set(&ic->outputs[0], POPC_DTYPE_F32, NULL, 0);
    return POPC_OK;
}

static popc_status pw_forward(const popc_kernel_ctx *kc, int kind)
{
    const float *x = kc->inputs[0].data, *t = kc->inputs[1].data;
    float *out = kc->outputs[0].data;
    int64_t n = popc_view_numel(&kc->inputs[0]);
    double sum = 0.0;
    int red;
    popc_status st;

    if ((st = opu_reduction(pw_names[kind], kc->node_name, kc->attrs, &red)) !=
        POPC_OK)
        return st;
    for (int64_t i = 0; i < n; i++) {
        float d = x[i] - t[i];
        float e = kind == PW_MSE ? d * d : fabsf(d);

        if (red == OPU_RED_NONE)
            out[i] = e;
        else
            sum += e;
    }
    if (red == OPU_RED_SUM)
        out[0] = (float)sum;
    else if (red == OPU_RED_MEAN)
        out[0] = (float)(sum / (double)n);
    return POPC_OK;
}

static popc_status pw_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    double n = (double)popc_view_numel(&ic->inputs[0]);

    c->flops = 3.0 * n;
    c->bytes = 8.0 * n + 4.0 * (double)popc_view_numel(&ic->outputs[0]);
    c->temp_bytes = 0;
    return POPC_OK;
}

static popc_status pw_grad(popc_grad_ctx *gc, int kind)
{
    popc_attr a = popc_attr_make_string(
        "reduction", popc_attr_string(gc->attrs, "reduction", "mean"));
    int in[3];
    popc_status st;

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    in[0] = gc->output_grads[0];
    in[1] = gc->inputs[0];
    in[2] = gc->inputs[1];
    if ((st = opu_grad_node(gc, "popc", pw_grad_names[kind], in, 3, &a, 1,
                         &gc->input_grads[0])) != POPC_OK)
        return st;
    return opu_grad_node(gc, NULL, "Neg", &gc->input_grads[0], 1, NULL, 0,
                      &gc->input_grads[1]);
}

/* ---- MseLossGrad / L1LossGrad: (dL, x, target) -> dx --------------------- */

static popc_status pwg_infer(popc_infer_ctx *ic, int kind)
{
    const char *op = pw_grad_names[kind];
    char s1[OPU_DIMS_LEN], s2[OPU_DIMS_LEN];
    const popc_view *dl = &ic->inputs[0], *x = &ic->inputs[1];
    int red;
    popc_status st;

    for (int i = 0; i < 3; i++)
        if ((st = opu_want_f32(ic, op, i, "every input")) != POPC_OK)
            return st;
    if ((st = same_shape(op, ic->node_name, "input x", x, "target",
                         &ic->inputs[2])) != POPC_OK ||
        (st = opu_reduction(op, ic->node_name, ic->attrs, &red)) != POPC_OK)
        return st;
    if (red == OPU_RED_NONE
            ? dl->rank != x->rank ||
                  memcmp(dl->dims, x->dims,
                         sizeof x->dims[0] * (size_t)x->rank) != 0
            : dl->rank != 0)
        return ic->host->set_error(POPC_EINVAL,
                                   "%s '%s': dL %s must have the loss's "
                                   "shape (%s for input x %s)",
                                   op, ic->node_name, opu_dims(dl, s1),
                                   red == OPU_RED_NONE ? "the shape" : "[]",
                                   opu_dims(x, s2));
    opu_set_like(&ic->outputs[0], x);
    return POPC_OK;
}

static popc_status pwg_forward(const popc_kernel_ctx *kc, int kind)
{
    const float *dl = kc->inputs[0].data, *x = kc->inputs[1].data;
    const float *t = kc->inputs[2].data;
    float *dx = kc->outputs[0].data;
    int64_t n = popc_view_numel(&kc->inputs[1]), lo, hi;
    int red;
    popc_status st;

    if ((st = opu_reduction(pw_grad_names[kind], kc->node_name, kc->attrs,
                             &red)) != POPC_OK)
        return st;
    opu_range(n, kc->part, kc->n_parts, &lo, &hi);
    if (kind == PW_MSE) {
        /* torch: (2 / numel for mean, else 2) * (x - t) * g */
        float norm = red == OPU_RED_MEAN ? (float)(2.0 / (double)n) : 2.0f;

        for (int64_t i = lo; i < hi; i++)
            dx[i] =
                norm * (x[i] - t[i]) * (red == OPU_RED_NONE ? dl[i] : dl[0]);
    } else {
        /* torch: sign(x - t) * (g / numel for mean, else g) */
        float g0 = red == OPU_RED_MEAN ? dl[0] / (float)n : dl[0];

        for (int64_t i = lo; i < hi; i++) {
            float d = x[i] - t[i];
            float s = (float)((d > 0.0f) - (d < 0.0f));

            dx[i] = s * (red == OPU_RED_NONE ? dl[i] : g0);
        }
    }
    return POPC_OK;
}

static popc_status pwg_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    double n = (double)popc_view_numel(&ic->inputs[1]);

    c->flops = 3.0 * n;
    c->bytes = 12.0 * n + 4.0 * (double)popc_view_numel(&ic->inputs[0]);
    c->temp_bytes = 0;
    return POPC_OK;
}

static popc_status mse_infer(popc_infer_ctx *ic)
{
    return pw_infer(ic, PW_MSE);
}

static popc_status l1_infer(popc_infer_ctx *ic)
{
    return pw_infer(ic, PW_L1);
}

static popc_status mse_forward(const popc_kernel_ctx *kc)
{
    return pw_forward(kc, PW_MSE);
}

static popc_status l1_forward(const popc_kernel_ctx *kc)
{
    return pw_forward(kc, PW_L1);
}

static popc_status mse_grad(popc_grad_ctx *gc)
{
    return pw_grad(gc, PW_MSE);
}

static popc_status l1_grad(popc_grad_ctx *gc)
{
    return pw_grad(gc, PW_L1);
}

static popc_status mseg_infer(popc_infer_ctx *ic)
{
    return pwg_infer(ic, PW_MSE);
}

static popc_status l1g_infer(popc_infer_ctx *ic)
{
    return pwg_infer(ic, PW_L1);
}

static popc_status mseg_forward(const popc_kernel_ctx *kc)
{
    return pwg_forward(kc, PW_MSE);
}

static popc_status l1g_forward(const popc_kernel_ctx *kc)
{
    return pwg_forward(kc, PW_L1);
}

#define PW_DEF(NAME, N_IN, FLAGS, INFER, FWD, GRAD, COST, DOC)                 \
    {                                                                          \
        .size = sizeof(popc_op_def), .domain = "popc", .name = NAME,           \
        .since_version = 1, .min_inputs = N_IN, .max_inputs = N_IN,            \
        .min_outputs = 1, .max_outputs = 1, .flags = FLAGS, .infer = INFER,    \
        .forward = FWD, .grad = GRAD, .cost = COST, .doc = DOC,                \
    }

static const popc_op_def pointwise_ops[] = {
    PW_DEF("MseLoss", 2, POPC_OP_LOSS, mse_infer, mse_forward, mse_grad,
           pw_cost, "torch mse_loss (x, target; attr reduction)"),
    PW_DEF("L1Loss", 2, POPC_OP_LOSS, l1_infer, l1_forward, l1_grad, pw_cost,
           "torch l1_loss (x, target; attr reduction)"),
    PW_DEF("MseLossGrad", 3, POPC_OP_SPLIT, mseg_infer, mseg_forward, NULL,
           pwg_cost, "MseLoss gradient (dL, x, target)"),
    PW_DEF("L1LossGrad", 3, POPC_OP_SPLIT, l1g_infer, l1g_forward, NULL,
           pwg_cost, "L1Loss gradient (dL, x, target)"),
};

popc_status loss_register_pointwise(const popc_host *h, popc_registrar *r)
{
    popc_status st;

    for (size_t i = 0; i < sizeof pointwise_ops / sizeof pointwise_ops[0]; i++)
        if ((st = h->register_op(r, &pointwise_ops[i])) != POPC_OK)
            return st;
    return POPC_OK;
}
