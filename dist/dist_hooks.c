/* dist_hooks.c - how the distribution layer follows a model (core/layer/
** hooks.h): at each compile it hands the executor the model's replica
** groups and, training, joins the process group the options name, checks
** that every rank compiles the same model and hands the executor its
** port; once the model holds its executor the groups' values go to the
** device and every rank takes rank 0's weights. Inference models never
** communicate: each rank classifies its own share of the data.
*/
#include "config.h"

#include <stdlib.h>

#include "core/layer/alloc.h"
#include "core/layer/model.h"
#include "dist/dist_priv.h"

popc_status popci_dist_model_of(popc_model *m, popci_dist_model **out)
{
    void **data = popci_model_layer_data(m, &popci_dist_hooks);

    if (!*data && !(*data = popci_calloc(1, sizeof(popci_dist_model))))
        return popc_set_error(POPC_ENOMEM, "model '%s': out of memory",
                              popci_model_graph_name(m));
    *out = *data;
    return POPC_OK;
}

const popci_dist_model *popci_dist_of(const popc_model *m)
{
    const popci_dist_model *d = popci_model_layer_data_c(m, &popci_dist_hooks);

    return d && d->comm && popc_model_is_compiled(m) ? d : NULL;
}

static popc_status exec_config(popc_model *m, void **data,
                               popci_exec_extras *x,
                               popc_tensor *const *inputs, int n)
{
    popci_dist_model *d = *data;
    popci_comm *c = NULL;
    popc_status st;

    if (d) {
        x->groupings = popci_rgroups_exec(d->groups, &x->n_groupings);
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
    if ((st = popci_dist_model_of(m, &d)) != POPC_OK)
        return st;
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
    popc_status st;

    if (!d)
        return POPC_OK;
    if ((st = popci_rgroups_compiled(m, d->groups)) != POPC_OK)
        return st;
    return popci_dist_share_weights(m, d->comm);
}

static void weights_to_host(popc_model *m, void **data)
{
    popci_dist_model *d = *data;

    if (d)
        popci_rgroups_pull(m, d->groups);
}

static void weights_to_device(popc_model *m, void **data)
{
    popci_dist_model *d = *data;

    if (d)
        popci_rgroups_push(m, d->groups);
}

static popc_status weight_set(popc_model *m, void **data, int i)
{
    popci_dist_model *d = *data;

    return d ? popci_rgroups_set_all(m, d->groups, i) : POPC_OK;
}

static void model_free(popc_model *m, void **data)
{
    popci_dist_model *d = *data;

    (void)m;
    if (d) {
        popci_rgroups_free(d->groups);
        free(d->buf);
    }
    free(d);
    *data = NULL;
}

const popci_model_hooks popci_dist_hooks = {
    .layer = "dist",
    .exec_config = exec_config,
    .adopted = adopted,
    .weights_to_host = weights_to_host,
    .weights_to_device = weights_to_device,
    .weight_set = weight_set,
    .model_free = model_free,
};
