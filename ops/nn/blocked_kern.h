/* blocked_kern.h - the blocked kernels, written once over a vector of
** BK_LANES floats and instantiated per instruction set by blocked_kern.c,
** which defines before including it:
**   BK_NAME(x)   the instance's name for x
**   BK_TARGET    its __attribute__((target(...))), or nothing
**   BK_LANES     lanes of a block (8 or 16)
**   BK_NOB       output blocks (at most 3) and BK_RW pixels of a
**                convolution's register tile; BK_DW_RW pixels of a
**                depthwise one
**   BK_CASES, BK_DW_CASES  BK_CASE(1) ... BK_CASE(BK_RW or BK_DW_RW)
**   V, VLOAD(p), VSTORE(p, v), VSET1(s), VZERO, VFMA(a, b, acc) (acc +
**   a * b), VADD(a, b), VMAX(a, b), VMUL(a, b), VCLIP(v, lo, hi)
** A tile keeps its accumulators in registers while it walks the taps and
** the input channels, each input value broadcast once against the c
** output lanes of each block: the convolution as a register-blocked
** outer product, with no im2col and no per-channel overhead.
*/

/* Store rw vectors of output at y with the epilogue: the residual, Relu
** and Clip in registers (NaN passes as in nn_epilogue_apply), other
** activations after the store. */
static inline __attribute__((always_inline)) BK_TARGET void
BK_NAME(finish)(const bk_epi *e, const V *acc, float *y, const int rw)
{
    const float *z = e->e->z ? e->e->z + (y - e->e->y0) : NULL;
    const V lo = VSET1(e->lo), hi = VSET1(e->hi);

    _Pragma("GCC unroll 16") for (int r = 0; r < rw; r++) {
        V v = acc[r];

        if (z)
            v = VADD(v, VLOAD(z + r * BK_LANES));
        if (e->clip)
            v = VCLIP(v, lo, hi);
        VSTORE(y + r * BK_LANES, v);
    }
    if (e->rest)
        nn_epilogue_apply(e->rest, y, rw * BK_LANES);
}

/* Output pixels ow0 .. ow0+rw of one row, nob (1 to BK_NOB, at most 3)
** output blocks, reading the rows of src (every tap of these pixels
** inside them). */
static inline __attribute__((always_inline)) BK_TARGET void
BK_NAME(ctile)(const bk_geom *g, const bk_src *src, const float *w0,
               int64_t wstride, const float *b, float *y, int64_t ystride,
               int64_t ow0, const int rw, const int nob,
               const bk_epi *e)
{
    const int64_t c = BK_LANES, xs = g->sw * BK_LANES;
    V acc0[BK_RW], acc1[BK_RW], acc2[BK_RW];

    _Pragma("GCC unroll 16") for (int r = 0; r < rw; r++) {
        acc0[r] = b ? VLOAD(b) : VZERO;
        acc1[r] = b && nob > 1 ? VLOAD(b + c) : VZERO;
        acc2[r] = b && nob > 2 ? VLOAD(b + 2 * c) : VZERO;
    }
    for (int64_t ib = 0; ib < g->Cb; ib++) {
        int64_t lc = g->C - ib * c < c ? g->C - ib * c : c;

        for (int64_t kh = src->k0; kh < src->k1; kh++)
            for (int64_t kw = 0; kw < g->kw; kw++) {
                const float *xp = src->x + src->off + ib * src->sib +
                                  kh * src->skh +
                                  (ow0 * g->sw + kw * g->dw) * c;
                const float *wp = w0 + ((ib * g->kh + kh) * g->kw + kw) * c * c;

                for (int64_t l = 0; l < lc; l++) {
                    V wa = VLOAD(wp + l * c);
                    V wb = nob > 1 ? VLOAD(wp + wstride + l * c) : wa;
                    V wc = nob > 2 ? VLOAD(wp + 2 * wstride + l * c) : wa;

                    _Pragma("GCC unroll 16") for (int r = 0; r < rw; r++) {
                        V xb = VSET1(xp[r * xs + l]);

                        acc0[r] = VFMA(xb, wa, acc0[r]);
                        if (nob > 1)
                            acc1[r] = VFMA(xb, wb, acc1[r]);
                        if (nob > 2)
                            acc2[r] = VFMA(xb, wc, acc2[r]);
                    }
                }
            }
    }
    _Pragma("GCC unroll 3") for (int j = 0; j < nob; j++) {
        float *yp = y + j * ystride + ow0 * c;
        const V *acc = j == 0 ? acc0 : j == 1 ? acc1 : acc2;

        if (!e) {
            _Pragma("GCC unroll 16") for (int r = 0; r < rw; r++)
                VSTORE(yp + r * c, acc[r]);
            continue;
        }
        BK_NAME(finish)(e, acc, yp, rw);
    }
}

/* The same for one block of a depthwise convolution (src: that block's
** rows; w, b, y: its taps, bias and output row). */
static inline __attribute__((always_inline)) BK_TARGET void
BK_NAME(dtile)(const bk_geom *g, const bk_src *src, const float *w,
               const float *b, float *y, int64_t ow0, const int rw,
               const bk_epi *e)
{
    const int64_t c = BK_LANES, xs = g->sw * BK_LANES;
    V acc[BK_DW_RW];
    float *yp = y + ow0 * c;

    _Pragma("GCC unroll 16") for (int r = 0; r < rw; r++)
        acc[r] = b ? VLOAD(b) : VZERO;
    for (int64_t kh = src->k0; kh < src->k1; kh++)
        for (int64_t kw = 0; kw < g->kw; kw++) {
            const float *xp = src->x + src->off + kh * src->skh +
                              (ow0 * g->sw + kw * g->dw) * c;
            V wv = VLOAD(w + (kh * g->kw + kw) * c);

            _Pragma("GCC unroll 16") for (int r = 0; r < rw; r++)
                acc[r] = VFMA(VLOAD(xp + r * xs), wv, acc[r]);
        }
    if (!e) {
        _Pragma("GCC unroll 16") for (int r = 0; r < rw; r++)
            VSTORE(yp + r * c, acc[r]);
        return;
    }
    BK_NAME(finish)(e, acc, yp, rw);
}

#define BK_CASE(n)                                                            \
    case n:                                                                   \
        if (nob > 2)                                                          \
            BK_NAME(ctile)(g, src, w, ws, b, y, ys, ow, n, 3, e);             \
        else if (nob > 1)                                                     \
            BK_NAME(ctile)(g, src, w, ws, b, y, ys, ow, n, 2, e);             \
        else                                                                  \
            BK_NAME(ctile)(g, src, w, ws, b, y, ys, ow, n, 1, e);             \
        break;

/* Pixels [a, z) of an output row y, in tiles of even size (a row of 14
** takes two of 7, not 12 and 2). */
static BK_TARGET void BK_NAME(crow)(const bk_geom *g, const bk_src *src,
                                    const float *w, int64_t ws,
                                    const float *b, float *y, int64_t ys,
                                    int nob, int64_t a, int64_t z,
                                    const bk_epi *e)
{
    const int64_t tiles = (z - a + BK_RW - 1) / BK_RW;
    const int64_t even = (z - a + tiles - 1) / tiles;

    for (int64_t ow = a; ow < z;) {
        int64_t n = z - ow < even ? z - ow : even;

        switch (n) {
            BK_CASES
        }
        ow += n;
    }
}
#undef BK_CASE

#define BK_CASE(n)                                                            \
    case n:                                                                   \
        BK_NAME(dtile)(g, src, w, b, y, ow, n, e);                            \
        break;

static BK_TARGET void BK_NAME(drow)(const bk_geom *g, const bk_src *src,
                                    const float *w, const float *b, float *y,
                                    int64_t a, int64_t z,
                                    const bk_epi *e)
{
    const int64_t tiles = (z - a + BK_DW_RW - 1) / BK_DW_RW;
    const int64_t even = (z - a + tiles - 1) / tiles;

    for (int64_t ow = a; ow < z;) {
        int64_t n = z - ow < even ? z - ow : even;

        switch (n) {
            BK_DW_CASES
        }
        ow += n;
    }
}
#undef BK_CASE

static BK_TARGET int BK_NAME(conv)(const bk_geom *g, const float *x,
                                   const float *w, const float *bias,
                                   float *y, const nn_epilogue *ne,
                                   int64_t u0, int64_t u1)
{
    bk_epi ep, *e = bk_epi_init(ne, &ep);
    const int64_t c = BK_LANES, plane = g->OH * g->OW * c;
    const int64_t nseg = (g->OW + BK_SEG - 1) / BK_SEG;
    const int64_t groups = (g->Mb + BK_NOB - 1) / BK_NOB;
    const int64_t ws = g->Cb * g->kh * g->kw * c * c;
    bk_pad pad;

    if (bk_pad_init(g, &pad) != 0)
        return -1;
    for (int64_t u = u0; u < u1; u++) {
        int64_t sg = u % nseg, r = u / nseg, oh = r % g->OH;
        int64_t q = r / g->OH, a = sg * BK_SEG;
        int64_t z = a + BK_SEG < g->OW ? a + BK_SEG : g->OW;

        if (g->depthwise) {
            int64_t b = q % g->Mb, n = q / g->Mb;
            bk_src src;

            bk_rows(g, &pad, x + (n * g->Cb + b) * g->H * g->W * c, 1, oh,
                    &src);
            BK_NAME(drow)(g, &src, w + b * g->kh * g->kw * c,
                          bias ? bias + b * c : NULL,
                          y + (n * g->Mb + b) * plane + oh * g->OW * c, a, z,
                          e);
            continue;
        }
        int64_t n = q / groups, ob = q % groups * BK_NOB;
        bk_src src;

        bk_rows(g, &pad, x + n * g->Cb * g->H * g->W * c, g->Cb, oh, &src);
        BK_NAME(crow)(g, &src, w + ob * ws, ws, bias ? bias + ob * c : NULL,
                      y + (n * g->Mb + ob) * plane + oh * g->OW * c, plane,
                      (int)(g->Mb - ob < BK_NOB ? g->Mb - ob : BK_NOB), a, z,
                      e);
    }
    bk_pad_free(&pad);
    return 0;
}

static BK_TARGET void BK_NAME(pool)(const bk_geom *g, const nn_window *w,
                                    int mode, int cip, const float *x,
                                    float *y, int64_t u0, int64_t u1)
{
    const int64_t c = BK_LANES;

    for (int64_t u = u0; u < u1; u++) {
        int64_t oh = u % w->OH, nb = u / w->OH;
        const float *xp = x + nb * w->H * w->W * c;
        float *yp = y + (nb * w->OH + oh) * w->OW * c;

        for (int64_t ow = 0; ow < w->OW; ow++) {
            V acc = mode == 0 ? VSET1(-INFINITY) : VZERO;
            int64_t h0, h1, w0, w1, div = 0;

            if (mode == 1) {
                nn_avg_window(w, cip, oh, ow, &h0, &h1, &w0, &w1, &div);
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++)
                        acc = VADD(acc, VLOAD(xp + (ih * w->W + iw) * c));
                acc = div > 0 && h0 < h1 && w0 < w1
                          ? VMUL(acc, VSET1((float)(1.0 / (double)div)))
                          : VZERO;
                VSTORE(yp + ow * c, acc);
                continue;
            }
            for (int64_t kh = 0; kh < w->kh; kh++) {
                int64_t ih = oh * w->sh - w->pt + kh * w->dh;

                if (ih < 0 || ih >= w->H)
                    continue;
                for (int64_t kw = 0; kw < w->kw; kw++) {
                    int64_t iw = ow * w->sw - w->pl + kw * w->dw;

                    if (iw >= 0 && iw < w->W)
                        acc = VMAX(acc, VLOAD(xp + (ih * w->W + iw) * c));
                }
            }
            VSTORE(yp + ow * c, acc);
        }
    }
    (void)g;
}

static BK_TARGET void BK_NAME(global_avg)(const bk_geom *g, const float *x,
                                          float *y, int64_t u0, int64_t u1)
{
    const int64_t c = BK_LANES, hw = g->H * g->W;

    for (int64_t u = u0; u < u1; u++) {
        const float *xp = x + u * hw * c;
        V acc = VZERO;

        for (int64_t i = 0; i < hw; i++)
            acc = VADD(acc, VLOAD(xp + i * c));
        VSTORE(y + u * c, VMUL(acc, VSET1((float)(1.0 / (double)hw))));
    }
}

static const bk_kernels BK_NAME(kernels) = {
    .isa = BK_ISA,
    .nob = BK_NOB,
    .conv = BK_NAME(conv),
    .pool = BK_NAME(pool),
    .global_avg = BK_NAME(global_avg),
};
