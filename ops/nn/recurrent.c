/* recurrent.c - RNN, GRU and LSTM as ONNX defines them (opset 14 forms;
** earlier versions differ only in attributes popc reads the same way):
** forward, reverse or bidirectional, layout 0 ([seq, batch, ...]) or 1
** ([batch, seq, ...]), optional bias, sequence_lens, initial states and
** LSTM peepholes, activations with their alpha and beta, clip,
** input_forget and linear_before_reset. Gates are ordered as ONNX orders
** them (LSTM i, o, f, c; GRU z, r, h). Steps past a batch entry's
** sequence length leave its state unchanged and its outputs zero.
** float32, accumulating in double, one part. Forward only for now.
*/
#include "config.h"

#include <math.h>
#include <string.h>
#include <strings.h>

#include "ops/nn/nn_priv.h"
#include "ops/nn/util.h"

enum { K_RNN, K_GRU, K_LSTM };

static const char *const op_names[] = {"RNN", "GRU", "LSTM"};
static const int n_gates[] = {1, 3, 4};
static const int n_act[] = {1, 2, 3}; /* activations per direction */

typedef struct act {
    int kind;
    double alpha, beta;
} act;

enum { A_SIGMOID, A_TANH, A_RELU, A_AFFINE, A_LEAKY, A_THRESH, A_SCALED_TANH,
       A_HARD_SIGMOID, A_ELU, A_SOFTSIGN, A_SOFTPLUS };

static const char *const act_names[] = {
    "Sigmoid", "Tanh", "Relu", "Affine", "LeakyRelu", "ThresholdedRelu",
    "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};

static double apply(const act *a, double x)
{
    switch (a->kind) {
    case A_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case A_TANH: return tanh(x);
    case A_RELU: return x > 0 ? x : 0;
    case A_AFFINE: return a->alpha * x + a->beta;
    case A_LEAKY: return x >= 0 ? x : a->alpha * x;
    case A_THRESH: return x > a->alpha ? x : 0;
    case A_SCALED_TANH: return a->alpha * tanh(a->beta * x);
    case A_HARD_SIGMOID: return fmax(0, fmin(1, a->alpha * x + a->beta));
    case A_ELU: return x >= 0 ? x : a->alpha * (exp(x) - 1);
    case A_SOFTSIGN: return x / (1 + fabs(x));
    default: return log1p(exp(x));
    }
}

/* Default alpha/beta of each activation when the attributes leave them. */
static void act_defaults(act *a)
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

typedef struct rnn_p {
    int kind, dirs, layout;
    int64_t seq, batch, in, hidden;
    double clip;
    int input_forget, lbr;
    act acts[6];
} rnn_p;

static popc_status parse(const char *node, int kind, const popc_view *in,
                         int n_in, const popc_attrs *a, rnn_p *p)
{
    const popc_attr *dir = popc_attrs_find(a, "direction");
    const popc_attr *names = popc_attrs_find(a, "activations");
    const popc_attr *al = popc_attrs_find(a, "activation_alpha");
    const popc_attr *be = popc_attrs_find(a, "activation_beta");
    const char *op = op_names[kind];
    int n_acts;

    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->dirs = dir && dir->s && !strcmp(dir->s, "bidirectional") ? 2 : 1;
    p->layout = (int)popc_attr_int(a, "layout", 0);
    p->hidden = popc_attr_int(a, "hidden_size", 0);
    p->clip = popc_attr_float(a, "clip", 0);
    p->input_forget = (int)popc_attr_int(a, "input_forget", 0);
    p->lbr = (int)popc_attr_int(a, "linear_before_reset", 0);
    if (n_in < 3 || in[0].rank != 3 || in[1].rank != 3 || in[2].rank != 3 ||
        in[0].dtype != POPC_DTYPE_F32)
        return opsu_host->set_error(POPC_EINVAL, "%s '%s': X, W and R must "
                                    "be 3-D float32", op, node);
    p->seq = p->layout ? in[0].dims[1] : in[0].dims[0];
    p->batch = p->layout ? in[0].dims[0] : in[0].dims[1];
    p->in = in[0].dims[2];
    if (p->hidden <= 0)
        p->hidden = in[2].dims[2];
    if (in[1].dims[0] != p->dirs ||
        in[1].dims[1] != n_gates[kind] * p->hidden ||
        in[1].dims[2] != p->in || in[2].dims[1] != n_gates[kind] * p->hidden ||
        in[2].dims[2] != p->hidden)
        return opsu_host->set_error(POPC_EINVAL, "%s '%s': W must be [%d, "
                                    "%lld, %lld] and R [%d, %lld, %lld]", op,
                                    node, p->dirs,
                                    (long long)(n_gates[kind] * p->hidden),
                                    (long long)p->in, p->dirs,
                                    (long long)(n_gates[kind] * p->hidden),
                                    (long long)p->hidden);
    n_acts = n_act[kind] * p->dirs;
    for (int i = 0; i < n_acts; i++) {
        int k = i % n_act[kind];

        p->acts[i].kind = kind == K_RNN ? A_TANH : k == 0 ? A_SIGMOID
                                                          : A_TANH;
        if (names && names->n > i) {
            int found = -1;

            for (int j = 0; j < 11; j++)
                if (!strcasecmp(names->strings[i], act_names[j]))
                    found = j;
            if (found < 0)
                return opsu_host->set_error(POPC_EUNSUPPORTED, "%s '%s': "
                                            "activation '%s' is not "
                                            "supported", op, node,
                                            names->strings[i]);
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

    if ((st = parse(ic->node_name, kind, ic->inputs, ic->n_inputs, ic->attrs,
                    &p)) != POPC_OK)
        return st;
    if (p.layout) {
        y[0] = p.batch, y[1] = p.seq, y[2] = p.dirs, y[3] = p.hidden;
        h[0] = p.batch, h[1] = p.dirs, h[2] = p.hidden;
    } else {
        y[0] = p.seq, y[1] = p.dirs, y[2] = p.batch, y[3] = p.hidden;
        h[0] = p.dirs, h[1] = p.batch, h[2] = p.hidden;
    }
    for (int j = 0; j < ic->n_outputs; j++)
        opsu_set(&ic->outputs[j], POPC_DTYPE_F32, j ? h : y, j ? 3 : 4);
    return POPC_OK;
}

static const float *opt_data(const popc_kernel_ctx *kc, int i)
{
    return kc->n_inputs > i && kc->inputs[i].dtype != POPC_DTYPE_UNDEFINED
               ? kc->inputs[i].data
               : NULL;
}

/* Offset of state [dir, b] in Y_h/Y_c/initial states by layout. */
static int64_t state_at(const rnn_p *p, int d, int64_t b)
{
    return (p->layout ? b * p->dirs + d : d * p->batch + b) * p->hidden;
}

static int64_t y_at(const rnn_p *p, int64_t t, int d, int64_t b)
{
    return (p->layout ? (b * p->seq + t) * p->dirs + d
                      : (t * p->dirs + d) * p->batch + b) *
           p->hidden;
}

static double clipped(const rnn_p *p, double v)
{
    if (p->clip > 0)
        return v < -p->clip ? -p->clip : v > p->clip ? p->clip : v;
    return v;
}

static popc_status rnn_forward_kind(const popc_kernel_ctx *kc, int kind)
{
    rnn_p p;
    const float *X = kc->inputs[0].data, *W = kc->inputs[1].data;
    const float *R = kc->inputs[2].data, *B = opt_data(kc, 3);
    const float *P = kind == K_LSTM ? opt_data(kc, 7) : NULL;
    const float *h0 = opt_data(kc, 5), *c0 = kind == K_LSTM ? opt_data(kc, 6)
                                                            : NULL;
    const popc_view *lens = kc->n_inputs > 4 &&
                                    kc->inputs[4].dtype != POPC_DTYPE_UNDEFINED
                                ? &kc->inputs[4]
                                : NULL;
    float *Y = kc->n_outputs > 0 && kc->outputs[0].data ? kc->outputs[0].data
                                                        : NULL;
    float *Yh = kc->n_outputs > 1 ? kc->outputs[1].data : NULL;
    float *Yc = kc->n_outputs > 2 ? kc->outputs[2].data : NULL;
    double *h, *c, *g, *hn;
    int64_t G, H;
    popc_status st;

    if ((st = parse(kc->node_name, kind, kc->inputs, kc->n_inputs, kc->attrs,
                    &p)) != POPC_OK)
        return st;
    H = p.hidden;
    G = n_gates[kind];
    h = kc->host->alloc(sizeof(double) * (size_t)(H * (G + 3)));
    if (!h)
        return opsu_host->set_error(POPC_ENOMEM, "%s '%s': out of memory",
                                    op_names[kind], kc->node_name);
    c = h + H;
    hn = c + H;
    g = hn + H;
    if (Y)
        memset(Y, 0, popc_view_nbytes(&kc->outputs[0]));
    for (int d = 0; d < p.dirs; d++) {
        const float *Wd = W + d * G * H * p.in, *Rd = R + d * G * H * H;
        const float *Bw = B ? B + d * 2 * G * H : NULL;
        const float *Pd = P ? P + d * 3 * H : NULL;
        const act *f = &p.acts[d * n_act[kind]];
        int rev = p.dirs == 2 ? d == 1 : 0;
        const popc_attr *dir = popc_attrs_find(kc->attrs, "direction");

        if (p.dirs == 1 && dir && dir->s && !strcmp(dir->s, "reverse"))
            rev = 1;
        for (int64_t b = 0; b < p.batch; b++) {
            int64_t len = lens ? (lens->dtype == POPC_DTYPE_I64
                                      ? ((const int64_t *)lens->data)[b]
                                      : ((const int32_t *)lens->data)[b])
                               : p.seq;

            for (int64_t j = 0; j < H; j++) {
                h[j] = h0 ? h0[state_at(&p, d, b) + j] : 0;
                c[j] = c0 ? c0[state_at(&p, d, b) + j] : 0;
            }
            for (int64_t s = 0; s < len && s < p.seq; s++) {
                int64_t t = rev ? len - 1 - s : s;
                const float *x = X + (p.layout ? (b * p.seq + t)
                                               : (t * p.batch + b)) *
                                         p.in;

                /* g = x W^T + Wb (+ h R^T + Rb, except GRU's h gate) */
                for (int64_t k = 0; k < G * H; k++) {
                    double acc = Bw ? Bw[k] : 0;

                    for (int64_t i = 0; i < p.in; i++)
                        acc += (double)x[i] * Wd[k * p.in + i];
                    g[k] = acc;
                }
                for (int64_t k = 0; k < G * H; k++) {
                    double acc = Bw ? Bw[G * H + k] : 0;

                    if (kind == K_GRU && k >= 2 * H && !p.lbr)
                        continue;
                    for (int64_t i = 0; i < H; i++)
                        acc += h[i] * Rd[k * H + i];
                    if (kind == K_GRU && k >= 2 * H)
                        hn[k - 2 * H] = acc; /* h R_h^T + Rb_h, reset later */
                    else
                        g[k] += acc;
                }
                for (int64_t j = 0; j < H; j++) {
                    double out;

                    if (kind == K_RNN) {
                        out = apply(&f[0], clipped(&p, g[j]));
                        hn[j] = out;
                    } else if (kind == K_GRU) {
                        double z = apply(&f[0], clipped(&p, g[j]));
                        double r = apply(&f[0], clipped(&p, g[H + j]));
                        double pre = g[2 * H + j];

                        if (p.lbr) {
                            pre += r * hn[j];
                        } else {
                            double acc = Bw ? Bw[G * H + 2 * H + j] : 0;

                            for (int64_t i = 0; i < H; i++) {
                                double ri = apply(&f[0],
                                                  clipped(&p, g[H + i]));

                                acc += ri * h[i] * Rd[(2 * H + j) * H + i];
                            }
                            pre += acc;
                        }
                        out = (1 - z) * apply(&f[1], clipped(&p, pre)) +
                              z * h[j];
                        g[j] = out; /* z no longer needed */
                    } else {
                        double ig = g[j] + (Pd ? Pd[j] * c[j] : 0);
                        double fg = g[2 * H + j] + (Pd ? Pd[2 * H + j] * c[j]
                                                       : 0);
                        double i_ = apply(&f[0], clipped(&p, ig));
                        double f_ = p.input_forget
                                        ? 1 - i_
                                        : apply(&f[0], clipped(&p, fg));
                        double c_ = apply(&f[1], clipped(&p, g[3 * H + j]));
                        double cn = f_ * c[j] + i_ * c_;
                        double og = g[H + j] + (Pd ? Pd[H + j] * cn : 0);

                        out = apply(&f[0], clipped(&p, og)) *
                              apply(&f[2], cn);
                        g[2 * H + j] = cn; /* f no longer needed */
                    }
                    if (Y)
                        Y[y_at(&p, t, d, b) + j] = (float)out;
                }
                for (int64_t j = 0; j < H; j++) {
                    if (kind == K_RNN)
                        h[j] = hn[j];
                    else if (kind == K_GRU)
                        h[j] = g[j];
                    else {
                        c[j] = g[2 * H + j];
                        h[j] = Y ? Y[y_at(&p, t, d, b) + j] : 0;
                    }
                }
                if (kind == K_LSTM && !Y) {
                    /* recompute h from c when Y is not wanted */
                    for (int64_t j = 0; j < H; j++) {
                        double og = g[H + j] + (Pd ? Pd[H + j] * c[j] : 0);

                        h[j] = apply(&f[0], clipped(&p, og)) *
                               apply(&f[2], c[j]);
                    }
                }
            }
            for (int64_t j = 0; j < H; j++) {
                if (Yh)
                    Yh[state_at(&p, d, b) + j] = (float)h[j];
                if (Yc)
                    Yc[state_at(&p, d, b) + j] = (float)c[j];
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
    }

KIND(rnn, K_RNN)
KIND(gru, K_GRU)
KIND(lstm, K_LSTM)

#define DEF(NAME, MAX_IN, MAX_OUT, P, DOC)                                  \
    {                                                                       \
        .size = sizeof(popc_op_def), .domain = "ai.onnx", .name = NAME,     \
        .since_version = 14, .min_inputs = 3, .max_inputs = MAX_IN,         \
        .min_outputs = 0, .max_outputs = MAX_OUT, .flags = 0,               \
        .infer = P##_infer, .forward = P##_forward, .doc = DOC              \
    }

static const popc_op_def rnn_ops[] = {
    DEF("RNN", 6, 2, rnn, "simple recurrent layer (ONNX RNN)"),
    DEF("GRU", 6, 2, gru, "gated recurrent unit (ONNX GRU)"),
    DEF("LSTM", 8, 3, lstm, "long short-term memory (ONNX LSTM)"),
};

popc_status nn_register_recurrent(const popc_host *h, popc_registrar *r)
{
    popc_status st;

    for (size_t i = 0; i < sizeof rnn_ops / sizeof rnn_ops[0]; i++)
        if ((st = h->register_op(r, &rnn_ops[i])) != POPC_OK)
            return st;
    return POPC_OK;
}
