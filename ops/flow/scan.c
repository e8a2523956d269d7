/* scan.c - ONNX Scan: inputs are N states, then
** num_scan_inputs sequences, then the captured values. The body reads
** (N states, one element of each sequence, captures) and gives (N states,
** K scan values); the node gives the N final states and the K scan values
** stacked along each scan output's axis. Directions and axes follow
** scan_input_directions, scan_output_directions, scan_input_axes and
** scan_output_axes (negative axes count from the end). Opset 8's batched
** form runs one such scan per batch element (see unbatch). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "ops/flow/flow_priv.h"

typedef struct scan_shape {
    int n_state, n_in, n_scan, n_captures;
    int64_t steps;
    int64_t in_axis[FLOW_MAX_IO], out_axis[FLOW_MAX_IO];
    int in_rev[FLOW_MAX_IO], out_rev[FLOW_MAX_IO];
} scan_shape;

/* Element k of list attribute name, or def. */
static int64_t list_at(const popc_attrs *a, const char *name, int k,
                       int64_t def)
{
    const popc_attr *x = popc_attrs_find(a, name);

    return x && x->type == POPC_ATTR_INTS && k < x->n ? x->ints[k] : def;
}

static popc_status axis_of(const char *node, const char *what, int k,
                           int64_t axis, int rank, int64_t *out)
{
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank)
        return flow_host->set_error(POPC_EINVAL, "Scan '%s': %s %d has an "
                                    "axis outside its %d dimensions", node,
                                    what, k, rank);
    *out = axis;
    return POPC_OK;
}

static popc_status scan_check(const char *node, const popc_view *in,
                              int n_in, const popc_attrs *a, int n_out,
                              flow_sig *body, scan_shape *s)
{
    popc_status st;
    int64_t m = popc_attr_int(a, "num_scan_inputs", 0);

    if ((st = flow_body("Scan", node, a, "body", body)) != POPC_OK)
        return st;
    if ((st = flow_captures("Scan", node, a, n_in, 0, &s->n_captures)) !=
        POPC_OK)
        return st;
    s->n_in = (int)(m < 0 || m > FLOW_MAX_IO ? -1 : m);
    s->n_state = n_in - s->n_captures - s->n_in;
    s->n_scan = n_out - s->n_state;
    if (s->n_in < 1 || s->n_state < 0 || s->n_scan < 0 ||
        body->n_in != n_in || body->n_out != n_out)
        return flow_host->set_error(POPC_EINVAL, "Scan '%s': "
                                    "num_scan_inputs is %lld; with %d inputs "
                                    "(%d captured) and %d outputs the body "
                                    "must read %d values and give %d, but "
                                    "it reads %d and gives %d", node,
                                    (long long)m, n_in, s->n_captures, n_out,
                                    n_in, n_out, body->n_in, body->n_out);
    s->steps = -1;
    for (int k = 0; k < s->n_in; k++) {
        const popc_view *v = &in[s->n_state + k];

        if ((st = axis_of(node, "scan input", k,
                          list_at(a, "scan_input_axes", k, 0), v->rank,
                          &s->in_axis[k])) != POPC_OK)
            return st;
        s->in_rev[k] = list_at(a, "scan_input_directions", k, 0) != 0;
        if (s->steps >= 0 && v->dims[s->in_axis[k]] != s->steps)
            return flow_host->set_error(POPC_EINVAL, "Scan '%s': scan input "
                                        "%d has %lld steps, scan input 0 "
                                        "has %lld", node, k,
                                        (long long)v->dims[s->in_axis[k]],
                                        (long long)s->steps);
        s->steps = v->dims[s->in_axis[k]];
    }
    for (int j = 0; j < s->n_scan; j++) {
        if ((st = axis_of(node, "scan output", j,
                          list_at(a, "scan_output_axes", j, 0),
                          body->out[s->n_state + j].rank + 1,
                          &s->out_axis[j])) != POPC_OK)
            return st;
        s->out_rev[j] = list_at(a, "scan_output_directions", j, 0) != 0;
    }
    for (int i = 0; i < s->n_state; i++) {
        char what[64];

        snprintf(what, sizeof what, "state %d", i);
        if ((st = flow_same("Scan", node, what, &body->out[i], "after a step",
                            &in[i], "initially")) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

/* Opset 8's batched form (`__batched`, set by the importer): input 0 is
** sequence_lens, and every state and sequence has a leading batch axis the
** body does not see (sequences are [batch, steps, ...]). The views of one
** batch element are slices of the whole buffers (axis 0 is outermost). */
static popc_status unbatch(const char *node, const popc_view *in, int n_in,
                           int n_captures, popc_view *out, int64_t *batch)
{
    *batch = -1;
    for (int i = 1; i < n_in; i++) {
        out[i - 1] = in[i];
        if (i >= n_in - n_captures)
            continue;
        if (in[i].rank < 1 || (*batch >= 0 && in[i].dims[0] != *batch))
            return flow_host->set_error(POPC_EINVAL, "Scan '%s' (opset 8): "
                                        "input %d must have the batch size "
                                        "%lld as its first dimension", node,
                                        i, (long long)*batch);
        *batch = in[i].dims[0];
        memmove(out[i - 1].dims, out[i - 1].dims + 1,
                sizeof(int64_t) * (size_t)(in[i].rank - 1));
        out[i - 1].rank--;
        if (in[i].data)
            out[i - 1].data = NULL;
    }
    return POPC_OK;
}

/* Element b of a batched buffer as a view without the batch axis. */
static popc_view batch_elem(const popc_view *whole, int64_t b)
{
    popc_view v = *whole;

    memmove(v.dims, v.dims + 1, sizeof(int64_t) * (size_t)(v.rank - 1));
    v.rank--;
    v.data = (char *)whole->data + (size_t)b * popc_view_nbytes(&v);
    return v;
}

static popc_status scan_infer(popc_infer_ctx *ic)
{
    flow_sig *body = ic->host->alloc(sizeof *body);
    scan_shape *s = ic->host->alloc(sizeof *s);
    popc_status st = POPC_OK;

    if (!body || !s)
        st = ic->host->set_error(POPC_ENOMEM, "Scan '%s': out of memory",
                                 ic->node_name);
    int batched = popc_attr_int(ic->attrs, "__batched", 0) != 0;
    popc_view *ub = batched ? ic->host->alloc(sizeof *ub *
                                              (size_t)ic->n_inputs)
                            : NULL;
    int64_t B = -1;

    if (batched && !ub)
        st = ic->host->set_error(POPC_ENOMEM, "Scan '%s': out of memory",
                                 ic->node_name);
    if (st == POPC_OK && batched)
        st = unbatch(ic->node_name, ic->inputs, ic->n_inputs,
                     (int)popc_attr_int(ic->attrs, "__captures", 0), ub, &B);
    if (st == POPC_OK)
        st = scan_check(ic->node_name, batched ? ub : ic->inputs,
                        ic->n_inputs - batched, ic->attrs, ic->n_outputs,
                        body, s);
    for (int j = 0; st == POPC_OK && j < ic->n_outputs; j++) {
        popc_view v = body->out[j];

        if (j >= s->n_state) {
            int64_t ax = s->out_axis[j - s->n_state];

            if (v.rank + 1 + batched > POPC_MAX_RANK) {
                st = ic->host->set_error(POPC_EUNSUPPORTED, "Scan '%s': "
                                         "scan output %d would have more "
                                         "than %d dimensions", ic->node_name,
                                         j - s->n_state, POPC_MAX_RANK);
                break;
            }
            memmove(v.dims + ax + 1, v.dims + ax,
                    sizeof(int64_t) * (size_t)(v.rank - ax));
            v.dims[ax] = s->steps;
            v.rank++;
        }
        if (batched) {
            memmove(v.dims + 1, v.dims, sizeof(int64_t) * (size_t)v.rank);
            v.dims[0] = B;
            v.rank++;
        }
        v.data = NULL;
        ic->outputs[j] = v;
    }
    ic->host->free(ub);
    ic->host->free(body);
    ic->host->free(s);
    return st;
}

/* Bytes of the dimensions after axis, and the product of those before. */
static void split_at(const popc_view *v, int64_t axis, int64_t *outer,
                     size_t *inner)
{
    *outer = 1;
    *inner = popc_dtype_size(v->dtype);
    for (int d = 0; d < v->rank; d++) {
        if (d < axis)
            *outer *= v->dims[d];
        else if (d > axis)
            *inner *= (size_t)v->dims[d];
    }
}

/* Copy element t along axis between a whole sequence and one slice. */
static void slice_copy(const popc_view *whole, int64_t axis, int64_t t,
                       void *slice, int to_slice)
{
    int64_t outer, steps = whole->dims[axis];
    size_t inner;

    split_at(whole, axis, &outer, &inner);
    for (int64_t o = 0; o < outer; o++) {
        char *w = (char *)whole->data + ((size_t)(o * steps + t)) * inner;
        char *p = (char *)slice + (size_t)o * inner;

        if (to_slice)
            memcpy(p, w, inner);
        else
            memcpy(w, p, inner);
    }
}

typedef struct scan_run {
    flow_sig body;
    scan_shape s;
    popc_view in[FLOW_MAX_IO], out[FLOW_MAX_IO];
    popc_view state[2][FLOW_MAX_IO], elem[FLOW_MAX_IO], res[FLOW_MAX_IO];
} scan_run;

/* One scan over whole views: ins are the N states and M sequences,
** outs the N final states and K stacked outputs. */
static popc_status steps(const popc_kernel_ctx *kc, scan_run *r,
                         const popc_view *ins, const popc_view *outs)
{
    int N = r->s.n_state, M = r->s.n_in, K = r->s.n_scan;
    int C = r->s.n_captures, cur = 0;
    popc_status st;

    for (int i = 0; i < N; i++)
        memcpy(r->state[0][i].data, ins[i].data,
               popc_view_nbytes(&r->state[0][i]));
    for (int i = 0; i < C; i++)
        r->in[N + M + i] = kc->inputs[kc->n_inputs - C + i];
    for (int64_t t = 0; t < r->s.steps; t++) {
        for (int i = 0; i < N; i++) {
            r->in[i] = r->state[cur][i];
            r->out[i] = r->state[!cur][i];
        }
        for (int k = 0; k < M; k++) {
            slice_copy(&ins[N + k], r->s.in_axis[k],
                       r->s.in_rev[k] ? r->s.steps - 1 - t : t,
                       r->elem[k].data, 1);
            r->in[N + k] = r->elem[k];
        }
        for (int j = 0; j < K; j++)
            r->out[N + j] = r->res[j];
        if ((st = kc->host->graph_run(r->body.g, r->in, r->body.n_in, r->out,
                                      r->body.n_out, kc->training,
                                      kc->seed + (uint64_t)t)) != POPC_OK)
            return st;
        for (int j = 0; j < K; j++)
            slice_copy(&outs[N + j], r->s.out_axis[j],
                       r->s.out_rev[j] ? r->s.steps - 1 - t : t,
                       r->res[j].data, 0);
        cur = !cur;
    }
    for (int i = 0; i < N; i++)
        memcpy(outs[i].data, r->state[cur][i].data,
               popc_view_nbytes(&r->state[cur][i]));
    return POPC_OK;
}

/* Opset 8: one scan per batch element; sequence_lens, when given, must
** be the full length (shorter sequences are not supported). */
static popc_status batched_steps(const popc_kernel_ctx *kc, scan_run *r,
                                 popc_view *ins, popc_view *outs)
{
    const popc_view *lens = &kc->inputs[0];
    int n = r->s.n_state + r->s.n_in, n_out = kc->n_outputs;
    int64_t B = kc->inputs[1].dims[0];
    popc_status st;

    for (int64_t b = 0; b < B; b++) {
        if (lens->dtype != POPC_DTYPE_UNDEFINED) {
            int64_t len = lens->dtype == POPC_DTYPE_I64
                              ? ((const int64_t *)lens->data)[b]
                              : ((const int32_t *)lens->data)[b];

            if (len != r->s.steps)
                return kc->host->set_error(POPC_EUNSUPPORTED, "Scan '%s': "
                                           "sequence_lens[%lld] is %lld, "
                                           "not the full %lld steps; "
                                           "shorter sequences are not "
                                           "supported", kc->node_name,
                                           (long long)b, (long long)len,
                                           (long long)r->s.steps);
        }
        for (int i = 0; i < n; i++)
            ins[i] = batch_elem(&kc->inputs[1 + i], b);
        for (int j = 0; j < n_out; j++)
            outs[j] = batch_elem(&kc->outputs[j], b);
        if ((st = steps(kc, r, ins, outs)) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

static popc_status scan_run_all(const popc_kernel_ctx *kc, scan_run *r,
                                int batched)
{
    popc_view *ins, *outs;
    popc_status st;

    if (!batched)
        return steps(kc, r, kc->inputs, kc->outputs);
    ins = kc->host->alloc(sizeof *ins * (size_t)(kc->n_inputs + 1));
    outs = kc->host->alloc(sizeof *outs * (size_t)(kc->n_outputs + 1));
    if (!ins || !outs)
        st = kc->host->set_error(POPC_ENOMEM, "Scan '%s': out of memory",
                                 kc->node_name);
    else
        st = batched_steps(kc, r, ins, outs);
    kc->host->free(ins);
    kc->host->free(outs);
    return st;
}

static popc_status scan_forward(const popc_kernel_ctx *kc)
{
    scan_run *r = kc->host->alloc(sizeof *r);
    const char *node = kc->node_name;
    int batched = popc_attr_int(kc->attrs, "__batched", 0) != 0;
    popc_view *ub = NULL;
    int64_t B;
    int N, M, K;
    popc_status st = POPC_OK;

    if (!r || (batched && !(ub = kc->host->alloc(sizeof *ub *
                                                 (size_t)kc->n_inputs))))
        st = kc->host->set_error(POPC_ENOMEM, "Scan '%s': out of memory",
                                 node);
    if (st == POPC_OK && batched)
        st = unbatch(node, kc->inputs, kc->n_inputs,
                     (int)popc_attr_int(kc->attrs, "__captures", 0), ub, &B);
    if (st == POPC_OK)
        st = scan_check(node, batched ? ub : kc->inputs,
                        kc->n_inputs - batched, kc->attrs, kc->n_outputs,
                        &r->body, &r->s);
    kc->host->free(ub);
    (void)B;
    if (st != POPC_OK) {
        kc->host->free(r);
        return st;
    }
    N = r->s.n_state;
    M = r->s.n_in;
    K = r->s.n_scan;
    if ((st = flow_alloc_views("Scan", node, r->body.out, N, r->state[0])) ==
        POPC_OK) {
        if ((st = flow_alloc_views("Scan", node, r->body.out, N,
                                   r->state[1])) == POPC_OK) {
            if ((st = flow_alloc_views("Scan", node, r->body.in + N, M,
                                       r->elem)) == POPC_OK) {
                if ((st = flow_alloc_views("Scan", node, r->body.out + N, K,
                                           r->res)) == POPC_OK) {
                    st = scan_run_all(kc, r, batched);
                    flow_free_views(r->res, K);
                }
                flow_free_views(r->elem, M);
            }
            flow_free_views(r->state[1], N);
        }
        flow_free_views(r->state[0], N);
    }
    kc->host->free(r);
    return st;
}

/* A Scan costs its body once per step (and per batch element in the
** batched form of opset 8). */
static popc_status scan_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    flow_sig *body = ic->host->alloc(sizeof *body);
    scan_shape *s = ic->host->alloc(sizeof *s);
    int batched = popc_attr_int(ic->attrs, "__batched", 0) != 0;
    popc_view *ub = batched ? ic->host->alloc(sizeof *ub *
                                              (size_t)ic->n_inputs)
                            : NULL;
    int64_t B = 1;
    popc_status st = POPC_OK;

    if (!body || !s || (batched && !ub))
        st = ic->host->set_error(POPC_ENOMEM, "Scan '%s': out of memory",
                                 ic->node_name);
    if (st == POPC_OK && batched)
        st = unbatch(ic->node_name, ic->inputs, ic->n_inputs,
                     (int)popc_attr_int(ic->attrs, "__captures", 0), ub, &B);
    if (st == POPC_OK)
        st = scan_check(ic->node_name, batched ? ub : ic->inputs,
                        ic->n_inputs - batched, ic->attrs, ic->n_outputs,
                        body, s);
    if (st == POPC_OK)
        st = flow_body_cost(ic, "body",
                            (double)(s->steps > 0 ? s->steps : 0) *
                                (double)(B > 0 ? B : 1),
                            c);
    ic->host->free(ub);
    ic->host->free(s);
    ic->host->free(body);
    return st;
}

/* One definition per version whose form popc reads the same way, so
** that a node keeps its model's opset (and export writes it there). */
#define SCAN_DEF(VERSION)                                                   \
    {                                                                       \
        .size = sizeof(popc_op_def),                                        \
        .domain = "ai.onnx",                                                \
        .name = "Scan",                                                     \
        .since_version = VERSION,                                           \
        .min_inputs = 0,                                                    \
        .max_inputs = 4096,                                                 \
        .min_outputs = 1,                                                   \
        .max_outputs = 256,                                                 \
        .flags = 0,                                                         \
        .infer = scan_infer,                                                \
        .cost = scan_cost,                                                  \
        .forward = scan_forward,                                            \
        .grad = flow_scan_grad,                                             \
        .doc = "runs its body over the elements of sequences (ONNX Scan)",  \
    }

static const popc_op_def scan_ops[] = {SCAN_DEF(8), SCAN_DEF(9),
                                       SCAN_DEF(11), SCAN_DEF(16)};

popc_status flow_register_scan(const popc_host *h, popc_registrar *r)
{
    popc_status st;

    for (size_t i = 0; i < sizeof scan_ops / sizeof scan_ops[0]; i++)
        if ((st = h->register_op(r, &scan_ops[i])) != POPC_OK)
            return st;
    return POPC_OK;
}
