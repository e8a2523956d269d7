/* graph_query.c - read access to a graph, and its text listing.
**
** Getters are total: a bad id gives NULL, -1 or an empty view rather than
** a crash, so callers can probe.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/graph/graph_priv.h"

#define VALID_VALUE(g, v) ((g) && (v) >= 0 && (v) < (g)->n_values)
#define VALID_NODE(g, n) ((g) && (n) >= 0 && (n) < (g)->n_nodes)

int popc_graph_n_values(const popc_graph *g)
{
    return g ? g->n_values : 0;
}

int popc_graph_n_nodes(const popc_graph *g)
{
    return g ? g->n_nodes : 0;
}

int popc_graph_n_inputs(const popc_graph *g)
{
    return g ? g->n_inputs : 0;
}

int popc_graph_n_outputs(const popc_graph *g)
{
    return g ? g->n_outputs : 0;
}

int popc_graph_input(const popc_graph *g, int i)
{
    return g && i >= 0 && i < g->n_inputs ? g->inputs[i] : -1;
}

int popc_graph_output(const popc_graph *g, int i)
{
    return g && i >= 0 && i < g->n_outputs ? g->outputs[i] : -1;
}

int popc_graph_n_updates(const popc_graph *g)
{
    return g ? g->n_updates : 0;
}

popc_status popc_graph_update(const popc_graph *g, int i, int *weight,
                              int *value)
{
    if (weight)
        *weight = -1;
    if (value)
        *value = -1;
    if (!g || i < 0 || i >= g->n_updates)
        return popc_set_error(POPC_EINVAL, "popc_graph_update: graph '%s' "
                              "has no update %d (it has %d)",
                              g ? g->name : "(null)", i,
                              g ? g->n_updates : 0);
    if (weight)
        *weight = g->updates[i].weight;
    if (value)
        *value = g->updates[i].value;
    return POPC_OK;
}

int popc_graph_find_value(const popc_graph *g, const char *name)
{
    return g ? popci_name_map_find(&g->value_names, name) : -1;
}

int popci_graph_find_node(const popc_graph *g, const char *name)
{
    return g ? popci_name_map_find(&g->node_names, name) : -1;
}

const char *popc_graph_value_name(const popc_graph *g, int value)
{
    return VALID_VALUE(g, value) ? g->values[value].name : NULL;
}

popc_value_kind popc_graph_value_kind(const popc_graph *g, int value)
{
    return VALID_VALUE(g, value) ? g->values[value].kind : (popc_value_kind)0;
}

popc_view popc_graph_value_info(const popc_graph *g, int value)
{
    popc_view v;

    if (!VALID_VALUE(g, value)) {
        memset(&v, 0, sizeof v);
        return v;
    }
    v = g->values[value].info;
    v.data = g->values[value].tensor ? popc_tensor_data(g->values[value].tensor)
                                     : NULL;
    return v;
}

popc_tensor *popc_graph_value_tensor(const popc_graph *g, int value)
{
    return VALID_VALUE(g, value) ? g->values[value].tensor : NULL;
}

int popc_graph_value_trainable(const popc_graph *g, int value)
{
    return VALID_VALUE(g, value) ? g->values[value].trainable : 0;
}

int popc_graph_value_producer(const popc_graph *g, int value)
{
    return VALID_VALUE(g, value) ? g->values[value].producer : -1;
}

const char *popc_graph_node_name(const popc_graph *g, int node)
{
    return VALID_NODE(g, node) ? g->nodes[node].name : NULL;
}

const char *popc_graph_node_domain(const popc_graph *g, int node)
{
    return VALID_NODE(g, node) ? g->nodes[node].domain : NULL;
}

const char *popc_graph_node_op(const popc_graph *g, int node)
{
    return VALID_NODE(g, node) ? g->nodes[node].op : NULL;
}

int popc_graph_node_version(const popc_graph *g, int node)
{
    return VALID_NODE(g, node) ? g->nodes[node].version : -1;
}

int popc_graph_node_n_inputs(const popc_graph *g, int node)
{
    return VALID_NODE(g, node) ? g->nodes[node].n_inputs : 0;
}

int popc_graph_node_n_outputs(const popc_graph *g, int node)
{
    return VALID_NODE(g, node) ? g->nodes[node].n_outputs : 0;
}

int popc_graph_node_input(const popc_graph *g, int node, int i)
{
    if (!VALID_NODE(g, node) || i < 0 || i >= g->nodes[node].n_inputs)
        return -1;
    return g->nodes[node].inputs[i];
}

int popc_graph_node_output(const popc_graph *g, int node, int i)
{
    if (!VALID_NODE(g, node) || i < 0 || i >= g->nodes[node].n_outputs)
        return -1;
    return g->nodes[node].outputs[i];
}

popc_attrs popc_graph_node_attrs(const popc_graph *g, int node)
{
    popc_attrs a = POPC_ATTRS(0, NULL);

    if (VALID_NODE(g, node)) {
        a.n = g->nodes[node].n_attrs;
        a.items = g->nodes[node].attrs;
    }
    return a;
}

/* ---- dump ------------------------------------------------------------------ */

static void dump_value_ref(popci_sb *sb, const popc_graph *g, int v)
{
    if (v < 0)
        popci_sb_printf(sb, "-");
    else if (v >= g->n_values)
        popci_sb_printf(sb, "%%<missing %d>", v);
    else
        popci_sb_printf(sb, "%%%s", g->values[v].name);
}

static void dump_annot(popci_sb *sb, const popci_annot *a)
{
    int any = 0;

#define SEP() popci_sb_printf(sb, any++ ? ", " : "  [")
    if (a->block) {
        SEP();
        popci_sb_printf(sb, "block %s", a->block);
    }
    if (a->ipu >= 0) {
        SEP();
        popci_sb_printf(sb, "ipu %d", a->ipu);
    }
    if (a->stage >= 0) {
        SEP();
        popci_sb_printf(sb, "stage %d", a->stage);
    }
    if (a->phase >= 0) {
        SEP();
        popci_sb_printf(sb, "phase %d", a->phase);
    }
    if (a->recompute > 0) {
        SEP();
        popci_sb_printf(sb, "recompute");
    }
    if (a->available_memory > 0) {
        SEP();
        popci_sb_printf(sb, "available memory %g", a->available_memory);
    }
#undef SEP
    if (any)
        popci_sb_printf(sb, "]");
}

popc_status popc_graph_dump(const popc_graph *g, char **out)
{
    static const char *const kinds[] = {"?", "input", "init", "const",
                                        "value"};
    popci_sb sb = {0};

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_graph_dump: out is NULL");
    *out = NULL;
    if (!g)
        return popc_set_error(POPC_EINVAL, "popc_graph_dump: graph is NULL");
    popci_sb_printf(&sb, "graph '%s': %d inputs, %d outputs, %d nodes, %d "
                    "values\n", g->name, g->n_inputs, g->n_outputs,
                    g->n_nodes, g->n_values);
    for (int v = 0; v < g->n_values; v++) {
        const popci_value *x = &g->values[v];

        if (x->kind == POPC_VALUE_NODE_OUTPUT)
            continue;
        popci_sb_printf(&sb, "  %-6s %%%s: ", kinds[x->kind], x->name);
        popci_sb_view(&sb, &x->info);
        if (x->kind == POPC_VALUE_INITIALIZER)
            popci_sb_printf(&sb, x->trainable ? " trainable" : " buffer");
        popci_sb_printf(&sb, "\n");
    }
    for (int n = 0; n < g->n_nodes; n++) {
        const popci_node *x = &g->nodes[n];

        popci_sb_printf(&sb, "  node %d '%s' %s::%s@%d (", n, x->name,
                        x->domain, x->op, x->version);
        for (int i = 0; i < x->n_inputs; i++) {
            if (i)
                popci_sb_printf(&sb, ", ");
            dump_value_ref(&sb, g, x->inputs[i]);
        }
        popci_sb_printf(&sb, ") -> (");
        for (int i = 0; i < x->n_outputs; i++) {
            popci_sb_printf(&sb, "%s", i ? ", " : "");
            dump_value_ref(&sb, g, x->outputs[i]);
            popci_sb_printf(&sb, " ");
            popci_sb_view(&sb, &g->values[x->outputs[i]].info);
        }
        popci_sb_printf(&sb, ")");
        if (x->n_attrs) {
            popci_sb_printf(&sb, " {");
            popci_attrs_describe(&sb, x->attrs, x->n_attrs);
            popci_sb_printf(&sb, "}");
        }
        dump_annot(&sb, &x->annot);
        if (!x->def && !popci_graph_node_def_c(g, n))
            popci_sb_printf(&sb, "  (unknown op)");
        popci_sb_printf(&sb, "\n");
    }
    for (int i = 0; i < g->n_outputs; i++) {
        popci_sb_printf(&sb, "  output ");
        dump_value_ref(&sb, g, g->outputs[i]);
        popci_sb_printf(&sb, "\n");
    }
    for (int i = 0; i < g->n_updates; i++) {
        popci_sb_printf(&sb, "  update ");
        dump_value_ref(&sb, g, g->updates[i].weight);
        popci_sb_printf(&sb, " <- ");
        dump_value_ref(&sb, g, g->updates[i].value);
        popci_sb_printf(&sb, "\n");
    }
    if (!(*out = popci_sb_take(&sb)))
        return popc_set_error(POPC_ENOMEM, "popc_graph_dump: out of memory");
    return POPC_OK;
}
