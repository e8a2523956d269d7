/* graph_place.c - the graph edits of the strategy layer (core/layer/
** strategy.h): placing nodes on IPUs, stages and phases, rewiring one
** input, cloning a node for recomputation, and the Block context of the
** builder. They reach into the IR so the layer does not have to.
*/
#include "config.h"

#include <stdlib.h>

#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"
#include "core/layer/strategy.h"

void popci_graph_place_node(popc_graph *g, int node, int ipu, int stage,
                            int phase)
{
    popci_annot *a = &g->nodes[node].annot;

    a->ipu = ipu;
    a->stage = stage;
    a->phase = phase;
}

void popci_graph_set_node_input(popc_graph *g, int node, int i, int value)
{
    g->nodes[node].inputs[i] = value;
}

popc_status popci_graph_clone_node(popc_graph *g, int node,
                                   const int *inputs, const char *name,
                                   int *outputs)
{
    popci_node x = g->nodes[node]; /* shallow: g->nodes may move below */
    popci_annot a = x.annot;
    popc_status st;

    a.recompute = -1;
    st = popci_graph_add_node_ex(g, x.domain, x.op, x.version, inputs,
                                 x.n_inputs, outputs, x.n_outputs, x.attrs,
                                 x.n_attrs, name, &a, 1, 1, NULL);
    if (st != POPC_OK)
        return st;
    /* same computation: the node's shapes (inferred for training) */
    for (int j = 0; j < x.n_outputs; j++) {
        if (x.outputs[j] < 0 || outputs[j] < 0)
            continue;
        g->values[outputs[j]].info = g->values[x.outputs[j]].info;
        g->values[outputs[j]].info.data = NULL;
    }
    return POPC_OK;
}

void popci_graph_set_block(popc_graph *g, char *block, int ipu, int ended)
{
    free(g->annot.block);
    g->annot.block = block;
    g->annot.ipu = ipu;
    g->annot.stage = -1;
    g->annot.phase = -1;
    g->block_ended = ended;
}

int popci_graph_block_next_id(const popc_graph *g)
{
    return g->block_next_id;
}

void popci_graph_set_block_next_id(popc_graph *g, int id)
{
    g->block_next_id = id;
}
