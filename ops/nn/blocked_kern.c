/* blocked_kern.c - the blocked kernels of blocked_kern.h, instantiated for
** blocks of 16 lanes on AVX-512 and of 8 on AVX2 (each behind its target
** attribute, chosen at run time by what the CPU reports), and in plain C
** for both sizes: an executable compiled where AVX-512 chose c = 16 still
** runs on a CPU without it, and POPC_NCHWC_ISA=generic tests the plain
** path.
*/
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn/blocked.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define BK_X86 1
#endif

/* The input rows a row of output reads: pixel p of tap row kh of block
** ib is at x + off + ib * sib + kh * skh + p * c, for kh in [k0, k1)
** (the rows inside the input). */
typedef struct bk_src {
    const float *x;
    int64_t off, sib, skh, k0, k1;
} bk_src;

/* Where a row's taps reach into the left or right padding, its input rows
** are first copied with zeros around them, so that every tile runs
** unchecked. */
typedef struct bk_pad {
    int need;
    int64_t wp;                 /* padded row width */
    float *buf;                 /* [blocks][kh][wp][c] */
} bk_pad;

static int bk_pad_init(const bk_geom *g, bk_pad *p)
{
    int64_t last = (g->OW - 1) * g->sw - g->pl + (g->kw - 1) * g->dw;
    int64_t blocks = g->depthwise ? 1 : g->Cb;

    p->buf = NULL;
    p->wp = (g->OW - 1) * g->sw + (g->kw - 1) * g->dw + 1;
    p->need = g->pl > 0 || last >= g->W;
    if (!p->need)
        return 0;
    p->buf = malloc((size_t)(blocks * g->kh * p->wp * g->c) * sizeof(float));
    return p->buf ? 0 : -1;
}

static void bk_pad_free(bk_pad *p)
{
    free(p->buf);
}

/* The rows output row oh reads from x (blocks blocks of [H, W, c]). */
static void bk_rows(const bk_geom *g, bk_pad *p, const float *x,
                    int64_t blocks, int64_t oh, bk_src *s)
{
    const int64_t c = g->c, ih0 = oh * g->sh - g->pt;
    int64_t k0 = ih0 >= 0 ? 0 : (-ih0 + g->dh - 1) / g->dh;
    int64_t k1 = g->H - 1 - ih0 < 0 ? 0 : (g->H - 1 - ih0) / g->dh + 1;

    if (k1 > g->kh)
        k1 = g->kh;
    if (k1 < k0)
        k1 = k0;
    s->k0 = k0;
    s->k1 = k1;
    if (!p->need) {
        *s = (bk_src){.x = x, .off = (ih0 * g->W - g->pl) * c,
                      .sib = g->H * g->W * c, .skh = g->dh * g->W * c,
                      .k0 = k0, .k1 = k1};
        return;
    }
    *s = (bk_src){.x = p->buf, .off = 0, .sib = g->kh * p->wp * c,
                  .skh = p->wp * c, .k0 = k0, .k1 = k1};
    for (int64_t b = 0; b < blocks; b++)
        for (int64_t kh = k0; kh < k1; kh++) {
            const float *row = x + (b * g->H + ih0 + kh * g->dh) * g->W * c;
            float *dst = p->buf + (b * g->kh + kh) * p->wp * c;
            int64_t j0 = g->pl < p->wp ? g->pl : p->wp;
            int64_t j1 = g->pl + g->W < p->wp ? g->pl + g->W : p->wp;

            memset(dst, 0, (size_t)(j0 * c) * sizeof(float));
            memcpy(dst + j0 * c, row + (j0 - g->pl) * c,
                   (size_t)((j1 - j0) * c) * sizeof(float));
            memset(dst + j1 * c, 0, (size_t)((p->wp - j1) * c) * sizeof(float));
        }
}

/* A FusedConv epilogue as the tiles apply it: Relu and Clip (clip, with
** Relu as [0, inf]) in registers, the others (rest) after the store. */
typedef struct bk_epi {
    const nn_epilogue *e;
    int clip;
    float lo, hi;
    nn_epilogue tail;
    const nn_epilogue *rest;
} bk_epi;

static bk_epi *bk_epi_init(const nn_epilogue *e, bk_epi *p)
{
    if (!e)
        return NULL;
    memset(p, 0, sizeof *p);
    p->e = e;
    p->clip = e->act == NN_ACT_RELU || e->act == NN_ACT_CLIP;
    p->lo = e->act == NN_ACT_CLIP ? e->lo : 0.0f;
    p->hi = e->act == NN_ACT_CLIP ? e->hi : INFINITY;
    if (!p->clip && e->act != NN_ACT_NONE) {
        p->tail = *e;
        p->tail.z = NULL; /* added in registers */
        p->rest = &p->tail;
    }
    return p;
}

#define BK_CASES4 BK_CASE(1) BK_CASE(2) BK_CASE(3) BK_CASE(4)
#define BK_CASES8 BK_CASES4 BK_CASE(5) BK_CASE(6) BK_CASE(7) BK_CASE(8)
#define BK_CASES12 BK_CASES8 BK_CASE(9) BK_CASE(10) BK_CASE(11) BK_CASE(12)
#define BK_CASES16 BK_CASES12 BK_CASE(13) BK_CASE(14) BK_CASE(15) BK_CASE(16)

/* ---- plain C: GCC's vector extensions ------------------------------------ */

typedef float bk_v8 __attribute__((vector_size(32), aligned(4)));
typedef float bk_v16 __attribute__((vector_size(64), aligned(4)));

#define BK_TARGET
#define VLOAD(p) (*(const V *)(const void *)(p))
#define VSTORE(p, v) (*(V *)(void *)(p) = (v))
#define VSET1(s) ((V){0} + (s))
#define VZERO ((V){0})
#define VFMA(a, b, acc) ((acc) + (a) * (b))
#define VADD(a, b) ((a) + (b))
#define VMUL(a, b) ((a) * (b))

typedef int32_t bk_i8 __attribute__((vector_size(32), aligned(4)));
typedef int32_t bk_i16 __attribute__((vector_size(64), aligned(4)));

/* NaN in the window wins, as in the NCHW MaxPool (a: the running max);
** a macro, as GCC warns of functions passing these vectors by value */
#define BK_GMAX(I, a, b)                                                      \
    __extension__({                                                           \
        V a_ = (a), b_ = (b);                                                 \
        I m_ = (a_ >= b_) | (a_ != a_);                                       \
        (V)((m_ & (I)a_) | (~m_ & (I)b_));                                    \
    })

/* Clip as nn_epilogue_apply: v < lo ? lo : v > hi ? hi : v (NaN stays) */
#define BK_GCLIP(I, v, lo, hi)                                                \
    __extension__({                                                           \
        V v_ = (v), l_ = (lo), h_ = (hi);                                     \
        I m_ = v_ < l_;                                                       \
        v_ = (V)((m_ & (I)l_) | (~m_ & (I)v_));                               \
        m_ = v_ > h_;                                                         \
        (V)((m_ & (I)h_) | (~m_ & (I)v_));                                    \
    })

#define V bk_v8
#define VMAX(a, b) BK_GMAX(bk_i8, a, b)
#define VCLIP(v, lo, hi) BK_GCLIP(bk_i8, v, lo, hi)
#define BK_NAME(x) bk_generic8_##x
#define BK_ISA "generic"
#define BK_LANES 8
#define BK_NOB 2
#define BK_RW 4
#define BK_DW_RW 4
#define BK_CASES BK_CASES4
#define BK_DW_CASES BK_CASES4
#include "ops/nn/blocked_kern.h"
#undef V
#undef VMAX
#undef VCLIP
#undef BK_NAME
#undef BK_LANES

#define V bk_v16
#define VMAX(a, b) BK_GMAX(bk_i16, a, b)
#define VCLIP(v, lo, hi) BK_GCLIP(bk_i16, v, lo, hi)
#define BK_NAME(x) bk_generic16_##x
#define BK_LANES 16
#include "ops/nn/blocked_kern.h"
#undef V
#undef BK_NAME
#undef BK_ISA
#undef BK_LANES
#undef BK_NOB
#undef BK_RW
#undef BK_DW_RW
#undef BK_CASES
#undef BK_DW_CASES
#undef BK_TARGET
#undef VLOAD
#undef VSTORE
#undef VSET1
#undef VZERO
#undef VFMA
#undef VADD
#undef VMUL
#undef VMAX
#undef VCLIP

#ifdef BK_X86
/* ---- AVX2 + FMA, blocks of 8 --------------------------------------------- */

/* max_ps returns its second operand when either is NaN: a NaN running
** max stays, and a NaN input is put back by the unordered mask */
static inline __attribute__((target("avx2"))) __m256 bk_max_avx2(__m256 a,
                                                                 __m256 b)
{
    return _mm256_blendv_ps(_mm256_max_ps(b, a), b,
                            _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
}

static inline __attribute__((target("avx512f"))) __m512 bk_max_avx512(
    __m512 a, __m512 b)
{
    return _mm512_mask_mov_ps(_mm512_max_ps(b, a),
                              _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q), b);
}

#define BK_TARGET __attribute__((target("avx2,fma")))
#define V __m256
#define VLOAD(p) _mm256_loadu_ps(p)
#define VSTORE(p, v) _mm256_storeu_ps(p, v)
#define VSET1(s) _mm256_set1_ps(s)
#define VZERO _mm256_setzero_ps()
#define VFMA(a, b, acc) _mm256_fmadd_ps(a, b, acc)
#define VADD(a, b) _mm256_add_ps(a, b)
#define VMUL(a, b) _mm256_mul_ps(a, b)
#define VMAX(a, b) bk_max_avx2(a, b)
/* max/min return the second operand when either is NaN: NaN stays */
#define VCLIP(v, lo, hi) _mm256_min_ps(hi, _mm256_max_ps(lo, v))
#define BK_NAME(x) bk_avx2_##x
#define BK_ISA "avx2"
#define BK_LANES 8
#define BK_NOB 2
#define BK_RW 6
#define BK_DW_RW 8
#define BK_CASES BK_CASE(1) BK_CASE(2) BK_CASE(3) BK_CASE(4) BK_CASE(5) \
    BK_CASE(6)
#define BK_DW_CASES BK_CASES8
#include "ops/nn/blocked_kern.h"
#undef BK_TARGET
#undef V
#undef VLOAD
#undef VSTORE
#undef VSET1
#undef VZERO
#undef VFMA
#undef VADD
#undef VMUL
#undef VMAX
#undef VCLIP
#undef BK_NAME
#undef BK_ISA
#undef BK_LANES
#undef BK_NOB
#undef BK_RW
#undef BK_DW_RW
#undef BK_CASES
#undef BK_DW_CASES

/* ---- AVX-512, blocks of 16 ----------------------------------------------- */

#define BK_TARGET __attribute__((target("avx512f")))
#define V __m512
#define VLOAD(p) _mm512_loadu_ps(p)
#define VSTORE(p, v) _mm512_storeu_ps(p, v)
#define VSET1(s) _mm512_set1_ps(s)
#define VZERO _mm512_setzero_ps()
#define VFMA(a, b, acc) _mm512_fmadd_ps(a, b, acc)
#define VADD(a, b) _mm512_add_ps(a, b)
#define VMUL(a, b) _mm512_mul_ps(a, b)
#define VMAX(a, b) bk_max_avx512(a, b)
#define VCLIP(v, lo, hi) _mm512_min_ps(hi, _mm512_max_ps(lo, v))
#define BK_NAME(x) bk_avx512_##x
#define BK_ISA "avx512f"
#define BK_LANES 16
#define BK_NOB 3
#define BK_RW 8
#define BK_DW_RW 16
#define BK_CASES BK_CASES8
#define BK_DW_CASES BK_CASES16
#include "ops/nn/blocked_kern.h"
#endif

static int generic_forced(void)
{
    const char *s = getenv("POPC_NCHWC_ISA");

    return s && strcmp(s, "generic") == 0;
}

const bk_kernels *bk_kernels_for(int64_t c)
{
#ifdef BK_X86
    if (!generic_forced()) {
        __builtin_cpu_init();
        if (c == 16 && __builtin_cpu_supports("avx512f"))
            return &bk_avx512_kernels;
        if (c == 8 && __builtin_cpu_supports("avx2") &&
            __builtin_cpu_supports("fma"))
            return &bk_avx2_kernels;
    }
#endif
    return c == 16 ? &bk_generic16_kernels : &bk_generic8_kernels;
}

int64_t bk_conv_units(const bk_geom *g, const bk_kernels *k)
{
    int64_t outer = g->depthwise ? g->Mb : (g->Mb + k->nob - 1) / k->nob;

    return g->N * outer * g->OH * ((g->OW + BK_SEG - 1) / BK_SEG);
}

int64_t bk_pool_units(const bk_geom *g)
{
    return g->N * g->Cb * g->OH;
}
