/* bench_train_step.c - time training steps (or inference runs) of the
** Fashion-MNIST models of examples/ on one backend.
**
**   bench_train_step MODEL BACKEND THREADS [STEPS [BATCH]]
**
** MODEL: mlp (784-512-512-10, ReLU), cnn (conv 32, pool, conv 64, pool,
** linear 3136-10) or wide (784-2048-2048-10: large matrix products), each
** trained with Adam on cross entropy; append "-infer" for inference runs.
** Data are random (the shapes are Fashion-MNIST's). One warm-up run
** compiles; then STEPS runs are timed and printed as
**   MODEL BACKEND THREADS median_ms min_ms
** (the minimum is the steadier figure on a shared machine).
** Plugins come from POPC_PLUGIN_PATH (bench/bench_backends.sh sets it).
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "popc/popc.h"
#include "popc/layers.h"

#define MAX_STEPS 1000

static int fail(const char *what)
{
    fprintf(stderr, "bench_train_step: %s: %s\n", what, popc_last_error());
    return 1;
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static popc_status build(const char *model, int64_t batch, popc_graph **out)
{
    int64_t xd[4] = {batch, 1, 28, 28}, ld[1] = {batch};
    int cnn = strncmp(model, "cnn", 3) == 0;
    int wide = strncmp(model, "wide", 4) == 0;
    int64_t hidden = wide ? 2048 : 512;
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int x, lab, v, loss;
    popc_status st;

    *out = NULL;
    if (!cnn)
        xd[1] = 784;
    if ((st = popc_graph_new(model, &g)) ||
        (st = popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, cnn ? 4 : 2,
                                   &x)) ||
        (st = popc_graph_add_input(g, "label", POPC_DTYPE_I32, ld, 1,
                                   &lab)) ||
        (st = popc_layers_new(g, 0, &L)))
        goto fail;
    if (cnn) {
        if ((st = popc_nn_conv2d(L, "conv1", x, 1, 32, 3, 1, 1, 1, 1, 1,
                                 &v)) ||
            (st = popc_nn_activation(L, "Relu", v, 0.0, &v)) ||
            (st = popc_nn_maxpool2d(L, v, 2, 0, 0, &v)) ||
            (st = popc_nn_conv2d(L, "conv2", v, 32, 64, 3, 1, 1, 1, 1, 1,
                                 &v)) ||
            (st = popc_nn_activation(L, "Relu", v, 0.0, &v)) ||
            (st = popc_nn_maxpool2d(L, v, 2, 0, 0, &v)) ||
            (st = popc_nn_flatten(L, v, 1, &v)) ||
            (st = popc_nn_linear(L, "fc", v, 3136, 10, 1, &v)))
            goto fail;
    } else {
        if ((st = popc_nn_linear(L, "fc1", x, 784, hidden, 1, &v)) ||
            (st = popc_nn_activation(L, "Relu", v, 0.0, &v)) ||
            (st = popc_nn_linear(L, "fc2", v, hidden, hidden, 1, &v)) ||
            (st = popc_nn_activation(L, "Relu", v, 0.0, &v)) ||
            (st = popc_nn_linear(L, "fc3", v, hidden, 10, 1, &v)))
            goto fail;
    }
    if ((st = popc_nn_cross_entropy(L, v, lab, "mean", &loss)) ||
        (st = popc_graph_add_output(g, loss)))
        goto fail;
    popc_layers_free(L);
    *out = g;
    return POPC_OK;
fail:
    popc_layers_free(L);
    popc_graph_free(g);
    return st;
}

static popc_status make_inputs(const popc_graph *g, popc_tensor **in)
{
    popc_view xv = popc_graph_value_info(g, popc_graph_input(g, 0));
    popc_view lv = popc_graph_value_info(g, popc_graph_input(g, 1));
    popc_status st;
    uint64_t s = 88172645463325252ull;

    in[0] = in[1] = NULL;
    if ((st = popc_tensor_new(POPC_DTYPE_F32, xv.dims, xv.rank, &in[0])) ||
        (st = popc_tensor_new(POPC_DTYPE_I32, lv.dims, lv.rank, &in[1])))
        return st;
    for (int64_t i = 0; i < popc_tensor_numel(in[0]); i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        ((float *)popc_tensor_data(in[0]))[i] = (float)(s >> 40) / 16777216.0f;
    }
    for (int64_t i = 0; i < popc_tensor_numel(in[1]); i++)
        ((int32_t *)popc_tensor_data(in[1]))[i] = (int32_t)(i * 7 % 10);
    return POPC_OK;
}

int main(int argc, char **argv)
{
    const char *model, *backend;
    int threads, steps = 20, infer;
    int64_t batch = 64;
    popc_graph *g = NULL;
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    popc_tensor *in[2] = {NULL, NULL}, *out = NULL;
    double t[MAX_STEPS];
    int rc = 1;

    if (argc < 4) {
        fprintf(stderr, "usage: bench_train_step mlp|cnn|wide[-infer] "
                "BACKEND THREADS [STEPS [BATCH]]\n");
        return 2;
    }
    model = argv[1];
    backend = argv[2];
    threads = atoi(argv[3]);
    if (argc > 4)
        steps = atoi(argv[4]);
    if (argc > 5)
        batch = atoll(argv[5]);
    if (steps < 1 || steps > MAX_STEPS || batch < 1 || threads < 0) {
        fprintf(stderr, "bench_train_step: bad STEPS, BATCH or THREADS\n");
        return 2;
    }
    infer = strstr(model, "-infer") != NULL;
    if (build(model, batch, &g) != POPC_OK) {
        rc = fail("building the model");
        goto done;
    }
    if (popc_options_new(&o) || popc_options_set(o, "backend", backend) ||
        popc_options_set_int(o, "threads", threads)) {
        rc = fail("options");
        goto done;
    }
    if (infer ? popc_model_new_inference(g, o, &m) :
                (popc_optimizer_new("adam", &opt) ||
                 popc_optimizer_set(opt, "lr", 1e-3) ||
                 popc_model_new_training(g, o, opt, &m))) {
        rc = fail("creating the model");
        goto done;
    }
    if (make_inputs(g, in) != POPC_OK) {
        rc = fail("inputs");
        goto done;
    }
    for (int i = -1; i < steps; i++) {
        double t0 = now();
        if (popc_model_run(m, in, 2, &out, 1) != POPC_OK) {
            rc = fail("run");
            goto done;
        }
        popc_tensor_free(out);
        out = NULL;
        if (i >= 0)
            t[i] = now() - t0;
    }
    qsort(t, (size_t)steps, sizeof *t, cmp_double);
    printf("%s %s %d %.3f %.3f\n", model, backend, threads,
           t[steps / 2] * 1e3, t[0] * 1e3);
    rc = 0;
done:
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
    popc_graph_free(g);
    return rc;
}
