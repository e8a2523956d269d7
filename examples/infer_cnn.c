/* infer_cnn.c - classify Fashion-MNIST with the CNN of
** fashion-mnist-cnn.ini, using the weights `popc train` wrote, and show
** what each PopTorch output mode returns.
**
**   popc train fashion-mnist-cnn.ini          (writes fashion-mnist-cnn.weights)
**   infer_cnn [--weights DIR] [--test-limit N] [--backend ipumodel|cpu]
**             [--data DIR]
**
** One popc_model_run classifies a combined batch of BATCH x
** DEVICE_ITERATIONS images. The output mode decides what comes back:
**
**   All        the logits of every micro-batch:   [BATCH x 4, 10]
**   Final      the last micro-batch only:          [BATCH, 10]
**   EveryN(2)  micro-batches 1 and 3 (0-based):    [BATCH x 2, 10]
**   Sum        the micro-batches summed:           [BATCH, 10]
**
** The test set is scored with All; one combined batch then goes through a
** model of each other mode, checked against the All output.
** Build against an installed popc:
**
**   cc -std=c11 infer_cnn.c $(pkg-config --cflags --libs popc) -lm -o infer_cnn
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <popc/popc.h>
#include <popc/run.h>

#define BATCH 25
#define DEVICE_ITERATIONS 4
#define CLASSES 10

#define TRY(call)                                                  \
    do {                                                           \
        if ((st = (call)) != POPC_OK)                              \
            goto done;                                             \
    } while (0)

typedef struct args {
    int64_t test_limit;
    const char *weights, *backend, *data;
} args;

static int parse_args(int argc, char **argv, args *a)
{
    *a = (args){0, "fashion-mnist-cnn.weights", "ipumodel",
                "/usr/share/datasets/fashion-mnist"};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--test-limit") == 0)
            a->test_limit = strtoll(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--weights") == 0)
            a->weights = argv[i + 1];
        else if (strcmp(argv[i], "--backend") == 0)
            a->backend = argv[i + 1];
        else if (strcmp(argv[i], "--data") == 0)
            a->data = argv[i + 1];
        else
            return 0;
    }
    return argc % 2 == 1 && a->test_limit >= 0;
}

/* conv1 (1 -> 32, 3x3, padding 1), ReLU, 2x2 max pool, conv2 (32 -> 64),
** ReLU, 2x2 max pool, flatten, fc (3136 -> 10): the layers and weight
** names of fashion-mnist-cnn.ini, so its weights directory loads. */
static popc_status build_cnn(popc_graph **out)
{
    int64_t dims[4] = {BATCH, 1, 28, 28};
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int v;
    popc_status st;

    *out = NULL;
    TRY(popc_graph_new("fashion-mnist-cnn", &g));
    TRY(popc_graph_add_input(g, "x", POPC_DTYPE_F32, dims, 4, &v));
    TRY(popc_layers_new(g, 0, &L));
    /* kernel, stride, padding, dilation, groups, bias */
    TRY(popc_nn_conv2d(L, "conv1", v, 1, 32, 3, 1, 1, 1, 1, 1, &v));
    TRY(popc_nn_activation(L, "Relu", v, 0.0, &v));
    TRY(popc_nn_maxpool2d(L, v, 2, 0, 0, &v));
    TRY(popc_nn_conv2d(L, "conv2", v, 32, 64, 3, 1, 1, 1, 1, 1, &v));
    TRY(popc_nn_activation(L, "Relu", v, 0.0, &v));
    TRY(popc_nn_maxpool2d(L, v, 2, 0, 0, &v));
    TRY(popc_nn_flatten(L, v, 1, &v));
    TRY(popc_nn_linear(L, "fc", v, 3136, CLASSES, 1, &v));
    TRY(popc_graph_add_output(g, v));
    *out = g;
    g = NULL;
done:
    popc_layers_free(L);
    popc_graph_free(g);
    return st;
}

/* An inference model of g in one output mode ("All", "Final", "EveryN",
** "Sum"; period for EveryN) with the trained weights. A model freezes its
** options, so each gets its own copy of base (backend, deviceIterations). */
static popc_status new_model(const popc_graph *g, const popc_options *base,
                             const char *weights, const char *mode,
                             int64_t period, popc_model **out)
{
    popc_options *o = NULL;
    popc_status st;

    *out = NULL;
    TRY(popc_options_clone(base, &o));
    TRY(popc_options_set(o, "outputMode", mode));
    if (period > 0)
        TRY(popc_options_set_int(o, "outputReturnPeriod", period));
    TRY(popc_model_new_inference(g, o, out));
    TRY(popc_weights_load(*out, weights));
done:
    if (st != POPC_OK) {
        popc_model_free(*out);
        *out = NULL;
    }
    popc_options_free(o);
    return st;
}

static int argmax(const float *z)
{
    int best = 0;

    for (int c = 1; c < CLASSES; c++)
        if (z[c] > z[best])
            best = c;
    return best;
}

/* Largest difference between rows of t and the rows [first, first + n) of
** micro-batch-major logits `all` (or their sum over the micro-batches
** when sum is set). */
static double compare(const popc_tensor *t, const float *all, int first,
                      int n, int step, int sum)
{
    const float *p = popc_tensor_cdata(t);
    double worst = 0.0;

    for (int k = 0; k < n; k++)
        for (int i = 0; i < BATCH * CLASSES; i++) {
            double want = 0.0;

            if (sum)
                for (int m = 0; m < DEVICE_ITERATIONS; m++)
                    want += all[m * BATCH * CLASSES + i];
            else
                want = all[(first + k * step) * BATCH * CLASSES + i];
            worst = fmax(worst, fabs(p[k * BATCH * CLASSES + i] - want));
        }
    return worst;
}

int main(int argc, char **argv)
{
    static const float mean = 0.2860f, std = 0.3530f;
    static const int64_t image[3] = {1, 28, 28};
    static const struct {
        const char *mode;
        int64_t period;
        int first, n, step, sum;  /* which micro-batches come back */
    } modes[] = {{"Final", 0, DEVICE_ITERATIONS - 1, 1, 1, 0},
                 {"EveryN", 2, 1, DEVICE_ITERATIONS / 2, 2, 0},
                 {"Sum", 0, 0, 1, 1, 1}};
    args a;
    char images[1024], labels[1024];
    popc_dataset *ds = NULL;
    popc_dataloader *dl = NULL;
    popc_options *opts = NULL;
    popc_loader_config cfg;
    popc_graph *g = NULL;
    popc_model *all = NULL, *other = NULL;
    popc_tensor *first = NULL, *first_out = NULL, *out = NULL;
    int64_t seen = 0, correct = 0;
    popc_status st = POPC_OK;

    if (!parse_args(argc, argv, &a)) {
        fprintf(stderr, "usage: %s [--weights DIR] [--test-limit N] "
                        "[--backend ipumodel|cpu] [--data DIR]\n", argv[0]);
        return 2;
    }
    snprintf(images, sizeof images, "%s/t10k-images-idx3-ubyte.gz", a.data);
    snprintf(labels, sizeof labels, "%s/t10k-labels-idx1-ubyte.gz", a.data);
    TRY(popc_dataset_load_idx(images, labels, &ds));
    if (a.test_limit > 0)
        popc_dataset_truncate(ds, a.test_limit);
    /* [28, 28] images as [1, 28, 28]: one channel for the convolutions */
    TRY(popc_dataset_set_sample_shape(ds, image, 3));
    TRY(popc_dataset_normalize(ds, &mean, &std, 1));
    TRY(popc_options_new(&opts));
    TRY(popc_options_set(opts, "backend", a.backend));
    TRY(popc_options_set_int(opts, "deviceIterations", DEVICE_ITERATIONS));
    TRY(build_cnn(&g));
    TRY(new_model(g, opts, a.weights, "All", 0, &all));

    /* whole combined batches (the loader reads deviceIterations from
    ** opts), the last one padded to full size: every image is scored */
    popc_loader_config_init(&cfg);
    cfg.batch_size = BATCH;
    cfg.drop_last = 0;
    cfg.pad_last = 1;
    TRY(popc_dataloader_new(ds, opts, &cfg, &dl));
    for (;;) {
        popc_batch b;
        const float *z;
        const int32_t *y;

        TRY(popc_dataloader_next(dl, &b));
        if (b.n == 0)
            break;
        TRY(popc_model_run(all, &b.features, 1, &out, 1));
        z = popc_tensor_cdata(out);
        y = popc_tensor_cdata(b.labels);
        for (int64_t i = 0; i < b.n; i++)
            correct += argmax(z + i * CLASSES) == y[i];
        seen += b.n;
        if (!first) {           /* kept for the output modes below */
            TRY(popc_tensor_clone(b.features, &first));
            first_out = out;
        } else {
            popc_tensor_free(out);
        }
        out = NULL;
    }
    printf("test accuracy %.2f%% (%lld of %lld images), weights %s\n",
           seen ? 100.0 * (double)correct / (double)seen : 0.0,
           (long long)correct, (long long)seen, a.weights);

    /* The first combined batch through each other output mode. */
    printf("All: [%lld, %lld] (%d micro-batches of %d)\n",
           (long long)popc_tensor_dims(first_out)[0],
           (long long)popc_tensor_dims(first_out)[1], DEVICE_ITERATIONS,
           BATCH);
    for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
        double diff;

        TRY(new_model(g, opts, a.weights, modes[k].mode, modes[k].period,
                      &other));
        TRY(popc_model_run(other, &first, 1, &out, 1));
        diff = compare(out, popc_tensor_cdata(first_out), modes[k].first,
                       modes[k].n, modes[k].step, modes[k].sum);
        printf("%s: [%lld, %lld], max difference from All %.2g\n",
               modes[k].mode, (long long)popc_tensor_dims(out)[0],
               (long long)popc_tensor_dims(out)[1], diff);
        if (popc_tensor_dims(out)[0] != (int64_t)modes[k].n * BATCH ||
            diff > 1e-4) {
            st = popc_set_error(POPC_EINTERNAL, "output mode %s does not "
                                "match the All output", modes[k].mode);
            goto done;
        }
        popc_tensor_free(out);
        out = NULL;
        popc_model_free(other);
        other = NULL;
    }
done:
    if (st != POPC_OK)
        fprintf(stderr, "infer_cnn: %s\n", popc_last_error());
    popc_tensor_free(out);
    popc_tensor_free(first_out);
    popc_tensor_free(first);
    popc_model_free(other);
    popc_model_free(all);
    popc_graph_free(g);
    popc_dataloader_free(dl);
    popc_options_free(opts);
    popc_dataset_free(ds);
    return st == POPC_OK ? 0 : 1;
}
