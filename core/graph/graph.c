/* graph.c - building graphs: values, nodes, names, annotations, clones.
**
** Names: value names are used exactly as given (weights keep PyTorch's
** "fc1.weight"); node names get the current scope as a prefix, and a
** missing node name becomes "<scope>/<Op>_<id>". A node's output values are
** named "<node>:<i>". Generated names are made unique with a "_<n>" suffix;
** a name the caller chose that is already taken is POPC_EEXIST.
**
** Adding a node is all-or-nothing: inference runs before anything is
** committed, so a failed add leaves the graph as it was.
*/
#include "config.h"

#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"

/* ---- small helpers ---------------------------------------------------------- */

popc_status popci_grow(void **arr, int *cap, int need, size_t elem)
{
    int n = *cap ? *cap : 16;
    void *p;

    if (need <= *cap)
        return POPC_OK;
    while (n < need)
        n *= 2;
    if (!(p = popci_realloc(*arr, (size_t)n * elem)))
        return popc_set_error(POPC_ENOMEM, "graph: out of memory");
    *arr = p;
    *cap = n;
    return POPC_OK;
}

static const char *kind_name(popc_value_kind k)
{
    switch (k) {
    case POPC_VALUE_INPUT: return "input";
    case POPC_VALUE_INITIALIZER: return "initializer";
    case POPC_VALUE_CONSTANT: return "constant";
    case POPC_VALUE_NODE_OUTPUT: return "node output";
    }
    return "value";
}

/* ---- lifecycle ---------------------------------------------------------------- */

popc_status popc_graph_new(const char *name, popc_graph **out)
{
    popc_graph *g;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_graph_new: out is NULL");
    *out = NULL;
    if (!(g = popci_calloc(1, sizeof *g)))
        return popc_set_error(POPC_ENOMEM, "popc_graph_new: out of memory");
    popci_annot_reset(&g->annot);
    if (!(g->name = popci_strdup(name && name[0] ? name : "graph"))) {
        free(g);
        return popc_set_error(POPC_ENOMEM, "popc_graph_new: out of memory");
    }
    *out = g;
    return POPC_OK;
}

static void value_clear(popci_value *v)
{
    free(v->name);
    popc_tensor_free(v->tensor);
    memset(v, 0, sizeof *v);
}

static void node_clear(popci_node *n)
{
    free(n->name);
    free(n->domain);
    free(n->op);
    free(n->inputs);
    free(n->outputs);
    popci_attrs_free(n->attrs, n->n_attrs);
    popci_annot_free(&n->annot);
    memset(n, 0, sizeof *n);
}

void popc_graph_free(popc_graph *g)
{
    if (!g)
        return;
    for (int v = 0; v < g->n_values; v++)
        value_clear(&g->values[v]);
    for (int n = 0; n < g->n_nodes; n++)
        node_clear(&g->nodes[n]);
    free(g->values);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    free(g->updates);
    popci_name_map_free(&g->value_names);
    popci_name_map_free(&g->node_names);
    popci_graph_clear_scopes(g);
    free(g->scopes);
    popci_annot_free(&g->annot);
    free(g->origin);
    free(g->name);
    free(g);
}

const char *popc_graph_name(const popc_graph *g)
{
    return g ? g->name : NULL;
}

static popc_status clone_node(const popci_node *src, popci_node *dst)
{
    popc_status st;

    memset(dst, 0, sizeof *dst);
    dst->version = src->version;
    dst->n_inputs = src->n_inputs;
    dst->n_outputs = src->n_outputs;
    dst->def = src->def;
    dst->name = popci_strdup(src->name);
    dst->domain = popci_strdup(src->domain);
    dst->op = popci_strdup(src->op);
    dst->inputs = popci_malloc(((size_t)src->n_inputs + 1) * sizeof(int));
    dst->outputs = popci_malloc(((size_t)src->n_outputs + 1) * sizeof(int));
    if (!dst->name || !dst->domain || !dst->op || !dst->inputs ||
        !dst->outputs)
        return popc_set_error(POPC_ENOMEM, "popc_graph_clone: out of memory");
    if (src->n_inputs)
        memcpy(dst->inputs, src->inputs, (size_t)src->n_inputs * sizeof(int));
    if (src->n_outputs)
        memcpy(dst->outputs, src->outputs,
               (size_t)src->n_outputs * sizeof(int));
    if ((st = popci_attrs_copy(src->attrs, src->n_attrs, &dst->attrs)) !=
        POPC_OK)
        return st;
    dst->n_attrs = src->n_attrs;
    return popci_annot_copy(&dst->annot, &src->annot);
}

/* share_weights: the clone holds references to g's initializer tensors
** instead of copies (the plan's graph: weights are read, never written). */
static popc_status clone_graph(const popc_graph *g, int share_weights,
                               popc_graph **out)
{
    popc_graph *c = NULL;
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_graph_clone: out is NULL");
    *out = NULL;
    if (!g)
        return popc_set_error(POPC_EINVAL, "popc_graph_clone: graph is NULL");
    if ((st = popc_graph_new(g->name, &c)) != POPC_OK)
        return st;
    if ((st = POPCI_GROW(c, values, cap_values, g->n_values)) != POPC_OK ||
        (st = POPCI_GROW(c, nodes, cap_nodes, g->n_nodes)) != POPC_OK ||
        (st = POPCI_GROW(c, inputs, cap_inputs, g->n_inputs)) != POPC_OK ||
        (st = POPCI_GROW(c, outputs, cap_outputs, g->n_outputs)) != POPC_OK ||
        (st = POPCI_GROW(c, updates, cap_updates, g->n_updates)) != POPC_OK ||
        (st = POPCI_GROW(c, scopes, cap_scopes, g->n_scopes)) != POPC_OK)
        goto fail;
    for (int v = 0; v < g->n_values; v++) {
        const popci_value *s = &g->values[v];
        popci_value *d = &c->values[v];

        *d = *s;
        d->name = NULL;
        d->tensor = NULL;
        c->n_values = v + 1;
        if (!(d->name = popci_strdup(s->name))) {
            st = popc_set_error(POPC_ENOMEM, "popc_graph_clone: out of memory");
            goto fail;
        }
        if (s->tensor && share_weights &&
            s->kind == POPC_VALUE_INITIALIZER)
            d->tensor = popc_tensor_ref(s->tensor);
        else if (s->tensor &&
                 (st = popc_tensor_clone(s->tensor, &d->tensor)) != POPC_OK)
            goto fail;
    }
    for (int n = 0; n < g->n_nodes; n++) {
        c->n_nodes = n + 1;
        if ((st = clone_node(&g->nodes[n], &c->nodes[n])) != POPC_OK)
            goto fail;
    }
    c->n_inputs = g->n_inputs;
    c->n_outputs = g->n_outputs;
    c->n_updates = g->n_updates;
    if (g->n_inputs)
        memcpy(c->inputs, g->inputs, (size_t)g->n_inputs * sizeof(int));
    if (g->n_outputs)
        memcpy(c->outputs, g->outputs, (size_t)g->n_outputs * sizeof(int));
    if (g->n_updates)
        memcpy(c->updates, g->updates,
               (size_t)g->n_updates * sizeof *g->updates);
    for (int i = 0; i < g->n_scopes; i++) {
        if (!(c->scopes[i] = popci_strdup(g->scopes[i]))) {
            st = popc_set_error(POPC_ENOMEM, "popc_graph_clone: out of memory");
            goto fail;
        }
        c->n_scopes = i + 1;
    }
    if (g->scope_joined && !(c->scope_joined = popci_strdup(g->scope_joined))) {
        st = popc_set_error(POPC_ENOMEM, "popc_graph_clone: out of memory");
        goto fail;
    }
    popci_annot_free(&c->annot);
    if ((st = popci_annot_copy(&c->annot, &g->annot)) != POPC_OK)
        goto fail;
    c->n_constants = g->n_constants;
    /* a clone of a graph whose Block ended must refuse ops as it does */
    c->block_ended = g->block_ended;
    c->block_next_id = g->block_next_id;
    if (g->origin && !(c->origin = popci_strdup(g->origin))) {
        st = popc_set_error(POPC_ENOMEM, "popc_graph_clone: out of memory");
        goto fail;
    }
    if ((st = popci_graph_rebuild_names(c)) != POPC_OK)
        goto fail;
    *out = c;
    return POPC_OK;
fail:
    popc_graph_free(c);
    return st;
}

popc_status popc_graph_clone(const popc_graph *g, popc_graph **out)
{
    return clone_graph(g, 0, out);
}

popc_status popci_graph_clone_sharing(const popc_graph *g, popc_graph **out)
{
    return clone_graph(g, 1, out);
}

/* ---- values ------------------------------------------------------------------ */

/* Append a value; takes `name` (malloc'd) even on failure. */
static popc_status new_value(popc_graph *g, char *name, popc_value_kind kind,
                             int *id)
{
    popci_value *v;
    popc_status st;

    if (!name)
        return popc_set_error(POPC_ENOMEM, "graph: out of memory");
    if ((st = POPCI_GROW(g, values, cap_values, g->n_values + 1)) != POPC_OK ||
        (st = popci_name_map_reserve(&g->value_names)) != POPC_OK) {
        free(name);
        return st;
    }
    v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->kind = kind;
    v->producer = -1;
    v->producer_slot = -1;
    popci_name_map_put(&g->value_names, name, g->n_values);
    *id = g->n_values++;
    return POPC_OK;
}

static popc_status check_new_value_name(const popc_graph *g, const char *who,
                                        const char *name)
{
    int old;

    if (!name || !name[0])
        return popc_set_error(POPC_EINVAL, "%s: a name is required", who);
    if ((old = popci_name_map_find(&g->value_names, name)) >= 0)
        return popc_set_error(POPC_EEXIST, "%s: graph '%s' already has a %s "
                              "named '%s'; names must be unique", who,
                              g->name, kind_name(g->values[old].kind), name);
    return POPC_OK;
}

static popc_status check_dims(const char *who, const char *name,
                              const int64_t *dims, int rank)
{
    if (rank < 0 || rank > POPC_MAX_RANK || (rank > 0 && !dims))
        return popc_set_error(POPC_EINVAL, "%s '%s': rank %d is outside 0..%d",
                              who, name, rank, POPC_MAX_RANK);
    for (int d = 0; d < rank; d++)
        if (dims[d] < 0)
            return popc_set_error(POPC_EINVAL, "%s '%s': dimension %d is %lld; "
                                  "shapes are static and non-negative", who,
                                  name, d, (long long)dims[d]);
    return POPC_OK;
}

popc_status popc_graph_add_input(popc_graph *g, const char *name,
                                 popc_dtype dt, const int64_t *dims, int rank,
                                 int *id)
{
    popc_status st;
    int v;

    if (!g || !id)
        return popc_set_error(POPC_EINVAL, "popc_graph_add_input: graph or "
                              "id is NULL");
    *id = -1;
    if ((st = check_new_value_name(g, "popc_graph_add_input", name)) !=
        POPC_OK)
        return st;
    if (!popc_dtype_size(dt))
        return popc_set_error(POPC_EINVAL, "popc_graph_add_input '%s': unknown "
                              "dtype %d", name, (int)dt);
    if ((st = check_dims("popc_graph_add_input", name, dims, rank)) != POPC_OK)
        return st;
    if ((st = POPCI_GROW(g, inputs, cap_inputs, g->n_inputs + 1)) != POPC_OK)
        return st;
    if ((st = new_value(g, popci_strdup(name), POPC_VALUE_INPUT, &v)) != POPC_OK)
        return st;
    g->values[v].info.dtype = dt;
    g->values[v].info.rank = rank;
    for (int d = 0; d < rank; d++)
        g->values[v].info.dims[d] = dims[d];
    g->inputs[g->n_inputs++] = v;
    *id = v;
    return POPC_OK;
}

static void set_info_from_tensor(popci_value *v, popc_tensor *t)
{
    const int64_t *dims = popc_tensor_dims(t);

    v->info.dtype = popc_tensor_dtype(t);
    v->info.rank = popc_tensor_rank(t);
    for (int d = 0; d < v->info.rank; d++)
        v->info.dims[d] = dims[d];
    v->info.data = NULL;
}

popc_status popc_graph_add_initializer(popc_graph *g, const char *name,
                                       popc_tensor *t, int trainable, int *id)
{
    popc_status st;
    int v;

    if (!g || !id || !t)
        return popc_set_error(POPC_EINVAL, "popc_graph_add_initializer: "
                              "graph, tensor or id is NULL");
    *id = -1;
    if ((st = check_new_value_name(g, "popc_graph_add_initializer", name)) !=
        POPC_OK)
        return st;
    if ((st = new_value(g, popci_strdup(name), POPC_VALUE_INITIALIZER, &v)) !=
        POPC_OK)
        return st;
    g->values[v].tensor = popc_tensor_ref(t);
    g->values[v].trainable = trainable ? 1 : 0;
    set_info_from_tensor(&g->values[v], t);
    *id = v;
    return POPC_OK;
}

popc_status popc_graph_add_constant(popc_graph *g, const char *name,
                                    popc_tensor *t, int *id)
{
    popc_status st;
    char *nm;
    int v;

    if (!g || !id || !t)
        return popc_set_error(POPC_EINVAL, "popc_graph_add_constant: graph, "
                              "tensor or id is NULL");
    *id = -1;
    if (name) {
        if ((st = check_new_value_name(g, "popc_graph_add_constant", name)) !=
            POPC_OK)
            return st;
        nm = popci_strdup(name);
    } else {
        char base[32];

        snprintf(base, sizeof base, "const_%d", g->n_constants);
        nm = popci_unique_name(&g->value_names, base);
    }
    if ((st = new_value(g, nm, POPC_VALUE_CONSTANT, &v)) != POPC_OK)
        return st;
    g->n_constants++;
    g->values[v].tensor = popc_tensor_ref(t);
    set_info_from_tensor(&g->values[v], t);
    *id = v;
    return POPC_OK;
}

popc_status popci_graph_add_constant_view(popc_graph *g, const char *base,
                                          const popc_view *view, int *id)
{
    popc_tensor *t = NULL;
    popc_status st;
    char *nm;
    int v;

    *id = -1;
    if (!view || !view->data || !popc_dtype_size(view->dtype) ||
        view->rank < 0 || view->rank > POPC_MAX_RANK)
        return popc_set_error(POPC_EINVAL, "constant '%s': value has no data "
                              "or a bad dtype or rank", base);
    if ((st = popc_tensor_from_data(view->dtype, view->dims, view->rank,
                                    view->data, &t)) != POPC_OK)
        return st;
    nm = popci_unique_name(&g->value_names, base);
    if ((st = new_value(g, nm, POPC_VALUE_CONSTANT, &v)) != POPC_OK) {
        popc_tensor_free(t);
        return st;
    }
    g->n_constants++;
    g->values[v].tensor = t;
    set_info_from_tensor(&g->values[v], t);
    *id = v;
    return POPC_OK;
}

/* Replace initializer value's tensor by t: a copy, or (share) a reference
** to t itself. `what` names the caller in errors. */
static popc_status put_initializer(const char *what, popc_graph *g,
                                   int value, const popc_tensor *t, int share)
{
    popci_value *v;
    popc_tensor *copy = NULL;
    popc_view nv;
    popc_status st;
    char want[128], got[128];

    if (!g || !t || value < 0 || value >= g->n_values)
        return popc_set_error(POPC_EINVAL, "%s: bad graph, tensor or value "
                              "id %d", what, value);
    v = &g->values[value];
    if (v->kind != POPC_VALUE_INITIALIZER)
        return popc_set_error(POPC_EINVAL, "%s: '%s' is a %s, not an "
                              "initializer", what, v->name,
                              kind_name(v->kind));
    if (share)
        /* as popci_graph_clone_sharing: the graph only reads its weights */
        copy = popc_tensor_ref((popc_tensor *)t);
    else if ((st = popc_tensor_clone(t, &copy)) != POPC_OK)
        return st;
    nv = popc_tensor_view(copy);
    if (!popci_view_same(&nv, &v->info)) {
        popc_view_describe(&v->info, want, sizeof want);
        popc_view_describe(&nv, got, sizeof got);
        popc_tensor_free(copy);
        return popc_set_error(POPC_EINVAL, "%s: '%s' is %s but the new "
                              "tensor is %s; dtype and shape must stay the "
                              "same", what, v->name, want, got);
    }
    popc_tensor_free(v->tensor);
    v->tensor = copy;
    return POPC_OK;
}

popc_status popc_graph_set_initializer(popc_graph *g, int value,
                                       const popc_tensor *t)
{
    return put_initializer("popc_graph_set_initializer", g, value, t, 0);
}

popc_status popci_graph_share_initializer(popc_graph *g, int value,
                                          const popc_tensor *t)
{
    return put_initializer("popci_graph_share_initializer", g, value, t, 1);
}

/* ---- nodes ----------------------------------------------------------------- */

static const popc_op_def *lookup_def(const char *domain, const char *op,
                                     int version)
{
    popc_registry *reg = NULL;

    if (popc_registry_global(&reg) != POPC_OK || !reg)
        return NULL;
    return popc_registry_find_op(reg, domain, op, version);
}

const popc_op_def *popci_graph_node_def_c(const popc_graph *g, int node)
{
    const popci_node *n = &g->nodes[node];

    return n->def ? n->def : lookup_def(n->domain, n->op, n->version);
}

const popc_op_def *popci_graph_node_def(popc_graph *g, int node)
{
    popci_node *n = &g->nodes[node];

    if (!n->def)
        n->def = lookup_def(n->domain, n->op, n->version);
    return n->def;
}

static popc_status check_arity(const popc_op_def *def, const char *domain,
                               const char *op, const char *node_name,
                               int n_inputs, int n_outputs)
{
    if (n_inputs < def->min_inputs ||
        (def->max_inputs >= 0 && n_inputs > def->max_inputs))
        return popc_set_error(POPC_EINVAL, "node '%s' (%s::%s): %d inputs "
                              "given, the op takes %d to %d", node_name,
                              domain, op, n_inputs, def->min_inputs,
                              def->max_inputs);
    if (n_outputs < def->min_outputs ||
        (def->max_outputs >= 0 && n_outputs > def->max_outputs))
        return popc_set_error(POPC_EINVAL, "node '%s' (%s::%s): %d outputs "
                              "requested, the op has %d to %d", node_name,
                              domain, op, n_outputs, def->min_outputs,
                              def->max_outputs);
    return POPC_OK;
}

/* The node's name (malloc'd) or NULL with the error set: `name` as given,
** or "<scope>/<op>_<id>". */
static char *make_node_name(popc_graph *g, const char *op, const char *name,
                            const char *scope, int unique_name,
                            popc_status *st)
{
    size_t len = (scope ? strlen(scope) + 1 : 0) + strlen(op) + 16;
    char *full, *res;

    if (name)
        full = popci_strdup(name);
    else if ((full = popci_malloc(len)) != NULL)
        snprintf(full, len, "%s%s%s_%d", scope ? scope : "", scope ? "/" : "",
                 op, g->n_nodes);
    if (!full) {
        *st = popc_set_error(POPC_ENOMEM, "graph: out of memory");
        return NULL;
    }
    if (popci_name_map_find(&g->node_names, full) < 0)
        return full;
    if (name && !unique_name) {
        *st = popc_set_error(POPC_EEXIST, "popc_graph_add_node: graph '%s' "
                             "already has a node named '%s'; names must be "
                             "unique", g->name, full);
        free(full);
        return NULL;
    }
    res = popci_unique_name(&g->node_names, full);
    free(full);
    if (!res)
        *st = popc_set_error(POPC_ENOMEM, "graph: out of memory");
    return res;
}

static popc_status infer_new_node(popc_graph *g, const popc_op_def *def,
                                  const char *node_name, const int *inputs,
                                  int n_inputs, const popc_attr *attrs,
                                  int n_attrs, popc_view *outs, int n_outputs)
{
    popc_view *in = NULL;
    popc_attrs av = POPC_ATTRS(n_attrs, attrs);
    popc_status st = POPC_OK;
    int ready;

    if (n_inputs && !(in = popci_calloc((size_t)n_inputs, sizeof *in)))
        return popc_set_error(POPC_ENOMEM, "graph: out of memory");
    popci_graph_input_views(g, inputs, n_inputs, in, &ready);
    if (ready)
        st = popci_infer_run(def, node_name, in, n_inputs, outs, n_outputs,
                             &av, 0);
    free(in);
    return st;
}

popc_status popci_graph_add_node_ex(popc_graph *g, const char *domain,
                                    const char *op, int version,
                                    const int *inputs, int n_inputs,
                                    int *outputs, int n_outputs,
                                    const popc_attr *attrs, int n_attrs,
                                    const char *name, const popci_annot *a,
                                    int unique_name, int require_known,
                                    int *node)
{
    const popc_op_def *def;
    popci_node nd;
    popc_view *outs = NULL;
    popc_status st = POPC_OK;
    int id;

    if (node)
        *node = -1;
    if (!g || !op || !op[0] || n_inputs < 0 || n_outputs < 0 ||
        (n_inputs && !inputs) || (n_outputs && !outputs))
        return popc_set_error(POPC_EINVAL, "popc_graph_add_node: graph, op, "
                              "inputs or outputs missing (op '%s')",
                              op ? op : "(null)");
    for (int i = 0; i < n_outputs; i++)
        outputs[i] = -1;
    if (!domain || !domain[0])
        domain = POPC_DOMAIN_ONNX;
    if (version < 0)
        return popc_set_error(POPC_EINVAL, "popc_graph_add_node: %s::%s: "
                              "version %d is negative", domain, op, version);
    if (version == 0 && strcmp(domain, POPC_DOMAIN_ONNX) == 0)
        version = POPC_ONNX_OPSET;
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i] < -1)
            return popc_set_error(POPC_EINVAL, "popc_graph_add_node: %s::%s "
                                  "input %d is value id %d; use -1 for an "
                                  "absent optional input", domain, op, i,
                                  inputs[i]);

    memset(&nd, 0, sizeof nd);
    if (!(nd.name = make_node_name(g, op, name, a->scope, unique_name, &st)))
        return st;
    def = lookup_def(domain, op, version);
    if (!def && require_known) {
        st = popc_set_error(POPC_ECOMPILE, "node '%s': op %s::%s is not "
                            "registered; load the plugin that provides it "
                            "(POPC_PLUGIN_PATH)", nd.name, domain, op);
        goto fail;
    }
    if (def && (st = check_arity(def, domain, op, nd.name, n_inputs,
                                 n_outputs)) != POPC_OK)
        goto fail;
    if (n_outputs && !(outs = popci_calloc((size_t)n_outputs, sizeof *outs))) {
        st = popc_set_error(POPC_ENOMEM, "graph: out of memory");
        goto fail;
    }
    if (def && (st = infer_new_node(g, def, nd.name, inputs, n_inputs, attrs,
                                    n_attrs, outs, n_outputs)) != POPC_OK)
        goto fail;

    nd.domain = popci_strdup(domain);
    nd.op = popci_strdup(op);
    nd.inputs = popci_malloc(((size_t)n_inputs + 1) * sizeof(int));
    nd.outputs = popci_malloc(((size_t)n_outputs + 1) * sizeof(int));
    if (!nd.domain || !nd.op || !nd.inputs || !nd.outputs) {
        st = popc_set_error(POPC_ENOMEM, "graph: out of memory");
        goto fail;
    }
    if (n_inputs)
        memcpy(nd.inputs, inputs, (size_t)n_inputs * sizeof(int));
    if ((st = popci_attrs_copy(attrs, n_attrs, &nd.attrs)) != POPC_OK)
        goto fail;
    nd.n_attrs = n_attrs;
    if ((st = popci_annot_copy(&nd.annot, a)) != POPC_OK)
        goto fail;
    nd.version = version;
    nd.n_inputs = n_inputs;
    nd.n_outputs = n_outputs;
    nd.def = def;
    /* reserve everything so the commit below cannot fail half-way */
    if ((st = POPCI_GROW(g, nodes, cap_nodes, g->n_nodes + 1)) != POPC_OK ||
        (st = POPCI_GROW(g, values, cap_values, g->n_values + n_outputs)) !=
            POPC_OK ||
        (st = popci_name_map_reserve(&g->node_names)) != POPC_OK)
        goto fail;
    for (int i = 0; i < n_outputs; i++) {
        size_t len = strlen(nd.name) + 16;
        char *vn = popci_malloc(len), *un;
        int v;

        if (!vn) {
            st = popc_set_error(POPC_ENOMEM, "graph: out of memory");
            goto fail_values;
        }
        snprintf(vn, len, "%s:%d", nd.name, i);
        un = popci_unique_name(&g->value_names, vn);
        free(vn);
        if ((st = new_value(g, un, POPC_VALUE_NODE_OUTPUT, &v)) != POPC_OK)
            goto fail_values;
        g->values[v].info = outs[i];
        g->values[v].info.data = NULL;
        g->values[v].producer = g->n_nodes;
        g->values[v].producer_slot = i;
        nd.outputs[i] = v;
    }
    id = g->n_nodes++;
    g->nodes[id] = nd;
    popci_name_map_put(&g->node_names, g->nodes[id].name, id);
    for (int i = 0; i < n_outputs; i++)
        outputs[i] = nd.outputs[i];
    if (node)
        *node = id;
    free(outs);
    return POPC_OK;

fail_values:
    /* drop the output values created so far (they are the last ones) */
    while (g->n_values > 0 && g->values[g->n_values - 1].producer ==
                                  g->n_nodes) {
        value_clear(&g->values[--g->n_values]);
    }
    if (popci_graph_rebuild_names(g) != POPC_OK)
        st = popc_set_error(POPC_ENOMEM, "graph: out of memory");
fail:
    free(outs);
    node_clear(&nd);
    return st;
}

static void current_annot(const popc_graph *g, popci_annot *a)
{
    *a = g->annot;
    a->scope = g->scope_joined;
}

popc_status popc_graph_add(popc_graph *g, const popc_node_desc *d,
                           int *outputs, int *node)
{
    if (!d || d->size < offsetof(popc_node_desc, name) + sizeof d->name)
        return popc_set_error(POPC_EINVAL, "popc_graph_add: the node "
                              "description is NULL or its size (%u) is "
                              "below %zu; start from {.size = "
                              "sizeof(popc_node_desc)}",
                              d ? (unsigned)d->size : 0u,
                              offsetof(popc_node_desc, name) +
                                  sizeof d->name);
    return popc_graph_add_node(g, d->domain, d->op, d->version, d->inputs,
                               d->n_inputs, outputs, d->n_outputs, d->attrs,
                               d->n_attrs, d->name, node);
}

popc_status popc_graph_add_node(popc_graph *g, const char *domain,
                                const char *op, int version,
                                const int *inputs, int n_inputs,
                                int *outputs, int n_outputs,
                                const popc_attr *attrs, int n_attrs,
                                const char *name, int *node)
{
    popci_annot a;
    popc_status st;
    char *full = NULL;

    if (!g)
        return popc_set_error(POPC_EINVAL, "popc_graph_add_node: graph is "
                              "NULL");
    if (name && !name[0])
        return popc_set_error(POPC_EINVAL, "popc_graph_add_node: empty node "
                              "name (use NULL for a generated one)");
    if (g->block_ended)
        return popc_set_error(POPC_ESTATE, "No active Block, all the ops "
                              "must belong to a Block (adding %s%s%s after "
                              "popc_block_end; start one with "
                              "popc_block_begin)", op ? op : "(null)",
                              name ? " " : "", name ? name : "");
    current_annot(g, &a);
    popci_source_capture(&a);
    if (name && a.scope) {
        size_t len = strlen(a.scope) + strlen(name) + 2;
        if (!(full = popci_malloc(len)))
            return popc_set_error(POPC_ENOMEM, "graph: out of memory");
        snprintf(full, len, "%s/%s", a.scope, name);
    }
    st = popci_graph_add_node_ex(g, domain, op, version, inputs, n_inputs,
                                 outputs, n_outputs, attrs, n_attrs,
                                 full ? full : name, &a, 0, 0, node);
    free(full);
    return st;
}

popc_status popc_graph_add_output(popc_graph *g, int value)
{
    popc_status st;

    if (!g || value < 0 || value >= g->n_values)
        return popc_set_error(POPC_EINVAL, "popc_graph_add_output: value id "
                              "%d does not exist", value);
    if ((st = POPCI_GROW(g, outputs, cap_outputs, g->n_outputs + 1)) != POPC_OK)
        return st;
    g->outputs[g->n_outputs++] = value;
    return POPC_OK;
}

popc_status popc_graph_add_update(popc_graph *g, int weight, int value)
{
    popc_status st;

    if (!g || weight < 0 || weight >= g->n_values || value < 0 ||
        value >= g->n_values)
        return popc_set_error(POPC_EINVAL, "popc_graph_add_update: value ids "
                              "%d and %d must both exist", weight, value);
    if (g->values[weight].kind != POPC_VALUE_INITIALIZER)
        return popc_set_error(POPC_EINVAL, "popc_graph_add_update: '%s' is a "
                              "%s; only initializers can be updated",
                              g->values[weight].name,
                              kind_name(g->values[weight].kind));
    for (int i = 0; i < g->n_updates; i++)
        if (g->updates[i].weight == weight)
            return popc_set_error(POPC_EEXIST, "popc_graph_add_update: '%s' "
                                  "already has an update", 
                                  g->values[weight].name);
    if ((st = POPCI_GROW(g, updates, cap_updates, g->n_updates + 1)) != POPC_OK)
        return st;
    g->updates[g->n_updates].weight = weight;
    g->updates[g->n_updates].value = value;
    g->n_updates++;
    return POPC_OK;
}

/* ---- compaction of a tail added by a transform -------------------------------- */

popc_status popci_graph_compact_tail(popc_graph *g, int first_node,
                                     const unsigned char *keep_node,
                                     int first_value,
                                     const unsigned char *keep_value,
                                     int *remap)
{
    int nn = g->n_nodes - first_node, nv = g->n_values - first_value;
    int *node_remap = NULL;
    int w;

    if (nn && !(node_remap = popci_malloc((size_t)nn * sizeof *node_remap)))
        return popc_set_error(POPC_ENOMEM, "graph: out of memory");
    w = first_node;
    for (int i = 0; i < nn; i++) {
        if (!keep_node[i]) {
            node_clear(&g->nodes[first_node + i]);
            node_remap[i] = -1;
            continue;
        }
        node_remap[i] = w;
        if (w != first_node + i)
            g->nodes[w] = g->nodes[first_node + i];
        w++;
    }
    g->n_nodes = w;
    w = first_value;
    for (int i = 0; i < nv; i++) {
        if (!keep_value[i]) {
            value_clear(&g->values[first_value + i]);
            remap[i] = -1;
            continue;
        }
        remap[i] = w;
        if (w != first_value + i)
            g->values[w] = g->values[first_value + i];
        w++;
    }
    g->n_values = w;
#define REMAP_VALUE(x) \
    ((x) >= first_value && (x) < first_value + nv ? remap[(x) - first_value] \
                                                 : (x))
    for (int n = first_node; n < g->n_nodes; n++) {
        popci_node *nd = &g->nodes[n];
        for (int i = 0; i < nd->n_inputs; i++)
            nd->inputs[i] = REMAP_VALUE(nd->inputs[i]);
        for (int i = 0; i < nd->n_outputs; i++)
            nd->outputs[i] = REMAP_VALUE(nd->outputs[i]);
    }
    for (int i = 0; i < g->n_outputs; i++)
        g->outputs[i] = REMAP_VALUE(g->outputs[i]);
    for (int i = 0; i < g->n_inputs; i++)
        g->inputs[i] = REMAP_VALUE(g->inputs[i]);
    for (int i = 0; i < g->n_updates; i++) {
        g->updates[i].weight = REMAP_VALUE(g->updates[i].weight);
        g->updates[i].value = REMAP_VALUE(g->updates[i].value);
    }
#undef REMAP_VALUE
    for (int v = first_value; v < g->n_values; v++) {
        int p = g->values[v].producer;
        if (p >= first_node)
            g->values[v].producer = node_remap[p - first_node];
    }
    free(node_remap);
    return popci_graph_rebuild_names(g);
}

/* Look each distinct op up once: a compiled graph repeats a few dozen op
** types over thousands of nodes, and the plan would otherwise search the
** registry for every node. */
typedef struct op_seen {
    const char *domain, *op;
    int version;
    const popc_op_def *def;
} op_seen;

void popci_graph_resolve_ops(popc_graph *c)
{
    op_seen seen[64];
    int n_seen = 0;

    for (int k = 0; k < c->n_nodes; k++) {
        popci_node *nd = &c->nodes[k];
        int i;

        for (i = 0; i < n_seen; i++)
            if (seen[i].version == nd->version &&
                strcmp(seen[i].op, nd->op) == 0 &&
                strcmp(seen[i].domain, nd->domain) == 0)
                break;
        if (i < n_seen) {
            nd->def = seen[i].def;
            continue;
        }
        popci_graph_node_def(c, k);
        if (n_seen < 64)
            seen[n_seen++] = (op_seen){nd->domain, nd->op, nd->version,
                                       nd->def};
    }
}
