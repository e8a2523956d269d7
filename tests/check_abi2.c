/* check_abi2.c - a plugin built against popc 0.3.0 (plugin ABI 2) loads
** and works in this release (docs/plugins.md, "Compatibility").
**
** tests/abi2/abi2.c is compiled against the frozen 0.3.0 headers in
** tests/abi2/include, never against this release's. Its op ScaleAdd and its
** optimizer abi2_sgd run inference and one training step on the cpu and
** ipumodel backends; the numbers are derived by hand below. An ABI 2
** backend is refused with a message that says to rebuild it.
*/
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

static const char *const backends[] = {"cpu", "ipumodel"};

static void load_abi2(void)
{
    popc_registry *reg;

    OK(popc_registry_global(&reg));
    if (!popc_registry_find_op(reg, "abi2.test", "ScaleAdd", 1))
        OK(popc_registry_load_file(reg, ABI2_PLUGINS_DIR "/abi2"));
}

/* x [1, 2] -> abi2.test::ScaleAdd(x, w; c = 0.25) -> y; training adds
** loss = sum(y * y). fail_cost: the attribute that makes cost() fail. */
static popc_graph *scale_graph(int training, int fail_cost)
{
    int64_t d[2] = {1, 2};
    const float w0[2] = {0.5f, -1.0f};
    popc_attr attrs[2] = {popc_attr_make_float("c", 0.25),
                          popc_attr_make_int("fail_cost", 1)};
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    popc_tensor *w = NULL;
    int x, in[2], y, sq[2], yy, loss;

    OK(popc_graph_new("abi2", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, d, 2, &x));
    OK(popc_tensor_new(POPC_DTYPE_F32, d, 2, &w));
    memcpy(popc_tensor_data(w), w0, sizeof w0);
    OK(popc_graph_add_initializer(g, "w", w, 1, &in[1]));
    popc_tensor_free(w);
    in[0] = x;
    OK(popc_graph_add_node(g, "abi2.test", "ScaleAdd", 1, in, 2, &y, 1,
                           attrs, fail_cost ? 2 : 1, "scale", NULL));
    if (!training) {
        OK(popc_graph_add_output(g, y));
        return g;
    }
    sq[0] = sq[1] = y;
    OK(popc_graph_add_node(g, NULL, "Mul", 0, sq, 2, &yy, 1, NULL, 0, "sq",
                           NULL));
    OK(popc_layers_new(g, 1, &L));
    OK(popc_nn_identity_loss(L, yy, "sum", &loss));
    popc_layers_free(L);
    OK(popc_graph_add_output(g, loss));
    return g;
}

static popc_options *options_for(const char *backend)
{
    popc_options *o = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    return o;
}

static popc_tensor *input_x(void)
{
    int64_t d[2] = {1, 2};
    const float x[2] = {1.0f, 2.0f};
    popc_tensor *t = NULL;

    OK(popc_tensor_new(POPC_DTYPE_F32, d, 2, &t));
    memcpy(popc_tensor_data(t), x, sizeof x);
    return t;
}

/* y = x * w + c = [1 * 0.5 + 0.25, 2 * -1 + 0.25] = [0.75, -1.75] */
START_TEST(abi2_op_runs_inference)
{
    popc_graph *g;
    popc_options *o;
    popc_model *m = NULL;
    popc_tensor *x, *y = NULL;
    const float *v;

    load_abi2();
    g = scale_graph(0, 0);
    o = options_for(backends[_i]);
    x = input_x();
    OK(popc_model_new_inference(g, o, &m));
    OK(popc_model_run(m, &x, 1, &y, 1));
    v = popc_tensor_cdata(y);
    ck_assert_float_eq_tol(v[0], 0.75f, 1e-6f);
    ck_assert_float_eq_tol(v[1], -1.75f, 1e-6f);
    popc_tensor_free(y);
    popc_tensor_free(x);
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
}
END_TEST

/* loss = sum(y^2) = 0.5625 + 3.0625 = 3.625; dL/dw = 2 y x = [1.5, -7];
** abi2_sgd with lr 0.1: w = [0.5 - 0.15, -1 + 0.7] = [0.35, -0.3]; the
** next loss: y = [0.35 + 0.25, -0.6 + 0.25], sum(y^2) = 0.36 + 0.1225. */
START_TEST(abi2_op_and_optimizer_train)
{
    popc_graph *g;
    popc_options *o;
    popc_optimizer *sgd = NULL;
    popc_model *m = NULL;
    popc_tensor *x, *loss = NULL;
    const popc_tensor *w = NULL;
    const float *v;

    load_abi2();
    g = scale_graph(1, 0);
    o = options_for(backends[_i]);
    x = input_x();
    OK(popc_optimizer_new("abi2_sgd", &sgd));
    OK(popc_optimizer_set(sgd, "lr", 0.1));
    OK(popc_model_new_training(g, o, sgd, &m));
    OK(popc_model_run(m, &x, 1, &loss, 1));
    ck_assert_float_eq_tol(*(const float *)popc_tensor_cdata(loss), 3.625f,
                           1e-5f);
    popc_tensor_free(loss);
    OK(popc_model_get_weight(m, "w", &w));
    v = popc_tensor_cdata(w);
    ck_assert_float_eq_tol(v[0], 0.35f, 1e-6f);
    ck_assert_float_eq_tol(v[1], -0.3f, 1e-6f);
    OK(popc_model_run(m, &x, 1, &loss, 1));
    ck_assert_float_eq_tol(*(const float *)popc_tensor_cdata(loss), 0.4825f,
                           1e-5f);
    popc_tensor_free(loss);
    popc_tensor_free(x);
    popc_model_free(m);
    popc_optimizer_free(sgd);
    popc_options_free(o);
    popc_graph_free(g);
}
END_TEST

/* compile calls the ABI 2 op's cost() through the adapter */
START_TEST(abi2_cost_is_called)
{
    popc_graph *g;
    popc_options *o;
    popc_model *m = NULL;
    popc_tensor *x, *y = NULL;

    load_abi2();
    g = scale_graph(0, 1);
    o = options_for(backends[_i]);
    x = input_x();
    OK(popc_model_new_inference(g, o, &m));
    ck_assert_int_ne(popc_model_run(m, &x, 1, &y, 1), POPC_OK);
    ck_assert_msg(strstr(popc_last_error(), "ScaleAdd 'scale': cost() was "
                                            "called (fail_cost)") != NULL,
                  "%s", popc_last_error());
    popc_tensor_free(x);
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
}
END_TEST

START_TEST(abi2_backend_is_refused_with_the_fix)
{
    popc_registry *reg = NULL;

    OK(popc_registry_new(&reg));
    ck_assert_int_ne(popc_registry_load_file(reg, ABI2_PLUGINS_DIR
                                             "/abi2_backend"),
                     POPC_OK);
    ck_assert_msg(strstr(popc_last_error(), "abi2_backend") != NULL &&
                      strstr(popc_last_error(), "a backend plugin built "
                             "for plugin ABI 2 (popc 0.2 or 0.3) cannot "
                             "load in this popc (ABI 3.1)") != NULL &&
                      strstr(popc_last_error(), "rebuild it against popc "
                             "0.4") != NULL,
                  "%s", popc_last_error());
    ck_assert_ptr_null(popc_registry_find_backend(reg, "abi2_backend"));
    ck_assert_int_eq(popc_registry_plugin_count(reg), 0);
    popc_registry_free(reg);
}
END_TEST

/* the registry lists it like any plugin */
START_TEST(abi2_plugin_is_listed)
{
    popc_registry *reg = NULL;
    popc_plugin_record rec;

    OK(popc_registry_new(&reg));
    OK(popc_registry_load_file(reg, ABI2_PLUGINS_DIR "/abi2"));
    ck_assert_int_eq(popc_registry_plugin_count(reg), 1);
    rec = popc_registry_plugin_at(reg, 0);
    ck_assert_str_eq(rec.name, "abi2");
    ck_assert_str_eq(rec.version, "0.3.0");
    ck_assert_int_eq(rec.n_ops, 1);
    ck_assert_int_eq(rec.n_optimizers, 1);
    ck_assert_str_eq(popc_registry_plugin_item(reg, 0, 0),
                     "abi2.test::ScaleAdd@1");
    ck_assert_str_eq(popc_registry_plugin_item(reg, 0, 1), "optim:abi2_sgd");
    popc_registry_free(reg);
}
END_TEST

static Suite *abi2_suite(void)
{
    Suite *s = suite_create("abi2");
    TCase *tc = tcase_create("abi2");

    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, abi2_op_runs_inference, 0, 2);
    tcase_add_loop_test(tc, abi2_op_and_optimizer_train, 0, 2);
    tcase_add_loop_test(tc, abi2_cost_is_called, 0, 2);
    tcase_add_test(tc, abi2_backend_is_refused_with_the_fix);
    tcase_add_test(tc, abi2_plugin_is_listed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(abi2_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
