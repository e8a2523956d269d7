/* move.c - data movement: Transpose, Concat, Split, Gather and
** popc::GatherGrad (the scatter-add that is Gather's gradient).
**
** Every kernel splits over its output elements, except GatherGrad, which
** splits over the columns (outer x inner positions) of its output so that
** each part adds the gathered rows of its own columns in index order: the
** result is the same however the work is split.
*/
#include "config.h"

#include <string.h>

#include "ops/tensor/tensorops.h"

static int64_t prod(const int64_t *d, int from, int to)
{
    int64_t p = 1;

    for (int i = from; i < to; i++)
        p *= d[i];
    return p;
}

/* ---- Transpose --------------------------------------------------------------- */

static popc_status read_perm(const char *node,
                             const popc_attrs *attrs, int rank, int *perm)
{
    int64_t p[POPC_MAX_RANK + 1];
    int64_t n = popc_attr_ints(attrs, "perm", p, POPC_MAX_RANK + 1);
    uint8_t seen[POPC_MAX_RANK] = {0};
    char buf[160];

    if (n < 0) {
        for (int i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
        return POPC_OK;
    }
    if (n != rank)
        return opu_error(POPC_EINVAL, "Transpose", node,
                         "perm %s has %lld entries but the input has rank %d",
                         opu_dims_str(p, (int)(n > POPC_MAX_RANK ? POPC_MAX_RANK
                                                                 : n),
                                      buf, sizeof buf),
                         (long long)n, rank);
    for (int i = 0; i < rank; i++) {
        if (p[i] < 0 || p[i] >= rank || seen[p[i]])
            return opu_error(POPC_EINVAL, "Transpose", node,
                             "perm %s is not a permutation of 0..%d",
                             opu_dims_str(p, rank, buf, sizeof buf),
                             rank - 1);
        seen[p[i]] = 1;
        perm[i] = (int)p[i];
    }
    return POPC_OK;
}

static popc_status transpose_infer(popc_infer_ctx *ic)
{
    const popc_view *x = &ic->inputs[0];
    int perm[POPC_MAX_RANK];
    popc_status st;

    if ((st = opu_need_dtype(ic, "Transpose")) != POPC_OK)
        return st;
    if ((st = read_perm(ic->node_name, ic->attrs, x->rank, perm)) !=
        POPC_OK)
        return st;
    ic->outputs[0].dtype = x->dtype;
    ic->outputs[0].rank = x->rank;
    for (int i = 0; i < x->rank; i++)
        ic->outputs[0].dims[i] = x->dims[perm[i]];
    return POPC_OK;
}

#define TILE 32
#define TILE_COLS 16

/* Copy a group of cnt runs. When the runs are whole rows that start at
** consecutive input elements (the input's innermost dim is the output's
** second innermost), copy in TILE x TILE_COLS blocks so both sides stay in
** cache (narrow blocks: the strided side often maps to one cache set);
** otherwise one strided run at a time. */
#define FLUSH_RUNS(T)                                                       \
    do {                                                                    \
        T *o = out->data;                                                   \
        const T *x = in->data;                                              \
        int tiled = cnt > 1;                                                \
        for (int r = 1; r < cnt && tiled; r++)                              \
            tiled = nn[r] == nn[0] && io[r] == io[0] + r &&                 \
                    oo[r] == oo[0] + r * nn[0];                             \
        if (tiled) {                                                        \
            for (int64_t b0 = 0; b0 < nn[0]; b0 += TILE_COLS) {             \
                int64_t b1 = b0 + TILE_COLS < nn[0] ? b0 + TILE_COLS        \
                                                    : nn[0];                \
                for (int r = 0; r < cnt; r++)                               \
                    for (int64_t j = b0; j < b1; j++)                       \
                        o[oo[r] + j] = x[io[0] + r + j * sb];               \
            }                                                               \
        } else {                                                            \
            for (int r = 0; r < cnt; r++)                                   \
                for (int64_t j = 0; j < nn[r]; j++)                         \
                    o[oo[r] + j] = x[io[r] + j * sb];                       \
        }                                                                   \
    } while (0)

static void flush_runs(const popc_view *in, const popc_view *out,
                       const int64_t *oo, const int64_t *io,
                       const int64_t *nn, int cnt, int64_t sb)
{
    switch (popc_dtype_size(out->dtype)) {
    case 1: FLUSH_RUNS(uint8_t); break;
    case 2: FLUSH_RUNS(uint16_t); break;
    case 4: FLUSH_RUNS(uint32_t); break;
    default: FLUSH_RUNS(uint64_t); break;
    }
}

static popc_status transpose_forward(const popc_kernel_ctx *kc)
{
    const popc_view *in = &kc->inputs[0], *out = &kc->outputs[0];
    int perm[POPC_MAX_RANK];
    int64_t instr[POPC_MAX_RANK];
    int64_t oo[TILE], io[TILE], nn[TILE];
    opu_bcast b;
    opu_bcast_iter it;
    int64_t s, e;
    int cnt = 0;
    popc_status st;

    if ((st = read_perm(kc->node_name, kc->attrs, in->rank,
                        perm)) != POPC_OK)
        return st;
    for (int d = 0; d < in->rank; d++)
        instr[d] = prod(in->dims, d + 1, in->rank);
    /* the output walked with the input's strides, size-1 dims dropped and
    ** dims that stay adjacent in the input merged */
    memset(&b, 0, sizeof b);
    b.n_in = 1;
    for (int k = 0; k < out->rank; k++) {
        int64_t d = out->dims[k], sd = instr[perm[k]];

        if (d == 1)
            continue;
        if (b.rank > 0 && b.stride[0][b.rank - 1] == sd * d) {
            b.dims[b.rank - 1] *= d;
            b.stride[0][b.rank - 1] = sd;
        } else {
            b.dims[b.rank] = d;
            b.stride[0][b.rank] = sd;
            b.rank++;
        }
    }
    if (b.rank == 0) {
        b.dims[0] = 1;
        b.stride[0][0] = 1;
        b.rank = 1;
    }
    opu_range(popc_view_numel(out), kc->part, kc->n_parts, &s, &e);
    if (b.rank == 1) {
        top_copy_share(kc, in, out);
        return POPC_OK;
    }
    opu_bcast_begin(&it, &b, s, e);
    while (opu_bcast_next(&it)) {
        oo[cnt] = it.out_off;
        io[cnt] = it.in_off[0];
        nn[cnt] = it.n;
        if (++cnt == TILE) {
            flush_runs(in, out, oo, io, nn, cnt, b.stride[0][b.rank - 1]);
            cnt = 0;
        }
    }
    if (cnt)
        flush_runs(in, out, oo, io, nn, cnt, b.stride[0][b.rank - 1]);
    return POPC_OK;
}

static popc_status transpose_grad(popc_grad_ctx *gc)
{
    int perm[POPC_MAX_RANK];
    int64_t inv[POPC_MAX_RANK];
    int rank = gc->input_info[0].rank;
    popc_attr a = {.name = "perm", .type = POPC_ATTR_INTS};
    popc_status st;

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if ((st = read_perm(gc->node_name, gc->attrs, rank, perm)) !=
        POPC_OK)
        return st;
    for (int i = 0; i < rank; i++)
        inv[perm[i]] = i;
    a.n = rank;
    a.ints = inv;
    return opu_grad_node(gc, NULL, "Transpose", &gc->output_grads[0], 1, &a,
                         1, &gc->input_grads[0]);
}

/* ---- Concat ------------------------------------------------------------------ */

static popc_status concat_infer(popc_infer_ctx *ic)
{
    const popc_view *x0 = &ic->inputs[0];
    popc_view *o = &ic->outputs[0];
    int axis;
    char a[160], b[160];
    popc_status st;

    if ((st = opu_need_dtype(ic, "Concat")) != POPC_OK)
        return st;
    if (!popc_attrs_find(ic->attrs, "axis"))
        return opu_error(POPC_EINVAL, "Concat", ic->node_name,
                         "attribute 'axis' is required");
    if ((st = opu_axis("Concat", ic->node_name,
                       popc_attr_int(ic->attrs, "axis", 0), x0->rank, "axis",
                       &axis)) != POPC_OK)
        return st;
    *o = *x0;
    o->data = NULL;
    for (int k = 1; k < ic->n_inputs; k++) {
        const popc_view *xk = &ic->inputs[k];
        int ok = xk->dtype == x0->dtype && xk->rank == x0->rank;

        for (int d = 0; ok && d < x0->rank; d++)
            ok = d == axis || xk->dims[d] == x0->dims[d];
        if (!ok)
            return opu_error(POPC_EINVAL, "Concat", ic->node_name,
                             "input %d is %s%s but input 0 is %s%s; dtypes, "
                             "ranks and every dimension except axis %d must "
                             "match", k, popc_dtype_name(xk->dtype),
                             opu_shape_str(xk, a, sizeof a),
                             popc_dtype_name(x0->dtype),
                             opu_shape_str(x0, b, sizeof b), axis);
        o->dims[axis] += xk->dims[axis];
    }
    return POPC_OK;
}

static popc_status concat_forward(const popc_kernel_ctx *kc)
{
    const popc_view *out = &kc->outputs[0];
    size_t es = popc_dtype_size(out->dtype);
    int axis;
    int64_t inner, row, s, e, pos;
    popc_status st;

    if ((st = opu_axis("Concat", kc->node_name,
                       popc_attr_int(kc->attrs, "axis", 0), out->rank, "axis",
                       &axis)) != POPC_OK)
        return st;
    inner = prod(out->dims, axis + 1, out->rank);
    row = out->dims[axis] * inner;
    opu_range(popc_view_numel(out), kc->part, kc->n_parts, &s, &e);
    pos = s;
    while (pos < e) {
        int64_t o = pos / row, r = pos % row, start = 0;

        for (int k = 0; k < kc->n_inputs && pos < e; k++) {
            int64_t chunk = kc->inputs[k].dims[axis] * inner, n;

            if (r >= start + chunk) {
                start += chunk;
                continue;
            }
            n = start + chunk - r;
            if (n > e - pos)
                n = e - pos;
            memcpy((char *)out->data + (size_t)pos * es,
                   (const char *)kc->inputs[k].data +
                       (size_t)(o * chunk + r - start) * es,
                   (size_t)n * es);
            pos += n;
            r += n;
            start += chunk;
        }
    }
    return POPC_OK;
}

static popc_status concat_grad(popc_grad_ctx *gc)
{
    int64_t sizes[64];
    int axis, n = gc->n_inputs, in[2];
    popc_attr a = {.name = "axis", .type = POPC_ATTR_INT};
    popc_status st;

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if (n > 64)
        return gc->host->set_error(POPC_EUNSUPPORTED,
                                   "Concat '%s': gradients through a Concat "
                                   "of more than 64 inputs are not "
                                   "supported", gc->node_name);
    if ((st = opu_axis("Concat", gc->node_name,
                       popc_attr_int(gc->attrs, "axis", 0),
                       gc->output_info[0].rank, "axis", &axis)) != POPC_OK)
        return st;
    for (int k = 0; k < n; k++)
        sizes[k] = gc->input_info[k].dims[axis];
    a.i = axis;
    in[0] = gc->output_grads[0];
    if ((st = opu_grad_ints(gc, sizes, n, &in[1])) != POPC_OK)
        return st;
    return gc->host->grad_add_node(gc, NULL, "Split", in, 2, gc->input_grads,
                                   n, &a, 1);
}

/* ---- Split ---------------------------------------------------------------------- */

static popc_status split_sizes(const popc_infer_ctx *ic, int axis,
                               int64_t *sizes)
{
    const popc_view *x = &ic->inputs[0];
    int n;
    char a[160];
    popc_status st;

    if (ic->n_inputs > 1 && opu_present(&ic->inputs[1])) {
        int64_t sum = 0;

        if ((st = opu_const_ints("Split", ic->node_name,
                                 &ic->inputs[1], "split (input 1)", sizes, 64,
                                 &n)) != POPC_OK)
            return st;
        if (n != ic->n_outputs)
            return opu_error(POPC_EINVAL, "Split", ic->node_name,
                             "split has %d sizes but the node has %d "
                             "outputs", n, ic->n_outputs);
        for (int k = 0; k < n; k++) {
            if (sizes[k] < 0)
                return opu_error(POPC_EINVAL, "Split",
                                 ic->node_name, "split size %lld is negative",
                                 (long long)sizes[k]);
            sum += sizes[k];
        }
        if (sum != x->dims[axis])
            return opu_error(POPC_EINVAL, "Split", ic->node_name,
                             "split sizes sum to %lld but axis %d of the "
                             "input %s has size %lld", (long long)sum, axis,
                             opu_shape_str(x, a, sizeof a),
                             (long long)x->dims[axis]);
        return POPC_OK;
    }
    if (x->dims[axis] % ic->n_outputs != 0)
        return opu_error(POPC_EINVAL, "Split", ic->node_name,
                         "axis %d of the input %s (size %lld) does not split "
                         "evenly into %d outputs; give the split input",
                         axis, opu_shape_str(x, a, sizeof a),
                         (long long)x->dims[axis], ic->n_outputs);
    for (int k = 0; k < ic->n_outputs; k++)
        sizes[k] = x->dims[axis] / ic->n_outputs;
    return POPC_OK;
}

static popc_status split_infer(popc_infer_ctx *ic)
{
    int64_t sizes[64];
    int axis;
    popc_status st;

    if ((st = opu_need_dtype(ic, "Split")) != POPC_OK)
        return st;
    if ((st = opu_axis("Split", ic->node_name,
                       popc_attr_int(ic->attrs, "axis", 0),
                       ic->inputs[0].rank, "axis", &axis)) != POPC_OK)
        return st;
    if (ic->n_outputs < 1 || ic->n_outputs > 64)
        return opu_error(POPC_EINVAL, "Split", ic->node_name,
                         "%d outputs; 1 to 64 are supported", ic->n_outputs);
    if ((st = split_sizes(ic, axis, sizes)) != POPC_OK)
        return st;
    for (int k = 0; k < ic->n_outputs; k++) {
        ic->outputs[k] = ic->inputs[0];
        ic->outputs[k].data = NULL;
        ic->outputs[k].dims[axis] = sizes[k];
    }
    return POPC_OK;
}

static popc_status split_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0];
    size_t es = popc_dtype_size(x->dtype);
    int axis;
    int64_t inner, row, offset = 0;
    popc_status st;

    if ((st = opu_axis("Split", kc->node_name,
                       popc_attr_int(kc->attrs, "axis", 0), x->rank, "axis",
                       &axis)) != POPC_OK)
        return st;
    inner = prod(x->dims, axis + 1, x->rank);
    row = x->dims[axis] * inner;
    for (int k = 0; k < kc->n_outputs; k++) {
        const popc_view *o = &kc->outputs[k];
        int64_t chunk = o->dims[axis] * inner, s, e;

        opu_range(popc_view_numel(o), kc->part, kc->n_parts, &s, &e);
        while (s < e) {
            int64_t r = s / chunk, c = s % chunk;
            int64_t n = chunk - c < e - s ? chunk - c : e - s;

            memcpy((char *)o->data + (size_t)s * es,
                   (const char *)x->data +
                       (size_t)(r * row + offset + c) * es,
                   (size_t)n * es);
            s += n;
        }
        offset += chunk;
    }
    return POPC_OK;
}

/* Concat of the output gradients, zeros where none flows. */
static popc_status split_grad(popc_grad_ctx *gc)
{
    int in[64], any = 0;
    popc_attr a = {.name = "axis", .type = POPC_ATTR_INT};
    popc_status st;

    if (gc->n_outputs > 64)
        return gc->host->set_error(POPC_EUNSUPPORTED,
                                   "Split '%s': gradients through more than "
                                   "64 outputs are not supported",
                                   gc->node_name);
    for (int k = 0; k < gc->n_outputs; k++)
        any |= gc->output_grads[k] >= 0;
    if (!any)
        return POPC_OK;
    for (int k = 0; k < gc->n_outputs; k++) {
        int pair[2];

        in[k] = gc->output_grads[k];
        if (in[k] >= 0)
            continue;
        if ((st = opu_grad_scalar(gc, gc->output_info[k].dtype, 0.0,
                                  &pair[0])) != POPC_OK ||
            (st = opu_grad_ints(gc, gc->output_info[k].dims,
                                gc->output_info[k].rank, &pair[1])) !=
                POPC_OK ||
            (st = opu_grad_node(gc, NULL, "Expand", pair, 2, NULL, 0,
                                &in[k])) != POPC_OK)
            return st;
    }
    a.i = popc_attr_int(gc->attrs, "axis", 0);
    return opu_grad_node(gc, NULL, "Concat", in, gc->n_outputs, &a, 1,
                         &gc->input_grads[0]);
}

/* ---- Gather ------------------------------------------------------------------ */

static popc_status gather_shape(const char *op,
                                const char *node, const popc_view *data,
                                const popc_view *idx, int64_t axis_attr,
                                int *axis, popc_view *out)
{
    popc_status st;

    if (idx->dtype != POPC_DTYPE_I32 && idx->dtype != POPC_DTYPE_I64)
        return opu_error(POPC_EINVAL, op, node,
                         "indices must be int32 or int64, got %s",
                         popc_dtype_name(idx->dtype));
    if ((st = opu_axis(op, node, axis_attr, data->rank, "axis", axis)) !=
        POPC_OK)
        return st;
    if (data->rank - 1 + idx->rank > POPC_MAX_RANK)
        return opu_error(POPC_EINVAL, op, node,
                         "the result would have rank %d; at most %d is "
                         "supported", data->rank - 1 + idx->rank,
                         POPC_MAX_RANK);
    out->rank = 0;
    for (int d = 0; d < *axis; d++)
        out->dims[out->rank++] = data->dims[d];
    for (int d = 0; d < idx->rank; d++)
        out->dims[out->rank++] = idx->dims[d];
    for (int d = *axis + 1; d < data->rank; d++)
        out->dims[out->rank++] = data->dims[d];
    return POPC_OK;
}

static popc_status gather_infer(popc_infer_ctx *ic)
{
    int axis;
    popc_status st;

    if ((st = opu_need_dtype(ic, "Gather")) != POPC_OK)
        return st;
    if ((st = gather_shape("Gather", ic->node_name, &ic->inputs[0],
                           &ic->inputs[1],
                           popc_attr_int(ic->attrs, "axis", 0), &axis,
                           &ic->outputs[0])) != POPC_OK)
        return st;
    ic->outputs[0].dtype = ic->inputs[0].dtype;
    return POPC_OK;
}

/* Index j of idx, negative ones counted from the end; -1 when out of
** range. */
static int64_t index_at(const popc_view *idx, int64_t j, int64_t dim)
{
    int64_t v = idx->dtype == POPC_DTYPE_I64
                    ? ((const int64_t *)idx->data)[j]
                    : ((const int32_t *)idx->data)[j];

    if (v < 0)
        v += dim;
    return v >= 0 && v < dim ? v : -1;
}

static popc_status bad_index(const popc_kernel_ctx *kc, const char *op,
                             const popc_view *data, const popc_view *idx,
                             int64_t j, int axis)
{
    int64_t v = idx->dtype == POPC_DTYPE_I64
                    ? ((const int64_t *)idx->data)[j]
                    : ((const int32_t *)idx->data)[j];
    char a[160];

    return opu_error(POPC_EINVAL, op, kc->node_name,
                     "index %lld (position %lld) is out of range for axis %d "
                     "of size %lld (data shape %s)", (long long)v,
                     (long long)j, axis, (long long)data->dims[axis],
                     opu_shape_str(data, a, sizeof a));
}

static popc_status gather_forward(const popc_kernel_ctx *kc)
{
    const popc_view *data = &kc->inputs[0], *idx = &kc->inputs[1];
    const popc_view *out = &kc->outputs[0];
    size_t es = popc_dtype_size(data->dtype);
    int64_t n_idx = popc_view_numel(idx), inner, dim, s, e;
    int axis;
    popc_status st;

    if ((st = opu_axis("Gather", kc->node_name,
                       popc_attr_int(kc->attrs, "axis", 0), data->rank,
                       "axis", &axis)) != POPC_OK)
        return st;
    inner = prod(data->dims, axis + 1, data->rank);
    dim = data->dims[axis];
    opu_range(popc_view_numel(out), kc->part, kc->n_parts, &s, &e);
    while (s < e) {
        int64_t rowi = s / inner, c = s % inner;
        int64_t o = rowi / n_idx, j = rowi % n_idx;
        int64_t n = inner - c < e - s ? inner - c : e - s;
        int64_t v = index_at(idx, j, dim);

        if (v < 0)
            return bad_index(kc, "Gather", data, idx, j, axis);
        memcpy((char *)out->data + (size_t)s * es,
               (const char *)data->data +
                   (size_t)((o * dim + v) * inner + c) * es,
               (size_t)n * es);
        s += n;
    }
    return POPC_OK;
}

static popc_status gather_grad(popc_grad_ctx *gc)
{
    popc_attr a[2] = {{.name = "axis", .type = POPC_ATTR_INT},
                      {.name = "shape", .type = POPC_ATTR_INTS}};
    int in[2];

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    a[0].i = popc_attr_int(gc->attrs, "axis", 0);
    a[1].n = gc->input_info[0].rank;
    a[1].ints = gc->input_info[0].dims;
    in[0] = gc->output_grads[0];
    in[1] = gc->inputs[1];
    return opu_grad_node(gc, "popc", "GatherGrad", in, 2, a, 2,
                         &gc->input_grads[0]);
}

/* GatherGrad(dY, indices; axis, shape) -> dData of shape `shape` */
static popc_status gather_grad_infer(popc_infer_ctx *ic)
{
    const popc_view *g = &ic->inputs[0];
    popc_view data, expect;
    int64_t n;
    int axis;
    char a[160], b[160];
    popc_status st;

    if (!opu_is_float(g->dtype))
        return opu_error(POPC_EINVAL, "GatherGrad", ic->node_name,
                         "gradient must be float32 or float16, got %s",
                         popc_dtype_name(g->dtype));
    memset(&data, 0, sizeof data);
    n = popc_attr_ints(ic->attrs, "shape", data.dims, POPC_MAX_RANK);
    if (n < 1 || n > POPC_MAX_RANK)
        return opu_error(POPC_EINVAL, "GatherGrad", ic->node_name,
                         "attribute 'shape' (the data shape, rank 1..%d) is "
                         "required", POPC_MAX_RANK);
    data.rank = (int)n;
    data.dtype = g->dtype;
    memset(&expect, 0, sizeof expect);
    if ((st = gather_shape("GatherGrad", ic->node_name, &data,
                           &ic->inputs[1],
                           popc_attr_int(ic->attrs, "axis", 0), &axis,
                           &expect)) != POPC_OK)
        return st;
    if (!opu_same_shape(&expect, g))
        return opu_error(POPC_EINVAL, "GatherGrad", ic->node_name,
                         "gradient shape %s does not match the gathered "
                         "shape %s", opu_shape_str(g, a, sizeof a),
                         opu_shape_str(&expect, b, sizeof b));
    ic->outputs[0] = data;
    return POPC_OK;
}

static popc_status gather_grad_forward(const popc_kernel_ctx *kc)
{
    const popc_view *g = &kc->inputs[0], *idx = &kc->inputs[1];
    const popc_view *out = &kc->outputs[0];
    int64_t n_idx = popc_view_numel(idx), inner, dim, outer, s, e;
    int axis, half = out->dtype == POPC_DTYPE_F16;
    popc_status st;

    if ((st = opu_axis("GatherGrad", kc->node_name,
                       popc_attr_int(kc->attrs, "axis", 0), out->rank, "axis",
                       &axis)) != POPC_OK)
        return st;
    inner = prod(out->dims, axis + 1, out->rank);
    outer = prod(out->dims, 0, axis);
    dim = out->dims[axis];
    opu_range(outer * inner, kc->part, kc->n_parts, &s, &e);
    for (int64_t j = 0; j < n_idx; j++)
        if (index_at(idx, j, dim) < 0)
            return bad_index(kc, "GatherGrad", out, idx, j, axis);
    /* columns [s, e) of the [outer, dim, inner] output, row by row */
    while (s < e) {
        int64_t o = s / inner, c0 = s % inner;
        int64_t c1 = inner < c0 + (e - s) ? inner : c0 + (e - s);

        for (int64_t d = 0; d < dim; d++)
            memset((char *)out->data +
                       (size_t)((o * dim + d) * inner + c0) *
                           popc_dtype_size(out->dtype),
                   0, (size_t)(c1 - c0) * popc_dtype_size(out->dtype));
        for (int64_t j = 0; j < n_idx; j++) {
            int64_t v = index_at(idx, j, dim);
            int64_t dst = (o * dim + v) * inner, src = (o * n_idx + j) * inner;

            if (half) {
                uint16_t *od = (uint16_t *)out->data + dst;
                const uint16_t *gs = (const uint16_t *)g->data + src;

                for (int64_t c = c0; c < c1; c += OPU_CHUNK) {
                    int64_t m = c1 - c < OPU_CHUNK ? c1 - c : OPU_CHUNK;
                    float a[OPU_CHUNK], b[OPU_CHUNK];

                    opu_h2f_n(a, od + c, m);
                    opu_h2f_n(b, gs + c, m);
                    for (int64_t k = 0; k < m; k++)
                        a[k] += b[k];
                    opu_f2h_n(od + c, a, m);
                }
            } else {
                float *od = (float *)out->data + dst;
                const float *gs = (const float *)g->data + src;

                for (int64_t c = c0; c < c1; c++)
                    od[c] += gs[c];
            }
        }
        s += c1 - c0;
    }
    return POPC_OK;
}

/* ---- costs ------------------------------------------------------------------ */

static popc_status move_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    double bytes = 0;

    for (int i = 0; i < ic->n_outputs; i++)
        bytes += 2.0 * (double)popc_view_nbytes(&ic->outputs[i]);
    c->flops = 0;
    c->bytes = bytes;
    c->temp_bytes = 0;
    return POPC_OK;
}

/* ---- table ------------------------------------------------------------------ */

const popc_op_def top_move_ops[] = {
    OPU_DEF("ai.onnx", "Transpose", 13, 1, 1, 1, 1, POPC_OP_SPLIT, transpose,
            transpose_grad, move_cost,
            "permute dims (attribute perm, default reversed)"),
    OPU_DEF("ai.onnx", "Concat", 13, 1, 64, 1, 1, POPC_OP_SPLIT, concat,
            concat_grad, move_cost, "join 1..64 inputs along axis"),
    OPU_DEF("ai.onnx", "Split", 13, 1, 2, 1, 64, POPC_OP_SPLIT, split,
            split_grad, move_cost,
            "cut along axis into the sizes of input split (or evenly)"),
    OPU_DEF("ai.onnx", "Gather", 13, 2, 2, 1, 1, POPC_OP_SPLIT, gather,
            gather_grad, move_cost,
            "take entries of indices along axis (negative from the end)"),
    OPU_DEF("popc", "GatherGrad", 1, 2, 2, 1, 1, POPC_OP_SPLIT, gather_grad,
            NULL, NULL,
            "(dY, indices; axis, shape) -> scatter-add of dY into zeros"),
};

const int top_move_count = sizeof top_move_ops / sizeof top_move_ops[0];
