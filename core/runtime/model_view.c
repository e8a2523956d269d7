/* model_view.c - a model as the layers above the core see it
** (core/layer/model.h): its executor, a stale host copy, its optimizer
** state.
*/
#include "config.h"

#include "core/runtime/model_priv.h"

popci_exec *popci_model_executor(popc_model *m)
{
    return m ? m->exec : NULL;
}

const popc_options *popci_model_options(const popc_model *m)
{
    return m->opts;
}

void popci_model_host_stale(popc_model *m)
{
    m->host_dirty = 1;
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
