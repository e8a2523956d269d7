/* check_custom_op.c - poptorch.custom_op: the SDK examples (plugins/
** leaky_relu and plugins/cube, built here as test modules) through
** popc_custom_op: attribute rules and texts, resolution by domain and
** version, example outputs, kernels (whole and split), gradients against
** finite differences, training and inference on the cpu and ipumodel
** backends, and the undo of a training run that an op fails half-way. */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <check.h>

#include "popc/popc.h"
#include "popc/run.h"
#include "tests/harness/fd_check.h"
#include "tests/harness/op_harness.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

static void load_oot(void)
{
    popc_registry *reg;

    OK(popc_registry_global(&reg));
    OK(popc_registry_load_path(reg, TEST_OOT_DIR));
}

static int has(const char *text)
{
    return strstr(popc_last_error(), text) != NULL;
}

static popc_tensor *f32(const int64_t *dims, int rank, const float *v)
{
    popc_tensor *t = NULL;

    OK(popc_tensor_from_data(POPC_DTYPE_F32, dims, rank, v, &t));
    return t;
}

/* A graph with one float32 input x [2, 3]. */
static popc_graph *graph_x(int *x)
{
    int64_t d[2] = {2, 3};
    popc_graph *g = NULL;

    OK(popc_graph_new("custom", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, d, 2, x));
    return g;
}

/* ---- attributes ---------------------------------------------------------- */

/* One attribute that popc_custom_op must refuse with text; the graph must
** stay as it was. */
static void refuse(const popc_custom_attr *a, const char *text)
{
    int x, y = 7, nodes;
    popc_graph *g = graph_x(&x);

    nodes = popc_graph_n_nodes(g);
    ck_assert_int_eq(popc_custom_op(g, &x, 1, "LeakyRelu", "com.acme", 1,
                                    NULL, 1, a, 1, &y),
                     POPC_EINVAL);
    ck_assert_msg(strncmp(popc_last_error(), text, strlen(text)) == 0,
                  "got: %s", popc_last_error());
    ck_assert_int_eq(popc_graph_n_nodes(g), nodes);
    ck_assert_int_eq(y, -1);
    popc_graph_free(g);
}

START_TEST(attribute_rules)
{
    popc_custom_value mixed[2] = {{.type = POPC_CUSTOM_FLOAT, .f = 1.0},
                                  {.type = POPC_CUSTOM_INT, .i = 2}};
    popc_custom_value nested[1] = {{.type = POPC_CUSTOM_LIST}};
    const char *bad_strings[2] = {"ok", "caf\xc3\xa9"};
    popc_custom_attr a;

    load_oot();
    a = popc_custom_attr_float(NULL, 1.0);
    refuse(&a, "All attribute keys must be strings.");
    a = popc_custom_attr_float("\xc3\xa9t\xc3\xa9", 1.0);
    refuse(&a, "\xc3\xa9t\xc3\xa9 contains non-ASCII characters.");
    a = popc_custom_attr_string("mode", "na\xc3\xafve");
    refuse(&a, "na\xc3\xafve contains non-ASCII characters.");
    a = (popc_custom_attr){"alpha", {.type = POPC_CUSTOM_STRINGS, .n = 2,
                                     .strings = bad_strings}};
    refuse(&a, "caf\xc3\xa9 contains non-ASCII characters.");
    a = popc_custom_attr_float("alpha", -DBL_MAX);
    refuse(&a, "-1.79769e+308 is too low for a Popart float attribute.");
    a = popc_custom_attr_float("alpha", 1e39);
    refuse(&a, "1e+39 is too high for a Popart float attribute.");
    a = (popc_custom_attr){"alpha", {.type = (popc_custom_type)99}};
    refuse(&a, "Attribute values must be floats, ints, strings or a "
               "list/tuple of float, ints of strings.");
    a = (popc_custom_attr){"alpha", {.type = POPC_CUSTOM_LIST, .n = 1,
                                     .items = nested}};
    refuse(&a, "Attribute values must be floats, ints, strings");
    a = (popc_custom_attr){"alpha", {.type = POPC_CUSTOM_LIST, .n = 0}};
    refuse(&a, "Attribute values must be floats, ints, strings");
    a = popc_custom_attr_string("alpha", NULL);
    refuse(&a, "Attribute values must be floats, ints, strings");
    a = (popc_custom_attr){"alpha", {.type = POPC_CUSTOM_LIST, .n = 2,
                                     .items = mixed}};
    refuse(&a, "The types in a list/tuple attribute must all be the same.");
}
END_TEST

START_TEST(attributes_are_stored_as_popart_does)
{
    popc_custom_value fl[2] = {{.type = POPC_CUSTOM_FLOAT, .f = 0.1},
                               {.type = POPC_CUSTOM_FLOAT, .f = 2.5}};
    const char *names[2] = {"a", "b"};
    int64_t ints[3] = {1, -2, 3};
    popc_custom_attr a[5];
    int x, y, node;
    popc_graph *g = graph_x(&x);
    popc_attrs av;
    const popc_attr *p;

    load_oot();
    a[0] = popc_custom_attr_float("alpha", 0.1);
    a[1] = (popc_custom_attr){"floats", {.type = POPC_CUSTOM_LIST, .n = 2,
                                         .items = fl}};
    a[2] = (popc_custom_attr){"ints", {.type = POPC_CUSTOM_INTS, .n = 3,
                                       .ints = ints}};
    a[3] = (popc_custom_attr){"names", {.type = POPC_CUSTOM_STRINGS, .n = 2,
                                        .strings = names}};
    a[4] = popc_custom_attr_int("k", 1LL << 40);
    OK(popc_custom_op(g, &x, 1, "LeakyRelu", "com.acme", 1, NULL, 1, a, 5,
                      &y));
    node = popc_graph_value_producer(g, y);
    ck_assert_str_eq(popc_graph_node_domain(g, node), "com.acme");
    ck_assert_str_eq(popc_graph_node_op(g, node), "LeakyRelu");
    av = popc_graph_node_attrs(g, node);
    ck_assert_int_eq(av.n, 5);
    p = popc_attrs_find(&av, "alpha");
    ck_assert_int_eq(p->type, POPC_ATTR_FLOAT);
    ck_assert(p->f == (double)0.1f);
    p = popc_attrs_find(&av, "floats");
    ck_assert_int_eq(p->type, POPC_ATTR_FLOATS);
    ck_assert_int_eq(p->n, 2);
    ck_assert(p->floats[0] == (double)0.1f && p->floats[1] == 2.5);
    p = popc_attrs_find(&av, "ints");
    ck_assert_int_eq(p->type, POPC_ATTR_INTS);
    ck_assert(p->ints[1] == -2);
    p = popc_attrs_find(&av, "names");
    ck_assert_int_eq(p->type, POPC_ATTR_STRINGS);
    ck_assert_str_eq(p->strings[1], "b");
    ck_assert(popc_attrs_find(&av, "k")->i == 1LL << 40);
    popc_graph_free(g);
}
END_TEST

/* ---- resolution ------------------------------------------------------------ */

static popc_status v2_infer(popc_infer_ctx *ic)
{
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

static popc_status v2_forward(const popc_kernel_ctx *kc)
{
    memcpy(kc->outputs[0].data, kc->inputs[0].data,
           popc_view_nbytes(&kc->inputs[0]));
    return POPC_OK;
}

static const popc_op_def v2_def = {
    .size = sizeof(popc_op_def), .domain = "com.test", .name = "OnlyV2",
    .since_version = 2, .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1, .infer = v2_infer,
    .forward = v2_forward};

START_TEST(missing_op_names_domain_version_and_fix)
{
    popc_registry *reg;
    int x, y;
    popc_graph *g = graph_x(&x);

    load_oot();
    ck_assert_int_eq(popc_custom_op(g, &x, 1, "Nope", "com.acme", 3, NULL, 1,
                                    NULL, 0, &y),
                     POPC_ENOTFOUND);
    ck_assert_msg(has("com.acme::Nope") && has("version 3") &&
                      has("POPC_PLUGIN_PATH"),
                  "%s", popc_last_error());
    OK(popc_registry_global(&reg));
    if (!popc_registry_find_op(reg, "com.test", "OnlyV2", 2))
        OK(popc_registry_add_op(reg, &v2_def));
    ck_assert_int_eq(popc_custom_op(g, &x, 1, "OnlyV2", "com.test", 1, NULL,
                                    1, NULL, 0, &y),
                     POPC_ENOTFOUND);
    ck_assert_msg(has("com.test::OnlyV2 version 1") && has("versions 2"),
                  "%s", popc_last_error());
    OK(popc_custom_op(g, &x, 1, "OnlyV2", "com.test", 2, NULL, 1, NULL, 0,
                      &y));
    ck_assert_int_eq(popc_graph_n_nodes(g), 1);
    popc_graph_free(g);
}
END_TEST

/* The pluginPath option loads the plugins of its directories when it is
** set: before, the example op is unknown; after, a graph can use it. A
** relative or missing directory is refused with the option's name. */
START_TEST(plugin_path_option_loads_plugins)
{
    popc_registry *reg;
    popc_options *o = NULL;
    int x, y;
    popc_graph *g = graph_x(&x);

    OK(popc_registry_global(&reg));
    ck_assert_ptr_null(popc_registry_find_op(reg, "com.acme", "LeakyRelu",
                                             1));
    OK(popc_options_new(&o));
    ck_assert_int_eq(popc_options_set(o, "pluginPath", "tests/oot"),
                     POPC_EINVAL);
    ck_assert_msg(has("pluginPath: 'tests/oot' is not an absolute path"),
                  "%s", popc_last_error());
    ck_assert_int_eq(popc_options_set(o, "pluginPath", "/nonexistent/popc"),
                     POPC_ENOTFOUND);
    ck_assert_msg(has("pluginPath: /nonexistent/popc"), "%s",
                  popc_last_error());
    ck_assert_ptr_null(popc_options_get_string(o, "pluginPath"));
    OK(popc_options_set(o, "pluginPath", TEST_OOT_DIR));
    ck_assert_ptr_nonnull(popc_registry_find_op(reg, "com.acme", "LeakyRelu",
                                                1));
    OK(popc_custom_op(g, &x, 1, "LeakyRelu", "com.acme", 1, NULL, 1, NULL, 0,
                      &y));
    /* setting it again is harmless: loaded modules are not loaded twice */
    OK(popc_options_set(o, "pluginPath", TEST_OOT_DIR));
    popc_options_free(o);
    popc_graph_free(g);
}
END_TEST

START_TEST(example_outputs_checked)
{
    int64_t bd[1] = {3};
    float bias[3] = {1, 2, 3};
    popc_tensor *b = f32(bd, 1, bias);
    popc_view ex[2];
    int x, in[2], out[2];
    popc_graph *g = graph_x(&x);

    load_oot();
    OK(popc_graph_add_constant(g, "bias", b, &in[1]));
    in[0] = x;
    memset(ex, 0, sizeof ex);
    ex[0] = (popc_view){.dtype = POPC_DTYPE_F32, .rank = 2, .dims = {2, 3}};
    ex[1] = (popc_view){.dtype = POPC_DTYPE_F32, .rank = 2, .dims = {3, 2}};
    ck_assert_int_eq(popc_custom_op(g, in, 2, "Cube", "com.acme", 1, ex, 2,
                                    NULL, 0, out),
                     POPC_EINVAL);
    ck_assert_msg(has("example_outputs[1]") && has("float32[2, 3]") &&
                      has("float32[3, 2]"),
                  "%s", popc_last_error());
    ck_assert_int_eq(popc_graph_n_nodes(g), 0);
    ex[1].dims[0] = 2;
    ex[1].dims[1] = 3;
    OK(popc_custom_op(g, in, 2, "Cube", "com.acme", 1, ex, 2, NULL, 0, out));
    ck_assert(out[0] >= 0 && out[1] >= 0);
    /* an UNDEFINED example is not checked */
    ex[1].dtype = POPC_DTYPE_UNDEFINED;
    OK(popc_custom_op(g, in, 2, "Cube", "com.acme", 1, ex, 2, NULL, 0, out));
    /* arity: the op has two outputs */
    ck_assert_int_ne(popc_custom_op(g, in, 2, "Cube", "com.acme", 1, ex, 1,
                                    NULL, 0, out),
                     POPC_OK);
    popc_tensor_free(b);
    popc_graph_free(g);
}
END_TEST

/* ---- kernels and gradients ------------------------------------------------- */

START_TEST(leaky_relu_kernels)
{
    int64_t d[2] = {2, 5};
    float v[10] = {-3, -1, -0.5f, 0, 0.25f, 1, 2, -7, 9, -0.125f};
    popc_tensor *x = f32(d, 2, v), *y = NULL, *h = NULL, *hy = NULL;
    popc_attr a = {.name = "alpha", .type = POPC_ATTR_FLOAT, .f = 0.2};
    const float *out;

    load_oot();
    OK(harness_run_op("com.acme", "LeakyRelu", &x, 1, &a, 1, &y, 1, 0));
    out = popc_tensor_cdata(y);
    for (int i = 0; i < 10; i++)
        ck_assert_float_eq(out[i], v[i] < 0 ? 0.2f * v[i] : v[i]);
    /* float16 agrees with float32 rounded */
    OK(popc_tensor_cast(x, POPC_DTYPE_F16, &h));
    OK(harness_run_op("com.acme", "LeakyRelu", &h, 1, &a, 1, &hy, 1, 0));
    ck_assert_int_eq(popc_tensor_dtype(hy), POPC_DTYPE_F16);
    for (int i = 0; i < 10; i++)
        ck_assert_uint_eq(((const uint16_t *)popc_tensor_cdata(hy))[i],
                          popc_f32_to_f16(out[i]));
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_tensor_free(h);
    popc_tensor_free(hy);
}
END_TEST

/* float16 through the host's conversion services, over more elements
** than one block of the plugin's conversion (256), including subnormals
** and values that round: each result is float32 arithmetic on the exact
** inputs, rounded once to nearest even (popc_f32_to_f16). */
START_TEST(leaky_relu_float16_blocks)
{
    enum { N = 1000 };
    int64_t d[1] = {N};
    popc_tensor *x, *dy, *y = NULL, *dx = NULL, *in[2];
    popc_attr a = {.name = "alpha", .type = POPC_ATTR_FLOAT, .f = 0.3};
    uint16_t *xh, *gh;
    const uint16_t *yh, *dxh;

    load_oot();
    OK(popc_tensor_new(POPC_DTYPE_F16, d, 1, &x));
    OK(popc_tensor_new(POPC_DTYPE_F16, d, 1, &dy));
    xh = popc_tensor_data(x);
    gh = popc_tensor_data(dy);
    for (int i = 0; i < N; i++) {
        /* every sign, exponent (subnormals included) and many fractions */
        xh[i] = (uint16_t)((i * 0x9e37u) & 0xfbffu);
        gh[i] = (uint16_t)((i * 0x3c01u + 7u) & 0x7bffu);
    }
    OK(harness_run_op("com.acme", "LeakyRelu", &x, 1, &a, 1, &y, 1, 0));
    yh = popc_tensor_cdata(y);
    in[0] = dy;
    in[1] = x;
    OK(harness_run_op("com.acme", "LeakyReluGrad", in, 2, &a, 1, &dx, 1, 0));
    dxh = popc_tensor_cdata(dx);
    for (int i = 0; i < N; i++) {
        float v = popc_f16_to_f32(xh[i]), g = popc_f16_to_f32(gh[i]);

        ck_assert_msg(yh[i] == popc_f32_to_f16(v < 0 ? 0.3f * v : v),
                      "y[%d] of x %04x: %04x", i, xh[i], yh[i]);
        ck_assert_msg(dxh[i] == popc_f32_to_f16(v < 0 ? 0.3f * g : g),
                      "dx[%d] of x %04x dy %04x: %04x", i, xh[i], gh[i],
                      dxh[i]);
    }
    popc_tensor_free(x);
    popc_tensor_free(dy);
    popc_tensor_free(y);
    popc_tensor_free(dx);
}
END_TEST

START_TEST(cube_kernels)
{
    int64_t d[2] = {2, 3}, bd[1] = {3};
    float v[6] = {1, -2, 0.5f, 3, 0, -1}, bv[3] = {10, 20, 30};
    popc_tensor *in[2] = {f32(d, 2, v), f32(bd, 1, bv)}, *out[2] = {0};
    popc_tensor *gin[4], *gout[2] = {0};
    const float *y, *z, *dx, *db;

    load_oot();
    OK(harness_run_op("com.acme", "Cube", in, 2, NULL, 0, out, 2, 0));
    y = popc_tensor_cdata(out[0]);
    z = popc_tensor_cdata(out[1]);
    for (int i = 0; i < 6; i++) {
        ck_assert_float_eq(z[i], v[i] * v[i] * v[i]);
        ck_assert_float_eq(y[i], v[i] * v[i] * v[i] + bv[i % 3]);
    }
    /* CubeGrad with dz absent: dx = 3x^2 dy, dbias = column sums of dy */
    gin[0] = in[0];
    gin[1] = in[1];
    gin[2] = out[0];
    OK(harness_run_op("com.acme", "CubeGrad", gin, 3, NULL, 0, gout, 2, 1));
    dx = popc_tensor_cdata(gout[0]);
    db = popc_tensor_cdata(gout[1]);
    for (int i = 0; i < 6; i++)
        ck_assert_float_eq(dx[i], 3.0f * v[i] * v[i] * y[i]);
    for (int j = 0; j < 3; j++)
        ck_assert_float_eq_tol(db[j], y[j] + y[j + 3], 1e-5);
    for (int i = 0; i < 2; i++) {
        popc_tensor_free(in[i]);
        popc_tensor_free(out[i]);
        popc_tensor_free(gout[i]);
    }
}
END_TEST

START_TEST(gradients_match_finite_differences)
{
    int64_t d[2] = {2, 3}, bd[1] = {3};
    float v[6] = {0.7f, -0.4f, 1.3f, -1.1f, 0.2f, -0.6f};
    float bv[3] = {0.5f, -0.25f, 1};
    popc_tensor *x = f32(d, 2, v), *b = f32(bd, 1, bv), *b2 = f32(d, 2, v);
    popc_tensor *in[2] = {x, b}, *in2[2] = {x, b2};
    popc_attr a = {.name = "alpha", .type = POPC_ATTR_FLOAT, .f = 0.2};
    int wrt[2] = {0, 1};
    char why[1024];

    load_oot();
    ck_assert_msg(fd_check_op("com.acme", "LeakyRelu", &x, 1, wrt, 1, &a, 1,
                              1e-3, why, sizeof why) == POPC_OK,
                  "%s", why);
    ck_assert_msg(fd_check_op_ex("com.acme", "Cube", in, 2, wrt, 2, NULL, 0,
                                 2, 1, 1e-3, why, sizeof why) == POPC_OK,
                  "%s", why);
    ck_assert_msg(fd_check_op_ex("com.acme", "Cube", in2, 2, wrt, 2, NULL, 0,
                                 2, 1, 1e-3, why, sizeof why) == POPC_OK,
                  "%s", why);
    popc_tensor_free(x);
    popc_tensor_free(b);
    popc_tensor_free(b2);
}
END_TEST

/* ---- models ------------------------------------------------------------------ */

/* fc1 (4 -> 8), LeakyRelu(0.2) (com.acme's or ai.onnx's), fc2 (8 -> 3),
** MSE against y; training: the loss is the output, else fc2's output. */
static popc_graph *mlp(int custom, int training)
{
    int64_t xd[2] = {2, 4}, yd[2] = {2, 3};
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    popc_custom_attr alpha = popc_custom_attr_float("alpha", 0.2);
    int x, y, h, a, o, loss;

    OK(popc_graph_new("mlp", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    if (training)
        OK(popc_graph_add_input(g, "y", POPC_DTYPE_F32, yd, 2, &y));
    OK(popc_layers_new(g, 11, &L));
    OK(popc_nn_linear(L, "fc1", x, 4, 8, 1, &h));
    if (custom)
        OK(popc_custom_op(g, &h, 1, "LeakyRelu", "com.acme", 1, NULL, 1,
                          &alpha, 1, &a));
    else
        OK(popc_nn_activation(L, "LeakyRelu", h, (double)0.2f, &a));
    OK(popc_nn_linear(L, "fc2", a, 8, 3, 1, &o));
    if (training) {
        OK(popc_nn_mse_loss(L, o, y, "mean", &loss));
        OK(popc_graph_add_output(g, loss));
    } else {
        OK(popc_graph_add_output(g, o));
    }
    popc_layers_free(L);
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

static void fill(popc_tensor *t, unsigned seed)
{
    float *p = popc_tensor_data(t);

    for (int64_t i = 0; i < popc_tensor_numel(t); i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

/* Train the custom and the built-in model alike; weights must agree. */
static void train_like_builtin(const char *backend, int64_t r)
{
    int64_t xd[2] = {2 * 3 * r, 4}, yd[2] = {2 * 3 * r, 3};
    popc_tensor *in[2] = {NULL, NULL}, *out = NULL;
    popc_model *m[2] = {NULL, NULL};
    popc_optimizer *sgd = NULL;

    load_oot();
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &in[0]));
    OK(popc_tensor_new(POPC_DTYPE_F32, yd, 2, &in[1]));
    fill(in[0], 1);
    fill(in[1], 2);
    OK(popc_optimizer_new("sgd", &sgd));
    OK(popc_optimizer_set(sgd, "lr", 0.1));
    OK(popc_optimizer_set(sgd, "momentum", 0.9));
    for (int c = 0; c < 2; c++) {
        popc_graph *g = mlp(c, 1);
        popc_options *o = opts(backend, 3, r);

        OK(popc_model_new_training(g, o, sgd, &m[c]));
        for (int step = 0; step < 3; step++) {
            OK(popc_model_run(m[c], in, 2, &out, 1));
            popc_tensor_free(out);
        }
        popc_options_free(o);
        popc_graph_free(g);
    }
    ck_assert_int_eq(popc_model_steps(m[0]), 9);
    for (int i = 0; i < popc_model_n_tensors(m[0]); i++) {
        const char *name = popc_model_tensor_name(m[0], i);
        const popc_tensor *a = NULL, *b = NULL;

        OK(popc_model_get_weight(m[0], name, &a));
        OK(popc_model_get_weight(m[1], name, &b));
        ck_assert_msg(popc_tensor_max_abs_diff(a, b) <= 1e-6, "%s differs "
                      "by %g on %s", name, popc_tensor_max_abs_diff(a, b),
                      backend);
    }
    popc_model_free(m[0]);
    popc_model_free(m[1]);
    popc_optimizer_free(sgd);
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
}

START_TEST(trains_like_builtin_cpu)
{
    train_like_builtin("cpu", 1);
}
END_TEST

START_TEST(trains_like_builtin_ipumodel)
{
    train_like_builtin("ipumodel", 2);
}
END_TEST

START_TEST(inference_on_both_backends)
{
    const char *backends[2] = {"cpu", "ipumodel"};
    int64_t xd[2] = {2 * 4, 4};
    popc_tensor *x = NULL, *out[2] = {NULL, NULL}, *ref = NULL;
    popc_graph *g, *gb;
    popc_model *m;

    load_oot();
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &x));
    fill(x, 5);
    g = mlp(1, 0);
    gb = mlp(0, 0);
    for (int b = 0; b < 2; b++) {
        popc_options *o = opts(backends[b], 4, 1);

        OK(popc_model_new_inference(g, o, &m));
        OK(popc_model_run(m, &x, 1, &out[b], 1));
        popc_model_free(m);
        popc_options_free(o);
    }
    {
        popc_options *o = opts("cpu", 4, 1);
        OK(popc_model_new_inference(gb, o, &m));
        OK(popc_model_run(m, &x, 1, &ref, 1));
        popc_model_free(m);
        popc_options_free(o);
    }
    ck_assert(popc_tensor_max_abs_diff(out[0], ref) <= 1e-6);
    ck_assert(popc_tensor_max_abs_diff(out[1], ref) <= 1e-6);
    popc_tensor_free(out[0]);
    popc_tensor_free(out[1]);
    popc_tensor_free(ref);
    popc_tensor_free(x);
    popc_graph_free(g);
    popc_graph_free(gb);
}
END_TEST

/* ---- a failing op leaves the model as it was ------------------------------- */

/* Identity that fails on an element above 1000 (a stand-in for any op or
** callback reporting an error); its gradient passes through. */
static popc_status fib_forward(const popc_kernel_ctx *kc)
{
    const float *x = kc->inputs[0].data;
    int64_t n = popc_view_numel(&kc->inputs[0]);

    for (int64_t i = 0; i < n; i++)
        if (fabsf(x[i]) > 1000.0f)
            return kc->host->set_error(POPC_EINVAL, "FailIfBig '%s': "
                                       "element %lld is %g, above the "
                                       "limit 1000", kc->node_name,
                                       (long long)i, (double)x[i]);
    memcpy(kc->outputs[0].data, x, sizeof *x * (size_t)n);
    return POPC_OK;
}

static popc_status fib_grad(popc_grad_ctx *gc)
{
    gc->input_grads[0] = gc->output_grads[0];
    return POPC_OK;
}

static const popc_op_def fib_def = {
    .size = sizeof(popc_op_def), .domain = "com.test", .name = "FailIfBig",
    .since_version = 1, .min_inputs = 1, .max_inputs = 1, .min_outputs = 1,
    .max_outputs = 1, .infer = v2_infer, .forward = fib_forward,
    .grad = fib_grad};

/* x [2, 1, 2, 2] -> FailIfBig -> BatchNorm2d -> flatten -> fc (4 -> 2)
** -> MSE against y [2, 2]. */
static popc_model *bn_model(const char *backend, int64_t di, int64_t ga)
{
    int64_t xd[4] = {2, 1, 2, 2}, yd[2] = {2, 2};
    popc_registry *reg;
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    popc_options *o = opts(backend, di, 1);
    popc_optimizer *sgd = NULL;
    popc_model *m = NULL;
    int x, y, v, loss;

    OK(popc_registry_global(&reg));
    if (!popc_registry_find_op(reg, "com.test", "FailIfBig", 1))
        OK(popc_registry_add_op(reg, &fib_def));
    OK(popc_options_set_int(o, "Training.gradientAccumulation", ga));
    OK(popc_graph_new("bn", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 4, &x));
    OK(popc_graph_add_input(g, "y", POPC_DTYPE_F32, yd, 2, &y));
    OK(popc_layers_new(g, 3, &L));
    OK(popc_custom_op(g, &x, 1, "FailIfBig", "com.test", 1, NULL, 1, NULL, 0,
                      &v));
    OK(popc_nn_batchnorm2d(L, "bn", v, 1, 1e-5, 0.1, &v));
    OK(popc_nn_flatten(L, v, 1, &v));
    OK(popc_nn_linear(L, "fc", v, 4, 2, 1, &v));
    OK(popc_nn_mse_loss(L, v, y, "mean", &loss));
    OK(popc_graph_add_output(g, loss));
    OK(popc_optimizer_new("sgd", &sgd));
    OK(popc_optimizer_set(sgd, "lr", 0.05));
    OK(popc_optimizer_set(sgd, "momentum", 0.9));
    OK(popc_model_new_training(g, o, sgd, &m));
    popc_optimizer_free(sgd);
    popc_layers_free(L);
    popc_graph_free(g);
    popc_options_free(o);
    return m;
}

typedef struct snapshot {
    int n;
    popc_tensor *t[64];
} snapshot;

static void take(popc_model *m, snapshot *s)
{
    s->n = 0;
    for (int i = 0; i < popc_model_n_tensors(m); i++) {
        const popc_tensor *w = NULL;

        OK(popc_model_get_weight(m, popc_model_tensor_name(m, i), &w));
        OK(popc_tensor_clone(w, &s->t[s->n++]));
    }
    for (int i = 0; i < popc_model_n_optimizer_states(m); i++)
        OK(popc_model_get_optimizer_state(
            m, popc_model_optimizer_state_name(m, i), &s->t[s->n++]));
}

static void same(const snapshot *a, const snapshot *b)
{
    ck_assert_int_eq(a->n, b->n);
    for (int i = 0; i < a->n; i++)
        ck_assert_msg(popc_tensor_equal(a->t[i], b->t[i]),
                      "tensor %d changed by the failed run", i);
}

static void drop(snapshot *s)
{
    for (int i = 0; i < s->n; i++)
        popc_tensor_free(s->t[i]);
    s->n = 0;
}

/* Run clean data once, then data whose last micro-batch fails: the
** failure names the op, and weights, buffers and optimizer state are those
** after the first run. */
static void undo_case(const char *backend, int64_t di, int64_t ga)
{
    int64_t rows = 2 * di * ga;
    int64_t xd[4] = {rows, 1, 2, 2}, yd[2] = {rows, 2};
    popc_tensor *in[2] = {NULL, NULL}, *loss = NULL;
    popc_model *m;
    snapshot before, after;
    int64_t steps;

    m = bn_model(backend, di, ga);
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 4, &in[0]));
    OK(popc_tensor_new(POPC_DTYPE_F32, yd, 2, &in[1]));
    fill(in[0], 9);
    fill(in[1], 10);
    OK(popc_model_run(m, in, 2, &loss, 1));
    popc_tensor_free(loss);
    steps = popc_model_steps(m);
    ck_assert_int_eq(steps, di);
    take(m, &before);
    /* the last micro-batch's first sample */
    ((float *)popc_tensor_data(in[0]))[(rows - 2) * 4] = 5000.0f;
    ck_assert_int_ne(popc_model_run(m, in, 2, &loss, 1), POPC_OK);
    ck_assert_ptr_null(loss);
    ck_assert_msg(has("FailIfBig") && has("above the limit"), "%s",
                  popc_last_error());
    ck_assert_int_eq(popc_model_steps(m), steps);
    take(m, &after);
    same(&before, &after);
    drop(&after);
    /* and the model goes on from there */
    ((float *)popc_tensor_data(in[0]))[(rows - 2) * 4] = 0.5f;
    OK(popc_model_run(m, in, 2, &loss, 1));
    popc_tensor_free(loss);
    ck_assert_int_eq(popc_model_steps(m), 2 * steps);
    drop(&before);
    popc_model_free(m);
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
}

START_TEST(failed_run_is_undone_device_iterations)
{
    undo_case("cpu", 3, 1);
}
END_TEST

START_TEST(failed_run_is_undone_accumulation)
{
    undo_case("cpu", 1, 2);
}
END_TEST

START_TEST(failed_run_is_undone_ipumodel)
{
    undo_case("ipumodel", 2, 2);
}
END_TEST

/* ---- INI: type = custom ------------------------------------------------------ */

static char ini_path[64];

/* Write text to a temporary INI file and load it. */
static popc_status load_ini(const char *text, popc_run **r)
{
    int fd;
    FILE *f;
    popc_status st;

    snprintf(ini_path, sizeof ini_path, "/tmp/popc_custom_XXXXXX.ini");
    fd = mkstemps(ini_path, 4);
    ck_assert_int_ge(fd, 0);
    f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    st = popc_run_load(ini_path, NULL, 0, r);
    unlink(ini_path);
    return st;
}

#define INI_HEAD                                                            \
    "[model]\ninput = 4\nclasses = 3\nlayers = fc1, act, fc2\n"             \
    "[layer fc1]\ntype = linear\nout_features = 8\n"                       \
    "[layer fc2]\ntype = linear\nout_features = 3\n"

/* The node of op in g, or -1. */
static int node_of(const popc_graph *g, const char *op)
{
    for (int n = 0; n < popc_graph_n_nodes(g); n++)
        if (strcmp(popc_graph_node_op(g, n), op) == 0)
            return n;
    return -1;
}

START_TEST(ini_custom_layer)
{
    popc_run *r = NULL;
    popc_graph *g = NULL;
    popc_attrs av;
    const popc_attr *p;
    int n;

    load_oot();
    OK(load_ini(INI_HEAD "[layer act]\ntype = custom\ndomain = com.acme\n"
                "op = LeakyRelu\nattr.alpha = 0.2\nattr.sizes = [3]\n"
                "attr.mode = reflect\nattr.pads = 1, 2, 3\n"
                "attr.names = \"a,b\", 'c'\n", &r));
    OK(popc_run_build_graph(r, 1, 2, &g));
    n = node_of(g, "LeakyRelu");
    ck_assert_int_ge(n, 0);
    ck_assert_str_eq(popc_graph_node_domain(g, n), "com.acme");
    av = popc_graph_node_attrs(g, n);
    p = popc_attrs_find(&av, "alpha");
    ck_assert(p && p->type == POPC_ATTR_FLOAT && p->f == (double)0.2f);
    p = popc_attrs_find(&av, "sizes");
    ck_assert(p && p->type == POPC_ATTR_INTS && p->n == 1 && p->ints[0] == 3);
    p = popc_attrs_find(&av, "mode");
    ck_assert(p && p->type == POPC_ATTR_STRING);
    ck_assert_str_eq(p->s, "reflect");
    p = popc_attrs_find(&av, "pads");
    ck_assert(p && p->type == POPC_ATTR_INTS && p->n == 3 &&
              p->ints[2] == 3);
    p = popc_attrs_find(&av, "names");
    ck_assert(p && p->type == POPC_ATTR_STRINGS && p->n == 2);
    ck_assert_str_eq(p->strings[0], "a,b");
    ck_assert_str_eq(p->strings[1], "c");
    popc_graph_free(g);
    popc_run_free(r);
}
END_TEST

START_TEST(ini_custom_layer_errors)
{
    popc_run *r = NULL;
    popc_graph *g = NULL;

    load_oot();
    ck_assert_int_eq(load_ini(INI_HEAD "[layer act]\ntype = custom\n"
                              "domain = com.acme\nop = LeakyRelu\n"
                              "alpah = 1\n", &r),
                     POPC_ECONFIG);
    ck_assert_msg(has("unknown key 'alpah'") && has(".ini:15:"), "%s",
                  popc_last_error());
    ck_assert_int_eq(load_ini(INI_HEAD "[layer act]\ntype = custom\n"
                              "op = LeakyRelu\n", &r),
                     POPC_ECONFIG);
    ck_assert_msg(has("domain"), "%s", popc_last_error());
    ck_assert_int_eq(load_ini(INI_HEAD "[layer act]\ntype = custom\n"
                              "domain = com.acme\nop = LeakyRelu\n"
                              "outputs = 2\noutput = 2\n", &r),
                     POPC_ECONFIG);
    ck_assert_msg(has("output 2 does not exist"), "%s", popc_last_error());
    /* found when the graph is built: the op, the attribute rules */
    OK(load_ini(INI_HEAD "[layer act]\ntype = custom\ndomain = com.acme\n"
                "op = LeakyRelu\nversion = 4\nattr.x = 1, 2.5\n", &r));
    ck_assert_int_ne(popc_run_build_graph(r, 0, 2, &g), POPC_OK);
    ck_assert_msg(has("[layer act]") &&
                      has("The types in a list/tuple attribute must all be "
                          "the same."),
                  "%s", popc_last_error());
    popc_run_free(r);
    OK(load_ini(INI_HEAD "[layer act]\ntype = custom\ndomain = com.acme\n"
                "op = Leaky\n", &r));
    ck_assert_int_ne(popc_run_build_graph(r, 0, 2, &g), POPC_OK);
    ck_assert_msg(has("[layer act]") && has("com.acme::Leaky version 1") &&
                      has("POPC_PLUGIN_PATH"),
                  "%s", popc_last_error());
    ck_assert_ptr_null(g);
    popc_run_free(r);
}
END_TEST

static Suite *custom_suite(void)
{
    Suite *s = suite_create("custom_op");
    TCase *tc = tcase_create("builder");
    TCase *tk = tcase_create("kernels");
    TCase *tm = tcase_create("models");

    tcase_add_test(tc, attribute_rules);
    tcase_add_test(tc, attributes_are_stored_as_popart_does);
    tcase_add_test(tc, missing_op_names_domain_version_and_fix);
    tcase_add_test(tc, plugin_path_option_loads_plugins);
    tcase_add_test(tc, example_outputs_checked);
    tcase_add_test(tc, ini_custom_layer);
    tcase_add_test(tc, ini_custom_layer_errors);
    suite_add_tcase(s, tc);
    tcase_add_test(tk, leaky_relu_kernels);
    tcase_add_test(tk, leaky_relu_float16_blocks);
    tcase_add_test(tk, cube_kernels);
    tcase_add_test(tk, gradients_match_finite_differences);
    tcase_set_timeout(tk, 120);
    suite_add_tcase(s, tk);
    tcase_add_test(tm, trains_like_builtin_cpu);
    tcase_add_test(tm, trains_like_builtin_ipumodel);
    tcase_add_test(tm, inference_on_both_backends);
    tcase_add_test(tm, failed_run_is_undone_device_iterations);
    tcase_add_test(tm, failed_run_is_undone_accumulation);
    tcase_add_test(tm, failed_run_is_undone_ipumodel);
    tcase_set_timeout(tm, 300);
    suite_add_tcase(s, tm);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(custom_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
