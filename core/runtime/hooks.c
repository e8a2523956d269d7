/* hooks.c - the core's side of the layer hooks (core/layer/hooks.h): it calls
** every table of popci_layer_hooks in order and gives each its slot of
** the model.
*/
#include "config.h"

#include <stddef.h>

#include "core/runtime/hooks_priv.h"
#include "core/runtime/model_priv.h"

#define EACH(i) \
    for (int i = 0; i < POPCI_MAX_LAYERS && popci_layer_hooks[i]; i++)

popc_status popci_hooks_compile_begin(popc_model *m, popci_compile_states *cs)
{
    popc_status st;

    EACH(i) {
        const popci_model_hooks *h = popci_layer_hooks[i];

        cs->state[i] = NULL;
        if (h->compile_begin &&
            (st = h->compile_begin(m, &m->layer_data[i], &cs->state[i])) !=
                POPC_OK)
            return st;
    }
    return POPC_OK;
}

void popci_hooks_compile_phase(popci_compile_states *cs, int phase)
{
    EACH(i) {
        const popci_model_hooks *h = popci_layer_hooks[i];

        if (h->compile_phase)
            h->compile_phase(cs->state[i], phase);
    }
}

popc_status popci_hooks_compile_plan(popci_compile_states *cs, popc_model *m,
                                     popc_tensor *const *inputs, int n,
                                     popci_plan_config *pc)
{
    popc_status st;

    EACH(i) {
        const popci_model_hooks *h = popci_layer_hooks[i];

        if (h->compile_plan &&
            (st = h->compile_plan(&cs->state[i], m, &m->layer_data[i],
                                  inputs, n, pc)) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

popc_status popci_hooks_compiled(popci_compile_states *cs, popc_model *m,
                                 const popci_exec *e)
{
    popc_status st;

    EACH(i) {
        const popci_model_hooks *h = popci_layer_hooks[i];

        if (h->compiled &&
            (st = h->compiled(cs->state[i], m, &m->layer_data[i], e)) !=
                POPC_OK)
            return st;
    }
    return POPC_OK;
}

void popci_hooks_compile_end(popci_compile_states *cs, popc_model *m, int ok)
{
    EACH(i) {
        const popci_model_hooks *h = popci_layer_hooks[i];

        if (h->compile_end)
            h->compile_end(cs->state[i], m, &m->layer_data[i], ok);
        cs->state[i] = NULL;
    }
}

popci_trace *popci_hooks_run_begin(popc_model *m)
{
    popci_trace *trace = NULL;

    EACH(i) {
        const popci_model_hooks *h = popci_layer_hooks[i];

        popci_trace *t = h->run_begin ? h->run_begin(m, &m->layer_data[i])
                                      : NULL;
        if (!trace)
            trace = t;
    }
    return trace;
}

void popci_hooks_run_end(popc_model *m, double t0)
{
    EACH(i) {
        const popci_model_hooks *h = popci_layer_hooks[i];

        if (h->run_end)
            h->run_end(m, &m->layer_data[i], t0);
    }
}

void popci_hooks_model_free(popc_model *m)
{
    EACH(i) {
        const popci_model_hooks *h = popci_layer_hooks[i];

        if (h->model_free)
            h->model_free(m, &m->layer_data[i]);
        m->layer_data[i] = NULL;
    }
}

void **popci_model_layer_data(popc_model *m, const popci_model_hooks *h)
{
    EACH(i) {
        if (popci_layer_hooks[i] == h)
            return m ? &m->layer_data[i] : NULL;
    }
    return NULL;
}

const void *popci_model_layer_data_c(const popc_model *m,
                                     const popci_model_hooks *h)
{
    EACH(i) {
        if (popci_layer_hooks[i] == h)
            return m ? m->layer_data[i] : NULL;
    }
    return NULL;
}

popc_status popci_hooks_rewrite_graph(popc_graph *g, int level, int training,
                                      const char *const *keep, int n_keep)
{
    popc_status st;

    EACH(i) {
        const popci_model_hooks *h = popci_layer_hooks[i];

        if (h->rewrite_graph &&
            (st = h->rewrite_graph(g, level, training, keep, n_keep)) !=
                POPC_OK)
            return st;
    }
    return POPC_OK;
}

popc_status popci_hooks_choose_kernel(const popc_infer_ctx *ic,
                                      int selection, popc_op_def *derived,
                                      const popc_kernel_def **kernel)
{
    popc_status st;

    EACH(i) {
        const popci_model_hooks *h = popci_layer_hooks[i];

        if (h->choose_kernel && !*kernel &&
            (st = h->choose_kernel(ic, selection, derived, kernel)) !=
                POPC_OK)
            return st;
    }
    return POPC_OK;
}

popc_status popci_hooks_exec_config(popc_model *m, popci_exec_extras *x,
                                    popc_tensor *const *inputs, int n)
{
    popc_status st;

    EACH(i) {
        const popci_model_hooks *h = popci_layer_hooks[i];

        if (h->exec_config &&
            (st = h->exec_config(m, &m->layer_data[i], x, inputs, n)) !=
                POPC_OK)
            return st;
    }
    return POPC_OK;
}

popc_status popci_hooks_adopted(popc_model *m)
{
    popc_status st;

    EACH(i) {
        const popci_model_hooks *h = popci_layer_hooks[i];

        if (h->adopted && (st = h->adopted(m, &m->layer_data[i])) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

void popci_hooks_weights_to_host(popc_model *m)
{
    EACH(i) {
        const popci_model_hooks *h = popci_layer_hooks[i];

        if (h->weights_to_host)
            h->weights_to_host(m, &m->layer_data[i]);
    }
}

void popci_hooks_weights_to_device(popc_model *m)
{
    EACH(i) {
        const popci_model_hooks *h = popci_layer_hooks[i];

        if (h->weights_to_device)
            h->weights_to_device(m, &m->layer_data[i]);
    }
}

popc_status popci_hooks_weight_set(popc_model *m, int w)
{
    popc_status st;

    EACH(i) {
        const popci_model_hooks *h = popci_layer_hooks[i];

        if (h->weight_set &&
            (st = h->weight_set(m, &m->layer_data[i], w)) != POPC_OK)
            return st;
    }
    return POPC_OK;
}
