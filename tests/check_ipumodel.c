/* check_ipumodel.c - the ipumodel backend's own behaviour: the tile map and
** its out-of-memory message on a tiny device, the memory counts of the
** report (persistent tensors, activations at their live ranges,
** temporaries bounded by the available-memory proportion), device
** options, the thread count (option and POPC_THREADS), node splitting,
** the JSON report (directly and in enableProfiling's profile.json), cycle
** estimates growing with the batch (cycleCount), worker errors reaching
** the caller, and replicas sharing the workers.
**
** Hand-made plans drive the backend directly (popc_backend_def) where the
** device must be tiny; the rest goes through popc_model.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/harness/assert.h"
#include "popc/layers.h"
#include "popc/log.h"
#include "popc/profile.h"
#include "popc/registry.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

/* ---- hand-made plans ---------------------------------------------------- */

typedef struct hplan {
    popc_plan plan;
    popc_plan_slot slots[16];
    popc_plan_node nodes[8];
    int io[64];
    int n_io;
} hplan;

static const popc_attrs no_attrs = {.n = 0, .items = NULL};

static const popc_backend_def *backend(const char *name)
{
    popc_registry *reg = NULL;
    const popc_backend_def *be;

    OK(popc_registry_global(&reg));
    be = popc_registry_find_backend(reg, name);
    ck_assert_msg(be != NULL, "backend %s is not loaded: %s", name,
                  popc_registry_problems(reg));
    return be;
}

static const popc_op_def *op(const char *name)
{
    popc_registry *reg = NULL;
    const popc_op_def *d;

    OK(popc_registry_global(&reg));
    d = popc_registry_find_op(reg, NULL, name, 0);
    ck_assert_ptr_nonnull(d);
    return d;
}

static void hplan_init(hplan *h)
{
    memset(h, 0, sizeof *h);
    h->plan.size = sizeof h->plan;
    h->plan.slot_size = sizeof(popc_plan_slot);
    h->plan.node_size = sizeof(popc_plan_node);
    h->plan.slots = h->slots;
    h->plan.nodes = h->nodes;
    h->plan.n_ipus = 1;
    h->plan.n_stages = 1;
    h->plan.replicas = 1;
}

/* A float32 [rows, cols] slot live over [first, last]. */
static int slot(hplan *h, const char *name, popc_slot_kind kind,
                int64_t rows, int64_t cols, int first, int last)
{
    popc_plan_slot *s = &h->slots[h->plan.n_slots];

    s->name = name;
    s->kind = kind;
    s->info.dtype = POPC_DTYPE_F32;
    s->info.rank = 2;
    s->info.dims[0] = rows;
    s->info.dims[1] = cols;
    s->first_use = first;
    s->last_use = last;
    return h->plan.n_slots++;
}

/* Relu from slot x to slot y, with a work estimate. */
static void relu(hplan *h, const char *name, int x, int y, double temp)
{
    popc_plan_node *n = &h->nodes[h->plan.n_nodes];
    double elems = (double)(h->slots[y].info.dims[0] *
                            h->slots[y].info.dims[1]);

    n->op = op("Relu");
    n->name = name;
    n->attrs = &no_attrs;
    n->n_inputs = 1;
    n->n_outputs = 1;
    n->inputs = &h->io[h->n_io];
    h->io[h->n_io++] = x;
    n->outputs = &h->io[h->n_io];
    h->io[h->n_io++] = y;
    n->cost = (popc_cost){elems, 8.0 * elems, temp};
    h->plan.n_nodes++;
    h->plan.n_forward = h->plan.n_nodes;
}

static popc_backend_config device(int tiles, int64_t bytes)
{
    popc_backend_config c;

    memset(&c, 0, sizeof c);
    c.size = sizeof c;
    c.threads = 2;
    c.ipu_version = 2;
    c.n_ipus = 1;
    c.replicas = 1;
    c.tiles_per_ipu = tiles;
    c.bytes_per_tile = bytes;
    return c;
}

/* w [64, 64] (16 KiB), y = Relu(x), x and y [4, 64]. */
static void weight_plan(hplan *h)
{
    int x, y;

    hplan_init(h);
    slot(h, "w", POPC_SLOT_WEIGHT, 64, 64, 0, 1);
    x = slot(h, "x", POPC_SLOT_INPUT, 4, 64, 0, 1);
    y = slot(h, "y", POPC_SLOT_ACT, 4, 64, 0, 1);
    relu(h, "relu", x, y, 0.0);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *s;
    long n;

    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    s = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(fread(s, 1, (size_t)n, f), n);
    s[n] = '\0';
    fclose(f);
    return s;
}

/* The number after the first "key": at or after from. */
static double json_num(const char *json, const char *from, const char *key)
{
    char pat[64];
    const char *p = from ? strstr(json, from) : json;

    ck_assert_msg(p != NULL, "'%s' not in the report", from);
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    p = strstr(p, pat);
    ck_assert_msg(p != NULL, "'%s' not in the report", key);
    return strtod(p + strlen(pat), NULL);
}

static char *temp_dir(void)
{
    char tmpl[] = "/tmp/check_ipumodel_XXXXXX";
    char *d = mkdtemp(tmpl);

    ck_assert_ptr_nonnull(d);
    return strdup(d);
}

static void remove_dir(char *dir)
{
    char path[512];

    snprintf(path, sizeof path, "%s/r.json", dir);
    unlink(path);
    rmdir(dir);
    free(dir);
}

/* The inference model's profile.json under dir (enableProfiling), read;
** its files and subdirectory are removed. */
static char *take_profile(const char *dir)
{
    char path[512], *json;

    snprintf(path, sizeof path, "%s/inference/profile.json", dir);
    json = read_file(path);
    unlink(path);
    snprintf(path, sizeof path, "%s/inference/profile.html", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/inference", dir);
    rmdir(path);
    return json;
}

/* A report sink that writes to a FILE. */
static popc_status to_file(void *user, const void *bytes, size_t n)
{
    return fwrite(bytes, 1, n, user) == n ? POPC_OK : POPC_EIO;
}

/* Compile h on a device; report to dir/r.json when dir != NULL. */
static popc_status compile_plan(const popc_backend_config *cfg, hplan *h,
                                const char *dir, double *cycles)
{
    const popc_backend_def *be = backend("ipumodel");
    void *ctx = NULL, *exe = NULL;
    popc_status st;

    OK(be->open(cfg, &ctx));
    st = be->compile(ctx, &h->plan, &exe);
    if (st == POPC_OK) {
        if (dir) {
            char path[512];
            FILE *f;

            snprintf(path, sizeof path, "%s/r.json", dir);
            ck_assert_ptr_nonnull(f = fopen(path, "w"));
            OK(be->report_to(ctx, exe, to_file, f));
            ck_assert_int_eq(fclose(f), 0);
        }
        if (cycles)
            *cycles = be->cycles(ctx, exe, 0, h->plan.n_nodes);
        be->exe_free(ctx, exe);
    }
    be->close(ctx);
    return st;
}

/* ---- the tile map ------------------------------------------------------- */

START_TEST(oom_names_tile_and_tensors)
{
    popc_backend_config cfg = device(4, 4096);
    hplan h;
    const char *msg;

    weight_plan(&h);
    ck_assert_int_eq(compile_plan(&cfg, &h, NULL, NULL), POPC_ECOMPILE);
    msg = popc_last_error();
    ck_assert_msg(strncmp(msg, "out of memory on IPU 0 tile ", 28) == 0,
                  "%s", msg);
    ASSERT_HAS(msg, "available 4096;");
    ASSERT_HAS(msg, "largest tensors on this tile: w (4096 bytes)");
    ASSERT_HAS(msg, "reduce the batch size, use more IPUs (pipelining), or "
                    "recomputation");
    ASSERT_HAS(msg, "4 tiles x 4096 bytes");
}
END_TEST

START_TEST(memory_counts_in_report)
{
    popc_backend_config cfg = device(4, 65536);
    char *dir = temp_dir(), *json, path[512];
    hplan h;

    weight_plan(&h);
    OK(compile_plan(&cfg, &h, dir, NULL));
    snprintf(path, sizeof path, "%s/r.json", dir);
    json = read_file(path);
    ck_assert_msg(strncmp(json, "{\"backend\": \"ipumodel\"", 22) == 0, "%s",
                  json);
    ck_assert_int_eq((int)json_num(json, "\"device\"", "tiles_per_ipu"), 4);
    ck_assert_int_eq((int)json_num(json, "\"totals\"", "weights"), 16384);
    /* x and y are both live at the one node */
    ck_assert_int_eq((int)json_num(json, "\"totals\"", "activations"), 2048);
    ck_assert_int_eq((int)json_num(json, "\"totals\"", "gradients"), 0);
    ck_assert_int_eq((int)json_num(json, "\"totals\"", "temporaries"), 0);
    ck_assert_int_eq((int)json_num(json, "\"totals\"", "total"), 18432);
    ck_assert_int_eq((int)json_num(json, "\"ipus\"", "used_bytes"), 18432);
    ck_assert_int_eq((int)json_num(json, "\"ipus\"", "free_bytes"),
                     4 * 65536 - 18432);
    free(json);
    remove_dir(dir);
}
END_TEST

/* x -> a1 -> a2 -> a3: at most two activations are live at a time. */
START_TEST(activations_count_at_live_ranges)
{
    popc_backend_config cfg = device(16, 65536);
    char *dir = temp_dir(), *json, path[512];
    hplan h;
    int x, a1, a2, a3;

    hplan_init(&h);
    x = slot(&h, "x", POPC_SLOT_INPUT, 4, 256, 0, 3);
    a1 = slot(&h, "a1", POPC_SLOT_ACT, 4, 256, 0, 1);
    a2 = slot(&h, "a2", POPC_SLOT_ACT, 4, 256, 1, 2);
    a3 = slot(&h, "a3", POPC_SLOT_ACT, 4, 256, 2, 3);
    relu(&h, "r1", x, a1, 0.0);
    relu(&h, "r2", a1, a2, 0.0);
    relu(&h, "r3", a2, a3, 0.0);
    OK(compile_plan(&cfg, &h, dir, NULL));
    snprintf(path, sizeof path, "%s/r.json", dir);
    json = read_file(path);
    ck_assert_int_eq((int)json_num(json, "\"totals\"", "activations"),
                     2 * 4096);
    free(json);
    remove_dir(dir);
}
END_TEST

/* a1 is made at 0 and read at 3: kept off chip in between (phased
** execution), the peak is two activations instead of three. */
static int64_t offchip_peak(int offchip)
{
    popc_backend_config cfg = device(16, 65536);
    char *dir = temp_dir(), *json, path[512];
    int off_from[6], off_to[6];
    int64_t acts;
    hplan h;
    int x, a1, a2, a3, a4;

    hplan_init(&h);
    x = slot(&h, "x", POPC_SLOT_INPUT, 4, 256, 0, 4);
    a1 = slot(&h, "a1", POPC_SLOT_ACT, 4, 256, 0, 3);
    a2 = slot(&h, "a2", POPC_SLOT_ACT, 4, 256, 1, 2);
    a3 = slot(&h, "a3", POPC_SLOT_ACT, 4, 256, 2, 2);
    a4 = slot(&h, "a4", POPC_SLOT_ACT, 4, 256, 3, 3);
    relu(&h, "r1", x, a1, 0.0);
    relu(&h, "r2", x, a2, 0.0);
    relu(&h, "r3", a2, a3, 0.0);
    relu(&h, "r4", a1, a4, 0.0);
    for (int s = 0; s < 6; s++)
        off_from[s] = off_to[s] = -1;
    off_from[a1] = 0;
    off_to[a1] = 3;
    if (offchip) {
        h.plan.offchip_from = off_from;
        h.plan.offchip_to = off_to;
    }
    OK(compile_plan(&cfg, &h, dir, NULL));
    snprintf(path, sizeof path, "%s/r.json", dir);
    json = read_file(path);
    acts = (int64_t)json_num(json, "\"totals\"", "activations");
    free(json);
    remove_dir(dir);
    return acts;
}

START_TEST(offchip_activations_leave_the_tiles)
{
    ck_assert_int_eq(offchip_peak(0), 3 * 4096);
    ck_assert_int_eq(offchip_peak(1), 2 * 4096);
}
END_TEST

/* 24000 bytes of temporaries over 4 tiles is 6000 per tile: with half of
** 4096 available a tile takes 2048, so the node runs in 3 steps of 2000;
** with a quarter, 6 steps of 1000, and more cycles. */
START_TEST(temporaries_follow_available_memory)
{
    popc_backend_config cfg = device(4, 4096);
    char *dir = temp_dir(), *json, path[512];
    double c_half = 0.0, c_quarter = 0.0;
    hplan h;
    int x, y;

    cfg.available_memory = 0.5;
    hplan_init(&h);
    x = slot(&h, "x", POPC_SLOT_INPUT, 4, 64, 0, 1);
    y = slot(&h, "y", POPC_SLOT_ACT, 4, 64, 0, 1);
    relu(&h, "relu", x, y, 24000.0);
    snprintf(path, sizeof path, "%s/r.json", dir);
    OK(compile_plan(&cfg, &h, dir, &c_half));
    json = read_file(path);
    ck_assert_int_eq((int)json_num(json, "\"ops\"", "serial"), 3);
    ck_assert_int_eq((int)json_num(json, "\"totals\"", "temporaries"),
                     4 * 2000);
    free(json);
    h.nodes[0].available_memory = 0.25;
    OK(compile_plan(&cfg, &h, dir, &c_quarter));
    json = read_file(path);
    ck_assert_int_eq((int)json_num(json, "\"ops\"", "serial"), 6);
    ck_assert_int_eq((int)json_num(json, "\"totals\"", "temporaries"),
                     4 * 1000);
    ck_assert_msg(c_half > 0.0 && c_quarter > c_half, "cycles %g, %g",
                  c_half, c_quarter);
    free(json);
    remove_dir(dir);
}
END_TEST

START_TEST(mk1_device_is_smaller)
{
    popc_backend_config cfg = device(0, 0);
    char *dir = temp_dir(), *json, path[512];
    hplan h;

    cfg.ipu_version = 1;
    weight_plan(&h);
    OK(compile_plan(&cfg, &h, dir, NULL));
    snprintf(path, sizeof path, "%s/r.json", dir);
    json = read_file(path);
    ck_assert_int_eq((int)json_num(json, "\"device\"", "tiles_per_ipu"),
                     1216);
    ck_assert_int_eq((int)json_num(json, "\"device\"", "bytes_per_tile"),
                     256 * 1024);
    free(json);
    remove_dir(dir);
}
END_TEST

START_TEST(bad_device_config_is_refused)
{
    const popc_backend_def *be = backend("ipumodel");
    popc_backend_config cfg = device(4, 4096);
    void *ctx = NULL;

    cfg.ipu_version = 3;
    ck_assert_int_eq(be->open(&cfg, &ctx), POPC_ECONFIG);
    ASSERT_HAS(popc_last_error(), "ipuVersion 3");
    ck_assert_ptr_null(ctx);
    cfg = device(-4, 4096);
    ck_assert_int_eq(be->open(&cfg, &ctx), POPC_ECONFIG);
    ASSERT_HAS(popc_last_error(), "-4 tiles");
    cfg = device(4, 4096);
    cfg.threads = -1;
    ck_assert_int_eq(be->open(&cfg, &ctx), POPC_ECONFIG);
    ASSERT_HAS(popc_last_error(), "threads");
}
END_TEST

/* ---- through popc_model ------------------------------------------------- */

/* 784 -> 256 -> ReLU -> 10 with cross entropy on batch rows. */
static popc_graph *mlp(int64_t batch)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int64_t xd[2] = {batch, 784}, ld[1] = {batch};
    int x, lab, h, r, o, loss;

    OK(popc_graph_new("mlp", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_input(g, "label", POPC_DTYPE_I32, ld, 1, &lab));
    OK(popc_layers_new(g, 5, &L));
    OK(popc_nn_linear(L, "fc1", x, 784, 256, 1, &h));
    OK(popc_nn_activation(L, "Relu", h, 0.0, &r));
    OK(popc_nn_linear(L, "fc2", r, 256, 10, 1, &o));
    OK(popc_nn_cross_entropy(L, o, lab, "mean", &loss));
    OK(popc_graph_add_output(g, o));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    return g;
}

/* x [batch, 1, 28, 28] -> Conv 3x3 to 16 channels -> Relu -> Conv 3x3 to
** 16 -> Relu -> Linear -> loss: the second convolution's temporaries (its
** im2col columns, 144 x 784 floats) need more than 256 bytes on every tile
** of a Mk2 IPU. */
static popc_graph *cnn(int64_t batch)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int64_t xd[4] = {batch, 1, 28, 28}, ld[1] = {batch};
    int x, lab, c, r, c2, r2, f, o, loss;

    OK(popc_graph_new("cnn", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 4, &x));
    OK(popc_graph_add_input(g, "label", POPC_DTYPE_I32, ld, 1, &lab));
    OK(popc_layers_new(g, 5, &L));
    OK(popc_nn_conv2d(L, "conv", x, 1, 16, 3, 1, 1, 1, 1, 1, &c));
    OK(popc_nn_activation(L, "Relu", c, 0.0, &r));
    OK(popc_nn_conv2d(L, "conv2", r, 16, 16, 3, 1, 1, 1, 1, 1, &c2));
    OK(popc_nn_activation(L, "Relu", c2, 0.0, &r2));
    OK(popc_nn_flatten(L, r2, 1, &f));
    OK(popc_nn_linear(L, "fc", f, 16 * 784, 10, 1, &o));
    OK(popc_nn_cross_entropy(L, o, lab, "mean", &loss));
    OK(popc_graph_add_output(g, o));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    return g;
}

/* Inputs of mlp() (conv 0) or cnn() (conv 1). */
static void model_inputs(int64_t rows, int conv, popc_tensor **in)
{
    int64_t xd[4] = {rows, 784, 0, 0}, ld[1] = {rows};
    float *x;
    int32_t *l;

    if (conv) {
        xd[1] = 1;
        xd[2] = xd[3] = 28;
    }
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, conv ? 4 : 2, &in[0]));
    OK(popc_tensor_new(POPC_DTYPE_I32, ld, 1, &in[1]));
    x = popc_tensor_data(in[0]);
    l = popc_tensor_data(in[1]);
    for (int64_t i = 0; i < rows * 784; i++)
        x[i] = (float)((i * 7919) % 1000) / 1000.0f;
    for (int64_t i = 0; i < rows; i++)
        l[i] = (int32_t)(i % 10);
}

static popc_options *opts(const char *backend, int threads, const char *dir)
{
    popc_options *o = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    if (threads >= 0)
        OK(popc_options_set_int(o, "threads", threads));
    if (dir)
        OK(popc_options_set(o, "enableProfiling", dir));
    return o;
}

/* The statistics line ipumodel logs (DEBUG) when a compiled model goes. */
static char stats_line[512];

static void on_log(int level, const char *msg, void *user)
{
    (void)level;
    (void)user;
    if (strstr(msg, "ipumodel: ") == msg && strstr(msg, " split over "))
        snprintf(stats_line, sizeof stats_line, "%s", msg);
}

typedef struct run_stats {
    long long nodes, splits, parallel;
    int threads;
} run_stats;

/* Inference on 32 rows with these options (freed). */
static run_stats stats_of_run(popc_options *o)
{
    popc_graph *g = mlp(32);
    popc_model *m = NULL;
    popc_tensor *in[2], *out[2];
    run_stats s = {-1, -1, -1, -1};

    stats_line[0] = '\0';
    popc_log_set_callback(on_log, NULL);
    popc_log_set_level(POPC_LOG_DEBUG);
    OK(popc_model_new_inference(g, o, &m));
    model_inputs(32, 0, in);
    OK(popc_model_run(m, in, 2, out, 2));
    popc_model_free(m);
    popc_log_set_callback(NULL, NULL);
    for (int i = 0; i < 2; i++) {
        popc_tensor_free(in[i]);
        popc_tensor_free(out[i]);
    }
    popc_graph_free(g);
    popc_options_free(o);
    ck_assert_int_eq(sscanf(stats_line, "ipumodel: %lld nodes run, %lld "
                            "split over workers, %lld parallel calls, %d "
                            "threads", &s.nodes, &s.splits, &s.parallel,
                            &s.threads), 4);
    return s;
}

START_TEST(thread_option_sets_workers_and_splits)
{
    run_stats s = stats_of_run(opts("ipumodel", 3, NULL));

    ck_assert_int_eq(s.threads, 3);
    ck_assert_int_gt(s.nodes, 0);
    ck_assert_int_gt(s.splits, 0);
    s = stats_of_run(opts("ipumodel", 1, NULL));
    ck_assert_int_eq(s.threads, 1);
    ck_assert_int_eq(s.splits, 0);
}
END_TEST

START_TEST(popc_threads_env_is_the_default)
{
    run_stats s;

    setenv("POPC_THREADS", "2", 1);
    s = stats_of_run(opts("ipumodel", -1, NULL));
    unsetenv("POPC_THREADS");
    ck_assert_int_eq(s.threads, 2);
}
END_TEST

/* enableProfiling's profile.json carries the backend's report. */
START_TEST(profile_has_the_tile_report)
{
    char *dir = temp_dir(), *json;
    run_stats s = stats_of_run(opts("ipumodel", 2, dir));

    ck_assert_int_gt(s.nodes, 0);
    json = take_profile(dir);
    ck_assert_int_eq((int)json_num(json, "\"device\"", "tiles_per_ipu"),
                     1472);
    ck_assert_int_gt((int)json_num(json, "\"totals\"", "weights"),
                     (784 * 256 + 256 * 10) * 4);
    ASSERT_HAS(json, "\"temporaries\": ");
    free(json);
    remove_dir(dir);
}
END_TEST

/* Cycles of a run of one micro-batch of `batch` rows (logCycleCount), with
** option `name` set to `value` (name NULL: nothing set). */
static double run_cycles_with(int64_t batch, int conv, const char *name,
                              const char *value)
{
    popc_options *o = opts("ipumodel", 2, NULL);
    popc_graph *g = conv ? cnn(batch) : mlp(batch);
    popc_model *m = NULL;
    popc_tensor *in[2], *out[2];
    double cycles = 0.0;

    OK(popc_options_set(o, "logCycleCount", "true"));
    if (name)
        OK(popc_options_set(o, name, value));
    OK(popc_model_new_inference(g, o, &m));
    model_inputs(batch, conv, in);
    OK(popc_model_run(m, in, 2, out, 2));
    OK(popc_model_cycle_count(m, &cycles));
    for (int i = 0; i < 2; i++) {
        popc_tensor_free(in[i]);
        popc_tensor_free(out[i]);
    }
    popc_model_free(m);
    popc_graph_free(g);
    popc_options_free(o);
    return cycles;
}

static double run_cycles(int64_t batch)
{
    return run_cycles_with(batch, 0, NULL, NULL);
}

/* The proportion applies to the IPU it names: a tiny one on IPU0 (where
** the model runs) serialises its temporaries into more steps; the same on
** IPU1 changes nothing. */
START_TEST(available_memory_applies_per_ipu)
{
    const char *amp = "setAvailableMemoryProportion";
    double plain = run_cycles_with(4, 1, NULL, NULL);
    double ipu0 = run_cycles_with(4, 1, amp, "IPU0=0.0001");
    double ipu1 = run_cycles_with(4, 1, amp, "IPU0=0.6,IPU1=0.0001");

    ck_assert_msg(ipu0 > plain, "IPU0=0.0001: %g cycles, default %g", ipu0,
                  plain);
    ck_assert_msg(ipu1 == plain, "IPU1=0.0001: %g cycles, default %g", ipu1,
                  plain);
}
END_TEST

/* numIOTiles takes tiles from compute: the convolution that spreads over
** every tile runs on fewer, in more cycles; the report says how many. */
START_TEST(io_tiles_leave_fewer_compute_tiles)
{
    char *dir = temp_dir(), *json;
    double plain = run_cycles_with(4, 1, NULL, NULL);
    double io = run_cycles_with(4, 1, "TensorLocations.numIOTiles", "192");
    popc_options *o = opts("ipumodel", 2, dir);
    popc_graph *g = cnn(4);
    popc_model *m = NULL;
    popc_tensor *in[2];

    ck_assert_msg(io > plain, "192 I/O tiles: %g cycles, none: %g", io,
                  plain);
    OK(popc_options_set(o, "TensorLocations.numIOTiles", "192"));
    OK(popc_model_new_inference(g, o, &m));
    model_inputs(4, 1, in);
    OK(popc_model_compile(m, in, 2));
    json = take_profile(dir);
    ck_assert_int_eq((int)json_num(json, "\"device\"", "tiles_per_ipu"),
                     1472);
    ck_assert_int_eq((int)json_num(json, "\"device\"", "io_tiles"), 192);
    ck_assert_int_eq((int)json_num(json, "\"device\"", "compute_tiles"),
                     1280);
    free(json);
    for (int i = 0; i < 2; i++)
        popc_tensor_free(in[i]);
    popc_model_free(m);
    popc_graph_free(g);
    popc_options_free(o);
    remove_dir(dir);
}
END_TEST

START_TEST(cycles_grow_with_batch)
{
    double prev = 0.0;

    for (int64_t b = 1; b <= 256; b *= 4) {
        double c = run_cycles(b);
        ck_assert_msg(c > prev, "batch %lld: %g cycles, not more than %g",
                      (long long)b, c, prev);
        prev = c;
    }
}
END_TEST

/* A bad index found by a helper thread: the caller gets the message the
** cpu backend gives. */
static popc_status gather_run(const char *backend, int threads, char *msg,
                              size_t size)
{
    popc_graph *g = NULL;
    popc_options *o = opts(backend, threads, NULL);
    popc_model *m = NULL;
    popc_tensor *table = NULL, *idx = NULL, *out = NULL;
    int64_t td[2] = {1000, 64}, id[2] = {1, 4096};
    int t, i, y;
    int32_t *p;
    popc_status st;

    OK(popc_graph_new("gather", &g));
    OK(popc_tensor_new(POPC_DTYPE_F32, td, 2, &table));
    OK(popc_graph_add_initializer(g, "table", table, 0, &t));
    OK(popc_graph_add_input(g, "idx", POPC_DTYPE_I32, id, 2, &i));
    OK(popc_graph_add_node(g, NULL, "Gather", 0, (int[]){t, i}, 2, &y, 1,
                           NULL, 0, "gather", NULL));
    OK(popc_graph_add_output(g, y));
    OK(popc_model_new_inference(g, o, &m));
    OK(popc_tensor_new(POPC_DTYPE_I32, id, 2, &idx));
    p = popc_tensor_data(idx);
    for (int k = 0; k < 4096; k++)
        p[k] = k % 1000;
    p[4000] = 5000;
    st = popc_model_run(m, &idx, 1, &out, 1);
    snprintf(msg, size, "%s", popc_last_error());
    popc_tensor_free(out);
    popc_tensor_free(idx);
    popc_tensor_free(table);
    popc_model_free(m);
    popc_graph_free(g);
    popc_options_free(o);
    return st;
}

START_TEST(worker_error_reaches_caller)
{
    char want[2048], got[2048];
    popc_status st = gather_run("cpu", 1, want, sizeof want);

    ck_assert_int_ne(st, POPC_OK);
    ck_assert_int_eq(gather_run("ipumodel", 3, got, sizeof got), st);
    ck_assert_str_eq(got, want);
    ASSERT_HAS(got, "gather");
}
END_TEST

/* Training with 4 replicas on 3 workers (uneven groups) and on 1 worker
** gives the cpu backend's weights bitwise. */
static popc_tensor *train_fc1(const char *backend, int threads)
{
    popc_options *o = opts(backend, threads, NULL);
    popc_graph *g = mlp(8);
    popc_model *m = NULL;
    popc_tensor *in[2], *out[2], *w = NULL;
    const popc_tensor *t = NULL;

    OK(popc_options_set_int(o, "replicationFactor", 4));
    OK(popc_options_set_int(o, "Training.gradientAccumulation", 2));
    OK(popc_model_new_training(g, o, NULL, &m));
    model_inputs(8 * 4 * 2, 0, in);
    for (int step = 0; step < 2; step++) {
        OK(popc_model_run(m, in, 2, out, 2));
        popc_tensor_free(out[0]);
        popc_tensor_free(out[1]);
    }
    OK(popc_model_get_weight(m, "fc1.weight", &t));
    OK(popc_tensor_clone(t, &w));
    popc_model_free(m);
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_graph_free(g);
    popc_options_free(o);
    return w;
}

START_TEST(replicas_share_workers)
{
    popc_tensor *ref = train_fc1("cpu", 1);
    popc_tensor *three = train_fc1("ipumodel", 3);
    popc_tensor *one = train_fc1("ipumodel", 1);

    ck_assert(memcmp(popc_tensor_cdata(ref), popc_tensor_cdata(three),
                     popc_tensor_nbytes(ref)) == 0);
    ck_assert(memcmp(popc_tensor_cdata(ref), popc_tensor_cdata(one),
                     popc_tensor_nbytes(ref)) == 0);
    popc_tensor_free(ref);
    popc_tensor_free(three);
    popc_tensor_free(one);
}
END_TEST

static Suite *ipumodel_suite(void)
{
    Suite *s = suite_create("ipumodel");
    TCase *map = tcase_create("tile_map");
    TCase *run = tcase_create("run");

    tcase_add_test(map, oom_names_tile_and_tensors);
    tcase_add_test(map, memory_counts_in_report);
    tcase_add_test(map, activations_count_at_live_ranges);
    tcase_add_test(map, offchip_activations_leave_the_tiles);
    tcase_add_test(map, temporaries_follow_available_memory);
    tcase_add_test(map, available_memory_applies_per_ipu);
    tcase_add_test(map, io_tiles_leave_fewer_compute_tiles);
    tcase_add_test(map, mk1_device_is_smaller);
    tcase_add_test(map, bad_device_config_is_refused);
    suite_add_tcase(s, map);
    tcase_set_timeout(run, 300);
    tcase_add_test(run, thread_option_sets_workers_and_splits);
    tcase_add_test(run, popc_threads_env_is_the_default);
    tcase_add_test(run, profile_has_the_tile_report);
    tcase_add_test(run, cycles_grow_with_batch);
    tcase_add_test(run, worker_error_reaches_caller);
    tcase_add_test(run, replicas_share_workers);
    suite_add_tcase(s, run);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ipumodel_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
