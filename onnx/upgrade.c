/* upgrade.c - old ai.onnx node forms rewritten to the forms popc's ops
** implement, as onnx's version converter does.
**
** popc registers one definition per op version whose semantics it
** implements. A node of a model at opset O uses the op's schema in force
** at O (the newest history entry <= O, history.c). When popc's definition
** covers that schema, the node is used as it is. Otherwise the node is
** walked from its schema version to the version popc registers, through
** every version in between at which the op changed. Most changes only
** add element types or optional features with defaults that keep the old
** behaviour; those need nothing. The changes below do need a rewrite:
** attributes that became inputs (Reshape 5, Slice 10, Pad 11, Clip 11,
** Dropout 12, TopK 10, Squeeze/Unsqueeze/ReduceSum/Split 13), attributes
** that were removed (consumed_inputs 6, broadcast 7, is_test and spatial
** of BatchNormalization 7/9, Dropout 7), a default that became required
** (Concat 4), and a changed meaning (Softmax, LogSoftmax and Hardmax 13
** coerce to 2-D before 13; rewritten as Flatten, the op on the last axis,
** and Reshape back unless the axis already is the last one).
** A change popc cannot express fails with the reason.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_priv.h"

popc_status popco_node_add_input(popco_node *n, int value)
{
    if (n->n_inputs == n->cap_inputs) {
        int cap = n->cap_inputs ? n->cap_inputs * 2 : 8;
        int *grown = realloc(n->inputs, (size_t)cap * sizeof *grown);

        if (!grown)
            return popc_set_error(POPC_ENOMEM, "out of memory");
        n->inputs = grown;
        n->cap_inputs = cap;
    }
    n->inputs[n->n_inputs++] = value;
    return POPC_OK;
}

/* Put value at input position pos, padding with absent inputs. */
static popc_status set_input(popco_node *n, int pos, int value)
{
    popc_status st;

    while (n->n_inputs <= pos)
        if ((st = popco_node_add_input(n, -1)) != POPC_OK)
            return st;
    n->inputs[pos] = value;
    return POPC_OK;
}

static popc_status const_ints(popco_importer *im, const int64_t *v,
                              int64_t n, popc_dtype dt, int *id)
{
    popc_tensor *t = NULL;
    int64_t dims[1] = {n};
    popc_status st;

    if ((st = popc_tensor_new(POPC_DTYPE_I64, dims, 1, &t)) != POPC_OK)
        return st;
    if (n)
        memcpy(popc_tensor_data(t), v, (size_t)n * sizeof *v);
    if (dt != POPC_DTYPE_I64) {
        popc_tensor *c = NULL;

        st = popc_tensor_cast(t, dt, &c);
        popc_tensor_free(t);
        if (st != POPC_OK)
            return st;
        t = c;
    }
    st = popco_add_constant(im, t, id);
    popc_tensor_free(t);
    return st;
}

static popc_status const_scalar(popco_importer *im, double v, popc_dtype dt,
                                int *id)
{
    popc_tensor *t = NULL, *c = NULL;
    popc_status st;

    if ((st = popc_tensor_new(POPC_DTYPE_F64, NULL, 0, &t)) != POPC_OK)
        return st;
    *(double *)popc_tensor_data(t) = v;
    st = popc_tensor_cast(t, dt, &c);
    popc_tensor_free(t);
    if (st != POPC_OK)
        return st;
    st = popco_add_constant(im, c, id);
    popc_tensor_free(c);
    return st;
}

/* The INTS attribute `name`, if present, becomes an int64 input at pos. */
static popc_status ints_attr_to_input(popco_importer *im, popco_node *n,
                                      const char *name, int pos)
{
    popc_attr *a = popco_attrs_find(&n->attrs, name);
    int id;
    popc_status st;

    if (!a)
        return POPC_OK;
    if (a->type != POPC_ATTR_INT && a->type != POPC_ATTR_INTS)
        return popc_set_error(POPC_EINVAL, "node '%s' (%s): attribute '%s' "
                              "must be integers", n->name, n->op, name);
    if (a->type == POPC_ATTR_INT)
        st = const_ints(im, &a->i, 1, POPC_DTYPE_I64, &id);
    else
        st = const_ints(im, a->ints, a->n, POPC_DTYPE_I64, &id);
    if (st != POPC_OK || (st = set_input(n, pos, id)) != POPC_OK)
        return st;
    popco_attrs_remove(&n->attrs, name);
    return POPC_OK;
}

static popc_dtype input_dtype(popco_importer *im, const popco_node *n, int i)
{
    if (i >= n->n_inputs || n->inputs[i] < 0)
        return POPC_DTYPE_UNDEFINED;
    return popc_graph_value_info(im->g, n->inputs[i]).dtype;
}

static popc_status unsupported(const popco_node *n, int from, int to,
                               const char *why)
{
    return popc_set_error(POPC_EUNSUPPORTED, "node '%s' (%s-%d): cannot be "
                          "upgraded to %s-%d, which popc implements: %s",
                          n->name, n->op, from, n->op, to, why);
}

/* Softmax-family ops before 13 flatten the input to 2-D at axis and
** normalise each row; from 13 they work along one axis. */
static popc_status coerced_softmax(popco_importer *im, popco_node *n,
                                   int from)
{
    popc_attr *a = popco_attrs_find(&n->attrs, "axis");
    int64_t axis = a ? a->i : 1;
    popc_view x = popc_graph_value_info(im->g, n->n_inputs ? n->inputs[0]
                                                         : -1);
    int flat, sm, shape;
    popc_attr fa = {.name = "axis", .type = POPC_ATTR_INT};
    popc_attr la = {.name = "axis", .type = POPC_ATTR_INT, .i = -1};
    char name[512];
    popc_status st;

    if (x.dtype == POPC_DTYPE_UNDEFINED)
        return unsupported(n, from, 13, "the input's shape is unknown");
    if (axis < 0)
        axis += x.rank;
    if (axis == x.rank - 1 || x.rank == 0) {
        popco_attrs_remove(&n->attrs, "axis");
        return popco_attrs_add_int(&n->attrs, "axis", -1);
    }
    /* Flatten(axis) -> op(axis=-1) -> Reshape(x's shape); the node itself
    ** becomes the Reshape so its outputs keep their names. */
    fa.i = axis;
    snprintf(name, sizeof name, "%s/flatten", n->name);
    if ((st = popc_graph_add_node(im->g, POPC_DOMAIN_ONNX, "Flatten", 13,
                                  &n->inputs[0], 1, &flat, 1, &fa, 1, name,
                                  NULL)) != POPC_OK)
        return st;
    snprintf(name, sizeof name, "%s/%s", n->name, n->op);
    if ((st = popc_graph_add_node(im->g, POPC_DOMAIN_ONNX, n->op, 13, &flat,
                                  1, &sm, 1, &la, 1, name, NULL)) != POPC_OK)
        return st;
    if ((st = const_ints(im, x.dims, x.rank, POPC_DTYPE_I64, &shape)) !=
        POPC_OK)
        return st;
    n->op = "Reshape";
    n->version = 14;
    n->n_inputs = 0;
    popco_attrs_free(&n->attrs);
    if ((st = popco_node_add_input(n, sm)) != POPC_OK)
        return st;
    return popco_node_add_input(n, shape);
}

/* Before opset 7, B broadcast to A starting at dimension `axis`; numpy
** broadcasting aligns the last dimensions, so B gets trailing 1s. */
static popc_status legacy_broadcast(popco_importer *im, popco_node *n,
                                    int from, int v, int64_t axis)
{
    popc_view a = popc_graph_value_info(im->g, n->n_inputs > 1
                                                   ? n->inputs[0]
                                                   : -1);
    popc_view b = popc_graph_value_info(im->g, n->n_inputs > 1
                                                   ? n->inputs[1]
                                                   : -1);
    int64_t shape[POPC_MAX_RANK];
    int rank, id, out;
    char name[512];
    popc_status st;

    if (a.dtype == POPC_DTYPE_UNDEFINED || b.dtype == POPC_DTYPE_UNDEFINED)
        return unsupported(n, from, v, "broadcasting along an axis needs "
                           "known shapes");
    if (axis < 0)
        axis += a.rank;
    rank = (int)(a.rank - axis);
    if (axis < 0 || rank < b.rank || rank > POPC_MAX_RANK)
        return unsupported(n, from, v, "the broadcast axis does not fit the "
                           "shapes");
    for (int d = 0; d < rank; d++)
        shape[d] = d < b.rank ? b.dims[d] : 1;
    if ((st = const_ints(im, shape, rank, POPC_DTYPE_I64, &id)) != POPC_OK)
        return st;
    snprintf(name, sizeof name, "%s/broadcast_axis", n->name);
    if ((st = popc_graph_add_node(im->g, POPC_DOMAIN_ONNX, "Reshape", 14,
                                  (int[]){n->inputs[1], id}, 2, &out, 1,
                                  NULL, 0, name, NULL)) != POPC_OK)
        return st;
    n->inputs[1] = out;
    return POPC_OK;
}

/* PRelu before opset 7 applied a 1-D slope per channel (dimension 1). */
static popc_status legacy_prelu(popco_importer *im, popco_node *n)
{
    popc_view x = popc_graph_value_info(im->g, n->n_inputs > 1
                                                   ? n->inputs[0]
                                                   : -1);
    popc_view s = popc_graph_value_info(im->g, n->n_inputs > 1
                                                   ? n->inputs[1]
                                                   : -1);
    int64_t shape[POPC_MAX_RANK];
    int id, out;
    char name[512];
    popc_status st;

    if (x.rank < 3 || s.rank != 1 || s.dims[0] == 1 || s.dims[0] !=
                                                           x.dims[1])
        return POPC_OK;
    shape[0] = s.dims[0];
    for (int d = 1; d < x.rank - 1; d++)
        shape[d] = 1;
    if ((st = const_ints(im, shape, x.rank - 1, POPC_DTYPE_I64, &id)) !=
        POPC_OK)
        return st;
    snprintf(name, sizeof name, "%s/slope_per_channel", n->name);
    if ((st = popc_graph_add_node(im->g, POPC_DOMAIN_ONNX, "Reshape", 14,
                                  (int[]){n->inputs[1], id}, 2, &out, 1,
                                  NULL, 0, name, NULL)) != POPC_OK)
        return st;
    n->inputs[1] = out;
    return POPC_OK;
}

/* Upsample (deprecated at 10) and Resize-10 are Resize-13 with
** asymmetric coordinates and nearest neighbours rounded down; their scales
** become input 2 (an attribute before Upsample-9). */
static popc_status to_resize(popco_importer *im, popco_node *n)
{
    popc_attr *sc = popco_attrs_find(&n->attrs, "scales");
    int scales = n->n_inputs > 1 ? n->inputs[1] : -1;
    popc_status st;

    if (n->n_inputs < 1)
        return unsupported(n, n->version, 13, "it has no input");
    if (sc && sc->type != POPC_ATTR_FLOATS)
        return popc_set_error(POPC_EINVAL, "node '%s' (%s): attribute "
                              "'scales' must be floats", n->name, n->op);
    if (sc) {
        popc_tensor *t = NULL;
        int64_t d[1] = {sc->n};

        if ((st = popc_tensor_new(POPC_DTYPE_F32, d, 1, &t)) != POPC_OK)
            return st;
        for (int64_t i = 0; i < sc->n; i++)
            ((float *)popc_tensor_data(t))[i] = (float)sc->floats[i];
        st = popco_add_constant(im, t, &scales);
        popc_tensor_free(t);
        if (st != POPC_OK)
            return st;
        popco_attrs_remove(&n->attrs, "scales");
    }
    n->n_inputs = 1;
    if ((st = popco_node_add_input(n, -1)) != POPC_OK ||
        (st = popco_node_add_input(n, scales)) != POPC_OK)
        return st;
    popco_attrs_remove(&n->attrs, "coordinate_transformation_mode");
    popco_attrs_remove(&n->attrs, "nearest_mode");
    if ((st = popco_attrs_add_string(&n->attrs,
                                     "coordinate_transformation_mode",
                                     "asymmetric")) != POPC_OK ||
        (st = popco_attrs_add_string(&n->attrs, "nearest_mode", "floor")) !=
            POPC_OK)
        return st;
    n->op = "Resize";
    n->version = 13;
    return POPC_OK;
}

/* One step of the walk: the op changed at version v (from the form of
** version `from`). */
static popc_status step(popco_importer *im, popco_node *n, int from, int v)
{
    const char *op = n->op;
    popc_status st = POPC_OK;

    if (v == 6)
        popco_attrs_remove(&n->attrs, "consumed_inputs");
    if (v == 7 && (!strcmp(op, "Add") || !strcmp(op, "Sub") ||
                   !strcmp(op, "Mul") || !strcmp(op, "Div") ||
                   !strcmp(op, "Pow") || !strcmp(op, "Gemm") ||
                   !strcmp(op, "Equal") || !strcmp(op, "Greater") ||
                   !strcmp(op, "Less") || !strcmp(op, "And") ||
                   !strcmp(op, "Or") || !strcmp(op, "Xor") ||
                   !strcmp(op, "PRelu"))) {
        popc_attr *ax = popco_attrs_find(&n->attrs, "axis");

        if (ax && popc_attr_int(&POPC_ATTRS(n->attrs.n, n->attrs.items),
                                "broadcast", 0) &&
            (st = legacy_broadcast(im, n, from, v, ax->i)) != POPC_OK)
            return st;
        popco_attrs_remove(&n->attrs, "broadcast");
        popco_attrs_remove(&n->attrs, "axis");
    }
    if (!strcmp(op, "Resize") && v == 11)
        return to_resize(im, n);
    if (!strcmp(op, "PRelu") && v == 7 && (st = legacy_prelu(im, n)) !=
                                              POPC_OK)
        return st;
    if (!strcmp(op, "Reshape") && v == 5)
        st = ints_attr_to_input(im, n, "shape", 1);
    else if (!strcmp(op, "Slice") && v == 10) {
        if ((st = ints_attr_to_input(im, n, "starts", 1)) == POPC_OK &&
            (st = ints_attr_to_input(im, n, "ends", 2)) == POPC_OK)
            st = ints_attr_to_input(im, n, "axes", 3);
    } else if (!strcmp(op, "Pad") && v == 11) {
        popc_attr *val = popco_attrs_find(&n->attrs, "value");
        int id;

        if ((st = ints_attr_to_input(im, n, "pads", 1)) != POPC_OK)
            return st;
        if (val) {
            if ((st = const_scalar(im, val->f, input_dtype(im, n, 0), &id)) !=
                    POPC_OK ||
                (st = set_input(n, 2, id)) != POPC_OK)
                return st;
            popco_attrs_remove(&n->attrs, "value");
        }
    } else if (!strcmp(op, "Clip") && v == 11) {
        popc_attr *lo = popco_attrs_find(&n->attrs, "min");
        popc_attr *hi = popco_attrs_find(&n->attrs, "max");
        popc_dtype dt = input_dtype(im, n, 0);
        int id;

        if (lo) {
            if ((st = const_scalar(im, lo->f, dt, &id)) != POPC_OK ||
                (st = set_input(n, 1, id)) != POPC_OK)
                return st;
        }
        if (hi) {
            if ((st = const_scalar(im, hi->f, dt, &id)) != POPC_OK ||
                (st = set_input(n, 2, id)) != POPC_OK)
                return st;
        }
        popco_attrs_remove(&n->attrs, "min");
        popco_attrs_remove(&n->attrs, "max");
    } else if (!strcmp(op, "Dropout") && (v == 7 || v == 12)) {
        popco_attrs_remove(&n->attrs, "is_test");
        if (v == 12) {
            popc_attr *r = popco_attrs_find(&n->attrs, "ratio");
            int id;

            if (r) {
                if ((st = const_scalar(im, r->f, POPC_DTYPE_F32, &id)) !=
                        POPC_OK ||
                    (st = set_input(n, 1, id)) != POPC_OK)
                    return st;
                popco_attrs_remove(&n->attrs, "ratio");
            }
        }
    } else if (!strcmp(op, "TopK") && v == 10) {
        popc_attr *k = popco_attrs_find(&n->attrs, "k");
        int id;

        if (k) {
            if ((st = const_ints(im, &k->i, 1, POPC_DTYPE_I64, &id)) !=
                    POPC_OK ||
                (st = set_input(n, 1, id)) != POPC_OK)
                return st;
            popco_attrs_remove(&n->attrs, "k");
        }
    } else if (v == 13 && (!strcmp(op, "Squeeze") ||
                           !strcmp(op, "Unsqueeze") ||
                           !strcmp(op, "ReduceSum"))) {
        st = ints_attr_to_input(im, n, "axes", 1);
    } else if (!strcmp(op, "Split") && v == 13) {
        st = ints_attr_to_input(im, n, "split", 1);
    } else if (!strcmp(op, "BatchNormalization") && (v == 7 || v == 9)) {
        popc_attrs a = POPC_ATTRS(n->attrs.n, n->attrs.items);

        if (popco_attrs_find(&n->attrs, "spatial") &&
            popc_attr_int(&a, "spatial", 1) == 0)
            return unsupported(n, from, v, "spatial = 0 (statistics per "
                               "element) was removed from ONNX");
        popco_attrs_remove(&n->attrs, "spatial");
        popco_attrs_remove(&n->attrs, "is_test");
    } else if (!strcmp(op, "Concat") && v == 4) {
        if (!popco_attrs_find(&n->attrs, "axis"))
            st = popco_attrs_add_int(&n->attrs, "axis", 1);
    } else if (v == 13 && (!strcmp(op, "Softmax") ||
                           !strcmp(op, "LogSoftmax") ||
                           !strcmp(op, "Hardmax"))) {
        st = coerced_softmax(im, n, from);
    }
    return st;
}

popc_status popco_upgrade(popco_importer *im, popco_node *n, int opset)
{
    const popc_op_def *direct, *newest;
    const int *hist;
    int n_hist, schema, target;
    popc_status st;

    if (!strcmp(n->op, "Upsample") &&
        !popc_registry_find_op(im->reg, n->domain, n->op, opset))
        return to_resize(im, n);
    schema = popco_schema_version(n->op, opset);
    direct = popc_registry_find_op(im->reg, n->domain, n->op, opset);
    n->version = opset;
    if (schema == 0 || (direct && direct->since_version >= schema))
        return POPC_OK;
    newest = popc_registry_find_op(im->reg, n->domain, n->op, 1 << 30);
    if (!newest)
        return POPC_OK; /* unsupported: reported with the others */
    target = newest->since_version;
    hist = popco_op_history(n->op, &n_hist);
    if (target < schema) {
        /* popc's newest definition predates the model's schema; the
        ** changes since were type additions for every op popc has */
        n->version = target;
        return POPC_OK;
    }
    for (int i = 0; i < n_hist; i++) {
        const char *before = n->op;

        if (hist[i] <= schema || hist[i] > target)
            continue;
        if ((st = step(im, n, schema, hist[i])) != POPC_OK)
            return st;
        if (n->op != before)
            return POPC_OK; /* rewritten to another op (version set) */
    }
    n->version = target;
    return POPC_OK;
}
