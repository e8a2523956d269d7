/* dist_hooks.c - how the distribution layer follows a training model
** (core/layer/hooks.h): at each compile it joins the process group the
** options name, checks that every rank compiles the same model and hands
** the executor its port; once the model holds its executor every rank
** takes rank 0's weights. Inference models never communicate: each rank
** classifies its own share of the data.
*/
#include "config.h"

#include <stdlib.h>

#include "core/layer/alloc.h"
#include "core/layer/model.h"
#include "dist/dist_priv.h"

static popc_status exec_config(popc_model *m, void **data,
                               popci_exec_extras *x,
                               popc_tensor *const *inputs, int n)
{
    popci_dist_model *d = *data;
    popci_comm *c = NULL;
    popc_status st;

    if (d) {
        d->comm = NULL;
        d->steps = 0;
        d->seconds = 0.0;
    }
    if (!x->training)
        return POPC_OK;
    if ((st = popci_comm_open(popci_model_options(m), &c)) != POPC_OK ||
        (st = popci_dist_check_config(m, c, x, inputs, n)) != POPC_OK)
        return st;
    if (popci_comm_size(c) <= 1)
        return POPC_OK;
    if (!d && !(*data = d = popci_calloc(1, sizeof *d)))
        return popc_set_error(POPC_ENOMEM, "distributed training: out of "
                              "memory");
    d->comm = c;
    d->port = (popci_dist_port){popci_comm_rank(c), popci_comm_size(c),
                                popci_dist_reduce,
                                popci_dist_broadcast_buffers};
    x->dist = &d->port;
    return POPC_OK;
}

static popc_status adopted(popc_model *m, void **data)
{
    popci_dist_model *d = *data;

    return popci_dist_share_weights(m, d ? d->comm : NULL);
}

static void model_free(popc_model *m, void **data)
{
    popci_dist_model *d = *data;

    (void)m;
    if (d)
        free(d->buf);
    free(d);
    *data = NULL;
}

const popci_dist_model *popci_dist_of(const popc_model *m)
{
    const popci_dist_model *d = popci_model_layer_data_c(m, &popci_dist_hooks);

    return d && d->comm && popc_model_is_compiled(m) ? d : NULL;
}

const popci_model_hooks popci_dist_hooks = {
    .layer = "dist",
    .exec_config = exec_config,
    .adopted = adopted,
    .model_free = model_free,
};
