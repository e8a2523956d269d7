/* dynamic_slice.c - poptorch.dynamic_slice and dynamic_update from ONNX
** ops, so that gradients come from Gather's and ScatterElements'.
**
** The offset rule is the IPU's (Poplar's dynamic-slice vertices): an
** offset outside 0..D-1 (negative ones included: they are unsigned there)
** is taken as 0, and a slice that runs past the end of the dimension
** wraps around to its start. So the rows read or written are
** (s + i) mod D for i < size, with s = start if 0 <= start < D, else 0.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/helpers.h"
#include "helpers/helpers_priv.h"

#define ADD(op, in, nin, out, attrs, nattrs)                                  \
    popc_graph_add_node(g, NULL, op, 0, in, nin, out, 1, attrs, nattrs, NULL, \
                        NULL)

/* The indices (s + i) mod D, i < size, as an int64 vector value. */
static popc_status row_indices(popc_graph *g, const char *who, int start,
                               int64_t dim_size, int64_t size, int *out)
{
    popc_view sv = popc_graph_value_info(g, start);
    /* Cast's "to" is ONNX's TensorProto type number: 7 is INT64 */
    popc_attr to = {.name = "to", .type = POPC_ATTR_INT, .i = 7};
    int64_t zero = 0, d = dim_size, shape[1] = {1};
    int64_t *steps = malloc(sizeof(int64_t) * (size_t)(size + 1));
    int s, c0, cd, cshape, ge, lt, ok, v, r, m, in[3];
    popc_status st;
    char buf[128];

    if (!steps)
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", who);
    if ((sv.dtype != POPC_DTYPE_I32 && sv.dtype != POPC_DTYPE_I64) ||
        popc_view_numel(&sv) != 1) {
        free(steps);
        return popc_set_error(POPC_EINVAL, "%s: start is %s; give an int32 "
                              "or int64 value with one element", who,
                              popc_view_describe(&sv, buf, sizeof buf));
    }
    for (int64_t i = 0; i < size; i++)
        steps[i] = i;
    st = helpers_const_i64(g, NULL, steps, (int)size, 1, &r);
    free(steps);
    in[0] = start;
    if (st != POPC_OK || (st = ADD("Cast", in, 1, &s, &to, 1)) != POPC_OK ||
        (st = helpers_const_i64(g, NULL, shape, 1, 1, &cshape)) != POPC_OK ||
        (st = helpers_const_i64(g, NULL, &zero, 1, 0, &c0)) != POPC_OK ||
        (st = helpers_const_i64(g, NULL, &d, 1, 0, &cd)) != POPC_OK)
        return st;
    in[0] = s;
    in[1] = cshape;
    if ((st = ADD("Reshape", in, 2, &s, NULL, 0)) != POPC_OK)
        return st;
    /* s if 0 <= s < D, else 0 */
    in[0] = s;
    in[1] = c0;
    if ((st = ADD("GreaterOrEqual", in, 2, &ge, NULL, 0)) != POPC_OK)
        return st;
    in[1] = cd;
    if ((st = ADD("Less", in, 2, &lt, NULL, 0)) != POPC_OK)
        return st;
    in[0] = ge;
    in[1] = lt;
    if ((st = ADD("And", in, 2, &ok, NULL, 0)) != POPC_OK)
        return st;
    in[0] = ok;
    in[1] = s;
    in[2] = c0;
    if ((st = ADD("Where", in, 3, &v, NULL, 0)) != POPC_OK)
        return st;
    in[0] = v;
    in[1] = r;
    if ((st = ADD("Add", in, 2, &v, NULL, 0)) != POPC_OK)
        return st;
    in[0] = v;
    in[1] = cd;
    if ((st = ADD("Mod", in, 2, &m, NULL, 0)) != POPC_OK)
        return st;
    *out = m;
    return POPC_OK;
}

static popc_status check_dim(popc_graph *g, const char *who, int x, int dim,
                             int64_t size, popc_view *xv, int *axis)
{
    char buf[128];

    *xv = popc_graph_value_info(g, x);
    if (xv->dtype == POPC_DTYPE_UNDEFINED || xv->rank < 1)
        return popc_set_error(POPC_EINVAL, "%s: the sliced value is %s; it "
                              "needs a known shape of rank 1 or more", who,
                              popc_view_describe(xv, buf, sizeof buf));
    *axis = dim < 0 ? dim + xv->rank : dim;
    if (*axis < 0 || *axis >= xv->rank)
        return popc_set_error(POPC_EINVAL, "%s: dim %d is outside a rank-%d "
                              "value; give -%d..%d", who, dim, xv->rank,
                              xv->rank, xv->rank - 1);
    if (size < 1 || size > xv->dims[*axis])
        return popc_set_error(POPC_EINVAL, "%s: size %lld does not fit dim %d "
                              "of %lld elements; give 1..%lld", who,
                              (long long)size, dim,
                              (long long)xv->dims[*axis],
                              (long long)xv->dims[*axis]);
    return POPC_OK;
}

popc_status popc_dynamic_slice(popc_graph *g, int x, int dim, int start,
                               int64_t size, int64_t step, int *y)
{
    const char *who = "dynamic_slice";
    popc_attr axis_attr = {.name = "axis", .type = POPC_ATTR_INT};
    popc_view xv;
    int axis, idx, in[2];
    popc_status st;

    if (!g || !y)
        return popc_set_error(POPC_EINVAL, "%s: graph or y is NULL", who);
    if (step != 1)
        return popc_set_error(POPC_EUNSUPPORTED, "%s: step %lld is not "
                              "supported yet; only step 1 (slice with step 1 "
                              "and take every step-th row with Slice)", who,
                              (long long)step);
    if ((st = check_dim(g, who, x, dim, size, &xv, &axis)) != POPC_OK ||
        (st = row_indices(g, who, start, xv.dims[axis], size, &idx)) !=
            POPC_OK)
        return st;
    axis_attr.i = axis;
    in[0] = x;
    in[1] = idx;
    return ADD("Gather", in, 2, y, &axis_attr, 1);
}

/* ScatterElements wants indices shaped like src: the row indices along
** axis, broadcast over the other dims of shape. */
static popc_status rows_like(popc_graph *g, int idx, int rank, int axis,
                             int64_t size, const int64_t *shape, int *out)
{
    int64_t view[POPC_MAX_RANK];
    int cview, cfull, reshaped, in[2];
    popc_status st;

    for (int d = 0; d < rank; d++)
        view[d] = d == axis ? size : 1;
    if ((st = helpers_const_i64(g, NULL, view, rank, 1, &cview)) != POPC_OK ||
        (st = helpers_const_i64(g, NULL, shape, rank, 1, &cfull)) != POPC_OK)
        return st;
    in[0] = idx;
    in[1] = cview;
    if ((st = ADD("Reshape", in, 2, &reshaped, NULL, 0)) != POPC_OK)
        return st;
    in[0] = reshaped;
    in[1] = cfull;
    return ADD("Expand", in, 2, out, NULL, 0);
}

popc_status popc_dynamic_update(popc_graph *g, int input, int src, int dim,
                                int start, int64_t size, int *y)
{
    const char *who = "dynamic_update";
    popc_attr axis_attr = {.name = "axis", .type = POPC_ATTR_INT};
    popc_view xv, sv, want;
    int axis, idx, in[3];
    char a[128], b[128];
    popc_status st;

    if (!g || !y)
        return popc_set_error(POPC_EINVAL, "%s: graph or y is NULL", who);
    if ((st = check_dim(g, who, input, dim, size, &xv, &axis)) != POPC_OK)
        return st;
    sv = popc_graph_value_info(g, src);
    want = xv;
    want.dims[axis] = size;
    if (!helpers_same_type(&sv, &want))
        return popc_set_error(POPC_EINVAL, "%s: src is %s; it must be %s "
                              "(input's dtype and rank, size %lld along dim "
                              "%d)", who, popc_view_describe(&sv, a, sizeof a),
                              popc_view_describe(&want, b, sizeof b),
                              (long long)size, dim);
    if ((st = row_indices(g, who, start, xv.dims[axis], size, &idx)) !=
            POPC_OK ||
        (st = rows_like(g, idx, xv.rank, axis, size, want.dims, &idx)) !=
            POPC_OK)
        return st;
    axis_attr.i = axis;
    in[0] = input;
    in[1] = idx;
    in[2] = src;
    return ADD("ScatterElements", in, 3, y, &axis_attr, 1);
}
