/* check_options.c - PopTorch's Options: table and defaults, validation
** texts, unsupported options, frozen/clone, hash, environment, INI
** [options], loadFromFile and POPC_DEFAULT_OPTIONS.
** Fixtures: tests/data/options/options_*.{ini,txt}.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/log.h"
#include "popc/options.h"
#include "core/layer/options.h"

static popc_options *opts;
static char path_buf[4096];
static char fmt_buf[512];

static const char *data(const char *name)
{
    const char *dir = getenv("POPC_TEST_DATA");

    snprintf(path_buf, sizeof path_buf, "%s/options/%s",
             dir ? dir : "tests/data", name);
    return path_buf;
}

static void clear_env(void)
{
    unsetenv("POPC_THREADS");
    unsetenv("POPC_CACHE_DIR");
    unsetenv("POPC_DEFAULT_OPTIONS");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("OMPI_COMM_WORLD_RANK");
}

static void setup(void)
{
    popc_status st;

    clear_env();
    st = popc_options_new(&opts);
    ck_assert_msg(st == POPC_OK, "%s", popc_last_error());
}

static void teardown(void)
{
    popc_options_free(opts);
    opts = NULL;
    clear_env();
}

static const char *fmt(const popc_options *o, const char *name)
{
    const char *s = popc_options_format(o, name, fmt_buf, sizeof fmt_buf);

    ck_assert_msg(s != NULL, "format(%s) failed", name);
    return s;
}

/* The status must be want and the message must contain a and b. */
static void expect(popc_status st, popc_status want, const char *a,
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

static void ok(popc_status st)
{
    ck_assert_msg(st == POPC_OK, "%s: %s", popc_status_name(st),
                  popc_last_error());
}

/* ---- table and defaults ------------------------------------------------------ */

START_TEST(every_option_has_a_valid_default)
{
    int n = popc_options_count();

    ck_assert_int_ge(n, 70);
    ck_assert_ptr_null(popc_options_info(-1));
    ck_assert_ptr_null(popc_options_info(n));
    for (int i = 0; i < n; i++) {
        const popc_option_info *info = popc_options_info(i);

        ck_assert_ptr_nonnull(info);
        ck_assert_ptr_nonnull(info->name);
        ck_assert_ptr_nonnull(info->def);
        ck_assert_msg(info->help && *info->help, "%s: no help", info->name);
        ck_assert_msg(info->values && *info->values, "%s: no values",
                      info->name);
        ck_assert(info->type >= POPC_OPT_BOOL && info->type <= POPC_OPT_ENUM);
        /* the listed default is what a new object holds */
        ck_assert_msg(strcmp(fmt(opts, info->name), info->def) == 0,
                      "%s: default '%s' but value '%s'", info->name,
                      info->def, fmt_buf);
        ck_assert_msg(!popc_options_is_set(opts, info->name), "%s is set",
                      info->name);
        ck_assert_ptr_eq(popc_options_find_info(info->name), info);
        for (int j = 0; j < i; j++)
            ck_assert_str_ne(popc_options_info(j)->name, info->name);
        /* re-setting the default is always allowed, supported or not */
        ok(popc_options_set(opts, info->name, info->def));
    }
    ck_assert_ptr_null(popc_options_find_info("nope"));
    ck_assert_ptr_eq(popc_options_find_info(
        "Training.setMeanAccumulationAndReplicationReductionStrategy"),
        popc_options_find_info(
            "Training.meanAccumulationAndReplicationReductionStrategy"));
}
END_TEST

static char logged_err[512];

static void capture_err(int level, const char *msg, void *user)
{
    (void)user;
    if (level == POPC_LOG_ERR)
        snprintf(logged_err, sizeof logged_err, "%s", msg);
}

/* The typed ids (POPCI_O_...) name the table's options in its order. */
START_TEST(typed_ids_match_the_table)
{
#define OPTION(ID, ...) #ID,
    static const char *const ids[] = {
#include "core/layer/options_list.h"
    };
#undef OPTION

    ck_assert_int_eq((int)(sizeof ids / sizeof ids[0]), popc_options_count());
    for (int i = 0; i < popc_options_count(); i++) {
        char name[160];

        snprintf(name, sizeof name, "%s", ids[i]);
        for (char *c = name; *c; c++)
            if (*c == '_')
                *c = '.';
        ck_assert_str_eq(name, popc_options_info(i)->name);
    }
    /* the ids are the indices popc_options_info uses */
    ck_assert_str_eq(popc_options_info(POPCI_O_deviceIterations)->name,
                     "deviceIterations");
    ck_assert_str_eq(
        popc_options_info(POPCI_O_Training_gradientAccumulation)->name,
        "Training.gradientAccumulation");
    ck_assert_int_eq(POPCI_O_COUNT, popc_options_count());
}
END_TEST

START_TEST(poptorch_defaults)
{
    static const char *const expected[][2] = {
        {"deviceIterations", "1"}, {"replicationFactor", "1"},
        {"inputReplicaGrouping.size", "1"},
        {"inputReplicaGrouping.type", "Consecutive"},
        {"broadcastBuffers", "true"}, {"outputMode", "Default"},
        {"outputReturnPeriod", "1"}, {"connectionType", "Always"},
        {"syncPattern", "Full"}, {"logDir", "."}, {"maxRepeatLogs", "4"},
        {"autoRoundNumIPUs", "false"}, {"randomSeed", "None"},
        {"showCompilationProgressBar", "true"},
        {"setExecutionStrategy", "PipelinedExecution"},
        {"setExecutionStrategy.autoStage", "SameAsIpu"},
        {"Training.gradientAccumulation", "1"},
        {"Training.accumulationAndReplicationReductionType", "Mean"},
        {"Training.meanAccumulationAndReplicationReductionStrategy", "Post"},
        {"Precision.setPartialsType", "float"},
        {"Precision.runningStatisticsAlwaysFloat", "true"},
        {"Distributed.numProcesses", "1"}, {"Distributed.processId", "0"},
        {"Jit.traceModel", "false"}, {"ipuVersion", "2"},
        {"backend", "ipumodel"}, {"threads", "0"}, {"pluginPath", "None"},
        {"enableSyntheticData", "false"},
        {"syntheticDataMode", "RandomNormal"},
    };

    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        ck_assert_msg(strcmp(fmt(opts, expected[i][0]), expected[i][1]) == 0,
                      "%s = %s, want %s", expected[i][0], fmt_buf,
                      expected[i][1]);
    ck_assert_int_eq(popc_options_get_int(opts, "outputMode"),
                     POPC_OUTPUT_DEFAULT);
    ck_assert_int_eq(popc_options_output_mode(opts, 0), POPC_OUTPUT_ALL);
    ck_assert_int_eq(popc_options_output_mode(opts, 1), POPC_OUTPUT_FINAL);
    ck_assert_int_eq(popc_options_get_int(opts, "connectionType"),
                     POPC_CONNECTION_ALWAYS);
    ck_assert_int_eq(popc_options_get_int(opts,
        "Training.accumulationAndReplicationReductionType"),
        POPC_REDUCTION_MEAN);
    ck_assert_int_eq(popc_options_get_bool(opts, "broadcastBuffers"), 1);
    ck_assert_str_eq(popc_options_get_string(opts, "backend"), "ipumodel");
    ck_assert_ptr_null(popc_options_get_string(opts, "modelName"));
    ck_assert(popc_options_is_none(opts, "randomSeed"));
    ck_assert_int_eq(popc_options_get_int(opts, "randomSeed"), 0);
    ck_assert(popc_options_get_available_memory(opts, 0) == 0.6);
    /* an unknown name is a caller bug: zero, an error logged, no crash */
    logged_err[0] = '\0';
    popc_log_set_callback(capture_err, NULL);
    ck_assert_int_eq(popc_options_get_int(opts, "nope"), 0);
    popc_log_set_callback(NULL, NULL);
    ck_assert_ptr_nonnull(strstr(logged_err, "unknown option 'nope'"));
    ck_assert_ptr_null(popc_options_format(opts, "nope", fmt_buf, 8));
}
END_TEST

START_TEST(supported_flags)
{
    /* popc builds these; everything else must be refused off default */
    static const char *const supported[] = {
        "deviceIterations", "replicationFactor", "inputReplicaGrouping.size",
        "inputReplicaGrouping.type", "broadcastBuffers", "outputMode",
        "outputReturnPeriod", "randomSeed", "useIpuModel",
        "useOfflineIpuTarget", "connectionType", "ipuVersion",
        "autoRoundNumIPUs", "setExecutionStrategy",
        "setExecutionStrategy.autoStage",
        "setExecutionStrategy.tensorsLiveness",
        "setExecutionStrategy.useSeparateBackwardPhase",
        "setAvailableMemoryProportion",
        "logCycleCount", "enableProfiling", "enableExecutableCaching",
        "showCompilationProgressBar", "maxRepeatLogs", "logDir", "modelName",
        "Training.gradientAccumulation",
        "Training.accumulationAndReplicationReductionType",
        "Training.meanAccumulationAndReplicationReductionStrategy",
        "Precision.setPartialsType", "TensorLocations.numIOTiles",
        "Distributed.numProcesses", "Distributed.processId",
        "Jit.traceModel", "backend", "threads", "pluginPath", "collectives",
        "collectivesTimeout",
        "enableSyntheticData", "syntheticDataMode", "disableModuleNamescope",
        "enableStableNorm", "Precision.enableFloatingPointExceptions",
        "anchorTensor", "Training.setAutomaticLossScaling",
        "Precision.runningStatisticsAlwaysFloat", "Precision.halfFloatCasting",
        "Precision.enableStochasticRounding", "relaxOptimizerAttributesChecks",
        "useIpuId", "syncPattern", "Training.setConvolutionDithering",
        "sourceLocationExcludes", "optimizationLevel", "kernelSelection",
        NULL};
    static const char *const classes[] = {"Activation", "Weight", "Optimizer",
                                          "Accumulator"};
    static const char *const settings[] = {
        "useOnChipStorage", "useReplicatedTensorSharding", "useIOTilesToLoad",
        "useIOTilesToStore", "minElementsForOffChip",
        "minElementsForReplicatedTensorSharding"};
    int n_sup = 0, n_list = 0;

    for (int i = 0; supported[i]; i++, n_list++) {
        const popc_option_info *info = popc_options_find_info(supported[i]);

        ck_assert_msg(info && info->supported, "%s", supported[i]);
    }
    for (int c = 0; c < 4; c++)
        for (int k = 0; k < 6; k++, n_list++) {
            char name[128];
            const popc_option_info *info;

            snprintf(name, sizeof name, "TensorLocations.set%sLocation.%s",
                     classes[c], settings[k]);
            info = popc_options_find_info(name);
            ck_assert_msg(info && info->supported, "%s", name);
        }
    for (int i = 0; i < popc_options_count(); i++)
        n_sup += popc_options_info(i)->supported;
    ck_assert_int_eq(n_sup, n_list);
}
END_TEST

/* A non-default value for every unsupported option, refused with the
** option's name and "leave it at its default". */
START_TEST(unsupported_options_are_refused)
{
    int refused = 0;

    for (int i = 0; i < popc_options_count(); i++) {
        const popc_option_info *info = popc_options_info(i);
        const char *value;
        char want[256];

        if (info->supported)
            continue;
        switch (info->type) {
        case POPC_OPT_BOOL:
            value = strcmp(info->def, "true") == 0 ? "false" : "true";
            break;
        case POPC_OPT_INT:
            value = "7";
            break;
        case POPC_OPT_ENUM:
            value = strcmp(info->name, "syncPattern") == 0 ? "SinglePipeline"
                    : strcmp(info->name, "Precision.halfFloatCasting") == 0
                        ? "HalfUpcastToFloat"
                        : "OffChipAfterFwd";
            break;
        default:
            value = "x=y";
            break;
        }
        snprintf(want, sizeof want, "option %s is not supported yet by popc "
                 "(it would ", info->name);
        expect(popc_options_set(opts, info->name, value), POPC_EUNSUPPORTED,
               want, "; leave it at its default");
        ck_assert(!popc_options_is_set(opts, info->name));
        refused++;
    }
    for (int i = 0; i < popc_options_count(); i++)
        refused -= !popc_options_info(i)->supported;
    ck_assert_int_eq(refused, 0);
}
END_TEST

/* ---- values and PopTorch's texts ----------------------------------------------- */

START_TEST(enum_spellings)
{
    static const char *const forms[] = {"Sum", "OutputMode.Sum",
                                        "poptorch.OutputMode.Sum"};

    for (int i = 0; i < 3; i++) {
        ok(popc_options_set(opts, "outputMode", "All"));
        ok(popc_options_set(opts, "outputMode", forms[i]));
        ck_assert_int_eq(popc_options_get_int(opts, "outputMode"),
                         POPC_OUTPUT_SUM);
        ck_assert_str_eq(fmt(opts, "outputMode"), "Sum");
    }
    ck_assert(popc_options_is_set(opts, "outputMode"));
    expect(popc_options_set(opts, "outputMode", "sum"), POPC_EINVAL,
           "outputMode: 'sum' is not a member of OutputMode; did you mean "
           "'Sum'?",
           "valid values: Final, EveryN, All, Sum, Default");
    expect(popc_options_set(opts, "outputMode", "ConnectionType.Sum"),
           POPC_EINVAL, "'ConnectionType.Sum' is not a member of OutputMode",
           NULL);
    expect(popc_options_set_int(opts, "outputMode", 9), POPC_EINVAL,
           "outputMode: 9 is not a value of OutputMode", NULL);
    ok(popc_options_set_int(opts, "connectionType", POPC_CONNECTION_NEVER));
    ck_assert_str_eq(fmt(opts, "connectionType"), "Never");
    ok(popc_options_set(opts, "setExecutionStrategy", "Sharded"));
    ck_assert_str_eq(fmt(opts, "setExecutionStrategy"), "ShardedExecution");
    ok(popc_options_set(opts, "setExecutionStrategy",
                        "poptorch.SerialPhasedExecution"));
    ck_assert_int_eq(popc_options_get_int(opts, "setExecutionStrategy"),
                     POPC_EXEC_SERIAL_PHASED);
    ok(popc_options_set(opts, "Precision.setPartialsType", "torch.float32"));
    expect(popc_options_set(opts, "Precision.setPartialsType", "torch.int"),
           POPC_EINVAL, "parameter to setPartialsType should be "
           "eithertorch.float or torch.half", NULL);
}
END_TEST

START_TEST(integer_ranges)
{
    expect(popc_options_set(opts, "deviceIterations", "0"), POPC_EINVAL,
           "deviceIterations: must be >= 1 (got 0)", NULL);
    expect(popc_options_set_int(opts, "replicationFactor", -2), POPC_EINVAL,
           "replicationFactor: must be >= 1 (got -2)", NULL);
    expect(popc_options_set(opts, "deviceIterations", "4x"), POPC_EINVAL,
           "deviceIterations: must be an integer (got '4x')", NULL);
    expect(popc_options_set(opts, "threads", "5000"), POPC_EINVAL,
           "threads: must be between 0 and 4096 (got 5000)", NULL);
    expect(popc_options_set(opts, "Training.gradientAccumulation", "None"),
           POPC_EINVAL, "must be an integer", NULL);
    ok(popc_options_set_int(opts, "deviceIterations", 16));
    ck_assert_int_eq(popc_options_get_int(opts, "deviceIterations"), 16);
    ck_assert(popc_options_is_set(opts, "deviceIterations"));
    ck_assert(!popc_options_is_set(opts, "replicationFactor"));
    expect(popc_options_set(opts, "outputReturnPeriod", "0"), POPC_EINVAL,
           "EveryN anchor must have output_return_period set to valid "
           "positive integer", NULL);
    expect(popc_options_set(opts, "broadcastBuffers", "maybe"), POPC_EINVAL,
           "broadcastBuffers: must be true or false (got 'maybe')", NULL);
    ok(popc_options_set(opts, "broadcastBuffers", "False"));
    ck_assert_int_eq(popc_options_get_bool(opts, "broadcastBuffers"), 0);
    ok(popc_options_set_bool(opts, "broadcastBuffers", 5));
    ck_assert_int_eq(popc_options_get_bool(opts, "broadcastBuffers"), 1);
    expect(popc_options_set_int(opts, "backend", 1), POPC_EINVAL,
           "backend is a string option; set it with popc_options_set", NULL);
    expect(popc_options_set_float(opts, "deviceIterations", 2.5),
           POPC_EINVAL, "deviceIterations is an integer option", NULL);
    expect(popc_options_set(opts, "deviceIteration", "2"), POPC_ENOTFOUND,
           "unknown option 'deviceIteration'; did you mean "
           "'deviceIterations'?", NULL);
    expect(popc_options_set(opts, "gradientAccumulation", "2"),
           POPC_ENOTFOUND, "did you mean 'Training.gradientAccumulation'?",
           NULL);
    /* the valid names follow: the group's, or the ungrouped ones and the
    ** groups */
    expect(popc_options_set(opts, "Training.nope", "2"), POPC_ENOTFOUND,
           "unknown option 'Training.nope'. Valid options: "
           "Training.gradientAccumulation, Training.accumulationAndReplication"
           "ReductionType, ", NULL);
    expect(popc_options_set(opts, "nope", "2"), POPC_ENOTFOUND,
           "Valid options: deviceIterations, replicationFactor, "
           "inputReplicaGrouping.*, ", NULL);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), ", Training.*, "));
    expect(popc_options_set(NULL, "deviceIterations", "2"), POPC_EINVAL,
           "NULL options", NULL);
}
END_TEST

START_TEST(poptorch_validation_texts)
{
    expect(popc_options_set(opts, "TensorLocations.numIOTiles", "31"),
           POPC_EINVAL, "numIOTiles must be an even number between 32 and "
           "192.", NULL);
    expect(popc_options_set(opts, "TensorLocations.numIOTiles", "33"),
           POPC_EINVAL, "numIOTiles must be an even number between 32 and "
           "192.", NULL);
    expect(popc_options_set(opts, "TensorLocations.numIOTiles", "194"),
           POPC_EINVAL, "numIOTiles must be an even number", NULL);
    ok(popc_options_set(opts, "TensorLocations.numIOTiles", "192"));

    expect(popc_options_set(opts,
               "Training.accumulationAndReplicationReductionType",
               "poptorch.ReductionType.NoReduction"),
           POPC_EINVAL, "accumulationAndReplicationReductionType must be set "
           "to poptorch.ReductionType.Mean or poptorch.ReductionType.Sum",
           NULL);
    expect(popc_options_set(opts,
               "Training.accumulationAndReplicationReductionType", "Max"),
           POPC_EINVAL, "must be set to poptorch.ReductionType.Mean or "
           "poptorch.ReductionType.Sum", NULL);
    expect(popc_options_set_int(opts,
               "Training.accumulationAndReplicationReductionType",
               POPC_REDUCTION_NONE),
           POPC_EINVAL, "must be set to poptorch.ReductionType.Mean", NULL);
    ok(popc_options_set(opts,
                        "Training.accumulationAndReplicationReductionType",
                        "ReductionType.Sum"));

    expect(popc_options_set(opts, "Jit.traceModel", "true"), POPC_EINVAL,
           "options.Jit.traceModel(True) is no longer supported", NULL);
    ok(popc_options_set(opts, "Jit.traceModel", "false"));

    /* inputReplicaGrouping is checked against the replication factor set
    ** before it, as PopTorch does */
    expect(popc_options_set(opts, "inputReplicaGrouping.size", "2"),
           POPC_EINVAL, "input_group_size cannot be larger than "
           "replication_factor", NULL);
    ok(popc_options_set(opts, "replicationFactor", "6"));
    expect(popc_options_set(opts, "inputReplicaGrouping.size", "4"),
           POPC_EINVAL, "input_group_size must be a factor of "
           "replication_factor", NULL);
    ok(popc_options_set(opts, "inputReplicaGrouping.size", "3"));
    expect(popc_options_set(opts, "inputReplicaGrouping.type",
                            "CommGroupType.All"),
           POPC_EINVAL, "input_group_type cannot be All", NULL);
    ok(popc_options_set(opts, "inputReplicaGrouping.type", "Orthogonal"));
    ok(popc_options_set(opts, "inputReplicaGrouping.type", "NoGrouping"));
    ck_assert_str_eq(fmt(opts, "inputReplicaGrouping.type"), "Consecutive");
    ck_assert_int_eq(popc_options_get_int(opts, "inputReplicaGrouping.size"),
                     1);

    expect(popc_options_set(opts, "ipuVersion", "3"), POPC_EINVAL,
           "ipuVersion: the IPU version must be 1 (Mk1), 2 (Mk2) or 21",
           NULL);
    expect(popc_options_set(opts, "backend", "CPU!"), POPC_EINVAL,
           "backend: 'CPU!' is not a backend name", NULL);
    expect(popc_options_set(opts, "logDir", ""), POPC_EINVAL,
           "logDir: must not be empty", NULL);
}
END_TEST

static char logged[1024];

static void capture(int level, const char *msg, void *user)
{
    (void)user;
    if (level == POPC_LOG_WARN)
        snprintf(logged, sizeof logged, "%s", msg);
}

START_TEST(post_and_loss_maps_to_post)
{
    logged[0] = '\0';
    popc_log_set_callback(capture, NULL);
    ok(popc_options_set(opts,
        "Training.meanAccumulationAndReplicationReductionStrategy",
        "Running"));
    ok(popc_options_set(opts,
        "Training.setMeanAccumulationAndReplicationReductionStrategy",
        "poptorch.MeanReductionStrategy.PostAndLoss"));
    popc_log_set_callback(NULL, NULL);
    ck_assert_int_eq(popc_options_get_int(opts,
        "Training.meanAccumulationAndReplicationReductionStrategy"),
        POPC_MEAN_POST);
    ck_assert_msg(strstr(logged, "PostAndLoss is deprecated"), "log: %s",
                  logged);
}
END_TEST

START_TEST(shortcuts_and_side_effects)
{
    ok(popc_options_set(opts, "backend", "cpu"));
    ok(popc_options_set(opts, "useIpuModel", "true"));
    ck_assert_str_eq(popc_options_get_string(opts, "backend"), "ipumodel");
    ok(popc_options_set(opts, "backend", "cpu"));
    ok(popc_options_set(opts, "useIpuModel", "false"));
    ck_assert_str_eq(popc_options_get_string(opts, "backend"), "cpu");

    expect(popc_options_set(opts, "useOfflineIpuTarget", "3"), POPC_EINVAL,
           "useOfflineIpuTarget: the IPU version must be 1", NULL);
    ck_assert_str_eq(fmt(opts, "connectionType"), "Always");
    ok(popc_options_set_int(opts, "useOfflineIpuTarget", 21));
    ck_assert_str_eq(fmt(opts, "connectionType"), "Never");
    ck_assert_int_eq(popc_options_get_int(opts, "ipuVersion"), 21);
    ck_assert_str_eq(popc_options_get_string(opts, "backend"), "offline");

    ok(popc_options_set(opts, "setAvailableMemoryProportion",
                        "{'IPU1': 0.25, \"IPU0\": 0.5}"));
    ck_assert_str_eq(fmt(opts, "setAvailableMemoryProportion"),
                     "IPU0=0.5,IPU1=0.25");
    ck_assert(popc_options_get_available_memory(opts, 1) == 0.25);
    ck_assert(popc_options_get_available_memory(opts, 2) == 0.6);
    ok(popc_options_set(opts, "setAvailableMemoryProportion",
                        "IPU3=0.123456789"));
    ck_assert_str_eq(fmt(opts, "setAvailableMemoryProportion"),
                     "IPU3=0.123456789");
    expect(popc_options_set(opts, "setAvailableMemoryProportion", "GPU0=1"),
           POPC_EINVAL, "Available memory proportions are expected to be in "
           "a dictionary of {\"IPU0\": 0.5} where the 0 in IPU is the index "
           "of the IPU. Invalid key: GPU0", NULL);
    expect(popc_options_set(opts, "setAvailableMemoryProportion", "IPU0=1.5"),
           POPC_EINVAL, "the proportion for IPU0 must be a number between 0 "
           "and 1", NULL);
    expect(popc_options_set(opts, "setAvailableMemoryProportion",
                            "IPU0=0.1,IPU0=0.2"),
           POPC_EINVAL, "IPU0 is given twice", NULL);

    ok(popc_options_set(opts, "randomSeed", "-42"));
    ck_assert_int_eq(popc_options_get_int(opts, "randomSeed"), -42);
    ck_assert(!popc_options_is_none(opts, "randomSeed"));
    ok(popc_options_set(opts, "randomSeed", "None"));
    ck_assert(popc_options_is_none(opts, "randomSeed"));
    ok(popc_options_set(opts, "maxRepeatLogs", "None"));
    ck_assert(popc_options_is_none(opts, "maxRepeatLogs"));
    ok(popc_options_set(opts, "enableExecutableCaching", "/tmp/x"));
    ck_assert_str_eq(popc_options_get_string(opts, "enableExecutableCaching"),
                     "/tmp/x");
    ok(popc_options_set(opts, "enableExecutableCaching", ""));
    ck_assert_ptr_null(popc_options_get_string(opts,
                                               "enableExecutableCaching"));
    ok(popc_options_set(opts, "modelName", NULL));
    expect(popc_options_set(opts, "logDir", NULL), POPC_EINVAL,
           "logDir: no value given", NULL);
}
END_TEST

/* ---- frozen, clone, hash ----------------------------------------------------------- */

START_TEST(frozen_and_clone)
{
    popc_options *c = NULL;

    ok(popc_options_set(opts, "deviceIterations", "4"));
    ok(popc_options_set(opts, "modelName", "m"));
    ck_assert(!popc_options_frozen(opts));
    popc_options_freeze(opts);
    ck_assert(popc_options_frozen(opts));
    expect(popc_options_set(opts, "deviceIterations", "5"), POPC_ESTATE,
           "Can't modify frozen Options", "deviceIterations");
    expect(popc_options_set_int(opts, "replicationFactor", 2), POPC_ESTATE,
           "Can't modify frozen Options", NULL);
    expect(popc_options_load_ini(opts, data("options_good.ini")),
           POPC_ESTATE, "Can't modify frozen Options", NULL);
    expect(popc_options_load_file(opts, data("options_good.txt")),
           POPC_ESTATE, "Can't modify frozen Options", NULL);
    expect(popc_options_load_json(opts, "{\"deviceIterations\": 2}"),
           POPC_ESTATE, "Can't modify frozen Options", NULL);
    ck_assert_int_eq(popc_options_get_int(opts, "deviceIterations"), 4);

    ok(popc_options_clone(opts, &c));
    ck_assert(!popc_options_frozen(c));
    ck_assert_int_eq(popc_options_get_int(c, "deviceIterations"), 4);
    ck_assert(popc_options_is_set(c, "deviceIterations"));
    ck_assert_str_eq(popc_options_get_string(c, "modelName"), "m");
    ck_assert_ptr_ne(popc_options_get_string(c, "modelName"),
                     popc_options_get_string(opts, "modelName"));
    ck_assert_uint_eq(popc_options_hash(c), popc_options_hash(opts));
    ok(popc_options_set(c, "deviceIterations", "5"));
    ck_assert_int_eq(popc_options_get_int(opts, "deviceIterations"), 4);
    popc_options_free(c);
    expect(popc_options_clone(NULL, &c), POPC_EINVAL, "NULL", NULL);
    ck_assert_ptr_null(c);
    popc_options_free(NULL);
    popc_options_freeze(NULL);
}
END_TEST

static int repeats;

static void count_same(int level, const char *msg, void *user)
{
    (void)level;
    (void)user;
    if (strcmp(msg, "same line") == 0)
        repeats++;
}

/* maxRepeatLogs reaches the process-wide log when a model freezes the
** options, and only when the user set it. */
START_TEST(freeze_applies_max_repeat_logs)
{
    popc_options *plain = NULL;

    ok(popc_options_new(&plain));
    ok(popc_options_set(opts, "maxRepeatLogs", "2"));
    popc_options_freeze(opts);
    popc_options_freeze(plain);
    popc_log_set_callback(count_same, NULL);
    repeats = 0;
    for (int i = 0; i < 5; i++)
        popc_log(POPC_LOG_ERR, "same line");
    popc_log(POPC_LOG_ERR, "another line");
    popc_log_set_callback(NULL, NULL);
    popc_log_set_max_repeats(4);
    ck_assert_int_eq(repeats, 2);
    popc_options_free(plain);
}
END_TEST

START_TEST(hash_follows_compile_options)
{
    popc_options *b = NULL;
    uint64_t h0 = popc_options_hash(opts);

    ok(popc_options_new(&b));
    ck_assert_uint_eq(popc_options_hash(b), h0);
    /* not compile-affecting */
    ok(popc_options_set(b, "logDir", "/tmp"));
    ok(popc_options_set(b, "threads", "3"));
    ok(popc_options_set(b, "randomSeed", "1"));
    ok(popc_options_set(b, "connectionType", "OnDemand"));
    ok(popc_options_set(b, "enableExecutableCaching", "/tmp/c"));
    ck_assert_uint_eq(popc_options_hash(b), h0);
    /* compile-affecting */
    static const char *const changes[][2] = {
        {"deviceIterations", "2"}, {"replicationFactor", "2"},
        {"Training.gradientAccumulation", "2"}, {"outputMode", "Sum"},
        {"backend", "cpu"}, {"setExecutionStrategy", "Sharded"},
        {"setAvailableMemoryProportion", "IPU0=0.3"},
        {"Training.accumulationAndReplicationReductionType", "Sum"},
        {"ipuVersion", "1"}, {"TensorLocations.numIOTiles", "32"}};
    for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
        popc_options *c = NULL;

        ok(popc_options_new(&c));
        ok(popc_options_set(c, changes[i][0], changes[i][1]));
        ck_assert_msg(popc_options_hash(c) != h0, "%s", changes[i][0]);
        popc_options_free(c);
    }
    popc_options_free(b);
    ck_assert_uint_eq(popc_options_hash(NULL), 0);
}
END_TEST

/* ---- environment ------------------------------------------------------------------- */

START_TEST(environment)
{
    popc_options *o = NULL;

    setenv("POPC_THREADS", "3", 1);
    setenv("POPC_CACHE_DIR", "/tmp/popc-cache", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_RANK", "2", 1);
    setenv("POPC_DEFAULT_OPTIONS",
           "{\"deviceIterations\": 2, \"connectionType\": "
           "\"ConnectionType.OnDemand\", \"outputMode\": "
           "[\"OutputMode.EveryN\", 2], \"Precision.setPartialsType\": "
           "\"torch.float\", \"randomSeed\": null, \"modelName\": \"a\\u00e9\"}",
           1);
    ok(popc_options_new(&o));
    ck_assert_int_eq(popc_options_get_int(o, "threads"), 3);
    ck_assert(!popc_options_is_set(o, "threads"));
    ck_assert_str_eq(popc_options_get_string(o, "enableExecutableCaching"),
                     "/tmp/popc-cache");
    ck_assert_int_eq(popc_options_get_int(o, "Distributed.numProcesses"), 4);
    ck_assert_int_eq(popc_options_get_int(o, "Distributed.processId"), 2);
    ck_assert_int_eq(popc_options_get_int(o, "deviceIterations"), 2);
    ck_assert_str_eq(fmt(o, "connectionType"), "OnDemand");
    ck_assert_str_eq(fmt(o, "outputMode"), "EveryN");
    ck_assert_int_eq(popc_options_get_int(o, "outputReturnPeriod"), 2);
    ck_assert_str_eq(popc_options_get_string(o, "modelName"), "a\xc3\xa9");
    popc_options_free(o);
    o = NULL;

    setenv("POPC_DEFAULT_OPTIONS", "{\"deviceIterations\": 2,", 1);
    expect(popc_options_new(&o), POPC_ECONFIG, "POPC_DEFAULT_OPTIONS: "
           "invalid JSON at offset", NULL);
    ck_assert_ptr_null(o);
    setenv("POPC_DEFAULT_OPTIONS", "[1]", 1);
    expect(popc_options_new(&o), POPC_ECONFIG, "expected a JSON object",
           NULL);
    setenv("POPC_DEFAULT_OPTIONS", "{\"deviceIterations\": \"2\"}", 1);
    expect(popc_options_new(&o), POPC_EINVAL, "deviceIterations: expected "
           "an integer, got a string ('2')", NULL);
    unsetenv("POPC_DEFAULT_OPTIONS");
    setenv("POPC_THREADS", "many", 1);
    expect(popc_options_new(&o), POPC_EINVAL, "environment variable "
           "POPC_THREADS: must be an integer between 0 and 4096 (got "
           "'many')", NULL);
    unsetenv("POPC_THREADS");
    setenv("OMPI_COMM_WORLD_SIZE", "0", 1);
    expect(popc_options_new(&o), POPC_EINVAL, "OMPI_COMM_WORLD_SIZE", NULL);
    ck_assert_ptr_null(o);
}
END_TEST

START_TEST(json_loading)
{
    ok(popc_options_load_json(opts,
        "{\"Distributed.configureProcessId\": [1, 3], "
        "\"setExecutionStrategy\": \"ShardedExecution\", "
        "\"setAvailableMemoryProportion\": [{\"IPU0\": 0.5}], "
        "\"inputReplicaGrouping\": [1, \"CommGroupType.Orthogonal\"], "
        "\"autoRoundNumIPUs\": [], \"Jit.traceModel\": false}"));
    ck_assert_int_eq(popc_options_get_int(opts, "Distributed.processId"), 1);
    ck_assert_int_eq(popc_options_get_int(opts, "Distributed.numProcesses"),
                     3);
    ck_assert_str_eq(fmt(opts, "setExecutionStrategy"), "ShardedExecution");
    ck_assert_str_eq(fmt(opts, "setAvailableMemoryProportion"), "IPU0=0.5");
    ck_assert_str_eq(fmt(opts, "inputReplicaGrouping.type"), "Orthogonal");
    ck_assert_int_eq(popc_options_get_bool(opts, "autoRoundNumIPUs"), 1);
    setenv("MY_NPROC", "8", 1);
    setenv("MY_RANK", "5", 1);
    ok(popc_options_load_json(opts, "{\"Distributed.setEnvVarNames\": "
                              "[\"MY_NPROC\", \"MY_RANK\"]}"));
    ck_assert_int_eq(popc_options_get_int(opts, "Distributed.processId"), 5);
    ck_assert_int_eq(popc_options_get_int(opts, "Distributed.numProcesses"),
                     8);
    ok(popc_options_load_json(opts, "{\"Distributed.disable\": []}"));
    ck_assert_int_eq(popc_options_get_int(opts, "Distributed.numProcesses"),
                     1);
    expect(popc_options_load_json(opts, "{\"Distributed.configureProcessId\""
                                  ": [2, 2]}"),
           POPC_EINVAL, "process_id (2) must be less than num_processes (2)",
           NULL);
    expect(popc_options_load_json(opts, "{\"outputMode\": [\"All\", 2, 3]}"),
           POPC_EINVAL, "outputMode() takes 2 arguments but 3 were given",
           NULL);
    /* all or nothing */
    expect(popc_options_load_json(opts, "{\"deviceIterations\": 9, "
                                  "\"replicationFactor\": 0}"),
           POPC_EINVAL, "options JSON: \"replicationFactor\": "
           "replicationFactor: must be >= 1 (got 0)", NULL);
    ck_assert_int_eq(popc_options_get_int(opts, "deviceIterations"), 1);
    expect(popc_options_load_json(opts, "{\"deviceIterations\": 1} x"),
           POPC_ECONFIG, "text after the object", NULL);
    expect(popc_options_load_json(opts, "{\"a\" 1}"), POPC_ECONFIG,
           "invalid JSON at offset 5: expected ':' after a key", NULL);
    expect(popc_options_load_json(opts, "{\"nope\": 1}"), POPC_ENOTFOUND,
           "'Options' object has no attribute 'nope'", NULL);
}
END_TEST

/* ---- checks across options ------------------------------------------------------- */

START_TEST(validate_across_options)
{
    ok(popc_options_validate(opts, 0));
    ok(popc_options_validate(opts, 1));
    ok(popc_options_set(opts, "Training.gradientAccumulation", "2"));
    ok(popc_options_validate(opts, 1));
    expect(popc_options_validate(opts, 0), POPC_EINVAL,
           "You must set poptorch.Options().Training.gradientAccumulation to "
           "1 or leave it as its default value (1) when running a "
           "poptorch.inferenceModel(). Use poptorch.Options().deviceIterations"
           " to process a sufficient number of batches each run for "
           "pipelined execution instead.", NULL);
    ok(popc_options_set(opts, "setExecutionStrategy", "ShardedExecution"));
    expect(popc_options_validate(opts, 0), POPC_EINVAL,
           "when running a poptorch.inferenceModel().", NULL);
    ck_assert_ptr_null(strstr(popc_last_error(), "pipelined"));
    ok(popc_options_set(opts, "Training.gradientAccumulation", "1"));

    ok(popc_options_set(opts, "deviceIterations", "4"));
    ok(popc_options_set(opts, "outputMode", "EveryN"));
    ok(popc_options_set(opts, "outputReturnPeriod", "3"));
    expect(popc_options_validate(opts, 0), POPC_EINVAL,
           "Return period must be a factor of the number of batches per step",
           NULL);
    ok(popc_options_set(opts, "outputReturnPeriod", "8"));
    expect(popc_options_validate(opts, 0), POPC_EINVAL,
           "Return period must be <= to the number of batches per step",
           NULL);
    ok(popc_options_set(opts, "outputReturnPeriod", "2"));
    ok(popc_options_validate(opts, 0));

    ok(popc_options_set(opts, "replicationFactor", "4"));
    ok(popc_options_set(opts, "inputReplicaGrouping.size", "4"));
    ok(popc_options_set(opts, "replicationFactor", "2"));
    expect(popc_options_validate(opts, 1), POPC_EINVAL,
           "input_group_size cannot be larger than replication_factor", NULL);
    ok(popc_options_set(opts, "replicationFactor", "8"));
    ok(popc_options_validate(opts, 1));

    ok(popc_options_set(opts, "Distributed.processId", "3"));
    expect(popc_options_validate(opts, 1), POPC_EINVAL,
           "Distributed.processId (3) must be less than "
           "Distributed.numProcesses (1)", NULL);
    ok(popc_options_set(opts, "Distributed.numProcesses", "4"));
    ok(popc_options_validate(opts, 1));

    ok(popc_options_set(opts, "useIpuModel", "true"));
    ok(popc_options_set(opts, "connectionType", "Never"));
    expect(popc_options_validate(opts, 1), POPC_EINVAL,
           "ConnectionType.Never / poptorch.Options.useOfflineIpuTarget not "
           "supported for the IPU model", NULL);
    ok(popc_options_set(opts, "useIpuModel", "false"));
    ok(popc_options_set(opts, "logCycleCount", "true"));
    expect(popc_options_validate(opts, 1), POPC_EINVAL,
           "Cycle count logging is only supported on actual IPU hardware.",
           NULL);
    ok(popc_options_set(opts, "connectionType", "Always"));
    ok(popc_options_validate(opts, 1));
    expect(popc_options_validate(NULL, 1), POPC_EINVAL, "NULL", NULL);
}
END_TEST

/* ---- INI [options] ---------------------------------------------------------------- */

START_TEST(ini_good)
{
    ok(popc_options_load_ini(opts, data("options_good.ini")));
    ck_assert_int_eq(popc_options_get_int(opts, "replicationFactor"), 4);
    ck_assert_int_eq(popc_options_get_int(opts, "inputReplicaGrouping.size"),
                     2);
    ck_assert_int_eq(popc_options_get_int(opts, "deviceIterations"), 8);
    ck_assert_str_eq(fmt(opts, "outputMode"), "EveryN");
    ck_assert_int_eq(popc_options_get_int(opts, "outputReturnPeriod"), 4);
    ck_assert_int_eq(popc_options_get_int(opts,
                                          "Training.gradientAccumulation"), 3);
    ck_assert_str_eq(fmt(opts,
                         "Training.accumulationAndReplicationReductionType"),
                     "Sum");
    ck_assert_str_eq(fmt(opts,
        "Training.meanAccumulationAndReplicationReductionStrategy"),
        "Running");
    ck_assert_str_eq(fmt(opts, "connectionType"), "OnDemand");
    ck_assert_int_eq(popc_options_get_int(opts, "randomSeed"), 42);
    ck_assert_str_eq(popc_options_get_string(opts, "modelName"), "my model");
    ck_assert_str_eq(fmt(opts, "setAvailableMemoryProportion"),
                     "IPU0=0.5,IPU1=0.25");
    ck_assert_int_eq(popc_options_get_int(opts, "TensorLocations.numIOTiles"),
                     64);
    ck_assert_int_eq(popc_options_get_int(opts, "threads"), 2);
    /* the [run] section is not ours */
    ck_assert_str_eq(popc_options_get_string(opts, "backend"), "ipumodel");
    ok(popc_options_validate(opts, 1));
}
END_TEST

START_TEST(ini_errors_name_file_and_line)
{
    char want[4300];

    ok(popc_options_set(opts, "deviceIterations", "2"));
    snprintf(want, sizeof want, "%s:3: [options] replicationFactor: must be "
             ">= 1 (got 0)", data("options_bad_value.ini"));
    expect(popc_options_load_ini(opts, data("options_bad_value.ini")),
           POPC_EINVAL, want, NULL);
    /* all or nothing: line 2 was valid but nothing changed */
    ck_assert_int_eq(popc_options_get_int(opts, "deviceIterations"), 2);

    snprintf(want, sizeof want, "%s:3: [options] unknown option "
             "'deviceIteration'; did you mean 'deviceIterations'?",
             data("options_unknown.ini"));
    expect(popc_options_load_ini(opts, data("options_unknown.ini")),
           POPC_ENOTFOUND, want, NULL);
    snprintf(want, sizeof want, "%s: Error (10) on line 4: Duplicate key is "
             "not allowed.", data("options_dupkey.ini"));
    expect(popc_options_load_ini(opts, data("options_dupkey.ini")),
           POPC_ECONFIG, want, NULL);
    snprintf(want, sizeof want, "%s: Error (5) on line 3: Equal sign is "
             "missing.", data("options_noeq.ini"));
    expect(popc_options_load_ini(opts, data("options_noeq.ini")),
           POPC_ECONFIG, want, NULL);
    snprintf(want, sizeof want, "%s:2: [options] deviceIterations: must be an "
             "integer (got '4 ; four batches')", data("options_comment.ini"));
    expect(popc_options_load_ini(opts, data("options_comment.ini")),
           POPC_EINVAL, want, "comments must be on their own line");
    expect(popc_options_load_ini(opts, data("options_alias_twice.ini")),
           POPC_ECONFIG, ":3: [options] Training.setMeanAccumulationAnd"
           "ReplicationReductionStrategy sets the same option as "
           "Training.meanAccumulationAndReplicationReductionStrategy on line "
           "2", NULL);
    expect(popc_options_load_ini(opts, data("no_such.ini")), POPC_EIO,
           "no_such.ini: cannot open", NULL);
    ck_assert_int_eq(popc_options_get_int(opts, "deviceIterations"), 2);
    /* a file without [options] changes nothing */
    ok(popc_options_load_ini(opts, data("config_good.ini")));
}
END_TEST

/* ---- loadFromFile -------------------------------------------------------------------- */

START_TEST(load_file_good)
{
    ok(popc_options_load_file(opts, data("options_good.txt")));
    ck_assert_int_eq(popc_options_get_int(opts, "deviceIterations"), 4);
    ck_assert_int_eq(popc_options_get_int(opts, "replicationFactor"), 2);
    ck_assert_int_eq(popc_options_get_int(opts,
                                          "Training.gradientAccumulation"), 2);
    ck_assert_str_eq(fmt(opts,
                         "Training.accumulationAndReplicationReductionType"),
                     "Sum");
    ck_assert_str_eq(fmt(opts, "outputMode"), "EveryN");
    ck_assert_int_eq(popc_options_get_int(opts, "outputReturnPeriod"), 2);
    /* each anchorTensor call adds one anchor */
    ck_assert_str_eq(popc_options_get_string(opts, "anchorTensor"),
                     "h=fc1_out,g=x@EveryN:2");
    ck_assert_int_eq(popc_options_get_int(opts, "Distributed.processId"), 1);
    ck_assert_int_eq(popc_options_get_int(opts, "Distributed.numProcesses"),
                     4);
    ck_assert_str_eq(fmt(opts, "setExecutionStrategy"), "PipelinedExecution");
    ck_assert_str_eq(fmt(opts, "setExecutionStrategy.autoStage"),
                     "AutoIncrement");
    ck_assert_str_eq(fmt(opts, "setAvailableMemoryProportion"),
                     "IPU0=0.5,IPU1=0.75");
    ck_assert_str_eq(fmt(opts,
        "Training.meanAccumulationAndReplicationReductionStrategy"),
        "Running");
    ck_assert_str_eq(popc_options_get_string(opts, "enableProfiling"), ".");
    ck_assert_int_eq(popc_options_get_bool(opts, "autoRoundNumIPUs"), 1);
    ck_assert(popc_options_is_none(opts, "maxRepeatLogs"));
    ck_assert_str_eq(popc_options_get_string(opts, "modelName"),
                     "it's # not a comment");
    ck_assert_str_eq(fmt(opts, "connectionType"), "Never");
    ck_assert_int_eq(popc_options_get_int(opts, "ipuVersion"), 21);
    ck_assert_int_eq(popc_options_get_int(opts, "inputReplicaGrouping.size"),
                     2);
    ck_assert_str_eq(fmt(opts, "inputReplicaGrouping.type"), "Orthogonal");
    ok(popc_options_validate(opts, 1));
}
END_TEST

START_TEST(load_file_errors)
{
    /* PopTorch counts only the kept lines: replicationFactor(4 is on line
    ** 6 of the file but is the 2nd kept line */
    expect(popc_options_load_file(opts, data("options_syntax.txt")),
           POPC_ECONFIG, "SyntaxError at line 2 of options_syntax.txt: "
           "invalid syntax: expected ',' or ')'",
           "\n> options.replicationFactor(4");
    /* a syntax error anywhere applies nothing */
    ck_assert_int_eq(popc_options_get_int(opts, "deviceIterations"), 1);
    expect(popc_options_load_file(opts, data("options_attr.txt")),
           POPC_ENOTFOUND, "AttributeError at line 2 of options_attr.txt: "
           "'_TrainingOptions' object has no attribute 'gradientAcumulation';"
           " did you mean 'Training.gradientAccumulation'?",
           "\n> options.Training.gradientAcumulation(2)");
    ck_assert_int_eq(popc_options_get_int(opts, "deviceIterations"), 1);
    expect(popc_options_load_file(opts, data("options_everyn.txt")),
           POPC_EINVAL, "AssertionError at line 2 of options_everyn.txt: "
           "outputMode: EveryN anchor must have output_return_period set to "
           "valid positive integer", NULL);
    expect(popc_options_load_file(opts, data("options_reduction.txt")),
           POPC_EINVAL, "ValueError at line 2 of options_reduction.txt: ",
           "accumulationAndReplicationReductionType must be set to "
           "poptorch.ReductionType.Mean or poptorch.ReductionType.Sum");
    expect(popc_options_load_file(opts, data("options_type.txt")),
           POPC_EINVAL, "TypeError at line 1 of options_type.txt: "
           "deviceIterations: expected an integer, got a float (2.5)", NULL);
    /* TensorLocationSettings() calls set the class's settings */
    {
        popc_options *loc = NULL;

        ok(popc_options_new(&loc));
        ok(popc_options_load_file(loc, data("options_location.txt")));
        ck_assert_int_eq(popc_options_get_bool(
                             loc, "TensorLocations.setWeightLocation."
                                  "useOnChipStorage"), 0);
        popc_options_free(loc);
    }
    {
        popc_options *ex = NULL;

        ok(popc_options_new(&ex));
        ok(popc_options_load_file(ex, data("options_excludes.txt")));
        ck_assert_str_eq(popc_options_get_string(ex,
                                                 "sourceLocationExcludes"),
                         "mylib/,helpers,vendor/,gen_");
        popc_options_free(ex);
    }
    expect(popc_options_load_file(opts, data("options_phased.txt")),
           POPC_EUNSUPPORTED, "explicit stage, phase or block lists in "
           "SerialPhasedExecution are not supported yet by popc", NULL);
    expect(popc_options_load_file(opts, data("options_trace.txt")),
           POPC_EINVAL, "options.Jit.traceModel(True) is no longer supported",
           NULL);
    expect(popc_options_load_file(opts, data("options_assign.txt")),
           POPC_ECONFIG, "SyntaxError at line 1 of options_assign.txt: "
           "invalid syntax: options are set by calling them", NULL);
    expect(popc_options_load_file(opts, data("options_utf8.txt")),
           POPC_ECONFIG, "options_utf8.txt:3: invalid UTF-8 (byte 0xFF at "
           "column 12)", NULL);
    expect(popc_options_load_file(opts, data("missing.txt")), POPC_EIO,
           "missing.txt: cannot open", NULL);
    ck_assert_int_eq(popc_options_get_int(opts, "deviceIterations"), 1);
    ck_assert(!popc_options_is_set(opts, "deviceIterations"));
}
END_TEST

static Suite *options_suite(void)
{
    Suite *s = suite_create("options");
    TCase *t = tcase_create("table");
    TCase *v = tcase_create("values");
    TCase *f = tcase_create("files");

    tcase_add_test(t, typed_ids_match_the_table);

    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, every_option_has_a_valid_default);
    tcase_add_test(t, poptorch_defaults);
    tcase_add_test(t, supported_flags);
    tcase_add_test(t, unsupported_options_are_refused);
    suite_add_tcase(s, t);

    tcase_add_checked_fixture(v, setup, teardown);
    tcase_add_test(v, enum_spellings);
    tcase_add_test(v, integer_ranges);
    tcase_add_test(v, poptorch_validation_texts);
    tcase_add_test(v, post_and_loss_maps_to_post);
    tcase_add_test(v, shortcuts_and_side_effects);
    tcase_add_test(v, frozen_and_clone);
    tcase_add_test(v, freeze_applies_max_repeat_logs);
    tcase_add_test(v, hash_follows_compile_options);
    tcase_add_test(v, environment);
    tcase_add_test(v, validate_across_options);
    suite_add_tcase(s, v);

    tcase_add_checked_fixture(f, setup, teardown);
    tcase_add_test(f, json_loading);
    tcase_add_test(f, ini_good);
    tcase_add_test(f, ini_errors_name_file_and_line);
    tcase_add_test(f, load_file_good);
    tcase_add_test(f, load_file_errors);
    suite_add_tcase(s, f);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(options_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
