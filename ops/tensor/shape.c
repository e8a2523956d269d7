/* shape.c - ops that only change the shape: Reshape, Flatten, Squeeze,
** Unsqueeze, Expand and Shape.
**
** Target shapes and axes come from inputs that must be known at compile
** time (an initializer or a constant), since popc compiles static shapes.
** Squeeze/Unsqueeze also accept the pre-opset-13 "axes" attribute.
*/
#include "config.h"

#include <string.h>

#include "ops/tensor/tensorops.h"

void top_copy_share(const popc_kernel_ctx *kc, const popc_view *in,
                    const popc_view *out)
{
    size_t es = popc_dtype_size(out->dtype);
    int64_t s, e;

    opu_range(popc_view_numel(out), kc->part, kc->n_parts, &s, &e);
    if (e > s && in->data != out->data)
        memcpy((char *)out->data + (size_t)s * es,
               (const char *)in->data + (size_t)s * es, (size_t)(e - s) * es);
}

static popc_status copy_forward(const popc_kernel_ctx *kc)
{
    top_copy_share(kc, &kc->inputs[0], &kc->outputs[0]);
    return POPC_OK;
}

#define BCAST_RUN(T)                                                        \
    do {                                                                    \
        T *o = (T *)out->data + it.out_off;                                 \
        const T *x = (const T *)in->data + it.in_off[0];                    \
        if (b.inner[0])                                                     \
            memcpy(o, x, (size_t)it.n * sizeof *o);                         \
        else                                                                \
            for (int64_t i = 0; i < it.n; i++)                             \
                o[i] = x[0];                                                \
    } while (0)

/* in broadcast to out over this part's share (Expand) */
static void broadcast_copy(const popc_kernel_ctx *kc, const popc_view *in,
                           const popc_view *out)
{
    opu_bcast b;
    opu_bcast_iter it;
    int64_t s, e;

    opu_bcast_init(&b, out, in, 1);
    opu_range(popc_view_numel(out), kc->part, kc->n_parts, &s, &e);
    opu_bcast_begin(&it, &b, s, e);
    while (opu_bcast_next(&it)) {
        switch (popc_dtype_size(out->dtype)) {
        case 1: BCAST_RUN(uint8_t); break;
        case 2: BCAST_RUN(uint16_t); break;
        case 4: BCAST_RUN(uint32_t); break;
        default: BCAST_RUN(uint64_t); break;
        }
    }
}

/* Gradient of every pure reshape: reshape dY back to the input's shape. */
static popc_status reshape_back_grad(popc_grad_ctx *gc)
{
    if (gc->output_grads[0] < 0)
        return POPC_OK;
    return opu_grad_reshape(gc, gc->output_grads[0], &gc->input_info[0],
                            &gc->input_grads[0]);
}

/* ---- Reshape -------------------------------------------------------------- */

static popc_status reshape_infer(popc_infer_ctx *ic)
{
    const popc_view *x = &ic->inputs[0];
    popc_view *o = &ic->outputs[0];
    int allowzero = (int)popc_attr_int(ic->attrs, "allowzero", 0);
    int64_t shape[POPC_MAX_RANK], known = 1, total;
    int n, infer_at = -1, has_zero = 0;
    char a[160], b[160];
    popc_status st;

    if ((st = opu_need_dtype(ic, "Reshape")) != POPC_OK)
        return st;
    if ((st = opu_const_ints("Reshape", ic->node_name,
                             ic->n_inputs > 1 ? &ic->inputs[1] : NULL,
                             "the target shape (input 1)", shape,
                             POPC_MAX_RANK, &n)) != POPC_OK)
        return st;
    total = popc_view_numel(x);
    for (int i = 0; i < n; i++) {
        if (shape[i] == -1) {
            if (infer_at >= 0)
                return opu_error(POPC_EINVAL, "Reshape",
                                 ic->node_name,
                                 "target shape %s has more than one -1",
                                 opu_dims_str(shape, n, a, sizeof a));
            infer_at = i;
            continue;
        }
        if (shape[i] < -1)
            return opu_error(POPC_EINVAL, "Reshape", ic->node_name,
                             "target shape %s has a negative dimension",
                             opu_dims_str(shape, n, a, sizeof a));
        if (shape[i] == 0 && !allowzero) {
            if (i >= x->rank)
                return opu_error(POPC_EINVAL, "Reshape",
                                 ic->node_name,
                                 "target dimension %d is 0 (copy the input "
                                 "dimension) but the input %s has rank %d",
                                 i, opu_shape_str(x, a, sizeof a), x->rank);
            o->dims[i] = x->dims[i];
        } else {
            o->dims[i] = shape[i];
        }
        has_zero |= shape[i] == 0;
        known *= o->dims[i];
    }
    if (allowzero && has_zero && infer_at >= 0)
        return opu_error(POPC_EINVAL, "Reshape", ic->node_name,
                         "with allowzero=1 the target shape %s may not "
                         "hold both 0 and -1",
                         opu_dims_str(shape, n, a, sizeof a));
    if (infer_at >= 0) {
        if (known == 0 || total % known != 0)
            return opu_error(POPC_EINVAL, "Reshape", ic->node_name,
                             "cannot reshape input of shape %s (%lld "
                             "elements) to %s: the -1 dimension has no "
                             "whole size", opu_shape_str(x, a, sizeof a),
                             (long long)total,
                             opu_dims_str(shape, n, b, sizeof b));
        o->dims[infer_at] = total / known;
        known *= o->dims[infer_at];
    }
    if (known != total)
        return opu_error(POPC_EINVAL, "Reshape", ic->node_name,
                         "cannot reshape input of shape %s (%lld elements) "
                         "to %s (%lld elements)",
                         opu_shape_str(x, a, sizeof a), (long long)total,
                         opu_dims_str(shape, n, b, sizeof b),
                         (long long)known);
    o->rank = n;
    o->dtype = x->dtype;
    return POPC_OK;
}

/* ---- Flatten ------------------------------------------------------------ */

static popc_status flatten_infer(popc_infer_ctx *ic)
{
    const popc_view *x = &ic->inputs[0];
    int64_t axis = popc_attr_int(ic->attrs, "axis", 1);
    popc_view *o = &ic->outputs[0];
    popc_status st;

    if ((st = opu_need_dtype(ic, "Flatten")) != POPC_OK)
        return st;
    if (axis < -(int64_t)x->rank || axis > x->rank)
        return opu_error(POPC_EINVAL, "Flatten", ic->node_name,
                         "axis %lld is out of range for a rank-%d input; use "
                         "a value in [%d, %d]", (long long)axis, x->rank,
                         -x->rank, x->rank);
    if (axis < 0)
        axis += x->rank;
    o->dtype = x->dtype;
    o->rank = 2;
    o->dims[0] = 1;
    o->dims[1] = 1;
    for (int i = 0; i < x->rank; i++)
        o->dims[i < axis ? 0 : 1] *= x->dims[i];
    return POPC_OK;
}

/* ---- Squeeze / Unsqueeze ---------------------------------------------------- */

/* axes from input 1 (opset 13) or the "axes" attribute (older opsets);
** *n = -1 when neither is given. */
static popc_status read_axes(const popc_infer_ctx *ic, const char *op,
                             int64_t *axes, int cap, int *n)
{
    *n = -1;
    if (ic->n_inputs > 1 && opu_present(&ic->inputs[1]))
        return opu_const_ints(op, ic->node_name, &ic->inputs[1],
                              "axes (input 1)", axes, cap, n);
    *n = (int)popc_attr_ints(ic->attrs, "axes", axes, cap);
    if (*n > cap)
        return opu_error(POPC_EINVAL, op, ic->node_name,
                         "%d axes given; at most %d are supported", *n, cap);
    return POPC_OK;
}

static popc_status squeeze_infer(popc_infer_ctx *ic)
{
    const popc_view *x = &ic->inputs[0];
    popc_view *o = &ic->outputs[0];
    int64_t axes[POPC_MAX_RANK];
    uint8_t drop[POPC_MAX_RANK] = {0};
    int n;
    char a[160];
    popc_status st;

    if ((st = opu_need_dtype(ic, "Squeeze")) != POPC_OK)
        return st;
    if ((st = read_axes(ic, "Squeeze", axes, POPC_MAX_RANK, &n)) != POPC_OK)
        return st;
    for (int i = 0; i < n; i++) {
        int ax;

        if ((st = opu_axis("Squeeze", ic->node_name, axes[i],
                           x->rank, "axis", &ax)) != POPC_OK)
            return st;
        if (x->dims[ax] != 1)
            return opu_error(POPC_EINVAL, "Squeeze", ic->node_name,
                             "axis %d has size %lld, not 1 (input shape %s)",
                             ax, (long long)x->dims[ax],
                             opu_shape_str(x, a, sizeof a));
        drop[ax] = 1;
    }
    o->dtype = x->dtype;
    o->rank = 0;
    for (int d = 0; d < x->rank; d++)
        if (!(n < 0 ? x->dims[d] == 1 : drop[d]))
            o->dims[o->rank++] = x->dims[d];
    return POPC_OK;
}

static popc_status unsqueeze_infer(popc_infer_ctx *ic)
{
    const popc_view *x = &ic->inputs[0];
    popc_view *o = &ic->outputs[0];
    int64_t axes[POPC_MAX_RANK];
    uint8_t ins[POPC_MAX_RANK] = {0};
    int n, rank, k = 0;
    popc_status st;

    if ((st = opu_need_dtype(ic, "Unsqueeze")) != POPC_OK)
        return st;
    if ((st = read_axes(ic, "Unsqueeze", axes, POPC_MAX_RANK, &n)) !=
        POPC_OK)
        return st;
    if (n < 0)
        return opu_error(POPC_EINVAL, "Unsqueeze", ic->node_name,
                         "axes (input 1) is required");
    rank = x->rank + n;
    if (rank > POPC_MAX_RANK)
        return opu_error(POPC_EINVAL, "Unsqueeze", ic->node_name,
                         "the result would have rank %d; at most %d is "
                         "supported", rank, POPC_MAX_RANK);
    for (int i = 0; i < n; i++) {
        int ax;

        if ((st = opu_axis("Unsqueeze", ic->node_name, axes[i],
                           rank, "axis", &ax)) != POPC_OK)
            return st;
        if (ins[ax])
            return opu_error(POPC_EINVAL, "Unsqueeze",
                             ic->node_name, "axis %d is given twice", ax);
        ins[ax] = 1;
    }
    o->dtype = x->dtype;
    o->rank = rank;
    for (int d = 0; d < rank; d++)
        o->dims[d] = ins[d] ? 1 : x->dims[k++];
    return POPC_OK;
}

/* ---- Expand ----------------------------------------------------------------- */

static popc_status expand_infer(popc_infer_ctx *ic)
{
    popc_view pair[2];
    int n;
    popc_status st;

    if ((st = opu_need_dtype(ic, "Expand")) != POPC_OK)
        return st;
    memset(&pair[1], 0, sizeof pair[1]);
    if ((st = opu_const_ints("Expand", ic->node_name,
                             ic->n_inputs > 1 ? &ic->inputs[1] : NULL,
                             "the shape (input 1)", pair[1].dims,
                             POPC_MAX_RANK, &n)) != POPC_OK)
        return st;
    pair[0] = ic->inputs[0];
    pair[1].rank = n;
    for (int i = 0; i < n; i++)
        if (pair[1].dims[i] < 0)
            return opu_error(POPC_EINVAL, "Expand", ic->node_name,
                             "shape has a negative dimension %lld",
                             (long long)pair[1].dims[i]);
    if ((st = opu_broadcast("Expand", ic->node_name, pair, 2,
                            &ic->outputs[0])) != POPC_OK)
        return st;
    ic->outputs[0].dtype = ic->inputs[0].dtype;
    return POPC_OK;
}

static popc_status expand_forward(const popc_kernel_ctx *kc)
{
    broadcast_copy(kc, &kc->inputs[0], &kc->outputs[0]);
    return POPC_OK;
}

static popc_status expand_grad(popc_grad_ctx *gc)
{
    if (gc->output_grads[0] < 0)
        return POPC_OK;
    return opu_grad_sum_to(gc, gc->output_grads[0], &gc->input_info[0],
                           &gc->input_grads[0]);
}

/* ---- Shape ------------------------------------------------------------------ */

static void shape_range(const popc_view *x, const popc_attrs *a, int *s,
                        int *e)
{
    int64_t start = popc_attr_int(a, "start", 0);
    int64_t end = popc_attr_int(a, "end", x->rank);

    if (start < 0)
        start += x->rank;
    if (end < 0)
        end += x->rank;
    start = start < 0 ? 0 : start > x->rank ? x->rank : start;
    end = end < 0 ? 0 : end > x->rank ? x->rank : end;
    *s = (int)start;
    *e = (int)(end < start ? start : end);
}

static popc_status shape_infer(popc_infer_ctx *ic)
{
    int s, e;
    popc_status st;

    if ((st = opu_need_dtype(ic, "Shape")) != POPC_OK)
        return st;
    shape_range(&ic->inputs[0], ic->attrs, &s, &e);
    memset(&ic->outputs[0], 0, sizeof ic->outputs[0]);
    ic->outputs[0].dtype = POPC_DTYPE_I64;
    ic->outputs[0].rank = 1;
    ic->outputs[0].dims[0] = e - s;
    return POPC_OK;
}

static popc_status shape_forward(const popc_kernel_ctx *kc)
{
    int s, e;

    shape_range(&kc->inputs[0], kc->attrs, &s, &e);
    if (kc->part == 0)
        for (int i = s; i < e; i++)
            ((int64_t *)kc->outputs[0].data)[i - s] = kc->inputs[0].dims[i];
    return POPC_OK;
}

/* ---- table ------------------------------------------------------------------ */

#define reshape_forward copy_forward
#define flatten_forward copy_forward
#define squeeze_forward copy_forward
#define unsqueeze_forward copy_forward

const popc_op_def top_shape_ops[] = {
    OPU_DEF("ai.onnx", "Reshape", 14, 2, 2, 1, 1, POPC_OP_SPLIT, reshape,
            reshape_back_grad, NULL,
            "new shape from a constant input (0 copies, -1 infers)"),
    OPU_DEF("ai.onnx", "Flatten", 13, 1, 1, 1, 1, POPC_OP_SPLIT, flatten,
            reshape_back_grad, NULL, "to 2-D around attribute axis"),
    OPU_DEF("ai.onnx", "Squeeze", 13, 1, 2, 1, 1, POPC_OP_SPLIT, squeeze,
            reshape_back_grad, NULL, "drop size-1 dims (axes input)"),
    OPU_DEF("ai.onnx", "Unsqueeze", 13, 1, 2, 1, 1, POPC_OP_SPLIT, unsqueeze,
            reshape_back_grad, NULL, "insert size-1 dims (axes input)"),
    OPU_DEF("ai.onnx", "Expand", 13, 2, 2, 1, 1, POPC_OP_SPLIT, expand,
            expand_grad, NULL, "broadcast to a constant shape"),
    OPU_DEF("ai.onnx", "Shape", 15, 1, 1, 1, 1, 0, shape, NULL, NULL,
            "the input's dims as int64 (attributes start, end)"),
};

const int top_shape_count = sizeof top_shape_ops / sizeof top_shape_ops[0];
