/* popc.c - the "popc" op plugin: PopTorch's own ops in domain "popc".
**
**   IdentityLoss            identity_loss(x, reduction): attr reduction
**                           0 sum, 1 mean, 2 none (or the strings); marks
**                           the loss. Grad: sum and none pass the incoming
**                           gradient broadcast to x, mean divides by numel
**                           (popc::IdentityLossGrad).
**   IpuPrintTensor          identity that logs the tensor at INFO (attrs
**                           title, print_gradient = 1, summarise_threshold
**                           = 1000, edge_items = 3, digits = 4); its
**                           gradient is printed as "<title>_gradient".
**   Nop                     identity never folded away.
**   RecomputationCheckpoint identity on any number of tensors.
**   CTCBeamSearchDecoder    poptorch.ctc_beam_search_decoder (ctc_beam.c).
**
** The identities accept every dtype and split their copies by bytes.
*/
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ops/util/oputil.h"
#include "ops/popc/popc_priv.h"

/* PopTorch's codes (the reduction argument of poptorch.identity_loss). */
enum { RED_SUM = 0, RED_MEAN = 1, RED_NONE = 2 };

static popc_status il_reduction(const char *op, const char *node,
                                const popc_attrs *attrs, int *out)
{
    const popc_attr *a = popc_attrs_find(attrs, "reduction");
    int64_t r = RED_MEAN;

    if (a && a->type == POPC_ATTR_STRING) {
        if (strcmp(a->s, "sum") == 0)
            r = RED_SUM;
        else if (strcmp(a->s, "mean") == 0)
            r = RED_MEAN;
        else if (strcmp(a->s, "none") == 0)
            r = RED_NONE;
        else
            r = -1;
    } else if (a) {
        r = popc_attr_int(attrs, "reduction", RED_MEAN);
    }
    if (r < RED_SUM || r > RED_NONE)
        return opu_error(POPC_EINVAL, op, node, "Unsupported reduction "
                         "type! Use 0 or \"sum\", 1 or \"mean\", 2 or "
                         "\"none\"");
    *out = (int)r;
    return POPC_OK;
}

/* ---- IdentityLoss -------------------------------------------------------- */

static popc_status il_infer(popc_infer_ctx *ic)
{
    int red;
    popc_status st;

    if ((st = opu_want_f32(ic, "IdentityLoss", 0, "input x")) != POPC_OK ||
        (st = il_reduction("IdentityLoss", ic->node_name, ic->attrs, &red)) !=
            POPC_OK)
        return st;
    if (red == RED_NONE)
        opu_set_like(&ic->outputs[0], &ic->inputs[0]);
    else
        opu_set(&ic->outputs[0], POPC_DTYPE_F32, NULL, 0);
    return POPC_OK;
}

static popc_status il_forward(const popc_kernel_ctx *kc)
{
    const float *x = kc->inputs[0].data;
    float *y = kc->outputs[0].data;
    int64_t n = popc_view_numel(&kc->inputs[0]);
    double s = 0.0;
    int red;
    popc_status st;

    if ((st = il_reduction("IdentityLoss", kc->node_name, kc->attrs, &red)) !=
        POPC_OK)
        return st;
    if (red == RED_NONE) {
        memcpy(y, x, sizeof *x * (size_t)n);
        return POPC_OK;
    }
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    y[0] = (float)(red == RED_MEAN ? s / (double)n : s);
    return POPC_OK;
}

static popc_status il_grad(popc_grad_ctx *gc)
{
    const popc_view *xi = &gc->input_info[0];
    popc_attr a[2];
    int red;
    popc_status st;

    if ((st = il_reduction("IdentityLoss", gc->node_name, gc->attrs, &red)) !=
        POPC_OK)
        return st;
    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if (red == RED_NONE) {
        gc->input_grads[0] = gc->output_grads[0];
        return POPC_OK;
    }
    a[0] = popc_attr_make_int("reduction", red);
    a[1] = popc_attr_make_ints("shape", xi->dims, xi->rank);
    return opu_grad_node(gc, "popc", "IdentityLossGrad", &gc->output_grads[0], 1,
                      a, 2, &gc->input_grads[0]);
}

/* ---- IdentityLossGrad: scalar dL -> dx of attr shape --------------------- */

static popc_status ilg_infer(popc_infer_ctx *ic)
{
    int64_t d[POPC_MAX_RANK];
    int64_t r = popc_attr_ints(ic->attrs, "shape", d, POPC_MAX_RANK);
    char s[OPU_DIMS_LEN];
    int red;
    popc_status st;

    if ((st = opu_want_f32(ic, "IdentityLossGrad", 0, "dL")) != POPC_OK ||
        (st = il_reduction("IdentityLossGrad", ic->node_name, ic->attrs,
                           &red)) != POPC_OK)
        return st;
    if (r < 0 || r > POPC_MAX_RANK || red == RED_NONE ||
        ic->inputs[0].rank != 0)
        return ic->host->set_error(POPC_EINVAL,
                                   "IdentityLossGrad '%s': needs a scalar dL "
                                   "(got %s), attribute shape and reduction "
                                   "sum or mean",
                                   ic->node_name, opu_dims(&ic->inputs[0], s));
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d, (int)r);
    return POPC_OK;
}

static popc_status ilg_forward(const popc_kernel_ctx *kc)
{
    const float *g = kc->inputs[0].data;
    float *dx = kc->outputs[0].data;
    int64_t n = popc_view_numel(&kc->outputs[0]), lo, hi;
    int red;
    float v;
    popc_status st;

    if ((st = il_reduction("IdentityLossGrad", kc->node_name, kc->attrs,
                           &red)) != POPC_OK)
        return st;
    v = red == RED_MEAN ? (float)((double)g[0] / (double)n) : g[0];
    opu_range(n, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        dx[i] = v;
    return POPC_OK;
}

/* ---- identities ---------------------------------------------------------- */

static popc_status id_infer(popc_infer_ctx *ic)
{
    if (ic->n_outputs != ic->n_inputs)
        return ic->host->set_error(POPC_EINVAL,
                                   "'%s': %d inputs but %d outputs; an "
                                   "identity needs one output per input",
                                   ic->node_name, ic->n_inputs, ic->n_outputs);
    for (int i = 0; i < ic->n_inputs; i++)
        opu_set_like(&ic->outputs[i], &ic->inputs[i]);
    return POPC_OK;
}

static popc_status id_forward(const popc_kernel_ctx *kc)
{
    opu_copy_share(kc);
    return POPC_OK;
}

static popc_status id_grad(popc_grad_ctx *gc)
{
    for (int i = 0; i < gc->n_inputs && i < gc->n_outputs; i++)
        gc->input_grads[i] = gc->output_grads[i];
    return POPC_OK;
}

static popc_status id_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    c->flops = 0;
    c->bytes = 0;
    for (int i = 0; i < ic->n_inputs; i++)
        c->bytes += 2.0 * (double)popc_view_nbytes(&ic->inputs[i]);
    c->temp_bytes = 0;
    return POPC_OK;
}

/* ---- IpuPrintTensor ------------------------------------------------------ */

typedef struct pbuf {
    char *s;
    size_t len, cap;
} pbuf;

static void put(pbuf *b, const char *fmt, ...) POPC_PRINTF(2, 3);

static void put(pbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->len + 1 >= b->cap)
        return;
    va_start(ap, fmt);
    n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        b->len += (size_t)n < b->cap - b->len ? (size_t)n : b->cap - b->len - 1;
}

static void put_elem(pbuf *b, const popc_view *v, int64_t i, int digits)
{
    const void *d = v->data;

    switch (v->dtype) {
    case POPC_DTYPE_F32:
        put(b, "%.*g", digits, ((const float *)d)[i]);
        break;
    case POPC_DTYPE_F16:
        put(b, "%.*g", digits, opu_h2f(((const uint16_t *)d)[i]));
        break;
    case POPC_DTYPE_I32:
        put(b, "%d", (int)((const int32_t *)d)[i]);
        break;
    case POPC_DTYPE_I64:
        put(b, "%lld", (long long)((const int64_t *)d)[i]);
        break;
    default:
        put(b, "%u", (unsigned)((const uint8_t *)d)[i]);
        break;
    }
}

/* numpy-like nesting; with summarise, only edge items of long dims. */
static void put_dim(pbuf *b, const popc_view *v, int dim, int64_t off,
                    int summarise, int64_t edge, int digits)
{
    int64_t n = v->dims[dim], stride = 1;

    for (int i = dim + 1; i < v->rank; i++)
        stride *= v->dims[i];
    put(b, "[");
    for (int64_t i = 0; i < n; i++) {
        if (summarise && n > 2 * edge && i == edge) {
            put(b, "..., ");
            i = n - edge - 1;
            continue;
        }
        if (dim + 1 == v->rank)
            put_elem(b, v, off + i, digits);
        else
            put_dim(b, v, dim + 1, off + i * stride, summarise, edge, digits);
        if (i + 1 < n)
            put(b, ", ");
    }
    put(b, "]");
}

static popc_status print_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0];
    const char *title = popc_attr_string(kc->attrs, "title", "");
    int64_t thr = popc_attr_int(kc->attrs, "summarise_threshold", 1000);
    int64_t edge = popc_attr_int(kc->attrs, "edge_items", 3);
    int digits = (int)popc_attr_int(kc->attrs, "digits", 4);
    char text[960], dims[OPU_DIMS_LEN];
    pbuf b = {text, 0, sizeof text};

    if (kc->part == 0) {
        text[0] = '\0';
        if (title[0])
            put(&b, "%s: ", title);
        put(&b, "%s%s ", popc_dtype_name(x->dtype), opu_dims(x, dims));
        if (x->rank == 0)
            put_elem(&b, x, 0, digits);
        else
            put_dim(&b, x, 0, 0, popc_view_numel(x) > thr, edge > 0 ? edge : 1,
                    digits);
        if (b.len + 1 >= b.cap)
            memcpy(text + sizeof text - 5, "...", 4);
        kc->host->log_msg(POPC_LOG_INFO, "%s", text);
    }
    opu_copy_share(kc);
    return POPC_OK;
}

static popc_status print_grad(popc_grad_ctx *gc)
{
    const char *title = popc_attr_string(gc->attrs, "title", "");
    char gtitle[256];
    popc_attr a;

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if (!popc_attr_int(gc->attrs, "print_gradient", 1)) {
        gc->input_grads[0] = gc->output_grads[0];
        return POPC_OK;
    }
    snprintf(gtitle, sizeof gtitle, "%s_gradient",
             title[0] ? title : gc->node_name);
    a = popc_attr_make_string("title", gtitle);
    return opu_grad_node(gc, "popc", "IpuPrintTensor", &gc->output_grads[0], 1, &a,
                      1, &gc->input_grads[0]);
}

static const popc_op_def popc_ops[] = {
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "IdentityLoss",
        .since_version = 1,
        .min_inputs = 1,
        .max_inputs = 1,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_LOSS,
        .infer = il_infer,
        .forward = il_forward,
        .grad = il_grad,
        .doc = "poptorch.identity_loss (reduction 0 sum, 1 mean, 2 none)",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "IdentityLossGrad",
        .since_version = 1,
        .min_inputs = 1,
        .max_inputs = 1,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = ilg_infer,
        .forward = ilg_forward,
        .doc = "IdentityLoss gradient: scalar broadcast to attr shape",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "IpuPrintTensor",
        .since_version = 1,
        .min_inputs = 1,
        .max_inputs = 1,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT | POPC_OP_NOFOLD,
        .infer = id_infer,
        .forward = print_forward,
        .grad = print_grad,
        .cost = id_cost,
        .doc = "identity that logs the tensor (attr title)",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "Nop",
        .since_version = 1,
        .min_inputs = 1,
        .max_inputs = 1,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT | POPC_OP_NOFOLD,
        .infer = id_infer,
        .forward = id_forward,
        .grad = id_grad,
        .cost = id_cost,
        .doc = "identity that is never folded or removed",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "RecomputationCheckpoint",
        .since_version = 1,
        .min_inputs = 1,
        .max_inputs = 64,
        .min_outputs = 1,
        .max_outputs = 64,
        .flags = POPC_OP_SPLIT,
        .infer = id_infer,
        .forward = id_forward,
        .grad = id_grad,
        .cost = id_cost,
        .doc = "identity marking values kept for the backward pass",
        .role = POPC_ROLE_CHECKPOINT,
    },
};

static popc_status popc_init(const popc_host *host, popc_registrar *reg)
{
    popc_status st;

    if ((st = opu_init(host, "popc")) != POPC_OK)
        return st;
    for (size_t i = 0; i < sizeof popc_ops / sizeof popc_ops[0]; i++)
        if ((st = host->register_op(reg, &popc_ops[i])) != POPC_OK)
            return st;
    if ((st = host->register_op(reg, &popc_ctc_beam_def)) != POPC_OK)
        return st;
    return POPC_OK;
}

POPC_PLUGIN_DEFINE(popc, "0.1.0",
                   "PopTorch ops: IdentityLoss, IpuPrintTensor, Nop, "
                   "RecomputationCheckpoint",
                   "MIT", popc_init, NULL)
