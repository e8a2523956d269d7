/* check_run_ini.c - run INI files: good files and overrides, every kind of
** bad file (messages must name the file, line or section, and key), the
** graphs built from layer sections, and training with a checkpoint and
** resume that ends bit-identical to an uninterrupted run (cpu backend).
**
** Each test writes its INI files and a synthetic dataset (tests/synth.h)
** into a temporary directory. Plugins come from POPC_PLUGIN_PATH.
*/
#include "config.h"

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <check.h>

#include "popc/popc.h"
#include "popc/run.h"
#include "tests/synth.h"

static char tmpdir[256];
static char pathbuf[8][600];
static int pathnext;

static int rm_one(const char *p, const struct stat *sb, int flag,
                  struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/popc-check-run-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    ck_assert_int_eq(synth_write(tmpdir, 256, 64, 7), 0);
}

static void teardown(void)
{
    nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *tmp(const char *name)
{
    char *p = pathbuf[pathnext++ % 8];

    snprintf(p, 600, "%s/%s", tmpdir, name);
    return p;
}

/* The path stays valid for the test (tmp() reuses its buffers). */
static const char *write_ini(const char *name, const char *text)
{
    static char saved[4][600];
    static int next;
    char *p = saved[next++ % 4];
    FILE *f;

    snprintf(p, 600, "%s", tmp(name));
    f = fopen(p, "w");

    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return p;
}

#define OK(call)                                                              \
    do {                                                                      \
        popc_status st_ = (call);                                             \
        ck_assert_msg(st_ == POPC_OK, "%s: %s", #call, popc_last_error());    \
    } while (0)

/* A small MLP over the synthetic data; the data paths are relative to
** the INI file. */
#define DATA                                                                  \
    "[data]\n"                                                                \
    "train = " SYNTH_TRAIN_IMAGES "\n"                                        \
    "train_labels = " SYNTH_TRAIN_LABELS "\n"                                 \
    "test = " SYNTH_TEST_IMAGES "\n"                                          \
    "test_labels = " SYNTH_TEST_LABELS "\n"                                   \
    "batch_size = 8\n"                                                        \
    "shuffle = true\n"                                                        \
    "seed = 3\n"

#define MLP                                                                   \
    "[options]\n"                                                             \
    "backend = cpu\n"                                                         \
    "\n" DATA "\n"                                                            \
    "[optimizer]\n"                                                           \
    "name = adam\n"                                                           \
    "lr = 0.01\n"                                                             \
    "\n"                                                                      \
    "[train]\n"                                                               \
    "epochs = 2\n"                                                            \
    "\n"                                                                      \
    "[model]\n"                                                               \
    "input = 64\n"                                                            \
    "classes = 4\n"                                                           \
    "layers = fc1, relu, fc2\n"                                               \
    "\n"                                                                      \
    "[layer fc1]\n"                                                           \
    "type = linear\n"                                                         \
    "out_features = 16\n"                                                     \
    "\n"                                                                      \
    "[layer fc2]\n"                                                           \
    "type = linear\n"                                                         \
    "out_features = 4\n"

static popc_run *load(const char *ini, const char *const *sets, int n)
{
    popc_run *r = NULL;

    OK(popc_run_load(ini, sets, n, &r));
    ck_assert_ptr_nonnull(r);
    return r;
}

/* ---- good files --------------------------------------------------------- */

START_TEST(good_mlp)
{
    popc_run *r = load(write_ini("mlp.ini", MLP), NULL, 0);
    popc_graph *g = NULL;
    popc_dataset *ds = NULL;
    popc_dataloader *dl = NULL;
    popc_view out;

    ck_assert_str_eq(popc_run_path(r), tmp("mlp.ini"));
    ck_assert_str_eq(popc_run_value(r, "data", "batch_size"), "8");
    ck_assert_ptr_null(popc_run_value(r, "data", "mode"));
    ck_assert_int_eq(popc_run_batch_size(r), 8);
    ck_assert_str_eq(popc_options_get_string(popc_run_options(r), "backend"),
                     "cpu");
    ck_assert_ptr_nonnull(popc_run_optimizer(r));
    ck_assert_double_eq(popc_optimizer_get(popc_run_optimizer(r), 0, "lr"),
                        0.01);

    OK(popc_run_build_graph(r, 0, 8, &g));
    ck_assert_int_eq(popc_graph_n_inputs(g), 1);
    ck_assert_int_eq(popc_graph_n_outputs(g), 1);
    out = popc_graph_value_info(g, popc_graph_output(g, 0));
    ck_assert_int_eq(out.rank, 2);
    ck_assert_int_eq(out.dims[0], 8);
    ck_assert_int_eq(out.dims[1], 4);
    ck_assert_int_ge(popc_graph_find_value(g, "fc1.weight"), 0);
    ck_assert_int_eq(popc_graph_value_info(g, popc_graph_find_value(
                                                  g, "fc1.weight"))
                         .dims[1],
                     64);
    popc_graph_free(g);
    OK(popc_run_build_graph(r, 1, 8, &g));
    ck_assert_int_eq(popc_graph_n_inputs(g), 2);
    ck_assert_int_eq(popc_graph_value_info(g, popc_graph_output(g, 0)).rank,
                     0);
    popc_graph_free(g);

    /* relative data paths resolve against the INI's directory */
    OK(popc_run_load_dataset(r, POPC_SPLIT_TRAIN, &ds));
    ck_assert_int_eq(popc_dataset_size(ds), 256);
    ck_assert_int_eq(popc_dataset_sample_numel(ds), 64);
    OK(popc_run_new_loader(r, POPC_SPLIT_TRAIN, ds, &dl));
    ck_assert_int_eq(popc_dataloader_combined_batch_size(dl), 8);
    ck_assert_int_eq(popc_dataloader_len(dl), 32);
    popc_dataloader_free(dl);
    popc_dataset_free(ds);
    OK(popc_run_load_dataset(r, POPC_SPLIT_TEST, &ds));
    ck_assert_int_eq(popc_dataset_size(ds), 64);
    popc_dataset_free(ds);
    popc_run_free(r);
}
END_TEST

START_TEST(overrides)
{
    const char *sets[] = {"data.batch_size=4", "options.deviceIterations=3",
                          "layer.fc1.out_features=7", "optimizer.lr=0.5",
                          "train.epochs=5", "data.test_limit=10"};
    popc_run *r = load(write_ini("mlp.ini", MLP), sets, 6);
    popc_graph *g = NULL;
    popc_dataset *ds = NULL;
    popc_dataloader *dl = NULL;
    int w;

    ck_assert_int_eq(popc_run_batch_size(r), 4);
    ck_assert_str_eq(popc_run_value(r, "train", "epochs"), "5");
    ck_assert_int_eq(popc_options_get_int(popc_run_options(r),
                                          "deviceIterations"),
                     3);
    ck_assert_double_eq(popc_optimizer_get(popc_run_optimizer(r), 0, "lr"),
                        0.5);
    OK(popc_run_build_graph(r, 0, 4, &g));
    w = popc_graph_find_value(g, "fc1.weight");
    ck_assert_int_eq(popc_graph_value_info(g, w).dims[0], 7);
    popc_graph_free(g);
    OK(popc_run_load_dataset(r, POPC_SPLIT_TRAIN, &ds));
    OK(popc_run_new_loader(r, POPC_SPLIT_TRAIN, ds, &dl));
    ck_assert_int_eq(popc_dataloader_combined_batch_size(dl), 12);
    popc_dataloader_free(dl);
    popc_dataset_free(ds);
    OK(popc_run_load_dataset(r, POPC_SPLIT_TEST, &ds));
    ck_assert_int_eq(popc_dataset_size(ds), 10);
    popc_dataset_free(ds);
    popc_run_free(r);
}
END_TEST

START_TEST(cnn_layers)
{
    static const char cnn[] =
        "[options]\nbackend = cpu\n\n" DATA "mean = auto\nstd = auto\n"
        "mode = async\nworkers = 2\n\n"
        "[model]\ninput = 1, 8, 8\nclasses = 4\n"
        "layers = conv, bn, relu, pool, flatten, drop, fc\n\n"
        "[layer conv]\ntype = conv2d\nout_channels = 3\nkernel = 3\n"
        "padding = 1\n\n"
        "[layer bn]\ntype = batchnorm2d\n\n"
        "[layer pool]\ntype = maxpool2d\nkernel = 2\n\n"
        "[layer drop]\ntype = dropout\np = 0.25\n\n"
        "[layer fc]\ntype = linear\nout_features = 4\n";
    popc_run *r = load(write_ini("cnn.ini", cnn), NULL, 0);
    popc_graph *g = NULL;
    popc_dataset *ds = NULL;
    int rank;

    OK(popc_run_build_graph(r, 1, 8, &g));
    ck_assert_int_ge(popc_graph_find_value(g, "conv.weight"), 0);
    ck_assert_int_ge(popc_graph_find_value(g, "bn.running_mean"), 0);
    ck_assert_int_eq(popc_graph_value_info(g, popc_graph_find_value(
                                                  g, "fc.weight"))
                         .dims[1],
                     3 * 4 * 4);
    popc_graph_free(g);
    /* the test split is normalised with the train statistics */
    OK(popc_run_load_dataset(r, POPC_SPLIT_TEST, &ds));
    ck_assert_int_eq(popc_dataset_sample_shape(ds, &rank)[0], 1);
    ck_assert_int_eq(rank, 3);
    popc_dataset_free(ds);
    popc_run_free(r);
}
END_TEST

/* The first node of op in g, failing the test when there is none. */
static int node_of(const popc_graph *g, const char *op)
{
    for (int i = 0; i < popc_graph_n_nodes(g); i++)
        if (strcmp(popc_graph_node_op(g, i), op) == 0)
            return i;
    ck_abort_msg("no %s node in the graph", op);
    return -1;
}

/* Every [layer] key left out takes torch.nn's default (Conv2d stride 1,
** padding 0, dilation 1, groups 1, bias; MaxPool2d stride = kernel;
** BatchNorm2d eps 1e-5, momentum 0.1; LayerNorm eps 1e-5; LeakyReLU
** negative_slope 0.01; Linear bias), log_softmax's dim is -1, and a type
** listed bare (relu) is placed nowhere: what the built graph holds. */
START_TEST(layer_defaults_reach_the_graph)
{
    static const char text[] =
        "[options]\nbackend = cpu\n\n" DATA "\n"
        "[model]\ninput = 1, 8, 8\nclasses = 4\n"
        "layers = conv, bn, pool, relu, leaky, flatten, ln, fc, lsm\n\n"
        "[layer conv]\ntype = conv2d\nout_channels = 3\nkernel = 3\n\n"
        "[layer bn]\ntype = batchnorm2d\n\n"
        "[layer pool]\ntype = maxpool2d\nkernel = 2\n\n"
        "[layer leaky]\ntype = leaky_relu\n\n"
        "[layer ln]\ntype = layernorm\n\n"
        "[layer fc]\ntype = linear\nout_features = 4\n\n"
        "[layer lsm]\ntype = log_softmax\n";
    popc_run *r = load(write_ini("defaults.ini", text), NULL, 0);
    popc_graph *g = NULL;
    popc_attrs a;
    popc_annotations an;
    int64_t v[4];
    int n;

    OK(popc_run_build_graph(r, 0, 2, &g));
    n = node_of(g, "Conv");
    a = popc_graph_node_attrs(g, n);
    ck_assert_int_eq(popc_graph_node_n_inputs(g, n), 3); /* with its bias */
    ck_assert_int_eq(popc_attr_ints(&a, "strides", v, 4), 2);
    ck_assert(v[0] == 1 && v[1] == 1);
    ck_assert_int_eq(popc_attr_ints(&a, "pads", v, 4), 4);
    ck_assert(v[0] == 0 && v[1] == 0 && v[2] == 0 && v[3] == 0);
    ck_assert_int_eq(popc_attr_ints(&a, "dilations", v, 4), 2);
    ck_assert(v[0] == 1 && v[1] == 1);
    ck_assert_int_eq(popc_attr_int(&a, "group", 0), 1);
    a = popc_graph_node_attrs(g, node_of(g, "BatchNormalization"));
    ck_assert_double_eq_tol(popc_attr_float(&a, "epsilon", 0), 1e-5, 1e-12);
    /* ONNX's momentum is 1 - torch's */
    ck_assert_double_eq_tol(popc_attr_float(&a, "momentum", 0), 0.9, 1e-9);
    a = popc_graph_node_attrs(g, node_of(g, "MaxPool"));
    ck_assert_int_eq(popc_attr_ints(&a, "strides", v, 4), 2);
    ck_assert(v[0] == 2 && v[1] == 2);
    a = popc_graph_node_attrs(g, node_of(g, "LeakyRelu"));
    ck_assert_double_eq_tol(popc_attr_float(&a, "alpha", 0), 0.01, 1e-9);
    a = popc_graph_node_attrs(g, node_of(g, "LayerNormalization"));
    ck_assert_double_eq_tol(popc_attr_float(&a, "epsilon", 0), 1e-5, 1e-12);
    a = popc_graph_node_attrs(g, node_of(g, "LogSoftmax"));
    ck_assert_int_eq(popc_attr_int(&a, "axis", 0), -1);
    ck_assert_int_ge(popc_graph_find_value(g, "fc.bias"), 0);
    /* conv 3x6x6, pool 3x3x3: 27 features reach fc */
    ck_assert_int_eq(popc_graph_value_info(g, popc_graph_find_value(
                                                  g, "fc.weight"))
                         .dims[1],
                     27);
    an = popc_graph_node_annotations(g, node_of(g, "Relu"));
    ck_assert_int_eq(an.ipu, -1);
    ck_assert_int_eq(an.stage, -1);
    ck_assert_int_eq(an.phase, -1);
    ck_assert_int_ne(an.recompute, 1); /* no checkpoint */
    ck_assert_ptr_null(an.block);
    popc_graph_free(g);
    popc_run_free(r);
}
END_TEST

START_TEST(csv_and_npy_data)
{
    static const char csv[] =
        "[options]\nbackend = cpu\n\n"
        "[data]\ntrain = d.csv\ntest = u.csv\nlabel_column = label\n"
        "batch_size = 2\n\n"
        "[infer]\npredictions = pred.npy\n\n"
        "[model]\ninput = 3\nclasses = 2\nlayers = fc\n\n"
        "[layer fc]\ntype = linear\nout_features = 2\n";
    popc_run *r;
    popc_dataset *ds = NULL;
    popc_infer_result inf;
    popc_tensor *f = NULL, *l = NULL, *pred = NULL;
    const int64_t fd[2] = {4, 3}, ld[1] = {4};
    char set[700];
    const char *sets[3] = {"data.train=x.npy", "data.train_labels=y.npy",
                           set};

    write_ini("d.csv", "a,label,b,c\n1,0,2,3\n4,1,5,6\n7,0,8,9\n1,1,1,1\n");
    write_ini("u.csv", "a,label,b,c\n1,0,2,3\n4,1,5,6\n7,0,8,9\n");
    r = load(write_ini("csv.ini", csv), NULL, 0);
    OK(popc_run_load_dataset(r, POPC_SPLIT_TRAIN, &ds));
    ck_assert_int_eq(popc_dataset_size(ds), 4);
    ck_assert_int_eq(popc_dataset_label_count(ds), 2);
    popc_dataset_free(ds);
    popc_run_free(r);

    /* unlabelled data and no weights: predictions, no accuracy */
    {
        const char *none[2] = {"data.label_column=none", set};

        write_ini("u.csv", "1,2,3\n4,5,6\n7,8,9\n");
        snprintf(set, sizeof set, "infer.predictions=%s", tmp("pred.npy"));
        r = load(tmp("csv.ini"), none, 2);
        OK(popc_run_infer(r, NULL, &inf));
        ck_assert_int_eq(inf.samples, 3);
        ck_assert_int_eq(inf.correct, -1);
        ck_assert(inf.accuracy < 0);
        OK(popc_npy_load(tmp("pred.npy"), &pred));
        ck_assert_int_eq(popc_tensor_numel(pred), 3);
        popc_tensor_free(pred);
        popc_run_free(r);
    }

    /* NumPy files given by --set are relative to the current directory */
    OK(popc_tensor_new(POPC_DTYPE_F32, fd, 2, &f));
    OK(popc_tensor_new(POPC_DTYPE_I64, ld, 1, &l));
    ((int64_t *)popc_tensor_data(l))[2] = 1;
    ck_assert_int_eq(chdir(tmpdir), 0);
    OK(popc_npy_save("x.npy", f));
    OK(popc_npy_save("y.npy", l));
    snprintf(set, sizeof set, "data.format=npy");
    r = load(tmp("csv.ini"), sets, 3);
    OK(popc_run_load_dataset(r, POPC_SPLIT_TRAIN, &ds));
    ck_assert_int_eq(popc_dataset_size(ds), 4);
    ck_assert_int_eq(popc_dataset_label_count(ds), 2);
    popc_dataset_free(ds);
    popc_run_free(r);
    popc_tensor_free(f);
    popc_tensor_free(l);
}
END_TEST

/* ---- bad files ---------------------------------------------------------- */

typedef struct bad_case {
    const char *ini;       /* whole file */
    const char *set;       /* one override or NULL */
    popc_status status;
    const char *want[3];   /* fragments of the message */
} bad_case;

#define MODEL_OK                                                              \
    "[model]\ninput = 64\nclasses = 4\nlayers = fc\n\n"                       \
    "[layer fc]\ntype = linear\nout_features = 4\n"

static const bad_case bad[] = {
    /* 0 */ {"[trian]\nepochs = 1\n" MODEL_OK, NULL, POPC_ECONFIG,
             {":1:", "unknown section [trian]", "did you mean [train]"}},
    /* 1 */ {DATA "batch_sz = 4\n" MODEL_OK, NULL, POPC_ECONFIG,
             {":9:", "[data] unknown key 'batch_sz'", "batch_size"}},
    /* 2 */ {"[data]\nbatch_size = many\n" MODEL_OK, NULL, POPC_ECONFIG,
             {":2:", "[data] batch_size", "integer"}},
    /* 3 */ {"[model]\ninput = 64\nlayers = fc\n[layer fc]\ntype = linear\n"
             "out_features = 4\n",
             NULL, POPC_ECONFIG, {"[model]", "classes", "bad.ini"}},
    /* 4 */ {"[model]\ninput = 64\nclasses = 4\nlayers = fc\n\n"
             "[layer fc]\ntype = lineer\nout_features = 4\n",
             NULL, POPC_ECONFIG,
             {":7:", "unknown layer type 'lineer'", "did you mean 'linear'"}},
    /* 5 */ {"[model]\ninput = 64\nclasses = 4\nlayers = p, fc\n\n"
             "[layer p]\ntype = maxpool2d\nkernel = 2\nout_features = 3\n"
             "[layer fc]\ntype = linear\nout_features = 4\n",
             NULL, POPC_ECONFIG,
             {":9:", "[layer p] unknown key 'out_features'", "kernel"}},
    /* 6 */ {"[model]\ninput = 64\nclasses = 4\nlayers = fc, fc9\n\n"
             "[layer fc]\ntype = linear\nout_features = 4\n",
             NULL, POPC_ECONFIG,
             {":4:", "[model] layers", "no [layer fc9] section"}},
    /* 7 */ {MODEL_OK "[layer fc4]\ntype = linear\nout_features = 4\n", NULL,
             POPC_ECONFIG, {":9:", "[layer fc4] is not used", "layers"}},
    /* 8 */ {"[options]\ndeviceIterations = 0\n" MODEL_OK, NULL, POPC_ECONFIG,
             {"bad.ini", "deviceIterations", NULL}},
    /* 9 */ {"[optimizer]\nname = adam\nlrr = 0.1\n" MODEL_OK, NULL,
             POPC_ECONFIG, {":3:", "[optimizer] lrr", NULL}},
    /* 10 */ {"[optimizer]\nname = adamm\n" MODEL_OK, NULL, POPC_ECONFIG,
              {":2:", "[optimizer] name", "adamm"}},
    /* 11 */ {MODEL_OK, "data.batch_size=x", POPC_ECONFIG,
              {"--set data.batch_size", "[data] batch_size", "integer"}},
    /* 12 */ {MODEL_OK, "batch_size=4", POPC_ECONFIG,
              {"--set batch_size=4", "section.key=value", NULL}},
    /* 13 */ {MODEL_OK, "dat.batch_size=4", POPC_ECONFIG,
              {"--set dat.batch_size", "unknown section [dat]", "[data]"}},
    /* 14 */ {MODEL_OK, "options.deviceIterations=zero", POPC_ECONFIG,
              {"--set options.deviceIterations", NULL, NULL}},
    /* 15 */ {"[data]\nworkers = 2\n" MODEL_OK, NULL, POPC_ECONFIG,
              {":2:", "[data] workers", "mode = async"}},
    /* 16 */ {"[data]\nmean = 0.5\n" MODEL_OK, NULL, POPC_ECONFIG,
              {":2:", "[data] mean", "std"}},
    /* 17 */ {"[data]\nbatch_size = 4\nbatch_size = 5\n" MODEL_OK, NULL,
              POPC_ECONFIG, {"bad.ini", "line 3", NULL}},
    /* 18 */ {"[model]\ninput = 64\nclasses = 4\nlayers = fc, relu, fc\n\n"
              "[layer fc]\ntype = linear\nout_features = 4\n",
              NULL, POPC_ECONFIG, {":4:", "'fc' is listed twice", NULL}},
    /* 19 */ {MODEL_OK "[layer 1x]\ntype = relu\n", NULL, POPC_ECONFIG,
              {":9:", "[layer 1x]", "layer name"}},
    /* 20 */ {"[data]\nbatch_size = 4 ; four\n" MODEL_OK, NULL, POPC_ECONFIG,
              {":2:", "[data] batch_size", NULL}},
    /* 21 */ {"[data]\ntrain = x.idx\n" MODEL_OK, NULL, POPC_ECONFIG,
              {":2:", "[data] train", "train_labels"}},
    /* 22 */ {"[model]\ninput = 64\nclasses = 4\nlayers = fc\nloss = mse\n\n"
              "[layer fc]\ntype = linear\nout_features = 4\n",
              NULL, POPC_ECONFIG, {":5:", "[model] loss", "cross_entropy"}},
    /* 23 */ {"[data]\nmode = async\nrebatched_worker_size = 2\n" MODEL_OK,
              NULL, POPC_ECONFIG,
              {":3:", "rebatched_worker_size", "async_rebatched"}},
    /* 24 */ {MODEL_OK, "layer.fc.kernel=3", POPC_ECONFIG,
              {"--set layer.fc.kernel", "[layer fc] unknown key 'kernel'",
               NULL}},
    /* 25 */ {"[train]\nepochs = 0\n" MODEL_OK, NULL, POPC_ECONFIG,
              {":2:", "[train] epochs", NULL}},
    /* 26 */ {"[infer]\nsplit = validation\n" MODEL_OK, NULL, POPC_ECONFIG,
              {":2:", "[infer] split", "test"}},
    /* 27 */ {MODEL_OK "serialize = sideways\n", NULL, POPC_ECONFIG,
              {":9:", "[layer fc] serialize", "reducing_dim"}},
    /* 28 */ {MODEL_OK "serialize_factor = 2\n", NULL, POPC_ECONFIG,
              {":9:", "serialize_factor and keep_precision apply",
               "serialize = "}},
    /* 29 */ {"[model]\ninput_overlap = sometimes\ninput = 64\nclasses = 4\n"
              "layers = fc\n[layer fc]\ntype = linear\nout_features = 4\n",
              NULL, POPC_ECONFIG,
              {":2:", "[model] input_overlap", "device_iteration_loop"}},
    /* 30 */ {"[model]\ninput = 64\nclasses = 4\nlayers = blk, fc\n"
              "[layer blk]\ntype = loop\ncount = 2\n"
              "[layer fc]\ntype = linear\nout_features = 4\n",
              NULL, POPC_ECONFIG,
              {"[layer blk]", "required key 'body'", NULL}},
    /* 31 */ {"[model]\ninput = 64\nclasses = 4\nlayers = blk, fc\n"
              "[layer blk]\ntype = loop\ncount = 2\nbody = fc\n"
              "[layer fc]\ntype = linear\nout_features = 4\n",
              NULL, POPC_ECONFIG, {"[layer blk] body", "'fc' is used "
              "elsewhere", NULL}},
    /* 32 */ {"[model]\ninput = 64\nclasses = 4\nlayers = blk, fc\n"
              "[layer blk]\ntype = loop\ncount = 2\nbody = h\n"
              "[layer h]\ntype = linear\nout_features = 64\nipu = 1\n"
              "[layer fc]\ntype = linear\nout_features = 4\n",
              NULL, POPC_ECONFIG, {"body layer 'h'", "placement keys",
              "not supported yet"}},
};

START_TEST(bad_files)
{
    const bad_case *c = &bad[_i];
    const char *path = write_ini("bad.ini", c->ini);
    popc_run *r = NULL;
    popc_status st = popc_run_load(path, c->set ? &c->set : NULL,
                                   c->set ? 1 : 0, &r);

    ck_assert_msg(st == c->status, "case %d: status %s, want %s: %s", _i,
                  popc_status_name(st), popc_status_name(c->status),
                  popc_last_error());
    ck_assert_ptr_null(r);
    for (int k = 0; k < 3; k++)
        if (c->want[k])
            ck_assert_msg(strstr(popc_last_error(), c->want[k]),
                          "case %d: '%s' not in '%s'", _i, c->want[k],
                          popc_last_error());
}
END_TEST

/* The attribute `name` of the node producing (or, for an input, first
** reading) value v's Gemm / Identity, as a string or an int. */
static const popc_attr *attr_of(popc_graph *g, int node, const char *name)
{
    static popc_attrs a;

    a = popc_graph_node_attrs(g, node);
    return popc_attrs_find(&a, name);
}

static int gemm_of(popc_graph *g, const char *layer)
{
    for (int k = 0; k < popc_graph_n_nodes(g); k++)
        if (strcmp(popc_graph_node_op(g, k), "Gemm") == 0 &&
            strcmp(popc_graph_node_name(g, k), layer) == 0)
            return k;
    ck_abort_msg("no Gemm '%s'", layer);
    return -1;
}

/* One SGD step of the run's training graph on fixed data; fc1.weight
** after it. */
static popc_tensor *one_step(popc_run *r)
{
    int64_t xd[2] = {8, 64}, ld[1] = {8};
    popc_graph *g = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    popc_tensor *in[2], *loss = NULL, *w;
    const popc_tensor *got;

    OK(popc_run_build_graph(r, 1, 8, &g));
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &in[0]));
    OK(popc_tensor_new(POPC_DTYPE_I32, ld, 1, &in[1]));
    for (int i = 0; i < 8 * 64; i++)
        ((float *)popc_tensor_data(in[0]))[i] = (float)(i % 17) / 17.0f;
    for (int i = 0; i < 8; i++)
        ((int32_t *)popc_tensor_data(in[1]))[i] = i % 4;
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", 0.1));
    OK(popc_model_new_training(g, popc_run_options(r), opt, &m));
    OK(popc_model_run(m, in, 2, &loss, 1));
    OK(popc_model_get_weight(m, "fc1.weight", &got));
    OK(popc_tensor_clone(got, &w));
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_tensor_free(loss);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_graph_free(g);
    return w;
}

START_TEST(serialize_and_overlap_keys)
{
    static const char *const ser[] = {
        "layer.fc1.serialize=reducing_dim", "layer.fc1.serialize_factor=4",
        "layer.fc1.keep_precision=true", "layer.fc2.serialize=output_channels",
        "layer.fc2.serialize_factor=2"};
    static const char *const bad_factor[] = {
        "layer.fc1.serialize=input_channels", "layer.fc1.serialize_factor=3"};
    static const char *const overlap[] = {
        "model.input_overlap=device_iteration_loop",
        "model.output_overlap=accumulation_loop", "options.backend=ipumodel",
        "options.setExecutionStrategy=ShardedExecution"};
    static const char *const io_tiles[] = {
        "model.input_overlap=device_iteration_loop",
        "model.output_overlap=accumulation_loop", "options.backend=ipumodel",
        "options.setExecutionStrategy=ShardedExecution",
        "options.TensorLocations.numIOTiles=32"};
    const char *ini = write_ini("mlp.ini", MLP);
    popc_run *r = load(ini, ser, 5), *plain = load(ini, NULL, 0);
    popc_graph *g = NULL;
    popc_tensor *w, *w0, *x = NULL, *y = NULL;
    popc_model *m = NULL;
    int64_t xd[2] = {8, 64};
    int x_reader = -1;

    /* serialize: the layers' Gemms carry the settings, and train alike */
    OK(popc_run_build_graph(r, 1, 8, &g));
    ck_assert_str_eq(attr_of(g, gemm_of(g, "fc1"), "serialization_mode")->s,
                     "reducing_dim");
    ck_assert_int_eq(attr_of(g, gemm_of(g, "fc1"), "serialization_factor")->i,
                     4);
    ck_assert_int_eq(attr_of(g, gemm_of(g, "fc1"), "keep_precision")->i, 1);
    ck_assert_str_eq(attr_of(g, gemm_of(g, "fc2"), "serialization_mode")->s,
                     "output_channels");
    ck_assert_int_eq(attr_of(g, gemm_of(g, "fc2"), "keep_precision")->i, 0);
    popc_graph_free(g);
    w = one_step(r);
    w0 = one_step(plain);
    ck_assert_msg(popc_tensor_max_abs_diff(w, w0) <= 1e-5, "%g",
                  popc_tensor_max_abs_diff(w, w0));
    popc_tensor_free(w);
    popc_tensor_free(w0);
    popc_run_free(r);
    popc_run_free(plain);
    /* a factor that does not divide the batch of 8 */
    r = load(ini, bad_factor, 2);
    ck_assert_int_eq(popc_run_build_graph(r, 1, 8, &g), POPC_ECONFIG);
    ck_assert_msg(strstr(popc_last_error(), "[layer fc1]") &&
                      strstr(popc_last_error(), "does not divide the "
                             "input_channels dimension (8)"),
                  "%s", popc_last_error());
    popc_run_free(r);

    /* overlap: Identity nodes marked for the input and the output */
    r = load(ini, overlap, 4);
    OK(popc_run_build_graph(r, 0, 8, &g));
    for (int k = 0; k < popc_graph_n_nodes(g); k++)
        if (popc_graph_node_input(g, k, 0) == popc_graph_input(g, 0))
            x_reader = k;
    ck_assert_int_ge(x_reader, 0);
    ck_assert_int_eq(attr_of(g, x_reader, "__overlap_input")->i, 2);
    ck_assert_int_eq(attr_of(g, popc_graph_value_producer(
                                    g, popc_graph_output(g, 0)),
                             "__overlap_output")->i, 1);
    /* without I/O tiles the model does not compile */
    OK(popc_model_new_inference(g, popc_run_options(r), &m));
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &x));
    ck_assert_int_eq(popc_model_run(m, &x, 1, &y, 1), POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "No IO tiles allocated") != NULL,
                  "%s", popc_last_error());
    popc_model_free(m);
    popc_graph_free(g);
    popc_run_free(r);
    r = load(ini, io_tiles, 5);
    OK(popc_run_build_graph(r, 0, 8, &g));
    OK(popc_model_new_inference(g, popc_run_options(r), &m));
    OK(popc_model_run(m, &x, 1, &y, 1));
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_model_free(m);
    popc_graph_free(g);
    popc_run_free(r);
}
END_TEST

/* y = tanh(x W^T + b) in g, W and b given. */
static int fc_tanh(popc_graph *g, int x, int w, int b, int act)
{
    popc_attr tb = {.name = "transB", .type = POPC_ATTR_INT, .i = 1};
    int h, y;

    OK(popc_graph_add_node(g, NULL, "Gemm", 0, (int[]){x, w, b}, 3, &h, 1,
                           &tb, 1, NULL, NULL));
    if (!act)
        return h;
    OK(popc_graph_add_node(g, NULL, act == 1 ? "Relu" : "Tanh", 0, &h, 1, &y,
                           1, NULL, 0, NULL, NULL));
    return y;
}

static int weight_of(popc_graph *dst, popc_graph *src, const char *name)
{
    int v;

    OK(popc_graph_add_initializer(
        dst, name,
        popc_graph_value_tensor(src, popc_graph_find_value(src, name)), 0,
        &v));
    return v;
}

#define LOOP_RUN                                                              \
    "[options]\nbackend = cpu\n\n" DATA "\n"                                  \
    "[model]\ninput = 64\nclasses = 4\nlayers = fc1, relu, blk, fc3\n\n"      \
    "[layer fc1]\ntype = linear\nout_features = 16\n\n"                      \
    "[layer blk]\ntype = loop\ncount = 3\nbody = fc2, tanh\n\n"              \
    "[layer fc2]\ntype = linear\nout_features = 16\n\n"                      \
    "[layer fc3]\ntype = linear\nout_features = 4\n"

/* A loop layer equals its body unrolled count times with shared weights,
** and trains: its body's weights are the model's "blk/fc2.weight". */
START_TEST(loop_layer_runs_its_body_count_times)
{
    popc_run *r = load(write_ini("loop.ini", LOOP_RUN), NULL, 0);
    popc_graph *g = NULL, *u = NULL;
    int64_t xd[2] = {8, 64};
    popc_tensor *x = NULL, *got = NULL, *want = NULL, *w;
    int xv, v, w2, b2, y;

    OK(popc_run_build_graph(r, 0, 8, &g));
    ck_assert_int_ge(popc_graph_find_value(g, "blk/fc2.weight"), 0);
    OK(popc_graph_new("unrolled", &u));
    OK(popc_graph_add_input(u, "x", POPC_DTYPE_F32, xd, 2, &xv));
    v = fc_tanh(u, xv, weight_of(u, g, "fc1.weight"),
                weight_of(u, g, "fc1.bias"), 1);
    w2 = weight_of(u, g, "blk/fc2.weight");
    b2 = weight_of(u, g, "blk/fc2.bias");
    for (int k = 0; k < 3; k++)
        v = fc_tanh(u, v, w2, b2, 2);
    v = fc_tanh(u, v, weight_of(u, g, "fc3.weight"),
                weight_of(u, g, "fc3.bias"), 0);
    OK(popc_graph_add_output(u, v));
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &x));
    for (int i = 0; i < 8 * 64; i++)
        ((float *)popc_tensor_data(x))[i] = (float)(i % 13) / 13.0f - 0.4f;
    y = popc_graph_output(g, 0);
    OK(popc_graph_eval(g, &x, 1, &y, 1, &got, 0, 0));
    y = popc_graph_output(u, 0);
    OK(popc_graph_eval(u, &x, 1, &y, 1, &want, 0, 0));
    ck_assert_msg(popc_tensor_max_abs_diff(got, want) <= 1e-6, "%g",
                  popc_tensor_max_abs_diff(got, want));
    /* one training step moves the body's weights */
    OK(popc_tensor_clone(popc_graph_value_tensor(
                             g, popc_graph_find_value(g, "blk/fc2.weight")),
                         &w));
    {
        int64_t ld[1] = {8};
        popc_graph *t = NULL;
        popc_optimizer *opt = NULL;
        popc_model *m = NULL;
        popc_tensor *in[2] = {x, NULL}, *loss = NULL;
        const popc_tensor *after;

        OK(popc_run_build_graph(r, 1, 8, &t));
        OK(popc_tensor_new(POPC_DTYPE_I32, ld, 1, &in[1]));
        OK(popc_optimizer_new("sgd", &opt));
        OK(popc_optimizer_set(opt, "lr", 0.5));
        OK(popc_model_new_training(t, popc_run_options(r), opt, &m));
        OK(popc_model_run(m, in, 2, &loss, 1));
        OK(popc_model_get_weight(m, "blk/fc2.weight", &after));
        ck_assert(popc_tensor_max_abs_diff(after, w) > 1e-6);
        popc_tensor_free(in[1]);
        popc_tensor_free(loss);
        popc_model_free(m);
        popc_optimizer_free(opt);
        popc_graph_free(t);
    }
    popc_tensor_free(w);
    popc_tensor_free(x);
    popc_tensor_free(got);
    popc_tensor_free(want);
    popc_graph_free(g);
    popc_graph_free(u);
    popc_run_free(r);
}
END_TEST

/* The largest IPU any node of g is annotated with (-1: none). */
static int max_ipu(const popc_graph *g)
{
    int m = -1;

    for (int k = 0; k < popc_graph_n_nodes(g); k++)
        if (popc_graph_node_annotations(g, k).ipu > m)
            m = popc_graph_node_annotations(g, k).ipu;
    return m;
}

START_TEST(remove_blocks_key)
{
    static const char *const two[] = {"layer.fc2.ipu=1"};
    static const char *const one[] = {"layer.fc2.ipu=1",
                                      "model.remove_blocks=true"};
    const char *ini = write_ini("mlp.ini", MLP);
    popc_run *r = load(ini, two, 1);
    popc_graph *g = NULL;

    OK(popc_run_build_graph(r, 1, 8, &g));
    ck_assert_int_eq(max_ipu(g), 1);
    popc_graph_free(g);
    popc_run_free(r);
    r = load(ini, one, 2);
    OK(popc_run_build_graph(r, 1, 8, &g));
    ck_assert_int_eq(max_ipu(g), -1);
    popc_graph_free(g);
    popc_run_free(r);
}
END_TEST

START_TEST(shape_errors_name_the_layer)
{
    static const char conv_flat[] =
        "[model]\ninput = 64\nclasses = 4\nlayers = c, flatten, fc\n\n"
        "[layer c]\ntype = conv2d\nout_channels = 2\nkernel = 3\n\n"
        "[layer fc]\ntype = linear\nout_features = 4\n";
    static const char wrong_classes[] =
        "[model]\ninput = 64\nclasses = 4\nlayers = fc\n\n"
        "[layer fc]\ntype = linear\nout_features = 5\n";
    static const char bad_shape[] =
        "[data]\ntrain = " SYNTH_TRAIN_IMAGES "\ntrain_labels = "
        SYNTH_TRAIN_LABELS "\n\n"
        "[model]\ninput = 1, 9, 9\nclasses = 4\nlayers = flatten, fc\n\n"
        "[layer fc]\ntype = linear\nout_features = 4\n";
    static const char few_classes[] =
        "[data]\ntrain = " SYNTH_TRAIN_IMAGES "\ntrain_labels = "
        SYNTH_TRAIN_LABELS "\n\n"
        "[model]\ninput = 64\nclasses = 3\nlayers = fc\n\n"
        "[layer fc]\ntype = linear\nout_features = 3\n";
    popc_run *r;
    popc_graph *g = NULL;
    popc_dataset *ds = NULL;
    popc_status st;

    r = load(write_ini("a.ini", conv_flat), NULL, 0);
    st = popc_run_build_graph(r, 0, 2, &g);
    ck_assert_int_eq(st, POPC_ECONFIG);
    ck_assert_msg(strstr(popc_last_error(), "a.ini:7: [layer c]"), "%s",
                  popc_last_error());
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "[2, 64]"));
    ck_assert_ptr_null(g);
    popc_run_free(r);

    r = load(write_ini("b.ini", wrong_classes), NULL, 0);
    st = popc_run_build_graph(r, 0, 2, &g);
    ck_assert_int_eq(st, POPC_ECONFIG);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "b.ini:3: [model] "
                                                    "classes"));
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "[2, 5]"));
    popc_run_free(r);

    r = load(write_ini("c.ini", bad_shape), NULL, 0);
    st = popc_run_load_dataset(r, POPC_SPLIT_TRAIN, &ds);
    ck_assert_int_eq(st, POPC_ECONFIG);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "c.ini:6: [model] "
                                                    "input"));
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "[1, 9, 9]"));
    popc_run_free(r);

    r = load(write_ini("d.ini", few_classes), NULL, 0);
    st = popc_run_load_dataset(r, POPC_SPLIT_TRAIN, &ds);
    ck_assert_int_eq(st, POPC_ECONFIG);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "[model] classes"));
    ck_assert_ptr_nonnull(strstr(popc_last_error(), SYNTH_TRAIN_LABELS));
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "out of range"));
    popc_run_free(r);

    /* a missing file is a runtime error naming it */
    r = load(write_ini("e.ini", "[data]\ntrain = nope.idx\ntrain_labels = "
                                "nope2.idx\n" MODEL_OK),
             NULL, 0);
    st = popc_run_load_dataset(r, POPC_SPLIT_TRAIN, &ds);
    ck_assert_int_eq(st, POPC_EIO);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), tmp("nope.idx")));
    popc_run_free(r);
}
END_TEST

/* ---- training ----------------------------------------------------------- */

typedef struct stopper {
    volatile sig_atomic_t stop;
    int64_t after;
    int64_t steps, epochs, checkpoints;
} stopper;

static void on_progress(const popc_train_progress *p, void *user)
{
    stopper *s = user;

    if (p->event == POPC_TRAIN_STEP) {
        s->steps++;
        ck_assert_int_le(p->step, p->steps_per_epoch);
        if (s->after && p->global_step == s->after)
            s->stop = 1;
    } else if (p->event == POPC_TRAIN_EPOCH_END) {
        s->epochs++;
        ck_assert(p->test_accuracy >= 0 && p->test_accuracy <= 1);
    } else {
        s->checkpoints++;
    }
}

/* Every .npy file of two weights directories is bitwise equal. */
static void same_weights(const char *a, const char *b)
{
    DIR *d = opendir(a);
    struct dirent *e;
    int n = 0;

    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d))) {
        char pa[1200], pb[1200];
        popc_tensor *ta = NULL, *tb = NULL;

        if (!strstr(e->d_name, ".npy"))
            continue;
        snprintf(pa, sizeof pa, "%s/%s", a, e->d_name);
        snprintf(pb, sizeof pb, "%s/%s", b, e->d_name);
        OK(popc_npy_load(pa, &ta));
        OK(popc_npy_load(pb, &tb));
        ck_assert_msg(popc_tensor_equal(ta, tb), "%s differs", e->d_name);
        popc_tensor_free(ta);
        popc_tensor_free(tb);
        n++;
    }
    closedir(d);
    ck_assert_int_eq(n, 4);
}

/* async: load with worker threads (the same batches as sync mode). */
static popc_status train(const char *ini, const char *out, stopper *s,
                         int64_t every, int resume, int async,
                         popc_train_result *res)
{
    char w[700], m[700], c[700];
    const char *sets[5] = {w, m, c, "data.mode=async", "data.workers=2"};
    popc_run *r;
    popc_train_hooks h;
    popc_status st;

    snprintf(w, sizeof w, "train.weights=%s.weights", tmp(out));
    snprintf(m, sizeof m, "train.model=%s.model.ini", tmp(out));
    snprintf(c, sizeof c, "train.checkpoint=%s.ckpt", tmp(out));
    r = load(ini, sets, async ? 5 : 3);
    memset(&h, 0, sizeof h);
    h.progress = on_progress;
    h.user = s;
    h.stop = &s->stop;
    h.checkpoint_every = every;
    h.resume = resume;
    st = popc_run_train(r, &h, res);
    popc_run_free(r);
    return st;
}

START_TEST(train_checkpoint_resume_is_bitwise)
{
    const char *ini = write_ini("mlp.ini", MLP);
    stopper s = {0};
    popc_train_result res;
    char a[700], b[700];

    /* uninterrupted: 2 epochs of 32 steps */
    OK(train(ini, "full", &s, 0, 0, 0, &res));
    ck_assert_int_eq(res.steps, 64);
    ck_assert_int_eq(res.epochs, 2);
    ck_assert_int_eq(s.steps, 64);
    ck_assert_int_eq(s.epochs, 2);
    ck_assert_int_eq(s.checkpoints, 0);
    ck_assert(res.test_accuracy > 0.6);
    ck_assert_ptr_null(res.checkpoint);

    /* stopped after step 37 (in epoch 2), checkpoints every 5 steps */
    memset(&s, 0, sizeof s);
    s.after = 37;
    ck_assert_int_eq(train(ini, "part", &s, 5, 0, 0, &res),
                     POPC_EINTERRUPTED);
    ck_assert_int_eq(res.steps, 37);
    ck_assert_int_eq(s.checkpoints, 8);
    ck_assert_int_eq(access(tmp("part.weights"), F_OK), -1);

    /* resumed, loading asynchronously: the rest of the run */
    memset(&s, 0, sizeof s);
    OK(train(ini, "part", &s, 5, 1, 1, &res));
    ck_assert_int_eq(res.resumed_step, 37);
    ck_assert_int_eq(res.steps, 64);
    ck_assert_int_eq(s.steps, 64 - 37);
    ck_assert_int_eq(s.epochs, 1);
    snprintf(a, sizeof a, "%s", tmp("full.weights"));
    snprintf(b, sizeof b, "%s", tmp("part.weights"));
    same_weights(a, b);

    /* a checkpoint of other settings is refused */
    {
        char set[700];
        const char *sets[2] = {set, "data.seed=4"};
        popc_train_hooks h = {0};
        popc_run *r;

        snprintf(set, sizeof set, "train.checkpoint=%s", tmp("part.ckpt"));
        r = load(ini, sets, 2);
        h.resume = 1;
        ck_assert_int_eq(popc_run_train(r, &h, &res), POPC_ECONFIG);
        ck_assert_ptr_nonnull(strstr(popc_last_error(), "other settings"));
        popc_run_free(r);
    }
}
END_TEST

/* A training model for the run's settings (batch size of [data]). */
static popc_model *run_training_model(popc_run *r)
{
    popc_graph *g = NULL;
    popc_model *m = NULL;

    OK(popc_run_build_graph(r, 1, popc_run_batch_size(r), &g));
    OK(popc_model_new_training(g, popc_run_options(r), popc_run_optimizer(r),
                               &m));
    popc_graph_free(g);
    return m;
}

/* popc_checkpoint_load sets weights and optimizer state from a checkpoint
** popc_run_train wrote; a damaged checkpoint leaves the model unchanged. */
START_TEST(checkpoint_load_api)
{
    const char *ini = write_ini("mlp.ini", MLP);
    stopper s = {0};
    popc_train_result res;
    popc_run *r;
    popc_model *m;
    popc_tensor *adam = NULL;
    int64_t step = -1;
    char w[700], broken[700], cmd[3000];

    s.after = 7;
    ck_assert_int_eq(train(ini, "ck", &s, 5, 0, 0, &res), POPC_EINTERRUPTED);
    r = load(ini, NULL, 0);
    m = run_training_model(r);
    OK(popc_checkpoint_load(m, tmp("ck.ckpt"), &step));
    ck_assert_int_eq(step, 7); /* stopping writes a checkpoint too */
    snprintf(w, sizeof w, "%s", tmp("loaded.weights"));
    OK(popc_weights_save(m, w));
    snprintf(cmd, sizeof cmd, "%s/weights", tmp("ck.ckpt"));
    same_weights(cmd, w);
    /* R4.6: before the compile the optimizer state does not exist; the
    ** resume holds it, and the compile starts from it */
    ck_assert_int_eq(popc_model_get_optimizer_state(m, "fc1.weight/step",
                                                    &adam), POPC_ESTATE);
    ck_assert_str_eq(popc_last_error(),
                     "optimizer state 'fc1.weight/step': the model has not "
                     "been compiled, and the optimizer state does not exist "
                     "before the compile; compile or run the model first (a "
                     "state set before, as by a resume, is held and loaded "
                     "at the compile)");
    ck_assert_int_eq(popc_model_steps(m), 7);
    {
        int64_t xd[2] = {8, 64}, yd[1] = {8};
        popc_tensor *in[2] = {NULL, NULL}, *saved = NULL;

        OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &in[0]));
        OK(popc_tensor_new(POPC_DTYPE_I32, yd, 1, &in[1]));
        OK(popc_model_compile(m, in, 2));
        popc_tensor_free(in[0]);
        popc_tensor_free(in[1]);
        snprintf(cmd, sizeof cmd, "%s/optimizer/fc1.weight%%2Fexp_avg.npy",
                 tmp("ck.ckpt"));
        OK(popc_npy_load(cmd, &saved));
        OK(popc_model_get_optimizer_state(m, "fc1.weight/exp_avg", &adam));
        ck_assert(popc_tensor_equal(adam, saved));
        popc_tensor_free(adam);
        popc_tensor_free(saved);
    }
    OK(popc_model_get_optimizer_state(m, "fc1.weight/step", &adam));
    ck_assert_int_eq(((const int64_t *)popc_tensor_data(adam))[0], 7);
    popc_tensor_free(adam);

    /* the last optimizer file cut short: refused, naming it, and the
    ** weights already read are not set */
    snprintf(broken, sizeof broken, "%s", tmp("bad.ckpt"));
    snprintf(cmd, sizeof cmd,
             "cp -r '%s' '%s' && truncate -s 100 "
             "'%s/optimizer/fc2.bias%%2Fexp_avg_sq.npy' && "
             "cp '%s/weights/fc1.bias.npy' '%s/weights/fc2.bias.npy'",
             tmp("ck.ckpt"), broken, broken, tmp("ck.ckpt"), broken);
    ck_assert_int_eq(system(cmd), 0);
    popc_model_free(m);
    m = run_training_model(r);
    OK(popc_weights_save(m, tmp("before.weights")));
    ck_assert_int_eq(popc_checkpoint_load(m, broken, &step), POPC_EIO);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "fc2.bias"));
    OK(popc_weights_save(m, tmp("after.weights")));
    snprintf(w, sizeof w, "%s", tmp("before.weights"));
    same_weights(w, tmp("after.weights"));

    /* a negative step is not read as 2^64 - 1 */
    snprintf(cmd, sizeof cmd,
             "cp -r '%s' '%s' && sed -i 's/^step = .*/step = -1/' "
             "'%s/state.ini'", tmp("ck.ckpt"), tmp("neg.ckpt"),
             tmp("neg.ckpt"));
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(popc_checkpoint_load(m, tmp("neg.ckpt"), &step),
                     POPC_EIO);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "[checkpoint] step"));
    popc_model_free(m);
    popc_run_free(r);
}
END_TEST

/* libpopc alone does not read ONNX: a run naming an ONNX model says how to
** register the format instead of failing obscurely. */
START_TEST(onnx_model_needs_the_onnx_layer)
{
    const char *ini = write_ini("onnx.ini",
                                "[options]\nbackend = cpu\n" DATA
                                "[model]\ninput = 64\nclasses = 4\n"
                                "onnx = model.onnx\n");
    popc_run *r = load(ini, NULL, 0);
    popc_graph *g = NULL;

    ck_assert_int_eq(popc_run_build_graph(r, 1, 8, &g), POPC_ECONFIG);
    ck_assert_ptr_null(g);
    ck_assert_ptr_nonnull(strstr(popc_last_error(),
                                 "popc_onnx_register_run_format()"));
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "onnx.ini:"));
    popc_run_free(r);
}
END_TEST

/* [nodes PREFIX] sections reach the model format's reader as PopTorch
** annotations, in file order ("*" is every node), and [model] labels
** names the labels input. */
static popc_run_annotation seen[4];
static int n_seen = -1, seen_training = -1;

static popc_status fake_read(const char *path, int64_t batch_size,
                             int training, const char *output_name,
                             const popc_run_annotation *annotations,
                             int n_annotations, popc_graph **out, int *output)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int64_t d[2] = {batch_size, 64};
    int x;
    popc_status st;

    (void)path;
    (void)output_name;
    n_seen = n_annotations;
    seen_training = training;
    for (int i = 0; i < n_annotations && i < 4; i++)
        seen[i] = annotations[i];
    if ((st = popc_graph_new("fake", &g)) ||
        (st = popc_graph_add_input(g, "x", POPC_DTYPE_F32, d, 2, &x)) ||
        (st = popc_layers_new(g, 1, &L)) ||
        (st = popc_nn_linear(L, "fc", x, 64, 4, 1, output))) {
        popc_layers_free(L);
        popc_graph_free(g);
        return st;
    }
    popc_layers_free(L);
    *out = g;
    return POPC_OK;
}

static popc_status fake_write(popc_model *m, const char *path)
{
    (void)m;
    (void)path;
    return POPC_OK;
}

START_TEST(nodes_sections_reach_the_model_reader)
{
    static const popc_run_model_format fake = {"onnx", fake_read,
                                               fake_write};
    const char *ini = write_ini(
        "nodes.ini", "[options]\nbackend = cpu\n" DATA
                     "[model]\ninput = 64\nclasses = 4\nonnx = m.onnx\n"
                     "labels = target\n"
                     "[nodes *]\nipu = 0\nstage = 0\n"
                     "[nodes /enc/layer1]\nipu = 1\nstage = 2\nphase = 3\n"
                     "recompute = true\n"
                     "available_memory_proportion = 0.25\n");
    popc_run *r = load(ini, NULL, 0);
    popc_graph *g = NULL;

    OK(popc_run_register_model_format(&fake));
    OK(popc_run_build_graph(r, 1, 8, &g));
    ck_assert_int_eq(seen_training, 1);
    ck_assert_int_eq(n_seen, 2);
    ck_assert_str_eq(seen[0].prefix, "");
    ck_assert_int_eq(seen[0].annot.ipu, 0);
    ck_assert_int_eq(seen[0].annot.stage, 0);
    ck_assert_int_eq(seen[0].annot.phase, -1);
    ck_assert_int_eq(seen[0].annot.recompute, -1);
    ck_assert(seen[0].annot.available_memory == 0.0);
    ck_assert_str_eq(seen[1].prefix, "/enc/layer1");
    ck_assert_int_eq(seen[1].annot.ipu, 1);
    ck_assert_int_eq(seen[1].annot.stage, 2);
    ck_assert_int_eq(seen[1].annot.phase, 3);
    ck_assert_int_eq(seen[1].annot.recompute, 1);
    ck_assert(seen[1].annot.available_memory == 0.25);
    /* [model] labels names the labels input popc adds */
    ck_assert_int_eq(popc_graph_n_inputs(g), 2);
    ck_assert_str_eq(popc_graph_value_name(g, popc_graph_input(g, 1)),
                     "target");
    /* the loss joins the block of the node computing the output */
    ck_assert_int_eq(popc_graph_node_annotations(
                         g, popc_graph_n_nodes(g) - 1).ipu,
                     -1); /* the fake read annotated nothing itself */
    popc_graph_free(g);
    /* evaluation, inference and export read the file in eval mode */
    OK(popc_run_build_graph(r, 0, 8, &g));
    ck_assert_int_eq(seen_training, 0);
    popc_graph_free(g);
    popc_run_free(r);
}
END_TEST

START_TEST(model_ini_runs_inference)
{
    const char *ini = write_ini("mlp.ini", MLP);
    stopper s = {0};
    popc_train_result res;
    popc_infer_result inf;
    popc_run *r;
    popc_tensor *pred = NULL;
    char set[700];
    const char *sets[] = {set};

    OK(train(ini, "out", &s, 0, 0, 0, &res));
    /* the model INI written by training runs as it is */
    snprintf(set, sizeof set, "infer.predictions=%s", tmp("pred.npy"));
    r = load(tmp("out.model.ini"), sets, 1);
    OK(popc_run_infer(r, NULL, &inf));
    ck_assert_int_eq(inf.samples, 64);
    ck_assert_double_eq_tol(inf.accuracy, res.test_accuracy, 1e-12);
    ck_assert_int_eq(inf.correct, (int64_t)(inf.accuracy * 64 + 0.5));
    OK(popc_npy_load(tmp("pred.npy"), &pred));
    ck_assert_int_eq(popc_tensor_numel(pred), 64);
    ck_assert_int_eq(popc_tensor_dtype(pred), POPC_DTYPE_I32);
    popc_tensor_free(pred);
    popc_run_free(r);

    /* weights of another model are refused, naming the file */
    {
        const char *bigger[] = {set, "layer.fc1.out_features=9"};
        popc_status st;

        r = load(tmp("out.model.ini"), bigger, 2);
        st = popc_run_infer(r, NULL, &inf);
        ck_assert_int_eq(st, POPC_EIO);
        ck_assert_ptr_nonnull(strstr(popc_last_error(), "fc1."));
        ck_assert_ptr_nonnull(strstr(popc_last_error(), "another model"));
        popc_run_free(r);
    }
}
END_TEST

static Suite *run_suite(void)
{
    Suite *s = suite_create("run_ini");
    TCase *ini = tcase_create("ini");
    TCase *tr = tcase_create("train");

    tcase_add_checked_fixture(ini, setup, teardown);
    tcase_add_test(ini, good_mlp);
    tcase_add_test(ini, overrides);
    tcase_add_test(ini, cnn_layers);
    tcase_add_test(ini, layer_defaults_reach_the_graph);
    tcase_add_test(ini, csv_and_npy_data);
    tcase_add_loop_test(ini, bad_files, 0,
                        (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(ini, shape_errors_name_the_layer);
    tcase_add_test(ini, serialize_and_overlap_keys);
    tcase_add_test(ini, loop_layer_runs_its_body_count_times);
    tcase_add_test(ini, remove_blocks_key);
    tcase_set_timeout(ini, 60);
    suite_add_tcase(s, ini);

    tcase_add_checked_fixture(tr, setup, teardown);
    tcase_add_test(tr, train_checkpoint_resume_is_bitwise);
    tcase_add_test(tr, model_ini_runs_inference);
    tcase_add_test(tr, checkpoint_load_api);
    tcase_add_test(tr, onnx_model_needs_the_onnx_layer);
    tcase_add_test(tr, nodes_sections_reach_the_model_reader);
    tcase_set_timeout(tr, 300);
    suite_add_tcase(s, tr);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(run_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
