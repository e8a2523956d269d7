/* conv_batched.c - convolutions whose output planes are small (ResNet's
** last stages: 4x4 and 2x2 at 64x64 input). One image's im2col GEMM there
** is [M x Kc] by [Kc x P] with P of 4 or 16 columns, which runs at a third
** of OpenBLAS's rate; side by side, the planes of nn_cb_images(p) images
** make GEMMs of NN_BATCH_COLS columns or more.
**
** Forward units are (row block of W, image block): im2col of the block's
** images into one column matrix, one GEMM, then each image's rows are
** copied out with the bias. ConvGradInput units are (input-channel block,
** image block): dY of the block's images gathered side by side, one GEMM
** with W^T, then col2im per image. Blocks depend on the shape only, so
** split and whole runs make the same calls.
*/
#include "config.h"

#include <cblas.h>
#include <string.h>

#include "ops/nn/conv_priv.h"
#include "ops/util/oputil.h"

int nn_cb_fits(const conv_p *p)
{
    return p->G == 1 && p->N > 1 && p->P > 0 && p->P < NN_BATCH_PLANE &&
           p->Kc > 0 && p->M > 0;
}

int64_t nn_cb_images(const conv_p *p)
{
    int64_t ib = (NN_BATCH_COLS + p->P - 1) / p->P;

    return ib < p->N ? ib : p->N;
}

/* Blocks of n things so that blocks x outer reaches NN_CONV_UNITS, with
** at least `least` things per block. */
static int64_t block_of(int64_t n, int64_t outer, int64_t least)
{
    int64_t want = (NN_CONV_UNITS + outer - 1) / outer, b;

    if (want < 1)
        want = 1;
    b = (n + want - 1) / want;
    if (b < least)
        b = least;
    return b < n ? b : n;
}

/* Images [n0, n1) of image block b of ib each; returns the block's GEMM
** columns (its images side by side). */
static int64_t image_block(const conv_p *p, int64_t ib, int64_t b,
                           int64_t *n0, int64_t *n1)
{
    *n0 = b * ib;
    *n1 = *n0 + ib < p->N ? *n0 + ib : p->N;
    return (*n1 - *n0) * p->P;
}

popc_status nn_cb_forward(const popc_kernel_ctx *kc, const conv_p *p,
                          const float *x, const float *wt, const float *bias,
                          float *y)
{
    int64_t ib = nn_cb_images(p), nib = (p->N + ib - 1) / ib;
    int64_t mb = block_of(p->M, nib, 16), nmb = (p->M + mb - 1) / mb;
    int64_t lo, hi, cur = -1;
    float *col, *out;
    popc_status st;

    opu_range(nib * nmb, kc->part, kc->n_parts, &lo, &hi);
    if (hi <= lo)
        return POPC_OK;
    if (!(col = nn_conv_scratch(kc, (p->Kc + mb) * ib * p->P, &st)))
        return st;
    out = col + p->Kc * ib * p->P;
    for (int64_t u = lo; u < hi; u++) {
        int64_t b = u / nmb, m0 = (u % nmb) * mb, n0, n1;
        int64_t m1 = m0 + mb < p->M ? m0 + mb : p->M;
        int64_t ld = image_block(p, ib, b, &n0, &n1);

        /* units of one image block are consecutive: im2col once */
        if (b != cur)
            for (int64_t n = n0; n < n1; n++)
                nn_im2col(p, x + n * p->C * p->HW, 0, p->C, 0, p->P,
                          col + (n - n0) * p->P, ld);
        cur = b;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(m1 - m0),
                    (int)ld, (int)p->Kc, 1.0f, wt + m0 * p->Kc, (int)p->Kc,
                    col, (int)ld, 0.0f, out, (int)ld);
        for (int64_t n = n0; n < n1; n++)
            for (int64_t m = m0; m < m1; m++) {
                const float *src = out + (m - m0) * ld + (n - n0) * p->P;
                float *dst = y + (n * p->M + m) * p->P;
                float bv = bias ? bias[m] : 0.0f;

                if (bias)
                    for (int64_t q = 0; q < p->P; q++)
                        dst[q] = src[q] + bv;
                else
                    memcpy(dst, src, sizeof *dst * (size_t)p->P);
                nn_epilogue_apply(p->epi, dst, p->P);
            }
    }
    kc->host->free(col);
    return POPC_OK;
}

popc_status nn_cb_grad_input(const popc_kernel_ctx *kc, const conv_p *p,
                             const float *dy, const float *wt, float *dx)
{
    int64_t ib = nn_cb_images(p), nib = (p->N + ib - 1) / ib;
    int64_t cb = block_of(p->C, nib, 1), ncb = (p->C + cb - 1) / cb;
    int64_t lo, hi, cur = -1;
    float *dyb, *dcol;
    popc_status st;

    opu_range(nib * ncb, kc->part, kc->n_parts, &lo, &hi);
    if (hi <= lo)
        return POPC_OK;
    if (!(dyb = nn_conv_scratch(kc, (p->M + cb * p->KK) * ib * p->P, &st)))
        return st;
    dcol = dyb + p->M * ib * p->P;
    for (int64_t u = lo; u < hi; u++) {
        int64_t b = u / ncb, c0 = (u % ncb) * cb, n0, n1;
        int64_t c1 = c0 + cb < p->C ? c0 + cb : p->C;
        int64_t ld = image_block(p, ib, b, &n0, &n1);

        /* dY of the block's images side by side: [M, images x P] */
        if (b != cur)
            for (int64_t n = n0; n < n1; n++)
                for (int64_t m = 0; m < p->M; m++)
                    memcpy(dyb + m * ld + (n - n0) * p->P,
                           dy + (n * p->M + m) * p->P,
                           sizeof *dyb * (size_t)p->P);
        cur = b;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans,
                    (int)((c1 - c0) * p->KK), (int)ld, (int)p->M, 1.0f,
                    wt + c0 * p->KK, (int)p->Kc, dyb, (int)ld, 0.0f, dcol,
                    (int)ld);
        for (int64_t n = n0; n < n1; n++) {
            float *dxn = dx + n * p->C * p->HW;

            memset(dxn + c0 * p->HW, 0,
                   sizeof *dxn * (size_t)((c1 - c0) * p->HW));
            nn_col2im_add(p, dcol + (n - n0) * p->P, c0, c1, dxn, ld);
        }
    }
    kc->host->free(dyb);
    return POPC_OK;
}
