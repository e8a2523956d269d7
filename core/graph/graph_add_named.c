/* graph_add_named.c - a node added for the user under a name of the
** builder's choosing (core/layer/graph.h): the layers that build nodes
** for the user (extend/: custom, CPU and foreign ops) name them after
** what the user asked for, in the user's scope.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"
#include "core/layer/graph.h"

popc_status popci_graph_add_named(popc_graph *g, const char *domain,
                                  const char *op, int version,
                                  const char *base, const int *inputs,
                                  int n_inputs, int *outputs, int n_outputs,
                                  const popc_attr *attrs, int n_attrs)
{
    popci_annot a = g->annot;
    size_t len;
    char *name;
    popc_status st;

    if (g->block_ended) /* as popc_graph_add_node */
        return popc_set_error(POPC_ESTATE, "No active Block, all the ops "
                              "must belong to a Block (adding %s %s after "
                              "popc_block_end; start one with "
                              "popc_block_begin)", op, base);
    a.scope = g->scope_joined;
    popci_source_capture(&a);
    len = (a.scope ? strlen(a.scope) + 1 : 0) + strlen(base) + 1;
    if (!(name = popci_malloc(len)))
        return popc_set_error(POPC_ENOMEM, "graph: out of memory");
    snprintf(name, len, "%s%s%s", a.scope ? a.scope : "", a.scope ? "/" : "",
             base);
    st = popci_graph_add_node_ex(g, domain, op, version, inputs, n_inputs,
                                 outputs, n_outputs, attrs, n_attrs, name, &a,
                                 1, 1, NULL);
    free(name);
    return st;
}
