/* matmul_grad.c - popc::GemmGradWeightBias, the weight and bias gradients
** of a Gemm Y = alpha op(X) op(W) + beta C with a bias C constant over
** the rows, from one reading of dY:
**   dW = alpha op(X)^T dY   ([K, N]; transW: alpha dY^T op(X), [N, K])
**   dB = beta * sum over the rows of dY   ([N])
** Attributes: transX (X is [K, M], the Gemm's transA), transW (the Gemm's
** transB), alpha, beta. The GEMM is cut into the same tiles, with the same
** sgemm calls, as the Gemm node the gradient used to emit for dW, so dW
** is bitwise the same; each tile adds up a share of dY's columns for dB
** right after its sgemm read them, while they are still in cache, instead
** of a separate popc::SumToShape pass over dY and a scaling node. A
** column's sum does not depend on the split: bitwise the same too.
*/
#include "config.h"

#include <limits.h>
#include <string.h>

#include "ops/nn/half_partials.h"
#include "ops/nn/matmul_grad.h"
#include "ops/nn/nn_priv.h"
#include "ops/util/oputil.h"

#define OP "GemmGradWeightBias"
/* Tiles per run the split aims at, as Gemm's (matmul.c). */
#define TILE_TARGET 8
/* Columns of dY summed at a time: their double partial sums stay on the
** stack. */
#define SUM_COLS 256
/* Fewest columns of dY a tile sums when the tiles share them out. */
#define SHARE_COLS 64

typedef struct gwb_p {
    int tx, tw;
    float alpha, beta;
    int64_t M, N, K; /* X is [M, K] (transX: [K, M]), dY is [M, N] */
    int64_t P, Q;    /* dW is [P, Q] */
} gwb_p;

static popc_status gwb_parse(const char *node, const popc_view *in,
                             const popc_attrs *attrs, gwb_p *p)
{
    const popc_view *x = &in[0], *dy = &in[1];
    char sx[OPU_DIMS_LEN], sy[OPU_DIMS_LEN];

    memset(p, 0, sizeof *p);
    p->tx = popc_attr_int(attrs, "transX", 0) != 0;
    p->tw = popc_attr_int(attrs, "transW", 0) != 0;
    p->alpha = (float)popc_attr_float(attrs, "alpha", 1.0);
    p->beta = (float)popc_attr_float(attrs, "beta", 1.0);
    if (x->rank != 2 || dy->rank != 2)
        return opu_error(POPC_EINVAL, OP, node, "X %s and dY %s must both be "
                         "matrices (rank 2)", opu_dims(x, sx),
                         opu_dims(dy, sy));
    p->M = dy->dims[0];
    p->N = dy->dims[1];
    p->K = p->tx ? x->dims[0] : x->dims[1];
    if ((p->tx ? x->dims[1] : x->dims[0]) != p->M)
        return opu_error(POPC_EINVAL, OP, node, "X %s (transX %d) has %lld "
                         "rows but dY %s has %lld; pass the Gemm's input A "
                         "and the gradient of its output", opu_dims(x, sx),
                         p->tx, (long long)(p->tx ? x->dims[1] : x->dims[0]),
                         opu_dims(dy, sy), (long long)p->M);
    if (p->M > INT_MAX || p->N > INT_MAX || p->K > INT_MAX)
        return opu_error(POPC_EUNSUPPORTED, OP, node, "a dimension is above "
                         "%d, too large for BLAS", INT_MAX);
    p->P = p->tw ? p->N : p->K;
    p->Q = p->tw ? p->K : p->N;
    return POPC_OK;
}

static popc_status gwb_infer(popc_infer_ctx *ic)
{
    gwb_p p;
    int64_t d[2];
    popc_status st;

    if ((st = opu_want_f32(ic, OP, 0, "input X")) != POPC_OK ||
        (st = opu_want_f32(ic, OP, 1, "input dY")) != POPC_OK ||
        (st = gwb_parse(ic->node_name, ic->inputs, ic->attrs, &p)) !=
            POPC_OK)
        return st;
    d[0] = p.P;
    d[1] = p.Q;
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d, 2);
    opu_set(&ic->outputs[1], POPC_DTYPE_F32, &p.N, 1);
    return POPC_OK;
}

/* acc[j] += r[j] for j < n; written eight at a time, which the compiler
** vectorizes at -O2 (a plain loop it leaves scalar). */
static void add_row(double *restrict acc, const float *restrict r, int64_t n)
{
    int64_t j = 0;

    for (; j + 8 <= n; j += 8) {
        acc[j] += r[j], acc[j + 1] += r[j + 1];
        acc[j + 2] += r[j + 2], acc[j + 3] += r[j + 3];
        acc[j + 4] += r[j + 4], acc[j + 5] += r[j + 5];
        acc[j + 6] += r[j + 6], acc[j + 7] += r[j + 7];
    }
    for (; j < n; j++)
        acc[j] += r[j];
}

/* dB[j0, j1) = beta * the sums of dY's columns j0..j1-1, row after row
** (each row's stretch is contiguous), in double. */
static void column_sums(const gwb_p *p, const float *dy, float *db,
                        int64_t j0, int64_t j1)
{
    const int64_t M = p->M, N = p->N;
    const double beta = p->beta;
    double acc[SUM_COLS];

    for (int64_t c0 = j0; c0 < j1; c0 += SUM_COLS) {
        int64_t w = j1 - c0 < SUM_COLS ? j1 - c0 : SUM_COLS;

        memset(acc, 0, sizeof acc[0] * (size_t)w);
        for (int64_t i = 0; i < M; i++)
            add_row(acc, dy + i * N + c0, w);
        for (int64_t j = 0; j < w; j++)
            db[c0 + j] = (float)(beta * acc[j]);
    }
}

static popc_status gwb_forward(const popc_kernel_ctx *kc)
{
    const float *X = kc->inputs[0].data, *dY = kc->inputs[1].data;
    float *dW = kc->outputs[0].data, *dB = kc->outputs[1].data;
    int64_t ldx, lo, hi, shares;
    nn_tiles t;
    gwb_p p;
    popc_status st;

    if ((st = gwb_parse(kc->node_name, kc->inputs, kc->attrs, &p)) !=
        POPC_OK)
        return st;
    if (nn_half_partials(kc))
        return opu_error(POPC_EUNSUPPORTED, OP, kc->node_name, "float16 "
                         "partials are not supported; a float16 Gemm's "
                         "gradient uses a Gemm and a SumToShape instead");
    ldx = p.tx ? p.M : p.K;
    nn_tiles_plan(1, p.P, p.Q, p.M, TILE_TARGET, 64, NN_TILE_AUTO, &t);
    /* stretches of at least SHARE_COLS columns: short rows cost more per
    ** call than they add */
    shares = (p.N + SHARE_COLS - 1) / SHARE_COLS;
    if (shares > t.n)
        shares = t.n;
    opu_range(t.n, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        int64_t r0, r1, c0, c1;

        /* dW = alpha op(X)^T dY, or alpha dY^T op(X) when transW */
        if (!p.tw)
            nn_sgemm_tile(&t, u, !p.tx, 0, p.P, p.Q, p.M, p.alpha, X, ldx,
                          dY, p.N, 0.0f, dW, p.Q);
        else
            nn_sgemm_tile(&t, u, 1, p.tx, p.P, p.Q, p.M, p.alpha, dY, p.N,
                          X, ldx, 0.0f, dW, p.Q);
        /* tiles that cut dY's columns (dW's columns, or its rows when
        ** transW) sum the columns they just read; tiles that each read
        ** all of dY sum an equal share of its columns */
        nn_tile_bounds(&t, u, p.P, p.Q, &r0, &r1, &c0, &c1);
        if (t.by_cols != p.tw)
            column_sums(&p, dY, dB, p.tw ? r0 : c0, p.tw ? r1 : c1);
        else if (u < shares)
            column_sums(&p, dY, dB, p.N * u / shares,
                        p.N * (u + 1) / shares);
    }
    return POPC_OK;
}

static popc_status gwb_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    gwb_p p;
    popc_status st;

    if ((st = gwb_parse(ic->node_name, ic->inputs, ic->attrs, &p)) !=
        POPC_OK)
        return st;
    c->flops = 2.0 * (double)p.M * (double)p.N * (double)p.K +
               (double)p.M * (double)p.N;
    c->bytes = 4.0 * ((double)p.M * (double)p.K + (double)p.M * (double)p.N +
                      (double)p.K * (double)p.N + (double)p.N);
    c->temp_bytes = 0.0;
    return POPC_OK;
}

popc_status nn_gemm_grad_weight_bias(popc_grad_ctx *gc, int ta, int tb,
                                     double alpha, double beta, int *done)
{
    const popc_view *ci = &gc->input_info[2];
    int in[2] = {gc->inputs[0], gc->output_grads[0]}, out[2], db;
    int64_t N = gc->output_info[0].dims[1], one = 1, cm, cn;
    popc_attr a[4];
    popc_status st;

    *done = 0;
    if (gc->n_inputs < 3 || gc->inputs[2] < 0 ||
        ci->dtype != POPC_DTYPE_F32 || ci->rank > 2 ||
        nn_is_float16_node(gc->attrs))
        return POPC_OK;
    cm = ci->rank == 2 ? ci->dims[0] : 1;
    cn = ci->rank >= 1 ? ci->dims[ci->rank - 1] : 1;
    /* a bias that differs between rows has dY itself as its gradient */
    if (cm != 1 || (cn != N && cn != 1))
        return POPC_OK;
    a[0] = popc_attr_make_int("transX", ta);
    a[1] = popc_attr_make_int("transW", tb);
    a[2] = popc_attr_make_float("alpha", alpha);
    a[3] = popc_attr_make_float("beta", beta);
    if ((st = gc->host->grad_add_node(gc, "popc", OP, in, 2, out, 2, a, 4)) !=
        POPC_OK)
        return st;
    gc->input_grads[1] = out[0];
    db = out[1];
    /* [N] to C's shape: [1, N] as is, [1] and scalars summed */
    if (cn != N &&
        (st = opu_grad_sum_to_dims(gc, db, &one, 1, &db)) != POPC_OK)
        return st;
    if ((st = opu_grad_reshape_dims(gc, db, ci->dims, ci->rank,
                                    &gc->input_grads[2])) != POPC_OK)
        return st;
    *done = 1;
    return POPC_OK;
}

static const popc_op_def gemm_grad_ops[] = {
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = OP,
        .since_version = 1,
        .min_inputs = 2,
        .max_inputs = 2,
        .min_outputs = 2,
        .max_outputs = 2,
        .flags = POPC_OP_SPLIT,
        .infer = gwb_infer,
        .forward = gwb_forward,
        .cost = gwb_cost,
        .doc = "Gemm weight and row-constant bias gradients from one read "
               "of dY (X, dY; attrs transX, transW, alpha, beta)",
    },
};

popc_status nn_register_gemm_grad(const popc_host *h, popc_registrar *r)
{
    return opu_register_ops(h, r, gemm_grad_ops,
                            (int)(sizeof gemm_grad_ops / sizeof gemm_grad_ops[0]));
}
