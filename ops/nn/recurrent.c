/* recurrent.c - RNN, GRU and LSTM as ONNX defines them (opset 14 forms;
** earlier versions differ only in attributes popc reads the same way):
** forward, reverse or bidirectional, layout 0 ([seq, batch, ...]) or 1
** ([batch, seq, ...]), optional bias, sequence_lens, initial states and
** LSTM peepholes, activations with their alpha and beta, clip,
** input_forget and linear_before_reset. Steps past a batch entry's
** sequence length leave its state unchanged and its outputs zero.
** float32, accumulating in double, one part. The cell arithmetic is in
** recurrent_cell.c, the gradients in recurrent_grad.c; the LSTM form
** torch.nn.LSTM exports runs on sgemm instead (lstm_gemm.c).
*/
#include "config.h"

#include <string.h>
#include <strings.h>

#include "ops/nn/nn_priv.h"
#include "ops/nn/lstm_gemm_priv.h"
#include "ops/nn/recurrent_priv.h"
#include "ops/util/oputil.h"

const char *const rnn_op_names[3] = {"RNN", "GRU", "LSTM"};
const int rnn_n_gates[3] = {1, 3, 4};
const int rnn_n_act[3] = {1, 2, 3};

enum { A_SIGMOID, A_TANH, A_RELU, A_AFFINE, A_LEAKY, A_THRESH, A_SCALED_TANH,
       A_HARD_SIGMOID, A_ELU, A_SOFTSIGN, A_SOFTPLUS };

static const char *const act_names[] = {
    "Sigmoid", "Tanh", "Relu", "Affine", "LeakyRelu", "ThresholdedRelu",
    "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};

/* Default alpha/beta of each activation when the attributes leave them. */
static void act_defaults(rnn_act *a)
{
    switch (a->kind) {
    case A_LEAKY: a->alpha = 0.01; break;
    case A_THRESH: case A_AFFINE: case A_SCALED_TANH: case A_ELU:
        a->alpha = 1.0;
        break;
    case A_HARD_SIGMOID: a->alpha = 0.2; a->beta = 0.5; break;
    default: break;
    }
}

/* B, sequence_lens, initial_h, initial_c and P, when present, have the
** shapes the node's X, W and R imply (a kernel indexes them by those). */
static popc_status check_optional(const char *node, int kind,
                                  const popc_view *in, int n_in,
                                  const rnn_p *p)
{
    static const char *const names[] = {"B", "sequence_lens", "initial_h",
                                        "initial_c", "P"};
    int64_t G = rnn_n_gates[kind], want[5][3] = {
        {p->dirs, 2 * G * p->hidden}, {p->batch},
        {p->layout ? p->batch : p->dirs, p->layout ? p->dirs : p->batch,
         p->hidden},
        {p->layout ? p->batch : p->dirs, p->layout ? p->dirs : p->batch,
         p->hidden},
        {p->dirs, 3 * p->hidden}};
    static const int rank[5] = {2, 1, 3, 3, 2};
    char got[OPU_DIMS_LEN], exp[OPU_DIMS_LEN];

    for (int k = 0; k < 5 && 3 + k < n_in; k++) {
        const popc_view *v = &in[3 + k];
        int ok = v->rank == rank[k];

        if (v->dtype == POPC_DTYPE_UNDEFINED)
            continue;
        if (k == 1 && v->dtype != POPC_DTYPE_I32 && v->dtype != POPC_DTYPE_I64)
            return opu_error(POPC_EINVAL, rnn_op_names[kind], node,
                             "sequence_lens must be int32 or int64");
        if (k != 1 && v->dtype != POPC_DTYPE_F32)
            return opu_error(POPC_EINVAL, rnn_op_names[kind], node,
                             "%s must be float32", names[k]);
        for (int i = 0; ok && i < rank[k]; i++)
            ok = v->dims[i] == want[k][i];
        if (!ok)
            return opu_error(POPC_EINVAL, rnn_op_names[kind], node,
                             "%s is %s, but X, W and R (layout %d) make it %s",
                             names[k], opu_dims(v, got), p->layout,
                             opu_dims_n(want[k], rank[k], exp));
    }
    return POPC_OK;
}

popc_status rnn_parse(const char *node, int kind, const popc_view *in,
                      int n_in, const popc_attrs *a, rnn_p *p)
{
    const popc_attr *dir = popc_attrs_find(a, "direction");
    const popc_attr *names = popc_attrs_find(a, "activations");
    const popc_attr *al = popc_attrs_find(a, "activation_alpha");
    const popc_attr *be = popc_attrs_find(a, "activation_beta");
    const char *op = rnn_op_names[kind];
    int n_acts, G = rnn_n_gates[kind];
    popc_status st;

    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->dirs = dir && dir->s && !strcmp(dir->s, "bidirectional") ? 2 : 1;
    p->reverse = p->dirs == 1 && dir && dir->s && !strcmp(dir->s, "reverse");
    p->layout = (int)popc_attr_int(a, "layout", 0);
    p->hidden = popc_attr_int(a, "hidden_size", 0);
    p->clip = popc_attr_float(a, "clip", 0);
    p->input_forget = (int)popc_attr_int(a, "input_forget", 0);
    p->lbr = (int)popc_attr_int(a, "linear_before_reset", 0);
    if (n_in < 3 || in[0].rank != 3 || in[1].rank != 3 || in[2].rank != 3 ||
        in[0].dtype != POPC_DTYPE_F32)
        return opu_error(POPC_EINVAL, op, node, "X, W and R must be 3-D "
                         "float32");
    p->seq = p->layout ? in[0].dims[1] : in[0].dims[0];
    p->batch = p->layout ? in[0].dims[0] : in[0].dims[1];
    p->in = in[0].dims[2];
    if (p->hidden <= 0)
        p->hidden = in[2].dims[2];
    if (in[1].dims[0] != p->dirs || in[1].dims[1] != G * p->hidden ||
        in[1].dims[2] != p->in || in[2].dims[0] != p->dirs ||
        in[2].dims[1] != G * p->hidden || in[2].dims[2] != p->hidden)
        return opu_error(POPC_EINVAL, op, node, "W must be [%d, %lld, %lld] "
                         "and R [%d, %lld, %lld]", p->dirs,
                         (long long)(G * p->hidden), (long long)p->in, p->dirs,
                         (long long)(G * p->hidden), (long long)p->hidden);
    if ((st = check_optional(node, kind, in, n_in, p)) != POPC_OK)
        return st;
    n_acts = rnn_n_act[kind] * p->dirs;
    for (int i = 0; i < n_acts; i++) {
        int k = i % rnn_n_act[kind];

        p->acts[i].kind = kind == RNN_K_RNN ? A_TANH : k == 0 ? A_SIGMOID
                                                              : A_TANH;
        if (names && names->n > i) {
            int found = -1;

            for (int j = 0; j < 11; j++)
                if (!strcasecmp(names->strings[i], act_names[j]))
                    found = j;
            if (found < 0)
                return opu_error(POPC_EUNSUPPORTED, op, node, "activation "
                                 "'%s' is not supported", names->strings[i]);
            p->acts[i].kind = found;
        }
        act_defaults(&p->acts[i]);
        if (al && al->n > i)
            p->acts[i].alpha = al->floats[i];
        if (be && be->n > i)
            p->acts[i].beta = be->floats[i];
    }
    return POPC_OK;
}

static popc_status rnn_infer_kind(popc_infer_ctx *ic, int kind)
{
    rnn_p p;
    int64_t y[4], h[3];
    popc_status st;

    if ((st = rnn_parse(ic->node_name, kind, ic->inputs, ic->n_inputs,
                        ic->attrs, &p)) != POPC_OK)
        return st;
    if (p.layout) {
        y[0] = p.batch, y[1] = p.seq, y[2] = p.dirs, y[3] = p.hidden;
        h[0] = p.batch, h[1] = p.dirs, h[2] = p.hidden;
    } else {
        y[0] = p.seq, y[1] = p.dirs, y[2] = p.batch, y[3] = p.hidden;
        h[0] = p.dirs, h[1] = p.batch, h[2] = p.hidden;
    }
    for (int j = 0; j < ic->n_outputs; j++)
        opu_set(&ic->outputs[j], POPC_DTYPE_F32, j ? h : y, j ? 3 : 4);
    return POPC_OK;
}

static const float *opt_data(const popc_kernel_ctx *kc, int i)
{
    return opu_present_at(kc->inputs, kc->n_inputs, i) ? kc->inputs[i].data
                                                      : NULL;
}

int64_t rnn_state_at(const rnn_p *p, int d, int64_t b)
{
    return (p->layout ? b * p->dirs + d : d * p->batch + b) * p->hidden;
}

int64_t rnn_y_at(const rnn_p *p, int64_t t, int d, int64_t b)
{
    return (p->layout ? (b * p->seq + t) * p->dirs + d
                      : (t * p->dirs + d) * p->batch + b) *
           p->hidden;
}

int64_t rnn_x_at(const rnn_p *p, int64_t t, int64_t b)
{
    return (p->layout ? b * p->seq + t : t * p->batch + b) * p->in;
}

int64_t rnn_len(const rnn_p *p, const popc_view *lens, int64_t b)
{
    int64_t len;

    if (!lens || lens->dtype == POPC_DTYPE_UNDEFINED)
        return p->seq;
    len = lens->dtype == POPC_DTYPE_I64 ? ((const int64_t *)lens->data)[b]
                                        : ((const int32_t *)lens->data)[b];
    return len < 0 ? 0 : len > p->seq ? p->seq : len;
}

static popc_status rnn_forward_kind(const popc_kernel_ctx *kc, int kind)
{
    rnn_p p;
    rnn_cell cell;
    const float *X = kc->inputs[0].data;
    const float *h0 = opt_data(kc, 5);
    const float *c0 = kind == RNN_K_LSTM ? opt_data(kc, 6) : NULL;
    const popc_view *lens = kc->n_inputs > 4 ? &kc->inputs[4] : NULL;
    float *Y = opu_out_ready(kc, 0) ? kc->outputs[0].data : NULL;
    float *Yh = opu_out_ready(kc, 1) ? kc->outputs[1].data : NULL;
    float *Yc = opu_out_ready(kc, 2) ? kc->outputs[2].data : NULL;
    double *h, *c, *hn, *cn, *scratch;
    int64_t H;
    popc_status st;

    if ((st = rnn_parse(kc->node_name, kind, kc->inputs, kc->n_inputs,
                        kc->attrs, &p)) != POPC_OK)
        return st;
    if (rnn_lstm_gemm_fits(&p, kc->inputs, kc->n_inputs))
        return rnn_lstm_gemm_forward(kc, &p);
    /* the reference runs whole in part 0 */
    if (kc->part != 0)
        return POPC_OK;
    H = p.hidden;
    h = popc_host_calloc(kc->host, (size_t)(4 * H + rnn_step_doubles(&p)),
                         sizeof(double));
    if (!h)
        return opu_error(POPC_ENOMEM, rnn_op_names[kind], kc->node_name,
                         "out of memory");
    c = h + H;
    hn = c + H;
    cn = hn + H;
    scratch = cn + H;
    if (Y)
        memset(Y, 0, popc_view_nbytes(&kc->outputs[0]));
    for (int d = 0; d < p.dirs; d++) {
        int rev = p.dirs == 2 ? d == 1 : p.reverse;

        rnn_cell_init(&cell, &p, d, kc->inputs[1].data, kc->inputs[2].data,
                      opt_data(kc, 3),
                      kind == RNN_K_LSTM ? opt_data(kc, 7) : NULL);
        for (int64_t b = 0; b < p.batch; b++) {
            int64_t len = rnn_len(&p, lens, b);

            for (int64_t j = 0; j < H; j++) {
                h[j] = h0 ? h0[rnn_state_at(&p, d, b) + j] : 0;
                c[j] = c0 ? c0[rnn_state_at(&p, d, b) + j] : 0;
            }
            for (int64_t s = 0; s < len; s++) {
                int64_t t = rev ? len - 1 - s : s;

                rnn_cell_step(&cell, X + rnn_x_at(&p, t, b), h, c, hn, cn,
                              scratch);
                memcpy(h, hn, sizeof(double) * (size_t)H);
                if (kind == RNN_K_LSTM)
                    memcpy(c, cn, sizeof(double) * (size_t)H);
                if (Y)
                    for (int64_t j = 0; j < H; j++)
                        Y[rnn_y_at(&p, t, d, b) + j] = (float)h[j];
            }
            for (int64_t j = 0; j < H; j++) {
                if (Yh)
                    Yh[rnn_state_at(&p, d, b) + j] = (float)h[j];
                if (Yc)
                    Yc[rnn_state_at(&p, d, b) + j] = (float)c[j];
            }
        }
    }
    kc->host->free(h);
    return POPC_OK;
}

#define KIND(ID, K)                                                         \
    static popc_status ID##_infer(popc_infer_ctx *ic)                       \
    {                                                                       \
        return rnn_infer_kind(ic, K);                                       \
    }                                                                       \
    static popc_status ID##_forward(const popc_kernel_ctx *kc)              \
    {                                                                       \
        return rnn_forward_kind(kc, K);                                     \
    }                                                                       \
    static popc_status ID##_grad(popc_grad_ctx *gc)                         \
    {                                                                       \
        return rnn_grad_kind(gc, K);                                        \
    }

KIND(rnn, RNN_K_RNN)
KIND(gru, RNN_K_GRU)
KIND(lstm, RNN_K_LSTM)

#define DEF(NAME, MAX_IN, MAX_OUT, P, DOC)                                  \
    {                                                                       \
        .size = sizeof(popc_op_def), .domain = "ai.onnx", .name = NAME,     \
        .since_version = 14, .min_inputs = 3, .max_inputs = MAX_IN,         \
        .min_outputs = 0, .max_outputs = MAX_OUT, .flags = POPC_OP_SPLIT,   \
        .infer = P##_infer, .forward = P##_forward, .grad = P##_grad,       \
        .doc = DOC                                                          \
    }

static const popc_op_def rnn_ops[] = {
    DEF("RNN", 6, 2, rnn, "simple recurrent layer (ONNX RNN)"),
    DEF("GRU", 6, 2, gru, "gated recurrent unit (ONNX GRU)"),
    DEF("LSTM", 8, 3, lstm, "long short-term memory (ONNX LSTM)"),
};

popc_status nn_register_recurrent(const popc_host *h, popc_registrar *r)
{
    popc_status st;

    if ((st = opu_register_ops(h, r, rnn_ops,
                               (int)(sizeof rnn_ops / sizeof rnn_ops[0]))) !=
        POPC_OK)
        return st;
    return rnn_register_grad(h, r);
}
