/* subgraph.c - the host table's view of subgraph attributes: their
** signature, and one run of a subgraph on the reference kernels
** (popc_graph_eval), which is how If, Loop and Scan bodies execute. The
** graph is the node's own deep copy, read-only here. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "popc/graph.h"
#include "popc/tensor.h"
#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"
#include "core/host_priv.h"

popc_status popci_graph_signature(const popc_graph *g, int *n_inputs,
                                  popc_view *inputs, int *n_outputs,
                                  popc_view *outputs, int cap)
{
    int ni, no;

    if (!g)
        return popc_set_error(POPC_EINVAL, "graph_signature: no graph");
    ni = popc_graph_n_inputs(g);
    no = popc_graph_n_outputs(g);
    if (n_inputs)
        *n_inputs = ni;
    if (n_outputs)
        *n_outputs = no;
    for (int i = 0; inputs && i < ni && i < cap; i++)
        inputs[i] = popc_graph_value_info(g, popc_graph_input(g, i));
    for (int i = 0; outputs && i < no && i < cap; i++)
        outputs[i] = popc_graph_value_info(g, popc_graph_output(g, i));
    return POPC_OK;
}

static void free_tensors(popc_tensor **t, int n)
{
    for (int i = 0; t && i < n; i++)
        popc_tensor_free(t[i]);
}

popc_status popci_graph_run(const popc_graph *g, const popc_view *inputs,
                            int n_inputs, const popc_view *outputs,
                            int n_outputs, int training, uint64_t seed)
{
    popc_tensor **in = NULL, **out = NULL;
    int *ids = NULL;
    popc_status st = POPC_OK;

    if (!g || n_outputs != popc_graph_n_outputs(g))
        return popc_set_error(POPC_EINVAL, "graph_run: graph '%s' has %d "
                              "outputs, %d buffers given",
                              g ? popc_graph_name(g) : "(null)",
                              g ? popc_graph_n_outputs(g) : 0, n_outputs);
    in = popci_calloc((size_t)n_inputs + 1, sizeof *in);
    out = popci_calloc((size_t)n_outputs + 1, sizeof *out);
    ids = popci_calloc((size_t)n_outputs + 1, sizeof *ids);
    if (!in || !out || !ids) {
        st = popc_set_error(POPC_ENOMEM, "graph_run: out of memory");
        goto done;
    }
    for (int i = 0; i < n_inputs && st == POPC_OK; i++)
        st = popc_tensor_from_data(inputs[i].dtype, inputs[i].dims,
                                   inputs[i].rank, inputs[i].data, &in[i]);
    if (st != POPC_OK)
        goto done;
    for (int i = 0; i < n_outputs; i++)
        ids[i] = popc_graph_output(g, i);
    if ((st = popc_graph_eval(g, in, n_inputs, ids, n_outputs, out, training,
                              seed)) != POPC_OK)
        goto done;
    for (int i = 0; i < n_outputs; i++) {
        popc_view got = popc_tensor_view(out[i]);
        char a[128], b[128];

        if (got.dtype != outputs[i].dtype || got.rank != outputs[i].rank ||
            memcmp(got.dims, outputs[i].dims,
                   sizeof(int64_t) * (size_t)got.rank) != 0) {
            popc_view_describe(&got, a, sizeof a);
            popc_view_describe(&outputs[i], b, sizeof b);
            st = popc_set_error(POPC_EINVAL, "subgraph '%s': output %d ('%s') "
                                "is %s, but %s was planned; a body's output "
                                "shapes must not change between runs",
                                popc_graph_name(g), i,
                                popc_graph_value_name(g, ids[i]), a, b);
            goto done;
        }
        memcpy(outputs[i].data, got.data, popc_tensor_nbytes(out[i]));
    }
done:
    free_tensors(in, n_inputs);
    free_tensors(out, n_outputs);
    free(in);
    free(out);
    free(ids);
    return st;
}

/* Views of node `id`'s inputs (in) or outputs (!in) from g's value infos. */
static void node_views(const popc_graph *g, int id, int in, popc_view *v,
                       int n)
{
    for (int i = 0; i < n; i++) {
        int value = in ? popc_graph_node_input(g, id, i)
                       : popc_graph_node_output(g, id, i);

        if (value < 0)
            memset(&v[i], 0, sizeof v[i]);
        else
            v[i] = popc_graph_value_info(g, value);
    }
}

popc_status popci_graph_cost(const popc_graph *g, popc_cost *cost)
{
    popc_view in[POPCI_COST_MAX_IO], out[POPCI_COST_MAX_IO];
    double peak_temp = 0.0, inner = 0.0;

    if (!g || !cost)
        return popc_set_error(POPC_EINVAL, "graph_cost: no graph or cost");
    memset(cost, 0, sizeof *cost);
    for (int id = 0; id < popc_graph_n_nodes(g); id++) {
        const popc_op_def *op = popci_graph_node_def_c(g, id);
        int ni = popc_graph_node_n_inputs(g, id);
        int no = popc_graph_node_n_outputs(g, id);
        popc_attrs attrs = popc_graph_node_attrs(g, id);
        popc_cost c = {0};
        popc_infer_ctx ic;
        popc_status st;

        if (ni > POPCI_COST_MAX_IO || no > POPCI_COST_MAX_IO)
            return popc_set_error(POPC_EUNSUPPORTED, "graph_cost: node '%s' "
                                  "of graph '%s' has more than %d inputs or "
                                  "outputs", popc_graph_node_name(g, id),
                                  popc_graph_name(g), POPCI_COST_MAX_IO);
        node_views(g, id, 1, in, ni);
        node_views(g, id, 0, out, no);
        ic = (popc_infer_ctx){.size = sizeof ic, .host = popci_host(),
                              .node_name = popc_graph_node_name(g, id),
                              .n_inputs = ni, .inputs = in, .n_outputs = no,
                              .outputs = out, .attrs = &attrs, .op = op};
        if (op && op->cost) {
            if ((st = op->cost(&ic, &c)) != POPC_OK)
                return st;
        } else {
            for (int i = 0; i < no; i++) {
                c.flops += (double)popc_view_numel(&out[i]);
                c.bytes += (double)popc_view_nbytes(&out[i]);
            }
            for (int i = 0; i < ni; i++)
                c.bytes += (double)popc_view_nbytes(&in[i]);
        }
        cost->flops += c.flops;
        cost->bytes += c.bytes;
        if (c.temp_bytes > peak_temp)
            peak_temp = c.temp_bytes;
        for (int i = 0; i < no; i++)
            inner += (double)popc_view_nbytes(&out[i]);
    }
    /* the body's own values all live while it runs, beside its largest
    ** temporaries: an upper bound, as outlined code reuses its buffers */
    cost->temp_bytes = peak_temp + inner;
    return POPC_OK;
}
