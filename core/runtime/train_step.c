/* train_step.c - the optimizer step after each accumulated batch, and the
** optimizer state it updates.
**
** Semantics §2: the accumulated gradients of every replica are summed in
** replica order (the all-reduce), divided by loss scaling and, for Mean,
** by GA (Post; Running already averaged them) and R; then clipped to
** max_grad_norm over all weights (§4 R4.3) and handed to the optimizer.
** Per-weight work is independent and goes through backend->parallel; the
** clipping norm is one pass in weight order, so results never depend on
** how a backend schedules the rest.
**
** A variable loss scaling may change between runs (popc_model_set_optimizer):
** the new value is written into the plan's gradient seed before the run
** and divided out here, so the update never depends on it.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/log.h"
#include "popc/tensor.h"
#include "core/alloc_priv.h"
#include "core/runtime/exec_priv.h"
#include "core/graph/half_simd.h"
#include "core/host_priv.h"
#include "core/optimizer/optimizer_priv.h"
#include "core/layer/rng.h"
#include "core/tensor_priv.h"

typedef struct optw {
    char *name;
    int64_t n;            /* elements */
    int rank;             /* the weight's shape */
    int64_t dims[POPC_MAX_RANK];
    int n_state;
    int n_groups;         /* replica groups: arr[j] holds n_groups x n */
    float **arr;
    int64_t step;         /* updates applied so far */
} optw;

struct popci_optstate {
    int n_w;
    optw *w;
    int n_names;
    char **names;         /* "<weight>/<state>" ... "<weight>/step" */
    int *name_w, *name_i; /* name -> weight, state index (-1: step) */
};

static optw *find_w(const popci_optstate *s, const char *name);

/* ---- state --------------------------------------------------------------- */

static popc_status oom(void)
{
    return popc_set_error(POPC_ENOMEM, "optimizer state: out of memory");
}

void popci_optstate_free(popci_optstate *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n_w; i++) {
        for (int j = 0; s->w[i].arr && j < s->w[i].n_state; j++)
            popci_free(s->w[i].arr[j]);
        free(s->w[i].arr);
        free(s->w[i].name);
    }
    for (int i = 0; i < s->n_names; i++)
        free(s->names[i]);
    free(s->names);
    free(s->name_w);
    free(s->name_i);
    free(s->w);
    free(s);
}

static popc_status add_name(popci_optstate *s, int w, int i,
                            const char *state)
{
    size_t n = strlen(s->w[w].name) + strlen(state) + 2;
    char *name = popci_malloc(n);

    if (!name)
        return oom();
    snprintf(name, n, "%s/%s", s->w[w].name, state);
    s->names[s->n_names] = name;
    s->name_w[s->n_names] = w;
    s->name_i[s->n_names] = i;
    s->n_names++;
    return POPC_OK;
}

popc_status popci_optstate_new(const popc_optimizer *o, const popc_graph *g,
                               popci_optstate **out)
{
    int nv = popc_graph_n_values(g), total = 0;
    popci_optstate *s;
    popc_status st;

    *out = NULL;
    if (!(s = popci_calloc(1, sizeof *s)))
        return oom();
    if (!(s->w = popci_calloc((size_t)nv + 1, sizeof *s->w)))
        goto nomem;
    for (int v = 0; v < nv; v++) {
        optw *w;
        popc_view info;
        int group;

        if (popc_graph_value_kind(g, v) != POPC_VALUE_INITIALIZER ||
            !popc_graph_value_trainable(g, v))
            continue;
        w = &s->w[s->n_w++];
        info = popc_graph_value_info(g, v);
        if (!(w->name = popci_strdup(popc_graph_value_name(g, v))))
            goto nomem;
        w->n = popc_view_numel(&info);
        w->n_groups = 1;
        w->rank = info.rank;
        memcpy(w->dims, info.dims, sizeof w->dims);
        group = popci_optimizer_group_of(o, w->name);
        w->n_state = popci_optimizer_n_state(o, group);
        if (!(w->arr = popci_calloc((size_t)w->n_state + 1, sizeof *w->arr)))
            goto nomem;
        for (int j = 0; j < w->n_state; j++)
            if (!(w->arr[j] = popci_alloc(sizeof(float) * (size_t)w->n)))
                goto nomem;
        popci_optimizer_init_state(o, group, w->arr, w->n);
        total += w->n_state + 1;
    }
    s->names = popci_calloc((size_t)total + 1, sizeof *s->names);
    s->name_w = popci_calloc((size_t)total + 1, sizeof(int));
    s->name_i = popci_calloc((size_t)total + 1, sizeof(int));
    if (!s->names || !s->name_w || !s->name_i)
        goto nomem;
    for (int w = 0; w < s->n_w; w++) {
        int group = popci_optimizer_group_of(o, s->w[w].name);
        for (int j = 0; j < s->w[w].n_state; j++) {
            const char *sn = popci_optimizer_state_name(o, group, j);
            char fallback[32];
            if (!sn) {
                snprintf(fallback, sizeof fallback, "state%d", j);
                sn = fallback;
            }
            if ((st = add_name(s, w, j, sn)) != POPC_OK)
                goto fail;
        }
        if ((st = add_name(s, w, -1, "step")) != POPC_OK)
            goto fail;
    }
    *out = s;
    return POPC_OK;
nomem:
    st = oom();
fail:
    popci_optstate_free(s);
    return st;
}

int popci_optstate_count(const popci_optstate *s)
{
    return s ? s->n_names : 0;
}

const char *popci_optstate_name(const popci_optstate *s, int i)
{
    return s && i >= 0 && i < s->n_names ? s->names[i] : NULL;
}

popc_status popci_optstate_get(const popci_optstate *s, int i,
                               popc_tensor **out)
{
    const optw *w = &s->w[s->name_w[i]];
    int64_t dims[POPC_MAX_RANK];

    if (s->name_i[i] < 0)
        return popc_tensor_from_data(POPC_DTYPE_I64, w->dims, 0, &w->step,
                                     out);
    if (w->n_groups == 1)
        return popc_tensor_from_data(POPC_DTYPE_F32, w->dims, w->rank,
                                     w->arr[s->name_i[i]], out);
    /* grouped weight: one state per replica group, stacked */
    dims[0] = w->n_groups;
    memcpy(dims + 1, w->dims, sizeof(int64_t) * (size_t)w->rank);
    return popc_tensor_from_data(POPC_DTYPE_F32, dims, w->rank + 1,
                                 w->arr[s->name_i[i]], out);
}

popc_status popci_optstate_set(popci_optstate *s, int i, const popc_tensor *t)
{
    optw *w = &s->w[s->name_w[i]];
    char have[128];

    if (s->name_i[i] < 0) {
        if (popc_tensor_numel(t) != 1 ||
            (popc_tensor_dtype(t) != POPC_DTYPE_I64 &&
             popc_tensor_dtype(t) != POPC_DTYPE_I32))
            return popc_set_error(POPC_EINVAL, "optimizer state '%s': "
                                  "expected one int64 (the step count) but "
                                  "got %s", s->names[i],
                                  popc_tensor_describe(t, have, sizeof have));
        if (popc_tensor_dtype(t) == POPC_DTYPE_I64)
            memcpy(&w->step, popc_tensor_cdata(t), sizeof w->step);
        else
            w->step = *(const int32_t *)popc_tensor_cdata(t);
        return POPC_OK;
    }
    if (popc_tensor_dtype(t) != POPC_DTYPE_F32 ||
        popc_tensor_numel(t) != w->n * w->n_groups)
        return popc_set_error(POPC_EINVAL, "optimizer state '%s': expected "
                              "%lld float32 values but got %s", s->names[i],
                              (long long)(w->n * w->n_groups),
                              popc_tensor_describe(t, have, sizeof have));
    memcpy(w->arr[s->name_i[i]], popc_tensor_cdata(t),
           sizeof(float) * (size_t)(w->n * w->n_groups));
    return POPC_OK;
}

popc_status popci_optstate_set_groups(popci_optstate *s, const char *name,
                                      int n_groups)
{
    optw *w = find_w(s, name);
    float **arr;

    if (!w || n_groups == w->n_groups)
        return POPC_OK;
    if (n_groups < 1 || (n_groups > 1 && w->rank + 1 > POPC_MAX_RANK))
        return popc_set_error(POPC_EINVAL, "optimizer state of '%s': %d "
                              "replica groups of a rank-%d weight are not "
                              "possible", name, n_groups, w->rank);
    if (!(arr = popci_calloc((size_t)w->n_state + 1, sizeof *arr)))
        return oom();
    for (int j = 0; j < w->n_state; j++) {
        size_t one = sizeof(float) * (size_t)w->n;

        if (!(arr[j] = popci_alloc(one * (size_t)n_groups))) {
            for (int k = 0; k < j; k++)
                popci_free(arr[k]);
            free(arr);
            return oom();
        }
        /* every group starts from group 0's state */
        for (int g = 0; g < n_groups; g++)
            memcpy((char *)arr[j] + one * (size_t)g, w->arr[j], one);
    }
    for (int j = 0; j < w->n_state; j++)
        popci_free(w->arr[j]);
    free(w->arr);
    w->arr = arr;
    w->n_groups = n_groups;
    return POPC_OK;
}

int64_t popci_optstate_steps(const popci_optstate *s)
{
    return s && s->n_w > 0 ? s->w[0].step : 0;
}

static optw *find_w(const popci_optstate *s, const char *name)
{
    for (int i = 0; s && i < s->n_w; i++)
        if (strcmp(s->w[i].name, name) == 0)
            return &s->w[i];
    return NULL;
}

float *const *popci_optstate_arrays(popci_optstate *s, const char *name,
                                    int *n_state)
{
    optw *w = find_w(s, name);

    *n_state = w ? w->n_state : 0;
    return w ? w->arr : NULL;
}

const char *popci_optstate_state_name(const popci_optstate *s,
                                      const char *name, int i)
{
    const optw *w = find_w(s, name);
    int k = 0;

    if (!w || i < 0 || i >= w->n_state)
        return NULL;
    for (int j = 0; j < s->n_names; j++)
        if (&s->w[s->name_w[j]] == w && k++ == i)
            return strchr(s->names[j] + strlen(w->name), '/') + 1;
    return NULL;
}

/* ---- the step ------------------------------------------------------------ */

/* Fill the gradient seed (a CONST slot shared by every frame, read-only
** while micro-batches run) with the optimizer's current loss scaling. */
void popci_exec_set_loss_scaling(popci_exec *e, double ls)
{
    const popc_view *v;
    int64_t n;

    if (ls == e->loss_scaling || ls == 0.0 || e->plan->seed_slot < 0)
        return;
    v = &e->plan->slots[e->plan->seed_slot].info;
    if (!v->data ||
        (v->dtype != POPC_DTYPE_F32 && v->dtype != POPC_DTYPE_F16))
        return;
    n = popc_view_numel(v);
    for (int64_t i = 0; i < n; i++) {
        if (v->dtype == POPC_DTYPE_F32)
            ((float *)v->data)[i] = (float)ls;
        else
            ((uint16_t *)v->data)[i] = popc_f32_to_f16((float)ls);
    }
    e->loss_scaling = ls;
}

typedef struct step_ctx {
    popci_exec *e;
    const popci_exec_io *io;
    const int *trained;    /* plan weight indices with a gradient */
} step_ctx;

/* 1 / (ls x af x rf), rf being the replicas the gradient is reduced over
** (a replica group of a grouped weight). */
float popci_exec_grad_scale(const popci_exec *e, int w)
{
    const popci_exec_config *cfg = &e->cfg;
    double scale = 1.0 / e->loss_scaling;

    if (cfg->reduction == POPC_REDUCTION_MEAN) {
        scale /= (double)(cfg->replicas_global / popci_exec_n_groups(e, w));
        if (cfg->strategy == POPC_MEAN_POST)
            scale /= (double)cfg->grad_accum;
    }
    return (float)scale;
}

/* The all-reduce: sum the accumulators of each replica group into its
** first replica's, in replica order, and scale. */
static popc_status reduce_one(void *arg, int i)
{
    const step_ctx *c = arg;
    popci_exec *e = c->e;
    int nw = e->plan->n_weights, w = c->trained[i];
    int R = (int)e->cfg.replicas, G = popci_exec_n_groups(e, w);
    const popci_plan_weight *pw = &e->plan->weights[w];
    int64_t n = popc_view_numel(&e->plan->slots[pw->accum_slot].info);
    float scale = popci_exec_grad_scale(e, w);

    for (int grp = 0; grp < G; grp++) {
        int lead = popci_exec_group_leader(e, w, grp);
        float *g = e->accum[lead * nw + w];

        for (int r = lead + 1; r < R; r++) {
            const float *o = e->accum[r * nw + w];
            if (popci_exec_group_of(e, w, r) != grp)
                continue;
            for (int64_t j = 0; j < n; j++)
                g[j] += o[j];
        }
        if (e->cfg.accum_f16 && R > 1) /* the all-reduce sums in float16 */
            popci_round_f16(g, n);
        if (scale != 1.0f)
            for (int64_t j = 0; j < n; j++)
                g[j] *= scale;
    }
    return POPC_OK;
}

/* The update of a float16 weight (model.half()): the optimizer works on a
** float32 copy, rounded back to half (to nearest, or stochastically), as
** an IPU's float16 update writes a half result. */
static popc_status apply_half(const step_ctx *c, const char *name,
                              int64_t step, int group, void *weight,
                              const float *grad, float *const *state,
                              int64_t n)
{
    const popc_plan *p = &c->e->plan->pub;
    int stochastic = (p->kernel_flags & POPC_KERNEL_STOCHASTIC_ROUNDING) != 0;
    uint16_t *h = weight;
    float *w = popci_malloc(sizeof *w * (size_t)(n + 1));
    popci_rng rng;
    popc_status st;

    if (!w)
        return popc_set_error(POPC_ENOMEM, "optimizer step: out of memory "
                              "for the float16 weight '%s'", name);
    popci_h2f_n(w, h, n, popc_f16_to_f32);
    st = popci_optimizer_apply(c->io->optimizer, name, step, w, grad, state,
                               n);
    /* stochastic rounding: a stream per weight, step and replica group,
    ** from randomSeed, so runs repeat bitwise */
    popci_rng_init(&rng, c->e->cfg.random_seed,
                   popci_rng_combine(popci_rng_combine(
                                         popci_rng_hash_str(name),
                                         (uint64_t)step),
                                     (uint64_t)group));
    if (st == POPC_OK && !stochastic)
        popci_f2h_n(h, w, n, popc_f32_to_f16);
    for (int64_t i = 0; st == POPC_OK && stochastic && i < n; i++)
        h[i] = popc_f16_stochastic(w[i],
                                   (uint32_t)(popci_rng_at(&rng, (uint64_t)i)
                                              >> 32),
                                   popc_f32_to_f16, popc_f16_to_f32);
    free(w);
    return st;
}

/* The optimizer on each group's copy with that group's state. */
static popc_status apply_one(void *arg, int i)
{
    const step_ctx *c = arg;
    popci_exec *e = c->e;
    int nw = e->plan->n_weights, w = c->trained[i];
    int G = popci_exec_n_groups(e, w);
    const popci_plan_weight *pw = &e->plan->weights[w];
    optw *ow = find_w(c->io->state, pw->name);
    int64_t n = popc_view_numel(&e->plan->slots[pw->slot].info);
    int half = e->plan->slots[pw->slot].info.dtype == POPC_DTYPE_F16;
    float *arr[64];
    popc_status st = POPC_OK;

    if (!ow || ow->n != n || ow->n_groups != G || ow->n_state > 64)
        return popc_set_error(POPC_EINTERNAL, "optimizer step: no state "
                              "for weight '%s' (%d replica groups)", pw->name,
                              G);
    ow->step++;
    for (int grp = 0; grp < G && st == POPC_OK; grp++) {
        int lead = popci_exec_group_leader(e, w, grp);

        for (int j = 0; j < ow->n_state; j++)
            arr[j] = ow->arr[j] + (size_t)grp * (size_t)n;
        st = half ? apply_half(c, pw->name, ow->step, grp,
                               e->wdata[lead * nw + w],
                               e->accum[lead * nw + w], arr, n)
                  : popci_optimizer_apply(c->io->optimizer, pw->name,
                                          ow->step, e->wdata[lead * nw + w],
                                          e->accum[lead * nw + w], arr, n);
    }
    return st;
}

/* broadcastBuffers: every replica's buffers take the values of its
** group's first replica (replica 0 when ungrouped). */
static void broadcast_buffers(popci_exec *e)
{
    const popci_plan *p = e->plan;
    int nw = p->n_weights;

    for (int w = 0; w < nw; w++) {
        size_t bytes = popci_plan_slot_bytes(p, p->weights[w].slot);

        if (p->weights[w].update_slot < 0)
            continue;
        for (int r = 0; r < e->cfg.replicas; r++) {
            int lead = popci_exec_group_leader(
                e, w, popci_exec_group_of(e, w, r));
            if (lead != r && e->w_own[r * nw + w])
                memcpy(e->wdata[r * nw + w], e->wdata[lead * nw + w], bytes);
        }
    }
}

static popc_status for_each(popci_exec *e, int n,
                            popc_status (*fn)(void *, int), void *arg)
{
    popc_status st = POPC_OK;

    if (e->be->parallel && n > 1)
        return e->be->parallel(e->bctx, n, fn, arg);
    for (int i = 0; i < n && st == POPC_OK; i++)
        st = fn(arg, i);
    return st;
}

/* Training.setAutomaticLossScaling, torch.cuda.amp.GradScaler's rule: a
** step whose reduced gradients hold an inf or NaN is skipped (weights and
** optimizer state unchanged) and the scale halves; after ALS_GROWTH_STEPS
** finite steps in a row it doubles. Powers of 2 keep the unscaled
** gradients exact. Returns 1 when the step must be skipped. */
#define ALS_GROWTH_STEPS 2000

static int auto_loss_scale(popci_exec *e, const int *trained, int n)
{
    int nw = e->plan->n_weights, finite = 1;

    for (int i = 0; i < n && finite; i++) {
        int w = trained[i];
        int64_t len = popc_view_numel(&e->plan->slots[e->plan->weights[w]
                                                          .slot].info);

        for (int grp = 0; grp < popci_exec_n_groups(e, w) && finite; grp++) {
            const float *g = e->accum[popci_exec_group_leader(e, w, grp) *
                                      nw + w];
            for (int64_t j = 0; j < len && finite; j++)
                finite = isfinite(g[j]);
        }
    }
    if (!finite) {
        popc_log(POPC_LOG_INFO, "automatic loss scaling: non-finite "
                 "gradients; step skipped, loss scale %g -> %g",
                 e->loss_scaling, e->loss_scaling * 0.5);
        popci_exec_set_loss_scaling(e, e->loss_scaling * 0.5);
        e->finite_steps = 0;
        e->skipped_steps++;
        return 1;
    }
    if (++e->finite_steps >= ALS_GROWTH_STEPS) {
        popci_exec_set_loss_scaling(e, e->loss_scaling * 2.0);
        e->finite_steps = 0;
    }
    return 0;
}

popc_status popci_exec_train_step(popci_exec *e, const popci_exec_io *io)
{
    const popci_plan *p = e->plan;
    double max_norm;
    int grouped = 0;
    int *trained = popci_malloc(sizeof(int) * (size_t)(p->n_weights + 1));
    float **grads = popci_malloc(sizeof(float *) * (size_t)(p->n_weights + 1));
    int64_t *sizes = popci_malloc(sizeof(int64_t) * (size_t)(p->n_weights + 1));
    int n = 0;
    step_ctx c;
    popc_status st;

    if (!trained || !grads || !sizes) {
        st = popc_set_error(POPC_ENOMEM, "optimizer step: out of memory");
        goto done;
    }
    for (int w = 0; w < p->n_weights; w++)
        if (p->weights[w].accum_slot >= 0) {
            grads[n] = e->accum[w];
            sizes[n] = popc_view_numel(&p->slots[p->weights[w].slot].info);
            grouped |= popci_exec_n_groups(e, w) > 1;
            trained[n++] = w;
        }
    max_norm = popci_optimizer_max_grad_norm(io->optimizer);
    /* one norm per replica would mix groups: grouped weights would make
    ** ungrouped ones differ between replicas */
    if (isfinite(max_norm) && grouped) {
        st = popc_set_error(POPC_EUNSUPPORTED, "optimizer step: "
                            "max_grad_norm with replica-grouped weights is "
                            "not supported; remove max_grad_norm or the "
                            "replica grouping");
        goto done;
    }
    c = (step_ctx){e, io, trained};
    st = e->cfg.dist ? e->cfg.dist->reduce(e->cfg.dist, e, trained, n,
                                           popci_optstate_steps(io->state) +
                                               1)
                     : for_each(e, n, reduce_one, &c);
    if (st != POPC_OK)
        goto done;
    if (e->cfg.auto_loss_scaling && auto_loss_scale(e, trained, n))
        goto done;
    if (isfinite(max_norm))
        popci_clip_by_global_norm(grads, sizes, n, max_norm);
    if ((st = for_each(e, n, apply_one, &c)) != POPC_OK)
        goto done;
    if (e->cfg.broadcast_buffers && e->cfg.training) {
        if (e->cfg.dist &&
            (st = e->cfg.dist->broadcast_buffers(e->cfg.dist, e)) != POPC_OK)
            goto done;
        broadcast_buffers(e);
    }
done:
    free(trained);
    free(grads);
    free(sizes);
    return st;
}
