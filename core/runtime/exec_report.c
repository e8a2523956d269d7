/* exec_report.c - the executor's configuration, phases, plan and backend
** estimates as a report reads them (core/layer/exec_report.h). */
#include "config.h"

#include "core/runtime/exec_priv.h"
#include "core/layer/strategy.h"

int64_t popci_exec_micro_batches(const popci_exec *e)
{
    return e->micro_batches;
}

int64_t popci_exec_device_iterations(const popci_exec *e)
{
    return e->cfg.device_iterations;
}

int64_t popci_exec_grad_accum(const popci_exec *e)
{
    return e->cfg.grad_accum;
}

int popci_exec_pipelined(const popci_exec *e)
{
    return e->cfg.pipelined;
}

int popci_exec_phase_first(const popci_exec *e, int ph)
{
    return e->phase_first[ph];
}

int popci_exec_has_cycles(const popci_exec *e)
{
    return e->be->cycles != NULL;
}

double popci_exec_nodes_cycles(const popci_exec *e, int first, int last)
{
    return e->be->cycles ? e->be->cycles(e->bctx, e->exe, first, last) : 0.0;
}

int popci_exec_has_report(const popci_exec *e)
{
    return POPC_HAS_FIELD(popc_backend_def, e->be->size, report_to) &&
           e->be->report_to;
}

popc_status popci_exec_report(const popci_exec *e, popc_report_sink write,
                              void *user)
{
    return e->be->report_to(e->bctx, e->exe, write, user);
}

const popc_plan *popci_exec_public_plan(const popci_exec *e)
{
    return &e->plan->pub;
}

const popc_graph *popci_exec_plan_graph(const popci_exec *e)
{
    return e->plan->graph;
}

size_t popci_exec_arena_bytes(const popci_exec *e)
{
    return e->plan->arena_bytes;
}

size_t popci_exec_persistent_bytes(const popci_exec *e)
{
    return e->plan->persistent_bytes;
}

int popci_exec_n_inputs(const popci_exec *e)
{
    return e->plan->n_inputs;
}

int popci_exec_input_slot(const popci_exec *e, int i)
{
    return e->plan->input_slots[i];
}

size_t popci_exec_slot_bytes(const popci_exec *e, int slot)
{
    return popci_plan_slot_bytes(e->plan, slot);
}

size_t popci_exec_slot_device_bytes(const popci_exec *e, int slot)
{
    return popci_plan_slot_device_bytes(e->plan, slot);
}

int popci_exec_execution_phases(const popci_exec *e)
{
    return popci_layer_strategy->execution_phases(e->plan);
}

int popci_exec_execution_phase_ids(const popci_exec *e, int *ids, int max)
{
    return popci_layer_strategy->execution_phase_ids(e->plan, ids, max);
}
