/* grads.c - gradients of the tensor plugin's ONNX ops that move or select
** data, built from other ops (each of which has its own gradient, so
** second derivatives compose):
**   Tile            Reshape dY to (repeat, dim) pairs, ReduceSum the repeats
**   Pad             constant: Slice out the interior (zero-Pad what a
**                   negative pad cropped); reflect, edge: popc::PadGrad
**   DepthToSpace, SpaceToDepth  the inverse Reshape/Transpose/Reshape
**   CumSum          CumSum of dY in the other direction
**   ReverseSequence, Trilu  the same op on dY
**   GatherElements, GatherND  ScatterElements/ScatterND (add) into zeros
**   ScatterElements, Scatter, ScatterND  data: dY with the written places
**                   zeroed (reduction none) or dY (add); updates: the
**                   Gather of dY
**   Compress        GatherGrad at the kept positions
**   TopK            ScatterElements (add) of dValues at the indices
**   Hardmax         zero (piecewise constant)
** GatherND with batch_dims and the mul, max and min reductions of the
** scatters have no gradient yet: training through them fails naming the
** node.
*/
#include "config.h"

#include <string.h>

#include "ops/util/elem.h"
#include "ops/tensor/tensorops.h"

/* The constant int64 data of input i, or an error naming the op. */
static popc_status const_ints(popc_grad_ctx *gc, const char *op, int i,
                              const char *what, const int64_t **v,
                              int64_t *n)
{
    const popc_view *in = &gc->input_info[i];

    if (i >= gc->n_inputs || !in->data || in->dtype != POPC_DTYPE_I64)
        return opu_error(POPC_EUNSUPPORTED, op, gc->node_name,
                         "the gradient needs %s as an int64 constant", what);
    *v = in->data;
    *n = popc_view_numel(in);
    return POPC_OK;
}

/* zeros shaped like info: Expand of a scalar 0 */
static popc_status zeros_like(popc_grad_ctx *gc, const popc_view *info,
                              int *out)
{
    int in[2];
    popc_status st;

    if ((st = opu_grad_scalar(gc, info->dtype, 0.0, &in[0])) != POPC_OK ||
        (st = opu_grad_ints(gc, info->dims, info->rank, &in[1])) != POPC_OK)
        return st;
    return opu_grad_node(gc, NULL, "Expand", in, 2, NULL, 0, out);
}

static popc_status reshape_to(popc_grad_ctx *gc, int v, const int64_t *dims,
                              int rank, int *out)
{
    int in[2] = {v, -1};
    popc_status st;

    if ((st = opu_grad_ints(gc, dims, rank, &in[1])) != POPC_OK)
        return st;
    return opu_grad_node(gc, NULL, "Reshape", in, 2, NULL, 0, out);
}

/* ---- Tile ------------------------------------------------------------------- */

popc_status top_tile_grad(popc_grad_ctx *gc)
{
    const popc_view *x = &gc->input_info[0];
    const int64_t *reps;
    int64_t n, pairs[POPC_MAX_RANK], axes[POPC_MAX_RANK];
    int rank = 0, n_axes = 0, in[2], t;
    popc_status st;

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if ((st = const_ints(gc, "Tile", 1, "repeats", &reps, &n)) != POPC_OK)
        return st;
    for (int i = 0; i < x->rank; i++) {
        if (reps[i] != 1) {
            if (rank + 2 > POPC_MAX_RANK)
                return opu_error(POPC_EUNSUPPORTED, "Tile",
                                 gc->node_name, "the gradient needs more "
                                 "than %d dimensions", POPC_MAX_RANK);
            axes[n_axes++] = rank;
            pairs[rank++] = reps[i];
        }
        pairs[rank++] = x->dims[i];
    }
    if (!n_axes)
        return opu_grad_node(gc, NULL, "Identity", &gc->output_grads[0], 1,
                             NULL, 0, &gc->input_grads[0]);
    if ((st = reshape_to(gc, gc->output_grads[0], pairs, rank, &t)) !=
            POPC_OK ||
        (st = opu_grad_ints(gc, axes, n_axes, &in[1])) != POPC_OK)
        return st;
    in[0] = t;
    {
        popc_attr keep = popc_attr_make_int("keepdims", 0);

        return opu_grad_node(gc, NULL, "ReduceSum", in, 2, &keep, 1,
                             &gc->input_grads[0]);
    }
}

/* ---- Pad ---------------------------------------------------------------- */

popc_status top_pad_grad(popc_grad_ctx *gc)
{
    const popc_view *x = &gc->input_info[0];
    const char *mode = popc_attr_string(gc->attrs, "mode", "constant");
    const int64_t *pads;
    int64_t n, starts[POPC_MAX_RANK], ends[POPC_MAX_RANK];
    int64_t axes[POPC_MAX_RANK], back[2 * POPC_MAX_RANK];
    int in[4], cropped = 0, t;
    popc_status st;

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if (strcmp(mode, "constant") != 0) {
        int pin[3] = {gc->output_grads[0], gc->inputs[0], gc->inputs[1]};

        return opu_grad_node(gc, "popc", "PadGrad", pin, 3, gc->attrs->items,
                             gc->attrs->n, &gc->input_grads[0]);
    }
    if ((st = const_ints(gc, "Pad", 1, "pads", &pads, &n)) != POPC_OK)
        return st;
    if (n != 2 * x->rank)
        return opu_error(POPC_EINVAL, "Pad", gc->node_name,
                         "pads has %lld values for rank %d", (long long)n,
                         x->rank);
    for (int i = 0; i < x->rank; i++) {
        int64_t b = pads[i], e = pads[x->rank + i];

        starts[i] = b > 0 ? b : 0;
        ends[i] = starts[i] + x->dims[i] + (b < 0 ? b : 0) + (e < 0 ? e : 0);
        axes[i] = i;
        back[i] = b < 0 ? -b : 0;
        back[x->rank + i] = e < 0 ? -e : 0;
        cropped |= b < 0 || e < 0;
    }
    in[0] = gc->output_grads[0];
    if ((st = opu_grad_ints(gc, starts, x->rank, &in[1])) != POPC_OK ||
        (st = opu_grad_ints(gc, ends, x->rank, &in[2])) != POPC_OK ||
        (st = opu_grad_ints(gc, axes, x->rank, &in[3])) != POPC_OK)
        return st;
    if (!cropped)
        return opu_grad_node(gc, NULL, "Slice", in, 4, NULL, 0,
                             &gc->input_grads[0]);
    if ((st = opu_grad_node(gc, NULL, "Slice", in, 4, NULL, 0, &t)) !=
        POPC_OK)
        return st;
    in[0] = t;
    if ((st = opu_grad_ints(gc, back, 2 * x->rank, &in[1])) != POPC_OK)
        return st;
    return opu_grad_node(gc, NULL, "Pad", in, 2, NULL, 0,
                         &gc->input_grads[0]);
}

/* ---- DepthToSpace, SpaceToDepth ------------------------------------------ */

/* dX = Reshape(Transpose(Reshape(dY, mid), perm), x) */
static popc_status rearrange_back(popc_grad_ctx *gc, const int64_t *mid,
                                  const int64_t *perm)
{
    const popc_view *x = &gc->input_info[0];
    popc_attr p = {.name = "perm", .type = POPC_ATTR_INTS, .n = 6,
                   .ints = perm};
    int a, b;
    popc_status st;

    if ((st = reshape_to(gc, gc->output_grads[0], mid, 6, &a)) != POPC_OK ||
        (st = opu_grad_node(gc, NULL, "Transpose", &a, 1, &p, 1, &b)) !=
            POPC_OK)
        return st;
    return reshape_to(gc, b, x->dims, x->rank, &gc->input_grads[0]);
}

popc_status top_depth_to_space_grad(popc_grad_ctx *gc)
{
    const popc_view *x = &gc->input_info[0];
    int64_t b = popc_attr_int(gc->attrs, "blocksize", 1);
    int crd = strcmp(popc_attr_string(gc->attrs, "mode", "DCR"), "CRD") == 0;
    static const int64_t dcr[6] = {0, 3, 5, 1, 2, 4};
    static const int64_t crd_inv[6] = {0, 1, 3, 5, 2, 4};
    int64_t mid[6];

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if (x->rank != 4 || b < 1)
        return opu_error(POPC_EINVAL, "DepthToSpace",
                         gc->node_name, "needs a 4-D input and blocksize");
    /* the forward's transposed tensor: [N, C', H, b, W, b] */
    mid[0] = x->dims[0];
    mid[1] = x->dims[1] / (b * b);
    mid[2] = x->dims[2];
    mid[3] = b;
    mid[4] = x->dims[3];
    mid[5] = b;
    return rearrange_back(gc, mid, crd ? crd_inv : dcr);
}

popc_status top_space_to_depth_grad(popc_grad_ctx *gc)
{
    const popc_view *x = &gc->input_info[0];
    int64_t b = popc_attr_int(gc->attrs, "blocksize", 1);
    static const int64_t inv[6] = {0, 3, 4, 1, 5, 2};
    int64_t mid[6];

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if (x->rank != 4 || b < 1)
        return opu_error(POPC_EINVAL, "SpaceToDepth",
                         gc->node_name, "needs a 4-D input and blocksize");
    /* the forward's transposed tensor: [N, b, b, C, H/b, W/b] */
    mid[0] = x->dims[0];
    mid[1] = b;
    mid[2] = b;
    mid[3] = x->dims[1];
    mid[4] = x->dims[2] / b;
    mid[5] = x->dims[3] / b;
    return rearrange_back(gc, mid, inv);
}

/* ---- CumSum, ReverseSequence, Trilu ----------------------------------------- */

popc_status top_cumsum_grad(popc_grad_ctx *gc)
{
    popc_attr a[2] = {popc_attr_make_int("exclusive",
                               popc_attr_int(gc->attrs, "exclusive", 0)),
                      popc_attr_make_int("reverse",
                               !popc_attr_int(gc->attrs, "reverse", 0))};
    int in[2] = {gc->output_grads[0], gc->inputs[1]};

    if (in[0] < 0)
        return POPC_OK;
    return opu_grad_node(gc, NULL, "CumSum", in, 2, a, 2,
                         &gc->input_grads[0]);
}

/* The same op, inputs and attributes on dY in place of the data. */
static popc_status same_op_grad(popc_grad_ctx *gc, const char *op)
{
    int in[2] = {gc->output_grads[0], gc->n_inputs > 1 ? gc->inputs[1] : -1};

    if (in[0] < 0)
        return POPC_OK;
    return opu_grad_node(gc, NULL, op, in, gc->n_inputs, gc->attrs->items,
                         gc->attrs->n, &gc->input_grads[0]);
}

popc_status top_reverse_sequence_grad(popc_grad_ctx *gc)
{
    return same_op_grad(gc, "ReverseSequence");
}

popc_status top_trilu_grad(popc_grad_ctx *gc)
{
    return same_op_grad(gc, "Trilu");
}

/* ---- gathers and scatters -------------------------------------------------- */

/* ScatterElements/ScatterND(zeros like input 0, indices, dY, add) */
static popc_status gather_back(popc_grad_ctx *gc, const char *scatter)
{
    popc_attr a[2] = {
        popc_attr_make_string("reduction", "add"),
        popc_attr_make_int("axis", popc_attr_int(gc->attrs, "axis", 0))};
    int in[3];
    popc_status st;

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if ((st = zeros_like(gc, &gc->input_info[0], &in[0])) != POPC_OK)
        return st;
    in[1] = gc->inputs[1];
    in[2] = gc->output_grads[0];
    return opu_grad_node(gc, NULL, scatter, in, 3, a,
                         strcmp(scatter, "ScatterND") == 0 ? 1 : 2,
                         &gc->input_grads[0]);
}

popc_status top_gather_elements_grad(popc_grad_ctx *gc)
{
    return gather_back(gc, "ScatterElements");
}

popc_status top_gather_nd_grad(popc_grad_ctx *gc)
{
    if (popc_attr_int(gc->attrs, "batch_dims", 0) != 0)
        return opu_error(POPC_EUNSUPPORTED, "GatherND",
                         gc->node_name, "batch_dims != 0 has no gradient "
                         "yet");
    return gather_back(gc, "ScatterND");
}

/* data: dY, with the updated places zeroed unless updates add; updates:
** the gather of dY at the indices */
static popc_status scatter_back(popc_grad_ctx *gc, const char *op,
                                const char *scatter, const char *gather)
{
    const char *red = popc_attr_string(gc->attrs, "reduction", "none");
    int nd = strcmp(scatter, "ScatterND") == 0;
    popc_attr axis =
        popc_attr_make_int("axis", popc_attr_int(gc->attrs, "axis", 0));
    int in[3];
    popc_status st;

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if (strcmp(red, "none") != 0 && strcmp(red, "add") != 0)
        return opu_error(POPC_EUNSUPPORTED, op, gc->node_name,
                         "reduction '%s' has no gradient yet (none and add "
                         "have)", red);
    if (strcmp(red, "add") == 0) {
        if ((st = opu_grad_node(gc, NULL, "Identity", &gc->output_grads[0], 1,
                                NULL, 0, &gc->input_grads[0])) != POPC_OK)
            return st;
    } else {
        in[0] = gc->output_grads[0];
        in[1] = gc->inputs[1];
        if ((st = zeros_like(gc, &gc->input_info[2], &in[2])) != POPC_OK ||
            (st = opu_grad_node(gc, NULL, scatter, in, 3, &axis, nd ? 0 : 1,
                                &gc->input_grads[0])) != POPC_OK)
            return st;
    }
    in[0] = gc->output_grads[0];
    in[1] = gc->inputs[1];
    return opu_grad_node(gc, NULL, gather, in, 2, &axis, nd ? 0 : 1,
                         &gc->input_grads[2]);
}

popc_status top_scatter_elements_grad(popc_grad_ctx *gc)
{
    return scatter_back(gc, "ScatterElements", "ScatterElements",
                        "GatherElements");
}

popc_status top_scatter_grad(popc_grad_ctx *gc)
{
    return scatter_back(gc, "Scatter", "ScatterElements", "GatherElements");
}

popc_status top_scatter_nd_grad(popc_grad_ctx *gc)
{
    return scatter_back(gc, "ScatterND", "ScatterND", "GatherND");
}

/* Compress keeps the positions where the (constant) condition holds:
** GatherGrad of dY at those positions, along axis or over the flattened
** input. */
popc_status top_compress_grad(popc_grad_ctx *gc)
{
    const popc_view *x = &gc->input_info[0], *c = &gc->input_info[1];
    const popc_attr *ax = popc_attrs_find(gc->attrs, "axis");
    int64_t flat = popc_view_numel(x), dim, kept = 0;
    popc_attr a[2] = {{.name = "axis", .type = POPC_ATTR_INT},
                      {.name = "shape", .type = POPC_ATTR_INTS}};
    int64_t *idx;
    popc_view iv;
    int in[2], g;
    popc_status st;

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if (!c->data || c->rank != 1)
        return opu_error(POPC_EUNSUPPORTED, "Compress",
                         gc->node_name, "the gradient needs the condition "
                         "as a 1-D constant");
    a[0].i = 0;
    if (ax)
        a[0].i = ax->i < 0 ? ax->i + x->rank : ax->i;
    dim = ax ? x->dims[a[0].i] : flat;
    if (!(idx = gc->host->alloc(sizeof *idx * (size_t)(dim + 1))))
        return opu_error(POPC_ENOMEM, "Compress", gc->node_name,
                         "out of memory");
    for (int64_t i = 0; i < dim && i < c->dims[0]; i++)
        if (opu_load_i(c, i))
            idx[kept++] = i;
    memset(&iv, 0, sizeof iv);
    iv.dtype = POPC_DTYPE_I64;
    iv.rank = 1;
    iv.dims[0] = kept;
    iv.data = idx;
    st = gc->host->grad_constant(gc, &iv, &in[1]);
    gc->host->free(idx);
    if (st != POPC_OK)
        return st;
    in[0] = gc->output_grads[0];
    if (ax) {
        a[1].n = x->rank;
        a[1].ints = x->dims;
        return opu_grad_node(gc, "popc", "GatherGrad", in, 2, a, 2,
                             &gc->input_grads[0]);
    }
    a[1].n = 1;
    a[1].ints = &flat;
    if ((st = opu_grad_node(gc, "popc", "GatherGrad", in, 2, a, 2, &g)) !=
        POPC_OK)
        return st;
    return reshape_to(gc, g, x->dims, x->rank, &gc->input_grads[0]);
}

/* TopK: dValues added at the chosen indices */
popc_status top_topk_grad(popc_grad_ctx *gc)
{
    popc_attr a[2] = {
        popc_attr_make_string("reduction", "add"),
        popc_attr_make_int("axis", popc_attr_int(gc->attrs, "axis", -1))};
    int in[3];
    popc_status st;

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if (gc->n_outputs > 1 && gc->outputs[1] >= 0) {
        in[1] = gc->outputs[1];
    } else {
        /* a node without its indices output: ask a twin for them */
        int twin[2];

        if ((st = gc->host->grad_add_node(gc, NULL, "TopK", gc->inputs, 2,
                                          twin, 2, gc->attrs->items,
                                          gc->attrs->n)) != POPC_OK)
            return st;
        in[1] = twin[1];
    }
    if ((st = zeros_like(gc, &gc->input_info[0], &in[0])) != POPC_OK)
        return st;
    in[2] = gc->output_grads[0];
    return opu_grad_node(gc, NULL, "ScatterElements", in, 3, a, 2,
                         &gc->input_grads[0]);
}

popc_status top_hardmax_grad(popc_grad_ctx *gc)
{
    if (gc->output_grads[0] < 0)
        return POPC_OK;
    return zeros_like(gc, &gc->input_info[0], &gc->input_grads[0]);
}
