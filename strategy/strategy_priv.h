/* strategy_priv.h - execution strategies inside the compiler (helper
** "strategies"): stage / IPU / phase resolution (strategy/stages.c),
** recomputation (strategy/recompute.c) and what leaves the chip between
** phases with the plan's memory figures (strategy/offchip.c).
**
** Order in popci_plan_new: popci_stages_resolve on the forward graph,
** autodiff, popci_recompute, schedule, popci_stages_order, liveness, memory
** plan, popci_offchip_plan. The core calls them through the table of
** core/layer/strategy.h (strategy/port.c).
*/
#ifndef POPC_STRATEGY_PRIV_H
#define POPC_STRATEGY_PRIV_H

#include "popc/graph.h"
#include "popc/model.h"
#include "popc/options.h"
#include "core/layer/plan.h"
#include "core/layer/strategy.h"

/* The strategy the options ask for. */
popci_strategy popci_strategy_from_options(const popc_options *o);

/* Phased strategies (SerialPhasedExecution, ParallelPhasedExecution). */
int popci_strategy_phased(const popci_strategy *s);

/* Write the resolved IPU, stage and (phased strategies) phase into the
** annotations of every node of g, which holds the forward graph only
** (docs/semantics.md §6 and popc/blocks.h). Autodiff then copies them
** to the backward nodes. POPC_EINVAL with PopTorch's texts: SameAsIpu
** without an IPU, phased without phases, a phase reading a later phase,
** parallel phases on IPUs of the other parity, a liveness only serial
** phases support, a liveness or useSeparateBackwardPhase without a phased
** strategy. */
popc_status popci_stages_resolve(popc_graph *g, const popci_strategy *s);

/* Phased strategies: reorder the schedule (node ids) so that the forward
** nodes [0, n_forward) run phase after phase and the backward ones in the
** reverse phase order, keeping every dependency (a topological order that
** prefers the phase order). No-op otherwise. POPC_ENOMEM. */
popc_status popci_stages_order(const popc_graph *g, const popci_strategy *s,
                               int *order, int n_forward, int n_order);

/* Forward stages of a plan: 1 + the IPU changes in forward op order. */
int popci_plan_pipeline_stages(const popci_plan *p);

/* PopTorch's execution phases of a phased plan (0 otherwise): the largest
** effective phase id (phase x 4 with OffChipAfterEachPhase, x 2 with
** OffChipAfterFwdNoOverlap) + 1, then + 3 when tensors leave the chip, or
** + 1 for a separate backward phase. */
int popci_plan_execution_phases(const popci_plan *p);

/* The execution phase ids PopTorch gives the forward phases of a phased
** plan (phase x 4 with OffChipAfterEachPhase, x 2 with
** OffChipAfterFwdNoOverlap, else the phase), ascending and distinct, into
** ids[0..max); the count, 0 when not phased, -1 when more than max. */
int popci_plan_execution_phase_ids(const popci_plan *p, int *ids, int max);

/* Recomputation (training). When the forward graph (nodes [0, n_fwd)) has
** checkpoints (popc::RecomputationCheckpoint nodes or nodes annotated
** recompute > 0), backward nodes stop reading forward activations that
** are not checkpointed: the forward nodes computing them are cloned into
** the backward pass ("<node>/recompute"), reading only stored values.
** Stored are checkpoints, graph inputs, weights, constants, graph outputs,
** buffer-update sources, outputs of random, host and side-effect ops, and
** values crossing an IPU or phase boundary. POPC_ENOMEM, or the error of
** adding a clone. */
popc_status popci_recompute(popc_graph *g, int n_fwd);

/* Clones popci_recompute added to g (nodes from n_fwd on). */
int popci_recompute_count(const popc_graph *g, int n_fwd);

/* After liveness: stored_bytes and onchip_peak of the plan and, for phased
** strategies with a liveness other than AlwaysLive, the slots that leave
** the chip (offchip_from/to, offchip_bytes; pub points at the arrays).
** POPC_ENOMEM. */
popc_status popci_offchip_plan(popci_plan *p);

/* Slot s was appended after the plan (optimizer state): it stays on chip.
** POPC_ENOMEM. */
popc_status popci_offchip_add_slot(popci_plan *p, int s);
/* Options.TensorLocations (strategy/locations.c): slot_location for every
** slot, activations' off-chip ranges trimmed. POPC_EINVAL with PopTorch's
** text for I/O tiles without numIOTiles and for impossible settings. */
popc_status popci_locations_apply(popci_plan *p, const popc_options *o,
                                  int64_t replicas);

/* Host I/O bits of the plan's slots into loc (strategy/host_io.c): graph
** outputs, and the copies set_overlap_for_input/output overlap. POPC_EINVAL
** naming the node for a misplaced or unsupported overlap. */
popc_status popci_host_io_mark(popci_plan *p, const popc_options *o,
                               unsigned char *loc);

/* offchip_bytes and onchip_peak again, after ranges were dropped
** (TensorLocations keeping activations on chip). */
popc_status popci_offchip_refigure(popci_plan *p);

/* The table of these the core calls (strategy/port.c). */
extern const popci_strategy_port popci_strategies;

#endif /* POPC_STRATEGY_PRIV_H */
