/* host.c - the "host" op plugin: popc::HostOp, PopTorch's CPU op
** (poptorch.CPU). The node holds only the callback's ID and its outputs'
** dtypes and shapes (attributes written by popc_cpu_op); the kernel asks
** the host table to call whatever the running model registered under the
** ID, passing every dtype through unchanged.
**
**   id             string: the callback's ID
**   output_dtypes  ints: popc_dtype of each output
**   output_shapes  ints: rank, dims... of each output in turn
**   batch          int: dim 0 of input 0 when the node was added, or -1;
**                  an output whose dim 0 equals it follows input 0's dim 0
**                  (the micro-batch the model is compiled with)
**
** The op runs on the host (POPC_OP_HOST: backends serialise it and charge
** the host round trip) and is never folded. It has no gradient: CPU ops are
** only supported in inference graphs, which infer() enforces.
*/
#include "config.h"

#include <string.h>

#include "popc/plugin.h"

static const popc_host *host;

/* Output j's dtype and shape from the attributes, or an error. */
static popc_status output_info(const popc_attrs *a, const char *node, int j,
                               const popc_view *in0, popc_view *out)
{
    const popc_attr *dt = popc_attrs_find(a, "output_dtypes");
    const popc_attr *sh = popc_attrs_find(a, "output_shapes");
    int64_t batch = popc_attr_int(a, "batch", -1), pos = 0;

    if (!dt || dt->type != POPC_ATTR_INTS || !sh ||
        sh->type != POPC_ATTR_INTS || j >= dt->n)
        return host->set_error(POPC_EINVAL, "HostOp '%s': attributes "
                               "output_dtypes and output_shapes must describe "
                               "output %d; add CPU ops with popc_cpu_op()",
                               node, j);
    for (int k = 0; k <= j; k++) {
        int64_t rank = pos < sh->n ? sh->ints[pos] : -1;

        if (rank < 0 || rank > POPC_MAX_RANK || pos + 1 + rank > sh->n)
            return host->set_error(POPC_EINVAL, "HostOp '%s': attribute "
                                   "output_shapes is malformed at output %d",
                                   node, k);
        if (k == j) {
            memset(out, 0, sizeof *out);
            out->dtype = (popc_dtype)dt->ints[j];
            out->rank = (int)rank;
            for (int d = 0; d < out->rank; d++)
                out->dims[d] = sh->ints[pos + 1 + d];
        }
        pos += 1 + rank;
    }
    if (!popc_dtype_size(out->dtype))
        return host->set_error(POPC_EINVAL, "HostOp '%s': output %d has "
                               "unknown dtype %d", node, j, (int)out->dtype);
    if (batch >= 0 && in0 && in0->rank > 0 && out->rank > 0 &&
        out->dims[0] == batch)
        out->dims[0] = in0->dims[0];
    return POPC_OK;
}

static popc_status host_infer(popc_infer_ctx *ic)
{
    const char *id = popc_attr_string(ic->attrs, "id", NULL);
    const popc_view *in0 = ic->n_inputs > 0 ? &ic->inputs[0] : NULL;
    popc_status st;

    if (!id || !id[0])
        return ic->host->set_error(POPC_EINVAL, "HostOp '%s': attribute id "
                                   "(the callback's ID) is missing",
                                   ic->node_name);
    if (ic->training)
        return ic->host->set_error(POPC_EUNSUPPORTED, "HostOp '%s': CPU ops "
                                   "are only supported in inference graphs "
                                   "(CPU op ID '%s' has no gradient); run "
                                   "it in an inference model, or outside "
                                   "the model", ic->node_name, id);
    for (int j = 0; j < ic->n_outputs; j++)
        if ((st = output_info(ic->attrs, ic->node_name, j, in0,
                              &ic->outputs[j])) != POPC_OK)
            return st;
    return POPC_OK;
}

static popc_status host_forward(const popc_kernel_ctx *kc)
{
    const char *id = popc_attr_string(kc->attrs, "id", "");
    popc_status st;

    /* the callback sees zeros where it writes nothing, not stale data */
    for (int j = 0; j < kc->n_outputs; j++)
        if (kc->outputs[j].data)
            memset(kc->outputs[j].data, 0, popc_view_nbytes(&kc->outputs[j]));
    st = kc->host->host_call(kc->user, id, kc->inputs, kc->n_inputs,
                             kc->outputs, kc->n_outputs);
    if (st == POPC_OK)
        return POPC_OK;
    if (POPC_HAS_FIELD(popc_host, kc->host->size, last_error) &&
        kc->host->last_error)
        return kc->host->set_error(st, "HostOp '%s': %s", kc->node_name,
                                   kc->host->last_error());
    return st;
}

/* A host round trip moves the inputs out and the outputs back. */
static popc_status host_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    c->flops = 0.0;
    c->bytes = 0.0;
    c->temp_bytes = 0.0;
    for (int i = 0; i < ic->n_inputs; i++)
        c->bytes += (double)popc_view_nbytes(&ic->inputs[i]);
    for (int j = 0; j < ic->n_outputs; j++)
        c->bytes += (double)popc_view_nbytes(&ic->outputs[j]);
    return POPC_OK;
}

static const popc_op_def host_ops[] = {
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "HostOp",
        .since_version = 1,
        .min_inputs = 0,
        .max_inputs = -1,
        .min_outputs = 0,
        .max_outputs = -1,
        .flags = POPC_OP_HOST | POPC_OP_NOFOLD,
        .infer = host_infer,
        .forward = host_forward,
        .grad = NULL,
        .cost = host_cost,
        .doc = "CPU op: calls the host callback registered under attribute "
               "id (poptorch.CPU); inference only",
        .role = POPC_ROLE_HOST_CALL,
    },
};

static popc_status host_init(const popc_host *h, popc_registrar *reg)
{
    popc_status st;

    host = h;
    for (size_t i = 0; i < sizeof host_ops / sizeof host_ops[0]; i++)
        if ((st = h->register_op(reg, &host_ops[i])) != POPC_OK)
            return st;
    return POPC_OK;
}

POPC_PLUGIN_DEFINE(host, "0.1.0", "CPU ops: host callbacks in compiled "
                   "graphs (poptorch.CPU)", "MIT", host_init, NULL)
