/* recompute.c - recomputation: the backward pass recomputes forward
** activations from checkpoints instead of keeping them from the forward
** pass (PopTorch's recomputationCheckpoint; see strategy_priv.h for what
** is stored).
**
** The transform runs on the plan graph after autodiff. Backward nodes are
** visited in topological order; every forward activation one of them reads
** that is not stored is replaced by the output of a clone of its producer,
** whose own inputs are mapped the same way, so a clone chain starts at
** stored values only. Clones are created in the order the backward pass
** needs them; the schedule (lowest id first among ready nodes) then runs
** each chain just before its first reader, which keeps few recomputed
** values alive at once. A clone runs the same kernel on the same inputs as
** its forward node, so results are bitwise unchanged; random, host and
** side-effect ops are never cloned.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/layer/alloc.h"
#include "core/layer/graph.h"
#include "core/layer/strategy.h"
#include "strategy/strategy_priv.h"

typedef struct rc {
    popc_graph *g;
    int n_fwd, nv;             /* forward nodes, values before the pass */
    unsigned char *stored;     /* per value < nv */
    int *clone_of;             /* per value < nv: its recomputed value */
    unsigned char *cloned;     /* per forward node */
    int *stack, n_stack, cap_stack;
} rc;

static popc_status oom(void)
{
    return popc_set_error(POPC_ENOMEM, "compile: out of memory while "
                          "planning recomputation");
}

/* def: node n's op (popci_graph_node_def_c), may be NULL */
static int is_checkpoint(const popc_graph *g, int n, const popc_op_def *def)
{
    return popc_graph_node_annotations(g, n).recompute > 0 ||
           (def && def->role == POPC_ROLE_CHECKPOINT);
}

/* A forward activation the backward pass may not recompute. */
static int keep_node(const popc_graph *g, int n)
{
    const popc_op_def *def = popci_graph_node_def_c(g, n);

    return is_checkpoint(g, n, def) || !def ||
           (def->flags & (POPC_OP_RANDOM | POPC_OP_HOST | POPC_OP_NOFOLD));
}

static void mark_stored(rc *c)
{
    popc_graph *g = c->g;

    for (int v = 0; v < c->nv; v++) {
        int p = popc_graph_value_producer(g, v);
        c->stored[v] = p < 0 || p >= c->n_fwd || keep_node(g, p);
    }
    for (int i = 0; i < popc_graph_n_outputs(g); i++)
        c->stored[popc_graph_output(g, i)] = 1;
    for (int i = 0; i < popc_graph_n_updates(g); i++) {
        int value = -1;
        if (popc_graph_update(g, i, NULL, &value) == POPC_OK)
            c->stored[value] = 1;
    }
    /* values crossing a pipeline stage or a phase stay where they arrive */
    for (int n = 0; n < c->n_fwd; n++) {
        popc_annotations x = popc_graph_node_annotations(g, n);
        for (int j = 0; j < popc_graph_node_n_inputs(g, n); j++) {
            int v = popc_graph_node_input(g, n, j), p;
            popc_annotations from;
            if (v < 0 || v >= c->nv ||
                (p = popc_graph_value_producer(g, v)) < 0 || p >= c->n_fwd)
                continue;
            from = popc_graph_node_annotations(g, p);
            if (from.ipu != x.ipu || from.phase != x.phase)
                c->stored[v] = 1;
        }
    }
}

static int needs_clone(const rc *c, int v)
{
    return v >= 0 && v < c->nv && !c->stored[v];
}

static popc_status push(rc *c, int n)
{
    if (c->n_stack == c->cap_stack) {
        int cap = c->cap_stack ? c->cap_stack * 2 : 64;
        int *s = popci_realloc(c->stack, sizeof *s * (size_t)cap);
        if (!s)
            return oom();
        c->stack = s;
        c->cap_stack = cap;
    }
    c->stack[c->n_stack++] = n;
    return POPC_OK;
}

/* Add the clone of forward node n, whose recomputed inputs exist. */
static popc_status add_clone(rc *c, int n)
{
    popc_graph *g = c->g;
    int n_in = popc_graph_node_n_inputs(g, n);
    int n_out = popc_graph_node_n_outputs(g, n);
    int *in = popci_malloc(sizeof(int) * (size_t)(n_in + 1));
    int *out = popci_malloc(sizeof(int) * (size_t)(n_out + 1));
    /* copied: the node's name may move as the clone is added */
    char *fwd = popci_strdup(popc_graph_node_name(g, n));
    size_t len = fwd ? strlen(fwd) + 16 : 0;
    char *name = fwd ? popci_malloc(len) : NULL;
    popc_status st;

    if (!in || !out || !name) {
        st = oom();
        goto done;
    }
    for (int j = 0; j < n_in; j++) {
        int v = popc_graph_node_input(g, n, j);
        in[j] = needs_clone(c, v) ? c->clone_of[v] : v;
    }
    snprintf(name, len, "%s/recompute", fwd);
    st = popci_graph_clone_node(g, n, in, name, out);
    if (st != POPC_OK) {
        st = popc_set_error(st, "recomputing node '%s': %s", fwd,
                            popc_last_error());
        goto done;
    }
    for (int j = 0; j < n_out; j++) {
        int v = popc_graph_node_output(g, n, j);
        if (v >= 0 && out[j] >= 0 && v < c->nv)
            c->clone_of[v] = out[j];
    }
    c->cloned[n] = 1;
done:
    free(in);
    free(out);
    free(fwd);
    free(name);
    return st;
}

/* Make sure value v has a recomputed copy (depth first, no recursion). */
static popc_status ensure_clone(rc *c, int v)
{
    popc_status st;

    c->n_stack = 0;
    if ((st = push(c, popc_graph_value_producer(c->g, v))) != POPC_OK)
        return st;
    while (c->n_stack > 0) {
        int n = c->stack[c->n_stack - 1], ready = 1;

        if (c->cloned[n]) {
            c->n_stack--;
            continue;
        }
        for (int j = 0; j < popc_graph_node_n_inputs(c->g, n); j++) {
            int u = popc_graph_node_input(c->g, n, j), p;
            if (!needs_clone(c, u))
                continue;
            p = popc_graph_value_producer(c->g, u);
            if (c->cloned[p])
                continue;
            ready = 0;
            if ((st = push(c, p)) != POPC_OK)
                return st;
        }
        if (!ready)
            continue;
        c->n_stack--;
        if ((st = add_clone(c, n)) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

int popci_recompute_count(const popc_graph *g, int n_fwd)
{
    static const char tail[] = "/recompute";
    size_t nt = sizeof tail - 1;
    int n = 0;

    for (int k = n_fwd; k < popc_graph_n_nodes(g); k++) {
        const char *name = popc_graph_node_name(g, k);
        size_t len = strlen(name);
        n += len > nt && strcmp(name + len - nt, tail) == 0;
    }
    return n;
}

popc_status popci_recompute(popc_graph *g, int n_fwd)
{
    rc c;
    int nn = popc_graph_n_nodes(g), any = 0, *order = NULL;
    popc_status st = POPC_OK;

    for (int n = 0; n < n_fwd && !any; n++)
        any = is_checkpoint(g, n, popci_graph_node_def_c(g, n));
    if (!any || nn == n_fwd)
        return POPC_OK;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.n_fwd = n_fwd;
    c.nv = popc_graph_n_values(g);
    c.stored = popci_malloc((size_t)c.nv + 1);
    c.clone_of = popci_malloc(sizeof(int) * (size_t)(c.nv + 1));
    c.cloned = popci_calloc((size_t)n_fwd + 1, 1);
    order = popci_malloc(sizeof(int) * (size_t)(nn + 1));
    if (!c.stored || !c.clone_of || !c.cloned || !order) {
        st = oom();
        goto done;
    }
    for (int v = 0; v < c.nv; v++)
        c.clone_of[v] = -1;
    mark_stored(&c);
    if ((st = popc_graph_topo_order(g, order)) != POPC_OK)
        goto done;
    for (int i = 0; i < nn; i++) {
        int b = order[i];

        if (b < n_fwd)
            continue;
        for (int j = 0; j < popc_graph_node_n_inputs(g, b); j++) {
            int v = popc_graph_node_input(g, b, j);
            if (!needs_clone(&c, v))
                continue;
            if (c.clone_of[v] < 0 && (st = ensure_clone(&c, v)) != POPC_OK)
                goto done;
            popci_graph_set_node_input(g, b, j, c.clone_of[v]);
        }
    }
done:
    free(c.stored);
    free(c.clone_of);
    free(c.cloned);
    free(c.stack);
    free(order);
    return st;
}
