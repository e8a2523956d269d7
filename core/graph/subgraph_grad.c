/* subgraph_grad.c - what the gradients of ops with subgraph attributes
** (If, Loop, Scan) need from the core, through the host table:
**
** graph_gradient(g) builds a new, closed graph that computes g's input
** gradients: its inputs are g's inputs followed by one gradient per output
** of g, its outputs d(sum_j <out_j, dout_j>)/d(input_i) for every input i
** (zeros where input i does not reach an output, or is not floating
** point). It recomputes g's forward inside, so it needs nothing saved.
**
** grad_inline(gc, g, ...) adds g's nodes to the graph being differentiated
** (during an op's grad()), g's inputs bound to given values, and returns
** the values of g's outputs: unrolling a loop body into the backward pass.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/graph.h"
#include "popc/tensor.h"
#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"
#include "core/host_priv.h"
#include "core/registry_priv.h"

#define WHY "the gradient of a subgraph (If, Loop, Scan)"

/* A zero-filled constant shaped like info, added to g. */
static popc_status zeros_in(popc_graph *g, const popc_view *info, int *id)
{
    popc_tensor *t = NULL;
    popc_status st;

    if ((st = popc_tensor_new(info->dtype, info->dims, info->rank, &t)) !=
        POPC_OK)
        return st;
    memset(popc_tensor_data(t), 0, popc_tensor_nbytes(t));
    st = popc_graph_add_constant(g, NULL, t, id);
    popc_tensor_free(t);
    return st;
}

/* loss = sum_j ReduceSum(out_j * dout_j) over the float outputs; -1 when
** there is none. */
static popc_status inner_product(popc_graph *g, const int *outs,
                                 const int *douts, int n, int *loss)
{
    popc_attr keep = {.name = "keepdims", .type = POPC_ATTR_INT, .i = 0};
    const popc_op_def *mul, *rsum, *add;
    popc_status st;

    *loss = -1;
    if ((st = popci_role_op(POPC_ROLE_MUL, WHY, &mul)) != POPC_OK ||
        (st = popci_role_op(POPC_ROLE_REDUCE_SUM, WHY, &rsum)) != POPC_OK ||
        (st = popci_role_op(POPC_ROLE_ADD, WHY, &add)) != POPC_OK)
        return st;
    for (int j = 0; j < n; j++) {
        int in[2] = {outs[j], douts[j]}, prod, term;

        if (!popc_dtype_is_float(g->values[outs[j]].info.dtype))
            continue;
        if ((st = popc_graph_add_node(g, mul->domain, mul->name, 0, in, 2,
                                      &prod, 1, NULL, 0, NULL, NULL)) !=
                POPC_OK ||
            (st = popc_graph_add_node(g, rsum->domain, rsum->name, 0, &prod,
                                      1, &term, 1, &keep, 1, NULL, NULL)) !=
                POPC_OK)
            return st;
        if (*loss < 0) {
            *loss = term;
            continue;
        }
        in[0] = *loss;
        in[1] = term;
        if ((st = popc_graph_add_node(g, add->domain, add->name, 0, in, 2,
                                      loss, 1, NULL, 0, NULL, NULL)) !=
            POPC_OK)
            return st;
    }
    return POPC_OK;
}

popc_status popci_graph_gradient(const popc_graph *g, popc_graph **out)
{
    popc_graph *c = NULL;
    int n_in, n_out, loss, *ids = NULL, *grads = NULL, *wrt = NULL, n_wrt = 0;
    popc_status st;

    *out = NULL;
    if (!g)
        return popc_set_error(POPC_EINVAL, "graph_gradient: no graph");
    if ((st = popc_graph_clone(g, &c)) != POPC_OK)
        return st;
    n_in = c->n_inputs;
    n_out = c->n_outputs;
    ids = popci_calloc((size_t)(n_in + 2 * n_out) + 1, sizeof *ids);
    grads = popci_calloc((size_t)n_in + 1, sizeof *grads);
    wrt = popci_calloc((size_t)n_in + 1, sizeof *wrt);
    if (!ids || !grads || !wrt) {
        st = popc_set_error(POPC_ENOMEM, "graph_gradient: out of memory");
        goto done;
    }
    for (int j = 0; j < n_out && st == POPC_OK; j++) {
        const popc_view *v = &c->values[c->outputs[j]].info;
        char name[64];

        snprintf(name, sizeof name, "__d_output_%d", j);
        ids[j] = c->outputs[j];
        st = popc_graph_add_input(c, name, v->dtype, v->dims, v->rank,
                                  &ids[n_out + j]);
    }
    if (st != POPC_OK ||
        (st = inner_product(c, ids, ids + n_out, n_out, &loss)) != POPC_OK)
        goto done;
    for (int i = 0; i < n_in; i++) {
        grads[i] = -1;
        if (popc_dtype_is_float(c->values[c->inputs[i]].info.dtype))
            wrt[n_wrt++] = c->inputs[i];
    }
    if (loss >= 0 && n_wrt &&
        (st = popc_graph_gradients(c, loss, wrt, n_wrt, 1.0, grads)) !=
            POPC_OK)
        goto done;
    /* the outputs become the input gradients, in input order */
    c->n_outputs = 0;
    for (int i = 0, k = 0; i < n_in && st == POPC_OK; i++) {
        int gi = -1, is_float =
            popc_dtype_is_float(c->values[c->inputs[i]].info.dtype);

        if (is_float)
            gi = grads[k++];
        if (gi < 0)
            st = zeros_in(c, &c->values[c->inputs[i]].info, &gi);
        if (st == POPC_OK)
            st = popc_graph_add_output(c, gi);
    }
done:
    free(ids);
    free(grads);
    free(wrt);
    if (st != POPC_OK) {
        popc_graph_free(c);
        return st;
    }
    *out = c;
    return POPC_OK;
}

void popci_graph_release(popc_graph *g)
{
    popc_graph_free(g);
}

popc_status popci_grad_inline(popc_grad_ctx *gc, const popc_graph *g,
                              const int *inputs, int n_inputs, int *outputs,
                              int n_outputs)
{
    const popci_grad_impl *impl = gc ? gc->impl : NULL;
    int *map = NULL, *order = NULL, *in = NULL, widest = 1;
    popc_status st = POPC_OK;

    if (!impl || !g)
        return popc_set_error(POPC_ESTATE, "grad_inline: called outside "
                              "autodiff");
    if (n_inputs != g->n_inputs || n_outputs != g->n_outputs)
        return popc_set_error(POPC_EINVAL, "grad_inline: graph '%s' has %d "
                              "inputs and %d outputs, %d and %d given",
                              g->name, g->n_inputs, g->n_outputs, n_inputs,
                              n_outputs);
    /* a node's inputs may repeat a value: size by arity, not values */
    for (int n = 0; n < g->n_nodes; n++)
        if (g->nodes[n].n_inputs + g->nodes[n].n_outputs > widest)
            widest = g->nodes[n].n_inputs + g->nodes[n].n_outputs;
    map = popci_malloc(((size_t)g->n_values + 1) * sizeof *map);
    order = popci_malloc(((size_t)g->n_nodes + 1) * sizeof *order);
    in = popci_malloc((size_t)widest * sizeof *in);
    if (!map || !order || !in) {
        st = popc_set_error(POPC_ENOMEM, "grad_inline: out of memory");
        goto done;
    }
    for (int v = 0; v < g->n_values; v++)
        map[v] = -1;
    for (int i = 0; i < n_inputs; i++)
        map[g->inputs[i]] = inputs[i];
    for (int v = 0; v < g->n_values && st == POPC_OK; v++)
        if (g->values[v].tensor && map[v] < 0) {
            popc_view tv = popc_tensor_view(g->values[v].tensor);

            st = impl->constant(gc, &tv, &map[v]);
        }
    if (st != POPC_OK || (st = popci_graph_topo(g, order)) != POPC_OK)
        goto done;
    for (int k = 0; k < g->n_nodes && st == POPC_OK; k++) {
        const popci_node *x = &g->nodes[order[k]];

        for (int i = 0; i < x->n_inputs; i++)
            in[i] = x->inputs[i] >= 0 ? map[x->inputs[i]] : -1;
        st = impl->add_node(gc, x->domain, x->op, in, x->n_inputs,
                            in + x->n_inputs, x->n_outputs, x->attrs,
                            x->n_attrs);
        for (int j = 0; st == POPC_OK && j < x->n_outputs; j++)
            map[x->outputs[j]] = in[x->n_inputs + j];
    }
    for (int j = 0; st == POPC_OK && j < n_outputs; j++)
        outputs[j] = map[g->outputs[j]];
done:
    free(map);
    free(order);
    free(in);
    return st;
}
