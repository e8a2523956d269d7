/* tiles.c - fixed GEMM tiling shared by MatMul, Gemm and the Conv kernels.
**
** Split and unsplit runs must agree bitwise, and OpenBLAS's result for an
** element depends on the shape of the call that computed it; so the tiling
** is a function of the problem shape only and every run issues the same
** calls. Tiles cut the larger of M and N: cutting rows repacks B per tile,
** cutting columns repacks A, so the smaller operand is the one repacked.
*/
#include "config.h"

#include <cblas.h>
#include <string.h>

#include "ops/nn/nn_priv.h"

/* Below this many multiply-adds a product is not worth cutting. */
#define SMALL_WORK (1 << 16)

void nn_tiles_plan(int64_t batch, int64_t M, int64_t N, int64_t K,
                   int64_t target, int64_t min_blk, int cut, nn_tiles *t)
{
    int64_t dim, want, blk;

    t->by_cols = cut == NN_TILE_AUTO ? N > M : cut == NN_TILE_COLS;
    dim = t->by_cols ? N : M;
    if (dim <= 0 || batch <= 0) {
        t->blk = 1;
        t->n = 0;
        return;
    }
    t->blk = dim;
    t->n = 1;
    if (min_blk < 1)
        min_blk = 1;
    if (batch >= target || M * N * (K > 0 ? K : 1) < SMALL_WORK)
        return;
    want = (target + batch - 1) / batch;
    blk = (dim + want - 1) / want;
    /* whole vector registers per tile: 16 floats */
    blk = (blk + 15) / 16 * 16;
    if (blk < min_blk)
        blk = min_blk;
    if (blk >= dim)
        return;
    t->blk = blk;
    t->n = (dim + blk - 1) / blk;
}

void nn_tile_bounds(const nn_tiles *t, int64_t tile, int64_t M, int64_t N,
                    int64_t *r0, int64_t *r1, int64_t *c0, int64_t *c1)
{
    int64_t lo = tile * t->blk;

    *r0 = 0;
    *r1 = M;
    *c0 = 0;
    *c1 = N;
    if (t->by_cols) {
        *c0 = lo;
        *c1 = lo + t->blk < N ? lo + t->blk : N;
    } else {
        *r0 = lo;
        *r1 = lo + t->blk < M ? lo + t->blk : M;
    }
}

void nn_sgemm_tile(const nn_tiles *t, int64_t tile, int trans_a, int trans_b,
                   int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                   int64_t lda, const float *B, int64_t ldb, float beta,
                   float *C, int64_t ldc)
{
    int64_t lo = tile * t->blk;
    int64_t hi = lo + t->blk;
    int64_t m = M, n = N;

    if (t->by_cols) {
        if (hi > N)
            hi = N;
        n = hi - lo;
        B = trans_b ? B + lo * ldb : B + lo;
        C += lo;
    } else {
        if (hi > M)
            hi = M;
        m = hi - lo;
        A = trans_a ? A + lo : A + lo * lda;
        C += lo * ldc;
    }
    if (m <= 0 || n <= 0)
        return;
    if (K == 0) {
        /* BLAS would not touch C with k = 0 on every implementation */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
        return;
    }
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)K,
                alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}
