/* stages.c - stages, IPUs and phases of a graph's nodes for the execution
** strategy (docs/semantics.md §6), and the phase order of a schedule.
**
** Resolution runs on the plan's clone of the forward graph, in the order
** the ops were added (PopTorch resolves blocks at trace time), and writes
** the result into the node annotations, so every later step (autodiff,
** recomputation, the executor, backends) reads plain ipu / stage / phase.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/layer/alloc.h"
#include "core/layer/options.h"
#include "strategy/strategy_priv.h"

static popc_status oom(void)
{
    return popc_set_error(POPC_ENOMEM, "compile: out of memory while "
                          "placing stages");
}

popci_strategy popci_strategy_from_options(const popc_options *o)
{
    popci_strategy s;

    s.kind = (int)popci_opt_int(o, POPCI_O_setExecutionStrategy);
    s.auto_stage =
        (int)popci_opt_int(o, POPCI_O_setExecutionStrategy_autoStage);
    s.liveness =
        (int)popci_opt_int(o, POPCI_O_setExecutionStrategy_tensorsLiveness);
    s.separate_backward = popci_opt_bool(
        o, POPCI_O_setExecutionStrategy_useSeparateBackwardPhase);
    return s;
}

int popci_strategy_phased(const popci_strategy *s)
{
    return s->kind == POPC_EXEC_SERIAL_PHASED ||
           s->kind == POPC_EXEC_PARALLEL_PHASED;
}

static const char *liveness_name(int l)
{
    switch (l) {
    case POPC_LIVENESS_OFF_CHIP_AFTER_FWD: return "OffChipAfterFwd";
    case POPC_LIVENESS_OFF_CHIP_AFTER_FWD_NO_OVERLAP:
        return "OffChipAfterFwdNoOverlap";
    case POPC_LIVENESS_OFF_CHIP_AFTER_EACH_PHASE:
        return "OffChipAfterEachPhase";
    default: return "AlwaysLive";
    }
}

/* ---- stages and IPUs ---------------------------------------------------- */

/* AutoIncrement: stage of each block id in order of first use. */
typedef struct stage_map {
    const char **ids;          /* borrowed from the node annotations */
    int n, cap;
} stage_map;

static popc_status auto_stage(stage_map *m, const char *id, int *stage)
{
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->ids[i], id) == 0) {
            *stage = i + 1;
            return POPC_OK;
        }
    if (m->n == m->cap) {
        int cap = m->cap ? m->cap * 2 : 16;
        const char **ids = popci_realloc(m->ids, sizeof *ids * (size_t)cap);
        if (!ids)
            return oom();
        m->ids = ids;
        m->cap = cap;
    }
    m->ids[m->n++] = id;
    *stage = m->n;
    return POPC_OK;
}

static popc_status check_stage_order(const popc_graph *g,
                                     const popci_strategy *s,
                                     const char *from_ipu);

static popc_status resolve_stages(popc_graph *g, const popci_strategy *s)
{
    int incr = s->auto_stage == POPC_AUTOSTAGE_AUTO_INCREMENT;
    int phased = popci_strategy_phased(s);
    int n = popc_graph_n_nodes(g);
    stage_map map = {NULL, 0, 0};
    char *from_ipu = popci_calloc((size_t)n + 1, 1);
    popc_status st = POPC_OK;

    if (!from_ipu)
        return oom();
    for (int k = 0; k < n && st == POPC_OK; k++) {
        popc_annotations a = popc_graph_node_annotations(g, k);
        int stage = 0, ipu = 0;

        if (a.stage >= 0) {
            stage = a.stage;
            ipu = a.ipu >= 0 ? a.ipu : stage;
        } else if (!a.block || phased) {
            /* before any block (phased: stages come with the phases) */
            ipu = a.ipu >= 0 ? a.ipu : 0;
            stage = incr && !phased ? 0 : ipu;
            from_ipu[k] = !incr;
        } else if (incr) {
            /* the id is the node's: it lives as long as the graph */
            if ((st = auto_stage(&map, a.block, &stage)) != POPC_OK)
                break;
            ipu = a.ipu >= 0 ? a.ipu : stage;
        } else {
            if (a.ipu < 0) {
                st = popc_set_error(POPC_EINVAL, "poptorch.AutoStage."
                                    "SameAsIpu was selected but no IPU was "
                                    "specified for block %s", a.block);
                break;
            }
            stage = ipu = a.ipu;
            from_ipu[k] = 1;
        }
        popci_graph_place_node(g, k, ipu, stage, a.phase);
    }
    if (st == POPC_OK)
        st = check_stage_order(g, s, from_ipu);
    free(map.ids);
    free(from_ipu);
    return st;
}

/* Who node k is in messages: its block, else its name. */
static void who(const popc_graph *g, int k, char *buf, size_t size)
{
    const char *block = popc_graph_node_annotations(g, k).block;

    if (block)
        snprintf(buf, size, "block %s", block);
    else
        snprintf(buf, size, "node '%s'", popc_graph_node_name(g, k));
}

/* A pipeline runs stage s of a micro-batch before stage s + 1: a node
** cannot read what a later stage computes. Under SameAsIpu the stage is
** the IPU, so blocks on IPUs 0, 1, 0 give stage ids 0, 1, 0 and the third
** block would read the second's result in an earlier stage; PopTorch
** numbers such a model that way and it cannot be pipelined (semantics
** §6). AutoIncrement and explicit stages can return to an IPU. from_ipu
** marks the nodes whose stage SameAsIpu took from their IPU. */
static popc_status check_stage_order(const popc_graph *g,
                                     const popci_strategy *s,
                                     const char *from_ipu)
{
    if (s->kind != POPC_EXEC_PIPELINED)
        return POPC_OK;
    for (int k = 0; k < popc_graph_n_nodes(g); k++) {
        popc_annotations x = popc_graph_node_annotations(g, k);

        for (int j = 0; j < popc_graph_node_n_inputs(g, k); j++) {
            int v = popc_graph_node_input(g, k, j), p;
            popc_annotations from;
            char a[300], b[300];

            if (v < 0 || (p = popc_graph_value_producer(g, v)) < 0)
                continue;
            from = popc_graph_node_annotations(g, p);
            if (from.stage <= x.stage)
                continue;
            if (from_ipu[k] && from_ipu[p]) {
                who(g, k, a, sizeof a);
                who(g, p, b, sizeof b);
                return popc_set_error(
                    POPC_EINVAL, "poptorch.AutoStage.SameAsIpu gives %s "
                    "(IPU %d) stage id %d, but it reads '%s' from %s in the "
                    "later stage %d: with SameAsIpu the stage ids must not "
                    "go back along the model; use AutoStage.AutoIncrement "
                    "or explicit stages to return to an IPU", a,
                    x.ipu, x.stage, popc_graph_value_name(g, v), b,
                    from.stage);
            }
            return popc_set_error(
                POPC_EINVAL, "node '%s' is in pipeline stage %d but reads "
                "'%s', which node '%s' computes in the later stage %d; a "
                "stage may only use values of itself and earlier stages",
                popc_graph_node_name(g, k), x.stage,
                popc_graph_value_name(g, v), popc_graph_node_name(g, p),
                from.stage);
        }
    }
    return POPC_OK;
}

/* ---- phases ------------------------------------------------------------- */

static popc_status check_liveness(const popci_strategy *s)
{
    int only_serial = s->liveness == POPC_LIVENESS_OFF_CHIP_AFTER_EACH_PHASE ||
                      s->liveness ==
                          POPC_LIVENESS_OFF_CHIP_AFTER_FWD_NO_OVERLAP;

    if (s->liveness != POPC_LIVENESS_ALWAYS_LIVE && !popci_strategy_phased(s))
        return popc_set_error(POPC_EINVAL, "setExecutionStrategy."
                              "tensorsLiveness %s: tensor liveness applies "
                              "to SerialPhasedExecution and "
                              "ParallelPhasedExecution only; set "
                              "setExecutionStrategy to one of them or leave "
                              "the liveness at AlwaysLive",
                              liveness_name(s->liveness));
    if (s->separate_backward && !popci_strategy_phased(s))
        return popc_set_error(POPC_EINVAL, "setExecutionStrategy."
                              "useSeparateBackwardPhase applies to "
                              "SerialPhasedExecution and "
                              "ParallelPhasedExecution only; set "
                              "setExecutionStrategy to one of them or leave "
                              "it false");
    if (only_serial && s->kind == POPC_EXEC_PARALLEL_PHASED)
        return popc_set_error(POPC_EINVAL, "This is only supported for "
                              "serial phase execution (setExecutionStrategy."
                              "tensorsLiveness %s with "
                              "ParallelPhasedExecution)",
                              liveness_name(s->liveness));
    return POPC_OK;
}

/* PopTorch numbers phases apart when tensors move off chip between them
** (Compiler::setActiveIpu); the parity rule applies to these numbers. */
static int effective_phase(const popci_strategy *s, int phase)
{
    if (s->liveness == POPC_LIVENESS_OFF_CHIP_AFTER_EACH_PHASE)
        return phase * 4;
    if (s->liveness == POPC_LIVENESS_OFF_CHIP_AFTER_FWD_NO_OVERLAP)
        return phase * 2;
    return phase;
}

/* A node without a phase joins the latest phase of what it reads. */
static popc_status resolve_phases(popc_graph *g, const popci_strategy *s)
{
    int n = popc_graph_n_nodes(g), any = 0, *order = NULL;
    popc_status st;

    for (int k = 0; k < n; k++)
        any |= popc_graph_node_annotations(g, k).phase >= 0;
    if (!any)
        return popc_set_error(POPC_EINVAL, "There is currently no AutoStage "
                              "for PhasedExecution, please explicitly specify "
                              "the phases (popc_graph_set_stages with a "
                              "phase per stage, or phase annotations)");
    if (!(order = popci_malloc(sizeof *order * (size_t)(n + 1))))
        return oom();
    if ((st = popc_graph_topo_order(g, order)) != POPC_OK)
        goto done;
    for (int i = 0; i < n; i++) {
        int k = order[i], inherited = 0, e;
        popc_annotations x = popc_graph_node_annotations(g, k);
        const char *name = popc_graph_node_name(g, k);

        for (int j = 0; j < popc_graph_node_n_inputs(g, k); j++) {
            int v = popc_graph_node_input(g, k, j), p, from;
            if (v < 0 || (p = popc_graph_value_producer(g, v)) < 0)
                continue;
            from = popc_graph_node_annotations(g, p).phase;
            if (from > inherited)
                inherited = from;
            if (x.phase >= 0 && from > x.phase) {
                st = popc_set_error(POPC_EINVAL, "node '%s' is in phase %d "
                                    "but reads '%s', which node '%s' "
                                    "computes in the later phase %d; a phase "
                                    "may only use values of itself and "
                                    "earlier phases", name, x.phase,
                                    popc_graph_value_name(g, v),
                                    popc_graph_node_name(g, p), from);
                goto done;
            }
        }
        if (x.phase < 0) {
            x.phase = inherited;
            popci_graph_place_node(g, k, x.ipu, x.stage, x.phase);
        }
        e = effective_phase(s, x.phase);
        if (s->kind == POPC_EXEC_PARALLEL_PHASED && e % 2 != x.ipu % 2) {
            st = popc_set_error(POPC_EINVAL, "When phases are executed in "
                                "parallel: even phases must run on even IPUs "
                                "and odd phases on odd IPUs (node '%s': "
                                "phase %d on IPU %d)", name, e, x.ipu);
            goto done;
        }
    }
done:
    free(order);
    return st;
}

popc_status popci_stages_resolve(popc_graph *g, const popci_strategy *s)
{
    popc_status st;

    if ((st = check_liveness(s)) != POPC_OK ||
        (st = resolve_stages(g, s)) != POPC_OK)
        return st;
    if (popci_strategy_phased(s))
        return resolve_phases(g, s);
    return POPC_OK;
}

int popci_plan_execution_phases(const popci_plan *p)
{
    const popci_strategy *s = &p->strategy;
    int max = 0;

    if (!popci_strategy_phased(s))
        return 0;
    for (int k = 0; k < p->pub.n_nodes; k++) {
        int e = effective_phase(s, p->nodes[k].phase);
        if (e > max)
            max = e;
    }
    if (s->liveness != POPC_LIVENESS_ALWAYS_LIVE)
        return max + 1 + 3;
    return max + 1 + (s->separate_backward ? 1 : 0);
}

int popci_plan_execution_phase_ids(const popci_plan *p, int *ids, int max)
{
    int n = 0;

    if (!popci_strategy_phased(&p->strategy))
        return 0;
    for (int k = 0; k < p->pub.n_forward; k++) {
        int e = effective_phase(&p->strategy, p->nodes[k].phase), at = n;

        for (int i = 0; i < n; i++)
            if (ids[i] >= e) {
                at = i;
                break;
            }
        if (at < n && ids[at] == e)
            continue;
        if (n == max)
            return -1;
        memmove(ids + at + 1, ids + at, sizeof *ids * (size_t)(n - at));
        ids[at] = e;
        n++;
    }
    return n;
}

int popci_plan_pipeline_stages(const popci_plan *p)
{
    int f = p->pub.n_forward > 0 ? 1 : 0;

    for (int i = 1; i < p->pub.n_forward; i++)
        if (p->nodes[i].ipu != p->nodes[i - 1].ipu)
            f++;
    return f;
}

/* ---- phase order of the schedule ---------------------------------------- */

/* A binary min-heap of schedule positions by (key, position). */
typedef struct heap {
    int *a, n;
    const int *key;
} heap;

static int before(const heap *h, int x, int y)
{
    return h->key[x] != h->key[y] ? h->key[x] < h->key[y] : x < y;
}

static void heap_push(heap *h, int x)
{
    int i = h->n++;

    while (i > 0 && before(h, x, h->a[(i - 1) / 2])) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = x;
}

static int heap_pop(heap *h)
{
    int top = h->a[0], x = h->a[--h->n], i = 0;

    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && before(h, h->a[c + 1], h->a[c]))
            c++;
        if (!before(h, h->a[c], x))
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n > 0)
        h->a[i] = x;
    return top;
}

/* Reorder positions [lo, hi) of order by key, keeping dependencies. */
static popc_status order_region(const popc_graph *g, int *order, int lo,
                                int hi, int descending, const int *pos)
{
    int n = hi - lo;
    int *key = popci_malloc(sizeof(int) * (size_t)(n + 1));
    int *indeg = popci_calloc((size_t)n + 1, sizeof(int));
    int *start = popci_calloc((size_t)n + 2, sizeof(int));
    int *succ = NULL, *out = popci_malloc(sizeof(int) * (size_t)(n + 1));
    heap h = {popci_malloc(sizeof(int) * (size_t)(n + 1)), 0, NULL};
    int n_edges = 0, k = 0;
    popc_status st = POPC_OK;

    if (!key || !indeg || !start || !out || !h.a) {
        st = oom();
        goto done;
    }
    /* edges producer -> consumer inside the region, counted then filled */
    for (int pass = 0; pass < 2; pass++) {
        int *fill = pass ? indeg : NULL;

        for (int i = 0; i < n; i++) {
            int x = order[lo + i];

            for (int j = 0; j < popc_graph_node_n_inputs(g, x); j++) {
                int v = popc_graph_node_input(g, x, j), p, at;
                if (v < 0 || (p = popc_graph_value_producer(g, v)) < 0)
                    continue;
                at = pos[p] - lo;
                if (at < 0 || at >= n)
                    continue;
                if (!pass)
                    start[at + 1]++;
                else
                    succ[start[at] + fill[at]++] = i;
            }
        }
        if (!pass) {
            for (int i = 0; i < n; i++)
                start[i + 1] += start[i];
            n_edges = start[n];
            if (!(succ = popci_malloc(sizeof(int) * (size_t)(n_edges + 1)))) {
                st = oom();
                goto done;
            }
        }
    }
    /* indeg held fill counts (out-degrees): recount in-degrees */
    memset(indeg, 0, sizeof(int) * (size_t)n);
    for (int e = 0; e < n_edges; e++)
        indeg[succ[e]]++;
    for (int i = 0; i < n; i++) {
        int ph = popc_graph_node_annotations(g, order[lo + i]).phase;
        ph = ph < 0 ? 0 : ph;
        key[i] = descending ? -ph : ph;
    }
    h.key = key;
    for (int i = 0; i < n; i++)
        if (indeg[i] == 0)
            heap_push(&h, i);
    while (h.n > 0) {
        int i = heap_pop(&h);
        out[k++] = order[lo + i];
        for (int e = start[i]; e < start[i + 1]; e++)
            if (--indeg[succ[e]] == 0)
                heap_push(&h, succ[e]);
    }
    if (k != n) {
        st = popc_set_error(POPC_EINTERNAL, "compile: the phase order of the "
                            "schedule lost %d nodes", n - k);
        goto done;
    }
    memcpy(order + lo, out, sizeof(int) * (size_t)n);
done:
    free(key);
    free(indeg);
    free(start);
    free(succ);
    free(out);
    free(h.a);
    return st;
}

popc_status popci_stages_order(const popc_graph *g, const popci_strategy *s,
                               int *order, int n_forward, int n_order)
{
    int n = popc_graph_n_nodes(g), *pos;
    popc_status st;

    if (!popci_strategy_phased(s) || n_order == 0)
        return POPC_OK;
    if (!(pos = popci_malloc(sizeof(int) * (size_t)(n + 1))))
        return oom();
    for (int i = 0; i < n; i++)
        pos[i] = -1;
    for (int i = 0; i < n_order; i++)
        pos[order[i]] = i;
    st = order_region(g, order, 0, n_forward, 0, pos);
    if (st == POPC_OK)
        st = order_region(g, order, n_forward, n_order, 1, pos);
    free(pos);
    return st;
}
