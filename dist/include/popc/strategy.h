/* strategy.h - replica grouping of weights (PopTorch's replicaGrouping,
** VariableRetrievalMode), and, through popc/plan_info.h, what an execution
** strategy made of a compiled model.
**
** Replica grouping: with replicationFactor R, a weight may hold different
** values on groups of replicas (popc_comm_group_type, options.h):
**   All          one value for every replica (the default; size ignored)
**   Consecutive  groups of `shards` consecutive replicas: {0..k-1}, {k..}
**   Orthogonal   m = R / shards groups: replica r is in group r % m
**   NoGrouping   every replica its own value (R groups)
** Replicas of a group hold the same value; training all-reduces a grouped
** weight's gradients within its group only (a Mean reduction divides by
** the group's replica count) and keeps one optimizer state per group, so
** the groups stay apart. Each group can be given its own value; a new
** grouping starts every group from the weight's host value. Grouped
** optimizer state tensors are [groups, *shape]
** (popc_model_get_optimizer_state). max_grad_norm with grouped weights is
** refused (POPC_EUNSUPPORTED) when the optimizer steps. Executables and
** weight files hold group 0's values.
**
** broadcastBuffers (option): true, buffers (BatchNorm running statistics)
** take replica 0's values (their group's first replica's) on every
** replica after each optimizer step; false, each replica keeps its own.
** The host copy is replica 0's either way.
**
** Since 0.1.0 unless a function says otherwise; the conventions of
** popc/status.h (ownership, status codes, threads) apply.
*/
#ifndef POPC_STRATEGY_H
#define POPC_STRATEGY_H

#include <stdint.h>
#include "popc/status.h"
#include "popc/tensor.h"
#include "popc/options.h"
#include "popc/model.h"
#include "popc/plan_info.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- replica grouping --------------------------------------------------- */

/* Values are PopTorch's. */
typedef enum { POPC_RETRIEVE_ONE_PER_GROUP = 0,
               POPC_RETRIEVE_ALL_REPLICAS = 2 } popc_variable_retrieval_mode;

/* replicaGrouping(comm_group_type, shards, variable_retrieval_mode) on a
** weight or buffer, before the model is compiled (or after
** popc_model_destroy). POPC_OK, POPC_ENOTFOUND (no such weight),
** POPC_EINVAL (m NULL, bad type or mode, shards < 1 or not dividing
** replicationFactor for Consecutive and Orthogonal), POPC_ESTATE
** (compiled), POPC_ENOMEM. Not thread-safe on one model. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_model_set_replica_grouping(
    popc_model *m, const char *weight, popc_comm_group_type type,
    int shards, popc_variable_retrieval_mode mode);

/* Groups of a weight: 1 when ungrouped, 0 for an unknown name or a NULL
** m. Not thread-safe on one model. Since 0.1.0. */
POPC_API int popc_model_n_replica_groups(const popc_model *m,
                                         const char *weight);

/* Set group `group`'s value (copied; the weight's dtype and shape).
** Reaches the device on the next run, like popc_model_set_weight (which
** sets every group). POPC_OK, POPC_ENOTFOUND (no such weight),
** POPC_EINVAL (m or t NULL, group out of range, other dtype or shape).
** Not thread-safe on one model. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_model_set_group_weight(
    popc_model *m, const char *weight, int group, const popc_tensor *t);

/* A new tensor with group `group`'s current value (read back from the
** device first when it changed there): the caller owns *out and drops it
** with popc_tensor_unref(). POPC_OK, POPC_ENOTFOUND (no such weight),
** POPC_EINVAL (m or out NULL, group out of range), POPC_ENOMEM. Not
** thread-safe on one model. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_model_get_group_weight(
    popc_model *m, const char *weight, int group, popc_tensor **out);

/* Per the weight's retrieval mode, a new tensor the caller owns and
** drops with popc_tensor_unref(): OnePerGroup [groups, *shape] (the first
** replica of each group), AllReplicas [replicationFactor, *shape]. An
** ungrouped weight gives [1, *shape]. POPC_OK, POPC_ENOTFOUND, POPC_EINVAL
** (m or out NULL, the weight already has the largest rank), POPC_ENOMEM.
** Not thread-safe on one model. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_model_get_grouped_weight(
    popc_model *m, const char *weight, popc_tensor **out);

#ifdef __cplusplus
}
#endif
#endif /* POPC_STRATEGY_H */
