/* txn.c - snapshots of what a training run commits, put back when the run
** fails after a commit (see txn_priv.h for when one is taken).
**
** Device weights are saved per distinct buffer: trainable weights have one
** copy shared by the replicas, buffers one per replica (exec_priv.h).
** Optimizer state goes through the named-state accessors, so its layout
** stays private to train_step.c.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "popc/tensor.h"
#include "core/alloc_priv.h"
#include "core/extend/txn_priv.h"

typedef struct saved {
    void *device;      /* the executor's buffer (borrowed) */
    void *copy;        /* owned */
    size_t bytes;
} saved;

struct popci_txn {
    int n;
    saved *w;
    popci_optstate *state;
    int n_state;
    popc_tensor **st;  /* one per named state tensor */
};

void popci_txn_free(popci_txn *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n; i++)
        free(t->w[i].copy);
    free(t->w);
    for (int i = 0; t->st && i < t->n_state; i++)
        popc_tensor_free(t->st[i]);
    free(t->st);
    free(t);
}

static popc_status oom(popci_txn *t)
{
    popci_txn_free(t);
    return popc_set_error(POPC_ENOMEM, "run: out of memory while saving "
                          "the weights for an undo");
}

popc_status popci_txn_begin(popci_exec *e, popci_optstate *state,
                            popci_txn **out)
{
    const popci_plan *p = e->plan;
    int nw = p->n_weights, R = (int)e->cfg.replicas;
    int has_updates = 0, all, n = 0;
    popci_txn *t;

    *out = NULL;
    if (!e->cfg.training)
        return POPC_OK;
    for (int w = 0; w < nw; w++)
        has_updates |= p->weights[w].update_slot >= 0;
    all = e->cfg.device_iterations > 1;
    if (!all && !has_updates)
        return POPC_OK;
    if (!(t = popci_calloc(1, sizeof *t)) ||
        !(t->w = popci_calloc((size_t)(R * nw) + 1, sizeof *t->w)))
        return oom(t);
    for (int r = 0; r < R; r++)
        for (int w = 0; w < nw; w++) {
            const popci_plan_weight *pw = &p->weights[w];
            int i = r * nw + w;
            saved *s;

            if (!e->w_own[i] ||
                !(pw->update_slot >= 0 || (all && pw->accum_slot >= 0)))
                continue;
            s = &t->w[n];
            s->device = e->wdata[i];
            s->bytes = popci_plan_slot_bytes(p, pw->slot);
            if (!(s->copy = popci_malloc(s->bytes ? s->bytes : 1)))
                return oom(t);
            memcpy(s->copy, s->device, s->bytes);
            t->n = ++n;
        }
    if (all && state) {
        t->state = state;
        t->n_state = popci_optstate_count(state);
        if (!(t->st = popci_calloc((size_t)t->n_state + 1, sizeof *t->st)))
            return oom(t);
        for (int i = 0; i < t->n_state; i++)
            if (popci_optstate_get(state, i, &t->st[i]) != POPC_OK)
                return oom(t);
    }
    *out = t;
    return POPC_OK;
}

void popci_txn_rollback(popci_txn *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n; i++)
        memcpy(t->w[i].device, t->w[i].copy, t->w[i].bytes);
    /* same names and shapes as when saved: set cannot fail */
    for (int i = 0; t->st && i < t->n_state; i++)
        (void)popci_optstate_set(t->state, i, t->st[i]);
}
