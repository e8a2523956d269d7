/* arrange.c - ops that rearrange or scan elements: Tile, DepthToSpace,
** SpaceToDepth, Pad (constant, reflect, edge), CumSum, Hardmax, TopK and
** ReverseSequence, for every dtype. Repeats, pads, axes and K must be
** known at compile time. Gather-style kernels write their own share of
** the output; the scans run as one part. Gradients: grads.c.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ops/util/elem.h"
#include "ops/tensor/tensorops.h"

static void copy_elem(const popc_view *o, int64_t i, const popc_view *x,
                      int64_t j)
{
    size_t es = popc_dtype_size(o->dtype);

    memcpy((char *)o->data + (size_t)i * es,
           (const char *)x->data + (size_t)j * es, es);
}

/* ---- Tile ------------------------------------------------------------------ */

static popc_status tile_reps(const char *node,
                             const popc_view *in, int64_t *reps)
{
    int n;
    popc_status st;

    if ((st = opu_const_ints("Tile", node, &in[1], "repeats (input 1)",
                             reps, POPC_MAX_RANK, &n)) != POPC_OK)
        return st;
    if (n != in[0].rank)
        return opu_error(POPC_EINVAL, "Tile", node, "repeats has %d "
                         "values for an input of rank %d", n, in[0].rank);
    return POPC_OK;
}

static popc_status tile_infer(popc_infer_ctx *ic)
{
    int64_t reps[POPC_MAX_RANK];
    popc_status st;

    if ((st = tile_reps(ic->node_name, ic->inputs, reps)) !=
        POPC_OK)
        return st;
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    for (int d = 0; d < ic->inputs[0].rank; d++)
        ic->outputs[0].dims[d] *= reps[d];
    return POPC_OK;
}

static popc_status tile_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *o = &kc->outputs[0];
    int64_t xs[POPC_MAX_RANK], s, e;

    opu_strides(x, xs);
    opu_range(popc_view_numel(o), kc->part, kc->n_parts, &s, &e);
    for (int64_t i = s; i < e; i++) {
        int64_t rem = i, j = 0;

        for (int d = o->rank - 1; d >= 0; d--) {
            j += (rem % o->dims[d]) % x->dims[d] * xs[d];
            rem /= o->dims[d];
        }
        copy_elem(o, i, x, j);
    }
    return POPC_OK;
}

/* ---- DepthToSpace / SpaceToDepth ------------------------------------------- */

static popc_status d2s_check(popc_infer_ctx *ic, const char *op, int64_t *b)
{
    const popc_view *x = &ic->inputs[0];

    *b = popc_attr_int(ic->attrs, "blocksize", 0);
    if (x->rank != 4 || *b < 1)
        return opu_error(POPC_EINVAL, op, ic->node_name,
                         "input must be [N, C, H, W] and blocksize >= 1");
    return POPC_OK;
}

static popc_status depth_to_space_infer(popc_infer_ctx *ic)
{
    int64_t b;
    popc_status st;

    if ((st = d2s_check(ic, "DepthToSpace", &b)) != POPC_OK)
        return st;
    if (ic->inputs[0].dims[1] % (b * b))
        return opu_error(POPC_EINVAL, "DepthToSpace",
                         ic->node_name, "channels must divide by "
                         "blocksize^2");
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    ic->outputs[0].dims[1] /= b * b;
    ic->outputs[0].dims[2] *= b;
    ic->outputs[0].dims[3] *= b;
    return POPC_OK;
}

static popc_status depth_to_space_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *o = &kc->outputs[0];
    const popc_attr *m = popc_attrs_find(kc->attrs, "mode");
    int crd = m && m->s && !strcmp(m->s, "CRD");
    int64_t b = popc_attr_int(kc->attrs, "blocksize", 1);
    int64_t C = o->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t oh = o->dims[2], ow = o->dims[3], s, e;

    opu_range(popc_view_numel(o), kc->part, kc->n_parts, &s, &e);
    for (int64_t i = s; i < e; i++) {
        int64_t w = i % ow, h = (i / ow) % oh, c = (i / ow / oh) % C;
        int64_t n = i / ow / oh / C;
        int64_t bh = h % b, bw = w % b, ic = crd ? (c * b + bh) * b + bw
                                                 : (bh * b + bw) * C + c;

        copy_elem(o, i, x, ((n * C * b * b + ic) * H + h / b) * W + w / b);
    }
    return POPC_OK;
}

static popc_status space_to_depth_infer(popc_infer_ctx *ic)
{
    int64_t b;
    popc_status st;

    if ((st = d2s_check(ic, "SpaceToDepth", &b)) != POPC_OK)
        return st;
    if (ic->inputs[0].dims[2] % b || ic->inputs[0].dims[3] % b)
        return opu_error(POPC_EINVAL, "SpaceToDepth",
                         ic->node_name, "height and width must divide by "
                         "blocksize");
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    ic->outputs[0].dims[1] *= b * b;
    ic->outputs[0].dims[2] /= b;
    ic->outputs[0].dims[3] /= b;
    return POPC_OK;
}

static popc_status space_to_depth_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *o = &kc->outputs[0];
    int64_t b = popc_attr_int(kc->attrs, "blocksize", 1);
    int64_t C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t oc = o->dims[1], oh = o->dims[2], ow = o->dims[3], s, e;

    opu_range(popc_view_numel(o), kc->part, kc->n_parts, &s, &e);
    for (int64_t i = s; i < e; i++) {
        int64_t w = i % ow, h = (i / ow) % oh, c = (i / ow / oh) % oc;
        int64_t n = i / ow / oh / oc;
        int64_t blk = c / C, cc = c % C, bh = blk / b, bw = blk % b;

        copy_elem(o, i, x, ((n * C + cc) * H + h * b + bh) * W + w * b + bw);
    }
    return POPC_OK;
}

/* ---- Pad ---------------------------------------------------------------------- */

static popc_status pad_pads(const char *node,
                            const popc_view *in, int n_in, int64_t *pads)
{
    int n;
    popc_status st;

    if ((st = opu_const_ints("Pad", node, &in[1], "pads (input 1)", pads,
                             2 * POPC_MAX_RANK, &n)) != POPC_OK)
        return st;
    if (n != 2 * in[0].rank)
        return opu_error(POPC_EINVAL, "Pad", node, "pads has %d values; "
                         "an input of rank %d needs %d", n, in[0].rank,
                         2 * in[0].rank);
    if (n_in > 2 && opu_present(&in[2]) && !in[2].data)
        return opu_error(POPC_EINVAL, "Pad", node, "constant_value must "
                         "be known at compile time");
    return POPC_OK;
}

static popc_status pad_infer(popc_infer_ctx *ic)
{
    int64_t pads[2 * POPC_MAX_RANK];
    const popc_view *x = &ic->inputs[0];
    popc_status st;

    if ((st = pad_pads(ic->node_name, ic->inputs, ic->n_inputs,
                       pads)) != POPC_OK)
        return st;
    ic->outputs[0] = *x;
    ic->outputs[0].data = NULL;
    for (int d = 0; d < x->rank; d++) {
        ic->outputs[0].dims[d] += pads[d] + pads[d + x->rank];
        if (ic->outputs[0].dims[d] < 0)
            return opu_error(POPC_EINVAL, "Pad", ic->node_name,
                             "pads make dimension %d negative", d);
    }
    return POPC_OK;
}

/* Map an out-of-range coordinate into [0, n) by the mode; -1: constant. */
static int64_t pad_src(int64_t c, int64_t n, int mode)
{
    if (c >= 0 && c < n)
        return c;
    if (mode == 0 || n == 0)
        return -1;
    if (mode == 2)
        return c < 0 ? 0 : n - 1;
    if (n == 1)
        return 0;
    while (c < 0 || c >= n)
        c = c < 0 ? -c : 2 * (n - 1) - c;
    return c;
}

static popc_status pad_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *o = &kc->outputs[0];
    const popc_attr *m = popc_attrs_find(kc->attrs, "mode");
    int mode = !m || !m->s || !strcmp(m->s, "constant") ? 0
               : !strcmp(m->s, "reflect")               ? 1
                                                        : 2;
    int64_t pads[2 * POPC_MAX_RANK], xs[POPC_MAX_RANK], s, e;
    double cv = 0;
    popc_status st;

    if ((st = pad_pads(kc->node_name, kc->inputs, kc->n_inputs,
                       pads)) != POPC_OK)
        return st;
    if (kc->n_inputs > 2 && opu_present(&kc->inputs[2]))
        cv = opu_load_f(&kc->inputs[2], 0);
    opu_strides(x, xs);
    opu_range(popc_view_numel(o), kc->part, kc->n_parts, &s, &e);
    for (int64_t i = s; i < e; i++) {
        int64_t rem = i, j = 0;
        int inside = 1;

        for (int d = o->rank - 1; d >= 0; d--) {
            int64_t c = pad_src(rem % o->dims[d] - pads[d], x->dims[d], mode);

            rem /= o->dims[d];
            if (c < 0)
                inside = 0;
            else
                j += c * xs[d];
        }
        if (inside)
            copy_elem(o, i, x, j);
        else if (popc_dtype_is_float(o->dtype))
            opu_store_f(o, i, cv);
        else
            opu_store_i(o, i, opu_sat_i64(cv));
    }
    return POPC_OK;
}

/* PadGrad(dY, X, pads) -> dX for the reflect and edge modes: each output
** adds its gradient to the input element it copied (one part: mirrored
** and edge elements receive several). */
static popc_status pad_grad_infer(popc_infer_ctx *ic)
{
    if (!popc_dtype_is_float(ic->inputs[0].dtype) ||
        ic->inputs[0].dtype != ic->inputs[1].dtype)
        return opu_error(POPC_EINVAL, "PadGrad", ic->node_name,
                         "dY and X must share a floating-point dtype");
    ic->outputs[0] = ic->inputs[1];
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

static popc_status pad_grad_forward(const popc_kernel_ctx *kc)
{
    const popc_view *dy = &kc->inputs[0], *x = &kc->inputs[1];
    const char *m = popc_attr_string(kc->attrs, "mode", "constant");
    int mode = !strcmp(m, "constant") ? 0 : !strcmp(m, "reflect") ? 1 : 2;
    int64_t pads[2 * POPC_MAX_RANK], xs[POPC_MAX_RANK], n = popc_view_numel(x);
    double *acc;
    popc_status st;

    if ((st = pad_pads(kc->node_name, kc->inputs + 1,
                       kc->n_inputs - 1, pads)) != POPC_OK)
        return st;
    if (!(acc = kc->host->alloc(sizeof(double) * (size_t)(n + 1))))
        return opu_error(POPC_ENOMEM, "PadGrad", kc->node_name,
                         "out of memory");
    opu_strides(x, xs);
    for (int64_t i = 0; i < popc_view_numel(dy); i++) {
        int64_t rem = i, j = 0;
        int inside = 1;

        for (int d = dy->rank - 1; d >= 0; d--) {
            int64_t c = pad_src(rem % dy->dims[d] - pads[d], x->dims[d], mode);

            rem /= dy->dims[d];
            if (c < 0)
                inside = 0;
            else
                j += c * xs[d];
        }
        if (inside)
            acc[j] += opu_load_f(dy, i);
    }
    for (int64_t j = 0; j < n; j++)
        opu_store_f(&kc->outputs[0], j, acc[j]);
    kc->host->free(acc);
    return POPC_OK;
}

/* ---- CumSum --------------------------------------------------------------------- */

static popc_status cumsum_axis(const char *node,
                               const popc_view *in, int *axis)
{
    int64_t a;
    int n;
    popc_status st;

    if ((st = opu_const_ints("CumSum", node, &in[1], "axis (input 1)", &a,
                             1, &n)) != POPC_OK)
        return st;
    return opu_axis("CumSum", node, a, in[0].rank, "axis", axis);
}

static popc_status cumsum_infer(popc_infer_ctx *ic)
{
    int axis;
    popc_status st;

    if ((st = cumsum_axis(ic->node_name, ic->inputs, &axis)) !=
        POPC_OK)
        return st;
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

static popc_status cumsum_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *o = &kc->outputs[0];
    int excl = (int)popc_attr_int(kc->attrs, "exclusive", 0);
    int rev = (int)popc_attr_int(kc->attrs, "reverse", 0);
    int64_t dim, inner = 1, outer;
    int axis, fl = popc_dtype_is_float(x->dtype);
    popc_status st;

    if ((st = cumsum_axis(kc->node_name, kc->inputs, &axis)) !=
        POPC_OK)
        return st;
    dim = x->dims[axis];
    for (int d = axis + 1; d < x->rank; d++)
        inner *= x->dims[d];
    outer = dim ? popc_view_numel(x) / (dim * inner) : 0;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t b = 0; b < inner; b++) {
            double fs = 0;
            int64_t is = 0;

            for (int64_t k = 0; k < dim; k++) {
                int64_t kk = rev ? dim - 1 - k : k;
                int64_t at = (a * dim + kk) * inner + b;

                if (!excl) {
                    fs += fl ? opu_load_f(x, at) : 0;
                    is += fl ? 0 : opu_load_i(x, at);
                }
                if (fl)
                    opu_store_f(o, at, fs);
                else
                    opu_store_i(o, at, is);
                if (excl) {
                    fs += fl ? opu_load_f(x, at) : 0;
                    is += fl ? 0 : opu_load_i(x, at);
                }
            }
        }
    return POPC_OK;
}

/* ---- Hardmax ------------------------------------------------------------------ */

static popc_status hardmax_infer(popc_infer_ctx *ic)
{
    int axis;
    popc_status st;

    if ((st = opu_axis("Hardmax", ic->node_name,
                       popc_attr_int(ic->attrs, "axis", -1),
                       ic->inputs[0].rank, "axis", &axis)) != POPC_OK)
        return st;
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

static popc_status hardmax_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *o = &kc->outputs[0];
    int64_t dim, inner = 1, outer;
    int axis;
    popc_status st;

    if ((st = opu_axis("Hardmax", kc->node_name,
                       popc_attr_int(kc->attrs, "axis", -1), x->rank, "axis",
                       &axis)) != POPC_OK)
        return st;
    dim = x->dims[axis];
    for (int d = axis + 1; d < x->rank; d++)
        inner *= x->dims[d];
    outer = dim ? popc_view_numel(x) / (dim * inner) : 0;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t b = 0; b < inner; b++) {
            int64_t best = 0;

            for (int64_t k = 1; k < dim; k++)
                if (opu_load_f(x, (a * dim + k) * inner + b) >
                    opu_load_f(x, (a * dim + best) * inner + b))
                    best = k;
            for (int64_t k = 0; k < dim; k++)
                opu_store_f(o, (a * dim + k) * inner + b, k == best);
        }
    return POPC_OK;
}

/* ---- TopK -------------------------------------------------------------------------- */

static popc_status topk_k(const char *node,
                          const popc_view *in, int64_t *k)
{
    int n;

    return opu_const_ints("TopK", node, &in[1], "K (input 1)", k, 1, &n);
}

static popc_status topk_infer(popc_infer_ctx *ic)
{
    int64_t k;
    int axis;
    popc_status st;

    if ((st = topk_k(ic->node_name, ic->inputs, &k)) !=
            POPC_OK ||
        (st = opu_axis("TopK", ic->node_name,
                       popc_attr_int(ic->attrs, "axis", -1),
                       ic->inputs[0].rank, "axis", &axis)) != POPC_OK)
        return st;
    if (k < 0 || k > ic->inputs[0].dims[axis])
        return opu_error(POPC_EINVAL, "TopK", ic->node_name,
                         "K = %lld is outside [0, %lld]", (long long)k,
                         (long long)ic->inputs[0].dims[axis]);
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    ic->outputs[0].dims[axis] = k;
    if (ic->n_outputs > 1) {
        ic->outputs[1] = ic->outputs[0];
        ic->outputs[1].dtype = POPC_DTYPE_I64;
    }
    return POPC_OK;
}

typedef struct topk_item {
    double v;
    int64_t i;
} topk_item;

static int by_largest(const void *a, const void *b)
{
    const topk_item *x = a, *y = b;

    if (x->v != y->v)
        return x->v > y->v ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static int by_smallest(const void *a, const void *b)
{
    const topk_item *x = a, *y = b;

    if (x->v != y->v)
        return x->v < y->v ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static popc_status topk_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0];
    int largest = (int)popc_attr_int(kc->attrs, "largest", 1);
    int64_t k, dim, inner = 1, outer;
    int axis;
    topk_item *items;
    popc_status st;

    if ((st = topk_k(kc->node_name, kc->inputs, &k)) !=
            POPC_OK ||
        (st = opu_axis("TopK", kc->node_name,
                       popc_attr_int(kc->attrs, "axis", -1), x->rank, "axis",
                       &axis)) != POPC_OK)
        return st;
    dim = x->dims[axis];
    for (int d = axis + 1; d < x->rank; d++)
        inner *= x->dims[d];
    outer = dim ? popc_view_numel(x) / (dim * inner) : 0;
    if (!(items = kc->host->alloc((size_t)(dim + 1) * sizeof *items)))
        return opu_error(POPC_ENOMEM, "TopK", kc->node_name,
                         "out of memory");
    for (int64_t a = 0; a < outer; a++)
        for (int64_t b = 0; b < inner; b++) {
            for (int64_t j = 0; j < dim; j++) {
                items[j].v = opu_load_f(x, (a * dim + j) * inner + b);
                items[j].i = j;
            }
            qsort(items, (size_t)dim, sizeof *items,
                  largest ? by_largest : by_smallest);
            for (int64_t j = 0; j < k; j++) {
                int64_t at = (a * k + j) * inner + b;

                copy_elem(&kc->outputs[0], at, x,
                          (a * dim + items[j].i) * inner + b);
                if (kc->n_outputs > 1)
                    ((int64_t *)kc->outputs[1].data)[at] = items[j].i;
            }
        }
    kc->host->free(items);
    return POPC_OK;
}

/* ---- ReverseSequence ----------------------------------------------------------- */

static popc_status reverse_sequence_infer(popc_infer_ctx *ic)
{
    if (ic->inputs[0].rank < 2 || ic->inputs[1].rank != 1)
        return opu_error(POPC_EINVAL, "ReverseSequence",
                         ic->node_name, "input must have rank >= 2 and "
                         "sequence_lens rank 1");
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

static popc_status reverse_sequence_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *o = &kc->outputs[0];
    int bax = (int)popc_attr_int(kc->attrs, "batch_axis", 1);
    int tax = (int)popc_attr_int(kc->attrs, "time_axis", 0);
    int64_t xs[POPC_MAX_RANK], s, e;

    opu_strides(x, xs);
    opu_range(popc_view_numel(o), kc->part, kc->n_parts, &s, &e);
    for (int64_t i = s; i < e; i++) {
        int64_t b = (i / xs[bax]) % x->dims[bax];
        int64_t t = (i / xs[tax]) % x->dims[tax];
        int64_t len = opu_load_i(&kc->inputs[1], b);
        int64_t j = i;

        if (t < len)
            j = i + (len - 1 - 2 * t) * xs[tax];
        copy_elem(o, i, x, j);
    }
    return POPC_OK;
}

const popc_op_def top_arrange_ops[] = {
    OPU_DEF("ai.onnx", "Tile", 13, 2, 2, 1, 1, POPC_OP_SPLIT, tile, top_tile_grad,
            NULL, "repeat the input along each axis"),
    OPU_DEF("ai.onnx", "DepthToSpace", 13, 1, 1, 1, 1, POPC_OP_SPLIT,
            depth_to_space, top_depth_to_space_grad, NULL, "channels to blocks (DCR or CRD)"),
    OPU_DEF("ai.onnx", "SpaceToDepth", 13, 1, 1, 1, 1, POPC_OP_SPLIT,
            space_to_depth, top_space_to_depth_grad, NULL, "blocks to channels"),
    OPU_DEF("ai.onnx", "Pad", 13, 2, 3, 1, 1, POPC_OP_SPLIT, pad, top_pad_grad, NULL,
            "pad with a constant, reflection or the edge"),
    OPU_DEF("popc", "PadGrad", 1, 3, 3, 1, 1, 0, pad_grad, NULL, NULL,
            "(dY, X, pads) -> dX of Pad's reflect and edge modes"),
    OPU_DEF("ai.onnx", "CumSum", 14, 2, 2, 1, 1, 0, cumsum, top_cumsum_grad, NULL,
            "running sum along axis (exclusive, reverse)"),
    OPU_DEF("ai.onnx", "Hardmax", 13, 1, 1, 1, 1, 0, hardmax, top_hardmax_grad, NULL,
            "1 at the first maximum along axis"),
    OPU_DEF("ai.onnx", "TopK", 11, 2, 2, 1, 2, 0, topk, top_topk_grad, NULL,
            "the K largest or smallest along axis, with indices"),
    OPU_DEF("ai.onnx", "ReverseSequence", 10, 2, 2, 1, 1, POPC_OP_SPLIT,
            reverse_sequence, top_reverse_sequence_grad, NULL,
            "reverse each batch entry's first sequence_lens steps"),
};

const int top_arrange_count =
    sizeof top_arrange_ops / sizeof top_arrange_ops[0];
