/* graph_edit.c - the edit a graph rewrite needs on an IR whose ids only
** grow: point every use of a value at another value. A pass adds its
** replacement nodes, rewires the uses of the old results to the new ones
** and prunes once at the end (popc_graph_prune, opt/prune.c), so no id
** moves while the pass still holds ids.
*/
#include "config.h"

#include "core/graph/graph_priv.h"

static int valid_value(const popc_graph *g, int v)
{
    return v >= 0 && v < g->n_values;
}

popc_status popc_graph_replace_uses(popc_graph *g, int from, int to)
{
    if (!g || !valid_value(g, from) || !valid_value(g, to))
        return popc_set_error(POPC_EINVAL, "popc_graph_replace_uses: no "
                              "graph, or value %d or %d is not in it",
                              from, to);
    if (from == to)
        return POPC_OK;
    for (int n = 0; n < g->n_nodes; n++) {
        popci_node *nd = &g->nodes[n];

        for (int i = 0; i < nd->n_inputs; i++)
            if (nd->inputs[i] == from)
                nd->inputs[i] = to;
    }
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == from)
            g->outputs[i] = to;
    for (int i = 0; i < g->n_updates; i++)
        if (g->updates[i].value == from)
            g->updates[i].value = to;
    return POPC_OK;
}
