/* grad.c - gradients of If, Loop and Scan.
**
** If: another If on the same condition whose branches are the branches'
** gradient graphs (host->graph_gradient: closed graphs that recompute the
** branch and return the gradients of its captured inputs).
**
** Loop and Scan: unrolled into the backward pass. Their trip counts are
** fixed at compile (Scan's by its shapes; Loop's M must be a constant), so
** the gradient recomputes the forward step by step (host->grad_inline of
** the body, keeping each step's state), then walks the steps backwards
** through the body's gradient graph, summing the captured values'
** gradients and stacking the sequences'. The graph grows with the trip
** count times the body; a Loop whose condition stops it early while
** training is an error at run time (loop.c), as the unrolled gradient
** assumes every iteration ran.
*/
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "ops/flow/flow_priv.h"


static int can_differentiate(const popc_host *h)
{
    return POPC_HAS_FIELD(popc_host, h->size, grad_inline) &&
           h->grad_inline && h->graph_gradient && h->graph_free;
}

static popc_status need_host(popc_grad_ctx *gc, const char *op)
{
    if (can_differentiate(gc->host))
        return POPC_OK;
    return gc->host->set_error(POPC_EPLUGIN, "%s '%s': this libpopc cannot "
                               "differentiate subgraphs; use the libpopc "
                               "this plugin was built with", op,
                               gc->node_name);
}

/* A zero constant shaped like info. */
static popc_status zeros(popc_grad_ctx *gc, const popc_view *info, int *out)
{
    popc_view v = *info;
    popc_status st;

    v.data = gc->host->alloc(popc_view_nbytes(info) + 1);
    if (!v.data)
        return gc->host->set_error(POPC_ENOMEM, "'%s': out of memory",
                                   gc->node_name);
    st = gc->host->grad_constant(gc, &v, out);
    gc->host->free(v.data);
    return st;
}

static popc_status scalar_i64(popc_grad_ctx *gc, int64_t x, int *out)
{
    popc_view v;

    memset(&v, 0, sizeof v);
    v.dtype = POPC_DTYPE_I64;
    v.data = &x;
    return gc->host->grad_constant(gc, &v, out);
}

static popc_status ints1(popc_grad_ctx *gc, int64_t x, int *out)
{
    popc_view v;

    memset(&v, 0, sizeof v);
    v.dtype = POPC_DTYPE_I64;
    v.rank = 1;
    v.dims[0] = 1;
    v.data = &x;
    return gc->host->grad_constant(gc, &v, out);
}

static popc_status add(popc_grad_ctx *gc, int a, int b, int *out)
{
    int in[2] = {a, b};

    if (a < 0) {
        *out = b;
        return POPC_OK;
    }
    return gc->host->grad_add_node(gc, NULL, "Add", in, 2, out, 1, NULL, 0);
}

/* Element t of seq along axis (the axis removed). */
static popc_status take(popc_grad_ctx *gc, int seq, int64_t t, int64_t axis,
                        int *out)
{
    popc_attr a = {.name = "axis", .type = POPC_ATTR_INT, .i = axis};
    int in[2] = {seq, -1};
    popc_status st;

    if ((st = scalar_i64(gc, t, &in[1])) != POPC_OK)
        return st;
    return gc->host->grad_add_node(gc, NULL, "Gather", in, 2, out, 1, &a, 1);
}

/* parts[0..n) stacked along a new axis */
static popc_status stack(popc_grad_ctx *gc, const int *parts, int64_t n,
                         int64_t axis, int *out)
{
    popc_attr a = {.name = "axis", .type = POPC_ATTR_INT, .i = axis};
    int *un = gc->host->alloc(sizeof *un * (size_t)(n + 1)), ax;
    popc_status st = POPC_OK;

    if (!un)
        return gc->host->set_error(POPC_ENOMEM, "'%s': out of memory",
                                   gc->node_name);
    if ((st = ints1(gc, axis, &ax)) == POPC_OK)
        for (int64_t t = 0; t < n && st == POPC_OK; t++) {
            int in[2] = {parts[t], ax};

            st = gc->host->grad_add_node(gc, NULL, "Unsqueeze", in, 2, &un[t],
                                         1, NULL, 0);
        }
    if (st == POPC_OK)
        st = gc->host->grad_add_node(gc, NULL, "Concat", un, (int)n, out, 1,
                                     &a, 1);
    gc->host->free(un);
    return st;
}

popc_status flow_given_or_zeros(popc_grad_ctx *gc, int first, int n,
                                  int *out)
{
    popc_status st = POPC_OK;

    for (int i = 0; i < n && st == POPC_OK; i++) {
        out[i] = gc->output_grads[first + i];
        if (out[i] < 0)
            st = zeros(gc, &gc->output_info[first + i], &out[i]);
    }
    return st;
}

/* The gradient of step t's element of stacked output j (along axis at
** position pos): taken from the given gradient, or zeros. */
static popc_status step_output_grad(popc_grad_ctx *gc, int j, int64_t pos,
                                    int64_t axis, int *out)
{
    popc_view v = gc->output_info[j];

    if (gc->output_grads[j] >= 0)
        return take(gc, gc->output_grads[j], pos, axis, out);
    memmove(v.dims + axis, v.dims + axis + 1,
            sizeof(int64_t) * (size_t)(v.rank - axis - 1));
    v.rank--;
    return zeros(gc, &v, out);
}

/* input_grads[first + i] = g[i] for the floating-point inputs. */
static void set_float_grads(popc_grad_ctx *gc, int first, const int *g,
                            int n)
{
    for (int i = 0; i < n; i++)
        if (popc_dtype_is_float(gc->input_info[first + i].dtype))
            gc->input_grads[first + i] = g[i];
}

/* ---- If ----------------------------------------------------------------- */

popc_status flow_if_grad(popc_grad_ctx *gc)
{
    const popc_attr *t = popc_attrs_find(gc->attrs, "then_branch");
    const popc_attr *e = popc_attrs_find(gc->attrs, "else_branch");
    int C = (int)popc_attr_int(gc->attrs, "__captures", 0);
    int n_out = gc->n_outputs, any = 0;
    struct popc_graph *gt = NULL, *ge = NULL;
    int in[1 + 2 * FLOW_MAX_IO], out[FLOW_MAX_IO];
    popc_attr attrs[3];
    popc_status st;

    for (int j = 0; j < n_out; j++)
        any |= gc->output_grads[j] >= 0;
    if (!any || C == 0)
        return POPC_OK;
    if ((st = need_host(gc, "If")) != POPC_OK)
        return st;
    if (!t || !e || !t->graph || !e->graph || C + n_out > 2 * FLOW_MAX_IO)
        return gc->host->set_error(POPC_EINVAL, "If '%s': branches missing",
                                   gc->node_name);
    in[0] = gc->inputs[0];
    for (int i = 0; i < C; i++)
        in[1 + i] = gc->inputs[gc->n_inputs - C + i];
    for (int j = 0; j < n_out; j++) {
        in[1 + C + j] = gc->output_grads[j];
        if (in[1 + C + j] < 0 &&
            (st = zeros(gc, &gc->output_info[j], &in[1 + C + j])) != POPC_OK)
            return st;
    }
    if ((st = gc->host->graph_gradient(t->graph, &gt)) != POPC_OK)
        return st;
    if ((st = gc->host->graph_gradient(e->graph, &ge)) != POPC_OK) {
        gc->host->graph_free(gt);
        return st;
    }
    attrs[0] = (popc_attr){.name = "then_branch", .type = POPC_ATTR_GRAPH,
                           .graph = gt};
    attrs[1] = (popc_attr){.name = "else_branch", .type = POPC_ATTR_GRAPH,
                           .graph = ge};
    attrs[2] = (popc_attr){.name = "__captures", .type = POPC_ATTR_INT,
                           .i = C + n_out};
    st = gc->host->grad_add_node(gc, NULL, "If", in, 1 + C + n_out, out, C,
                                 attrs, 3);
    gc->host->graph_free(gt);
    gc->host->graph_free(ge);
    if (st != POPC_OK)
        return st;
    for (int i = 0; i < C; i++)
        if (popc_dtype_is_float(gc->input_info[gc->n_inputs - C + i].dtype))
            gc->input_grads[gc->n_inputs - C + i] = out[i];
    return POPC_OK;
}

/* ---- unrolled loops ---------------------------------------------------- */

/* What the unrolled gradient of a Loop or Scan works with: per step, the
** body's inputs (state and per-step values) as value ids, and the
** gradients flowing back. */
typedef struct unroll {
    const struct popc_graph *body;
    struct popc_graph *gbody;   /* graph_gradient(body) */
    int n_body_in, n_body_out;
    int64_t steps;
    int *step_in;               /* steps x n_body_in */
} unroll;

static popc_status unroll_begin(popc_grad_ctx *gc, const char *op,
                                const struct popc_graph *body, int64_t steps,
                                unroll *u)
{
    popc_status st;

    memset(u, 0, sizeof *u);
    if (steps < 0 || steps > popc_limit_get(POPC_LIMIT_UNROLLED_STEPS))
        return gc->host->set_error(POPC_EUNSUPPORTED, "%s '%s': its "
                                   "gradient unrolls %lld steps; popc "
                                   "unrolls up to %lld "
                                   "(POPC_MAX_UNROLLED_STEPS; raise it with "
                                   "POPC_MAX_UNROLLED_STEPS=N in the "
                                   "environment, or popc_limit_set)", op,
                                   gc->node_name, (long long)steps,
                                   (long long)popc_limit_get(
                                       POPC_LIMIT_UNROLLED_STEPS));
    if ((st = gc->host->graph_signature(body, &u->n_body_in, NULL,
                                        &u->n_body_out, NULL, 0)) != POPC_OK)
        return st;
    u->body = body;
    u->steps = steps;
    u->step_in = gc->host->alloc(sizeof *u->step_in *
                                 (size_t)(steps * u->n_body_in + 1));
    if (!u->step_in)
        return gc->host->set_error(POPC_ENOMEM, "%s '%s': out of memory", op,
                                   gc->node_name);
    return gc->host->graph_gradient(body, &u->gbody);
}

static void unroll_end(popc_grad_ctx *gc, unroll *u)
{
    gc->host->free(u->step_in);
    if (u->gbody)
        gc->host->graph_free(u->gbody);
}

/* The body's gradient at step t: inputs are the step's body inputs and
** the gradients of its outputs; d_in receives the body inputs' gradients. */
static popc_status step_back(popc_grad_ctx *gc, const unroll *u, int64_t t,
                             const int *d_out, int *d_in)
{
    int in[2 * FLOW_MAX_IO];

    memcpy(in, u->step_in + t * u->n_body_in,
           sizeof(int) * (size_t)u->n_body_in);
    memcpy(in + u->n_body_in, d_out, sizeof(int) * (size_t)u->n_body_out);
    return gc->host->grad_inline(gc, u->gbody, in,
                                 u->n_body_in + u->n_body_out, d_in,
                                 u->n_body_in);
}

/* ---- Scan --------------------------------------------------------------- */

static int64_t list_at(const popc_attrs *a, const char *name, int k,
                       int64_t def)
{
    const popc_attr *x = popc_attrs_find(a, name);

    return x && x->type == POPC_ATTR_INTS && k < x->n ? x->ints[k] : def;
}

popc_status flow_scan_grad(popc_grad_ctx *gc)
{
    const popc_attr *b = popc_attrs_find(gc->attrs, "body");
    int C = (int)popc_attr_int(gc->attrs, "__captures", 0);
    int M = (int)popc_attr_int(gc->attrs, "num_scan_inputs", 0);
    int N = gc->n_inputs - C - M, K = gc->n_outputs - N;
    int64_t T, in_ax[FLOW_MAX_IO], out_ax[FLOW_MAX_IO];
    int rev_in[FLOW_MAX_IO], rev_out[FLOW_MAX_IO];
    int state[FLOW_MAX_IO], outs[FLOW_MAX_IO], d_out[FLOW_MAX_IO];
    int d_in[2 * FLOW_MAX_IO], dcap[FLOW_MAX_IO], *dx = NULL;
    unroll u;
    popc_status st;

    if (popc_attr_int(gc->attrs, "__batched", 0))
        return gc->host->set_error(POPC_EUNSUPPORTED, "Scan '%s': opset 8's "
                                   "batched Scan has no gradient yet",
                                   gc->node_name);
    if ((st = need_host(gc, "Scan")) != POPC_OK)
        return st;
    if (!b || !b->graph || N < 0 || K < 0 || M < 1)
        return gc->host->set_error(POPC_EINVAL, "Scan '%s': malformed",
                                   gc->node_name);
    for (int k = 0; k < M; k++) {
        const popc_view *v = &gc->input_info[N + k];

        in_ax[k] = list_at(gc->attrs, "scan_input_axes", k, 0);
        if (in_ax[k] < 0)
            in_ax[k] += v->rank;
        rev_in[k] = list_at(gc->attrs, "scan_input_directions", k, 0) != 0;
    }
    for (int j = 0; j < K; j++) {
        out_ax[j] = list_at(gc->attrs, "scan_output_axes", j, 0);
        if (out_ax[j] < 0)
            out_ax[j] += gc->output_info[N + j].rank;
        rev_out[j] = list_at(gc->attrs, "scan_output_directions", j, 0) != 0;
    }
    T = gc->input_info[N].dims[in_ax[0]];
    if ((st = unroll_begin(gc, "Scan", b->graph, T, &u)) != POPC_OK)
        goto done;
    if (!(dx = gc->host->alloc(sizeof *dx * (size_t)(T * M + 1)))) {
        st = gc->host->set_error(POPC_ENOMEM, "Scan '%s': out of memory",
                                 gc->node_name);
        goto done;
    }
    /* forward, recomputed: each step's states and elements */
    for (int i = 0; i < N; i++)
        state[i] = gc->inputs[i];
    for (int64_t t = 0; t < T && st == POPC_OK; t++) {
        int *in = u.step_in + t * u.n_body_in;

        memcpy(in, state, sizeof(int) * (size_t)N);
        for (int k = 0; k < M && st == POPC_OK; k++)
            st = take(gc, gc->inputs[N + k], rev_in[k] ? T - 1 - t : t,
                      in_ax[k], &in[N + k]);
        for (int c = 0; c < C; c++)
            in[N + M + c] = gc->inputs[gc->n_inputs - C + c];
        if (st == POPC_OK && t + 1 < T &&
            (st = gc->host->grad_inline(gc, u.body, in, u.n_body_in, outs,
                                        u.n_body_out)) == POPC_OK)
            memcpy(state, outs, sizeof(int) * (size_t)N);
    }
    /* backward */
    if (st == POPC_OK)
        st = flow_given_or_zeros(gc, 0, N, state);
    for (int c = 0; c < C; c++)
        dcap[c] = -1;
    for (int64_t t = T - 1; t >= 0 && st == POPC_OK; t--) {
        memcpy(d_out, state, sizeof(int) * (size_t)N);
        for (int j = 0; j < K && st == POPC_OK; j++)
            st = step_output_grad(gc, N + j, rev_out[j] ? T - 1 - t : t,
                                  out_ax[j], &d_out[N + j]);
        if (st == POPC_OK)
            st = step_back(gc, &u, t, d_out, d_in);
        memcpy(state, d_in, sizeof(int) * (size_t)N);
        /* dx[k][p]: the gradient of sequence k's element p */
        for (int k = 0; k < M; k++)
            dx[k * T + (rev_in[k] ? T - 1 - t : t)] = d_in[N + k];
        for (int c = 0; c < C && st == POPC_OK; c++)
            st = add(gc, dcap[c], d_in[N + M + c], &dcap[c]);
    }
    for (int k = 0; k < M && st == POPC_OK; k++)
        if (popc_dtype_is_float(gc->input_info[N + k].dtype))
            st = stack(gc, dx + k * T, T, in_ax[k], &gc->input_grads[N + k]);
    if (st == POPC_OK) {
        set_float_grads(gc, 0, state, N);
        set_float_grads(gc, gc->n_inputs - C, dcap, C);
    }
done:
    gc->host->free(dx);
    unroll_end(gc, &u);
    return st;
}

/* ---- Loop --------------------------------------------------------------- */

popc_status flow_loop_grad(popc_grad_ctx *gc)
{
    const popc_attr *b = popc_attrs_find(gc->attrs, "body");
    int C = (int)popc_attr_int(gc->attrs, "__captures", 0);
    int N = gc->n_inputs - 2 - C, K = gc->n_outputs - N;
    const popc_view *m = &gc->input_info[0];
    int state[FLOW_MAX_IO], outs[FLOW_MAX_IO], d_out[FLOW_MAX_IO];
    int d_in[2 * FLOW_MAX_IO], dcap[FLOW_MAX_IO], cond;
    int64_t T;
    unroll u;
    popc_status st;

    memset(&u, 0, sizeof u);
    if ((st = need_host(gc, "Loop")) != POPC_OK)
        return st;
    if (!b || !b->graph || N < 0 || K < 0)
        return gc->host->set_error(POPC_EINVAL, "Loop '%s': malformed",
                                   gc->node_name);
    if (gc->inputs[0] < 0 || !m->data)
        return gc->host->set_error(POPC_EUNSUPPORTED, "Loop '%s': its "
                                   "gradient unrolls the loop, so the trip "
                                   "count M must be known at compile",
                                   gc->node_name);
    T = *(const int64_t *)m->data;
    if ((st = unroll_begin(gc, "Loop", b->graph, T, &u)) != POPC_OK)
        goto done;
    cond = gc->inputs[1];
    if (cond < 0) {
        static const uint8_t yes = 1;
        popc_view v;

        memset(&v, 0, sizeof v);
        v.dtype = POPC_DTYPE_BOOL;
        v.data = (void *)&yes;
        if ((st = gc->host->grad_constant(gc, &v, &cond)) != POPC_OK)
            goto done;
    }
    for (int i = 0; i < N; i++)
        state[i] = gc->inputs[2 + i];
    for (int64_t t = 0; t < T && st == POPC_OK; t++) {
        int *in = u.step_in + t * u.n_body_in;

        if ((st = scalar_i64(gc, t, &in[0])) != POPC_OK)
            break;
        in[1] = cond;
        memcpy(in + 2, state, sizeof(int) * (size_t)N);
        for (int c = 0; c < C; c++)
            in[2 + N + c] = gc->inputs[gc->n_inputs - C + c];
        if (t + 1 < T &&
            (st = gc->host->grad_inline(gc, u.body, in, u.n_body_in, outs,
                                        u.n_body_out)) == POPC_OK) {
            cond = outs[0];
            memcpy(state, outs + 1, sizeof(int) * (size_t)N);
        }
    }
    if (st == POPC_OK)
        st = flow_given_or_zeros(gc, 0, N, state);
    if (st == POPC_OK) {
        /* the condition output's gradient: one bool zero for every step */
        popc_view cv;

        memset(&cv, 0, sizeof cv);
        cv.dtype = POPC_DTYPE_BOOL;
        st = zeros(gc, &cv, &d_out[0]);
    }
    for (int c = 0; c < C; c++)
        dcap[c] = -1;
    for (int64_t t = T - 1; t >= 0 && st == POPC_OK; t--) {
        memcpy(d_out + 1, state, sizeof(int) * (size_t)N);
        for (int j = 0; j < K && st == POPC_OK; j++)
            st = step_output_grad(gc, N + j, t, 0, &d_out[1 + N + j]);
        if (st == POPC_OK)
            st = step_back(gc, &u, t, d_out, d_in);
        memcpy(state, d_in + 2, sizeof(int) * (size_t)N);
        for (int c = 0; c < C && st == POPC_OK; c++)
            st = add(gc, dcap[c], d_in[2 + N + c], &dcap[c]);
    }
    if (st == POPC_OK) {
        set_float_grads(gc, 2, state, N);
        set_float_grads(gc, gc->n_inputs - C, dcap, C);
    }
done:
    unroll_end(gc, &u);
    return st;
}
