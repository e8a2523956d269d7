/* lstm_gemm.c - LSTM and its gradient on float sgemm, for the common form:
** the default activations (Sigmoid, Tanh, Tanh), no clip, no
** input_forget, no peepholes and no sequence_lens. That is the form
** torch.nn.LSTM exports; the rest run on the double reference
** (recurrent_cell.c), which this path matches to float rounding (tests:
** check_op_recurrent's lstm_gemm_matches_reference).
**
** Forward, per direction: one GEMM gives every step's input part
** X W^T + Wb + Rb, then each step adds h R^T for the whole batch (one
** GEMM) and applies the gates in place. The gradient reruns that forward
** keeping the activated gates and the states before and after each step
** (rows in X's row order), walks the steps backwards turning each step's
** gates into their pre-activation gradients in place (one GEMM per step
** for dh_prev = dA R), and ends with three GEMMs over all steps: dW =
** dA^T X, dR = dA^T H_prev and dX = dA W. Both ops split into blocks of
** BLOCK_ENTRIES batch entries, each running the recurrence of its own
** rows; the gradient's blocks give partial sums of dW, dR and dB
** (attribute batch_chunks) that its builder adds up. Every result depends
** on the shape only.
*/
#include "config.h"

/* GCC's -O2 vectorizes only loops that need no runtime alias check; the
** gate loops need the full cost model. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <cblas.h>
#include <string.h>

#include "ops/nn/lstm_gemm_priv.h"
#include "ops/util/oputil.h"

enum { IN_X, IN_W, IN_R, IN_B, IN_LENS, IN_H0, IN_C0, IN_P };

int rnn_lstm_gemm_fits(const rnn_p *p, const popc_view *in, int n_in)
{
    if (p->kind != RNN_K_LSTM || p->clip > 0 || p->input_forget ||
        opu_present_at(in, n_in, IN_LENS) || opu_present_at(in, n_in, IN_P))
        return 0;
    for (int i = 0; i < 3 * p->dirs; i++)
        if (p->acts[i].kind != (i % 3 == 0 ? 0 : 1)) /* Sigmoid, Tanh */
            return 0;
    return p->seq > 0 && p->batch > 0 && p->hidden > 0 &&
           p->seq * p->batch < 0x7fffffff && 4 * p->hidden < 0x7fffffff &&
           p->in < 0x7fffffff;
}

/* The gate arithmetic runs on four floats at a time through GCC's vector
** extensions (plain C loops with these functions do not vectorize: the
** exponent's bit reinterpretation stops GCC's vectorizer). */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

static inline v4f splat(float x)
{
    return (v4f){x, x, x, x};
}

static inline v4f ld4(const float *p)
{
    v4f v;

    memcpy(&v, p, sizeof v);
    return v;
}

static inline void st4(float *p, v4f v)
{
    memcpy(p, &v, sizeof v);
}

/* exp(x), x clamped to [-87, 88], within about 2 ulp: x = n ln2 + r with
** |r| <= ln2 / 2, e^r by its Taylor polynomial to r^7, 2^n from the
** exponent bits. */
static inline v4f exp4(v4f x)
{
    const v4f shift = splat(12582912.0f); /* 1.5 * 2^23: rounds to integer */
    v4i lo = x < splat(-87.0f), hi = x > splat(88.0f);
    v4f n, r, p;
    v4i e;

    x = (v4f)(((v4i)x & ~lo) | ((v4i)splat(-87.0f) & lo));
    x = (v4f)(((v4i)x & ~hi) | ((v4i)splat(88.0f) & hi));
    n = (x * splat(1.44269504f) + shift) - shift;
    r = x - n * splat(0.693145752f);
    r = r - n * splat(1.42860677e-6f);
    p = splat(1.0f / 5040.0f);
    p = p * r + splat(1.0f / 720.0f);
    p = p * r + splat(1.0f / 120.0f);
    p = p * r + splat(1.0f / 24.0f);
    p = p * r + splat(1.0f / 6.0f);
    p = p * r + splat(0.5f);
    p = p * r + splat(1.0f);
    p = p * r + splat(1.0f);
    e = (__builtin_convertvector(n, v4i) + 127) << 23;
    return p * (v4f)e;
}

static inline v4f sigmoid4(v4f x)
{
    return splat(1.0f) / (splat(1.0f) + exp4(-x));
}

/* tanh as 1 - 2 / (e^2x + 1): absolute error about 1e-7 */
static inline v4f tanh4(v4f x)
{
    return splat(1.0f) - splat(2.0f) / (exp4(splat(2.0f) * x) + splat(1.0f));
}

/* Row of a block's X rows (and of its per-row buffers) holding step t of
** its entry b, the block holding nb entries: X's own order. */
static int64_t row_of(const rnn_p *p, int64_t nb, int64_t t, int64_t b)
{
    return p->layout ? b * p->seq + t : t * nb + b;
}

/* Distance between the rows of one step's consecutive batch entries. */
static int64_t step_stride(const rnn_p *p)
{
    return p->layout ? p->seq : 1;
}

/* Buffers of one block of batch entries [b0, b0 + nb): its X rows (X's
** own when they are contiguous, else gathered); gates [rows, 4H]
** (pre-activations, then activated gates, then in the gradient their
** pre-activation gradients); the running h and c [nb, H]; for the
** gradient, h and c before each step and c after it ([rows, H] each), dh
** and dc [nb, H]. */
typedef struct lstm_bufs {
    int64_t b0, nb;
    const float *X;
    float *A, *h, *c, *Hp, *Cp, *Cn, *dh, *dc;
    float *dX;      /* gathered blocks' dX rows, else NULL */
    double *colsum; /* [4H] */
} lstm_bufs;

static float *bufs_alloc(const popc_kernel_ctx *kc, const rnn_p *p,
                         int64_t b0, int64_t nb, int grad, lstm_bufs *b)
{
    int64_t H = p->hidden, rows = p->seq * nb, BH = nb * H;
    const float *X = kc->inputs[IN_X].data;
    int gather = !p->layout && nb < p->batch;
    int64_t n = rows * 4 * H + 2 * BH + (gather ? rows * p->in : 0) +
                (grad ? 3 * rows * H + 2 * BH + 2 * 4 * H : 0) +
                (grad && gather ? rows * p->in : 0);
    float *base = kc->host->alloc(sizeof(float) * (size_t)n), *at = base;

    if (!base)
        return NULL;
    memset(b, 0, sizeof *b);
    b->b0 = b0;
    b->nb = nb;
    if (grad) {
        b->colsum = (double *)at; /* first: aligned for doubles */
        at += 2 * 4 * H;
    }
    b->X = p->layout ? X + b0 * p->seq * p->in : X;
    if (gather) {
        float *Xg = at;

        for (int64_t t = 0; t < p->seq; t++)
            memcpy(Xg + t * nb * p->in, X + (t * p->batch + b0) * p->in,
                   sizeof *Xg * (size_t)(nb * p->in));
        b->X = Xg;
        at += rows * p->in;
        if (grad) {
            b->dX = at;
            at += rows * p->in;
        }
    }
    b->A = at, at += rows * 4 * H;
    b->h = at, at += BH;
    b->c = at, at += BH;
    if (grad) {
        b->Hp = at, at += rows * H;
        b->Cp = at, at += rows * H;
        b->Cn = at, at += rows * H;
        b->dh = at, at += BH;
        b->dc = at;
    }
    return base;
}

/* One direction's weights. */
typedef struct lstm_dir {
    const float *W, *R, *Wb, *Rb;
    int rev;
} lstm_dir;

static void dir_init(const popc_kernel_ctx *kc, const rnn_p *p, int d,
                     lstm_dir *w)
{
    int64_t H = p->hidden, in = p->in;
    const float *B = opu_present_at(kc->inputs, kc->n_inputs, IN_B)
                         ? kc->inputs[IN_B].data
                         : NULL;

    w->W = (const float *)kc->inputs[IN_W].data + d * 4 * H * in;
    w->R = (const float *)kc->inputs[IN_R].data + d * 4 * H * H;
    w->Wb = B ? B + d * 8 * H : NULL;
    w->Rb = B ? B + d * 8 * H + 4 * H : NULL;
    w->rev = p->dirs == 2 ? d == 1 : p->reverse;
}

static const float *opt(const popc_kernel_ctx *kc, int i)
{
    return opu_present_at(kc->inputs, kc->n_inputs, i) ? kc->inputs[i].data
                                                      : NULL;
}

/* The gates of one step in place: a holds the batch's pre-activations
** (entry b at a + b * lda), c and h the state, which become the new one.
** With Cp/Cn/Hp (the gradient's forward), the states before the step and
** c after it go to their rows. */
static void cell_step(const rnn_p *p, int64_t nb, int64_t t, float *a,
                      int64_t lda, float *c, float *h, float *Hp, float *Cp,
                      float *Cn)
{
    int64_t H = p->hidden;

    for (int64_t b = 0; b < nb; b++) {
        float *g = a + b * lda;
        float *cb = c + b * H, *hb = h + b * H;
        int64_t r = row_of(p, nb, t, b) * H;

        if (Hp) {
            memcpy(Hp + r, hb, sizeof *hb * (size_t)H);
            memcpy(Cp + r, cb, sizeof *cb * (size_t)H);
        }
        for (int64_t j = 0; j < H; j += 4) {
            float tmp[6][4] = {{0}};
            float *v[6] = {g + j, g + H + j, g + 2 * H + j, g + 3 * H + j,
                           cb + j, hb + j};
            int n = H - j < 4 ? (int)(H - j) : 4;
            v4f i_, o_, f_, c_, cn;

            /* a last part-filled group of four goes through tmp */
            if (n < 4)
                for (int k = 0; k < 6; k++) {
                    memcpy(tmp[k], v[k], sizeof(float) * (size_t)n);
                    v[k] = tmp[k];
                }
            i_ = sigmoid4(ld4(v[0]));
            o_ = sigmoid4(ld4(v[1]));
            f_ = sigmoid4(ld4(v[2]));
            c_ = tanh4(ld4(v[3]));
            cn = f_ * ld4(v[4]) + i_ * c_;
            st4(v[0], i_);
            st4(v[1], o_);
            st4(v[2], f_);
            st4(v[3], c_);
            st4(v[4], cn);
            st4(v[5], o_ * tanh4(cn));
            if (n < 4) {
                float *dst[6] = {g + j, g + H + j, g + 2 * H + j,
                                 g + 3 * H + j, cb + j, hb + j};

                for (int k = 0; k < 6; k++)
                    memcpy(dst[k], tmp[k], sizeof(float) * (size_t)n);
            }
        }
        if (Cn)
            memcpy(Cn + r, cb, sizeof *cb * (size_t)H);
    }
}

/* Direction d forward: every step's activated gates in bf->A; Y written
** when given; the final state left in bf->h and bf->c. */
static void dir_forward(const popc_kernel_ctx *kc, const rnn_p *p, int d,
                        const lstm_dir *w, lstm_bufs *bf, float *Y, int grad)
{
    int64_t H = p->hidden, G = 4 * H, nb = bf->nb, rows = p->seq * nb;
    int64_t lda = step_stride(p) * G;
    const float *h0 = opt(kc, IN_H0), *c0 = opt(kc, IN_C0);

    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)G,
                (int)p->in, 1.0f, bf->X, (int)p->in, w->W, (int)p->in, 0.0f,
                bf->A, (int)G);
    if (w->Wb)
        for (int64_t r = 0; r < rows; r++) {
            float *restrict a = bf->A + r * G;

            for (int64_t k = 0; k < G; k++)
                a[k] += w->Wb[k] + w->Rb[k];
        }
    for (int64_t b = 0; b < nb; b++)
        for (int64_t j = 0; j < H; j++) {
            int64_t at = rnn_state_at(p, d, bf->b0 + b) + j;

            bf->h[b * H + j] = h0 ? h0[at] : 0.0f;
            bf->c[b * H + j] = c0 ? c0[at] : 0.0f;
        }
    for (int64_t s = 0; s < p->seq; s++) {
        int64_t t = w->rev ? p->seq - 1 - s : s;
        float *a = bf->A + row_of(p, nb, t, 0) * G;

        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, (int)G,
                    (int)H, 1.0f, bf->h, (int)H, w->R, (int)H, 1.0f, a,
                    (int)lda);
        cell_step(p, nb, t, a, lda, bf->c, bf->h, grad ? bf->Hp : NULL,
                  grad ? bf->Cp : NULL, grad ? bf->Cn : NULL);
        if (Y)
            for (int64_t b = 0; b < nb; b++)
                memcpy(Y + rnn_y_at(p, t, d, bf->b0 + b), bf->h + b * H,
                       sizeof *Y * (size_t)H);
    }
}

/* Batch entries per forward unit: a block's recurrence runs on its own,
** so blocks spread over the workers; 16 rows keep the step GEMMs wide. */
#define BLOCK_ENTRIES 16

int rnn_lstm_gemm_units(const rnn_p *p)
{
    return (int)((p->batch + BLOCK_ENTRIES - 1) / BLOCK_ENTRIES);
}

popc_status rnn_lstm_gemm_forward(const popc_kernel_ctx *kc, const rnn_p *p)
{
    float *Y = opu_out_ready(kc, 0) ? kc->outputs[0].data : NULL;
    float *Yh = opu_out_ready(kc, 1) ? kc->outputs[1].data : NULL;
    float *Yc = opu_out_ready(kc, 2) ? kc->outputs[2].data : NULL;
    int64_t H = p->hidden, lo, hi;

    opu_range(rnn_lstm_gemm_units(p), kc->part, kc->n_parts, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        int64_t b0 = u * BLOCK_ENTRIES;
        int64_t nb = p->batch - b0 < BLOCK_ENTRIES ? p->batch - b0
                                                   : BLOCK_ENTRIES;
        lstm_bufs bf;
        float *base = bufs_alloc(kc, p, b0, nb, 0, &bf);

        if (!base)
            return kc->host->set_error(POPC_ENOMEM, "LSTM '%s': out of "
                                       "memory for its gate buffers",
                                       kc->node_name);
        for (int d = 0; d < p->dirs; d++) {
            lstm_dir w;

            dir_init(kc, p, d, &w);
            dir_forward(kc, p, d, &w, &bf, Y, 0);
            for (int64_t b = 0; b < nb; b++) {
                if (Yh)
                    memcpy(Yh + rnn_state_at(p, d, b0 + b), bf.h + b * H,
                           sizeof *Yh * (size_t)H);
                if (Yc)
                    memcpy(Yc + rnn_state_at(p, d, b0 + b), bf.c + b * H,
                           sizeof *Yc * (size_t)H);
            }
        }
        kc->host->free(base);
    }
    return POPC_OK;
}

/* Step t backwards: the gradients of the step's output state (dh + dY,
** dc) turn the activated gates at a into their pre-activation gradients
** in place; dc becomes the gradient of the state before the step. */
static void cell_back(const rnn_p *p, int64_t t, int d, float *a,
                      int64_t lda, const lstm_bufs *bf, const float *dY)
{
    int64_t H = p->hidden;

    for (int64_t b = 0; b < bf->nb; b++) {
        float *g = a + b * lda;
        int64_t r = row_of(p, bf->nb, t, b) * H;
        const float *cp = bf->Cp + r, *cn = bf->Cn + r;
        const float *dy = dY ? dY + rnn_y_at(p, t, d, bf->b0 + b) : NULL;
        float *dh = bf->dh + b * H, *dc = bf->dc + b * H;

        for (int64_t j = 0; j < H; j += 4) {
            /* read: i, o, f, c, c before, c after, dh, dY, dc; written:
            ** the four gates' gradients and dc */
            const float *in[9] = {g + j, g + H + j, g + 2 * H + j,
                                  g + 3 * H + j, cp + j, cn + j, dh + j,
                                  dy ? dy + j : NULL, dc + j};
            float *out[5] = {g + j, g + H + j, g + 2 * H + j, g + 3 * H + j,
                             dc + j};
            float tmp[9][4] = {{0}}, u[5][4];
            int n = H - j < 4 ? (int)(H - j) : 4;
            v4f i_, o_, f_, c_, tc, dhj, dcj;

            /* a last part-filled group of four goes through tmp and u */
            for (int k = 0; k < 9; k++)
                if (n < 4 || !in[k]) {
                    if (in[k])
                        memcpy(tmp[k], in[k], sizeof(float) * (size_t)n);
                    in[k] = tmp[k];
                }
            for (int k = 0; k < 5 && n < 4; k++)
                out[k] = u[k];
            i_ = ld4(in[0]), o_ = ld4(in[1]), f_ = ld4(in[2]);
            c_ = ld4(in[3]), tc = tanh4(ld4(in[5]));
            dhj = ld4(in[6]) + ld4(in[7]);
            dcj = ld4(in[8]) + dhj * o_ * (splat(1.0f) - tc * tc);
            st4(out[0], dcj * c_ * i_ * (splat(1.0f) - i_));
            st4(out[1], dhj * tc * o_ * (splat(1.0f) - o_));
            st4(out[2], dcj * ld4(in[4]) * f_ * (splat(1.0f) - f_));
            st4(out[3], dcj * i_ * (splat(1.0f) - c_ * c_));
            st4(out[4], dcj * f_);
            if (n < 4) {
                float *dst[5] = {g + j, g + H + j, g + 2 * H + j,
                                 g + 3 * H + j, dc + j};

                for (int k = 0; k < 5; k++)
                    memcpy(dst[k], u[k], sizeof(float) * (size_t)n);
            }
        }
    }
}

/* Output slots of popc::LSTMGrad. */
enum { OUT_DX, OUT_DW, OUT_DR, OUT_DB, OUT_DH0, OUT_DC0, OUT_DP };
enum { IN_DY = 8, IN_DYH, IN_DYC };

/* Direction d backwards, after dir_forward(grad): the block's dW, dR,
** dB (partial sums s), its dX rows (added to over the directions) and its
** entries' initial-state gradients. */
static void dir_back(const popc_kernel_ctx *kc, const rnn_p *p, int d,
                     int64_t s, const lstm_dir *w, lstm_bufs *bf)
{
    int64_t H = p->hidden, G = 4 * H, nb = bf->nb, rows = p->seq * nb;
    int64_t lda = step_stride(p) * G, ds = s * p->dirs + d;
    const float *dYh = opt(kc, IN_DYH), *dYc = opt(kc, IN_DYC);
    float *dW = (float *)kc->outputs[OUT_DW].data + ds * G * p->in;
    float *dR = (float *)kc->outputs[OUT_DR].data + ds * G * H;
    float *dB = (float *)kc->outputs[OUT_DB].data + ds * 2 * G;
    float *dh0 = kc->outputs[OUT_DH0].data, *dc0 = kc->outputs[OUT_DC0].data;

    for (int64_t b = 0; b < nb; b++)
        for (int64_t j = 0; j < H; j++) {
            int64_t at = rnn_state_at(p, d, bf->b0 + b) + j;

            bf->dh[b * H + j] = dYh ? dYh[at] : 0.0f;
            bf->dc[b * H + j] = dYc ? dYc[at] : 0.0f;
        }
    for (int64_t k = p->seq - 1; k >= 0; k--) {
        int64_t t = w->rev ? p->seq - 1 - k : k;
        float *a = bf->A + row_of(p, nb, t, 0) * G;

        cell_back(p, t, d, a, lda, bf, opt(kc, IN_DY));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb,
                    (int)H, (int)G, 1.0f, a, (int)lda, w->R, (int)H, 0.0f,
                    bf->dh, (int)H);
    }
    for (int64_t b = 0; b < nb; b++) {
        memcpy(dh0 + rnn_state_at(p, d, bf->b0 + b), bf->dh + b * H,
               sizeof *dh0 * (size_t)H);
        memcpy(dc0 + rnn_state_at(p, d, bf->b0 + b), bf->dc + b * H,
               sizeof *dc0 * (size_t)H);
    }
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)G, (int)p->in,
                (int)rows, 1.0f, bf->A, (int)G, bf->X, (int)p->in, 0.0f, dW,
                (int)p->in);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)G, (int)H,
                (int)rows, 1.0f, bf->A, (int)G, bf->Hp, (int)H, 0.0f, dR,
                (int)H);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows,
                (int)p->in, (int)G, 1.0f, bf->A, (int)G, w->W, (int)p->in,
                d > 0 ? 1.0f : 0.0f, bf->dX, (int)p->in);
    /* dB: both halves are the column sums of dA, summed in double */
    memset(bf->colsum, 0, sizeof *bf->colsum * (size_t)G);
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict a = bf->A + r * G;
        double *restrict c = bf->colsum;

        for (int64_t k = 0; k < G; k++)
            c[k] += (double)a[k];
    }
    for (int64_t k = 0; k < G; k++)
        dB[k] = dB[G + k] = (float)bf->colsum[k];
}

popc_status rnn_lstm_gemm_grad(const popc_kernel_ctx *kc, const rnn_p *p)
{
    int64_t S = popc_attr_int(kc->attrs, "batch_chunks", 0), lo, hi;
    int64_t units = S > 0 ? S : 1, per = S > 0 ? BLOCK_ENTRIES : p->batch;

    if (S > 0 && S != rnn_lstm_gemm_units(p))
        return kc->host->set_error(POPC_EINVAL, "LSTMGrad '%s': batch_chunks "
                                   "is %lld; it must be 0 or %d (blocks of "
                                   "%d entries of batch %lld)",
                                   kc->node_name, (long long)S,
                                   rnn_lstm_gemm_units(p), BLOCK_ENTRIES,
                                   (long long)p->batch);
    opu_range(units, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        int64_t b0 = u * per, nb = p->batch - b0 < per ? p->batch - b0 : per;
        float *dX = (float *)kc->outputs[OUT_DX].data;
        int64_t pn = popc_view_numel(&kc->outputs[OUT_DP]) / units;
        lstm_bufs bf;
        float *base = bufs_alloc(kc, p, b0, nb, 1, &bf);

        if (!base)
            return kc->host->set_error(POPC_ENOMEM, "LSTMGrad '%s': out of "
                                       "memory for its gate and state "
                                       "buffers",
                                       kc->node_name);
        /* dX rows: X's own when contiguous, else scattered below */
        if (!bf.dX)
            bf.dX = p->layout ? dX + b0 * p->seq * p->in : dX;
        for (int d = 0; d < p->dirs; d++) {
            lstm_dir w;

            dir_init(kc, p, d, &w);
            dir_forward(kc, p, d, &w, &bf, NULL, 1);
            dir_back(kc, p, d, S > 0 ? u : 0, &w, &bf);
        }
        if (bf.dX != dX && !p->layout)
            for (int64_t t = 0; t < p->seq; t++)
                memcpy(dX + (t * p->batch + b0) * p->in,
                       bf.dX + t * nb * p->in,
                       sizeof *dX * (size_t)(nb * p->in));
        /* no peepholes: their gradient is zero */
        memset((float *)kc->outputs[OUT_DP].data + u * pn, 0,
               sizeof(float) * (size_t)pn);
        kc->host->free(base);
    }
    return POPC_OK;
}
