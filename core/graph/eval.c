/* eval.c - the reference interpreter: evaluate values of a graph on the
** ops' own kernels, one node at a time, on the calling thread.
**
** It serves constant folding, tests and finite differences, so it favours
** clarity: only the nodes the requested values depend on run, each op's
** infer() runs again on the actual input shapes, every kernel is called
** whole (n_parts = 1), and an intermediate tensor is freed after its last
** reader. Kernel seeds are popci_node_seed(seed, node id), so a run is
** reproducible and two random nodes never share a stream.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"
#include "core/host_priv.h"

typedef struct eval_state {
    const popc_graph *g;
    popc_tensor **t;        /* per value: a reference, or NULL */
    int *uses;              /* readers still to run, per value */
    unsigned char *wanted;  /* requested by the caller */
    unsigned char *needed;  /* per node */
    int *order;
} eval_state;

static void state_free(eval_state *s)
{
    if (s->t)
        for (int v = 0; v < s->g->n_values; v++)
            popc_tensor_free(s->t[v]);
    free(s->t);
    free(s->uses);
    free(s->wanted);
    free(s->needed);
    free(s->order);
}

static popc_status check_inputs(const popc_graph *g, popc_tensor *const *in,
                                int n_in)
{
    char want[128], got[128];

    if (n_in != g->n_inputs)
        return popc_set_error(POPC_EINVAL, "popc_graph_eval: graph '%s' has "
                              "%d inputs, %d tensors given", g->name,
                              g->n_inputs, n_in);
    for (int i = 0; i < n_in; i++) {
        const popci_value *v = &g->values[g->inputs[i]];
        popc_view tv;
        int ok;

        if (!in[i])
            return popc_set_error(POPC_EINVAL, "popc_graph_eval: input %d "
                                  "('%s') is NULL", i, v->name);
        tv = popc_tensor_view(in[i]);
        ok = tv.dtype == v->info.dtype && tv.rank == v->info.rank;
        for (int d = 1; ok && d < tv.rank; d++)
            ok = tv.dims[d] == v->info.dims[d];
        if (!ok) {
            popc_view_describe(&v->info, want, sizeof want);
            popc_view_describe(&tv, got, sizeof got);
            return popc_set_error(POPC_EINVAL, "popc_graph_eval: input '%s' "
                                  "is declared %s but %s was given (only "
                                  "dim 0 may differ)", v->name, want, got);
        }
    }
    return POPC_OK;
}

/* Mark the nodes the wanted values depend on and count their readers. */
static popc_status plan(eval_state *s, const int *values, int n_values)
{
    const popc_graph *g = s->g;
    int *stack, n_stack = 0;

    if (!(stack = popci_malloc(((size_t)g->n_values + 1) * sizeof *stack)))
        return popc_set_error(POPC_ENOMEM, "popc_graph_eval: out of memory");
    for (int i = 0; i < n_values; i++)
        if (!s->wanted[values[i]]) {
            s->wanted[values[i]] = 1;
            stack[n_stack++] = values[i];
        }
    while (n_stack) {
        int v = stack[--n_stack], p = g->values[v].producer;
        const popci_node *x;

        if (p < 0 || s->needed[p])
            continue;
        s->needed[p] = 1;
        x = &g->nodes[p];
        for (int i = 0; i < x->n_inputs; i++) {
            int u = x->inputs[i];
            if (u < 0)
                continue;
            if (u >= g->n_values) {
                free(stack);
                return popc_set_error(POPC_ECOMPILE, "popc_graph_eval: node "
                                      "'%s' input %d refers to value %d, "
                                      "which does not exist", x->name, i, u);
            }
            if (!s->uses[u]++ && !s->wanted[u])
                stack[n_stack++] = u;
        }
    }
    free(stack);
    return POPC_OK;
}

static popc_status run_node(eval_state *s, int n, int training, uint64_t seed)
{
    const popc_graph *g = s->g;
    const popci_node *x = &g->nodes[n];
    const popc_op_def *def = popci_graph_node_def_c(g, n);
    popc_attrs av = POPC_ATTRS(x->n_attrs, x->attrs);
    popc_view *in = NULL, *out = NULL;
    popc_kernel_ctx kc;
    void *state = NULL;
    popc_status st;

    if (!def)
        return popc_set_error(POPC_ECOMPILE, "Unsupported ops found in graph: "
                              "%s::%s (node '%s'); load the plugin that "
                              "provides it (POPC_PLUGIN_PATH)", x->domain,
                              x->op, x->name);
    if (!def->forward)
        return popc_set_error(POPC_EPLUGIN, "node '%s': op %s::%s has no "
                              "forward kernel", x->name, x->domain, x->op);
    in = popci_calloc((size_t)x->n_inputs + 1, sizeof *in);
    out = popci_calloc((size_t)x->n_outputs + 1, sizeof *out);
    if (!in || !out) {
        st = popc_set_error(POPC_ENOMEM, "popc_graph_eval: out of memory");
        goto done;
    }
    for (int i = 0; i < x->n_inputs; i++) {
        int v = x->inputs[i];
        if (v >= 0)
            in[i] = popc_tensor_view(s->t[v]);
    }
    if ((st = popci_infer_run(def, x->name, in, x->n_inputs, out,
                              x->n_outputs, &av, training)) != POPC_OK)
        goto done;
    for (int j = 0; j < x->n_outputs; j++) {
        int v = x->outputs[j];
        if ((st = popc_tensor_new(out[j].dtype, out[j].dims, out[j].rank,
                                  &s->t[v])) != POPC_OK)
            goto done;
        out[j] = popc_tensor_view(s->t[v]);
    }
    if (def->prepare) {
        popc_infer_ctx ic = {.size = sizeof ic, .op = def,
                             .host = popci_host(), .node_name = x->name,
                             .n_inputs = x->n_inputs, .inputs = in,
                             .n_outputs = x->n_outputs, .outputs = out,
                             .attrs = &av, .training = training};
        if ((st = def->prepare(&ic, &state)) != POPC_OK)
            goto done;
    }
    memset(&kc, 0, sizeof kc);
    kc.size = sizeof kc;
    kc.op = def;
    kc.host = popci_host();
    kc.node_name = x->name;
    kc.n_inputs = x->n_inputs;
    kc.inputs = in;
    kc.n_outputs = x->n_outputs;
    kc.outputs = out;
    kc.attrs = &av;
    kc.part = 0;
    kc.n_parts = 1;
    kc.training = training;
    kc.seed = popci_node_seed(seed, n);
    kc.state = state;
    st = def->forward(&kc);
    if (def->release && state)
        def->release(state);
done:
    free(in);
    free(out);
    return st;
}

popc_status popc_graph_eval(const popc_graph *g, popc_tensor *const *inputs,
                            int n_inputs, const int *values, int n_values,
                            popc_tensor **out, int training, uint64_t seed)
{
    eval_state s;
    popc_status st;

    memset(&s, 0, sizeof s);
    if (!g || (n_values && (!values || !out)) || n_values < 0 ||
        (n_inputs && !inputs))
        return popc_set_error(POPC_EINVAL, "popc_graph_eval: graph, values "
                              "or out is NULL");
    for (int i = 0; i < n_values; i++)
        out[i] = NULL;
    for (int i = 0; i < n_values; i++)
        if (values[i] < 0 || values[i] >= g->n_values)
            return popc_set_error(POPC_EINVAL, "popc_graph_eval: value id %d "
                                  "does not exist in graph '%s'", values[i],
                                  g->name);
    if ((st = check_inputs(g, inputs, n_inputs)) != POPC_OK)
        return st;
    s.g = g;
    s.t = popci_calloc((size_t)g->n_values + 1, sizeof *s.t);
    s.uses = popci_calloc((size_t)g->n_values + 1, sizeof *s.uses);
    s.wanted = popci_calloc((size_t)g->n_values + 1, 1);
    s.needed = popci_calloc((size_t)g->n_nodes + 1, 1);
    s.order = popci_malloc(((size_t)g->n_nodes + 1) * sizeof *s.order);
    if (!s.t || !s.uses || !s.wanted || !s.needed || !s.order) {
        st = popc_set_error(POPC_ENOMEM, "popc_graph_eval: out of memory");
        goto fail;
    }
    if ((st = plan(&s, values, n_values)) != POPC_OK ||
        (st = popci_graph_topo(g, s.order)) != POPC_OK)
        goto fail;
    for (int i = 0; i < n_inputs; i++)
        s.t[g->inputs[i]] = popc_tensor_ref(inputs[i]);
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v].tensor)
            s.t[v] = popc_tensor_ref(g->values[v].tensor);
    for (int k = 0; k < g->n_nodes; k++) {
        int n = s.order[k];
        const popci_node *x = &g->nodes[n];

        if (!s.needed[n])
            continue;
        if ((st = run_node(&s, n, training, seed)) != POPC_OK)
            goto fail;
        for (int i = 0; i < x->n_inputs; i++) {
            int v = x->inputs[i];
            if (v >= 0 && --s.uses[v] == 0 && !s.wanted[v] &&
                g->values[v].producer >= 0) {
                popc_tensor_free(s.t[v]);
                s.t[v] = NULL;
            }
        }
    }
    for (int i = 0; i < n_values; i++) {
        popc_tensor *t = s.t[values[i]];

        if (!t) {
            st = popc_set_error(POPC_EINVAL, "popc_graph_eval: value '%s' "
                                "has no data (an input that was not given?)",
                                g->values[values[i]].name);
            goto fail;
        }
        if ((st = popc_tensor_clone(t, &out[i])) != POPC_OK)
            goto fail;
    }
    state_free(&s);
    return POPC_OK;
fail:
    for (int i = 0; i < n_values; i++) {
        popc_tensor_free(out[i]);
        out[i] = NULL;
    }
    state_free(&s);
    return st;
}
