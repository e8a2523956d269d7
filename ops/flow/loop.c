/* loop.c - ONNX Loop: inputs M (trip count, optional), cond (optional),
** the N loop-carried initial values, then the captured values. The body
** reads (iteration number, cond, N values, captures) and gives (cond,
** N values, K scan values); the node gives the N final values and the K
** scan outputs, each the per-iteration values stacked on a new first axis.
** Scan outputs need the trip count at compile (popc fixes their shape
** then): M must be a constant or an input given at compile, and a loop
** that a false condition stops early fails, naming the node, instead of
** returning shorter outputs. A loop without M runs until its condition is
** false, as ONNX defines. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "ops/flow/flow_priv.h"

typedef struct loop_shape {
    int n_carried, n_scan, n_captures;
    int64_t trips;            /* M at compile; -1 when unknown or absent */
} loop_shape;

static int present(const popc_view *v, int n, int i)
{
    return i < n && v[i].dtype != POPC_DTYPE_UNDEFINED;
}

static popc_status loop_check(const char *node, const popc_view *in,
                              int n_in, const popc_attrs *attrs, int n_out,
                              flow_sig *body, loop_shape *ls)
{
    const char *op = "Loop";
    popc_status st;

    if ((st = flow_captures(op, node, attrs, n_in, 2, &ls->n_captures)) !=
            POPC_OK ||
        (st = flow_body(op, node, attrs, "body", body)) != POPC_OK)
        return st;
    ls->n_carried = n_in - 2 - ls->n_captures;
    ls->n_scan = body->n_out - 1 - ls->n_carried;
    if (ls->n_carried < 0 || ls->n_scan < 0 ||
        body->n_in != 2 + ls->n_carried + ls->n_captures ||
        n_out != ls->n_carried + ls->n_scan)
        return flow_host->set_error(POPC_EINVAL, "Loop '%s': the body reads "
                                    "%d values and gives %d; with %d "
                                    "loop-carried values and %d captured "
                                    "ones it must read 2 + %d + %d and give "
                                    "1 + %d + the node's %d - %d scan "
                                    "outputs", node, body->n_in, body->n_out,
                                    ls->n_carried, ls->n_captures,
                                    ls->n_carried, ls->n_captures,
                                    ls->n_carried, n_out, ls->n_carried);
    if (present(in, n_in, 0) && (popc_view_numel(&in[0]) != 1 ||
                                 in[0].dtype != POPC_DTYPE_I64))
        return flow_host->set_error(POPC_EINVAL, "Loop '%s': M must be one "
                                    "int64", node);
    if (present(in, n_in, 1) && (popc_view_numel(&in[1]) != 1 ||
                                 in[1].dtype != POPC_DTYPE_BOOL))
        return flow_host->set_error(POPC_EINVAL, "Loop '%s': cond must be "
                                    "one bool", node);
    ls->trips = present(in, n_in, 0) && in[0].data
                    ? *(const int64_t *)in[0].data
                    : -1;
    if (ls->trips < -1)
        ls->trips = 0;
    for (int i = 0; i < ls->n_carried; i++) {
        char what[80];

        snprintf(what, sizeof what, "loop-carried value %d", i);
        if ((st = flow_same(op, node, what, &body->out[1 + i],
                            "after an iteration", &in[2 + i],
                            "initially")) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

static popc_status loop_infer(popc_infer_ctx *ic)
{
    flow_sig *body = ic->host->alloc(sizeof *body);
    loop_shape ls;
    popc_status st;

    if (!body)
        return ic->host->set_error(POPC_ENOMEM, "Loop '%s': out of memory",
                                   ic->node_name);
    st = loop_check(ic->node_name, ic->inputs, ic->n_inputs, ic->attrs,
                    ic->n_outputs, body, &ls);
    if (st == POPC_OK && ls.n_scan &&
        ls.trips > popc_limit_get(POPC_LIMIT_LOOP_TRIPS))
        st = ic->host->set_error(POPC_EUNSUPPORTED, "Loop '%s': M = %lld "
                                 "iterations, over popc's limit of %lld "
                                 "(POPC_MAX_LOOP_TRIPS), and its scan "
                                 "outputs would hold one value per "
                                 "iteration; raise the limit "
                                 "(POPC_MAX_LOOP_TRIPS=N in the "
                                 "environment, or popc_limit_set) if the "
                                 "model is trusted", ic->node_name,
                                 (long long)ls.trips,
                                 (long long)popc_limit_get(
                                     POPC_LIMIT_LOOP_TRIPS));
    if (st == POPC_OK && ls.n_scan && ls.trips < 0)
        st = ic->host->set_error(POPC_EUNSUPPORTED, "Loop '%s': it has %d "
                                 "scan output%s, whose length is the trip "
                                 "count, and popc fixes shapes at compile "
                                 "(as PopTorch does): M must be known at "
                                 "compile (a constant, or an input given "
                                 "at compile)", ic->node_name, ls.n_scan,
                                 ls.n_scan == 1 ? "" : "s");
    for (int j = 0; st == POPC_OK && j < ic->n_outputs; j++) {
        popc_view v = body->out[1 + j];

        if (j >= ls.n_carried) {
            if (v.rank + 1 > POPC_MAX_RANK) {
                st = ic->host->set_error(POPC_EUNSUPPORTED, "Loop '%s': "
                                         "scan output %d would have more "
                                         "than %d dimensions", ic->node_name,
                                         j - ls.n_carried, POPC_MAX_RANK);
                break;
            }
            memmove(v.dims + 1, v.dims, sizeof(int64_t) * (size_t)v.rank);
            v.dims[0] = ls.trips;
            v.rank++;
        }
        v.data = NULL;
        ic->outputs[j] = v;
    }
    ic->host->free(body);
    return st;
}

/* Views of one iteration: body inputs and outputs over shared buffers. */
typedef struct loop_run {
    flow_sig body;
    loop_shape ls;
    popc_view in[FLOW_MAX_IO], out[FLOW_MAX_IO];
    popc_view carried[2][FLOW_MAX_IO]; /* current and next values */
    popc_view scan[FLOW_MAX_IO];       /* one iteration's scan values */
    int64_t iter;
    uint8_t cond, cond_out;
} loop_run;

static popc_status iterate(const popc_kernel_ctx *kc, loop_run *r)
{
    int N = r->ls.n_carried, K = r->ls.n_scan, C = r->ls.n_captures;
    int64_t limit = present(kc->inputs, kc->n_inputs, 0)
                        ? *(const int64_t *)kc->inputs[0].data
                        : -1;
    int64_t max_trips = popc_limit_get(POPC_LIMIT_LOOP_TRIPS);
    int cur = 0;
    popc_status st;

    r->cond = present(kc->inputs, kc->n_inputs, 1)
                  ? *(const uint8_t *)kc->inputs[1].data != 0
                  : 1;
    for (int i = 0; i < N; i++)
        memcpy(r->carried[0][i].data, kc->inputs[2 + i].data,
               popc_view_nbytes(&r->carried[0][i]));
    r->in[0] = r->body.in[0];
    r->in[0].data = &r->iter;
    r->in[1] = r->body.in[1];
    r->in[1].data = &r->cond;
    for (int i = 0; i < C; i++)
        r->in[2 + N + i] = kc->inputs[kc->n_inputs - C + i];
    r->out[0] = r->body.out[0];
    r->out[0].data = &r->cond_out;
    for (r->iter = 0; r->cond && (limit < 0 || r->iter < limit); r->iter++) {
        /* a condition that never turns false, or an M of 2^62, would run
        ** forever: M = INT64_MAX is common in exported while loops, so
        ** the iterations are counted, not M */
        if (r->iter >= max_trips)
            return kc->host->set_error(POPC_EUNSUPPORTED, "Loop '%s': "
                                       "still running after %lld "
                                       "iterations, popc's limit "
                                       "(POPC_MAX_LOOP_TRIPS); raise it "
                                       "(POPC_MAX_LOOP_TRIPS=N in the "
                                       "environment, or popc_limit_set) if "
                                       "the model is meant to run longer",
                                       kc->node_name, (long long)max_trips);
        for (int i = 0; i < N; i++) {
            r->in[2 + i] = r->carried[cur][i];
            r->out[1 + i] = r->carried[!cur][i];
        }
        for (int j = 0; j < K; j++)
            r->out[1 + N + j] = r->scan[j];
        if ((st = kc->host->graph_run(r->body.g, r->in, r->body.n_in, r->out,
                                      r->body.n_out, kc->training,
                                      kc->seed + (uint64_t)r->iter)) !=
            POPC_OK)
            return st;
        for (int j = 0; j < K; j++) {
            size_t n = popc_view_nbytes(&r->scan[j]);

            memcpy((char *)kc->outputs[N + j].data + (size_t)r->iter * n,
                   r->scan[j].data, n);
        }
        cur = !cur;
        r->cond = r->cond_out != 0;
    }
    if (kc->training && limit >= 0 && r->iter < limit)
        return kc->host->set_error(POPC_EUNSUPPORTED, "Loop '%s': its "
                                   "condition stopped it after %lld of %lld "
                                   "iterations while training; its gradient "
                                   "is unrolled over all of them",
                                   kc->node_name, (long long)r->iter,
                                   (long long)limit);
    if (K && r->iter < limit)
        return kc->host->set_error(POPC_EINVAL, "Loop '%s': its condition "
                                   "stopped it after %lld of %lld "
                                   "iterations, but its scan outputs were "
                                   "compiled for %lld", kc->node_name,
                                   (long long)r->iter, (long long)limit,
                                   (long long)limit);
    for (int i = 0; i < N; i++)
        memcpy(kc->outputs[i].data, r->carried[cur][i].data,
               popc_view_nbytes(&r->carried[cur][i]));
    return POPC_OK;
}

static popc_status loop_forward(const popc_kernel_ctx *kc)
{
    loop_run *r = kc->host->alloc(sizeof *r);
    int N, K;
    popc_status st;

    if (!r)
        return kc->host->set_error(POPC_ENOMEM, "Loop '%s': out of memory",
                                   kc->node_name);
    if ((st = loop_check(kc->node_name, kc->inputs, kc->n_inputs, kc->attrs,
                         kc->n_outputs, &r->body, &r->ls)) != POPC_OK) {
        kc->host->free(r);
        return st;
    }
    N = r->ls.n_carried;
    K = r->ls.n_scan;
    if ((st = flow_alloc_views("Loop", kc->node_name, r->body.out + 1, N,
                               r->carried[0])) == POPC_OK) {
        if ((st = flow_alloc_views("Loop", kc->node_name, r->body.out + 1, N,
                                   r->carried[1])) == POPC_OK) {
            if ((st = flow_alloc_views("Loop", kc->node_name,
                                       r->body.out + 1 + N, K, r->scan)) ==
                POPC_OK) {
                st = iterate(kc, r);
                flow_free_views(r->scan, K);
            }
            flow_free_views(r->carried[1], N);
        }
        flow_free_views(r->carried[0], N);
    }
    kc->host->free(r);
    return st;
}

/* One definition per version whose form popc reads the same way, so
** that a node keeps its model's opset (and export writes it there). */
#define LOOP_DEF(VERSION)                                                   \
    {                                                                       \
        .size = sizeof(popc_op_def),                                        \
        .domain = "ai.onnx",                                                \
        .name = "Loop",                                                     \
        .since_version = VERSION,                                           \
        .min_inputs = 0,                                                    \
        .max_inputs = 2 + 4096,                                             \
        .min_outputs = 1,                                                   \
        .max_outputs = 256,                                                 \
        .flags = 0,                                                         \
        .infer = loop_infer,                                                \
        .forward = loop_forward,                                            \
        .grad = flow_loop_grad,                                             \
        .cost = flow_loop_cost,                                             \
        .doc = "runs its body M times or while cond holds (ONNX Loop)",     \
    }

static const popc_op_def loop_ops[] = {LOOP_DEF(1), LOOP_DEF(11),
                                       LOOP_DEF(13), LOOP_DEF(16)};

popc_status flow_register_loop(const popc_host *h, popc_registrar *r)
{
    popc_status st;

    for (size_t i = 0; i < sizeof loop_ops / sizeof loop_ops[0]; i++)
        if ((st = h->register_op(r, &loop_ops[i])) != POPC_OK)
            return st;
    return POPC_OK;
}
