/* remove_blocks.c - poptorch.removeBlocks: a graph built with blocks runs
** as if it had none, on one IPU. */
#include "config.h"

#include "popc/helpers.h"

popc_status popc_remove_blocks(popc_graph *g)
{
    popc_annotations a;
    popc_status st;

    if (!g)
        return popc_set_error(POPC_EINVAL, "removeBlocks: graph is NULL");
    for (int n = 0; n < popc_graph_n_nodes(g); n++) {
        a = popc_graph_node_annotations(g, n);
        if (!a.block && a.ipu < 0 && a.stage < 0 && a.phase < 0)
            continue;
        a.block = NULL;
        a.ipu = a.stage = a.phase = -1;
        if ((st = popc_graph_set_node_annotations(g, n, &a)) != POPC_OK)
            return st;
    }
    /* nodes added later belong to no block either */
    a = popc_graph_annotations(g);
    a.block = NULL;
    a.ipu = a.stage = a.phase = -1;
    return popc_graph_set_annotations(g, &a);
}
