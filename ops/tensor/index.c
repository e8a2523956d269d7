/* index.c - indexing ops: GatherElements, ScatterElements (and the older
** Scatter), GatherND, ScatterND, OneHot and Compress, for every dtype
** (elements are moved as bytes). Negative indices count from the end; an
** index out of range is an error naming the node. Scatters copy the data
** and then apply the updates in index order (reduction none, add or
** mul), so they run as one part. Gradients: grads.c.
*/
#include "config.h"

#include <string.h>

#include "ops/util/elem.h"
#include "ops/tensor/tensorops.h"

static popc_status wrap_index(const char *op,
                              const char *node, int64_t *i, int64_t dim)
{
    if (*i < 0)
        *i += dim;
    if (*i < 0 || *i >= dim)
        return opu_error(POPC_EINVAL, op, node, "index %lld is out of "
                         "range for a dimension of %lld",
                         (long long)(*i < 0 ? *i - dim : *i),
                         (long long)dim);
    return POPC_OK;
}

static int is_index_dtype(popc_dtype dt)
{
    return dt == POPC_DTYPE_I32 || dt == POPC_DTYPE_I64;
}

/* ---- GatherElements / ScatterElements ------------------------------------- */

static popc_status elems_check(popc_infer_ctx *ic, const char *op, int *axis)
{
    const popc_view *x = &ic->inputs[0], *idx = &ic->inputs[1];

    if (!is_index_dtype(idx->dtype))
        return opu_error(POPC_EINVAL, op, ic->node_name,
                         "indices must be int32 or int64");
    if (idx->rank != x->rank)
        return opu_error(POPC_EINVAL, op, ic->node_name,
                         "indices must have the data's rank (%d), got %d",
                         x->rank, idx->rank);
    return opu_axis(op, ic->node_name,
                    popc_attr_int(ic->attrs, "axis", 0), x->rank, "axis",
                    axis);
}

static popc_status gather_elements_infer(popc_infer_ctx *ic)
{
    int axis;
    popc_status st;

    if ((st = elems_check(ic, "GatherElements", &axis)) != POPC_OK)
        return st;
    ic->outputs[0] = ic->inputs[1];
    ic->outputs[0].data = NULL;
    ic->outputs[0].dtype = ic->inputs[0].dtype;
    return POPC_OK;
}

/* The data offset of element i of indices (axis coordinate replaced). */
static popc_status elem_offset(const popc_kernel_ctx *kc, const char *op,
                               const popc_view *x, const popc_view *idx,
                               int axis, int64_t i, const int64_t *xs,
                               int64_t *off)
{
    int64_t rem = i, o = 0;

    for (int d = idx->rank - 1; d >= 0; d--) {
        int64_t c = rem % idx->dims[d];

        rem /= idx->dims[d];
        if (d == axis) {
            popc_status st;

            c = opu_load_i(idx, i);
            if ((st = wrap_index(op, kc->node_name, &c,
                                 x->dims[d])) != POPC_OK)
                return st;
        }
        o += c * xs[d];
    }
    *off = o;
    return POPC_OK;
}

static popc_status gather_elements_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *idx = &kc->inputs[1];
    size_t es = popc_dtype_size(x->dtype);
    int64_t xs[POPC_MAX_RANK], s, e, off;
    int axis;
    popc_status st;

    if ((st = opu_axis("GatherElements", kc->node_name,
                       popc_attr_int(kc->attrs, "axis", 0), x->rank, "axis",
                       &axis)) != POPC_OK)
        return st;
    opu_strides(x, xs);
    opu_range(popc_view_numel(idx), kc->part, kc->n_parts, &s, &e);
    for (int64_t i = s; i < e; i++) {
        if ((st = elem_offset(kc, "GatherElements", x, idx, axis, i, xs,
                              &off)) != POPC_OK)
            return st;
        memcpy((char *)kc->outputs[0].data + (size_t)i * es,
               (const char *)x->data + (size_t)off * es, es);
    }
    return POPC_OK;
}

static popc_status scatter_elements_infer(popc_infer_ctx *ic)
{
    int axis;
    popc_status st;

    if ((st = elems_check(ic, "ScatterElements", &axis)) != POPC_OK)
        return st;
    if (ic->inputs[2].dtype != ic->inputs[0].dtype ||
        !opu_same_shape(&ic->inputs[1], &ic->inputs[2]))
        return opu_error(POPC_EINVAL, "ScatterElements",
                         ic->node_name, "updates must have the indices' "
                         "shape and the data's dtype");
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

/* dst op= src by the reduction attribute (none, add, mul). */
static void apply(const popc_view *o, int64_t at, const popc_view *u,
                  int64_t from, int red)
{
    size_t es = popc_dtype_size(o->dtype);

    if (red == 0) {
        memcpy((char *)o->data + (size_t)at * es,
               (const char *)u->data + (size_t)from * es, es);
    } else if (popc_dtype_is_float(o->dtype)) {
        double a = opu_load_f(o, at), b = opu_load_f(u, from);

        opu_store_f(o, at, red == 1 ? a + b : a * b);
    } else {
        int64_t a = opu_load_i(o, at), b = opu_load_i(u, from);

        opu_store_i(o, at, red == 1 ? a + b : a * b);
    }
}

static int reduction_of(const popc_attrs *a)
{
    const popc_attr *r = popc_attrs_find(a, "reduction");

    if (!r || !r->s || !strcmp(r->s, "none"))
        return 0;
    return !strcmp(r->s, "add") ? 1 : !strcmp(r->s, "mul") ? 2 : -1;
}

static popc_status scatter_elements_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *idx = &kc->inputs[1];
    const popc_view *u = &kc->inputs[2], *o = &kc->outputs[0];
    int64_t xs[POPC_MAX_RANK], off;
    int axis, red = reduction_of(kc->attrs);
    popc_status st;

    if (red < 0)
        return opu_error(POPC_EINVAL, "ScatterElements",
                         kc->node_name, "reduction must be none, add or mul");
    if ((st = opu_axis("ScatterElements", kc->node_name,
                       popc_attr_int(kc->attrs, "axis", 0), x->rank, "axis",
                       &axis)) != POPC_OK)
        return st;
    memcpy(o->data, x->data, popc_view_nbytes(x));
    opu_strides(x, xs);
    for (int64_t i = 0; i < popc_view_numel(idx); i++) {
        if ((st = elem_offset(kc, "ScatterElements", x, idx, axis, i, xs,
                              &off)) != POPC_OK)
            return st;
        apply(o, off, u, i, red);
    }
    return POPC_OK;
}

static popc_status scatter_infer(popc_infer_ctx *ic)
{
    return scatter_elements_infer(ic);
}

static popc_status scatter_forward(const popc_kernel_ctx *kc)
{
    return scatter_elements_forward(kc);
}

/* ---- GatherND / ScatterND ---------------------------------------------------- */

static popc_status gather_nd_infer(popc_infer_ctx *ic)
{
    const popc_view *x = &ic->inputs[0], *idx = &ic->inputs[1];
    int b = (int)popc_attr_int(ic->attrs, "batch_dims", 0);
    popc_view *o = &ic->outputs[0];
    int64_t k;

    if (!is_index_dtype(idx->dtype) || idx->rank < 1)
        return opu_error(POPC_EINVAL, "GatherND", ic->node_name,
                         "indices must be int64 with rank >= 1");
    k = idx->dims[idx->rank - 1];
    if (b < 0 || b >= idx->rank || b + k > x->rank)
        return opu_error(POPC_EINVAL, "GatherND", ic->node_name,
                         "batch_dims %d and index depth %lld do not fit data "
                         "of rank %d", b, (long long)k, x->rank);
    o->dtype = x->dtype;
    o->rank = 0;
    for (int d = 0; d < idx->rank - 1; d++)
        o->dims[o->rank++] = idx->dims[d];
    for (int d = b + (int)k; d < x->rank; d++)
        o->dims[o->rank++] = x->dims[d];
    if (o->rank > POPC_MAX_RANK)
        return opu_error(POPC_EINVAL, "GatherND", ic->node_name,
                         "the result has more than %d dimensions",
                         POPC_MAX_RANK);
    return POPC_OK;
}

/* Data offset of index tuple t (batch coordinates from the tuple's batch
** position); *slice the element count of one gathered slice. */
static popc_status nd_offset(const popc_kernel_ctx *kc, const char *op,
                             const popc_view *x, const popc_view *idx, int b,
                             int64_t t, int64_t *off, int64_t *slice)
{
    int64_t xs[POPC_MAX_RANK], k = idx->dims[idx->rank - 1];
    int64_t batch = t, inner_batches = 1, o = 0;
    popc_status st;

    opu_strides(x, xs);
    for (int d = b; d < idx->rank - 1; d++)
        inner_batches *= idx->dims[d];
    batch /= inner_batches;
    for (int d = b - 1; d >= 0; d--) {
        o += (batch % x->dims[d]) * xs[d];
        batch /= x->dims[d];
    }
    for (int64_t j = 0; j < k; j++) {
        int64_t c = opu_load_i(idx, t * k + j);

        if ((st = wrap_index(op, kc->node_name, &c,
                             x->dims[b + j])) != POPC_OK)
            return st;
        o += c * xs[b + j];
    }
    *off = o;
    /* one slice: the data dims after the indexed ones */
    *slice = b + k > 0 ? xs[b + k - 1] : popc_view_numel(x);
    return POPC_OK;
}

static popc_status gather_nd_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *idx = &kc->inputs[1];
    int b = (int)popc_attr_int(kc->attrs, "batch_dims", 0);
    size_t es = popc_dtype_size(x->dtype);
    int64_t tuples = popc_view_numel(idx) / idx->dims[idx->rank - 1];
    int64_t off, slice;
    popc_status st;

    for (int64_t t = 0; t < tuples; t++) {
        if ((st = nd_offset(kc, "GatherND", x, idx, b, t, &off, &slice)) !=
            POPC_OK)
            return st;
        memcpy((char *)kc->outputs[0].data + (size_t)(t * slice) * es,
               (const char *)x->data + (size_t)off * es, (size_t)slice * es);
    }
    return POPC_OK;
}

static popc_status scatter_nd_infer(popc_infer_ctx *ic)
{
    if (!is_index_dtype(ic->inputs[1].dtype) || ic->inputs[1].rank < 1 ||
        ic->inputs[2].dtype != ic->inputs[0].dtype)
        return opu_error(POPC_EINVAL, "ScatterND", ic->node_name,
                         "indices must be int64 and updates of the data's "
                         "dtype");
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

static popc_status scatter_nd_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *idx = &kc->inputs[1];
    const popc_view *u = &kc->inputs[2], *o = &kc->outputs[0];
    int64_t tuples = popc_view_numel(idx) / idx->dims[idx->rank - 1];
    int64_t off, slice;
    int red = reduction_of(kc->attrs);
    popc_status st;

    if (red < 0)
        return opu_error(POPC_EINVAL, "ScatterND", kc->node_name,
                         "reduction must be none, add or mul");
    memcpy(o->data, x->data, popc_view_nbytes(x));
    for (int64_t t = 0; t < tuples; t++) {
        if ((st = nd_offset(kc, "ScatterND", x, idx, 0, t, &off, &slice)) !=
            POPC_OK)
            return st;
        for (int64_t j = 0; j < slice; j++)
            apply(o, off + j, u, t * slice + j, red);
    }
    return POPC_OK;
}

/* ---- OneHot ------------------------------------------------------------------ */

static popc_status onehot_depth(const char *node,
                                const popc_view *d, int64_t *depth)
{
    if (!d->data || popc_view_numel(d) != 1)
        return opu_error(POPC_EINVAL, "OneHot", node, "depth must be a "
                         "scalar known at compile time");
    *depth = (int64_t)opu_load_f(d, 0);
    if (*depth < 1)
        return opu_error(POPC_EINVAL, "OneHot", node, "depth must be >= "
                         "1, got %lld", (long long)*depth);
    return POPC_OK;
}

static popc_status onehot_infer(popc_infer_ctx *ic)
{
    const popc_view *idx = &ic->inputs[0];
    popc_view *o = &ic->outputs[0];
    int64_t depth;
    int axis;
    popc_status st;

    if ((st = onehot_depth(ic->node_name, &ic->inputs[1],
                           &depth)) != POPC_OK ||
        (st = opu_axis("OneHot", ic->node_name,
                       popc_attr_int(ic->attrs, "axis", -1), idx->rank + 1,
                       "axis", &axis)) != POPC_OK)
        return st;
    if (popc_view_numel(&ic->inputs[2]) != 2)
        return opu_error(POPC_EINVAL, "OneHot", ic->node_name,
                         "values must hold [off, on]");
    o->dtype = ic->inputs[2].dtype;
    o->rank = idx->rank + 1;
    for (int d = 0, s = 0; d < o->rank; d++)
        o->dims[d] = d == axis ? depth : idx->dims[s++];
    return POPC_OK;
}

static popc_status onehot_forward(const popc_kernel_ctx *kc)
{
    const popc_view *idx = &kc->inputs[0], *vals = &kc->inputs[2];
    const popc_view *o = &kc->outputs[0];
    size_t es = popc_dtype_size(o->dtype);
    int64_t depth, inner = 1, s, e;
    int axis;
    popc_status st;

    if ((st = onehot_depth(kc->node_name, &kc->inputs[1],
                           &depth)) != POPC_OK ||
        (st = opu_axis("OneHot", kc->node_name,
                       popc_attr_int(kc->attrs, "axis", -1), idx->rank + 1,
                       "axis", &axis)) != POPC_OK)
        return st;
    for (int d = axis + 1; d < o->rank; d++)
        inner *= o->dims[d];
    opu_range(popc_view_numel(o), kc->part, kc->n_parts, &s, &e);
    for (int64_t i = s; i < e; i++) {
        int64_t pos = (i / inner) % depth;
        int64_t src = (i / inner / depth) * inner + i % inner;
        int64_t k = (int64_t)opu_load_f(idx, src);

        if (k < 0)
            k += depth;
        memcpy((char *)o->data + (size_t)i * es,
               (const char *)vals->data + (k == pos ? es : 0), es);
    }
    return POPC_OK;
}

/* ---- Compress ------------------------------------------------------------------ */

/* The kept positions of the (compile-time) condition. */
static popc_status compress_count(const char *node,
                                  const popc_view *c, int64_t limit,
                                  int64_t *kept)
{
    if (!c->data || c->rank != 1)
        return opu_error(POPC_EINVAL, "Compress", node, "condition must "
                         "be a 1-D tensor known at compile time (output "
                         "shapes are static)");
    *kept = 0;
    for (int64_t i = 0; i < c->dims[0] && i < limit; i++)
        *kept += opu_load_i(c, i) != 0;
    return POPC_OK;
}

static popc_status compress_infer(popc_infer_ctx *ic)
{
    const popc_view *x = &ic->inputs[0];
    const popc_attr *ax = popc_attrs_find(ic->attrs, "axis");
    popc_view *o = &ic->outputs[0];
    int64_t kept = 0;
    int axis = 0;
    popc_status st;

    if (ax && (st = opu_axis("Compress", ic->node_name, ax->i,
                             x->rank, "axis", &axis)) != POPC_OK)
        return st;
    if ((st = compress_count(ic->node_name, &ic->inputs[1],
                             ax ? x->dims[axis] : popc_view_numel(x),
                             &kept)) != POPC_OK)
        return st;
    *o = *x;
    o->data = NULL;
    if (!ax) {
        o->rank = 1;
        o->dims[0] = kept;
    } else {
        o->dims[axis] = kept;
    }
    return POPC_OK;
}

static popc_status compress_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *c = &kc->inputs[1];
    const popc_attr *ax = popc_attrs_find(kc->attrs, "axis");
    size_t es = popc_dtype_size(x->dtype);
    int64_t outer = 1, dim, inner = 1, w = 0;
    int axis = 0;
    popc_status st;

    if (ax && (st = opu_axis("Compress", kc->node_name, ax->i,
                             x->rank, "axis", &axis)) != POPC_OK)
        return st;
    if (!ax) {
        dim = popc_view_numel(x);
    } else {
        dim = x->dims[axis];
        for (int d = 0; d < axis; d++)
            outer *= x->dims[d];
        for (int d = axis + 1; d < x->rank; d++)
            inner *= x->dims[d];
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < dim && i < c->dims[0]; i++)
            if (opu_load_i(c, i)) {
                memcpy((char *)kc->outputs[0].data + (size_t)(w * inner) * es,
                       (const char *)x->data +
                           (size_t)((o * dim + i) * inner) * es,
                       (size_t)inner * es);
                w++;
            }
    return POPC_OK;
}

const popc_op_def top_index_ops[] = {
    OPU_DEF("ai.onnx", "GatherElements", 13, 2, 2, 1, 1, POPC_OP_SPLIT,
            gather_elements, top_gather_elements_grad, NULL, "data[indices along axis]"),
    OPU_DEF("ai.onnx", "ScatterElements", 16, 3, 3, 1, 1, 0,
            scatter_elements, top_scatter_elements_grad, NULL,
            "data with updates at indices along axis (reduction)"),
    OPU_DEF("ai.onnx", "Scatter", 9, 3, 3, 1, 1, 0, scatter, top_scatter_grad, NULL,
            "ScatterElements' older name (opset 9 and 10)"),
    OPU_DEF("ai.onnx", "GatherND", 13, 2, 2, 1, 1, 0, gather_nd, top_gather_nd_grad, NULL,
            "slices of data at index tuples (batch_dims)"),
    OPU_DEF("ai.onnx", "ScatterND", 16, 3, 3, 1, 1, 0, scatter_nd, top_scatter_nd_grad, NULL,
            "data with slices replaced at index tuples (reduction)"),
    OPU_DEF("ai.onnx", "OneHot", 11, 3, 3, 1, 1, POPC_OP_SPLIT, onehot, NULL,
            NULL, "one-hot encoding along axis with [off, on] values"),
    OPU_DEF("ai.onnx", "Compress", 11, 2, 2, 1, 1, 0, compress, top_compress_grad, NULL,
            "the slices where the (static) condition holds"),
};

const int top_index_count = sizeof top_index_ops / sizeof top_index_ops[0];
