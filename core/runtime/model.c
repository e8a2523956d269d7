/* model.c - inference and training models: creation, compilation on the
** first run, input validation, runs and destroy (semantics §1, §5).
**
** Weights, weight sharing and the optimizer are in model_weights.c; the
** run itself is the executor's (batching.c).
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/log.h"
#include "popc/registry.h"
#include "core/alloc_priv.h"
#include "core/runtime/anchors_priv.h"
#include "core/graph/graph_priv.h"
#include "core/runtime/model_config_priv.h"
#include "core/runtime/model_priv.h"
#include "core/options/options_priv.h"
#include "core/optimizer/optimizer_priv.h"
#include "core/registry_priv.h"
#include "core/backend_option.h"
#include "core/layer/strategy.h"

#define RUNTIME_SUFFIX                                                       \
    "\nThis error occurred because the inputs passed at runtime don't "     \
    "match the inputs used to compile the model.\nTo recompile the model "  \
    "for the new inputs create a new inferenceModel / trainingModel "       \
    "wrapper or call destroy() on the curent one and try again."

static popc_status oom(const char *where)
{
    return popc_set_error(POPC_ENOMEM, "%s: out of memory", where);
}

static const char *torch_dtype(popc_dtype dt)
{
    switch (dt) {
    case POPC_DTYPE_F32: return "torch.float32";
    case POPC_DTYPE_F16: return "torch.float16";
    case POPC_DTYPE_I32: return "torch.int32";
    case POPC_DTYPE_I64: return "torch.int64";
    case POPC_DTYPE_U8: return "torch.uint8";
    case POPC_DTYPE_BOOL: return "torch.bool";
    case POPC_DTYPE_F64: return "torch.float64";
    case POPC_DTYPE_I8: return "torch.int8";
    case POPC_DTYPE_I16: return "torch.int16";
    case POPC_DTYPE_U16: return "torch.uint16";
    case POPC_DTYPE_U32: return "torch.uint32";
    case POPC_DTYPE_U64: return "torch.uint64";
    case POPC_DTYPE_BF16: return "torch.bfloat16";
    default: return "undefined";
    }
}

/* dims as "[10, 3]", or "torch.Size([10, 3])" as PopTorch prints shapes
** (torch set). */
static const char *shape_text(const int64_t *dims, int rank, int torch,
                              char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "%s[", torch ? "torch.Size(" : "");

    for (int i = 0; i < rank && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? ", " : "",
                              (long long)dims[i]);
    if (n < size)
        snprintf(buf + n, size - n, "]%s", torch ? ")" : "");
    return buf;
}

popc_status popci_model_require_compiled(const popc_model *m)
{
    if (!m || !m->exec)
        return popc_set_error(POPC_ESTATE, "Model has not been compiled or "
                              "has been destroyed.");
    return POPC_OK;
}

const popci_exec *popci_model_exec(const popc_model *m)
{
    return m ? m->exec : NULL;
}

/* ---- creation ------------------------------------------------------------ */

static popc_status list_weights(popc_model *m)
{
    int nv = popc_graph_n_values(m->graph);

    m->weight_values = popci_calloc((size_t)nv + 1, sizeof(int));
    m->weight_plan = popci_calloc((size_t)nv + 1, sizeof(int));
    if (!m->weight_values || !m->weight_plan)
        return oom("model");
    for (int v = 0; v < nv; v++)
        if (popc_graph_value_kind(m->graph, v) == POPC_VALUE_INITIALIZER)
            m->weight_values[m->n_weights++] = v;
    return POPC_OK;
}

/* Semantics §8: gradient accumulation belongs to training. */
static popc_status check_inference_options(const popc_options *o)
{
    if (popci_opt_int(o, POPCI_O_Training_gradientAccumulation) == 1)
        return POPC_OK;
    /* PopTorch adds the hint unless the strategy is sharded. */
    if (popci_opt_int(o, POPCI_O_setExecutionStrategy) == POPC_EXEC_SHARDED)
        return popc_set_error(POPC_EINVAL, "You must set poptorch.Options()."
                              "Training.gradientAccumulation to 1 or leave it "
                              "as its default value (1) when running a "
                              "poptorch.inferenceModel().");
    return popc_set_error(POPC_EINVAL, "You must set "
                          "poptorch.Options().Training.gradientAccumulation "
                          "to 1 or leave it as its default value (1) when "
                          "running a poptorch.inferenceModel(). Use "
                          "poptorch.Options().deviceIterations to process a "
                          "sufficient number of batches each run for "
                          "pipelined execution instead.");
}

static popc_status model_new(const popc_graph *g, popc_options *opts,
                             int training, popc_model **out)
{
    popc_model *m;
    popc_status st;

    *out = NULL;
    if (!g)
        return popc_set_error(POPC_EINVAL, "popc_model_new: graph is NULL");
    if (!(m = popci_calloc(1, sizeof *m)))
        return oom("popc_model_new");
    m->training = training;
    if (opts) {
        st = popc_options_clone(opts, &m->opts);
    } else {
        st = popc_options_new(&m->opts);
    }
    if (st != POPC_OK)
        goto fail;
    popc_options_freeze(m->opts);
    if (!training && (st = check_inference_options(m->opts)) != POPC_OK)
        goto fail;
    if ((st = popci_model_open_log(m)) != POPC_OK)
        goto fail;
    if ((st = popc_graph_clone(g, &m->graph)) != POPC_OK ||
        (st = list_weights(m)) != POPC_OK)
        goto fail;
    if (popci_opt_int(m->opts, POPCI_O_disableModuleNamescope) &&
        (st = popci_graph_drop_scopes(m->graph)) != POPC_OK)
        goto fail;
    *out = m;
    return POPC_OK;
fail:
    popc_model_free(m);
    return st;
}

popc_status popc_model_new_inference(const popc_graph *g, popc_options *opts,
                                     popc_model **out)
{
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_model_new_inference: out "
                              "is NULL");
    /* PopTorch freezes the options a model was made with; a failed call
    ** leaves them as they were */
    if ((st = model_new(g, opts, 0, out)) == POPC_OK && opts)
        popc_options_freeze(opts);
    return st;
}

popc_status popc_model_new_training(const popc_graph *g, popc_options *opts,
                                    const popc_optimizer *optimizer,
                                    popc_model **out)
{
    popc_model *m = NULL;
    int loss;
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_model_new_training: out "
                              "is NULL");
    *out = NULL;
    if (g && (st = popci_graph_final_loss(g, &loss)) != POPC_OK)
        return st;
    if ((st = model_new(g, opts, 1, &m)) != POPC_OK)
        return st;
    if (optimizer) {
        st = popc_optimizer_clone(optimizer, &m->optimizer);
    } else {
        st = popc_optimizer_new(popci_default_optimizer, &m->optimizer);
        if (st == POPC_OK)
            st = popc_optimizer_set(m->optimizer, "lr", popci_default_lr);
    }
    if (st != POPC_OK) {
        popc_model_free(m);
        return st;
    }
    if (opts)
        popc_options_freeze(opts);
    *out = m;
    return POPC_OK;
}

void popc_model_free(popc_model *m)
{
    if (!m)
        return;
    popci_model_unshare(m);
    popci_exec_free(m->exec);
    popci_hooks_model_free(m);
    popci_callbacks_free(m->callbacks);
    popci_optstate_free(m->state);
    popc_optimizer_free(m->optimizer);
    popc_graph_free(m->graph);
    popc_options_free(m->opts);
    free(m->sig);
    free(m->run_dtype);
    free(m->weight_values);
    free(m->weight_plan);
    if (m->log_file)
        fclose(m->log_file);
    popci_anchors_free(m->anchors);
    free(m);
}

/* ---- compile ------------------------------------------------------------- */

/* R1.1 and the dtype each input is streamed in. */
static popc_status check_inputs(popc_model *m, const popci_batching *b,
                                popc_tensor *const *inputs, int n,
                                popc_view *micro)
{
    int64_t extra = b->di * (b->r / b->g) * b->ga;
    char s1[256];

    if (n != popc_graph_n_inputs(m->graph))
        return popc_set_error(POPC_EINVAL, "Number of positional arguments "
                              "mismatch: expected %d arguments but got %d.",
                              popc_graph_n_inputs(m->graph), n);
    for (int i = 0; i < n; i++) {
        int v = popc_graph_input(m->graph, i);
        const char *name = popc_graph_value_name(m->graph, v);
        popc_view decl = popc_graph_value_info(m->graph, v);
        popc_tensor *t = inputs ? inputs[i] : NULL;
        const int64_t *dims;
        int rank;
        int64_t bs;

        if (!t)
            return popc_set_error(POPC_EINVAL, "compile: input %d ('%s') is "
                                  "NULL", i, name);
        dims = popc_tensor_dims(t);
        rank = popc_tensor_rank(t);
        if (popc_tensor_numel(t) == 0)
            return popc_set_error(POPC_EINVAL, "Zero-sized tensors are "
                                  "unsupported (Got shape %s)",
                                  shape_text(dims, rank, 0, s1, sizeof s1));
        bs = rank > 0 ? dims[0] : 1;
        if (bs % extra != 0)
            return popc_set_error(
                POPC_EINVAL,
                "Invalid batch dimension: In the input %s, the batch "
                "dimension (%lld) must be a multiple of "
                "Options.deviceIterations(%lld) * "
                "(Options.replicationFactor(%lld) / "
                "Options.inputReplicaGrouping.input_group_size(%lld)) * "
                "Options.Training.gradientAccumulation(%lld) = %lld because "
                "it is used to calculate the batch size which will be "
                "executed on the device in any given iteration. For a full "
                "explanation see the batching semantics page of the "
                "documentation.",
                shape_text(dims, rank, 1, s1, sizeof s1), (long long)bs,
                (long long)b->di, (long long)b->r, (long long)b->g,
                (long long)b->ga, (long long)extra);
        memset(&micro[i], 0, sizeof micro[i]);
        micro[i].rank = rank;
        memcpy(micro[i].dims, dims, sizeof(int64_t) * (size_t)rank);
        if (rank > 0)
            micro[i].dims[0] = bs / extra;
        micro[i].dtype = popc_tensor_dtype(t);
        /* R1.4: int64 data feeds an int32 input as int32. */
        if (decl.dtype == POPC_DTYPE_I32 &&
            popc_tensor_dtype(t) == POPC_DTYPE_I64)
            micro[i].dtype = POPC_DTYPE_I32;
        else if (decl.dtype != POPC_DTYPE_UNDEFINED &&
                 decl.dtype != popc_tensor_dtype(t))
            return popc_set_error(POPC_EINVAL, "Data type mismatch for %s: "
                                  "the graph declares %s but got %s.", name,
                                  torch_dtype(decl.dtype),
                                  torch_dtype(popc_tensor_dtype(t)));
    }
    return POPC_OK;
}

/* STATE slots for the optimizer state of every trained weight. */
static popc_status add_states(popc_model *m, popci_plan *plan)
{
    for (int w = 0; w < plan->n_weights; w++) {
        const char *names[64];
        int n = 0;
        popc_status st;

        if (plan->weights[w].accum_slot < 0)
            continue;
        popci_optstate_arrays(m->state, plan->weights[w].name, &n);
        if (n > 64)
            n = 64;
        for (int i = 0; i < n; i++)
            names[i] = popci_optstate_state_name(m->state,
                                                 plan->weights[w].name, i);
        if ((st = popci_plan_add_state(plan, w, n, names)) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

/* §6: a pipeline needs as many micro-batches in flight as it has stages:
** F forward stages (one per IPU switch in op order) and, training, F - 1
** more for the backward pass. */
static popc_status check_pipeline(const popc_model *m, const popci_plan *p,
                                  const popci_batching *b)
{
    int64_t f = 1;

    if (!popci_config_pipelined(b, p))
        return POPC_OK;
    for (int i = 1; i < p->pub.n_forward; i++)
        if (p->nodes[i].ipu != p->nodes[i - 1].ipu)
            f++;
    if (m->training && b->ga < 2 * f - 1)
        return popc_set_error(POPC_EINVAL, "poptorch.Options().Training."
                              "gradientAccumulation must be greater than or "
                              "equal to the number of pipeline stages (%lld) "
                              "when using poptorch.PipelinedExecution. Please "
                              "note that a model with %lld pipeline stages in "
                              "PopTorch will have an additional %lld stages "
                              "when training.", (long long)(2 * f - 1),
                              (long long)f, (long long)(f - 1));
    if (!m->training && b->di < f)
        return popc_set_error(POPC_EINVAL, "poptorch.Options()."
                              "deviceIterations must be greater than or equal "
                              "to the number of pipeline stages (%lld) when "
                              "using PopTorch.PipelinedExecution.",
                              (long long)f);
    return POPC_OK;
}

/* R2.3: an optimizer whose accum_type is float16 accumulates gradients in
** half precision, where a sum of micro-batches overflows sooner than a
** running mean: PopTorch switches the mean reduction strategy to Running
** before compiling. */
static void half_accumulators(const popc_model *m, popci_exec_config *ec)
{
    const char *name =
        "Training.meanAccumulationAndReplicationReductionStrategy";

    if (popci_optimizer_accum_dtype(m->optimizer) != POPC_DTYPE_F16)
        return;
    /* without accumulation there is no accumulator to store in half */
    ec->accum_f16 = ec->grad_accum > 1;
    if (ec->strategy == POPC_MEAN_RUNNING)
        return;
    popc_log(popc_options_is_set(m->opts, name) ? POPC_LOG_WARN
                                                : POPC_LOG_INFO,
             "the optimizer's accum_type is float16: using %s = Running "
             "(as PopTorch does for float16 accumulation)", name);
    ec->strategy = POPC_MEAN_RUNNING;
}

/* Slots the device keeps in float16 (the optimizer's accumulation types),
** so that memory reports count 2 bytes an element. */
static popc_status mark_half_storage(const popc_model *m, popci_plan *plan,
                                     const popci_exec_config *ec)
{
    for (int w = 0; w < plan->n_weights; w++) {
        const popci_plan_weight *pw = &plan->weights[w];
        int g = popci_optimizer_group_of(m->optimizer, pw->name);
        popc_status st;

        if (pw->accum_slot < 0)
            continue;
        if (ec->accum_f16 &&
            (st = popci_plan_store_half(plan, pw->accum_slot)) != POPC_OK)
            return st;
        for (int i = 0; i < pw->n_state; i++)
            if (popci_optimizer_state_dtype(m->optimizer, g, i) ==
                    POPC_DTYPE_F16 &&
                (st = popci_plan_store_half(plan, pw->first_state + i)) !=
                    POPC_OK)
                return st;
    }
    return POPC_OK;
}

/* One compile's working state, from the request to the executor. */
typedef struct compile_job {
    popci_batching b;
    popc_view *micro;          /* per input: the micro-batch as streamed */
    popci_plan_config pc;
    popci_exec_config ec;
    const popc_backend_def *be;
    popci_compile_states cs;
} compile_job;

/* The inputs, the output mode, the backend, the anchors and the plan's
** configuration; training, the optimizer's state, whose slots the plan
** gets. */
static popc_status verify_request(popc_model *m, compile_job *j,
                                  popc_tensor *const *inputs, int n)
{
    popc_status st;

    if ((st = check_inputs(m, &j->b, inputs, n, j->micro)) != POPC_OK ||
        (st = popci_config_output_mode(m, j->b.di, &j->ec)) != POPC_OK ||
        (st = popci_config_find_backend(m, &j->be)) != POPC_OK ||
        (st = popci_config_anchors(m, &j->b, &j->ec)) != POPC_OK ||
        (st = popci_config_plan(m, &j->b, j->micro, n, &j->pc)) != POPC_OK)
        return st;
    return m->training ? popci_model_ensure_state(m) : POPC_OK;
}

/* The plan (or the compiled graph a layer hands over), with its
** optimizer states, pipeline check, IPUs and per-plan options. */
static popc_status make_plan(popc_model *m, compile_job *j,
                             popc_tensor *const *inputs, int n,
                             popci_plan **plan)
{
    popc_status st;

    /* the executable cache or popc_load may supply the compiled graph */
    if ((st = popci_hooks_compile_plan(&j->cs, m, inputs, n, &j->pc)) !=
        POPC_OK)
        return st;
    popci_hooks_compile_phase(&j->cs, POPCI_PHASE_PLAN);
    if ((st = popci_plan_new(m->graph, &j->pc, plan)) != POPC_OK)
        return st;
    if ((m->training && (st = add_states(m, *plan)) != POPC_OK) ||
        (st = check_pipeline(m, *plan, &j->b)) != POPC_OK ||
        (st = popci_ipu_count(m->opts, j->be, (*plan)->pub.n_ipus, j->b.r,
                              &m->reserved_ipus)) != POPC_OK ||
        (st = popci_ipu_device_options(m->opts, j->be)) != POPC_OK)
        return st;
    return popci_config_plan_options(m, j->be, *plan);
}

/* The executor's configuration: what the layers add (replica groups, the
** ranks of a distributed run), float16 accumulators, tensor locations. */
static popc_status make_exec_config(popc_model *m, compile_job *j,
                                    popci_plan *plan,
                                    popc_tensor *const *inputs, int n)
{
    popci_exec_extras x = {.training = m->training};
    popc_status st;

    popci_config_exec(m, &j->b, plan, &j->ec);
    x.input_group = j->ec.input_group;
    /* a layer may group weights over replicas and reduce the gradients
    ** over several ranks */
    if ((st = popci_hooks_exec_config(m, &x, inputs, n)) != POPC_OK)
        return st;
    j->ec.n_groupings = x.n_groupings;
    j->ec.groupings = x.groupings;
    j->ec.dist = x.dist;
    if (m->training) {
        half_accumulators(m, &j->ec);
        if ((st = mark_half_storage(m, plan, &j->ec)) != POPC_OK)
            return st;
    }
    return popci_layer_strategy->locations_apply(plan, m->opts, j->b.r);
}

/* What later runs are checked against (R1.3) and where each model weight
** is in e's plan. */
static popc_status bind_signature(popc_model *m, const popci_exec *e,
                                  popc_tensor *const *inputs,
                                  const popc_view *micro, int n)
{
    free(m->sig);
    free(m->run_dtype);
    m->sig = popci_calloc((size_t)n + 1, sizeof *m->sig);
    m->run_dtype = popci_calloc((size_t)n + 1, sizeof *m->run_dtype);
    if (!m->sig || !m->run_dtype)
        return oom("compile");
    for (int i = 0; i < n; i++) {
        m->sig[i] = popc_tensor_view(inputs[i]);
        m->sig[i].data = NULL;
        m->run_dtype[i] = micro[i].dtype;
    }
    m->n_inputs = n;
    for (int i = 0; i < m->n_weights; i++)
        m->weight_plan[i] = popci_plan_find_weight(
            popci_exec_plan(e),
            popc_graph_value_name(m->graph, m->weight_values[i]));
    return POPC_OK;
}

/* m takes e once the layers accept it; the layers (replica groups, the
** ranks of a distributed run) then set its weights. On failure m has no
** executor again and the caller frees e. */
static popc_status adopt_exec(popc_model *m, compile_job *j, popci_exec *e)
{
    popc_status st;

    if ((st = popci_hooks_compiled(&j->cs, m, e)) != POPC_OK)
        return st;
    m->exec = e;
    m->host_dirty = 0;
    m->device_dirty = 0;
    if ((st = popci_hooks_adopted(m)) != POPC_OK) {
        m->exec = NULL;
        return st;
    }
    m->state_exists = m->training;
    return POPC_OK;
}

static popc_status compile(popc_model *m, popc_tensor *const *inputs, int n)
{
    compile_job j = {.b = popci_config_batching(m)};
    popc_backend_config bc;
    popci_plan *plan = NULL;
    popci_exec *e = NULL;
    double t0 = popci_exec_now();
    popc_status st;

    if (!(j.micro = popci_calloc((size_t)n + 1, sizeof *j.micro)))
        return oom("compile");
    if ((st = popci_hooks_compile_begin(m, &j.cs)) != POPC_OK)
        goto fail;
    popci_hooks_compile_phase(&j.cs, POPCI_PHASE_VERIFY);
    if ((st = verify_request(m, &j, inputs, n)) != POPC_OK ||
        (st = make_plan(m, &j, inputs, n, &plan)) != POPC_OK ||
        (st = make_exec_config(m, &j, plan, inputs, n)) != POPC_OK)
        goto fail;
    bc = popci_config_backend(m);
    popci_hooks_compile_phase(&j.cs, POPCI_PHASE_BACKEND);
    st = popci_exec_new(plan, j.be, &bc, &j.ec, &e);
    plan = NULL; /* owned by the executor now */
    if (st != POPC_OK ||
        (st = bind_signature(m, e, inputs, j.micro, n)) != POPC_OK ||
        (st = adopt_exec(m, &j, e)) != POPC_OK)
        goto fail;
    m->compile_time = popci_exec_now() - t0;
    popci_hooks_compile_end(&j.cs, m, 1);
    free(j.micro);
    popc_log(POPC_LOG_INFO, "compiled '%s' for %s on backend %s in %.3f s: "
             "%d IPUs per replica, %d pipeline phases, activations %zu "
             "bytes per frame", popc_graph_name(m->graph),
             m->training ? "training" : "inference", j.be->name,
             m->compile_time, popci_exec_plan(e)->pub.n_ipus,
             popci_exec_n_phases(e), popci_exec_plan(e)->arena_bytes);
    return POPC_OK;
fail:
    popci_hooks_compile_end(&j.cs, m, 0);
    popci_plan_free(plan);
    popci_exec_free(e);
    free(j.micro);
    return st;
}

popc_status popc_model_get_anchored_tensor(const popc_model *m,
                                           const char *short_name,
                                           const popc_tensor **out)
{
    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_model_get_anchored_tensor: "
                              "out is NULL");
    *out = NULL;
    if (!m || !short_name)
        return popc_set_error(POPC_EINVAL, "popc_model_get_anchored_tensor: "
                              "model or name is NULL");
    for (int k = 0; m->anchors && k < m->anchors->n; k++)
        if (strcmp(m->anchors->short_names[k], short_name) == 0) {
            if (!m->anchors->values[k])
                return popc_set_error(POPC_ESTATE, "anchored tensor '%s' "
                                      "has no value yet: run the model "
                                      "first", short_name);
            *out = m->anchors->values[k];
            return POPC_OK;
        }
    if (!m->anchors) { /* not compiled yet: is it an anchor at all? */
        popci_anchors *a = NULL;
        int known = 0;

        if (popci_anchors_parse(
                popci_opt_string(m->opts, POPCI_O_anchorTensor),
                POPC_OUTPUT_ALL, 1, 0, &a) == POPC_OK)
            for (int k = 0; a && k < a->n; k++)
                known |= strcmp(a->short_names[k], short_name) == 0;
        popci_anchors_free(a);
        if (known)
            return popc_set_error(POPC_ESTATE, "anchored tensor '%s' has no "
                                  "value yet: run the model first",
                                  short_name);
    }
    return popc_set_error(POPC_ENOTFOUND, "No tensor with name %s found. "
                          "(anchor tensors with the anchorTensor option, "
                          "short=long)", short_name);
}

const char *popci_model_name(const popc_model *m)
{
    const char *name = popci_opt_string(m->opts, POPCI_O_modelName);

    return name ? name : m->training ? "training" : "inference";
}

popc_status popc_model_compile(popc_model *m, popc_tensor *const *inputs,
                               int n_inputs)
{
    FILE *prev;
    popc_status st = POPC_OK;

    if (!m)
        return popc_set_error(POPC_EINVAL, "popc_model_compile: model is "
                              "NULL");
    prev = popci_model_log_begin(m);
    /* PopTorch logs this as a warning */
    if (m->exec)
        popc_log(POPC_LOG_WARN, "Call to compile() ignored: the executable "
                 "is already compiled");
    else
        st = compile(m, inputs, n_inputs);
    popci_model_log_end(prev);
    return st;
}

int popc_model_is_compiled(const popc_model *m)
{
    return m && m->exec != NULL;
}

/* ---- run ----------------------------------------------------------------- */

/* R1.3: a run must look like the compile. */
static popc_status validate(const popc_model *m, popc_tensor *const *in,
                            int n)
{
    char s1[256], s2[256];

    if (n != m->n_inputs)
        return popc_set_error(POPC_EINVAL, "Number of positional arguments "
                              "mismatch: expected %d arguments but got %d."
                              RUNTIME_SUFFIX, m->n_inputs, n);
    for (int i = 0; i < n; i++) {
        const char *name = popc_graph_value_name(
            m->graph, popc_graph_input(m->graph, i));
        const popc_view *s = &m->sig[i];
        int rank;

        if (!in || !in[i])
            return popc_set_error(POPC_EINVAL, "run: input %d ('%s') is "
                                  "NULL", i, name);
        if (popc_tensor_dtype(in[i]) != s->dtype)
            return popc_set_error(POPC_EINVAL, "Data type mismatch for %s: "
                                  "expected %s but got %s." RUNTIME_SUFFIX,
                                  name, torch_dtype(s->dtype),
                                  torch_dtype(popc_tensor_dtype(in[i])));
        rank = popc_tensor_rank(in[i]);
        if (rank != s->rank ||
            memcmp(popc_tensor_dims(in[i]), s->dims,
                   sizeof(int64_t) * (size_t)rank) != 0)
            return popc_set_error(
                POPC_EINVAL, "Shape mismatch for %s: expected %s but got %s."
                RUNTIME_SUFFIX, name,
                shape_text(s->dims, s->rank, 1, s1, sizeof s1),
                shape_text(popc_tensor_dims(in[i]), rank, 1, s2,
                           sizeof s2));
    }
    return POPC_OK;
}

static void int64_to_int32(const int64_t *src, int32_t *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = (int32_t)src[i];
}

static popc_status check_can_run(const popc_model *m)
{
    const popc_backend_def *be;

    if (popci_opt_int(m->opts, POPCI_O_connectionType) ==
        POPC_CONNECTION_NEVER)
        return popc_set_error(POPC_ESTATE, "Trying to run a model on an "
                              "offline device (ConnectionType.Never): use "
                              "model.compile(inputs) instead of "
                              "model(inputs)");
    if (m->exec && !((be = popci_exec_backend(m->exec))->caps &
                     POPC_BACKEND_CAN_RUN))
        return popc_set_error(POPC_ESTATE, "backend '%s' compiles but "
                              "cannot run models; choose the cpu or "
                              "ipumodel backend to run", be->name);
    return POPC_OK;
}

static popc_status run_model(popc_model *m, popc_tensor *const *inputs,
                             int n_inputs, popc_tensor **outputs,
                             int n_outputs)
{
    popc_tensor **conv = NULL, **anch = NULL;
    popc_view *in = NULL, *out = NULL;
    popci_exec_io io;
    double t0, compute = 0.0, host_cb;
    int n_out, n_anch = 0;
    popc_status st;

    for (int i = 0; outputs && i < n_outputs; i++)
        outputs[i] = NULL;
    if (!m)
        return popc_set_error(POPC_EINVAL, "popc_model_run: model is NULL");
    if ((st = check_can_run(m)) != POPC_OK)
        return st;
    if (!m->exec) {
        if ((st = compile(m, inputs, n_inputs)) != POPC_OK)
            return st;
        if ((st = check_can_run(m)) != POPC_OK)
            return st;
    }
    /* A run on a detached model re-attaches implicitly (semantics §5). */
    if (m->detached && (st = popc_model_attach_to_device(m)) != POPC_OK)
        return st;
    t0 = popci_exec_now();
    if ((st = validate(m, inputs, n_inputs)) != POPC_OK)
        return st;
    n_out = popc_graph_n_outputs(m->graph);
    if (n_outputs != n_out || (n_out > 0 && !outputs))
        return popc_set_error(POPC_EINVAL, "popc_model_run: the graph '%s' "
                              "has %d outputs but room for %d was given",
                              popc_graph_name(m->graph), n_out, n_outputs);
    if ((st = popci_model_sync_shared(m)) != POPC_OK)
        return st;
    if (m->device_dirty)
        popci_model_push_weights(m);
    n_anch = m->anchors ? m->anchors->n : 0;
    conv = popci_calloc((size_t)n_inputs + 1, sizeof *conv);
    in = popci_calloc((size_t)n_inputs + 1, sizeof *in);
    out = popci_calloc((size_t)(n_out + n_anch) + 1, sizeof *out);
    anch = popci_calloc((size_t)n_anch + 1, sizeof *anch);
    if (!conv || !in || !out || !anch) {
        st = oom("popc_model_run");
        goto done;
    }
    for (int i = 0; i < n_inputs; i++) {
        in[i] = popc_tensor_view(inputs[i]);
        if (m->run_dtype[i] == in[i].dtype)
            continue;
        if ((st = popc_tensor_new(POPC_DTYPE_I32, in[i].dims, in[i].rank,
                                  &conv[i])) != POPC_OK)
            goto done;
        int64_to_int32(in[i].data, popc_tensor_data(conv[i]),
                       popc_view_numel(&in[i]));
        in[i] = popc_tensor_view(conv[i]);
    }
    for (int i = 0; i < n_out + n_anch; i++) {
        popc_view v = popci_exec_output_view(m->exec, i);
        popc_tensor **t = i < n_out ? &outputs[i] : &anch[i - n_out];

        if ((st = popc_tensor_new(v.dtype, v.dims, v.rank, t)) != POPC_OK)
            goto done;
        out[i] = popc_tensor_view(*t);
    }
    /* Training seeds follow the optimizer step count, which checkpoints
    ** restore, so a resumed run draws the same Dropout masks. */
    io = (popci_exec_io){.inputs = in, .outputs = out,
                         .run_index = m->training
                                          ? (uint64_t)popc_model_steps(m)
                                          : m->runs,
                         .optimizer = m->optimizer,
                         .state = m->state,
                         .user = popci_callbacks_user(m->callbacks)};
    io.trace = popci_hooks_run_begin(m);
    popci_callbacks_take_seconds(m->callbacks);
    st = popci_exec_run(m->exec, &io, &compute);
    if (m->training)
        m->host_dirty = 1;
    if (st != POPC_OK)
        goto done;
    m->runs++;
    for (int k = 0; k < n_anch; k++) { /* the last run's anchors */
        popc_tensor_free(m->anchors->values[k]);
        m->anchors->values[k] = anch[k];
        anch[k] = NULL;
    }
    /* CPU op callbacks run on the host while the device waits */
    host_cb = popci_callbacks_take_seconds(m->callbacks);
    compute = compute > host_cb ? compute - host_cb : 0.0;
    m->lat_total = popci_exec_now() - t0;
    m->lat_compute = compute;
    m->lat_host = m->lat_total > compute ? m->lat_total - compute : 0.0;
    popci_hooks_run_end(m, t0);
done:
    for (int i = 0; i < n_inputs && conv; i++)
        popc_tensor_free(conv[i]);
    free(conv);
    free(in);
    free(out);
    for (int k = 0; anch && k < n_anch; k++)
        popc_tensor_free(anch[k]);
    free(anch);
    if (st != POPC_OK)
        for (int i = 0; i < n_outputs; i++) {
            popc_tensor_free(outputs[i]);
            outputs[i] = NULL;
        }
    return st;
}

popc_status popc_model_run(popc_model *m, popc_tensor *const *inputs,
                           int n_inputs, popc_tensor **outputs,
                           int n_outputs)
{
    FILE *prev;
    popc_status st;

    if (!m) {
        for (int i = 0; outputs && i < n_outputs; i++)
            outputs[i] = NULL;
        return popc_set_error(POPC_EINVAL, "popc_model_run: model is NULL");
    }
    prev = popci_model_log_begin(m);
    st = run_model(m, inputs, n_inputs, outputs, n_outputs);
    popci_model_log_end(prev);
    return st;
}

popc_status popc_model_destroy(popc_model *m)
{
    popc_status st;

    if (!m || !m->exec)
        return POPC_OK;
    if (m->training && (st = popci_model_sync_host(m)) != POPC_OK)
        return st;
    popci_exec_free(m->exec);
    m->exec = NULL;
    m->host_dirty = 0;
    m->device_dirty = 0;
    m->detached = 0;
    return POPC_OK;
}

/* ---- figures ------------------------------------------------------------- */

void popc_model_latency(const popc_model *m, double *host_ipu,
                        double *compute, double *total)
{
    if (host_ipu)
        *host_ipu = m ? m->lat_host : 0.0;
    if (compute)
        *compute = m ? m->lat_compute : 0.0;
    if (total)
        *total = m ? m->lat_total : 0.0;
}

double popc_model_compilation_time(const popc_model *m)
{
    return m ? m->compile_time : 0.0;
}

double popc_model_loss_scaling(const popc_model *m)
{
    if (!m || !m->training)
        return 1.0;
    return m->exec ? m->exec->loss_scaling
                   : popci_optimizer_loss_scaling(m->optimizer);
}

int64_t popc_model_steps(const popc_model *m)
{
    return m ? popci_optstate_steps(m->state) : 0;
}
