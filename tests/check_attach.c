/* check_attach.c - detachFromDevice / attachToDevice (semantics §5). */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"

#define OK(x) ck_assert_msg((x) == POPC_OK, "%s", popc_last_error())
#define ERR(x, st, text)                                                   \
    do {                                                                   \
        ck_assert_int_eq((x), (st));                                       \
        ck_assert_msg(strstr(popc_last_error(), (text)) != NULL, "%s",     \
                      popc_last_error());                                  \
    } while (0)

/* y = fc(x), loss = mse(y, t): a 4 -> 2 linear layer. */
static popc_graph *small_graph(int training)
{
    popc_graph *g;
    popc_layers *L;
    int64_t xd[2] = {2, 4}, td[2] = {2, 2};
    int x, t, y, loss;

    OK(popc_graph_new("attach", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_layers_new(g, 7, &L));
    OK(popc_nn_linear(L, "fc", x, 4, 2, 1, &y));
    if (training) {
        OK(popc_graph_add_input(g, "t", POPC_DTYPE_F32, td, 2, &t));
        OK(popc_nn_mse_loss(L, y, t, "mean", &loss));
        OK(popc_graph_add_output(g, loss));
    } else {
        OK(popc_graph_add_output(g, y));
    }
    popc_layers_free(L);
    return g;
}

static popc_tensor *filled(int64_t rows, int64_t cols, float v)
{
    int64_t d[2] = {rows, cols};
    popc_tensor *t;
    float *p;

    OK(popc_tensor_new(POPC_DTYPE_F32, d, 2, &t));
    p = popc_tensor_data(t);
    for (int64_t i = 0; i < rows * cols; i++)
        p[i] = v + 0.25f * (float)i;
    return t;
}

static popc_options *cpu_options(void)
{
    popc_options *o;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "cpu"));
    return o;
}

START_TEST(errors_follow_the_lifecycle)
{
    popc_graph *g = small_graph(0);
    popc_options *o = cpu_options();
    popc_model *m;
    popc_tensor *x = filled(2, 4, 0.5f), *y = NULL;

    OK(popc_model_new_inference(g, o, &m));
    ERR(popc_model_detach_from_device(m), POPC_ESTATE,
        "Model has not been compiled or has been destroyed.");
    ERR(popc_model_attach_to_device(m), POPC_ESTATE,
        "Model has not been compiled or has been destroyed.");
    OK(popc_model_run(m, &x, 1, &y, 1));
    ck_assert(popc_model_is_attached(m));
    ERR(popc_model_attach_to_device(m), POPC_ESTATE,
        "Device is already attached");
    OK(popc_model_detach_from_device(m));
    ck_assert(!popc_model_is_attached(m));
    ERR(popc_model_detach_from_device(m), POPC_ESTATE,
        "Device is not attached");
    OK(popc_model_attach_to_device(m));
    ck_assert(popc_model_is_attached(m));
    OK(popc_model_destroy(m));
    ERR(popc_model_detach_from_device(m), POPC_ESTATE,
        "Model has not been compiled or has been destroyed.");
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
}
END_TEST

START_TEST(training_detach_keeps_device_weights_and_run_reattaches)
{
    popc_graph *g = small_graph(1);
    popc_options *o = cpu_options();
    popc_optimizer *sgd;
    popc_model *m;
    popc_tensor *in[2] = {filled(2, 4, 0.5f), filled(2, 2, -1.0f)};
    popc_tensor *loss = NULL, *before = NULL, *zero;
    const popc_tensor *w;
    int64_t wd[2] = {2, 4};

    OK(popc_optimizer_new("sgd", &sgd));
    OK(popc_optimizer_set(sgd, "lr", 0.1));
    OK(popc_model_new_training(g, o, sgd, &m));
    OK(popc_model_run(m, in, 2, &loss, 1));
    popc_tensor_free(loss);
    /* Detaching saves the trained weights on the host. */
    OK(popc_model_detach_from_device(m));
    OK(popc_model_get_weight(m, "fc.weight", &w));
    OK(popc_tensor_clone(w, &before));
    ck_assert(!popc_tensor_equal(before, popc_graph_value_tensor(g,
        popc_graph_find_value(g, "fc.weight"))));
    /* Host edits made while detached reach the device on re-attach. */
    OK(popc_tensor_new(POPC_DTYPE_F32, wd, 2, &zero));
    OK(popc_model_set_weight(m, "fc.weight", zero));
    OK(popc_model_run(m, in, 2, &loss, 1));
    ck_assert(popc_model_is_attached(m));
    OK(popc_model_copy_weights_to_host(m));
    OK(popc_model_get_weight(m, "fc.weight", &w));
    /* One SGD step from zero weights stays small; from the trained ones
    ** it would not be zero-centred like this. */
    ck_assert(popc_tensor_max_abs_diff(w, zero) < 0.5);
    ck_assert(!popc_tensor_equal(w, before));
    popc_tensor_free(loss);
    popc_tensor_free(zero);
    popc_tensor_free(before);
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_model_free(m);
    popc_optimizer_free(sgd);
    popc_options_free(o);
    popc_graph_free(g);
}
END_TEST

START_TEST(offline_model_cannot_attach)
{
    popc_graph *g = small_graph(0);
    popc_options *o;
    popc_model *m;
    popc_tensor *x = filled(2, 4, 0.5f);

    OK(popc_options_new(&o));
    OK(popc_options_set_int(o, "useOfflineIpuTarget", 2));
    OK(popc_model_new_inference(g, o, &m));
    OK(popc_model_compile(m, &x, 1));
    ck_assert(!popc_model_is_attached(m));
    ERR(popc_model_attach_to_device(m), POPC_ESTATE,
        "Trying to attach to an offline device (ConnectionType.Never)");
    ERR(popc_model_detach_from_device(m), POPC_ESTATE,
        "Device is not attached");
    popc_tensor_free(x);
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("attach");
    TCase *tc = tcase_create("attach");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, errors_follow_the_lifecycle);
    tcase_add_test(tc, training_detach_keeps_device_weights_and_run_reattaches);
    tcase_add_test(tc, offline_model_cannot_attach);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
