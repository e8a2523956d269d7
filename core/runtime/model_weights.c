/* model_weights.c - host and device weights with dirty tracking, weights
** shared with a training model, the optimizer and its state (semantics
** §4 R4.5, §5).
*/
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "popc/log.h"
#include "core/alloc_priv.h"
#include "core/runtime/model_priv.h"
#include "core/runtime/model_state_priv.h"
#include "core/optimizer/optimizer_priv.h"

static int find_weight(const popc_model *m, const char *name)
{
    for (int i = 0; name && i < m->n_weights; i++)
        if (strcmp(popc_graph_value_name(m->graph, m->weight_values[i]),
                   name) == 0)
            return i;
    return -1;
}

static popc_status unknown_weight(const popc_model *m, const char *name)
{
    return popc_set_error(POPC_ENOTFOUND, "model '%s' has no weight or "
                          "buffer named '%s'; popc_model_tensor_name lists "
                          "the %d it has", popc_graph_name(m->graph),
                          name ? name : "(null)", m->n_weights);
}

/* ---- host <-> device ----------------------------------------------------- */

static void copy_to_host(popc_model *m)
{
    for (int i = 0; i < m->n_weights; i++) {
        popc_tensor *t = popc_graph_value_tensor(m->graph, m->weight_values[i]);
        int pw = m->weight_plan[i];
        if (pw < 0 || !t)
            continue;
        memcpy(popc_tensor_data(t), popci_exec_weight(m->exec, pw),
               popc_tensor_nbytes(t));
    }
    popci_hooks_weights_to_host(m);
    m->host_dirty = 0;
    m->host_version++;
}

popc_status popci_model_sync_host(popc_model *m)
{
    if (m->exec && m->host_dirty)
        copy_to_host(m);
    return POPC_OK;
}

void popci_model_push_weights(popc_model *m)
{
    for (int i = 0; m->exec && i < m->n_weights; i++) {
        popc_tensor *t = popc_graph_value_tensor(m->graph, m->weight_values[i]);
        if (m->weight_plan[i] >= 0 && t)
            popci_exec_write_weight(m->exec, m->weight_plan[i],
                                    popc_tensor_cdata(t));
    }
    popci_hooks_weights_to_device(m);
    m->device_dirty = 0;
}

popc_status popc_model_copy_weights_to_host(popc_model *m)
{
    popc_status st;

    if ((st = popci_model_require_compiled(m)) != POPC_OK)
        return st;
    copy_to_host(m);
    return POPC_OK;
}

popc_status popc_model_copy_weights_to_device(popc_model *m)
{
    popc_status st;

    if ((st = popci_model_require_compiled(m)) != POPC_OK)
        return st;
    /* Host values win: training done on the device since the last copy
    ** to the host is dropped, as in PopTorch. */
    popci_model_push_weights(m);
    m->host_dirty = 0;
    return POPC_OK;
}

popc_status popc_model_get_weight(popc_model *m, const char *name,
                                  const popc_tensor **out)
{
    int i;
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_model_get_weight: out is "
                              "NULL");
    *out = NULL;
    if (!m)
        return popc_set_error(POPC_EINVAL, "popc_model_get_weight: model "
                              "is NULL");
    if ((i = find_weight(m, name)) < 0)
        return unknown_weight(m, name);
    if ((st = popci_model_sync_host(m)) != POPC_OK)
        return st;
    *out = popc_graph_value_tensor(m->graph, m->weight_values[i]);
    return POPC_OK;
}

popc_status popc_model_set_weight(popc_model *m, const char *name,
                                  const popc_tensor *t)
{
    int i;
    popc_status st;

    if (!m || !t)
        return popc_set_error(POPC_EINVAL, "popc_model_set_weight: model "
                              "or tensor is NULL");
    if ((i = find_weight(m, name)) < 0)
        return unknown_weight(m, name);
    /* Keep the other weights' trained values: bring them over first. */
    if ((st = popci_model_sync_host(m)) != POPC_OK)
        return st;
    if ((st = popc_graph_set_initializer(m->graph, m->weight_values[i], t)) !=
        POPC_OK ||
        (st = popci_hooks_weight_set(m, i)) != POPC_OK)
        return st;
    m->host_version++;
    if (m->exec)
        m->device_dirty = 1;
    return POPC_OK;
}

int popc_model_n_tensors(const popc_model *m)
{
    return m ? m->n_weights : 0;
}

const char *popc_model_tensor_name(const popc_model *m, int i)
{
    if (!m || i < 0 || i >= m->n_weights)
        return NULL;
    return popc_graph_value_name(m->graph, m->weight_values[i]);
}

/* ---- sharing ------------------------------------------------------------- */

popc_status popc_model_share_weights(popc_model *inference,
                                     popc_model *training)
{
    popc_model **ns;
    int shared = 0;

    if (!inference || !training || inference->training ||
        !training->training)
        return popc_set_error(POPC_EINVAL, "popc_model_share_weights: "
                              "needs an inference model and a training "
                              "model, in that order");
    for (int i = 0; i < inference->n_weights; i++) {
        int v = inference->weight_values[i];
        const char *name = popc_graph_value_name(inference->graph, v);
        int j = find_weight(training, name);
        popc_view a, b;
        if (j < 0)
            continue;
        a = popc_graph_value_info(inference->graph, v);
        b = popc_graph_value_info(training->graph,
                                  training->weight_values[j]);
        if (a.dtype != b.dtype || a.rank != b.rank ||
            memcmp(a.dims, b.dims, sizeof(int64_t) * (size_t)a.rank) != 0) {
            char s1[128], s2[128];
            return popc_set_error(POPC_EINVAL, "popc_model_share_weights: "
                                  "weight '%s' is %s in the inference model "
                                  "but %s in the training model", name,
                                  popc_view_describe(&a, s1, sizeof s1),
                                  popc_view_describe(&b, s2, sizeof s2));
        }
        shared++;
    }
    if (shared == 0)
        return popc_set_error(POPC_EINVAL, "popc_model_share_weights: the "
                              "models have no weight name in common");
    popci_model_unshare(inference);
    ns = popci_realloc(training->sharers,
                 sizeof *ns * (size_t)(training->n_sharers + 1));
    if (!ns)
        return popc_set_error(POPC_ENOMEM, "popc_model_share_weights: out "
                              "of memory");
    training->sharers = ns;
    training->sharers[training->n_sharers++] = inference;
    inference->shared_from = training;
    inference->shared_version = UINT64_MAX;
    return POPC_OK;
}

void popci_model_unshare(popc_model *m)
{
    popc_model *t = m->shared_from;

    if (t) {
        for (int i = 0; i < t->n_sharers; i++)
            if (t->sharers[i] == m) {
                t->sharers[i] = t->sharers[--t->n_sharers];
                break;
            }
        m->shared_from = NULL;
    }
    for (int i = 0; i < m->n_sharers; i++)
        m->sharers[i]->shared_from = NULL;
    free(m->sharers);
    m->sharers = NULL;
    m->n_sharers = 0;
}

popc_status popci_model_sync_shared(popc_model *m)
{
    popc_model *t = m->shared_from;
    popc_status st;

    if (!t)
        return POPC_OK;
    if ((st = popci_model_sync_host(t)) != POPC_OK)
        return st;
    if (t->host_version == m->shared_version)
        return POPC_OK;
    for (int i = 0; i < m->n_weights; i++) {
        int v = m->weight_values[i];
        int j = find_weight(t, popc_graph_value_name(m->graph, v));
        if (j < 0)
            continue;
        if ((st = popc_graph_set_initializer(
                 m->graph, v,
                 popc_graph_value_tensor(t->graph, t->weight_values[j]))) !=
            POPC_OK)
            return st;
    }
    m->shared_version = t->host_version;
    m->host_version++;
    if (m->exec)
        m->device_dirty = 1;
    return POPC_OK;
}

/* ---- optimizer ----------------------------------------------------------- */

popc_status popci_model_ensure_state(popc_model *m)
{
    if (m->state)
        return POPC_OK;
    return popci_optstate_new(m->optimizer, m->graph, &m->state);
}

/* Before compiling, a new optimizer may keep the state only if it has
** the same arrays for every weight. */
static int state_fits(const popc_model *m, const popc_optimizer *o)
{
    for (int i = 0; i < m->n_weights; i++) {
        const char *name = popc_graph_value_name(m->graph, m->weight_values[i]);
        int n = 0, group = popci_optimizer_group_of(o, name);
        if (!popci_optstate_arrays(m->state, name, &n))
            continue;
        if (n != popci_optimizer_n_state(o, group))
            return 0;
        for (int j = 0; j < n; j++) {
            const char *a = popci_optstate_state_name(m->state, name, j);
            const char *b = popci_optimizer_state_name(o, group, j);
            if (!a || !b || strcmp(a, b) != 0)
                return 0;
        }
    }
    return 1;
}

popc_status popc_model_set_optimizer(popc_model *m, const popc_optimizer *o)
{
    popc_optimizer *copy = NULL;
    popc_status st;

    if (!m || !o)
        return popc_set_error(POPC_EINVAL, "popc_model_set_optimizer: model "
                              "or optimizer is NULL");
    if (!m->training)
        return popc_set_error(POPC_ESTATE, "popc_model_set_optimizer: an "
                              "inference model has no optimizer; use a "
                              "training model");
    /* R2.3: float16 accumulation needs the Running strategy, which only
    ** a compile can choose; PopTorch checks this before anything else */
    if (m->exec && popci_optimizer_accum_dtype(o) == POPC_DTYPE_F16 &&
        m->exec->cfg.strategy != POPC_MEAN_RUNNING)
        return popc_set_error(POPC_EINVAL, "Invalid optimizer: the new "
                              "optimizer would require changing options."
                              "Training.meanAccumulationAndReplication"
                              "ReductionStrategy to poptorch."
                              "MeanReductionStrategy.Running but the "
                              "executable is already compiled.");
    if (m->exec &&
        (st = popci_optimizer_check_replacement(m->optimizer, o)) != POPC_OK)
        return st;
    if ((st = popc_optimizer_clone(o, &copy)) != POPC_OK)
        return st;
    if (!m->exec && m->state && (popci_optimizer_def(o) !=
                                     popci_optimizer_def(m->optimizer) ||
                                 !state_fits(m, o))) {
        popci_optstate_free(m->state);
        m->state = NULL;
    }
    popc_optimizer_free(m->optimizer);
    m->optimizer = copy;
    return POPC_OK;
}

static popc_status need_state(popc_model *m)
{
    if (!m)
        return popc_set_error(POPC_EINVAL, "optimizer state: model is NULL");
    if (!m->training)
        return popc_set_error(POPC_ESTATE, "optimizer state: an inference "
                              "model has no optimizer; use a training model");
    return popci_model_ensure_state(m);
}

static int find_state(const popc_model *m, const char *name)
{
    for (int i = 0; name && i < popci_optstate_count(m->state); i++)
        if (strcmp(popci_optstate_name(m->state, i), name) == 0)
            return i;
    return -1;
}

int popc_model_n_optimizer_states(popc_model *m)
{
    if (!m || !m->training || need_state(m) != POPC_OK)
        return 0;
    return popci_optstate_count(m->state);
}

const char *popc_model_optimizer_state_name(popc_model *m, int i)
{
    if (!m || !m->training || need_state(m) != POPC_OK)
        return NULL;
    return popci_optstate_name(m->state, i);
}

/* The state as it stands (initial values, or what a resume set and holds
** for the compile), whether or not the model was compiled. */
popc_status popci_model_peek_optimizer_state(popc_model *m, const char *name,
                                             popc_tensor **out)
{
    int i;
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "optimizer state: out is NULL");
    *out = NULL;
    if ((st = need_state(m)) != POPC_OK)
        return st;
    if ((i = find_state(m, name)) < 0)
        return popc_set_error(POPC_ENOTFOUND, "optimizer state '%s' does not "
                              "exist; names are \"<weight>/<state>\" and "
                              "\"<weight>/step\" (popc_model_optimizer_state_"
                              "name lists them)", name ? name : "(null)");
    return popci_optstate_get(m->state, i, out);
}

popc_status popc_model_get_optimizer_state(popc_model *m, const char *name,
                                           popc_tensor **out)
{
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "optimizer state: out is NULL");
    *out = NULL;
    if ((st = need_state(m)) != POPC_OK)
        return st;
    /* R4.6: PopTorch's optimizer state_dict has ipu_state None until the
    ** model is compiled; a value set before then is held, not readable */
    if (!m->state_exists)
        return popc_set_error(POPC_ESTATE, "optimizer state '%s': the model "
                              "has not been compiled, and the optimizer "
                              "state does not exist before the compile; "
                              "compile or run the model first (a state set "
                              "before, as by a resume, is held and loaded "
                              "at the compile)", name ? name : "(null)");
    return popci_model_peek_optimizer_state(m, name, out);
}

popc_status popc_model_set_optimizer_state(popc_model *m, const char *name,
                                           const popc_tensor *t)
{
    int i;
    popc_status st;

    if (!t)
        return popc_set_error(POPC_EINVAL, "optimizer state: tensor is "
                              "NULL");
    if ((st = need_state(m)) != POPC_OK)
        return st;
    if ((i = find_state(m, name)) < 0)
        return popc_set_error(POPC_ENOTFOUND, "optimizer state '%s' does not "
                              "exist; names are \"<weight>/<state>\" and "
                              "\"<weight>/step\" (popc_model_optimizer_state_"
                              "name lists them)", name ? name : "(null)");
    return popci_optstate_set(m->state, i, t);
}
