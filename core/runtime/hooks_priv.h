/* hooks_priv.h - the core's side of the layer hooks (core/layer/hooks.h):
** calling every table of popci_layer_hooks in order (core/runtime/hooks.c)
** and the run trace a layer may ask the executor to fill.
*/
#ifndef POPC_HOOKS_PRIV_H
#define POPC_HOOKS_PRIV_H

#include "popc/model.h"
#include "core/layer/hooks.h"
#include "core/runtime/exec_priv.h"
#include "core/runtime/plan_priv.h"

/* ---- calling them (core/runtime/hooks.c) -------------------------------- */

/* One compile's states, one per table; compile_end is called for every
** table (its state may be NULL when compile_begin failed or is absent). */
typedef struct popci_compile_states {
    void *state[POPCI_MAX_LAYERS];
} popci_compile_states;

popc_status popci_hooks_compile_begin(popc_model *m,
                                      popci_compile_states *cs);
void popci_hooks_compile_phase(popci_compile_states *cs, int phase);
popc_status popci_hooks_compile_plan(popci_compile_states *cs, popc_model *m,
                                     popc_tensor *const *inputs, int n,
                                     popci_plan_config *pc);
popc_status popci_hooks_compiled(popci_compile_states *cs, popc_model *m,
                                 const popci_exec *e);
void popci_hooks_compile_end(popci_compile_states *cs, popc_model *m,
                             int ok);
popci_trace *popci_hooks_run_begin(popc_model *m);
void popci_hooks_run_end(popc_model *m, double t0);
void popci_hooks_model_free(popc_model *m);
popc_status popci_hooks_exec_config(popc_model *m, popci_exec_extras *x,
                                    popc_tensor *const *inputs, int n);
popc_status popci_hooks_adopted(popc_model *m);
void popci_hooks_weights_to_host(popc_model *m);
void popci_hooks_weights_to_device(popc_model *m);
popc_status popci_hooks_weight_set(popc_model *m, int i);
/* The tables' choose_kernel in turn (a popci_plan_config.choose). */
popc_status popci_hooks_choose_kernel(const popc_infer_ctx *ic,
                                      int selection, popc_op_def *derived,
                                      const popc_kernel_def **kernel);
/* Every table's rewrite_graph in turn (a popci_plan_config.rewrite). */
popc_status popci_hooks_rewrite_graph(popc_graph *g, int level, int training,
                                      const char *const *keep, int n_keep);

/* ---- the run trace (core/layer/hooks.h; filled by batching.c) ---------- */

/* ts: the task began (before its inputs were fed), ts[1] its nodes
** started, ts[2] they ended, ts[3] it was done (outputs gathered and
** gradients accumulated on the last phase). */
void popci_trace_task(popci_trace *t, int r, int p, int64_t mb,
                      const double ts[4]);
/* The optimizer step after window w ran from t0 to t1. */
void popci_trace_step(popci_trace *t, int64_t w, double t0, double t1);

#endif /* POPC_HOOKS_PRIV_H */
