/* half_partials.c - float16 partial sums for MatMul, Gemm and Conv
** (half_partials.h states the rule and the summation orders).
**
** These are plain loops, not BLAS: a partial sum rounded after every term
** is exactly what BLAS's blocked float sums avoid, and the orders must be
** the documented ones for results to be reproducible by hand. Each loop
** gives a whole row of running sums their next term and rounds them
** (add_terms: one F16C pass when the CPU has it). Convolutions first
** gather, for each term, the operand of every sum into one row (im2col,
** 0 in the padding: adding 0 to a float16 sum leaves it unchanged).
*/
#include "config.h"

/* GCC's -O2 vectorizes only loops that need no runtime alias check; the
** row updates need the full cost model. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <string.h>

#include "ops/util/oputil.h"
#include "ops/nn/half_partials.h"

/* Rows of partial sums are rounded this many at a time. */
#define ROUND_CHUNK 256

/* Rounds v[0..n) to float16 values: every running sum of a row gets its
** term, then the row is rounded at once (F16C when the CPU has it). A
** rounded value rounds to itself, so sums that got no term (a tap in the
** padding) are unchanged. */
void nn_round_half_n(float *v, int64_t n)
{
    uint16_t tmp[ROUND_CHUNK];

    for (int64_t o = 0; o < n; o += ROUND_CHUNK) {
        int64_t c = n - o < ROUND_CHUNK ? n - o : ROUND_CHUNK;

        opu_f2h_n(tmp, v + o, c);
        opu_h2f_n(v + o, tmp, c);
    }
}

/* Terms given to a row per pass: their rows stay in the first-level
** cache while every chunk of sums takes all of them. */
#define TERM_BLOCK 64

/* A run of terms for a row of running sums: term k adds a[k * as] times
** row k, rows[k * rs + 0..n). */
typedef struct terms {
    const float *rows;
    int64_t rs;
    const float *a;
    int64_t as;
    int64_t count;
} terms;

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define HAVE_F16C_PATH 1

/* v + a * x rounded to float16 (F16C). */
__attribute__((target("avx,f16c"))) static inline __m256
term_f16c(__m256 v, __m256 a, __m256 x)
{
    return _mm256_cvtph_ps(_mm256_cvtps_ph(
        _mm256_add_ps(v, _mm256_mul_ps(a, x)), _MM_FROUND_TO_NEAREST_INT));
}

/* add_terms with chunks of eight sums in registers through a whole block
** of terms, rounded by F16C after every term. Four chunks go at once:
** each term's add and two conversions form a long dependency chain per
** chunk. The last n % 8 sums take a masked chunk. */
__attribute__((target("avx,f16c"))) static void
add_terms_f16c(float *restrict sum, const terms *t, int64_t n)
{
    int32_t lanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1};
    __m256i tail = _mm256_loadu_si256((const __m256i *)(lanes + 8 - n % 8));

    for (int64_t k0 = 0; k0 < t->count; k0 += TERM_BLOCK) {
        int64_t k1 = k0 + TERM_BLOCK < t->count ? k0 + TERM_BLOCK : t->count;
        int64_t j = 0;

        for (; j + 32 <= n; j += 32) {
            __m256 v0 = _mm256_loadu_ps(sum + j);
            __m256 v1 = _mm256_loadu_ps(sum + j + 8);
            __m256 v2 = _mm256_loadu_ps(sum + j + 16);
            __m256 v3 = _mm256_loadu_ps(sum + j + 24);

            for (int64_t k = k0; k < k1; k++) {
                const float *x = t->rows + k * t->rs + j;
                __m256 a = _mm256_set1_ps(t->a[k * t->as]);

                v0 = term_f16c(v0, a, _mm256_loadu_ps(x));
                v1 = term_f16c(v1, a, _mm256_loadu_ps(x + 8));
                v2 = term_f16c(v2, a, _mm256_loadu_ps(x + 16));
                v3 = term_f16c(v3, a, _mm256_loadu_ps(x + 24));
            }
            _mm256_storeu_ps(sum + j, v0);
            _mm256_storeu_ps(sum + j + 8, v1);
            _mm256_storeu_ps(sum + j + 16, v2);
            _mm256_storeu_ps(sum + j + 24, v3);
        }
        for (; j + 8 <= n; j += 8) {
            __m256 v = _mm256_loadu_ps(sum + j);

            for (int64_t k = k0; k < k1; k++)
                v = term_f16c(v, _mm256_set1_ps(t->a[k * t->as]),
                              _mm256_loadu_ps(t->rows + k * t->rs + j));
            _mm256_storeu_ps(sum + j, v);
        }
        if (j < n) {
            __m256 v = _mm256_maskload_ps(sum + j, tail);

            for (int64_t k = k0; k < k1; k++)
                v = term_f16c(v, _mm256_set1_ps(t->a[k * t->as]),
                              _mm256_maskload_ps(t->rows + k * t->rs + j,
                                                 tail));
            _mm256_maskstore_ps(sum + j, tail, v);
        }
    }
}
#endif

/* sum[0..n) gets the terms in order, each sum rounded to float16 after
** every one. */
static void add_terms(float *restrict sum, const terms *t, int64_t n)
{
#ifdef HAVE_F16C_PATH
    if (opu_svc.have_f16c()) {
        add_terms_f16c(sum, t, n);
        return;
    }
#endif
    for (int64_t k = 0; k < t->count; k++) {
        const float *restrict x = t->rows + k * t->rs;
        float a = t->a[k * t->as];

        for (int64_t j = 0; j < n; j++)
            sum[j] += a * x[j];
        nn_round_half_n(sum, n);
    }
}

/* Columns [c0, c0 + n) of op(B) = B^T (B [N, K], rows ldb apart) as
** packed [K, n], in square blocks so that reads and writes both stay in
** cache (also turns an im2col [Kc, P] into [P, Kc]). */
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
    return popc_attr_int(attrs, POPC_ATTR_FLOAT16, 0) != 0;
}

int nn_half_partials(const popc_kernel_ctx *kc)
{
    /* a convolution's own partials type (MultiConv) wins over the option */
    const char *own = popc_attr_string(kc->attrs, POPC_ATTR_PARTIALS_TYPE,
                                       NULL);

    if (own)
        return strcmp(own, "half") == 0 && nn_is_float16_node(kc->attrs);
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

        terms t = {packed ? packed : B + c0, packed ? n : ldb,
                   trans_a ? A + i : A + i * lda, trans_a ? lda : 1, K};

        memset(acc, 0, sizeof *acc * (size_t)n);
        add_terms(acc, &t, n);
        /* beta == 0 must not read C: it may hold garbage or NaN; the sums
        ** are float16 values already, so alpha 1 and beta 0 need no
        ** rounding */
        if (beta == 0.0f)
            for (int64_t j = 0; j < n; j++)
                c[j] = alpha * acc[j];
        else
            for (int64_t j = 0; j < n; j++)
                c[j] = alpha * acc[j] + beta * c[j];
        if (alpha != 1.0f || beta != 0.0f)
            nn_round_half_n(c, n);
    }
    kc->host->free(packed);
    kc->host->free(acc);
    return POPC_OK;
}

/* Output position o whose tap k reads input position i, or -1. */
static inline int64_t source(int64_t i, int64_t k, int64_t stride,
                             int64_t dilation, int64_t pad, int64_t n_out)
{
    int64_t t = i + pad - k * dilation;

    if (t < 0 || t % stride)
        return -1;
    return t / stride < n_out ? t / stride : -1;
}

popc_status nn_conv_half_forward(const popc_kernel_ctx *kc, const conv_p *p,
                                 const float *x, const float *wt,
                                 const float *bias, float *y)
{
    int64_t lo, hi, built = -1;
    float *col;
    popc_status st;

    opu_range(p->N * p->M, kc->part, kc->n_parts, &lo, &hi);
    if (hi <= lo)
        return POPC_OK;
    /* im2col [Kc, P] of (image, group): row e holds the value tap e of
    ** each output position reads (0 in the padding) */
    if (!(col = nn_conv_scratch(kc, p->Kc * p->P, &st)))
        return st;
    for (int64_t u = lo; u < hi; u++) {
        int64_t n = u / p->M, m = u % p->M, g = m / p->Mg;
        const float *wm = wt + m * p->Kc;
        float *ym = y + u * p->P;

        if (built != n * p->G + g) {
            nn_im2col(p, x + (n * p->C + g * p->Cg) * p->HW, 0, p->Cg, 0,
                      p->P, col, p->P);
            built = n * p->G + g;
        }
        /* y's own elements are the running sums: terms in (channel, row,
        ** column) order */
        terms t = {col, p->P, wm, 1, p->Kc};

        memset(ym, 0, sizeof *ym * (size_t)p->P);
        add_terms(ym, &t, p->P);
        if (bias) {
            for (int64_t q = 0; q < p->P; q++)
                ym[q] += bias[m];
            nn_round_half_n(ym, p->P);
        }
    }
    kc->host->free(col);
    return POPC_OK;
}

/* rows [Mg * kh * kw, HW] for ConvGradInput: row (m, i, j) holds, for each
** input position, the dY value of output channel m whose tap (i, j) reads
** that position (0 when none does); group g of image n. */
static void sources_by_tap(const conv_p *p, const float *dyg, float *rows)
{
    const nn_window *w = &p->w;

    for (int64_t m = 0; m < p->Mg; m++)
        for (int64_t i = 0; i < w->kh; i++)
            for (int64_t j = 0; j < w->kw; j++) {
                float *row = rows + ((m * w->kh + i) * w->kw + j) * p->HW;

                for (int64_t ih = 0; ih < w->H; ih++) {
                    int64_t oh = source(ih, i, w->sh, w->dh, w->pt, w->OH);

                    for (int64_t iw = 0; iw < w->W; iw++) {
                        int64_t ow = source(iw, j, w->sw, w->dw, w->pl,
                                            w->OW);

                        row[ih * w->W + iw] =
                            oh >= 0 && ow >= 0
                                ? dyg[m * p->P + oh * w->OW + ow]
                                : 0.0f;
                    }
                }
            }
}

popc_status nn_conv_half_grad_input(const popc_kernel_ctx *kc,
                                    const conv_p *p, const float *dy,
                                    const float *wt, float *dx)
{
    int64_t lo, hi, built = -1;
    float *rows;
    popc_status st;

    opu_range(p->N * p->C, kc->part, kc->n_parts, &lo, &hi);
    if (hi <= lo)
        return POPC_OK;
    if (!(rows = nn_conv_scratch(kc, p->Mg * p->KK * p->HW, &st)))
        return st;
    for (int64_t u = lo; u < hi; u++) {
        int64_t n = u / p->C, c = u % p->C, g = c / p->Cg, cg = c % p->Cg;
        float *dxc = dx + u * p->HW;

        if (built != n * p->G + g) {
            sources_by_tap(p, dy + (n * p->M + g * p->Mg) * p->P, rows);
            built = n * p->G + g;
        }
        /* dX's own elements are the running sums: terms in (output
        ** channel, row, column) order */
        memset(dxc, 0, sizeof *dxc * (size_t)p->HW);
        for (int64_t m = 0; m < p->Mg; m++) {
            terms t = {rows + m * p->KK * p->HW, p->HW,
                       wt + (g * p->Mg + m) * p->Kc + cg * p->KK, 1, p->KK};

            add_terms(dxc, &t, p->HW);
        }
    }
    kc->host->free(rows);
    return POPC_OK;
}

popc_status nn_conv_half_grad_weight(const popc_kernel_ctx *kc,
                                     const conv_p *p, const float *x,
                                     const float *dy, float *dw, float *db)
{
    int64_t lo, hi, built = -1;
    float *col, *cols;
    popc_status st;

    opu_range(p->M, kc->part, kc->n_parts, &lo, &hi);
    if (hi <= lo)
        return POPC_OK;
    /* per (image, group): im2col [Kc, P], then turned to cols [P, Kc], the
    ** values the taps of one output position read in dW's order */
    if (!(col = nn_conv_scratch(kc, p->P * p->Kc, &st)))
        return st;
    if (!(cols = nn_conv_scratch(kc, p->P * p->Kc, &st))) {
        kc->host->free(col);
        return st;
    }
    memset(dw + lo * p->Kc, 0, sizeof *dw * (size_t)((hi - lo) * p->Kc));
    for (int64_t m = lo; m < hi; m++)
        if (db)
            db[m] = 0.0f;
    /* terms in (image, output row, output column) order for every dW
    ** element; an image's taps are gathered once per group */
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t m = lo; m < hi; m++) {
            int64_t g = m / p->Mg;
            const float *dym = dy + (n * p->M + m) * p->P;
            float *dwm = dw + m * p->Kc;

            if (built != n * p->G + g) {
                nn_im2col(p, x + (n * p->C + g * p->Cg) * p->HW, 0, p->Cg, 0,
                          p->P, col, p->P);
                pack_transposed(col, p->P, p->P, 0, p->Kc, cols);
                built = n * p->G + g;
            }
            terms t = {cols, p->Kc, dym, 1, p->P};

            add_terms(dwm, &t, p->Kc);
            for (int64_t q = 0; db && q < p->P; q++)
                db[m] = opu_round_f16(db[m] + dym[q]);
        }
    kc->host->free(cols);
    kc->host->free(col);
    return POPC_OK;
}
