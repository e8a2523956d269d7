/* check_layers.c - torch.nn-style builders: output shapes, parameter names
** and kinds, PyTorch's default initialisation bounds, reproducibility from
** the seed, loss reductions, and a small CNN + MLP that trains (one final
** loss, a gradient for every weight). Needs the build tree's op plugins
** (POPC_PLUGIN_PATH, set by make check). */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())
#define HAS(msg, part)                                                     \
    ck_assert_msg(strstr((msg), (part)) != NULL, "'%s' not in: %s", (part), \
                  (msg))

static popc_graph *g;
static popc_layers *L;

static void setup(void)
{
    popc_registry *reg;

    OK(popc_registry_global(&reg));
    ck_assert_msg(popc_registry_find_op(reg, NULL, "Gemm", 0) &&
                  popc_registry_find_op(reg, NULL, "Conv", 0),
                  "the op plugins are not loaded (POPC_PLUGIN_PATH=%s)",
                  getenv("POPC_PLUGIN_PATH") ? getenv("POPC_PLUGIN_PATH")
                                             : "");
    OK(popc_graph_new("layers", &g));
    OK(popc_layers_new(g, 1234, &L));
}

static void teardown(void)
{
    popc_layers_free(L);
    popc_graph_free(g);
    L = NULL;
    g = NULL;
}

static int input(const char *name, popc_dtype dt, int rank, int64_t d0,
                 int64_t d1, int64_t d2, int64_t d3)
{
    int64_t dims[4] = {d0, d1, d2, d3};
    int id;
    OK(popc_graph_add_input(g, name, dt, dims, rank, &id));
    return id;
}

/* Checks a value's shape, e.g. shape_is(y, 2, 4, 10). */
static void shape_is(int v, int rank, ...)
{
    popc_view info = popc_graph_value_info(g, v);
    va_list ap;

    ck_assert_int_eq(info.dtype, POPC_DTYPE_F32);
    ck_assert_int_eq(info.rank, rank);
    va_start(ap, rank);
    for (int d = 0; d < rank; d++)
        ck_assert_int_eq(info.dims[d], va_arg(ap, int));
    va_end(ap);
}

static popc_tensor *param(const char *name, int trainable)
{
    int v = popc_graph_find_value(g, name);

    ck_assert_msg(v >= 0, "no parameter '%s'", name);
    ck_assert_int_eq(popc_graph_value_kind(g, v), POPC_VALUE_INITIALIZER);
    ck_assert_int_eq(popc_graph_value_trainable(g, v), trainable);
    return popc_graph_value_tensor(g, v);
}

/* Values inside [-bound, bound], spread over it, centred. */
static void uniform_in(const popc_tensor *t, double bound)
{
    const float *d = popc_tensor_cdata(t);
    int64_t n = popc_tensor_numel(t);
    double mx = 0, mean = 0;

    for (int64_t i = 0; i < n; i++) {
        ck_assert_msg(fabs(d[i]) <= bound, "%g outside +-%g", (double)d[i],
                      bound);
        if (fabs(d[i]) > mx)
            mx = fabs(d[i]);
        mean += d[i];
    }
    mean /= (double)n;
    ck_assert_msg(mx > 0.9 * bound, "max %g of %lld draws far below %g", mx,
                  (long long)n, bound);
    /* the mean of n U(-b, b) draws has sd b / sqrt(3n) */
    ck_assert_msg(fabs(mean) < 5 * bound / sqrt(3.0 * (double)n),
                  "mean %g", mean);
}

static void all_equal(const popc_tensor *t, float v)
{
    const float *d = popc_tensor_cdata(t);

    for (int64_t i = 0; i < popc_tensor_numel(t); i++)
        ck_assert_float_eq(d[i], v);
}

static const char *node_op_of(int value)
{
    return popc_graph_node_op(g, popc_graph_value_producer(g, value));
}

START_TEST(linear_shapes_names_init)
{
    int x = input("x", POPC_DTYPE_F32, 2, 4, 784, 0, 0), y, y2, x3, n;
    popc_attrs at;

    OK(popc_nn_linear(L, "fc1", x, 784, 10, 1, &y));
    shape_is(y, 2, 4, 10);
    ck_assert_str_eq(node_op_of(y), "Gemm");
    n = popc_graph_value_producer(g, y);
    ck_assert_str_eq(popc_graph_node_name(g, n), "fc1");
    at = popc_graph_node_attrs(g, n);
    ck_assert_int_eq(popc_attr_int(&at, "transB", 0), 1);
    ck_assert_int_eq(popc_tensor_dims(param("fc1.weight", 1))[0], 10);
    ck_assert_int_eq(popc_tensor_dims(param("fc1.weight", 1))[1], 784);
    uniform_in(param("fc1.weight", 1), 1.0 / sqrt(784.0));
    uniform_in(param("fc1.bias", 1), 1.0 / sqrt(784.0));
    /* no bias, generated name */
    OK(popc_nn_linear(L, NULL, y, 10, 3, 0, &y2));
    shape_is(y2, 2, 4, 3);
    ck_assert_int_ge(popc_graph_find_value(g, "linear_0.weight"), 0);
    ck_assert_int_eq(popc_graph_find_value(g, "linear_0.bias"), -1);
    /* other ranks go through MatMul, as torch applies Linear on the last
    ** dimension */
    x3 = input("x3", POPC_DTYPE_F32, 3, 2, 5, 8, 0);
    OK(popc_nn_linear(L, "proj", x3, 8, 4, 1, &y));
    shape_is(y, 3, 2, 5, 4);
    ck_assert_int_ge(popc_graph_find_value(g, "proj.bias"), 0);
    /* mistakes name the layer */
    ck_assert_int_eq(popc_nn_linear(L, "fc9", x, 100, 10, 1, &y),
                     POPC_EINVAL);
    HAS(popc_last_error(), "Linear 'fc9'");
    HAS(popc_last_error(), "float32[4, 784]");
    ck_assert_int_eq(y, -1);
    ck_assert_int_eq(popc_nn_linear(L, "fc1", x, 784, 10, 1, &y),
                     POPC_EEXIST);
    HAS(popc_last_error(), "fc1.weight");
    ck_assert_int_eq(popc_nn_linear(L, "z", x, 0, 10, 1, &y), POPC_EINVAL);
    {   /* a second builder on the graph skips the names the first made */
        popc_layers *L2 = NULL;

        OK(popc_layers_new(g, 7, &L2));
        OK(popc_nn_linear(L2, NULL, y2, 3, 2, 1, &y));
        ck_assert_int_ge(popc_graph_find_value(g, "linear_1.weight"), 0);
        popc_layers_free(L2);
    }
}
END_TEST

START_TEST(conv_pool_flatten)
{
    int x = input("x", POPC_DTYPE_F32, 4, 2, 3, 8, 8), c, c2, p, a, gp, f;

    OK(popc_nn_conv2d(L, "conv1", x, 3, 6, 3, 1, 1, 1, 1, 1, &c));
    shape_is(c, 4, 2, 6, 8, 8);
    ck_assert_str_eq(node_op_of(c), "Conv");
    uniform_in(param("conv1.weight", 1), 1.0 / sqrt(27.0));
    uniform_in(param("conv1.bias", 1), 1.0 / sqrt(27.0));
    ck_assert_int_eq(popc_tensor_rank(param("conv1.weight", 1)), 4);
    OK(popc_nn_conv2d(L, "dw", c, 6, 6, 3, 2, 0, 1, 3, 0, &c2));
    shape_is(c2, 4, 2, 6, 3, 3);
    ck_assert_int_eq(popc_tensor_dims(param("dw.weight", 1))[1], 2);
    uniform_in(param("dw.weight", 1), 1.0 / sqrt(18.0));
    ck_assert_int_eq(popc_nn_conv2d(L, "bad", c, 6, 5, 3, 1, 0, 1, 4, 0, &f),
                     POPC_EINVAL);
    HAS(popc_last_error(), "groups");
    ck_assert_int_eq(popc_nn_conv2d(L, "bad2", x, 4, 5, 3, 1, 0, 1, 1, 0, &f),
                     POPC_EINVAL);
    HAS(popc_last_error(), "Conv2d 'bad2'");
    OK(popc_nn_maxpool2d(L, c, 2, 0, 0, &p));
    shape_is(p, 4, 2, 6, 4, 4);
    ck_assert_str_eq(node_op_of(p), "MaxPool");
    OK(popc_nn_avgpool2d(L, c, 3, 1, 1, &a));
    shape_is(a, 4, 2, 6, 8, 8);
    {
        popc_attrs at = popc_graph_node_attrs(g, popc_graph_value_producer(g,
                                                                          a));
        ck_assert_int_eq(popc_attr_int(&at, "count_include_pad", 0), 1);
    }
    OK(popc_nn_global_avgpool(L, p, &gp));
    shape_is(gp, 4, 2, 6, 1, 1);
    OK(popc_nn_flatten(L, gp, 1, &f));
    shape_is(f, 2, 2, 6);
}
END_TEST

START_TEST(norms)
{
    int x = input("x", POPC_DTYPE_F32, 4, 2, 6, 4, 4), y, n;
    int x3 = input("x3", POPC_DTYPE_F32, 3, 2, 5, 8, 0);
    popc_attrs at;
    char *dump = NULL;

    OK(popc_nn_batchnorm2d(L, "bn1", x, 6, 1e-5, 0.1, &y));
    shape_is(y, 4, 2, 6, 4, 4);
    n = popc_graph_value_producer(g, y);
    ck_assert_str_eq(popc_graph_node_op(g, n), "BatchNormalization");
    ck_assert_int_eq(popc_graph_node_n_outputs(g, n), 3);
    at = popc_graph_node_attrs(g, n);
    ck_assert_double_eq_tol(popc_attr_float(&at, "momentum", 0), 0.9, 1e-12);
    ck_assert_double_eq(popc_attr_float(&at, "epsilon", 0), 1e-5);
    all_equal(param("bn1.weight", 1), 1.0f);
    all_equal(param("bn1.bias", 1), 0.0f);
    all_equal(param("bn1.running_mean", 0), 0.0f);
    all_equal(param("bn1.running_var", 0), 1.0f);
    OK(popc_graph_dump(g, &dump));
    HAS(dump, "update %bn1.running_mean <- %bn1:1");
    HAS(dump, "update %bn1.running_var <- %bn1:2");
    free(dump);
    ck_assert_int_eq(popc_nn_batchnorm2d(L, "bn2", x, 5, 1e-5, 0.1, &y),
                     POPC_EINVAL);
    HAS(popc_last_error(), "BatchNorm2d 'bn2'");

    OK(popc_nn_layernorm(L, "ln", x3, 8, 1e-5, &y));
    shape_is(y, 3, 2, 5, 8);
    ck_assert_str_eq(node_op_of(y), "LayerNormalization");
    all_equal(param("ln.weight", 1), 1.0f);
    all_equal(param("ln.bias", 1), 0.0f);
}
END_TEST

START_TEST(activations_dropout_softmax)
{
    int x = input("x", POPC_DTYPE_F32, 2, 3, 5, 0, 0), y, n;
    popc_attrs at;

    OK(popc_nn_activation(L, "Relu", x, 0, &y));
    shape_is(y, 2, 3, 5);
    ck_assert_int_eq(popc_graph_node_attrs(g, popc_graph_value_producer(g, y))
                         .n, 0);
    OK(popc_nn_activation(L, "LeakyRelu", x, 0.2, &y));
    at = popc_graph_node_attrs(g, popc_graph_value_producer(g, y));
    ck_assert_double_eq(popc_attr_float(&at, "alpha", 0), 0.2);
    OK(popc_nn_activation(L, "Gelu", x, 0, &y));
    OK(popc_nn_activation(L, "Tanh", y, 0, &y));
    OK(popc_nn_activation(L, "Sigmoid", y, 0, &y));
    shape_is(y, 2, 3, 5);
    ck_assert_int_eq(popc_nn_activation(L, "", x, 0, &y), POPC_EINVAL);
    OK(popc_nn_dropout(L, x, 0.5, &y));
    shape_is(y, 2, 3, 5);
    n = popc_graph_value_producer(g, y);
    ck_assert_str_eq(popc_graph_node_op(g, n), "Dropout");
    ck_assert_int_eq(popc_graph_node_n_outputs(g, n), 2);
    ck_assert_float_eq(*(const float *)popc_tensor_cdata(
                           popc_graph_value_tensor(
                               g, popc_graph_node_input(g, n, 1))),
                       0.5f);
    ck_assert_int_eq(popc_nn_dropout(L, x, 1.0, &y), POPC_EINVAL);
    OK(popc_nn_softmax(L, x, -1, 0, &y));
    ck_assert_str_eq(node_op_of(y), "Softmax");
    OK(popc_nn_softmax(L, x, 1, 1, &y));
    ck_assert_str_eq(node_op_of(y), "LogSoftmax");
    shape_is(y, 2, 3, 5);
}
END_TEST

START_TEST(losses_and_reductions)
{
    int x = input("x", POPC_DTYPE_F32, 2, 4, 10, 0, 0);
    int t = input("t", POPC_DTYPE_F32, 2, 4, 10, 0, 0);
    int lab = input("labels", POPC_DTYPE_I64, 1, 4, 0, 0, 0), l, n;
    popc_attrs at;

    OK(popc_nn_cross_entropy(L, x, lab, "mean", &l));
    shape_is(l, 0);
    ck_assert_str_eq(node_op_of(l), "SoftmaxCrossEntropyLoss");
    OK(popc_nn_cross_entropy(L, x, lab, "none", &l));
    shape_is(l, 1, 4);
    ck_assert_int_eq(popc_nn_cross_entropy(L, x, lab, "avg", &l),
                     POPC_EINVAL);
    HAS(popc_last_error(), "'avg'");
    OK(popc_nn_softmax(L, x, 1, 1, &l));
    OK(popc_nn_nll_loss(L, l, lab, NULL, &l));
    shape_is(l, 0);
    n = popc_graph_value_producer(g, l);
    at = popc_graph_node_attrs(g, n);
    ck_assert_str_eq(popc_attr_string(&at, "reduction", ""), "mean");
    OK(popc_nn_mse_loss(L, x, t, "sum", &l));
    shape_is(l, 0);
    ck_assert_str_eq(popc_graph_node_domain(g, popc_graph_value_producer(g,
                                                                        l)),
                     "popc");
    OK(popc_nn_l1_loss(L, x, t, "none", &l));
    shape_is(l, 2, 4, 10);
    ck_assert_str_eq(node_op_of(l), "L1Loss");
    /* poptorch.identity_loss codes: sum 0, mean 1, none 2 */
    {
        const char *names[3] = {"sum", "mean", "none"};
        for (int i = 0; i < 3; i++) {
            OK(popc_nn_identity_loss(L, x, names[i], &l));
            n = popc_graph_value_producer(g, l);
            ck_assert_str_eq(popc_graph_node_op(g, n), "IdentityLoss");
            at = popc_graph_node_attrs(g, n);
            ck_assert_int_eq(popc_attr_int(&at, "reduction", -1), i);
        }
        shape_is(l, 2, 4, 10);
    }
    ck_assert_int_eq(popc_nn_identity_loss(L, x, "average", &l),
                     POPC_EINVAL);
    ck_assert_msg(strncmp(popc_last_error(), "Unsupported reduction type!",
                          27) == 0, "%s", popc_last_error());
    ck_assert_int_eq(l, -1);
    ck_assert_int_eq(popc_nn_identity_loss(L, x, NULL, &l), POPC_EINVAL);
}
END_TEST

/* Weights depend on (seed, name) only. */
static void build_two(popc_graph *gr, uint64_t seed, int reversed)
{
    popc_layers *l2;
    int64_t d[2] = {2, 16};
    int x, y;

    OK(popc_graph_add_input(gr, "x", POPC_DTYPE_F32, d, 2, &x));
    OK(popc_layers_new(gr, seed, &l2));
    if (reversed) {
        OK(popc_nn_linear(l2, "b", x, 16, 8, 1, &y));
        OK(popc_nn_linear(l2, "a", x, 16, 8, 1, &y));
    } else {
        OK(popc_nn_linear(l2, "a", x, 16, 8, 1, &y));
        OK(popc_nn_linear(l2, "b", x, 16, 8, 1, &y));
    }
    popc_layers_free(l2);
}

static popc_tensor *weight_of(popc_graph *gr, const char *name)
{
    return popc_graph_value_tensor(gr, popc_graph_find_value(gr, name));
}

START_TEST(reproducible_from_seed)
{
    popc_graph *a, *b, *c;

    OK(popc_graph_new("a", &a));
    OK(popc_graph_new("b", &b));
    OK(popc_graph_new("c", &c));
    build_two(a, 7, 0);
    build_two(b, 7, 1);
    build_two(c, 8, 0);
    ck_assert(popc_tensor_equal(weight_of(a, "a.weight"),
                                weight_of(b, "a.weight")));
    ck_assert(popc_tensor_equal(weight_of(a, "b.bias"),
                                weight_of(b, "b.bias")));
    ck_assert(!popc_tensor_equal(weight_of(a, "a.weight"),
                                 weight_of(c, "a.weight")));
    ck_assert(!popc_tensor_equal(weight_of(a, "a.weight"),
                                 weight_of(a, "b.weight")));
    popc_graph_free(a);
    popc_graph_free(b);
    popc_graph_free(c);
}
END_TEST

/* The layers compose into a trainable model: one final loss, a gradient
** for every trainable weight, and evaluation runs. */
START_TEST(small_cnn_trains)
{
    int x = input("x", POPC_DTYPE_F32, 4, 2, 1, 8, 8);
    int lab = input("labels", POPC_DTYPE_I64, 1, 2, 0, 0, 0);
    int h, loss, wrt[16], grads[16], n_wrt = 0;
    popc_tensor *in[2], *out[16];
    int64_t xd[4] = {2, 1, 8, 8}, ld[1] = {2};
    int64_t labels[2] = {3, 7};

    OK(popc_nn_conv2d(L, "conv", x, 1, 4, 3, 1, 1, 1, 1, 1, &h));
    OK(popc_nn_batchnorm2d(L, "bn", h, 4, 1e-5, 0.1, &h));
    OK(popc_nn_activation(L, "Relu", h, 0, &h));
    OK(popc_nn_maxpool2d(L, h, 2, 2, 0, &h));
    OK(popc_nn_flatten(L, h, 1, &h));
    OK(popc_nn_dropout(L, h, 0.1, &h));
    OK(popc_nn_linear(L, "fc", h, 64, 10, 1, &h));
    OK(popc_graph_add_output(g, h));
    OK(popc_nn_cross_entropy(L, h, lab, "mean", &loss));
    OK(popc_graph_verify(g, 1));
    for (int v = 0; v < popc_graph_n_values(g); v++)
        if (popc_graph_value_trainable(g, v))
            wrt[n_wrt++] = v;
    ck_assert_int_eq(n_wrt, 6);
    OK(popc_graph_gradients(g, loss, wrt, n_wrt, 1.0, grads));
    for (int i = 0; i < n_wrt; i++)
        ck_assert_msg(grads[i] >= 0, "no gradient for %s",
                      popc_graph_value_name(g, wrt[i]));
    OK(popc_graph_verify(g, 1));
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 4, &in[0]));
    for (int i = 0; i < 128; i++)
        ((float *)popc_tensor_data(in[0]))[i] = (float)((i * 37) % 17) / 17;
    OK(popc_tensor_from_data(POPC_DTYPE_I64, ld, 1, labels, &in[1]));
    OK(popc_graph_eval(g, in, 2, grads, n_wrt, out, 1, 5));
    for (int i = 0; i < n_wrt; i++) {
        const float *d = popc_tensor_cdata(out[i]);
        double s = 0;
        for (int64_t k = 0; k < popc_tensor_numel(out[i]); k++)
            s += fabs(d[k]);
        ck_assert_msg(isfinite(s) && s > 0, "gradient of %s is %g",
                      popc_graph_value_name(g, wrt[i]), s);
        popc_tensor_free(out[i]);
    }
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
}
END_TEST

static Suite *layers_suite(void)
{
    Suite *s = suite_create("layers");
    TCase *tc = tcase_create("layers");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, linear_shapes_names_init);
    tcase_add_test(tc, conv_pool_flatten);
    tcase_add_test(tc, norms);
    tcase_add_test(tc, activations_dropout_softmax);
    tcase_add_test(tc, losses_and_reductions);
    tcase_add_test(tc, reproducible_from_seed);
    tcase_add_test(tc, small_cnn_trains);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(layers_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
