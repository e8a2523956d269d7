/* plan_priv.h - compiling a graph into a scheduled plan (core/runtime/plan.c).
**
** A plan owns a clone of the model's graph with the micro-batch input
** shapes, the backward nodes (training) and one slot per value the device
** holds. It is what a backend's compile() sees (popci_plan.pub) plus the
** bookkeeping the executor needs to feed inputs, read outputs, accumulate
** gradients and apply updates.
**
** Slot liveness (popc_plan_slot.first_use/last_use) is in schedule
** positions: an ACT slot is live from its producer to its last consumer,
** or to n_nodes when it must survive the micro-batch (graph outputs,
** weight gradients, buffer updates). Every other kind is live for the
** whole run: first_use 0, last_use n_nodes.
**
** Memory plan (core/runtime/arena.c): ACT slots live in one arena per frame
** at arena_offset[slot]; two slots share bytes only when their live ranges
** do not overlap, or when a POPC_OP_INPLACE node's output 0 takes the bytes
** of its input 0, which dies there. Other kinds have
** arena_offset -1 and are backed by the executor (weights, accumulators,
** optimizer state) or point at the caller's data (inputs, constants).
*/
#ifndef POPC_PLAN_PRIV_H
#define POPC_PLAN_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "popc/graph.h"
#include "popc/plugin.h"
#include "popc/registry.h"
#include "core/layer/plan.h"

/* The plan's structs (popci_plan, its weights, popci_plan_config and
** popci_plan_compiled) are in core/layer/plan.h. */

/* Clone g, build gradients (training), verify, infer shapes, schedule,
** plan memory and prepare every node. POPC_ECOMPILE with a message naming
** the node or value on any problem. Free with popci_plan_free(). */
popc_status popci_plan_new(const popc_graph *g, const popci_plan_config *cfg,
                           popci_plan **out);
void popci_plan_free(popci_plan *p); /* NULL-safe */

/* Append the optimizer's state slots of weight w (training): n arrays
** named "<weight>/<names[i]>", each shaped like the weight. */
popc_status popci_plan_add_state(popci_plan *p, int w, int n,
                                 const char *const *names);

/* Plan the arena (arena_offset, arena_bytes, persistent_bytes,
** n_inplace) from the slots' liveness. */
popc_status popci_plan_memory(popci_plan *p);

/* Index of the weight named name, or -1. */
int popci_plan_find_weight(const popci_plan *p, const char *name);

/* popci_plan_slot_bytes is in core/layer/plan.h. */
/* Bytes the device stores slot `slot` in (store_dtype; equal to
** popci_plan_slot_bytes unless the slot is stored in half). */
size_t popci_plan_slot_device_bytes(const popci_plan *p, int slot);
/* Marks a persistent slot (optimizer state, gradient accumulator) as
** stored in float16 on the device; persistent_bytes follows. */
popc_status popci_plan_store_half(popci_plan *p, int slot);
/* Slot `slot` is stored as dt on the device (POPC_DTYPE_UNDEFINED: not at
** all, an alias); persistent_bytes follows for persistent slots. */
popc_status popci_plan_store_as(popci_plan *p, int slot, popc_dtype dt);
/* The float32 activations of nodes model.half() marks (POPC_ATTR_FLOAT16)
** count as float16, or nothing for its casts: an IPU runs the model in
** float16. */
popc_status popci_plan_store_marked(popci_plan *p);

#endif /* POPC_PLAN_PRIV_H */
