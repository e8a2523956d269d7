/* recurrent_grad.c - gradients of RNN, GRU and LSTM by backpropagation
** through time.
**
** The gradient op popc::<Op>Grad takes the forward node's eight input
** slots (X, W, R, B, sequence_lens, initial_h, initial_c, P; absent ones
** stay absent) and the gradients of its outputs (dY, dY_h, dY_c; absent
** when nothing flows into that output), and gives dX, dW, dR, dB,
** d initial_h, and for LSTM d initial_c and dP. It reruns the forward pass
** of each sequence keeping only the states (2 x seq x hidden doubles), then
** walks the steps backwards, recomputing each step's gates from its saved
** state: memory stays linear in the sequence, and the gradient uses the
** very arithmetic of the forward kernel. sequence_lens gets no gradient.
** The LSTM form of lstm_gemm.c runs there instead, split into blocks of
** batch entries whose partial sums of dW, dR, dB and dP (attribute
** batch_chunks) the builder adds up.
*/
#include "config.h"

#include <string.h>

#include "ops/nn/nn_priv.h"
#include "ops/nn/lstm_gemm_priv.h"
#include "ops/nn/recurrent_priv.h"
#include "ops/util/oputil.h"

enum { IN_X, IN_W, IN_R, IN_B, IN_LENS, IN_H0, IN_C0, IN_P, IN_DY, IN_DYH,
       IN_DYC, N_GRAD_IN };
enum { OUT_DX, OUT_DW, OUT_DR, OUT_DB, OUT_DH0, OUT_DC0, OUT_DP };

static const char *const grad_names[3] = {"RNNGrad", "GRUGrad", "LSTMGrad"};

static int n_grad_outputs(int kind)
{
    return kind == RNN_K_LSTM ? 7 : 5;
}

/* Partial sums of LSTMGrad's sgemm path (lstm_gemm.c): one per block of
** batch entries when there are several, else 0. */
static int64_t lstm_chunks(popc_grad_ctx *gc, int kind)
{
    popc_view v[8];
    rnn_p p;
    int units;

    if (kind != RNN_K_LSTM)
        return 0;
    for (int i = 0; i < 8; i++)
        if (i < gc->n_inputs && gc->inputs[i] >= 0)
            v[i] = gc->input_info[i];
        else
            memset(&v[i], 0, sizeof v[i]);
    /* a node rnn_parse refuses fails later, with its message, in infer */
    if (rnn_parse(gc->node_name, kind, v, 8, gc->attrs, &p) != POPC_OK ||
        !rnn_lstm_gemm_fits(&p, v, 8))
        return 0;
    units = rnn_lstm_gemm_units(&p);
    return units > 1 ? units : 0;
}

popc_status rnn_grad_kind(popc_grad_ctx *gc, int kind)
{
    int in[N_GRAD_IN], out[7], any = 0, na = gc->attrs->n;
    static const int slot_of_output[7] = {IN_X, IN_W, IN_R, IN_B, IN_H0,
                                          IN_C0, IN_P};
    popc_attr a[32];
    int64_t S;
    popc_status st;

    for (int i = 0; i < 8; i++)
        in[i] = i < gc->n_inputs ? gc->inputs[i] : -1;
    for (int j = 0; j < 3; j++) {
        in[IN_DY + j] = j < gc->n_outputs ? gc->output_grads[j] : -1;
        any |= in[IN_DY + j] >= 0;
    }
    if (!any)
        return POPC_OK;
    S = na < 31 ? lstm_chunks(gc, kind) : 0;
    if (S > 0) {
        for (int k = 0; k < na; k++)
            a[k] = *popc_attrs_at(gc->attrs, k);
        a[na++] = popc_attr_make_int("batch_chunks", S);
    }
    if ((st = gc->host->grad_add_node(gc, "popc", grad_names[kind], in,
                                      N_GRAD_IN, out, n_grad_outputs(kind),
                                      S > 0 ? a : gc->attrs->items, na)) !=
        POPC_OK)
        return st;
    for (int j = 0; j < n_grad_outputs(kind); j++) {
        int slot = slot_of_output[j];
        const popc_view *v = &gc->input_info[slot];

        if (in[slot] < 0)
            continue;
        /* the weights' partial sums, one per block, added up */
        if (S > 0 && (slot == IN_W || slot == IN_R || slot == IN_B ||
                      slot == IN_P)) {
            if ((st = opu_grad_sum_to_dims(gc, out[j], v->dims, v->rank,
                                  &gc->input_grads[slot])) != POPC_OK)
                return st;
        } else {
            gc->input_grads[slot] = out[j];
        }
    }
    return POPC_OK;
}

static popc_status grad_infer_kind(popc_infer_ctx *ic, int kind)
{
    rnn_p p;
    int64_t G = rnn_n_gates[kind], st_dims[3], w[4], r[4], b[3], pd[3], S;
    int k;
    popc_status st;

    if ((st = rnn_parse(ic->node_name, kind, ic->inputs, ic->n_inputs,
                        ic->attrs, &p)) != POPC_OK)
        return st;
    st_dims[0] = p.layout ? p.batch : p.dirs;
    st_dims[1] = p.layout ? p.dirs : p.batch;
    st_dims[2] = p.hidden;
    /* with batch_chunks S: dW, dR, dB and dP are S partial sums */
    S = popc_attr_int(ic->attrs, "batch_chunks", 0);
    if (S < 0 || (S > 0 && (!rnn_lstm_gemm_fits(&p, ic->inputs,
                                                 ic->n_inputs) ||
                            S != rnn_lstm_gemm_units(&p))))
        return ic->host->set_error(POPC_EINVAL,
                                   "%s '%s': batch_chunks %lld does not fit "
                                   "this node (only the sgemm LSTM path "
                                   "takes it, with its block count)",
                                   grad_names[kind], ic->node_name,
                                   (long long)S);
    k = S > 0;
    w[0] = r[0] = b[0] = pd[0] = S;
    for (int i = 0; i < 3; i++) {
        w[1 + i] = ic->inputs[IN_W].dims[i];
        r[1 + i] = ic->inputs[IN_R].dims[i];
    }
    b[1] = pd[1] = p.dirs;
    b[2] = 2 * G * p.hidden;
    pd[2] = 3 * p.hidden;
    opu_set_like(&ic->outputs[OUT_DX], &ic->inputs[IN_X]);
    opu_set(&ic->outputs[OUT_DW], POPC_DTYPE_F32, w + !k, 3 + k);
    opu_set(&ic->outputs[OUT_DR], POPC_DTYPE_F32, r + !k, 3 + k);
    opu_set(&ic->outputs[OUT_DB], POPC_DTYPE_F32, b + !k, 2 + k);
    opu_set(&ic->outputs[OUT_DH0], POPC_DTYPE_F32, st_dims, 3);
    if (kind == RNN_K_LSTM) {
        opu_set(&ic->outputs[OUT_DC0], POPC_DTYPE_F32, st_dims, 3);
        opu_set(&ic->outputs[OUT_DP], POPC_DTYPE_F32, pd + !k, 2 + k);
    }
    return POPC_OK;
}

static const float *present(const popc_kernel_ctx *kc, int i)
{
    return opu_present_at(kc->inputs, kc->n_inputs, i) ? kc->inputs[i].data
                                                      : NULL;
}

/* Double buffers of one gradient run, one allocation. */
typedef struct bufs {
    double *gW, *gR, *gB, *gP, *dX;
    double *hs, *cs;          /* states before each step: (seq + 1) x H */
    double *dh, *dc, *dh_prev, *dc_prev, *hn, *cn, *scratch, *work;
} bufs;

static double *take(double **at, int64_t n)
{
    double *p = *at;

    *at += n;
    return p;
}

static double *bufs_alloc(const popc_kernel_ctx *kc, const rnn_p *p,
                          bufs *b)
{
    int64_t H = p->hidden, G = rnn_n_gates[p->kind], D = p->dirs;
    int64_t sd = rnn_step_doubles(p);
    int64_t n = D * G * H * p->in + D * G * H * H + D * 2 * G * H +
                D * 3 * H + popc_view_numel(&kc->inputs[IN_X]) +
                2 * (p->seq + 1) * H + 6 * H + 2 * sd;
    double *base = popc_host_calloc(kc->host, (size_t)n, sizeof(double));
    double *at = base;

    if (!base)
        return NULL;
    b->gW = take(&at, D * G * H * p->in);
    b->gR = take(&at, D * G * H * H);
    b->gB = take(&at, D * 2 * G * H);
    b->gP = take(&at, D * 3 * H);
    b->dX = take(&at, popc_view_numel(&kc->inputs[IN_X]));
    b->hs = take(&at, (p->seq + 1) * H);
    b->cs = take(&at, (p->seq + 1) * H);
    b->dh = take(&at, H);
    b->dc = take(&at, H);
    b->dh_prev = take(&at, H);
    b->dc_prev = take(&at, H);
    b->hn = take(&at, H);
    b->cn = take(&at, H);
    b->scratch = take(&at, sd);
    b->work = take(&at, sd);
    return base;
}

static void swap(double **a, double **b)
{
    double *t = *a;

    *a = *b;
    *b = t;
}

/* Backpropagation through time of batch entry b in direction d. */
static void sequence_back(const popc_kernel_ctx *kc, const rnn_cell *cell,
                          int d, int64_t b, rnn_grads *g, bufs *w)
{
    const rnn_p *p = cell->p;
    int64_t H = p->hidden, len = rnn_len(p, &kc->inputs[IN_LENS], b);
    int64_t at = rnn_state_at(p, d, b);
    int rev = p->dirs == 2 ? d == 1 : p->reverse, lstm = p->kind == RNN_K_LSTM;
    const float *X = kc->inputs[IN_X].data, *h0 = present(kc, IN_H0);
    const float *c0 = lstm ? present(kc, IN_C0) : NULL;
    const float *dY = present(kc, IN_DY), *dYh = present(kc, IN_DYH);
    const float *dYc = lstm ? present(kc, IN_DYC) : NULL;
    float *dh0 = kc->outputs[OUT_DH0].data;
    float *dc0 = lstm ? kc->outputs[OUT_DC0].data : NULL;

    for (int64_t j = 0; j < H; j++) {
        w->hs[j] = h0 ? h0[at + j] : 0;
        w->cs[j] = c0 ? c0[at + j] : 0;
        w->dh[j] = dYh ? dYh[at + j] : 0;
        w->dc[j] = dYc ? dYc[at + j] : 0;
    }
    for (int64_t s = 0; s < len; s++) {
        int64_t t = rev ? len - 1 - s : s;

        rnn_cell_step(cell, X + rnn_x_at(p, t, b), w->hs + s * H,
                      w->cs + s * H, w->hs + (s + 1) * H,
                      lstm ? w->cs + (s + 1) * H : w->cn, w->scratch);
    }
    for (int64_t s = len - 1; s >= 0; s--) {
        int64_t t = rev ? len - 1 - s : s;
        const float *x = X + rnn_x_at(p, t, b);

        if (dY)
            for (int64_t j = 0; j < H; j++)
                w->dh[j] += dY[rnn_y_at(p, t, d, b) + j];
        rnn_cell_step(cell, x, w->hs + s * H, w->cs + s * H, w->hn, w->cn,
                      w->scratch);
        rnn_cell_back(cell, x, w->hs + s * H, w->cs + s * H, w->cn,
                      w->scratch, w->dh, lstm ? w->dc : NULL, g,
                      w->dX + rnn_x_at(p, t, b), w->dh_prev, w->dc_prev,
                      w->work);
        swap(&w->dh, &w->dh_prev);
        if (lstm)
            swap(&w->dc, &w->dc_prev);
    }
    for (int64_t j = 0; j < H; j++) {
        dh0[at + j] = (float)w->dh[j];
        if (dc0)
            dc0[at + j] = (float)w->dc[j];
    }
}

static void to_floats(float *dst, const double *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = (float)src[i];
}

static popc_status grad_forward_kind(const popc_kernel_ctx *kc, int kind)
{
    rnn_p p;
    rnn_cell cell;
    bufs w;
    double *base;
    int64_t H, G;
    popc_status st;

    if ((st = rnn_parse(kc->node_name, kind, kc->inputs, kc->n_inputs,
                        kc->attrs, &p)) != POPC_OK)
        return st;
    if (rnn_lstm_gemm_fits(&p, kc->inputs, kc->n_inputs))
        return rnn_lstm_gemm_grad(kc, &p);
    /* the reference runs whole in part 0 */
    if (kc->part != 0)
        return POPC_OK;
    H = p.hidden;
    G = rnn_n_gates[kind];
    if (!(base = bufs_alloc(kc, &p, &w)))
        return opu_error(POPC_ENOMEM, grad_names[kind], kc->node_name,
                         "out of memory");
    for (int d = 0; d < p.dirs; d++) {
        rnn_grads g = {w.gW + d * G * H * p.in, w.gR + d * G * H * H,
                       w.gB + d * 2 * G * H, w.gB + d * 2 * G * H + G * H,
                       w.gP + d * 3 * H};

        rnn_cell_init(&cell, &p, d, kc->inputs[IN_W].data,
                      kc->inputs[IN_R].data, present(kc, IN_B),
                      kind == RNN_K_LSTM ? present(kc, IN_P) : NULL);
        for (int64_t b = 0; b < p.batch; b++)
            sequence_back(kc, &cell, d, b, &g, &w);
    }
    to_floats(kc->outputs[OUT_DX].data, w.dX,
              popc_view_numel(&kc->inputs[IN_X]));
    to_floats(kc->outputs[OUT_DW].data, w.gW, p.dirs * G * H * p.in);
    to_floats(kc->outputs[OUT_DR].data, w.gR, p.dirs * G * H * H);
    to_floats(kc->outputs[OUT_DB].data, w.gB, p.dirs * 2 * G * H);
    if (kind == RNN_K_LSTM)
        to_floats(kc->outputs[OUT_DP].data, w.gP, p.dirs * 3 * H);
    kc->host->free(base);
    return POPC_OK;
}

static popc_status grad_cost_kind(const popc_infer_ctx *ic, popc_cost *c,
                                  int kind)
{
    rnn_p p;
    double steps, per_step;
    popc_status st;

    if ((st = rnn_parse(ic->node_name, kind, ic->inputs, ic->n_inputs,
                        ic->attrs, &p)) != POPC_OK)
        return st;
    steps = (double)p.dirs * (double)p.batch * (double)p.seq;
    per_step = 2.0 * rnn_n_gates[kind] * (double)p.hidden *
               (double)(p.in + p.hidden);
    c->flops = 3.0 * steps * per_step; /* forward twice, backward once */
    c->bytes = 4.0 * (2.0 * (double)popc_view_numel(&ic->inputs[IN_X]) +
                      2.0 * (double)(popc_view_numel(&ic->inputs[IN_W]) +
                                     popc_view_numel(&ic->inputs[IN_R])));
    c->temp_bytes = 8.0 * (2.0 * (double)(p.seq + 1) * (double)p.hidden +
                           (double)popc_view_numel(&ic->inputs[IN_X]));
    return POPC_OK;
}

#define GRAD_KIND(ID, K)                                                    \
    static popc_status ID##_infer(popc_infer_ctx *ic)                       \
    {                                                                       \
        return grad_infer_kind(ic, K);                                      \
    }                                                                       \
    static popc_status ID##_forward(const popc_kernel_ctx *kc)              \
    {                                                                       \
        return grad_forward_kind(kc, K);                                    \
    }                                                                       \
    static popc_status ID##_cost(const popc_infer_ctx *ic, popc_cost *c)    \
    {                                                                       \
        return grad_cost_kind(ic, c, K);                                    \
    }

GRAD_KIND(rnn_g, RNN_K_RNN)
GRAD_KIND(gru_g, RNN_K_GRU)
GRAD_KIND(lstm_g, RNN_K_LSTM)

#define GRAD_DEF(NAME, N_OUT, P, DOC)                                       \
    {                                                                       \
        .size = sizeof(popc_op_def), .domain = "popc", .name = NAME,        \
        .since_version = 1, .min_inputs = 3,                                \
        .max_inputs = N_GRAD_IN, .min_outputs = N_OUT,                      \
        .max_outputs = N_OUT, .flags = POPC_OP_SPLIT, .infer = P##_infer,   \
        .forward = P##_forward, .cost = P##_cost, .doc = DOC                \
    }

static const popc_op_def grad_ops[] = {
    GRAD_DEF("RNNGrad", 5, rnn_g, "RNN gradient (backpropagation through time)"),
    GRAD_DEF("GRUGrad", 5, gru_g, "GRU gradient (backpropagation through time)"),
    GRAD_DEF("LSTMGrad", 7, lstm_g,
             "LSTM gradient (backpropagation through time)"),
};

popc_status rnn_register_grad(const popc_host *h, popc_registrar *r)
{
    return opu_register_ops(h, r, grad_ops,
                            (int)(sizeof grad_ops / sizeof grad_ops[0]));
}
