/* export_roundtrip.c - popc to ONNX and back, bitwise.
**
** Usage: export_roundtrip OUTDIR MODELDIR FLOWDIR
** For each model: run it, export it (popc_onnx_export_model) to
** OUTDIR/<name>.onnx, import the file again, run it on the same input and
** compare the outputs bit for bit. The models: a CNN built with popc's
** layers (conv, BatchNorm, pooling, softmax) on ipumodel, an MLP trained
** for a few SGD steps (exported from an inference model sharing its
** weights, so the trained values are what gets written), and the
** PyTorch-exported models of MODELDIR and the Loop model of FLOWDIR
** (imported, re-exported: its body's captured initializer goes back to
** being read by name). Prints one
** line per model; exit 1 on any difference. test_export.sh then runs
** onnx.checker over OUTDIR.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/onnx.h"
#include "popc/popc.h"

static int failures;

#define TRY(call)                                                           \
    do {                                                                    \
        if ((call) != POPC_OK) {                                            \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, popc_last_error()); \
            exit(1);                                                        \
        }                                                                   \
    } while (0)

static popc_tensor *filled(popc_dtype dt, const int64_t *d, int rank,
                           unsigned seed)
{
    popc_tensor *t = NULL;

    TRY(popc_tensor_new(dt, d, rank, &t));
    for (int64_t i = 0; i < popc_tensor_numel(t); i++) {
        seed = seed * 1103515245u + 12345u;
        if (dt == POPC_DTYPE_F32)
            ((float *)popc_tensor_data(t))[i] =
                (float)((seed >> 8) % 2000) / 1000.0f - 1.0f;
        else
            ((int32_t *)popc_tensor_data(t))[i] = (int32_t)((seed >> 8) % 4);
    }
    return t;
}

static popc_model *inference(const popc_graph *g, const char *backend)
{
    popc_options *o = NULL;
    popc_model *m = NULL;

    TRY(popc_options_new(&o));
    TRY(popc_options_set(o, "backend", backend));
    /* the promise is about graphs: a re-imported file holds constants
    ** where the original held weights, and the graph optimizer folds
    ** constants (BatchNorm into Conv), which rounds differently */
    TRY(popc_options_set(o, "optimizationLevel", "0"));
    TRY(popc_model_new_inference(g, o, &m));
    popc_options_free(o);
    return m;
}

/* Export m to dir/name.onnx, import, run on in, compare with want. */
static void round_trip(popc_model *m, const char *dir, const char *name,
                       popc_tensor *in, const popc_tensor *want,
                       const char *backend)
{
    char path[4096];
    popc_graph *g = NULL;
    popc_model *back = NULL;
    popc_tensor *got = NULL;
    int same;

    snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
    TRY(popc_onnx_export_model(m, path));
    TRY(popc_onnx_import_file(path, NULL, &g));
    back = inference(g, backend);
    TRY(popc_model_run(back, &in, 1, &got, 1));
    same = popc_tensor_nbytes(got) == popc_tensor_nbytes(want) &&
           memcmp(popc_tensor_cdata(got), popc_tensor_cdata(want),
                  popc_tensor_nbytes(want)) == 0;
    printf("%s %s: exported, imported again, outputs %s\n",
           same ? "ok" : "FAIL", name,
           same ? "bitwise equal" : "DIFFER");
    failures += !same;
    popc_tensor_free(got);
    popc_model_free(back);
    popc_graph_free(g);
}

static void built_cnn(const char *dir)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int64_t xd[4] = {4, 3, 12, 12};
    int x, h;
    popc_model *m;
    popc_tensor *in, *out = NULL;

    TRY(popc_graph_new("cnn", &g));
    TRY(popc_graph_add_input(g, "image", POPC_DTYPE_F32, xd, 4, &x));
    TRY(popc_layers_new(g, 3, &L));
    TRY(popc_nn_conv2d(L, "conv", x, 3, 8, 3, 1, 1, 1, 1, 1, &h));
    TRY(popc_nn_batchnorm2d(L, "bn", h, 8, 1e-5, 0.1, &h));
    TRY(popc_nn_activation(L, "Relu", h, 0, &h));
    TRY(popc_nn_maxpool2d(L, h, 2, 0, 0, &h));
    TRY(popc_nn_flatten(L, h, 1, &h));
    TRY(popc_nn_linear(L, "fc", h, 8 * 6 * 6, 10, 1, &h));
    TRY(popc_nn_softmax(L, h, 1, 0, &h));
    TRY(popc_graph_add_output(g, h));
    m = inference(g, "ipumodel");
    in = filled(POPC_DTYPE_F32, xd, 4, 7);
    TRY(popc_model_run(m, &in, 1, &out, 1));
    round_trip(m, dir, "popc_cnn", in, out, "ipumodel");
    popc_tensor_free(in);
    popc_tensor_free(out);
    popc_model_free(m);
    popc_layers_free(L);
    popc_graph_free(g);
}

/* An MLP trained for 5 SGD steps; its inference twin is exported. */
static void trained_mlp(const char *dir)
{
    popc_graph *tg = NULL, *ig = NULL;
    popc_layers *L = NULL;
    int64_t xd[2] = {8, 16}, ld[1] = {8};
    int x, lab, h, o, loss;
    popc_optimizer *opt = NULL;
    popc_options *opts = NULL;
    popc_model *train = NULL, *infer;
    popc_tensor *in[2], *l = NULL, *out = NULL;

    for (int training = 1; training >= 0; training--) {
        popc_graph **g = training ? &tg : &ig;

        TRY(popc_graph_new("mlp", g));
        TRY(popc_graph_add_input(*g, "x", POPC_DTYPE_F32, xd, 2, &x));
        if (training)
            TRY(popc_graph_add_input(*g, "labels", POPC_DTYPE_I32, ld, 1,
                                     &lab));
        TRY(popc_layers_new(*g, 5, &L));
        TRY(popc_nn_linear(L, "fc1", x, 16, 32, 1, &h));
        TRY(popc_nn_activation(L, "Tanh", h, 0, &h));
        TRY(popc_nn_linear(L, "fc2", h, 32, 4, 1, &o));
        if (training) {
            TRY(popc_nn_cross_entropy(L, o, lab, "mean", &loss));
            TRY(popc_graph_add_output(*g, loss));
        } else {
            TRY(popc_graph_add_output(*g, o));
        }
        popc_layers_free(L);
    }
    TRY(popc_optimizer_new("sgd", &opt));
    TRY(popc_optimizer_set(opt, "lr", 0.5));
    TRY(popc_options_new(&opts));
    TRY(popc_options_set(opts, "backend", "cpu"));
    TRY(popc_model_new_training(tg, opts, opt, &train));
    in[0] = filled(POPC_DTYPE_F32, xd, 2, 11);
    in[1] = filled(POPC_DTYPE_I32, ld, 1, 13);
    for (int s = 0; s < 5; s++) {
        TRY(popc_model_run(train, in, 2, &l, 1));
        popc_tensor_free(l);
    }
    infer = inference(ig, "cpu");
    TRY(popc_model_share_weights(infer, train));
    TRY(popc_model_run(infer, in, 1, &out, 1));
    round_trip(infer, dir, "trained_mlp", in[0], out, "cpu");
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_tensor_free(out);
    popc_model_free(infer);
    popc_model_free(train);
    popc_optimizer_free(opt);
    popc_options_free(opts);
    popc_graph_free(tg);
    popc_graph_free(ig);
}

/* models/<name>.onnx run on models/<name>.<input>.npy */
static void file_model(const char *dir, const char *models, const char *name,
                       const char *input)
{
    char path[4096];
    popc_graph *g = NULL;
    popc_model *m;
    popc_tensor *in = NULL, *out = NULL;
    char exported[512];

    snprintf(path, sizeof path, "%s/%s.%s.npy", models, name, input);
    TRY(popc_npy_load(path, &in));
    snprintf(path, sizeof path, "%s/%s.onnx", models, name);
    {
        /* bind a symbolic batch to the input's shape */
        popc_onnx_import_options o;
        popc_view shape = popc_tensor_view(in);

        popc_onnx_import_options_init(&o);
        o.n_shapes = 1;
        o.shape_names = &input;
        o.shapes = &shape;
        TRY(popc_onnx_import_file(path, &o, &g));
    }
    m = inference(g, "cpu");
    TRY(popc_model_run(m, &in, 1, &out, 1));
    snprintf(exported, sizeof exported, "%s_reexported", name);
    round_trip(m, dir, exported, in, out, "cpu");
    popc_tensor_free(in);
    popc_tensor_free(out);
    popc_model_free(m);
    popc_graph_free(g);
}

/* A Loop with an If inside, both reading an initializer (two levels of
** captures); its trip count m frozen at import. */
static void nested_flow(const char *dir, const char *flow)
{
    char path[4096];
    const char *frozen_name = "m";
    popc_onnx_import_options o;
    popc_tensor *m_value = NULL, *in = NULL, *out[2] = {NULL, NULL};
    popc_graph *g = NULL;
    popc_model *m;

    snprintf(path, sizeof path, "%s/loop_if.m.npy", flow);
    TRY(popc_npy_load(path, &m_value));
    snprintf(path, sizeof path, "%s/loop_if.h0.npy", flow);
    TRY(popc_npy_load(path, &in));
    popc_onnx_import_options_init(&o);
    o.n_values = 1;
    o.value_names = &frozen_name;
    o.values = &m_value;
    snprintf(path, sizeof path, "%s/loop_if.onnx", flow);
    TRY(popc_onnx_import_file(path, &o, &g));
    m = inference(g, "cpu");
    TRY(popc_model_run(m, &in, 1, out, 2));
    {
        popc_graph *g2 = NULL;
        popc_model *back;
        popc_tensor *got[2] = {NULL, NULL};
        int same = 1;

        snprintf(path, sizeof path, "%s/loop_if_reexported.onnx", dir);
        TRY(popc_onnx_export_model(m, path));
        TRY(popc_onnx_import_file(path, NULL, &g2));
        back = inference(g2, "cpu");
        TRY(popc_model_run(back, &in, 1, got, 2));
        for (int k = 0; k < 2; k++) {
            same &= popc_tensor_nbytes(got[k]) == popc_tensor_nbytes(out[k]) &&
                    memcmp(popc_tensor_cdata(got[k]),
                           popc_tensor_cdata(out[k]),
                           popc_tensor_nbytes(out[k])) == 0;
            popc_tensor_free(got[k]);
        }
        printf("%s loop_if_reexported: exported, imported again, outputs "
               "%s\n", same ? "ok" : "FAIL",
               same ? "bitwise equal" : "DIFFER");
        failures += !same;
        popc_model_free(back);
        popc_graph_free(g2);
    }
    popc_tensor_free(m_value);
    popc_tensor_free(in);
    popc_tensor_free(out[0]);
    popc_tensor_free(out[1]);
    popc_model_free(m);
    popc_graph_free(g);
}

int main(int argc, char **argv)
{
    static const char *const torch_models[] = {
        "small_cnn", "tiny_transformer", "lstm_classifier", "gru_classifier"};

    if (argc != 4) {
        fprintf(stderr, "usage: export_roundtrip OUTDIR MODELDIR FLOWDIR\n");
        return 2;
    }
    popc_log_set_level(POPC_LOG_ERR);
    built_cnn(argv[1]);
    trained_mlp(argv[1]);
    for (size_t i = 0; i < sizeof torch_models / sizeof torch_models[0]; i++)
        file_model(argv[1], argv[2], torch_models[i], "input");
    /* control flow: a Loop whose body reads an initializer by name */
    file_model(argv[1], argv[3], "loop_classifier", "x");
    nested_flow(argv[1], argv[3]);
    return failures ? 1 : 0;
}
