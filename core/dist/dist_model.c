/* dist_model.c - what the ranks of a distributed training model agree on:
** the compiled model (checked at compile), the starting weights (rank
** 0's, broadcast after compile) and, on request, the weights at the end
** (popc_model_check_ranks_agree).
*/
#include "config.h"

#include <string.h>

#include "popc/distributed.h"
#include "popc/log.h"
#include "core/dist/dist_priv.h"
#include "core/graph/bytes_priv.h"
#include "core/runtime/model_priv.h"

popc_status popci_dist_check_config(const popc_model *m,
                                    const popci_exec_config *ec,
                                    popc_tensor *const *inputs, int n)
{
    uint64_t key;
    popc_status st;

    if (!ec->comm || popci_comm_size(ec->comm) <= 1)
        return POPC_OK;
    /* A group's replicas must all live on one rank for now: the reduction
    ** of a grouped weight and the host layout of grouped inputs are
    ** defined per process. */
    if (ec->n_groupings > 0)
        return popc_set_error(POPC_EUNSUPPORTED, "replica-grouped weights "
                              "(replicaGrouping) with Distributed."
                              "numProcesses > 1 are not supported yet; "
                              "remove the grouping or run one process");
    if (ec->input_group > 1)
        return popc_set_error(POPC_EUNSUPPORTED, "inputReplicaGrouping with "
                              "Distributed.numProcesses > 1 is not supported "
                              "yet; remove it or run one process");
    if ((st = popci_compile_key(m, inputs, n, &key)) != POPC_OK)
        return st;
    return popci_comm_agree(ec->comm, key, "the compiled model (graph, "
                            "input shapes, compile options, optimizer or "
                            "plugin versions)",
                            "every rank must compile the same model with the "
                            "same options; only Distributed.processId may "
                            "differ");
}

popc_status popci_dist_share_weights(popc_model *m)
{
    popci_exec *e = m->exec;
    const popci_plan *p = e->plan;
    popc_status st;

    if (!e->cfg.comm)
        return POPC_OK;
    for (int w = 0; w < p->n_weights; w++) {
        if ((st = popci_comm_bcast(e->cfg.comm, 0, e->wdata[w],
                                   popci_plan_slot_bytes(p,
                                                         p->weights[w].slot),
                                   "the starting weights from rank 0")) !=
            POPC_OK)
            return st;
        popci_exec_write_weight(e, w, e->wdata[w]);
    }
    m->host_dirty = 1; /* the device may now hold rank 0's values */
    return POPC_OK;
}

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    return popci_fnv1a(h, p, n);
}

double popc_model_collective_seconds(const popc_model *m, int64_t *steps)
{
    const popci_exec *e = m ? m->exec : NULL;

    if (steps)
        *steps = e ? e->dist_steps : 0;
    return e ? e->dist_seconds : 0.0;
}

popc_status popc_model_check_ranks_agree(popc_model *m, uint64_t *checksum)
{
    uint64_t h = POPCI_FNV_INIT;
    const popci_plan *p;
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
    e = m->exec;
    p = e->plan;
    /* replica 0's device copies: buffers only when every rank follows
    ** rank 0's (broadcastBuffers), since they are per replica otherwise */
    for (int w = 0; w < p->n_weights; w++) {
        if (p->weights[w].update_slot >= 0 && !e->cfg.broadcast_buffers)
            continue;
        h = mix(h, p->weights[w].name, strlen(p->weights[w].name) + 1);
        h = mix(h, e->wdata[w], popci_plan_slot_bytes(p, p->weights[w].slot));
    }
    for (int i = 0; m->state && i < popci_optstate_count(m->state); i++) {
        popc_tensor *t = NULL;

        if ((st = popci_optstate_get(m->state, i, &t)) != POPC_OK)
            return st;
        h = mix(h, popci_optstate_name(m->state, i),
                strlen(popci_optstate_name(m->state, i)) + 1);
        h = mix(h, popc_tensor_cdata(t), popc_tensor_nbytes(t));
        popc_tensor_free(t);
    }
    *checksum = h;
    if (!e->cfg.comm)
        return POPC_OK;
    return popci_comm_agree(e->cfg.comm, h, "the checksum of the weights and "
                            "optimizer state",
                            "the ranks trained different models: this is a "
                            "bug in popc or in a plugin, please report it");
}
