/* winograd.c - 3x3, stride-1 convolution of one image by Winograd's
** F(2x2, 3x3) (Lavin & Gray 2016): each 2x2 block of outputs ("tile") comes
** from a 4x4 input patch with 16 multiplies per channel pair instead of
** 36, as 16 GEMMs [M x C] x [C x tiles] between transformed weights U and
** transformed patches V, then the output transform.
**
** Tiles are taken in blocks of at most BLOCK_TILES (tile rows x tile
** columns, from the shape alone) so that scratch stays in cache; every
** output depends only on its image, so split and whole runs agree
** bitwise. The
** transforms use only 0, +-1 and 1/2, so the error stays within a few
** ulps of the direct sum's (torch's tolerance for Conv). Loops run over
** the tiles of a row so that they vectorize.
*/
#include "config.h"

/* GCC's -O2 vectorizes only loops that need no runtime alias check; the
** transform loops need the full cost model. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <cblas.h>
#include <string.h>

#include "ops/nn/epilogue.h"
#include "ops/nn/nn_priv.h"

/* Tiles per block. */
#define BLOCK_TILES 64
/* Row length of the transformed patches ([C][16][LD] per block): a
** constant stride between the 16 rows a tile writes lets the transforms
** vectorize, and one that is not a multiple of 1 KiB keeps a GEMM
** operand's rows (16 LD apart) out of each other's cache sets. */
#define LD (BLOCK_TILES + 4)
/* Stride between the 16 gradient sums [M x C] (not a power of two). */
#define ACC_STRIDE(g) ((g)->M * (g)->C + 16)

void nn_wino_plan(int64_t C, int64_t M, int64_t H, int64_t W, int64_t OH,
                  int64_t OW, int64_t pt, int64_t pl, nn_wino *g)
{
    memset(g, 0, sizeof *g);
    g->C = C;
    g->M = M;
    g->H = H;
    g->W = W;
    g->OH = OH;
    g->OW = OW;
    g->pt = pt;
    g->pl = pl;
    g->TH = (OH + 1) / 2;
    g->TW = (OW + 1) / 2;
    g->cols = g->TW < BLOCK_TILES ? g->TW : BLOCK_TILES;
    if (g->cols < 1)
        g->cols = 1;
    g->rows = BLOCK_TILES / g->cols;
    if (g->rows > g->TH)
        g->rows = g->TH > 0 ? g->TH : 1;
}

/* Padded input of a block per channel: 2 rows + 2 by 2 cols + 2. */
static int64_t pad_size(const nn_wino *g)
{
    return (2 * g->rows + 2) * (2 * g->cols + 2);
}

int64_t nn_wino_scratch(const nn_wino *g)
{
    return 16 * g->M * g->C + pad_size(g) + 16 * g->C * LD +
           16 * g->M * BLOCK_TILES + 2 * g->cols + 2;
}

int64_t nn_wino_grad_scratch(const nn_wino *g)
{
    return 16 * ACC_STRIDE(g) + pad_size(g) + 16 * (g->C + g->M) * LD;
}

/* Kernels the weight transform takes at a time. */
#define KERNEL_CHUNK NN_WINO_KERNEL_CHUNK

/* Row `which` of G applied to three rows of n values: G = [1 0 0;
** 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]. One output row per call, so that
** each loop vectorizes. */
static void g_row(int which, const float *restrict r0, const float *restrict r1,
                  const float *restrict r2, int64_t n, float *restrict u)
{
    switch (which) {
    case 0:
        for (int64_t x = 0; x < n; x++)
            u[x] = r0[x];
        break;
    case 1:
        for (int64_t x = 0; x < n; x++)
            u[x] = 0.5f * (r0[x] + r1[x] + r2[x]);
        break;
    case 2:
        for (int64_t x = 0; x < n; x++)
            u[x] = 0.5f * (r0[x] - r1[x] + r2[x]);
        break;
    default:
        for (int64_t x = 0; x < n; x++)
            u[x] = r2[x];
        break;
    }
}

void nn_wino_taps(const float *w, int transposed, int64_t M, int64_t C,
                  int64_t i0, int64_t n, float k[9][NN_WINO_KERNEL_CHUNK])
{
    for (int64_t x = 0; x < n; x++) {
        int64_t i = i0 + x, m = i / C, c = i % C;
        const float *a = transposed ? w + (c * M + m) * 9 : w + i * 9;

        for (int q = 0; q < 9; q++)
            k[q][x] = a[transposed ? 8 - q : q];
    }
}

void nn_wino_weights(const nn_wino *g, const float *w, int transposed,
                     float *scratch)
{
    /* U[k] is [M x C]: U[k][m][c], k = 4 i + j of G a G^T */
    int64_t MC = g->M * g->C;

    for (int64_t i0 = 0; i0 < MC; i0 += KERNEL_CHUNK) {
        int64_t n = MC - i0 < KERNEL_CHUNK ? MC - i0 : KERNEL_CHUNK;
        float k[9][KERNEL_CHUNK], t[12][KERNEL_CHUNK];

        nn_wino_taps(w, transposed, g->M, g->C, i0, n, k);
        /* G a: t[3 r + j] is row r of G times column j of a */
        for (int r = 0; r < 4; r++)
            for (int j = 0; j < 3; j++)
                g_row(r, k[j], k[3 + j], k[6 + j], n, t[3 * r + j]);
        /* (G a) G^T */
        for (int r = 0; r < 4; r++)
            for (int q = 0; q < 4; q++)
                g_row(q, t[3 * r], t[3 * r + 1], t[3 * r + 2], n,
                      scratch + (4 * r + q) * MC + i0);
    }
}

/* One row or column of B^T d: (a0 - a2, a1 + a2, a2 - a1, a1 - a3). */
#define BT(a0, a1, a2, a3, o0, o1, o2, o3) \
    do {                                   \
        o0 = (a0) - (a2);                  \
        o1 = (a1) + (a2);                  \
        o2 = (a2) - (a1);                  \
        o3 = (a1) - (a3);                  \
    } while (0)

/* B^T d B for n tiles of one row of 4x4 patches: rows i = 0..3 of the
** padded block split into even (e[i]) and odd (o[i]) columns, so patch t
** is e[i][t], o[i][t], e[i][t + 1], o[i][t + 1]; v[k * LD + t].
** Straight-line code with unit strides, so that the loop vectorizes. */
static void input_row(const float *restrict e0, const float *restrict o0,
                      const float *restrict e1, const float *restrict o1,
                      const float *restrict e2, const float *restrict o2,
                      const float *restrict e3, const float *restrict o3,
                      int64_t n, float *restrict v)
{
    const int64_t s = LD;

    for (int64_t t = 0; t < n; t++) {
        float d00, d01, d02, d03, d10, d11, d12, d13;
        float d20, d21, d22, d23, d30, d31, d32, d33;
        float *w = v + t;

        BT(e0[t], e1[t], e2[t], e3[t], d00, d10, d20, d30);
        BT(o0[t], o1[t], o2[t], o3[t], d01, d11, d21, d31);
        BT(e0[t + 1], e1[t + 1], e2[t + 1], e3[t + 1], d02, d12, d22, d32);
        BT(o0[t + 1], o1[t + 1], o2[t + 1], o3[t + 1], d03, d13, d23, d33);
        BT(d00, d01, d02, d03, w[0], w[s], w[2 * s], w[3 * s]);
        BT(d10, d11, d12, d13, w[4 * s], w[5 * s], w[6 * s], w[7 * s]);
        BT(d20, d21, d22, d23, w[8 * s], w[9 * s], w[10 * s], w[11 * s]);
        BT(d30, d31, d32, d33, w[12 * s], w[13 * s], w[14 * s], w[15 * s]);
    }
}

#undef BT

/* One row or column of A^T m: (a0 + a1 + a2, a1 - a2 - a3). */
#define AT(a0, a1, a2, a3, o0, o1) \
    do {                           \
        o0 = (a0) + (a1) + (a2);   \
        o1 = (a1) - (a2) - (a3);   \
    } while (0)

/* A^T m A of tile t of one row (m[k * stride + t]) into o0..o3. */
#define OUTPUT_TILE(m, stride, t, o0, o1, o2, o3)                          \
    do {                                                                   \
        float s00_, s01_, s02_, s03_, s10_, s11_, s12_, s13_;              \
        AT(m[0 * stride + t], m[4 * stride + t], m[8 * stride + t],        \
           m[12 * stride + t], s00_, s10_);                                \
        AT(m[1 * stride + t], m[5 * stride + t], m[9 * stride + t],        \
           m[13 * stride + t], s01_, s11_);                                \
        AT(m[2 * stride + t], m[6 * stride + t], m[10 * stride + t],       \
           m[14 * stride + t], s02_, s12_);                                \
        AT(m[3 * stride + t], m[7 * stride + t], m[11 * stride + t],       \
           m[15 * stride + t], s03_, s13_);                                \
        AT(s00_, s01_, s02_, s03_, o0, o1);                                \
        AT(s10_, s11_, s12_, s13_, o2, o3);                                \
    } while (0)

/* A^T m A (+ b when bias) of n tiles of one row into output rows y0 and
** y1 at columns 2t, 2t + 1: the bias is added to the finished output, as
** the direct path does. Two loops, so that each vectorizes. */
static void output_row(const float *restrict m, int64_t stride, int64_t n,
                       const float *bias, float *restrict y0,
                       float *restrict y1)
{
    if (bias) {
        float b = *bias;

        for (int64_t t = 0; t < n; t++) {
            float o0, o1, o2, o3;

            OUTPUT_TILE(m, stride, t, o0, o1, o2, o3);
            y0[2 * t] = o0 + b;
            y0[2 * t + 1] = o1 + b;
            y1[2 * t] = o2 + b;
            y1[2 * t + 1] = o3 + b;
        }
        return;
    }
    for (int64_t t = 0; t < n; t++) {
        float o0, o1, o2, o3;

        OUTPUT_TILE(m, stride, t, o0, o1, o2, o3);
        y0[2 * t] = o0;
        y0[2 * t + 1] = o1;
        y1[2 * t] = o2;
        y1[2 * t + 1] = o3;
    }
}

#undef OUTPUT_TILE
#undef AT

/* Even and odd elements of n pairs of x: e[k] = x[2k], o[k] = x[2k + 1]. */
static void split_pairs(const float *restrict x, int64_t n, float *restrict e,
                        float *restrict o)
{
    for (int64_t k = 0; k < n; k++) {
        e[k] = x[2 * k];
        o[k] = x[2 * k + 1];
    }
}

/* Pairs [k0, k1) of a padded row starting at input column iw0 of row xr
** (W columns), zero outside it. */
static void border_pairs(const float *xr, int64_t W, int64_t iw0, int64_t k0,
                         int64_t k1, float *e, float *o)
{
    for (int64_t k = k0; k < k1; k++) {
        int64_t ie = iw0 + 2 * k;

        e[k] = ie >= 0 && ie < W ? xr[ie] : 0.0f;
        o[k] = ie + 1 >= 0 && ie + 1 < W ? xr[ie + 1] : 0.0f;
    }
}

/* The padded input of block (th0, tw0) of channel plane x: nrows rows
** from input row 2 th0 - pt and 2 nc + 2 columns from input column
** 2 tw0 - pl, zero outside the input, each row stored as its even then
** its odd columns (nc + 1 each). */
static void pad_block(const nn_wino *g, const float *x, int64_t th0,
                      int64_t tw0, int64_t nrows, int64_t nc, float *pp)
{
    int64_t h = nc + 1, iw0 = 2 * tw0 - g->pl;
    /* pairs [k0, k1) have both columns inside the input */
    int64_t k0 = iw0 < 0 ? (-iw0 + 1) / 2 : 0;
    int64_t k1 = g->W - iw0 < 2 ? 0 : (g->W - iw0) / 2;

    k1 = k1 > h ? h : k1;
    k0 = k0 > k1 ? k1 : k0;
    for (int64_t r = 0; r < nrows; r++) {
        int64_t ih = 2 * th0 - g->pt + r;
        float *e = pp + r * 2 * h, *o = e + h;
        const float *xr;

        if (ih < 0 || ih >= g->H) {
            memset(e, 0, sizeof *e * (size_t)(2 * h));
            continue;
        }
        xr = x + ih * g->W;
        if (k1 > k0)
            split_pairs(xr + iw0 + 2 * k0, k1 - k0, e + k0, o + k0);
        /* the pairs at the borders, one column at a time */
        border_pairs(xr, g->W, iw0, 0, k0, e, o);
        border_pairs(xr, g->W, iw0, k1, h, e, o);
    }
}

/* B^T d B of the 4x4 patches of block (th0, tw0) (nr x nc tiles) of
** every channel of x into V ([C][16][LD]); pad is scratch. */
static void transform_block(const nn_wino *g, const float *x, int64_t th0,
                            int64_t tw0, int64_t nr, int64_t nc, float *pad,
                            float *V)
{
    int64_t pw = 2 * nc + 2, h = nc + 1;

    for (int64_t c = 0; c < g->C; c++) {
        pad_block(g, x + c * g->H * g->W, th0, tw0, 2 * nr + 2, nc, pad);
        for (int64_t r = 0; r < nr; r++) {
            const float *r0 = pad + 2 * r * pw, *r1 = r0 + pw;
            const float *r2 = r1 + pw, *r3 = r2 + pw;

            input_row(r0, r0 + h, r1, r1 + h, r2, r2 + h, r3, r3 + h, nc,
                      V + c * 16 * LD + r * nc);
        }
    }
}

int64_t nn_wino_blocks(const nn_wino *g)
{
    return ((g->TH + g->rows - 1) / g->rows) *
           ((g->TW + g->cols - 1) / g->cols);
}

/* One block's outputs of channels [m0, m1) (each output row y0 and, when
** it exists, y1), then the epilogue over what the block wrote. */
static void block_out(const nn_wino *g, const float *Mx, int64_t th0,
                      int64_t tw0, int64_t nr, int64_t nc, int64_t m0,
                      int64_t m1, const float *bias, float *y, float *junk,
                      const struct nn_epilogue *epi)
{
    int64_t nt = nr * nc, mm = m1 - m0;
    /* tiles of the block whose two output columns both exist */
    int64_t full = g->OW / 2 - tw0;
    int64_t w = 2 * nc < g->OW - 2 * tw0 ? 2 * nc : g->OW - 2 * tw0;

    full = full < 0 ? 0 : full > nc ? nc : full;
    for (int64_t m = m0; m < m1; m++)
        for (int64_t r = 0; r < nr; r++) {
            int64_t oh = 2 * (th0 + r);
            const float *mt = Mx + (m - m0) * nt + r * nc;
            float *y0 = y + (m * g->OH + oh) * g->OW + 2 * tw0;
            /* a last odd output row goes to junk */
            float *y1 = oh + 1 < g->OH ? y0 + g->OW : junk;
            const float *b = bias ? bias + m : NULL;

            output_row(mt, mm * nt, full, b, y0, y1);
            if (full < nc) {
                /* a last odd output column */
                float t0[2], t1[2];

                output_row(mt + full, mm * nt, 1, b, t0, t1);
                y0[2 * full] = t0[0];
                if (oh + 1 < g->OH)
                    y1[2 * full] = t1[0];
            }
            if (epi) {
                nn_epilogue_apply(epi, y0, w);
                if (oh + 1 < g->OH)
                    nn_epilogue_apply(epi, y0 + g->OW, w);
            }
        }
}

void nn_wino_image_part(const nn_wino *g, const float *x, const float *bias,
                        float *y, float *scratch, int64_t b0, int64_t b1,
                        int64_t m0, int64_t m1,
                        const struct nn_epilogue *epi)
{
    const float *U = scratch;
    float *pad = scratch + 16 * g->M * g->C;
    float *V = pad + pad_size(g);
    float *Mx = V + 16 * g->C * LD;
    float *junk = Mx + 16 * g->M * BLOCK_TILES;
    int64_t nbc = (g->TW + g->cols - 1) / g->cols, mm = m1 - m0;

    for (int64_t b = b0; b < b1; b++) {
        int64_t th0 = b / nbc * g->rows, tw0 = b % nbc * g->cols;
        int64_t nr = g->TH - th0 < g->rows ? g->TH - th0 : g->rows;
        int64_t nc = g->TW - tw0 < g->cols ? g->TW - tw0 : g->cols;
        int64_t nt = nr * nc;

        transform_block(g, x, th0, tw0, nr, nc, pad, V);
        for (int k = 0; k < 16; k++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mm,
                        (int)nt, (int)g->C, 1.0f,
                        U + k * g->M * g->C + m0 * g->C, (int)g->C,
                        V + k * LD, 16 * LD, 0.0f, Mx + k * mm * nt,
                        (int)nt);
        block_out(g, Mx, th0, tw0, nr, nc, m0, m1, bias, y, junk, epi);
    }
}

void nn_wino_image(const nn_wino *g, const float *x, const float *bias,
                   float *y, float *scratch)
{
    nn_wino_image_part(g, x, bias, y, scratch, 0, nn_wino_blocks(g), 0,
                       g->M, NULL);
}

/* ---- the weight gradient: F(3x3, 2x2) ---------------------------------------
** dW[m][c] (3x3) sums, over the 2x2 tiles of dY, the correlation of the
** tile's 4x4 input patch with the tile: A^T [(G' D G'^T) . (B^T X B)] A
** with the input transform above (F(2x2, 3x3)'s B^T) and, to match its
** last row's sign, G' = [1 0; 1/2 1/2; 1/2 -1/2; 0 -1], A^T = [1 1 1 0;
** 0 1 -1 0; 0 1 1 1]. The 16 products summed over tiles are GEMMs with
** the tiles as the inner dimension, accumulated over the images of a call
** sequence and turned into dW by nn_wino_grad_finish. */

/* G' D G'^T of n 2x2 tiles of dY rows (even/odd columns e0, o0 and e1,
** o1): v[k * LD + t]. */
static void grad_row(const float *restrict e0, const float *restrict o0,
                     const float *restrict e1, const float *restrict o1,
                     int64_t n, float *restrict v)
{
    const int64_t s = LD;

    for (int64_t t = 0; t < n; t++) {
        float a = e0[t], b = o0[t], c = e1[t], d = o1[t];
        /* G' D: the rows of the 4x2 */
        float r00 = a, r01 = b;
        float r10 = 0.5f * (a + c), r11 = 0.5f * (b + d);
        float r20 = 0.5f * (a - c), r21 = 0.5f * (b - d);
        float r30 = -c, r31 = -d;
        float *w = v + t;

        w[0] = r00;
        w[s] = 0.5f * (r00 + r01);
        w[2 * s] = 0.5f * (r00 - r01);
        w[3 * s] = -r01;
        w[4 * s] = r10;
        w[5 * s] = 0.5f * (r10 + r11);
        w[6 * s] = 0.5f * (r10 - r11);
        w[7 * s] = -r11;
        w[8 * s] = r20;
        w[9 * s] = 0.5f * (r20 + r21);
        w[10 * s] = 0.5f * (r20 - r21);
        w[11 * s] = -r21;
        w[12 * s] = r30;
        w[13 * s] = 0.5f * (r30 + r31);
        w[14 * s] = 0.5f * (r30 - r31);
        w[15 * s] = -r31;
    }
}

void nn_wino_grad_begin(const nn_wino *g, float *scratch)
{
    memset(scratch, 0, sizeof *scratch * (size_t)(16 * ACC_STRIDE(g)));
}

void nn_wino_grad_image(const nn_wino *g, const float *x, const float *dy,
                        float *scratch)
{
    float *pad = scratch + 16 * ACC_STRIDE(g);
    float *V = pad + pad_size(g);
    float *D = V + 16 * g->C * LD;
    nn_wino gd = *g;

    /* dY's tiles, read as a plane of its own without padding */
    gd.H = g->OH;
    gd.W = g->OW;
    gd.pt = 0;
    gd.pl = 0;
    for (int64_t th0 = 0; th0 < g->TH; th0 += g->rows)
        for (int64_t tw0 = 0; tw0 < g->TW; tw0 += g->cols) {
            int64_t nr = g->TH - th0 < g->rows ? g->TH - th0 : g->rows;
            int64_t nc = g->TW - tw0 < g->cols ? g->TW - tw0 : g->cols;
            int64_t nt = nr * nc, pw = 2 * nc + 2, h = nc + 1;

            transform_block(g, x, th0, tw0, nr, nc, pad, V);
            for (int64_t m = 0; m < g->M; m++) {
                pad_block(&gd, dy + m * g->OH * g->OW, th0, tw0, 2 * nr, nc,
                          pad);
                for (int64_t r = 0; r < nr; r++) {
                    const float *r0 = pad + 2 * r * pw, *r1 = r0 + pw;

                    grad_row(r0, r0 + h, r1, r1 + h, nc,
                             D + m * 16 * LD + r * nc);
                }
            }
            for (int k = 0; k < 16; k++)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans,
                            (int)g->M, (int)g->C, (int)nt, 1.0f,
                            D + k * LD, 16 * LD, V + k * LD, 16 * LD, 1.0f,
                            scratch + k * ACC_STRIDE(g), (int)g->C);
        }
}

void nn_wino_grad_finish(const nn_wino *g, const float *scratch, float *dw)
{
    int64_t MC = g->M * g->C, S = ACC_STRIDE(g);

    for (int64_t i = 0; i < MC; i++) {
        const float *a = scratch + i;
        float t[3][4], *y = dw + i * 9;

        /* A^T acc: rows of the 3x4 */
        for (int q = 0; q < 4; q++) {
            float a0 = a[q * S], a1 = a[(4 + q) * S];
            float a2 = a[(8 + q) * S], a3 = a[(12 + q) * S];

            t[0][q] = a0 + a1 + a2;
            t[1][q] = a1 - a2;
            t[2][q] = a1 + a2 + a3;
        }
        for (int p = 0; p < 3; p++) {
            y[3 * p] = t[p][0] + t[p][1] + t[p][2];
            y[3 * p + 1] = t[p][1] - t[p][2];
            y[3 * p + 2] = t[p][1] + t[p][2] + t[p][3];
        }
    }
}
