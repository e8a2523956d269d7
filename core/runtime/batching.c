/* batching.c - one run over the combined batch: micro-batches fed to every
** replica in PopTorch's host layout, the phases of the plan run as a
** wavefront, outputs gathered per output mode, gradients accumulated.
**
** The rules are those of semantics §0, §1 (R1.2, R1.6) and §2 (R2.3);
** exec_priv.h explains why the results do not depend on how a backend
** schedules the tasks of a tick.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "popc/tensor.h"
#include "core/alloc_priv.h"
#include "core/runtime/exec_priv.h"
#include "core/graph/half_simd.h"
#include "core/optimizer/optimizer_priv.h"
#include "core/runtime/hooks_priv.h"
#include "core/layer/rng.h"
#include "core/tensor_priv.h"
#include "core/extend/txn_priv.h"

typedef struct task {
    int r, p;          /* replica, phase */
    int64_t mb;        /* micro-batch of the run: d * GA + a */
} task;

typedef struct tick {
    popci_exec *e;
    const popci_exec_io *io;
    const task *tasks;
} tick;

/* Reproducible from randomSeed; different for every run, micro-batch and
** replica (each replica has its own random stream, as on IPUs). Replicas
** are numbered globally, so a distributed run draws what one process
** with all the replicas draws. */
static uint64_t frame_seed(const popci_exec *e, const popci_exec_io *io,
                           int64_t mb, int r)
{
    uint64_t s = popci_rng_combine(e->cfg.random_seed, io->run_index);

    return popci_rng_combine(s, (uint64_t)mb *
                                        (uint64_t)e->cfg.replicas_global +
                                    (uint64_t)(e->cfg.replica_base + r));
}

static popc_frame *frame_of(popci_exec *e, int r, int64_t mb)
{
    return &e->frames[r * e->n_frames + (int)(mb % e->n_frames)];
}

/* R1.2: replica r reads, at device iteration d and accumulation step a,
** the micro-batch ((d * GA + a) * (R / G) + group(r)) of every input. */
static void feed(popci_exec *e, const popci_exec_io *io, popc_frame *f,
                 int r, int64_t mb)
{
    const popci_exec_config *c = &e->cfg;
    const popci_plan *p = e->plan;
    int64_t groups = c->replicas / c->input_group;
    int64_t g = c->input_orthogonal ? r % groups : r / c->input_group;
    int64_t idx = mb * groups + g;

    for (int i = 0; i < p->n_inputs; i++) {
        int s = p->input_slots[i];
        size_t bytes = popci_plan_slot_bytes(p, s);

        if (e->synth) /* enableSyntheticData: nothing from the host */
            f->slots[s].data = e->synth[r * p->n_inputs + i];
        else
            f->slots[s].data = (char *)io->inputs[i].data +
                               (size_t)idx * bytes;
    }
    f->seed = frame_seed(e, io, mb, r);
    f->user = io->user;
}

static void add_into(void *dst, const void *src, const popc_view *v)
{
    int64_t n = popc_view_numel(v);

    switch (v->dtype) {
    case POPC_DTYPE_F32: {
        float *d = dst;
        const float *s = src;
        for (int64_t i = 0; i < n; i++)
            d[i] += s[i];
        break;
    }
    case POPC_DTYPE_F16: {
        uint16_t *d = dst;
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i++)
            d[i] = popc_f32_to_f16(popc_f16_to_f32(d[i]) +
                                   popc_f16_to_f32(s[i]));
        break;
    }
    case POPC_DTYPE_I32: {
        uint32_t *d = dst;
        const uint32_t *s = src;
        for (int64_t i = 0; i < n; i++)
            d[i] += s[i];
        break;
    }
    case POPC_DTYPE_I64: {
        uint64_t *d = dst;
        const uint64_t *s = src;
        for (int64_t i = 0; i < n; i++)
            d[i] += s[i];
        break;
    }
    case POPC_DTYPE_U8: {
        uint8_t *d = dst;
        const uint8_t *s = src;
        for (int64_t i = 0; i < n; i++)
            d[i] = (uint8_t)(d[i] + s[i]);
        break;
    }
    case POPC_DTYPE_BOOL: {
        uint8_t *d = dst;
        const uint8_t *s = src;
        for (int64_t i = 0; i < n; i++)
            d[i] = (uint8_t)(d[i] | s[i]);
        break;
    }
    case POPC_DTYPE_F64: {
        double *d = dst;
        const double *s = src;
        for (int64_t i = 0; i < n; i++)
            d[i] += s[i];
        break;
    }
    case POPC_DTYPE_I8: {
        uint8_t *d = dst;
        const uint8_t *s = src;
        for (int64_t i = 0; i < n; i++)
            d[i] = (uint8_t)(d[i] + s[i]);
        break;
    }
    case POPC_DTYPE_I16: case POPC_DTYPE_U16: {
        uint16_t *d = dst;
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i++)
            d[i] = (uint16_t)(d[i] + s[i]);
        break;
    }
    case POPC_DTYPE_U32: {
        uint32_t *d = dst;
        const uint32_t *s = src;
        for (int64_t i = 0; i < n; i++)
            d[i] += s[i];
        break;
    }
    case POPC_DTYPE_U64: {
        uint64_t *d = dst;
        const uint64_t *s = src;
        for (int64_t i = 0; i < n; i++)
            d[i] += s[i];
        break;
    }
    case POPC_DTYPE_BF16: {
        uint16_t *d = dst;
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i++) {
            uint32_t a = (uint32_t)d[i] << 16, b = (uint32_t)s[i] << 16;
            float fa, fb;
            memcpy(&fa, &a, sizeof fa);
            memcpy(&fb, &b, sizeof fb);
            fa += fb;
            memcpy(&a, &fa, sizeof a);
            d[i] = (uint16_t)((a + 0x7fffu + ((a >> 16) & 1u)) >> 16);
        }
        break;
    }
    default:
        break;
    }
}

/* R1.6: where (if anywhere) micro-batch mb of replica r lands in each
** output and anchor (R1.7: each with its own mode). */
static void collect(popci_exec *e, const popci_exec_io *io,
                    const popc_frame *f, int r, int64_t mb)
{
    const popci_exec_config *c = &e->cfg;
    const popci_plan *p = e->plan;
    int64_t GA = c->grad_accum, d = mb / GA, a = mb % GA, pos;

    for (int i = 0; i < e->n_ret; i++) {
        int s = popci_ret_slot(p, i);
        int64_t period = e->ret_period[i];
        size_t item = e->out_item[i];
        char *dst = io->outputs[i].data;
        const void *src = f->slots[s].data;

        if (p->slots[s].kind == POPC_SLOT_CONST) {
            if (r == 0 && mb == 0)
                memcpy(dst, src, item);
            continue;
        }
        switch (e->ret_mode[i]) {
        case POPC_OUTPUT_ALL:
            pos = mb * c->replicas + r;
            break;
        case POPC_OUTPUT_EVERYN:
            if ((d + 1) % period != 0)
                continue;
            pos = (((d + 1) / period - 1) * GA + a) * c->replicas + r;
            break;
        case POPC_OUTPUT_SUM:
            if (mb == 0)
                memcpy(dst + (size_t)r * item, src, item);
            else
                add_into(dst + (size_t)r * item, src, &p->slots[s].info);
            continue;
        default: /* FINAL */
            if (mb != e->micro_batches - 1)
                continue;
            pos = r;
            break;
        }
        memcpy(dst + (size_t)pos * item, src, item);
    }
}

/* accumulate() for the float16 gradient of a half weight (the data of
** g is uint16_t): widened to float as it is added. */
static void accumulate_half(float *acc, const void *g, int64_t n, int64_t a,
                            int running)
{
    const uint16_t *h = g;
    float keep = (float)a / (float)(a + 1), take = 1.0f / (float)(a + 1);
    float x[1024];

    for (int64_t c = 0; c < n; c += 1024) {
        int64_t m = n - c < 1024 ? n - c : 1024;
        float *dst = acc + c;

        popci_h2f_n(x, h + c, m, popc_f16_to_f32);
        for (int64_t i = 0; i < m; i++)
            dst[i] = a == 0 ? x[i]
                     : running ? keep * dst[i] + take * x[i]
                               : dst[i] + x[i];
    }
}

/* R2.3: Post (and Sum) add up the GA micro-batch gradients; Running keeps
** their running mean s <- a/(a+1) s + 1/(a+1) g. A float16 accumulator
** (accum_type) is rounded to half after each micro-batch. */
static void accumulate(popci_exec *e, const popc_frame *f, int r,
                       int64_t a)
{
    const popci_plan *p = e->plan;
    int running = e->cfg.reduction == POPC_REDUCTION_MEAN &&
                  e->cfg.strategy == POPC_MEAN_RUNNING;
    float keep = (float)a / (float)(a + 1), take = 1.0f / (float)(a + 1);

    for (int w = 0; w < p->n_weights; w++) {
        const popci_plan_weight *pw = &p->weights[w];
        float *acc = e->accum[r * p->n_weights + w];
        const float *g;
        int64_t n;

        if (pw->accum_slot < 0)
            continue;
        g = f->slots[pw->grad_slot].data;
        n = popc_view_numel(&p->slots[pw->accum_slot].info);
        if (p->slots[pw->grad_slot].info.dtype == POPC_DTYPE_F16) {
            accumulate_half(acc, g, n, a, running);
            if (e->cfg.accum_f16)
                popci_round_f16(acc, n);
            continue;
        }
        if (a == 0) {
            if (acc != g) /* else written in place (executor.c) */
                memcpy(acc, g, sizeof *acc * (size_t)n);
        }
        else if (running)
            for (int64_t i = 0; i < n; i++)
                acc[i] = keep * acc[i] + take * g[i];
        else
            for (int64_t i = 0; i < n; i++)
                acc[i] += g[i];
        if (e->cfg.accum_f16)
            popci_round_f16(acc, n);
    }
}

/* popc_graph_add_update: the buffer takes the new value after each
** micro-batch, on the replica that computed it. */
static void apply_updates(popci_exec *e, const popc_frame *f, int r)
{
    const popci_plan *p = e->plan;

    for (int w = 0; w < p->n_weights; w++) {
        const popci_plan_weight *pw = &p->weights[w];
        if (pw->update_slot < 0)
            continue;
        memcpy(e->wdata[r * p->n_weights + w], f->slots[pw->update_slot].data,
               popci_plan_slot_bytes(p, pw->slot));
    }
}

static popc_status run_task(void *arg, int i)
{
    const tick *t = arg;
    const task *k = &t->tasks[i];
    popci_exec *e = t->e;
    popc_frame *f = frame_of(e, k->r, k->mb);
    popci_trace *tr = t->io->trace;
    double ts[4] = {0};
    popc_status st;

    if (tr)
        ts[0] = popci_exec_now();
    if (k->p == 0)
        feed(e, t->io, f, k->r, k->mb);
    if (tr)
        ts[1] = popci_exec_now();
    st = e->be->run_nodes(e->bctx, e->exe, f, e->phase_first[k->p],
                          e->phase_first[k->p + 1]);
    if (st != POPC_OK)
        return st;
    if (tr)
        ts[2] = popci_exec_now();
    if (k->p == e->n_phases - 1) {
        if (!e->synth) /* enableSyntheticData: nothing to the host */
            collect(e, t->io, f, k->r, k->mb);
        if (e->cfg.training)
            accumulate(e, f, k->r, k->mb % e->cfg.grad_accum);
    }
    if (tr) {
        ts[3] = popci_exec_now();
        popci_trace_task(tr, k->r, k->p, k->mb, ts);
    }
    return POPC_OK;
}

/* Micro-batches [m0, m0 + count) through every phase. */
static popc_status run_window(popci_exec *e, const popci_exec_io *io,
                              task *tasks, int64_t m0, int64_t count)
{
    int P = e->n_phases, R = (int)e->cfg.replicas;
    tick tk = {e, io, tasks};
    popc_status st = POPC_OK;

    for (int64_t t = 0; t < count + P - 1; t++) {
        int n = 0;

        for (int r = 0; r < R; r++)
            for (int p = 0; p < P; p++) {
                int64_t m = t - p;
                if (m >= 0 && m < count)
                    tasks[n++] = (task){r, p, m0 + m};
            }
        if (e->be->parallel && n > 1) {
            st = e->be->parallel(e->bctx, n, run_task, &tk);
        } else {
            for (int i = 0; i < n && st == POPC_OK; i++)
                st = run_task(&tk, i);
        }
        if (st != POPC_OK)
            return st;
        if (!e->cfg.training)
            continue;
        for (int i = 0; i < n; i++)
            if (tasks[i].p == P - 1)
                apply_updates(e, frame_of(e, tasks[i].r, tasks[i].mb),
                              tasks[i].r);
    }
    return POPC_OK;
}

/* STATE slots show the optimizer state the model keeps. */
static void bind_state(popci_exec *e, popci_optstate *s)
{
    const popci_plan *p = e->plan;
    int nf = (int)e->cfg.replicas * e->n_frames;

    for (int w = 0; s && w < p->n_weights; w++) {
        const popci_plan_weight *pw = &p->weights[w];
        int n = 0;
        float *const *arr = popci_optstate_arrays(s, pw->name, &n);

        for (int i = 0; arr && i < pw->n_state && i < n; i++)
            for (int f = 0; f < nf; f++)
                e->frames[f].slots[pw->first_state + i].data = arr[i];
    }
}

popc_status popci_exec_run(popci_exec *e, const popci_exec_io *io,
                           double *compute)
{
    const popci_exec_config *c = &e->cfg;
    task *tasks;
    double t0 = popci_exec_now();
    popc_status st = POPC_OK;

    *compute = 0.0;
    tasks = popci_malloc(sizeof *tasks * (size_t)(c->replicas * e->n_phases + 1));
    if (!tasks)
        return popc_set_error(POPC_ENOMEM, "run: out of memory");
    if (c->training) {
        popci_txn *txn = NULL;

        bind_state(e, io->state);
        /* automatic loss scaling keeps its own scale from run to run */
        if (!c->auto_loss_scaling)
            popci_exec_set_loss_scaling(
                e, popci_optimizer_loss_scaling(io->optimizer));
        /* a failing run leaves weights and optimizer state untouched */
        st = popci_txn_begin(e, io->state, &txn);
        for (int64_t d = 0; d < c->device_iterations && st == POPC_OK; d++) {
            st = run_window(e, io, tasks, d * c->grad_accum, c->grad_accum);
            if (st == POPC_OK) {
                double s0 = io->trace ? popci_exec_now() : 0.0;
                st = popci_exec_train_step(e, io);
                if (io->trace)
                    popci_trace_step(io->trace, d, s0, popci_exec_now());
            }
        }
        if (st != POPC_OK)
            popci_txn_rollback(txn);
        popci_txn_free(txn);
    } else {
        st = run_window(e, io, tasks, 0, e->micro_batches);
    }
    free(tasks);
    *compute = popci_exec_now() - t0;
    return st;
}
