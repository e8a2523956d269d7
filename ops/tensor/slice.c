/* slice.c - Slice (opset 13: starts, ends, axes, steps as constant inputs,
** negative values counted from the end, clamped like numpy) and its
** gradient popc::SliceGrad (dY scattered into zeros of the input's shape).
*/
#include "config.h"

#include <string.h>

#include "ops/tensor/tensorops.h"

/* Per input dim: first index, step and number of taken elements. */
typedef struct slice_spec {
    int64_t start[POPC_MAX_RANK], step[POPC_MAX_RANK], count[POPC_MAX_RANK];
} slice_spec;

static popc_status slice_resolve(const char *op,
                                 const char *node, const popc_view *x,
                                 const popc_view *in, int n_in,
                                 slice_spec *sp, popc_view *out)
{
    int64_t starts[POPC_MAX_RANK], ends[POPC_MAX_RANK];
    int64_t axes[POPC_MAX_RANK], steps[POPC_MAX_RANK];
    uint8_t seen[POPC_MAX_RANK] = {0};
    int ns, ne, na, nt;
    popc_status st;

    if ((st = opu_const_ints(op, node, n_in > 1 ? &in[1] : NULL,
                             "starts (input 1)", starts, POPC_MAX_RANK,
                             &ns)) != POPC_OK ||
        (st = opu_const_ints(op, node, n_in > 2 ? &in[2] : NULL,
                             "ends (input 2)", ends, POPC_MAX_RANK, &ne)) !=
            POPC_OK)
        return st;
    if (ns != ne)
        return opu_error(POPC_EINVAL, op, node,
                         "starts has %d values but ends has %d", ns, ne);
    na = ns;
    if (n_in > 3 && opu_present(&in[3])) {
        if ((st = opu_const_ints(op, node, &in[3], "axes (input 3)", axes,
                                 POPC_MAX_RANK, &na)) != POPC_OK)
            return st;
    } else {
        for (int i = 0; i < ns; i++)
            axes[i] = i;
    }
    nt = ns;
    if (n_in > 4 && opu_present(&in[4])) {
        if ((st = opu_const_ints(op, node, &in[4], "steps (input 4)",
                                 steps, POPC_MAX_RANK, &nt)) != POPC_OK)
            return st;
    } else {
        for (int i = 0; i < ns; i++)
            steps[i] = 1;
    }
    if (na != ns || nt != ns)
        return opu_error(POPC_EINVAL, op, node,
                         "starts, ends, axes and steps must have the same "
                         "length (%d, %d, %d, %d)", ns, ne, na, nt);
    for (int d = 0; d < x->rank; d++) {
        sp->start[d] = 0;
        sp->step[d] = 1;
        sp->count[d] = x->dims[d];
    }
    for (int i = 0; i < ns; i++) {
        int64_t dim, s = starts[i], e = ends[i], t = steps[i];
        int ax;

        if ((st = opu_axis(op, node, axes[i], x->rank, "axis", &ax)) !=
            POPC_OK)
            return st;
        if (seen[ax])
            return opu_error(POPC_EINVAL, op, node,
                             "axis %d is sliced twice", ax);
        seen[ax] = 1;
        if (t == 0)
            return opu_error(POPC_EINVAL, op, node,
                             "step for axis %d is 0", ax);
        dim = x->dims[ax];
        if (s < 0)
            s += dim;
        if (e < 0)
            e += dim;
        if (t > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
            sp->count[ax] = e > s ? (e - s + t - 1) / t : 0;
        } else {
            s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
            sp->count[ax] = s > e ? (s - e + (-t) - 1) / (-t) : 0;
        }
        sp->start[ax] = sp->count[ax] ? s : 0;
        sp->step[ax] = t;
    }
    out->dtype = x->dtype;
    out->rank = x->rank;
    for (int d = 0; d < x->rank; d++)
        out->dims[d] = sp->count[d];
    return POPC_OK;
}

static popc_status slice_infer(popc_infer_ctx *ic)
{
    slice_spec sp;

    if (popc_dtype_size(ic->inputs[0].dtype) == 0)
        return opu_error(POPC_EINVAL, "Slice", ic->node_name,
                         "input 0 has no known dtype");
    return slice_resolve("Slice", ic->node_name, &ic->inputs[0],
                         ic->inputs, ic->n_inputs, &sp, &ic->outputs[0]);
}

#define SLICE_RUN(T)                                                        \
    do {                                                                    \
        T *o = (T *)out->data + it.out_off;                                 \
        const T *x = (const T *)in->data + base + it.in_off[0];             \
        if (sb == 1)                                                        \
            memcpy(o, x, (size_t)it.n * sizeof *o);                         \
        else                                                                \
            for (int64_t i = 0; i < it.n; i++)                             \
                o[i] = x[i * sb];                                           \
    } while (0)

static popc_status slice_forward(const popc_kernel_ctx *kc)
{
    const popc_view *in = &kc->inputs[0], *out = &kc->outputs[0];
    slice_spec sp;
    popc_view shape;
    opu_bcast b;
    opu_bcast_iter it;
    int64_t base = 0, stride = 1, s, e, sb;
    popc_status st;

    memset(&shape, 0, sizeof shape);
    if ((st = slice_resolve("Slice", kc->node_name, in, kc->inputs,
                            kc->n_inputs, &sp, &shape)) != POPC_OK)
        return st;
    /* the output walked with strides step * input stride from base */
    memset(&b, 0, sizeof b);
    b.n_in = 1;
    b.rank = out->rank;
    for (int d = out->rank - 1; d >= 0; d--) {
        base += sp.start[d] * stride;
        b.dims[d] = out->dims[d];
        b.stride[0][d] = sp.step[d] * stride;
        stride *= in->dims[d];
    }
    if (b.rank == 0) {
        b.rank = 1;
        b.dims[0] = 1;
        b.stride[0][0] = 1;
    }
    sb = b.stride[0][b.rank - 1];
    opu_range(popc_view_numel(out), kc->part, kc->n_parts, &s, &e);
    opu_bcast_begin(&it, &b, s, e);
    while (opu_bcast_next(&it)) {
        switch (popc_dtype_size(out->dtype)) {
        case 1: SLICE_RUN(uint8_t); break;
        case 2: SLICE_RUN(uint16_t); break;
        case 4: SLICE_RUN(uint32_t); break;
        default: SLICE_RUN(uint64_t); break;
        }
    }
    return POPC_OK;
}

static popc_status slice_grad(popc_grad_ctx *gc)
{
    popc_attr a = {.name = "shape", .type = POPC_ATTR_INTS};
    int in[5];

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    in[0] = gc->output_grads[0];
    for (int i = 1; i < 5; i++)
        in[i] = i < gc->n_inputs ? gc->inputs[i] : -1;
    a.n = gc->input_info[0].rank;
    a.ints = gc->input_info[0].dims;
    return opu_grad_node(gc, "popc", "SliceGrad", in, 5, &a, 1,
                         &gc->input_grads[0]);
}

/* ---- SliceGrad ------------------------------------------------------------ */

static popc_status slice_grad_shape(const char *node,
                                    const popc_attrs *attrs,
                                    const popc_view *g, popc_view *x)
{
    int64_t n;

    memset(x, 0, sizeof *x);
    n = popc_attr_ints(attrs, "shape", x->dims, POPC_MAX_RANK);
    if (n < 0 || n > POPC_MAX_RANK)
        return opu_error(POPC_EINVAL, "SliceGrad", node,
                         "attribute 'shape' (the sliced input's shape, rank "
                         "<= %d) is required", POPC_MAX_RANK);
    x->rank = (int)n;
    x->dtype = g->dtype;
    return POPC_OK;
}

static popc_status slice_grad_infer(popc_infer_ctx *ic)
{
    const popc_view *g = &ic->inputs[0];
    popc_view x, expect;
    slice_spec sp;
    char a[160], b[160];
    popc_status st;

    if (popc_dtype_size(g->dtype) == 0)
        return opu_error(POPC_EINVAL, "SliceGrad", ic->node_name,
                         "gradient has no known dtype");
    if ((st = slice_grad_shape(ic->node_name, ic->attrs, g, &x)) !=
        POPC_OK)
        return st;
    memset(&expect, 0, sizeof expect);
    if ((st = slice_resolve("SliceGrad", ic->node_name, &x,
                            ic->inputs, ic->n_inputs, &sp, &expect)) !=
        POPC_OK)
        return st;
    if (!opu_same_shape(&expect, g))
        return opu_error(POPC_EINVAL, "SliceGrad", ic->node_name,
                         "gradient shape %s does not match the slice shape "
                         "%s", opu_shape_str(g, a, sizeof a),
                         opu_shape_str(&expect, b, sizeof b));
    ic->outputs[0] = x;
    return POPC_OK;
}

#define SCATTER_ROW(T)                                                      \
    do {                                                                    \
        T *o = (T *)out->data + row * len;                                  \
        const T *gs = (const T *)g->data + grow * sp.count[last];           \
        for (int64_t j = 0; j < sp.count[last]; j++) {                      \
            int64_t c = sp.start[last] + j * sp.step[last];                 \
            if (c >= c0 && c < c1)                                          \
                o[c] = gs[j];                                               \
        }                                                                   \
    } while (0)

/* Each part zeroes its share of dX and fills the taken positions in it. */
static popc_status slice_grad_forward(const popc_kernel_ctx *kc)
{
    const popc_view *g = &kc->inputs[0], *out = &kc->outputs[0];
    size_t es = popc_dtype_size(out->dtype);
    popc_view x, shape;
    slice_spec sp;
    int last = out->rank - 1;
    int64_t len, s, e;
    popc_status st;

    if ((st = slice_grad_shape(kc->node_name, kc->attrs, g, &x)) !=
        POPC_OK)
        return st;
    memset(&shape, 0, sizeof shape);
    if ((st = slice_resolve("SliceGrad", kc->node_name, &x,
                            kc->inputs, kc->n_inputs, &sp, &shape)) !=
        POPC_OK)
        return st;
    opu_range(popc_view_numel(out), kc->part, kc->n_parts, &s, &e);
    if (e <= s)
        return POPC_OK;
    memset((char *)out->data + (size_t)s * es, 0, (size_t)(e - s) * es);
    if (out->rank == 0) {
        memcpy(out->data, g->data, es);
        return POPC_OK;
    }
    len = out->dims[last];
    while (s < e) {
        int64_t row = s / len, c0 = s % len;
        int64_t c1 = len < c0 + (e - s) ? len : c0 + (e - s);
        int64_t rem = row, grow = 0, gstride = 1;
        int taken = 1;

        /* the dY row holding this dX row, if the slice took it */
        for (int d = last - 1; d >= 0 && taken; d--) {
            int64_t i = rem % out->dims[d], k = i - sp.start[d];

            rem /= out->dims[d];
            if (k % sp.step[d] != 0 || k / sp.step[d] < 0 ||
                k / sp.step[d] >= sp.count[d])
                taken = 0;
            grow += k / sp.step[d] * gstride;
            gstride *= sp.count[d];
        }
        if (taken) {
            switch (es) {
            case 1: SCATTER_ROW(uint8_t); break;
            case 2: SCATTER_ROW(uint16_t); break;
            case 4: SCATTER_ROW(uint32_t); break;
            default: SCATTER_ROW(uint64_t); break;
            }
        }
        s += c1 - c0;
    }
    return POPC_OK;
}

const popc_op_def top_slice_ops[] = {
    OPU_DEF("ai.onnx", "Slice", 13, 3, 5, 1, 1, POPC_OP_SPLIT, slice,
            slice_grad, NULL,
            "starts/ends/axes/steps from constant inputs, clamped"),
    OPU_DEF("popc", "SliceGrad", 1, 3, 5, 1, 1, POPC_OP_SPLIT, slice_grad,
            NULL, NULL,
            "(dY, starts, ends, axes?, steps?; shape) -> dX (zeros where "
            "not taken)"),
};

const int top_slice_count = sizeof top_slice_ops / sizeof top_slice_ops[0];
