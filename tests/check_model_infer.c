/* check_model_infer.c - inference models on the cpu backend: the batching
** layout of device iterations and replicas, every output mode with its
** shapes and contents, PopTorch's error texts for batch dimensions and
** runtime mismatches, destroy + recompile, weights and latency. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "popc/executable.h"
#include "popc/layers.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

#define FAILS(call, status, text)                                          \
    do {                                                                   \
        ck_assert_int_eq((call), (status));                                \
        ck_assert_msg(strstr(popc_last_error(), (text)) != NULL,           \
                      "message \"%s\" lacks \"%s\"", popc_last_error(),    \
                      (text));                                             \
    } while (0)

#define SUFFIX                                                             \
    "\nThis error occurred because the inputs passed at runtime don't "   \
    "match the inputs used to compile the model.\nTo recompile the model " \
    "for the new inputs create a new inferenceModel / trainingModel "     \
    "wrapper or call destroy() on the curent one and try again."

/* ---- fixtures ------------------------------------------------------------ */

/* x [B, 2] float32 -> y = x + 100, s = sum(x) (a scalar per micro-batch). */
static popc_graph *make_graph(void)
{
    popc_graph *g = NULL;
    popc_tensor *c = NULL;
    int64_t dims[2] = {1, 2}, one = 1;
    float hundred = 100.0f;
    int x, k, y, s;
    popc_attr keep = {.name = "keepdims", .type = POPC_ATTR_INT, .i = 0};

    OK(popc_graph_new("addsum", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, dims, 2, &x));
    OK(popc_tensor_from_data(POPC_DTYPE_F32, &one, 1, &hundred, &c));
    OK(popc_graph_add_constant(g, "hundred", c, &k));
    popc_tensor_free(c);
    OK(popc_graph_add_node(g, NULL, "Add", 0, (int[]){x, k}, 2, &y, 1, NULL,
                           0, "add", NULL));
    OK(popc_graph_add_node(g, NULL, "ReduceSum", 0, &x, 1, &s, 1, &keep, 1,
                           "sum", NULL));
    OK(popc_graph_add_output(g, y));
    OK(popc_graph_add_output(g, s));
    return g;
}

/* Rows [n, 2] with x[i][j] = 2 i + j. */
static popc_tensor *ramp(int64_t n)
{
    popc_tensor *t = NULL;
    int64_t dims[2] = {n, 2};
    float *p;

    OK(popc_tensor_new(POPC_DTYPE_F32, dims, 2, &t));
    p = popc_tensor_data(t);
    for (int64_t i = 0; i < 2 * n; i++)
        p[i] = (float)i;
    return t;
}

static popc_options *options(int64_t di, int64_t r, const char *mode,
                             int64_t period)
{
    popc_options *o = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "cpu"));
    OK(popc_options_set_int(o, "deviceIterations", di));
    OK(popc_options_set_int(o, "replicationFactor", r));
    if (mode)
        OK(popc_options_set(o, "outputMode", mode));
    if (period > 0)
        OK(popc_options_set_int(o, "outputReturnPeriod", period));
    return o;
}

typedef struct run_result {
    popc_tensor *y, *s;
} run_result;

static run_result run_once(int64_t di, int64_t r, const char *mode,
                           int64_t period, int64_t rows)
{
    popc_graph *g = make_graph();
    popc_options *o = options(di, r, mode, period);
    popc_model *m = NULL;
    popc_tensor *x = ramp(rows), *out[2] = {NULL, NULL};
    run_result res;

    OK(popc_model_new_inference(g, o, &m));
    OK(popc_model_run(m, &x, 1, out, 2));
    res.y = out[0];
    res.s = out[1];
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
    popc_tensor_free(x);
    return res;
}

static void free_result(run_result *r)
{
    popc_tensor_free(r->y);
    popc_tensor_free(r->s);
}

static void expect_shape(const popc_tensor *t, int rank, int64_t d0,
                         int64_t d1)
{
    ck_assert_int_eq(popc_tensor_rank(t), rank);
    if (rank > 0)
        ck_assert_int_eq(popc_tensor_dims(t)[0], d0);
    if (rank > 1)
        ck_assert_int_eq(popc_tensor_dims(t)[1], d1);
}

/* y rows [out_mb * B, ...) must be x rows of micro-batch in_mb plus 100. */
static void expect_rows(const popc_tensor *y, int64_t out_mb, int64_t in_mb,
                        int64_t B)
{
    const float *p = popc_tensor_cdata(y);

    for (int64_t b = 0; b < B; b++)
        for (int j = 0; j < 2; j++) {
            float want = (float)(2 * (in_mb * B + b) + j) + 100.0f;
            ck_assert_msg(p[2 * (out_mb * B + b) + j] == want,
                          "row %lld col %d: %g != %g",
                          (long long)(out_mb * B + b), j,
                          (double)p[2 * (out_mb * B + b) + j], (double)want);
        }
}

/* Sum of x over micro-batch mb (B rows). */
static float mb_sum(int64_t mb, int64_t B)
{
    float s = 0.0f;

    for (int64_t i = 2 * mb * B; i < 2 * (mb + 1) * B; i++)
        s += (float)i;
    return s;
}

/* ---- output modes -------------------------------------------------------- */

/* All: every micro-batch of every replica in [DI][R][B] order, which is
** the input's own layout; the scalar is promoted to [DI x R]. */
START_TEST(mode_all_layout)
{
    run_result r = run_once(2, 2, "All", 0, 12);
    const float *s;

    expect_shape(r.y, 2, 12, 2);
    for (int mb = 0; mb < 4; mb++)
        expect_rows(r.y, mb, mb, 3);
    expect_shape(r.s, 1, 4, 0);
    s = popc_tensor_cdata(r.s);
    for (int mb = 0; mb < 4; mb++)
        ck_assert_float_eq(s[mb], mb_sum(mb, 3));
    free_result(&r);
}
END_TEST

/* Default is All for inference. */
START_TEST(mode_default_is_all)
{
    run_result r = run_once(3, 1, NULL, 0, 6);

    expect_shape(r.y, 2, 6, 2);
    for (int mb = 0; mb < 3; mb++)
        expect_rows(r.y, mb, mb, 2);
    expect_shape(r.s, 1, 3, 0);
    free_result(&r);
}
END_TEST

/* Final: per replica, the last device iteration's micro-batch. */
START_TEST(mode_final)
{
    run_result r = run_once(2, 2, "Final", 0, 12);
    const float *s;

    expect_shape(r.y, 2, 6, 2);
    expect_rows(r.y, 0, 2, 3);   /* d = 1, replica 0: micro-batch 2 */
    expect_rows(r.y, 1, 3, 3);   /* d = 1, replica 1 */
    expect_shape(r.s, 1, 2, 0);
    s = popc_tensor_cdata(r.s);
    ck_assert_float_eq(s[0], mb_sum(2, 3));
    ck_assert_float_eq(s[1], mb_sum(3, 3));
    free_result(&r);
}
END_TEST

/* b_dim == 1 keeps a scalar 0-d and a tensor its micro-batch shape. */
START_TEST(mode_final_single_replica_scalar)
{
    run_result r = run_once(3, 1, "Final", 0, 12);

    expect_shape(r.y, 2, 4, 2);
    expect_rows(r.y, 0, 2, 4);
    expect_shape(r.s, 0, 0, 0);
    ck_assert_float_eq(*(const float *)popc_tensor_cdata(r.s), mb_sum(2, 4));
    free_result(&r);
}
END_TEST

/* Sum: per replica, the sum over device iterations. */
START_TEST(mode_sum)
{
    run_result r = run_once(3, 2, "Sum", 0, 12);
    const float *y, *s;

    expect_shape(r.y, 2, 4, 2);
    y = popc_tensor_cdata(r.y);
    for (int rep = 0; rep < 2; rep++)
        for (int b = 0; b < 2; b++)
            for (int j = 0; j < 2; j++) {
                float want = 0.0f;
                for (int d = 0; d < 3; d++)
                    want += (float)(2 * ((d * 2 + rep) * 2 + b) + j) + 100.0f;
                ck_assert_float_eq(y[2 * (rep * 2 + b) + j], want);
            }
    expect_shape(r.s, 1, 2, 0);
    s = popc_tensor_cdata(r.s);
    for (int rep = 0; rep < 2; rep++)
        ck_assert_float_eq(s[rep], mb_sum(rep, 2) + mb_sum(2 + rep, 2) +
                                       mb_sum(4 + rep, 2));
    free_result(&r);
}
END_TEST

/* EveryN(2) with DI 4: device iterations 1 and 3. */
START_TEST(mode_every_n)
{
    run_result r = run_once(4, 1, "EveryN", 2, 8);
    const float *s;

    expect_shape(r.y, 2, 4, 2);
    expect_rows(r.y, 0, 1, 2);
    expect_rows(r.y, 1, 3, 2);
    expect_shape(r.s, 1, 2, 0);
    s = popc_tensor_cdata(r.s);
    ck_assert_float_eq(s[0], mb_sum(1, 2));
    ck_assert_float_eq(s[1], mb_sum(3, 2));
    free_result(&r);
}
END_TEST

/* EveryN with replicas: each kept iteration brings every replica. */
START_TEST(mode_every_n_replicas)
{
    run_result r = run_once(2, 2, "EveryN", 2, 8);

    expect_shape(r.y, 2, 4, 2);
    expect_rows(r.y, 0, 2, 2);
    expect_rows(r.y, 1, 3, 2);
    free_result(&r);
}
END_TEST

static void expect_compile_error(popc_options *o, int64_t rows,
                                 const char *text)
{
    popc_graph *g = make_graph();
    popc_model *m = NULL;
    popc_tensor *x = ramp(rows), *out[2] = {NULL, NULL};

    OK(popc_model_new_inference(g, o, &m));
    FAILS(popc_model_run(m, &x, 1, out, 2), POPC_EINVAL, text);
    ck_assert_ptr_null(out[0]);
    ck_assert(!popc_model_is_compiled(m));
    popc_model_free(m);
    popc_graph_free(g);
    popc_tensor_free(x);
}

START_TEST(every_n_period_checks)
{
    popc_options *o = options(4, 1, "EveryN", 3);

    expect_compile_error(o, 8, "Return period must be a factor of the "
                               "number of batches per step");
    popc_options_free(o);
    o = options(4, 1, "EveryN", 8);
    expect_compile_error(o, 8, "Return period must be <= to the number of "
                               "batches per step");
    popc_options_free(o);
}
END_TEST

/* ---- errors -------------------------------------------------------------- */

START_TEST(batch_dimension_text)
{
    popc_options *o = options(4, 1, NULL, 0);
    popc_graph *g = make_graph();
    popc_model *m = NULL;
    popc_tensor *x = NULL, *out[2];
    int64_t dims[2] = {10, 3};

    OK(popc_tensor_new(POPC_DTYPE_F32, dims, 2, &x));
    OK(popc_model_new_inference(g, o, &m));
    ck_assert_int_eq(popc_model_run(m, &x, 1, out, 2), POPC_EINVAL);
    ck_assert_str_eq(popc_last_error(),
        "Invalid batch dimension: In the input torch.Size([10, 3]), the "
        "batch dimension (10) must be a multiple of "
        "Options.deviceIterations(4) * (Options.replicationFactor(1) / "
        "Options.inputReplicaGrouping.input_group_size(1)) * "
        "Options.Training.gradientAccumulation(1) = 4 because it is used to "
        "calculate the batch size which will be executed on the device in "
        "any given iteration. For a full explanation see the batching "
        "semantics page of the documentation.");
    popc_model_free(m);
    popc_graph_free(g);
    popc_tensor_free(x);
    popc_options_free(o);
}
END_TEST

START_TEST(zero_sized_input)
{
    popc_options *o = options(1, 1, NULL, 0);
    popc_graph *g = make_graph();
    popc_model *m = NULL;
    popc_tensor *x = NULL, *out[2];
    int64_t dims[4] = {0, 2, 5, 5};

    OK(popc_tensor_new(POPC_DTYPE_F32, dims, 4, &x));
    OK(popc_model_new_inference(g, o, &m));
    ck_assert_int_eq(popc_model_run(m, &x, 1, out, 2), POPC_EINVAL);
    ck_assert_str_eq(popc_last_error(), "Zero-sized tensors are unsupported "
                                        "(Got shape [0, 2, 5, 5])");
    popc_model_free(m);
    popc_graph_free(g);
    popc_tensor_free(x);
    popc_options_free(o);
}
END_TEST

/* R1.3 texts, then destroy() and a recompile for the new shape. */
START_TEST(runtime_mismatch_and_recompile)
{
    popc_options *o = options(1, 1, NULL, 0);
    popc_graph *g = make_graph();
    popc_model *m = NULL;
    popc_tensor *x4 = ramp(4), *x8 = ramp(8), *xi = NULL, *out[2];
    int64_t dims[2] = {4, 2};

    OK(popc_tensor_new(POPC_DTYPE_I32, dims, 2, &xi));
    OK(popc_model_new_inference(g, o, &m));
    ck_assert(!popc_model_is_compiled(m));
    OK(popc_model_run(m, &x4, 1, out, 2));
    ck_assert(popc_model_is_compiled(m));
    expect_shape(out[0], 2, 4, 2);
    popc_tensor_free(out[0]);
    popc_tensor_free(out[1]);

    ck_assert_int_eq(popc_model_run(m, &x8, 1, out, 2), POPC_EINVAL);
    ck_assert_str_eq(popc_last_error(),
                     "Shape mismatch for x: expected torch.Size([4, 2]) but "
                     "got torch.Size([8, 2])." SUFFIX);
    ck_assert_ptr_null(out[0]);
    ck_assert_int_eq(popc_model_run(m, &xi, 1, out, 2), POPC_EINVAL);
    ck_assert_str_eq(popc_last_error(),
                     "Data type mismatch for x: expected torch.float32 but "
                     "got torch.int32." SUFFIX);
    ck_assert_int_eq(popc_model_run(m, NULL, 0, out, 2), POPC_EINVAL);
    ck_assert_str_eq(popc_last_error(),
                     "Number of positional arguments mismatch: expected 1 "
                     "arguments but got 0." SUFFIX);

    OK(popc_model_destroy(m));
    ck_assert(!popc_model_is_compiled(m));
    OK(popc_model_destroy(m)); /* no-op when not compiled */
    OK(popc_model_run(m, &x8, 1, out, 2));
    ck_assert(popc_model_is_compiled(m));
    expect_shape(out[0], 2, 8, 2);
    for (int mb = 0; mb < 1; mb++)
        expect_rows(out[0], 0, 0, 8);
    popc_tensor_free(out[0]);
    popc_tensor_free(out[1]);

    popc_model_free(m);
    popc_graph_free(g);
    popc_tensor_free(x4);
    popc_tensor_free(x8);
    popc_tensor_free(xi);
    popc_options_free(o);
}
END_TEST

START_TEST(inference_rejects_gradient_accumulation)
{
    popc_options *o = options(1, 1, NULL, 0);
    popc_graph *g = make_graph();
    popc_model *m = (popc_model *)1;

    OK(popc_options_set_int(o, "Training.gradientAccumulation", 2));
    ck_assert_int_eq(popc_model_new_inference(g, o, &m), POPC_EINVAL);
    ck_assert_ptr_null(m);
    ck_assert_str_eq(popc_last_error(),
        "You must set poptorch.Options().Training.gradientAccumulation to 1 "
        "or leave it as its default value (1) when running a "
        "poptorch.inferenceModel(). Use poptorch.Options().deviceIterations "
        "to process a sufficient number of batches each run for pipelined "
        "execution instead.");
    /* the failed call left the options unfrozen: fix them and retry */
    ck_assert(!popc_options_frozen(o));
    OK(popc_options_set_int(o, "Training.gradientAccumulation", 1));
    OK(popc_model_new_inference(g, o, &m));
    ck_assert(popc_options_frozen(o));
    popc_model_free(m);
    m = NULL;
    popc_options_free(o);

    o = options(1, 1, NULL, 0);
    OK(popc_options_set_int(o, "Training.gradientAccumulation", 2));
    OK(popc_options_set(o, "setExecutionStrategy", "ShardedExecution"));
    ck_assert_int_eq(popc_model_new_inference(g, o, &m), POPC_EINVAL);
    ck_assert_str_eq(popc_last_error(),
        "You must set poptorch.Options().Training.gradientAccumulation to 1 "
        "or leave it as its default value (1) when running a "
        "poptorch.inferenceModel().");
    popc_options_free(o);
    popc_graph_free(g);
}
END_TEST

START_TEST(options_frozen)
{
    popc_options *o = options(1, 1, NULL, 0);
    popc_graph *g = make_graph();
    popc_model *m = NULL;

    OK(popc_model_new_inference(g, o, &m));
    ck_assert(popc_options_frozen(o));
    ck_assert_int_eq(popc_options_set_int(o, "deviceIterations", 2),
                     POPC_ESTATE);
    popc_model_free(m);
    popc_graph_free(g);
    popc_options_free(o);
}
END_TEST

START_TEST(offline_connection_refuses_runs)
{
    popc_options *o = options(1, 1, NULL, 0);
    popc_graph *g = make_graph();
    popc_model *m = NULL;
    popc_tensor *x = ramp(2), *out[2];

    OK(popc_options_set(o, "connectionType", "Never"));
    OK(popc_model_new_inference(g, o, &m));
    FAILS(popc_model_run(m, &x, 1, out, 2), POPC_ESTATE,
          "Trying to run a model on an offline device (ConnectionType.Never)"
          ": use model.compile(inputs) instead of model(inputs)");
    OK(popc_model_compile(m, &x, 1));
    ck_assert(popc_model_is_compiled(m));
    OK(popc_model_compile(m, &x, 1)); /* ignored: already compiled */
    popc_model_free(m);
    popc_graph_free(g);
    popc_tensor_free(x);
    popc_options_free(o);
}
END_TEST

/* ---- replica grouping ---------------------------------------------------- */

/* Two groups of two replicas: replicas of a group read the same rows. */
START_TEST(input_replica_grouping)
{
    popc_options *o = options(1, 4, "All", 0);
    popc_graph *g = make_graph();
    popc_model *m = NULL;
    popc_tensor *x = ramp(4), *out[2];

    OK(popc_options_set_int(o, "inputReplicaGrouping.size", 2));
    OK(popc_model_new_inference(g, o, &m));
    OK(popc_model_run(m, &x, 1, out, 2));
    expect_shape(out[0], 2, 8, 2);
    expect_rows(out[0], 0, 0, 2);
    expect_rows(out[0], 1, 0, 2);
    expect_rows(out[0], 2, 1, 2);
    expect_rows(out[0], 3, 1, 2);
    popc_tensor_free(out[0]);
    popc_tensor_free(out[1]);
    popc_model_free(m);
    popc_options_free(o);

    o = options(1, 4, "All", 0);
    OK(popc_options_set_int(o, "inputReplicaGrouping.size", 2));
    OK(popc_options_set(o, "inputReplicaGrouping.type", "Orthogonal"));
    OK(popc_model_new_inference(g, o, &m));
    OK(popc_model_run(m, &x, 1, out, 2));
    expect_rows(out[0], 0, 0, 2);
    expect_rows(out[0], 1, 1, 2);
    expect_rows(out[0], 2, 0, 2);
    expect_rows(out[0], 3, 1, 2);
    popc_tensor_free(out[0]);
    popc_tensor_free(out[1]);
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
    popc_tensor_free(x);
}
END_TEST

/* ---- weights and figures ------------------------------------------------- */

/* A Linear(2 -> 3) model: weights copied to and from the device. */
START_TEST(weights_and_latency)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    popc_options *o = options(1, 1, NULL, 0);
    popc_model *m = NULL;
    popc_tensor *x = ramp(2), *w = NULL, *out = NULL;
    const popc_tensor *got = NULL;
    int64_t dims[2] = {1, 2}, wd[2] = {3, 2};
    int xin, y;
    double host, compute, total;
    const float *p;

    OK(popc_graph_new("linear", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, dims, 2, &xin));
    OK(popc_layers_new(g, 7, &L));
    OK(popc_nn_linear(L, "fc", xin, 2, 3, 1, &y));
    OK(popc_graph_add_output(g, y));
    OK(popc_model_new_inference(g, o, &m));
    ck_assert_int_eq(popc_model_n_tensors(m), 2);
    ck_assert_str_eq(popc_model_tensor_name(m, 0), "fc.weight");
    ck_assert_str_eq(popc_model_tensor_name(m, 1), "fc.bias");
    ck_assert_ptr_null(popc_model_tensor_name(m, 2));
    FAILS(popc_model_copy_weights_to_host(m), POPC_ESTATE,
          "Model has not been compiled or has been destroyed.");
    FAILS(popc_model_copy_weights_to_device(m), POPC_ESTATE,
          "Model has not been compiled or has been destroyed.");
    FAILS(popc_model_get_weight(m, "nope", &got), POPC_ENOTFOUND, "nope");

    OK(popc_model_run(m, &x, 1, &out, 1));
    popc_tensor_free(out);
    popc_model_latency(m, &host, &compute, &total);
    ck_assert(total > 0.0 && compute > 0.0 && host >= 0.0);
    ck_assert(compute <= total);
    ck_assert(popc_model_compilation_time(m) > 0.0);

    /* Weight 1 everywhere, bias 0.5: y = x0 + x1 + 0.5. */
    OK(popc_tensor_new(POPC_DTYPE_F32, wd, 2, &w));
    for (int i = 0; i < 6; i++)
        ((float *)popc_tensor_data(w))[i] = 1.0f;
    OK(popc_model_set_weight(m, "fc.weight", w));
    popc_tensor_free(w);
    OK(popc_tensor_new(POPC_DTYPE_F32, wd, 1, &w));
    for (int i = 0; i < 3; i++)
        ((float *)popc_tensor_data(w))[i] = 0.5f;
    OK(popc_model_set_weight(m, "fc.bias", w));
    OK(popc_model_run(m, &x, 1, &out, 1));
    p = popc_tensor_cdata(out);
    ck_assert_float_eq(p[0], 0.0f + 1.0f + 0.5f);
    ck_assert_float_eq(p[3], 2.0f + 3.0f + 0.5f);
    popc_tensor_free(out);
    OK(popc_model_get_weight(m, "fc.bias", &got));
    ck_assert(popc_tensor_equal(got, w));
    OK(popc_model_copy_weights_to_host(m));
    OK(popc_model_copy_weights_to_device(m));
    ck_assert_int_eq(popc_model_set_weight(m, "fc.bias", x), POPC_EINVAL);
    popc_tensor_free(w);

    OK(popc_model_destroy(m));
    FAILS(popc_model_copy_weights_to_host(m), POPC_ESTATE,
          "Model has not been compiled or has been destroyed.");
    popc_model_free(m);
    popc_layers_free(L);
    popc_graph_free(g);
    popc_tensor_free(x);
    popc_options_free(o);
}
END_TEST

/* Activation bytes of the last compile, from its INFO log line. */
static long long last_arena = -1;

static void on_log(int level, const char *msg, void *user)
{
    const char *p = strstr(msg, "activations ");

    (void)level;
    (void)user;
    if (strncmp(msg, "compiled '", 10) == 0 && p)
        last_arena = atoll(p + strlen("activations "));
}

/* A chain of 8 Relu on [64, 1024] floats: each Relu runs in place, so a
** frame needs one buffer; without in-place execution (POPC_INPLACE=0)
** the plan reuses buffers whose lives do not overlap: two of them. */
START_TEST(activation_memory_is_reused)
{
    popc_options *o = options(1, 1, NULL, 0);
    popc_graph *g = NULL;
    popc_model *m = NULL;
    popc_tensor *x = NULL, *out = NULL;
    int64_t dims[2] = {64, 1024};
    int v;

    OK(popc_graph_new("chain", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, dims, 2, &v));
    for (int i = 0; i < 8; i++) {
        int y;
        OK(popc_graph_add_node(g, NULL, "Relu", 0, &v, 1, &y, 1, NULL, 0,
                               NULL, NULL));
        v = y;
    }
    OK(popc_graph_add_output(g, v));
    OK(popc_tensor_new(POPC_DTYPE_F32, dims, 2, &x));
    for (int inplace = 1; inplace >= 0; inplace--) {
        setenv("POPC_INPLACE", inplace ? "1" : "0", 1);
        OK(popc_model_new_inference(g, o, &m));
        popc_log_set_level(POPC_LOG_INFO);
        popc_log_set_callback(on_log, NULL);
        OK(popc_model_run(m, &x, 1, &out, 1));
        popc_log_set_callback(NULL, NULL);
        popc_log_set_level(POPC_LOG_WARN);
        unsetenv("POPC_INPLACE");
        ck_assert_int_eq(last_arena, (2 - inplace) * 64 * 1024 * 4);
        popc_tensor_free(out);
        popc_model_free(m);
    }
    popc_graph_free(g);
    popc_tensor_free(x);
    popc_options_free(o);
}
END_TEST

/* The backend option must name a registered backend. */
START_TEST(unknown_backend)
{
    popc_options *o = options(1, 1, NULL, 0);
    popc_graph *g = make_graph();
    popc_model *m = NULL;
    popc_tensor *x = ramp(2), *out[2];

    OK(popc_options_set(o, "backend", "nosuch"));
    OK(popc_model_new_inference(g, o, &m));
    FAILS(popc_model_run(m, &x, 1, out, 2), POPC_ECONFIG,
          "backend 'nosuch' is not registered");
    ck_assert_ptr_nonnull(strstr(popc_last_error(),
                                 "the registered backends are 'cpu'"));
    popc_model_free(m);
    popc_graph_free(g);
    popc_tensor_free(x);
    popc_options_free(o);
}
END_TEST

/* disableModuleNamescope: the model's op names lose their scope prefix
** ("block/Relu_1" -> "Relu_1", "block/fc" -> "fc"); a clash with an
** earlier name gets a suffix. The caller's graph keeps its names. */
START_TEST(disable_module_namescope)
{
    int64_t d[2] = {2, 3};
    popc_graph *g = NULL;
    popc_options *o = NULL;
    popc_model *m = NULL;
    const popc_graph *mg;
    int x, a, b, c;

    OK(popc_graph_new("scopes", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, d, 2, &x));
    OK(popc_graph_push_scope(g, "block"));
    OK(popc_graph_add_node(g, NULL, "Relu", 0, &x, 1, &a, 1, NULL, 0, "fc",
                           NULL));
    OK(popc_graph_add_node(g, NULL, "Relu", 0, &a, 1, &b, 1, NULL, 0, NULL,
                           NULL));
    popc_graph_pop_scope(g);
    OK(popc_graph_add_node(g, NULL, "Relu", 0, &b, 1, &c, 1, NULL, 0, "fc",
                           NULL));
    OK(popc_graph_add_output(g, c));
    ck_assert_str_eq(popc_graph_node_name(g, 0), "block/fc");
    ck_assert_str_eq(popc_graph_node_name(g, 1), "block/Relu_1");
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "cpu"));
    OK(popc_options_set(o, "disableModuleNamescope", "true"));
    OK(popc_model_new_inference(g, o, &m));
    mg = popc_model_graph(m);
    ck_assert_str_eq(popc_graph_node_name(mg, 0), "fc");
    ck_assert_str_eq(popc_graph_node_name(mg, 1), "Relu_1");
    ck_assert_str_eq(popc_graph_node_name(mg, 2), "fc_1");
    ck_assert_str_eq(popc_graph_node_name(g, 0), "block/fc");
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
}
END_TEST

/* enableStableNorm: a row of 4096 values near 10000 with a spread of
** 0.06. The variance about the mean (two passes) is 3.254413604736328e-4;
** one pass of sums and sums of squares in double (the default, as in
** PopART) gives 3.256946802139282e-4, 0.08% off. Both values come from
** the same sums in numpy (float64, in row order). LayerNormalization's
** InvStdDev output shows which one a model used. */
static double layernorm_invstd(int stable)
{
    enum { D = 4096 };
    int64_t d[2] = {1, D}, sd[1] = {D};
    popc_attr at[2] = {{.name = "axis", .type = POPC_ATTR_INT, .i = -1},
                       {.name = "epsilon", .type = POPC_ATTR_FLOAT,
                        .f = 1e-12}};
    popc_graph *g = NULL;
    popc_options *o = NULL;
    popc_model *m = NULL;
    popc_tensor *x = NULL, *scale = NULL, *out[3] = {NULL};
    double invstd;
    int in[2], y[3];

    OK(popc_graph_new("ln", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, d, 2, &in[0]));
    OK(popc_tensor_new(POPC_DTYPE_F32, sd, 1, &scale));
    for (int i = 0; i < D; i++)
        ((float *)popc_tensor_data(scale))[i] = 1.0f;
    OK(popc_graph_add_initializer(g, "scale", scale, 0, &in[1]));
    popc_tensor_free(scale);
    OK(popc_graph_add_node(g, NULL, "LayerNormalization", 17, in, 2, y, 3,
                           at, 2, "ln", NULL));
    for (int i = 0; i < 3; i++)
        OK(popc_graph_add_output(g, y[i]));
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "cpu"));
    if (stable)
        OK(popc_options_set(o, "enableStableNorm", "true"));
    OK(popc_model_new_inference(g, o, &m));
    OK(popc_tensor_new(POPC_DTYPE_F32, d, 2, &x));
    for (int i = 0; i < D; i++)
        ((float *)popc_tensor_data(x))[i] =
            10000.0f + (float)((i * 7919) % 64) * 0.0009765625f;
    OK(popc_model_run(m, &x, 1, out, 3));
    invstd = ((const float *)popc_tensor_data(out[2]))[0];
    popc_tensor_free(x);
    for (int i = 0; i < 3; i++)
        popc_tensor_free(out[i]);
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
    return invstd;
}

START_TEST(stable_norm)
{
    double fast = layernorm_invstd(0), stable = layernorm_invstd(1);
    double want_fast = 1.0 / sqrt(3.256946802139282e-4 + 1e-12);
    double want_stable = 1.0 / sqrt(3.254413604736328e-4 + 1e-12);

    ck_assert_msg(fabs(stable / want_stable - 1.0) < 1e-6, "stable: %.9g",
                  stable);
    ck_assert_msg(fabs(fast / want_fast - 1.0) < 1e-6, "one pass: %.9g",
                  fast);
}
END_TEST

/* Precision.enableFloatingPointExceptions: Log(0) divides by zero,
** Sqrt(-1) is invalid, x * x overflows at 1e30: each fails the run with the
** node and op named, on both backends; without the option the results are
** -inf, NaN and inf. */
static popc_status fp_run(const char *backend, const char *op, float v,
                          int trap, float *result)
{
    int64_t d[2] = {1, 4};
    popc_graph *g = NULL;
    popc_options *o = NULL;
    popc_model *m = NULL;
    popc_tensor *x = NULL, *y = NULL;
    int in[2], out;
    popc_status st;

    OK(popc_graph_new("fp", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, d, 2, &in[0]));
    in[1] = in[0];
    OK(popc_graph_add_node(g, NULL, op, 0, in, strcmp(op, "Mul") ? 1 : 2,
                           &out, 1, NULL, 0, "the_op", NULL));
    OK(popc_graph_add_output(g, out));
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    if (trap)
        OK(popc_options_set(o, "Precision.enableFloatingPointExceptions",
                            "true"));
    OK(popc_model_new_inference(g, o, &m));
    OK(popc_tensor_new(POPC_DTYPE_F32, d, 2, &x));
    for (int i = 0; i < 4; i++)
        ((float *)popc_tensor_data(x))[i] = i == 2 ? v : 1.0f;
    st = popc_model_run(m, &x, 1, &y, 1);
    if (st == POPC_OK)
        *result = ((const float *)popc_tensor_data(y))[2];
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
    return st;
}

START_TEST(floating_point_exceptions)
{
    static const struct {
        const char *op;
        float v;
        const char *what;
    } cases[] = {{"Log", 0.0f, "division by zero"},
                 {"Sqrt", -1.0f, "invalid operation"},
                 {"Mul", 1e30f, "overflow"}};
    static const char *const backends[] = {"cpu", "ipumodel"};
    char want[256];
    float r = 0.0f;

    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 3; i++) {
            OK(fp_run(backends[b], cases[i].op, cases[i].v, 0, &r));
            ck_assert(i == 1 ? isnan(r) : isinf(r));
            ck_assert_int_eq(fp_run(backends[b], cases[i].op, cases[i].v, 1,
                                    &r),
                             POPC_EBACKEND);
            snprintf(want, sizeof want, "floating-point exception in node "
                     "'the_op' (%s): %s", cases[i].op, cases[i].what);
            ck_assert_msg(strstr(popc_last_error(), want), "%s: %s",
                          backends[b], popc_last_error());
            /* a harmless value raises nothing */
            OK(fp_run(backends[b], cases[i].op, 2.0f, 1, &r));
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("model_infer");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, mode_all_layout);
    tcase_add_test(tc, disable_module_namescope);
    tcase_add_test(tc, stable_norm);
    tcase_add_test(tc, floating_point_exceptions);
    tcase_add_test(tc, mode_default_is_all);
    tcase_add_test(tc, mode_final);
    tcase_add_test(tc, mode_final_single_replica_scalar);
    tcase_add_test(tc, mode_sum);
    tcase_add_test(tc, mode_every_n);
    tcase_add_test(tc, mode_every_n_replicas);
    tcase_add_test(tc, every_n_period_checks);
    tcase_add_test(tc, batch_dimension_text);
    tcase_add_test(tc, zero_sized_input);
    tcase_add_test(tc, runtime_mismatch_and_recompile);
    tcase_add_test(tc, inference_rejects_gradient_accumulation);
    tcase_add_test(tc, options_frozen);
    tcase_add_test(tc, offline_connection_refuses_runs);
    tcase_add_test(tc, input_replica_grouping);
    tcase_add_test(tc, weights_and_latency);
    tcase_add_test(tc, unknown_backend);
    tcase_add_test(tc, activation_memory_is_reused);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
