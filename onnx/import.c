/* import.c - an ONNX ModelProto becomes a popc graph (see popc/onnx.h).
**
** Values keep their ONNX names in the popc graph, so the importer looks
** names up in the graph itself. Nodes are read in file order (ONNX
** requires a topological order). After the first op popc does not have,
** the remaining nodes are only checked, so that every unsupported op is
** listed in one error.
*/
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_priv.h"

#define MAX_LISTED 64  /* unsupported nodes named in the error */

void popc_onnx_import_options_init(popc_onnx_import_options *o)
{
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
}

/* ---- opsets ---------------------------------------------------------------- */

static int is_onnx_domain(const char *d)
{
    return !d || !*d || strcmp(d, "ai.onnx") == 0;
}

static int domain_opset(const Onnx__ModelProto *mp, const char *domain)
{
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        int onnx = is_onnx_domain(o->domain);

        if ((onnx && is_onnx_domain(domain)) ||
            (!onnx && domain && strcmp(o->domain, domain) == 0))
            return o->has_version ? (int)o->version : 1;
    }
    return 0;
}

/* ---- unsupported ops ------------------------------------------------------- */

typedef struct report {
    char *buf;
    size_t len, cap;
    int n;
} report;

static void report_add(report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void report_add(report *r, const char *fmt, ...)
{
    va_list ap;
    int need;

    va_start(ap, fmt);
    need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0)
        return;
    if (r->len + (size_t)need + 1 > r->cap) {
        size_t cap = (r->cap + (size_t)need + 1) * 2;
        char *b = realloc(r->buf, cap);

        if (!b)
            return;
        r->buf = b;
        r->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(r->buf + r->len, r->cap - r->len, fmt, ap);
    va_end(ap);
    r->len += (size_t)need;
}

/* ---- graph inputs -------------------------------------------------------- */

static const popc_onnx_import_options *opts_or_default(
    const popc_onnx_import_options *o, popc_onnx_import_options *def)
{
    if (o && o->size >= sizeof *o)
        return o;
    popc_onnx_import_options_init(def);
    if (o) /* an older, smaller struct: take what it has */
        memcpy(def, o, o->size < sizeof *def ? o->size : sizeof *def);
    def->size = sizeof *def;
    return def;
}

static const popc_view *bound_shape(const popc_onnx_import_options *o,
                                    const char *name)
{
    for (int i = 0; i < o->n_shapes; i++)
        if (o->shape_names && o->shape_names[i] &&
            strcmp(o->shape_names[i], name) == 0)
            return &o->shapes[i];
    return NULL;
}

static popc_tensor *frozen_value(const popc_onnx_import_options *o,
                                 const char *name)
{
    for (int i = 0; i < o->n_values; i++)
        if (o->value_names && o->value_names[i] &&
            strcmp(o->value_names[i], name) == 0)
            return o->values[i];
    return NULL;
}

/* The candidate for name when name must be known at compile time (in
** need[0..n_need)); its flag says it was frozen. */
static popc_tensor *candidate_to_freeze(const popco_candidates *c,
                                        const char *name, char **need,
                                        int n_need)
{
    int needed = 0;

    for (int k = 0; c && k < n_need && !needed; k++)
        needed = strcmp(need[k], name) == 0;
    for (int i = 0; needed && i < c->n; i++)
        if (c->names[i] && strcmp(c->names[i], name) == 0) {
            if (c->frozen)
                c->frozen[i] = 1;
            return c->values[i];
        }
    return NULL;
}

/* need[0..n_need): the graph inputs needed at compile time, for the
** candidates. */
static popc_status add_graph_input(popco_importer *im,
                                   const Onnx__ValueInfoProto *vi,
                                   char **need, int n_need)
{
    const popc_onnx_import_options *o = im->opt;
    const char *name = vi->name;
    const Onnx__TypeProto__Tensor *tt;
    const popc_view *bound;
    popc_tensor *frozen;
    int64_t dims[POPC_MAX_RANK];
    popc_dtype dt;
    int id, rank;

    if ((frozen = frozen_value(o, name)) ||
        (frozen = candidate_to_freeze(im->cand, name, need, n_need)))
        return popc_graph_add_constant(im->g, name, frozen, &id);
    if (!vi->type || vi->type->value_case !=
                         ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type)
        return popc_set_error(POPC_EUNSUPPORTED, "%s: graph input '%s' is "
                              "not a tensor (sequence, map, optional and "
                              "sparse inputs are not supported)",
                              im->file, name);
    tt = vi->type->tensor_type;
    dt = popco_dtype_from_onnx(tt->elem_type);
    if (dt == POPC_DTYPE_UNDEFINED)
        return popc_set_error(POPC_EUNSUPPORTED, "%s: graph input '%s' has "
                              "element type %s, which popc has no dtype for",
                              im->file, name,
                              popco_onnx_type_name(tt->elem_type));
    bound = bound_shape(o, name);
    if (bound) {
        if (bound->dtype != POPC_DTYPE_UNDEFINED && bound->dtype != dt)
            return popc_set_error(POPC_EINVAL, "%s: graph input '%s' is %s, "
                                  "but its bound shape says %s", im->file,
                                  name, popc_dtype_name(dt),
                                  popc_dtype_name(bound->dtype));
        if (tt->shape && (int)tt->shape->n_dim != bound->rank)
            return popc_set_error(POPC_EINVAL, "%s: graph input '%s' has "
                                  "rank %zu, but its bound shape has rank "
                                  "%d", im->file, name, tt->shape->n_dim,
                                  bound->rank);
        for (int d = 0; tt->shape && d < bound->rank; d++) {
            const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[d];

            if (dm->value_case ==
                    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                dm->dim_value != bound->dims[d])
                return popc_set_error(POPC_EINVAL, "%s: graph input '%s': "
                                      "dimension %d is %lld in the model, "
                                      "%lld in the bound shape", im->file,
                                      name, d, (long long)dm->dim_value,
                                      (long long)bound->dims[d]);
        }
        return popc_graph_add_input(im->g, name, dt, bound->dims, bound->rank,
                                    &id);
    }
    if (!tt->shape)
        return popc_set_error(POPC_EINVAL, "%s: graph input '%s' has no "
                              "shape in the model; bind one "
                              "(popc_onnx_import_options.shapes, or the "
                              "input's .npy file on the command line)",
                              im->file, name);
    rank = (int)tt->shape->n_dim;
    if (rank > POPC_MAX_RANK)
        return popc_set_error(POPC_EUNSUPPORTED, "%s: graph input '%s' has "
                              "%d dimensions; popc supports at most %d",
                              im->file, name, rank, POPC_MAX_RANK);
    for (int d = 0; d < rank; d++) {
        const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[d];

        if (dm->value_case !=
                ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
            dm->dim_value < 0)
            return popc_set_error(POPC_EINVAL, "%s: graph input '%s': "
                                  "dimension %d is symbolic ('%s'); popc "
                                  "fixes shapes at compile, as PopTorch "
                                  "does: bind it "
                                  "(popc_onnx_import_options.shapes, or the "
                                  "input's .npy file on the command line)",
                                  im->file, name, d,
                                  dm->value_case ==
                                          ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                                      ? dm->dim_param
                                      : "?");
        dims[d] = dm->dim_value;
    }
    return popc_graph_add_input(im->g, name, dt, dims, rank, &id);
}

/* ---- nodes ----------------------------------------------------------------- */

/* Constant nodes become constants of the graph. */
static popc_status constant_node(popco_importer *im,
                                 const Onnx__NodeProto *np,
                                 const char *where)
{
    popc_tensor *t = NULL;
    popc_status st = POPC_OK;
    int id;

    if (np->n_output != 1 || np->n_attribute != 1)
        return popc_set_error(POPC_EIO, "%s: %s: a Constant needs one "
                              "output and exactly one value attribute",
                              im->file, where);
    {
        const Onnx__AttributeProto *a = np->attribute[0];
        const char *an = a->name ? a->name : "";

        if (strcmp(an, "value") == 0 && a->t) {
            st = popco_tensor_from_proto(a->t, &im->src, where, &t);
        } else if (strcmp(an, "value_float") == 0 ||
                   strcmp(an, "value_int") == 0) {
            int f = an[6] == 'f';

            st = popc_tensor_new(f ? POPC_DTYPE_F32 : POPC_DTYPE_I64, NULL, 0,
                                 &t);
            if (st == POPC_OK && f)
                *(float *)popc_tensor_data(t) = a->f;
            else if (st == POPC_OK)
                *(int64_t *)popc_tensor_data(t) = a->i;
        } else if (strcmp(an, "value_floats") == 0 ||
                   strcmp(an, "value_ints") == 0) {
            int f = an[6] == 'f';
            int64_t d[1] = {f ? (int64_t)a->n_floats : (int64_t)a->n_ints};

            st = popc_tensor_new(f ? POPC_DTYPE_F32 : POPC_DTYPE_I64, d, 1,
                                 &t);
            if (st == POPC_OK && d[0] && f)
                memcpy(popc_tensor_data(t), a->floats,
                       (size_t)d[0] * sizeof(float));
            else if (st == POPC_OK && d[0])
                memcpy(popc_tensor_data(t), a->ints,
                       (size_t)d[0] * sizeof(int64_t));
        } else {
            return popc_set_error(POPC_EUNSUPPORTED, "%s: %s: Constant "
                                  "attribute '%s' is not supported (string "
                                  "and sparse constants have no popc dtype)",
                                  im->file, where, an);
        }
    }
    if (st != POPC_OK)
        return st;
    st = popc_graph_add_constant(im->g, np->output[0], t, &id);
    popc_tensor_free(t);
    return st;
}

/* BatchNormalization 7 to 13 in training mode (PyTorch's export with
** TrainingMode.TRAINING) has 5 outputs: Y, the new running mean and
** variance, and the saved batch statistics, which only its own gradient
** read in old runtimes. It becomes opset 15's training_mode = 1 with the
** first 3; a later node reading a saved statistic finds it undefined. */
static popc_status training_batchnorm(popco_importer *im, popco_node *n,
                                      int opset, int *n_out)
{
    (void)im;
    if (strcmp(n->op, "BatchNormalization") != 0 || opset >= 14 ||
        *n_out <= 1)
        return POPC_OK;
    if (*n_out > 3)
        *n_out = 3;
    if (popco_attrs_find(&n->attrs, "training_mode"))
        return POPC_OK;
    return popco_attrs_add_int(&n->attrs, "training_mode", 1);
}

/* eval_mode: PyTorch's model.eval(). BatchNormalization (opset 15 form by
** now) normalises with its running statistics and gives Y only, so
** batchnorm_updates adds no update; Dropout (opset 13 form: data, ratio,
** training_mode) loses its training_mode input, whose default is false,
** so any runtime reading an exported graph passes the input through. */
static popc_status eval_mode_node(const popco_importer *im, popco_node *n,
                                  int *n_out)
{
    if (!im->opt->eval_mode || strcmp(n->domain, POPC_DOMAIN_ONNX) != 0)
        return POPC_OK;
    if (strcmp(n->op, "BatchNormalization") == 0) {
        popco_attrs_remove(&n->attrs, "training_mode");
        *n_out = 1;
        return popco_attrs_add_int(&n->attrs, "training_mode", 0);
    }
    if (strcmp(n->op, "Dropout") == 0 && n->n_inputs > 2)
        n->n_inputs = 2;
    return POPC_OK;
}

/* A training BatchNormalization's new running statistics are written
** back into its mean and variance initializers after each step, as
** PyTorch updates the module's buffers. */
static popc_status batchnorm_updates(popco_importer *im, const popco_node *n,
                                     int n_out, const int *outs)
{
    popc_status st;

    if (strcmp(n->op, "BatchNormalization") != 0 || n_out < 3 ||
        n->n_inputs < 5)
        return POPC_OK;
    for (int k = 0; k < 2; k++) {
        int w = n->inputs[3 + k];

        if (w < 0 || outs[1 + k] < 0 ||
            popc_graph_value_kind(im->g, w) != POPC_VALUE_INITIALIZER)
            continue;
        if ((st = popc_graph_add_update(im->g, w, outs[1 + k])) != POPC_OK)
            return popc_set_error(st, "%s: node '%s': %s", im->file,
                                  n->name ? n->name : "", popc_last_error());
    }
    return POPC_OK;
}

/* Initializers that are BatchNormalization running statistics (inputs 3
** and 4): buffers, never trainable weights. */
static int is_batchnorm_statistic(const Onnx__GraphProto *gp,
                                  const char *name)
{
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];

        if (!np->op_type || strcmp(np->op_type, "BatchNormalization") != 0)
            continue;
        for (size_t k = 3; k < 5 && k < np->n_input; k++)
            if (np->input[k] && strcmp(np->input[k], name) == 0)
                return 1;
    }
    return 0;
}

static popc_status find_input(popco_importer *im, const char *name,
                              const char *where, int *id)
{
    if (!name || !*name) {
        *id = -1;
        return POPC_OK;
    }
    if (popco_is_sequence(im, name))
        return popc_set_error(POPC_EUNSUPPORTED, "%s: %s reads the sequence "
                              "'%s'; popc resolves sequences at import, "
                              "so only the sequence ops may read them",
                              im->file, where, name);
    if ((*id = popc_graph_find_value(im->g, name)) < 0)
        return popc_set_error(POPC_EIO, "%s: %s reads '%s', which no graph "
                              "input, initializer or earlier node defines "
                              "(nodes must be in topological order)",
                              im->file, where, name);
    return POPC_OK;
}

static popc_status name_outputs(popco_importer *im, const Onnx__NodeProto *np,
                                const int *outs, size_t n_outs)
{
    popc_status st;

    for (size_t i = 0; i < n_outs; i++)
        if (np->output[i] && *np->output[i] &&
            (st = popc_graph_set_value_name(im->g, outs[i], np->output[i])) !=
                POPC_OK)
            return popc_set_error(st, "%s: node '%s': output '%s': %s",
                                  im->file, np->name ? np->name : "",
                                  np->output[i], popc_last_error());
    return POPC_OK;
}

/* Add the node, with a unique name when the file repeats one. */
static popc_status add_node(popco_importer *im, const popco_node *n,
                            int *outs, int n_outs, int *node)
{
    const char *name = n->name && *n->name ? n->name : NULL;
    char buf[600];
    popc_status st;

    for (int k = 1;; k++) {
        st = popc_graph_add_node(im->g, n->domain, n->op, n->version,
                                 n->inputs, n->n_inputs, outs, n_outs,
                                 n->attrs.items, n->attrs.n, name, node);
        if (st != POPC_EEXIST || !name || k > 1000)
            return st;
        snprintf(buf, sizeof buf, "%s_%d", n->name, k);
        name = buf;
    }
}

static popc_status import_node(popco_importer *im,
                               const Onnx__ModelProto *mp,
                               const Onnx__NodeProto *np, int index,
                               report *unsupported)
{
    popco_node n;
    const popc_op_def *def;
    char where[600];
    int opset, outs[256], folded = 0, node = -1, n_out = (int)np->n_output;
    popc_status st = POPC_OK;

    memset(&n, 0, sizeof n);
    n.op = np->op_type ? np->op_type : "";
    n.domain = is_onnx_domain(np->domain) ? POPC_DOMAIN_ONNX : np->domain;
    n.name = np->name && *np->name ? np->name : NULL;
    if (n.name)
        snprintf(where, sizeof where, "node '%s' (%s)", n.name, n.op);
    else
        snprintf(where, sizeof where, "node #%d (%s)", index, n.op);
    opset = domain_opset(mp, is_onnx_domain(np->domain) ? NULL : np->domain);
    if (opset == 0 && !is_onnx_domain(np->domain))
        opset = 1;
    if (np->n_output > 256)
        return popc_set_error(POPC_EUNSUPPORTED, "%s: %s has %zu outputs",
                              im->file, where, np->n_output);
    if (is_onnx_domain(np->domain) && strcmp(n.op, "Constant") == 0 &&
        !unsupported->n)
        return constant_node(im, np, where);
    if (is_onnx_domain(np->domain) && popco_is_sequence_op(n.op))
        return unsupported->n ? POPC_OK /* only listing */
                              : popco_sequence_node(im, np, where);
    for (size_t i = 0; i < np->n_input; i++) {
        int id = -1;

        if (!unsupported->n &&
            (st = find_input(im, np->input[i], where, &id)) != POPC_OK)
            goto done;
        if ((st = popco_node_add_input(&n, id)) != POPC_OK)
            goto done;
    }
    if (popco_has_subgraphs(np)) {
        if (unsupported->n)
            goto done; /* only listing */
        if ((st = popco_import_subgraphs(im, mp, np, &n, opset, where)) !=
            POPC_OK)
            goto done;
    }
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *ap = np->attribute[i];

        if (ap->has_type &&
            ap->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)
            continue; /* imported above */
        if (ap->has_type &&
            ap->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS) {
            report_add(unsupported, "%s  node '%s': op %s, domain %s, opset "
                       "%d (attribute '%s' is a list of graphs, which popc "
                       "does not support)", unsupported->n ? "\n" : "",
                       n.name ? n.name : "", n.op, n.domain, opset, ap->name);
            unsupported->n++;
            goto done;
        }
        if ((st = popco_attrs_add_proto(&n.attrs, ap, &im->src, where)) !=
            POPC_OK)
            goto done;
    }
    n.name = n.name ? n.name : NULL;
    if (strcmp(n.domain, POPC_DOMAIN_ONNX) == 0 && !unsupported->n) {
        const char *name_for_msgs = n.name;

        n.name = n.name ? n.name : where;
        st = popco_upgrade(im, &n, opset);
        n.name = name_for_msgs;
        if (st == POPC_EUNSUPPORTED) {
            report_add(unsupported, "%s  node '%s': op %s, domain %s, opset "
                       "%d (%s)", unsupported->n ? "\n" : "",
                       n.name ? n.name : "", n.op, n.domain, opset,
                       popc_last_error());
            unsupported->n++;
            st = POPC_OK;
            goto done;
        }
        if (st != POPC_OK)
            goto done;
    } else {
        n.version = opset;
    }
    def = popc_registry_find_op(im->reg, n.domain, n.op, n.version);
    if (!def && !unsupported->n) {
        /* Shape and Size of a known shape need no op */
        if ((st = popco_try_fold(im, &n, NULL, (int)np->n_output, outs,
                                 &folded)) != POPC_OK)
            goto done;
        if (folded) {
            st = name_outputs(im, np, outs, np->n_output);
            goto done;
        }
    }
    if (!def) {
        if (unsupported->n < MAX_LISTED)
            report_add(unsupported, "%s  node '%s': op %s, domain %s, opset "
                       "%d", unsupported->n ? "\n" : "",
                       n.name ? n.name : "", n.op, n.domain, opset);
        unsupported->n++;
        goto done;
    }
    if (unsupported->n)
        goto done; /* only listing from here on */
    if ((st = training_batchnorm(im, &n, opset, &n_out)) != POPC_OK ||
        (st = eval_mode_node(im, &n, &n_out)) != POPC_OK)
        goto done;
    if ((st = popco_try_fold(im, &n, def, n_out, outs, &folded)) != POPC_OK) {
        st = popc_set_error(st, "%s: %s: %s", im->file, where,
                            popc_last_error());
        goto done;
    }
    if (!folded && (st = add_node(im, &n, outs, n_out, &node)) != POPC_OK) {
        st = popc_set_error(st, "%s: %s: %s", im->file, where,
                            popc_last_error());
        goto done;
    }
    if (!folded && (st = batchnorm_updates(im, &n, n_out, outs)) != POPC_OK)
        goto done;
    st = name_outputs(im, np, outs, (size_t)n_out);
done:
    popco_attrs_free(&n.attrs);
    free(n.inputs);
    return st;
}

/* ---- annotations ------------------------------------------------------------ */

static popc_status annotate(popco_importer *im)
{
    const popc_onnx_import_options *o = im->opt;
    popc_status st;

    for (int n = 0; n < popc_graph_n_nodes(im->g); n++) {
        const char *name = popc_graph_node_name(im->g, n);
        const popc_annotations *pick = NULL;

        for (int i = 0; i < o->n_annotations; i++) {
            const char *p = o->annotations[i].prefix ? o->annotations[i].prefix
                                                     : "";
            if (strncmp(name, p, strlen(p)) == 0)
                pick = &o->annotations[i].annot;
        }
        if (pick &&
            (st = popc_graph_set_node_annotations(im->g, n, pick)) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

/* ---- the model ---------------------------------------------------------- */

int popco_is_initializer(const Onnx__GraphProto *gp, const char *name)
{
    for (size_t i = 0; i < gp->n_initializer; i++)
        if (gp->initializer[i]->name &&
            strcmp(gp->initializer[i]->name, name) == 0)
            return 1;
    return 0;
}

/* Initializers become weights (trainable when asked and floating point,
** BatchNormalization statistics excepted) or constants. */
static popc_status import_initializers(popco_importer *im,
                                       const Onnx__GraphProto *gp,
                                       int trainable)
{
    popc_status st;

    for (size_t i = 0; i < gp->n_initializer; i++) {
        Onnx__TensorProto *tp = gp->initializer[i];
        char what[600];
        popc_tensor *t = NULL;
        int id;

        if (!tp->name || !*tp->name)
            return popc_set_error(POPC_EIO, "%s: initializer #%zu has no "
                                  "name", im->file, i);
        snprintf(what, sizeof what, "initializer '%s'", tp->name);
        if ((st = popco_tensor_from_proto(tp, &im->src, what, &t)) != POPC_OK)
            return st;
        /* the bytes are copied: release them now, so a model's weights
        ** are held twice at most one tensor at a time */
        if (im->lean_map) {
            popco_lean_release(tp, im->lean_map);
        } else {
            free(tp->raw_data.data);
            tp->raw_data.data = NULL;
            tp->raw_data.len = 0;
        }
        if (trainable && popc_dtype_is_float(popc_tensor_dtype(t)))
            st = popc_graph_add_initializer(
                im->g, tp->name, t, !is_batchnorm_statistic(gp, tp->name),
                &id);
        else
            st = popc_graph_add_constant(im->g, tp->name, t, &id);
        popc_tensor_free(t);
        if (st != POPC_OK)
            return popc_set_error(st, "%s: %s: %s", im->file, what,
                                  popc_last_error());
    }
    return POPC_OK;
}

/* The nodes, then the graph outputs (named as in the file). */
static popc_status import_nodes_outputs(popco_importer *im,
                                        const Onnx__ModelProto *mp,
                                        const Onnx__GraphProto *gp)
{
    report unsupported = {0};
    popc_status st;

    for (size_t i = 0; i < gp->n_node; i++)
        if ((st = import_node(im, mp, gp->node[i], (int)i, &unsupported)) !=
            POPC_OK) {
            free(unsupported.buf);
            return st;
        }
    if (unsupported.n) {
        st = popc_set_error(POPC_EUNSUPPORTED, "%s: %d node%s use%s ops popc "
                            "does not have:\n%s%s\nLoad a plugin that "
                            "provides them (POPC_PLUGIN_PATH; `popc plugins` "
                            "lists what is loaded)", im->file, unsupported.n,
                            unsupported.n == 1 ? "" : "s",
                            unsupported.n == 1 ? "s" : "",
                            unsupported.buf ? unsupported.buf : "",
                            unsupported.n > MAX_LISTED ? "\n  ..." : "");
        free(unsupported.buf);
        return st;
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = gp->output[i]->name;
        int id = name ? popc_graph_find_value(im->g, name) : -1;

        if (popco_is_sequence(im, name))
            return popc_set_error(POPC_EUNSUPPORTED, "%s: graph output '%s' "
                                  "is a sequence; popc's graphs return "
                                  "tensors (concatenate it, or return its "
                                  "elements)", im->file, name);
        if (id < 0)
            return popc_set_error(POPC_EIO, "%s: graph%s%s output '%s' is "
                                  "not computed by any node", im->file,
                                  im->parent ? " " : "",
                                  im->parent ? popc_graph_name(im->g) : "",
                                  name ? name : "");
        if (im->opt->no_outputs && !im->parent)
            continue;
        if ((st = popc_graph_add_output(im->g, id)) != POPC_OK)
            return popc_set_error(st, "%s: graph output '%s': %s", im->file,
                                  name, popc_last_error());
    }
    return POPC_OK;
}

popc_status popco_import_body(popco_importer *im, const Onnx__ModelProto *mp,
                              const Onnx__GraphProto *gp)
{
    popc_status st;

    if ((st = import_initializers(im, gp, 0)) != POPC_OK)
        return st;
    return import_nodes_outputs(im, mp, gp);
}

static popc_status import_model(popco_importer *im,
                                const Onnx__ModelProto *mp)
{
    const Onnx__GraphProto *gp = mp->graph;
    int opset = domain_opset(mp, NULL), n_need = 0;
    char **need = NULL;
    popc_status st;

    if (opset == 0 && mp->n_opset_import == 0)
        opset = 1; /* IR version 2 files predate opset_import */
    else if (opset == 0)
        opset = 17; /* only other domains: no ai.onnx node reads it */
    if (opset < 1 || opset > 17)
        return popc_set_error(POPC_EUNSUPPORTED, "%s: unknown opset %d of "
                              "ai.onnx; popc reads opsets 1 to 17 (export "
                              "with opset_version=17 or lower)", im->file,
                              opset);
    if ((st = import_initializers(im, gp, im->opt->trainable)) != POPC_OK)
        return st;
    /* the same walk popc_onnx_compile_time_inputs makes, on the model
    ** already unpacked */
    if (im->cand && im->cand->n &&
        (st = popco_compile_time_names(gp, im->file, &need, &n_need)) !=
            POPC_OK)
        return st;
    for (size_t i = 0; i < gp->n_input && st == POPC_OK; i++) {
        if (!gp->input[i]->name || !*gp->input[i]->name)
            st = popc_set_error(POPC_EIO, "%s: graph input #%zu has no "
                                "name", im->file, i);
        /* IR < 4 lists initializers among the inputs too */
        else if (!popco_is_initializer(gp, gp->input[i]->name))
            st = add_graph_input(im, gp->input[i], need, n_need);
    }
    popc_onnx_free_names(need, n_need);
    if (st != POPC_OK)
        return st;
    if ((st = import_nodes_outputs(im, mp, gp)) != POPC_OK)
        return st;
    return annotate(im);
}

/* The candidates are all there; their flags start at 0. */
static popc_status check_candidates(const popco_candidates *c)
{
    static const char fn[] = "popc_onnx_import_file_candidates";

    if (!c)
        return POPC_OK;
    if (c->n < 0)
        return popc_set_error(POPC_EINVAL, "%s: n is %d; give 0 or more",
                              fn, c->n);
    if (c->n && (!c->names || !c->values))
        return popc_set_error(POPC_EINVAL, "%s: n is %d, but names or "
                              "values is NULL; give both arrays, or n 0",
                              fn, c->n);
    for (int i = 0; c->frozen && i < c->n; i++)
        c->frozen[i] = 0;
    for (int i = 0; i < c->n; i++)
        if (!c->values[i])
            return popc_set_error(POPC_EINVAL, "%s: candidate %d ('%s') "
                                  "is NULL; give its tensor or leave it "
                                  "out", fn, i,
                                  c->names[i] ? c->names[i] : "");
    return POPC_OK;
}

/* Import from bytes; with *map (a mapped file; may be NULL) the weights
** are read from the mapping without an unpacked copy (lean.c), its pages
** dropped as each tensor is made; without that, *map is unmapped as soon
** as the message is unpacked. */
static popc_status import_data(const void *data, size_t size,
                               const char *name, const char *base_dir,
                               const popc_onnx_import_options *opt,
                               const popco_candidates *cand,
                               popco_map *map, popc_graph **out)
{
    popc_onnx_import_options defaults;
    Onnx__ModelProto *mp = NULL;
    popco_raw_ref *refs = NULL;
    popco_importer im;
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_onnx_import: out is NULL");
    *out = NULL;
    if (!data && size)
        return popc_set_error(POPC_EINVAL, "popc_onnx_import: data is NULL");
    memset(&im, 0, sizeof im);
    im.file = name ? name : "<memory>";
    im.src.file = im.file;
    im.src.base_dir = base_dir;
    im.src.bytes_made = &im.tensor_bytes;
    im.opt = opts_or_default(opt, &defaults);
    im.cand = cand;
    if ((st = check_candidates(cand)) != POPC_OK)
        return st;
    if (im.opt->registry)
        im.reg = im.opt->registry;
    else if ((st = popc_registry_global(&im.reg)) != POPC_OK)
        return st;
    if (map)
        st = popco_unpack_model_lean(data ? data : "", size, im.file, &mp,
                                     &refs);
    else
        st = popco_unpack_model(data ? data : "", size, im.file, &mp);
    if (map && !refs)
        popco_unmap(map);
    if (st != POPC_OK)
        return st;
    im.lean_map = refs ? map : NULL;
    im.src.raw_is_mapped = refs != NULL;
    if ((st = popc_graph_new(mp->graph->name && *mp->graph->name
                                 ? mp->graph->name
                                 : "onnx",
                             &im.g)) != POPC_OK ||
        (st = popc_graph_set_origin(im.g, im.file)) != POPC_OK ||
        (st = import_model(&im, mp)) != POPC_OK) {
        popc_graph_free(im.g);
        im.g = NULL;
    }
    popco_seqs_free(im.seqs);
    popco_lean_forget(mp, refs);
    onnx__model_proto__free_unpacked(mp, NULL);
    if (map)
        popco_unmap(map);
    *out = im.g;
    return st;
}

popc_status popc_onnx_import_bytes(const void *data, size_t size,
                                   const char *name, const char *base_dir,
                                   const popc_onnx_import_options *opt,
                                   popc_graph **out)
{
    return import_data(data, size, name, base_dir, opt, NULL, NULL, out);
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *d;

    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    if ((d = malloc((size_t)(slash - path) + 1))) {
        memcpy(d, path, (size_t)(slash - path));
        d[slash - path] = '\0';
    }
    return d;
}

static popc_status import_file(const char *path,
                               const popc_onnx_import_options *opt,
                               const popco_candidates *cand,
                               popc_graph **out)
{
    popco_map m;
    char *dir;
    popc_status st;

    if (!out || !path)
        return popc_set_error(POPC_EINVAL, "%s: NULL path or out",
                              cand ? "popc_onnx_import_file_candidates"
                                   : "popc_onnx_import_file");
    *out = NULL;
    if ((st = popco_map_file(path, &m)) != POPC_OK)
        return st;
    if (!(dir = dir_of(path))) {
        popco_unmap(&m);
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
    }
    st = import_data(m.data, m.size, path, dir, opt, cand, &m, out);
    free(dir);
    popco_unmap(&m); /* already unmapped unless an argument was bad */
    return st;
}

popc_status popc_onnx_import_file(const char *path,
                                  const popc_onnx_import_options *opt,
                                  popc_graph **out)
{
    return import_file(path, opt, NULL, out);
}

popc_status popc_onnx_import_file_candidates(
    const char *path, const popc_onnx_import_options *opt, int n,
    const char *const *names, popc_tensor *const *values, int *frozen,
    popc_graph **out)
{
    popco_candidates c = {n, names, values, frozen};

    return import_file(path, opt, &c, out);
}
