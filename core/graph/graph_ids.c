/* graph_ids.c - a graph's values and nodes by id, as stored, and a graph
** rebuilt id by id (core/layer/graph_ids.h): what encode/ needs to write
** graphs as bytes and read them back without replaying the builder.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"

static void annot_rec(const popci_annot *a, popci_annot_rec *out)
{
    out->scope = a->scope;
    out->block = a->block;
    out->ipu = a->ipu;
    out->stage = a->stage;
    out->phase = a->phase;
    out->recompute = a->recompute;
    out->available_memory = a->available_memory;
}

void popci_graph_value_rec(const popc_graph *g, int v, popci_value_rec *out)
{
    const popci_value *x = &g->values[v];

    out->name = x->name;
    out->kind = x->kind;
    out->trainable = x->trainable;
    out->info = x->info;
    out->tensor = x->tensor;
    out->producer = x->producer;
    out->producer_slot = x->producer_slot;
}

void popci_graph_node_rec(const popc_graph *g, int n, popci_node_rec *out)
{
    const popci_node *x = &g->nodes[n];

    out->name = x->name;
    out->domain = x->domain;
    out->op = x->op;
    out->version = x->version;
    out->inputs = x->inputs;
    out->outputs = x->outputs;
    out->n_inputs = x->n_inputs;
    out->n_outputs = x->n_outputs;
    out->attrs = x->attrs;
    out->n_attrs = x->n_attrs;
    annot_rec(&x->annot, &out->annot);
}

void popci_graph_state_get(const popc_graph *g, popci_graph_state *out)
{
    out->scopes = (const char *const *)g->scopes;
    out->n_scopes = g->n_scopes;
    annot_rec(&g->annot, &out->annot);
    out->n_constants = g->n_constants;
}

/* ---- rebuilding ---------------------------------------------------------- */

static popc_status nomem(void)
{
    return popc_set_error(POPC_ENOMEM, "reading a graph: out of memory");
}

static char *dup_or_null(const char *s, int *oom)
{
    char *d = s ? popci_strdup(s) : NULL;

    if (s && !d)
        *oom = 1;
    return d;
}

static int *dup_ids(const int *ids, int n, int *oom)
{
    int *d = popci_malloc(((size_t)n + 1) * sizeof *d);

    if (!d)
        *oom = 1;
    else if (n)
        memcpy(d, ids, (size_t)n * sizeof *d);
    return d;
}

static void annot_put(popci_annot *a, const popci_annot_rec *r, int *oom)
{
    popci_annot_reset(a);
    a->scope = dup_or_null(r->scope, oom);
    a->block = dup_or_null(r->block, oom);
    a->ipu = r->ipu;
    a->stage = r->stage;
    a->phase = r->phase;
    a->recompute = r->recompute;
    a->available_memory = r->available_memory;
}

popc_status popci_graph_reserve(popc_graph *g, int n_values, int n_nodes)
{
    if (POPCI_GROW(g, values, cap_values, n_values + 1) != POPC_OK ||
        POPCI_GROW(g, nodes, cap_nodes, n_nodes + 1) != POPC_OK)
        return nomem();
    return POPC_OK;
}

popc_status popci_graph_put_value(popc_graph *g, const popci_value_rec *v)
{
    popci_value *x;
    int oom = 0;

    if (POPCI_GROW(g, values, cap_values, g->n_values + 1) != POPC_OK) {
        popc_tensor_free(v->tensor);
        return nomem();
    }
    x = &g->values[g->n_values++];
    memset(x, 0, sizeof *x);
    x->tensor = v->tensor;
    x->name = dup_or_null(v->name, &oom);
    x->kind = v->kind;
    x->trainable = v->trainable;
    x->info = v->info;
    x->info.data = NULL;
    x->producer = v->producer;
    x->producer_slot = v->producer_slot;
    return oom ? nomem() : POPC_OK;
}

popc_status popci_graph_put_node(popc_graph *g, const popci_node_rec *n)
{
    popci_node *x;
    int oom = 0;

    if (POPCI_GROW(g, nodes, cap_nodes, g->n_nodes + 1) != POPC_OK) {
        popci_attrs_free(n->attrs, n->n_attrs);
        return nomem();
    }
    x = &g->nodes[g->n_nodes++];
    memset(x, 0, sizeof *x);
    x->attrs = n->attrs;
    x->n_attrs = n->n_attrs;
    x->name = dup_or_null(n->name, &oom);
    x->domain = dup_or_null(n->domain, &oom);
    x->op = dup_or_null(n->op, &oom);
    x->version = n->version;
    x->inputs = dup_ids(n->inputs, n->n_inputs, &oom);
    x->n_inputs = x->inputs ? n->n_inputs : 0;
    x->outputs = dup_ids(n->outputs, n->n_outputs, &oom);
    x->n_outputs = x->outputs ? n->n_outputs : 0;
    annot_put(&x->annot, &n->annot, &oom);
    return oom ? nomem() : POPC_OK;
}

static popc_status put_list(int **arr, int *n, int *cap, const int *ids,
                            int count)
{
    if (popci_grow((void **)arr, cap, count + 1, sizeof **arr) != POPC_OK)
        return nomem();
    if (count)
        memcpy(*arr, ids, (size_t)count * sizeof **arr);
    *n = count;
    return POPC_OK;
}

popc_status popci_graph_put_ids(popc_graph *g, const int *inputs,
                                int n_inputs, const int *outputs,
                                int n_outputs, const int *updates,
                                int n_updates)
{
    popc_status st;

    if ((st = put_list(&g->inputs, &g->n_inputs, &g->cap_inputs, inputs,
                       n_inputs)) != POPC_OK ||
        (st = put_list(&g->outputs, &g->n_outputs, &g->cap_outputs, outputs,
                       n_outputs)) != POPC_OK)
        return st;
    if (POPCI_GROW(g, updates, cap_updates, n_updates + 1) != POPC_OK)
        return nomem();
    for (int i = 0; i < n_updates; i++) {
        g->updates[i].weight = updates[2 * i];
        g->updates[i].value = updates[2 * i + 1];
    }
    g->n_updates = n_updates;
    return POPC_OK;
}

popc_status popci_graph_put_state(popc_graph *g, const popci_graph_state *s)
{
    size_t len = 1;
    int oom = 0;

    popci_graph_clear_scopes(g);
    if (POPCI_GROW(g, scopes, cap_scopes, s->n_scopes + 1) != POPC_OK)
        return nomem();
    for (int i = 0; i < s->n_scopes; i++) {
        if (!(g->scopes[i] = popci_strdup(s->scopes[i])))
            return nomem();
        g->n_scopes = i + 1;
        len += strlen(s->scopes[i]) + 1;
    }
    annot_put(&g->annot, &s->annot, &oom);
    /* The scope is kept in the stack only (see graph_priv.h). */
    free(g->annot.scope);
    g->annot.scope = NULL;
    g->n_constants = s->n_constants;
    if (oom)
        return nomem();
    if (!g->n_scopes)
        return POPC_OK;
    if (!(g->scope_joined = popci_malloc(len)))
        return nomem();
    g->scope_joined[0] = '\0';
    for (int i = 0; i < g->n_scopes; i++) {
        if (i)
            strcat(g->scope_joined, "/");
        strcat(g->scope_joined, g->scopes[i]);
    }
    return POPC_OK;
}

/* ---- checking ------------------------------------------------------------- */

static const char *check_values(const popc_graph *g)
{
    for (int v = 0; v < g->n_values; v++) {
        const popci_value *x = &g->values[v];
        if (popci_name_map_find(&g->value_names, x->name) != v)
            return "two values have the same name";
        if (x->producer >= g->n_nodes ||
            (x->kind == POPC_VALUE_NODE_OUTPUT) != (x->producer >= 0))
            return "a value's producer is out of range";
        if (x->producer >= 0 &&
            (x->producer_slot >= g->nodes[x->producer].n_outputs ||
             x->producer_slot < 0 ||
             g->nodes[x->producer].outputs[x->producer_slot] != v))
            return "a value's producer does not list it";
    }
    return NULL;
}

static const char *check_nodes(const popc_graph *g)
{
    for (int n = 0; n < g->n_nodes; n++) {
        const popci_node *x = &g->nodes[n];
        if (popci_name_map_find(&g->node_names, x->name) != n)
            return "two nodes have the same name";
        for (int i = 0; i < x->n_outputs; i++)
            if (x->outputs[i] >= g->n_values ||
                g->values[x->outputs[i]].producer != n)
                return "a node output is out of range";
    }
    return NULL;
}

static const char *check_ids(const popc_graph *g)
{
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] >= g->n_values ||
            g->values[g->inputs[i]].kind != POPC_VALUE_INPUT)
            return "a graph input is out of range";
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] >= g->n_values)
            return "a graph output is out of range";
    for (int i = 0; i < g->n_updates; i++)
        if (g->updates[i].weight >= g->n_values ||
            g->updates[i].value >= g->n_values ||
            g->values[g->updates[i].weight].kind != POPC_VALUE_INITIALIZER)
            return "a buffer update is out of range";
    return NULL;
}

popc_status popci_graph_seal(popc_graph *g, const char **why)
{
    popc_status st;

    *why = NULL;
    if ((st = popci_graph_rebuild_names(g)) != POPC_OK)
        return st;
    if (!(*why = check_values(g)) && !(*why = check_nodes(g)))
        *why = check_ids(g);
    return POPC_OK;
}
