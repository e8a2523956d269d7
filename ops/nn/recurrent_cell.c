/* recurrent_cell.c - one time step of an RNN, GRU or LSTM cell, forward and
** backward, in double. The backward step is the chain rule through exactly
** the forward's arithmetic; a clipped pre-activation (|a| > clip) passes no
** gradient, as the clip is flat there.
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "ops/nn/recurrent_priv.h"

enum { A_SIGMOID, A_TANH, A_RELU, A_AFFINE, A_LEAKY, A_THRESH, A_SCALED_TANH,
       A_HARD_SIGMOID, A_ELU, A_SOFTSIGN, A_SOFTPLUS };

static double apply(const rnn_act *a, double x)
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

/* d apply(a, x) / dx */
static double slope(const rnn_act *a, double x)
{
    double s, t, u;

    switch (a->kind) {
    case A_SIGMOID:
        s = 1.0 / (1.0 + exp(-x));
        return s * (1 - s);
    case A_TANH:
        t = tanh(x);
        return 1 - t * t;
    case A_RELU: return x > 0 ? 1 : 0;
    case A_AFFINE: return a->alpha;
    case A_LEAKY: return x >= 0 ? 1 : a->alpha;
    case A_THRESH: return x > a->alpha ? 1 : 0;
    case A_SCALED_TANH:
        t = tanh(a->beta * x);
        return a->alpha * a->beta * (1 - t * t);
    case A_HARD_SIGMOID:
        u = a->alpha * x + a->beta;
        return u > 0 && u < 1 ? a->alpha : 0;
    case A_ELU: return x >= 0 ? 1 : a->alpha * exp(x);
    case A_SOFTSIGN:
        u = 1 + fabs(x);
        return 1 / (u * u);
    default: return 1.0 / (1.0 + exp(-x));
    }
}

static double act_clip(const rnn_cell *c, const rnn_act *a, double x)
{
    double k = c->p->clip;

    if (k > 0)
        x = x < -k ? -k : x > k ? k : x;
    return apply(a, x);
}

static double slope_clip(const rnn_cell *c, const rnn_act *a, double x)
{
    double k = c->p->clip;

    return k > 0 && (x < -k || x > k) ? 0 : slope(a, x);
}

void rnn_cell_init(rnn_cell *c, const rnn_p *p, int d, const float *W,
                   const float *R, const float *B, const float *P)
{
    int64_t H = p->hidden, G = rnn_n_gates[p->kind];

    c->p = p;
    c->W = W + d * G * H * p->in;
    c->R = R + d * G * H * H;
    c->Wb = B ? B + d * 2 * G * H : NULL;
    c->Rb = B ? c->Wb + G * H : NULL;
    c->P = P ? P + d * 3 * H : NULL;
    c->f = &p->acts[d * rnn_n_act[p->kind]];
}

int64_t rnn_step_doubles(const rnn_p *p)
{
    return (rnn_n_gates[p->kind] + 2) * p->hidden;
}

/* a[k] = x . W[k] + Wb[k] for every gate row k */
static void input_part(const rnn_cell *c, const float *x, double *a)
{
    int64_t n = rnn_n_gates[c->p->kind] * c->p->hidden, in = c->p->in;

    for (int64_t k = 0; k < n; k++) {
        double acc = c->Wb ? c->Wb[k] : 0;
        const float *w = c->W + k * in;

        for (int64_t i = 0; i < in; i++)
            acc += (double)x[i] * w[i];
        a[k] = acc;
    }
}

/* v . R[k] + Rb[k] */
static double recur_row(const rnn_cell *c, int64_t k, const double *v)
{
    int64_t H = c->p->hidden;
    const float *r = c->R + k * H;
    double acc = c->Rb ? c->Rb[k] : 0;

    for (int64_t i = 0; i < H; i++)
        acc += v[i] * r[i];
    return acc;
}

/* scratch: a [G*H] pre-activations (peepholes included; GRU h gate
** complete), then for GRU rn [H] (r * h, or h R_h + Rb_h with
** linear_before_reset) and r [H]. */
void rnn_cell_step(const rnn_cell *c, const float *x, const double *h,
                   const double *cs, double *hn, double *cn, double *scratch)
{
    const rnn_p *p = c->p;
    int64_t H = p->hidden, G = rnn_n_gates[p->kind];
    double *a = scratch, *rn = a + G * H, *r = rn + H;
    const rnn_act *f = c->f;

    input_part(c, x, a);
    if (p->kind == RNN_K_RNN) {
        for (int64_t j = 0; j < H; j++) {
            a[j] += recur_row(c, j, h);
            hn[j] = act_clip(c, &f[0], a[j]);
        }
    } else if (p->kind == RNN_K_GRU) {
        for (int64_t k = 0; k < 2 * H; k++)
            a[k] += recur_row(c, k, h);
        for (int64_t j = 0; j < H; j++) {
            r[j] = act_clip(c, &f[0], a[H + j]);
            rn[j] = p->lbr ? recur_row(c, 2 * H + j, h) : r[j] * h[j];
        }
        for (int64_t j = 0; j < H; j++) {
            double z = act_clip(c, &f[0], a[j]);

            a[2 * H + j] += p->lbr ? r[j] * rn[j]
                                   : recur_row(c, 2 * H + j, rn);
            hn[j] = (1 - z) * act_clip(c, &f[1], a[2 * H + j]) + z * h[j];
        }
    } else {
        const float *P = c->P;

        for (int64_t k = 0; k < G * H; k++)
            a[k] += recur_row(c, k, h);
        for (int64_t j = 0; j < H; j++) {
            double i_, f_, cc;

            if (P) {
                a[j] += P[j] * cs[j];
                a[2 * H + j] += P[2 * H + j] * cs[j];
            }
            i_ = act_clip(c, &f[0], a[j]);
            f_ = p->input_forget ? 1 - i_ : act_clip(c, &f[0], a[2 * H + j]);
            cc = act_clip(c, &f[1], a[3 * H + j]);
            cn[j] = f_ * cs[j] + i_ * cc;
            if (P)
                a[H + j] += P[H + j] * cn[j];
            hn[j] = act_clip(c, &f[0], a[H + j]) * apply(&f[2], cn[j]);
        }
    }
}

/* The gradients of the gate pre-activations into da; GRU's h gate row
** handles its own recurrent part (*rows_done = 2H, else G*H). */
static void gates_back(const rnn_cell *c, const double *h, const double *cs,
                       const double *cn, const double *scratch,
                       const double *dh, const double *dc, rnn_grads *g,
                       double *dh_prev, double *dc_prev, double *da,
                       double *drh)
{
    const rnn_p *p = c->p;
    int64_t H = p->hidden, G = rnn_n_gates[p->kind];
    const double *a = scratch, *rn = a + G * H, *r = rn + H;
    const rnn_act *f = c->f;

    if (p->kind == RNN_K_RNN) {
        for (int64_t j = 0; j < H; j++)
            da[j] = dh[j] * slope_clip(c, &f[0], a[j]);
        return;
    }
    if (p->kind == RNN_K_GRU) {
        const float *Rh = c->R + 2 * H * H;

        for (int64_t j = 0; j < H; j++) {
            double z = act_clip(c, &f[0], a[j]);
            double hh = act_clip(c, &f[1], a[2 * H + j]);

            da[j] = dh[j] * (h[j] - hh) * slope_clip(c, &f[0], a[j]);
            da[2 * H + j] = dh[j] * (1 - z) * slope_clip(c, &f[1],
                                                         a[2 * H + j]);
            dh_prev[j] += dh[j] * z;
        }
        /* the h gate's recurrent part: through R_h and through r */
        memset(drh, 0, sizeof(double) * (size_t)H);
        for (int64_t j = 0; j < H; j++) {
            double dah = da[2 * H + j];
            double dn = p->lbr ? dah * r[j] : dah;
            const float *row = Rh + j * H;
            double *grow = g->R + (2 * H + j) * H;

            if (g->Rb)
                g->Rb[2 * H + j] += dn;
            for (int64_t i = 0; i < H; i++) {
                grow[i] += dn * (p->lbr ? h[i] : rn[i]);
                if (p->lbr)
                    dh_prev[i] += dn * row[i];
                else
                    drh[i] += dah * row[i];
            }
        }
        for (int64_t j = 0; j < H; j++) {
            double dr = p->lbr ? da[2 * H + j] * rn[j] : drh[j] * h[j];

            if (!p->lbr)
                dh_prev[j] += drh[j] * r[j];
            da[H + j] = dr * slope_clip(c, &f[0], a[H + j]);
        }
        return;
    }
    for (int64_t j = 0; j < H; j++) {
        const float *P = c->P;
        double i_ = act_clip(c, &f[0], a[j]);
        double f_ = p->input_forget ? 1 - i_ : act_clip(c, &f[0], a[2 * H + j]);
        double cc = act_clip(c, &f[1], a[3 * H + j]);
        double o = act_clip(c, &f[0], a[H + j]);
        double dao = dh[j] * apply(&f[2], cn[j]) * slope_clip(c, &f[0],
                                                              a[H + j]);
        double dcn = (dc ? dc[j] : 0) + dh[j] * o * slope(&f[2], cn[j]) +
                     (P ? dao * P[H + j] : 0);
        double di = dcn * cc, df = dcn * cs[j];
        double dai, daf;

        if (p->input_forget) {
            di -= df;
            daf = 0;
        } else {
            daf = df * slope_clip(c, &f[0], a[2 * H + j]);
        }
        dai = di * slope_clip(c, &f[0], a[j]);
        da[j] = dai;
        da[H + j] = dao;
        da[2 * H + j] = daf;
        da[3 * H + j] = dcn * i_ * slope_clip(c, &f[1], a[3 * H + j]);
        dc_prev[j] = dcn * f_ + (P ? dai * P[j] + daf * P[2 * H + j] : 0);
        if (P && g->P) {
            g->P[j] += dai * cs[j];
            g->P[H + j] += dao * cn[j];
            g->P[2 * H + j] += daf * cs[j];
        }
    }
}

void rnn_cell_back(const rnn_cell *c, const float *x, const double *h,
                   const double *cs, const double *cn, const double *scratch,
                   const double *dh, const double *dc, rnn_grads *g,
                   double *dx, double *dh_prev, double *dc_prev,
                   double *work)
{
    const rnn_p *p = c->p;
    int64_t H = p->hidden, G = rnn_n_gates[p->kind], in = p->in;
    int64_t recur_rows = p->kind == RNN_K_GRU ? 2 * H : G * H;
    double *da = work, *drh = da + G * H;

    memset(dh_prev, 0, sizeof(double) * (size_t)H);
    gates_back(c, h, cs, cn, scratch, dh, dc, g, dh_prev, dc_prev, da, drh);
    for (int64_t k = 0; k < G * H; k++) {
        const float *w = c->W + k * in;
        double *gw = g->W + k * in, d = da[k];

        if (d == 0)
            continue;
        if (g->Wb)
            g->Wb[k] += d;
        for (int64_t i = 0; i < in; i++) {
            gw[i] += d * x[i];
            dx[i] += d * w[i];
        }
        if (k >= recur_rows)
            continue;
        if (g->Rb)
            g->Rb[k] += d;
        for (int64_t i = 0; i < H; i++) {
            g->R[k * H + i] += d * h[i];
            dh_prev[i] += d * c->R[k * H + i];
        }
    }
}
