/* check_offline.c - the offline backend (useOfflineIpuTarget): it compiles
** for IPU versions 1, 2 and 21 with the IPU model's memory checks and
** report, and refuses to run with PopTorch's text, through popc_model and
** when driven directly. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/harness/assert.h"
#include "popc/layers.h"
#include "popc/registry.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

#define NEVER_TEXT                                                           \
    "Trying to run a model on an offline device (ConnectionType.Never): "   \
    "use model.compile(inputs) instead of model(inputs)"

static const popc_backend_def *offline(void)
{
    popc_registry *reg = NULL;
    const popc_backend_def *be;

    OK(popc_registry_global(&reg));
    be = popc_registry_find_backend(reg, "offline");
    ck_assert_msg(be != NULL, "offline backend not loaded: %s",
                  popc_registry_problems(reg));
    return be;
}

/* 64 -> 32 -> ReLU -> 10, MSE against y. */
static popc_graph *model_graph(void)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int64_t xd[2] = {4, 64}, yd[2] = {4, 10};
    int x, y, h, r, o, loss;

    OK(popc_graph_new("net", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_input(g, "y", POPC_DTYPE_F32, yd, 2, &y));
    OK(popc_layers_new(g, 2, &L));
    OK(popc_nn_linear(L, "fc1", x, 64, 32, 1, &h));
    OK(popc_nn_activation(L, "Relu", h, 0.0, &r));
    OK(popc_nn_linear(L, "fc2", r, 32, 10, 1, &o));
    OK(popc_nn_mse_loss(L, o, y, "mean", &loss));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    return g;
}

static void inputs(popc_tensor **in)
{
    int64_t xd[2] = {4, 64}, yd[2] = {4, 10};

    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &in[0]));
    OK(popc_tensor_new(POPC_DTYPE_F32, yd, 2, &in[1]));
}

/* A training model for the offline target of this IPU version. */
static popc_model *offline_model(int version, const char *profile)
{
    popc_options *o = NULL;
    popc_graph *g = model_graph();
    popc_model *m = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set_int(o, "useOfflineIpuTarget", version));
    if (profile)
        OK(popc_options_set(o, "enableProfiling", profile));
    OK(popc_model_new_training(g, o, NULL, &m));
    popc_options_free(o);
    popc_graph_free(g);
    return m;
}

START_TEST(compiles_then_refuses_to_run)
{
    popc_model *m = offline_model(2, NULL);
    popc_tensor *in[2], *out = NULL;

    inputs(in);
    OK(popc_model_compile(m, in, 2));
    ck_assert(popc_model_is_compiled(m));
    ck_assert_int_ne(popc_model_run(m, in, 2, &out, 1), POPC_OK);
    ASSERT_HAS(popc_last_error(), NEVER_TEXT);
    ck_assert_ptr_null(out);
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_model_free(m);
}
END_TEST

static char *read_report(const char *dir)
{
    char path[512], *s;
    FILE *f;
    long n;

    snprintf(path, sizeof path, "%s/training/profile.json", dir);
    f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "no report in %s", dir);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    s = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(s, 1, (size_t)n, f), n);
    s[n] = '\0';
    fclose(f);
    unlink(path);
    snprintf(path, sizeof path, "%s/training/profile.html", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/training", dir);
    rmdir(path);
    return s;
}

START_TEST(each_ipu_version_compiles)
{
    static const int versions[3] = {1, 2, 21};
    static const char *const tiles[3] = {"\"tiles_per_ipu\": 1216",
                                         "\"tiles_per_ipu\": 1472",
                                         "\"tiles_per_ipu\": 1472"};
    char tmpl[] = "/tmp/check_offline_XXXXXX";
    char *dir = mkdtemp(tmpl), want[64];

    ck_assert_ptr_nonnull(dir);
    for (int i = 0; i < 3; i++) {
        popc_model *m = offline_model(versions[i], dir);
        popc_tensor *in[2];
        char *json;

        inputs(in);
        OK(popc_model_compile(m, in, 2));
        json = read_report(dir);
        snprintf(want, sizeof want, "\"ipu_version\": %d", versions[i]);
        ASSERT_HAS(json, want);
        ASSERT_HAS(json, tiles[i]);
        ASSERT_HAS(json, "\"weights\": ");
        free(json);
        popc_tensor_free(in[0]);
        popc_tensor_free(in[1]);
        popc_model_free(m);
    }
    rmdir(dir);
}
END_TEST

START_TEST(backend_refuses_runs_and_bad_versions)
{
    const popc_backend_def *be = offline();
    popc_backend_config cfg;
    void *ctx = NULL;

    ck_assert_uint_eq(be->caps & POPC_BACKEND_CAN_RUN, 0);
    ck_assert_ptr_nonnull(be->run_nodes);
    ck_assert_int_eq(be->run_nodes(NULL, NULL, NULL, 0, 0), POPC_EBACKEND);
    ck_assert_str_eq(popc_last_error(), NEVER_TEXT);
    memset(&cfg, 0, sizeof cfg);
    cfg.size = sizeof cfg;
    cfg.ipu_version = 3;
    ck_assert_int_eq(be->open(&cfg, &ctx), POPC_ECONFIG);
    ASSERT_HAS(popc_last_error(), "offline backend: ipuVersion 3");
    ck_assert_ptr_null(ctx);
}
END_TEST

/* 16 KiB of weights do not fit 4 tiles of 2 KiB. */
START_TEST(out_of_memory_is_a_compile_error)
{
    const popc_backend_def *be = offline();
    popc_registry *reg = NULL;
    popc_backend_config cfg;
    popc_plan_slot slots[3];
    popc_plan_node node;
    popc_plan plan;
    popc_attrs none = {.n = 0, .items = NULL};
    int in = 1, out = 2;
    void *ctx = NULL, *exe = NULL;

    OK(popc_registry_global(&reg));
    memset(slots, 0, sizeof slots);
    for (int i = 0; i < 3; i++) {
        slots[i].info.dtype = POPC_DTYPE_F32;
        slots[i].info.rank = 2;
        slots[i].info.dims[0] = i == 0 ? 64 : 4;
        slots[i].info.dims[1] = 64;
        slots[i].last_use = 1;
    }
    slots[0].name = "big.weight";
    slots[0].kind = POPC_SLOT_WEIGHT;
    slots[1].name = "x";
    slots[1].kind = POPC_SLOT_INPUT;
    slots[2].name = "y";
    slots[2].kind = POPC_SLOT_ACT;
    memset(&node, 0, sizeof node);
    node.op = popc_registry_find_op(reg, NULL, "Relu", 0);
    node.name = "relu";
    node.attrs = &none;
    node.n_inputs = node.n_outputs = 1;
    node.inputs = &in;
    node.outputs = &out;
    memset(&plan, 0, sizeof plan);
    plan.size = sizeof plan;
    plan.slot_size = sizeof(popc_plan_slot);
    plan.node_size = sizeof(popc_plan_node);
    plan.n_slots = 3;
    plan.slots = slots;
    plan.n_nodes = plan.n_forward = 1;
    plan.nodes = &node;
    plan.n_ipus = plan.n_stages = plan.replicas = 1;
    memset(&cfg, 0, sizeof cfg);
    cfg.size = sizeof cfg;
    cfg.ipu_version = 21;
    cfg.tiles_per_ipu = 4;
    cfg.bytes_per_tile = 2048;
    OK(be->open(&cfg, &ctx));
    ck_assert_int_eq(be->compile(ctx, &plan, &exe), POPC_ECOMPILE);
    ASSERT_HAS(popc_last_error(), "out of memory on IPU 0 tile 0: needed "
                                  "4608 bytes, available 2048; largest "
                                  "tensors on this tile: big.weight (4096 "
                                  "bytes)");
    ASSERT_HAS(popc_last_error(), "offline backend: Mk2 (IPU21)");
    ck_assert_ptr_null(exe);
    cfg.bytes_per_tile = 8192;
    be->close(ctx);
    OK(be->open(&cfg, &ctx));
    OK(be->compile(ctx, &plan, &exe));
    ck_assert(be->cycles(ctx, exe, 0, 1) > 0.0);
    be->exe_free(ctx, exe);
    be->close(ctx);
}
END_TEST

START_TEST(cycle_logging_needs_hardware)
{
    popc_options *o = NULL;
    popc_graph *g = model_graph();
    popc_model *m = NULL;
    popc_tensor *in[2];

    OK(popc_options_new(&o));
    OK(popc_options_set_int(o, "useOfflineIpuTarget", 2));
    OK(popc_options_set(o, "logCycleCount", "true"));
    OK(popc_model_new_inference(g, o, &m));
    inputs(in);
    ck_assert_int_ne(popc_model_compile(m, in, 2), POPC_OK);
    ASSERT_HAS(popc_last_error(), "Cycle count logging is only supported on "
                                  "actual IPU hardware.");
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
}
END_TEST

static Suite *offline_suite(void)
{
    Suite *s = suite_create("offline");
    TCase *tc = tcase_create("offline");

    tcase_add_test(tc, compiles_then_refuses_to_run);
    tcase_add_test(tc, each_ipu_version_compiles);
    tcase_add_test(tc, backend_refuses_runs_and_bad_versions);
    tcase_add_test(tc, out_of_memory_is_a_compile_error);
    tcase_add_test(tc, cycle_logging_needs_hardware);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(offline_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
