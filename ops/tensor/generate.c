/* generate.c - ops whose output is made from shapes and constants:
** ConstantOfShape, Range, EyeLike, and Trilu (a masked copy). Shapes and
** limits must be known at compile time (popc fixes shapes, as PopTorch
** does); every dtype popc has. Only Trilu is differentiable (grads.c).
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "ops/util/elem.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#include "ops/tensor/tensorops.h"

/* ---- ConstantOfShape ------------------------------------------------------ */

static popc_status cos_infer(popc_infer_ctx *ic)
{
    const popc_attr *v = popc_attrs_find(ic->attrs, "value");
    int64_t dims[POPC_MAX_RANK];
    int n;
    popc_status st;

    if ((st = opu_const_ints("ConstantOfShape", ic->node_name,
                             &ic->inputs[0], "input (the shape)", dims,
                             POPC_MAX_RANK, &n)) != POPC_OK)
        return st;
    if (v && (!v->tensor || popc_view_numel(v->tensor) != 1))
        return opu_error(POPC_EINVAL, "ConstantOfShape",
                         ic->node_name, "attribute 'value' must be a "
                         "one-element tensor");
    ic->outputs[0].dtype = v ? v->tensor->dtype : POPC_DTYPE_F32;
    ic->outputs[0].rank = n;
    for (int d = 0; d < n; d++) {
        if (dims[d] < 0)
            return opu_error(POPC_EINVAL, "ConstantOfShape",
                             ic->node_name, "dimension %d is negative", d);
        ic->outputs[0].dims[d] = dims[d];
    }
    return POPC_OK;
}

static popc_status cos_forward(const popc_kernel_ctx *kc)
{
    const popc_attr *v = popc_attrs_find(kc->attrs, "value");
    const popc_view *o = &kc->outputs[0];
    size_t es = popc_dtype_size(o->dtype);
    int64_t s, e;

    opu_range(popc_view_numel(o), kc->part, kc->n_parts, &s, &e);
    for (int64_t i = s; i < e; i++) {
        if (v)
            memcpy((char *)o->data + (size_t)i * es, v->tensor->data, es);
        else
            ((float *)o->data)[i] = 0.0f;
    }
    return POPC_OK;
}

/* ---- Range ------------------------------------------------------------------ */

static popc_status range_count(const char *node,
                               const popc_view *in, int64_t *n)
{
    double start, limit, delta;

    for (int i = 0; i < 3; i++)
        if (!in[i].data || popc_view_numel(&in[i]) != 1)
            return opu_error(POPC_EINVAL, "Range", node,
                             "input %d must be a scalar known at compile "
                             "time (output shapes are static)", i);
    start = opu_load_f(&in[0], 0);
    limit = opu_load_f(&in[1], 0);
    delta = opu_load_f(&in[2], 0);
    if (delta == 0)
        return opu_error(POPC_EINVAL, "Range", node, "delta is 0");
    *n = (int64_t)fmax(ceil((limit - start) / delta), 0.0);
    return POPC_OK;
}

static popc_status range_infer(popc_infer_ctx *ic)
{
    int64_t n = 0;
    popc_status st;

    if ((st = range_count(ic->node_name, ic->inputs, &n)) !=
        POPC_OK)
        return st;
    ic->outputs[0].dtype = ic->inputs[0].dtype;
    ic->outputs[0].rank = 1;
    ic->outputs[0].dims[0] = n;
    return POPC_OK;
}

static popc_status range_forward(const popc_kernel_ctx *kc)
{
    const popc_view *o = &kc->outputs[0];
    int64_t s, e;

    opu_range(popc_view_numel(o), kc->part, kc->n_parts, &s, &e);
    for (int64_t i = s; i < e; i++) {
        if (popc_dtype_is_float(o->dtype))
            opu_store_f(o, i, opu_load_f(&kc->inputs[0], 0) +
                                  (double)i * opu_load_f(&kc->inputs[2], 0));
        else
            opu_store_i(o, i, opu_load_i(&kc->inputs[0], 0) +
                                  i * opu_load_i(&kc->inputs[2], 0));
    }
    return POPC_OK;
}

/* ---- EyeLike ------------------------------------------------------------------ */

static popc_status eye_infer(popc_infer_ctx *ic)
{
    const popc_attr *dt = popc_attrs_find(ic->attrs, "dtype");

    if (ic->inputs[0].rank != 2)
        return opu_error(POPC_EINVAL, "EyeLike", ic->node_name,
                         "input must be 2-D");
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    if (dt) {
        ic->outputs[0].dtype = opu_dtype_from_onnx(dt->i);
        if (ic->outputs[0].dtype == POPC_DTYPE_UNDEFINED)
            return opu_error(POPC_EUNSUPPORTED, "EyeLike",
                             ic->node_name, "dtype %lld is not supported",
                             (long long)dt->i);
    }
    return POPC_OK;
}

static popc_status eye_forward(const popc_kernel_ctx *kc)
{
    const popc_view *o = &kc->outputs[0];
    int64_t k = popc_attr_int(kc->attrs, "k", 0), cols = o->dims[1], s, e;

    opu_range(popc_view_numel(o), kc->part, kc->n_parts, &s, &e);
    for (int64_t i = s; i < e; i++)
        opu_store_i(o, i, i % cols - i / cols == k);
    return POPC_OK;
}

/* ---- Trilu ------------------------------------------------------------------- */

static popc_status trilu_k(const char *node,
                           const popc_view *in, int n_in, int64_t *k)
{
    int n;

    *k = 0;
    if (n_in < 2 || !opu_present(&in[1]))
        return POPC_OK;
    return opu_const_ints("Trilu", node, &in[1], "k (input 1)", k, 1, &n);
}

static popc_status trilu_infer(popc_infer_ctx *ic)
{
    int64_t k;
    popc_status st;

    if (ic->inputs[0].rank < 2)
        return opu_error(POPC_EINVAL, "Trilu", ic->node_name,
                         "input must have at least 2 dimensions");
    if ((st = trilu_k(ic->node_name, ic->inputs, ic->n_inputs,
                      &k)) != POPC_OK)
        return st;
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

static popc_status trilu_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *o = &kc->outputs[0];
    int upper = (int)popc_attr_int(kc->attrs, "upper", 1);
    int64_t k, rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
    size_t es = popc_dtype_size(x->dtype);
    int64_t s, e;
    popc_status st;

    if ((st = trilu_k(kc->node_name, kc->inputs, kc->n_inputs,
                      &k)) != POPC_OK)
        return st;
    opu_range(popc_view_numel(o), kc->part, kc->n_parts, &s, &e);
    for (int64_t i = s; i < e; i++) {
        int64_t c = i % cols, r = (i / cols) % rows;
        int keep = upper ? c - r >= k : c - r <= k;

        if (keep)
            memcpy((char *)o->data + (size_t)i * es,
                   (const char *)x->data + (size_t)i * es, es);
        else
            memset((char *)o->data + (size_t)i * es, 0, es);
    }
    return POPC_OK;
}

/* ---- window functions ---------------------------------------------------------- */

/* Generalised cosine windows: a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N),
** N = size (periodic, the default) or size - 1 (symmetric). */
static popc_status window_infer(popc_infer_ctx *ic, const char *op)
{
    const popc_attr *dt = popc_attrs_find(ic->attrs, "output_datatype");
    const popc_view *n = &ic->inputs[0];

    if (!n->data || popc_view_numel(n) != 1)
        return opu_error(POPC_EINVAL, op, ic->node_name, "size "
                         "must be a scalar known at compile time");
    ic->outputs[0].dtype = dt ? opu_dtype_from_onnx(dt->i) : POPC_DTYPE_F32;
    if (ic->outputs[0].dtype == POPC_DTYPE_UNDEFINED)
        return opu_error(POPC_EUNSUPPORTED, op, ic->node_name,
                         "output_datatype %lld is not supported",
                         (long long)dt->i);
    ic->outputs[0].rank = 1;
    ic->outputs[0].dims[0] = opu_load_i(n, 0) > 0 ? opu_load_i(n, 0) : 0;
    return POPC_OK;
}

static popc_status window_forward(const popc_kernel_ctx *kc, double a0,
                                  double a1, double a2)
{
    const popc_view *o = &kc->outputs[0];
    int64_t size = o->dims[0], s, e;
    double N = popc_attr_int(kc->attrs, "periodic", 1) ? (double)size
                                                       : (double)size - 1;

    opu_range(size, kc->part, kc->n_parts, &s, &e);
    for (int64_t i = s; i < e; i++) {
        double t = N > 0 ? 2.0 * M_PI * (double)i / N : 0;

        opu_store_f(o, i, a0 - a1 * cos(t) + a2 * cos(2 * t));
    }
    return POPC_OK;
}

static popc_status hann_infer(popc_infer_ctx *ic)
{
    return window_infer(ic, "HannWindow");
}

static popc_status hann_forward(const popc_kernel_ctx *kc)
{
    return window_forward(kc, 0.5, 0.5, 0);
}

static popc_status hamming_infer(popc_infer_ctx *ic)
{
    return window_infer(ic, "HammingWindow");
}

static popc_status hamming_forward(const popc_kernel_ctx *kc)
{
    return window_forward(kc, 25.0 / 46.0, 21.0 / 46.0, 0);
}

static popc_status blackman_infer(popc_infer_ctx *ic)
{
    return window_infer(ic, "BlackmanWindow");
}

static popc_status blackman_forward(const popc_kernel_ctx *kc)
{
    return window_forward(kc, 0.42, 0.5, 0.08);
}

const popc_op_def top_generate_ops[] = {
    OPU_DEF("ai.onnx", "HannWindow", 17, 1, 1, 1, 1, POPC_OP_SPLIT, hann,
            NULL, NULL, "Hann window of the given size (periodic)"),
    OPU_DEF("ai.onnx", "HammingWindow", 17, 1, 1, 1, 1, POPC_OP_SPLIT,
            hamming, NULL, NULL, "Hamming window (periodic)"),
    OPU_DEF("ai.onnx", "BlackmanWindow", 17, 1, 1, 1, 1, POPC_OP_SPLIT,
            blackman, NULL, NULL, "Blackman window (periodic)"),
    OPU_DEF("ai.onnx", "ConstantOfShape", 9, 1, 1, 1, 1, POPC_OP_SPLIT, cos,
            NULL, NULL, "a tensor of the given shape filled with 'value'"),
    OPU_DEF("ai.onnx", "Range", 11, 3, 3, 1, 1, POPC_OP_SPLIT, range, NULL,
            NULL, "start, start + delta, ... up to limit (static)"),
    OPU_DEF("ai.onnx", "EyeLike", 9, 1, 1, 1, 1, POPC_OP_SPLIT, eye, NULL,
            NULL, "ones on diagonal k, zeros elsewhere"),
    OPU_DEF("ai.onnx", "Trilu", 14, 1, 2, 1, 1, POPC_OP_SPLIT, trilu, top_trilu_grad,
            NULL, "upper or lower triangle (k)"),
};

const int top_generate_count =
    sizeof top_generate_ops / sizeof top_generate_ops[0];
