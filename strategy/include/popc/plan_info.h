/* plan_info.h - what an execution strategy made of a compiled model: the
** figures of its plan (IPUs, stages, phases, memory).
**
** Recomputation: a training graph with checkpoints (popc
** RecomputationCheckpoint nodes, poptorch.recomputationCheckpoint, or
** nodes annotated recompute = 1, whose outputs are the checkpoints) keeps
** only checkpointed activations for the backward pass; the others are
** recomputed there from the checkpoints. Also kept: graph inputs and
** outputs, weights, values crossing IPUs or phases, outputs of random,
** host and side-effect ops. Results are bitwise those without
** recomputation; popc_plan_info.stored_bytes and recomputed_nodes show the
** effect.
**
** Since 0.1.0 unless a function says otherwise; the conventions of
** popc/status.h (ownership, status codes, threads) apply.
*/
#ifndef POPC_PLAN_INFO_H
#define POPC_PLAN_INFO_H

#include <stdint.h>
#include "popc/status.h"
#include "popc/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the compiled plan -------------------------------------------------- */

typedef struct popc_plan_info {
    int n_ipus;                /* IPUs per replica */
    int pipeline_stages;       /* forward stages F: 1 + IPU changes */
    int pipelined;             /* micro-batches overlap across stages */
    int n_phases;              /* phased strategies: phases; else 0 */
    int n_nodes, n_forward;    /* scheduled nodes, forward ones first */
    int recomputed_nodes;      /* forward nodes cloned into the backward
                                  pass (recomputation checkpoints) */
    int64_t activation_bytes;  /* activation memory of one micro-batch
                                  (peak of the planned arena) */
    int64_t stored_bytes;      /* training: activations kept from the
                                  forward to the backward pass */
    int64_t onchip_peak_bytes; /* peak live activation bytes, time spent
                                  off chip excluded */
    int64_t offchip_bytes;     /* activations sent to streaming memory
                                  between phases (tensorsLiveness) */
    int64_t persistent_bytes;  /* weights, constants, accumulators and
                                  optimizer state */
} popc_plan_info;

/* Figures of the compiled model (*out is zeroed first). POPC_OK,
** POPC_EINVAL (out NULL), POPC_ESTATE "Model has not been compiled or has
** been destroyed." (also for a NULL m). Not thread-safe on one model.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_model_get_plan_info(
    const popc_model *m, popc_plan_info *out);

#ifdef __cplusplus
}
#endif
#endif /* POPC_PLAN_INFO_H */
