/* check_onnx.c - the ONNX reader (libpopc-onnx): TensorProto of every
** dtype through the typed fields and raw_data, float16/bfloat16 bits,
** size claims checked before allocating, external data (and its escape
** refused), unbound symbolic dimensions, values nothing defines, every
** unsupported op listed at once, old opset forms upgraded (Reshape-1,
** Slice-1, Pad-2, Softmax-11 on a middle axis) with values checked by
** hand, trainable initializers, annotations by node-name prefix, eval
** mode (PyTorch's model.eval() of a training export), candidate inputs
** frozen only when the graph needs them at compile time, and a
** TensorProto file round trip. Fixtures: tests/data/onnx/gen_fixtures.py.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <check.h>

#include "popc/onnx.h"
#include "popc/popc.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

static const char *data(const char *name)
{
    static char p[4][1024];
    static int k;

    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/onnx/%s", getenv("POPC_TEST_DATA"),
             name);
    return p[k];
}

static void refused(popc_status st, popc_status want, const char *a,
                    const char *b)
{
    ck_assert_msg(st == want, "status %s, want %s: %s", popc_status_name(st),
                  popc_status_name(want), popc_last_error());
    ck_assert_msg(strstr(popc_last_error(), a), "'%s' not in '%s'", a,
                  popc_last_error());
    if (b)
        ck_assert_msg(strstr(popc_last_error(), b), "'%s' not in '%s'", b,
                      popc_last_error());
}

static double elem(const popc_tensor *t, int64_t i)
{
    const void *p = popc_tensor_cdata(t);

    switch (popc_tensor_dtype(t)) {
    case POPC_DTYPE_F32: return ((const float *)p)[i];
    case POPC_DTYPE_F64: return ((const double *)p)[i];
    case POPC_DTYPE_F16: return popc_f16_to_f32(((const uint16_t *)p)[i]);
    case POPC_DTYPE_I8: return ((const int8_t *)p)[i];
    case POPC_DTYPE_I16: return ((const int16_t *)p)[i];
    case POPC_DTYPE_I32: return ((const int32_t *)p)[i];
    case POPC_DTYPE_I64: return (double)((const int64_t *)p)[i];
    case POPC_DTYPE_U8: case POPC_DTYPE_BOOL: return ((const uint8_t *)p)[i];
    case POPC_DTYPE_U16: return ((const uint16_t *)p)[i];
    case POPC_DTYPE_U32: return ((const uint32_t *)p)[i];
    case POPC_DTYPE_U64: return (double)((const uint64_t *)p)[i];
    default: return NAN;
    }
}

/* ---- tensors ---------------------------------------------------------------- */

START_TEST(every_dtype_typed_and_raw)
{
    static const struct {
        const char *name;
        popc_dtype dt;
        double minus_one;   /* how -1 reads back */
    } cases[] = {
        {"float", POPC_DTYPE_F32, -1},      {"double", POPC_DTYPE_F64, -1},
        {"int8", POPC_DTYPE_I8, -1},        {"int16", POPC_DTYPE_I16, -1},
        {"int32", POPC_DTYPE_I32, -1},      {"int64", POPC_DTYPE_I64, -1},
        {"uint8", POPC_DTYPE_U8, 255},      {"uint16", POPC_DTYPE_U16, 65535},
        {"uint32", POPC_DTYPE_U32, 4294967295.0},
        {"uint64", POPC_DTYPE_U64, 18446744073709551615.0},
        {"bool", POPC_DTYPE_BOOL, 1},
    };

    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int raw = 0; raw < 2; raw++) {
            char file[64];
            popc_tensor *t = NULL;
            char *name = NULL;
            const double want[5] = {0, 1, cases[c].dt == POPC_DTYPE_BOOL
                                             ? 1
                                             : 2,
                                    cases[c].dt == POPC_DTYPE_BOOL ? 1 : 3,
                                    cases[c].minus_one};

            snprintf(file, sizeof file, "%s_%s.pb", cases[c].name,
                     raw ? "raw" : "typed");
            OK(popc_onnx_read_tensor(data(file), &t, &name));
            ck_assert_int_eq(popc_tensor_dtype(t), cases[c].dt);
            ck_assert_int_eq(popc_tensor_numel(t), 5);
            ck_assert_str_eq(name, cases[c].name);
            for (int i = 0; i < 5; i++)
                ck_assert_msg(elem(t, i) == want[i], "%s element %d: %g, "
                              "want %g", file, i, elem(t, i), want[i]);
            popc_tensor_free(t);
            free(name);
        }
}
END_TEST

START_TEST(half_and_bfloat16_bits)
{
    popc_tensor *t = NULL;
    const uint16_t *b;

    OK(popc_onnx_read_tensor(data("float16_typed.pb"), &t, NULL));
    ck_assert_int_eq(popc_tensor_dtype(t), POPC_DTYPE_F16);
    ck_assert(elem(t, 0) == 1.0 && elem(t, 1) == -2.0 && elem(t, 2) == 0.5);
    popc_tensor_free(t);
    OK(popc_onnx_read_tensor(data("bfloat16_typed.pb"), &t, NULL));
    ck_assert_int_eq(popc_tensor_dtype(t), POPC_DTYPE_BF16);
    b = popc_tensor_cdata(t);
    ck_assert(b[0] == 0x3F80 && b[1] == 0xC000 && b[2] == 0x3F00);
    popc_tensor_free(t);
}
END_TEST

START_TEST(size_claims_are_checked_before_allocating)
{
    popc_tensor *t = (popc_tensor *)1;

    refused(popc_onnx_read_tensor(data("huge_claim.pb"), &t, NULL), POPC_EIO,
            "huge_claim.pb", "needs 4398046511104 bytes of float data but 8");
    ck_assert_ptr_null(t);
    refused(popc_onnx_read_tensor(data("short_typed.pb"), &t, NULL),
            POPC_EIO, "needs 16 bytes", "8 are present");
    refused(popc_onnx_read_tensor(data("no_such.pb"), &t, NULL), POPC_EIO,
            "no_such.pb: cannot open", NULL);
}
END_TEST

START_TEST(tensor_file_round_trip)
{
    char path[] = "/tmp/popc-onnx-XXXXXX";
    int fd = mkstemp(path);
    popc_tensor *a = NULL, *b = NULL;
    char *name = NULL;
    int64_t d[2] = {2, 3};
    const double v[6] = {1.5, -2, 0, 3e10, -1e-5, 7};

    ck_assert_int_ge(fd, 0);
    close(fd);
    OK(popc_tensor_from_data(POPC_DTYPE_F64, d, 2, v, &a));
    OK(popc_onnx_write_tensor(path, a, "w"));
    OK(popc_onnx_read_tensor(path, &b, &name));
    ck_assert(popc_tensor_equal(a, b));
    ck_assert_str_eq(name, "w");
    unlink(path);
    free(name);
    popc_tensor_free(a);
    popc_tensor_free(b);
}
END_TEST

/* ---- models ------------------------------------------------------------------- */

static popc_graph *import(const char *file, const int64_t *dims, int rank)
{
    popc_onnx_import_options o;
    const char *names[1] = {"x"};
    popc_view shape;
    popc_graph *g = NULL;

    popc_onnx_import_options_init(&o);
    memset(&shape, 0, sizeof shape);
    if (dims) {
        shape.dtype = POPC_DTYPE_F32;
        shape.rank = rank;
        memcpy(shape.dims, dims, sizeof(int64_t) * (size_t)rank);
        o.n_shapes = 1;
        o.shape_names = names;
        o.shapes = &shape;
    }
    OK(popc_onnx_import_file(data(file), &o, &g));
    return g;
}

/* y for x = 0, 1, 2, ... of the given shape. */
static popc_tensor *run_iota(const popc_graph *g, const int64_t *dims,
                             int rank)
{
    popc_tensor *x = NULL, *y = NULL;
    int out = popc_graph_output(g, 0);

    OK(popc_tensor_new(POPC_DTYPE_F32, dims, rank, &x));
    for (int64_t i = 0; i < popc_tensor_numel(x); i++)
        ((float *)popc_tensor_data(x))[i] = (float)i;
    OK(popc_graph_eval(g, &x, 1, &out, 1, &y, 0, 0));
    popc_tensor_free(x);
    return y;
}

START_TEST(external_data_is_read_from_the_model_folder)
{
    int64_t d[2] = {2, 3};
    popc_graph *g = import("external.onnx", NULL, 0);
    popc_tensor *y = run_iota(g, d, 2);
    popc_onnx_import_options o;
    popc_graph *bad = (popc_graph *)1;

    /* y = x + w, w = 0..5 stored after 16 bytes of padding */
    for (int i = 0; i < 6; i++)
        ck_assert(elem(y, i) == 2.0 * i);
    popc_tensor_free(y);
    ck_assert_str_eq(popc_graph_origin(g), data("external.onnx"));
    popc_graph_free(g);
    popc_onnx_import_options_init(&o);
    refused(popc_onnx_import_file(data("external_escape.onnx"), &o, &bad),
            POPC_EIO, "'../w.bin' leaves the model's folder", NULL);
    ck_assert_ptr_null(bad);
}
END_TEST

START_TEST(initializers_trainable_on_request)
{
    popc_onnx_import_options o;
    popc_graph *g = NULL;
    int w;

    popc_onnx_import_options_init(&o);
    o.trainable = 1;
    OK(popc_onnx_import_file(data("external.onnx"), &o, &g));
    w = popc_graph_find_value(g, "w");
    ck_assert_int_eq(popc_graph_value_kind(g, w), POPC_VALUE_INITIALIZER);
    ck_assert(popc_graph_value_trainable(g, w));
    popc_graph_free(g);
    g = import("external.onnx", NULL, 0);
    w = popc_graph_find_value(g, "w");
    ck_assert_int_eq(popc_graph_value_kind(g, w), POPC_VALUE_CONSTANT);
    popc_graph_free(g);
}
END_TEST

START_TEST(bad_models_are_refused_by_name)
{
    popc_onnx_import_options o;
    popc_graph *g = (popc_graph *)1;
    int64_t d[2] = {4, 3};

    popc_onnx_import_options_init(&o);
    refused(popc_onnx_import_file(data("missing_input.onnx"), &o, &g),
            POPC_EIO, "reads 'nope', which no graph input", NULL);
    ck_assert_ptr_null(g);
    refused(popc_onnx_import_file(data("symbolic.onnx"), &o, &g),
            POPC_EINVAL, "graph input 'x': dimension 0 is symbolic ('batch')",
            "bind it");
    g = import("symbolic.onnx", d, 2);
    ck_assert_int_eq(popc_graph_value_info(g, popc_graph_input(g, 0)).dims[0],
                     4);
    popc_graph_free(g);
    refused(popc_onnx_import_file(data("unsupported.onnx"), &o, &g),
            POPC_EUNSUPPORTED, "node 'na': op NoSuchOpA, domain ai.onnx, "
            "opset 13", "node 'nb': op NoSuchOpB");
    refused(popc_onnx_import_file(data("no_such.onnx"), &o, &g), POPC_EIO,
            "cannot open", NULL);
    refused(popc_onnx_import_bytes("garbage", 7, "mem.onnx", NULL, &o, &g),
            POPC_EIO, "mem.onnx: not a valid ONNX model", NULL);
}
END_TEST

/* Sequences are lists of values at import: split, erase, at, insert at
** -1, length and stack give y = 3 * x[:, {2, 3, 4, 4}] (worked by hand
** from ONNX's definitions). */
START_TEST(sequences_resolved_at_import)
{
    int64_t d[2] = {2, 5};
    static const int cols[4] = {2, 3, 4, 4};
    float xv[10];
    popc_onnx_import_options o;
    popc_graph *g = import("seq_split_stack.onnx", NULL, 0), *bad = NULL;
    popc_tensor *x = NULL, *y = NULL;
    int out = popc_graph_output(g, 0);

    for (int i = 0; i < 10; i++)
        xv[i] = (float)i * 0.5f - 1.0f;
    OK(popc_tensor_new(POPC_DTYPE_F32, d, 2, &x));
    memcpy(popc_tensor_data(x), xv, sizeof xv);
    OK(popc_graph_eval(g, &x, 1, &out, 1, &y, 0, 0));
    ck_assert_int_eq(popc_tensor_dims(y)[0], 2);
    ck_assert_int_eq(popc_tensor_dims(y)[1], 4);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++)
            ck_assert_float_eq(elem(y, i * 4 + j), 3.0f * xv[i * 5 + cols[j]]);
    popc_onnx_import_options_init(&o);
    refused(popc_onnx_import_file(data("seq_output.onnx"), &o, &bad),
            POPC_EUNSUPPORTED, "graph output 's' is a sequence", NULL);
    refused(popc_onnx_import_file(data("seq_runtime_pos.onnx"), &o, &bad),
            POPC_EUNSUPPORTED, "the position 'p' is not known at import",
            "frozen input");
    refused(popc_onnx_import_file(data("seq_bad_pos.onnx"), &o, &bad),
            POPC_EINVAL, "node 'at' (SequenceAt): position 5 is outside the "
            "sequence of 2 elements", NULL);
    ck_assert_ptr_null(bad);
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_graph_free(g);
}
END_TEST

START_TEST(old_opset_forms_are_upgraded)
{
    int64_t d[3] = {2, 3, 4};
    popc_graph *g;
    popc_tensor *y;

    /* Reshape-1: shape attribute */
    g = import("reshape1.onnx", NULL, 0);
    y = run_iota(g, d, 3);
    ck_assert_int_eq(popc_tensor_rank(y), 2);
    ck_assert(popc_tensor_dims(y)[0] == 4 && popc_tensor_dims(y)[1] == 6);
    ck_assert(elem(y, 23) == 23);
    popc_tensor_free(y);
    popc_graph_free(g);
    /* Slice-1: starts [0, 1], ends [2, 3] on axes [1, 2]: x[:, 0:2, 1:3] */
    g = import("slice1.onnx", NULL, 0);
    y = run_iota(g, d, 3);
    ck_assert_int_eq(popc_tensor_numel(y), 2 * 2 * 2);
    ck_assert(elem(y, 0) == 1 && elem(y, 1) == 2 && elem(y, 2) == 5 &&
              elem(y, 3) == 6 && elem(y, 4) == 13 && elem(y, 7) == 18);
    popc_tensor_free(y);
    popc_graph_free(g);
    /* Pad-2: pads [0,1,0, 0,1,2] with 5 -> [2, 5, 6] */
    g = import("pad2.onnx", NULL, 0);
    y = run_iota(g, d, 3);
    ck_assert(popc_tensor_dims(y)[1] == 5 && popc_tensor_dims(y)[2] == 6);
    ck_assert(elem(y, 0) == 5);          /* [0, 0, 0]: padding */
    ck_assert(elem(y, 6) == 0);          /* [0, 1, 0] = x[0, 0, 0] */
    ck_assert(elem(y, 6 + 3) == 3);      /* [0, 1, 3] = x[0, 0, 3] */
    ck_assert(elem(y, 6 + 4) == 5);      /* [0, 1, 4]: padding */
    popc_tensor_free(y);
    popc_graph_free(g);
    /* Softmax-11, axis 1: softmax over the 12 values of each x[n] */
    g = import("softmax11.onnx", NULL, 0);
    y = run_iota(g, d, 3);
    {
        double sum = 0, e11 = 0;

        for (int i = 0; i < 12; i++) {
            sum += exp((double)i);
            e11 = exp(11.0);
        }
        ck_assert(fabs(elem(y, 11) - e11 / sum) < 1e-6);
        ck_assert(fabs(elem(y, 0) - 1.0 / sum) < 1e-6);
    }
    popc_tensor_free(y);
    popc_graph_free(g);
}
END_TEST

START_TEST(annotations_by_node_name_prefix)
{
    popc_onnx_import_options o;
    popc_onnx_annotation an[2];
    popc_graph *g = NULL;

    popc_onnx_import_options_init(&o);
    memset(an, 0, sizeof an);
    an[0].prefix = "";
    an[0].annot = (popc_annotations){.ipu = 0, .stage = 0, .phase = -1,
                                     .recompute = -1};
    an[1].prefix = "sm/";
    an[1].annot = (popc_annotations){.ipu = 1, .stage = 1, .phase = -1,
                                     .recompute = 1};
    o.n_annotations = 2;
    o.annotations = an;
    OK(popc_onnx_import_file(data("softmax11.onnx"), &o, &g));
    for (int n = 0; n < popc_graph_n_nodes(g); n++) {
        popc_annotations a = popc_graph_node_annotations(g, n);
        int inner = strncmp(popc_graph_node_name(g, n), "sm/", 3) ==
                    0;

        ck_assert_int_eq(a.ipu, inner ? 1 : 0);
        ck_assert_int_eq(a.stage, inner ? 1 : 0);
    }
    popc_graph_free(g);
}
END_TEST

/* A PyTorch-exported CNN split over two IPUs by node-name prefix, run
** pipelined with 4 device iterations and 2 replicas on ipumodel, gives
** the outputs of plain runs of each micro-batch on cpu. */
START_TEST(imported_model_pipelined_and_replicated)
{
    char path[1024];
    static const char *const late[] = {"/pool", "/GlobalAveragePool",
                                       "/Flatten", "/fc", "/Softmax"};
    popc_onnx_annotation an[6];
    popc_onnx_import_options o;
    popc_graph *g = NULL, *plain_g = NULL;
    popc_options *po = NULL, *pp = NULL;
    popc_model *plain = NULL, *piped = NULL;
    popc_tensor *x = NULL, *y = NULL;
    int64_t xd[4] = {16, 1, 12, 12}, md[4] = {2, 1, 12, 12};

    snprintf(path, sizeof path, "%s/tests/onnx/models/small_cnn.onnx",
             getenv("POPC_SRCDIR"));
    popc_onnx_import_options_init(&o);
    memset(an, 0, sizeof an);
    an[0].prefix = "/";
    an[0].annot = (popc_annotations){.ipu = 0, .stage = -1, .phase = -1,
                                     .recompute = -1};
    for (int i = 0; i < 5; i++) {
        an[i + 1].prefix = late[i];
        an[i + 1].annot = (popc_annotations){.ipu = 1, .stage = -1,
                                             .phase = -1, .recompute = -1};
    }
    o.n_annotations = 6;
    o.annotations = an;
    OK(popc_onnx_import_file(path, &o, &g));
    OK(popc_onnx_import_file(path, NULL, &plain_g));
    OK(popc_options_new(&pp));
    OK(popc_options_set(pp, "backend", "ipumodel"));
    OK(popc_options_set_int(pp, "deviceIterations", 4));
    OK(popc_options_set_int(pp, "replicationFactor", 2));
    OK(popc_model_new_inference(g, pp, &piped));
    OK(popc_options_new(&po));
    OK(popc_options_set(po, "backend", "cpu"));
    OK(popc_model_new_inference(plain_g, po, &plain));
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 4, &x));
    for (int64_t i = 0; i < popc_tensor_numel(x); i++)
        ((float *)popc_tensor_data(x))[i] = (float)((i * 37) % 29) / 14.0f -
                                            1.0f;
    OK(popc_model_run(piped, &x, 1, &y, 1));
    ck_assert_int_eq(popc_tensor_dims(y)[0], 16);
    for (int mb = 0; mb < 8; mb++) {
        popc_tensor *xm = NULL, *ym = NULL;

        OK(popc_tensor_from_data(POPC_DTYPE_F32, md, 4,
                                 (const float *)popc_tensor_cdata(x) +
                                     mb * 2 * 144,
                                 &xm));
        OK(popc_model_run(plain, &xm, 1, &ym, 1));
        for (int i = 0; i < 20; i++)
            ck_assert_msg(fabs(elem(ym, i) - elem(y, mb * 20 + i)) < 1e-6,
                          "micro-batch %d element %d: %g vs %g", mb, i,
                          elem(y, mb * 20 + i), elem(ym, i));
        popc_tensor_free(xm);
        popc_tensor_free(ym);
    }
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_model_free(piped);
    popc_model_free(plain);
    popc_options_free(pp);
    popc_options_free(po);
    popc_graph_free(g);
    popc_graph_free(plain_g);
}
END_TEST

/* A domain other than ai.onnx resolves through the plugin registry: a
** third-party plugin (tests/plugins/good) serves test.vendor::Twice. */
START_TEST(vendor_domain_served_by_a_plugin)
{
    popc_registry *reg = NULL;
    popc_onnx_import_options o;
    popc_graph *g = (popc_graph *)1;
    int64_t d[2] = {2, 3};
    popc_tensor *y;

    popc_onnx_import_options_init(&o);
    refused(popc_onnx_import_file(data("vendor_domain.onnx"), &o, &g),
            POPC_EUNSUPPORTED, "node 'tw': op Twice, domain test.vendor, "
            "opset 1", NULL);
    OK(popc_registry_global(&reg));
    OK(popc_registry_load_file(reg, TEST_PLUGINS_DIR "/good"));
    g = import("vendor_domain.onnx", NULL, 0);
    y = run_iota(g, d, 2);
    for (int i = 0; i < 6; i++)
        ck_assert(elem(y, i) == 2.0 * i);
    popc_tensor_free(y);
    popc_graph_free(g);
}
END_TEST

/* eval_mode is PyTorch's model.eval() on a training export (BatchNorm2d,
** then Dropout(0.5) with training_mode true): the running statistics
** normalise and Dropout passes through, so each sample's output is its
** own; by default the node keeps ONNX's meaning (batch statistics). The
** eval graph exports as torch exports model.eval(): training_mode 0, Y
** only, Dropout without training_mode. Values derived by hand in double. */
static popc_graph *import_bn(int eval_mode)
{
    popc_onnx_import_options o;
    popc_graph *g = NULL;

    popc_onnx_import_options_init(&o);
    o.trainable = 1; /* the statistics are initializers, so updatable */
    o.eval_mode = eval_mode;
    OK(popc_onnx_import_file(data("bn_dropout_train.onnx"), &o, &g));
    return g;
}

static int node_of(const popc_graph *g, const char *op)
{
    for (int n = 0; n < popc_graph_n_nodes(g); n++)
        if (strcmp(popc_graph_node_op(g, n), op) == 0)
            return n;
    ck_abort_msg("no %s node", op);
    return -1;
}

START_TEST(eval_mode_is_model_eval)
{
    static const double scale[2] = {2, 0.5}, bias[2] = {1, -1};
    static const double rmean[2] = {0.5, -2}, rvar[2] = {4, 0.25};
    const int64_t d[4] = {3, 2, 1, 2};
    popc_graph *train = import_bn(0), *eval = import_bn(1), *back = NULL;
    popc_tensor *yt = run_iota(train, d, 4), *ye = run_iota(eval, d, 4);
    popc_tensor *yb = NULL;
    char dir[] = "/tmp/popc-eval-XXXXXX", path[64];
    popc_attrs a;
    int bn;

    for (int c = 0; c < 2; c++) {
        double mean = 0, var = 0;

        /* x = 0..11: channel c holds n * 4 + c * 2 + w */
        for (int n = 0; n < 3; n++)
            for (int w = 0; w < 2; w++)
                mean += (n * 4 + c * 2 + w) / 6.0;
        for (int n = 0; n < 3; n++)
            for (int w = 0; w < 2; w++)
                var += pow(n * 4 + c * 2 + w - mean, 2) / 6.0;
        for (int n = 0; n < 3; n++)
            for (int w = 0; w < 2; w++) {
                int64_t i = n * 4 + c * 2 + w;
                double x = (double)i;
                double want_eval = (x - rmean[c]) / sqrt(rvar[c] + 1e-5) *
                                       scale[c] + bias[c];
                double want_batch = (x - mean) / sqrt(var + 1e-5) *
                                        scale[c] + bias[c];

                ck_assert_msg(fabs(elem(ye, i) - want_eval) < 1e-5,
                              "eval y[%lld] = %g, want %g", (long long)i,
                              elem(ye, i), want_eval);
                ck_assert_msg(fabs(elem(yt, i) - want_batch) < 1e-5,
                              "training-mode y[%lld] = %g, want %g",
                              (long long)i, elem(yt, i), want_batch);
            }
    }
    /* no running-statistic updates in the eval graph */
    ck_assert_int_gt(popc_graph_n_updates(train), 0);
    ck_assert_int_eq(popc_graph_n_updates(eval), 0);
    bn = node_of(eval, "BatchNormalization");
    a = popc_graph_node_attrs(eval, bn);
    ck_assert_int_eq(popc_attr_int(&a, "training_mode", -1), 0);
    ck_assert_int_eq(popc_graph_node_n_outputs(eval, bn), 1);
    ck_assert_int_eq(popc_graph_node_n_inputs(eval,
                                              node_of(eval, "Dropout")), 2);
    /* exported and read back with default options: still eval */
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/eval.onnx", dir);
    OK(popc_onnx_export_graph(eval, path));
    OK(popc_onnx_import_file(path, NULL, &back));
    yb = run_iota(back, d, 4);
    ck_assert(popc_tensor_equal(yb, ye));
    a = popc_graph_node_attrs(back, node_of(back, "BatchNormalization"));
    ck_assert_int_eq(popc_attr_int(&a, "training_mode", -1), 0);
    ck_assert_int_eq(popc_graph_node_n_inputs(back,
                                              node_of(back, "Dropout")), 2);
    unlink(path);
    rmdir(dir);
    popc_tensor_free(yt);
    popc_tensor_free(ye);
    popc_tensor_free(yb);
    popc_graph_free(train);
    popc_graph_free(eval);
    popc_graph_free(back);
}
END_TEST

/* tests/onnx/models/shape_input.onnx: y = Reshape(x, Identity(shape)) * 2,
** x float32 [2, 6], 'shape' int64 [2]. */
static const char *shape_input_model(void)
{
    static char path[1024];

    snprintf(path, sizeof path, "%s/tests/onnx/models/shape_input.onnx",
             getenv("POPC_SRCDIR"));
    return path;
}

static popc_tensor *i64_pair(int64_t a, int64_t b)
{
    popc_tensor *t = NULL;
    int64_t two = 2;

    OK(popc_tensor_new(POPC_DTYPE_I64, &two, 1, &t));
    ((int64_t *)popc_tensor_data(t))[0] = a;
    ((int64_t *)popc_tensor_data(t))[1] = b;
    return t;
}

START_TEST(candidates_frozen_when_needed_at_compile)
{
    const char *path = shape_input_model();
    const char *names[3] = {"x", "shape", "not_an_input"};
    const char *value_names[1] = {"shape"};
    int64_t xd[2] = {2, 6};
    popc_tensor *cand[3], *value, *y = NULL;
    popc_onnx_import_options o;
    popc_graph *g = NULL;
    popc_view info;
    char **ct = NULL;
    int n_ct = -1, frozen[3] = {7, 7, 7}, out;

    /* the graph's own answer, which the candidates must agree with */
    OK(popc_onnx_compile_time_inputs(path, &ct, &n_ct));
    ck_assert_int_eq(n_ct, 1);
    ck_assert_str_eq(ct[0], "shape");
    popc_onnx_free_names(ct, n_ct);

    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &cand[0]));
    for (int i = 0; i < 12; i++)
        ((float *)popc_tensor_data(cand[0]))[i] = (float)i;
    cand[1] = i64_pair(4, 3);
    cand[2] = i64_pair(1, 1);
    popc_onnx_import_options_init(&o);
    OK(popc_onnx_import_file_candidates(path, &o, 3, names, cand, frozen,
                                        &g));
    ck_assert_int_eq(frozen[0], 0); /* a run-time input */
    ck_assert_int_eq(frozen[1], 1);
    ck_assert_int_eq(frozen[2], 0); /* no such input */
    ck_assert_int_eq(popc_graph_n_inputs(g), 1);
    ck_assert_str_eq(popc_graph_value_name(g, popc_graph_input(g, 0)), "x");
    out = popc_graph_output(g, 0);
    info = popc_graph_value_info(g, out);
    ck_assert_int_eq(info.rank, 2);
    ck_assert_int_eq(info.dims[0], 4);
    ck_assert_int_eq(info.dims[1], 3);
    /* y = 2 x, read in row-major order whatever the shape */
    OK(popc_graph_eval(g, &cand[0], 1, &out, 1, &y, 0, 0));
    ck_assert_int_eq(popc_tensor_dims(y)[0], 4);
    for (int i = 0; i < 12; i++)
        ck_assert_float_eq(((const float *)popc_tensor_cdata(y))[i],
                           2.0f * (float)i);
    popc_tensor_free(y);
    popc_graph_free(g);
    g = NULL;

    /* values[] wins over a candidate of the same name */
    value = i64_pair(3, 4);
    o.n_values = 1;
    o.value_names = value_names;
    o.values = &value;
    OK(popc_onnx_import_file_candidates(path, &o, 3, names, cand, frozen,
                                        &g));
    ck_assert_int_eq(frozen[1], 0);
    info = popc_graph_value_info(g, popc_graph_output(g, 0));
    ck_assert_int_eq(info.dims[0], 3);
    popc_graph_free(g);
    g = NULL;
    popc_tensor_free(value);
    o.n_values = 0;

    /* malformed candidate lists are refused, naming the argument */
    ck_assert_int_eq(popc_onnx_import_file_candidates(path, &o, 3, names,
                                                      NULL, frozen, &g),
                     POPC_EINVAL);
    ck_assert_ptr_null(g);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "names or values"));
    ck_assert_int_eq(popc_onnx_import_file_candidates(path, &o, -1, names,
                                                      cand, frozen, &g),
                     POPC_EINVAL);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "n is -1"));
    popc_tensor_free(cand[1]);
    cand[1] = NULL;
    ck_assert_int_eq(popc_onnx_import_file_candidates(path, &o, 2, names,
                                                      cand, frozen, &g),
                     POPC_EINVAL);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "candidate 1 ('shape')"));
    ck_assert_ptr_null(g);
    /* no candidates: a plain import, which cannot compile the Reshape */
    ck_assert_int_eq(popc_onnx_import_file_candidates(path, NULL, 0, NULL,
                                                      NULL, NULL, &g),
                     POPC_EINVAL);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "known at compile"));
    popc_tensor_free(cand[0]);
    popc_tensor_free(cand[2]);
}
END_TEST

static Suite *onnx_suite(void)
{
    Suite *s = suite_create("onnx");
    TCase *tc = tcase_create("onnx");

    tcase_add_test(tc, every_dtype_typed_and_raw);
    tcase_add_test(tc, half_and_bfloat16_bits);
    tcase_add_test(tc, size_claims_are_checked_before_allocating);
    tcase_add_test(tc, tensor_file_round_trip);
    tcase_add_test(tc, external_data_is_read_from_the_model_folder);
    tcase_add_test(tc, initializers_trainable_on_request);
    tcase_add_test(tc, bad_models_are_refused_by_name);
    tcase_add_test(tc, sequences_resolved_at_import);
    tcase_add_test(tc, old_opset_forms_are_upgraded);
    tcase_add_test(tc, annotations_by_node_name_prefix);
    tcase_add_test(tc, imported_model_pipelined_and_replicated);
    tcase_add_test(tc, vendor_domain_served_by_a_plugin);
    tcase_add_test(tc, eval_mode_is_model_eval);
    tcase_add_test(tc, candidates_frozen_when_needed_at_compile);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(onnx_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
