/* graph_query.c - read access to a graph (its text listing,
** popc_graph_dump, is encode/graph_text.c).
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
