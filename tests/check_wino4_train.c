/* check_wino4_train.c - a small convolutional net trains through
** popc_model_new_training, the gradients of its 3x3 convolutions by
** Winograd F(4x4, 3x3) (ConvGradInput, and ConvGradWeight with the bias
** gradient it sums from dY; a training model's forward keeps F(2x2), see
** ops/nn/winograd4_fits.c), with the losses of torch in float64
** (tests/ref/nn/wino4_train_losses.npy, written by
** tests/ref/gen_wino4_train.py, which describes the model, data and
** weights), on the ipumodel and cpu backends. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "ops/nn/winograd4.h"
#include "popc/layers.h"
#include "popc/popc.h"
#include "tests/harness/ref_check.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

#define BATCH 8
#define CH 32
#define SIDE 20
#define STEPS 6
#define LR 0.1
/* the losses' largest relative difference from torch's (measured about
** 1e-7 with F(4x4) and with F(2x2)) */
#define RTOL 2e-6
#define N_PARAMS 6

static const char *const params[N_PARAMS] = {
    "conv1.weight", "conv1.bias", "conv2.weight",
    "conv2.bias", "fc.weight", "fc.bias"};

static void set_formula_weights(popc_graph *g)
{
    for (int k = 0; k < N_PARAMS; k++) {
        int id = popc_graph_find_value(g, params[k]);
        double fan_in = k < 4 ? CH * 9 : CH;
        popc_tensor *t = NULL;
        float *w;

        ck_assert_msg(id >= 0, "no parameter %s", params[k]);
        OK(popc_tensor_clone(popc_graph_value_tensor(g, id), &t));
        w = popc_tensor_data(t);
        for (int64_t i = 0; i < popc_tensor_numel(t); i++)
            w[i] = (float)(sin(0.37 * (double)i + 0.5 + k) / sqrt(fan_in));
        OK(popc_graph_set_initializer(g, id, t));
        popc_tensor_free(t);
    }
}

static popc_graph *build(void)
{
    int64_t xd[4] = {BATCH, CH, SIDE, SIDE}, ld[1] = {BATCH};
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int x, labels, v, loss;

    OK(popc_graph_new("wino4", &g));
    OK(popc_layers_new(g, 0, &L));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 4, &x));
    OK(popc_nn_conv2d(L, "conv1", x, CH, CH, 3, 1, 1, 1, 1, 1, &v));
    OK(popc_nn_activation(L, "Relu", v, 0.0, &v));
    OK(popc_nn_conv2d(L, "conv2", v, CH, CH, 3, 1, 1, 1, 1, 1, &v));
    OK(popc_nn_activation(L, "Relu", v, 0.0, &v));
    OK(popc_nn_global_avgpool(L, v, &v));
    OK(popc_nn_flatten(L, v, 1, &v));
    OK(popc_nn_linear(L, "fc", v, CH, 10, 1, &v));
    OK(popc_graph_add_input(g, "labels", POPC_DTYPE_I32, ld, 1, &labels));
    OK(popc_nn_cross_entropy(L, v, labels, "mean", &loss));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    set_formula_weights(g);
    return g;
}

/* The convolutions' gradients take F(4x4), their forward not (the
** predicate the kernels ask). */
static void assert_takes_wino4(void)
{
    conv_p p;

    memset(&p, 0, sizeof p);
    p.N = BATCH;
    p.G = 1;
    p.w.sp = 2;
    p.w.kh = p.w.kw = 3;
    p.w.sh = p.w.sw = p.w.dh = p.w.dw = 1;
    p.w.H = p.w.W = p.w.OH = p.w.OW = SIDE;
    p.w.pt = p.w.pl = 1;
    ck_assert(nn_wino4_fits(&p, CH, CH, NN_WINO4_GRAD_INPUT) &&
              nn_wino4_fits(&p, CH, CH, NN_WINO4_GRAD_WEIGHT) &&
              !nn_wino4_fits(&p, CH, CH, NN_WINO4_FORWARD));
}

static void train_case(const char *backend)
{
    int64_t xd[4] = {BATCH, CH, SIDE, SIDE}, ld[1] = {BATCH};
    int64_t n = (int64_t)BATCH * CH * SIDE * SIDE;
    popc_graph *g = build();
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    popc_tensor *x = NULL, *labels = NULL;
    popc_tensor *want = rc_load("wino4_train", "losses");
    const float *w;
    float *xf;
    int32_t *lf;

    assert_takes_wino4();
    ck_assert_ptr_nonnull(want);
    ck_assert_int_eq(popc_tensor_numel(want), STEPS);
    w = popc_tensor_cdata(want);
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 4, &x));
    OK(popc_tensor_new(POPC_DTYPE_I32, ld, 1, &labels));
    xf = popc_tensor_data(x);
    lf = popc_tensor_data(labels);
    for (int64_t i = 0; i < n; i++)
        xf[i] = (float)sin(0.013 * (double)i + 0.1);
    for (int s = 0; s < BATCH; s++)
        lf[s] = 3 * s % 10;
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", LR));
    OK(popc_model_new_training(g, o, opt, &m));
    for (int s = 0; s < STEPS; s++) {
        popc_tensor *loss = NULL;
        double got, rel;

        OK(popc_model_run(m, (popc_tensor *[]){x, labels}, 2, &loss, 1));
        got = *(const float *)popc_tensor_cdata(loss);
        rel = fabs(got - w[s]) / fabs((double)w[s]);
        printf("%s step %d: loss %.7f, torch %.7f (rel %.1e)\n", backend, s,
               got, (double)w[s], rel);
        ck_assert_msg(rel <= RTOL, "%s step %d: loss %.8g, torch %.8g",
                      backend, s, got, (double)w[s]);
        popc_tensor_free(loss);
    }
    popc_tensor_free(want);
    popc_tensor_free(x);
    popc_tensor_free(labels);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
    popc_graph_free(g);
}

START_TEST(trains_like_torch_ipumodel)
{
    train_case("ipumodel");
}
END_TEST

START_TEST(trains_like_torch_cpu)
{
    train_case("cpu");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("wino4_train");
    TCase *tc = tcase_create("train");

    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, trains_like_torch_ipumodel);
    tcase_add_test(tc, trains_like_torch_cpu);
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
