/* model_config_priv.h - how a model's options become the configurations
** its compile is built from (core/runtime/model_config.c).
**
** A compile reads its options only through these functions, each of
** which builds one configuration: a new option is read where the
** configuration it changes is built, and model.c only strings the steps
** together.
*/
#ifndef POPC_MODEL_CONFIG_PRIV_H
#define POPC_MODEL_CONFIG_PRIV_H

#include "core/runtime/model_priv.h"

/* PopTorch's batching (semantics §0): device iterations, replicas,
** gradient accumulation (1 for inference) and input replica groups, each
** at least 1; G divides R. */
typedef struct popci_batching {
    int64_t di, r, ga, g;
    int orthogonal;            /* inputReplicaGrouping is Orthogonal */
    int pipelined_strategy;    /* setExecutionStrategy is Pipelined */
} popci_batching;

popci_batching popci_config_batching(const popc_model *m);

/* outputMode and outputReturnPeriod, resolved (never DEFAULT) into
** ec->mode and ec->period; errors name the period's rule. */
popc_status popci_config_output_mode(const popc_model *m, int64_t di,
                                     popci_exec_config *ec);

/* The backend option's backend: an error lists the registered ones; the
** best loaded backend stands in for the option's default (with a
** warning). */
popc_status popci_config_find_backend(const popc_model *m,
                                      const popc_backend_def **out);

/* anchorTensor, parsed for the output mode already in ec into a new
** m->anchors (NULL when none), and handed to the plan and executor. */
popc_status popci_config_anchors(popc_model *m, const popci_batching *b,
                                 popci_exec_config *ec);

/* The plan's configuration: the micro-batch inputs, replicas, strategy,
** anchors, graph rewrites at optimizationLevel and, training, the
** optimizer's loss scaling (which must not be 0). */
popc_status popci_config_plan(const popc_model *m, const popci_batching *b,
                              const popc_view *micro, int n,
                              popci_plan_config *pc);

/* The plan's per-IPU memory proportions (setAvailableMemoryProportion)
** and kernel flags (stable norm, floating-point exceptions, half
** partials, stochastic rounding, which backend be must support). */
popc_status popci_config_plan_options(const popc_model *m,
                                      const popc_backend_def *be,
                                      popci_plan *plan);

/* A pipeline runs its stages overlapped only across several IPUs. */
int popci_config_pipelined(const popci_batching *b, const popci_plan *p);

/* The executor's configuration beside the output mode: batching,
** reductions, seed, synthetic data, loss scaling, pipelining, buffers. */
void popci_config_exec(const popc_model *m, const popci_batching *b,
                       const popci_plan *plan, popci_exec_config *ec);

/* The backend's configuration. */
popc_backend_config popci_config_backend(const popc_model *m);

#endif /* POPC_MODEL_CONFIG_PRIV_H */
