/* opt_hooks.h - the graph optimizer's table of the core's layer hooks
** (core/layer/hooks.h), which lib/layers.c lists. */
#ifndef POPC_OPT_HOOKS_H
#define POPC_OPT_HOOKS_H

#include "core/layer/hooks.h"

extern const popci_model_hooks popci_opt_hooks;

#endif /* POPC_OPT_HOOKS_H */
