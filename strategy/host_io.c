/* host_io.c - a plan's host I/O: which slots travel to the host every
** micro-batch (the graph outputs; inputs are POPC_SLOT_INPUT slots) and
** which of those copies overlap compute through the I/O tiles, PopTorch's
** set_overlap_for_input / set_overlap_for_output (POPC_LOC_HOST_OUTPUT,
** POPC_LOC_OVERLAP_ACCUM, POPC_LOC_OVERLAP_ITER).
**
** An overlapped tensor is marked by an Identity node carrying
** POPC_ATTR_OVERLAP_INPUT (its input must be a graph input) or
** POPC_ATTR_OVERLAP_OUTPUT (its output must be a graph output). As in
** PopTorch, overlap needs ShardedExecution (or phased: not pipelined, even
** on one IPU), I/O tiles (TensorLocations.numIOTiles) and outputMode All
** or Sum.
*/
#include "config.h"

#include <string.h>

#include "popc/options.h"
#include "core/layer/options.h"
#include "strategy/strategy_priv.h"

static int is_output(const popci_plan *p, int slot)
{
    for (int i = 0; i < p->n_outputs; i++)
        if (p->output_slots[i] == slot)
            return 1;
    return 0;
}

static unsigned overlap_bits(int64_t mode)
{
    return mode == POPC_OVERLAP_DEVICE_ITERATION_LOOP
               ? POPC_LOC_OVERLAP_ACCUM | POPC_LOC_OVERLAP_ITER
           : mode == POPC_OVERLAP_ACCUMULATION_LOOP ? POPC_LOC_OVERLAP_ACCUM
                                                    : 0u;
}

/* PopTorch's conditions for overlapped I/O, in its order and words: not
** pipelined (on one IPU too: ShardedExecution), I/O tiles, and outputs
** returned every micro-batch or summed. */
static popc_status overlap_allowed(const popci_plan *p,
                                   const popc_options *o, const char *what,
                                   const char *node)
{
    int64_t mode = popci_opt_int(o, POPCI_O_outputMode);

    if (mode == POPC_OUTPUT_DEFAULT)
        mode = p->pub.training ? POPC_OUTPUT_FINAL : POPC_OUTPUT_ALL;
    if (popci_opt_int(o, POPCI_O_setExecutionStrategy) ==
        POPC_EXEC_PIPELINED)
        return popc_set_error(POPC_EINVAL, "%s (node '%s'): Overlapped IO "
                              "is not supported with "
                              "poptorch.PipelinedExecution. If you are using "
                              "only one IPU, please switch to "
                              "poptorch.ShardedExecution.", what, node);
    if (popci_opt_int(o, POPCI_O_TensorLocations_numIOTiles) == 0)
        return popc_set_error(POPC_EINVAL, "%s (node '%s'): No IO tiles "
                              "allocated. You must allocate at least 32 IO "
                              "tiles using poptorch.Options()."
                              "TensorLocations.numIOTiles.", what, node);
    if (mode != POPC_OUTPUT_ALL && mode != POPC_OUTPUT_SUM)
        return popc_set_error(POPC_EINVAL, "%s (node '%s'): Unsupported "
                              "output mode for overlapped IO. Please switch "
                              "output mode to poptorch.OutputMode.All or "
                              "poptorch.OutputMode.Sum.", what, node);
    return POPC_OK;
}

/* The overlap one node asks for, checked; *slot -1 when it asks none. */
static popc_status node_overlap(const popci_plan *p, const popc_options *o,
                                int k, int *slot, unsigned *bits)
{
    const popc_plan_node *pn = &p->pub.nodes[k];
    int64_t in = popc_attr_int(pn->attrs, POPC_ATTR_OVERLAP_INPUT, 0);
    int64_t out = popc_attr_int(pn->attrs, POPC_ATTR_OVERLAP_OUTPUT, 0);
    int64_t mode = in ? in : out;
    const char *what = in ? "set_overlap_for_input" : "set_overlap_for_output";
    popc_status st;

    *slot = -1;
    *bits = 0;
    if (!in && !out)
        return POPC_OK;
    if (mode < 0 || mode > POPC_OVERLAP_DEVICE_ITERATION_LOOP)
        return popc_set_error(POPC_EINVAL, "%s: node '%s' asks for overlap "
                              "mode %lld; use POPC_OVERLAP_* (0..2)", what,
                              pn->name, (long long)mode);
    if (!pn->op || pn->op->role != POPC_ROLE_IDENTITY ||
        pn->n_inputs != 1 || pn->n_outputs != 1)
        return popc_set_error(POPC_EINVAL, "%s: node '%s' is %s, not an "
                              "Identity; build it with popc_set_overlap_for_"
                              "%s", what, pn->name,
                              pn->op ? pn->op->name : "unknown",
                              in ? "input" : "output");
    if ((st = overlap_allowed(p, o, what, pn->name)) != POPC_OK)
        return st;
    *slot = in ? pn->inputs[0] : pn->outputs[0];
    if (in && p->pub.slots[*slot].kind != POPC_SLOT_INPUT)
        return popc_set_error(POPC_EINVAL, "set_overlap_for_input: '%s' "
                              "(read by node '%s') is not a graph input; "
                              "overlap the model's inputs only",
                              p->pub.slots[*slot].name, pn->name);
    if (out && !is_output(p, *slot))
        return popc_set_error(POPC_EINVAL, "set_overlap_for_output: '%s' "
                              "(written by node '%s') is not a graph output; "
                              "add it with popc_graph_add_output",
                              p->pub.slots[*slot].name, pn->name);
    *bits = overlap_bits(mode);
    return POPC_OK;
}

popc_status popci_host_io_mark(popci_plan *p, const popc_options *o,
                               unsigned char *loc)
{
    for (int i = 0; i < p->n_outputs; i++)
        if (p->output_slots[i] >= 0)
            loc[p->output_slots[i]] |= POPC_LOC_HOST_OUTPUT;
    for (int k = 0; k < p->pub.n_nodes; k++) {
        int slot;
        unsigned bits;
        popc_status st = node_overlap(p, o, k, &slot, &bits);

        if (st != POPC_OK)
            return st;
        if (slot >= 0)
            loc[slot] |= (unsigned char)bits;
    }
    return POPC_OK;
}
