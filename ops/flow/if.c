/* if.c - ONNX If: runs then_branch or else_branch on the condition. Both
** branches must give outputs of the same dtypes and shapes (popc compiles
** one shape for each output). Inputs: cond, then the captured values. */
#include "config.h"

#include <stdio.h>

#include "ops/flow/flow_priv.h"

static popc_status if_infer(popc_infer_ctx *ic)
{
    flow_sig *t = ic->host->alloc(sizeof *t), *e = ic->host->alloc(sizeof *e);
    int c;
    popc_status st;

    if (!t || !e) {
        st = ic->host->set_error(POPC_ENOMEM, "If '%s': out of memory",
                                 ic->node_name);
        goto done;
    }
    if ((st = flow_captures("If", ic->node_name, ic->attrs, ic->n_inputs, 1,
                            &c)) != POPC_OK ||
        (st = flow_body("If", ic->node_name, ic->attrs, "then_branch", t)) !=
            POPC_OK ||
        (st = flow_body("If", ic->node_name, ic->attrs, "else_branch", e)) !=
            POPC_OK)
        goto done;
    if (popc_view_numel(&ic->inputs[0]) != 1 ||
        ic->inputs[0].dtype != POPC_DTYPE_BOOL) {
        st = ic->host->set_error(POPC_EINVAL, "If '%s': cond must be one "
                                 "bool", ic->node_name);
        goto done;
    }
    if (t->n_in != c || e->n_in != c || t->n_out != ic->n_outputs ||
        e->n_out != ic->n_outputs) {
        st = ic->host->set_error(POPC_EINVAL, "If '%s': the branches have "
                                 "%d and %d outputs and read %d and %d "
                                 "values; the node has %d outputs and %d "
                                 "captured inputs", ic->node_name, t->n_out,
                                 e->n_out, t->n_in, e->n_in, ic->n_outputs,
                                 c);
        goto done;
    }
    for (int j = 0; j < ic->n_outputs; j++) {
        char what[64];

        snprintf(what, sizeof what, "output %d", j);
        if ((st = flow_same("If", ic->node_name, what, &t->out[j],
                            "in then_branch", &e->out[j],
                            "in else_branch")) != POPC_OK)
            goto done;
        ic->outputs[j] = t->out[j];
        ic->outputs[j].data = NULL;
    }
done:
    ic->host->free(t);
    ic->host->free(e);
    return st;
}

static popc_status if_forward(const popc_kernel_ctx *kc)
{
    const popc_attr *branch;
    int c = (int)popc_attr_int(kc->attrs, "__captures", 0);
    int taken = *(const uint8_t *)kc->inputs[0].data != 0;

    branch = popc_attrs_find(kc->attrs, taken ? "then_branch" : "else_branch");
    return kc->host->graph_run(branch->graph, kc->inputs + kc->n_inputs - c,
                               c, kc->outputs, kc->n_outputs, kc->training,
                               kc->seed);
}

/* One definition per version whose form popc reads the same way, so
** that a node keeps its model's opset (and export writes it there). */
#define IF_DEF(VERSION)                                                     \
    {                                                                       \
        .size = sizeof(popc_op_def),                                        \
        .domain = "ai.onnx",                                                \
        .name = "If",                                                       \
        .since_version = VERSION,                                           \
        .min_inputs = 1,                                                    \
        .max_inputs = 1 + 4096,                                             \
        .min_outputs = 1,                                                   \
        .max_outputs = 256,                                                 \
        .flags = 0,                                                         \
        .infer = if_infer,                                                  \
        .forward = if_forward,                                              \
        .grad = flow_if_grad,                                               \
        .cost = flow_if_cost,                                               \
        .doc = "runs then_branch or else_branch (ONNX If)",                 \
    }

static const popc_op_def if_ops[] = {IF_DEF(1), IF_DEF(11), IF_DEF(13),
                                       IF_DEF(16)};

popc_status flow_register_if(const popc_host *h, popc_registrar *r)
{
    popc_status st;

    for (size_t i = 0; i < sizeof if_ops / sizeof if_ops[0]; i++)
        if ((st = h->register_op(r, &if_ops[i])) != POPC_OK)
            return st;
    return POPC_OK;
}
