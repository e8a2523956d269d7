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

#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"
#include "core/strategies/strategy_priv.h"

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

static int is_checkpoint(const popci_node *x)
{
    return x->annot.recompute > 0 ||
           (x->def && x->def->role == POPC_ROLE_CHECKPOINT);
}

/* A forward activation the backward pass may not recompute. */
static int keep_node(popc_graph *g, int n)
{
    const popc_op_def *def = popci_graph_node_def(g, n);

    return is_checkpoint(&g->nodes[n]) || !def ||
           (def->flags & (POPC_OP_RANDOM | POPC_OP_HOST | POPC_OP_NOFOLD));
}

static void mark_stored(rc *c)
{
    popc_graph *g = c->g;

    for (int v = 0; v < c->nv; v++) {
        int p = g->values[v].producer;
        c->stored[v] = p < 0 || p >= c->n_fwd || keep_node(g, p);
    }
    for (int i = 0; i < g->n_outputs; i++)
        c->stored[g->outputs[i]] = 1;
    for (int i = 0; i < g->n_updates; i++)
        c->stored[g->updates[i].value] = 1;
    /* values crossing a pipeline stage or a phase stay where they arrive */
    for (int n = 0; n < c->n_fwd; n++) {
        const popci_node *x = &g->nodes[n];
        for (int j = 0; j < x->n_inputs; j++) {
            int v = x->inputs[j], p;
            if (v < 0 || v >= c->nv || (p = g->values[v].producer) < 0 ||
                p >= c->n_fwd)
                continue;
            if (g->nodes[p].annot.ipu != x->annot.ipu ||
                g->nodes[p].annot.phase != x->annot.phase)
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
    popci_node x = g->nodes[n]; /* shallow: g->nodes may move below */
    int *in = popci_malloc(sizeof(int) * (size_t)(x.n_inputs + 1));
    int *out = popci_malloc(sizeof(int) * (size_t)(x.n_outputs + 1));
    size_t len = strlen(x.name) + 16;
    char *name = popci_malloc(len);
    popci_annot a = x.annot;
    popc_status st;

    if (!in || !out || !name) {
        st = oom();
        goto done;
    }
    for (int j = 0; j < x.n_inputs; j++)
        in[j] = needs_clone(c, x.inputs[j]) ? c->clone_of[x.inputs[j]]
                                            : x.inputs[j];
    snprintf(name, len, "%s/recompute", x.name);
    a.recompute = -1;
    st = popci_graph_add_node_ex(g, x.domain, x.op, x.version, in,
                                 x.n_inputs, out, x.n_outputs, x.attrs,
                                 x.n_attrs, name, &a, 1, 1, NULL);
    if (st != POPC_OK) {
        st = popc_set_error(st, "recomputing node '%s': %s", x.name,
                            popc_last_error());
        goto done;
    }
    /* same computation: the forward node's shapes (inferred for training) */
    for (int j = 0; j < x.n_outputs; j++) {
        if (x.outputs[j] < 0 || out[j] < 0)
            continue;
        g->values[out[j]].info = g->values[x.outputs[j]].info;
        g->values[out[j]].info.data = NULL;
        if (x.outputs[j] < c->nv)
            c->clone_of[x.outputs[j]] = out[j];
    }
    c->cloned[n] = 1;
done:
    free(in);
    free(out);
    free(name);
    return st;
}

/* Make sure value v has a recomputed copy (depth first, no recursion). */
static popc_status ensure_clone(rc *c, int v)
{
    popc_status st;

    c->n_stack = 0;
    if ((st = push(c, c->g->values[v].producer)) != POPC_OK)
        return st;
    while (c->n_stack > 0) {
        int n = c->stack[c->n_stack - 1], ready = 1;
        const popci_node *x = &c->g->nodes[n];

        if (c->cloned[n]) {
            c->n_stack--;
            continue;
        }
        for (int j = 0; j < x->n_inputs; j++) {
            int u = x->inputs[j], p;
            if (!needs_clone(c, u))
                continue;
            p = c->g->values[u].producer;
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

    for (int k = n_fwd; k < g->n_nodes; k++) {
        size_t len = strlen(g->nodes[k].name);
        n += len > nt && strcmp(g->nodes[k].name + len - nt, tail) == 0;
    }
    return n;
}

popc_status popci_recompute(popc_graph *g, int n_fwd)
{
    rc c;
    int nn = g->n_nodes, any = 0, *order = NULL;
    popc_status st = POPC_OK;

    for (int n = 0; n < n_fwd && !any; n++)
        any = is_checkpoint(&g->nodes[n]);
    if (!any || nn == n_fwd)
        return POPC_OK;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.n_fwd = n_fwd;
    c.nv = g->n_values;
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
    if ((st = popci_graph_topo(g, order)) != POPC_OK)
        goto done;
    for (int i = 0; i < nn; i++) {
        int b = order[i];

        if (b < n_fwd)
            continue;
        for (int j = 0; j < g->nodes[b].n_inputs; j++) {
            int v = g->nodes[b].inputs[j];
            if (!needs_clone(&c, v))
                continue;
            if (c.clone_of[v] < 0 && (st = ensure_clone(&c, v)) != POPC_OK)
                goto done;
            g->nodes[b].inputs[j] = c.clone_of[v];
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
