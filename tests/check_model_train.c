/* check_model_train.c - training models on the cpu backend against torch
** (tests/ref/gen_runtime.py): SGD steps, gradient accumulation with
** replication (Mean and Sum), Running vs Post, loss scaling, changing the
** learning rate without recompiling, optimizer state checkpoints, and the
** errors of §3 and §8. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "popc/layers.h"
#include "popc/strategy.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

#define TOL 2e-5

static const char *const params[] = {"fc1.weight", "fc1.bias", "fc2.weight",
                                     "fc2.bias"};

/* PopTorch's text first; popc may add where and how to fix it. */
static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static popc_tensor *ref(const char *name)
{
    const char *dir = getenv("POPC_TEST_REF");
    char path[4096];
    popc_tensor *t = NULL;

    snprintf(path, sizeof path, "%s/runtime/%s.npy", dir ? dir : "tests/ref",
             name);
    ck_assert_msg(popc_npy_load(path, &t) == POPC_OK, "%s",
                  popc_last_error());
    return t;
}

/* "fc1.weight" -> "<prefix>_fc1_weight" */
static popc_tensor *ref_param(const char *prefix, const char *param)
{
    char name[128];

    snprintf(name, sizeof name, "%s_%s", prefix, param);
    for (char *p = name + strlen(prefix); *p; p++)
        if (*p == '.')
            *p = '_';
    return ref(name);
}

/* Rows [first, first + n) of t (any rank >= 1). */
static popc_tensor *rows(const popc_tensor *t, int64_t first, int64_t n)
{
    int64_t dims[POPC_MAX_RANK];
    int rank = popc_tensor_rank(t);
    int64_t row = popc_tensor_numel(t) / popc_tensor_dims(t)[0];
    const float *p = popc_tensor_cdata(t);
    popc_tensor *r = NULL;

    memcpy(dims, popc_tensor_dims(t), sizeof(int64_t) * (size_t)rank);
    dims[0] = n;
    OK(popc_tensor_from_data(POPC_DTYPE_F32, dims, rank, p + first * row,
                             &r));
    return r;
}

/* fc1 (4 -> 8), ReLU, fc2 (8 -> 3), MSE (mean) against y; the loss is
** the graph's output. Initial weights are torch's. */
static popc_graph *make_mlp(void)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int64_t xd[2] = {1, 4}, yd[2] = {1, 3};
    int x, y, h, a, o, loss;

    OK(popc_graph_new("mlp", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_input(g, "y", POPC_DTYPE_F32, yd, 2, &y));
    OK(popc_layers_new(g, 1, &L));
    OK(popc_nn_linear(L, "fc1", x, 4, 8, 1, &h));
    OK(popc_nn_activation(L, "Relu", h, 0.0, &a));
    OK(popc_nn_linear(L, "fc2", a, 8, 3, 1, &o));
    OK(popc_nn_mse_loss(L, o, y, "mean", &loss));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    for (int i = 0; i < 4; i++) {
        popc_tensor *t = ref_param("init", params[i]);
        OK(popc_graph_set_initializer(g, popc_graph_find_value(g, params[i]),
                                      t));
        popc_tensor_free(t);
    }
    return g;
}

static popc_options *options(int64_t di, int64_t ga, int64_t r,
                             const char *reduction, const char *strategy)
{
    popc_options *o = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "cpu"));
    OK(popc_options_set_int(o, "deviceIterations", di));
    OK(popc_options_set_int(o, "Training.gradientAccumulation", ga));
    OK(popc_options_set_int(o, "replicationFactor", r));
    if (reduction)
        OK(popc_options_set(o,
                            "Training.accumulationAndReplicationReductionType",
                            reduction));
    if (strategy)
        OK(popc_options_set(
            o, "Training.meanAccumulationAndReplicationReductionStrategy",
            strategy));
    return o;
}

static popc_optimizer *sgd(double lr, double momentum, double ls)
{
    popc_optimizer *o = NULL;

    OK(popc_optimizer_new("sgd", &o));
    OK(popc_optimizer_set(o, "lr", lr));
    if (momentum != 0.0)
        OK(popc_optimizer_set(o, "momentum", momentum));
    if (ls != 1.0)
        OK(popc_optimizer_set(o, "loss_scaling", ls));
    return o;
}

static popc_model *train_model(popc_options *o, popc_optimizer *opt)
{
    popc_graph *g = make_mlp();
    popc_model *m = NULL;

    OK(popc_model_new_training(g, o, opt, &m));
    popc_graph_free(g);
    return m;
}

/* One run on rows [first, first + n); returns the loss output. */
static popc_tensor *step(popc_model *m, int64_t first, int64_t n)
{
    popc_tensor *x = ref("x"), *y = ref("y"), *in[2], *loss = NULL;

    in[0] = rows(x, first, n);
    in[1] = rows(y, first, n);
    OK(popc_model_run(m, in, 2, &loss, 1));
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_tensor_free(x);
    popc_tensor_free(y);
    return loss;
}

static double max_diff(const popc_tensor *a, const popc_tensor *b)
{
    double d = popc_tensor_max_abs_diff(a, b);
    return d < 0 ? 1e30 : d;
}

static double params_diff_ref(popc_model *m, const char *prefix)
{
    double worst = 0.0;

    for (int i = 0; i < 4; i++) {
        const popc_tensor *got = NULL;
        popc_tensor *want = ref_param(prefix, params[i]);
        double d;

        OK(popc_model_get_weight(m, params[i], &got));
        d = max_diff(got, want);
        if (d > worst)
            worst = d;
        popc_tensor_free(want);
    }
    return worst;
}

static double params_diff(popc_model *a, popc_model *b)
{
    double worst = 0.0;

    for (int i = 0; i < 4; i++) {
        const popc_tensor *ta = NULL, *tb = NULL;
        double d;

        OK(popc_model_get_weight(a, params[i], &ta));
        OK(popc_model_get_weight(b, params[i], &tb));
        d = max_diff(ta, tb);
        if (d > worst)
            worst = d;
    }
    return worst;
}

/* ---- torch parity -------------------------------------------------------- */

/* Training the MLP raises no floating-point exception: the option traps
** real problems only (and changes no result). */
START_TEST(training_raises_no_fp_exception)
{
    popc_options *o = options(1, 1, 1, NULL, NULL);
    popc_options *plain = options(1, 1, 1, NULL, NULL);
    popc_optimizer *opt = sgd(0.01, 0.9, 1.0);
    popc_model *m, *ref;
    popc_tensor *l1, *l2;

    OK(popc_options_set(o, "Precision.enableFloatingPointExceptions",
                        "true"));
    m = train_model(o, opt);
    ref = train_model(plain, opt);
    for (int i = 0; i < 3; i++) {
        l1 = step(m, 8 * i, 8);
        l2 = step(ref, 8 * i, 8);
        ck_assert(popc_tensor_equal(l1, l2));
        popc_tensor_free(l1);
        popc_tensor_free(l2);
    }
    ck_assert(params_diff(m, ref) == 0.0);
    popc_model_free(m);
    popc_model_free(ref);
    popc_optimizer_free(opt);
    popc_options_free(o);
    popc_options_free(plain);
}
END_TEST

START_TEST(sgd_momentum_matches_torch)
{
    popc_options *o = options(1, 1, 1, NULL, NULL);
    popc_optimizer *opt = sgd(0.1, 0.9, 1.0);
    popc_model *m = train_model(o, opt);
    popc_tensor *want = ref("sgd_loss");
    const float *wl = popc_tensor_cdata(want);

    for (int s = 0; s < 5; s++) {
        popc_tensor *loss = step(m, 4 * s, 4);
        /* Final mode with one replica: the scalar loss stays 0-d. */
        ck_assert_int_eq(popc_tensor_rank(loss), 0);
        ck_assert_msg(fabs(*(const float *)popc_tensor_cdata(loss) - wl[s]) <
                          TOL, "step %d loss %g, torch %g", s,
                      (double)*(const float *)popc_tensor_cdata(loss),
                      (double)wl[s]);
        popc_tensor_free(loss);
    }
    ck_assert_int_eq(popc_model_steps(m), 5);
    ck_assert_msg(params_diff_ref(m, "sgd") < TOL, "weights differ by %g",
                  params_diff_ref(m, "sgd"));
    popc_tensor_free(want);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
}
END_TEST

/* DI 2, GA 2, R 2, micro-batch 2, Mean: each step is torch's step on the
** 8 rows it consumed. */
static void ga_case(const char *reduction, const char *strategy, double ls,
                    const char *prefix, popc_model **keep)
{
    popc_options *o = options(2, 2, 2, reduction, strategy);
    popc_optimizer *opt = sgd(0.1, 0.0, ls);
    popc_model *m = train_model(o, opt);
    popc_tensor *want = ref(strcmp(prefix, "ga_sum") == 0 ? "ga_sum_loss"
                                                          : "ga_loss");
    const float *wl = popc_tensor_cdata(want);

    for (int run = 0; run < 2; run++) {
        popc_tensor *loss = step(m, 16 * run, 16);
        const float *l = popc_tensor_cdata(loss);
        ck_assert_int_eq(popc_tensor_rank(loss), 1);
        ck_assert_int_eq(popc_tensor_dims(loss)[0], 2);
        for (int r = 0; r < 2; r++)
            ck_assert_msg(fabs(l[r] - wl[2 * run + r]) < TOL,
                          "%s run %d replica %d: loss %g, torch %g", prefix,
                          run, r, (double)l[r], (double)wl[2 * run + r]);
        popc_tensor_free(loss);
    }
    ck_assert_int_eq(popc_model_steps(m), 4);
    ck_assert_msg(params_diff_ref(m, prefix) < TOL, "%s: weights differ by %g",
                  prefix, params_diff_ref(m, prefix));
    popc_tensor_free(want);
    popc_optimizer_free(opt);
    popc_options_free(o);
    if (keep)
        *keep = m;
    else
        popc_model_free(m);
}

START_TEST(accumulation_replication_mean)
{
    ga_case(NULL, NULL, 1.0, "ga", NULL);
}
END_TEST

START_TEST(accumulation_replication_sum)
{
    ga_case("Sum", NULL, 1.0, "ga_sum", NULL);
}
END_TEST

START_TEST(running_equals_post)
{
    popc_model *post = NULL, *running = NULL;

    ga_case("Mean", "Post", 1.0, "ga", &post);
    ga_case("Mean", "Running", 1.0, "ga", &running);
    ck_assert_msg(params_diff(post, running) < 1e-6, "differ by %g",
                  params_diff(post, running));
    popc_model_free(post);
    popc_model_free(running);
}
END_TEST

/* The update does not depend on the loss scaling; the loss returned is
** unscaled. */
START_TEST(loss_scaling_is_transparent)
{
    ga_case(NULL, NULL, 1024.0, "ga", NULL);
}
END_TEST

/* A variable loss scaling may change after compiling: the update still
** does not depend on it. */
START_TEST(variable_loss_scaling_changes)
{
    popc_options *o = options(2, 2, 2, NULL, NULL);
    popc_optimizer *opt = sgd(0.1, 0.0, 1.0), *next = NULL;
    popc_model *m;

    OK(popc_optimizer_set(opt, "loss_scaling", 1.0)); /* variable */
    m = train_model(o, opt);
    popc_tensor_free(step(m, 0, 16));
    OK(popc_optimizer_clone(opt, &next));
    OK(popc_optimizer_set(next, "loss_scaling", 1024.0));
    OK(popc_model_set_optimizer(m, next));
    popc_tensor_free(step(m, 16, 16));
    ck_assert_msg(params_diff_ref(m, "ga") < TOL, "weights differ by %g",
                  params_diff_ref(m, "ga"));
    popc_optimizer_free(next);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
}
END_TEST

/* A variable lr changes between runs without recompiling. */
START_TEST(set_optimizer_lr_without_recompile)
{
    popc_options *o = options(1, 1, 1, NULL, NULL);
    popc_optimizer *opt = sgd(0.1, 0.9, 1.0), *next = NULL;
    popc_model *m = train_model(o, opt);
    double compile_time;

    popc_tensor_free(step(m, 0, 4));
    compile_time = popc_model_compilation_time(m);
    OK(popc_optimizer_clone(opt, &next));
    OK(popc_optimizer_set(next, "lr", 0.02));
    OK(popc_model_set_optimizer(m, next));
    ck_assert(popc_model_is_compiled(m));
    popc_tensor_free(step(m, 4, 4));
    ck_assert(popc_model_compilation_time(m) == compile_time);
    ck_assert_msg(params_diff_ref(m, "lr") < TOL, "weights differ by %g",
                  params_diff_ref(m, "lr"));

    /* A constant value cannot change once compiled. */
    popc_optimizer_free(next);
    OK(popc_optimizer_clone(opt, &next));
    OK(popc_optimizer_set(next, "weight_decay", 0.5));
    OK(popc_optimizer_mark_constant(next, "weight_decay"));
    ck_assert_int_eq(popc_model_set_optimizer(m, next), POPC_EINVAL);
    popc_optimizer_free(next);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
}
END_TEST

/* R4.6: the optimizer state does not exist before the model is compiled
** (PopTorch's state_dict has ipu_state None); a value set before the
** compile is held and the compile starts from it; after a destroy the
** state stays readable. The held velocity is checked by hand: after one
** update (step 1), SGD with momentum 0.9 and dampening 0 takes
** v = 0.9 v0 + g, w = w0 - lr v, so a held v0 of 1 moves every weight by
** lr x 0.9 more than a fresh model, whose velocity starts at g. */
START_TEST(optimizer_state_exists_from_compile)
{
    popc_options *o = options(1, 1, 1, NULL, NULL);
    popc_optimizer *opt = sgd(0.1, 0.9, 1.0);
    popc_model *held = train_model(o, opt), *plain = train_model(o, opt);
    const char *name = "fc2.bias/momentum_buffer";
    popc_tensor *v = NULL, *ones = NULL;
    const popc_tensor *wh = NULL, *wp = NULL;
    float *f;

    ck_assert_int_eq(popc_model_get_optimizer_state(held, name, &v),
                     POPC_ESTATE);
    ck_assert_str_eq(popc_last_error(),
                     "optimizer state 'fc2.bias/momentum_buffer': the model "
                     "has not been compiled, and the optimizer state does "
                     "not exist before the compile; compile or run the model "
                     "first (a state set before, as by a resume, is held and "
                     "loaded at the compile)");
    ck_assert_ptr_null(v);
    /* the velocity has the weight's shape */
    OK(popc_model_get_weight(held, "fc2.bias", &wh));
    OK(popc_tensor_clone(wh, &ones));
    wh = NULL;
    f = popc_tensor_data(ones);
    for (int64_t i = 0; i < popc_tensor_numel(ones); i++)
        f[i] = 1.0f;
    OK(popc_model_set_optimizer_state(held, name, ones));
    /* one update already taken: the velocity is used, not started anew */
    {
        int64_t one = 1;
        popc_tensor *t = NULL;

        OK(popc_tensor_new(POPC_DTYPE_I64, NULL, 0, &t));
        memcpy(popc_tensor_data(t), &one, sizeof one);
        OK(popc_model_set_optimizer_state(held, "fc2.bias/step", t));
        popc_tensor_free(t);
    }
    /* held, still not readable */
    ck_assert_int_eq(popc_model_get_optimizer_state(held, name, &v),
                     POPC_ESTATE);
    popc_tensor_free(step(held, 0, 4));
    popc_tensor_free(step(plain, 0, 4));
    OK(popc_model_get_weight(held, "fc2.bias", &wh));
    OK(popc_model_get_weight(plain, "fc2.bias", &wp));
    for (int64_t i = 0; i < popc_tensor_numel(wh); i++)
        ck_assert_float_eq_tol(((const float *)popc_tensor_cdata(wp))[i] -
                                   ((const float *)popc_tensor_cdata(wh))[i],
                               0.1f * 0.9f, 1e-6f);
    /* compiled: the state exists, and a destroy keeps it */
    OK(popc_model_get_optimizer_state(held, name, &v));
    popc_tensor_free(v);
    v = NULL;
    OK(popc_model_destroy(held));
    OK(popc_model_get_optimizer_state(held, name, &v));
    popc_tensor_free(v);
    popc_tensor_free(ones);
    popc_model_free(held);
    popc_model_free(plain);
    popc_optimizer_free(opt);
    popc_options_free(o);
}
END_TEST

/* Weights and optimizer state saved after 2 steps and loaded into a new
** model continue exactly like the uninterrupted run. */
START_TEST(optimizer_state_checkpoint)
{
    popc_options *o = options(1, 1, 1, NULL, NULL);
    popc_optimizer *opt = sgd(0.1, 0.9, 1.0);
    popc_model *a = train_model(o, opt), *b = train_model(o, opt), *c;
    int n;

    for (int s = 0; s < 2; s++) {
        popc_tensor_free(step(a, 4 * s, 4));
        popc_tensor_free(step(b, 4 * s, 4));
    }
    c = train_model(o, opt);
    n = popc_model_n_optimizer_states(b);
    ck_assert_int_ge(n, 8); /* a velocity and a step count per parameter */
    for (int i = 0; i < n; i++) {
        const char *name = popc_model_optimizer_state_name(b, i);
        popc_tensor *t = NULL;
        OK(popc_model_get_optimizer_state(b, name, &t));
        OK(popc_model_set_optimizer_state(c, name, t));
        popc_tensor_free(t);
    }
    for (int i = 0; i < 4; i++) {
        const popc_tensor *t = NULL;
        OK(popc_model_get_weight(b, params[i], &t));
        OK(popc_model_set_weight(c, params[i], t));
    }
    ck_assert_int_eq(popc_model_steps(c), 2);
    for (int s = 2; s < 5; s++) {
        popc_tensor_free(step(a, 4 * s, 4));
        popc_tensor_free(step(c, 4 * s, 4));
    }
    ck_assert(params_diff(a, c) == 0.0);
    ck_assert(params_diff_ref(a, "sgd") < TOL);
    ck_assert_int_eq(popc_model_get_optimizer_state(c, "nope", NULL),
                     POPC_EINVAL);
    {
        popc_tensor *t = NULL;
        ck_assert_int_eq(popc_model_get_optimizer_state(c, "nope", &t),
                         POPC_ENOTFOUND);
    }
    popc_model_free(a);
    popc_model_free(b);
    popc_model_free(c);
    popc_optimizer_free(opt);
    popc_options_free(o);
}
END_TEST

/* destroy() keeps the trained weights on the host and the next run
** recompiles and continues from them. */
START_TEST(destroy_keeps_training)
{
    popc_options *o = options(1, 1, 1, NULL, NULL);
    popc_optimizer *opt = sgd(0.1, 0.9, 1.0);
    popc_model *m = train_model(o, opt);

    for (int s = 0; s < 5; s++) {
        popc_tensor_free(step(m, 4 * s, 4));
        if (s == 2) {
            OK(popc_model_destroy(m));
            ck_assert(!popc_model_is_compiled(m));
        }
    }
    ck_assert(params_diff_ref(m, "sgd") < TOL);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
}
END_TEST

/* An inference model sharing a training model's weights sees each
** training step before its runs. */
START_TEST(inference_shares_training_weights)
{
    popc_options *o = options(1, 1, 1, NULL, NULL), *oi = NULL;
    popc_optimizer *opt = sgd(0.1, 0.9, 1.0);
    popc_model *t = train_model(o, opt), *inf = NULL, *ref_inf = NULL;
    popc_graph *g = make_mlp();

    OK(popc_options_new(&oi));
    OK(popc_options_set(oi, "backend", "cpu"));
    OK(popc_model_new_inference(g, oi, &inf));
    OK(popc_model_share_weights(inf, t));
    for (int s = 0; s < 3; s++) {
        popc_tensor *li, *lt;

        popc_tensor_free(step(t, 4 * s, 4));
        li = step(inf, 20, 4);
        /* The same rows through a fresh copy of the trained weights. */
        OK(popc_model_new_inference(g, oi, &ref_inf));
        for (int i = 0; i < 4; i++) {
            const popc_tensor *w = NULL;
            OK(popc_model_get_weight(t, params[i], &w));
            OK(popc_model_set_weight(ref_inf, params[i], w));
        }
        lt = step(ref_inf, 20, 4);
        ck_assert(popc_tensor_equal(li, lt));
        popc_tensor_free(li);
        popc_tensor_free(lt);
        popc_model_free(ref_inf);
    }
    ck_assert_int_eq(popc_model_share_weights(t, inf), POPC_EINVAL);
    popc_model_free(t); /* the inference model forgets the link */
    popc_tensor_free(step(inf, 20, 4));
    popc_model_free(inf);
    popc_graph_free(g);
    popc_optimizer_free(opt);
    popc_options_free(o);
    popc_options_free(oi);
}
END_TEST

/* BatchNorm: each micro-batch updates the running statistics (buffers
** written with popc_graph_add_update), as torch's forward passes do. */
START_TEST(batchnorm_running_statistics)
{
    static const char *const bn_params[] = {
        "bn.weight", "bn.bias", "fc.weight", "fc.bias", "bn.running_mean",
        "bn.running_var"};
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    popc_options *o = options(1, 2, 1, NULL, NULL);
    popc_optimizer *opt = sgd(0.1, 0.0, 1.0);
    popc_model *m = NULL;
    popc_tensor *x = ref("bn_x"), *y = ref("bn_y");
    int64_t xd[4] = {1, 2, 2, 2}, yd[2] = {1, 3};
    int xin, yin, h, f, out, loss;

    OK(popc_graph_new("bn", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 4, &xin));
    OK(popc_graph_add_input(g, "y", POPC_DTYPE_F32, yd, 2, &yin));
    OK(popc_layers_new(g, 1, &L));
    OK(popc_nn_batchnorm2d(L, "bn", xin, 2, 1e-5, 0.1, &h));
    OK(popc_nn_flatten(L, h, 1, &f));
    OK(popc_nn_linear(L, "fc", f, 8, 3, 1, &out));
    OK(popc_nn_mse_loss(L, out, yin, "mean", &loss));
    OK(popc_graph_add_output(g, loss));
    for (int i = 2; i < 4; i++) {
        popc_tensor *t = ref_param("bn_init", bn_params[i]);
        OK(popc_graph_set_initializer(
            g, popc_graph_find_value(g, bn_params[i]), t));
        popc_tensor_free(t);
    }
    OK(popc_model_new_training(g, o, opt, &m));
    for (int run = 0; run < 2; run++) {
        popc_tensor *in[2] = {rows(x, 8 * run, 8), rows(y, 8 * run, 8)};
        popc_tensor *l = NULL;
        OK(popc_model_run(m, in, 2, &l, 1));
        popc_tensor_free(l);
        popc_tensor_free(in[0]);
        popc_tensor_free(in[1]);
    }
    for (int i = 0; i < 6; i++) {
        const popc_tensor *got = NULL;
        popc_tensor *want = ref_param("bn", bn_params[i]);
        OK(popc_model_get_weight(m, bn_params[i], &got));
        ck_assert_msg(max_diff(got, want) < TOL, "%s differs by %g",
                      bn_params[i], max_diff(got, want));
        popc_tensor_free(want);
    }
    popc_model_free(m);
    popc_layers_free(L);
    popc_graph_free(g);
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_optimizer_free(opt);
    popc_options_free(o);
}
END_TEST

/* ---- errors -------------------------------------------------------------- */

START_TEST(no_loss)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    popc_model *m = (popc_model *)1;
    int64_t xd[2] = {1, 4};
    int x, h;

    OK(popc_graph_new("noloss", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_layers_new(g, 1, &L));
    OK(popc_nn_linear(L, "fc1", x, 4, 8, 1, &h));
    OK(popc_graph_add_output(g, h));
    ck_assert_int_eq(popc_model_new_training(g, NULL, NULL, &m),
                     POPC_ECOMPILE);
    ck_assert_ptr_null(m);
    ck_assert_msg(starts_with(popc_last_error(),
                              "Couldn't find a loss in graph!"),
                  "%s", popc_last_error());
    popc_layers_free(L);
    popc_graph_free(g);
}
END_TEST

START_TEST(multiple_losses)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    popc_model *m = NULL;
    int64_t xd[2] = {1, 4};
    int x, h, l1, l2;

    OK(popc_graph_new("twoloss", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_layers_new(g, 1, &L));
    OK(popc_nn_linear(L, "fc1", x, 4, 8, 1, &h));
    OK(popc_nn_identity_loss(L, h, "sum", &l1));
    OK(popc_nn_identity_loss(L, x, "mean", &l2));
    OK(popc_graph_add_output(g, l1));
    ck_assert_int_eq(popc_model_new_training(g, NULL, NULL, &m),
                     POPC_ECOMPILE);
    ck_assert_msg(starts_with(popc_last_error(),
                              "Multiple independent losses found in graph. "
                              "Graph must have one final loss. Wrap final "
                              "graph loss in poptorch.identity_loss."),
                  "%s", popc_last_error());
    popc_layers_free(L);
    popc_graph_free(g);
}
END_TEST

START_TEST(set_optimizer_on_inference)
{
    popc_graph *g = make_mlp();
    popc_options *o = NULL;
    popc_optimizer *opt = sgd(0.1, 0.0, 1.0);
    popc_model *m = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "cpu"));
    OK(popc_model_new_inference(g, o, &m));
    ck_assert_int_eq(popc_model_set_optimizer(m, opt), POPC_ESTATE);
    ck_assert_int_eq(popc_model_n_optimizer_states(m), 0);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
    popc_graph_free(g);
}
END_TEST
/* ---- float16 accumulation (the optimizer's accum_type) ------------------- */

#define HALF_N 1000

/* loss = sum(x * w) over w [HALF_N] (zeros): the gradient of w is x.
** half: accum_type (and, with momentum, velocity_accum_type) float16;
** synth: syntheticDataMode with enableSyntheticData (NULL: off). */
static popc_model *scale_model(const char *backend, const char *strategy,
                               int half, double momentum, const char *synth)
{
    int64_t xd[2] = {1, HALF_N}, wd[1] = {HALF_N};
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    popc_tensor *w = NULL;
    popc_options *o = options(1, 2, 1, NULL, strategy);
    popc_optimizer *opt = sgd(1e-4, momentum, 1.0);
    popc_model *m = NULL;
    int x, wi, y, in[2], loss;

    OK(popc_options_set(o, "backend", backend));
    if (synth) {
        OK(popc_options_set(o, "enableSyntheticData", "true"));
        OK(popc_options_set(o, "syntheticDataMode", synth));
    }
    OK(popc_graph_new("half", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_tensor_new(POPC_DTYPE_F32, wd, 1, &w));
    OK(popc_graph_add_initializer(g, "w", w, 1, &wi));
    popc_tensor_free(w);
    in[0] = x;
    in[1] = wi;
    OK(popc_graph_add_node(g, NULL, "Mul", 0, in, 2, &y, 1, NULL, 0, "mul",
                           NULL));
    OK(popc_layers_new(g, 1, &L));
    OK(popc_nn_identity_loss(L, y, "sum", &loss));
    popc_layers_free(L);
    OK(popc_graph_add_output(g, loss));
    if (half)
        OK(popc_optimizer_set(opt, "accum_type", 1));
    if (half && momentum != 0.0)
        OK(popc_optimizer_set(opt, "velocity_accum_type", 1));
    OK(popc_model_new_training(g, o, opt, &m));
    popc_graph_free(g);
    popc_options_free(o);
    popc_optimizer_free(opt);
    return m;
}

static popc_model *half_model(const char *backend, const char *strategy,
                              int half, double momentum)
{
    return scale_model(backend, strategy, half, momentum, NULL);
}

/* One step over two micro-batches whose x are all 60000, then all 10000;
** returns w[0] afterwards. */
static float half_step(popc_model *m)
{
    int64_t xd[2] = {2, HALF_N};
    popc_tensor *x = NULL, *loss = NULL;
    const popc_tensor *w = NULL;
    float *v;

    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &x));
    v = popc_tensor_data(x);
    for (int i = 0; i < HALF_N; i++) {
        v[i] = 60000.0f;
        v[HALF_N + i] = 10000.0f;
    }
    OK(popc_model_run(m, &x, 1, &loss, 1));
    popc_tensor_free(x);
    popc_tensor_free(loss);
    OK(popc_model_get_weight(m, "w", &w));
    return ((const float *)popc_tensor_data((popc_tensor *)w))[0];
}

/* Hand-derived: in float32 (Post) the mean gradient is (60000 + 10000) / 2
** = 35000. In float16 the sum 70000 would overflow (the largest half is
** 65504); PopTorch therefore switches to the Running mean, 60000 then
** 0.5 * 60000 + 0.5 * 10000 = 35000, which rounds to the half 35008
** (halves are 32 apart there). w = -lr * mean, lr = 1e-4. */
static void half_accumulation_case(const char *backend)
{
    popc_model *f32 = half_model(backend, NULL, 0, 0.0);
    popc_model *f16 = half_model(backend, NULL, 1, 0.0);
    popc_model *post = half_model(backend, "Post", 1, 0.0);

    ck_assert_float_eq_tol(half_step(f32), -1e-4f * 35000.0f, 1e-6f);
    ck_assert_float_eq_tol(half_step(f16), -1e-4f * 35008.0f, 1e-6f);
    /* an explicit Post is overridden too (with a warning) */
    ck_assert_float_eq_tol(half_step(post), -1e-4f * 35008.0f, 1e-6f);
    popc_model_free(f32);
    popc_model_free(f16);
    popc_model_free(post);
}

START_TEST(half_accumulation_cpu)
{
    half_accumulation_case("cpu");
}
END_TEST

START_TEST(half_accumulation_ipumodel)
{
    half_accumulation_case("ipumodel");
}
END_TEST

/* Half accumulators and velocity take 2 bytes an element on the device:
** persistent memory drops by 2 x 2 x HALF_N bytes. */
START_TEST(half_storage_in_the_memory_report)
{
    popc_model *f32 = half_model("ipumodel", NULL, 0, 0.9);
    popc_model *f16 = half_model("ipumodel", NULL, 1, 0.9);
    popc_plan_info a, b;

    (void)half_step(f32);
    (void)half_step(f16);
    OK(popc_model_get_plan_info(f32, &a));
    OK(popc_model_get_plan_info(f16, &b));
    ck_assert_int_eq(a.persistent_bytes - b.persistent_bytes, 4 * HALF_N);
    popc_model_free(f32);
    popc_model_free(f16);
}
END_TEST

/* ---- enableSyntheticData ------------------------------------------------- */

/* w after one step of scale_model with synthetic data of `mode`: the host
** data (60000 and 10000) is ignored, each micro-batch is the replica's
** generated row z, so w = -lr * z. The loss output stays zero. */
static void synthetic_w(const char *backend, const char *mode, double *mean,
                        double *var, float *lo, float *hi)
{
    popc_model *m = scale_model(backend, NULL, 0, 0.0, mode);
    int64_t xd[2] = {2, HALF_N};
    popc_tensor *x = NULL, *loss = NULL;
    const popc_tensor *w = NULL;
    const float *v;
    double s = 0.0, s2 = 0.0;

    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &x));
    for (int i = 0; i < 2 * HALF_N; i++)
        ((float *)popc_tensor_data(x))[i] = 60000.0f;
    OK(popc_model_run(m, &x, 1, &loss, 1));
    ck_assert(((const float *)popc_tensor_data(loss))[0] == 0.0f);
    OK(popc_model_get_weight(m, "w", &w));
    v = popc_tensor_data((popc_tensor *)w);
    *lo = *hi = v[0] / -1e-4f;
    for (int i = 0; i < HALF_N; i++) {
        double z = v[i] / -1e-4;
        s += z;
        s2 += z * z;
        *lo = (float)z < *lo ? (float)z : *lo;
        *hi = (float)z > *hi ? (float)z : *hi;
    }
    *mean = s / HALF_N;
    *var = s2 / HALF_N - *mean * *mean;
    popc_tensor_free(x);
    popc_tensor_free(loss);
    popc_model_free(m);
}

/* RandomNormal: 1000 draws of N(0, 1) have a mean within 0.15 of 0 (4.7
** standard errors) and a variance within 15% of 1; RandomUniform: in
** [0, 1) with mean 0.5; Zeros: nothing moves. The same on both backends,
** and the same for any host data. */
START_TEST(synthetic_data_replaces_host_io)
{
    static const char *const backends[] = {"cpu", "ipumodel"};
    double mean, var, mean2, var2;
    float lo, hi;

    for (int b = 0; b < 2; b++) {
        synthetic_w(backends[b], "RandomNormal", &mean, &var, &lo, &hi);
        ck_assert_msg(fabs(mean) < 0.15 && fabs(var - 1.0) < 0.15,
                      "%s normal: mean %g var %g", backends[b], mean, var);
        synthetic_w(backends[b], "RandomNormal", &mean2, &var2, &lo, &hi);
        ck_assert(mean == mean2 && var == var2); /* seeded */
        synthetic_w(backends[b], "RandomUniform", &mean, &var, &lo, &hi);
        ck_assert_msg(lo >= 0.0f && hi < 1.0f && fabs(mean - 0.5) < 0.05,
                      "%s uniform: [%g, %g] mean %g", backends[b], lo, hi,
                      mean);
        synthetic_w(backends[b], "Zeros", &mean, &var, &lo, &hi);
        ck_assert(lo == 0.0f && hi == 0.0f);
    }
}
END_TEST

/* ---- automatic loss scaling ---------------------------------------------- */

/* A loss scale of 2^130 overflows float32 (its largest power of 2 is
** 2^127), so the scaled gradients are inf or NaN: with automatic loss
** scaling those steps are skipped and the scale halves until the
** gradients are finite (three steps here: 2^130, 2^129, 2^128). Scales
** are powers of 2, so the unscaled gradients
** are exact: the weights equal, bitwise, a plain model's trained on the
** steps that were not skipped. */
/* The growth half of the rule: 2000 finite steps in a row (counted from
** the last skipped step) double the scale, and 1999 do not. m has made
** `finite` finite steps since its last skip, at a scale of 2^127. */
static void grows_after_2000_finite_steps(popc_model *m, int finite)
{
    popc_tensor *x = ref("x"), *y = ref("y"), *in[2], *loss = NULL;

    in[0] = rows(x, 0, 4);
    in[1] = rows(y, 0, 4);
    for (; finite < 1999; finite++) {
        OK(popc_model_run(m, in, 2, &loss, 1));
        popc_tensor_free(loss);
        loss = NULL;
    }
    ck_assert_msg(popc_model_loss_scaling(m) == 0x1p127,
                  "after 1999 finite steps the scale is %g, not 2^127",
                  popc_model_loss_scaling(m));
    OK(popc_model_run(m, in, 2, &loss, 1));
    popc_tensor_free(loss);
    ck_assert_msg(popc_model_loss_scaling(m) == 0x1p128,
                  "after 2000 finite steps the scale is %g, not 2^128",
                  popc_model_loss_scaling(m));
    ck_assert_int_eq(popc_model_steps(m), 2000);
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_tensor_free(x);
    popc_tensor_free(y);
}

START_TEST(automatic_loss_scaling)
{
    popc_options *o = options(1, 1, 1, NULL, NULL);
    popc_options *plain = options(1, 1, 1, NULL, NULL);
    popc_optimizer *big = sgd(0.05, 0.9, 0x1p130);
    popc_optimizer *one = sgd(0.05, 0.9, 1.0);
    popc_model *m, *ref;
    int skipped = 0;

    OK(popc_options_set(o, "Training.setAutomaticLossScaling", "true"));
    m = train_model(o, big);
    ref = train_model(plain, one);
    ck_assert(popc_model_loss_scaling(m) == 0x1p130);
    for (int i = 0; i < 8; i++) {
        double before = popc_model_loss_scaling(m);
        popc_tensor *l = step(m, 4 * i, 4);

        popc_tensor_free(l);
        if (popc_model_loss_scaling(m) < before) {
            ck_assert(popc_model_loss_scaling(m) == before / 2);
            skipped++;
            continue;
        }
        l = step(ref, 4 * i, 4);
        popc_tensor_free(l);
    }
    ck_assert_int_eq(skipped, 3);
    ck_assert(popc_model_loss_scaling(m) == 0x1p127);
    ck_assert_int_eq(popc_model_steps(m), 8 - skipped);
    ck_assert(params_diff(m, ref) == 0.0);
    grows_after_2000_finite_steps(m, 8 - skipped);
    popc_model_free(m);
    popc_model_free(ref);
    popc_optimizer_free(big);
    popc_optimizer_free(one);
    popc_options_free(o);
    popc_options_free(plain);
}
END_TEST

/* ---- anchorTensor ---------------------------------------------------------- */

static void expect_anchor_missing(popc_model *m, const char *name,
                                  popc_status want)
{
    const popc_tensor *t = NULL;

    ck_assert_int_eq(popc_model_get_anchored_tensor(m, name, &t), want);
    ck_assert_ptr_null(t);
}

/* Two steps in one run (deviceIterations 2). h: fc1's output of both
** micro-batches (All), its sum (Sum), and fc1.weight as the second step
** saw it (Final): row 0 of h equals x0 W1^T + b1 computed here from the
** reference weights, Sum equals h0 + h1, and the weight equals a model's
** after one step. */
START_TEST(anchor_tensors)
{
    popc_graph *g = make_mlp();
    const char *h = popc_graph_value_name(g, popc_graph_node_output(g, 0, 0));
    popc_options *o = options(2, 1, 1, NULL, NULL);
    popc_options *o1 = options(1, 1, 1, NULL, NULL);
    popc_optimizer *opt = sgd(0.1, 0.0, 1.0);
    popc_tensor *w1 = ref_param("init", "fc1.weight");
    popc_tensor *b1 = ref_param("init", "fc1.bias"), *x = ref("x");
    const popc_tensor *ha, *hs, *wa, *w_one;
    popc_model *m = NULL, *one = NULL;
    popc_tensor *loss;
    char spec[256];
    const float *hv, *sv, *xv = popc_tensor_data(x);
    const float *wv = popc_tensor_data(w1), *bv = popc_tensor_data(b1);

    snprintf(spec, sizeof spec, "h=%s@All,s=%s@Sum,w=fc1.weight@Final", h,
             h);
    OK(popc_options_set(o, "anchorTensor", spec));
    OK(popc_model_new_training(g, o, opt, &m));
    expect_anchor_missing(m, "h", POPC_ESTATE);
    loss = step(m, 0, 2);
    popc_tensor_free(loss);
    OK(popc_model_get_anchored_tensor(m, "h", &ha));
    OK(popc_model_get_anchored_tensor(m, "s", &hs));
    OK(popc_model_get_anchored_tensor(m, "w", &wa));
    ck_assert_int_eq(popc_tensor_dims(ha)[0], 2);
    ck_assert_int_eq(popc_tensor_dims(ha)[1], 8);
    ck_assert_int_eq(popc_tensor_dims(hs)[0], 1);
    hv = popc_tensor_data((popc_tensor *)ha);
    sv = popc_tensor_data((popc_tensor *)hs);
    for (int j = 0; j < 8; j++) {
        float want = bv[j];
        for (int k = 0; k < 4; k++)
            want += xv[k] * wv[j * 4 + k];
        ck_assert_float_eq_tol(hv[j], want, 1e-5f);
        ck_assert_float_eq(sv[j], hv[j] + hv[8 + j]);
    }
    /* the weight the second micro-batch used: after one step */
    OK(popc_model_new_training(g, o1, opt, &one));
    loss = step(one, 0, 1);
    popc_tensor_free(loss);
    OK(popc_model_get_weight(one, "fc1.weight", &w_one));
    ck_assert(popc_tensor_max_abs_diff(wa, w_one) == 0.0);
    expect_anchor_missing(m, "nope", POPC_ENOTFOUND);
    ck_assert_str_eq(popc_last_error(), "No tensor with name nope found. "
                     "(anchor tensors with the anchorTensor option, "
                     "short=long)");
    popc_model_free(m);
    popc_model_free(one);
    popc_options_free(o);
    popc_options_free(o1);
    popc_optimizer_free(opt);
    popc_tensor_free(w1);
    popc_tensor_free(b1);
    popc_tensor_free(x);
    popc_graph_free(g);
}
END_TEST

/* Bad anchors: a name the graph lacks fails the compile; bad syntax and
** modes fail when the option is set. */
START_TEST(anchor_errors)
{
    popc_graph *g = make_mlp();
    popc_options *o = options(2, 1, 1, NULL, NULL);
    popc_optimizer *opt = sgd(0.1, 0.0, 1.0);
    popc_model *m = NULL;
    popc_tensor *x = ref("x"), *y = ref("y"), *in[2], *loss = NULL;

    ck_assert_int_eq(popc_options_set(o, "anchorTensor", "h"), POPC_EINVAL);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "is not "
                                 "SHORT=LONG[@MODE]"));
    ck_assert_int_eq(popc_options_set(o, "anchorTensor", "h=x@Often"),
                     POPC_EINVAL);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "unknown output mode"));
    ck_assert_int_eq(popc_options_set(o, "anchorTensor", "h=x@EveryN"),
                     POPC_EINVAL);
    ck_assert_int_eq(popc_options_set(o, "anchorTensor", "h=x,h=y"),
                     POPC_EINVAL);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "used twice"));
    OK(popc_options_set(o, "anchorTensor", "h=no_such_value"));
    OK(popc_model_new_training(g, o, opt, &m));
    in[0] = rows(x, 0, 2);
    in[1] = rows(y, 0, 2);
    ck_assert_int_eq(popc_model_run(m, in, 2, &loss, 1), POPC_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "has no tensor named "
                                 "'no_such_value'"));
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_model_free(m);
    popc_options_free(o);
    popc_optimizer_free(opt);
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_graph_free(g);
}
END_TEST

/* Counts the log lines saying the strategy switched to Running. */
static void count_switches(int level, const char *msg, void *user)
{
    (void)level;
    if (strstr(msg, "accum_type is float16: using Training."
                    "meanAccumulationAndReplicationReductionStrategy = "
                    "Running"))
        ++*(int *)user;
}

/* R2.3's exception: SGD with combined accumulators (use_combined_accum)
** has no separate gradient accumulator, so accum_type float16 neither
** switches an explicit Post strategy to Running (no warning; by hand the
** mean gradient stays the float32 Post mean 35000 and the first step's
** velocity is that gradient, so w = -lr x 35000) nor is refused after the
** compile. A plain float16 SGD does switch, with a warning since Post was
** set. A model compiled with float16 accumulation already runs Running:
** another float16 optimizer is accepted after the compile. */
START_TEST(half_accumulation_rule_exceptions)
{
    popc_model *m = half_model("cpu", "Post", 0, 0.9);
    popc_optimizer *combined = sgd(1e-4, 0.9, 1.0);
    popc_optimizer *half = sgd(1e-4, 0.0, 1.0);
    int switches = 0;

    popc_log_set_callback(count_switches, &switches);
    OK(popc_optimizer_set(combined, "use_combined_accum", 1));
    OK(popc_optimizer_set(combined, "accum_type", 1));
    OK(popc_model_set_optimizer(m, combined));
    ck_assert_float_eq_tol(half_step(m), -1e-4f * 35000.0f, 1e-6f);
    ck_assert_int_eq(switches, 0);
    OK(popc_model_set_optimizer(m, combined));
    popc_model_free(m);

    m = half_model("cpu", "Post", 1, 0.0);
    ck_assert_float_eq_tol(half_step(m), -1e-4f * 35008.0f, 1e-6f);
    ck_assert_int_eq(switches, 1);
    popc_log_set_callback(NULL, NULL);
    OK(popc_optimizer_set(half, "accum_type", 1));
    OK(popc_model_set_optimizer(m, half));
    popc_model_free(m);
    popc_optimizer_free(combined);
    popc_optimizer_free(half);
}
END_TEST

/* R2.3 after compile: PopTorch's ValueError text. */
START_TEST(half_accumulation_after_compile)
{
    popc_model *m = half_model("cpu", NULL, 0, 0.0);
    popc_optimizer *opt = sgd(1e-4, 0.0, 1.0);

    (void)half_step(m);
    OK(popc_optimizer_set(opt, "accum_type", 1));
    ck_assert_int_eq(popc_model_set_optimizer(m, opt), POPC_EINVAL);
    ck_assert_str_eq(popc_last_error(),
                     "Invalid optimizer: the new optimizer would require "
                     "changing options.Training.meanAccumulationAndReplication"
                     "ReductionStrategy to poptorch.MeanReductionStrategy."
                     "Running but the executable is already compiled.");
    popc_optimizer_free(opt);
    popc_model_free(m);
}
END_TEST


int main(void)
{
    Suite *s = suite_create("model_train");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, sgd_momentum_matches_torch);
    tcase_add_test(tc, accumulation_replication_mean);
    tcase_add_test(tc, accumulation_replication_sum);
    tcase_add_test(tc, running_equals_post);
    tcase_add_test(tc, loss_scaling_is_transparent);
    tcase_add_test(tc, variable_loss_scaling_changes);
    tcase_add_test(tc, set_optimizer_lr_without_recompile);
    tcase_add_test(tc, optimizer_state_checkpoint);
    tcase_add_test(tc, optimizer_state_exists_from_compile);
    tcase_add_test(tc, destroy_keeps_training);
    tcase_add_test(tc, inference_shares_training_weights);
    tcase_add_test(tc, batchnorm_running_statistics);
    tcase_add_test(tc, no_loss);
    tcase_add_test(tc, multiple_losses);
    tcase_add_test(tc, set_optimizer_on_inference);
    tcase_add_test(tc, training_raises_no_fp_exception);
    tcase_add_test(tc, half_accumulation_cpu);
    tcase_add_test(tc, half_accumulation_ipumodel);
    tcase_add_test(tc, half_storage_in_the_memory_report);
    tcase_add_test(tc, half_accumulation_after_compile);
    tcase_add_test(tc, half_accumulation_rule_exceptions);
    tcase_add_test(tc, synthetic_data_replaces_host_io);
    tcase_add_test(tc, anchor_tensors);
    tcase_add_test(tc, anchor_errors);
    tcase_add_test(tc, automatic_loss_scaling);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
