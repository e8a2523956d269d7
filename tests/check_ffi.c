/* check_ffi.c - foreign C functions through libffi (popc_foreign_op, plugin
** ops/ffi): libm's erff per element, and a user library compiled by this
** test (tests/data/ffi/userlib.c) called on buffers, with constants,
** sizes, dimensions, float16 and integer data, the error reporter closure
** and status returns; the build-time and compile-time errors (relative
** path, bad signature, dtype mismatch, missing library or symbol), on the
** cpu and ipumodel backends. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <check.h>

#include "popc/popc.h"
#include "popc/run.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

static char tmpdir[64];
static char userlib[128];

static int has(const char *text)
{
    return strstr(popc_last_error(), text) != NULL;
}

static popc_tensor *tensor(popc_dtype dt, int64_t rows, int64_t cols,
                           const void *data)
{
    int64_t d[2] = {rows, cols};
    popc_tensor *t = NULL;

    OK(popc_tensor_from_data(dt, d, 2, data, &t));
    return t;
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

/* A graph of inputs shaped like the micro-batch of ins (rows / mb) and one
** foreign op whose outputs are the graph's outputs. */
static popc_status build(popc_tensor *const *ins, int n_in, int64_t mb,
                         const char *lib, const char *sym, const char *sig,
                         const char *const *shapes, int n_out,
                         popc_graph **out)
{
    popc_graph *g = NULL;
    int x[8], y[8];
    popc_status st;

    OK(popc_graph_new("ffi", &g));
    for (int i = 0; i < n_in; i++) {
        int64_t d[POPC_MAX_RANK];
        int rank = popc_tensor_rank(ins[i]);
        char name[16];

        memcpy(d, popc_tensor_dims(ins[i]), sizeof(int64_t) * (size_t)rank);
        d[0] /= mb;
        snprintf(name, sizeof name, "x%d", i);
        OK(popc_graph_add_input(g, name, popc_tensor_dtype(ins[i]), d, rank,
                                &x[i]));
    }
    st = popc_foreign_op(g, lib, sym, sig, x, n_in, shapes, n_out, y);
    for (int j = 0; st == POPC_OK && j < n_out; j++)
        OK(popc_graph_add_output(g, y[j]));
    if (st != POPC_OK) {
        popc_graph_free(g);
        g = NULL;
    }
    *out = g;
    return st;
}

/* Run through an inference model: mb micro-batches (DI x R). */
static popc_status run(popc_tensor *const *ins, int n_in, const char *backend,
                       int64_t di, int64_t r, const char *lib,
                       const char *sym, const char *sig,
                       const char *const *shapes, popc_tensor **outs,
                       int n_out)
{
    popc_graph *g = NULL;
    popc_options *o = opts(backend, di, r);
    popc_model *m = NULL;
    popc_status st;

    st = build(ins, n_in, di * r, lib, sym, sig, shapes, n_out, &g);
    if (st == POPC_OK)
        st = popc_model_new_inference(g, o, &m);
    if (st == POPC_OK)
        st = popc_model_run(m, ins, n_in, outs, n_out);
    popc_model_free(m);
    popc_graph_free(g);
    popc_options_free(o);
    return st;
}

/* ---- libm ---------------------------------------------------------------- */

START_TEST(libm_erff_per_element)
{
    const char *backends[2] = {"cpu", "ipumodel"};
    float v[24];
    popc_tensor *x, *y = NULL;

    for (int i = 0; i < 24; i++)
        v[i] = (float)i / 6.0f - 2.0f;
    x = tensor(POPC_DTYPE_F32, 4, 6, v);
    for (int b = 0; b < 2; b++) {
        OK(run(&x, 1, backends[b], 2, b ? 2 : 1, "libm.so.6", "erff",
               "f32(in f32)", NULL, &y, 1));
        for (int i = 0; i < 24; i++)
            ck_assert_float_eq(((const float *)popc_tensor_cdata(y))[i],
                               erff(v[i]));
        popc_tensor_free(y);
    }
    popc_tensor_free(x);
}
END_TEST

START_TEST(reference_eval)
{
    float v[6] = {-1, -0.5f, 0, 0.5f, 1, 2};
    popc_tensor *x = tensor(POPC_DTYPE_F32, 2, 3, v), *y = NULL;
    popc_graph *g = NULL;
    int out;

    OK(build(&x, 1, 1, "libm.so.6", "erff", "float(in float)", NULL, 1, &g));
    out = popc_graph_output(g, 0);
    OK(popc_graph_eval(g, &x, 1, &out, 1, &y, 0, 0));
    for (int i = 0; i < 6; i++)
        ck_assert_float_eq(((const float *)popc_tensor_cdata(y))[i],
                           erff(v[i]));
    popc_tensor_free(y);
    popc_tensor_free(x);
    popc_graph_free(g);
}
END_TEST

/* ---- the user library -------------------------------------------------------- */

START_TEST(buffers_constants_and_sizes)
{
    float v[8] = {1, 2, 3, 4, -1, -2, 0.5f, 8};
    int32_t iv[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    popc_tensor *x = tensor(POPC_DTYPE_F32, 2, 4, v), *y = NULL;
    popc_tensor *xi = tensor(POPC_DTYPE_I32, 2, 4, iv);
    const char *rows_shape[1] = {"1"};
    const int64_t *s;

    OK(run(&x, 1, "cpu", 2, 1, userlib, "scale_add",
           "void(in f32* x, out f32* y, i64 n, f32 a = 2.5, f32 b = -1)",
           NULL, &y, 1));
    for (int i = 0; i < 8; i++)
        ck_assert_float_eq(((const float *)popc_tensor_cdata(y))[i],
                           2.5f * v[i] - 1.0f);
    popc_tensor_free(y);
    /* dims of the micro-batch [1, 4]; the output is [1] per micro-batch */
    OK(run(&xi, 1, "ipumodel", 2, 1, userlib, "row_sums",
           "i64(in i32*, i64 dim(in0, 0), i64 dim(in0, -1), out i64*)",
           rows_shape, &y, 1));
    ck_assert_int_eq(popc_tensor_dtype(y), POPC_DTYPE_I64);
    s = popc_tensor_cdata(y);
    ck_assert_int_eq(popc_tensor_numel(y), 2);
    ck_assert(s[0] == 10 && s[1] == 26);
    popc_tensor_free(y);
    popc_tensor_free(x);
    popc_tensor_free(xi);
}
END_TEST

START_TEST(dtypes_per_element_and_half)
{
    int32_t a[6] = {1, 2, 3, -4, 5, 6}, b[6] = {10, 20, 30, 40, 50, 60};
    int64_t l[6] = {1, -2, 3, 1LL << 40, 5, 6};
    float f[6] = {-1, 2, -3, 0, 5, -0.25f};
    uint16_t h[6] = {0x3c00, 0x4000, 0xbc00, 0x7c00, 0x0001, 0x8000};
    popc_tensor *ins[2] = {tensor(POPC_DTYPE_I32, 2, 3, a),
                           tensor(POPC_DTYPE_I32, 2, 3, b)};
    popc_tensor *ti = tensor(POPC_DTYPE_I64, 2, 3, l);
    popc_tensor *tf = tensor(POPC_DTYPE_F32, 2, 3, f);
    popc_tensor *th = tensor(POPC_DTYPE_F16, 2, 3, h), *y = NULL;

    OK(run(ins, 2, "cpu", 1, 1, userlib, "add_i32", "i32(in i32, in i32)",
           NULL, &y, 1));
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(((const int32_t *)popc_tensor_cdata(y))[i],
                         a[i] + b[i]);
    popc_tensor_free(y);
    OK(run(&ti, 1, "ipumodel", 2, 1, userlib, "times_k",
           "int64(in int64, int64 k = 3)", NULL, &y, 1));
    for (int i = 0; i < 6; i++)
        ck_assert(((const int64_t *)popc_tensor_cdata(y))[i] == 3 * l[i]);
    popc_tensor_free(y);
    OK(run(&tf, 1, "cpu", 1, 1, userlib, "is_negative", "bool(in f32)",
           NULL, &y, 1));
    ck_assert_int_eq(popc_tensor_dtype(y), POPC_DTYPE_BOOL);
    for (int i = 0; i < 6; i++)
        ck_assert_uint_eq(((const uint8_t *)popc_tensor_cdata(y))[i],
                          f[i] < 0);
    popc_tensor_free(y);
    OK(run(&th, 1, "cpu", 1, 1, userlib, "half_copy",
           "void(in f16*, out f16*, i32 n)", NULL, &y, 1));
    ck_assert(memcmp(popc_tensor_cdata(y), h, sizeof h) == 0);
    popc_tensor_free(y);
    for (int i = 0; i < 2; i++)
        popc_tensor_free(ins[i]);
    popc_tensor_free(ti);
    popc_tensor_free(tf);
    popc_tensor_free(th);
}
END_TEST

START_TEST(reporter_closure_and_status)
{
    const char *backends[2] = {"cpu", "ipumodel"};
    float v[8] = {4, 9, 16, 0.25f, 1, 2, 0, 100};

    for (int b = 0; b < 2; b++) {
        popc_tensor *x = tensor(POPC_DTYPE_F32, 4, 2, v), *y = NULL;
        const float *r;

        OK(run(&x, 1, backends[b], 2, 2, userlib, "checked_sqrt",
               "i32(in f32*, out f32*, i64 n, err)", NULL, &y, 1));
        r = popc_tensor_cdata(y);
        for (int i = 0; i < 8; i++)
            ck_assert_float_eq_tol(r[i], sqrtf(v[i]), 1e-6);
        popc_tensor_free(y);
        ((float *)popc_tensor_data(x))[5] = -2.0f;
        ck_assert_int_eq(run(&x, 1, backends[b], 2, 2, userlib,
                             "checked_sqrt",
                             "i32(in f32*, out f32*, i64 n, err)", NULL, &y,
                             1),
                         POPC_ECALLBACK);
        ck_assert_msg(has("checked_sqrt: element 1 is negative (-2)") &&
                          has("ForeignCall 'checked_sqrt'"),
                      "%s", popc_last_error());
        ck_assert_ptr_null(y);
        ck_assert_int_eq(run(&x, 1, backends[b], 1, 1, userlib,
                             "always_fails", "i32(in f32*, out f32*, i64 n)",
                             NULL, &y, 1),
                         POPC_ECALLBACK);
        ck_assert_msg(has("always_fails") && has("returned 7"), "%s",
                      popc_last_error());
        popc_tensor_free(x);
    }
}
END_TEST

/* ---- errors -------------------------------------------------------------------- */

static void refused_at_build(const char *lib, const char *sig, int n_out,
                             popc_status want, const char *text)
{
    float v[4] = {1, 2, 3, 4};
    popc_tensor *x = tensor(POPC_DTYPE_F32, 2, 2, v);
    popc_graph *g = NULL;

    ck_assert_int_eq(build(&x, 1, 1, lib, "scale_add", sig, NULL, n_out, &g),
                     want);
    ck_assert_msg(has(text), "want '%s', got: %s", text, popc_last_error());
    popc_tensor_free(x);
}

START_TEST(errors_while_building)
{
    const char *good = "void(in f32*, out f32*, i64 n, f32 a = 1, f32 b = 0)";

    refused_at_build("./libuser.so", good, 1, POPC_EINVAL, "relative path");
    refused_at_build("lib/libuser.so", good, 1, POPC_EINVAL,
                     "relative path");
    refused_at_build(userlib, "void(in f32*, out f32*, i32 incx)", 1,
                     POPC_EINVAL, "'i32 incx' has no value");
    refused_at_build(userlib, "void(in f32*, out f32*, i32 incx)", 1,
                     POPC_EINVAL, "column 25");
    refused_at_build(userlib, "void(in i32*, out f32*, i64 n)", 1,
                     POPC_EINVAL, "argument 1 is 'in i32*' but input 0 is "
                                  "float32");
    refused_at_build(userlib, good, 2, POPC_EINVAL,
                     "writes 1 output but the node has 2");
    refused_at_build(userlib, "f32(in f32*, out f32*)", 1, POPC_EINVAL,
                     "returns void or an integer status");
    refused_at_build(userlib, "f32(in f32, in f32*)", 1, POPC_EINVAL,
                     "cannot be mixed");
    refused_at_build(userlib, "void(in f32*, out f32*, i64 n(in3))", 1,
                     POPC_EINVAL, "refers to in3");
    refused_at_build(userlib, "void(in f32*, out f32*, i64 n", 1, POPC_EINVAL,
                     "expected ',' or ')'");
    refused_at_build(userlib, "void(in q32*)", 1, POPC_EINVAL,
                     "unknown type 'q32'");
    refused_at_build(userlib, "void(f32* x, out f32* y)", 1, POPC_EINVAL,
                     "a buffer needs a direction: 'in f32*' or 'out f32*'");
}
END_TEST

/* The graph builds; the compile binds the function and fails. */
static void refused_at_compile(const char *lib, const char *sym,
                               const char *text1, const char *text2)
{
    float v[4] = {1, 2, 3, 4};
    popc_tensor *x = tensor(POPC_DTYPE_F32, 2, 2, v), *y = NULL;
    popc_graph *g = NULL;
    popc_options *o = opts("cpu", 1, 1);
    popc_model *m = NULL;

    OK(build(&x, 1, 1, lib, sym, "f32(in f32)", NULL, 1, &g));
    OK(popc_model_new_inference(g, o, &m));
    ck_assert_int_eq(popc_model_compile(m, &x, 1), POPC_ENOTFOUND);
    ck_assert_msg(has(text1) && has(text2) && has(lib), "%s",
                  popc_last_error());
    ck_assert(!popc_model_is_compiled(m));
    ck_assert_int_ne(popc_model_run(m, &x, 1, &y, 1), POPC_OK);
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
    popc_tensor_free(x);
}

START_TEST(errors_at_compile)
{
    refused_at_compile("/nonexistent/libnothing.so", "erff",
                       "cannot load library", "'erff'");
    refused_at_compile("libpopc_no_such_library.so.9", "erff",
                       "cannot load library", "'erff'");
    refused_at_compile("libm.so.6", "no_such_function", "has no symbol",
                       "'no_such_function'");
    refused_at_compile(userlib, "erff", "has no symbol", "'erff'");
}
END_TEST

START_TEST(not_differentiable)
{
    int64_t d[2] = {2, 3};
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    popc_options *o = opts("cpu", 1, 1);
    popc_model *m = NULL;
    float v[6] = {1, 2, 3, 4, 5, 6};
    popc_tensor *in[2] = {tensor(POPC_DTYPE_F32, 2, 3, v),
                          tensor(POPC_DTYPE_F32, 2, 3, v)};
    popc_tensor *loss = NULL;
    int x, y, h, e, l;

    OK(popc_graph_new("train_ffi", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, d, 2, &x));
    OK(popc_graph_add_input(g, "y", POPC_DTYPE_F32, d, 2, &y));
    OK(popc_layers_new(g, 1, &L));
    OK(popc_nn_linear(L, "fc", x, 3, 3, 1, &h));
    OK(popc_foreign_op(g, "libm.so.6", "erff", "f32(in f32)", &h, 1, NULL, 1,
                       &e));
    OK(popc_nn_mse_loss(L, e, y, "mean", &l));
    OK(popc_graph_add_output(g, l));
    OK(popc_model_new_training(g, o, NULL, &m));
    ck_assert_int_ne(popc_model_run(m, in, 2, &loss, 1), POPC_OK);
    ck_assert_msg(has("erff") && has("no gradient"), "%s",
                  popc_last_error());
    popc_model_free(m);
    popc_layers_free(L);
    popc_options_free(o);
    popc_graph_free(g);
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
}
END_TEST

/* ---- INI: type = foreign -------------------------------------------------------- */

static popc_status load_ini(const char *text, popc_run **r)
{
    char path[64];
    int fd;
    FILE *f;
    popc_status st;

    snprintf(path, sizeof path, "/tmp/popc_ffi_XXXXXX.ini");
    fd = mkstemps(path, 4);
    ck_assert_int_ge(fd, 0);
    f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    st = popc_run_load(path, NULL, 0, r);
    unlink(path);
    return st;
}

START_TEST(ini_foreign_layers)
{
    char text[2048];
    popc_run *r = NULL;
    popc_graph *g = NULL;
    popc_options *o = opts("cpu", 1, 1);
    popc_model *m = NULL;
    popc_tensor *x = NULL, *y = NULL;
    int64_t d[2] = {2, 4};
    int n_foreign = 0;

    snprintf(text, sizeof text,
             "[model]\ninput = 4\nclasses = 4\nlayers = erf, scale\n"
             "[layer erf]\ntype = foreign\nlibrary = libm.so.6\n"
             "symbol = erff\nsignature = f32(in f32)\n"
             "[layer scale]\ntype = foreign\nlibrary = %s\n"
             "symbol = scale_add\n"
             "signature = void(in f32* x, out f32* y, i64 n, f32 a = 2.5, "
             "f32 b = -1)\noutput_shapes = same_as:0\n", userlib);
    OK(load_ini(text, &r));
    OK(popc_run_build_graph(r, 0, 2, &g));
    for (int n = 0; n < popc_graph_n_nodes(g); n++)
        n_foreign += strcmp(popc_graph_node_op(g, n), "ForeignCall") == 0;
    ck_assert_int_eq(n_foreign, 2);
    OK(popc_tensor_new(POPC_DTYPE_F32, d, 2, &x));
    for (int i = 0; i < 8; i++)
        ((float *)popc_tensor_data(x))[i] = (float)i / 4.0f - 1.0f;
    /* a run file names the libraries: only with the user's consent */
    ck_assert_ptr_nonnull(popc_graph_origin(g));
    ck_assert_int_eq(popc_foreign_code_allowed(), 0);
    OK(popc_model_new_inference(g, o, &m));
    ck_assert_int_eq(popc_model_run(m, &x, 1, &y, 1), POPC_EPERM);
    ck_assert_msg(has("nodes that would load and run foreign code named by "
                      "the file: node 'erff' (popc::ForeignCall), node "
                      "'scale_add' (popc::ForeignCall)") &&
                  has("--allow-foreign") && has(popc_graph_origin(g)),
                  "%s", popc_last_error());
    popc_model_free(m);
    popc_set_foreign_code_allowed(1);
    OK(popc_model_new_inference(g, o, &m));
    OK(popc_model_run(m, &x, 1, &y, 1));
    popc_set_foreign_code_allowed(0);
    for (int i = 0; i < 8; i++) {
        float v = (float)i / 4.0f - 1.0f;
        ck_assert_float_eq(((const float *)popc_tensor_cdata(y))[i],
                           2.5f * erff(v) - 1.0f);
    }
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_model_free(m);
    popc_graph_free(g);
    popc_options_free(o);
    popc_run_free(r);
    ck_assert_int_eq(load_ini("[model]\ninput = 4\nclasses = 4\n"
                              "layers = erf\n[layer erf]\ntype = foreign\n"
                              "library = ./libm.so.6\nsymbol = erff\n"
                              "signature = f32(in f32)\n", &r),
                     POPC_ECONFIG);
    ck_assert_msg(has("relative path") && has("[layer erf] library"), "%s",
                  popc_last_error());
    ck_assert_int_eq(load_ini("[model]\ninput = 4\nclasses = 4\n"
                              "layers = erf\n[layer erf]\ntype = foreign\n"
                              "library = libm.so.6\nsymbol = erff\n", &r),
                     POPC_ECONFIG);
    ck_assert_msg(has("signature"), "%s", popc_last_error());
}
END_TEST

static Suite *ffi_suite(void)
{
    Suite *s = suite_create("ffi");
    TCase *tc = tcase_create("ffi");

    tcase_add_test(tc, libm_erff_per_element);
    tcase_add_test(tc, reference_eval);
    tcase_add_test(tc, buffers_constants_and_sizes);
    tcase_add_test(tc, dtypes_per_element_and_half);
    tcase_add_test(tc, reporter_closure_and_status);
    tcase_add_test(tc, errors_while_building);
    tcase_add_test(tc, errors_at_compile);
    tcase_add_test(tc, not_differentiable);
    tcase_add_test(tc, ini_foreign_layers);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

/* The user library, compiled the way its user would. */
static int build_userlib(void)
{
    char cmd[1024];

    snprintf(tmpdir, sizeof tmpdir, "/tmp/popc_ffi_XXXXXX");
    if (!mkdtemp(tmpdir))
        return 0;
    snprintf(userlib, sizeof userlib, "%s/libuser.so", tmpdir);
    snprintf(cmd, sizeof cmd, "%s -shared -fPIC -O2 -o '%s' '%s'", TEST_CC,
             userlib, TEST_USERLIB_SRC);
    return system(cmd) == 0;
}

int main(void)
{
    SRunner *sr;
    int failed;

    if (!build_userlib()) {
        fprintf(stderr, "check_ffi: cannot compile %s with %s\n",
                TEST_USERLIB_SRC, TEST_CC);
        rmdir(tmpdir);
        return EXIT_FAILURE;
    }
    sr = srunner_create(ffi_suite());
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    unlink(userlib);
    rmdir(tmpdir);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
