/* offchip.c - which activations leave the chip between phases (phased
** execution with a tensorsLiveness other than AlwaysLive), and the plan's
** activation memory figures.
**
** The schedule of a phased plan runs phase after phase (strategy/stages.c). An
** activation read after the phase that produced it ends is sent to
** streaming memory and loaded back for its next reader:
**   OffChipAfterFwd, OffChipAfterFwdNoOverlap  forward activations the
**       backward pass reads (and results kept to the end) are off chip
**       from their last forward use to their first backward use;
**   OffChipAfterEachPhase  any activation is off chip from its last use in
**       its own phase to its first use in a later phase (or the end); the
**       backward pass of the last phase shares it unless
**       useSeparateBackwardPhase gives the backward pass phases of its
**       own.
** Once back on chip a value stays there until its last use: a value read
** by several later phases is counted on chip from the first of them, an
** upper bound. stored_bytes measures recomputation: the activations live
** across the forward / backward boundary, which checkpoints reduce.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "popc/options.h"
#include "core/layer/alloc.h"
#include "strategy/strategy_priv.h"

static popc_status oom(void)
{
    return popc_set_error(POPC_ENOMEM, "compile: out of memory while "
                          "planning tensor liveness");
}

static void drop_arrays(popci_plan *p)
{
    free(p->offchip_from);
    free(p->offchip_to);
    p->offchip_from = p->offchip_to = NULL;
    p->pub.offchip_from = p->pub.offchip_to = NULL;
}

popc_status popci_offchip_add_slot(popci_plan *p, int s)
{
    int *f, *t;

    if (!p->offchip_from)
        return POPC_OK;
    f = popci_realloc(p->offchip_from, sizeof *f * (size_t)(s + 2));
    if (f)
        p->offchip_from = f;
    t = popci_realloc(p->offchip_to, sizeof *t * (size_t)(s + 2));
    if (t)
        p->offchip_to = t;
    p->pub.offchip_from = p->offchip_from;
    p->pub.offchip_to = p->offchip_to;
    if (!f || !t)
        return oom();
    p->offchip_from[s] = p->offchip_to[s] = -1;
    return POPC_OK;
}

/* Segment of each schedule position: a new one starts where the phase
** changes, and where the backward pass starts when it has phases of its
** own (useSeparateBackwardPhase; else the last forward phase and the
** first backward phase are one); position n is a segment of its own (the
** end of the micro-batch). */
static void segments(const popci_plan *p, int *seg)
{
    int n = p->pub.n_nodes, nf = p->pub.n_forward;
    int sep = p->strategy.separate_backward;

    for (int k = 0; k < n; k++)
        seg[k] = k == 0 ? 0
                 : seg[k - 1] + ((k == nf && sep) ||
                                 p->nodes[k].phase != p->nodes[k - 1].phase);
    seg[n] = n > 0 ? seg[n - 1] + 1 : 0;
}

/* Slot s is read at position k (n: kept to the end of the micro-batch). */
static void visit(popci_plan *p, const int *seg, int each, int s, int k)
{
    const popc_plan_slot *sl = &p->slots[s];
    int n = p->pub.n_nodes, nf = p->pub.n_forward, f = sl->first_use, same;

    if (sl->kind != POPC_SLOT_ACT || f < 0 || p->offchip_to[s] >= 0)
        return;
    if (each)
        same = seg[k] == seg[f];
    else if (k == n)
        same = f >= nf; /* backward results are not forward activations */
    else
        same = (k >= nf) == (f >= nf);
    if (same)
        p->offchip_from[s] = k;
    else
        p->offchip_to[s] = k;
}

static popc_status find_gaps(popci_plan *p)
{
    int n = p->pub.n_nodes, ns = p->pub.n_slots;
    int each = p->strategy.liveness == POPC_LIVENESS_OFF_CHIP_AFTER_EACH_PHASE;
    int *seg = popci_malloc(sizeof(int) * (size_t)(n + 1));
    popc_status st = POPC_OK;

    p->offchip_from = popci_malloc(sizeof(int) * (size_t)(ns + 1));
    p->offchip_to = popci_malloc(sizeof(int) * (size_t)(ns + 1));
    if (!seg || !p->offchip_from || !p->offchip_to) {
        st = oom();
        goto done;
    }
    segments(p, seg);
    for (int s = 0; s < ns; s++) {
        p->offchip_from[s] = p->slots[s].kind == POPC_SLOT_ACT ?
                                 p->slots[s].first_use : -1;
        p->offchip_to[s] = -1;
    }
    /* from: last use in the producing segment (pass); to: the next use */
    for (int k = 0; k < n; k++) {
        const popc_plan_node *pn = &p->nodes[k];
        for (int j = 0; j < pn->n_inputs; j++)
            if (pn->inputs[j] >= 0)
                visit(p, seg, each, pn->inputs[j], k);
    }
    for (int s = 0; s < ns; s++)
        if (p->slots[s].last_use == n)
            visit(p, seg, each, s, n);
    for (int s = 0; s < ns; s++) {
        if (p->offchip_to[s] < 0) {
            p->offchip_from[s] = -1;
            continue;
        }
        p->offchip_bytes += popci_plan_slot_bytes(p, s);
    }
    p->pub.offchip_from = p->offchip_from;
    p->pub.offchip_to = p->offchip_to;
done:
    free(seg);
    return st;
}

/* Peak of the live activation bytes over the schedule, gaps excluded. */
static popc_status onchip_peak(popci_plan *p)
{
    int n = p->pub.n_nodes;
    int64_t *add = popci_calloc((size_t)n + 1, sizeof *add);
    int64_t *rem = popci_calloc((size_t)n + 1, sizeof *rem);
    int64_t cur = 0, peak = 0;

    if (!add || !rem) {
        free(add);
        free(rem);
        return oom();
    }
    for (int s = 0; s < p->pub.n_slots; s++) {
        const popc_plan_slot *sl = &p->slots[s];
        int64_t b = (int64_t)popci_plan_slot_bytes(p, s);

        if (sl->kind != POPC_SLOT_ACT || sl->first_use < 0 ||
            sl->first_use >= n)
            continue;
        add[sl->first_use] += b;
        if (sl->last_use < n)
            rem[sl->last_use] += b;
        if (p->offchip_to && p->offchip_to[s] >= 0) {
            rem[p->offchip_from[s]] += b;
            if (p->offchip_to[s] < n)
                add[p->offchip_to[s]] += b;
            else
                add[n] += b; /* back for the end: not at any node */
        }
    }
    for (int k = 0; k < n; k++) {
        cur += add[k];
        if (cur > peak)
            peak = cur;
        cur -= rem[k];
    }
    p->onchip_peak = (size_t)peak;
    free(add);
    free(rem);
    return POPC_OK;
}

popc_status popci_offchip_plan(popci_plan *p)
{
    int n = p->pub.n_nodes, nf = p->pub.n_forward;
    popc_status st;

    drop_arrays(p);
    p->stored_bytes = 0;
    p->offchip_bytes = 0;
    for (int s = 0; p->pub.training && s < p->pub.n_slots; s++) {
        const popc_plan_slot *sl = &p->slots[s];
        if (sl->kind == POPC_SLOT_ACT && sl->first_use >= 0 &&
            sl->first_use < nf && sl->last_use >= nf)
            p->stored_bytes += popci_plan_slot_bytes(p, s);
    }
    if (popci_strategy_phased(&p->strategy) &&
        p->strategy.liveness != POPC_LIVENESS_ALWAYS_LIVE && n > 0 &&
        (st = find_gaps(p)) != POPC_OK) {
        drop_arrays(p);
        return st;
    }
    return onchip_peak(p);
}

popc_status popci_offchip_refigure(popci_plan *p)
{
    p->offchip_bytes = 0;
    for (int s = 0; p->offchip_to && s < p->pub.n_slots; s++)
        if (p->offchip_to[s] >= 0)
            p->offchip_bytes += popci_plan_slot_bytes(p, s);
    return onchip_peak(p);
}
