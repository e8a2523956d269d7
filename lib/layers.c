/* layers.c - the layers of libpopc that follow every model, in the order
** the core calls them (core/layer/hooks.h): the graph optimizer
** (it only rewrites the plan's copy of the graph), the distribution of
** training models over processes, the executable cache and popc_load,
** since they may hand the planner a compiled graph, then the profile,
** which times the whole compile. This table is the only
** place that names them; being above them all, it links them into every
** program that makes a model, static builds included. It also names the
** adapter of plugins built for an older plugin ABI (compat/), which the
** plugin loader reaches the same way (core/layer/abi_compat.h), and the
** execution strategies the planner calls (core/layer/strategy.h).
*/
#include "config.h"

#include "core/layer/abi_compat.h"
#include "core/layer/hooks.h"
#include "core/layer/strategy.h"
#include "compat/abi2.h"
#include "dist/dist_priv.h"
#include "exe/executable_priv.h"
#include "opt/opt_hooks.h"
#include "profile/profile_priv.h"
#include "strategy/strategy_priv.h"

const popci_model_hooks *const popci_layer_hooks[] = {
    &popci_opt_hooks,
    &popci_dist_hooks,
    &popci_exe_hooks,
    &popci_profile_hooks,
    NULL,
};

_Static_assert(sizeof popci_layer_hooks / sizeof *popci_layer_hooks <=
                   POPCI_MAX_LAYERS + 1,
               "raise POPCI_MAX_LAYERS in core/layer/hooks.h");

/* Plugins built for plugin ABI 2 (popc 0.2, 0.3) load through compat/. */
const popci_abi_compat *const popci_layer_abi_compat = &popci_compat_abi2;

/* The planner's execution strategies (strategy/). */
const popci_strategy_port *const popci_layer_strategy = &popci_strategies;
