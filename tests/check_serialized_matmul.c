/* check_serialized_matmul.c - poptorch.serializedMatMul
** (popc_serialized_matmul) on the cpu and ipumodel backends:
** - every mode and factor gives the plain MatMul's values: bitwise for the
**   input and output channel splits, to float tolerance for the reducing
**   split, whose sums are checked against a double-precision product;
** - training: one SGD step through a serialized MatMul moves both
**   operands as the plain MatMul's step does, and the backward MatMuls are
**   serialized too (the IPU model's report shows three ops of `factor`
**   steps);
** - float16 (model.half()): the reducing split rounds each product and
**   each running sum to float16 unless keep_precision, checked exactly
**   against values derived by hand from that rule;
** - the IPU model's report: the serialized MatMul's temporaries and the
**   memory peak are lower, its steps and cycles higher;
** - Gemm nodes serialized after they were added (a Linear layer, an
**   imported model): one SGD step equals the plain one for every mode and
**   every transA / transB;
** - a factor that does not divide the split dimension is refused. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "popc/helpers.h"
#include "popc/precision.h"
#include "tests/minijson.h"
#include "tests/profile_files.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

static const char *const backends[] = {"cpu", "ipumodel"};

/* Values on a grid of 1/8 in [-8, 8]: float16 holds them exactly and
** float32 sums of their products are exact. */
static float grid(int64_t i, int64_t j, int salt)
{
    return (float)((i * 37 + j * 11 + salt * 5) % 129 - 64) / 8.0f;
}

static popc_tensor *matrix(int64_t r, int64_t c, int salt)
{
    int64_t d[2] = {r, c};
    popc_tensor *t = NULL;
    float *p;

    OK(popc_tensor_new(POPC_DTYPE_F32, d, 2, &t));
    p = popc_tensor_data(t);
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++)
            p[i * c + j] = grid(i, j, salt);
    return t;
}

/* y = x @ w, w [K, N] a weight; the MatMul serialized as asked. */
static popc_graph *product(int64_t M, int64_t K, int64_t N,
                           popc_matmul_serialization mode, int64_t factor,
                           int keep)
{
    int64_t xd[2] = {M, K};
    popc_graph *g = NULL;
    popc_tensor *w = matrix(K, N, 1);
    int x, wv, y;

    OK(popc_graph_new("product", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_initializer(g, "w", w, 1, &wv));
    OK(popc_serialized_matmul(g, x, wv, mode, factor, keep, &y));
    OK(popc_graph_add_output(g, y));
    popc_tensor_free(w);
    return g;
}

static popc_tensor *infer(popc_graph *g, const char *backend, popc_tensor *x)
{
    popc_options *o = NULL;
    popc_model *m = NULL;
    popc_tensor *y = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    OK(popc_model_new_inference(g, o, &m));
    OK(popc_model_run(m, &x, 1, &y, 1));
    popc_model_free(m);
    popc_options_free(o);
    return y;
}

static const struct {
    popc_matmul_serialization mode;
    int64_t factor;
} cases[] = {
    {POPC_MATMUL_SERIALIZE_INPUT_CHANNELS, 2},
    {POPC_MATMUL_SERIALIZE_INPUT_CHANNELS, 6},
    {POPC_MATMUL_SERIALIZE_REDUCING_DIM, 2},
    {POPC_MATMUL_SERIALIZE_REDUCING_DIM, 8},
    {POPC_MATMUL_SERIALIZE_OUTPUT_CHANNELS, 3},
    {POPC_MATMUL_SERIALIZE_OUTPUT_CHANNELS, 12},
    {POPC_MATMUL_SERIALIZE_DISABLED, 0},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

START_TEST(every_mode_gives_the_product)
{
    const int64_t M = 6, K = 8, N = 12;
    popc_tensor *x = matrix(M, K, 2), *w = matrix(K, N, 1);
    const float *px = popc_tensor_data(x), *pw = popc_tensor_data(w);

    for (int b = 0; b < 2; b++)
        for (int c = 0; c < N_CASES; c++) {
            popc_graph *g = product(M, K, N, cases[c].mode, cases[c].factor,
                                    0);
            popc_graph *plain = product(M, K, N, 0, 0, 0);
            popc_tensor *y = infer(g, backends[b], x);
            popc_tensor *y0 = infer(plain, backends[b], x);
            const float *py = popc_tensor_data(y);
            double worst = 0.0;

            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double s = 0.0;

                    for (int64_t k = 0; k < K; k++)
                        s += (double)px[i * K + k] * pw[k * N + j];
                    worst = fmax(worst, fabs(s - py[i * N + j]));
                }
            ck_assert_msg(worst <= 1e-4, "%s, mode %d factor %lld: off by "
                          "%g", backends[b], (int)cases[c].mode,
                          (long long)cases[c].factor, worst);
            if (cases[c].mode != POPC_MATMUL_SERIALIZE_REDUCING_DIM)
                ck_assert_msg(popc_tensor_max_abs_diff(y, y0) == 0.0,
                              "%s, mode %d: splitting M or N changes no sum",
                              backends[b], (int)cases[c].mode);
            popc_tensor_free(y);
            popc_tensor_free(y0);
            popc_graph_free(g);
            popc_graph_free(plain);
        }
    popc_tensor_free(x);
    popc_tensor_free(w);
}
END_TEST

/* loss = mean((x * a) @ w)^2), a [M, K] and w [K, N] weights, x ones. */
static popc_graph *trained(popc_matmul_serialization mode, int64_t factor)
{
    const int64_t M = 6, K = 8, N = 12;
    int64_t xd[2] = {M, K};
    popc_graph *g = NULL;
    popc_tensor *a = matrix(M, K, 3), *w = matrix(K, N, 1);
    popc_layers *L = NULL;
    int x, av, wv, xa, y, yy, loss;

    OK(popc_graph_new("trained", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_initializer(g, "a", a, 1, &av));
    OK(popc_graph_add_initializer(g, "w", w, 1, &wv));
    OK(popc_graph_add_node(g, NULL, "Mul", 0, (int[]){x, av}, 2, &xa, 1,
                           NULL, 0, "xa", NULL));
    OK(popc_serialized_matmul(g, xa, wv, mode, factor, 0, &y));
    OK(popc_graph_add_node(g, NULL, "Mul", 0, (int[]){y, y}, 2, &yy, 1,
                           NULL, 0, "sq", NULL));
    OK(popc_layers_new(g, 0, &L));
    OK(popc_nn_identity_loss(L, yy, "mean", &loss));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    popc_tensor_free(a);
    popc_tensor_free(w);
    return g;
}

/* One SGD step (lr 1e-4); *a and *w receive the weights after it. With
** dir, the IPU model's profile goes there. */
static void train_step(popc_matmul_serialization mode, int64_t factor,
                       const char *backend, const char *dir,
                       popc_tensor **a, popc_tensor **w)
{
    int64_t xd[2] = {6, 8};
    popc_graph *g = trained(mode, factor);
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    popc_tensor *x = NULL, *loss = NULL;
    const popc_tensor *got;

    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &x));
    for (int i = 0; i < 48; i++)
        ((float *)popc_tensor_data(x))[i] = 1.0f;
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    if (dir)
        OK(popc_options_set(o, "enableProfiling", dir));
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", 1e-4));
    OK(popc_model_new_training(g, o, opt, &m));
    OK(popc_model_run(m, &x, 1, &loss, 1));
    OK(popc_model_get_weight(m, "a", &got));
    OK(popc_tensor_clone(got, a));
    OK(popc_model_get_weight(m, "w", &got));
    OK(popc_tensor_clone(got, w));
    popc_tensor_free(loss);
    popc_tensor_free(x);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
    popc_graph_free(g);
}

/* Ops of the report whose name contains `op` with `serial` steps. */
static int ops_with_steps(const mj_value *report, const char *op, int steps)
{
    const mj_value *ops = mj_get(report, "ops"), *e;
    int n = 0;

    for (int i = 0; (e = mj_at(ops, i)) != NULL; i++) {
        const char *name = mj_str(e, "op");

        if (name && strstr(name, op) &&
            (int)mj_num(e, "serial", 0.0) == steps)
            n++;
    }
    return n;
}

START_TEST(training_matches_the_plain_step)
{
    popc_tensor *a_init = matrix(6, 8, 3);

    for (int c = 0; c < N_CASES; c++) {
        popc_tensor *a = NULL, *w = NULL, *a0 = NULL, *w0 = NULL;

        train_step(cases[c].mode, cases[c].factor, backends[_i], NULL, &a,
                   &w);
        train_step(0, 0, backends[_i], NULL, &a0, &w0);
        ck_assert_msg(popc_tensor_max_abs_diff(a, a0) <= 1e-5 &&
                          popc_tensor_max_abs_diff(w, w0) <= 1e-5,
                      "%s, mode %d factor %lld: a off by %g, w by %g",
                      backends[_i], (int)cases[c].mode,
                      (long long)cases[c].factor,
                      popc_tensor_max_abs_diff(a, a0),
                      popc_tensor_max_abs_diff(w, w0));
        /* the step really moved them */
        ck_assert(popc_tensor_max_abs_diff(a0, a_init) > 1e-3);
        popc_tensor_free(a);
        popc_tensor_free(w);
        popc_tensor_free(a0);
        popc_tensor_free(w0);
    }
    popc_tensor_free(a_init);
}
END_TEST

START_TEST(backward_matmuls_are_serialized)
{
    char *dir = pf_temp_dir(), *sub;
    popc_tensor *a = NULL, *w = NULL;
    mj_value *r;

    train_step(POPC_MATMUL_SERIALIZE_INPUT_CHANNELS, 3, "ipumodel", dir, &a,
               &w);
    sub = pf_sub_dir(dir, "training");
    r = pf_read_profile(sub);
    /* forward, dA (input channels) and dB (reducing dim): 3 steps each */
    ck_assert_int_eq(ops_with_steps(r, "MatMul", 3), 3);
    mj_free(r);
    free(sub);
    pf_remove_dir(dir);
    free(dir);
    popc_tensor_free(a);
    popc_tensor_free(w);
}
END_TEST

/* y = x @ w in float16 (model.half()), reducing dim split in 4. */
static popc_tensor *half_product(int keep)
{
    popc_graph *g = product(4, 8, 3, POPC_MATMUL_SERIALIZE_REDUCING_DIM, 4,
                            keep);
    popc_graph *h = NULL;
    popc_tensor *x = matrix(4, 8, 2), *y;

    OK(popc_graph_to_half(g, NULL, NULL, &h));
    y = infer(h, "cpu", x);
    popc_tensor_free(x);
    popc_graph_free(h);
    popc_graph_free(g);
    return y;
}

static float to_half(float v)
{
    return popc_f16_to_f32(popc_f32_to_f16(v));
}

START_TEST(float16_sums_follow_keep_precision)
{
    popc_tensor *y_half = half_product(0), *y_keep = half_product(1);
    const float *ph = popc_tensor_data(y_half), *pk = popc_tensor_data(y_keep);
    int differ = 0;

    for (int64_t i = 0; i < 4; i++)
        for (int64_t j = 0; j < 3; j++) {
            float acc = 0.0f, exact = 0.0f;

            for (int c = 0; c < 4; c++) {
                /* grid values: products and their sums are exact */
                float p = grid(i, 2 * c, 2) * grid(2 * c, j, 1) +
                          grid(i, 2 * c + 1, 2) * grid(2 * c + 1, j, 1);

                acc = c ? to_half(acc + to_half(p)) : to_half(p);
                exact += p;
            }
            ck_assert_msg(ph[i * 3 + j] == acc, "half sums [%lld,%lld]: got "
                          "%g, want %g", (long long)i, (long long)j,
                          ph[i * 3 + j], acc);
            /* a graph output comes back in the float32 the op computed
            ** (popc/precision.h), so the exact sum arrives unrounded */
            ck_assert_msg(pk[i * 3 + j] == exact, "keep_precision "
                          "[%lld,%lld]: got %g, want %g", (long long)i,
                          (long long)j, pk[i * 3 + j], exact);
            differ += acc != exact;
        }
    ck_assert_msg(differ > 0, "the data must tell the two rules apart");
    popc_tensor_free(y_half);
    popc_tensor_free(y_keep);
}
END_TEST

/* The IPU model's report of y = x @ w, x [512, 1024], w [1024, 1024]. */
static mj_value *big_report(popc_matmul_serialization mode, int64_t factor)
{
    popc_graph *g = product(512, 1024, 1024, mode, factor, 0);
    popc_tensor *x = matrix(512, 1024, 2);
    mj_value *r = pf_inference_report(g, &x, 1, 1);

    popc_tensor_free(x);
    popc_graph_free(g);
    return r;
}

static const mj_value *matmul_op(const mj_value *r)
{
    const mj_value *e;

    for (int i = 0; (e = mj_at(mj_get(r, "ops"), i)) != NULL; i++)
        if (strcmp(mj_str(e, "op"), "MatMul") == 0)
            return e;
    ck_abort_msg("no MatMul in the report");
    return NULL;
}

START_TEST(report_shows_lower_temporaries_and_more_steps)
{
    static const popc_matmul_serialization modes[3] = {
        POPC_MATMUL_SERIALIZE_INPUT_CHANNELS,
        POPC_MATMUL_SERIALIZE_REDUCING_DIM,
        POPC_MATMUL_SERIALIZE_OUTPUT_CHANNELS};
    /* operand copies and float32 partials, in units of 4 bytes: x 512K, w
    ** 1M, y 512K elements; one of 4 steps holds its share of the split */
    static const double want_units[3] = {
        512.0 * 1024 / 4 + 1024.0 * 1024 + 512.0 * 1024 / 4,
        512.0 * 1024 / 4 + 1024.0 * 1024 / 4 + 512.0 * 1024,
        512.0 * 1024 + 1024.0 * 1024 / 4 + 512.0 * 1024 / 4};
    mj_value *plain = big_report(0, 0);
    const mj_value *p = matmul_op(plain);
    double plain_temps = mj_num(mj_get(mj_get(plain, "memory"), "totals"),
                                "temporaries", -1.0);

    ck_assert(mj_num(p, "temp_bytes", 0) == 4.0 * (512.0 * 1024 +
                                                   1024.0 * 1024 +
                                                   512.0 * 1024));
    for (int k = 0; k < 3; k++) {
        mj_value *r = big_report(modes[k], 4);
        const mj_value *s = matmul_op(r);
        double temps = mj_num(mj_get(mj_get(r, "memory"), "totals"),
                              "temporaries", -1.0);

        ck_assert_msg(mj_num(s, "temp_bytes", 0) == 4.0 * want_units[k],
                      "mode %d: temp_bytes %g", k + 1,
                      mj_num(s, "temp_bytes", 0));
        ck_assert_msg(temps > 0 && temps < plain_temps,
                      "mode %d: peak temporaries %g, plain %g", k + 1, temps,
                      plain_temps);
        ck_assert_int_eq((int)mj_num(s, "serial", 0),
                         4 * (int)mj_num(p, "serial", 0));
        ck_assert_msg(mj_num(s, "cycles", 0) > mj_num(p, "cycles", 0),
                      "mode %d: %g cycles, plain %g", k + 1,
                      mj_num(s, "cycles", 0), mj_num(p, "cycles", 0));
        mj_free(r);
    }
    mj_free(plain);
}
END_TEST

START_TEST(bad_factors_are_refused)
{
    int64_t xd[2] = {6, 8}, wd[2] = {8, 12};
    popc_graph *g = NULL;
    int x, w, y;

    OK(popc_graph_new("bad", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_input(g, "w", POPC_DTYPE_F32, wd, 2, &w));
    ck_assert_int_eq(popc_serialized_matmul(g, x, w,
                                            POPC_MATMUL_SERIALIZE_REDUCING_DIM,
                                            3, 0, &y),
                     POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "does not divide the "
                         "reducing_dim dimension (8)") != NULL,
                  "%s", popc_last_error());
    ck_assert_int_eq(
        popc_serialized_matmul(g, x, w, POPC_MATMUL_SERIALIZE_INPUT_CHANNELS,
                               0, 0, &y),
        POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "factor 0") != NULL, "%s",
                  popc_last_error());
    ck_assert_int_eq(popc_serialized_matmul(g, x, w,
                                            (popc_matmul_serialization)9, 2,
                                            0, &y),
                     POPC_EINVAL);
    popc_graph_free(g);
}
END_TEST

/* loss = mean(gemm(x * a, w)^2) with Gemm's transA / transB and a bias
** C [N]; the Gemm serialized after it was added
** (popc_serialize_matmul_node). *a, *w, *c receive the weights after one
** SGD step on `backend`. */
static void gemm_step(int ta, int tb, popc_matmul_serialization mode,
                      int64_t factor, const char *backend, popc_tensor **out)
{
    const int64_t M = 6, K = 8, N = 12;
    int64_t xd[2] = {ta ? K : M, ta ? M : K}, cd[1] = {N};
    popc_graph *g = NULL;
    popc_tensor *a = matrix(xd[0], xd[1], 3);
    popc_tensor *w = matrix(tb ? N : K, tb ? K : N, 1);
    popc_tensor *c = NULL, *x = NULL, *loss = NULL;
    popc_attr at[2] = {{.name = "transA", .type = POPC_ATTR_INT, .i = ta},
                       {.name = "transB", .type = POPC_ATTR_INT, .i = tb}};
    popc_layers *L = NULL;
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    static const char *const names[3] = {"a", "w", "c"};
    int xv, av, wv, cv, xa, y, yy, lv, node;

    OK(popc_tensor_new(POPC_DTYPE_F32, cd, 1, &c));
    for (int i = 0; i < N; i++)
        ((float *)popc_tensor_data(c))[i] = 0.5f * (float)i;
    OK(popc_graph_new("gemm", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &xv));
    OK(popc_graph_add_initializer(g, "a", a, 1, &av));
    OK(popc_graph_add_initializer(g, "w", w, 1, &wv));
    OK(popc_graph_add_initializer(g, "c", c, 1, &cv));
    OK(popc_graph_add_node(g, NULL, "Mul", 0, (int[]){xv, av}, 2, &xa, 1,
                           NULL, 0, "xa", NULL));
    OK(popc_graph_add_node(g, NULL, "Gemm", 0, (int[]){xa, wv, cv}, 3, &y, 1,
                           at, 2, "fc", &node));
    if (mode != POPC_MATMUL_SERIALIZE_DISABLED)
        OK(popc_serialize_matmul_node(g, node, mode, factor, 0));
    OK(popc_graph_add_node(g, NULL, "Mul", 0, (int[]){y, y}, 2, &yy, 1, NULL,
                           0, "sq", NULL));
    OK(popc_layers_new(g, 0, &L));
    OK(popc_nn_identity_loss(L, yy, "mean", &lv));
    OK(popc_graph_add_output(g, lv));
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &x));
    for (int i = 0; i < 48; i++)
        ((float *)popc_tensor_data(x))[i] = 1.0f;
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", 1e-4));
    OK(popc_model_new_training(g, o, opt, &m));
    OK(popc_model_run(m, &x, 1, &loss, 1));
    for (int k = 0; k < 3; k++) {
        const popc_tensor *got;

        OK(popc_model_get_weight(m, names[k], &got));
        OK(popc_tensor_clone(got, &out[k]));
    }
    popc_layers_free(L);
    popc_tensor_free(loss);
    popc_tensor_free(x);
    popc_tensor_free(a);
    popc_tensor_free(w);
    popc_tensor_free(c);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
    popc_graph_free(g);
}

START_TEST(gemm_nodes_serialize_in_every_layout)
{
    static const popc_matmul_serialization modes[3] = {
        POPC_MATMUL_SERIALIZE_INPUT_CHANNELS,
        POPC_MATMUL_SERIALIZE_REDUCING_DIM,
        POPC_MATMUL_SERIALIZE_OUTPUT_CHANNELS};

    for (int t = 0; t < 4; t++)
        for (int k = 0; k < 3; k++) {
            popc_tensor *got[3], *want[3];

            gemm_step(t & 1, t >> 1, modes[k], 2, backends[_i], got);
            gemm_step(t & 1, t >> 1, 0, 0, backends[_i], want);
            for (int j = 0; j < 3; j++) {
                double d = popc_tensor_max_abs_diff(got[j], want[j]);

                ck_assert_msg(d <= 1e-5, "%s, transA %d transB %d, mode %d: "
                              "weight %d off by %g", backends[_i], t & 1,
                              t >> 1, (int)modes[k], j, d);
                popc_tensor_free(got[j]);
                popc_tensor_free(want[j]);
            }
        }
}
END_TEST

START_TEST(serialize_node_refusals)
{
    int64_t xd[2] = {6, 8}, wd[2] = {8, 12};
    popc_graph *g = NULL;
    int x, w, y, r, mm, relu;

    OK(popc_graph_new("bad", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_input(g, "w", POPC_DTYPE_F32, wd, 2, &w));
    OK(popc_graph_add_node(g, NULL, "MatMul", 0, (int[]){x, w}, 2, &y, 1,
                           NULL, 0, "mm", &mm));
    OK(popc_graph_add_node(g, NULL, "Relu", 0, &y, 1, &r, 1, NULL, 0, "relu",
                           &relu));
    ck_assert_int_eq(popc_serialize_matmul_node(
                         g, relu, POPC_MATMUL_SERIALIZE_REDUCING_DIM, 2, 0),
                     POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "only MatMul and Gemm") != NULL,
                  "%s", popc_last_error());
    ck_assert_int_eq(popc_serialize_matmul_node(
                         g, mm, POPC_MATMUL_SERIALIZE_OUTPUT_CHANNELS, 5, 0),
                     POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "output_channels dimension (12) "
                         "of node 'mm'") != NULL, "%s", popc_last_error());
    OK(popc_serialize_matmul_node(g, mm, POPC_MATMUL_SERIALIZE_OUTPUT_CHANNELS,
                                  4, 0));
    popc_graph_free(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("serialized_matmul");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_mode_gives_the_product);
    tcase_add_loop_test(tc, training_matches_the_plain_step, 0, 2);
    tcase_add_test(tc, backward_matmuls_are_serialized);
    tcase_add_test(tc, float16_sums_follow_keep_precision);
    tcase_add_test(tc, report_shows_lower_temporaries_and_more_steps);
    tcase_add_test(tc, bad_factors_are_refused);
    tcase_add_loop_test(tc, gemm_nodes_serialize_in_every_layout, 0, 2);
    tcase_add_test(tc, serialize_node_refusals);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    int failed;

    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
