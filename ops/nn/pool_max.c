/* pool_max.c - the window kernels of MaxPool and MaxPoolGrad (pool.c):
** max and argmax a row of windows at a time, and the gradient of a 2x2,
** stride-2 pool written without a scatter.
**
** Numerics follow torch's CPU kernels: the first maximum in row-major
** window order wins and a NaN wins. Windows inside the input take direct
** paths (2x2 stride 2 vectorized, others tap by tap) that follow
** window_argmax's order and rule, so every path gives its result.
*/
#include "config.h"

/* GCC's -O2 vectorizes only loops that need no runtime alias check; the
** pooling loops need the full cost model. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <math.h>
#include <string.h>

#include "ops/nn/nn_priv.h"

/* First valid tap of a dilated window starting at s, and the end. */
static void taps(int64_t s, int64_t k, int64_t d, int64_t n, int64_t *lo,
                 int64_t *hi)
{
    int64_t e = s + (k - 1) * d + 1;

    if (s < 0)
        s += (-s + d - 1) / d * d;
    *lo = s;
    *hi = e < n ? e : n;
}

/* Argmax (plane offset) of one window; -1 when no tap is inside. */
static int64_t window_argmax(const nn_window *w, const float *xp, int64_t oh,
                             int64_t ow, float *best)
{
    int64_t h0, h1, w0, w1, at = -1;
    float m = -INFINITY;

    taps(oh * w->sh - w->pt, w->kh, w->dh, w->H, &h0, &h1);
    taps(ow * w->sw - w->pl, w->kw, w->dw, w->W, &w0, &w1);
    for (int64_t ih = h0; ih < h1; ih += w->dh)
        for (int64_t iw = w0; iw < w1; iw += w->dw) {
            float v = xp[ih * w->W + iw];

            if (v > m || isnan(v) || at < 0) {
                m = v;
                at = ih * w->W + iw;
            }
        }
    *best = m;
    return at;
}

/* Output positions [lo, hi) of n_out whose whole window (start o*s - pad,
** span taps) lies inside [0, n): their taps need no clipping. */
static void inside(int64_t pad, int64_t s, int64_t span, int64_t n,
                   int64_t n_out, int64_t *lo, int64_t *hi)
{
    int64_t l = pad > 0 ? (pad + s - 1) / s : 0;
    int64_t h = n - span + pad < 0 ? 0 : (n - span + pad) / s + 1;

    if (h > n_out)
        h = n_out;
    if (l > h)
        l = h;
    *lo = l;
    *hi = h;
}

/* 2x2 windows at column stride 2 over rows r0 and r1 (window o starts
** at column 2 o): the max m[o] and the winning tap k[o] (0..3 in
** window_argmax's order: r0 left, r0 right, r1 left, r1 right) with its
** rule, a larger value or a NaN. Written so that it vectorizes. */
static void max2x2(const float *restrict r0, const float *restrict r1,
                   int64_t n, float *restrict m, int32_t *restrict k)
{
    for (int64_t o = 0; o < n; o++) {
        float a = r0[2 * o], b = r0[2 * o + 1];
        float c = r1[2 * o], d = r1[2 * o + 1];
        float best = a;
        int32_t t = 0;

        if (b > best || b != b) {
            best = b;
            t = 1;
        }
        if (c > best || c != c) {
            best = c;
            t = 2;
        }
        if (d > best || d != d) {
            best = d;
            t = 3;
        }
        m[o] = best;
        k[o] = t;
    }
}

/* The max of n windows inside the input whose first taps are x0[o * sw]:
** the taps in window_argmax's order with its rule (a larger value or a
** NaN wins), so the max is the argmax path's; inlined with sw 2 as a
** constant so that the loads vectorize. */
static inline void strided_max_row(const float *x0, const nn_window *w,
                                   int64_t sw, int64_t n, float *restrict m)
{
    for (int64_t o = 0; o < n; o++)
        m[o] = x0[o * sw];
    for (int64_t i = 0; i < w->kh; i++)
        for (int64_t j = i == 0; j < w->kw; j++) {
            const float *restrict t = x0 + i * w->dh * w->W + j * w->dw;

            for (int64_t o = 0; o < n; o++) {
                float v = t[o * sw];

                m[o] = v > m[o] || v != v ? v : m[o];
            }
        }
}

/* strided_max_row with the winner's offset from the window's first tap
** in k[o]. */
static inline void strided_argmax_row(const float *x0, const nn_window *w,
                                      int64_t sw, int64_t n,
                                      float *restrict m, int32_t *restrict k)
{
    for (int64_t o = 0; o < n; o++) {
        m[o] = x0[o * sw];
        k[o] = 0;
    }
    for (int64_t i = 0; i < w->kh; i++)
        for (int64_t j = i == 0; j < w->kw; j++) {
            int32_t off = (int32_t)(i * w->dh * w->W + j * w->dw);
            const float *restrict t = x0 + off;

            for (int64_t o = 0; o < n; o++) {
                float v = t[o * sw];
                int win = v > m[o] || v != v;

                m[o] = win ? v : m[o];
                k[o] = win ? off : k[o];
            }
        }
}

/* Max (m[o]) and argmax (at[o], a plane offset or -1; at may be NULL) of
** output columns [o0, o1) of row oh of one plane; o1 - o0 <= NN_POOL_ROW.
** Windows inside the input take direct paths that visit the taps in
** window_argmax's order with its rule, so every path gives its result. */
void nn_pool_max_row(const nn_window *w, const float *xp, int64_t oh,
                     int64_t o0, int64_t o1, float *m, int64_t *at)
{
    int64_t rlo, rhi, lo, hi, W = w->W;
    int64_t ih = oh * w->sh - w->pt;

    inside(w->pt, w->sh, (w->kh - 1) * w->dh + 1, w->H, w->OH, &rlo, &rhi);
    inside(w->pl, w->sw, (w->kw - 1) * w->dw + 1, W, w->OW, &lo, &hi);
    if (oh < rlo || oh >= rhi)
        lo = hi = o1;
    lo = lo < o0 ? o0 : lo > o1 ? o1 : lo;
    hi = hi < lo ? lo : hi > o1 ? o1 : hi;
    for (int64_t o = o0; o < lo; o++) {
        int64_t a = window_argmax(w, xp, oh, o, &m[o - o0]);
        if (at)
            at[o - o0] = a;
    }
    if (w->kh == 2 && w->kw == 2 && w->dh == 1 && w->dw == 1 &&
        w->sw == 2 && hi > lo) {
        int64_t c0 = lo * 2 - w->pl, row = ih * W;
        int32_t k[NN_POOL_ROW];

        max2x2(xp + row + c0, xp + row + W + c0, hi - lo, m + (lo - o0), k);
        for (int64_t o = lo; at && o < hi; o++) {
            int32_t t = k[o - lo];
            at[o - o0] = row + o * 2 - w->pl + (t & 1) + (t >> 1) * W;
        }
    } else if (!at) {
        /* max only (inference): tap by tap over the row, vectorized */
        const float *x0 = xp + ih * W + lo * w->sw - w->pl;
        float *mo = m + (lo - o0);

        if (w->sw == 2)
            strided_max_row(x0, w, 2, hi - lo, mo);
        else
            strided_max_row(x0, w, w->sw, hi - lo, mo);
    } else if (hi - lo >= 4 && w->kh * w->kw <= 64) {
        /* max and argmax tap by tap over the row, vectorized */
        int64_t first = ih * W + lo * w->sw - w->pl;
        int32_t k[NN_POOL_ROW];

        if (w->sw == 2)
            strided_argmax_row(xp + first, w, 2, hi - lo, m + (lo - o0), k);
        else
            strided_argmax_row(xp + first, w, w->sw, hi - lo, m + (lo - o0),
                               k);
        for (int64_t o = lo; o < hi; o++)
            at[o - o0] = first + (o - lo) * w->sw + k[o - lo];
    } else {
        for (int64_t o = lo; o < hi; o++) {
            int64_t base = ih * W + o * w->sw - w->pl, a = base;
            float best = xp[base];

            for (int64_t i = 0; i < w->kh; i++)
                for (int64_t j = i == 0; j < w->kw; j++) {
                    int64_t pos = base + i * w->dh * W + j * w->dw;
                    float v = xp[pos];

                    if (v > best || v != v) {
                        best = v;
                        a = pos;
                    }
                }
            m[o - o0] = best;
            if (at)
                at[o - o0] = a;
        }
    }
    for (int64_t o = hi; o < o1; o++) {
        int64_t a = window_argmax(w, xp, oh, o, &m[o - o0]);
        if (at)
            at[o - o0] = a;
    }
}

/* g[o] (as 0 + g) at tap k[o] of 2x2 window o over rows d0 and d1, zero
** at the other three taps; bit masks rather than selects, so that the
** loop vectorizes. */
static void spread2x2(const int32_t *restrict k, const float *restrict g,
                      int64_t n, float *restrict d0, float *restrict d1)
{
    for (int64_t o = 0; o < n; o++) {
        float v = 0.0f + g[o];
        uint32_t b, t = (uint32_t)k[o], e[4];

        memcpy(&b, &v, sizeof b);
        e[0] = b & -(uint32_t)(t == 0);
        e[1] = b & -(uint32_t)(t == 1);
        e[2] = b & -(uint32_t)(t == 2);
        e[3] = b & -(uint32_t)(t == 3);
        memcpy(&d0[2 * o], &e[0], sizeof e[0]);
        memcpy(&d0[2 * o + 1], &e[1], sizeof e[1]);
        memcpy(&d1[2 * o], &e[2], sizeof e[2]);
        memcpy(&d1[2 * o + 1], &e[3], sizeof e[3]);
    }
}

/* dX of one plane of a 2x2, stride 2 pool whose windows all lie inside
** the input: the windows tile it, so every element is written once (the
** gradient at the window's argmax, zero elsewhere; rows and columns past
** the last window are zero) with no zeroing pass and no scatter. 0 + g,
** as the scatter into zeros would give (a -0 gradient lands as +0). */
void nn_pool_max_grad_2x2(const nn_window *w, const float *xp,
                          const float *gp, float *dp)
{
    int64_t W = w->W, OW = w->OW;

    for (int64_t oh = 0; oh < w->OH; oh++) {
        const float *r0 = xp + 2 * oh * W, *gr = gp + oh * OW;
        float *d0 = dp + 2 * oh * W, *d1 = d0 + W;
        float m[NN_POOL_ROW];
        int32_t k[NN_POOL_ROW];

        for (int64_t o0 = 0; o0 < OW; o0 += NN_POOL_ROW) {
            int64_t n = OW - o0 < NN_POOL_ROW ? OW - o0 : NN_POOL_ROW;

            max2x2(r0 + 2 * o0, r0 + W + 2 * o0, n, m, k);
            spread2x2(k, gr + o0, n, d0 + 2 * o0, d1 + 2 * o0);
        }
        for (int64_t c = 2 * OW; c < W; c++)
            d0[c] = d1[c] = 0.0f;
    }
    memset(dp + 2 * w->OH * W, 0,
           sizeof *dp * (size_t)((w->H - 2 * w->OH) * W));
}

