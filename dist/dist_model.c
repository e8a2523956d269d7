/* dist_model.c - what the ranks of a distributed training model agree on:
** the compiled model (checked at compile), the starting weights (rank
** 0's, broadcast after compile) and, on request, the weights at the end
** (popc_model_check_ranks_agree).
*/
#include "config.h"

#include <string.h>

#include "popc/distributed.h"
#include "popc/log.h"
#include "encode/bytes.h"
#include "encode/compile_key.h"
#include "core/layer/model.h"
#include "dist/dist_priv.h"

popc_status popci_dist_check_config(const popc_model *m, popci_comm *c,
                                    const popci_exec_extras *x,
                                    popc_tensor *const *inputs, int n)
{
    uint64_t key;
    popc_status st;

    if (!c || popci_comm_size(c) <= 1)
        return POPC_OK;
    /* A group's replicas must all live on one rank for now: the reduction
    ** of a grouped weight and the host layout of grouped inputs are
    ** defined per process. */
    if (x->n_groupings > 0)
        return popc_set_error(POPC_EUNSUPPORTED, "replica-grouped weights "
                              "(replicaGrouping) with Distributed."
                              "numProcesses > 1 are not supported yet; "
                              "remove the grouping or run one process");
    if (x->input_group > 1)
        return popc_set_error(POPC_EUNSUPPORTED, "inputReplicaGrouping with "
                              "Distributed.numProcesses > 1 is not supported "
                              "yet; remove it or run one process");
    if ((st = popci_compile_key(m, inputs, n, &key)) != POPC_OK)
        return st;
    return popci_comm_agree(c, key, "the compiled model (graph, "
                            "input shapes, compile options, optimizer or "
                            "plugin versions)",
                            "every rank must compile the same model with the "
                            "same options; only Distributed.processId may "
                            "differ");
}

popc_status popci_dist_share_weights(popc_model *m, popci_comm *c)
{
    popci_exec *e = popci_model_executor(m);
    popc_status st;

    if (!c)
        return POPC_OK;
    for (int w = 0; w < popci_exec_n_weights(e); w++) {
        if ((st = popci_comm_bcast(c, 0, popci_exec_weight(e, w),
                                   popci_exec_weight_bytes(e, w),
                                   "the starting weights from rank 0")) !=
            POPC_OK)
            return st;
        popci_exec_write_weight(e, w, popci_exec_weight(e, w));
    }
    popci_model_host_stale(m); /* the device may now hold rank 0's values */
    return POPC_OK;
}

/* The digest of a block, folded into h: popci_hash_bytes reads 32 bytes
** a round, where FNV-1a's byte a round made this check a tenth of a short
** run (ResNet-18's weights and momentum are 90 MB). */
static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    uint64_t d = popci_hash_bytes(p, n);

    return popci_fnv1a(h, &d, sizeof d);
}

double popc_model_collective_seconds(const popc_model *m, int64_t *steps)
{
    const popci_dist_model *d = popci_dist_of(m);

    if (steps)
        *steps = d ? d->steps : 0;
    return d ? d->seconds : 0.0;
}

popc_status popc_model_check_ranks_agree(popc_model *m, uint64_t *checksum)
{
    uint64_t h = POPCI_FNV_INIT;
    const popci_dist_model *d;
    popci_exec *e;
    popc_status st;

    if (!checksum)
        return popc_set_error(POPC_EINVAL, "popc_model_check_ranks_agree: "
                              "checksum is NULL");
    *checksum = 0;
    if (!m)
        return popc_set_error(POPC_EINVAL, "popc_model_check_ranks_agree: "
                              "model is NULL");
    if ((st = popci_model_require_compiled(m)) != POPC_OK)
        return st;
    e = popci_model_executor(m);
    /* replica 0's device copies: buffers only when every rank follows
    ** rank 0's (broadcastBuffers), since they are per replica otherwise */
    for (int w = 0; w < popci_exec_n_weights(e); w++) {
        const char *name = popci_exec_weight_name(e, w);

        if (popci_exec_weight_is_buffer(e, w) &&
            !popci_exec_broadcasts_buffers(e))
            continue;
        h = mix(h, name, strlen(name) + 1);
        h = mix(h, popci_exec_weight(e, w), popci_exec_weight_bytes(e, w));
    }
    for (int i = 0; i < popci_model_n_states(m); i++) {
        const char *name = popci_model_state_name(m, i);
        popc_tensor *t = NULL;

        if ((st = popci_model_state_get(m, i, &t)) != POPC_OK)
            return st;
        h = mix(h, name, strlen(name) + 1);
        h = mix(h, popc_tensor_cdata(t), popc_tensor_nbytes(t));
        popc_tensor_free(t);
    }
    *checksum = h;
    if (!(d = popci_dist_of(m)) || !d->comm)
        return POPC_OK;
    return popci_comm_agree(d->comm, h, "the checksum of the weights and "
                            "optimizer state",
                            "the ranks trained different models: this is a "
                            "bug in popc or in a plugin, please report it");
}
