/* profile_hooks.c - the profile layer follows a model: each compile shows
** its progress (showCompilationProgressBar) and, once built, resets the
** model's figures and writes the enableProfiling files; each run fills
** the trace and updates the latencies and counters.
*/
#include "config.h"

#include <stdlib.h>

#include "popc/graph.h"
#include "core/layer/alloc.h"
#include "core/layer/model.h"
#include "profile/profile_priv.h"

/* state: this compile's popci_progress; data: the model's popci_profile */
static popc_status compile_begin(popc_model *m, void **data, void **state)
{
    popci_progress *p = popci_malloc(sizeof *p);

    (void)data;
    if (!p)
        return popc_set_error(POPC_ENOMEM, "compile: out of memory");
    popci_progress_begin(p, popci_model_options(m), popci_model_graph_name(m),
                         popci_model_training(m));
    *state = p;
    return POPC_OK;
}

static void compile_phase(void *state, int phase)
{
    if (state)
        popci_progress_phase(state, phase);
}

static popc_status compiled(void *state, popc_model *m, void **data,
                            const popci_exec *e)
{
    popci_progress_end(state, 1);
    return popci_profile_compiled((popci_profile **)data, m, e, state);
}

static void compile_end(void *state, popc_model *m, void **data, int ok)
{
    (void)m;
    (void)data;
    if (!state)
        return;
    popci_progress_end(state, ok); /* no-op after compiled() ended it */
    free(state);
}

static popci_trace *run_begin(popc_model *m, void **data)
{
    (void)m;
    return popci_profile_trace(*data);
}

static void run_end(popc_model *m, void **data, double t0)
{
    popci_profile_ran(*data, m, t0);
}

static void model_free(popc_model *m, void **data)
{
    (void)m;
    popci_profile_free(*data);
    *data = NULL;
}

const popci_model_hooks popci_profile_hooks = {
    .layer = "profile",
    .compile_begin = compile_begin,
    .compile_phase = compile_phase,
    .compiled = compiled,
    .compile_end = compile_end,
    .run_begin = run_begin,
    .run_end = run_end,
    .model_free = model_free,
};
