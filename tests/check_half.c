/* check_half.c - popc_graph_to_half (popc/precision.h), PopTorch's
** model.half(): the converted graph's dtypes and names, part of a model,
** buffers kept float32 (Precision.runningStatisticsAlwaysFloat), and
** training and inference against the float32 model as the reference.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/minijson.h"
#include "tests/profile_files.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())
#define B 8

/* x [B, 1, 8, 8] -> conv (4 channels) -> BatchNorm -> Relu -> flatten ->
** fc (256 -> 10) -> cross entropy, the logits and the loss as outputs. */
static popc_graph *model(int training)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int64_t xd[4] = {B, 1, 8, 8}, ld[1] = {B};
    int x, lab, c, n, r, f, o, loss;

    OK(popc_graph_new("half", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 4, &x));
    OK(popc_layers_new(g, 7, &L));
    OK(popc_nn_conv2d(L, "conv", x, 1, 4, 3, 1, 1, 1, 1, 1, &c));
    OK(popc_nn_batchnorm2d(L, "bn", c, 4, 1e-5, 0.1, &n));
    OK(popc_nn_activation(L, "Relu", n, 0.0, &r));
    OK(popc_nn_flatten(L, r, 1, &f));
    OK(popc_nn_linear(L, "fc", f, 256, 10, 1, &o));
    OK(popc_graph_add_output(g, o));
    if (training) {
        OK(popc_graph_add_input(g, "label", POPC_DTYPE_I32, ld, 1, &lab));
        OK(popc_nn_cross_entropy(L, o, lab, "mean", &loss));
        OK(popc_graph_add_output(g, loss));
    }
    popc_layers_free(L);
    return g;
}

static popc_dtype dtype_of(const popc_graph *g, const char *name)
{
    int v = popc_graph_find_value(g, name);

    ck_assert_msg(v >= 0, "no value '%s'", name);
    return popc_graph_value_info(g, v).dtype;
}

START_TEST(conversion)
{
    popc_graph *g = model(1), *h = NULL, *part = NULL, *all = NULL;
    popc_options *o = NULL;

    OK(popc_graph_to_half(g, NULL, NULL, &h));
    ck_assert_int_eq(dtype_of(h, "conv.weight"), POPC_DTYPE_F16);
    ck_assert_int_eq(dtype_of(h, "fc.weight"), POPC_DTYPE_F16);
    ck_assert_int_eq(dtype_of(h, "bn.weight"), POPC_DTYPE_F16);
    /* running statistics are buffers: float32 (the option's default) */
    ck_assert_int_eq(dtype_of(h, "bn.running_mean"), POPC_DTYPE_F32);
    /* the host interface stays float32 */
    ck_assert_int_eq(popc_graph_value_info(h, popc_graph_input(h, 0)).dtype,
                     POPC_DTYPE_F32);
    for (int i = 0; i < popc_graph_n_outputs(h); i++)
        ck_assert_int_eq(popc_graph_value_info(h, popc_graph_output(h, i))
                             .dtype,
                         POPC_DTYPE_F32);
    /* node names are kept; the casts are named after their values */
    ck_assert_int_ge(popc_graph_find_value(h, "conv:0"), 0);
    ck_assert_int_eq(dtype_of(h, "conv:0"), POPC_DTYPE_F16);
    ck_assert_int_eq(dtype_of(h, "conv:0/f32"), POPC_DTYPE_F32);
    OK(popc_graph_to_half(g, "fc.", NULL, &part));
    ck_assert_int_eq(dtype_of(part, "fc.weight"), POPC_DTYPE_F16);
    ck_assert_int_eq(dtype_of(part, "conv.weight"), POPC_DTYPE_F32);
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "Precision.runningStatisticsAlwaysFloat",
                        "false"));
    OK(popc_graph_to_half(g, NULL, o, &all));
    ck_assert_int_eq(dtype_of(all, "bn.running_mean"), POPC_DTYPE_F16);
    popc_options_free(o);
    popc_graph_free(g);
    popc_graph_free(h);
    popc_graph_free(part);
    popc_graph_free(all);
}
END_TEST

static void inputs(int64_t rows, int seed, popc_tensor **in)
{
    int64_t xd[4] = {rows, 1, 8, 8}, ld[1] = {rows};

    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 4, &in[0]));
    OK(popc_tensor_new(POPC_DTYPE_I32, ld, 1, &in[1]));
    for (int64_t i = 0; i < rows * 64; i++)
        ((float *)popc_tensor_data(in[0]))[i] =
            (float)(((i + seed) * 7919) % 97) / 97.0f - 0.5f;
    for (int64_t i = 0; i < rows; i++)
        ((int32_t *)popc_tensor_data(in[1]))[i] = (int32_t)((i + seed) % 10);
}

/* Ten SGD steps of the half model and of the float32 model on one
** backend: the losses agree within half precision's reach (2%), and the
** trained float16 weights equal the float32 ones within 1e-2. */
static void train_case(const char *backend)
{
    popc_graph *g = model(1), *h = NULL;
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m32 = NULL, *m16 = NULL;
    const popc_tensor *w32, *w16;
    popc_tensor *wide = NULL;

    OK(popc_graph_to_half(g, NULL, NULL, &h));
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", 0.05));
    OK(popc_optimizer_set(opt, "momentum", 0.9));
    OK(popc_model_new_training(g, o, opt, &m32));
    OK(popc_model_new_training(h, o, opt, &m16));
    for (int s = 0; s < 10; s++) {
        popc_tensor *in[2], *a[2], *b[2];
        float la, lb;

        inputs(B, s, in);
        OK(popc_model_run(m32, in, 2, a, 2));
        OK(popc_model_run(m16, in, 2, b, 2));
        la = ((const float *)popc_tensor_data(a[1]))[0];
        lb = ((const float *)popc_tensor_data(b[1]))[0];
        ck_assert_int_eq(popc_tensor_dtype(b[1]), POPC_DTYPE_F32);
        ck_assert_msg(fabsf(la - lb) <= 0.02f * fabsf(la), "step %d: loss "
                      "%g (float32) vs %g (float16)", s, la, lb);
        for (int i = 0; i < 2; i++) {
            popc_tensor_free(in[i]);
            popc_tensor_free(a[i]);
            popc_tensor_free(b[i]);
        }
    }
    OK(popc_model_get_weight(m32, "fc.weight", &w32));
    OK(popc_model_get_weight(m16, "fc.weight", &w16));
    ck_assert_int_eq(popc_tensor_dtype(w16), POPC_DTYPE_F16);
    OK(popc_tensor_cast(w16, POPC_DTYPE_F32, &wide));
    ck_assert_msg(popc_tensor_max_abs_diff(wide, w32) < 1e-2, "weights "
                  "differ by %g", popc_tensor_max_abs_diff(wide, w32));
    popc_tensor_free(wide);
    popc_model_free(m32);
    popc_model_free(m16);
    popc_optimizer_free(opt);
    popc_options_free(o);
    popc_graph_free(g);
    popc_graph_free(h);
}

/* Precision.halfFloatCasting: w (converted) + b (not converted) mixes
** float16 and float32: computed in float16 by default (b cast down), in
** float32 with HalfUpcastToFloat. */
static popc_dtype mixed_add(const char *casting)
{
    int64_t d[1] = {4};
    popc_graph *g = NULL, *h = NULL;
    popc_tensor *t = NULL;
    popc_options *o = NULL;
    int in[2], x, y, z;
    popc_dtype dt;

    OK(popc_graph_new("mixed", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, d, 1, &x));
    OK(popc_tensor_new(POPC_DTYPE_F32, d, 1, &t));
    OK(popc_graph_add_initializer(g, "w", t, 1, &in[0]));
    OK(popc_graph_add_initializer(g, "b", t, 1, &in[1]));
    popc_tensor_free(t);
    OK(popc_graph_add_node(g, NULL, "Add", 0, in, 2, &y, 1, NULL, 0, "add",
                           NULL));
    in[0] = x;
    in[1] = y;
    OK(popc_graph_add_node(g, NULL, "Mul", 0, in, 2, &z, 1, NULL, 0, "mul",
                           NULL));
    OK(popc_graph_add_output(g, z));
    OK(popc_options_new(&o));
    if (casting)
        OK(popc_options_set(o, "Precision.halfFloatCasting", casting));
    OK(popc_graph_to_half(g, "w", o, &h));
    dt = dtype_of(h, "add:0");
    popc_options_free(o);
    popc_graph_free(g);
    popc_graph_free(h);
    return dt;
}

START_TEST(half_float_casting)
{
    ck_assert_int_eq(mixed_add(NULL), POPC_DTYPE_F16);
    ck_assert_int_eq(mixed_add("FloatDowncastToHalf"), POPC_DTYPE_F16);
    ck_assert_int_eq(mixed_add("HalfUpcastToFloat"), POPC_DTYPE_F32);
}
END_TEST

/* A file's graph made half is still a file's graph: its foreign code
** keeps needing the user's consent. */
START_TEST(half_copy_keeps_the_origin)
{
    popc_graph *g = model(0), *h = NULL, *h2 = NULL;

    OK(popc_graph_to_half(g, NULL, NULL, &h));
    ck_assert_ptr_null(popc_graph_origin(h));
    OK(popc_graph_set_origin(g, "/data/run.ini"));
    OK(popc_graph_to_half(g, NULL, NULL, &h2));
    ck_assert_str_eq(popc_graph_origin(h2), "/data/run.ini");
    popc_graph_free(g);
    popc_graph_free(h);
    popc_graph_free(h2);
}
END_TEST

START_TEST(training_cpu)
{
    train_case("cpu");
}
END_TEST

START_TEST(training_ipumodel)
{
    train_case("ipumodel");
}
END_TEST

/* Inference of the half model equals the float32 model run on the same
** weights rounded to half (the model's own), within the rounding of
** half activations. */
START_TEST(inference_matches_rounded_weights)
{
    popc_graph *g = model(0), *h = NULL, *rounded = NULL;
    popc_options *o = NULL;
    popc_model *m16 = NULL, *m32 = NULL;
    popc_tensor *in[2], *a = NULL, *b = NULL;

    OK(popc_graph_to_half(g, NULL, NULL, &h));
    OK(popc_graph_clone(g, &rounded));
    for (int v = 0; v < popc_graph_n_values(rounded); v++) {
        popc_tensor *t = popc_graph_value_tensor(rounded, v), *t16, *t32;

        if (!t || popc_tensor_dtype(t) != POPC_DTYPE_F32 ||
            !popc_graph_value_trainable(rounded, v))
            continue;
        OK(popc_tensor_cast(t, POPC_DTYPE_F16, &t16));
        OK(popc_tensor_cast(t16, POPC_DTYPE_F32, &t32));
        OK(popc_graph_set_initializer(rounded, v, t32));
        popc_tensor_free(t16);
        popc_tensor_free(t32);
    }
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "cpu"));
    OK(popc_model_new_inference(h, o, &m16));
    OK(popc_model_new_inference(rounded, o, &m32));
    inputs(B, 3, in);
    OK(popc_model_run(m16, in, 1, &a, 1));
    OK(popc_model_run(m32, in, 1, &b, 1));
    ck_assert_msg(popc_tensor_max_abs_diff(a, b) < 1e-2, "logits differ by "
                  "%g", popc_tensor_max_abs_diff(a, b));
    ck_assert(popc_tensor_max_abs_diff(a, b) > 0.0); /* really half */
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_tensor_free(a);
    popc_tensor_free(b);
    popc_model_free(m16);
    popc_model_free(m32);
    popc_options_free(o);
    popc_graph_free(g);
    popc_graph_free(h);
    popc_graph_free(rounded);
}
END_TEST

/* ---- the memory report ----------------------------------------------------- */

/* memory.totals of one training step of g on ipumodel. */
static void memory_of(popc_graph *g, double *weights, double *acts)
{
    char *dir = pf_temp_dir(), *sub = pf_sub_dir(dir, "training");
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    popc_tensor *in[2], *out[2];
    mj_value *v;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "ipumodel"));
    OK(popc_options_set(o, "enableProfiling", dir));
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", 0.01));
    OK(popc_model_new_training(g, o, opt, &m));
    inputs(B, 1, in);
    OK(popc_model_run(m, in, 2, out, 2));
    v = pf_read_profile(sub);
    *weights = mj_num(mj_get(mj_get(v, "memory"), "totals"), "weights", -1);
    *acts = mj_num(mj_get(mj_get(v, "memory"), "totals"), "activations", -1);
    mj_free(v);
    for (int i = 0; i < 2; i++) {
        popc_tensor_free(in[i]);
        popc_tensor_free(out[i]);
    }
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
    pf_remove_dir(dir);
    free(sub);
    free(dir);
}

/* An IPU runs a half model in float16: weights take half the bytes, and so
** do activations, within what stays float32 in both (the streamed input,
** the loss); the casts popc adds around float32 ops are aliases. */
START_TEST(half_model_takes_half_the_memory)
{
    popc_graph *g = model(1), *h = NULL;
    double w32, a32, w16, a16;

    OK(popc_graph_to_half(g, NULL, NULL, &h));
    memory_of(g, &w32, &a32);
    memory_of(h, &w16, &a16);
    ck_assert_msg(fabs(w16 - w32 / 2) <= 0.01 * w32, "weights: %g bytes "
                  "(float32 %g)", w16, w32);
    ck_assert_msg(a16 <= 0.55 * a32 && a16 > 0.25 * a32, "activations: %g "
                  "bytes (float32 %g)", a16, a32);
    popc_graph_free(g);
    popc_graph_free(h);
}
END_TEST

/* ---- stochastic rounding --------------------------------------------------- */

#define SR_N 100000

/* x (float32, SR_N copies of v) -> Cast to float16 -> Cast back: the mean
** rounding error of the float16 values, in units of their spacing. */
static popc_status rounding_error(const char *backend, int stochastic,
                                  const char *seed, double v, double ulp,
                                  double *mean, popc_tensor **kept)
{
    int64_t d[1] = {SR_N};
    popc_attr to16 = {.name = "to", .type = POPC_ATTR_INT, .i = 10};
    popc_attr to32 = {.name = "to", .type = POPC_ATTR_INT, .i = 1};
    popc_graph *g = NULL;
    popc_options *o = NULL;
    popc_model *m = NULL;
    popc_tensor *x = NULL, *y = NULL;
    int in, h, out;
    double sum = 0.0;
    popc_status st;

    OK(popc_graph_new("sr", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, d, 1, &in));
    OK(popc_graph_add_node(g, NULL, "Cast", 0, &in, 1, &h, 1, &to16, 1,
                           "to_half", NULL));
    OK(popc_graph_add_node(g, NULL, "Cast", 0, &h, 1, &out, 1, &to32, 1,
                           "to_float", NULL));
    OK(popc_graph_add_output(g, out));
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    OK(popc_options_set(o, "randomSeed", seed));
    if (stochastic)
        OK(popc_options_set(o, "Precision.enableStochasticRounding",
                            "true"));
    OK(popc_model_new_inference(g, o, &m));
    OK(popc_tensor_new(POPC_DTYPE_F32, d, 1, &x));
    for (int i = 0; i < SR_N; i++)
        ((float *)popc_tensor_data(x))[i] = (float)v;
    st = popc_model_run(m, &x, 1, &y, 1);
    for (int i = 0; st == POPC_OK && i < SR_N; i++)
        sum += ((const float *)popc_tensor_data(y))[i] - v;
    *mean = sum / SR_N / ulp;
    if (kept && st == POPC_OK) {
        *kept = y;
        y = NULL;
    }
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
    return st;
}

/* 1 + 0.3 ulp lies between the halves 1 and 1 + 2^-10: to nearest always
** gives 1 (mean error -0.3 ulp); stochastic rounding gives 1 + 2^-10 with
** probability 0.3, so the mean error is 0 within 0.01 ulp (7 standard
** errors of 100000 draws). The same seed repeats bitwise, another seed
** draws differently; cpu, the oracle, refuses the option. */
START_TEST(stochastic_rounding)
{
    double ulp = 1.0 / 1024.0, v = 1.0 + 0.3 * ulp, nearest, sr, neg;
    popc_tensor *a = NULL, *b = NULL, *c = NULL;

    OK(rounding_error("ipumodel", 0, "1", v, ulp, &nearest, NULL));
    ck_assert_msg(fabs(nearest + 0.3) < 1e-3, "to nearest: %g", nearest);
    OK(rounding_error("ipumodel", 1, "1", v, ulp, &sr, &a));
    ck_assert_msg(fabs(sr) < 0.01, "stochastic: mean error %g ulp", sr);
    OK(rounding_error("ipumodel", 1, "-7", -v, ulp, &neg, NULL));
    ck_assert_msg(fabs(neg) < 0.01, "negative: mean error %g ulp", neg);
    OK(rounding_error("ipumodel", 1, "1", v, ulp, &sr, &b));
    ck_assert(popc_tensor_equal(a, b));
    OK(rounding_error("ipumodel", 1, "2", v, ulp, &sr, &c));
    ck_assert(!popc_tensor_equal(a, c));
    ck_assert_int_eq(rounding_error("cpu", 1, "1", v, ulp, &sr, NULL),
                     POPC_EUNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "use the ipumodel "
                                 "backend"));
    popc_tensor_free(a);
    popc_tensor_free(b);
    popc_tensor_free(c);
}
END_TEST

/* Five steps of the half model on ipumodel with stochastic rounding and
** randomSeed `seed`: fc.weight afterwards. */
static popc_tensor *sr_weights(const char *seed)
{
    popc_graph *g = model(1), *h = NULL;
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    const popc_tensor *w;
    popc_tensor *copy = NULL;

    OK(popc_graph_to_half(g, NULL, NULL, &h));
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "randomSeed", seed));
    OK(popc_options_set(o, "Precision.enableStochasticRounding", "true"));
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", 0.05));
    OK(popc_model_new_training(h, o, opt, &m));
    for (int s = 0; s < 5; s++) {
        popc_tensor *in[2], *out[2];

        inputs(B, s, in);
        OK(popc_model_run(m, in, 2, out, 2));
        for (int i = 0; i < 2; i++) {
            popc_tensor_free(in[i]);
            popc_tensor_free(out[i]);
        }
    }
    OK(popc_model_get_weight(m, "fc.weight", &w));
    OK(popc_tensor_clone(w, &copy));
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
    popc_graph_free(g);
    popc_graph_free(h);
    return copy;
}

/* Half training with stochastic rounding (casts and weight updates)
** repeats bitwise with its seed and differs with another. */
START_TEST(stochastic_training_repeats)
{
    popc_tensor *a = sr_weights("5"), *b = sr_weights("5"),
                *c = sr_weights("6");

    ck_assert(popc_tensor_equal(a, b));
    ck_assert(!popc_tensor_equal(a, c));
    popc_tensor_free(a);
    popc_tensor_free(b);
    popc_tensor_free(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("half");
    TCase *tc = tcase_create("half");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, conversion);
    tcase_add_test(tc, half_float_casting);
    tcase_add_test(tc, half_copy_keeps_the_origin);
    tcase_add_test(tc, training_cpu);
    tcase_add_test(tc, training_ipumodel);
    tcase_add_test(tc, inference_matches_rounded_weights);
    tcase_add_test(tc, half_model_takes_half_the_memory);
    tcase_add_test(tc, stochastic_rounding);
    tcase_add_test(tc, stochastic_training_repeats);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
