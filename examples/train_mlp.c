/* train_mlp.c - train the Fashion-MNIST MLP of fashion-mnist-mlp.ini
** (784-512-512-10, ReLU, Adam lr 1e-3) from C, then measure its test
** accuracy with an inference model that shares the trained weights.
**
**   train_mlp [--epochs N] [--limit N] [--test-limit N]
**             [--backend ipumodel|cpu] [--data DIR]
**
** --limit and --test-limit use only the first N training / test images.
** Build against an installed popc:
**
**   cc -std=c11 train_mlp.c $(pkg-config --cflags --libs popc) -o train_mlp
**
** It uses the public API only, as any application would: no config.h.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <popc/popc.h>

#define BATCH 32                /* micro-batch */
#define DEVICE_ITERATIONS 4     /* micro-batches per popc_model_run */
#define CLASSES 10

/* On failure, say why (popc_last_error names the thing and the fix) and
** clean up. */
#define TRY(call)                                                  \
    do {                                                           \
        if ((st = (call)) != POPC_OK)                              \
            goto done;                                             \
    } while (0)

typedef struct args {
    int64_t epochs, limit, test_limit;
    const char *backend, *data;
} args;

static int parse_args(int argc, char **argv, args *a)
{
    *a = (args){1, 0, 0, "ipumodel", "/usr/share/datasets/fashion-mnist"};
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

        if (!val)
            return 0;
        if (strcmp(opt, "--epochs") == 0)
            a->epochs = strtoll(val, NULL, 10);
        else if (strcmp(opt, "--limit") == 0)
            a->limit = strtoll(val, NULL, 10);
        else if (strcmp(opt, "--test-limit") == 0)
            a->test_limit = strtoll(val, NULL, 10);
        else if (strcmp(opt, "--backend") == 0)
            a->backend = val;
        else if (strcmp(opt, "--data") == 0)
            a->data = val;
        else
            return 0;
        i++;
    }
    return a->epochs >= 1 && a->limit >= 0 && a->test_limit >= 0;
}

/* Images and labels of one split, scaled to [0, 1] and normalised with
** Fashion-MNIST's mean and std (torchvision's Normalize((0.2860,),
** (0.3530,))). limit 0 keeps every sample. */
static popc_status load_split(const char *dir, const char *split,
                              int64_t limit, popc_dataset **out)
{
    static const float mean = 0.2860f, std = 0.3530f;
    static const int64_t flat[1] = {784};
    char images[1024], labels[1024];
    popc_status st;

    snprintf(images, sizeof images, "%s/%s-images-idx3-ubyte.gz", dir, split);
    snprintf(labels, sizeof labels, "%s/%s-labels-idx1-ubyte.gz", dir, split);
    if ((st = popc_dataset_load_idx(images, labels, out)) != POPC_OK)
        return st;
    if (limit > 0)
        popc_dataset_truncate(*out, limit);
    if ((st = popc_dataset_set_classes(*out, CLASSES)) != POPC_OK ||
        (st = popc_dataset_set_sample_shape(*out, flat, 1)) != POPC_OK ||
        (st = popc_dataset_normalize(*out, &mean, &std, 1)) != POPC_OK) {
        popc_dataset_free(*out);
        *out = NULL;
    }
    return st;
}

/* The model for one micro-batch: x [BATCH, 784] -> logits [BATCH, 10].
** The training graph adds the labels input and the mean cross-entropy as
** its only output; the inference graph returns the logits. Both name
** their weights fc1.weight ... fc3.bias and draw the same initial values
** from seed 0, like popc train with fashion-mnist-mlp.ini. */
static popc_status build_mlp(int training, popc_graph **out)
{
    int64_t dims[2] = {BATCH, 784};
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int x, labels, v, loss;
    popc_status st;

    *out = NULL;
    TRY(popc_graph_new("fashion-mnist-mlp", &g));
    TRY(popc_graph_add_input(g, "x", POPC_DTYPE_F32, dims, 2, &x));
    TRY(popc_layers_new(g, 0, &L));
    TRY(popc_nn_linear(L, "fc1", x, 784, 512, 1, &v));
    TRY(popc_nn_activation(L, "Relu", v, 0.0, &v));
    TRY(popc_nn_linear(L, "fc2", v, 512, 512, 1, &v));
    TRY(popc_nn_activation(L, "Relu", v, 0.0, &v));
    TRY(popc_nn_linear(L, "fc3", v, 512, CLASSES, 1, &v));
    if (training) {
        TRY(popc_graph_add_input(g, "labels", POPC_DTYPE_I32, dims, 1,
                                 &labels));
        TRY(popc_nn_cross_entropy(L, v, labels, "mean", &loss));
        v = loss;
    }
    TRY(popc_graph_add_output(g, v));
    *out = g;
    g = NULL;
done:
    popc_layers_free(L);
    popc_graph_free(g);
    return st;
}

/* deviceIterations and the backend; everything else keeps PopTorch's
** defaults (outputMode: Final for training, All for inference). */
static popc_status make_options(const char *backend, popc_options **out)
{
    popc_status st;

    if ((st = popc_options_new(out)) != POPC_OK)
        return st;
    if ((st = popc_options_set(*out, "backend", backend)) != POPC_OK ||
        (st = popc_options_set_int(*out, "deviceIterations",
                                   DEVICE_ITERATIONS)) != POPC_OK) {
        popc_options_free(*out);
        *out = NULL;
    }
    return st;
}

/* Classify the test set: the inference model returns the logits of every
** micro-batch (outputMode All); the loader pads the last combined batch to
** full size, and only its b.n real rows are scored. */
static popc_status evaluate(popc_model *m, popc_dataloader *dl,
                            double *accuracy)
{
    int64_t seen = 0, correct = 0;
    popc_status st;

    for (;;) {
        popc_batch b;
        popc_tensor *logits = NULL;
        const float *z;
        const int32_t *y;

        if ((st = popc_dataloader_next(dl, &b)) != POPC_OK)
            return st;
        if (b.n == 0)
            break;              /* end of the epoch */
        if ((st = popc_model_run(m, &b.features, 1, &logits, 1)) != POPC_OK)
            return st;
        z = popc_tensor_cdata(logits);
        y = popc_tensor_cdata(b.labels);
        for (int64_t i = 0; i < b.n; i++) {
            int best = 0;

            for (int c = 1; c < CLASSES; c++)
                if (z[i * CLASSES + c] > z[i * CLASSES + best])
                    best = c;
            correct += best == y[i];
        }
        seen += b.n;
        popc_tensor_free(logits);
    }
    *accuracy = seen ? (double)correct / (double)seen : 0.0;
    return POPC_OK;
}

int main(int argc, char **argv)
{
    args a;
    popc_dataset *train_ds = NULL, *test_ds = NULL;
    popc_dataloader *train_dl = NULL, *test_dl = NULL;
    popc_options *train_opts = NULL, *test_opts = NULL;
    popc_optimizer *adam = NULL;
    popc_graph *train_g = NULL, *test_g = NULL;
    popc_model *train = NULL, *test = NULL;
    popc_loader_config cfg;
    popc_status st = POPC_OK;

    if (!parse_args(argc, argv, &a)) {
        fprintf(stderr, "usage: %s [--epochs N] [--limit N] [--test-limit N] "
                        "[--backend ipumodel|cpu] [--data DIR]\n", argv[0]);
        return 2;
    }
    TRY(load_split(a.data, "train", a.limit, &train_ds));
    TRY(load_split(a.data, "t10k", a.test_limit, &test_ds));

    /* A model freezes its options, so training and inference get their
    ** own. Each popc_model_run consumes a combined batch of
    ** BATCH x DEVICE_ITERATIONS samples; the loaders cut them. */
    TRY(make_options(a.backend, &train_opts));
    TRY(make_options(a.backend, &test_opts));
    popc_loader_config_init(&cfg);
    cfg.batch_size = BATCH;
    cfg.shuffle = 1;            /* reshuffled every epoch, from cfg.seed */
    TRY(popc_dataloader_new(train_ds, train_opts, &cfg, &train_dl));
    popc_loader_config_init(&cfg);
    cfg.batch_size = BATCH;
    cfg.drop_last = 0;          /* score every test image ... */
    cfg.pad_last = 1;           /* ... in full-size combined batches */
    TRY(popc_dataloader_new(test_ds, test_opts, &cfg, &test_dl));

    TRY(popc_optimizer_new("adam", &adam));
    TRY(popc_optimizer_set(adam, "lr", 1e-3));
    TRY(build_mlp(1, &train_g));
    TRY(build_mlp(0, &test_g));
    TRY(popc_model_new_training(train_g, train_opts, adam, &train));
    TRY(popc_model_new_inference(test_g, test_opts, &test));
    /* as two PopTorch wrappers of one nn.Module: the inference model
    ** reads the trained weights before each of its runs */
    TRY(popc_model_share_weights(test, train));

    printf("training on %lld images, %lld per run (%d x %d), backend %s\n",
           (long long)popc_dataloader_samples_per_epoch(train_dl),
           (long long)popc_dataloader_combined_batch_size(train_dl), BATCH,
           DEVICE_ITERATIONS, a.backend);
    for (int64_t epoch = 0; epoch < a.epochs; epoch++) {
        double loss_sum = 0.0, accuracy;
        int64_t runs = 0;

        for (;;) {
            popc_batch b;
            popc_tensor *loss = NULL;

            TRY(popc_dataloader_next(train_dl, &b));
            if (b.n == 0)
                break;
            /* DEVICE_ITERATIONS optimizer steps; the output (Final mode)
            ** is the loss of the last micro-batch */
            TRY(popc_model_run(train, (popc_tensor *[]){b.features,
                                                        b.labels},
                               2, &loss, 1));
            loss_sum += *(const float *)popc_tensor_cdata(loss);
            runs++;
            popc_tensor_free(loss);
        }
        TRY(evaluate(test, test_dl, &accuracy));
        printf("epoch %lld: loss %.4f, test accuracy %.2f%% (%lld "
               "images)\n",
               (long long)epoch + 1, runs ? loss_sum / (double)runs : 0.0,
               100.0 * accuracy, (long long)popc_dataset_size(test_ds));
    }
    printf("%lld optimizer steps\n", (long long)popc_model_steps(train));
done:
    if (st != POPC_OK)
        fprintf(stderr, "train_mlp: %s\n", popc_last_error());
    popc_model_free(test);
    popc_model_free(train);
    popc_graph_free(test_g);
    popc_graph_free(train_g);
    popc_optimizer_free(adam);
    popc_dataloader_free(test_dl);
    popc_dataloader_free(train_dl);
    popc_options_free(test_opts);
    popc_options_free(train_opts);
    popc_dataset_free(test_ds);
    popc_dataset_free(train_ds);
    return st == POPC_OK ? 0 : 1;
}
