/* layers.c - the layers of libpopc that follow every model, in the order
** the core calls them (core/layer/hooks.h): the graph optimizer
** (it only rewrites the plan's copy of the graph), the distribution of
** training models over processes, the executable cache and popc_load,
** since they may hand the planner a compiled graph, then the profile,
** which times the whole compile. This table is the only
** place that names them; being above them all, it links them into every
** program that makes a model, static builds included.
*/
#include "config.h"

#include "core/layer/hooks.h"
#include "dist/dist_priv.h"
#include "exe/executable_priv.h"
#include "opt/opt_hooks.h"
#include "profile/profile_priv.h"

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
