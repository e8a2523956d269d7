/* check_cpu_op.c - CPU ops (poptorch.CPU): popc_cpu_op and the model's
** host callbacks on the cpu and ipumodel backends: results feeding later
** ops, every dtype passed through, device iterations and replicas, the
** micro-batch followed, first registration wins, errors of missing and
** failing callbacks, the training refusal, and the host time in the
** latency figures. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <check.h>

#include "popc/popc.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

static int has(const char *text)
{
    return strstr(popc_last_error(), text) != NULL;
}

typedef struct counter {
    int calls;
    int64_t rows;            /* dim 0 seen on the last call */
    double sleep;            /* seconds to sleep per call */
    int fail_on;             /* call number that fails, 0: never */
} counter;

/* out0 (float32) = 2 x + 1; out1 (int32) = index of each row's largest
** element; out2 (float16) = x as float16. */
static popc_status affine(void *user, const popc_view *in, int n_in,
                          const popc_view *out, int n_out)
{
    counter *c = user;
    const float *x = in[0].data;
    int64_t rows = in[0].dims[0], cols = in[0].dims[1];

    c->calls++;
    c->rows = rows;
    if (c->sleep > 0) {
        struct timespec ts = {0, (long)(c->sleep * 1e9)};
        nanosleep(&ts, NULL);
    }
    if (c->fail_on && c->calls == c->fail_on)
        return popc_set_error(POPC_EINVAL, "affine: refused call %d",
                              c->calls);
    if (n_in != 1 || n_out != 3 || in[0].dtype != POPC_DTYPE_F32 ||
        out[1].dtype != POPC_DTYPE_I32 || out[2].dtype != POPC_DTYPE_F16)
        return popc_set_error(POPC_EINVAL, "affine: unexpected signature");
    for (int64_t r = 0; r < rows; r++) {
        int32_t best = 0;

        for (int64_t k = 0; k < cols; k++) {
            float v = x[r * cols + k];

            ((float *)out[0].data)[r * cols + k] = 2.0f * v + 1.0f;
            ((uint16_t *)out[2].data)[r * cols + k] = popc_f32_to_f16(v);
            if (v > x[r * cols + best])
                best = (int32_t)k;
        }
        ((int32_t *)out[1].data)[r] = best;
    }
    return POPC_OK;
}

static popc_status other(void *user, const popc_view *in, int n_in,
                         const popc_view *out, int n_out)
{
    (void)user;
    (void)in;
    (void)n_in;
    (void)out;
    (void)n_out;
    return popc_set_error(POPC_EINTERNAL, "the second registration ran");
}

static popc_status silent_failure(void *user, const popc_view *in, int n_in,
                                  const popc_view *out, int n_out)
{
    (void)user;
    (void)in;
    (void)n_in;
    (void)out;
    (void)n_out;
    return POPC_EIO;
}

/* x [rows, 4] -> CPU op "affine" -> (Relu(out0), out1, out2). */
static popc_graph *graph(int64_t rows, int *node_out)
{
    int64_t d[2] = {rows, 4};
    popc_view info[3];
    popc_graph *g = NULL;
    int x, o[3], r;

    memset(info, 0, sizeof info);
    info[0] = (popc_view){.dtype = POPC_DTYPE_F32, .rank = 2,
                          .dims = {rows, 4}};
    info[1] = (popc_view){.dtype = POPC_DTYPE_I32, .rank = 1, .dims = {rows}};
    info[2] = (popc_view){.dtype = POPC_DTYPE_F16, .rank = 2,
                          .dims = {rows, 4}};
    OK(popc_graph_new("cpu_op", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, d, 2, &x));
    OK(popc_cpu_op(g, "affine", &x, 1, info, 3, o));
    OK(popc_graph_add_node(g, NULL, "Relu", 0, &o[0], 1, &r, 1, NULL, 0,
                           NULL, NULL));
    OK(popc_graph_add_output(g, r));
    OK(popc_graph_add_output(g, o[1]));
    OK(popc_graph_add_output(g, o[2]));
    if (node_out)
        *node_out = popc_graph_value_producer(g, o[0]);
    return g;
}

static popc_options *opts(const char *backend, int64_t di, int64_t r)
{
    popc_options *o = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    OK(popc_options_set_int(o, "deviceIterations", di));
    OK(popc_options_set_int(o, "replicationFactor", r));
    return o;
}

static popc_tensor *input(int64_t rows)
{
    int64_t d[2] = {rows, 4};
    popc_tensor *t = NULL;
    float *p;

    OK(popc_tensor_new(POPC_DTYPE_F32, d, 2, &t));
    p = popc_tensor_data(t);
    for (int64_t i = 0; i < rows * 4; i++)
        p[i] = (float)((i * 7) % 11) - 5.0f;
    return t;
}

static void check_outputs(const popc_tensor *x, popc_tensor *const *out)
{
    const float *xv = popc_tensor_cdata(x), *y = popc_tensor_cdata(out[0]);
    const int32_t *am = popc_tensor_cdata(out[1]);
    const uint16_t *h = popc_tensor_cdata(out[2]);
    int64_t rows = popc_tensor_dims(x)[0];

    ck_assert_int_eq(popc_tensor_dims(out[0])[0], rows);
    ck_assert_int_eq(popc_tensor_dtype(out[1]), POPC_DTYPE_I32);
    ck_assert_int_eq(popc_tensor_dtype(out[2]), POPC_DTYPE_F16);
    for (int64_t r = 0; r < rows; r++) {
        int32_t best = 0;

        for (int k = 0; k < 4; k++) {
            float v = xv[r * 4 + k], want = 2.0f * v + 1.0f;

            ck_assert_float_eq(y[r * 4 + k], want > 0 ? want : 0.0f);
            ck_assert_uint_eq(h[r * 4 + k], popc_f32_to_f16(v));
            if (v > xv[r * 4 + best])
                best = k;
        }
        ck_assert_int_eq(am[r], best);
    }
}

static void run_case(const char *backend, int64_t di, int64_t r,
                     int64_t graph_rows, int64_t micro)
{
    popc_graph *g = graph(graph_rows, NULL);
    popc_options *o = opts(backend, di, r);
    popc_tensor *x = input(micro * di * r), *out[3] = {0};
    counter c = {0};
    popc_model *m = NULL;

    OK(popc_model_new_inference(g, o, &m));
    OK(popc_model_register_callback(m, "affine", affine, &c));
    OK(popc_model_run(m, &x, 1, out, 3));
    ck_assert_int_eq(c.calls, (int)(di * r));
    ck_assert_int_eq(c.rows, micro);
    check_outputs(x, out);
    for (int i = 0; i < 3; i++)
        popc_tensor_free(out[i]);
    OK(popc_model_run(m, &x, 1, out, 3));
    ck_assert_int_eq(c.calls, (int)(2 * di * r));
    for (int i = 0; i < 3; i++)
        popc_tensor_free(out[i]);
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
    popc_tensor_free(x);
}

START_TEST(runs_on_cpu)
{
    run_case("cpu", 1, 1, 3, 3);
}
END_TEST

START_TEST(runs_on_ipumodel_with_iterations_and_replicas)
{
    run_case("ipumodel", 3, 2, 2, 2);
}
END_TEST

START_TEST(follows_the_micro_batch)
{
    /* declared with 2 rows, compiled with 5 */
    run_case("cpu", 2, 1, 2, 5);
}
END_TEST

START_TEST(first_registration_wins)
{
    popc_graph *g = graph(2, NULL);
    popc_options *o = opts("cpu", 1, 1);
    popc_tensor *x = input(2), *out[3] = {0};
    counter c = {0};
    popc_model *m = NULL;

    OK(popc_model_new_inference(g, o, &m));
    OK(popc_model_register_callback(m, "affine", affine, &c));
    OK(popc_model_register_callback(m, "affine", affine, &c));
    ck_assert_int_eq(popc_model_register_callback(m, "affine", other, NULL),
                     POPC_EEXIST);
    ck_assert(has("first registration"));
    ck_assert_int_eq(popc_model_register_callback(m, "", affine, &c),
                     POPC_EINVAL);
    ck_assert_int_eq(popc_model_register_callback(m, NULL, affine, &c),
                     POPC_EINVAL);
    OK(popc_model_run(m, &x, 1, out, 3));
    ck_assert_int_eq(c.calls, 1);
    check_outputs(x, out);
    for (int i = 0; i < 3; i++)
        popc_tensor_free(out[i]);
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
    popc_tensor_free(x);
}
END_TEST

START_TEST(missing_callback)
{
    const char *backends[2] = {"cpu", "ipumodel"};

    for (int b = 0; b < 2; b++) {
        popc_graph *g = graph(2, NULL);
        popc_options *o = opts(backends[b], 1, 1);
        popc_tensor *x = input(2), *out[3] = {0};
        popc_model *m = NULL;

        OK(popc_model_new_inference(g, o, &m));
        ck_assert_int_ne(popc_model_run(m, &x, 1, out, 3), POPC_OK);
        ck_assert_msg(has("'affine'") &&
                          has("popc_model_register_callback"),
                      "%s", popc_last_error());
        ck_assert_ptr_null(out[0]);
        popc_model_free(m);
        popc_options_free(o);
        popc_graph_free(g);
        popc_tensor_free(x);
    }
}
END_TEST

START_TEST(failing_callback_stops_the_run)
{
    const char *backends[2] = {"cpu", "ipumodel"};

    for (int b = 0; b < 2; b++) {
        int node;
        popc_graph *g = graph(2, &node);
        popc_options *o = opts(backends[b], 4, 1);
        popc_tensor *x = input(8), *out[3] = {0};
        counter c = {.fail_on = 3};
        popc_model *m = NULL, *m2 = NULL;

        OK(popc_model_new_inference(g, o, &m));
        OK(popc_model_register_callback(m, "affine", affine, &c));
        ck_assert_int_eq(popc_model_run(m, &x, 1, out, 3), POPC_ECALLBACK);
        ck_assert_msg(has("affine: refused call 3") &&
                          has(popc_graph_node_name(g, node)),
                      "%s", popc_last_error());
        ck_assert_int_eq(c.calls, 3);
        ck_assert_ptr_null(out[0]);
        /* a callback failing without a message is still named */
        OK(popc_model_new_inference(g, o, &m2));
        OK(popc_model_register_callback(m2, "affine", silent_failure, NULL));
        ck_assert_int_eq(popc_model_run(m2, &x, 1, out, 3), POPC_ECALLBACK);
        ck_assert_msg(has("'affine'") && has("POPC_EIO"), "%s",
                      popc_last_error());
        popc_model_free(m);
        popc_model_free(m2);
        popc_options_free(o);
        popc_graph_free(g);
        popc_tensor_free(x);
    }
}
END_TEST

START_TEST(training_is_refused)
{
    int64_t d[2] = {2, 4};
    popc_view info = {.dtype = POPC_DTYPE_F32, .rank = 2, .dims = {2, 4}};
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    popc_options *o = opts("cpu", 1, 1);
    popc_tensor *in[2] = {input(2), input(2)}, *loss = NULL;
    popc_model *m = NULL;
    int x, y, h, c, l;

    OK(popc_graph_new("train_cpu_op", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, d, 2, &x));
    OK(popc_graph_add_input(g, "y", POPC_DTYPE_F32, d, 2, &y));
    OK(popc_layers_new(g, 1, &L));
    OK(popc_nn_linear(L, "fc", x, 4, 4, 1, &h));
    OK(popc_cpu_op(g, "scale", &h, 1, &info, 1, &c));
    OK(popc_nn_mse_loss(L, c, y, "mean", &l));
    OK(popc_graph_add_output(g, l));
    OK(popc_model_new_training(g, o, NULL, &m));
    ck_assert_int_ne(popc_model_run(m, in, 2, &loss, 1), POPC_OK);
    ck_assert_msg(has("CPU ops are only supported in inference graphs") &&
                      has("'scale"),
                  "%s", popc_last_error());
    popc_model_free(m);
    popc_layers_free(L);
    popc_options_free(o);
    popc_graph_free(g);
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
}
END_TEST

START_TEST(bad_arguments)
{
    int64_t d[2] = {2, 4};
    popc_view bad = {.dtype = POPC_DTYPE_UNDEFINED, .rank = 1, .dims = {2}};
    popc_graph *g = NULL;
    int x, y = 5;

    OK(popc_graph_new("bad", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, d, 2, &x));
    ck_assert_int_eq(popc_cpu_op(g, "", &x, 1, &bad, 1, &y), POPC_EINVAL);
    ck_assert_int_eq(popc_cpu_op(g, "id", &x, 1, &bad, 1, &y), POPC_EINVAL);
    ck_assert(has("output 0"));
    ck_assert_int_eq(y, -1);
    x = 99;
    bad.dtype = POPC_DTYPE_F32;
    ck_assert_int_eq(popc_cpu_op(g, "id", &x, 1, &bad, 1, &y), POPC_EINVAL);
    ck_assert_int_eq(popc_graph_n_nodes(g), 0);
    popc_graph_free(g);
}
END_TEST

START_TEST(host_time_in_latency)
{
    popc_graph *g = graph(2, NULL);
    popc_options *o = opts("ipumodel", 2, 1);
    popc_tensor *x = input(4), *out[3] = {0};
    counter c = {.sleep = 0.05};
    popc_model *m = NULL;
    double host, compute, total;

    OK(popc_model_new_inference(g, o, &m));
    OK(popc_model_register_callback(m, "affine", affine, &c));
    OK(popc_model_run(m, &x, 1, out, 3));
    popc_model_latency(m, &host, &compute, &total);
    ck_assert_msg(host >= 0.095, "host %g compute %g total %g", host,
                  compute, total);
    ck_assert(compute < total - 0.09);
    ck_assert(total >= 0.1);
    for (int i = 0; i < 3; i++)
        popc_tensor_free(out[i]);
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
    popc_tensor_free(x);
}
END_TEST

static Suite *cpu_op_suite(void)
{
    Suite *s = suite_create("cpu_op");
    TCase *tc = tcase_create("cpu_op");

    tcase_add_test(tc, runs_on_cpu);
    tcase_add_test(tc, runs_on_ipumodel_with_iterations_and_replicas);
    tcase_add_test(tc, follows_the_micro_batch);
    tcase_add_test(tc, first_registration_wins);
    tcase_add_test(tc, missing_callback);
    tcase_add_test(tc, failing_callback_stops_the_run);
    tcase_add_test(tc, training_is_refused);
    tcase_add_test(tc, bad_arguments);
    tcase_add_test(tc, host_time_in_latency);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cpu_op_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
