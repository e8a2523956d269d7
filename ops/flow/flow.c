/* flow.c - the "flow" op plugin: ONNX control flow (If, Loop, Scan) and
** popc::Call (an outlined subgraph, call.c). Each
** body is a subgraph attribute run by the host on the reference kernels
** (host->graph_run), once per branch taken or per iteration; values the
** bodies read from the enclosing graph arrive as the node's trailing
** inputs (`__captures`, popc/plugin.h). Shapes are fixed at compile, as
** PopTorch fixes them: a Loop with scan outputs needs its trip count at
** compile, and every iteration's body outputs keep their shapes.
** Gradients: grad.c. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "ops/flow/flow_priv.h"

const popc_host *flow_host;

popc_status flow_body(const char *op, const char *node,
                      const popc_attrs *attrs, const char *name,
                      flow_sig *sig)
{
    const popc_attr *a = popc_attrs_find(attrs, name);
    popc_status st;

    if (!a || a->type != POPC_ATTR_GRAPH || !a->graph)
        return flow_host->set_error(POPC_EINVAL, "%s '%s': subgraph "
                                    "attribute '%s' is missing", op, node,
                                    name);
    if (!POPC_HAS_FIELD(popc_host, flow_host->size, graph_run) ||
        !flow_host->graph_run)
        return flow_host->set_error(POPC_EPLUGIN, "%s '%s': this libpopc "
                                    "cannot run subgraphs; use the libpopc "
                                    "this plugin was built with", op, node);
    sig->g = a->graph;
    if ((st = flow_host->graph_signature(a->graph, &sig->n_in, sig->in,
                                         &sig->n_out, sig->out,
                                         FLOW_MAX_IO)) != POPC_OK)
        return st;
    if (sig->n_in > FLOW_MAX_IO || sig->n_out > FLOW_MAX_IO)
        return flow_host->set_error(POPC_EUNSUPPORTED, "%s '%s': body '%s' "
                                    "has %d inputs and %d outputs; popc "
                                    "supports up to %d of each", op, node,
                                    name, sig->n_in, sig->n_out,
                                    FLOW_MAX_IO);
    return POPC_OK;
}

popc_status flow_captures(const char *op, const char *node,
                          const popc_attrs *attrs, int n_inputs, int first,
                          int *n_captures)
{
    int64_t c = popc_attr_int(attrs, "__captures", 0);

    if (c < 0 || c > n_inputs - first)
        return flow_host->set_error(POPC_EINVAL, "%s '%s': __captures is "
                                    "%lld, but the node has %d inputs after "
                                    "its own %d", op, node, (long long)c,
                                    n_inputs - first, first);
    *n_captures = (int)c;
    return POPC_OK;
}

popc_status flow_same(const char *op, const char *node, const char *what,
                      const popc_view *a, const char *where_a,
                      const popc_view *b, const char *where_b)
{
    char sa[160], sb[160];
    int ok = a->dtype == b->dtype && a->rank == b->rank;

    for (int d = 0; ok && d < a->rank; d++)
        ok = a->dims[d] == b->dims[d];
    if (ok)
        return POPC_OK;
    snprintf(sa, sizeof sa, "%s[", popc_dtype_name(a->dtype));
    for (int d = 0; d < a->rank; d++)
        snprintf(sa + strlen(sa), sizeof sa - strlen(sa), "%s%lld",
                 d ? ", " : "", (long long)a->dims[d]);
    snprintf(sb, sizeof sb, "%s[", popc_dtype_name(b->dtype));
    for (int d = 0; d < b->rank; d++)
        snprintf(sb + strlen(sb), sizeof sb - strlen(sb), "%s%lld",
                 d ? ", " : "", (long long)b->dims[d]);
    return flow_host->set_error(POPC_EINVAL, "%s '%s': %s is %s] %s but "
                                "%s] %s; popc fixes shapes at compile, so "
                                "they must agree", op, node, what, sa,
                                where_a, sb, where_b);
}

popc_status flow_alloc_views(const char *op, const char *node,
                             const popc_view *like, int n, popc_view *out)
{
    for (int i = 0; i < n; i++) {
        out[i] = like[i];
        out[i].data = flow_host->alloc(popc_view_nbytes(&like[i]));
        if (!out[i].data) {
            flow_free_views(out, i);
            return flow_host->set_error(POPC_ENOMEM, "%s '%s': out of "
                                        "memory", op, node);
        }
    }
    return POPC_OK;
}

void flow_free_views(popc_view *v, int n)
{
    for (int i = 0; i < n; i++) {
        flow_host->free(v[i].data);
        v[i].data = NULL;
    }
}

static popc_status flow_init(const popc_host *host, popc_registrar *reg)
{
    popc_status st;

    flow_host = host;
    if ((st = flow_register_if(host, reg)) != POPC_OK ||
        (st = flow_register_loop(host, reg)) != POPC_OK ||
        (st = flow_register_call(host, reg)) != POPC_OK)
        return st;
    return flow_register_scan(host, reg);
}

POPC_PLUGIN_DEFINE(flow, "0.1.0", "control flow: If, Loop, Scan", "MIT",
                   flow_init, NULL)
