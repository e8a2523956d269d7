/* check_model_pipeline.c - models split over two IPUs: the pipelined
** wavefront must give bitwise the results of the same model on one IPU,
** and PopTorch's pipeline-depth rules (semantics §6) apply. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "popc/layers.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

/* fc1 (4 -> 8) and ReLU on IPU 0, fc2 (8 -> 3) and the MSE loss on IPU 1
** (split = 1), or everything unannotated (split = 0). Outputs: the
** prediction and the loss. */
static popc_graph *make_graph(int split)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    popc_annotations a = {.ipu = -1, .stage = -1, .phase = -1,
                          .recompute = -1};
    int64_t xd[2] = {1, 4}, yd[2] = {1, 3};
    int x, y, h, r, o, loss;

    OK(popc_graph_new(split ? "split" : "whole", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_input(g, "y", POPC_DTYPE_F32, yd, 2, &y));
    OK(popc_layers_new(g, 3, &L));
    if (split) {
        a.ipu = 0;
        OK(popc_graph_set_annotations(g, &a));
    }
    OK(popc_nn_linear(L, "fc1", x, 4, 8, 1, &h));
    OK(popc_nn_activation(L, "Relu", h, 0.0, &r));
    if (split) {
        a.ipu = 1;
        OK(popc_graph_set_annotations(g, &a));
    }
    OK(popc_nn_linear(L, "fc2", r, 8, 3, 1, &o));
    OK(popc_nn_mse_loss(L, o, y, "mean", &loss));
    OK(popc_graph_add_output(g, o));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    return g;
}

/* Rows of deterministic data: x [n, 4], y [n, 3]. */
static void make_data(int64_t n, popc_tensor **x, popc_tensor **y)
{
    int64_t xd[2] = {n, 4}, yd[2] = {n, 3};
    float *p;

    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, x));
    OK(popc_tensor_new(POPC_DTYPE_F32, yd, 2, y));
    p = popc_tensor_data(*x);
    for (int64_t i = 0; i < 4 * n; i++)
        p[i] = (float)((i * 37) % 23) / 11.0f - 1.0f;
    p = popc_tensor_data(*y);
    for (int64_t i = 0; i < 3 * n; i++)
        p[i] = (float)((i * 13) % 17) / 8.0f - 1.0f;
}

static popc_options *options(int64_t di, int64_t ga, int64_t r,
                             const char *mode)
{
    popc_options *o = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "cpu"));
    OK(popc_options_set_int(o, "deviceIterations", di));
    OK(popc_options_set_int(o, "replicationFactor", r));
    if (ga > 1)
        OK(popc_options_set_int(o, "Training.gradientAccumulation", ga));
    if (mode)
        OK(popc_options_set(o, "outputMode", mode));
    return o;
}

static popc_model *new_model(int split, popc_options *o, int training)
{
    popc_graph *g = make_graph(split);
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;

    if (training) {
        OK(popc_optimizer_new("sgd", &opt));
        OK(popc_optimizer_set(opt, "lr", 0.05));
        OK(popc_optimizer_set(opt, "momentum", 0.9));
        OK(popc_model_new_training(g, o, opt, &m));
    } else {
        OK(popc_model_new_inference(g, o, &m));
    }
    popc_optimizer_free(opt);
    popc_graph_free(g);
    return m;
}

static void run(popc_model *m, popc_tensor *x, popc_tensor *y,
                popc_tensor **out)
{
    popc_tensor *in[2] = {x, y};

    OK(popc_model_run(m, in, 2, out, 2));
}

/* The phase count of the last compile, from its INFO log line. */
static int last_phases = -1;

static void on_log(int level, const char *msg, void *user)
{
    const char *p = strstr(msg, " pipeline phases");

    (void)level;
    (void)user;
    if (strncmp(msg, "compiled '", 10) != 0 || !p)
        return;
    while (p > msg && p[-1] >= '0' && p[-1] <= '9')
        p--;
    last_phases = atoi(p);
}

static int n_phases(const popc_model *m)
{
    ck_assert(popc_model_is_compiled(m));
    return last_phases;
}

START_TEST(inference_pipeline_matches_single_ipu)
{
    popc_options *o = options(4, 1, 2, "All");
    popc_model *a = new_model(1, o, 0), *b = new_model(0, o, 0);
    popc_tensor *x, *y, *oa[2], *ob[2];

    make_data(16, &x, &y);
    run(a, x, y, oa);
    ck_assert_int_eq(n_phases(a), 2);
    run(b, x, y, ob);
    ck_assert_int_eq(n_phases(b), 1);
    for (int i = 0; i < 2; i++) {
        ck_assert(popc_tensor_equal(oa[i], ob[i]));
        popc_tensor_free(oa[i]);
        popc_tensor_free(ob[i]);
    }
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_model_free(a);
    popc_model_free(b);
    popc_options_free(o);
}
END_TEST

START_TEST(training_pipeline_matches_single_ipu)
{
    popc_options *o = options(2, 3, 2, "All");
    popc_model *a = new_model(1, o, 1), *b = new_model(0, o, 1);
    popc_tensor *x, *y, *oa[2], *ob[2];

    make_data(24, &x, &y);
    for (int run_i = 0; run_i < 3; run_i++) {
        run(a, x, y, oa);
        if (run_i == 0)
            ck_assert_int_ge(n_phases(a), 3);
        run(b, x, y, ob);
        for (int i = 0; i < 2; i++) {
            ck_assert(popc_tensor_equal(oa[i], ob[i]));
            popc_tensor_free(oa[i]);
            popc_tensor_free(ob[i]);
        }
    }
    for (int i = 0; i < popc_model_n_tensors(a); i++) {
        const popc_tensor *ta = NULL, *tb = NULL;
        OK(popc_model_get_weight(a, popc_model_tensor_name(a, i), &ta));
        OK(popc_model_get_weight(b, popc_model_tensor_name(a, i), &tb));
        ck_assert(popc_tensor_equal(ta, tb));
    }
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_model_free(a);
    popc_model_free(b);
    popc_options_free(o);
}
END_TEST

START_TEST(pipeline_depth_rules)
{
    popc_options *o = options(1, 1, 1, NULL);
    popc_model *m = new_model(1, o, 0);
    popc_tensor *x, *y, *out[2];

    make_data(2, &x, &y);
    ck_assert_int_eq(popc_model_run(m, (popc_tensor *[]){x, y}, 2, out, 2),
                     POPC_EINVAL);
    ck_assert_str_eq(popc_last_error(),
                     "poptorch.Options().deviceIterations must be greater "
                     "than or equal to the number of pipeline stages (2) "
                     "when using PopTorch.PipelinedExecution.");
    popc_model_free(m);
    popc_options_free(o);

    o = options(1, 2, 1, NULL);
    m = new_model(1, o, 1);
    popc_tensor_free(x);
    popc_tensor_free(y);
    make_data(4, &x, &y);
    ck_assert_int_eq(popc_model_run(m, (popc_tensor *[]){x, y}, 2, out, 2),
                     POPC_EINVAL);
    ck_assert_str_eq(popc_last_error(),
                     "poptorch.Options().Training.gradientAccumulation must "
                     "be greater than or equal to the number of pipeline "
                     "stages (3) when using poptorch.PipelinedExecution. "
                     "Please note that a model with 2 pipeline stages in "
                     "PopTorch will have an additional 1 stages when "
                     "training.");
    popc_model_free(m);
    popc_options_free(o);

    /* Sharded execution runs the stages one after the other: no rule. */
    o = options(1, 1, 1, NULL);
    OK(popc_options_set(o, "setExecutionStrategy", "ShardedExecution"));
    m = new_model(1, o, 1);
    popc_tensor_free(x);
    popc_tensor_free(y);
    make_data(1, &x, &y);
    run(m, x, y, out);
    ck_assert_int_eq(n_phases(m), 1);
    popc_tensor_free(out[0]);
    popc_tensor_free(out[1]);
    popc_model_free(m);
    popc_options_free(o);
    popc_tensor_free(x);
    popc_tensor_free(y);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("model_pipeline");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 60);
    popc_log_set_level(POPC_LOG_INFO);
    popc_log_set_callback(on_log, NULL);
    tcase_add_test(tc, inference_pipeline_matches_single_ipu);
    tcase_add_test(tc, training_pipeline_matches_single_ipu);
    tcase_add_test(tc, pipeline_depth_rules);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
