/* check_memplan.c - the memory planner (core/runtime/arena.c): in-place
** execution only where it is legal, results bitwise equal with and
** without it, POPC_INPLACE refused unless 0 or 1, and weight gradients
** serving as their own accumulators with one micro-batch per step. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "popc/layers.h"
#include "popc/plan_info.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

static int node(popc_graph *g, const char *op, int version, int a, int b,
                const char *name)
{
    int in[2] = {a, b}, y;

    OK(popc_graph_add_node(g, "ai.onnx", op, version, in, b >= 0 ? 2 : 1,
                           &y, 1, NULL, 0, name, NULL));
    OK(popc_graph_set_value_name(g, y, name));
    return y;
}

#define N 256                 /* elements of every value: [4, 64] */
#define B (N * 4)             /* bytes of one activation */

static popc_graph *graph_with_x(const char *name, int *x)
{
    int64_t dims[2] = {4, N / 4};
    popc_graph *g = NULL;

    OK(popc_graph_new(name, &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, dims, 2, x));
    return g;
}

/* x -> a = Relu(x) -> b = Sigmoid(a) -> c = Tanh(b), the output. Each of
** a and b dies at its only reader: in place, one buffer is enough. */
static popc_graph *chain(void)
{
    int x, a, b, c;
    popc_graph *g = graph_with_x("chain", &x);

    a = node(g, "Relu", 14, x, -1, "a");
    b = node(g, "Sigmoid", 13, a, -1, "b");
    c = node(g, "Tanh", 13, b, -1, "c");
    OK(popc_graph_add_output(g, c));
    return g;
}

/* The chain, then d = Add(c, a): a stays live to the end, so b may not
** take its bytes; c takes b's and d takes c's. */
static popc_graph *chain_reusing_a(void)
{
    int x, a, b, c, d;
    popc_graph *g = graph_with_x("reuse", &x);

    a = node(g, "Relu", 14, x, -1, "a");
    b = node(g, "Sigmoid", 13, a, -1, "b");
    c = node(g, "Tanh", 13, b, -1, "c");
    d = node(g, "Add", 14, c, a, "d");
    OK(popc_graph_add_output(g, d));
    return g;
}

/* x -> a = Relu(x), an output -> b = Sigmoid(a), an output: a is kept
** for the caller, so b may not take its bytes. */
static popc_graph *output_read_again(void)
{
    int x, a, b;
    popc_graph *g = graph_with_x("outputs", &x);

    a = node(g, "Relu", 14, x, -1, "a");
    b = node(g, "Sigmoid", 13, a, -1, "b");
    OK(popc_graph_add_output(g, a));
    OK(popc_graph_add_output(g, b));
    return g;
}

/* e = Relu(w) + x for a weight w: e may never take w's bytes. */
static popc_graph *from_weight(popc_tensor **w_out)
{
    int64_t dims[2] = {4, N / 4};
    popc_tensor *wt = NULL;
    int x, w, r, e;
    popc_graph *g = graph_with_x("weight", &x);
    float *wp;

    OK(popc_tensor_new(POPC_DTYPE_F32, dims, 2, &wt));
    wp = popc_tensor_data(wt);
    for (int i = 0; i < N; i++)
        wp[i] = (float)((i * 7) % 13) / 5.0f - 1.2f;
    OK(popc_graph_add_initializer(g, "w", wt, 0, &w));
    OK(popc_tensor_clone(wt, w_out));
    popc_tensor_free(wt);
    r = node(g, "Neg", 13, w, -1, "r");
    e = node(g, "Add", 14, r, x, "e");
    OK(popc_graph_add_output(g, e));
    return g;
}

static popc_tensor *input_x(void)
{
    int64_t dims[2] = {4, N / 4};
    popc_tensor *t = NULL;
    float *p;

    OK(popc_tensor_new(POPC_DTYPE_F32, dims, 2, &t));
    p = popc_tensor_data(t);
    for (int i = 0; i < N; i++)
        p[i] = (float)((i * 37) % 29) / 7.0f - 2.0f;
    return t;
}

/* Compile g for inference on cpu (no graph rewrites, POPC_INPLACE =
** inplace), run it once; its activation arena's bytes. */
static int64_t run_inference(popc_graph *g, const char *inplace,
                             const char *anchor, popc_tensor **out,
                             popc_model **keep)
{
    popc_options *o = NULL;
    popc_model *m = NULL;
    popc_tensor *x = input_x();
    popc_plan_info info;

    setenv("POPC_INPLACE", inplace, 1);
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "cpu"));
    OK(popc_options_set_int(o, "optimizationLevel", 0));
    if (anchor)
        OK(popc_options_set(o, "anchorTensor", anchor));
    OK(popc_model_new_inference(g, o, &m));
    OK(popc_model_run(m, &x, 1, out, 1));
    OK(popc_model_get_plan_info(m, &info));
    unsetenv("POPC_INPLACE");
    popc_tensor_free(x);
    popc_options_free(o);
    if (keep)
        *keep = m;
    else
        popc_model_free(m);
    return info.activation_bytes;
}

START_TEST(inplace_when_the_input_dies)
{
    popc_graph *g = chain();
    popc_tensor *on, *off;

    ck_assert_int_eq(run_inference(g, "1", NULL, &on, NULL), B);
    ck_assert_int_eq(run_inference(g, "0", NULL, &off, NULL), 2 * B);
    ck_assert(popc_tensor_equal(on, off));
    popc_tensor_free(on);
    popc_tensor_free(off);
    popc_graph_free(g);
}
END_TEST

START_TEST(not_while_the_input_is_live)
{
    popc_graph *g = chain_reusing_a();
    popc_tensor *on, *off;

    /* a (live to the end) + one buffer for b, c, d; without: a, b, c */
    ck_assert_int_eq(run_inference(g, "1", NULL, &on, NULL), 2 * B);
    ck_assert_int_eq(run_inference(g, "0", NULL, &off, NULL), 3 * B);
    ck_assert(popc_tensor_equal(on, off));
    popc_tensor_free(on);
    popc_tensor_free(off);
    popc_graph_free(g);
}
END_TEST

START_TEST(not_over_an_output)
{
    popc_graph *g = output_read_again();
    popc_options *o = NULL;
    popc_model *m = NULL;
    popc_tensor *x = input_x(), *out[2];
    popc_plan_info info;
    const float *xv = popc_tensor_cdata(x), *av;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "cpu"));
    OK(popc_model_new_inference(g, o, &m));
    OK(popc_model_run(m, &x, 1, out, 2));
    OK(popc_model_get_plan_info(m, &info));
    ck_assert_int_eq(info.activation_bytes, 2 * B);
    av = popc_tensor_cdata(out[0]);
    for (int i = 0; i < N; i++)
        ck_assert(av[i] == (xv[i] > 0.0f ? xv[i] : 0.0f));
    popc_tensor_free(out[0]);
    popc_tensor_free(out[1]);
    popc_tensor_free(x);
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
}
END_TEST

START_TEST(not_over_an_anchor)
{
    popc_graph *g = chain();
    popc_tensor *on, *off;
    const popc_tensor *b = NULL;
    popc_model *m = NULL;

    /* b is kept to the end: c needs bytes of its own */
    ck_assert_int_eq(run_inference(g, "1", "b=b@All", &on, &m), 2 * B);
    OK(popc_model_get_anchored_tensor(m, "b", &b));
    for (int i = 0; i < N; i++) {
        float v = ((const float *)popc_tensor_cdata(b))[i];
        ck_assert_msg(v >= 0.5f && v < 1.0f, "b[%d] = %g is not "
                      "Sigmoid(Relu(x))", i, v);
    }
    popc_model_free(m);
    run_inference(g, "0", "b=b@All", &off, NULL);
    ck_assert(popc_tensor_equal(on, off));
    popc_tensor_free(on);
    popc_tensor_free(off);
    popc_graph_free(g);
}
END_TEST

START_TEST(never_over_a_weight)
{
    popc_tensor *w0 = NULL, *on, *off, *x;
    const popc_tensor *w = NULL;
    popc_graph *g = from_weight(&w0);
    popc_model *m = NULL;

    /* r = Neg(w) is a buffer of its own; e takes r's bytes */
    ck_assert_int_eq(run_inference(g, "1", NULL, &on, &m), B);
    x = input_x();
    OK(popc_model_run(m, &x, 1, &off, 1));
    popc_tensor_free(x);
    ck_assert(popc_tensor_equal(on, off)); /* the weight did not change */
    OK(popc_model_get_weight(m, "w", &w));
    ck_assert(popc_tensor_equal(w, w0));
    popc_model_free(m);
    popc_tensor_free(off);
    run_inference(g, "0", NULL, &off, NULL);
    ck_assert(popc_tensor_equal(on, off));
    popc_tensor_free(on);
    popc_tensor_free(off);
    popc_tensor_free(w0);
    popc_graph_free(g);
}
END_TEST

START_TEST(bad_setting_refused)
{
    popc_graph *g = chain();
    popc_options *o = NULL;
    popc_model *m = NULL;
    popc_tensor *x = input_x(), *out;

    setenv("POPC_INPLACE", "yes", 1);
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "cpu"));
    OK(popc_model_new_inference(g, o, &m));
    ck_assert_int_eq(popc_model_run(m, &x, 1, &out, 1), POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "POPC_INPLACE is 'yes'") &&
                  strstr(popc_last_error(), "set it to 0"), "%s",
                  popc_last_error());
    unsetenv("POPC_INPLACE");
    popc_model_free(m);
    popc_options_free(o);
    popc_tensor_free(x);
    popc_graph_free(g);
}
END_TEST

/* ---- weight gradients as their own accumulators ------------------------ */

/* x [1, 4, 4, 4] -> conv 4->128 3x3 -> Relu -> conv 128->128 3x3 -> Relu
** -> global mean -> linear 128->10 -> cross entropy. */
#define ALL_GRAD_BYTES (128 * 4 * 9 * 4 + 128 * 128 * 9 * 4 + 10 * 128 * 4 + \
                        (128 + 128 + 10) * 4)

static popc_graph *conv_net(void)
{
    int64_t xd[4] = {1, 4, 4, 4}, ld[1] = {1};
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int x, lab, v, loss;

    OK(popc_graph_new("convnet", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 4, &x));
    OK(popc_graph_add_input(g, "label", POPC_DTYPE_I64, ld, 1, &lab));
    OK(popc_layers_new(g, 3, &L));
    OK(popc_nn_conv2d(L, "conv1", x, 4, 128, 3, 1, 1, 1, 1, 1, &v));
    OK(popc_nn_activation(L, "Relu", v, 0.0, &v));
    OK(popc_nn_conv2d(L, "conv2", v, 128, 128, 3, 1, 1, 1, 1, 1, &v));
    OK(popc_nn_activation(L, "Relu", v, 0.0, &v));
    OK(popc_nn_global_avgpool(L, v, &v));
    OK(popc_nn_flatten(L, v, 1, &v));
    OK(popc_nn_linear(L, "fc", v, 128, 10, 1, &v));
    OK(popc_nn_cross_entropy(L, v, lab, "mean", &loss));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    return g;
}

/* The accumulators' bytes of the last compile, from its debug line. */
static long long accum_bytes = -1;

static void on_log(int level, const char *msg, void *user)
{
    const char *p = strstr(msg, "gradient accumulators ");

    (void)level;
    (void)user;
    if (strncmp(msg, "memory of '", 11) == 0 && p)
        accum_bytes = atoll(p + strlen("gradient accumulators "));
}

/* Train two steps with gradientAccumulation ga: the activation arena's
** bytes; the accumulators' bytes, the loss of each step and the final
** weights of conv2 through the pointers. */
static int64_t train_conv(int ga, long long *accum, float loss[2],
                          popc_tensor **w2)
{
    popc_graph *g = conv_net();
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    popc_plan_info info;
    int64_t xd[4] = {ga, 4, 4, 4}, ld[1] = {ga};
    popc_tensor *in[2], *out = NULL;
    const popc_tensor *w = NULL;
    float *xp;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "cpu"));
    if (ga > 1)
        OK(popc_options_set_int(o, "Training.gradientAccumulation", ga));
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", 0.05));
    OK(popc_optimizer_set(opt, "momentum", 0.9));
    OK(popc_model_new_training(g, o, opt, &m));
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 4, &in[0]));
    OK(popc_tensor_new(POPC_DTYPE_I64, ld, 1, &in[1]));
    xp = popc_tensor_data(in[0]);
    for (int i = 0; i < 64 * ga; i++)
        xp[i] = (float)((i * 11) % 17) / 8.0f - 1.0f;
    for (int i = 0; i < ga; i++)
        ((int64_t *)popc_tensor_data(in[1]))[i] = (3 + 5 * i) % 10;
    accum_bytes = -1;
    popc_log_set_level(POPC_LOG_DEBUG);
    popc_log_set_callback(on_log, NULL);
    for (int step = 0; step < 2; step++) {
        OK(popc_model_run(m, in, 2, &out, 1));
        loss[step] = *(const float *)popc_tensor_cdata(out);
        popc_tensor_free(out);
    }
    popc_log_set_callback(NULL, NULL);
    popc_log_set_level(POPC_LOG_WARN);
    *accum = accum_bytes;
    OK(popc_model_get_plan_info(m, &info));
    OK(popc_model_get_weight(m, "conv2.weight", &w));
    OK(popc_tensor_clone(w, w2));
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
    popc_graph_free(g);
    return info.activation_bytes;
}

START_TEST(gradients_are_the_accumulators)
{
    float l1[2], l2[2], l3[2];
    popc_tensor *w1, *w2, *w3;
    long long acc1, acc2, acc3;
    int64_t one, two;

    unsetenv("POPC_INPLACE");
    one = train_conv(1, &acc1, l1, &w1);
    two = train_conv(2, &acc2, l2, &w2);
    /* the same plan (one micro-batch of one row either way), but with
    ** gradientAccumulation 1 the weight gradients in the arena are the
    ** accumulators: every weight's worth of bytes less */
    ck_assert_int_eq(one, two);
    ck_assert_int_ge(one, ALL_GRAD_BYTES);
    ck_assert_int_eq(acc2, ALL_GRAD_BYTES);
    ck_assert_int_eq(acc1, 0);
    /* and the numbers do not depend on in-place execution */
    setenv("POPC_INPLACE", "0", 1);
    ck_assert_int_ge(train_conv(1, &acc3, l3, &w3), one);
    unsetenv("POPC_INPLACE");
    ck_assert(l1[0] == l3[0] && l1[1] == l3[1]);
    ck_assert(popc_tensor_equal(w1, w3));
    ck_assert(l1[1] != l1[0]); /* it trained */
    popc_tensor_free(w1);
    popc_tensor_free(w2);
    popc_tensor_free(w3);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("memplan");
    TCase *tc = tcase_create("memplan");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, inplace_when_the_input_dies);
    tcase_add_test(tc, not_while_the_input_is_live);
    tcase_add_test(tc, not_over_an_output);
    tcase_add_test(tc, not_over_an_anchor);
    tcase_add_test(tc, never_over_a_weight);
    tcase_add_test(tc, bad_setting_refused);
    tcase_add_test(tc, gradients_are_the_accumulators);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
