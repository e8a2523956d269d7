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
#include "core/runtime/anchors_priv.h"
#include "core/options/options_priv.h"

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

/* kernelSelection: the numbers opt/kernel_select.c reads */
static const popci_enum_member kernel_selections[] = {
    {"score", 0, 0, NULL},
    {"reference", 1, 0, NULL},
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

/* PostAndLoss (2) exists in PopTorch's Python enum only; its backend
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

/* popc's syntheticDataMode; values are core/runtime/exec_priv.h's POPCI_SYNTH_*
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

static popc_status hook_opt_level(popc_options *o, const popci_optdef *d,
                                  popci_optval *v)
{
    (void)o;
    if (v->i == 3)
        return popc_set_error(POPC_EUNSUPPORTED, "%s 3 is not supported "
                              "yet; use 2, the highest level popc has "
                              "(blocked NCHWc layouts included)",
                              d->info.name);
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

/* the entries of core/layer/options_list.h, in its order */
#define OPTION(ID, ...) __VA_ARGS__,
const popci_optdef popci_option_table[] = {
#include "core/layer/options_list.h"
};
#undef OPTION

const int popci_option_count =
    (int)(sizeof popci_option_table / sizeof popci_option_table[0]);
_Static_assert(sizeof popci_option_table / sizeof popci_option_table[0] ==
                   POPCI_O_COUNT,
               "the option ids and the table come from one list");

const char *const popci_default_optimizer = "sgd";
const double popci_default_lr = 0.01;
