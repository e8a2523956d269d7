/* topo.c - consumer lists and topological order of a graph.
**
** The order is Kahn's algorithm with a min-heap on node ids, so a graph
** built in dependency order (the usual case) comes back in insertion order
** and any order is deterministic.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"

popc_status popci_consumers_build(const popc_graph *g, popci_consumers *c)
{
    int total = 0, *fill = NULL;

    c->start = popci_calloc((size_t)g->n_values + 1, sizeof *c->start);
    for (int n = 0; n < g->n_nodes; n++)
        total += g->nodes[n].n_inputs;
    c->idx = popci_malloc(((size_t)total + 1) * sizeof *c->idx);
    fill = popci_calloc((size_t)g->n_values + 1, sizeof *fill);
    if (!c->start || !c->idx || !fill) {
        free(fill);
        popci_consumers_free(c);
        return popc_set_error(POPC_ENOMEM, "graph: out of memory");
    }
    for (int n = 0; n < g->n_nodes; n++)
        for (int i = 0; i < g->nodes[n].n_inputs; i++) {
            int v = g->nodes[n].inputs[i];
            if (v >= 0 && v < g->n_values)
                c->start[v + 1]++;
        }
    for (int v = 0; v < g->n_values; v++)
        c->start[v + 1] += c->start[v];
    for (int n = 0; n < g->n_nodes; n++)
        for (int i = 0; i < g->nodes[n].n_inputs; i++) {
            int v = g->nodes[n].inputs[i];
            if (v >= 0 && v < g->n_values)
                c->idx[c->start[v] + fill[v]++] = n;
        }
    free(fill);
    return POPC_OK;
}

void popci_consumers_free(popci_consumers *c)
{
    free(c->start);
    free(c->idx);
    c->start = c->idx = NULL;
}

static void heap_push(int *h, int *n, int x)
{
    int i = (*n)++;

    while (i > 0 && h[(i - 1) / 2] > x) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = x;
}

static int heap_pop(int *h, int *n)
{
    int top = h[0], x = h[--(*n)], i = 0;

    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= x)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = x;
    return top;
}

/* Names the nodes on cycles: of the nodes Kahn could not emit, drop those
** that only feed others (peeling from the sinks); what stays is on a cycle
** or between two. */
static popc_status cycle_error(const popc_graph *g, const popci_consumers *c,
                               int *pending)
{
    int *outdeg = popci_calloc((size_t)g->n_nodes + 1, sizeof *outdeg);
    int *stack = popci_malloc(((size_t)g->n_nodes + 1) * sizeof *stack);
    int n_stack = 0, shown = 0, left = 0;
    popci_sb sb = {0};
    popc_status st;
    char *msg;

    if (!outdeg || !stack) {
        free(outdeg);
        free(stack);
        return popc_set_error(POPC_ECOMPILE, "graph '%s' has a cycle",
                              g->name);
    }
    for (int n = 0; n < g->n_nodes; n++) {
        if (!pending[n])
            continue;
        for (int j = 0; j < g->nodes[n].n_outputs; j++) {
            int v = g->nodes[n].outputs[j];
            for (int k = c->start[v]; k < c->start[v + 1]; k++)
                outdeg[n] += pending[c->idx[k]] != 0;
        }
        if (!outdeg[n])
            stack[n_stack++] = n;
    }
    while (n_stack) {
        int n = stack[--n_stack];

        pending[n] = 0;
        for (int i = 0; i < g->nodes[n].n_inputs; i++) {
            int v = g->nodes[n].inputs[i], p;
            if (v < 0 || v >= g->n_values || (p = g->values[v].producer) < 0 ||
                !pending[p])
                continue;
            if (--outdeg[p] == 0)
                stack[n_stack++] = p;
        }
    }
    for (int n = 0; n < g->n_nodes; n++) {
        if (!pending[n])
            continue;
        if (shown < 8)
            popci_sb_printf(&sb, "%s'%s'", shown ? ", " : "",
                            g->nodes[n].name);
        else
            left++;
        shown++;
    }
    if (left)
        popci_sb_printf(&sb, " and %d more", left);
    msg = popci_sb_take(&sb);
    st = popc_set_error(POPC_ECOMPILE, "graph '%s' has a cycle through nodes "
                        "%s; a node's input must not depend on its own "
                        "output", g->name, msg ? msg : "(out of memory)");
    free(msg);
    free(outdeg);
    free(stack);
    return st;
}

popc_status popci_graph_topo(const popc_graph *g, int *order)
{
    popci_consumers c = {0};
    int *pending = NULL, *heap = NULL, n_heap = 0, n_done = 0;
    popc_status st;

    if ((st = popci_consumers_build(g, &c)) != POPC_OK)
        return st;
    pending = popci_calloc((size_t)g->n_nodes + 1, sizeof *pending);
    heap = popci_malloc(((size_t)g->n_nodes + 1) * sizeof *heap);
    if (!pending || !heap) {
        st = popc_set_error(POPC_ENOMEM, "graph: out of memory");
        goto done;
    }
    /* pending[n]: inputs of n produced by a node not yet emitted */
    for (int n = 0; n < g->n_nodes; n++) {
        for (int i = 0; i < g->nodes[n].n_inputs; i++) {
            int v = g->nodes[n].inputs[i];
            if (v >= 0 && v < g->n_values && g->values[v].producer >= 0)
                pending[n]++;
        }
        if (!pending[n])
            heap_push(heap, &n_heap, n);
    }
    while (n_heap) {
        int n = heap_pop(heap, &n_heap);

        order[n_done++] = n;
        for (int j = 0; j < g->nodes[n].n_outputs; j++) {
            int v = g->nodes[n].outputs[j];
            for (int k = c.start[v]; k < c.start[v + 1]; k++)
                if (--pending[c.idx[k]] == 0)
                    heap_push(heap, &n_heap, c.idx[k]);
        }
    }
    st = n_done == g->n_nodes ? POPC_OK : cycle_error(g, &c, pending);
done:
    free(pending);
    free(heap);
    popci_consumers_free(&c);
    return st;
}

popc_status popc_graph_topo_order(const popc_graph *g, int *order)
{
    if (!g || (!order && g->n_nodes))
        return popc_set_error(POPC_EINVAL, "popc_graph_topo_order: graph or "
                              "order is NULL");
    return popci_graph_topo(g, order);
}
