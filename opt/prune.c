/* prune.c - popc_graph_prune: drop what nothing uses any more after a
** rewrite (dead-code elimination). The graph optimizer's passes add their
** replacement nodes, rewire the uses of the old results
** (popc_graph_replace_uses, core/graph/graph_edit.c) and prune once at
** the end, so no id moves while a pass still holds ids.
**
** Part of opt/: it reads the graph through the public queries and
** renumbers it through core/layer/graph_ids.h (popci_graph_compact_tail).
*/
#include "config.h"

#include <stdlib.h>

#include "popc/graph.h"
#include "popc/plugin.h"
#include "core/layer/alloc.h"
#include "core/layer/graph.h"
#include "core/layer/graph_ids.h"

/* A node that must run even when nothing reads its outputs. */
static int has_effect(const popc_graph *g, int n)
{
    const popc_op_def *def = popci_graph_node_def_c(g, n);
    popc_attrs attrs = popc_graph_node_attrs(g, n);

    if (!def || (def->flags & (POPC_OP_NOFOLD | POPC_OP_HOST |
                               POPC_OP_LOSS | POPC_OP_FOREIGN)))
        return 1;
    for (int a = 0; a < attrs.n; a++)
        if (popc_attrs_at(&attrs, a)->type == POPC_ATTR_GRAPH)
            return 1;
    return popc_graph_node_n_outputs(g, n) == 0;
}

/* live[n] for every node, from uses[] seeded with the graph's outputs and
** updates: in reverse topological order a node's readers are decided
** before it. */
static void mark_live(const popc_graph *g, const int *order, int *uses,
                      unsigned char *live)
{
    for (int k = popc_graph_n_nodes(g) - 1; k >= 0; k--) {
        int n = order[k];
        int used = has_effect(g, n);

        for (int o = 0; o < popc_graph_node_n_outputs(g, n) && !used; o++) {
            int v = popc_graph_node_output(g, n, o);
            used = v >= 0 && uses[v] > 0;
        }
        live[n] = (unsigned char)used;
        if (!used)
            continue;
        for (int i = 0; i < popc_graph_node_n_inputs(g, n); i++) {
            int v = popc_graph_node_input(g, n, i);
            if (v >= 0 && v < popc_graph_n_values(g))
                uses[v]++;
        }
    }
}

popc_status popc_graph_prune(popc_graph *g, int *removed)
{
    int *order = NULL, *uses = NULL, *remap = NULL, dropped = 0;
    int n_nodes, n_values;
    unsigned char *live = NULL, *keep_value = NULL;
    popc_status st;

    if (removed)
        *removed = 0;
    if (!g)
        return popc_set_error(POPC_EINVAL, "popc_graph_prune: no graph");
    n_nodes = popc_graph_n_nodes(g);
    n_values = popc_graph_n_values(g);
    order = popci_malloc(sizeof *order * (size_t)(n_nodes + 1));
    uses = popci_calloc((size_t)n_values + 1, sizeof *uses);
    remap = popci_malloc(sizeof *remap * (size_t)(n_values + 1));
    live = popci_calloc((size_t)n_nodes + 1, 1);
    keep_value = popci_calloc((size_t)n_values + 1, 1);
    if (!order || !uses || !remap || !live || !keep_value) {
        st = popc_set_error(POPC_ENOMEM, "popc_graph_prune: out of memory");
        goto out;
    }
    if ((st = popc_graph_topo_order(g, order)) != POPC_OK)
        goto out;
    for (int i = 0; i < popc_graph_n_outputs(g); i++)
        uses[popc_graph_output(g, i)]++;
    for (int i = 0; i < popc_graph_n_updates(g); i++) {
        int weight, value;

        if ((st = popc_graph_update(g, i, &weight, &value)) != POPC_OK)
            goto out;
        uses[value]++;
        uses[weight]++;
    }
    mark_live(g, order, uses, live);
    for (int v = 0; v < n_values; v++) {
        popc_value_kind kind = popc_graph_value_kind(g, v);
        int producer = popc_graph_value_producer(g, v);

        /* inputs and weights belong to the user: they stay */
        keep_value[v] = kind == POPC_VALUE_INPUT ||
                        kind == POPC_VALUE_INITIALIZER ||
                        (kind == POPC_VALUE_CONSTANT && uses[v] > 0) ||
                        (kind == POPC_VALUE_NODE_OUTPUT && producer >= 0 &&
                         live[producer]);
    }
    for (int n = 0; n < n_nodes; n++)
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
