/* subgraph.c - ONNX graph attributes (the bodies of If, Loop and Scan) as
** popc subgraphs.
**
** ONNX lets a body read any value of the enclosing graphs by name; popc
** passes such values explicitly. The importer collects the names a node's
** bodies read but do not define (nested bodies included), adds them to
** every body as trailing inputs, and appends the outer values to the
** node's inputs in the same order (`__captures` counts them), so a body is
** a closed graph a kernel can run by itself.
**
** Body inputs take the dtype and shape the node gives them, not only the
** ones the file declares (often none): Loop's iteration count (int64
** scalar), condition (bool scalar) and loop-carried values (the node's
** initial values); Scan's states and one slice of each scan input (the
** scan axis removed). popc fixes every shape at compile.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_priv.h"

#define MAX_CAPTURES 4096

typedef struct names {
    const char **v;
    int n, cap;
} names;

static int names_has(const names *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->v[i], name) == 0)
            return 1;
    return 0;
}

static popc_status names_add(names *s, const char *name)
{
    if (names_has(s, name))
        return POPC_OK;
    if (s->n >= MAX_CAPTURES)
        return popc_set_error(POPC_EUNSUPPORTED, "a subgraph reads more than "
                              "%d outer values", MAX_CAPTURES);
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        const char **v = realloc(s->v, sizeof *v * (size_t)cap);

        if (!v)
            return popc_set_error(POPC_ENOMEM, "subgraph import: out of "
                                  "memory");
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = name;
    return POPC_OK;
}

int popco_has_subgraphs(const Onnx__NodeProto *np)
{
    for (size_t i = 0; i < np->n_attribute; i++)
        if (np->attribute[i]->has_type &&
            np->attribute[i]->type ==
                ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH &&
            np->attribute[i]->g)
            return 1;
    return 0;
}

/* name is an input, initializer or node output of gp */
static int defined_in(const Onnx__GraphProto *gp, const char *name)
{
    for (size_t i = 0; i < gp->n_input; i++)
        if (gp->input[i]->name && strcmp(gp->input[i]->name, name) == 0)
            return 1;
    for (size_t i = 0; i < gp->n_initializer; i++)
        if (gp->initializer[i]->name &&
            strcmp(gp->initializer[i]->name, name) == 0)
            return 1;
    for (size_t i = 0; i < gp->n_node; i++)
        for (size_t j = 0; j < gp->node[i]->n_output; j++)
            if (gp->node[i]->output[j] &&
                strcmp(gp->node[i]->output[j], name) == 0)
                return 1;
    return 0;
}

/* Names gp reads (its nodes and nested bodies) that it does not define. */
static popc_status free_names(const char *file, const Onnx__GraphProto *gp,
                              int depth, names *out)
{
    popc_status st;

    /* the wire check (wire.c) refused deeper files already; this keeps
    ** the recursion bounded for any ModelProto handed in */
    if (depth >= popc_limit_get(POPC_LIMIT_NESTING))
        return popc_limit_error(POPC_LIMIT_NESTING, file, "subgraphs (If, Loop or "
                                "Scan bodies) nested too deep", depth + 1);
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];

        for (size_t j = 0; j < np->n_input; j++) {
            const char *name = np->input[j];

            if (name && *name && !defined_in(gp, name) &&
                (st = names_add(out, name)) != POPC_OK)
                return st;
        }
        for (size_t a = 0; a < np->n_attribute; a++) {
            const Onnx__AttributeProto *ap = np->attribute[a];
            names inner = {0};

            if (!ap->has_type ||
                ap->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH ||
                !ap->g)
                continue;
            st = free_names(file, ap->g, depth + 1, &inner);
            for (int k = 0; st == POPC_OK && k < inner.n; k++)
                if (!defined_in(gp, inner.v[k]))
                    st = names_add(out, inner.v[k]);
            free(inner.v);
            if (st != POPC_OK)
                return st;
        }
    }
    return POPC_OK;
}

/* The dtype and shape the node gives body input k, or an UNDEFINED view
** when only the file's declaration can say. */
static popc_view given_input(const popco_importer *im, const popco_node *n,
                             const Onnx__NodeProto *np, int opset, int k)
{
    popc_view v;

    memset(&v, 0, sizeof v);
    if (strcmp(n->op, "Loop") == 0) {
        if (k == 0 || k == 1) {
            v.dtype = k == 0 ? POPC_DTYPE_I64 : POPC_DTYPE_BOOL;
            return v;
        }
        if (k < n->n_inputs && n->inputs[k] >= 0)
            return popc_graph_value_info(im->g, n->inputs[k]);
        return v;
    }
    if (strcmp(n->op, "Scan") == 0 && opset < 9) {
        /* batched: (sequence_lens, states [B, ...], sequences [B, T, ...]) */
        int64_t m = popco_node_attr_int(np, "num_scan_inputs", 0);
        int drop;

        if (k + 1 >= n->n_inputs || n->inputs[k + 1] < 0 || m < 1)
            return v;
        v = popc_graph_value_info(im->g, n->inputs[k + 1]);
        drop = k >= n->n_inputs - 1 - m ? 2 : 1;
        if (v.rank < drop)
            return v;
        memmove(v.dims, v.dims + drop,
                sizeof(int64_t) * (size_t)(v.rank - drop));
        v.rank -= drop;
        v.data = NULL;
        return v;
    }
    if (strcmp(n->op, "Scan") == 0) {
        int64_t m = 0, axes[64];
        int64_t n_axes = -1;
        int n_state;

        for (size_t a = 0; a < np->n_attribute; a++) {
            const Onnx__AttributeProto *ap = np->attribute[a];

            if (ap->name && strcmp(ap->name, "num_scan_inputs") == 0)
                m = ap->i;
            if (ap->name && strcmp(ap->name, "scan_input_axes") == 0) {
                n_axes = (int64_t)ap->n_ints;
                for (size_t i = 0; i < ap->n_ints && i < 64; i++)
                    axes[i] = ap->ints[i];
            }
        }
        n_state = (int)(n->n_inputs - m);
        if (k >= n->n_inputs || n->inputs[k] < 0 || m < 1 || n_state < 0)
            return v;
        v = popc_graph_value_info(im->g, n->inputs[k]);
        if (k >= n_state && v.rank > 0) {
            int64_t axis = k - n_state < n_axes && k - n_state < 64
                               ? axes[k - n_state]
                               : 0;

            if (axis < 0)
                axis += v.rank;
            if (axis < 0 || axis >= v.rank)
                axis = 0;
            for (int d = (int)axis; d + 1 < v.rank; d++)
                v.dims[d] = v.dims[d + 1];
            v.rank--;
        }
        v.data = NULL;
        return v;
    }
    return v;
}

/* A body input with the given dtype and shape, or its declared ones. */
static popc_status body_input(popco_importer *sub, const char *where,
                              const Onnx__ValueInfoProto *vi, popc_view given)
{
    const Onnx__TypeProto__Tensor *tt = NULL;
    int64_t dims[POPC_MAX_RANK];
    int id, rank;

    if (!vi->name || !*vi->name)
        return popc_set_error(POPC_EIO, "%s: %s: a body input has no name",
                              sub->file, where);
    if (given.dtype != POPC_DTYPE_UNDEFINED)
        return popc_graph_add_input(sub->g, vi->name, given.dtype, given.dims,
                                    given.rank, &id);
    if (vi->type && vi->type->value_case ==
                        ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        tt = vi->type->tensor_type;
    if (!tt || !tt->shape ||
        popco_dtype_from_onnx(tt->elem_type) == POPC_DTYPE_UNDEFINED ||
        tt->shape->n_dim > POPC_MAX_RANK)
        return popc_set_error(POPC_EUNSUPPORTED, "%s: %s: body input '%s' "
                              "has no tensor type with a shape, and the node "
                              "does not give one", sub->file, where,
                              vi->name);
    rank = (int)tt->shape->n_dim;
    for (int d = 0; d < rank; d++) {
        const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[d];

        if (dm->value_case !=
                ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
            dm->dim_value < 0)
            return popc_set_error(POPC_EUNSUPPORTED, "%s: %s: body input "
                                  "'%s': dimension %d is symbolic; popc "
                                  "fixes shapes at compile", sub->file,
                                  where, vi->name, d);
        dims[d] = dm->dim_value;
    }
    return popc_graph_add_input(sub->g, vi->name,
                                popco_dtype_from_onnx(tt->elem_type), dims,
                                rank, &id);
}

static popc_status import_one(popco_importer *im, const Onnx__ModelProto *mp,
                              const Onnx__NodeProto *np, popco_node *n,
                              int opset, const char *where,
                              const Onnx__AttributeProto *ap,
                              const names *captures, popc_graph **out)
{
    const Onnx__GraphProto *gp = ap->g;
    popco_importer sub = *im;
    char gname[600];
    popc_status st;

    snprintf(gname, sizeof gname, "%s/%s", n->name ? n->name : n->op,
             ap->name ? ap->name : "body");
    if ((st = popc_graph_new(gname, &sub.g)) != POPC_OK)
        return st;
    sub.parent = im;
    sub.seqs = NULL; /* a body's sequences are its own */
    /* the lean reader maps only the top graph's initializers: a body's
    ** tensors are ordinary unpacked ones, released as such */
    sub.lean_map = NULL;
    for (size_t k = 0; k < gp->n_input; k++)
        if ((st = body_input(&sub, where, gp->input[k],
                             given_input(im, n, np, opset, (int)k))) !=
            POPC_OK)
            goto fail;
    for (int c = 0; c < captures->n; c++) {
        int outer = popc_graph_find_value(im->g, captures->v[c]), id;
        popc_view v = popc_graph_value_info(im->g, outer);

        if ((st = popc_graph_add_input(sub.g, captures->v[c], v.dtype, v.dims,
                                       v.rank, &id)) != POPC_OK)
            goto fail;
    }
    if ((st = popco_import_body(&sub, mp, gp)) != POPC_OK)
        goto fail;
    popco_seqs_free(sub.seqs);
    *out = sub.g;
    return POPC_OK;
fail:
    popco_seqs_free(sub.seqs);
    popc_graph_free(sub.g);
    if (!strstr(popc_last_error(), where)) {
        const char *why = popc_last_error();
        size_t len = strlen(im->file);

        /* the body's error already starts with the file name */
        if (strncmp(why, im->file, len) == 0 && why[len] == ':' &&
            why[len + 1] == ' ')
            why += len + 2;
        st = popc_set_error(st, "%s: %s, attribute '%s': %s", im->file, where,
                            ap->name ? ap->name : "", why);
    }
    return st;
}

popc_status popco_import_subgraphs(popco_importer *im,
                                   const Onnx__ModelProto *mp,
                                   const Onnx__NodeProto *np, popco_node *n,
                                   int opset, const char *where)
{
    names captures = {0};
    popc_status st = POPC_OK;

    for (size_t a = 0; a < np->n_attribute && st == POPC_OK; a++) {
        const Onnx__AttributeProto *ap = np->attribute[a];

        if (ap->has_type &&
            ap->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH && ap->g)
            st = free_names(im->file, ap->g, 0, &captures);
    }
    for (int c = 0; st == POPC_OK && c < captures.n; c++)
        if (popc_graph_find_value(im->g, captures.v[c]) < 0)
            st = popc_set_error(POPC_EIO, "%s: %s: a body reads '%s', which "
                                "neither the body nor an enclosing graph "
                                "defines", im->file, where, captures.v[c]);
    for (size_t a = 0; a < np->n_attribute && st == POPC_OK; a++) {
        const Onnx__AttributeProto *ap = np->attribute[a];
        popc_graph *g = NULL;

        if (!ap->has_type ||
            ap->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH || !ap->g)
            continue;
        if (!ap->name || !*ap->name) {
            st = popc_set_error(POPC_EIO, "%s: %s has a graph attribute "
                                "without a name", im->file, where);
            break;
        }
        if ((st = import_one(im, mp, np, n, opset, where, ap, &captures,
                             &g)) == POPC_OK)
            st = popco_attrs_add_graph(&n->attrs, ap->name, g);
    }
    for (int c = 0; st == POPC_OK && c < captures.n; c++)
        st = popco_node_add_input(n,
                                  popc_graph_find_value(im->g, captures.v[c]));
    if (st == POPC_OK && captures.n)
        st = popco_attrs_add_int(&n->attrs, "__captures", captures.n);
    if (st == POPC_OK && strcmp(n->op, "Scan") == 0 && opset < 9)
        st = popco_attrs_add_int(&n->attrs, "__batched", 1);
    free(captures.v);
    return st;
}
