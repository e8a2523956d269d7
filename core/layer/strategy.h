/* layer/strategy.h - how the planner reaches PopTorch's execution
** strategies (strategy/: pipeline stages, phased execution,
** recomputation, what leaves the chip, TensorLocations and host I/O),
** a layer right above the core, and the few graph edits that layer
** needs beyond the public popc/graph.h.
**
** The core includes no header of the layer. It calls the table
** popci_layer_strategy, which lib/layers.c, the top of libpopc, defines
** (as it defines the tables of core/layer/hooks.h): a link-time table,
** so it holds in static builds too. Order in popci_plan_new: resolve on
** the forward graph, autodiff, recompute, schedule, order, liveness,
** memory plan, offchip_plan; the model applies locations to the plan
** once the executor's configuration is known.
*/
#ifndef POPC_LAYER_STRATEGY_H
#define POPC_LAYER_STRATEGY_H

#include <stdint.h>

#include "popc/graph.h"
#include "popc/options.h"
#include "core/layer/plan.h"

typedef struct popci_strategy_port {
    /* The strategy the options ask for (setExecutionStrategy). */
    popci_strategy (*from_options)(const popc_options *o);
    /* Write the resolved IPU, stage and (phased strategies) phase into
    ** the annotations of every node of g, the forward graph only.
    ** POPC_EINVAL with PopTorch's texts for the rules it breaks. */
    popc_status (*resolve)(popc_graph *g, const popci_strategy *s);
    /* Training: clone the forward nodes the backward pass recomputes from
    ** checkpoints (g's nodes from n_fwd on are the backward pass), and
    ** count the clones a graph holds. */
    popc_status (*recompute)(popc_graph *g, int n_fwd);
    int (*recompute_count)(const popc_graph *g, int n_fwd);
    /* Phased strategies: reorder the schedule order[0..n_order) (forward
    ** nodes first, n_forward of them) phase after phase. */
    popc_status (*order)(const popc_graph *g, const popci_strategy *s,
                         int *order, int n_forward, int n_order);
    /* After the memory plan: the plan's activation figures and the slots
    ** that leave the chip. */
    popc_status (*offchip_plan)(popci_plan *p);
    /* Slot s was appended after the plan (optimizer state). */
    popc_status (*offchip_add_slot)(popci_plan *p, int s);
    /* Options.TensorLocations and the host I/O of the plan's slots
    ** (popc_plan.slot_location) for a model of `replicas` replicas. */
    popc_status (*locations_apply)(popci_plan *p, const popc_options *o,
                                   int64_t replicas);
    /* PopTorch's execution phases of a plan (0 when not phased), and
    ** their ids into ids[0..max) (the count, -1 when more than max). */
    int (*execution_phases)(const popci_plan *p);
    int (*execution_phase_ids)(const popci_plan *p, int *ids, int max);
} popci_strategy_port;

/* The strategies libpopc links in (lib/layers.c); never NULL. */
extern const popci_strategy_port *const popci_layer_strategy;

/* ---- the graph edits the layer makes (core/graph/graph_place.c) ------ */

/* Node `node` (an id of g) runs on IPU ipu, in pipeline stage `stage`
** and phase `phase` (-1: not set); its other annotations stay. */
void popci_graph_place_node(popc_graph *g, int node, int ipu, int stage,
                            int phase);

/* Input i of node `node` reads value `value` instead (ids of g, the same
** dtype and shape). */
void popci_graph_set_node_input(popc_graph *g, int node, int i, int value);

/* Add a copy of node `node` named `name` that reads inputs[] (one per
** input of the node) and is no recomputation checkpoint: same op,
** attributes, annotations and source; its outputs, into outputs[], get
** the dtypes and shapes of the node's. The error of adding a node. */
popc_status popci_graph_clone_node(popc_graph *g, int node,
                                   const int *inputs, const char *name,
                                   int *outputs);

/* The Block context of the graph builder (popc/blocks.h): the block new
** nodes get (block, taken; NULL: none) with its IPU (-1: none), stage
** and phase unset, and whether a block just ended (new nodes are then
** refused until a block begins); the next automatic block id. */
void popci_graph_set_block(popc_graph *g, char *block, int ipu, int ended);
int popci_graph_block_next_id(const popc_graph *g);
void popci_graph_set_block_next_id(popc_graph *g, int id);

#endif /* POPC_LAYER_STRATEGY_H */
