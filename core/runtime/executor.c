/* executor.c - a compiled plan on a backend: frames, device weights,
** gradient accumulators and the shapes runs return.
**
** The run loop itself is in batching.c and the optimizer step in
** train_step.c; the layout of the storage is described in exec_priv.h.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "popc/log.h"
#include "core/alloc_priv.h"
#include "core/runtime/exec_priv.h"
#include "core/host_priv.h"

static popc_status oom(void)
{
    return popc_set_error(POPC_ENOMEM, "compile: out of memory while "
                          "allocating device buffers");
}

double popci_exec_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const popci_plan *popci_exec_plan(const popci_exec *e)
{
    return e->plan;
}

const popc_backend_def *popci_exec_backend(const popci_exec *e)
{
    return e->be;
}

int popci_exec_n_phases(const popci_exec *e)
{
    return e->n_phases;
}

popc_view popci_exec_output_view(const popci_exec *e, int i)
{
    return e->out_views[i];
}

void *popci_exec_weight(popci_exec *e, int w)
{
    return e->wdata[w];
}

int popci_exec_n_groups(const popci_exec *e, int w)
{
    return e->w_groups ? e->w_groups[w] : 1;
}

int popci_exec_group_of(const popci_exec *e, int w, int r)
{
    int g = popci_exec_n_groups(e, w);

    if (g <= 1)
        return 0;
    return e->w_orth[w] ? r % g : r / ((int)e->cfg.replicas / g);
}

int popci_exec_group_leader(const popci_exec *e, int w, int g)
{
    int n = popci_exec_n_groups(e, w);

    if (n <= 1)
        return 0;
    return e->w_orth[w] ? g : g * ((int)e->cfg.replicas / n);
}

void *popci_exec_group_weight(popci_exec *e, int w, int g)
{
    return e->wdata[popci_exec_group_leader(e, w, g) * e->plan->n_weights +
                    w];
}

void popci_exec_write_group_weight(popci_exec *e, int w, int g,
                                   const void *data)
{
    size_t n = popci_plan_slot_bytes(e->plan, e->plan->weights[w].slot);
    int nw = e->plan->n_weights;

    for (int r = 0; r < e->cfg.replicas; r++)
        if (e->w_own[r * nw + w] && popci_exec_group_of(e, w, r) == g)
            memcpy(e->wdata[r * nw + w], data, n);
}

void popci_exec_write_weight(popci_exec *e, int w, const void *data)
{
    size_t n = popci_plan_slot_bytes(e->plan, e->plan->weights[w].slot);
    int nw = e->plan->n_weights;

    for (int r = 0; r < e->cfg.replicas; r++)
        if (e->w_own[r * nw + w])
            memcpy(e->wdata[r * nw + w], data, n);
}

double popci_exec_cycles(const popci_exec *e)
{
    if (!e->be->cycles)
        return 0.0;
    return e->be->cycles(e->bctx, e->exe, 0, e->plan->pub.n_nodes);
}

/* Phases are the maximal runs of nodes on one IPU (consecutive stages on
** one IPU merge, as PopART does). Without pipelining the whole schedule is
** one phase. */
static popc_status make_phases(popci_exec *e)
{
    const popci_plan *p = e->plan;
    int n = p->pub.n_nodes, k = 0;

    e->phase_first = popci_malloc(sizeof(int) * (size_t)(n + 2));
    if (!e->phase_first)
        return oom();
    e->phase_first[k++] = 0;
    if (e->cfg.pipelined && p->pub.n_ipus > 1)
        for (int i = 1; i < n; i++)
            if (p->nodes[i].ipu != p->nodes[i - 1].ipu)
                e->phase_first[k++] = i;
    e->phase_first[k] = n;
    e->n_phases = n > 0 ? k : 1;
    return POPC_OK;
}

/* R1.6: rows returned per output and the shape that makes. */
static popc_status make_output_views(popci_exec *e)
{
    const popci_plan *p = e->plan;
    const popci_exec_config *c = &e->cfg;
    int64_t all = c->replicas * c->device_iterations * c->grad_accum;
    size_t n = (size_t)(p->n_outputs + p->n_anchors) + 1;

    e->n_ret = p->n_outputs + p->n_anchors;
    e->out_views = popci_calloc(n, sizeof *e->out_views);
    e->out_item = popci_calloc(n, sizeof *e->out_item);
    e->ret_mode = popci_calloc(n, sizeof *e->ret_mode);
    e->ret_period = popci_calloc(n, sizeof *e->ret_period);
    if (!e->out_views || !e->out_item || !e->ret_mode || !e->ret_period)
        return oom();
    for (int i = 0; i < e->n_ret; i++) {
        const popc_plan_slot *sl = &p->slots[popci_ret_slot(p, i)];
        int anchor = i >= p->n_outputs;
        popc_view v = sl->info;
        int64_t b_dim;

        e->ret_mode[i] = anchor ? c->anchor_mode[i - p->n_outputs] : c->mode;
        e->ret_period[i] = anchor ? c->anchor_period[i - p->n_outputs]
                                  : c->period;
        switch (e->ret_mode[i]) {
        case POPC_OUTPUT_ALL: b_dim = all; break;
        case POPC_OUTPUT_EVERYN: b_dim = all / e->ret_period[i]; break;
        default: b_dim = c->replicas; break;
        }
        if (sl->kind == POPC_SLOT_CONST)
            b_dim = 1;
        v.data = NULL;
        if (b_dim > 1) {
            if (v.rank == 0) {
                v.rank = 1;
                v.dims[0] = 1;
            }
            v.dims[0] *= b_dim;
        }
        e->out_views[i] = v;
        e->out_item[i] = popc_view_nbytes(&sl->info);
    }
    return POPC_OK;
}

/* Replica groups of the grouped weights (1 for every other weight). */
static popc_status make_groups(popci_exec *e)
{
    const popci_plan *p = e->plan;
    int R = (int)e->cfg.replicas;

    e->w_groups = popci_malloc(sizeof(int) * (size_t)(p->n_weights + 1));
    e->w_orth = popci_calloc((size_t)p->n_weights + 1, 1);
    if (!e->w_groups || !e->w_orth)
        return oom();
    for (int w = 0; w < p->n_weights; w++)
        e->w_groups[w] = 1;
    for (int i = 0; i < e->cfg.n_groupings; i++) {
        const popci_exec_grouping *gr = &e->cfg.groupings[i];
        int w = popci_plan_find_weight(p, gr->name);

        if (w < 0)
            continue;
        if (gr->n_groups < 1 || R % gr->n_groups != 0)
            return popc_set_error(POPC_EINVAL, "compile: weight '%s' has %d "
                                  "replica groups, which does not divide "
                                  "replicationFactor %d", gr->name,
                                  gr->n_groups, R);
        e->w_groups[w] = gr->n_groups;
        e->w_orth[w] = gr->orthogonal != 0;
    }
    /* the copy may not be borrowed beyond popci_exec_new */
    e->cfg.groupings = NULL;
    e->cfg.n_groupings = 0;
    return POPC_OK;
}

/* With one micro-batch per step the accumulator is the gradient itself:
** no accumulator of its own, the optimizer reads the gradient where the
** backward pass wrote it, in the arena (live to the end of the step;
** accumulate() then has nothing to copy). */
static int grad_in_place(const popci_exec *e, int w)
{
    return e->cfg.training && e->cfg.grad_accum == 1 &&
           popci_plan_grad_in_accum(e->plan, w);
}

/* Device weights: one copy per replica group (one shared copy when
** ungrouped), or one per replica for weights that buffer updates write.
** Initial values are the plan graph's. */
static popc_status make_weights(popci_exec *e)
{
    const popci_plan *p = e->plan;
    int nw = p->n_weights, R = (int)e->cfg.replicas;
    popc_status st;

    e->wdata = popci_calloc((size_t)(R * nw) + 1, sizeof *e->wdata);
    e->w_own = popci_calloc((size_t)(R * nw) + 1, 1);
    e->accum = popci_calloc((size_t)(R * nw) + 1, sizeof *e->accum);
    if (!e->wdata || !e->w_own || !e->accum)
        return oom();
    if ((st = make_groups(e)) != POPC_OK)
        return st;
    for (int w = 0; w < nw; w++) {
        const popci_plan_weight *pw = &p->weights[w];
        size_t n = popci_plan_slot_bytes(p, pw->slot);
        popc_tensor *t = popc_graph_value_tensor(p->graph, pw->value);
        int per_replica = pw->update_slot >= 0 && e->cfg.training;

        for (int r = 0; r < R; r++) {
            int i = r * nw + w;
            int lead = popci_exec_group_leader(e, w,
                                               popci_exec_group_of(e, w, r));
            if (r == lead || per_replica) {
                if (!(e->wdata[i] = popci_alloc(n)))
                    return oom();
                e->w_own[i] = 1;
                if (t)
                    memcpy(e->wdata[i], popc_tensor_cdata(t), n);
            } else {
                e->wdata[i] = e->wdata[lead * nw + w];
            }
            if (pw->accum_slot >= 0 && !grad_in_place(e, w) &&
                !(e->accum[i] = popci_alloc(
                      popci_plan_slot_bytes(p, pw->accum_slot))))
                return oom();
        }
    }
    return POPC_OK;
}

static popc_status check_training(const popci_plan *p)
{
    for (int w = 0; w < p->n_weights; w++) {
        const popci_plan_weight *pw = &p->weights[w];
        const popc_view *wi = &p->slots[pw->slot].info;

        /* float32 weights, or float16 ones (popc_graph_to_half), with
        ** gradients of their dtype and size */
        if (pw->accum_slot >= 0 &&
            ((wi->dtype != POPC_DTYPE_F32 && wi->dtype != POPC_DTYPE_F16) ||
             p->slots[pw->grad_slot].info.dtype != wi->dtype ||
             popc_view_numel(&p->slots[pw->grad_slot].info) !=
                 popc_view_numel(wi)))
            return popc_set_error(POPC_ECOMPILE, "compile: weight '%s' "
                                  "(%s) has gradient '%s' (%s, %lld "
                                  "elements); training needs float32 or "
                                  "float16 weights with gradients of their "
                                  "dtype and shape",
                                  pw->name, popc_dtype_name(wi->dtype),
                                  p->slots[pw->grad_slot].name,
                                  popc_dtype_name(p->slots[pw->grad_slot]
                                                      .info.dtype),
                                  (long long)popc_view_numel(
                                      &p->slots[pw->grad_slot].info));
        if (pw->update_slot >= 0 &&
            popc_view_nbytes(&p->slots[pw->update_slot].info) !=
                popc_view_nbytes(wi))
            return popc_set_error(POPC_ECOMPILE, "compile: buffer '%s' is "
                                  "updated from '%s', which has another "
                                  "size", pw->name,
                                  p->slots[pw->update_slot].name);
    }
    return POPC_OK;
}

/* Frames: views of every slot. INPUT views are pointed at the caller's
** data per micro-batch and STATE views at the optimizer state per run. */
static popc_status make_frames(popci_exec *e)
{
    const popci_plan *p = e->plan;
    int R = (int)e->cfg.replicas, nf = e->n_frames, ns = p->pub.n_slots;
    int nw = p->n_weights;

    e->frames = popci_calloc((size_t)(R * nf) + 1, sizeof *e->frames);
    e->views = popci_calloc((size_t)(R * nf * ns) + 1, sizeof *e->views);
    e->arenas = popci_calloc((size_t)(R * nf) + 1, sizeof *e->arenas);
    if (!e->frames || !e->views || !e->arenas)
        return oom();
    for (int r = 0; r < R; r++)
        for (int f = 0; f < nf; f++) {
            int fi = r * nf + f;
            popc_frame *fr = &e->frames[fi];
            popc_view *v = e->views + (size_t)fi * (size_t)ns;

            if (!(e->arenas[fi] = popci_alloc(p->arena_bytes)))
                return oom();
            fr->slots = v;
            fr->replica = r;
            fr->training = e->cfg.training;
            for (int s = 0; s < ns; s++) {
                v[s] = p->slots[s].info;
                if (p->arena_offset[s] >= 0)
                    v[s].data = (char *)e->arenas[fi] + p->arena_offset[s];
                else if (p->slots[s].kind != POPC_SLOT_CONST)
                    v[s].data = NULL;
            }
            for (int w = 0; w < nw; w++) {
                const popci_plan_weight *pw = &p->weights[w];
                v[pw->slot].data = e->wdata[r * nw + w];
                /* one frame per replica when grad_accum is 1 */
                if (grad_in_place(e, w))
                    e->accum[r * nw + w] = v[pw->grad_slot].data;
                if (pw->accum_slot >= 0)
                    v[pw->accum_slot].data = e->accum[r * nw + w];
            }
        }
    return POPC_OK;
}

/* Where the device memory of a step goes (bench/bench_memory.sh reads
** this line; the host's copy of the weights is as large again). */
static void log_memory(const popci_exec *e)
{
    const popci_plan *p = e->plan;
    int R = (int)e->cfg.replicas, nw = p->n_weights;
    size_t weights = 0, accum = 0, state = 0;

    for (int i = 0; i < R * nw; i++) {
        const popci_plan_weight *pw = &p->weights[i % nw];
        if (e->w_own[i])
            weights += popci_plan_slot_bytes(p, pw->slot);
        if (e->accum[i] && !grad_in_place(e, i % nw))
            accum += popci_plan_slot_bytes(p, pw->accum_slot);
        for (int k = 0; i < nw && k < pw->n_state; k++)
            state += popci_plan_slot_device_bytes(p, pw->first_state + k);
    }
    popc_log(POPC_LOG_DEBUG, "memory of '%s': activations %zu bytes x %d "
             "frames (%d in place; live at most %zu bytes at once, %zu "
             "stored for the backward pass), weights %zu bytes, gradient "
             "accumulators %zu bytes, optimizer state %zu bytes",
             popc_graph_name(p->graph), p->arena_bytes, R * e->n_frames,
             p->n_inplace, p->onchip_peak, p->stored_bytes, weights, accum,
             state);
}

void popci_exec_free(popci_exec *e)
{
    int R, nw;

    if (!e)
        return;
    R = (int)e->cfg.replicas;
    nw = e->plan ? e->plan->n_weights : 0;
    if (e->be) {
        if (e->exe && e->be->exe_free)
            e->be->exe_free(e->bctx, e->exe);
        if (e->bctx && e->be->close)
            e->be->close(e->bctx);
    }
    for (int i = 0; e->arenas && i < R * e->n_frames; i++)
        popci_free(e->arenas[i]);
    for (int i = 0; e->wdata && e->w_own && i < R * nw; i++)
        if (e->w_own[i])
            popci_free(e->wdata[i]);
    for (int i = 0; e->accum && e->plan && i < R * nw; i++)
        if (!grad_in_place(e, i % nw)) /* else the arena's */
            popci_free(e->accum[i]);
    free(e->arenas);
    free(e->frames);
    free(e->views);
    free(e->wdata);
    free(e->w_own);
    free(e->accum);
    free(e->out_views);
    free(e->out_item);
    free(e->ret_mode);
    free(e->ret_period);
    free(e->phase_first);
    free(e->w_groups);
    free(e->w_orth);
    popci_synthetic_free(e);
    popci_plan_free(e->plan);
    free(e);
}

popc_status popci_exec_new(popci_plan *plan, const popc_backend_def *be,
                           const popc_backend_config *bcfg,
                           const popci_exec_config *cfg, popci_exec **out)
{
    popci_exec *e;
    popc_backend_config bc;
    int64_t window;
    popc_status st;

    *out = NULL;
    if (!(e = popci_calloc(1, sizeof *e))) {
        popci_plan_free(plan);
        return oom();
    }
    e->plan = plan;
    e->cfg = *cfg;
    if (!cfg->dist || cfg->dist->size <= 1) {
        e->cfg.dist = NULL;
        e->cfg.replica_base = 0;
        e->cfg.replicas_global = cfg->replicas;
    } else {
        e->cfg.replica_base = cfg->dist->rank * cfg->replicas;
        e->cfg.replicas_global = cfg->dist->size * cfg->replicas;
    }
    e->be = be;
    e->micro_batches = cfg->device_iterations * cfg->grad_accum;
    e->loss_scaling = plan->loss_scaling;
    if (cfg->training && (st = check_training(plan)) != POPC_OK)
        goto fail;
    if ((st = make_phases(e)) != POPC_OK ||
        (st = make_output_views(e)) != POPC_OK ||
        (st = make_weights(e)) != POPC_OK)
        goto fail;
    /* Frames in flight: one per phase, at most one per micro-batch of a
    ** window (GA when training: the optimizer step drains the pipeline). */
    window = cfg->training ? cfg->grad_accum : e->micro_batches;
    e->n_frames = e->n_phases < window ? e->n_phases : (int)window;
    if ((st = make_frames(e)) != POPC_OK ||
        (st = popci_synthetic_init(e)) != POPC_OK)
        goto fail;
    bc = *bcfg;
    bc.size = sizeof bc;
    bc.n_ipus = plan->pub.n_ipus;
    bc.replicas = (int)cfg->replicas;
    if ((st = be->open(&bc, &e->bctx)) != POPC_OK)
        goto fail;
    if ((st = be->compile(e->bctx, &plan->pub, &e->exe)) != POPC_OK)
        goto fail;
    log_memory(e);
    *out = e;
    return POPC_OK;
fail:
    popci_exec_free(e);
    return st;
}
