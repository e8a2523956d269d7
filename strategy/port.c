/* port.c - the table by which the planner calls this layer
** (core/layer/strategy.h); lib/layers.c hands it to the core.
*/
#include "config.h"

#include "core/layer/strategy.h"
#include "strategy/strategy_priv.h"

const popci_strategy_port popci_strategies = {
    .from_options = popci_strategy_from_options,
    .resolve = popci_stages_resolve,
    .recompute = popci_recompute,
    .recompute_count = popci_recompute_count,
    .order = popci_stages_order,
    .offchip_plan = popci_offchip_plan,
    .offchip_add_slot = popci_offchip_add_slot,
    .locations_apply = popci_locations_apply,
    .execution_phases = popci_plan_execution_phases,
    .execution_phase_ids = popci_plan_execution_phase_ids,
};
