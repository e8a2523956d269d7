/* cost.c - the work of the ops that run a body, for device models: a Call
** costs one run of its body, a Loop M runs (M when it is a constant, else
** one: a loop that stops on a condition is counted once), an If its
** costlier branch, a Scan one run per step (scan.c). The body's cost is
** the core's sum over its nodes (host->graph_cost). */
#include "config.h"

#include "ops/flow/flow_priv.h"

popc_status flow_body_cost(const popc_infer_ctx *ic, const char *name,
                           double times, popc_cost *c)
{
    const popc_attr *a = popc_attrs_find(ic->attrs, name);
    popc_status st;

    c->flops = c->bytes = c->temp_bytes = 0.0;
    if (!a || a->type != POPC_ATTR_GRAPH || !a->graph)
        return flow_host->set_error(POPC_EINVAL, "'%s': the graph attribute "
                                    "%s is missing", ic->node_name, name);
    if (!POPC_HAS_FIELD(popc_host, flow_host->size, graph_cost))
        return POPC_OK; /* an older core: no estimate */
    if ((st = flow_host->graph_cost(a->graph, c)) != POPC_OK)
        return st;
    c->flops *= times;
    c->bytes *= times;
    return POPC_OK;
}

popc_status flow_call_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    return flow_body_cost(ic, "body", 1.0, c);
}

popc_status flow_loop_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    double times = 1.0;
    const popc_view *m = ic->n_inputs > 0 ? &ic->inputs[0] : NULL;

    if (m && m->data && m->dtype == POPC_DTYPE_I64 && popc_view_numel(m) == 1)
        times = (double)*(const int64_t *)m->data;
    return flow_body_cost(ic, "body", times > 0.0 ? times : 0.0, c);
}

popc_status flow_if_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    popc_cost e;
    popc_status st;

    if ((st = flow_body_cost(ic, "then_branch", 1.0, c)) != POPC_OK ||
        (st = flow_body_cost(ic, "else_branch", 1.0, &e)) != POPC_OK)
        return st;
    if (e.flops + e.bytes > c->flops + c->bytes)
        *c = e;
    return POPC_OK;
}
