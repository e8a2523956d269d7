/* model_view.c - a model as the layers above the core see it
** (core/layer/model.h): its executor, its weights and their host copies,
** its optimizer state.
*/
#include "config.h"

#include "core/runtime/model_priv.h"

popci_exec *popci_model_executor(popc_model *m)
{
    return m ? m->exec : NULL;
}

int popci_model_training(const popc_model *m)
{
    return m->training;
}

const popc_options *popci_model_options(const popc_model *m)
{
    return m->opts;
}

const popci_exec *popci_model_executor_c(const popc_model *m)
{
    return m ? m->exec : NULL;
}

int64_t popci_model_reserved_ipus(const popc_model *m)
{
    return m->reserved_ipus;
}

double popci_model_compile_time(const popc_model *m)
{
    return m->compile_time;
}

void popci_model_latencies(const popc_model *m, double *total,
                           double *host, double *compute)
{
    *total = m->lat_total;
    *host = m->lat_host;
    *compute = m->lat_compute;
}

void popci_model_host_stale(popc_model *m)
{
    m->host_dirty = 1;
}

int popci_model_n_weights(const popc_model *m)
{
    return m->n_weights;
}

const char *popci_model_weight_name(const popc_model *m, int i)
{
    return popc_graph_value_name(m->graph, m->weight_values[i]);
}

popc_tensor *popci_model_weight_host(const popc_model *m, int i)
{
    return popc_graph_value_tensor(m->graph, m->weight_values[i]);
}

int popci_model_weight_plan(const popc_model *m, int i)
{
    return m->exec ? m->weight_plan[i] : -1;
}

const char *popci_model_graph_name(const popc_model *m)
{
    return popc_graph_name(m->graph);
}

popc_graph *popci_model_host_graph(const popc_model *m)
{
    return m->graph;
}

int popci_model_weight_value(const popc_model *m, int i)
{
    return m->weight_values[i];
}

int popci_model_n_inputs(const popc_model *m)
{
    return m->n_inputs;
}

popc_view popci_model_input_sig(const popc_model *m, int i)
{
    return m->sig[i];
}

const popc_optimizer *popci_model_optimizer(const popc_model *m)
{
    return m->optimizer;
}

uint64_t popci_model_runs(const popc_model *m)
{
    return m->runs;
}

void popci_model_set_runs(popc_model *m, uint64_t runs)
{
    m->runs = runs;
}

void popci_model_host_changed(popc_model *m)
{
    m->host_version++;
    if (m->exec)
        m->device_dirty = 1;
}

popc_status popci_model_state_set_groups(popc_model *m, const char *name,
                                         int n_groups)
{
    return m->state ? popci_optstate_set_groups(m->state, name, n_groups)
                    : POPC_OK;
}

int popci_model_n_states(const popc_model *m)
{
    return m->state ? popci_optstate_count(m->state) : 0;
}

const char *popci_model_state_name(const popc_model *m, int i)
{
    return popci_optstate_name(m->state, i);
}

popc_status popci_model_state_get(const popc_model *m, int i,
                                  popc_tensor **out)
{
    return popci_optstate_get(m->state, i, out);
}
