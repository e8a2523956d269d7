/* layer/exec_report.h - what a layer that reports on a compiled model
** (profile/: profile.json, the cycle log, popc_model_profile) reads of
** its executor beside core/layer/exec.h: the batching it was configured
** with, its execution phases, the plan the backend compiled and the
** backend's own estimates and report.
**
** The plan comes as the public popc_plan (popc/plugin.h), the form
** backends already see, since a profile lists its nodes and slots one by
** one; the figures the public plan lacks (memory, inputs, execution
** phases) come through functions. The executor is
** core/runtime/exec_priv.h.
*/
#ifndef POPC_LAYER_EXEC_REPORT_H
#define POPC_LAYER_EXEC_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "popc/graph.h"
#include "popc/plugin.h"
#include "core/layer/exec.h"

/* ---- the configuration --------------------------------------------------- */

/* Micro-batches per replica of one run (deviceIterations x
** gradientAccumulation), deviceIterations, gradientAccumulation (1 for
** inference), and whether pipeline stages overlap. */
int64_t popci_exec_micro_batches(const popci_exec *e);
int64_t popci_exec_device_iterations(const popci_exec *e);
int64_t popci_exec_grad_accum(const popci_exec *e);
int popci_exec_pipelined(const popci_exec *e);

/* ---- phases and the backend ---------------------------------------------- */

/* The backend the plan was compiled on; borrowed. */
const popc_backend_def *popci_exec_backend(const popci_exec *e);
/* Phases: the maximal runs of scheduled nodes on one IPU; phase ph covers
** plan nodes [popci_exec_phase_first(e, ph), popci_exec_phase_first(e,
** ph + 1)), for ph in 0 .. popci_exec_n_phases(e). */
int popci_exec_n_phases(const popci_exec *e);
int popci_exec_phase_first(const popci_exec *e, int ph);

/* Whether the backend estimates cycles; its estimate for plan nodes
** [first, last) of one micro-batch (0 without a model of them), and for
** every node (popci_exec_cycles). */
int popci_exec_has_cycles(const popci_exec *e);
double popci_exec_nodes_cycles(const popci_exec *e, int first, int last);
double popci_exec_cycles(const popci_exec *e);

/* Whether the backend writes a report of its own (report_to), and that
** report, through write(user, ...). */
int popci_exec_has_report(const popci_exec *e);
popc_status popci_exec_report(const popci_exec *e, popc_report_sink write,
                              void *user);

/* ---- the plan ------------------------------------------------------------ */

/* The plan the backend compiled (nodes, slots, IPUs and stages);
** borrowed, lives as long as e. */
const popc_plan *popci_exec_public_plan(const popci_exec *e);
/* The plan's graph: the model's with the backward nodes of training
** (plan node names are its node names); borrowed. */
const popc_graph *popci_exec_plan_graph(const popci_exec *e);
/* Peak activation bytes of one frame, and the bytes of weights,
** constants, gradients and optimizer state. */
size_t popci_exec_arena_bytes(const popci_exec *e);
size_t popci_exec_persistent_bytes(const popci_exec *e);
/* The plan's inputs: count and the slot of graph input i. */
int popci_exec_n_inputs(const popci_exec *e);
int popci_exec_input_slot(const popci_exec *e, int i);
/* Bytes of a slot as float32 (host) and as stored on the device (fewer
** when stored in float16). */
size_t popci_exec_slot_bytes(const popci_exec *e, int slot);
size_t popci_exec_slot_device_bytes(const popci_exec *e, int slot);
/* executionStrategy's phases (0 without phased execution), and the ids of
** the forward phases, ascending, into ids[0..max): their count, 0 when not
** phased, -1 when more than max. */
int popci_exec_execution_phases(const popci_exec *e);
int popci_exec_execution_phase_ids(const popci_exec *e, int *ids, int max);

#endif /* POPC_LAYER_EXEC_REPORT_H */
