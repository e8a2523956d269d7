/* half_partials.c - float16 partial sums for MatMul, Gemm and Conv
** (half_partials.h states the rule and the summation orders).
**
** These are plain loops, not BLAS: a partial sum rounded after every term
** is exactly what BLAS's blocked float sums avoid, and the orders must be
** the documented ones for results to be reproducible by hand. Each loop
** gives a whole row of running sums their next term, then rounds the row
** (round_half_n), which vectorizes; a padded tap adds nothing, and
** rounding a float16 value again leaves it unchanged.
*/
#include "config.h"

/* GCC's -O2 vectorizes only loops that need no runtime alias check; the
** row updates need the full cost model. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <string.h>

#include "core/half_simd.h"
#include "ops/math/oputil.h"
#include "ops/nn/half_partials.h"
#include "ops/nn/util.h"

/* Rows of partial sums are rounded this many at a time. */
#define ROUND_CHUNK 256

static inline float round_half(float v)
{
    return opu_h2f(opu_f2h(v));
}

/* Rounds v[0..n) to float16 values: every running sum of a row gets its
** term, then the row is rounded at once (F16C when the CPU has it). A
** rounded value rounds to itself, so sums that got no term (a tap in the
** padding) are unchanged. */
static void round_half_n(float *v, int64_t n)
{
    uint16_t tmp[ROUND_CHUNK];

    for (int64_t o = 0; o < n; o += ROUND_CHUNK) {
        int64_t c = n - o < ROUND_CHUNK ? n - o : ROUND_CHUNK;

        popci_f2h_n(tmp, v + o, c, opu_f2h);
        popci_h2f_n(v + o, tmp, c, opu_h2f);
    }
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define HAVE_F16C_PATH 1

/* add_terms in one pass: eight sums get their term and are rounded. */
__attribute__((target("avx,f16c"))) static void
add_terms_f16c(float *restrict acc, const float *restrict b, float a,
               int64_t n)
{
    __m256 av = _mm256_set1_ps(a);
    int64_t j = 0;

    for (; j + 8 <= n; j += 8) {
        __m256 t = _mm256_add_ps(_mm256_loadu_ps(acc + j),
                                 _mm256_mul_ps(av, _mm256_loadu_ps(b + j)));

        _mm256_storeu_ps(acc + j, _mm256_cvtph_ps(_mm256_cvtps_ph(
                                      t, _MM_FROUND_TO_NEAREST_INT)));
    }
    for (; j < n; j++)
        acc[j] = _cvtsh_ss(_cvtss_sh(acc[j] + a * b[j],
                                     _MM_FROUND_TO_NEAREST_INT));
}
#endif

/* acc[0..n) = float16(acc + a * b): one term for each running sum of a
** row, then the row rounded. */
static void add_terms(float *restrict acc, const float *restrict b, float a,
                      int64_t n)
{
#ifdef HAVE_F16C_PATH
    if (popci_have_f16c()) {
        add_terms_f16c(acc, b, a, n);
        return;
    }
#endif
    for (int64_t j = 0; j < n; j++)
        acc[j] += a * b[j];
    round_half_n(acc, n);
}

/* Columns [c0, c0 + n) of op(B) = B^T (B [N, K], rows ldb apart) as
** packed [K, n], in square blocks so that reads and writes both stay in
** cache. */
static void pack_transposed(const float *B, int64_t ldb, int64_t K,
                            int64_t c0, int64_t n, float *packed)
{
    enum { BLK = 32 };

    for (int64_t j0 = 0; j0 < n; j0 += BLK)
        for (int64_t k0 = 0; k0 < K; k0 += BLK) {
            int64_t j1 = j0 + BLK < n ? j0 + BLK : n;
            int64_t k1 = k0 + BLK < K ? k0 + BLK : K;

            for (int64_t k = k0; k < k1; k++)
                for (int64_t j = j0; j < j1; j++)
                    packed[k * n + j] = B[(c0 + j) * ldb + k];
        }
}

int nn_is_float16_node(const popc_attrs *attrs)
{
    return popc_attr_int(attrs, NN_FLOAT16_ATTR, 0) != 0;
}

int nn_half_partials(const popc_kernel_ctx *kc)
{
    return (kc->flags & POPC_KERNEL_HALF_PARTIALS) &&
           nn_is_float16_node(kc->attrs);
}

popc_status nn_gemm_half(const popc_kernel_ctx *kc, int trans_a,
                         int trans_b, int64_t K, float alpha, const float *A,
                         int64_t lda, const float *B, int64_t ldb, float beta,
                         float *C, int64_t ldc, int64_t r0, int64_t r1,
                         int64_t c0, int64_t c1)
{
    int64_t n = c1 - c0;
    float *acc, *packed = NULL;
    popc_status st;

    if (r1 <= r0 || n <= 0)
        return POPC_OK;
    if (!(acc = nn_conv_scratch(kc, n, &st)))
        return st;
    if (trans_b && K > 0) {
        /* op(B)'s rows contiguous, so that a row's terms vectorize */
        if (!(packed = nn_conv_scratch(kc, K * n, &st))) {
            kc->host->free(acc);
            return st;
        }
        pack_transposed(B, ldb, K, c0, n, packed);
    }
    for (int64_t i = r0; i < r1; i++) {
        float *c = C + i * ldc + c0;

        memset(acc, 0, sizeof *acc * (size_t)n);
        for (int64_t k = 0; k < K; k++) {
            float a = trans_a ? A[k * lda + i] : A[i * lda + k];
            const float *b = packed ? packed + k * n : B + k * ldb + c0;

            add_terms(acc, b, a, n);
        }
        /* beta == 0 must not read C: it may hold garbage or NaN */
        for (int64_t j = 0; j < n; j++)
            c[j] = round_half(beta == 0.0f ? alpha * acc[j]
                                           : alpha * acc[j] + beta * c[j]);
    }
    kc->host->free(packed);
    kc->host->free(acc);
    return POPC_OK;
}

/* Input row (or column) of output position o and kernel tap k; out of
** [0, n) when the tap falls into the padding. */
static inline int64_t tap(int64_t o, int64_t k, int64_t stride,
                          int64_t dilation, int64_t pad)
{
    return o * stride - pad + k * dilation;
}

popc_status nn_conv_half_forward(const popc_kernel_ctx *kc, const conv_p *p,
                                 const float *x, const float *wt,
                                 const float *bias, float *y)
{
    const nn_window *w = &p->w;
    int64_t lo, hi;
    float *acc;
    popc_status st;

    opsu_range(p->N * p->M, kc->part, kc->n_parts, &lo, &hi);
    if (hi <= lo)
        return POPC_OK;
    if (!(acc = nn_conv_scratch(kc, p->P, &st)))
        return st;
    for (int64_t u = lo; u < hi; u++) {
        int64_t n = u / p->M, m = u % p->M, g = m / p->Mg;
        float *ym = y + u * p->P;

        memset(acc, 0, sizeof *acc * (size_t)p->P);
        for (int64_t c = 0; c < p->Cg; c++) {
            const float *xc = x + (n * p->C + g * p->Cg + c) * p->HW;

            for (int64_t i = 0; i < w->kh; i++)
                for (int64_t j = 0; j < w->kw; j++) {
                    float wv = wt[m * p->Kc + (c * w->kh + i) * w->kw + j];

                    for (int64_t oh = 0; oh < w->OH; oh++) {
                        int64_t ih = tap(oh, i, w->sh, w->dh, w->pt);
                        int64_t ow0, ow1;

                        if (ih < 0 || ih >= w->H)
                            continue;
                        nn_valid_span(j * w->dw - w->pl, w->sw, w->W, w->OW,
                                      &ow0, &ow1);
                        for (int64_t ow = ow0; ow < ow1; ow++)
                            acc[oh * w->OW + ow] +=
                                xc[ih * w->W + tap(ow, j, w->sw, w->dw,
                                                   w->pl)] *
                                wv;
                    }
                    round_half_n(acc, p->P);
                }
        }
        for (int64_t q = 0; q < p->P; q++)
            ym[q] = bias ? round_half(acc[q] + bias[m]) : acc[q];
    }
    kc->host->free(acc);
    return POPC_OK;
}

popc_status nn_conv_half_grad_input(const popc_kernel_ctx *kc,
                                    const conv_p *p, const float *dy,
                                    const float *wt, float *dx)
{
    const nn_window *w = &p->w;
    int64_t lo, hi;

    opsu_range(p->N * p->C, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        int64_t n = u / p->C, c = u % p->C, g = c / p->Cg, cg = c % p->Cg;
        float *dxc = dx + u * p->HW;

        /* dX's own elements are the running sums: each tap of each output
        ** channel gives every input position at most one term */
        memset(dxc, 0, sizeof *dxc * (size_t)p->HW);
        for (int64_t m = g * p->Mg; m < (g + 1) * p->Mg; m++) {
            const float *dym = dy + (n * p->M + m) * p->P;

            for (int64_t i = 0; i < w->kh; i++)
                for (int64_t j = 0; j < w->kw; j++) {
                    float wv = wt[m * p->Kc + cg * p->KK + i * w->kw + j];
                    int64_t ow0, ow1;

                    nn_valid_span(j * w->dw - w->pl, w->sw, w->W, w->OW, &ow0,
                                  &ow1);
                    for (int64_t oh = 0; oh < w->OH; oh++) {
                        int64_t ih = tap(oh, i, w->sh, w->dh, w->pt);

                        if (ih < 0 || ih >= w->H)
                            continue;
                        for (int64_t ow = ow0; ow < ow1; ow++)
                            dxc[ih * w->W +
                                tap(ow, j, w->sw, w->dw, w->pl)] +=
                                dym[oh * w->OW + ow] * wv;
                    }
                    round_half_n(dxc, p->HW);
                }
        }
    }
    return POPC_OK;
}

popc_status nn_conv_half_grad_weight(const popc_kernel_ctx *kc,
                                     const conv_p *p, const float *x,
                                     const float *dy, float *dw, float *db)
{
    const nn_window *w = &p->w;
    int64_t lo, hi;
    float *col;
    popc_status st;

    opsu_range(p->M, kc->part, kc->n_parts, &lo, &hi);
    if (hi <= lo)
        return POPC_OK;
    /* the taps one output position reads, in dW's order (0 in padding) */
    if (!(col = nn_conv_scratch(kc, p->Kc, &st)))
        return st;
    for (int64_t m = lo; m < hi; m++) {
        int64_t g = m / p->Mg;
        float *dwm = dw + m * p->Kc, bsum = 0.0f;

        memset(dwm, 0, sizeof *dwm * (size_t)p->Kc);
        for (int64_t n = 0; n < p->N; n++) {
            const float *xg = x + (n * p->C + g * p->Cg) * p->HW;
            const float *dym = dy + (n * p->M + m) * p->P;

            for (int64_t oh = 0; oh < w->OH; oh++)
                for (int64_t ow = 0; ow < w->OW; ow++) {
                    float d = dym[oh * w->OW + ow];

                    for (int64_t cg = 0; cg < p->Cg; cg++)
                        for (int64_t i = 0; i < w->kh; i++) {
                            int64_t ih = tap(oh, i, w->sh, w->dh, w->pt);

                            for (int64_t j = 0; j < w->kw; j++) {
                                int64_t iw = tap(ow, j, w->sw, w->dw, w->pl);
                                int in = ih >= 0 && ih < w->H && iw >= 0 &&
                                         iw < w->W;

                                col[(cg * w->kh + i) * w->kw + j] =
                                    in ? xg[cg * p->HW + ih * w->W + iw]
                                       : 0.0f;
                            }
                        }
                    add_terms(dwm, col, d, p->Kc);
                    bsum = round_half(bsum + d);
                }
        }
        if (db)
            db[m] = bsum;
    }
    kc->host->free(col);
    return POPC_OK;
}
