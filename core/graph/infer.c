/* infer.c - the shape and dtype inference driver.
**
** Ops infer their outputs from input views; the driver builds those views
** from what the graph knows (initializers and constants carry their data,
** so Reshape can read its shape) and checks the op's answer, so a buggy
** plugin is named instead of corrupting the graph.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"
#include "core/host_priv.h"

int popci_view_same(const popc_view *a, const popc_view *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank)
        return 0;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return 0;
    return 1;
}

popc_status popci_infer_run(const popc_op_def *def, const char *node_name,
                            const popc_view *in, int n_in, popc_view *outs,
                            int n_out, const popc_attrs *attrs, int training)
{
    popc_infer_ctx ic;
    popc_status st;

    if (n_out > 0) /* a node may have no outputs (outs NULL) */
        memset(outs, 0, (size_t)n_out * sizeof *outs);
    if (!def->infer)
        return popc_set_error(POPC_EPLUGIN, "node '%s': op %s::%s has no "
                              "infer(); the plugin is broken", node_name,
                              def->domain, def->name);
    ic.size = sizeof ic;
    ic.host = popci_host();
    ic.node_name = node_name;
    ic.n_inputs = n_in;
    ic.inputs = in;
    ic.n_outputs = n_out;
    ic.outputs = outs;
    ic.attrs = attrs;
    ic.training = training;
    ic.op = def;
    if ((st = def->infer(&ic)) != POPC_OK)
        return st;
    for (int j = 0; j < n_out; j++) {
        popc_view *o = &outs[j];
        int bad = !popc_dtype_size(o->dtype) || o->rank < 0 ||
                  o->rank > POPC_MAX_RANK;

        for (int d = 0; !bad && d < o->rank; d++)
            bad = o->dims[d] < 0;
        if (bad)
            return popc_set_error(POPC_EPLUGIN, "node '%s': %s::%s infer() "
                                  "left output %d without a valid dtype and "
                                  "shape (dtype %d, rank %d); the op plugin "
                                  "is broken", node_name, def->domain,
                                  def->name, j, (int)o->dtype, o->rank);
        o->data = NULL;
    }
    return POPC_OK;
}

void popci_graph_input_views(const popc_graph *g, const int *ids, int n,
                             popc_view *in, int *ready)
{
    *ready = 1;
    for (int i = 0; i < n; i++) {
        int v = ids[i];

        memset(&in[i], 0, sizeof in[i]);
        if (v < 0)
            continue;
        if (v >= g->n_values ||
            g->values[v].info.dtype == POPC_DTYPE_UNDEFINED) {
            *ready = 0;
            continue;
        }
        in[i] = g->values[v].info;
        if (g->values[v].tensor)
            in[i].data = popc_tensor_data(g->values[v].tensor);
    }
}

popc_status popci_graph_infer_node(popc_graph *g, int node, int training,
                                   popc_view *outs, int *ran)
{
    const popci_node *n = &g->nodes[node];
    const popc_op_def *def = popci_graph_node_def(g, node);
    popc_attrs av = POPC_ATTRS(n->n_attrs, n->attrs);
    popc_view *in = NULL;
    popc_status st;
    int ready;

    *ran = 0;
    if (!def)
        return POPC_OK;
    if (n->n_inputs && !(in = popci_calloc((size_t)n->n_inputs, sizeof *in)))
        return popc_set_error(POPC_ENOMEM, "graph: out of memory");
    popci_graph_input_views(g, n->inputs, n->n_inputs, in, &ready);
    if (!ready) {
        free(in);
        return POPC_OK;
    }
    st = popci_infer_run(def, n->name, in, n->n_inputs, outs, n->n_outputs,
                         &av, training);
    free(in);
    if (st == POPC_OK)
        *ran = 1;
    return st;
}
