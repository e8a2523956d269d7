/* options_table.c - every option: PopTorch's name, type, default, checks,
** and whether popc builds its effect yet.
**
** This table is the one place to flip `supported` (the 6th field of
** .info) when a feature lands. An unsupported option is refused with
** POPC_EUNSUPPORTED when set to anything but its default, never silently
** ignored. Table order is also the order in which an INI [options]
** section is applied, so options that others depend on come first
** (replicationFactor before inputReplicaGrouping.size) and explicit
** settings come after the shortcuts that imply them (useOfflineIpuTarget
** before connectionType, ipuVersion and backend).
*/
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/log.h"
#include "popc/registry.h"
#include "core/alloc_priv.h"
#include "core/anchors_priv.h"
#include "core/options_priv.h"

#define C  POPCI_OPT_COMPILE
#define N  POPCI_OPT_NULLABLE
#define P  POPCI_OPT_POPC
#define MAX32 INT32_MAX

/* ---- enum members (values are PopTorch's, docs/semantics.md §0) ------- */

static const popci_enum_member output_modes[] = {
    {"Final", POPC_OUTPUT_FINAL, 0, NULL},
    {"EveryN", POPC_OUTPUT_EVERYN, 0, NULL},
    {"All", POPC_OUTPUT_ALL, 0, NULL},
    {"Sum", POPC_OUTPUT_SUM, 0, NULL},
    {"Default", POPC_OUTPUT_DEFAULT, 0, NULL},
    {NULL, 0, 0, NULL}};

static const popci_enum_member connection_types[] = {
    {"Always", POPC_CONNECTION_ALWAYS, 0, NULL},
    {"OnDemand", POPC_CONNECTION_ONDEMAND, 0, NULL},
    {"Never", POPC_CONNECTION_NEVER, 0, NULL},
    {NULL, 0, 0, NULL}};

static const popci_enum_member sync_patterns[] = {
    {"Full", POPC_SYNC_FULL, 0, NULL},
    {"SinglePipeline", POPC_SYNC_SINGLE_PIPELINE, 0, NULL},
    {"ReplicaAndLadder", POPC_SYNC_REPLICA_AND_LADDER, 0, NULL},
    {NULL, 0, 0, NULL}};

static const popci_enum_member comm_groups[] = {
    {"All", POPC_COMM_ALL, POPCI_MEMBER_REJECT,
     "input_group_type cannot be All"},
    {"Consecutive", POPC_COMM_CONSECUTIVE, 0, NULL},
    {"Orthogonal", POPC_COMM_ORTHOGONAL, 0, NULL},
    {"NoGrouping", POPC_COMM_NO_GROUPING, 0, NULL},
    {NULL, 0, 0, NULL}};

static const popci_enum_member reduction_types[] = {
    {"Sum", POPC_REDUCTION_SUM, 0, NULL},
    {"Mean", POPC_REDUCTION_MEAN, 0, NULL},
    {"NoReduction", POPC_REDUCTION_NONE, POPCI_MEMBER_REJECT, NULL},
    {NULL, 0, 0, NULL}};

/* Q9: PostAndLoss (2) exists in PopTorch's Python enum only; the backend
** rejects it. popc maps it to Post and says so. */
static const popci_enum_member mean_strategies[] = {
    {"Running", POPC_MEAN_RUNNING, 0, NULL},
    {"Post", POPC_MEAN_POST, 0, NULL},
    {"PostAndLoss", POPC_MEAN_POST, POPCI_MEMBER_MAPPED,
     "MeanReductionStrategy.PostAndLoss is deprecated and not supported: "
     "using MeanReductionStrategy.Post"},
    {NULL, 0, 0, NULL}};

static const popci_enum_member auto_stages[] = {
    {"SameAsIpu", POPC_AUTOSTAGE_SAME_AS_IPU, 0, NULL},
    {"AutoIncrement", POPC_AUTOSTAGE_AUTO_INCREMENT, 0, NULL},
    {NULL, 0, 0, NULL}};

/* popc's syntheticDataMode; values are core/exec_priv.h's POPCI_SYNTH_*
** (PopART's SyntheticDataMode without Off). */
static const popci_enum_member synthetic_modes[] = {
    {"RandomNormal", 0, 0, NULL},
    {"RandomUniform", 1, 0, NULL},
    {"Zeros", 2, 0, NULL},
    {NULL, 0, 0, NULL}};

static const popci_enum_member livenesses[] = {
    {"AlwaysLive", POPC_LIVENESS_ALWAYS_LIVE, 0, NULL},
    {"OffChipAfterFwd", POPC_LIVENESS_OFF_CHIP_AFTER_FWD, 0, NULL},
    {"OffChipAfterFwdNoOverlap", POPC_LIVENESS_OFF_CHIP_AFTER_FWD_NO_OVERLAP,
     0, NULL},
    {"OffChipAfterEachPhase", POPC_LIVENESS_OFF_CHIP_AFTER_EACH_PHASE, 0,
     NULL},
    {NULL, 0, 0, NULL}};

static const popci_enum_member strategies[] = {
    {"PipelinedExecution", POPC_EXEC_PIPELINED, 0, NULL},
    {"ShardedExecution", POPC_EXEC_SHARDED, 0, NULL},
    {"SerialPhasedExecution", POPC_EXEC_SERIAL_PHASED, 0, NULL},
    {"ParallelPhasedExecution", POPC_EXEC_PARALLEL_PHASED, 0, NULL},
    {"Pipelined", POPC_EXEC_PIPELINED, POPCI_MEMBER_ALIAS, NULL},
    {"Sharded", POPC_EXEC_SHARDED, POPCI_MEMBER_ALIAS, NULL},
    {"SerialPhased", POPC_EXEC_SERIAL_PHASED, POPCI_MEMBER_ALIAS, NULL},
    {"ParallelPhased", POPC_EXEC_PARALLEL_PHASED, POPCI_MEMBER_ALIAS, NULL},
    {NULL, 0, 0, NULL}};

/* HalfFloatCastingBehavior of PopTorch 3.x. */
static const popci_enum_member half_castings[] = {
    {"FloatDowncastToHalf", 0, 0, NULL},
    {"HalfUpcastToFloat", 1, 0, NULL},
    {"Default", 2, 0, NULL},
    {NULL, 0, 0, NULL}};

/* torch dtypes accepted by Precision.setPartialsType. */
static const popci_enum_member partials_types[] = {
    {"float", 0, 0, NULL},
    {"half", 1, 0, NULL},
    {"float32", 0, POPCI_MEMBER_ALIAS, NULL},
    {"float16", 1, POPCI_MEMBER_ALIAS, NULL},
    {NULL, 0, 0, NULL}};

/* ---- hooks: PopTorch's own checks and side effects ------------------------ */

static popc_status hook_group_size(popc_options *o, const popci_optdef *d,
                                   popci_optval *v)
{
    int64_t r = popci_options_val(o, "replicationFactor")->i;

    /* PopTorch checks against the replication factor set before the
    ** call (docs/semantics.md §8); popc_options_validate rechecks. */
    if (v->i > r)
        return popc_set_error(POPC_EINVAL, "%s: input_group_size cannot be "
                              "larger than replication_factor (%lld > "
                              "replicationFactor %lld); set "
                              "replicationFactor first", d->info.name,
                              (long long)v->i, (long long)r);
    if (r % v->i != 0)
        return popc_set_error(POPC_EINVAL, "%s: input_group_size must be a "
                              "factor of replication_factor (%lld does not "
                              "divide replicationFactor %lld)", d->info.name,
                              (long long)v->i, (long long)r);
    return POPC_OK;
}

static popc_status hook_group_type(popc_options *o, const popci_optdef *d,
                                   popci_optval *v)
{
    (void)d;
    /* PopTorch: NoGrouping is stored as size 1, Consecutive. */
    if (v->i == POPC_COMM_NO_GROUPING) {
        v->i = POPC_COMM_CONSECUTIVE;
        return popci_options_commit_other(o, "inputReplicaGrouping.size",
                                          "1");
    }
    return POPC_OK;
}

static int valid_ipu_version(int64_t v)
{
    return v == 1 || v == 2 || v == 21;
}

static popc_status hook_ipu_version(popc_options *o, const popci_optdef *d,
                                    popci_optval *v)
{
    (void)o;
    if (!valid_ipu_version(v->i))
        return popc_set_error(POPC_EINVAL, "%s: the IPU version must be 1 "
                              "(Mk1), 2 (Mk2) or 21 (Mk2 with FP8) (got "
                              "%lld)", d->info.name, (long long)v->i);
    return POPC_OK;
}

static popc_status hook_offline(popc_options *o, const popci_optdef *d,
                                popci_optval *v)
{
    char ver[24];
    popc_status st;

    if (v->none)
        return POPC_OK;
    if ((st = hook_ipu_version(o, d, v)) != POPC_OK)
        return st;
    /* useOfflineIpuTarget(v) = connectionType(Never) + ipu_version(v);
    ** in popc the compile-only device is the "offline" backend. */
    snprintf(ver, sizeof ver, "%lld", (long long)v->i);
    if ((st = popci_options_commit_other(o, "connectionType", "Never")) ||
        (st = popci_options_commit_other(o, "ipuVersion", ver)) ||
        (st = popci_options_commit_other(o, "backend", "offline")))
        return st;
    return POPC_OK;
}

static popc_status hook_use_ipu_model(popc_options *o, const popci_optdef *d,
                                      popci_optval *v)
{
    (void)d;
    /* There is no IPU hardware in popc: False leaves the backend alone. */
    if (v->i)
        return popci_options_commit_other(o, "backend", "ipumodel");
    return POPC_OK;
}

static popc_status hook_io_tiles(popc_options *o, const popci_optdef *d,
                                 popci_optval *v)
{
    (void)o;
    /* 0 (the default: no IO tiles) is accepted so the default can be
    ** written back, e.g. by `popc options` output fed to an INI file */
    if (v->i != 0 && (v->i < 32 || v->i > 192 || v->i % 2 != 0))
        return popc_set_error(POPC_EINVAL, "%s: numIOTiles must be an even "
                              "number between 32 and 192. (got %lld)",
                              d->info.name, (long long)v->i);
    return POPC_OK;
}

static popc_status hook_trace_model(popc_options *o, const popci_optdef *d,
                                    popci_optval *v)
{
    (void)o;
    if (v->i)
        return popc_set_error(POPC_EINVAL, "%s: options.Jit.traceModel(True) "
                              "is no longer supported", d->info.name);
    return POPC_OK;
}

static popc_status hook_nonempty(popc_options *o, const popci_optdef *d,
                                 popci_optval *v)
{
    (void)o;
    if (!v->none && (!v->s || !*v->s))
        return popc_set_error(POPC_EINVAL, "%s: must not be empty%s",
                              d->info.name,
                              d->flags & POPCI_OPT_NULLABLE
                                  ? " (use None to unset it)" : "");
    return POPC_OK;
}

static popc_status hook_anchor(popc_options *o, const popci_optdef *d,
                               popci_optval *v)
{
    popc_status st;

    if ((st = hook_nonempty(o, d, v)) != POPC_OK || v->none)
        return st;
    return popci_anchors_check(v->s);
}

/* pluginPath: the directories are loaded into the process-wide registry
** as soon as the option is set, so that a graph built afterwards can use
** their ops (graphs look ops up while they are built). Loading is
** process-wide and stays: the registry never unloads a plugin early. */
static popc_status hook_plugin_path(popc_options *o, const popci_optdef *d,
                                    popci_optval *v)
{
    popc_registry *reg;
    popc_status st;
    char dir[4096];

    if ((st = hook_nonempty(o, d, v)) != POPC_OK || v->none)
        return st;
    if ((st = popc_registry_global(&reg)) != POPC_OK)
        return st;
    for (const char *p = v->s; p && *p;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);

        if (len >= sizeof dir)
            return popc_set_error(POPC_EINVAL, "%s: entry '%.40s...' is too "
                                  "long", d->info.name, p);
        memcpy(dir, p, len);
        dir[len] = '\0';
        p = end ? end + 1 : NULL;
        if (len == 0)
            continue;
        if (dir[0] != '/')
            return popc_set_error(POPC_EINVAL, "%s: '%s' is not an absolute "
                                  "path; give plugin directories as absolute "
                                  "paths (plugins are never loaded relative "
                                  "to the current directory)", d->info.name,
                                  dir);
        if ((st = popc_registry_load_path(reg, dir)) != POPC_OK)
            return popc_set_error(st, "%s: %s", d->info.name,
                                  popc_last_error());
    }
    return POPC_OK;
}

static popc_status hook_backend(popc_options *o, const popci_optdef *d,
                                popci_optval *v)
{
    const char *p = v->s;

    (void)o;
    if (!p || !*p)
        return popc_set_error(POPC_EINVAL, "%s: must name a backend (cpu, "
                              "ipumodel, offline or a plugin's backend)",
                              d->info.name);
    for (; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '.'))
            return popc_set_error(POPC_EINVAL, "%s: '%s' is not a backend "
                                  "name (lower-case letters, digits, '_' and "
                                  "'.'; e.g. cpu, ipumodel, offline)",
                                  d->info.name, v->s);
    return POPC_OK;
}

/* setAvailableMemoryProportion: {"IPU0": 0.5, ...} or "IPU0=0.5,IPU1=0.3"
** as text; stored canonically as "IPU0=0.5,IPU1=0.3" in IPU order. */
#define MAX_AMP_IPUS 64

static popc_status hook_amp(popc_options *o, const popci_optdef *d,
                            popci_optval *v)
{
    double prop[MAX_AMP_IPUS];
    int have[MAX_AMP_IPUS] = {0};
    const char *p = v->s;
    char out[MAX_AMP_IPUS * 32] = "";
    size_t used = 0;
    int any = 0;

    (void)o;
    if (v->none)
        return POPC_OK;
    while (p && *p) {
        char key[64];
        size_t n = 0;
        char *end;
        long ipu;
        double x;

        while (*p == ' ' || *p == '{' || *p == ',' || *p == '\t')
            p++;
        if (!*p || *p == '}')
            break;
        if (*p == '"' || *p == '\'')
            p++;
        while (p[n] && !strchr("\"'=:, }", p[n]) && n + 1 < sizeof key) {
            key[n] = p[n];
            n++;
        }
        key[n] = '\0';
        p += n;
        if (*p == '"' || *p == '\'')
            p++;
        while (*p == ' ')
            p++;
        if (strncmp(key, "IPU", 3) != 0 || !key[3] ||
            strspn(key + 3, "0123456789") != strlen(key + 3))
            return popc_set_error(POPC_EINVAL, "%s: Available memory "
                                  "proportions are expected to be in a "
                                  "dictionary of {\"IPU0\": 0.5} where the 0 "
                                  "in IPU is the index of the IPU. Invalid "
                                  "key: %s", d->info.name, key);
        ipu = strtol(key + 3, NULL, 10);
        if (ipu >= MAX_AMP_IPUS)
            return popc_set_error(POPC_EINVAL, "%s: IPU index %ld is out of "
                                  "range (0 to %d)", d->info.name, ipu,
                                  MAX_AMP_IPUS - 1);
        if (*p != '=' && *p != ':')
            return popc_set_error(POPC_EINVAL, "%s: expected '=' or ':' "
                                  "after %s in '%s' (e.g. IPU0=0.5,IPU1=0.3)",
                                  d->info.name, key, v->s);
        x = strtod(p + 1, &end);
        if (end == p + 1 || !(x >= 0.0 && x <= 1.0))
            return popc_set_error(POPC_EINVAL, "%s: the proportion for %s "
                                  "must be a number between 0 and 1 (in "
                                  "'%s')", d->info.name, key, v->s);
        if (have[ipu])
            return popc_set_error(POPC_EINVAL, "%s: %s is given twice in "
                                  "'%s'", d->info.name, key, v->s);
        have[ipu] = 1;
        prop[ipu] = x;
        any = 1;
        p = end;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p && *p != ',' && *p != '}')
            return popc_set_error(POPC_EINVAL, "%s: unexpected '%s' (e.g. "
                                  "IPU0=0.5,IPU1=0.3)", d->info.name, p);
    }
    for (int i = 0; i < MAX_AMP_IPUS; i++) {
        char num[32];

        if (!have[i])
            continue;
        /* shortest text that reads back to the same proportion */
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(num, sizeof num, "%.*g", prec, prop[i]);
            if (strtod(num, NULL) == prop[i])
                break;
        }
        used += (size_t)snprintf(out + used, sizeof out - used, "%sIPU%d=%s",
                                 used ? "," : "", i, num);
    }
    free(v->s);
    v->s = NULL;
    if (!any) {
        v->none = 1;
        return POPC_OK;
    }
    if (!(v->s = popci_strdup(out)))
        return popc_set_error(POPC_ENOMEM, "%s: out of memory",
                              d->info.name);
    return POPC_OK;
}

/* ---- the table ---------------------------------------------------------------- */

#define BOOLV "true | false"
/* The six TensorLocationSettings of one tensor class, flattened; their
** effect is core/locations.c's. */
#define LOCATION(CLS, what)                                                 \
    {.info = {"TensorLocations.set" CLS "Location.useOnChipStorage",        \
              POPC_OPT_BOOL, "None",                                        \
              "Keep " what " on chip (None: backend default)",              \
              BOOLV " | None", 1},                                          \
     .flags = C | N, .call_default = "true",                                \
     .param = "use"},                                                       \
    {.info = {"TensorLocations.set" CLS                                     \
              "Location.useReplicatedTensorSharding",                       \
              POPC_OPT_BOOL, "None", "Shard " what " across replicas",      \
              BOOLV " | None", 1},                                          \
     .flags = C | N, .call_default = "true",                                \
     .param = "use"},                                                       \
    {.info = {"TensorLocations.set" CLS "Location.useIOTilesToLoad",        \
              POPC_OPT_BOOL, "None", "Load " what " through IO tiles",      \
              BOOLV " | None", 1},                                          \
     .flags = C | N, .call_default = "true",                                \
     .param = "use"},                                                       \
    {.info = {"TensorLocations.set" CLS "Location.useIOTilesToStore",       \
              POPC_OPT_BOOL, "None", "Store " what " on IO tiles",          \
              BOOLV " | None", 1},                                          \
     .flags = C | N, .call_default = "true",                                \
     .param = "use"},                                                       \
    {.info = {"TensorLocations.set" CLS "Location.minElementsForOffChip",   \
              POPC_OPT_INT, "None",                                         \
              "Smallest " what " considered for off-chip storage (None: "   \
              "2)",                                                         \
              ">= 0 | None", 1},                                            \
     .flags = C | N, .min = 0, .max = INT64_MAX,                            \
     .param = "min_elements"},                                              \
    {.info = {"TensorLocations.set" CLS                                     \
              "Location.minElementsForReplicatedTensorSharding",            \
              POPC_OPT_INT, "None",                                         \
              "Smallest " what " considered for replicated tensor sharding "\
              "(None: 8192)",                                               \
              ">= 0 | None", 1},                                            \
     .flags = C | N, .min = 0, .max = INT64_MAX,                            \
     .param = "min_elements"}

const popci_optdef popci_option_table[] = {
    /* ---- Options ---- */
    {.info = {"deviceIterations", POPC_OPT_INT, "1",
              "Batches the device processes per run (loop on the device)",
              ">= 1", 1},
     .flags = C, .min = 1, .max = MAX32,
     .param = "device_iterations"},
    {.info = {"replicationFactor", POPC_OPT_INT, "1",
              "Number of replicas of the model (each on its own IPUs)",
              ">= 1", 1},
     .flags = C, .min = 1, .max = MAX32,
     .param = "replication_factor"},
    {.info = {"inputReplicaGrouping.size", POPC_OPT_INT, "1",
              "Replicas per input group (replicas of a group get the same "
              "data); a factor of replicationFactor", ">= 1", 1},
     .flags = C, .min = 1, .max = MAX32, .hook = hook_group_size},
    {.info = {"inputReplicaGrouping.type", POPC_OPT_ENUM, "Consecutive",
              "Arrangement of replicas in input groups",
              "Consecutive | Orthogonal | NoGrouping", 1},
     .flags = C, .enum_type = "CommGroupType", .members = comm_groups,
     .hook = hook_group_type},
    {.info = {"broadcastBuffers", POPC_OPT_BOOL, "true",
              "Broadcast buffers to all replicas", BOOLV, 1},
     .flags = C, .call_default = "true",
     .param = "broadcast_buffers"},
    {.info = {"outputMode", POPC_OPT_ENUM, "Default",
              "Which outputs a run returns (Default: All for inference, "
              "Final for training)", "Final | EveryN | All | Sum | Default",
              1},
     .flags = C, .enum_type = "OutputMode", .members = output_modes},
    {.info = {"outputReturnPeriod", POPC_OPT_INT, "1",
              "N of OutputMode.EveryN: return every N-th batch; must divide "
              "deviceIterations", ">= 1", 1},
     .flags = C, .min = 1, .max = MAX32,
     .bad_value = "EveryN anchor must have output_return_period set to valid "
                  "positive integer"},
    {.info = {"randomSeed", POPC_OPT_INT, "None",
              "Seed of the device's random number generator", "integer", 1},
     .flags = N, .min = INT64_MIN, .max = INT64_MAX,
     .param = "random_seed"},
    {.info = {"useIpuModel", POPC_OPT_BOOL, "false",
              "Use the IPU model (sets backend = ipumodel; popc has no IPU "
              "hardware, so false keeps the backend option)", BOOLV, 1},
     .flags = C, .hook = hook_use_ipu_model,
     .param = "use_model"},
    {.info = {"useOfflineIpuTarget", POPC_OPT_INT, "None",
              "Compile only, for this IPU version (sets connectionType = "
              "Never, ipuVersion, backend = offline)", "1 | 2 | 21 | None",
              1},
     .flags = C | N, .min = INT64_MIN, .max = INT64_MAX,
     .call_default = "2", .hook = hook_offline,
     .param = "ipu_version"},
    {.info = {"connectionType", POPC_OPT_ENUM, "Always",
              "When to attach to the device (Never: compile only)",
              "Always | OnDemand | Never", 1},
     .enum_type = "ConnectionType", .members = connection_types,
     .param = "connection_type"},
    {.info = {"ipuVersion", POPC_OPT_INT, "2",
              "popc: IPU version of the device (1: Mk1, 2: Mk2, 21: Mk2 "
              "with FP8); also set by useOfflineIpuTarget", "1 | 2 | 21", 1},
     .flags = C | P, .min = INT64_MIN, .max = INT64_MAX,
     .hook = hook_ipu_version},
    {.info = {"useIpuId", POPC_OPT_INT, "None",
              "Use the IPU device with this id: on ipumodel and offline, "
              "the device list of a POD16 as gc-info numbers it (0-15 one "
              "IPU, 16-23 two, 24-27 four, 28-29 eight, 30 sixteen)",
              ">= 0 | None", 1},
     .flags = C | N, .min = 0, .max = MAX32,
     .param = "ipu_id"},
    {.info = {"syncPattern", POPC_OPT_ENUM, "Full",
              "Synchronisation between IPUs and with the host: with Full, "
              "every IPU waits for every host transfer (ipumodel cycle "
              "estimates)",
              "Full | SinglePipeline | ReplicaAndLadder", 1},
     .flags = C, .enum_type = "SyncPattern", .members = sync_patterns,
     .param = "sync_pattern"},
    {.info = {"autoRoundNumIPUs", POPC_OPT_BOOL, "false",
              "Round the number of IPUs up to a power of 2 instead of "
              "failing", BOOLV, 1},
     .flags = C, .call_default = "true",
     .param = "auto_round_num_ipus"},
    {.info = {"setExecutionStrategy", POPC_OPT_ENUM, "PipelinedExecution",
              "How stages are run: pipelined, sharded or phased (stages and "
              "phases come from the graph's annotations)",
              "PipelinedExecution | ShardedExecution | SerialPhasedExecution "
              "| ParallelPhasedExecution", 1},
     .flags = C, .members = strategies},
    {.info = {"setExecutionStrategy.autoStage", POPC_OPT_ENUM, "SameAsIpu",
              "How blocks get stage ids when the graph gives none",
              "SameAsIpu | AutoIncrement", 1},
     .flags = C, .enum_type = "AutoStage", .members = auto_stages},
    {.info = {"setExecutionStrategy.tensorsLiveness", POPC_OPT_ENUM,
              "AlwaysLive", "Phased execution: when tensors leave the chip",
              "AlwaysLive | OffChipAfterFwd | OffChipAfterFwdNoOverlap | "
              "OffChipAfterEachPhase", 1},
     .flags = C, .enum_type = "Liveness", .members = livenesses},
    {.info = {"setExecutionStrategy.useSeparateBackwardPhase", POPC_OPT_BOOL,
              "false", "Phased execution: no phase shared by forward and "
              "backward", BOOLV, 1},
     .flags = C, .call_default = "true"},
    {.info = {"setAvailableMemoryProportion", POPC_OPT_STRING, "None",
              "Temporary memory proportion per IPU (IPU0=0.5,IPU1=0.3)",
              "IPUn=0..1,... | None", 1},
     .flags = C | N, .hook = hook_amp},
    {.info = {"logCycleCount", POPC_OPT_BOOL, "false",
              "Log the device cycles of each run (IPU model estimates)",
              BOOLV, 1},
     .flags = C,
     .param = "log_cycle_count"},
    {.info = {"enableProfiling", POPC_OPT_STRING, "None",
              "Write a profile report to this directory", "path | None", 1},
     .flags = N, .call_default = ".", .hook = hook_nonempty,
     .param = "profile_dir"},
    {.info = {"enableExecutableCaching", POPC_OPT_STRING, "None",
              "Cache compiled executables in this directory (env "
              "POPC_CACHE_DIR)", "path | None", 1},
     .flags = N, .hook = hook_nonempty,
     .param = "path"},
    {.info = {"showCompilationProgressBar", POPC_OPT_BOOL, "true",
              "Show a progress bar while compiling", BOOLV, 1},
     .call_default = "true",
     .param = "show"},
    {.info = {"maxRepeatLogs", POPC_OPT_INT, "4",
              "Repeated log lines shown before they are summarised (None: "
              "all). Process-wide, as the log is: applied when a model "
              "uses the options, the last such model's value holds",
              ">= 0 | None",
              1},
     .flags = N, .min = 0, .max = MAX32,
     .param = "max_lines"},
    {.info = {"logDir", POPC_OPT_STRING, ".",
              "Directory of the model's log file, NAME.log (NAME: "
              "modelName); written only when this option is set", "path",
              1},
     .hook = hook_nonempty,
     .param = "log_dir"},
    {.info = {"modelName", POPC_OPT_STRING, "None",
              "Model name for reports (None: inference or training)",
              "text | None", 1},
     .flags = N, .hook = hook_nonempty,
     .param = "name"},
    {.info = {"anchorTensor", POPC_OPT_STRING, "None",
              "Graph values returned after each run by a short name "
              "(popc_model_get_anchored_tensor); MODE: Final, All, Sum or "
              "EveryN:N, else the output mode",
              "SHORT=LONG[@MODE],... | None", 1},
     .flags = C | N, .hook = hook_anchor},
    {.info = {"disableModuleNamescope", POPC_OPT_BOOL, "false",
              "Do not prefix op names with the module's name scope (the "
              "model's copy of the graph; names stay unique)", BOOLV, 1},
     .flags = C, .call_default = "true"},
    {.info = {"enableStableNorm", POPC_OPT_BOOL, "false",
              "Norms take the variance about the mean in a second pass "
              "(slower, more accurate) instead of one pass of sums of "
              "squares", BOOLV, 1},
     .flags = C, .param = "enabled"},
    {.info = {"enableSyntheticData", POPC_OPT_BOOL, "false",
              "No host I/O: inputs are generated on the device "
              "(syntheticDataMode), outputs stay zero; for benchmarking",
              BOOLV, 1},
     .flags = C, .param = "enabled"},
    {.info = {"syntheticDataMode", POPC_OPT_ENUM, "RandomNormal",
              "popc: values of generated floating-point inputs under "
              "enableSyntheticData (integer inputs are zeros)",
              "RandomNormal | RandomUniform | Zeros", 1},
     .flags = C | P, .enum_type = "SyntheticDataMode",
     .members = synthetic_modes},
    {.info = {"relaxOptimizerAttributesChecks", POPC_OPT_BOOL, "false",
              "A run file's [optimizer] key the optimizer does not know is "
              "ignored (logged at DEBUG) instead of refused", BOOLV, 1},
     .call_default = "true",
     .param = "relax"},
    {.info = {"sourceLocationExcludes", POPC_OPT_STRING, "None",
              "Call-stack frames whose object path or symbol contains one "
              "of these (comma-separated) are skipped when locating where "
              "a node was added (profile.json's sources, "
              "popc_graph_node_source)",
              "text,... | None", 1},
     .flags = N, .param = "excludes"},

    /* ---- Options.Training ---- */
    {.info = {"Training.gradientAccumulation", POPC_OPT_INT, "1",
              "Micro-batches accumulated per optimizer step", ">= 1", 1},
     .flags = C, .min = 1, .max = MAX32,
     .param = "gradient_accumulation"},
    {.info = {"Training.accumulationAndReplicationReductionType",
              POPC_OPT_ENUM, "Mean",
              "Reduction of gradients over accumulation steps and replicas",
              "Mean | Sum", 1},
     .flags = C, .enum_type = "ReductionType", .members = reduction_types,
     .bad_value = "accumulationAndReplicationReductionType must be set to "
                  "poptorch.ReductionType.Mean or poptorch.ReductionType.Sum",
     .param = "reduction_type"},
    {.info = {"Training.meanAccumulationAndReplicationReductionStrategy",
              POPC_OPT_ENUM, "Post",
              "Where the mean reduction divides (PostAndLoss is mapped to "
              "Post)", "Running | Post", 1},
     .flags = C, .enum_type = "MeanReductionStrategy",
     .members = mean_strategies,
     .param = "mean_reduction_strategy"},
    {.info = {"Training.setAutomaticLossScaling", POPC_OPT_BOOL, "false",
              "The device adjusts the loss scaling: a step with inf or NaN "
              "gradients is skipped and halves it, 2000 finite steps "
              "double it (popc_model_loss_scaling)", BOOLV, 1},
     .flags = C, .param = "enabled"},
    {.info = {"Training.setConvolutionDithering", POPC_OPT_BOOL, "false",
              "Lay out convolutions with different parameters from "
              "different tiles (ipumodel, offline)", BOOLV, 1},
     .flags = C, .param = "enabled"},

    /* ---- Options.Precision ---- */
    {.info = {"Precision.setPartialsType", POPC_OPT_ENUM, "float",
              "dtype of the partial sums of float16 MatMul, Gemm, Conv "
              "and reductions (torch.float or torch.half: rounded to "
              "float16 after every term)", "float | half", 1},
     .flags = C, .enum_type = "torch", .members = partials_types,
     .bad_value = "parameter to setPartialsType should be eithertorch.float "
                  "or torch.half",
     .param = "dtype"},
    {.info = {"Precision.enableFloatingPointExceptions", POPC_OPT_BOOL,
              "false", "An overflow, invalid operation or division by zero "
              "in any op fails the run, naming the op", BOOLV, 1},
     .flags = C, .param = "enabled"},
    {.info = {"Precision.enableStochasticRounding", POPC_OPT_BOOL, "false",
              "Round float16 results (and half weight updates) up or down "
              "with probability proportional to the distance, seeded by "
              "randomSeed (ipumodel; the cpu reference refuses it)", BOOLV,
              1},
     .flags = C, .param = "enabled"},
    {.info = {"Precision.halfFloatCasting", POPC_OPT_ENUM, "Default",
              "Ops mixing float16 and float32 in a half model: compute in "
              "float16 (FloatDowncastToHalf, Default) or float32 "
              "(HalfUpcastToFloat)",
              "FloatDowncastToHalf | HalfUpcastToFloat | Default", 1},
     .flags = C, .enum_type = "HalfFloatCastingBehavior",
     .members = half_castings, .param = "half_float_casting"},
    {.info = {"Precision.runningStatisticsAlwaysFloat", POPC_OPT_BOOL, "true",
              "Keep buffers (batch-norm running statistics) in float32 in a "
              "half model (popc_graph_to_half, [model] half)", BOOLV, 1},
     .flags = C, .param = "value"},

    /* ---- Options.TensorLocations ---- */
    {.info = {"TensorLocations.numIOTiles", POPC_OPT_INT, "0",
              "Tiles per IPU reserved for IO, taken from compute (even, 32 "
              "to 192)",
              "0 | even 32..192", 1},
     .flags = C, .min = INT64_MIN, .max = INT64_MAX, .hook = hook_io_tiles,
     .param = "num_tiles"},
    LOCATION("Activation", "activations"),
    LOCATION("Weight", "weights"),
    LOCATION("Optimizer", "optimizer states"),
    LOCATION("Accumulator", "gradient accumulators"),

    /* ---- Options.Distributed ---- */
    {.info = {"Distributed.numProcesses", POPC_OPT_INT, "1",
              "Processes the execution is distributed over (env "
              "OMPI_COMM_WORLD_SIZE)", ">= 1", 1},
     .min = 1, .max = MAX32},
    {.info = {"Distributed.processId", POPC_OPT_INT, "0",
              "Id of this process, below numProcesses (env "
              "OMPI_COMM_WORLD_RANK)", ">= 0", 1},
     .min = 0, .max = MAX32},

    /* ---- Options.Jit ---- */
    {.info = {"Jit.traceModel", POPC_OPT_BOOL, "false",
              "Deprecated: only false is accepted", "false", 1},
     .hook = hook_trace_model,
     .param = "trace_model"},

    /* ---- popc's own ---- */
    {.info = {"backend", POPC_OPT_STRING, "ipumodel",
              "popc: device backend (cpu: reference, ipumodel: threaded IPU "
              "model, offline: compile only)",
              "cpu | ipumodel | offline | plugin backend", 1},
     .flags = C | P, .hook = hook_backend},
    {.info = {"threads", POPC_OPT_INT, "0",
              "popc: worker threads of the IPU model (0: core count; env "
              "POPC_THREADS)", "0..4096", 1},
     .flags = P, .min = 0, .max = 4096},
    {.info = {"collectives", POPC_OPT_STRING, "auto",
              "popc: communication between the processes of a distributed "
              "run (auto: the best loaded collectives plugin that fits "
              "the launcher)", "auto | collectives plugin", 1},
     .flags = P},
    {.info = {"collectivesTimeout", POPC_OPT_INT, "300",
              "popc: seconds a rank waits for another in a collective "
              "before the run stops with an error naming it (0: forever)",
              "0..1000000", 1},
     .flags = P, .min = 0, .max = 1000000},
    {.info = {"pluginPath", POPC_OPT_STRING, "None",
              "popc: plugin directories loaded when the option is set "
              "(absolute, colon-separated; process-wide)",
              "dir:dir:... | None", 1},
     .flags = N | P, .hook = hook_plugin_path},
};

const int popci_option_count =
    (int)(sizeof popci_option_table / sizeof popci_option_table[0]);

/* ---- checks across options (PopTorch makes them at compile time) --------- */

popc_status popc_options_validate(const popc_options *o, int training)
{
    int64_t r, g, di, ga, period, mode, pid, np;
    const char *backend;

    if (!o)
        return popc_set_error(POPC_EINVAL, "popc_options_validate: NULL "
                              "options");
    r = popci_options_val(o, "replicationFactor")->i;
    g = popci_options_val(o, "inputReplicaGrouping.size")->i;
    di = popci_options_val(o, "deviceIterations")->i;
    ga = popci_options_val(o, "Training.gradientAccumulation")->i;
    period = popci_options_val(o, "outputReturnPeriod")->i;
    mode = popci_options_val(o, "outputMode")->i;
    pid = popci_options_val(o, "Distributed.processId")->i;
    np = popci_options_val(o, "Distributed.numProcesses")->i;
    backend = popci_options_val(o, "backend")->s;

    if (!training && ga != 1)
        return popc_set_error(
            POPC_EINVAL,
            "You must set poptorch.Options().Training.gradientAccumulation "
            "to 1 or leave it as its default value (1) when running a "
            "poptorch.inferenceModel().%s",
            popci_options_val(o, "setExecutionStrategy")->i ==
                    POPC_EXEC_PIPELINED
                ? " Use poptorch.Options().deviceIterations to process a "
                  "sufficient number of batches each run for pipelined "
                  "execution instead."
                : "");
    if (g > r)
        return popc_set_error(POPC_EINVAL, "inputReplicaGrouping.size: "
                              "input_group_size cannot be larger than "
                              "replication_factor (%lld > replicationFactor "
                              "%lld)", (long long)g, (long long)r);
    if (r % g != 0)
        return popc_set_error(POPC_EINVAL, "inputReplicaGrouping.size: "
                              "input_group_size must be a factor of "
                              "replication_factor (%lld does not divide "
                              "replicationFactor %lld)", (long long)g,
                              (long long)r);
    if (pid >= np)
        return popc_set_error(POPC_EINVAL, "Distributed.processId (%lld) must "
                              "be less than Distributed.numProcesses (%lld)",
                              (long long)pid, (long long)np);
    if (mode == POPC_OUTPUT_EVERYN) {
        if (period > di)
            return popc_set_error(POPC_EINVAL, "outputReturnPeriod: Return "
                                  "period must be <= to the number of "
                                  "batches per step (outputReturnPeriod "
                                  "%lld, deviceIterations %lld)",
                                  (long long)period, (long long)di);
        if (di % period != 0)
            return popc_set_error(POPC_EINVAL, "outputReturnPeriod: Return "
                                  "period must be a factor of the number of "
                                  "batches per step (outputReturnPeriod "
                                  "%lld, deviceIterations %lld)",
                                  (long long)period, (long long)di);
    } else if (period != 1) {
        popc_log(POPC_LOG_INFO, "Anchor return period argument ignored with "
                 "output_mode set to %s",
                 mode == POPC_OUTPUT_FINAL ? "Final"
                 : mode == POPC_OUTPUT_ALL ? "All"
                 : mode == POPC_OUTPUT_SUM ? "Sum" : "Default");
    }
    if (popci_options_val(o, "connectionType")->i == POPC_CONNECTION_NEVER &&
        popci_options_val(o, "useIpuModel")->i)
        return popc_set_error(POPC_EINVAL, "ConnectionType.Never / "
                              "poptorch.Options.useOfflineIpuTarget not "
                              "supported for the IPU model (useIpuModel is "
                              "true)");
    if (popci_options_val(o, "logCycleCount")->i &&
        (popci_options_val(o, "connectionType")->i == POPC_CONNECTION_NEVER ||
         (backend && strcmp(backend, "offline") == 0)))
        return popc_set_error(POPC_EINVAL, "logCycleCount: Cycle count "
                              "logging is only supported on actual IPU "
                              "hardware. (popc: on a backend that runs, such "
                              "as ipumodel; this model only compiles)");
    return POPC_OK;
}

const char *const popci_default_optimizer = "sgd";
const double popci_default_lr = 0.01;
