/* export.c - a popc graph (or a model's graph with its current weights)
** written as an ONNX ModelProto.
**
** Graph inputs keep their shapes (dim 0 is the micro-batch the graph was
** built for), weights and constants become initializers (raw little-endian
** data), nodes keep their names, ops and attributes (subgraphs become
** GraphProto attributes whose captured values are read by name, as ONNX
** scoping has it). ai.onnx nodes are
** written at one opset: the newest version among them, checked against the
** operator history so that no node changes meaning at that opset. Other
** domains (popc's own ops, plugins') get their own opset imports. The file
** is written atomically.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/file.h"
#include "popc/popc.h"
#include "onnx/onnx_priv.h"

/* Everything the packed message points at, freed together. */
typedef struct arena {
    void **p;
    size_t n, cap;
} arena;

static void *keep(arena *a, void *p)
{
    if (!p)
        return NULL;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 256;
        void **g = realloc(a->p, cap * sizeof *g);

        if (!g) {
            free(p);
            return NULL;
        }
        a->p = g;
        a->cap = cap;
    }
    a->p[a->n++] = p;
    return p;
}

static void *zalloc(arena *a, size_t n)
{
    return keep(a, calloc(1, n ? n : 1));
}

static char *sdup(arena *a, const char *s)
{
    return keep(a, strdup(s ? s : ""));
}

static void arena_free(arena *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->p[i]);
    free(a->p);
}

static popc_status oom(const char *path)
{
    return popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
}

/* One graph being written: the model's, or a subgraph attribute's. A
** subgraph's trailing inputs are values it captures from the enclosing
** graph (__captures, popc/plugin.h); ONNX reads those by name instead, so
** they are left out of its inputs and written under the enclosing value's
** name (rename[v]). */
typedef struct xgraph {
    arena *a;
    const popc_graph *g;
    const popc_tensor *const *weights; /* per value, or NULL */
    const char **rename;               /* per value, or NULL entries */
    int n_captured;                    /* trailing inputs left out */
    const char *path;
} xgraph;

static const char *name_of(const xgraph *x, int v)
{
    return x->rename && x->rename[v] ? x->rename[v]
                                     : popc_graph_value_name(x->g, v);
}

static Onnx__ValueInfoProto *value_info(arena *a, const popc_graph *g, int v,
                                        const char *name)
{
    popc_view info = popc_graph_value_info(g, v);
    Onnx__ValueInfoProto *vi = zalloc(a, sizeof *vi);
    Onnx__TypeProto *tp = zalloc(a, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = zalloc(a, sizeof *tt);
    Onnx__TensorShapeProto *sh = zalloc(a, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **dims =
        zalloc(a, sizeof *dims * (size_t)(info.rank + 1));

    if (!vi || !tp || !tt || !sh || !dims)
        return NULL;
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    for (int d = 0; d < info.rank; d++) {
        if (!(dims[d] = zalloc(a, sizeof *dims[d])))
            return NULL;
        onnx__tensor_shape_proto__dimension__init(dims[d]);
        dims[d]->value_case =
            ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dims[d]->dim_value = info.dims[d];
    }
    sh->n_dim = (size_t)info.rank;
    sh->dim = dims;
    tt->has_elem_type = 1;
    tt->elem_type = popco_dtype_to_onnx(info.dtype);
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->name = sdup(a, name);
    vi->type = tp;
    return vi->name ? vi : NULL;
}

static Onnx__TensorProto *tensor(arena *a, const popc_tensor *t,
                                 const char *name)
{
    Onnx__TensorProto *tp = zalloc(a, sizeof *tp);
    int64_t *dims = zalloc(a, sizeof(int64_t) * POPC_MAX_RANK);

    if (!tp || !dims ||
        popco_tensor_to_proto(t, sdup(a, name), tp, dims) != POPC_OK)
        return NULL;
    return tp;
}

static popc_status graph_proto(const xgraph *x, Onnx__GraphProto **out);

/* A subgraph attribute of node n of the graph cx writes: its captures are
** node n's last __captures inputs. */
static popc_status subgraph(const xgraph *cx, int n, const popc_attr *x,
                            Onnx__GraphProto **out)
{
    const popc_graph *b = x->graph;
    popc_attrs at = popc_graph_node_attrs(cx->g, n);
    int C = (int)popc_attr_int(&at, "__captures", 0);
    int ni = popc_graph_node_n_inputs(cx->g, n), bi = popc_graph_n_inputs(b);
    xgraph sub = {cx->a, b, NULL, NULL, C, cx->path};
    popc_status st;

    if (C > bi || C > ni)
        return popc_set_error(POPC_EINVAL, "%s: node '%s': __captures %d "
                              "exceeds its inputs", cx->path,
                              popc_graph_node_name(cx->g, n), C);
    sub.rename = zalloc(cx->a, sizeof *sub.rename *
                                   (size_t)(popc_graph_n_values(b) + 1));
    if (!sub.rename)
        return oom(cx->path);
    for (int k = 0; k < C; k++) {
        int outer = popc_graph_node_input(cx->g, n, ni - C + k);

        sub.rename[popc_graph_input(b, bi - C + k)] =
            outer >= 0 ? name_of(cx, outer) : NULL;
    }
    st = graph_proto(&sub, out);
    return st;
}

static popc_status attribute(const xgraph *cx, int n, const popc_attr *x,
                             Onnx__AttributeProto **out, const char *node)
{
    arena *a = cx->a;
    Onnx__AttributeProto *ap = zalloc(a, sizeof *ap);

    *out = ap;
    if (!ap)
        return oom(node);
    onnx__attribute_proto__init(ap);
    ap->name = sdup(a, x->name);
    ap->has_type = 1;
    switch (x->type) {
    case POPC_ATTR_INT:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        ap->has_i = 1;
        ap->i = x->i;
        break;
    case POPC_ATTR_FLOAT:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        ap->has_f = 1;
        ap->f = (float)x->f;
        break;
    case POPC_ATTR_STRING:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        ap->has_s = 1;
        ap->s.data = (uint8_t *)sdup(a, x->s);
        ap->s.len = x->s ? strlen(x->s) : 0;
        break;
    case POPC_ATTR_INTS:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        ap->n_ints = (size_t)x->n;
        ap->ints = zalloc(a, sizeof(int64_t) * (size_t)x->n);
        if (!ap->ints)
            return oom(node);
        if (x->n)
            memcpy(ap->ints, x->ints, sizeof(int64_t) * (size_t)x->n);
        break;
    case POPC_ATTR_FLOATS:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
        ap->n_floats = (size_t)x->n;
        ap->floats = zalloc(a, sizeof(float) * (size_t)x->n);
        if (!ap->floats)
            return oom(node);
        for (int64_t i = 0; i < x->n; i++)
            ap->floats[i] = (float)x->floats[i];
        break;
    case POPC_ATTR_STRINGS:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
        ap->n_strings = (size_t)x->n;
        ap->strings = zalloc(a, sizeof *ap->strings * (size_t)x->n);
        if (!ap->strings)
            return oom(node);
        for (int64_t i = 0; i < x->n; i++) {
            ap->strings[i].data = (uint8_t *)sdup(a, x->strings[i]);
            ap->strings[i].len = strlen(x->strings[i]);
        }
        break;
    case POPC_ATTR_TENSOR: {
        popc_tensor *t = NULL;
        popc_status st = popc_tensor_from_data(x->tensor->dtype,
                                               x->tensor->dims,
                                               x->tensor->rank,
                                               x->tensor->data, &t);

        if (st != POPC_OK)
            return st;
        /* the proto points at a copy of the data the arena owns */
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
        ap->t = zalloc(a, sizeof *ap->t);
        if (!ap->t) {
            popc_tensor_free(t);
            return oom(node);
        }
        {
            int64_t *dims = zalloc(a, sizeof(int64_t) * POPC_MAX_RANK);
            void *copy = zalloc(a, popc_tensor_nbytes(t));

            if (!dims || !copy) {
                popc_tensor_free(t);
                return oom(node);
            }
            memcpy(copy, popc_tensor_cdata(t), popc_tensor_nbytes(t));
            st = popco_tensor_to_proto(t, NULL, ap->t, dims);
            ap->t->raw_data.data = copy;
            popc_tensor_free(t);
            if (st != POPC_OK)
                return st;
        }
        break;
    }
    case POPC_ATTR_GRAPH: {
        popc_status st;

        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
        if (!x->graph)
            return popc_set_error(POPC_EINVAL, "node '%s': attribute '%s' "
                                  "has no graph", node, x->name);
        if ((st = subgraph(cx, n, x, &ap->g)) != POPC_OK)
            return st;
        break;
    }
    default:
        return popc_set_error(POPC_EUNSUPPORTED, "node '%s': attribute '%s' "
                              "has a type ONNX export does not know", node,
                              x->name);
    }
    return ap->name ? POPC_OK : oom(node);
}

/* The ai.onnx opset of the file: the newest node version, unless an op
** changed between its node's version and that opset. */
/* The newest ai.onnx node version in g and its subgraphs. */
static void max_version(const popc_graph *g, int *opset)
{
    for (int n = 0; n < popc_graph_n_nodes(g); n++) {
        popc_attrs at = popc_graph_node_attrs(g, n);

        if (!strcmp(popc_graph_node_domain(g, n), POPC_DOMAIN_ONNX) &&
            popc_graph_node_version(g, n) > *opset)
            *opset = popc_graph_node_version(g, n);
        for (int k = 0; k < at.n; k++)
            if (at.items[k].type == POPC_ATTR_GRAPH && at.items[k].graph)
                max_version(at.items[k].graph, opset);
    }
}

/* Versions at which an op only accepted more types or relaxed a rule, so
** that a node of an older version means the same written at a newer one:
** If and Loop 11 (optional M and cond; branch shapes may differ), 13
** (sequences), 16 (optionals); Scan 11 (negative axes), 16 (bfloat16). */
static int widening_only(const char *op, int version)
{
    static const struct {
        const char *op;
        int version;
    } w[] = {{"If", 11},   {"If", 13},   {"If", 16},   {"Loop", 11},
             {"Loop", 13}, {"Loop", 16}, {"Scan", 11}, {"Scan", 16}};

    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        if (w[i].version == version && !strcmp(w[i].op, op))
            return 1;
    return 0;
}

/* No ai.onnx node of g (or its subgraphs) changed meaning between its
** version and opset. */
static popc_status check_history(const popc_graph *g, int opset)
{
    popc_status st;

    for (int n = 0; n < popc_graph_n_nodes(g); n++) {
        const char *op = popc_graph_node_op(g, n);
        int v = popc_graph_node_version(g, n), k;
        popc_attrs at = popc_graph_node_attrs(g, n);
        const int *h;

        for (int j = 0; j < at.n; j++)
            if (at.items[j].type == POPC_ATTR_GRAPH && at.items[j].graph &&
                (st = check_history(at.items[j].graph, opset)) != POPC_OK)
                return st;
        if (strcmp(popc_graph_node_domain(g, n), POPC_DOMAIN_ONNX))
            continue;
        h = popco_op_history(op, &k);
        for (int i = 0; h && i < k; i++)
            if (h[i] > v && h[i] <= opset && !widening_only(op, h[i]))
                return popc_set_error(POPC_EUNSUPPORTED, "node '%s': %s-%d "
                                      "changed at opset %d, and another node "
                                      "needs opset %d; popc cannot write both "
                                      "in one model yet",
                                      popc_graph_node_name(g, n), op, v, h[i],
                                      opset);
    }
    return POPC_OK;
}

static popc_status onnx_opset(const popc_graph *g, int *opset)
{
    *opset = 7;
    max_version(g, opset);
    if (*opset > 17)
        *opset = 17;
    return check_history(g, *opset);
}

/* The GraphProto of x->g: inputs (captured ones left out), initializers
** (x->weights override the stored tensors), nodes and outputs. */
static popc_status graph_proto(const xgraph *x, Onnx__GraphProto **out)
{
    arena *a = x->a;
    const popc_graph *g = x->g;
    const char *path = x->path;
    Onnx__GraphProto *gp = zalloc(a, sizeof *gp);
    int nv = popc_graph_n_values(g), nn = popc_graph_n_nodes(g);
    int n_in = popc_graph_n_inputs(g) - x->n_captured;
    unsigned char *used = zalloc(a, (size_t)nv + 1);
    popc_status st;

    if (!gp || !used)
        return oom(path);
    /* outputs nothing reads are left out (BatchNormalization's running
    ** statistics in an inference graph: ONNX wants one output there) */
    for (int n = 0; n < nn; n++)
        for (int i = 0; i < popc_graph_node_n_inputs(g, n); i++)
            if (popc_graph_node_input(g, n, i) >= 0)
                used[popc_graph_node_input(g, n, i)] = 1;
    for (int i = 0; i < popc_graph_n_outputs(g); i++)
        used[popc_graph_output(g, i)] = 1;
    onnx__graph_proto__init(gp);
    gp->name = sdup(a, popc_graph_name(g));
    gp->input = zalloc(a, sizeof *gp->input * (size_t)(nv + 1));
    gp->output = zalloc(a, sizeof *gp->output * (size_t)(nv + 1));
    gp->initializer = zalloc(a, sizeof *gp->initializer * (size_t)(nv + 1));
    gp->node = zalloc(a, sizeof *gp->node * (size_t)(nn + 1));
    if (!gp->input || !gp->output || !gp->initializer || !gp->node)
        return oom(path);
    for (int i = 0; i < n_in; i++)
        if (!(gp->input[gp->n_input++] =
                  value_info(a, g, popc_graph_input(g, i),
                             name_of(x, popc_graph_input(g, i)))))
            return oom(path);
    for (int v = 0; v < nv; v++) {
        const popc_tensor *t = popc_graph_value_tensor(g, v);

        if (!t)
            continue;
        if (x->weights && x->weights[v])
            t = x->weights[v];
        if (popco_dtype_to_onnx(popc_tensor_dtype(t)) < 0)
            return popc_set_error(POPC_EUNSUPPORTED, "%s: tensor '%s' has a "
                                  "dtype ONNX lacks", path, name_of(x, v));
        if (!(gp->initializer[gp->n_initializer++] =
                  tensor(a, t, name_of(x, v))))
            return oom(path);
    }
    for (int n = 0; n < nn; n++) {
        Onnx__NodeProto *np = zalloc(a, sizeof *np);
        popc_attrs at = popc_graph_node_attrs(g, n);
        const char *name = popc_graph_node_name(g, n);
        const char *dom = popc_graph_node_domain(g, n);
        int ni = popc_graph_node_n_inputs(g, n);
        int no = popc_graph_node_n_outputs(g, n);

        if (!np)
            return oom(path);
        if (popc_attr_int(&at, "__batched", 0))
            return popc_set_error(POPC_EUNSUPPORTED, "%s: node '%s': opset "
                                  "8's batched Scan cannot be written at "
                                  "the opsets popc exports", path, name);
        /* captured values are read by name in ONNX, not passed */
        ni -= (int)popc_attr_int(&at, "__captures", 0);
        onnx__node_proto__init(np);
        np->name = sdup(a, name);
        np->op_type = sdup(a, popc_graph_node_op(g, n));
        np->domain = sdup(a, strcmp(dom, POPC_DOMAIN_ONNX) ? dom : "");
        np->input = zalloc(a, sizeof(char *) * (size_t)(ni + 1));
        np->output = zalloc(a, sizeof(char *) * (size_t)(no + 1));
        np->attribute = zalloc(a, sizeof *np->attribute * (size_t)(at.n + 1));
        if (!np->name || !np->op_type || !np->domain || !np->input ||
            !np->output || !np->attribute)
            return oom(path);
        for (int i = 0; i < ni; i++) {
            int v = popc_graph_node_input(g, n, i);

            if (!(np->input[np->n_input++] =
                      sdup(a, v < 0 ? "" : name_of(x, v))))
                return oom(path);
        }
        while (no > 1 && !used[popc_graph_node_output(g, n, no - 1)])
            no--;
        for (int i = 0; i < no; i++) {
            int v = popc_graph_node_output(g, n, i);

            if (!(np->output[np->n_output++] =
                      sdup(a, used[v] || i == 0 ? name_of(x, v) : "")))
                return oom(path);
        }
        for (int k = 0; k < at.n; k++) {
            /* internal bookkeeping attributes start with "__" */
            if (!strncmp(at.items[k].name, "__", 2))
                continue;
            if ((st = attribute(x, n, &at.items[k],
                                &np->attribute[np->n_attribute], name)) !=
                POPC_OK)
                return st;
            np->n_attribute++;
        }
        gp->node[gp->n_node++] = np;
    }
    for (int i = 0; i < popc_graph_n_outputs(g); i++)
        if (!(gp->output[gp->n_output++] =
                  value_info(a, g, popc_graph_output(g, i),
                             name_of(x, popc_graph_output(g, i)))))
            return oom(path);
    *out = gp;
    return POPC_OK;
}

/* One opset import per domain other than ai.onnx, at the version of its
** first node (subgraphs included). */
static popc_status domain_imports(arena *a, const popc_graph *g,
                                  Onnx__ModelProto *mp,
                                  Onnx__OperatorSetIdProto **ops, size_t cap,
                                  const char *path)
{
    popc_status st;

    for (int n = 0; n < popc_graph_n_nodes(g); n++) {
        const char *dom = popc_graph_node_domain(g, n);
        popc_attrs at = popc_graph_node_attrs(g, n);

        for (int k = 0; k < at.n; k++)
            if (at.items[k].type == POPC_ATTR_GRAPH && at.items[k].graph &&
                (st = domain_imports(a, at.items[k].graph, mp, ops, cap,
                                     path)) != POPC_OK)
                return st;
        if (!strcmp(dom, POPC_DOMAIN_ONNX)) {
            continue;
        } else {
            size_t i;

            for (i = 1; i < mp->n_opset_import; i++)
                if (!strcmp(ops[i]->domain, dom))
                    break;
            if (i == mp->n_opset_import) {
                Onnx__OperatorSetIdProto *o = zalloc(a, sizeof *o);

                if (!o || mp->n_opset_import >= cap)
                    return oom(path);
                onnx__operator_set_id_proto__init(o);
                o->domain = sdup(a, dom);
                o->has_version = 1;
                o->version = popc_graph_node_version(g, n);
                ops[mp->n_opset_import++] = o;
            }
        }
    }
    return POPC_OK;
}

/* The functions above recurse once per level of subgraph; a graph nested
** deeper than a file may be (POPC_MAX_NESTING) is refused first, by a
** walk that itself stops at the limit. protobuf-c packs recursively too. */
static popc_status check_nesting(const popc_graph *g, int depth,
                                 const char *path)
{
    popc_status st;

    if (depth > popc_limit_get(POPC_LIMIT_NESTING))
        return popc_limit_error(POPC_LIMIT_NESTING, path, "subgraphs (If, "
                                "Loop or Scan bodies) nested too deep to "
                                "write", depth);
    for (int n = 0; n < popc_graph_n_nodes(g); n++) {
        popc_attrs at = popc_graph_node_attrs(g, n);

        for (int k = 0; k < at.n; k++)
            if (at.items[k].type == POPC_ATTR_GRAPH && at.items[k].graph &&
                (st = check_nesting(at.items[k].graph, depth + 1, path)) !=
                    POPC_OK)
                return st;
    }
    return POPC_OK;
}

static popc_status build(arena *a, const popc_graph *g,
                         const popc_tensor *const *weights,
                         const char *path, Onnx__ModelProto *mp)
{
    xgraph x = {a, g, weights, NULL, 0, path};
    size_t cap = 64;
    Onnx__OperatorSetIdProto **ops = zalloc(a, sizeof *ops * (cap + 1));
    Onnx__GraphProto *gp = NULL;
    int opset;
    popc_status st;

    if (!ops)
        return oom(path);
    if ((st = check_nesting(g, 0, path)) != POPC_OK ||
        (st = onnx_opset(g, &opset)) != POPC_OK ||
        (st = graph_proto(&x, &gp)) != POPC_OK ||
        (st = domain_imports(a, g, mp, ops, cap, path)) != POPC_OK)
        return st;
    if (!(ops[0] = zalloc(a, sizeof *ops[0])))
        return oom(path);
    onnx__operator_set_id_proto__init(ops[0]);
    ops[0]->domain = sdup(a, "");
    ops[0]->has_version = 1;
    ops[0]->version = opset;
    mp->opset_import = ops;
    mp->has_ir_version = 1;
    mp->ir_version = 8; /* opset 17's IR version */
    mp->producer_name = sdup(a, "popc");
    mp->producer_version = sdup(a, POPC_VERSION_STRING);
    mp->graph = gp;
    return POPC_OK;
}

static popc_status export_graph(const popc_graph *g,
                                const popc_tensor *const *weights,
                                const char *path)
{
    Onnx__ModelProto mp;
    arena a = {0};
    uint8_t *buf = NULL;
    size_t len;
    popc_status st;

    onnx__model_proto__init(&mp);
    mp.n_opset_import = 1;
    if ((st = build(&a, g, weights, path, &mp)) != POPC_OK)
        goto done;
    len = onnx__model_proto__get_packed_size(&mp);
    if (len > POPCO_MAX_MODEL_BYTES) {
        st = popc_set_error(POPC_EUNSUPPORTED, "%s: the model is %zu bytes, "
                            "more than a protobuf holds; external data is "
                            "not written yet", path, len);
        goto done;
    }
    if (!(buf = malloc(len ? len : 1))) {
        st = oom(path);
        goto done;
    }
    onnx__model_proto__pack(&mp, buf);
    st = popc_write_file_atomic(path, buf, len);
done:
    free(buf);
    arena_free(&a);
    return st;
}

popc_status popc_onnx_export_graph(const popc_graph *g, const char *path)
{
    if (!g || !path)
        return popc_set_error(POPC_EINVAL, "popc_onnx_export_graph: NULL "
                              "graph or path");
    return export_graph(g, NULL, path);
}

popc_status popc_onnx_export_model(popc_model *m, const char *path)
{
    const popc_graph *g = popc_model_graph(m);
    const popc_tensor **w = NULL;
    popc_status st;

    if (!m || !path || !g)
        return popc_set_error(POPC_EINVAL, "popc_onnx_export_model: NULL "
                              "model or path");
    if (!(w = calloc((size_t)popc_graph_n_values(g) + 1, sizeof *w)))
        return oom(path);
    /* the current (trained) weights: the device's when compiled, else
    ** the host's (set with popc_model_set_weight) */
    for (int v = 0; v < popc_graph_n_values(g); v++)
        if (popc_graph_value_kind(g, v) == POPC_VALUE_INITIALIZER &&
            (st = popc_model_get_weight(m, popc_graph_value_name(g, v),
                                        &w[v])) != POPC_OK) {
            free(w);
            return st;
        }
    st = export_graph(g, (const popc_tensor *const *)w, path);
    free(w);
    return st;
}
