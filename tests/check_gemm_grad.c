/* check_gemm_grad.c - the weight and bias gradients of Gemm and of a
** MatMul with a bias Add, taken together by popc::GemmGradWeightBias
** (ops/nn/matmul_grad.c, opt/pass_linear.c):
**   - every form of Gemm (transA, transB, alpha, beta, each shape of C)
**     against gradients derived by hand, in double;
**   - the fused op against the nodes it replaces (Gemm, SumToShape, Mul),
**     on the reference kernels and split over the ipumodel's workers;
**   - a Linear layer on 2-D and 3-D inputs against torch
**     (tests/ref/gen_linear_grads.py), at optimizationLevel 0 and 2,
**     with the nodes each level gives;
**   - a small MLP on 3-D inputs trained at levels 0 and 2: same losses.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "popc/layers.h"
#include "popc/optimize.h"
#include "tests/harness/ref_check.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())
#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* |got - want| <= tol * (1 + |want|) for each element. */
static void expect_near(const char *what, const float *got,
                        const double *want, int64_t n, double tol)
{
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(fabs((double)got[i] - want[i]) <=
                          tol * (1.0 + fabs(want[i])),
                      "%s[%lld]: %.8g, want %.8g", what, (long long)i,
                      (double)got[i], want[i]);
}

/* ---- every form of Gemm against the hand-derived gradients --------------- */

typedef struct c_form {
    const char *name;
    int rank;
    int rows, cols; /* C varies over rows / over columns */
} c_form;

static const c_form c_forms[] = {
    {"none", -1, 0, 0}, {"[N]", 1, 0, 1},    {"[1, N]", 2, 0, 1},
    {"[1]", 1, 0, 0},   {"scalar", 0, 0, 0}, {"[M, N]", 2, 1, 1},
    {"[M, 1]", 2, 1, 0}, {"[1, 1]", 2, 0, 0},
};

/* Y = alpha op(A) op(B) + beta C, L = sum(Y * G):
**   d op(A) = alpha G op(B)^T, d op(B) = alpha op(A)^T G,
**   dC = beta G summed over the dims C broadcasts. */
static void gemm_case(int ta, int tb, const c_form *cf, double alpha,
                      double beta, int64_t M, int64_t K, int64_t N)
{
    int64_t ad[2] = {ta ? K : M, ta ? M : K};
    int64_t bd[2] = {tb ? N : K, tb ? K : N};
    int64_t cd[2], yd[2] = {M, N};
    int n_in = cf->rank < 0 ? 2 : 3, wrt[3] = {0, 1, 2};
    popc_attr at[4] = {popc_attr_make_int("transA", ta),
                       popc_attr_make_int("transB", tb),
                       popc_attr_make_float("alpha", alpha),
                       popc_attr_make_float("beta", beta)};
    popc_tensor *in[3] = {rc_random(ad, 2, 11), rc_random(bd, 2, 12), NULL};
    popc_tensor *g = rc_random(yd, 2, 14), *grads[3] = {NULL};
    const float *A = popc_tensor_cdata(in[0]), *B = popc_tensor_cdata(in[1]);
    const float *G = popc_tensor_cdata(g);
    double *da = calloc((size_t)(M * K), sizeof *da);
    double *db = calloc((size_t)(K * N), sizeof *db);
    double *dc = calloc((size_t)(M * N), sizeof *dc);
    int64_t cm = cf->rows ? M : 1, cn = cf->cols ? N : 1;
    char what[160];

    ck_assert(da && db && dc);
    if (cf->rank >= 0) {
        int r = 0;

        if (cf->rank == 2)
            cd[r++] = cm;
        if (cf->rank >= 1)
            cd[r++] = cn;
        in[2] = rc_random(cd, cf->rank, 13);
    }
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double gij = G[i * N + j];

            for (int64_t k = 0; k < K; k++) {
                double a = A[ta ? k * M + i : i * K + k];
                double b = B[tb ? j * K + k : k * N + j];

                da[ta ? k * M + i : i * K + k] += alpha * gij * b;
                db[tb ? j * K + k : k * N + j] += alpha * a * gij;
            }
            dc[(cf->rows ? i : 0) * cn + (cf->cols ? j : 0)] += beta * gij;
        }
    OK(rc_graph_grads(NULL, "Gemm", in, n_in, wrt, n_in, at, 4, 1, g, 1,
                      grads));
    snprintf(what, sizeof what, "Gemm transA %d transB %d C %s alpha %g "
             "beta %g: dA", ta, tb, cf->name, alpha, beta);
    expect_near(what, popc_tensor_cdata(grads[0]), da, M * K, 1e-5);
    what[strlen(what) - 2] = 'B';
    expect_near(what, popc_tensor_cdata(grads[1]), db, K * N, 1e-5);
    if (n_in == 3) {
        const popc_tensor *t = grads[2];

        what[strlen(what) - 2] = 'C';
        ck_assert_int_eq(popc_tensor_rank(t), cf->rank);
        ck_assert_int_eq(popc_tensor_numel(t), cm * cn);
        expect_near(what, popc_tensor_cdata(t), dc, cm * cn, 1e-5);
    }
    for (int i = 0; i < 3; i++) {
        popc_tensor_free(in[i]);
        popc_tensor_free(grads[i]);
    }
    popc_tensor_free(g);
    free(da);
    free(db);
    free(dc);
}

START_TEST(gemm_every_form)
{
    /* 130 x 150 weights: dW is cut into several tiles, whose first row
    ** (column, with transB) adds up dY's columns for dB */
    for (int f = 0; f < 4; f++)
        for (int c = 0; c < N_OF(c_forms); c++)
            gemm_case(f & 1, f >> 1, &c_forms[c], c % 2 ? 0.75 : 1.0,
                      c % 3 ? 1.5 : 1.0, 33, 130, 150);
    /* beta 0: dC is zero; one row */
    gemm_case(0, 1, &c_forms[1], 1.0, 0.0, 5, 7, 9);
    gemm_case(1, 0, &c_forms[2], 2.0, -0.5, 1, 7, 9);
}
END_TEST

/* ---- the fused op against the nodes it replaces -------------------------- */

static int count_op(const popc_graph *g, const char *op)
{
    int n = 0;

    for (int i = 0; i < popc_graph_n_nodes(g); i++)
        n += strcmp(popc_graph_node_op(g, i), op) == 0;
    return n;
}

/* X and dY as inputs; outputs dW, dB of popc::GemmGradWeightBias, then
** the Gemm, SumToShape and Mul the Gemm gradient emits without it. */
static popc_graph *fused_and_unfused(int tx, int tw, double alpha,
                                     double beta, int64_t M, int64_t K,
                                     int64_t N)
{
    int64_t xd[2] = {tx ? K : M, tx ? M : K}, yd[2] = {M, N}, one = 1;
    popc_graph *g = NULL;
    popc_tensor *bt = NULL;
    float bv = (float)beta;
    int x, dy, out[2], w2, s, bc, b2, in[2];
    popc_attr fa[4] = {popc_attr_make_int("transX", tx),
                       popc_attr_make_int("transW", tw),
                       popc_attr_make_float("alpha", alpha),
                       popc_attr_make_float("beta", beta)};
    popc_attr ga[3] = {popc_attr_make_float("alpha", alpha),
                       popc_attr_make_int("transA", tw ? 1 : !tx),
                       popc_attr_make_int("transB", tw ? tx : 0)};
    popc_attr sa = popc_attr_make_ints("shape", &N, 1);

    OK(popc_graph_new("gemm_grad", &g));
    OK(popc_graph_add_input(g, "X", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_input(g, "dY", POPC_DTYPE_F32, yd, 2, &dy));
    in[0] = x;
    in[1] = dy;
    OK(popc_graph_add_node(g, "popc", "GemmGradWeightBias", 0, in, 2, out, 2,
                           fa, 4, "fused", NULL));
    in[0] = tw ? dy : x;
    in[1] = tw ? x : dy;
    OK(popc_graph_add_node(g, NULL, "Gemm", 0, in, 2, &w2, 1, ga, 3, "dW",
                           NULL));
    OK(popc_graph_add_node(g, "popc", "SumToShape", 0, &dy, 1, &s, 1, &sa,
                           1, "sum", NULL));
    OK(popc_tensor_from_data(POPC_DTYPE_F32, &one, 1, &bv, &bt));
    OK(popc_graph_add_constant(g, "beta", bt, &bc));
    popc_tensor_free(bt);
    in[0] = s;
    in[1] = bc;
    OK(popc_graph_add_node(g, NULL, "Mul", 0, in, 2, &b2, 1, NULL, 0, "dB",
                           NULL));
    OK(popc_graph_add_output(g, out[0]));
    OK(popc_graph_add_output(g, out[1]));
    OK(popc_graph_add_output(g, w2));
    OK(popc_graph_add_output(g, b2));
    return g;
}

static void expect_same(const char *what, const popc_tensor *a,
                        const popc_tensor *b)
{
    ck_assert_int_eq(popc_tensor_numel(a), popc_tensor_numel(b));
    ck_assert_msg(memcmp(popc_tensor_cdata(a), popc_tensor_cdata(b),
                         popc_tensor_nbytes(a)) == 0,
                  "%s differs", what);
}

static void expect_close(const char *what, const popc_tensor *got,
                         const popc_tensor *want, double tol)
{
    const float *w = popc_tensor_cdata(want);
    int64_t n = popc_tensor_numel(want);
    double *d = malloc(sizeof *d * (size_t)n);

    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(popc_tensor_numel(got), n);
    for (int64_t i = 0; i < n; i++)
        d[i] = w[i];
    expect_near(what, popc_tensor_cdata(got), d, n, tol);
    free(d);
}

START_TEST(fused_matches_unfused)
{
    /* K < N: dW's tiles cut dY's columns (each sums its own); K > N:
    ** each tile reads all of dY and sums a share of its columns */
    static const int64_t shapes[2][3] = {{300, 140, 200}, {300, 260, 150}};

    for (int f = 0; f < 8; f++) {
        int tx = f & 1, tw = (f >> 1) & 1;
        int64_t M = shapes[f >> 2][0], K = shapes[f >> 2][1];
        int64_t N = shapes[f >> 2][2];
        int64_t xd[2] = {tx ? K : M, tx ? M : K}, yd[2] = {M, N};
        popc_graph *g = fused_and_unfused(tx, tw, 0.5, 2.0, M, K, N);
        popc_tensor *in[2] = {rc_random(xd, 2, 21), rc_random(yd, 2, 22)};
        popc_tensor *ref[4] = {NULL}, *run[4] = {NULL};
        int vals[4];
        popc_options *o = NULL;
        popc_model *m = NULL;

        for (int i = 0; i < 4; i++)
            vals[i] = popc_graph_output(g, i);
        /* the reference kernels: dW bitwise (the same sgemm tiles), dB
        ** summed in double against SumToShape's own order */
        OK(popc_graph_eval(g, in, 2, vals, 4, ref, 0, 0));
        expect_same("dW", ref[0], ref[2]);
        expect_close("dB", ref[1], ref[3], 1e-6);
        /* split into parts on the ipumodel's workers: the same bits */
        OK(popc_options_new(&o));
        OK(popc_options_set(o, "backend", "ipumodel"));
        OK(popc_model_new_inference(g, o, &m));
        OK(popc_model_run(m, in, 2, run, 4));
        for (int i = 0; i < 4; i++)
            expect_same(i % 2 ? "dB split" : "dW split", run[i], ref[i]);
        for (int i = 0; i < 4; i++) {
            popc_tensor_free(ref[i]);
            popc_tensor_free(run[i]);
        }
        popc_model_free(m);
        popc_options_free(o);
        popc_tensor_free(in[0]);
        popc_tensor_free(in[1]);
        popc_graph_free(g);
    }
}
END_TEST

/* Gemm(A [4, 3], B [3, 5], C) summed: how many GemmGradWeightBias and
** SumToShape nodes its gradient has. */
static void census(const int64_t *cd, int crank, const popc_attr *extra,
                   int n_extra, int *fused, int *sums)
{
    int64_t ad[2] = {4, 3}, bd[2] = {3, 5};
    popc_graph *g = NULL;
    popc_attr keep = popc_attr_make_int("keepdims", 0);
    int in[3], y, loss, wrt[2], grads[2];

    OK(popc_graph_new("census", &g));
    OK(popc_graph_add_input(g, "A", POPC_DTYPE_F32, ad, 2, &in[0]));
    OK(popc_graph_add_input(g, "B", POPC_DTYPE_F32, bd, 2, &in[1]));
    OK(popc_graph_add_input(g, "C", POPC_DTYPE_F32, cd, crank, &in[2]));
    OK(popc_graph_add_node(g, NULL, "Gemm", 0, in, 3, &y, 1, extra, n_extra,
                           "gemm", NULL));
    OK(popc_graph_add_node(g, NULL, "ReduceSum", 0, &y, 1, &loss, 1, &keep,
                           1, "loss", NULL));
    wrt[0] = in[1];
    wrt[1] = in[2];
    OK(popc_graph_gradients(g, loss, wrt, 2, 1.0, grads));
    ck_assert(grads[0] >= 0 && grads[1] >= 0);
    *fused = count_op(g, "GemmGradWeightBias");
    *sums = count_op(g, "SumToShape");
    popc_graph_free(g);
}

START_TEST(which_gemms_fuse)
{
    static const int64_t n[1] = {5}, row[2] = {1, 5}, one[1] = {1};
    static const int64_t full[2] = {4, 5}, col[2] = {4, 1};
    popc_attr f16 = popc_attr_make_int("__float16", 1);
    popc_attr ser[2] = {popc_attr_make_string("serialization_mode",
                                              "output_channels"),
                        popc_attr_make_int("serialization_factor", 5)};
    int f, s;

    census(n, 1, NULL, 0, &f, &s);
    ck_assert_msg(f == 1 && s == 0, "C [5]: %d fused, %d sums", f, s);
    census(row, 2, NULL, 0, &f, &s);
    ck_assert_msg(f == 1 && s == 0, "C [1, 5]: %d fused, %d sums", f, s);
    census(one, 1, NULL, 0, &f, &s);
    ck_assert_msg(f == 1 && s == 1, "C [1]: %d fused, %d sums", f, s);
    census(NULL, 0, NULL, 0, &f, &s);
    ck_assert_msg(f == 1 && s == 1, "scalar C: %d fused, %d sums", f, s);
    /* dY itself, or its row sums: nothing to fuse */
    census(full, 2, NULL, 0, &f, &s);
    ck_assert_msg(f == 0 && s == 0, "C [4, 5]: %d fused, %d sums", f, s);
    census(col, 2, NULL, 0, &f, &s);
    ck_assert_msg(f == 0 && s == 1, "C [4, 1]: %d fused, %d sums", f, s);
    census(n, 1, &f16, 1, &f, &s);
    ck_assert_msg(f == 0 && s == 1, "float16 Gemm: %d fused, %d sums", f, s);
    census(n, 1, ser, 2, &f, &s);
    ck_assert_msg(f == 0 && s == 1, "serialized Gemm: %d fused, %d sums", f,
                  s);
}
END_TEST

START_TEST(fused_op_errors)
{
    int64_t xd[2] = {4, 3}, yd[2] = {5, 2};
    popc_graph *g = NULL;
    int x, dy, in[2], out[2];

    OK(popc_graph_new("bad", &g));
    OK(popc_graph_add_input(g, "X", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_input(g, "dY", POPC_DTYPE_F32, yd, 2, &dy));
    in[0] = x;
    in[1] = dy;
    ck_assert_int_eq(popc_graph_add_node(g, "popc", "GemmGradWeightBias", 0,
                                         in, 2, out, 2, NULL, 0, "gw", NULL),
                     POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "GemmGradWeightBias") &&
                      strstr(popc_last_error(), "gw") &&
                      strstr(popc_last_error(), "[4, 3]") &&
                      strstr(popc_last_error(), "[5, 2]"),
                  "%s", popc_last_error());
    popc_graph_free(g);
}
END_TEST

/* ---- a Linear layer against torch ---------------------------------------- */

/* 0.5 sin(0.37 i + 0.5 + k), as gen_linear_grads.py */
static popc_tensor *formula(const int64_t *dims, int rank, int k)
{
    popc_tensor *t = NULL;
    float *p;

    OK(popc_tensor_new(POPC_DTYPE_F32, dims, rank, &t));
    p = popc_tensor_data(t);
    for (int64_t i = 0; i < popc_tensor_numel(t); i++)
        p[i] = (float)(0.5 * sin(0.37 * (double)i + 0.5 + k));
    return t;
}

static popc_tensor *torch_ref(const char *name)
{
    const char *dir = getenv("POPC_TEST_REF");
    char path[4096];
    popc_tensor *t = NULL;

    snprintf(path, sizeof path, "%s/linear_grads/%s.npy",
             dir ? dir : "tests/ref", name);
    OK(popc_npy_load(path, &t));
    return t;
}

/* x [.., 6] -> Linear(6, 5) -> mse (mean) against t; weights set by
** formula. */
static popc_graph *linear_graph(const int64_t *xd, int rank)
{
    int64_t td[POPC_MAX_RANK], wd[2] = {5, 6}, bd[1] = {5};
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    popc_tensor *w = formula(wd, 2, 2), *b = formula(bd, 1, 3);
    int x, t, y, loss;

    memcpy(td, xd, sizeof td[0] * (size_t)rank);
    td[rank - 1] = 5;
    OK(popc_graph_new("linear", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, rank, &x));
    OK(popc_graph_add_input(g, "t", POPC_DTYPE_F32, td, rank, &t));
    OK(popc_layers_new(g, 1, &L));
    OK(popc_nn_linear(L, "fc", x, 6, 5, 1, &y));
    OK(popc_nn_mse_loss(L, y, t, "mean", &loss));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    OK(popc_graph_set_initializer(g, popc_graph_find_value(g, "fc.weight"),
                                  w));
    OK(popc_graph_set_initializer(g, popc_graph_find_value(g, "fc.bias"), b));
    popc_tensor_free(w);
    popc_tensor_free(b);
    return g;
}

static void linear_case(const char *name, const int64_t *xd, int rank,
                        int level, popc_tensor **got)
{
    popc_graph *g = linear_graph(xd, rank);
    popc_optimize_options oo = {.size = sizeof oo, .level = level,
                                .training = 1};
    int64_t td[POPC_MAX_RANK];
    popc_tensor *in[2], *want;
    int wrt[2], grads[2], vals[3];
    static const char *const what[3] = {"loss", "weight_grad", "bias_grad"};
    char msg[128];

    memcpy(td, xd, sizeof td[0] * (size_t)rank);
    td[rank - 1] = 5;
    in[0] = formula(xd, rank, 0);
    in[1] = formula(td, rank, 1);
    OK(popc_graph_optimize(g, &oo, NULL));
    wrt[0] = popc_graph_find_value(g, "fc.weight");
    wrt[1] = popc_graph_find_value(g, "fc.bias");
    vals[0] = popc_graph_output(g, 0);
    OK(popc_graph_gradients(g, vals[0], wrt, 2, 1.0, grads));
    vals[1] = grads[0];
    vals[2] = grads[1];
    /* a 2-D Linear is a Gemm, whose gradient always fuses; a 3-D one a
    ** MatMul and an Add, a Gemm from level 2 on */
    snprintf(msg, sizeof msg, "%s at level %d", name, level);
    if (rank == 2 || level == 2) {
        ck_assert_msg(count_op(g, "GemmGradWeightBias") == 1 &&
                          count_op(g, "SumToShape") == 0,
                      "%s: not fused", msg);
        /* popc_nn_linear's x @ W^T: the Gemm takes W with transB */
        ck_assert_msg(count_op(g, "Transpose") == 0, "%s: %d Transpose",
                      msg, count_op(g, "Transpose"));
    } else {
        ck_assert_msg(count_op(g, "GemmGradWeightBias") == 0 &&
                          count_op(g, "SumToShape") == 1,
                      "%s: fused at level 0", msg);
        ck_assert_msg(count_op(g, "Transpose") > 0, "%s: no Transpose",
                      msg);
    }
    OK(popc_graph_eval(g, in, 2, vals, 3, got, 1, 0));
    for (int i = 0; i < 3; i++) {
        char file[64];

        snprintf(file, sizeof file, "%s_%s", name, what[i]);
        want = torch_ref(file);
        snprintf(msg, sizeof msg, "%s at level %d: %s", name, level,
                 what[i]);
        expect_close(msg, got[i], want, 2e-6);
        popc_tensor_free(want);
    }
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_graph_free(g);
}

START_TEST(linear_against_torch)
{
    static const int64_t x2[2] = {7, 6}, x3[3] = {2, 5, 6};
    popc_tensor *l0[3] = {NULL}, *l2[3] = {NULL};

    for (int c = 0; c < 2; c++) {
        linear_case(c ? "lin3" : "lin2", c ? x3 : x2, c ? 3 : 2, 0, l0);
        linear_case(c ? "lin3" : "lin2", c ? x3 : x2, c ? 3 : 2, 2, l2);
        for (int i = 0; i < 3; i++) {
            expect_close("level 2 against level 0", l2[i], l0[i], 1e-6);
            popc_tensor_free(l0[i]);
            popc_tensor_free(l2[i]);
        }
    }
}
END_TEST

/* ---- training: the same losses with and without the fusion --------------- */

/* x [4, 8, 16] -> Linear(16, 32) -> Relu -> Linear(32, 8) -> mse */
static void train_losses(int level, double *losses, int steps)
{
    int64_t xd[3] = {4, 8, 16}, td[3] = {4, 8, 8};
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    popc_tensor *in[2] = {formula(xd, 3, 0), formula(td, 3, 1)};
    int x, t, h, a, y, loss;

    OK(popc_graph_new("mlp3", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 3, &x));
    OK(popc_graph_add_input(g, "t", POPC_DTYPE_F32, td, 3, &t));
    OK(popc_layers_new(g, 7, &L));
    OK(popc_nn_linear(L, "fc1", x, 16, 32, 1, &h));
    OK(popc_nn_activation(L, "Relu", h, 0.0, &a));
    OK(popc_nn_linear(L, "fc2", a, 32, 8, 1, &y));
    OK(popc_nn_mse_loss(L, y, t, "mean", &loss));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "ipumodel"));
    OK(popc_options_set_int(o, "optimizationLevel", level));
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", 0.2));
    OK(popc_model_new_training(g, o, opt, &m));
    for (int s = 0; s < steps; s++) {
        popc_tensor *l = NULL;

        OK(popc_model_run(m, in, 2, &l, 1));
        losses[s] = ((const float *)popc_tensor_cdata(l))[0];
        popc_tensor_free(l);
    }
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
    popc_graph_free(g);
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
}

START_TEST(mlp3d_trains_the_same)
{
    enum { STEPS = 8 };
    double l0[STEPS], l2[STEPS];

    train_losses(0, l0, STEPS);
    train_losses(2, l2, STEPS);
    ck_assert_msg(l0[STEPS - 1] < 0.9 * l0[0], "no training: %g -> %g",
                  l0[0], l0[STEPS - 1]);
    for (int s = 0; s < STEPS; s++)
        ck_assert_msg(fabs(l2[s] - l0[s]) <= 1e-5 * fabs(l0[s]),
                      "step %d: loss %.8g at level 2, %.8g at level 0", s,
                      l2[s], l0[s]);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gemm_grad");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, gemm_every_form);
    tcase_add_test(tc, fused_matches_unfused);
    tcase_add_test(tc, which_gemms_fuse);
    tcase_add_test(tc, fused_op_errors);
    tcase_add_test(tc, linear_against_torch);
    tcase_add_test(tc, mlp3d_trains_the_same);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
