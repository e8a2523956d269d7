/* check_executable.c - exported executables and the executable cache:
** save / popc_load round trips (inference outputs equal; a trained model's
** weights, optimizer state and run counter restored so training continues
** bitwise identically on the cpu backend, dropout included), save to a
** directory and to missing parent directories, loadExecutable into a
** model of the same graph and its refusal for another graph, files that
** are corrupt, truncated, foreign or from another format, popc or plugin
** version (each refused before anything is built), the offline target
** exported and loaded on ipumodel and cpu, `popc inspect`'s description,
** and the cache: a miss writes the entry, a hit gives equal results,
** logs "executable cache hit" and compiles faster; a corrupt entry is
** replaced. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <check.h>

#include "popc/popc.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())
#define HAS(msg, part)                                                     \
    ck_assert_msg(strstr((msg), (part)) != NULL, "'%s' not in: %s", (part), \
                  (msg))

#define B 4  /* micro-batch */
#define DI 2 /* device iterations: combined batch 8 */
#define IN 12
#define HID 16
#define CLS 4

static char dir[256];

static void setup(void)
{
    popc_registry *reg;

    OK(popc_registry_global(&reg));
    ck_assert_msg(popc_registry_find_backend(reg, "cpu") &&
                      popc_registry_find_optimizer(reg, "adam"),
                  "plugins not loaded (POPC_PLUGIN_PATH=%s): %s",
                  getenv("POPC_PLUGIN_PATH") ? getenv("POPC_PLUGIN_PATH")
                                             : "",
                  popc_registry_problems(reg));
    snprintf(dir, sizeof dir, "%s/popc-exe-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[512];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *path_in(const char *name)
{
    static char p[4][512];
    static int k;

    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

/* ---- models -------------------------------------------------------------- */

/* x -> fc1 -> Relu -> Dropout -> fc2; training: cross entropy (the only
** output), inference: the logits. hidden changes the graph. */
static popc_graph *mlp(int training, int hidden, uint64_t seed)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int64_t xd[2] = {B, IN}, ld[1] = {B};
    int x, lab = -1, h, o, loss;

    OK(popc_graph_new("mlp", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    if (training)
        OK(popc_graph_add_input(g, "labels", POPC_DTYPE_I32, ld, 1, &lab));
    OK(popc_layers_new(g, seed, &L));
    OK(popc_nn_linear(L, "fc1", x, IN, hidden, 1, &h));
    OK(popc_nn_activation(L, "Relu", h, 0.0, &h));
    OK(popc_nn_dropout(L, h, 0.3, &h));
    OK(popc_nn_linear(L, "fc2", h, hidden, CLS, 1, &o));
    if (training) {
        OK(popc_nn_cross_entropy(L, o, lab, "mean", &loss));
        OK(popc_graph_add_output(g, loss));
    } else {
        OK(popc_graph_add_output(g, o));
    }
    popc_layers_free(L);
    return g;
}

/* conv -> BatchNorm -> Relu -> pool -> fc: a graph big enough for the
** cache's saving to be measurable. */
static popc_graph *cnn(void)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int64_t xd[4] = {B, 1, 12, 12}, ld[1] = {B};
    int x, lab, y, loss;

    OK(popc_graph_new("cnn", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 4, &x));
    OK(popc_graph_add_input(g, "labels", POPC_DTYPE_I32, ld, 1, &lab));
    OK(popc_layers_new(g, 5, &L));
    y = x;
    for (int i = 0; i < 6; i++) {
        char name[16];
        snprintf(name, sizeof name, "conv%d", i);
        OK(popc_nn_conv2d(L, name, y, i ? 8 : 1, 8, 3, 1, 1, 1, 1, 1, &y));
        snprintf(name, sizeof name, "bn%d", i);
        OK(popc_nn_batchnorm2d(L, name, y, 8, 1e-5, 0.1, &y));
        OK(popc_nn_activation(L, "Relu", y, 0.0, &y));
    }
    OK(popc_nn_maxpool2d(L, y, 2, 0, 0, &y));
    OK(popc_nn_flatten(L, y, 1, &y));
    OK(popc_nn_linear(L, "fc", y, 8 * 6 * 6, CLS, 1, &y));
    OK(popc_nn_cross_entropy(L, y, lab, NULL, &loss));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    return g;
}

static popc_options *opts(const char *backend)
{
    popc_options *o = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    OK(popc_options_set_int(o, "deviceIterations", DI));
    OK(popc_options_set_int(o, "randomSeed", 42));
    return o;
}

static popc_optimizer *adam(void)
{
    popc_optimizer *o = NULL;
    int grp;

    OK(popc_optimizer_new("adam", &o));
    OK(popc_optimizer_set(o, "lr", 0.01));
    OK(popc_optimizer_add_group(o, "fc2.", &grp));
    OK(popc_optimizer_set_group(o, grp, "weight_decay", 0.01));
    return o;
}

static popc_model *train_model(popc_options *o, popc_graph *g)
{
    popc_optimizer *opt = adam();
    popc_model *m = NULL;

    OK(popc_model_new_training(g, o, opt, &m));
    popc_optimizer_free(opt);
    return m;
}

/* Combined-batch data; step k gives other data. */
static void data(int k, popc_tensor **x, popc_tensor **lab)
{
    int64_t xd[2] = {B * DI, IN}, ld[1] = {B * DI};
    float *p;
    int32_t *l;

    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, x));
    p = popc_tensor_data(*x);
    for (int i = 0; i < B * DI * IN; i++)
        p[i] = (float)sin(0.37 * i + k) * 2.0f;
    if (!lab)
        return;
    OK(popc_tensor_new(POPC_DTYPE_I32, ld, 1, lab));
    l = popc_tensor_data(*lab);
    for (int i = 0; i < B * DI; i++)
        l[i] = (i * 3 + k) % CLS;
}

static popc_tensor *train_step(popc_model *m, int k)
{
    popc_tensor *in[2], *out = NULL;

    data(k, &in[0], &in[1]);
    OK(popc_model_run(m, in, 2, &out, 1));
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    return out;
}

static popc_tensor *infer(popc_model *m, int k)
{
    popc_tensor *x, *out = NULL;

    data(k, &x, NULL);
    OK(popc_model_run(m, &x, 1, &out, 1));
    popc_tensor_free(x);
    return out;
}

static void same_tensor(const popc_tensor *a, const popc_tensor *b,
                        const char *what)
{
    ck_assert_msg(popc_tensor_equal(a, b), "%s differs (max diff %g)", what,
                  popc_tensor_max_abs_diff(a, b));
}

static void same_weights(popc_model *a, popc_model *b)
{
    ck_assert_int_eq(popc_model_n_tensors(a), popc_model_n_tensors(b));
    for (int i = 0; i < popc_model_n_tensors(a); i++) {
        const char *name = popc_model_tensor_name(a, i);
        const popc_tensor *ta, *tb;
        OK(popc_model_get_weight(a, name, &ta));
        OK(popc_model_get_weight(b, name, &tb));
        same_tensor(ta, tb, name);
    }
}

static void same_state(popc_model *a, popc_model *b)
{
    int n = popc_model_n_optimizer_states(a);

    ck_assert_int_gt(n, 0);
    ck_assert_int_eq(n, popc_model_n_optimizer_states(b));
    for (int i = 0; i < n; i++) {
        const char *name = popc_model_optimizer_state_name(a, i);
        popc_tensor *ta = NULL, *tb = NULL;
        OK(popc_model_get_optimizer_state(a, name, &ta));
        OK(popc_model_get_optimizer_state(b, name, &tb));
        same_tensor(ta, tb, name);
        popc_tensor_free(ta);
        popc_tensor_free(tb);
    }
}

static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long n;

    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n);
    ck_assert_int_eq(fread(buf, 1, (size_t)n, f), n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static void spill(const char *path, const void *data_, size_t size)
{
    FILE *f = fopen(path, "wb");

    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data_, 1, size, f), size);
    fclose(f);
}

/* A trained training model saved to "train.popc" after 3 steps. */
static popc_model *trained_and_saved(const char *name)
{
    popc_options *o = opts("cpu");
    popc_graph *g = mlp(1, HID, 3);
    popc_model *m = train_model(o, g);

    for (int k = 0; k < 3; k++)
        popc_tensor_free(train_step(m, k));
    OK(popc_model_save(m, path_in(name)));
    popc_graph_free(g);
    popc_options_free(o);
    return m;
}

/* ---- save / load ---------------------------------------------------------- */

START_TEST(save_needs_a_compiled_model)
{
    popc_options *o = opts("cpu");
    popc_graph *g = mlp(0, HID, 1);
    popc_model *m = NULL;

    OK(popc_model_new_inference(g, o, &m));
    ck_assert_int_eq(popc_model_save(m, path_in("x.popc")), POPC_ESTATE);
    ck_assert_str_eq(popc_last_error(),
                     "Model has not been compiled or has been destroyed.");
    ck_assert_int_ne(access(path_in("x.popc"), F_OK), 0);
    popc_model_free(m);
    popc_graph_free(g);
    popc_options_free(o);
}
END_TEST

START_TEST(inference_round_trip)
{
    popc_options *o = opts("cpu");
    popc_graph *g = mlp(0, HID, 1);
    popc_model *m = NULL, *l = NULL;
    popc_tensor *a, *b;
    popc_view v;

    OK(popc_model_new_inference(g, o, &m));
    a = infer(m, 1);
    OK(popc_model_save(m, path_in("deep/er/dirs/inf.popc")));
    OK(popc_load(path_in("deep/er/dirs/inf.popc"), NULL, &l));
    ck_assert(popc_model_is_compiled(l));
    ck_assert_int_eq(popc_model_training(l), 0);
    OK(popc_model_input_info(l, 0, &v));
    ck_assert_int_eq(v.rank, 2);
    ck_assert_int_eq(v.dims[0], B * DI);
    b = infer(l, 1);
    same_tensor(a, b, "logits");
    same_weights(m, l);
    popc_tensor_free(a);
    popc_tensor_free(b);
    /* a directory: <dir>/model.popc */
    OK(popc_model_save(m, dir));
    ck_assert_int_eq(access(path_in("model.popc"), R_OK), 0);
    popc_model_free(l);
    popc_model_free(m);
    popc_graph_free(g);
    popc_options_free(o);
}
END_TEST

START_TEST(training_continues_identically)
{
    popc_model *m = trained_and_saved("train.popc"), *l = NULL;

    OK(popc_load(path_in("train.popc"), NULL, &l));
    ck_assert_int_eq(popc_model_training(l), 1);
    ck_assert_int_eq(popc_model_steps(l), popc_model_steps(m));
    same_weights(m, l);
    same_state(m, l);
    for (int k = 3; k < 6; k++) {
        popc_tensor *a = train_step(m, k), *b = train_step(l, k);
        same_tensor(a, b, "loss");
        popc_tensor_free(a);
        popc_tensor_free(b);
    }
    same_weights(m, l);
    same_state(m, l);
    /* DI optimizer steps per run */
    ck_assert_int_eq(popc_model_steps(l), 6 * DI);
    ck_assert_int_eq(popc_model_steps(m), popc_model_steps(l));
    popc_model_free(l);
    popc_model_free(m);
}
END_TEST

START_TEST(load_executable_into_same_graph)
{
    popc_model *m = trained_and_saved("t.popc"), *n = NULL, *bad = NULL;
    popc_options *o = opts("cpu");
    popc_graph *g = mlp(1, HID, 99), *g2 = mlp(1, HID + 1, 3);

    /* other initial weights: the file's replace them */
    n = train_model(o, g);
    popc_tensor_free(train_step(n, 7));
    OK(popc_model_load_executable(n, path_in("t.popc")));
    same_weights(m, n);
    same_state(m, n);
    for (int k = 3; k < 5; k++) {
        popc_tensor *a = train_step(m, k), *b = train_step(n, k);
        same_tensor(a, b, "loss");
        popc_tensor_free(a);
        popc_tensor_free(b);
    }
    bad = train_model(o, g2);
    ck_assert_int_eq(popc_model_load_executable(bad, path_in("t.popc")),
                     POPC_EINVAL);
    HAS(popc_last_error(), "another graph");
    HAS(popc_last_error(), "fc1.weight");
    popc_model_free(bad);
    popc_model_free(n);
    popc_model_free(m);
    popc_graph_free(g);
    popc_graph_free(g2);
    popc_options_free(o);
}
END_TEST

START_TEST(edit_options_on_load)
{
    popc_model *m = trained_and_saved("e.popc"), *l = NULL;
    popc_options *edit = NULL;
    const popc_tensor *w;

    OK(popc_options_new(&edit));
    OK(popc_options_set(edit, "backend", "ipumodel"));
    OK(popc_load(path_in("e.popc"), edit, &l));
    /* ipumodel matches the cpu oracle */
    for (int k = 3; k < 5; k++) {
        popc_tensor *a = train_step(m, k), *b = train_step(l, k);
        ck_assert_msg(popc_tensor_max_abs_diff(a, b) < 1e-5, "loss differs");
        popc_tensor_free(a);
        popc_tensor_free(b);
    }
    OK(popc_model_get_weight(l, "fc1.weight", &w));
    popc_model_free(l);
    popc_options_free(edit);
    popc_model_free(m);
}
END_TEST

START_TEST(describe_shows_the_contents)
{
    popc_model *m = trained_and_saved("d.popc");
    char *text = NULL;

    OK(popc_executable_describe(path_in("d.popc"), &text));
    HAS(text, "format version 1");
    HAS(text, "model: 'mlp', training");
    HAS(text, "x: float32[8, 12]");
    HAS(text, "labels: int32[8]");
    HAS(text, "backend: cpu");
    HAS(text, "optimizer: adam");
    HAS(text, "group [fc2.]: weight_decay=0.01");
    HAS(text, "fc1.weight float32[16, 12]");
    HAS(text, "fc1.weight/exp_avg");
    HAS(text, "deviceIterations=2");
    HAS(text, "random state: 3 runs done, randomSeed 42");
    HAS(text, "WGHT");
    free(text);
    popc_model_free(m);
}
END_TEST

/* ---- damaged files -------------------------------------------------------- */

static uint32_t u32_at(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
           (uint32_t)b[3] << 24;
}

static void put_u32(unsigned char *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

/* Offset of a section's header ("TAG" + u64 length + u32 crc), per
** docs/executable-format.md. */
static size_t find_section(const unsigned char *f, size_t size,
                           const char *tag)
{
    size_t pos = 12 + 4 + u32_at(f + 12) + 1;

    while (pos + 16 <= size) {
        uint64_t len = u32_at(f + pos + 4) |
                       (uint64_t)u32_at(f + pos + 8) << 32;
        if (memcmp(f + pos, tag, 4) == 0)
            return pos;
        pos += 16 + (size_t)len;
    }
    ck_abort_msg("section %s not found", tag);
    return 0;
}

/* Recompute a section's CRC and the file's, as a writer would. */
static void reseal(unsigned char *f, size_t size, size_t sec)
{
    uint64_t len = u32_at(f + sec + 4) | (uint64_t)u32_at(f + sec + 8) << 32;
    uLong c = crc32(0, f + sec, 12);

    c = crc32(c, f + sec + 16, (uInt)len);
    put_u32(f + sec + 12, (uint32_t)c);
    put_u32(f + size - 4, (uint32_t)crc32(0, f, (uInt)(size - 4)));
}

/* popc_load refuses the file with this status and text; so does popc
** inspect, which needs no plugin (describe: 0 for a plugin problem). */
static void refused_as(const char *file, popc_status want, const char *part,
                       int describe)
{
    popc_model *l = (popc_model *)1;
    char *text = NULL;
    popc_status st = popc_load(file, NULL, &l);

    ck_assert_msg(st == want, "%s: got %s (%s)", part, popc_status_name(st),
                  popc_last_error());
    ck_assert_ptr_null(l);
    HAS(popc_last_error(), part);
    st = popc_executable_describe(file, &text);
    if (describe) {
        ck_assert_int_eq(st, want);
        ck_assert_ptr_null(text);
    } else {
        ck_assert_int_eq(st, POPC_OK);
        free(text);
    }
}

static void refused(const char *file, popc_status want, const char *part)
{
    refused_as(file, want, part, 1);
}

START_TEST(damaged_files_refused)
{
    popc_model *m = trained_and_saved("ok.popc");
    size_t size, w;
    unsigned char *f = slurp(path_in("ok.popc"), &size), *g;
    const char *bad = path_in("bad.popc");

    /* one byte inside the weights */
    g = malloc(size);
    memcpy(g, f, size);
    w = find_section(g, size, "WGHT");
    g[w + 16 + 40] ^= 1;
    spill(bad, g, size);
    refused(bad, POPC_EIO, "section 'WGHT' fails its CRC32 check");
    /* one byte of the header's version string: the file checksum */
    memcpy(g, f, size);
    g[17] ^= 1;
    spill(bad, g, size);
    refused(bad, POPC_EIO, "file checksum does not match");
    /* truncated anywhere */
    spill(bad, f, size / 2);
    refused(bad, POPC_EIO, "is truncated");
    spill(bad, f, size - 2);
    refused(bad, POPC_EIO, "is truncated");
    spill(bad, f, 5);
    refused(bad, POPC_EIO, "not a popc executable");
    /* foreign file */
    memcpy(g, f, size);
    g[0] = 'X';
    spill(bad, g, size);
    refused(bad, POPC_EIO, "not a popc executable");
    /* another format version */
    memcpy(g, f, size);
    put_u32(g + 8, 2);
    spill(bad, g, size);
    refused(bad, POPC_EUNSUPPORTED, "has format version 2");
    /* another popc version, checksums intact */
    memcpy(g, f, size);
    ck_assert_int_eq(memcmp(g + 16, POPC_VERSION_STRING,
                            strlen(POPC_VERSION_STRING)), 0);
    g[16] = '9';
    put_u32(g + size - 4, (uint32_t)crc32(0, g, (uInt)(size - 4)));
    spill(bad, g, size);
    {
        char want[256];
        snprintf(want, sizeof want, "popc version mismatch: File was "
                 "created with version: 9%s and this is version %s",
                 POPC_VERSION_STRING + 1, POPC_VERSION_STRING);
        refused(bad, POPC_EUNSUPPORTED, want);
    }
    /* another version of a plugin it uses, checksums intact */
    memcpy(g, f, size);
    {
        size_t p = find_section(g, size, "PLUG");
        unsigned char *v = memmem(g + p + 16, u32_at(g + p + 4), "0.1.0", 5);
        ck_assert_ptr_nonnull(v);
        memcpy(v, "7.7.7", 5);
        reseal(g, size, p);
    }
    spill(bad, g, size);
    refused_as(bad, POPC_EUNSUPPORTED, "version mismatch: File was created "
               "with version: 7.7.7 and the loaded plugin", 0);
    free(g);
    free(f);
    /* missing file */
    refused(path_in("nope.popc"), POPC_EIO, "nope.popc");
    popc_model_free(m);
}
END_TEST

/* Every byte is covered by a CRC: any flipped byte is refused before
** anything is built, and so is every truncation. */
START_TEST(every_damaged_byte_refused)
{
    popc_options *o = opts("cpu");
    popc_graph *g = mlp(0, 4, 1);
    popc_model *m = NULL, *l = NULL;
    popc_tensor *t;
    const char *bad = path_in("flip.popc");
    unsigned char *f;
    size_t size;

    OK(popc_model_new_inference(g, o, &m));
    t = infer(m, 0);
    OK(popc_model_save(m, path_in("small.popc")));
    f = slurp(path_in("small.popc"), &size);
    for (size_t i = 0; i < size; i += 1 + i / 128) {
        popc_status st;
        f[i] ^= 0x10;
        spill(bad, f, size);
        f[i] ^= 0x10;
        st = popc_load(bad, NULL, &l);
        ck_assert_msg(st == POPC_EIO || st == POPC_EUNSUPPORTED,
                      "byte %zu of %zu: %s (%s)", i, size,
                      popc_status_name(st), popc_last_error());
        ck_assert_ptr_null(l);
    }
    for (size_t n = 0; n < size; n += 1 + n / 256) {
        spill(bad, f, n);
        ck_assert_int_eq(popc_load(bad, NULL, &l), POPC_EIO);
    }
    free(f);
    popc_tensor_free(t);
    popc_model_free(m);
    popc_graph_free(g);
    popc_options_free(o);
}
END_TEST

/* ---- offline target --------------------------------------------------------- */

START_TEST(offline_export_then_run)
{
    popc_options *o = NULL, *edit = NULL;
    popc_graph *g = mlp(0, HID, 8);
    popc_model *m = NULL, *l = NULL, *ref = NULL;
    popc_tensor *x, *out = NULL, *a, *b;
    popc_options *ro = opts("cpu");

    OK(popc_options_new(&o));
    OK(popc_options_set_int(o, "useOfflineIpuTarget", 2));
    OK(popc_options_set_int(o, "deviceIterations", DI));
    OK(popc_options_set_int(o, "randomSeed", 42));
    OK(popc_model_new_inference(g, o, &m));
    data(0, &x, NULL);
    OK(popc_model_compile_and_export(m, &x, 1, path_in("off.popc")));
    ck_assert_int_eq(popc_model_run(m, &x, 1, &out, 1), POPC_ESTATE);
    /* PopTorch's load: Never -> Always, offline -> ipumodel */
    OK(popc_load(path_in("off.popc"), NULL, &l));
    a = infer(l, 0);
    popc_model_free(l);
    OK(popc_options_new(&edit));
    OK(popc_options_set(edit, "backend", "cpu"));
    OK(popc_load(path_in("off.popc"), edit, &l));
    b = infer(l, 0);
    OK(popc_model_new_inference(g, ro, &ref));
    out = infer(ref, 0);
    same_tensor(out, b, "cpu logits");
    ck_assert(popc_tensor_max_abs_diff(a, b) < 1e-5);
    popc_tensor_free(a);
    popc_tensor_free(b);
    popc_tensor_free(out);
    popc_tensor_free(x);
    popc_model_free(ref);
    popc_model_free(l);
    popc_model_free(m);
    popc_graph_free(g);
    popc_options_free(o);
    popc_options_free(ro);
    popc_options_free(edit);
}
END_TEST

/* ---- the cache ----------------------------------------------------------------- */

static int hits, misses;
static char last_hit[512];

static void on_log(int level, const char *msg, void *user)
{
    (void)level;
    (void)user;
    if (strstr(msg, "executable cache hit: ")) {
        hits++;
        snprintf(last_hit, sizeof last_hit, "%s", msg);
    }
    if (strstr(msg, "executable cache miss: "))
        misses++;
}

/* Train a fresh CNN model for 2 steps; returns the last loss and the
** compile time. */
static popc_tensor *cnn_train(const char *cache, double *compile_time,
                              popc_model **keep)
{
    popc_options *o = opts("cpu");
    popc_graph *g = cnn();
    popc_model *m = NULL;
    popc_tensor *in[2], *loss = NULL;
    int64_t xd[4] = {B * DI, 1, 12, 12}, ld[1] = {B * DI};

    if (cache)
        OK(popc_options_set(o, "enableExecutableCaching", cache));
    m = train_model(o, g);
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 4, &in[0]));
    OK(popc_tensor_new(POPC_DTYPE_I32, ld, 1, &in[1]));
    for (int i = 0; i < B * DI * 144; i++)
        ((float *)popc_tensor_data(in[0]))[i] = (float)cos(i * 0.1);
    for (int i = 0; i < B * DI; i++)
        ((int32_t *)popc_tensor_data(in[1]))[i] = i % CLS;
    OK(popc_model_compile(m, in, 2));
    *compile_time = popc_model_compilation_time(m);
    for (int k = 0; k < 2; k++) {
        popc_tensor_free(loss);
        OK(popc_model_run(m, in, 2, &loss, 1));
    }
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_graph_free(g);
    popc_options_free(o);
    if (keep)
        *keep = m;
    else
        popc_model_free(m);
    return loss;
}

/* The offset of the middle byte of section tag's payload in an
** executable file (docs/executable-format.md: magic, u32 format, u32
** length + version + NUL, then u32 tag, u64 length, u32 CRC, payload). */
static size_t section_middle(const unsigned char *f, size_t size,
                             const char *tag)
{
    size_t pos = 12;
    uint32_t vlen;

    memcpy(&vlen, f + pos, 4);
    pos += 4 + vlen + 1;
    while (pos + 16 <= size) {
        uint64_t len;
        memcpy(&len, f + pos + 4, 8);
        if (memcmp(f + pos, tag, 4) == 0 && len > 0)
            return pos + 16 + (size_t)len / 2;
        pos += 16 + (size_t)len;
    }
    ck_abort_msg("no section %s in the executable", tag);
    return 0;
}

START_TEST(cache_miss_then_hit)
{
    const char *cache = path_in("cache");
    double t_plain, t_miss, t_hit;
    popc_tensor *plain, *miss, *hit;
    popc_model *a = NULL, *b = NULL;
    char entry[600];
    int n = 0;

    popc_log_set_level(POPC_LOG_INFO);
    popc_log_set_callback(on_log, NULL);
    plain = cnn_train(NULL, &t_plain, NULL);
    miss = cnn_train(cache, &t_miss, &a);
    ck_assert_int_eq(misses, 1);
    ck_assert_int_eq(hits, 0);
    hit = cnn_train(cache, &t_hit, &b);
    ck_assert_int_eq(hits, 1);
    HAS(last_hit, "saved");
    same_tensor(plain, miss, "loss (miss)");
    same_tensor(plain, hit, "loss (hit)");
    same_weights(a, b);
    same_state(a, b);
    /* the entry and its lock are in the directory */
    {
        char cmd[800];
        FILE *p;
        snprintf(cmd, sizeof cmd, "ls '%s'/*.popcexe 2>/dev/null | wc -l",
                 cache);
        p = popen(cmd, "r");
        ck_assert_int_eq(fscanf(p, "%d", &n), 1);
        pclose(p);
        ck_assert_int_eq(n, 1);
    }
    fprintf(stderr, "cache (small CNN): compile %.2f ms without cache, "
            "%.2f ms on the miss (then writes the entry), %.2f ms on a "
            "hit\n", t_plain * 1e3, t_miss * 1e3, t_hit * 1e3);
    /* a corrupt entry is replaced, never used */
    {
        char cmd[800];
        FILE *p;
        snprintf(cmd, sizeof cmd, "ls '%s'/*.popcexe", cache);
        p = popen(cmd, "r");
        ck_assert_ptr_nonnull(fgets(entry, sizeof entry, p));
        pclose(p);
        entry[strcspn(entry, "\n")] = '\0';
    }
    {
        size_t size;
        unsigned char *f = slurp(entry, &size);
        size_t at = section_middle(f, size, "CGRF");
        f[at] ^= 0xff;
        spill(entry, f, size);
        free(f);
        hits = 0;
        popc_tensor_free(hit);
        hit = cnn_train(cache, &t_hit, NULL);
        ck_assert_int_eq(hits, 0);
        same_tensor(plain, hit, "loss (rebuilt)");
        popc_tensor_free(hit);
        hit = cnn_train(cache, &t_hit, NULL);
        ck_assert_int_eq(hits, 1);
    }
    /* a hit reads only the sections it uses (popci_exe_read_sections):
    ** damage to the model's own graph, which the hitting model has, is
    ** not read, and the hit still gives the same results */
    {
        size_t size;
        unsigned char *f = slurp(entry, &size);
        f[section_middle(f, size, "GRPH")] ^= 0xff;
        spill(entry, f, size);
        free(f);
        hits = 0;
        popc_tensor_free(hit);
        hit = cnn_train(cache, &t_hit, NULL);
        ck_assert_int_eq(hits, 1);
        same_tensor(plain, hit, "loss (hit past a damaged GRPH)");
    }
    popc_log_set_callback(NULL, NULL);
    popc_tensor_free(plain);
    popc_tensor_free(miss);
    popc_tensor_free(hit);
    popc_model_free(a);
    popc_model_free(b);
}
END_TEST

/* CPU seconds of compiling a fresh deep MLP (training, sgd) once. */
static double deep_compile(const char *cache, int layers)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    popc_options *o = opts("cpu");
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    popc_tensor *in[2];
    int64_t xd[2] = {B * DI, 16}, ld[1] = {B * DI}, mxd[2] = {B, 16};
    int64_t mld[1] = {B};
    int x, lab, h, loss;
    struct timespec a, b;

    OK(popc_graph_new("deep", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, mxd, 2, &x));
    OK(popc_graph_add_input(g, "labels", POPC_DTYPE_I32, mld, 1, &lab));
    OK(popc_layers_new(g, 1, &L));
    h = x;
    for (int i = 0; i < layers; i++) {
        char name[16];
        snprintf(name, sizeof name, "fc%d", i);
        OK(popc_nn_linear(L, name, h, 16, 16, 1, &h));
        OK(popc_nn_layernorm(L, NULL, h, 16, 1e-5, &h));
        OK(popc_nn_activation(L, "Gelu", h, 0.0, &h));
    }
    OK(popc_nn_cross_entropy(L, h, lab, "mean", &loss));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    if (cache)
        OK(popc_options_set(o, "enableExecutableCaching", cache));
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", 0.01));
    OK(popc_model_new_training(g, o, opt, &m));
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &in[0]));
    OK(popc_tensor_new(POPC_DTYPE_I32, ld, 1, &in[1]));
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    OK(popc_model_compile(m, in, 2));
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
    popc_graph_free(g);
    return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) *
                                               1e-9;
}

/* A hit skips shape inference, verification, autodiff and the memory
** plan: on a deep graph that is measurable (CPU time, best of 5, so other
** processes on the machine do not decide it). */
START_TEST(cache_hit_is_faster)
{
    const char *cache = path_in("deep");
    double plain = 1e9, hit = 1e9, miss;

    hits = 0;
    popc_log_set_level(POPC_LOG_INFO);
    popc_log_set_callback(on_log, NULL);
    miss = deep_compile(cache, 300);
    for (int i = 0; i < 5; i++) {
        double t = deep_compile(NULL, 300);
        if (t < plain)
            plain = t;
        t = deep_compile(cache, 300);
        if (t < hit)
            hit = t;
    }
    popc_log_set_callback(NULL, NULL);
    ck_assert_int_eq(hits, 5);
    fprintf(stderr, "cache (300-layer MLP, 901 nodes, training): compile "
            "%.1f ms CPU without cache, %.1f ms on the miss, %.1f ms on a "
            "hit (%.0f%% saved)\n", plain * 1e3, miss * 1e3, hit * 1e3,
            100.0 * (plain - hit) / plain);
    ck_assert_msg(hit < plain, "a hit (%g s) is not faster than a compile "
                  "(%g s)", hit, plain);
}
END_TEST

START_TEST(cache_key_ignores_weight_values)
{
    const char *cache = path_in("c2");
    popc_options *o = opts("cpu");
    popc_graph *g1 = mlp(0, HID, 1), *g2 = mlp(0, HID, 2);
    popc_model *m1 = NULL, *m2 = NULL, *ref = NULL;
    popc_tensor *a, *b, *c;
    popc_options *ro = opts("cpu");

    OK(popc_options_set(o, "enableExecutableCaching", cache));
    popc_log_set_level(POPC_LOG_INFO);
    popc_log_set_callback(on_log, NULL);
    hits = 0;
    OK(popc_model_new_inference(g1, o, &m1));
    popc_tensor_free(infer(m1, 0));
    OK(popc_model_new_inference(g2, o, &m2));
    a = infer(m2, 0);
    ck_assert_int_eq(hits, 1);
    /* the hit runs with m2's own weights */
    OK(popc_model_new_inference(g2, ro, &ref));
    b = infer(ref, 0);
    same_tensor(a, b, "logits");
    c = infer(m1, 0);
    ck_assert(!popc_tensor_equal(a, c));
    popc_log_set_callback(NULL, NULL);
    popc_tensor_free(a);
    popc_tensor_free(b);
    popc_tensor_free(c);
    popc_model_free(m1);
    popc_model_free(m2);
    popc_model_free(ref);
    popc_graph_free(g1);
    popc_graph_free(g2);
    popc_options_free(o);
    popc_options_free(ro);
}
END_TEST

/* A training hit shares the hitting model's own weights with the compiled
** graph (the entry stores none): m2, built with other weights than the
** model that wrote the entry, hits and trains exactly as it does without
** the cache, and unlike m1. */
START_TEST(cache_training_hit_uses_own_weights)
{
    const char *cache = path_in("c2t");
    popc_options *o = opts("cpu"), *ro = opts("cpu");
    popc_graph *g1 = mlp(1, HID, 1), *g2 = mlp(1, HID, 2);
    popc_model *m1 = NULL, *m2 = NULL, *ref = NULL;
    popc_tensor *a = NULL, *b = NULL, *c = NULL;

    OK(popc_options_set(o, "enableExecutableCaching", cache));
    popc_log_set_level(POPC_LOG_INFO);
    popc_log_set_callback(on_log, NULL);
    hits = 0;
    m1 = train_model(o, g1);
    for (int k = 0; k < 2; k++) {
        popc_tensor_free(c);
        c = train_step(m1, k);
    }
    m2 = train_model(o, g2);
    ref = train_model(ro, g2);
    for (int k = 0; k < 2; k++) {
        popc_tensor_free(a);
        popc_tensor_free(b);
        a = train_step(m2, k);
        b = train_step(ref, k);
    }
    ck_assert_int_eq(hits, 1);
    same_tensor(a, b, "loss");
    same_weights(m2, ref);
    ck_assert(!popc_tensor_equal(a, c));
    popc_log_set_callback(NULL, NULL);
    popc_tensor_free(a);
    popc_tensor_free(b);
    popc_tensor_free(c);
    popc_model_free(m1);
    popc_model_free(m2);
    popc_model_free(ref);
    popc_graph_free(g1);
    popc_graph_free(g2);
    popc_options_free(o);
    popc_options_free(ro);
}
END_TEST

/* x + c for a constant c of IN values, all 0.5 but the last, `last`. */
static popc_graph *add_constant(float last)
{
    popc_graph *g = NULL;
    popc_tensor *c = NULL;
    int64_t xd[2] = {B, IN}, cd[1] = {IN};
    int x, k, y;
    float *v;

    OK(popc_graph_new("addc", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_tensor_new(POPC_DTYPE_F32, cd, 1, &c));
    v = popc_tensor_data(c);
    for (int i = 0; i < IN; i++)
        v[i] = i == IN - 1 ? last : 0.5f;
    OK(popc_graph_add_constant(g, "c", c, &k));
    popc_tensor_free(c);
    {
        int in[2] = {x, k};
        popc_node_desc d = {.size = sizeof d, .op = "Add", .inputs = in,
                            .n_inputs = 2, .n_outputs = 1};
        OK(popc_graph_add(g, &d, &y, NULL));
    }
    OK(popc_graph_add_output(g, y));
    return g;
}

/* The key covers constant values (as a digest of their bytes): a model
** whose constant differs in its last element only misses and computes
** with its own constant; the same constant again hits. */
START_TEST(cache_key_covers_constants)
{
    const char *cache = path_in("c4");
    popc_options *o = opts("cpu");
    popc_graph *g1 = add_constant(0.5f), *g2 = add_constant(0.75f),
               *g3 = add_constant(0.5f);
    popc_model *m1 = NULL, *m2 = NULL, *m3 = NULL;
    popc_tensor *a, *b, *c;

    OK(popc_options_set(o, "enableExecutableCaching", cache));
    popc_log_set_level(POPC_LOG_INFO);
    popc_log_set_callback(on_log, NULL);
    hits = misses = 0;
    OK(popc_model_new_inference(g1, o, &m1));
    a = infer(m1, 0);
    OK(popc_model_new_inference(g2, o, &m2));
    b = infer(m2, 0);
    ck_assert_int_eq(misses, 2);
    ck_assert_int_eq(hits, 0);
    OK(popc_model_new_inference(g3, o, &m3));
    c = infer(m3, 0);
    popc_log_set_callback(NULL, NULL);
    ck_assert_int_eq(hits, 1);
    same_tensor(a, c, "x + c (hit)");
    /* only the last column differs: by 0.25 */
    ck_assert_double_eq_tol(popc_tensor_max_abs_diff(a, b), 0.25, 1e-6);
    popc_tensor_free(a);
    popc_tensor_free(b);
    popc_tensor_free(c);
    popc_model_free(m1);
    popc_model_free(m2);
    popc_model_free(m3);
    popc_graph_free(g1);
    popc_graph_free(g2);
    popc_graph_free(g3);
    popc_options_free(o);
}
END_TEST

/* Two models that differ only in a compile option are two cache entries:
** the second compile misses, and the directory then holds both. */
START_TEST(cache_key_covers_options)
{
    const char *cache = path_in("c3");
    popc_options *o = opts("cpu"), *o2 = NULL;
    popc_graph *g = mlp(0, HID, 1);
    popc_model *m1 = NULL, *m2 = NULL;
    char cmd[800];
    FILE *p;
    int n = 0;

    OK(popc_options_set(o, "enableExecutableCaching", cache));
    popc_log_set_level(POPC_LOG_INFO);
    popc_log_set_callback(on_log, NULL);
    hits = misses = 0;
    OK(popc_model_new_inference(g, o, &m1));
    popc_tensor_free(infer(m1, 0));
    OK(popc_options_clone(o, &o2));
    OK(popc_options_set(o2, "Precision.enableFloatingPointExceptions",
                        "true"));
    OK(popc_model_new_inference(g, o2, &m2));
    popc_tensor_free(infer(m2, 0));
    popc_log_set_callback(NULL, NULL);
    ck_assert_int_eq(hits, 0);
    ck_assert_int_eq(misses, 2);
    snprintf(cmd, sizeof cmd, "ls '%s'/*.popcexe 2>/dev/null | wc -l",
             cache);
    p = popen(cmd, "r");
    ck_assert_int_eq(fscanf(p, "%d", &n), 1);
    pclose(p);
    ck_assert_int_eq(n, 2);
    popc_model_free(m1);
    popc_model_free(m2);
    popc_graph_free(g);
    popc_options_free(o);
    popc_options_free(o2);
}
END_TEST

static Suite *exe_suite(void)
{
    Suite *s = suite_create("executable");
    TCase *tc = tcase_create("files");
    TCase *tcc = tcase_create("cache");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, save_needs_a_compiled_model);
    tcase_add_test(tc, inference_round_trip);
    tcase_add_test(tc, training_continues_identically);
    tcase_add_test(tc, load_executable_into_same_graph);
    tcase_add_test(tc, edit_options_on_load);
    tcase_add_test(tc, describe_shows_the_contents);
    tcase_add_test(tc, damaged_files_refused);
    tcase_add_test(tc, every_damaged_byte_refused);
    tcase_add_test(tc, offline_export_then_run);
    suite_add_tcase(s, tc);
    tcase_add_checked_fixture(tcc, setup, teardown);
    tcase_set_timeout(tcc, 300);
    tcase_add_test(tcc, cache_miss_then_hit);
    tcase_add_test(tcc, cache_key_ignores_weight_values);
    tcase_add_test(tcc, cache_training_hit_uses_own_weights);
    tcase_add_test(tcc, cache_key_covers_options);
    tcase_add_test(tcc, cache_key_covers_constants);
    tcase_add_test(tcc, cache_hit_is_faster);
    suite_add_tcase(s, tcc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(exe_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
