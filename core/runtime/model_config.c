/* model_config.c - a model's options, read into the configurations its
** compile is built from: the batching, the output mode and anchors, the
** backend and its configuration, the plan's configuration and options,
** and the executor's configuration (core/runtime/model_config_priv.h).
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/log.h"
#include "popc/registry.h"
#include "core/runtime/anchors_priv.h"
#include "core/runtime/model_config_priv.h"
#include "core/backend_option.h"
#include "core/options/options_priv.h"
#include "core/optimizer/optimizer_priv.h"
#include "core/registry_priv.h"
#include "core/layer/strategy.h"

popci_batching popci_config_batching(const popc_model *m)
{
    const popc_options *o = m->opts;
    popci_batching b;

    b.di = popci_opt_int(o, POPCI_O_deviceIterations);
    b.r = popci_opt_int(o, POPCI_O_replicationFactor);
    b.ga = m->training
               ? popci_opt_int(o, POPCI_O_Training_gradientAccumulation)
               : 1;
    b.g = popci_opt_int(o, POPCI_O_inputReplicaGrouping_size);
    b.orthogonal = popci_opt_int(o, POPCI_O_inputReplicaGrouping_type) ==
                   POPC_COMM_ORTHOGONAL;
    b.pipelined_strategy = popci_opt_int(o, POPCI_O_setExecutionStrategy) ==
                           POPC_EXEC_PIPELINED;
    if (b.di < 1)
        b.di = 1;
    if (b.r < 1)
        b.r = 1;
    if (b.ga < 1)
        b.ga = 1;
    if (b.g < 1 || b.r % b.g != 0)
        b.g = 1;
    return b;
}

popc_status popci_config_output_mode(const popc_model *m, int64_t di,
                                     popci_exec_config *ec)
{
    int64_t v = popci_opt_int(m->opts, POPCI_O_outputMode);
    int64_t *period = &ec->period;

    *period = popci_opt_int(m->opts, POPCI_O_outputReturnPeriod);
    if (v == POPC_OUTPUT_DEFAULT)
        v = m->training ? POPC_OUTPUT_FINAL : POPC_OUTPUT_ALL;
    ec->mode = (popc_output_mode)v;
    if (v != POPC_OUTPUT_EVERYN) {
        *period = 1;
        return POPC_OK;
    }
    if (*period <= 0)
        return popc_set_error(POPC_EINVAL, "EveryN anchor must have "
                              "output_return_period set to valid positive "
                              "integer");
    if (*period > di)
        return popc_set_error(POPC_EINVAL, "Return period must be <= to the "
                              "number of batches per step (outputReturnPeriod "
                              "%lld, deviceIterations %lld)",
                              (long long)*period, (long long)di);
    if (di % *period != 0)
        return popc_set_error(POPC_EINVAL, "Return period must be a factor "
                              "of the number of batches per step "
                              "(outputReturnPeriod %lld, deviceIterations "
                              "%lld)", (long long)*period, (long long)di);
    return POPC_OK;
}

const popc_backend_def *popci_backend_for(const popc_options *o,
                                          const popc_registry *reg,
                                          int *stand_in)
{
    const char *name = popci_opt_string(o, POPCI_O_backend);
    const popc_backend_def *d = name && *name
                                    ? popc_registry_find_backend(reg, name)
                                    : NULL;

    *stand_in = 0;
    /* Only a backend the user asked for must exist; for the option's
    ** default, the best loaded backend that runs stands in. */
    if (!d && !popci_opt_is_set(o, POPCI_O_backend) &&
        (d = popc_registry_best_backend(reg, POPC_BACKEND_CAN_RUN, 0)))
        *stand_in = 1;
    return d;
}

popc_status popci_config_find_backend(const popc_model *m,
                                      const popc_backend_def **out)
{
    const char *name = popci_opt_string(m->opts, POPCI_O_backend);
    popc_registry *reg;
    popc_status st;
    int stand_in;

    *out = NULL;
    if ((st = popc_registry_global(&reg)) != POPC_OK)
        return st;
    if ((*out = popci_backend_for(m->opts, reg, &stand_in)) && stand_in)
        popc_log(POPC_LOG_WARN, "backend '%s' is not available; using the "
                 "%s backend", name ? name : "", (*out)->name);
    if (!*out) {
        char names[512];

        /* a value of the backend option: the configuration's to fix */
        popci_registry_backend_names(reg, names, sizeof names);
        return popc_set_error(POPC_ECONFIG, "backend '%s' is not "
                              "registered: no loaded plugin provides it; "
                              "the registered backends are %s (check "
                              "POPC_PLUGIN_PATH and `popc plugins`)%s%s",
                              name, names, *popc_registry_problems(reg) ?
                              "; refused plugins: " : "",
                              popc_registry_problems(reg));
    }
    return POPC_OK;
}

popc_status popci_config_anchors(popc_model *m, const popci_batching *b,
                                 popci_exec_config *ec)
{
    popc_status st;

    popci_anchors_free(m->anchors);
    m->anchors = NULL;
    if ((st = popci_anchors_parse(
             popci_opt_string(m->opts, POPCI_O_anchorTensor), ec->mode,
             ec->period, b->di, &m->anchors)) != POPC_OK)
        return st;
    if (m->anchors) {
        ec->anchor_mode = m->anchors->mode;
        ec->anchor_period = m->anchors->period;
    }
    return POPC_OK;
}

popc_status popci_config_plan(const popc_model *m, const popci_batching *b,
                              const popc_view *micro, int n,
                              popci_plan_config *pc)
{
    *pc = (popci_plan_config){
        .training = m->training, .n_inputs = n, .inputs = micro,
        .replicas = (int)b->r, .loss_scaling = 1.0,
        .strategy = popci_layer_strategy->from_options(m->opts),
        .rewrite = popci_hooks_rewrite_graph,
        .opt_level = (int)popci_opt_int(m->opts, POPCI_O_optimizationLevel),
        .choose = popci_hooks_choose_kernel,
        .kernel_selection =
            (int)popci_opt_int(m->opts, POPCI_O_kernelSelection)};
    if (m->anchors) {
        pc->n_anchors = m->anchors->n;
        pc->anchors = (const char *const *)m->anchors->long_names;
    }
    if (m->training) {
        pc->loss_scaling = popci_optimizer_loss_scaling(m->optimizer);
        if (pc->loss_scaling == 0.0)
            return popc_set_error(POPC_EINVAL, "Loss scaling cannot be 0");
    }
    return POPC_OK;
}

/* setAvailableMemoryProportion ("IPU0=0.5,IPU1=0.3") applies per IPU: a
** node without a proportion of its own takes its IPU's. IPUs the option
** does not name keep the backend's default. */
static void apply_ipu_memory(const popc_options *o, popci_plan *plan)
{
    const char *s = popci_opt_string(o, POPCI_O_setAvailableMemoryProportion);

    for (int k = 0; s && k < plan->pub.n_nodes; k++) {
        popc_plan_node *pn = &plan->nodes[k];
        const char *q = s;
        char key[32];
        size_t kl;

        if (pn->available_memory > 0.0)
            continue;
        kl = (size_t)snprintf(key, sizeof key, "IPU%d=", pn->ipu);
        /* the option's canonical form is "IPU0=0.5,IPU1=0.3" (hook_amp) */
        while (q && strncmp(q, key, kl) != 0)
            if ((q = strchr(q, ',')) != NULL)
                q++;
        if (q)
            pn->available_memory = strtod(q + kl, NULL);
    }
}

/* The kernel flags the options ask for; stochastic rounding only where
** the backend rounds so. */
static popc_status kernel_flags(const popc_options *o,
                                const popc_backend_def *be, unsigned *flags)
{
    if (popci_opt_int(o, POPCI_O_enableStableNorm))
        *flags |= POPC_KERNEL_STABLE_NORM;
    if (popci_opt_int(o, POPCI_O_Precision_enableFloatingPointExceptions))
        *flags |= POPC_KERNEL_FP_EXCEPTIONS;
    /* setPartialsType's enum: 1 is half */
    if (popci_opt_int(o, POPCI_O_Precision_setPartialsType) == 1)
        *flags |= POPC_KERNEL_HALF_PARTIALS;
    if (popci_opt_int(o, POPCI_O_Precision_enableStochasticRounding)) {
        if (!(be->caps & POPC_BACKEND_STOCHASTIC_ROUNDING))
            return popc_set_error(POPC_EUNSUPPORTED, "Precision."
                                  "enableStochasticRounding: the %s backend "
                                  "rounds float16 to nearest (it is the "
                                  "deterministic reference); use the "
                                  "ipumodel backend", be->name);
        *flags |= POPC_KERNEL_STOCHASTIC_ROUNDING;
    }
    return POPC_OK;
}

popc_status popci_config_plan_options(const popc_model *m,
                                      const popc_backend_def *be,
                                      popci_plan *plan)
{
    popc_status st;

    apply_ipu_memory(m->opts, plan);
    if ((st = popci_plan_store_marked(plan)) != POPC_OK)
        return st;
    return kernel_flags(m->opts, be, &plan->pub.kernel_flags);
}

/* §6: only multi-IPU pipelines are pipelined. */
int popci_config_pipelined(const popci_batching *b, const popci_plan *p)
{
    return b->pipelined_strategy && p->pub.n_ipus > 1;
}

void popci_config_exec(const popc_model *m, const popci_batching *b,
                       const popci_plan *plan, popci_exec_config *ec)
{
    const popc_options *o = m->opts;

    ec->training = m->training;
    ec->device_iterations = b->di;
    ec->replicas = b->r;
    ec->grad_accum = b->ga;
    ec->input_group = b->g;
    ec->input_orthogonal = b->orthogonal;
    ec->reduction = (popc_reduction_type)popci_opt_int(
        o, POPCI_O_Training_accumulationAndReplicationReductionType);
    ec->strategy = (popc_mean_strategy)popci_opt_int(
        o, POPCI_O_Training_meanAccumulationAndReplicationReductionStrategy);
    ec->random_seed = (uint64_t)popci_opt_int(o, POPCI_O_randomSeed);
    ec->synthetic = (int)popci_opt_int(o, POPCI_O_enableSyntheticData);
    ec->auto_loss_scaling =
        m->training &&
        popci_opt_int(o, POPCI_O_Training_setAutomaticLossScaling);
    ec->synthetic_mode = (int)popci_opt_int(o, POPCI_O_syntheticDataMode);
    ec->pipelined = popci_config_pipelined(b, plan);
    ec->broadcast_buffers = (int)popci_opt_int(o, POPCI_O_broadcastBuffers);
}

popc_backend_config popci_config_backend(const popc_model *m)
{
    const popc_options *o = m->opts;
    popc_backend_config c;

    memset(&c, 0, sizeof c);
    c.size = sizeof c;
    c.threads = (int)popci_opt_int(o, POPCI_O_threads);
    c.ipu_version = (int)popci_opt_int(o, POPCI_O_ipuVersion);
    c.log_cycles = (int)popci_opt_int(o, POPCI_O_logCycleCount);
    c.io_tiles = (int)popci_opt_int(o, POPCI_O_TensorLocations_numIOTiles);
    popci_backend_config_options(&c, o);
    c.device_iterations = popci_opt_int(o, POPCI_O_deviceIterations);
    c.gradient_accumulation =
        m->training ? popci_opt_int(o, POPCI_O_Training_gradientAccumulation)
                    : 1;
    c.profile_dir = popci_opt_string(o, POPCI_O_enableProfiling);
    return c;
}
