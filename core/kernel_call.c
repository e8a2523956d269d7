/* kernel_call.c - how a backend calls a plan's kernel: the host services
** POPC_SERVICE_PLAN_KERNEL_CTX and POPC_SERVICE_NODE_SEED (popc/services.h).
** They live here, not inline in plugin.h, so that a change (a new context
** member, another seed mix) reaches every backend without a rebuild.
*/
#include "config.h"

#include <string.h>

#include "core/host_priv.h"

uint64_t popci_node_seed(uint64_t frame_seed, int node)
{
    /* splitmix64 of the frame seed stepped by the node's position */
    uint64_t z = frame_seed + 0x9E3779B97F4A7C15ull * (uint64_t)(node + 1);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void popci_plan_kernel_ctx(const popc_host *host, const popc_plan *plan,
                           int k, const popc_frame *frame, popc_view *in,
                           popc_view *out, popc_kernel_ctx *kc)
{
    const popc_plan_node *n = popc_plan_node_at(plan, k);
    popc_kernel_ctx full;
    uint32_t size = kc->size < sizeof full ? kc->size : (uint32_t)sizeof full;

    for (int j = 0; j < n->n_inputs; j++) {
        if (n->inputs[j] >= 0)
            in[j] = frame->slots[n->inputs[j]];
        else
            memset(&in[j], 0, sizeof in[j]);
    }
    for (int j = 0; j < n->n_outputs; j++)
        out[j] = frame->slots[n->outputs[j]];
    memset(&full, 0, sizeof full);
    full.host = host;
    full.node_name = n->name;
    full.n_inputs = n->n_inputs;
    full.inputs = in;
    full.n_outputs = n->n_outputs;
    full.outputs = out;
    full.attrs = n->attrs;
    full.part = 0;
    full.n_parts = 1;
    full.training = frame->training;
    full.seed = popci_node_seed(frame->seed, k);
    full.state = n->state;
    full.user = frame->user;
    full.flags = plan->kernel_flags;
    full.op = n->op;
    /* the caller's struct may be older (smaller) than ours */
    memcpy(kc, &full, size);
    kc->size = size;
}
