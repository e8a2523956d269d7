/* exec_view.c - the executor as the layers above the core see it
** (core/layer/exec.h): its weights by plan index, their accumulators, and
** the finish of a gradient summed over replicas.
*/
#include "config.h"

#include "core/runtime/exec_priv.h"
#include "core/tensor_priv.h"

int64_t popci_exec_replicas(const popci_exec *e)
{
    return e->cfg.replicas;
}

int popci_exec_broadcasts_buffers(const popci_exec *e)
{
    return e->cfg.broadcast_buffers;
}

int popci_exec_n_weights(const popci_exec *e)
{
    return e->plan->n_weights;
}

const char *popci_exec_weight_name(const popci_exec *e, int w)
{
    return e->plan->weights[w].name;
}

int64_t popci_exec_weight_numel(const popci_exec *e, int w)
{
    return popc_view_numel(&e->plan->slots[e->plan->weights[w].slot].info);
}

size_t popci_exec_weight_bytes(const popci_exec *e, int w)
{
    return popci_plan_slot_bytes(e->plan, e->plan->weights[w].slot);
}

int popci_exec_weight_is_buffer(const popci_exec *e, int w)
{
    return e->plan->weights[w].update_slot >= 0;
}

float *popci_exec_accum(popci_exec *e, int r, int w)
{
    return e->accum[r * e->plan->n_weights + w];
}

void popci_exec_finish_sum(const popci_exec *e, int w, float *g, int64_t len)
{
    float scale = popci_exec_grad_scale(e, w);

    if (e->cfg.accum_f16 && e->cfg.replicas_global > 1)
        popci_round_f16(g, len);
    if (scale != 1.0f)
        for (int64_t j = 0; j < len; j++)
            g[j] *= scale;
}
