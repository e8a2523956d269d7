/* trust.c - where a graph came from, and the user's consent to foreign
** code named by files.
**
** A run file, executable or ONNX model is data a user may have received
** from anyone; an op that loads a library or resolves a symbol named by its
** attributes (POPC_OP_FOREIGN) would let such a file run arbitrary code.
** Graphs read from files carry their origin, and popc_graph_verify refuses
** their foreign nodes until the user consents. The program's own graphs
** are its own choice and are never refused.
*/
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "popc/limits.h"
#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"

/* Report at most this many nodes; the rest are counted. */
#define MAX_LISTED 8

static atomic_int foreign_allowed;

void popc_set_foreign_code_allowed(int allow)
{
    atomic_store(&foreign_allowed, allow != 0);
}

int popc_foreign_code_allowed(void)
{
    return atomic_load(&foreign_allowed);
}

popc_status popc_graph_set_origin(popc_graph *g, const char *origin)
{
    char *copy = NULL;

    if (!g)
        return popc_set_error(POPC_EINVAL, "popc_graph_set_origin: graph is "
                              "NULL");
    if (origin && !(copy = popci_strdup(origin)))
        return popc_set_error(POPC_ENOMEM, "popc_graph_set_origin: out of "
                              "memory");
    free(g->origin);
    g->origin = copy;
    return POPC_OK;
}

const char *popc_graph_origin(const popc_graph *g)
{
    return g ? g->origin : NULL;
}

static const popc_op_def *find_def(const char *domain, const char *op,
                                   int version)
{
    popc_registry *reg = NULL;

    if (popc_registry_global(&reg) != POPC_OK || !reg)
        return NULL;
    return popc_registry_find_op(reg, domain, op, version);
}

/* Append the foreign nodes of g and of its subgraph attributes. */
static void collect(const popc_graph *g, popci_sb *sb, int *n, int depth)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const popci_node *x = &g->nodes[i];
        const popc_op_def *def =
            x->def ? x->def : find_def(x->domain, x->op, x->version);

        if (def && (def->flags & POPC_OP_FOREIGN)) {
            if (++*n <= MAX_LISTED)
                popci_sb_printf(sb, "%snode '%s' (%s::%s)", *n > 1 ? ", " : "",
                                x->name, x->domain, x->op);
        }
        /* graphs read from files nest no deeper than the limit; this
        ** bounds the recursion for graphs a program built */
        for (int a = 0; a < x->n_attrs &&
                        depth < popc_limit_get(POPC_LIMIT_NESTING); a++)
            if (x->attrs[a].type == POPC_ATTR_GRAPH && x->attrs[a].graph)
                collect(x->attrs[a].graph, sb, n, depth + 1);
    }
}

popc_status popci_graph_check_foreign(const popc_graph *g)
{
    popci_sb sb = {0};
    int n = 0;
    popc_status st;

    if (!g->origin || popc_foreign_code_allowed())
        return POPC_OK;
    collect(g, &sb, &n, 0);
    if (n == 0) {
        popci_sb_free(&sb);
        return POPC_OK;
    }
    if (n > MAX_LISTED)
        popci_sb_printf(&sb, " and %d more", n - MAX_LISTED);
    st = popc_set_error(POPC_EPERM, "%s: graph '%s' has %s that would load "
                        "and run foreign code named by the file: %s; popc "
                        "runs code named by a file only with your consent: "
                        "pass --allow-foreign to popc if you trust %s (C: "
                        "popc_set_foreign_code_allowed(1))",
                        g->origin, g->name, n == 1 ? "a node" : "nodes",
                        sb.buf ? sb.buf : "(out of memory)", g->origin);
    popci_sb_free(&sb);
    return st;
}
