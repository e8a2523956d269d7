/* depthwise.c - direct kernels for depthwise convolutions (one input and
** one output channel per group, any window): MobileNet's 3x3 layers
** would otherwise be one GEMM of a single row per (image, channel), each
** with its own im2col.
**
** A plane's output is accumulated tap by tap: for each tap (ki, kj), the
** output rows whose input row exists add w * the shifted input row over
** the columns whose input exists (contiguous with stride 1), then the
** bias. The input gradient scatters dY back the same way. The weight
** gradient of a tap is a dot product of dY with the shifted input summed
** in double lanes (sums.h), and dB the sum of dY. Units are (image,
** channel) planes, or (chunk, channel) for the weight gradient, each
** summing its images in order: results depend on the shape only.
*/
#include "config.h"

/* GCC's -O2 vectorizes only loops that need no runtime alias check; the
** row loops need the full cost model. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <string.h>

#include "ops/nn/conv_priv.h"
#include "ops/util/sums.h"
#include "ops/util/oputil.h"

/* Most kernel columns the tap tables take (wider kernels are refused by
** nn_dw_fits and run through im2col). */
#define MAX_KW 32

int nn_dw_fits(const conv_p *p)
{
    return p->G > 1 && p->Cg == 1 && p->Mg == 1 && p->w.OH > 0 &&
           p->w.OW > 0 && p->w.kw <= MAX_KW;
}

/* The rows of tap (ki, kj): output row oh reads input row ih = oh * sh -
** pt + ki * dh when it exists; columns [lo, hi) read input column o * sw
** + off. */
typedef struct tap {
    int64_t off, lo, hi;
} tap;

static tap tap_at(const nn_window *w, int64_t kj)
{
    tap t;

    t.off = kj * w->dw - w->pl;
    nn_valid_span(t.off, w->sw, w->W, w->OW, &t.lo, &t.hi);
    return t;
}

static int64_t in_row(const nn_window *w, int64_t oh, int64_t ki)
{
    int64_t ih = oh * w->sh - w->pt + ki * w->dh;

    return ih >= 0 && ih < w->H ? ih : -1;
}

/* The taps of every kernel column, once per call. */
static void taps_of(const nn_window *w, tap *taps)
{
    for (int64_t kj = 0; kj < w->kw; kj++)
        taps[kj] = tap_at(w, kj);
}

/* Adds the taps of kernel row ki (input row xr) to output row yr, one
** column at a time in kj order: the edges, where some taps fall outside
** the input. */
static void taps_at(const nn_window *w, const tap *taps, const float *xr,
                    const float *kr, float *yr, int64_t o0, int64_t o1)
{
    for (int64_t o = o0; o < o1; o++)
        for (int64_t kj = 0; kj < w->kw; kj++)
            if (o >= taps[kj].lo && o < taps[kj].hi)
                yr[o] += kr[kj] * xr[o * w->sw + taps[kj].off];
}

/* Three taps per output column where all three exist (3-wide kernels,
** MobileNet's), in one sweep of the row instead of three; each element
** still adds them in kj order. */
static void row3(const nn_window *w, const tap *taps, const float *restrict xr,
                 const float *kr, float *restrict yr)
{
    int64_t lo = taps[0].lo, hi = taps[0].hi;
    float k0 = kr[0], k1 = kr[1], k2 = kr[2];
    const float *x0 = xr + taps[0].off, *x1 = xr + taps[1].off;
    const float *x2 = xr + taps[2].off;

    for (int kj = 1; kj < 3; kj++) {
        lo = taps[kj].lo > lo ? taps[kj].lo : lo;
        hi = taps[kj].hi < hi ? taps[kj].hi : hi;
    }
    if (hi < lo)
        hi = lo;
    taps_at(w, taps, xr, kr, yr, 0, lo);
    if (w->sw == 1)
        for (int64_t o = lo; o < hi; o++) {
            yr[o] += k0 * x0[o];
            yr[o] += k1 * x1[o];
            yr[o] += k2 * x2[o];
        }
    else if (w->sw == 2)
        for (int64_t o = lo; o < hi; o++) {
            yr[o] += k0 * x0[2 * o];
            yr[o] += k1 * x1[2 * o];
            yr[o] += k2 * x2[2 * o];
        }
    else
        taps_at(w, taps, xr, kr, yr, lo, hi);
    taps_at(w, taps, xr, kr, yr, hi, w->OW);
}

/* y (one output plane) from x (its input plane) and the kernel k, row by
** row: each output row takes all its taps while it is in L1 (a
** tap-by-tap sweep of the whole plane would stream it kh * kw times),
** then the bias and the fused epilogue (epi, may be NULL). Every element
** sums its taps in (ki, kj) order, then adds the bias. */
static void plane_forward(const nn_window *w, const tap *taps, const float *x,
                          const float *k, const float *bias,
                          const nn_epilogue *epi, float *y)
{
    for (int64_t oh = 0; oh < w->OH; oh++) {
        float *restrict yr = y + oh * w->OW;

        memset(yr, 0, sizeof *yr * (size_t)w->OW);
        for (int64_t ki = 0; ki < w->kh; ki++) {
            int64_t ih = in_row(w, oh, ki);

            if (ih < 0)
                continue;
            if (w->kw == 3) {
                row3(w, taps, x + ih * w->W, k + ki * 3, yr);
                continue;
            }
            for (int64_t kj = 0; kj < w->kw; kj++) {
                float kv = k[ki * w->kw + kj];
                tap t = taps[kj];
                const float *restrict xr = x + ih * w->W + t.off;

                if (w->sw == 1)
                    for (int64_t o = t.lo; o < t.hi; o++)
                        yr[o] += kv * xr[o];
                else if (w->sw == 2) /* a constant: vectorizes */
                    for (int64_t o = t.lo; o < t.hi; o++)
                        yr[o] += kv * xr[o * 2];
                else
                    for (int64_t o = t.lo; o < t.hi; o++)
                        yr[o] += kv * xr[o * w->sw];
            }
        }
        if (bias)
            for (int64_t q = 0; q < w->OW; q++)
                yr[q] += *bias;
        nn_epilogue_apply(epi, yr, w->OW);
    }
}

/* dx (one input plane's gradient) from dy and the kernel k. */
static void plane_grad_input(const nn_window *w, const tap *taps,
                             const float *dy, const float *k, float *dx)
{
    memset(dx, 0, sizeof *dx * (size_t)(w->H * w->W));
    for (int64_t ki = 0; ki < w->kh; ki++)
        for (int64_t kj = 0; kj < w->kw; kj++) {
            float kv = k[ki * w->kw + kj];
            tap t = taps[kj];

            for (int64_t oh = 0; oh < w->OH; oh++) {
                int64_t ih = in_row(w, oh, ki);
                float *xr = dx + ih * w->W + t.off;
                const float *yr = dy + oh * w->OW;

                if (ih < 0)
                    continue;
                if (w->sw == 1)
                    for (int64_t o = t.lo; o < t.hi; o++)
                        xr[o] += kv * yr[o];
                else
                    for (int64_t o = t.lo; o < t.hi; o++)
                        xr[o * w->sw] += kv * yr[o];
            }
        }
}

/* Adds the taps' products of one plane pair to acc (8 lanes per tap). */
static void plane_grad_weight(const nn_window *w, const tap *taps,
                              const float *x, const float *dy, double *acc)
{
    for (int64_t ki = 0; ki < w->kh; ki++)
        for (int64_t kj = 0; kj < w->kw; kj++) {
            double *a = acc + 8 * (ki * w->kw + kj);
            tap t = taps[kj];

            for (int64_t oh = 0; oh < w->OH; oh++) {
                int64_t ih = in_row(w, oh, ki);
                const float *xr = x + ih * w->W + t.off;
                const float *yr = dy + oh * w->OW;

                if (ih < 0 || t.hi <= t.lo)
                    continue;
                if (w->sw == 1)
                    opu_dot8_add(a, yr + t.lo, xr + t.lo, t.hi - t.lo, 0.0f);
                else
                    for (int64_t o = t.lo; o < t.hi; o++)
                        a[o & 7] += (double)yr[o] * (double)xr[o * w->sw];
            }
        }
}

popc_status nn_dw_forward(const popc_kernel_ctx *kc, const conv_p *p,
                          const float *x, const float *wt, const float *bias,
                          float *y)
{
    int64_t lo, hi;
    tap taps[MAX_KW];

    taps_of(&p->w, taps);
    opu_range(p->N * p->M, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        int64_t c = u % p->M;

        plane_forward(&p->w, taps, x + u * p->HW, wt + c * p->KK,
                      bias ? bias + c : NULL, p->epi, y + u * p->P);
    }
    return POPC_OK;
}

popc_status nn_dw_grad_input(const popc_kernel_ctx *kc, const conv_p *p,
                             const float *dy, const float *wt, float *dx)
{
    int64_t lo, hi;
    tap taps[MAX_KW];

    taps_of(&p->w, taps);
    opu_range(p->N * p->M, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t u = lo; u < hi; u++)
        plane_grad_input(&p->w, taps, dy + u * p->P, wt + (u % p->M) * p->KK,
                         dx + u * p->HW);
    return POPC_OK;
}

popc_status nn_dw_grad_weight(const popc_kernel_ctx *kc, const conv_p *p,
                              const float *x, const float *dy, float *dw,
                              float *db)
{
    int64_t S = p->S > 0 ? p->S : 1, lo, hi;
    double *acc;
    tap taps[MAX_KW];
    popc_status st;

    taps_of(&p->w, taps);
    opu_range(S * p->M, kc->part, kc->n_parts, &lo, &hi);
    if (hi <= lo)
        return POPC_OK;
    /* 8 lanes per tap, then 8 for dB */
    if (!(acc = nn_conv_scratch(kc, 2 * 8 * (p->KK + 1), &st)))
        return st;
    for (int64_t u = lo; u < hi; u++) {
        int64_t s = u / p->M, c = u % p->M;
        int64_t n0 = p->N * s / S, n1 = p->N * (s + 1) / S;
        double *bacc = acc + 8 * p->KK;

        memset(acc, 0, sizeof *acc * (size_t)(8 * (p->KK + 1)));
        for (int64_t n = n0; n < n1; n++) {
            const float *dyp = dy + (n * p->M + c) * p->P;

            plane_grad_weight(&p->w, taps, x + (n * p->C + c) * p->HW, dyp,
                              acc);
            if (db)
                opu_sum8_add(bacc, dyp, p->P);
        }
        for (int64_t k = 0; k < p->KK; k++)
            dw[(s * p->M + c) * p->KK + k] =
                (float)opu_sum8_total(acc + 8 * k);
        if (db)
            db[s * p->M + c] = (float)opu_sum8_total(bacc);
    }
    kc->host->free(acc);
    return POPC_OK;
}
