/* opt_hooks.h - the graph optimizer's table of the core's layer hooks
** (core/layer/hooks.h), which lib/layers.c lists. */
#ifndef POPC_OPT_HOOKS_H
#define POPC_OPT_HOOKS_H

#include "core/layer/hooks.h"

extern const popci_model_hooks popci_opt_hooks;

/* The kernel of node ic at kernelSelection `selection`
** (popci_model_hooks.choose_kernel; opt/kernel_select.c). */
popc_status popci_opt_choose_kernel(const popc_infer_ctx *ic, int selection,
                                    popc_op_def *derived,
                                    const popc_kernel_def **kernel);

#endif /* POPC_OPT_HOOKS_H */
