/* winograd4.c - 3x3, stride-1 convolution of one image by Winograd's
** F(4x4, 3x3) (Lavin & Gray 2016, interpolation points 0, +-1, +-2 and
** infinity): each 4x4 block of outputs ("tile") comes from a 6x6 input
** patch with 36 multiplies per channel pair instead of 144 (F(2x2, 3x3):
** 64 per 16 outputs), as 36 GEMMs [M x C] x [C x tiles] between the
** transformed weights U = G g G^T and patches V = B^T d B, then the
** output transform A^T m A. Its weight gradient is F(3x3, 4x4), the same
** algorithm transposed: dW = G^T [sum over tiles (A e A^T) . (B^T d B)] G
** with e a 4x4 tile of dY, so the 36 products summed over tiles are GEMMs
** with the tiles as the inner dimension.
**
** Accuracy: the transforms hold 4, 5 and 8 and the weight transform
** 1/6, 1/12 and 1/24, so rounding grows over the direct sum's. Against a
** convolution summed in double, the largest error over the output's
** largest magnitude measured 4-6e-6 for the forward and ConvGradInput and
** 2-3e-6 for the weight gradient on random data with 32-64 channels
** (tests/check_winograd4.c bounds it at 2e-5), about 10x F(2x2)'s
** (3.5e-6 against 3.6e-7 on ResNet's 16x16, 64-channel shape with
** nonnegative inputs). Points +-1/2 instead of +-2 gave the same error
** in a float32 simulation (a reciprocal scaling of the same transforms).
** That is why a training model's forward keeps F(2x2)
** (winograd4_fits.c).
**
** Tiles are taken in blocks of at most BLOCK_TILES (from the shape alone);
** every output depends only on its image, so split and whole runs agree
** bitwise. Loops run over the tiles of a row so that they vectorize.
*/
#include "config.h"

/* GCC's -O2 vectorizes only loops that need no runtime alias check; the
** transform loops need the full cost model. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <cblas.h>
#include <string.h>

/* The transforms' fixed loops over a patch's rows and columns unrolled
** before vectorization, so that the loops over tiles vectorize. */
#if defined(__GNUC__) && !defined(__clang__)
#define UNROLL _Pragma("GCC unroll 6")
#else
#define UNROLL
#endif

#include "ops/nn/winograd4.h"
#include "ops/util/sums.h"

/* Tiles per block (16 outputs each). */
#define BLOCK_TILES 64
/* Row length of the transformed patches ([C][36][LD] per block): not a
** multiple of 1 KiB, so that a GEMM operand's rows stay out of each
** other's cache sets. */
#define LD (BLOCK_TILES + 4)
/* Stride between the 36 products [mm x nt] of a block: not a power of
** two, so that the output transform's 36 reads per tile do not share one
** cache set (with 64 tiles and 64 channels they would be 16 KiB apart). */
#define MX_STRIDE(mm, nt) ((mm) * (nt) + 16)
/* Stride between the 36 gradient sums [M x C]. */
#define ACC_STRIDE(g) ((g)->M * (g)->C + 16)

void nn_wino4_plan(int64_t C, int64_t M, int64_t H, int64_t W, int64_t OH,
                   int64_t OW, int64_t pt, int64_t pl, nn_wino4 *g)
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
    g->TH = (OH + 3) / 4;
    g->TW = (OW + 3) / 4;
    g->cols = g->TW < BLOCK_TILES ? g->TW : BLOCK_TILES;
    if (g->cols < 1)
        g->cols = 1;
    g->rows = BLOCK_TILES / g->cols;
    if (g->rows > g->TH)
        g->rows = g->TH > 0 ? g->TH : 1;
}

int64_t nn_wino4_blocks(const nn_wino4 *g)
{
    return ((g->TH + g->rows - 1) / g->rows) *
           ((g->TW + g->cols - 1) / g->cols);
}

/* Padded input of a block per channel: 4 rows + 2 of 4 phases of
** cols + 1 values. */
static int64_t pad_size(const nn_wino4 *g)
{
    return (4 * g->rows + 2) * 4 * (g->cols + 1);
}

int64_t nn_wino4_scratch(const nn_wino4 *g)
{
    return 36 * g->M * g->C + pad_size(g) + 36 * g->C * LD +
           36 * MX_STRIDE(g->M, BLOCK_TILES) + 4 * (4 * g->cols + 4);
}

int64_t nn_wino4_grad_scratch(const nn_wino4 *g)
{
    return 36 * ACC_STRIDE(g) + pad_size(g) + 36 * (g->C + g->M) * LD;
}

/* ---- weights: U = G g G^T -------------------------------------------------
** G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6;
** 1/24 -1/12 1/6; 0 0 1]. */

/* Kernels the weight transform takes at a time. */
#define KERNEL_CHUNK NN_WINO_KERNEL_CHUNK

/* Row `which` of G applied to three rows of n values; one output row per
** call, so that each loop vectorizes. */
static void g_row(int which, const float *restrict r0,
                  const float *restrict r1, const float *restrict r2,
                  int64_t n, float *restrict u)
{
    switch (which) {
    case 0:
        for (int64_t x = 0; x < n; x++)
            u[x] = 0.25f * r0[x];
        break;
    case 1:
        for (int64_t x = 0; x < n; x++)
            u[x] = (-1.0f / 6.0f) * (r0[x] + r1[x] + r2[x]);
        break;
    case 2:
        for (int64_t x = 0; x < n; x++)
            u[x] = (-1.0f / 6.0f) * (r0[x] - r1[x] + r2[x]);
        break;
    case 3:
        for (int64_t x = 0; x < n; x++)
            u[x] = (1.0f / 24.0f) * r0[x] + (1.0f / 12.0f) * r1[x] +
                   (1.0f / 6.0f) * r2[x];
        break;
    case 4:
        for (int64_t x = 0; x < n; x++)
            u[x] = (1.0f / 24.0f) * r0[x] - (1.0f / 12.0f) * r1[x] +
                   (1.0f / 6.0f) * r2[x];
        break;
    default:
        for (int64_t x = 0; x < n; x++)
            u[x] = r2[x];
        break;
    }
}

void nn_wino4_weights(const nn_wino4 *g, const float *w, int transposed,
                      float *scratch)
{
    /* U[k] is [M x C]: U[k][m][c], k = 6 i + j of G a G^T */
    int64_t MC = g->M * g->C;

    for (int64_t i0 = 0; i0 < MC; i0 += KERNEL_CHUNK) {
        int64_t n = MC - i0 < KERNEL_CHUNK ? MC - i0 : KERNEL_CHUNK;
        float k[9][KERNEL_CHUNK], t[18][KERNEL_CHUNK];

        nn_wino_taps(w, transposed, g->M, g->C, i0, n, k);
        /* G a: t[3 r + j] is row r of G times column j of a */
        for (int r = 0; r < 6; r++)
            for (int j = 0; j < 3; j++)
                g_row(r, k[j], k[3 + j], k[6 + j], n, t[3 * r + j]);
        /* (G a) G^T */
        for (int r = 0; r < 6; r++)
            for (int q = 0; q < 6; q++)
                g_row(q, t[3 * r], t[3 * r + 1], t[3 * r + 2], n,
                      scratch + (6 * r + q) * MC + i0);
    }
}

/* ---- the padded input ------------------------------------------------------
** A padded row of a block is stored as 4 phases of h = nc + 1 values:
** phase k holds columns k, 4 + k, 8 + k, ... so that patch t's columns
** 0..5 are ph0[t], ph1[t], ph2[t], ph3[t], ph0[t + 1], ph1[t + 1]. */

/* Columns [4 t0, 4 t1) of a padded row from input column iw0 of xr (W
** columns), zero outside it. */
static void border_phases(const float *xr, int64_t W, int64_t iw0,
                          int64_t t0, int64_t t1, int64_t h, float *ph)
{
    for (int64_t t = t0; t < t1; t++)
        for (int k = 0; k < 4; k++) {
            int64_t iw = iw0 + 4 * t + k;

            ph[k * h + t] = iw >= 0 && iw < W ? xr[iw] : 0.0f;
        }
}

static void split_phases(const float *restrict x, int64_t n,
                         float *restrict p0, float *restrict p1,
                         float *restrict p2, float *restrict p3)
{
    for (int64_t t = 0; t < n; t++) {
        p0[t] = x[4 * t];
        p1[t] = x[4 * t + 1];
        p2[t] = x[4 * t + 2];
        p3[t] = x[4 * t + 3];
    }
}

/* nrows padded rows of plane x (H x W, padding pt, pl) from tile
** (th0, tw0), nc tiles wide; db8: when not NULL, the sum of every input
** value read is added to it (each value of the plane is read once when
** the blocks do not overlap, as dY's do). */
static void pad_block(const nn_wino4 *g, const float *x, int64_t th0,
                      int64_t tw0, int64_t nrows, int64_t nc, float *pp,
                      double *db8)
{
    int64_t h = nc + 1, iw0 = 4 * tw0 - g->pl;
    /* phases of tiles [t0, t1) have all 4 columns inside the input */
    int64_t t0 = iw0 < 0 ? (-iw0 + 3) / 4 : 0;
    int64_t t1 = g->W - iw0 < 4 ? 0 : (g->W - iw0) / 4;

    t1 = t1 > h ? h : t1;
    t0 = t0 > t1 ? t1 : t0;
    for (int64_t r = 0; r < nrows; r++) {
        int64_t ih = 4 * th0 - g->pt + r;
        float *ph = pp + r * 4 * h;
        const float *xr;

        if (ih < 0 || ih >= g->H) {
            memset(ph, 0, sizeof *ph * (size_t)(4 * h));
            continue;
        }
        xr = x + ih * g->W;
        if (t1 > t0)
            split_phases(xr + iw0 + 4 * t0, t1 - t0, ph + t0, ph + h + t0,
                         ph + 2 * h + t0, ph + 3 * h + t0);
        border_phases(xr, g->W, iw0, 0, t0, h, ph);
        border_phases(xr, g->W, iw0, t1, h, h, ph);
        if (db8) {
            int64_t a = iw0 < 0 ? 0 : iw0, b = iw0 + 4 * nc;

            b = b > g->W ? g->W : b;
            if (b > a)
                opu_sum8_add(db8, xr + a, b - a);
        }
    }
}

/* ---- input transform: V = B^T d B ------------------------------------------
** B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0;
** 0 2 -1 -2 1 0; 0 4 0 -5 0 1]. */
#define BT6(a0, a1, a2, a3, a4, a5, o)              \
    do {                                            \
        o[0] = 4.0f * (a0) - 5.0f * (a2) + (a4);    \
        o[1] = (a3) + (a4) - 4.0f * ((a1) + (a2));  \
        o[2] = (a4) - (a3) + 4.0f * ((a1) - (a2));  \
        o[3] = (a4) - (a2) + 2.0f * ((a3) - (a1));  \
        o[4] = (a4) - (a2) - 2.0f * ((a3) - (a1));  \
        o[5] = 4.0f * (a1) - 5.0f * (a3) + (a5);    \
    } while (0)

/* B^T d B of n tiles of one tile row: r is the first of the 6 padded
** rows (4 h apart, each 4 phases h apart); v[k * LD + t]. */
static void input_row(const float *restrict r, int64_t h, int64_t n,
                      float *restrict v)
{
    for (int64_t t = 0; t < n; t++) {
        float d[6][6], c[6];

        /* columns of B^T d */
        UNROLL
        for (int j = 0; j < 6; j++) {
            int64_t o = (j & 3) * h + t + (j >> 2);

            BT6(r[o], r[4 * h + o], r[8 * h + o], r[12 * h + o],
                r[16 * h + o], r[20 * h + o], c);
            UNROLL
            for (int i = 0; i < 6; i++)
                d[i][j] = c[i];
        }
        /* rows of (B^T d) B */
        UNROLL
        for (int i = 0; i < 6; i++) {
            BT6(d[i][0], d[i][1], d[i][2], d[i][3], d[i][4], d[i][5], c);
            UNROLL
            for (int j = 0; j < 6; j++)
                v[(6 * i + j) * LD + t] = c[j];
        }
    }
}

/* B^T d B of the 6x6 patches of block (th0, tw0) (nr x nc tiles) of
** every channel of x into V ([C][36][LD]); pad is scratch. */
static void transform_block(const nn_wino4 *g, const float *x, int64_t th0,
                            int64_t tw0, int64_t nr, int64_t nc, float *pad,
                            float *V)
{
    int64_t h = nc + 1;

    for (int64_t c = 0; c < g->C; c++) {
        pad_block(g, x + c * g->H * g->W, th0, tw0, 4 * nr + 2, nc, pad,
                  NULL);
        for (int64_t r = 0; r < nr; r++)
            input_row(pad + 4 * r * 4 * h, h, nc, V + c * 36 * LD + r * nc);
    }
}

/* ---- output transform: A^T m A ---------------------------------------------
** A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]. */
#define AT6(a0, a1, a2, a3, a4, a5, o)                  \
    do {                                                \
        float p1_ = (a1) + (a2), m1_ = (a1) - (a2);     \
        float p3_ = (a3) + (a4), m3_ = (a3) - (a4);     \
        o[0] = (a0) + p1_ + p3_;                        \
        o[1] = m1_ + 2.0f * m3_;                        \
        o[2] = p1_ + 4.0f * p3_;                        \
        o[3] = m1_ + 8.0f * m3_ + (a5);                 \
    } while (0)

/* A^T m A (+ b) of n tiles of one tile row (m[k * stride + t]) into output
** rows y[0..3] at columns 4t..4t + 3. */
static void output_row(const float *restrict m, int64_t stride, int64_t n,
                       float b, float *restrict y0, float *restrict y1,
                       float *restrict y2, float *restrict y3)
{
    for (int64_t t = 0; t < n; t++) {
        float s[4][6], o[4];

        UNROLL
        for (int j = 0; j < 6; j++) {
            AT6(m[j * stride + t], m[(6 + j) * stride + t],
                m[(12 + j) * stride + t], m[(18 + j) * stride + t],
                m[(24 + j) * stride + t], m[(30 + j) * stride + t], o);
            UNROLL
            for (int i = 0; i < 4; i++)
                s[i][j] = o[i];
        }
        AT6(s[0][0], s[0][1], s[0][2], s[0][3], s[0][4], s[0][5], o);
        UNROLL
        for (int j = 0; j < 4; j++)
            y0[4 * t + j] = o[j] + b;
        AT6(s[1][0], s[1][1], s[1][2], s[1][3], s[1][4], s[1][5], o);
        UNROLL
        for (int j = 0; j < 4; j++)
            y1[4 * t + j] = o[j] + b;
        AT6(s[2][0], s[2][1], s[2][2], s[2][3], s[2][4], s[2][5], o);
        UNROLL
        for (int j = 0; j < 4; j++)
            y2[4 * t + j] = o[j] + b;
        AT6(s[3][0], s[3][1], s[3][2], s[3][3], s[3][4], s[3][5], o);
        UNROLL
        for (int j = 0; j < 4; j++)
            y3[4 * t + j] = o[j] + b;
    }
}

/* One block's outputs of channels [m0, m1), then the epilogue over what
** the block wrote. Rows past OH go to junk; a last partial tile column is
** written through t. The bias is added to the finished output, as the
** direct path does; without one, -0.0f is, which leaves every value's
** bits alone. */
static void block_out(const nn_wino4 *g, const float *Mx, int64_t th0,
                      int64_t tw0, int64_t nr, int64_t nc, int64_t m0,
                      int64_t m1, const float *bias, float *y, float *junk,
                      const nn_epilogue *epi)
{
    int64_t nt = nr * nc, mm = m1 - m0, ow0 = 4 * tw0;
    int64_t stride = MX_STRIDE(mm, nt);
    int64_t full = g->OW / 4 - tw0;
    int64_t w = 4 * nc < g->OW - ow0 ? 4 * nc : g->OW - ow0;

    full = full < 0 ? 0 : full > nc ? nc : full;
    for (int64_t m = m0; m < m1; m++)
        for (int64_t r = 0; r < nr; r++) {
            int64_t oh = 4 * (th0 + r);
            const float *mt = Mx + (m - m0) * nt + r * nc;
            float *yr[4], t[4][4];
            float b = bias ? bias[m] : -0.0f;

            for (int i = 0; i < 4; i++)
                yr[i] = oh + i < g->OH
                            ? y + (m * g->OH + oh + i) * g->OW + ow0
                            : junk + i * (4 * g->cols + 4);
            output_row(mt, stride, full, b, yr[0], yr[1], yr[2], yr[3]);
            if (full < nc) {
                output_row(mt + full, stride, 1, b, t[0], t[1], t[2], t[3]);
                for (int i = 0; i < 4; i++)
                    for (int64_t j = 0; j < w - 4 * full; j++)
                        yr[i][4 * full + j] = t[i][j];
            }
            for (int i = 0; epi && i < 4 && oh + i < g->OH; i++)
                nn_epilogue_apply(epi, yr[i], w);
        }
}

void nn_wino4_image_part(const nn_wino4 *g, const float *x,
                         const float *bias, float *y, float *scratch,
                         int64_t b0, int64_t b1, int64_t m0, int64_t m1,
                         const nn_epilogue *epi)
{
    const float *U = scratch;
    float *pad = scratch + 36 * g->M * g->C;
    float *V = pad + pad_size(g);
    float *Mx = V + 36 * g->C * LD;
    float *junk = Mx + 36 * MX_STRIDE(g->M, BLOCK_TILES);
    int64_t nbc = (g->TW + g->cols - 1) / g->cols, mm = m1 - m0;

    for (int64_t b = b0; b < b1; b++) {
        int64_t th0 = b / nbc * g->rows, tw0 = b % nbc * g->cols;
        int64_t nr = g->TH - th0 < g->rows ? g->TH - th0 : g->rows;
        int64_t nc = g->TW - tw0 < g->cols ? g->TW - tw0 : g->cols;
        int64_t nt = nr * nc;

        transform_block(g, x, th0, tw0, nr, nc, pad, V);
        for (int k = 0; k < 36; k++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mm,
                        (int)nt, (int)g->C, 1.0f,
                        U + k * g->M * g->C + m0 * g->C, (int)g->C,
                        V + k * LD, 36 * LD, 0.0f, Mx + k * MX_STRIDE(mm, nt),
                        (int)nt);
        block_out(g, Mx, th0, tw0, nr, nc, m0, m1, bias, y, junk, epi);
    }
}

/* ---- the weight gradient: F(3x3, 4x4) -------------------------------------
** A e A^T of a 4x4 tile e of dY, A = (A^T)^T: rows [1 0 0 0], [1 1 1 1],
** [1 -1 1 -1], [1 2 4 8], [1 -2 4 -8], [0 0 0 1]. */
#define A4(a0, a1, a2, a3, o)                       \
    do {                                            \
        float pe_ = (a0) + (a2), po_ = (a1) + (a3); \
        float qe_ = (a0) + 4.0f * (a2);             \
        float qo_ = 2.0f * (a1) + 8.0f * (a3);      \
        o[0] = (a0);                                \
        o[1] = pe_ + po_;                           \
        o[2] = pe_ - po_;                           \
        o[3] = qe_ + qo_;                           \
        o[4] = qe_ - qo_;                           \
        o[5] = (a3);                                \
    } while (0)

/* A e A^T of n tiles of one tile row of dY: r is the first of 4 rows
** (4 h apart, 4 phases h apart each); v[k * LD + t]. */
static void grad_row(const float *restrict r, int64_t h, int64_t n,
                     float *restrict v)
{
    for (int64_t t = 0; t < n; t++) {
        float d[6][4], c[6];

        UNROLL
        for (int j = 0; j < 4; j++) {
            int64_t o = j * h + t;

            A4(r[o], r[4 * h + o], r[8 * h + o], r[12 * h + o], c);
            UNROLL
            for (int i = 0; i < 6; i++)
                d[i][j] = c[i];
        }
        UNROLL
        for (int i = 0; i < 6; i++) {
            A4(d[i][0], d[i][1], d[i][2], d[i][3], c);
            UNROLL
            for (int j = 0; j < 6; j++)
                v[(6 * i + j) * LD + t] = c[j];
        }
    }
}

void nn_wino4_grad_begin(const nn_wino4 *g, float *scratch)
{
    memset(scratch, 0, sizeof *scratch * (size_t)(36 * ACC_STRIDE(g)));
}

void nn_wino4_grad_image(const nn_wino4 *g, const float *x, const float *dy,
                         float *scratch, double *db8)
{
    float *pad = scratch + 36 * ACC_STRIDE(g);
    float *V = pad + pad_size(g);
    float *D = V + 36 * g->C * LD;
    nn_wino4 gd = *g;

    /* dY's tiles, read as a plane of its own without padding: the blocks
    ** cover it once, so its sums for dB come with the reads */
    gd.H = g->OH;
    gd.W = g->OW;
    gd.pt = 0;
    gd.pl = 0;
    for (int64_t th0 = 0; th0 < g->TH; th0 += g->rows)
        for (int64_t tw0 = 0; tw0 < g->TW; tw0 += g->cols) {
            int64_t nr = g->TH - th0 < g->rows ? g->TH - th0 : g->rows;
            int64_t nc = g->TW - tw0 < g->cols ? g->TW - tw0 : g->cols;
            int64_t nt = nr * nc, h = nc + 1;

            transform_block(g, x, th0, tw0, nr, nc, pad, V);
            for (int64_t m = 0; m < g->M; m++) {
                pad_block(&gd, dy + m * g->OH * g->OW, th0, tw0, 4 * nr, nc,
                          pad, db8 ? db8 + 8 * m : NULL);
                for (int64_t r = 0; r < nr; r++)
                    grad_row(pad + 4 * r * 4 * h, h, nc,
                             D + m * 36 * LD + r * nc);
            }
            for (int k = 0; k < 36; k++)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans,
                            (int)g->M, (int)g->C, (int)nt, 1.0f,
                            D + k * LD, 36 * LD, V + k * LD, 36 * LD, 1.0f,
                            scratch + k * ACC_STRIDE(g), (int)g->C);
        }
}

/* Row `which` of G^T applied to six rows of n values (one output row per
** call, so that each loop vectorizes): G^T = [1/4 -1/6 -1/6 1/24 1/24 0;
** 0 -1/6 1/6 1/12 -1/12 0; 0 -1/6 -1/6 1/6 1/6 1]. */
static void gt_row(int which, const float *const *r, int64_t n,
                   float *restrict o)
{
    const float *restrict a0 = r[0], *restrict a1 = r[1];
    const float *restrict a2 = r[2], *restrict a3 = r[3];
    const float *restrict a4 = r[4], *restrict a5 = r[5];

    switch (which) {
    case 0:
        for (int64_t x = 0; x < n; x++)
            o[x] = 0.25f * a0[x] - (1.0f / 6.0f) * (a1[x] + a2[x]) +
                   (1.0f / 24.0f) * (a3[x] + a4[x]);
        break;
    case 1:
        for (int64_t x = 0; x < n; x++)
            o[x] = (1.0f / 6.0f) * (a2[x] - a1[x]) +
                   (1.0f / 12.0f) * (a3[x] - a4[x]);
        break;
    default:
        for (int64_t x = 0; x < n; x++)
            o[x] = (1.0f / 6.0f) * (a3[x] + a4[x] - a1[x] - a2[x]) + a5[x];
        break;
    }
}

void nn_wino4_grad_finish(const nn_wino4 *g, const float *scratch, float *dw)
{
    int64_t MC = g->M * g->C, S = ACC_STRIDE(g);

    /* G^T acc G for KERNEL_CHUNK kernels at a time: t = G^T acc (3x6
    ** rows of n), then t G */
    for (int64_t i0 = 0; i0 < MC; i0 += KERNEL_CHUNK) {
        int64_t n = MC - i0 < KERNEL_CHUNK ? MC - i0 : KERNEL_CHUNK;
        float t[3][6][KERNEL_CHUNK], o[3][3][KERNEL_CHUNK];
        const float *r[6];

        for (int q = 0; q < 6; q++) {
            for (int k = 0; k < 6; k++)
                r[k] = scratch + (6 * k + q) * S + i0;
            for (int p = 0; p < 3; p++)
                gt_row(p, r, n, t[p][q]);
        }
        for (int p = 0; p < 3; p++) {
            for (int k = 0; k < 6; k++)
                r[k] = t[p][k];
            for (int q = 0; q < 3; q++)
                gt_row(q, r, n, o[p][q]);
        }
        for (int64_t x = 0; x < n; x++)
            for (int q = 0; q < 9; q++)
                dw[(i0 + x) * 9 + q] = o[q / 3][q % 3][x];
    }
}
