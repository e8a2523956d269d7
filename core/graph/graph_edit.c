/* graph_edit.c - the two edits a graph rewrite needs on an IR whose ids
** only grow: point every use of a value at another value, and drop what
** nothing uses any more. A pass adds its replacement nodes, rewires the
** uses of the old results to the new ones and prunes once at the end, so
** no id moves while the pass still holds ids.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc_priv.h"
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

/* A node that must run even when nothing reads its outputs. */
static int has_effect(const popc_graph *g, int n)
{
    const popci_node *nd = &g->nodes[n];
    const popc_op_def *def = popci_graph_node_def_c(g, n);

    if (!def || (def->flags & (POPC_OP_NOFOLD | POPC_OP_HOST |
                               POPC_OP_LOSS | POPC_OP_FOREIGN)))
        return 1;
    for (int a = 0; a < nd->n_attrs; a++)
        if (nd->attrs[a].type == POPC_ATTR_GRAPH)
            return 1;
    return nd->n_outputs == 0;
}

/* live[n] for every node, from uses[] seeded with the graph's outputs and
** updates: in reverse topological order a node's readers are decided
** before it. */
static void mark_live(const popc_graph *g, const int *order, int *uses,
                      unsigned char *live)
{
    for (int k = g->n_nodes - 1; k >= 0; k--) {
        int n = order[k];
        const popci_node *nd = &g->nodes[n];
        int used = has_effect(g, n);

        for (int o = 0; o < nd->n_outputs && !used; o++)
            used = nd->outputs[o] >= 0 && uses[nd->outputs[o]] > 0;
        live[n] = (unsigned char)used;
        if (!used)
            continue;
        for (int i = 0; i < nd->n_inputs; i++)
            if (valid_value(g, nd->inputs[i]))
                uses[nd->inputs[i]]++;
    }
}

popc_status popc_graph_prune(popc_graph *g, int *removed)
{
    int *order = NULL, *uses = NULL, *remap = NULL, dropped = 0;
    unsigned char *live = NULL, *keep_value = NULL;
    popc_status st;

    if (removed)
        *removed = 0;
    if (!g)
        return popc_set_error(POPC_EINVAL, "popc_graph_prune: no graph");
    order = popci_malloc(sizeof *order * (size_t)(g->n_nodes + 1));
    uses = popci_calloc((size_t)g->n_values + 1, sizeof *uses);
    remap = popci_malloc(sizeof *remap * (size_t)(g->n_values + 1));
    live = popci_calloc((size_t)g->n_nodes + 1, 1);
    keep_value = popci_calloc((size_t)g->n_values + 1, 1);
    if (!order || !uses || !remap || !live || !keep_value) {
        st = popc_set_error(POPC_ENOMEM, "popc_graph_prune: out of memory");
        goto out;
    }
    if ((st = popc_graph_topo_order(g, order)) != POPC_OK)
        goto out;
    for (int i = 0; i < g->n_outputs; i++)
        uses[g->outputs[i]]++;
    for (int i = 0; i < g->n_updates; i++) {
        uses[g->updates[i].value]++;
        uses[g->updates[i].weight]++;
    }
    mark_live(g, order, uses, live);
    for (int v = 0; v < g->n_values; v++) {
        const popci_value *val = &g->values[v];

        /* inputs and weights belong to the user: they stay */
        keep_value[v] = val->kind == POPC_VALUE_INPUT ||
                        val->kind == POPC_VALUE_INITIALIZER ||
                        (val->kind == POPC_VALUE_CONSTANT && uses[v] > 0) ||
                        (val->kind == POPC_VALUE_NODE_OUTPUT &&
                         val->producer >= 0 && live[val->producer]);
    }
    for (int n = 0; n < g->n_nodes; n++)
        dropped += !live[n];
    if ((st = popci_graph_compact_tail(g, 0, live, 0, keep_value, remap)) !=
        POPC_OK)
        goto out;
    if (removed)
        *removed = dropped;
out:
    free(order);
    free(uses);
    free(remap);
    free(live);
    free(keep_value);
    return st;
}
