/* check_op_nn.c - the nn plugin: MatMul, Gemm, Conv, pools,
** BatchNormalization, LayerNormalization, Softmax, LogSoftmax and their
** popc:: gradient ops, against torch references (tests/ref/nn/, written by
** tests/ref/gen_ops_nn.py) and naive loops; every kernel is also run split
** in 3 parts (op_harness) and must agree bitwise; every gradient builder is
** checked against torch autograd through the graph and against finite
** differences; error messages name the node and both shapes. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/harness/assert.h"
#include "tests/harness/fd_check.h"
#include "tests/harness/op_harness.h"
#include "tests/harness/ref_check.h"

#define ASSERT_CLOSE(got, want, rtol, atol, what)                              \
    do {                                                                       \
        char m_[512];                                                          \
        ck_assert_msg(rc_close((got), (want), (rtol), (atol), m_, sizeof m_),  \
                      "%s: %s", (what), m_);                                   \
    } while (0)

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* forward tolerances: 1e-5 relative / 1e-6 absolute, GEMMs a bit looser */
#define RTOL    1e-5
#define ATOL    1e-6
#define RTOL_MM 1e-4
#define ATOL_MM 1e-5

static popc_tensor *load(const char *c, const char *what)
{
    popc_tensor *t = rc_load(c, what);

    ck_assert_msg(t != NULL, "reference %s_%s missing", c, what);
    return t;
}

static void free_all(popc_tensor **t, int n)
{
    for (int i = 0; i < n; i++) {
        popc_tensor_free(t[i]);
        t[i] = NULL;
    }
}

/* Runs an op (whole and split) and compares outputs with references;
** refs[k] NULL skips output k. */
static void check_op(const char *domain, const char *op, popc_tensor **in,
                     int n_in, const popc_attr *a, int na, int n_out,
                     int training, const char *c, const char *const *refs,
                     double rtol, double atol)
{
    popc_tensor *out[8] = {0};

    ASSERT_OK(
        harness_run_op(domain, op, in, n_in, a, na, out, n_out, training));
    for (int k = 0; k < n_out; k++) {
        char what[160];
        popc_tensor *want;

        if (!refs[k])
            continue;
        want = load(c, refs[k]);
        snprintf(what, sizeof what, "%s %s output %d (%s)", c, op, k, refs[k]);
        ASSERT_CLOSE(out[k], want, rtol, atol, what);
        popc_tensor_free(want);
    }
    free_all(out, n_out);
}

/* Gradients through the graph vs torch: dL/d in[wrt[j]] == ref d<names[j]>. */
static void check_graph_grads(const char *domain, const char *op,
                              popc_tensor **in, int n_in, const int *wrt,
                              const char *const *names, int n_wrt,
                              const popc_attr *a, int na, int n_out,
                              int training, const char *c, double rtol,
                              double atol)
{
    popc_tensor *grads[8] = {0}, *g = load(c, "g");

    ASSERT_OK(rc_graph_grads(domain, op, in, n_in, wrt, n_wrt, a, na, n_out, g,
                             training, grads));
    for (int j = 0; j < n_wrt; j++) {
        char what[160], ref[64];
        popc_tensor *want;

        snprintf(ref, sizeof ref, "d%s", names[j]);
        want = load(c, ref);
        snprintf(what, sizeof what, "%s graph gradient %s", c, ref);
        ASSERT_CLOSE(grads[j], want, rtol, atol, what);
        popc_tensor_free(want);
    }
    free_all(grads, n_wrt);
    popc_tensor_free(g);
}

static void fd_ok(const char *domain, const char *op, popc_tensor **in,
                  int n_in, const int *wrt, int n_wrt, const popc_attr *a,
                  int na, int n_out, int training, double tol)
{
    char why[1024];
    popc_status st = fd_check_op_ex(domain, op, in, n_in, wrt, n_wrt, a, na,
                                    n_out, training, tol, why, sizeof why);

    ck_assert_msg(st == POPC_OK, "%s", why);
}

static popc_status run_expect_fail(const char *domain, const char *op,
                                   popc_tensor **in, int n_in,
                                   const popc_attr *a, int na, int n_out)
{
    popc_tensor *out[8] = {0};
    popc_status st = harness_run_op(domain, op, in, n_in, a, na, out, n_out, 0);

    free_all(out, n_out);
    return st;
}

static popc_tensor *tensor(const int64_t *dims, int rank, const float *v)
{
    popc_tensor *t = harness_f32(dims, rank, v);

    ck_assert_ptr_nonnull(t);
    return t;
}

/* ---- MatMul / Gemm ------------------------------------------------------- */

static const char *const mm_cases[] = {"matmul_2d", "matmul_bcast",
                                       "matmul_vecmat", "matmul_matvec",
                                       "matmul_dot"};

START_TEST(matmul_matches_torch)
{
    static const char *const refs[] = {"y"};

    for (int c = 0; c < N_OF(mm_cases); c++) {
        popc_tensor *in[2] = {load(mm_cases[c], "a"), load(mm_cases[c], "b")};

        check_op(NULL, "MatMul", in, 2, NULL, 0, 1, 0, mm_cases[c], refs,
                 RTOL_MM, ATOL_MM);
        free_all(in, 2);
    }
}
END_TEST

/* Naive double-precision reference of batch products (A, B contiguous). */
static void naive_mm(const float *a, const float *b, double *c, int64_t batch,
                     int64_t M, int64_t N, int64_t K, int bcast_b)
{
    for (int64_t t = 0; t < batch; t++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0;
                const float *bb = b + (bcast_b ? 0 : t * K * N);

                for (int64_t k = 0; k < K; k++)
                    s += (double)a[(t * M + i) * K + k] * bb[k * N + j];
                c[(t * M + i) * N + j] = s;
            }
}

START_TEST(matmul_large_split_tiles)
{
    /* rows tiles, column tiles, and a batch broadcasting B */
    static const int64_t shapes[][4] = {
        {1, 130, 300, 90}, {1, 20, 200, 300}, {3, 40, 64, 70}};

    for (int s = 0; s < N_OF(shapes); s++) {
        int64_t B = shapes[s][0], M = shapes[s][1], K = shapes[s][2];
        int64_t N = shapes[s][3];
        int64_t da[3] = {B, M, K}, db[2] = {K, N};
        popc_tensor *in[2], *out = NULL;
        double *want = malloc(sizeof *want * (size_t)(B * M * N));
        const float *y;

        in[0] = rc_random(da, 3, 11 + (uint64_t)s);
        in[1] = rc_random(db, 2, 23 + (uint64_t)s);
        ASSERT_OK(harness_run_op(NULL, "MatMul", in, 2, NULL, 0, &out, 1, 0));
        naive_mm(popc_tensor_cdata(in[0]), popc_tensor_cdata(in[1]), want, B, M,
                 N, K, 1);
        y = popc_tensor_cdata(out);
        for (int64_t i = 0; i < B * M * N; i++)
            ck_assert_msg(fabs(y[i] - want[i]) <= 1e-4 * (1 + fabs(want[i])),
                          "shape %d element %lld: %g vs %g", s, (long long)i,
                          (double)y[i], want[i]);
        free(want);
        popc_tensor_free(out);
        free_all(in, 2);
    }
}
END_TEST

START_TEST(matmul_errors_name_node_and_shapes)
{
    int64_t d1[2] = {5, 7}, d2[2] = {6, 3}, d3[3] = {2, 5, 7},
            d4[3] = {3, 7, 2};
    popc_tensor *in[2] = {rc_random(d1, 2, 1), rc_random(d2, 2, 2)};
    popc_tensor *b3[2] = {rc_random(d3, 3, 3), rc_random(d4, 3, 4)};
    popc_tensor *ints = NULL;

    ck_assert_int_eq(run_expect_fail(NULL, "MatMul", in, 2, NULL, 0, 1),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "MatMul 'MatMul'");
    ASSERT_HAS(popc_last_error(), "[5, 7]");
    ASSERT_HAS(popc_last_error(), "[6, 3]");
    ck_assert_int_eq(run_expect_fail(NULL, "MatMul", b3, 2, NULL, 0, 1),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "do not broadcast");
    ASSERT_OK(popc_tensor_cast(in[0], POPC_DTYPE_I32, &ints));
    popc_tensor_free(in[1]);
    in[1] = ints;
    ck_assert_int_eq(run_expect_fail(NULL, "MatMul", in, 2, NULL, 0, 1),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "float32");
    free_all(in, 2);
    free_all(b3, 2);
}
END_TEST

typedef struct gemm_case {
    const char *name;
    int ta, tb;
    double alpha, beta;
} gemm_case;

static const gemm_case gemm_cases[] = {{"gemm_nt", 0, 1, 1.0, 1.0},
                                       {"gemm_tn", 1, 0, 0.5, 2.0},
                                       {"gemm_tt", 1, 1, 1.5, 0.25}};

static int gemm_attrs(const gemm_case *g, popc_attr *a)
{
    a[0] = popc_attr_make_int("transA", g->ta);
    a[1] = popc_attr_make_int("transB", g->tb);
    a[2] = popc_attr_make_float("alpha", g->alpha);
    a[3] = popc_attr_make_float("beta", g->beta);
    return 4;
}

START_TEST(gemm_matches_torch)
{
    static const char *const refs[] = {"y"};

    for (int c = 0; c < N_OF(gemm_cases); c++) {
        const char *n = gemm_cases[c].name;
        popc_tensor *in[3] = {load(n, "a"), load(n, "b"), load(n, "c")};
        popc_attr a[4];
        int na = gemm_attrs(&gemm_cases[c], a);

        check_op(NULL, "Gemm", in, 3, a, na, 1, 0, n, refs, RTOL_MM, ATOL_MM);
        free_all(in, 3);
    }
}
END_TEST

START_TEST(gemm_large_split_and_errors)
{
    int64_t da[2] = {150, 70}, db[2] = {90, 70}, dc[1] = {90}, bad[1] = {7};
    popc_tensor *in[3] = {rc_random(da, 2, 5), rc_random(db, 2, 6),
                          rc_random(dc, 1, 7)};
    popc_attr a[2] = {popc_attr_make_int("transB", 1),
                      popc_attr_make_float("beta", 0.5)};
    popc_tensor *out = NULL;
    const float *A, *B, *C, *y;

    ASSERT_OK(harness_run_op(NULL, "Gemm", in, 3, a, 2, &out, 1, 0));
    A = popc_tensor_cdata(in[0]);
    B = popc_tensor_cdata(in[1]);
    C = popc_tensor_cdata(in[2]);
    y = popc_tensor_cdata(out);
    for (int i = 0; i < 150; i++)
        for (int j = 0; j < 90; j++) {
            double s = 0.5 * C[j];

            for (int k = 0; k < 70; k++)
                s += (double)A[i * 70 + k] * B[j * 70 + k];
            ck_assert_msg(fabs(y[i * 90 + j] - s) <= 1e-4 * (1 + fabs(s)),
                          "(%d, %d): %g vs %g", i, j, (double)y[i * 90 + j], s);
        }
    popc_tensor_free(out);
    popc_tensor_free(in[2]);
    in[2] = rc_random(bad, 1, 8);
    ck_assert_int_eq(run_expect_fail(NULL, "Gemm", in, 3, a, 2, 1),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "Gemm 'Gemm'");
    ASSERT_HAS(popc_last_error(), "[7]");
    ASSERT_HAS(popc_last_error(), "[150, 90]");
    free_all(in, 3);
}
END_TEST

START_TEST(matmul_gemm_graph_grads_match_torch)
{
    static const char *const ab[] = {"a", "b"}, *const abc[] = {"a", "b", "c"};
    static const int w2[] = {0, 1}, w3[] = {0, 1, 2};

    for (int c = 0; c < N_OF(mm_cases); c++) {
        popc_tensor *in[2] = {load(mm_cases[c], "a"), load(mm_cases[c], "b")};

        check_graph_grads(NULL, "MatMul", in, 2, w2, ab, 2, NULL, 0, 1, 0,
                          mm_cases[c], RTOL_MM, ATOL_MM);
        free_all(in, 2);
    }
    for (int c = 0; c < N_OF(gemm_cases); c++) {
        const char *n = gemm_cases[c].name;
        popc_tensor *in[3] = {load(n, "a"), load(n, "b"), load(n, "c")};
        popc_attr a[4];
        int na = gemm_attrs(&gemm_cases[c], a);

        check_graph_grads(NULL, "Gemm", in, 3, w3, abc, 3, a, na, 1, 0, n,
                          RTOL_MM, ATOL_MM);
        free_all(in, 3);
    }
}
END_TEST

START_TEST(matmul_gemm_finite_differences)
{
    /* the last: a matrix B under a batched A, whose gradients fold the
    ** batch into one Gemm each */
    static const int64_t shapes[][2][4] = {{{2, 1, 3, 4}, {3, 4, 2}},
                                           {{4}, {2, 4, 3}},
                                           {{2, 3, 4}, {4}},
                                           {{5}, {5}},
                                           {{2, 3, 5, 4}, {4, 3}}};
    static const int ranks[][2] = {{4, 3}, {1, 3}, {3, 1}, {1, 1}, {4, 2}};
    static const int w2[] = {0, 1}, w3[] = {0, 1, 2};

    for (int s = 0; s < N_OF(shapes); s++) {
        popc_tensor *in[2] = {rc_random(shapes[s][0], ranks[s][0], 40 + s),
                              rc_random(shapes[s][1], ranks[s][1], 50 + s)};

        fd_ok(NULL, "MatMul", in, 2, w2, 2, NULL, 0, 1, 1, 2e-3);
        free_all(in, 2);
    }
    for (int c = 0; c < N_OF(gemm_cases); c++) {
        const char *n = gemm_cases[c].name;
        popc_tensor *in[3] = {load(n, "a"), load(n, "b"), load(n, "c")};
        popc_attr a[4];
        int na = gemm_attrs(&gemm_cases[c], a);

        fd_ok(NULL, "Gemm", in, 3, w3, 3, a, na, 1, 1, 2e-3);
        /* without C, and with a scalar C */
        popc_tensor_free(in[2]);
        in[2] = NULL;
        fd_ok(NULL, "Gemm", in, 3, w3, 2, a, na, 1, 1, 2e-3);
        in[2] = rc_random(NULL, 0, 60 + (uint64_t)c);
        fd_ok(NULL, "Gemm", in, 3, w3, 3, a, na, 1, 1, 2e-3);
        free_all(in, 3);
    }
}
END_TEST

/* ---- Conv ---------------------------------------------------------------- */

typedef struct conv_case {
    const char *name;
    int sp; /* spatial rank */
    int64_t strides[2], pads[4], dil[2], group;
    int bias;
} conv_case;

static const conv_case conv_cases[] = {
    {"conv_basic", 2, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, 0},
    {"conv_group", 2, {2, 1}, {1, 0, 2, 1}, {1, 2}, 2, 1},
    {"conv_1x1", 2, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, 1},
    {"conv_1d", 1, {2}, {1, 1}, {1}, 1, 1},
};

static int conv_attrs(const conv_case *c, popc_attr *a)
{
    a[0] = popc_attr_make_ints("strides", c->strides, c->sp);
    a[1] = popc_attr_make_ints("pads", c->pads, 2 * c->sp);
    a[2] = popc_attr_make_ints("dilations", c->dil, c->sp);
    a[3] = popc_attr_make_int("group", c->group);
    return 4;
}

START_TEST(conv_matches_torch)
{
    static const char *const refs[] = {"y"};

    for (int c = 0; c < N_OF(conv_cases); c++) {
        const conv_case *cc = &conv_cases[c];
        popc_tensor *in[3] = {load(cc->name, "x"), load(cc->name, "w"),
                              cc->bias ? load(cc->name, "bias") : NULL};
        popc_attr a[4];
        int na = conv_attrs(cc, a);

        check_op(NULL, "Conv", in, 3, a, na, 1, 0, cc->name, refs, RTOL_MM,
                 ATOL_MM);
        free_all(in, 3);
    }
}
END_TEST

START_TEST(conv_grad_ops_match_torch)
{
    for (int c = 0; c < N_OF(conv_cases); c++) {
        const conv_case *cc = &conv_cases[c];
        popc_tensor *x = load(cc->name, "x"), *w = load(cc->name, "w");
        popc_tensor *g = load(cc->name, "g");
        popc_tensor *in[2], *out[2] = {0};
        const int64_t *wd = popc_tensor_dims(w);
        int64_t k[2] = {wd[2], cc->sp == 2 ? wd[3] : 0};
        popc_attr a[6];
        int na = conv_attrs(cc, a);
        static const char *const dx[] = {"dx"};
        static const char *const dwb[] = {"dw", "dbias"};

        a[na] = popc_attr_make_ints("kernel_shape", k, cc->sp);
        a[na + 1] = popc_attr_make_ints("input_shape", popc_tensor_dims(x),
                                        popc_tensor_rank(x));
        in[0] = g;
        in[1] = w;
        check_op("popc", "ConvGradInput", in, 2, a, na + 2, 1, 1, cc->name, dx,
                 RTOL_MM, ATOL_MM);
        in[0] = x;
        in[1] = g;
        check_op("popc", "ConvGradWeight", in, 2, a, na + 1, cc->bias ? 2 : 1,
                 1, cc->name, dwb, RTOL_MM, ATOL_MM);
        popc_tensor_free(x);
        popc_tensor_free(w);
        popc_tensor_free(g);
        free_all(out, 2);
    }
}
END_TEST

START_TEST(conv_graph_grads_match_torch)
{
    static const char *const names[] = {"x", "w", "bias"};
    static const int wrt[] = {0, 1, 2};

    for (int c = 0; c < N_OF(conv_cases); c++) {
        const conv_case *cc = &conv_cases[c];
        popc_tensor *in[3] = {load(cc->name, "x"), load(cc->name, "w"),
                              cc->bias ? load(cc->name, "bias") : NULL};
        popc_attr a[4];
        int na = conv_attrs(cc, a);

        check_graph_grads(NULL, "Conv", in, 3, wrt, names, cc->bias ? 3 : 2, a,
                          na, 1, 1, cc->name, RTOL_MM, ATOL_MM);
        free_all(in, 3);
    }
}
END_TEST

typedef struct naive_conv {
    int64_t N, C, H, W, M, kh, kw, sh, sw, pt, pl, dh, dw, G, OH, OW;
} naive_conv;

static void naive_conv_fwd(const naive_conv *p, const float *x, const float *w,
                           double *y)
{
    int64_t Cg = p->C / p->G, Mg = p->M / p->G;

    for (int64_t n = 0; n < p->N; n++)
        for (int64_t m = 0; m < p->M; m++)
            for (int64_t oh = 0; oh < p->OH; oh++)
                for (int64_t ow = 0; ow < p->OW; ow++) {
                    double s = 0;
                    int64_t g = m / Mg;

                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t i = 0; i < p->kh; i++)
                            for (int64_t j = 0; j < p->kw; j++) {
                                int64_t ih = oh * p->sh - p->pt + i * p->dh;
                                int64_t iw = ow * p->sw - p->pl + j * p->dw;

                                if (ih < 0 || ih >= p->H || iw < 0 ||
                                    iw >= p->W)
                                    continue;
                                s += (double)x[((n * p->C + g * Cg + c) * p->H +
                                                ih) *
                                                   p->W +
                                               iw] *
                                     w[((m * Cg + c) * p->kh + i) * p->kw + j];
                            }
                    y[((n * p->M + m) * p->OH + oh) * p->OW + ow] = s;
                }
}

/* dx and dw of sum(y * g), the adjoint loops of naive_conv_fwd. */
static void naive_conv_bwd(const naive_conv *p, const float *x, const float *w,
                           const float *g, double *dx, double *dw)
{
    int64_t Cg = p->C / p->G, Mg = p->M / p->G;

    memset(dx, 0, sizeof *dx * (size_t)(p->N * p->C * p->H * p->W));
    memset(dw, 0, sizeof *dw * (size_t)(p->M * Cg * p->kh * p->kw));
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t m = 0; m < p->M; m++)
            for (int64_t oh = 0; oh < p->OH; oh++)
                for (int64_t ow = 0; ow < p->OW; ow++) {
                    double gv = g[((n * p->M + m) * p->OH + oh) * p->OW + ow];
                    int64_t gr = m / Mg;

                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t i = 0; i < p->kh; i++)
                            for (int64_t j = 0; j < p->kw; j++) {
                                int64_t ih = oh * p->sh - p->pt + i * p->dh;
                                int64_t iw = ow * p->sw - p->pl + j * p->dw;
                                int64_t xi =
                                    ((n * p->C + gr * Cg + c) * p->H + ih) *
                                        p->W +
                                    iw;
                                int64_t wi =
                                    ((m * Cg + c) * p->kh + i) * p->kw + j;

                                if (ih < 0 || ih >= p->H || iw < 0 ||
                                    iw >= p->W)
                                    continue;
                                dx[xi] += gv * w[wi];
                                dw[wi] += gv * x[xi];
                            }
                }
}

static void expect_near(const float *got, const double *want, int64_t n,
                        const char *what)
{
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(fabs(got[i] - want[i]) <= 1e-4 * (1 + fabs(want[i])),
                      "%s element %lld: %.7g vs %.7g", what, (long long)i,
                      (double)got[i], want[i]);
}

START_TEST(conv_large_split_tiles)
{
    /* one image, one group: the output plane is cut into column tiles;
    ** the gradient ops cut channel blocks */
    static const naive_conv cases[] = {
        {1, 16, 20, 20, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 20, 20},
        {2, 6, 17, 15, 8, 3, 2, 2, 1, 1, 0, 2, 1, 2, 8, 14},
        {1, 12, 9, 9, 10, 1, 1, 1, 1, 0, 0, 1, 1, 1, 9, 9},
        /* a first layer (one input channel): dW is cut into row blocks */
        {4, 1, 12, 12, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 12, 12},
        /* dilated "same" convolution: im2col and col2im as shifted planes */
        {2, 3, 9, 9, 8, 3, 3, 1, 1, 2, 2, 2, 2, 1, 9, 9},
        /* Winograd F(2x2, 3x3) (batch x groups >= 8, >= 8 channels, >= 16
        ** output tiles): odd
        ** output sizes, no padding, padding 2, groups, and a row wider
        ** than a block of tiles */
        {8, 8, 9, 11, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 9, 11},
        {8, 16, 10, 10, 8, 3, 3, 1, 1, 0, 0, 1, 1, 1, 8, 8},
        {8, 8, 5, 7, 8, 3, 3, 1, 1, 2, 2, 1, 1, 1, 7, 9},
        {4, 16, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 2, 8, 8},
        /* depthwise (depthwise.c): stride 2, dilated, 5x5 */
        {2, 6, 9, 8, 6, 3, 3, 2, 2, 1, 1, 1, 1, 6, 5, 4},
        {3, 4, 7, 7, 4, 3, 3, 1, 1, 2, 2, 2, 2, 4, 7, 7},
        {2, 5, 6, 6, 5, 5, 5, 1, 1, 2, 2, 1, 1, 5, 6, 6},
        /* small planes: several images per GEMM (conv_batched.c), one
        ** block or several, strided, 1x1 */
        {5, 7, 5, 5, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 3, 3},
        {40, 4, 4, 4, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 4, 4},
        {3, 8, 4, 4, 6, 1, 1, 1, 1, 0, 0, 1, 1, 1, 4, 4},
        {6, 8, 7, 7, 24, 1, 1, 2, 2, 0, 0, 1, 1, 1, 4, 4},
        /* fewer than 16 tiles: im2col */
        {8, 16, 6, 6, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 6, 6},
        {8, 8, 4, 150, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 4, 150},
    };

    for (int s = 0; s < N_OF(cases); s++) {
        const naive_conv *p = &cases[s];
        int64_t dx_[4] = {p->N, p->C, p->H, p->W};
        int64_t dw_[4] = {p->M, p->C / p->G, p->kh, p->kw};
        int64_t dy_[4] = {p->N, p->M, p->OH, p->OW};
        int64_t st[2] = {p->sh, p->sw}, pd[4] = {p->pt, p->pl, p->pt, p->pl};
        int64_t dl[2] = {p->dh, p->dw}, ks[2] = {p->kh, p->kw};
        popc_attr a[6] = {popc_attr_make_ints("strides", st, 2),
                          popc_attr_make_ints("pads", pd, 4),
                          popc_attr_make_ints("dilations", dl, 2),
                          popc_attr_make_int("group", p->G),
                          popc_attr_make_ints("kernel_shape", ks, 2),
                          popc_attr_make_ints("input_shape", dx_, 4)};
        popc_tensor *x = rc_random(dx_, 4, 100 + s),
                    *w = rc_random(dw_, 4, 200 + s);
        popc_tensor *g = rc_random(dy_, 4, 300 + s), *in[2], *y = NULL,
                    *dx = NULL, *dw = NULL;
        int64_t ny = p->N * p->M * p->OH * p->OW;
        int64_t nx = p->N * p->C * p->H * p->W;
        int64_t nw = p->M * (p->C / p->G) * p->kh * p->kw;
        double *ry = malloc(sizeof *ry * (size_t)ny);
        double *rdx = malloc(sizeof *rdx * (size_t)nx);
        double *rdw = malloc(sizeof *rdw * (size_t)nw);

        in[0] = x;
        in[1] = w;
        ASSERT_OK(harness_run_op(NULL, "Conv", in, 2, a, 4, &y, 1, 0));
        ck_assert_int_eq(popc_tensor_numel(y), ny);
        naive_conv_fwd(p, popc_tensor_cdata(x), popc_tensor_cdata(w), ry);
        expect_near(popc_tensor_cdata(y), ry, ny, "Conv");
        naive_conv_bwd(p, popc_tensor_cdata(x), popc_tensor_cdata(w),
                       popc_tensor_cdata(g), rdx, rdw);
        in[0] = g;
        in[1] = w;
        ASSERT_OK(
            harness_run_op("popc", "ConvGradInput", in, 2, a, 6, &dx, 1, 1));
        expect_near(popc_tensor_cdata(dx), rdx, nx, "ConvGradInput");
        in[0] = x;
        in[1] = g;
        ASSERT_OK(
            harness_run_op("popc", "ConvGradWeight", in, 2, a, 5, &dw, 1, 1));
        expect_near(popc_tensor_cdata(dw), rdw, nw, "ConvGradWeight");
        free(ry);
        free(rdx);
        free(rdw);
        popc_tensor *all[6] = {x, w, g, y, dx, dw};
        free_all(all, 6);
    }
}
END_TEST

START_TEST(conv_winograd_adds_bias_last)
{
    /* the Winograd path adds the bias to each finished output */
    int64_t xd[4] = {8, 8, 7, 9}, wd[4] = {10, 8, 3, 3}, bd[1] = {10};
    int64_t pd[4] = {1, 1, 1, 1};
    popc_attr a = popc_attr_make_ints("pads", pd, 4);
    popc_tensor *in[3] = {rc_random(xd, 4, 71), rc_random(wd, 4, 72),
                          rc_random(bd, 1, 73)};
    popc_tensor *y = NULL, *yb = NULL;
    const float *v, *vb, *b = popc_tensor_cdata(in[2]);

    ASSERT_OK(harness_run_op(NULL, "Conv", in, 2, &a, 1, &y, 1, 0));
    ASSERT_OK(harness_run_op(NULL, "Conv", in, 3, &a, 1, &yb, 1, 0));
    v = popc_tensor_cdata(y);
    vb = popc_tensor_cdata(yb);
    for (int64_t i = 0; i < popc_tensor_numel(y); i++) {
        float want = v[i] + b[i / 63 % 10];

        ck_assert_msg(memcmp(&vb[i], &want, sizeof want) == 0,
                      "element %lld: %.9g, want %.9g", (long long)i,
                      (double)vb[i], (double)want);
    }
    popc_tensor_free(y);
    popc_tensor_free(yb);
    free_all(in, 3);
}
END_TEST

START_TEST(conv_first_layer_bias_grad)
{
    /* one input channel, 32 output channels: dB rows are summed by the
    ** row-block units of ConvGradWeight, whole and split alike */
    int64_t xd[4] = {3, 1, 10, 10}, yd[4] = {3, 32, 10, 10};
    int64_t k[2] = {3, 3}, pd[4] = {1, 1, 1, 1};
    popc_attr a[2] = {popc_attr_make_ints("kernel_shape", k, 2),
                      popc_attr_make_ints("pads", pd, 4)};
    popc_tensor *in[2] = {rc_random(xd, 4, 41), rc_random(yd, 4, 42)};
    popc_tensor *out[2] = {0};
    const float *g = popc_tensor_cdata(in[1]), *db;

    ASSERT_OK(harness_run_op("popc", "ConvGradWeight", in, 2, a, 2, out, 2, 1));
    ck_assert_int_eq(popc_tensor_numel(out[1]), 32);
    db = popc_tensor_cdata(out[1]);
    for (int64_t m = 0; m < 32; m++) {
        double want = 0;

        for (int64_t n = 0; n < 3; n++)
            for (int64_t q = 0; q < 100; q++)
                want += g[(n * 32 + m) * 100 + q];
        ck_assert_msg(fabs(db[m] - want) <= 1e-5 * (1 + fabs(want)),
                      "dB[%lld]: %.7g vs %.7g", (long long)m, (double)db[m],
                      want);
    }
    free_all(out, 2);
    free_all(in, 2);
}
END_TEST

START_TEST(conv_weight_grad_in_image_chunks)
{
    /* eight or nine images: the grad builder sums dW and dB as 8 partial
    ** sums added by SumToShape; the op itself run with 3 chunks gives
    ** partials that add up to the same. With 8 or more channels in and
    ** out the partials come from Winograd F(3x3, 2x2): odd sizes, no
    ** padding, padding 2, a row wider than a block of tiles. */
    static const naive_conv cases[] = {
        {9, 2, 6, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 6, 7},
        {9, 8, 7, 9, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 7, 9},
        {8, 9, 10, 10, 8, 3, 3, 1, 1, 0, 0, 1, 1, 1, 8, 8},
        {8, 8, 5, 7, 8, 3, 3, 1, 1, 2, 2, 1, 1, 1, 7, 9},
        {8, 8, 4, 150, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 4, 150},
    };

    for (int cs = 0; cs < N_OF(cases); cs++) {
        const naive_conv *p = &cases[cs];
        int64_t xd[4] = {p->N, p->C, p->H, p->W}, bd[1] = {p->M};
        int64_t wd[4] = {p->M, p->C, 3, 3}, yd[4] = {p->N, p->M, p->OH, p->OW};
        int64_t k[2] = {3, 3}, pd[4] = {p->pt, p->pl, p->pt, p->pl};
        int64_t nw = p->M * p->C * 9, np = p->OH * p->OW;
        popc_attr a[3] = {popc_attr_make_ints("kernel_shape", k, 2),
                          popc_attr_make_ints("pads", pd, 4),
                          popc_attr_make_int("image_chunks", 3)};
        popc_tensor *in[3] = {rc_random(xd, 4, 51 + (uint64_t)cs),
                              rc_random(wd, 4, 52), rc_random(bd, 1, 53)};
        popc_tensor *g = rc_random(yd, 4, 54), *grads[2] = {0};
        popc_tensor *part[2] = {0}, *gin[2];
        const float *gv = popc_tensor_cdata(g), *dw, *db, *pw, *pb;
        double *rdx = malloc(sizeof *rdx * (size_t)(p->N * p->C * p->H * p->W));
        double *rdw = malloc(sizeof *rdw * (size_t)nw);
        double *rdb = calloc((size_t)p->M, sizeof *rdb);
        static const int wrt[] = {1, 2};

        naive_conv_bwd(p, popc_tensor_cdata(in[0]), popc_tensor_cdata(in[1]),
                       gv, rdx, rdw);
        for (int64_t n = 0; n < p->N; n++)
            for (int64_t m = 0; m < p->M; m++)
                for (int64_t q = 0; q < np; q++)
                    rdb[m] += gv[(n * p->M + m) * np + q];
        ASSERT_OK(rc_graph_grads(NULL, "Conv", in, 3, wrt, 2, a, 2, 1, g, 1,
                                 grads));
        expect_near(popc_tensor_cdata(grads[0]), rdw, nw, "graph dW");
        expect_near(popc_tensor_cdata(grads[1]), rdb, p->M, "graph dB");
        gin[0] = in[0];
        gin[1] = g;
        ASSERT_OK(harness_run_op("popc", "ConvGradWeight", gin, 2, a, 3, part,
                                 2, 1));
        ck_assert_int_eq(popc_tensor_rank(part[0]), 5);
        ck_assert_int_eq(popc_tensor_dims(part[0])[0], 3);
        ck_assert_int_eq(popc_tensor_numel(part[1]), 3 * p->M);
        pw = popc_tensor_cdata(part[0]);
        pb = popc_tensor_cdata(part[1]);
        dw = popc_tensor_cdata(grads[0]);
        db = popc_tensor_cdata(grads[1]);
        for (int64_t i = 0; i < nw; i++)
            ck_assert_msg(fabs(pw[i] + pw[nw + i] + pw[2 * nw + i] - dw[i]) <=
                              1e-4 * (1 + fabs(dw[i])),
                          "case %d: partials of dW[%lld]", cs, (long long)i);
        for (int64_t m = 0; m < p->M; m++)
            ck_assert_msg(fabs(pb[m] + pb[p->M + m] + pb[2 * p->M + m] -
                               db[m]) <= 1e-4 * (1 + fabs(db[m])),
                          "case %d: partials of dB[%lld]", cs, (long long)m);
        free(rdx);
        free(rdw);
        free(rdb);
        free_all(grads, 2);
        free_all(part, 2);
        free_all(in, 3);
        popc_tensor_free(g);
    }
}
END_TEST

START_TEST(conv_auto_pad_same)
{
    int64_t xd[4] = {1, 2, 7, 7}, wd[4] = {3, 2, 3, 3}, s[2] = {2, 2};
    popc_tensor *in[2] = {rc_random(xd, 4, 1), rc_random(wd, 4, 2)};
    popc_tensor *out = NULL, *ref = NULL;
    int64_t pads[4] = {1, 1, 1, 1};
    popc_attr a1[2] = {popc_attr_make_string("auto_pad", "SAME_UPPER"),
                       popc_attr_make_ints("strides", s, 2)};
    popc_attr a2[2] = {popc_attr_make_ints("pads", pads, 4),
                       popc_attr_make_ints("strides", s, 2)};

    /* 7 with stride 2 -> 4 outputs: total pad 2, split 1 + 1 */
    ASSERT_OK(harness_run_op(NULL, "Conv", in, 2, a1, 2, &out, 1, 0));
    ASSERT_OK(harness_run_op(NULL, "Conv", in, 2, a2, 2, &ref, 1, 0));
    ck_assert(popc_tensor_equal(out, ref));
    ck_assert_int_eq(popc_tensor_dims(out)[2], 4);
    popc_tensor_free(out);
    popc_tensor_free(ref);
    free_all(in, 2);
}
END_TEST

START_TEST(conv_errors_name_node_and_shapes)
{
    int64_t xd[4] = {2, 3, 8, 8}, wd[4] = {4, 2, 3, 3}, wok[4] = {4, 3, 3, 3};
    int64_t bd[1] = {5}, big[4] = {4, 3, 9, 9};
    int64_t p3[3] = {1, 1, 1}, pneg[4] = {1, -1, 1, 1};
    popc_tensor *in[3] = {rc_random(xd, 4, 1), rc_random(wd, 4, 2), NULL};
    popc_attr a;

    /* channel mismatch */
    ck_assert_int_eq(run_expect_fail(NULL, "Conv", in, 2, NULL, 0, 1),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "Conv 'Conv'");
    ASSERT_HAS(popc_last_error(), "[2, 3, 8, 8]");
    ASSERT_HAS(popc_last_error(), "[4, 2, 3, 3]");
    ASSERT_HAS(popc_last_error(), "3 channels");
    popc_tensor_free(in[1]);
    in[1] = rc_random(wok, 4, 3);
    /* bad pads: count, then a negative value */
    a = popc_attr_make_ints("pads", p3, 3);
    ck_assert_int_eq(run_expect_fail(NULL, "Conv", in, 2, &a, 1, 1),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "pads has 3 values");
    a = popc_attr_make_ints("pads", pneg, 4);
    ck_assert_int_eq(run_expect_fail(NULL, "Conv", in, 2, &a, 1, 1),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "pads[1] is -1");
    a = popc_attr_make_string("auto_pad", "SOMETIMES");
    ck_assert_int_eq(run_expect_fail(NULL, "Conv", in, 2, &a, 1, 1),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "SOMETIMES");
    /* bias of the wrong length */
    in[2] = rc_random(bd, 1, 4);
    ck_assert_int_eq(run_expect_fail(NULL, "Conv", in, 3, NULL, 0, 1),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "bias B [5]");
    popc_tensor_free(in[2]);
    in[2] = NULL;
    /* kernel larger than the padded input */
    popc_tensor_free(in[1]);
    in[1] = rc_random(big, 4, 5);
    ck_assert_int_eq(run_expect_fail(NULL, "Conv", in, 2, NULL, 0, 1),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "padded input");
    free_all(in, 3);
}
END_TEST

START_TEST(conv_finite_differences)
{
    static const int wrt3[] = {0, 1, 2};
    int64_t xd[4] = {2, 4, 5, 4}, wd[4] = {4, 2, 2, 3}, bd[1] = {4};
    int64_t s[2] = {1, 2}, p[4] = {1, 0, 0, 2}, d[2] = {2, 1};
    popc_tensor *in[3] = {rc_random(xd, 4, 7), rc_random(wd, 4, 8),
                          rc_random(bd, 1, 9)};
    popc_attr a[4] = {popc_attr_make_ints("strides", s, 2),
                      popc_attr_make_ints("pads", p, 4),
                      popc_attr_make_ints("dilations", d, 2),
                      popc_attr_make_int("group", 2)};

    fd_ok(NULL, "Conv", in, 3, wrt3, 3, a, 4, 1, 1, 2e-3);
    free_all(in, 3);
}
END_TEST

/* ---- pools --------------------------------------------------------------- */

START_TEST(maxpool_matches_torch)
{
    int64_t k[2] = {3, 3}, s[2] = {2, 2}, p[4] = {1, 1, 1, 1}, d[2] = {1, 2};
    popc_attr a[5] = {popc_attr_make_ints("kernel_shape", k, 2),
                      popc_attr_make_ints("strides", s, 2),
                      popc_attr_make_ints("pads", p, 4),
                      popc_attr_make_ints("dilations", d, 2),
                      popc_attr_make_int("ceil_mode", 1)};
    popc_tensor *x = load("maxpool", "x"), *g = load("maxpool", "g");
    popc_tensor *out[2] = {0}, *idx = load("maxpool", "idx");
    popc_tensor *in[2];
    static const char *const dx[] = {"dx"};
    static const char *const names[] = {"x"};
    static const int wrt[] = {0};
    static const char *const y[] = {"y"};

    ASSERT_OK(harness_run_op(NULL, "MaxPool", &x, 1, a, 5, out, 2, 0));
    check_op(NULL, "MaxPool", &x, 1, a, 5, 1, 0, "maxpool", y, RTOL, ATOL);
    ck_assert_int_eq(popc_tensor_dtype(out[1]), POPC_DTYPE_I64);
    ck_assert(popc_tensor_equal(out[1], idx));
    in[0] = x;
    in[1] = g;
    check_op("popc", "MaxPoolGrad", in, 2, a, 5, 1, 1, "maxpool", dx, RTOL,
             ATOL);
    check_graph_grads(NULL, "MaxPool", &x, 1, wrt, names, 1, a, 5, 1, 1,
                      "maxpool", RTOL, ATOL);
    free_all(out, 2);
    popc_tensor_free(x);
    popc_tensor_free(g);
    popc_tensor_free(idx);
}
END_TEST

/* MaxPool by definition (torch's rule: the first maximum in row-major
** window order wins, a NaN wins) and its gradient scattered in window
** order. */
static void naive_maxpool(const float *x, const int64_t *xd, const int64_t *k,
                          const int64_t *s, int64_t oh_n, int64_t ow_n,
                          const float *g, float *y, int64_t *idx, float *dx)
{
    int64_t H = xd[2], W = xd[3], planes = xd[0] * xd[1];

    memset(dx, 0, sizeof *dx * (size_t)(planes * H * W));
    for (int64_t pl = 0; pl < planes; pl++)
        for (int64_t oh = 0; oh < oh_n; oh++)
            for (int64_t ow = 0; ow < ow_n; ow++) {
                int64_t at = -1, o = (pl * oh_n + oh) * ow_n + ow;
                float m = 0;

                for (int64_t i = oh * s[0]; i < oh * s[0] + k[0] && i < H; i++)
                    for (int64_t j = ow * s[1]; j < ow * s[1] + k[1] && j < W;
                         j++) {
                        float v = x[(pl * H + i) * W + j];

                        if (at < 0 || v > m || isnan(v)) {
                            m = v;
                            at = (pl * H + i) * W + j;
                        }
                    }
                y[o] = m;
                idx[o] = at;
                dx[at] += g[o];
            }
}

static int same_float(float a, float b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

START_TEST(maxpool_fast_paths_match_definition)
{
    /* no padding: windows inside the input take the direct paths (2x2
    ** stride 2 vectorized and, for its gradient, written without a
    ** scatter; other shapes tap by tap); ceil_mode windows that leave the
    ** input and overlapping windows take the general path */
    static const struct {
        int64_t xd[4], k[2], s[2];
        int ceil;
    } cases[] = {
        {{2, 3, 7, 9}, {2, 2}, {2, 2}, 0},
        {{2, 3, 7, 9}, {2, 2}, {2, 2}, 1},
        {{1, 2, 9, 11}, {3, 3}, {2, 2}, 0},
        {{1, 2, 6, 6}, {2, 2}, {1, 1}, 0},
        {{2, 2, 8, 300}, {2, 2}, {2, 2}, 0},
    };

    for (int c = 0; c < N_OF(cases); c++) {
        const int64_t *xd = cases[c].xd, *k = cases[c].k, *s = cases[c].s;
        int64_t nx = xd[0] * xd[1] * xd[2] * xd[3];
        int64_t oh = (xd[2] - k[0] + (cases[c].ceil ? s[0] - 1 : 0)) / s[0] + 1;
        int64_t ow = (xd[3] - k[1] + (cases[c].ceil ? s[1] - 1 : 0)) / s[1] + 1;
        int64_t yd[4] = {xd[0], xd[1], oh, ow}, ny = xd[0] * xd[1] * oh * ow;
        float *xv = malloc(sizeof *xv * (size_t)nx);
        float *y = malloc(sizeof *y * (size_t)ny);
        float *dx = malloc(sizeof *dx * (size_t)nx);
        int64_t *idx = malloc(sizeof *idx * (size_t)ny);
        popc_attr a[3] = {popc_attr_make_ints("kernel_shape", k, 2),
                          popc_attr_make_ints("strides", s, 2),
                          popc_attr_make_int("ceil_mode", cases[c].ceil)};
        popc_tensor *x, *g = rc_random(yd, 4, 60 + (uint64_t)c);
        popc_tensor *out[2] = {0}, *in[2], *gx = NULL;
        const float *gy, *oy, *ox;
        const int64_t *oi;

        /* few distinct values (ties), a NaN now and then, -0 and +0 */
        for (int64_t i = 0; i < nx; i++)
            xv[i] = i % 29 == 5   ? NAN
                    : i % 13 == 0 ? -0.0f
                                  : (float)((i * 37) % 7) - 3.0f;
        x = tensor(xd, 4, xv);
        gy = popc_tensor_cdata(g);
        naive_maxpool(xv, xd, k, s, oh, ow, gy, y, idx, dx);
        ASSERT_OK(harness_run_op(NULL, "MaxPool", &x, 1, a, 3, out, 2, 0));
        ck_assert_int_eq(popc_tensor_numel(out[0]), ny);
        oy = popc_tensor_cdata(out[0]);
        oi = popc_tensor_cdata(out[1]);
        for (int64_t i = 0; i < ny; i++) {
            ck_assert_msg(same_float(oy[i], y[i]) && oi[i] == idx[i],
                          "case %d output %lld: %g at %lld, want %g at %lld",
                          c, (long long)i, (double)oy[i], (long long)oi[i],
                          (double)y[i], (long long)idx[i]);
        }
        in[0] = x;
        in[1] = g;
        ASSERT_OK(
            harness_run_op("popc", "MaxPoolGrad", in, 2, a, 3, &gx, 1, 1));
        ox = popc_tensor_cdata(gx);
        for (int64_t i = 0; i < nx; i++)
            ck_assert_msg(same_float(ox[i], dx[i]),
                          "case %d dX[%lld]: %g, want %g", c, (long long)i,
                          (double)ox[i], (double)dx[i]);
        free(xv);
        free(y);
        free(dx);
        free(idx);
        popc_tensor *all[5] = {x, g, gx, out[0], out[1]};
        free_all(all, 5);
    }
}
END_TEST

START_TEST(avgpool_matches_torch)
{
    static const char *const cases[] = {"avgpool", "avgpool_cip"};
    static const char *const y[] = {"y"}, *const dx[] = {"dx"};
    static const char *const names[] = {"x"};
    static const int wrt[] = {0};

    for (int c = 0; c < 2; c++) {
        int64_t k[2] = {3, 2}, s[2] = {2, 2}, p[4] = {1, 1, 1, 1};
        popc_tensor *x = load(cases[c], "x"), *g = load(cases[c], "g");
        popc_attr a[6] = {
            popc_attr_make_ints("kernel_shape", k, 2),
            popc_attr_make_ints("strides", s, 2),
            popc_attr_make_ints("pads", p, 4),
            popc_attr_make_int("ceil_mode", 1),
            popc_attr_make_int("count_include_pad", c),
            popc_attr_make_ints("input_shape", popc_tensor_dims(x), 4)};

        check_op(NULL, "AveragePool", &x, 1, a, 5, 1, 0, cases[c], y, RTOL,
                 ATOL);
        check_op("popc", "AveragePoolGrad", &g, 1, a, 6, 1, 1, cases[c], dx,
                 RTOL, ATOL);
        check_graph_grads(NULL, "AveragePool", &x, 1, wrt, names, 1, a, 5, 1, 1,
                          cases[c], RTOL, ATOL);
        popc_tensor_free(x);
        popc_tensor_free(g);
    }
}
END_TEST

START_TEST(global_avgpool_matches_torch)
{
    static const char *const y[] = {"y"}, *const dx[] = {"dx"};
    static const char *const names[] = {"x"};
    static const int wrt[] = {0};
    popc_tensor *x = load("gap", "x"), *g = load("gap", "g");
    popc_attr a = popc_attr_make_ints("input_shape", popc_tensor_dims(x), 4);

    check_op(NULL, "GlobalAveragePool", &x, 1, NULL, 0, 1, 0, "gap", y, RTOL,
             ATOL);
    check_op("popc", "GlobalAveragePoolGrad", &g, 1, &a, 1, 1, 1, "gap", dx,
             RTOL, ATOL);
    check_graph_grads(NULL, "GlobalAveragePool", &x, 1, wrt, names, 1, NULL, 0,
                      1, 1, "gap", RTOL, ATOL);
    popc_tensor_free(x);
    popc_tensor_free(g);
}
END_TEST

START_TEST(pool_errors)
{
    int64_t xd[4] = {1, 2, 6, 6}, k[2] = {2, 2}, big[4] = {2, 0, 0, 0};
    popc_tensor *x = rc_random(xd, 4, 3);
    popc_attr a[2] = {popc_attr_make_ints("kernel_shape", k, 2),
                      popc_attr_make_ints("pads", big, 4)};

    ck_assert_int_eq(run_expect_fail(NULL, "MaxPool", &x, 1, a, 2, 1),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "MaxPool 'MaxPool'");
    ASSERT_HAS(popc_last_error(), "pads[0] is 2");
    ck_assert_int_eq(run_expect_fail(NULL, "AveragePool", &x, 1, a + 1, 1, 1),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "kernel_shape is missing");
    popc_tensor_free(x);
}
END_TEST

START_TEST(pool_finite_differences)
{
    /* distinct values far apart: no tie within a finite-difference step */
    int64_t xd[4] = {1, 2, 5, 5}, k[2] = {2, 3}, s[2] = {2, 1};
    int64_t p[4] = {1, 0, 1, 1};
    float v[50];
    popc_tensor *x;
    popc_attr a[4] = {popc_attr_make_ints("kernel_shape", k, 2),
                      popc_attr_make_ints("strides", s, 2),
                      popc_attr_make_ints("pads", p, 4),
                      popc_attr_make_int("ceil_mode", 1)};
    popc_attr cip = popc_attr_make_int("count_include_pad", 1);
    popc_attr a5[5];
    static const int wrt[] = {0};

    for (int i = 0; i < 50; i++)
        v[i] = (float)((i * 37) % 50) * 0.04f - 1.0f;
    x = tensor(xd, 4, v);
    fd_ok(NULL, "MaxPool", &x, 1, wrt, 1, a, 4, 1, 1, 1e-3);
    fd_ok(NULL, "AveragePool", &x, 1, wrt, 1, a, 4, 1, 1, 1e-3);
    memcpy(a5, a, sizeof a);
    a5[4] = cip;
    fd_ok(NULL, "AveragePool", &x, 1, wrt, 1, a5, 5, 1, 1, 1e-3);
    fd_ok(NULL, "GlobalAveragePool", &x, 1, wrt, 1, NULL, 0, 1, 1, 1e-3);
    popc_tensor_free(x);
}
END_TEST

/* ---- BatchNormalization -------------------------------------------------- */

START_TEST(batchnorm_training_matches_torch)
{
    static const char *const outs[] = {"y", "rmean", "rvar"};
    static const char *const dxsb[] = {"dx", "dscale", "db"};
    static const char *const names[] = {"x", "scale", "b"};
    static const int wrt[] = {0, 1, 2};
    popc_tensor *in[5] = {load("bn", "x"), load("bn", "scale"), load("bn", "b"),
                          load("bn", "mean"), load("bn", "var")};
    popc_tensor *gin[3];
    popc_attr a[2] = {popc_attr_make_float("epsilon", 1e-5),
                      popc_attr_make_float("momentum", 0.9)};

    check_op(NULL, "BatchNormalization", in, 5, a, 2, 3, 1, "bn_train", outs,
             RTOL, 1e-5);
    gin[0] = load("bn_train", "g");
    gin[1] = in[0];
    gin[2] = in[1];
    check_op("popc", "BatchNormalizationGrad", gin, 3, a, 1, 3, 1, "bn_train",
             dxsb, 1e-4, 1e-5);
    check_graph_grads(NULL, "BatchNormalization", in, 5, wrt, names, 3, a, 2, 1,
                      1, "bn_train", 1e-4, 1e-5);
    popc_tensor_free(gin[0]);
    free_all(in, 5);
}
END_TEST

START_TEST(batchnorm_inference_uses_running_stats)
{
    static const char *const outs[] = {"y", NULL, NULL};
    popc_tensor *in[5] = {load("bn", "x"), load("bn", "scale"), load("bn", "b"),
                          load("bn", "mean"), load("bn", "var")};
    popc_tensor *out[3] = {0};

    check_op(NULL, "BatchNormalization", in, 5, NULL, 0, 3, 0, "bn_eval", outs,
             RTOL, 1e-5);
    ASSERT_OK(
        harness_run_op(NULL, "BatchNormalization", in, 5, NULL, 0, out, 3, 0));
    /* running statistics pass through unchanged */
    ck_assert(popc_tensor_equal(out[1], in[3]));
    ck_assert(popc_tensor_equal(out[2], in[4]));
    free_all(out, 3);
    free_all(in, 5);
}
END_TEST

START_TEST(batchnorm_errors_and_fd)
{
    int64_t xd[4] = {3, 2, 2, 3}, cd[1] = {2}, bad[1] = {3}, one[2] = {1, 2};
    popc_tensor *in[5] = {rc_random(xd, 4, 1), rc_random(cd, 1, 2),
                          rc_random(cd, 1, 3), rc_random(cd, 1, 4),
                          rc_random(cd, 1, 5)};
    popc_tensor *out[1] = {0};
    static const int wrt[] = {0, 1, 2};
    float *v = popc_tensor_data(in[4]);

    v[0] = 1.5f;
    v[1] = 0.5f;
    fd_ok(NULL, "BatchNormalization", in, 5, wrt, 3, NULL, 0, 1, 1, 2e-3);
    popc_tensor_free(in[1]);
    in[1] = rc_random(bad, 1, 6);
    ck_assert_int_eq(
        run_expect_fail(NULL, "BatchNormalization", in, 5, NULL, 0, 1),
        POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "scale [3]");
    ASSERT_HAS(popc_last_error(), "[3, 2, 2, 3]");
    popc_tensor_free(in[1]);
    in[1] = rc_random(cd, 1, 6);
    popc_tensor_free(in[0]);
    in[0] = rc_random(one, 2, 7);
    ck_assert_int_eq(
        harness_run_op(NULL, "BatchNormalization", in, 5, NULL, 0, out, 1, 1),
        POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "more than 1 value per channel");
    free_all(in, 5);
}
END_TEST

/* ---- LayerNormalization -------------------------------------------------- */

START_TEST(layernorm_matches_torch)
{
    static const char *const outs[] = {"y", "mean", "invstd"};
    static const char *const douts[] = {"dx", "dscale", "db"};
    static const char *const names[] = {"x", "scale", "b"};
    static const int wrt[] = {0, 1, 2};
    popc_tensor *in[3] = {load("ln", "x"), load("ln", "scale"),
                          load("ln", "b")};
    popc_tensor *gin[5];
    popc_attr a[2] = {popc_attr_make_int("axis", -2),
                      popc_attr_make_float("epsilon", 1e-5)};

    check_op(NULL, "LayerNormalization", in, 3, a, 2, 3, 0, "ln", outs, RTOL,
             1e-5);
    gin[0] = load("ln", "g");
    gin[1] = in[0];
    gin[2] = in[1];
    gin[3] = load("ln", "mean");
    gin[4] = load("ln", "invstd");
    check_op("popc", "LayerNormalizationGrad", gin, 5, a, 1, 3, 1, "ln", douts,
             1e-4, 1e-5);
    /* the graph gradient with and without Mean/InvStdDev outputs */
    check_graph_grads(NULL, "LayerNormalization", in, 3, wrt, names, 3, a, 2, 1,
                      1, "ln", 1e-4, 1e-5);
    check_graph_grads(NULL, "LayerNormalization", in, 3, wrt, names, 3, a, 2, 3,
                      1, "ln", 1e-4, 1e-5);
    popc_tensor_free(gin[0]);
    popc_tensor_free(gin[3]);
    popc_tensor_free(gin[4]);
    free_all(in, 3);
}
END_TEST

START_TEST(layernorm_errors_and_fd)
{
    int64_t xd[3] = {2, 3, 4}, sd[1] = {4}, bad[1] = {3};
    popc_tensor *in[3] = {rc_random(xd, 3, 1), rc_random(sd, 1, 2),
                          rc_random(sd, 1, 3)};
    static const int wrt[] = {0, 1, 2};
    popc_attr ax = popc_attr_make_int("axis", 3);

    fd_ok(NULL, "LayerNormalization", in, 3, wrt, 3, NULL, 0, 1, 1, 2e-3);
    ck_assert_int_eq(
        run_expect_fail(NULL, "LayerNormalization", in, 3, &ax, 1, 1),
        POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "axis 3 is out of range");
    popc_tensor_free(in[1]);
    in[1] = rc_random(bad, 1, 4);
    ck_assert_int_eq(
        run_expect_fail(NULL, "LayerNormalization", in, 3, NULL, 0, 1),
        POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "Scale [3]");
    ASSERT_HAS(popc_last_error(), "[2, 3, 4]");
    free_all(in, 3);
}
END_TEST

/* ---- Softmax / LogSoftmax ------------------------------------------------ */

START_TEST(softmax_matches_torch)
{
    static const char *const cases[] = {"softmax", "logsoftmax"};
    static const char *const ops[] = {"Softmax", "LogSoftmax"};
    static const char *const gops[] = {"SoftmaxGrad", "LogSoftmaxGrad"};
    static const int64_t axes[] = {1, -1};
    static const char *const y[] = {"y"}, *const dx[] = {"dx"};
    static const char *const names[] = {"x"};
    static const int wrt[] = {0};

    for (int c = 0; c < 2; c++) {
        popc_tensor *x = load(cases[c], "x"), *in[2];
        popc_attr a = popc_attr_make_int("axis", axes[c]);

        check_op(NULL, ops[c], &x, 1, &a, 1, 1, 0, cases[c], y, RTOL, ATOL);
        in[0] = load(cases[c], "g");
        in[1] = load(cases[c], "y");
        check_op("popc", gops[c], in, 2, &a, 1, 1, 1, cases[c], dx, 1e-4, 1e-6);
        check_graph_grads(NULL, ops[c], &x, 1, wrt, names, 1, &a, 1, 1, 1,
                          cases[c], 1e-4, 1e-6);
        fd_ok(NULL, ops[c], &x, 1, wrt, 1, &a, 1, 1, 1, 1e-3);
        free_all(in, 2);
        popc_tensor_free(x);
    }
}
END_TEST

START_TEST(softmax_wide_inner_split)
{
    /* axis 1 of [2, 7, 300]: lanes in blocks of 256 neighbours */
    int64_t d[3] = {2, 7, 300};
    popc_tensor *x = rc_random(d, 3, 77), *y = NULL;
    popc_attr a = popc_attr_make_int("axis", 1);
    const float *px, *py;

    ASSERT_OK(harness_run_op(NULL, "Softmax", &x, 1, &a, 1, &y, 1, 0));
    px = popc_tensor_cdata(x);
    py = popc_tensor_cdata(y);
    for (int n = 0; n < 2; n++)
        for (int i = 0; i < 300; i++) {
            double m = -1e30, s = 0;

            for (int k = 0; k < 7; k++)
                m = fmax(m, px[(n * 7 + k) * 300 + i]);
            for (int k = 0; k < 7; k++)
                s += exp(px[(n * 7 + k) * 300 + i] - m);
            for (int k = 0; k < 7; k++) {
                double want = exp(px[(n * 7 + k) * 300 + i] - m) / s;
                ck_assert(fabs(py[(n * 7 + k) * 300 + i] - want) < 1e-6);
            }
        }
    popc_tensor_free(x);
    popc_tensor_free(y);
}
END_TEST

/* ---- costs --------------------------------------------------------------- */

START_TEST(costs_count_flops)
{
    popc_registry *reg;
    const popc_op_def *mm, *conv;
    popc_view in[2] = {{.dtype = POPC_DTYPE_F32, .rank = 3, .dims = {4, 5, 6}},
                       {.dtype = POPC_DTYPE_F32, .rank = 2, .dims = {6, 7}}};
    popc_view out[1];
    popc_attrs none = {.n = 0, .items = NULL};
    popc_infer_ctx ic = {.host = popc_registry_host(),
                         .node_name = "n",
                         .n_inputs = 2,
                         .inputs = in,
                         .n_outputs = 1,
                         .outputs = out,
                         .attrs = &none};
    popc_cost c;

    ASSERT_OK(popc_registry_global(&reg));
    mm = popc_registry_find_op(reg, NULL, "MatMul", 0);
    conv = popc_registry_find_op(reg, NULL, "Conv", 0);
    ck_assert_ptr_nonnull(mm);
    ck_assert_ptr_nonnull(conv);
    ck_assert(mm->flags & POPC_OP_SPLIT);
    ASSERT_OK(mm->infer(&ic));
    ASSERT_OK(mm->cost(&ic, &c));
    ck_assert(c.flops == 2.0 * 4 * 5 * 6 * 7);
    ck_assert(c.bytes == 4.0 * (120 + 42 + 140));
    in[0] =
        (popc_view){.dtype = POPC_DTYPE_F32, .rank = 4, .dims = {2, 3, 8, 8}};
    in[1] =
        (popc_view){.dtype = POPC_DTYPE_F32, .rank = 4, .dims = {4, 3, 3, 3}};
    ASSERT_OK(conv->infer(&ic));
    ASSERT_OK(conv->cost(&ic, &c));
    /* 2 * N * M * OH * OW * C * kh * kw, im2col buffer of one image */
    ck_assert(c.flops == 2.0 * 2 * 4 * 6 * 6 * 27);
    ck_assert(c.temp_bytes == 4.0 * 27 * 36);
}
END_TEST

static Suite *nn_suite(void)
{
    Suite *s = suite_create("op_nn");
    TCase *tc = tcase_create("matmul");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, matmul_matches_torch);
    tcase_add_test(tc, matmul_large_split_tiles);
    tcase_add_test(tc, matmul_errors_name_node_and_shapes);
    tcase_add_test(tc, gemm_matches_torch);
    tcase_add_test(tc, gemm_large_split_and_errors);
    tcase_add_test(tc, matmul_gemm_graph_grads_match_torch);
    tcase_add_test(tc, matmul_gemm_finite_differences);
    suite_add_tcase(s, tc);
    tc = tcase_create("conv");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, conv_matches_torch);
    tcase_add_test(tc, conv_grad_ops_match_torch);
    tcase_add_test(tc, conv_graph_grads_match_torch);
    tcase_add_test(tc, conv_large_split_tiles);
    tcase_add_test(tc, conv_first_layer_bias_grad);
    tcase_add_test(tc, conv_winograd_adds_bias_last);
    tcase_add_test(tc, conv_weight_grad_in_image_chunks);
    tcase_add_test(tc, conv_auto_pad_same);
    tcase_add_test(tc, conv_errors_name_node_and_shapes);
    tcase_add_test(tc, conv_finite_differences);
    suite_add_tcase(s, tc);
    tc = tcase_create("pool");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, maxpool_matches_torch);
    tcase_add_test(tc, maxpool_fast_paths_match_definition);
    tcase_add_test(tc, avgpool_matches_torch);
    tcase_add_test(tc, global_avgpool_matches_torch);
    tcase_add_test(tc, pool_errors);
    tcase_add_test(tc, pool_finite_differences);
    suite_add_tcase(s, tc);
    tc = tcase_create("norm");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, batchnorm_training_matches_torch);
    tcase_add_test(tc, batchnorm_inference_uses_running_stats);
    tcase_add_test(tc, batchnorm_errors_and_fd);
    tcase_add_test(tc, layernorm_matches_torch);
    tcase_add_test(tc, layernorm_errors_and_fd);
    suite_add_tcase(s, tc);
    tc = tcase_create("softmax");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, softmax_matches_torch);
    tcase_add_test(tc, softmax_wide_inner_split);
    tcase_add_test(tc, costs_count_flops);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(nn_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
