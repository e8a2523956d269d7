/* check_registry.c - plugin discovery, ABI and name checks, staging,
** duplicates and lookups, against the real test modules in tests/plugins. */
#include "config.h"

#include <limits.h>
#include <stddef.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/harness/assert.h"

#ifndef TEST_PLUGINS_DIR
#error "TEST_PLUGINS_DIR must point at the built tests/plugins"
#endif

static popc_registry *reg;
static char tmpdir[PATH_MAX];
static int warnings;
static char warned[8192];

static void on_log(int level, const char *msg, void *user)
{
    (void)user;
    if (level == POPC_LOG_WARN) {
        size_t n = strlen(warned);
        warnings++;
        snprintf(warned + n, sizeof warned - n, "%s\n", msg);
    }
}

static void setup(void)
{
    ck_assert_int_eq(popc_registry_new(&reg), POPC_OK);
    warnings = 0;
    warned[0] = '\0';
    popc_log_set_callback(on_log, NULL);
    tmpdir[0] = '\0';
}

static void rm_tree(const char *dir)
{
    char cmd[PATH_MAX + 16];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void teardown(void)
{
    popc_registry_free(reg);
    popc_log_set_callback(NULL, NULL);
    if (tmpdir[0])
        rm_tree(tmpdir);
}

/* A scratch plugin directory. */
static const char *make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/popc-check-registry-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    return tmpdir;
}

/* Links the built module name.so into dir/sub as name.so. */
static void link_module(const char *sub, const char *name)
{
    char from[PATH_MAX], to[PATH_MAX + 64], d[PATH_MAX + 32];

    snprintf(from, sizeof from, "%s/.libs/%s.so", TEST_PLUGINS_DIR, name);
    snprintf(d, sizeof d, "%s%s%s", tmpdir, sub ? "/" : "", sub ? sub : "");
    mkdir(d, 0755);
    snprintf(to, sizeof to, "%s/%s.so", d, name);
    ck_assert_msg(symlink(from, to) == 0, "symlink %s", to);
}

static void write_file(const char *name, const char *text)
{
    char p[PATH_MAX + 64];
    FILE *f;

    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    ck_assert_ptr_nonnull(f = fopen(p, "w"));
    fputs(text, f);
    fclose(f);
}

/* ---- one good plugin --------------------------------------------------- */

START_TEST(good_plugin_registers_everything)
{
    const popc_op_def *op;
    popc_plugin_record rec;
    static const char *const items[] = {
        "ai.onnx::Twice@1", "ai.onnx::Twice@7", "test.vendor::Twice@1",
        "optim:test_sgd", "backend:test_cpu"};

    ASSERT_OK(popc_registry_load_file(reg, TEST_PLUGINS_DIR "/good"));
    ck_assert_int_eq(popc_registry_op_count(reg), 3);
    ck_assert_ptr_nonnull(popc_registry_find_optimizer(reg, "test_sgd"));
    ck_assert_ptr_nonnull(popc_registry_find_backend(reg, "test_cpu"));
    ck_assert_ptr_null(popc_registry_find_optimizer(reg, "sgd"));
    ck_assert_ptr_null(popc_registry_find_backend(reg, "cpu"));

    ck_assert_int_eq(popc_registry_plugin_count(reg), 1);
    rec = popc_registry_plugin_at(reg, 0);
    ck_assert_str_eq(rec.name, "good");
    ck_assert_str_eq(rec.version, "1.2.3");
    ck_assert_str_eq(rec.description,
                     "test plugin that registers one of each");
    ASSERT_HAS(rec.path, "good");
    ck_assert_int_eq(rec.n_ops, 3);
    ck_assert_int_eq(rec.n_optimizers, 1);
    ck_assert_int_eq(rec.n_backends, 1);
    for (int j = 0; j < 5; j++)
        ck_assert_str_eq(popc_registry_plugin_item(reg, 0, j), items[j]);
    ck_assert_ptr_null(popc_registry_plugin_item(reg, 0, 5));
    ck_assert_ptr_null(popc_registry_plugin_item(reg, 1, 0));
    ck_assert_str_eq(popc_registry_problems(reg), "");

    /* The registry copied the definition; the code is the plugin's. */
    op = popc_registry_find_op(reg, NULL, "Twice", 0);
    ck_assert_ptr_nonnull(op);
    ck_assert_uint_eq(op->size, sizeof(popc_op_def));
    ck_assert_str_eq(op->domain, "ai.onnx");
    {
        float x[3] = {1, -2, 3.5f}, y[3] = {0};
        popc_view in = {POPC_DTYPE_F32, 1, {3}, x};
        popc_view out = {POPC_DTYPE_F32, 1, {3}, y};
        popc_kernel_ctx kc;

        memset(&kc, 0, sizeof kc);
        kc.size = sizeof kc;
        kc.op = op;
        kc.host = popc_registry_host();
        kc.n_inputs = kc.n_outputs = 1;
        kc.inputs = &in;
        kc.outputs = &out;
        kc.n_parts = 1;
        ASSERT_OK(op->forward(&kc));
        ck_assert_float_eq(y[0], 2.0f);
        ck_assert_float_eq(y[1], -4.0f);
        ck_assert_float_eq(y[2], 7.0f);
    }
}
END_TEST

START_TEST(op_versions_resolve_to_highest_not_above)
{
    ASSERT_OK(popc_registry_load_file(reg, TEST_PLUGINS_DIR "/good.la"));
    ck_assert_int_eq(popc_registry_find_op(reg, NULL, "Twice", 0)
                         ->since_version, 7);
    ck_assert_int_eq(popc_registry_find_op(reg, "ai.onnx", "Twice", 6)
                         ->since_version, 1);
    ck_assert_int_eq(popc_registry_find_op(reg, NULL, "Twice", 7)
                         ->since_version, 7);
    ck_assert_int_eq(popc_registry_find_op(reg, NULL, "Twice", 21)
                         ->since_version, 7);
    ck_assert_str_eq(popc_registry_find_op(reg, "test.vendor", "Twice", 0)
                         ->doc, "good vendor");
    ck_assert_ptr_null(popc_registry_find_op(reg, "other", "Twice", 0));
    ck_assert_ptr_null(popc_registry_find_op(reg, NULL, "twice", 0));
    ck_assert_ptr_null(popc_registry_find_op(reg, NULL, NULL, 0));
}
END_TEST

START_TEST(loading_the_same_file_twice_is_quiet)
{
    ASSERT_OK(popc_registry_load_file(reg, TEST_PLUGINS_DIR "/good"));
    ASSERT_OK(popc_registry_load_file(reg, TEST_PLUGINS_DIR "/good.la"));
    ck_assert_int_eq(popc_registry_plugin_count(reg), 1);
    ck_assert_int_eq(popc_registry_op_count(reg), 3);
    ck_assert_str_eq(popc_registry_problems(reg), "");
}
END_TEST

START_TEST(same_plugin_name_from_another_file_is_eexist)
{
    make_tmpdir();
    link_module(NULL, "good");
    ASSERT_OK(popc_registry_load_file(reg, TEST_PLUGINS_DIR "/good"));
    ck_assert_int_eq(popc_registry_load_path(reg, tmpdir), POPC_EEXIST);
    ASSERT_HAS(popc_last_error(), "plugin 'good' is already loaded");
    ASSERT_HAS(popc_last_error(), tmpdir);
    ck_assert_int_eq(popc_registry_plugin_count(reg), 1);
}
END_TEST

/* ---- refused plugins ----------------------------------------------------- */

START_TEST(future_abi_is_refused_with_both_versions)
{
    char msg[1024];

    ck_assert_int_eq(popc_registry_load_file(reg, TEST_PLUGINS_DIR "/badabi"),
                     POPC_EABI);
    snprintf(msg, sizeof msg, "%s", popc_last_error());
    ASSERT_HAS(msg, "badabi.so: plugin ABI 99, core ABI 3.1 (loads ABI 2 "
                    "and 3 plugins); rebuild the plugin against this popc");
    ck_assert_int_eq(popc_registry_op_count(reg), 0);
    ck_assert_int_eq(popc_registry_plugin_count(reg), 0);
    ck_assert_ptr_null(popc_registry_find_op(reg, NULL, "BadAbiOp", 0));
    ASSERT_HAS(popc_registry_problems(reg), "plugin ABI 99");
    ck_assert_int_eq(warnings, 1);
    ASSERT_HAS(warned, "badabi");
}
END_TEST

/* The same major with a later minor: more members at the ends of its
** structs than this popc knows; loaded, read through the sizes. */
START_TEST(later_minor_of_the_major_loads)
{
    const popc_op_def *op;

    ASSERT_OK(popc_registry_load_file(reg, TEST_PLUGINS_DIR "/newminor"));
    op = popc_registry_find_op(reg, "test.minor", "NewMinor", 1);
    ck_assert_ptr_nonnull(op);
    /* copied at the core's size, which says what the core has */
    ck_assert_uint_eq(op->size, sizeof(popc_op_def));
    /* a flag bit of a later minor is kept and ignored, the known ones hold */
    ck_assert_uint_eq(op->flags & POPC_OP_SPLIT, POPC_OP_SPLIT);
    ck_assert_int_eq(warnings, 0);
}
END_TEST

START_TEST(optimizer_without_hyper_size_is_refused)
{
    ck_assert_int_eq(popc_registry_load_file(reg,
                                             TEST_PLUGINS_DIR "/nohypersize"),
                     POPC_EPLUGIN);
    ASSERT_HAS(popc_last_error(), "optimizer 'nohypersize' has hyper_size "
                                  "0; set .hyper_size = "
                                  "sizeof(popc_hyper_def)");
    ck_assert_ptr_null(popc_registry_find_optimizer(reg, "nohypersize"));
    ck_assert_int_eq(popc_registry_plugin_count(reg), 0);
}
END_TEST

/* The kernel-call services a backend finds by name fill the caller's
** context up to the size it declares, and seed as the core does. */
START_TEST(kernel_call_services)
{
    const popc_host *h = popc_registry_host();
    popc_plan_kernel_ctx_fn fill;
    popc_node_seed_fn seed;
    void *p;
    popc_attrs none = {.n = 0, .items = NULL};
    popc_plan_node node;
    popc_plan plan;
    float x = 1, y = 0;
    popc_view views[2] = {{POPC_DTYPE_F32, 0, {0}, &x},
                          {POPC_DTYPE_F32, 0, {0}, &y}};
    popc_frame frame = {.size = sizeof frame, .slots = views, .seed = 42,
                        .training = 1};
    int in = 0, out = 1;
    popc_view vin, vout;
    popc_kernel_ctx kc;

    ck_assert_ptr_nonnull(h->get_proc);
    ck_assert_ptr_null(h->get_proc("popc_no_such_service"));
    ck_assert_ptr_nonnull(p = h->get_proc(POPC_SERVICE_PLAN_KERNEL_CTX));
    memcpy(&fill, &p, sizeof fill);
    ck_assert_ptr_nonnull(p = h->get_proc(POPC_SERVICE_NODE_SEED));
    memcpy(&seed, &p, sizeof seed);
    memset(&node, 0, sizeof node);
    node.name = "n";
    node.attrs = &none;
    node.n_inputs = node.n_outputs = 1;
    node.inputs = &in;
    node.outputs = &out;
    node.op = popc_registry_find_op(reg, NULL, "Twice", 0);
    memset(&plan, 0, sizeof plan);
    plan.size = sizeof plan;
    plan.slot_size = sizeof(popc_plan_slot);
    plan.node_size = sizeof(popc_plan_node);
    plan.nodes = &node;
    plan.n_nodes = 1;
    plan.kernel_flags = POPC_KERNEL_STABLE_NORM;
    /* a caller built before `flags`: nothing written past its size */
    memset(&kc, 0x5a, sizeof kc);
    kc.size = offsetof(popc_kernel_ctx, flags);
    fill(h, &plan, 0, &frame, &vin, &vout, &kc);
    ck_assert_uint_eq(kc.size, offsetof(popc_kernel_ctx, flags));
    ck_assert_str_eq(kc.node_name, "n");
    ck_assert_ptr_eq(vin.data, &x);
    ck_assert_ptr_eq(vout.data, &y);
    ck_assert_int_eq(kc.training, 1);
    ck_assert_uint_eq(kc.seed, seed(42, 0));
    ck_assert_uint_eq(kc.flags, 0x5a5a5a5au);
    /* the whole context */
    kc.size = sizeof kc;
    fill(h, &plan, 0, &frame, &vin, &vout, &kc);
    ck_assert_uint_eq(kc.flags, POPC_KERNEL_STABLE_NORM);
    ck_assert_ptr_eq(kc.op, node.op);
    ck_assert_int_eq(kc.n_parts, 1);
    /* splitmix64 of the frame seed stepped by the node's position */
    ck_assert_uint_eq(seed(0, 0), 0xE220A8397B1DCDAFull);
}
END_TEST

START_TEST(failing_init_leaves_nothing)
{
    ck_assert_int_eq(popc_registry_load_file(reg,
                                             TEST_PLUGINS_DIR "/failinit"),
                     POPC_EPLUGIN);
    ASSERT_HAS(popc_last_error(), "failinit");
    ASSERT_HAS(popc_last_error(), "init failed (POPC_EINVAL)");
    ASSERT_HAS(popc_last_error(), "deliberate failure after registering");
    ck_assert_ptr_null(popc_registry_find_op(reg, NULL, "FailOp", 0));
    ck_assert_ptr_null(popc_registry_find_optimizer(reg, "fail_sgd"));
    ck_assert_int_eq(popc_registry_op_count(reg), 0);
    ck_assert_int_eq(popc_registry_plugin_count(reg), 0);
    ASSERT_HAS(popc_registry_problems(reg), "failinit");
}
END_TEST

START_TEST(plugin_name_must_match_file)
{
    ck_assert_int_eq(popc_registry_load_file(reg,
                                             TEST_PLUGINS_DIR "/wrongname"),
                     POPC_EPLUGIN);
    ASSERT_HAS(popc_last_error(), "wrongname.so: plugin name 'rightname' "
                                  "does not match the file name "
                                  "'wrongname'");
    ck_assert_ptr_null(popc_registry_find_op(reg, NULL, "WrongNameOp", 0));
    ck_assert_int_eq(popc_registry_plugin_count(reg), 0);
}
END_TEST

START_TEST(duplicate_op_first_wins_rest_kept)
{
    const popc_op_def *twice;
    popc_plugin_record rec;

    ASSERT_OK(popc_registry_load_file(reg, TEST_PLUGINS_DIR "/good"));
    ck_assert_int_eq(popc_registry_load_file(reg, TEST_PLUGINS_DIR "/dupop"),
                     POPC_EEXIST);
    ASSERT_HAS(popc_last_error(), "op ai.onnx::Twice@1 is already registered");
    ASSERT_HAS(popc_last_error(), "dupop");
    twice = popc_registry_find_op(reg, NULL, "Twice", 1);
    ck_assert_str_eq(twice->doc, "good v1");
    ck_assert_str_eq(popc_registry_find_op(reg, NULL, "DupOnly", 0)->doc,
                     "dupop");
    ck_assert_int_eq(popc_registry_plugin_count(reg), 2);
    rec = popc_registry_plugin_at(reg, 1);
    ck_assert_str_eq(rec.name, "dupop");
    ck_assert_int_eq(rec.n_ops, 1);
    ck_assert_str_eq(popc_registry_plugin_item(reg, 1, 0),
                     "ai.onnx::DupOnly@1");
    /* The same op twice in one plugin: the first of the two stays. */
    ASSERT_HAS(popc_registry_problems(reg), "dupop.so: op "
               "ai.onnx::DupOnly@1 is already registered by");
    ck_assert_int_eq(warnings, 2);
}
END_TEST

START_TEST(explicit_non_plugin_and_missing_files)
{
    ck_assert_int_eq(popc_registry_load_file(reg,
                                             TEST_PLUGINS_DIR "/notaplugin"),
                     POPC_EPLUGIN);
    ASSERT_HAS(popc_last_error(), "notaplugin");
    ASSERT_HAS(popc_last_error(), "not a popc plugin");
    ck_assert_int_eq(popc_registry_load_file(reg,
                                             TEST_PLUGINS_DIR "/nosuch"),
                     POPC_ENOTFOUND);
    ASSERT_HAS(popc_last_error(), "nosuch");
    ck_assert_int_eq(popc_registry_load_path(reg, "/nonexistent/popc"),
                     POPC_ENOTFOUND);
    ASSERT_HAS(popc_last_error(), "/nonexistent/popc");
    ck_assert_int_eq(popc_registry_load_file(NULL, "x"), POPC_EINVAL);
    ck_assert_int_eq(popc_registry_load_path(reg, ""), POPC_EINVAL);
    ck_assert_int_eq(popc_registry_plugin_count(reg), 0);
}
END_TEST

/* ---- directories ------------------------------------------------------------ */

START_TEST(build_dir_scan_loads_good_ones)
{
    const char *problems;

    /* Sorted: badabi, dupop, failinit, good, newminor, nohypersize,
    ** notaplugin, wrongname. */
    ck_assert_int_eq(popc_registry_load_path(reg, TEST_PLUGINS_DIR),
                     POPC_EABI);
    ASSERT_HAS(popc_last_error(), "badabi");
    ck_assert_int_eq(popc_registry_plugin_count(reg), 3);
    ck_assert_str_eq(popc_registry_plugin_at(reg, 0).name, "dupop");
    ck_assert_str_eq(popc_registry_plugin_at(reg, 1).name, "good");
    ck_assert_str_eq(popc_registry_plugin_at(reg, 2).name, "newminor");
    ck_assert_ptr_nonnull(popc_registry_find_backend(reg, "test_cpu"));
    ck_assert_ptr_nonnull(popc_registry_find_op(reg, NULL, "DupOnly", 0));
    /* dupop came first, so its Twice@1 won. */
    ck_assert_str_eq(popc_registry_find_op(reg, NULL, "Twice", 1)->doc,
                     "dupop");
    problems = popc_registry_problems(reg);
    ASSERT_HAS(problems, "badabi");
    ASSERT_HAS(problems, "failinit");
    ASSERT_HAS(problems, "rightname");
    ASSERT_HAS(problems, "Twice@1 is already registered");
    ASSERT_HAS(problems, "nohypersize");
    ck_assert_ptr_null(strstr(problems, "notaplugin"));
    ck_assert_ptr_null(strstr(problems, "good.c"));
    ck_assert_int_eq(warnings, 6);
}
END_TEST

START_TEST(mixed_dir_skips_foreign_files)
{
    make_tmpdir();
    link_module(NULL, "good");
    link_module(NULL, "badabi");
    link_module(NULL, "notaplugin");
    link_module("ops", "dupop");
    write_file("README.txt", "not a plugin\n");
    write_file("notes", "plain text without extension\n");

    ck_assert_int_eq(popc_registry_load_path(reg, tmpdir), POPC_EABI);
    ASSERT_HAS(popc_last_error(), "plugin ABI 99, core ABI 3.1");
    ck_assert_ptr_nonnull(popc_registry_find_backend(reg, "test_cpu"));
    /* ops/ subdirectory scanned after the directory itself. */
    ck_assert_ptr_nonnull(popc_registry_find_op(reg, NULL, "DupOnly", 0));
    ck_assert_str_eq(popc_registry_find_op(reg, NULL, "Twice", 1)->doc,
                     "good v1");
    ck_assert_int_eq(popc_registry_plugin_count(reg), 2);
    ck_assert_ptr_null(strstr(popc_registry_problems(reg), "README"));
    ck_assert_ptr_null(strstr(popc_registry_problems(reg), "notes"));
    ck_assert_ptr_null(strstr(popc_registry_problems(reg), "notaplugin"));
}
END_TEST

START_TEST(corrupt_module_is_reported_others_load)
{
    make_tmpdir();
    link_module(NULL, "good");
    write_file("garbage.so", "this is not an ELF file\n");
    ck_assert_int_eq(popc_registry_load_path(reg, tmpdir), POPC_EPLUGIN);
    ASSERT_HAS(popc_last_error(), "garbage");
    ASSERT_HAS(popc_last_error(), "cannot load plugin");
    ck_assert_ptr_nonnull(popc_registry_find_optimizer(reg, "test_sgd"));
    ck_assert_int_eq(popc_registry_plugin_count(reg), 1);
}
END_TEST

START_TEST(relative_dir_is_made_absolute)
{
    char cwd[PATH_MAX];

    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir(TEST_PLUGINS_DIR "/.."), 0);
    ck_assert_int_eq(popc_registry_load_path(reg, "plugins"), POPC_EABI);
    ck_assert_int_eq(chdir(cwd), 0);
    /* Opened by an absolute name, not "plugins/...". */
    ck_assert_int_eq(popc_registry_plugin_at(reg, 1).path[0], '/');
    ASSERT_HAS(popc_registry_plugin_at(reg, 1).path, "/tests/plugins/");
}
END_TEST

/* ---- direct registration ---------------------------------------------------- */

static popc_status nop_infer(popc_infer_ctx *ic)
{
    (void)ic;
    return POPC_OK;
}

static popc_status nop_forward(const popc_kernel_ctx *kc)
{
    (void)kc;
    return POPC_OK;
}

START_TEST(add_op_validates_and_refuses_duplicates)
{
    popc_op_def d = {.size = sizeof(popc_op_def), .name = "Embedded",
                     .since_version = 3, .infer = nop_infer,
                     .forward = nop_forward};
    popc_op_def bad = d;

    ASSERT_OK(popc_registry_add_op(reg, &d));
    ck_assert_int_eq(popc_registry_add_op(reg, &d), POPC_EEXIST);
    ASSERT_HAS(popc_last_error(), "ai.onnx::Embedded@3");
    d.since_version = 5;
    ASSERT_OK(popc_registry_add_op(reg, &d));
    ck_assert_int_eq(popc_registry_op_count(reg), 2);
    ck_assert_int_eq(popc_registry_op_at(reg, 1)->since_version, 5);
    ck_assert_ptr_null(popc_registry_op_at(reg, 2));
    ck_assert_ptr_null(popc_registry_op_at(reg, -1));
    ck_assert_int_eq(popc_registry_find_op(reg, "ai.onnx", "Embedded", 4)
                         ->since_version, 3);

    bad.forward = NULL;
    ck_assert_int_eq(popc_registry_add_op(reg, &bad), POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "no forward function");
    bad = d;
    bad.since_version = 0;
    ck_assert_int_eq(popc_registry_add_op(reg, &bad), POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "since_version 0");
    bad = d;
    bad.size = 8;
    ck_assert_int_eq(popc_registry_add_op(reg, &bad), POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "size is 8");
    bad = d;
    bad.name = NULL;
    ck_assert_int_eq(popc_registry_add_op(reg, &bad), POPC_EINVAL);
    ck_assert_int_eq(popc_registry_add_op(reg, NULL), POPC_EINVAL);
    ck_assert_int_eq(popc_registry_op_count(reg), 2);
}
END_TEST

/* The core builds ops by role, never by name: the first name that claims
** a role keeps it, at its newest version; a definition from before roles
** (smaller size) claims none, whatever lies past its end. */
START_TEST(roles_go_to_the_first_name_newest_version)
{
    popc_op_def a1 = {.size = sizeof(popc_op_def), .domain = "vendor",
                      .name = "Total", .since_version = 1,
                      .infer = nop_infer, .forward = nop_forward,
                      .role = POPC_ROLE_SUM};
    popc_op_def a3 = a1, b = a1, old = a1, plain = a1;

    a3.since_version = 3;
    b.name = "OtherTotal";
    b.since_version = 7;
    old.name = "OldTotal";
    old.size = (uint32_t)offsetof(popc_op_def, role);
    old.role = POPC_ROLE_ADD;
    plain.name = "Plain";
    plain.role = POPC_ROLE_NONE;
    ASSERT_OK(popc_registry_add_op(reg, &plain));
    ck_assert_ptr_null(popc_registry_find_role(reg, POPC_ROLE_SUM));
    ASSERT_OK(popc_registry_add_op(reg, &a1));
    ASSERT_OK(popc_registry_add_op(reg, &b));
    ASSERT_OK(popc_registry_add_op(reg, &a3));
    ASSERT_OK(popc_registry_add_op(reg, &old));
    ck_assert_str_eq(popc_registry_find_role(reg, POPC_ROLE_SUM)->name,
                     "Total");
    ck_assert_int_eq(popc_registry_find_role(reg, POPC_ROLE_SUM)
                         ->since_version, 3);
    ck_assert_ptr_null(popc_registry_find_role(reg, POPC_ROLE_ADD));
    ck_assert_ptr_null(popc_registry_find_role(reg, POPC_ROLE_NONE));
    ck_assert_ptr_null(popc_registry_find_role(reg, POPC_ROLE_COUNT));
    ck_assert_ptr_null(popc_registry_find_role(NULL, POPC_ROLE_SUM));
}
END_TEST

/* popc's own op plugins play every role the core's passes need. */
START_TEST(shipped_ops_play_every_role)
{
    static const char *const plugins[] = {"math", "tensor", "popc", "host",
                                          "ffi"};
    static const char *const names[POPC_ROLE_COUNT] = {
        [POPC_ROLE_SUM] = "ai.onnx::Sum",
        [POPC_ROLE_ADD] = "ai.onnx::Add",
        [POPC_ROLE_MUL] = "ai.onnx::Mul",
        [POPC_ROLE_REDUCE_SUM] = "ai.onnx::ReduceSum",
        [POPC_ROLE_CAST] = "ai.onnx::Cast",
        [POPC_ROLE_IDENTITY] = "ai.onnx::Identity",
        [POPC_ROLE_CHECKPOINT] = "popc::RecomputationCheckpoint",
        [POPC_ROLE_HOST_CALL] = "popc::HostOp",
        [POPC_ROLE_FOREIGN_CALL] = "popc::ForeignCall"};
    char path[PATH_MAX], got[128];

    for (size_t i = 0; i < sizeof plugins / sizeof *plugins; i++) {
        snprintf(path, sizeof path, "%s/%s", TEST_OPS_DIR, plugins[i]);
        ASSERT_OK(popc_registry_load_file(reg, path));
    }
    for (int r = POPC_ROLE_NONE + 1; r < POPC_ROLE_COUNT; r++) {
        const popc_op_def *d = popc_registry_find_role(reg, r);

        ck_assert_msg(d != NULL, "no op plays role %d", r);
        snprintf(got, sizeof got, "%s::%s", d->domain, d->name);
        ck_assert_str_eq(got, names[r]);
    }
}
END_TEST

START_TEST(register_outside_init_is_refused)
{
    const popc_host *h = popc_registry_host();
    popc_op_def d = {.size = sizeof(popc_op_def), .name = "Late",
                     .since_version = 1, .infer = nop_infer,
                     .forward = nop_forward};

    ck_assert_uint_eq(h->abi_version, POPC_PLUGIN_ABI_VERSION);
    ck_assert_uint_eq(h->size, sizeof(popc_host));
    ck_assert_int_eq(h->register_op(NULL, &d), POPC_ESTATE);
    ck_assert_ptr_nonnull(h->alloc);
}
END_TEST

START_TEST(null_safety)
{
    popc_plugin_record rec = popc_registry_plugin_at(NULL, 0);

    popc_registry_free(NULL);
    ck_assert_ptr_null(rec.name);
    ck_assert_ptr_null(popc_registry_find_op(NULL, NULL, "Twice", 0));
    ck_assert_ptr_null(popc_registry_find_optimizer(NULL, "x"));
    ck_assert_ptr_null(popc_registry_find_backend(NULL, "x"));
    ck_assert_int_eq(popc_registry_op_count(NULL), 0);
    ck_assert_int_eq(popc_registry_plugin_count(NULL), 0);
    ck_assert_str_eq(popc_registry_problems(NULL), "");
    ck_assert_int_eq(popc_registry_new(NULL), POPC_EINVAL);
}
END_TEST

START_TEST(module_outlives_one_of_two_registries)
{
    popc_registry *other;
    const popc_op_def *op;
    float x = 4, y = 0;
    popc_view in = {POPC_DTYPE_F32, 0, {0}, &x};
    popc_view out = {POPC_DTYPE_F32, 0, {0}, &y};
    popc_kernel_ctx kc;

    ASSERT_OK(popc_registry_new(&other));
    ASSERT_OK(popc_registry_load_file(other, TEST_PLUGINS_DIR "/good"));
    ASSERT_OK(popc_registry_load_file(reg, TEST_PLUGINS_DIR "/good"));
    popc_registry_free(other);
    op = popc_registry_find_op(reg, NULL, "Twice", 7);
    ck_assert_ptr_nonnull(op);
    memset(&kc, 0, sizeof kc);
    kc.size = sizeof kc;
    kc.op = op;
    kc.n_inputs = kc.n_outputs = 1;
    kc.inputs = &in;
    kc.outputs = &out;
    kc.n_parts = 1;
    ASSERT_OK(op->forward(&kc));
    ck_assert_float_eq(y, 8.0f);
}
END_TEST

/* ---- the global registry ---------------------------------------------------- */

START_TEST(global_uses_plugin_path)
{
    char env[2 * PATH_MAX];
    popc_registry *g1, *g2;

    make_tmpdir();
    link_module(NULL, "good");
    link_module("backends", "dupop");
    /* Empty entries (the cwd) are skipped; relative ones are refused. */
    snprintf(env, sizeof env, "::relative/dir:%s:/nonexistent/popc:",
             tmpdir);
    setenv("POPC_PLUGIN_PATH", env, 1);
    ASSERT_OK(popc_registry_global(&g1));
    ASSERT_OK(popc_registry_global(&g2));
    ck_assert_ptr_eq(g1, g2);
    ck_assert_ptr_nonnull(popc_registry_find_backend(g1, "test_cpu"));
    ck_assert_ptr_nonnull(popc_registry_find_op(g1, NULL, "DupOnly", 0));
    ASSERT_HAS(popc_registry_problems(g1), "'relative/dir' is not an "
                                           "absolute path");
    ASSERT_HAS(popc_registry_problems(g1), "'/nonexistent/popc' is not a "
                                           "directory");
    ASSERT_HAS(warned, "relative/dir");
}
END_TEST

static void *get_global(void *arg)
{
    popc_registry **out = arg;
    return popc_registry_global(out) == POPC_OK ? arg : NULL;
}

START_TEST(global_is_loaded_once_across_threads)
{
    pthread_t th[4];
    popc_registry *got[4];

    make_tmpdir();
    link_module(NULL, "good");
    setenv("POPC_PLUGIN_PATH", tmpdir, 1);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, get_global, &got[i]),
                         0);
    for (int i = 0; i < 4; i++) {
        void *ret;
        ck_assert_int_eq(pthread_join(th[i], &ret), 0);
        ck_assert_ptr_nonnull(ret);
    }
    for (int i = 1; i < 4; i++)
        ck_assert_ptr_eq(got[i], got[0]);
    ck_assert_ptr_nonnull(popc_registry_find_backend(got[0], "test_cpu"));
}
END_TEST

/* The problems text a caller holds never changes or moves, however many
** loads add problems after it, on this thread or another: a new problem
** makes a new text that starts with the old one. */
typedef struct problems_reader {
    int stop;
    int bad;      /* a held text changed, or a new one did not extend it */
    long reads;
} problems_reader;

static void *read_problems(void *p)
{
    problems_reader *a = p;
    const char *held = popc_registry_problems(reg);
    char *copy = strdup(held);

    while (copy && !__atomic_load_n(&a->stop, __ATOMIC_ACQUIRE)) {
        const char *now = popc_registry_problems(reg);
        size_t n = strlen(copy);

        if (strcmp(held, copy) != 0 || strncmp(now, copy, n) != 0)
            a->bad = 1;
        if (now != held) {
            free(copy);
            copy = strdup(now);
            held = now;
        }
        __atomic_add_fetch(&a->reads, 1, __ATOMIC_RELEASE);
    }
    free(copy);
    return NULL;
}

START_TEST(problems_text_stays_while_loading)
{
    problems_reader a = {0};
    pthread_t t;
    const char *first, *now;
    char *copy;

    ck_assert_int_eq(popc_registry_load_file(reg,
                                             TEST_PLUGINS_DIR "/badabi"),
                     POPC_EABI);
    first = popc_registry_problems(reg);
    ck_assert_ptr_nonnull(copy = strdup(first));
    ck_assert_int_eq(popc_registry_load_file(reg,
                                             TEST_PLUGINS_DIR "/failinit"),
                     POPC_EPLUGIN);
    now = popc_registry_problems(reg);
    ck_assert_str_eq(first, copy);
    ck_assert_int_eq(strncmp(now, copy, strlen(copy)), 0);
    ASSERT_HAS(now + strlen(copy), "failinit");
    free(copy);

    ck_assert_int_eq(pthread_create(&t, NULL, read_problems, &a), 0);
    while (!__atomic_load_n(&a.reads, __ATOMIC_ACQUIRE))
        sched_yield(); /* the loads below must overlap the reads */
    for (int i = 0; i < 20; i++) {
        ck_assert_int_eq(popc_registry_load_file(reg, TEST_PLUGINS_DIR
                                                 "/badabi"),
                         POPC_EABI);
        ck_assert_int_eq(popc_registry_load_file(reg, TEST_PLUGINS_DIR
                                                 "/wrongname"),
                         POPC_EPLUGIN);
    }
    __atomic_store_n(&a.stop, 1, __ATOMIC_RELEASE);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_msg(!a.bad, "a problems text changed under its reader");
    ASSERT_HAS(popc_registry_problems(reg), "rightname");

    /* the text is capped (every version is kept); the rest is logged */
    for (int i = 0; i < 200; i++)
        ck_assert_int_eq(popc_registry_load_file(reg, TEST_PLUGINS_DIR
                                                 "/badabi"),
                         POPC_EABI);
    now = popc_registry_problems(reg);
    ck_assert_uint_le(strlen(now), 16384);
    ASSERT_HAS(now, "further problems are only logged");
}
END_TEST

/* Stand-ins are chosen by capabilities and scores, never by name. */
START_TEST(best_backend_by_capabilities)
{
    const unsigned run = POPC_BACKEND_CAN_RUN, ipus = POPC_BACKEND_MODELS_IPUS;

    ASSERT_OK(popc_registry_load_file(reg, TEST_BACKENDS_DIR "/cpu"));
    ASSERT_OK(popc_registry_load_file(reg, TEST_BACKENDS_DIR "/offline"));
    ck_assert_str_eq(popc_registry_best_backend(reg, run, 0)->name, "cpu");
    ck_assert_ptr_null(popc_registry_best_backend(reg, run | ipus, 0));
    ck_assert_str_eq(popc_registry_best_backend(reg, ipus, run)->name,
                     "offline");
    ASSERT_OK(popc_registry_load_file(reg, TEST_BACKENDS_DIR "/ipumodel"));
    ck_assert_str_eq(popc_registry_best_backend(reg, run, 0)->name,
                     "ipumodel");
    ck_assert_str_eq(popc_registry_best_backend(reg, run, ipus)->name, "cpu");
    ck_assert_ptr_null(popc_registry_best_backend(NULL, run, 0));
}
END_TEST

/* The library, its headers and configure.ac state one version. */
START_TEST(version_of_library_and_headers)
{
    ck_assert_str_eq(popc_version(), POPC_VERSION_STRING);
    ck_assert_str_eq(popc_version(), PACKAGE_VERSION);
}
END_TEST

static Suite *registry_suite(void)
{
    Suite *s = suite_create("registry");
    TCase *tc = tcase_create("load");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, version_of_library_and_headers);
    tcase_add_test(tc, best_backend_by_capabilities);
    tcase_add_test(tc, roles_go_to_the_first_name_newest_version);
    tcase_add_test(tc, shipped_ops_play_every_role);
    tcase_add_test(tc, good_plugin_registers_everything);
    tcase_add_test(tc, later_minor_of_the_major_loads);
    tcase_add_test(tc, optimizer_without_hyper_size_is_refused);
    tcase_add_test(tc, kernel_call_services);
    tcase_add_test(tc, op_versions_resolve_to_highest_not_above);
    tcase_add_test(tc, loading_the_same_file_twice_is_quiet);
    tcase_add_test(tc, same_plugin_name_from_another_file_is_eexist);
    tcase_add_test(tc, future_abi_is_refused_with_both_versions);
    tcase_add_test(tc, failing_init_leaves_nothing);
    tcase_add_test(tc, plugin_name_must_match_file);
    tcase_add_test(tc, duplicate_op_first_wins_rest_kept);
    tcase_add_test(tc, explicit_non_plugin_and_missing_files);
    tcase_add_test(tc, build_dir_scan_loads_good_ones);
    tcase_add_test(tc, mixed_dir_skips_foreign_files);
    tcase_add_test(tc, corrupt_module_is_reported_others_load);
    tcase_add_test(tc, relative_dir_is_made_absolute);
    tcase_add_test(tc, add_op_validates_and_refuses_duplicates);
    tcase_add_test(tc, register_outside_init_is_refused);
    tcase_add_test(tc, null_safety);
    tcase_add_test(tc, problems_text_stays_while_loading);
    tcase_add_test(tc, module_outlives_one_of_two_registries);
    suite_add_tcase(s, tc);

    tc = tcase_create("global");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, global_uses_plugin_path);
    tcase_add_test(tc, global_is_loaded_once_across_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(registry_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
