/* oot_plugins.c - a plugin author's program for tests/test_oot_plugins.sh:
** compiled with cc against the staged install (pkg-config), it uses the
** out-of-tree plugins leaky_relu.so and cube.so, found through
** POPC_PLUGIN_PATH, in a training model and an inference model, and checks
** their gradients by finite differences (tests/harness/fd_check.c).
**
** Prints one line per check and exits 0 when all pass, 1 otherwise. It is
** an author's program, so it includes only the installed SDK (no
** config.h); fd_check.c is the test harness's.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <popc/popc.h>

#include "tests/harness/fd_check.h"

static int failures;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (cond) {                                                          \
            printf("ok   ");                                                 \
        } else {                                                             \
            printf("FAIL ");                                                 \
            failures++;                                                      \
        }                                                                    \
        printf(__VA_ARGS__);                                                 \
        printf("\n");                                                        \
    } while (0)

#define MUST(call)                                                           \
    do {                                                                     \
        if ((call) != POPC_OK) {                                             \
            printf("FAIL %s: %s\n", #call, popc_last_error());               \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

static void fill(popc_tensor *t, unsigned seed, float scale)
{
    float *p = popc_tensor_data(t);

    for (int64_t i = 0; i < popc_tensor_numel(t); i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = scale * ((float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f);
    }
}

/* Where each op came from: the plugin's file must be outside the staged
** install (the author's directory). */
static void plugins_loaded(void)
{
    popc_registry *reg;
    const char *want[2] = {"leaky_relu", "cube"};

    MUST(popc_registry_global(&reg));
    for (int w = 0; w < 2; w++) {
        int found = 0;

        for (int i = 0; i < popc_registry_plugin_count(reg); i++) {
            popc_plugin_record rec = popc_registry_plugin_at(reg, i);

            if (strcmp(rec.name, want[w]) == 0) {
                found = 1;
                CHECK(rec.n_ops == 2, "plugin %s from %s registers %d ops",
                      rec.name, rec.path, rec.n_ops);
            }
        }
        CHECK(found, "plugin %s loaded through POPC_PLUGIN_PATH", want[w]);
    }
    CHECK(popc_registry_find_op(reg, "com.acme", "LeakyRelu", 1) != NULL,
          "com.acme::LeakyRelu version 1 registered");
    CHECK(popc_registry_find_op(reg, "com.acme", "Cube", 1) != NULL,
          "com.acme::Cube version 1 registered");
}

static void gradients(void)
{
    int64_t d[2] = {3, 4}, bd[1] = {4};
    popc_tensor *x = NULL, *b = NULL, *in[2];
    popc_attr alpha = {.name = "alpha", .type = POPC_ATTR_FLOAT, .f = 0.1};
    int wrt[2] = {0, 1};
    char why[1024];
    popc_status st;

    MUST(popc_tensor_new(POPC_DTYPE_F32, d, 2, &x));
    MUST(popc_tensor_new(POPC_DTYPE_F32, bd, 1, &b));
    fill(x, 3, 1.5f);
    fill(b, 4, 1.0f);
    /* keep a few finite-difference steps away from LeakyRelu's kink */
    for (int64_t i = 0; i < 12; i++) {
        float *p = (float *)popc_tensor_data(x) + i;
        if (fabsf(*p) < 0.05f)
            *p = 0.3f;
    }
    in[0] = x;
    in[1] = b;
    st = fd_check_op("com.acme", "LeakyRelu", &x, 1, wrt, 1, &alpha, 1, 1e-3,
                     why, sizeof why);
    CHECK(st == POPC_OK, "LeakyRelu gradient matches finite differences%s%s",
          st ? ": " : "", st ? why : "");
    st = fd_check_op_ex("com.acme", "Cube", in, 2, wrt, 2, NULL, 0, 2, 1,
                        1e-3, why, sizeof why);
    CHECK(st == POPC_OK, "Cube gradients (x and bias, both outputs) match "
          "finite differences%s%s", st ? ": " : "", st ? why : "");
    popc_tensor_free(x);
    popc_tensor_free(b);
}

/* x [4, 6] -> fc1 -> com.acme::LeakyRelu -> com.acme::Cube(., cube.bias)
** -> y + z -> fc2 (6 -> 2) -> MSE against t. */
static popc_graph *model_graph(int training)
{
    int64_t xd[2] = {4, 6}, td[2] = {4, 2}, bd[1] = {6};
    popc_custom_attr alpha = popc_custom_attr_float("alpha", 0.1);
    popc_view ex[2] = {{.dtype = POPC_DTYPE_F32, .rank = 2, .dims = {4, 6}},
                       {.dtype = POPC_DTYPE_F32, .rank = 2, .dims = {4, 6}}};
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    popc_tensor *bias = NULL;
    int x, t, h, a, in[2], yz[2], s, o, loss;

    MUST(popc_graph_new("oot", &g));
    MUST(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    MUST(popc_layers_new(g, 5, &L));
    MUST(popc_nn_linear(L, "fc1", x, 6, 6, 1, &h));
    MUST(popc_custom_op(g, &h, 1, "LeakyRelu", "com.acme", 1, NULL, 1,
                        &alpha, 1, &a));
    MUST(popc_tensor_new(POPC_DTYPE_F32, bd, 1, &bias));
    fill(bias, 8, 0.1f);
    MUST(popc_graph_add_initializer(g, "cube.bias", bias, 1, &in[1]));
    popc_tensor_free(bias);
    in[0] = a;
    MUST(popc_custom_op(g, in, 2, "Cube", "com.acme", 1, ex, 2, NULL, 0,
                        yz));
    MUST(popc_graph_add_node(g, NULL, "Add", 0, yz, 2, &s, 1, NULL, 0, NULL,
                             NULL));
    MUST(popc_nn_linear(L, "fc2", s, 6, 2, 1, &o));
    if (training) {
        MUST(popc_graph_add_input(g, "t", POPC_DTYPE_F32, td, 2, &t));
        MUST(popc_nn_mse_loss(L, o, t, "mean", &loss));
        MUST(popc_graph_add_output(g, loss));
    } else {
        MUST(popc_graph_add_output(g, o));
    }
    popc_layers_free(L);
    return g;
}

static popc_options *options(const char *backend, int64_t di)
{
    popc_options *o = NULL;

    MUST(popc_options_new(&o));
    MUST(popc_options_set(o, "backend", backend));
    MUST(popc_options_set_int(o, "deviceIterations", di));
    return o;
}

static float scalar(const popc_tensor *t)
{
    return *(const float *)popc_tensor_cdata(t);
}

static void training_and_inference(void)
{
    const char *backends[2] = {"cpu", "ipumodel"};
    int64_t xd[2] = {4 * 2, 6}, td[2] = {4 * 2, 2};
    popc_tensor *in[2] = {NULL, NULL}, *out = NULL, *pred[2] = {NULL, NULL};
    popc_model *m[2] = {NULL, NULL}, *inf = NULL;
    popc_optimizer *sgd = NULL;
    popc_graph *g = model_graph(1), *gi = model_graph(0);
    float first = 0, last = 0;

    MUST(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &in[0]));
    MUST(popc_tensor_new(POPC_DTYPE_F32, td, 2, &in[1]));
    fill(in[0], 1, 1.0f);
    fill(in[1], 2, 1.0f);
    MUST(popc_optimizer_new("sgd", &sgd));
    MUST(popc_optimizer_set(sgd, "lr", 0.1));
    for (int b = 0; b < 2; b++) {
        popc_options *o = options(backends[b], 2);

        MUST(popc_model_new_training(g, o, sgd, &m[b]));
        for (int step = 0; step < 40; step++) {
            MUST(popc_model_run(m[b], in, 2, &out, 1));
            if (step == 0 && b == 1)
                first = scalar(out);
            if (step == 39 && b == 1)
                last = scalar(out);
            popc_tensor_free(out);
        }
        popc_options_free(o);
    }
    CHECK(last < 0.6f * first, "training through both custom ops: loss "
          "%.4f -> %.4f after 80 steps on ipumodel", first, last);
    {
        const popc_tensor *a = NULL, *c = NULL;

        MUST(popc_model_get_weight(m[0], "cube.bias", &a));
        MUST(popc_model_get_weight(m[1], "cube.bias", &c));
        CHECK(popc_tensor_max_abs_diff(a, c) <= 1e-5,
              "cpu and ipumodel train the same cube.bias (max diff %g)",
              popc_tensor_max_abs_diff(a, c));
    }
    for (int b = 0; b < 2; b++) {
        popc_options *o = options(backends[b], 2);

        MUST(popc_model_new_inference(gi, o, &inf));
        MUST(popc_model_share_weights(inf, m[1]));
        MUST(popc_model_run(inf, &in[0], 1, &pred[b], 1));
        popc_model_free(inf);
        popc_options_free(o);
    }
    CHECK(popc_tensor_max_abs_diff(pred[0], pred[1]) <= 1e-5,
          "inference with the trained weights agrees on cpu and ipumodel");
    for (int b = 0; b < 2; b++) {
        popc_model_free(m[b]);
        popc_tensor_free(pred[b]);
    }
    popc_optimizer_free(sgd);
    popc_graph_free(g);
    popc_graph_free(gi);
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
}

int main(void)
{
    plugins_loaded();
    gradients();
    training_and_inference();
    printf("%d failed\n", failures);
    return failures ? 1 : 0;
}
