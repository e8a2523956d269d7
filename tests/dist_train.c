/* dist_train.c - train a small model on generated global batches, alone or
** as one rank of a distributed run, for tests/test_distributed.sh.
**
**   dist_train MODEL BACKEND REPLICAS STEPS OUT [FAIL_AT_STEP]
**
** MODEL: mlp (with dropout), cnn, bn (a CNN with BatchNorm). REPLICAS is
** the local replicationFactor; Distributed.numProcesses and processId come
** from the launcher's environment. Every step's global batch (device
** iterations x accumulation x all replicas x micro-batch, PopTorch's host
** layout) is a function of the step number only, and each rank feeds the
** rows of its own replicas: N ranks x R replicas see exactly what one
** process with N x R replicas sees. After STEPS runs the ranks check that
** they hold identical weights; rank 0 writes every weight and optimizer
** state, as raw float32 in name order, to OUT, and prints the checksum.
** FAIL_AT_STEP (rank 1 only): exit with an error there, as a failing rank
** would, after telling the others to stop.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <popc/popc.h>

#define DI 2
#define GA 2
#define B 4
#define CLASSES 10

#define TRY(call)                                                  \
    do {                                                           \
        if ((st = (call)) != POPC_OK)                              \
            goto done;                                             \
    } while (0)

static popc_status build(const char *model, popc_graph **out)
{
    int cnn = strcmp(model, "mlp") != 0, bn = strcmp(model, "bn") == 0;
    int64_t mlp_dims[2] = {B, 64}, img_dims[4] = {B, 1, 8, 8};
    int64_t label_dims[1] = {B};
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int x, labels, v, loss;
    popc_status st;

    *out = NULL;
    TRY(popc_graph_new(model, &g));
    TRY(popc_graph_add_input(g, "x", POPC_DTYPE_F32, cnn ? img_dims : mlp_dims,
                             cnn ? 4 : 2, &x));
    TRY(popc_graph_add_input(g, "labels", POPC_DTYPE_I32, label_dims, 1,
                             &labels));
    TRY(popc_layers_new(g, 7, &L));
    if (cnn) {
        TRY(popc_nn_conv2d(L, "conv", x, 1, 4, 3, 1, 1, 1, 1, !bn, &v));
        if (bn)
            TRY(popc_nn_batchnorm2d(L, "bn", v, 4, 1e-5, 0.1, &v));
        TRY(popc_nn_activation(L, "Relu", v, 0.0, &v));
        TRY(popc_nn_maxpool2d(L, v, 2, 2, 0, &v));
        TRY(popc_nn_flatten(L, v, 1, &v));
        TRY(popc_nn_linear(L, "fc", v, 64, CLASSES, 1, &v));
    } else {
        TRY(popc_nn_linear(L, "fc1", x, 64, 32, 1, &v));
        TRY(popc_nn_activation(L, "Relu", v, 0.0, &v));
        TRY(popc_nn_dropout(L, v, 0.25, &v));
        TRY(popc_nn_linear(L, "fc2", v, 32, CLASSES, 1, &v));
    }
    TRY(popc_nn_cross_entropy(L, v, labels, "mean", &loss));
    TRY(popc_graph_add_output(g, loss));
    *out = g;
    g = NULL;
done:
    popc_layers_free(L);
    popc_graph_free(g);
    return st;
}

/* A reproducible value for element i of sample s of step t. */
static float value_at(int64_t t, int64_t s, int64_t i)
{
    uint64_t h = (uint64_t)(t * 1000003 + s) * 0x9E3779B97F4A7C15ull +
                 (uint64_t)i * 0xBF58476D1CE4E5B9ull;

    h ^= h >> 31;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 29;
    return (float)((double)(h >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* This rank's rows of global step t: [DI][GA][R][B] of [DI][GA][NR][B]. */
static void fill(int64_t t, int rank, int R, int NR, int64_t feat, float *x,
                 int32_t *y)
{
    int64_t row = 0;

    for (int d = 0; d < DI; d++)
        for (int a = 0; a < GA; a++)
            for (int r = 0; r < R; r++)
                for (int b = 0; b < B; b++, row++) {
                    int64_t s = (((int64_t)d * GA + a) * NR +
                                 (int64_t)rank * R + r) * B + b;

                    for (int64_t i = 0; i < feat; i++)
                        x[row * feat + i] = value_at(t, s, i);
                    y[row] = (int32_t)((value_at(t, s, -1) + 1.0f) * 4.99f);
                }
}

static popc_status write_all(popc_model *m, const char *path)
{
    char tmp[4096];
    FILE *f;
    popc_status st = POPC_OK;

    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (!(f = fopen(tmp, "wb")))
        return popc_set_error(POPC_EIO, "%s: cannot write", tmp);
    for (int i = 0; st == POPC_OK && i < popc_model_n_tensors(m); i++) {
        const popc_tensor *w = NULL;

        if ((st = popc_model_get_weight(m, popc_model_tensor_name(m, i),
                                        &w)) == POPC_OK)
            fwrite(popc_tensor_cdata(w), 1, popc_tensor_nbytes(w), f);
    }
    for (int i = 0; st == POPC_OK && i < popc_model_n_optimizer_states(m);
         i++) {
        popc_tensor *s = NULL;

        if ((st = popc_model_get_optimizer_state(
                 m, popc_model_optimizer_state_name(m, i), &s)) != POPC_OK)
            break;
        if (popc_tensor_dtype(s) == POPC_DTYPE_F32)
            fwrite(popc_tensor_cdata(s), 1, popc_tensor_nbytes(s), f);
        popc_tensor_free(s);
    }
    if (fclose(f) != 0 && st == POPC_OK)
        st = popc_set_error(POPC_EIO, "%s: write failed", tmp);
    if (st == POPC_OK && rename(tmp, path) != 0)
        st = popc_set_error(POPC_EIO, "%s: cannot rename", path);
    return st;
}

int main(int argc, char **argv)
{
    const char *model, *backend, *out;
    int R, NR, rank, cnn, fail_at;
    int64_t steps, feat, rows, xdims[4], ydims[1];
    popc_graph *g = NULL;
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    popc_tensor *x = NULL, *y = NULL;
    uint64_t sum = 0;
    popc_status st = POPC_OK;

    if (argc < 6) {
        fprintf(stderr, "usage: dist_train MODEL BACKEND REPLICAS STEPS OUT "
                        "[FAIL_AT_STEP]\n");
        return 2;
    }
    model = argv[1];
    backend = argv[2];
    R = atoi(argv[3]);
    steps = atoll(argv[4]);
    out = argv[5];
    fail_at = argc > 6 ? atoi(argv[6]) : -1;
    cnn = strcmp(model, "mlp") != 0;
    feat = 64; /* 64 features, or one 8 x 8 image */
    TRY(popc_options_new(&o));
    TRY(popc_options_set(o, "backend", backend));
    TRY(popc_options_set_int(o, "replicationFactor", R));
    TRY(popc_options_set_int(o, "deviceIterations", DI));
    TRY(popc_options_set_int(o, "Training.gradientAccumulation", GA));
    TRY(popc_options_set_int(o, "randomSeed", 42));
    rank = (int)popc_options_get_int(o, "Distributed.processId");
    NR = R * (int)popc_options_get_int(o, "Distributed.numProcesses");
    TRY(popc_optimizer_new(cnn ? "adam" : "sgd", &opt));
    TRY(popc_optimizer_set(opt, "lr", cnn ? 0.01 : 0.05));
    if (!cnn)
        TRY(popc_optimizer_set(opt, "momentum", 0.9));
    TRY(build(model, &g));
    TRY(popc_model_new_training(g, o, opt, &m));
    rows = (int64_t)DI * GA * R * B;
    xdims[0] = rows;
    xdims[1] = cnn ? 1 : 64;
    xdims[2] = 8;
    xdims[3] = 8;
    ydims[0] = rows;
    TRY(popc_tensor_new(POPC_DTYPE_F32, xdims, cnn ? 4 : 2, &x));
    TRY(popc_tensor_new(POPC_DTYPE_I32, ydims, 1, &y));
    for (int64_t t = 0; t < steps; t++) {
        popc_tensor *in[2] = {x, y}, *loss = NULL;

        if (t == fail_at && rank == 1) {
            st = popc_set_error(POPC_EINVAL, "dist_train: failing on "
                                "purpose at step %" PRId64, t);
            goto done;
        }
        fill(t, rank, R, NR, feat, popc_tensor_data(x), popc_tensor_data(y));
        TRY(popc_model_run(m, in, 2, &loss, 1));
        popc_tensor_free(loss);
    }
    TRY(popc_model_check_ranks_agree(m, &sum));
    if (rank == 0) {
        TRY(write_all(m, out));
        printf("checksum %016" PRIx64 "\n", sum);
    }
done:
    if (st != POPC_OK)
        fprintf(stderr, "dist_train: rank %d: %s\n", rank, popc_last_error());
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_graph_free(g);
    popc_options_free(o);
    if (st != POPC_OK)
        popc_distributed_abort(1);
    popc_distributed_finalize();
    return st == POPC_OK ? 0 : 1;
}
