/* call.c - popc::Call: an outlined subgraph called like an op (PopXL's
** call, PopART's CallOp). Every input of the node is an input of the
** body (`__captures` equals the node's input count) and the node returns
** the body's outputs. attr __body_id (optional) names the body, so that
** a module called N times is seen as one outlined body (popc/module.h).
**
** Gradient: another Call whose body is graph_gradient(body), reading the
** node's inputs and the gradients of its outputs and returning the
** gradients of the float inputs; that body recomputes the forward pass,
** as a recomputed outlined call does.
*/
#include "config.h"

#include <stdio.h>

#include "ops/flow/flow_priv.h"

static popc_status call_infer(popc_infer_ctx *ic)
{
    flow_sig *b = ic->host->alloc(sizeof *b);
    int c;
    popc_status st;

    if (!b)
        return ic->host->set_error(POPC_ENOMEM, "Call '%s': out of memory",
                                   ic->node_name);
    if ((st = flow_captures("Call", ic->node_name, ic->attrs, ic->n_inputs,
                            0, &c)) != POPC_OK ||
        (st = flow_body("Call", ic->node_name, ic->attrs, "body", b)) !=
            POPC_OK)
        goto done;
    if (c != ic->n_inputs || b->n_in != ic->n_inputs ||
        b->n_out != ic->n_outputs) {
        st = ic->host->set_error(POPC_EINVAL, "Call '%s': the body reads %d "
                                 "values and gives %d; the node has %d "
                                 "inputs (all captured: __captures %d) and "
                                 "%d outputs", ic->node_name, b->n_in,
                                 b->n_out, ic->n_inputs, c, ic->n_outputs);
        goto done;
    }
    for (int i = 0; i < ic->n_inputs; i++) {
        char what[64];

        snprintf(what, sizeof what, "input %d", i);
        if ((st = flow_same("Call", ic->node_name, what, &ic->inputs[i],
                            "at the node", &b->in[i], "in the body")) !=
            POPC_OK)
            goto done;
    }
    for (int j = 0; j < ic->n_outputs; j++) {
        ic->outputs[j] = b->out[j];
        ic->outputs[j].data = NULL;
    }
done:
    ic->host->free(b);
    return st;
}

static popc_status call_forward(const popc_kernel_ctx *kc)
{
    const popc_attr *body = popc_attrs_find(kc->attrs, "body");

    return kc->host->graph_run(body->graph, kc->inputs, kc->n_inputs,
                               kc->outputs, kc->n_outputs, kc->training,
                               kc->seed);
}

static popc_status call_grad(popc_grad_ctx *gc)
{
    const popc_attr *body = popc_attrs_find(gc->attrs, "body");
    int n_in = gc->n_inputs, n_out = gc->n_outputs, any = 0;
    int in[2 * FLOW_MAX_IO], out[FLOW_MAX_IO];
    struct popc_graph *gb = NULL;
    const popc_attr *id;
    popc_attr attrs[3];
    char grad_id[256];
    int n_attrs = 2;
    popc_status st;

    for (int j = 0; j < n_out; j++)
        any |= gc->output_grads[j] >= 0;
    if (!any)
        return POPC_OK;
    if (!body || !body->graph || n_in + n_out > 2 * FLOW_MAX_IO)
        return gc->host->set_error(POPC_EINVAL, "Call '%s': body missing or "
                                   "too many values", gc->node_name);
    for (int i = 0; i < n_in; i++)
        in[i] = gc->inputs[i];
    if ((st = flow_given_or_zeros(gc, 0, n_out, in + n_in)) != POPC_OK)
        return st;
    if ((st = gc->host->graph_gradient(body->graph, &gb)) != POPC_OK)
        return st;
    attrs[0] = (popc_attr){.name = "body", .type = POPC_ATTR_GRAPH,
                           .graph = gb};
    attrs[1] = (popc_attr){.name = "__captures", .type = POPC_ATTR_INT,
                           .i = n_in + n_out};
    id = popc_attrs_find(gc->attrs, "__body_id");
    if (id && id->type == POPC_ATTR_STRING && id->s) {
        /* the backward bodies of one module's calls are one body too */
        snprintf(grad_id, sizeof grad_id, "%s/grad", id->s);
        attrs[n_attrs++] = (popc_attr){.name = "__body_id",
                                       .type = POPC_ATTR_STRING,
                                       .s = grad_id};
    }
    st = gc->host->grad_add_node(gc, "popc", "Call", in, n_in + n_out, out,
                                 n_in, attrs, n_attrs);
    gc->host->graph_free(gb);
    if (st != POPC_OK)
        return st;
    for (int i = 0; i < n_in; i++)
        if (popc_dtype_is_float(gc->input_info[i].dtype))
            gc->input_grads[i] = out[i];
    return POPC_OK;
}

static const popc_op_def call_def = {
    .size = sizeof(popc_op_def),
    .domain = "popc",
    .name = "Call",
    .since_version = 1,
    .min_inputs = 0,
    .max_inputs = FLOW_MAX_IO,
    .min_outputs = 1,
    .max_outputs = FLOW_MAX_IO,
    .infer = call_infer,
    .forward = call_forward,
    .grad = call_grad,
    .cost = flow_call_cost,
    .doc = "calls the outlined subgraph attr body on every input",
};

popc_status flow_register_call(const popc_host *h, popc_registrar *r)
{
    return h->register_op(r, &call_def);
}
