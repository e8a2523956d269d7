/* options_call.c - PopTorch's Options methods applied to popc options.
**
** loadFromFile lines and POPC_DEFAULT_OPTIONS entries are PopTorch method
** calls: "outputMode(poptorch.OutputMode.EveryN, 2)",
** "Distributed.configureProcessId(0, 2)",
** "setExecutionStrategy(poptorch.ShardedExecution())". Most methods set one
** option from one argument; the few that take several arguments or
** objects are mapped here onto the flat options of the table. Argument
** types follow Python's: an integer option does not accept a float or a
** bool, an enum wants an enum member.
*/
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/log.h"
#include "optfmt/optfmt_priv.h"

/* ---- values ----------------------------------------------------------------- */

/* Items nest at most MAX_DEPTH deep (the parsers' bound), so recursing
** on them is bounded; a chain of method calls (a().b().c()...) is as long
** as the line, so it is freed in a loop. */
static void val_clear_one(popci_val *v)
{
    for (int i = 0; i < v->n; i++)
        popci_val_clear(&v->items[i]);
    free(v->items);
    free(v->s);
    free(v->kw);
}

void popci_val_clear(popci_val *v)
{
    popci_val *m;

    if (!v)
        return;
    m = v->next;
    val_clear_one(v);
    memset(v, 0, sizeof *v);
    while (m) {
        popci_val *next = m->next;

        val_clear_one(m);
        free(m);
        m = next;
    }
}

const char *popci_val_describe(const popci_val *v, char *buf, size_t size)
{
    switch (v->kind) {
    case POPCI_V_NONE:
        snprintf(buf, size, "None");
        break;
    case POPCI_V_BOOL:
        snprintf(buf, size, "a bool (%s)", v->i ? "True" : "False");
        break;
    case POPCI_V_INT:
        snprintf(buf, size, "an integer (%" PRId64 ")", v->i);
        break;
    case POPCI_V_FLOAT:
        snprintf(buf, size, "a float (%g)", v->f);
        break;
    case POPCI_V_STR:
        snprintf(buf, size, "a string ('%s')", v->s);
        break;
    case POPCI_V_NAME:
        snprintf(buf, size, "%s", v->s);
        break;
    case POPCI_V_CALL:
        snprintf(buf, size, "%s(...)", v->s);
        break;
    case POPCI_V_LIST:
        snprintf(buf, size, "a list");
        break;
    case POPCI_V_DICT:
        snprintf(buf, size, "a dict");
        break;
    }
    return buf;
}

/* ---- argument binding --------------------------------------------------------- */

#define MAX_PARAMS 4

/* Bind positional and keyword arguments to params (Python's rules);
** missing optional ones are NULL. n_required leading params must be
** given. */
static popc_status bind(const char *fn, const popci_val *args, int n,
                        const char *const *params, int n_params,
                        int n_required, const popci_val **out,
                        const char **kind)
{
    int positional = 0;

    for (int i = 0; i < n_params; i++)
        out[i] = NULL;
    for (int i = 0; i < n; i++) {
        int k;

        if (!args[i].kw) {
            if (positional >= n_params) {
                *kind = "TypeError";
                return popc_set_error(POPC_EINVAL, "%s() takes %d "
                                      "argument%s but %d were given", fn,
                                      n_params, n_params == 1 ? "" : "s", n);
            }
            out[positional++] = &args[i];
            continue;
        }
        for (k = 0; k < n_params; k++)
            if (strcmp(params[k], args[i].kw) == 0)
                break;
        if (k == n_params) {
            *kind = "TypeError";
            return popc_set_error(POPC_EINVAL, "%s() got an unexpected "
                                  "keyword argument '%s'", fn, args[i].kw);
        }
        if (out[k]) {
            *kind = "TypeError";
            return popc_set_error(POPC_EINVAL, "%s() got multiple values for "
                                  "argument '%s'", fn, params[k]);
        }
        out[k] = &args[i];
    }
    for (int i = 0; i < n_required; i++)
        if (!out[i]) {
            *kind = "TypeError";
            return popc_set_error(POPC_EINVAL, "%s() missing required "
                                  "argument '%s'", fn, params[i]);
        }
    return POPC_OK;
}

/* ---- one value into one option --------------------------------------------------- */

static popc_status wrong_type(const popci_optdef *d, const char *want,
                              const popci_val *v, const char **kind)
{
    char got[256];

    *kind = "TypeError";
    return popc_set_error(POPC_EINVAL, "%s: expected %s, got %s",
                          d->info.name, want, popci_val_describe(v, got,
                                                                 sizeof got));
}

static const char *type_word(const popci_optdef *d)
{
    switch (d->info.type) {
    case POPC_OPT_BOOL:
        return "True or False";
    case POPC_OPT_INT:
        return "an integer";
    case POPC_OPT_FLOAT:
        return "a number";
    case POPC_OPT_STRING:
        return "a string";
    case POPC_OPT_ENUM:
        return d->enum_type && strcmp(d->enum_type, "torch") == 0
                   ? "torch.float or torch.half"
                   : "an enum member such as poptorch.OutputMode.All";
    }
    return "a value";
}

static popc_status set_from_val(popc_options *o, int idx, const popci_val *v,
                                const char **kind)
{
    const popci_optdef *d = &popci_option_table[idx];
    popci_optval ov = {0};
    popc_status st;

    switch (v->kind) {
    case POPCI_V_NONE:
        if (!(d->flags & POPCI_OPT_NULLABLE))
            return wrong_type(d, type_word(d), v, kind);
        ov.none = 1;
        break;
    case POPCI_V_BOOL:
        if (d->info.type != POPC_OPT_BOOL)
            return wrong_type(d, type_word(d), v, kind);
        ov.i = v->i;
        break;
    case POPCI_V_INT:
        if (d->info.type == POPC_OPT_INT)
            ov.i = v->i;
        else if (d->info.type == POPC_OPT_FLOAT)
            ov.f = (double)v->i;
        else
            return wrong_type(d, type_word(d), v, kind);
        break;
    case POPCI_V_FLOAT:
        if (d->info.type != POPC_OPT_FLOAT)
            return wrong_type(d, type_word(d), v, kind);
        ov.f = v->f;
        break;
    case POPCI_V_STR:
    case POPCI_V_NAME:
        /* A name is an enum member; a string is one only in JSON, where
        ** PopTorch turns "OutputMode.Sum" into the member. */
        if (d->info.type == POPC_OPT_ENUM ||
            (d->info.type == POPC_OPT_STRING && v->kind == POPCI_V_STR)) {
            *kind = "ValueError";
            if ((st = popci_options_parse(d, v->s, &ov)) != POPC_OK)
                return st;
            break;
        }
        return wrong_type(d, type_word(d), v, kind);
    default:
        return wrong_type(d, type_word(d), v, kind);
    }
    *kind = "ValueError";
    return popci_options_commit(o, idx, &ov);
}

/* Set a known option from text (for values built here). */
static popc_status set_text(popc_options *o, const char *name,
                            const char *text, const char **kind)
{
    /* names built from what the user wrote may not exist */
    if (popci_options_index(name) < 0) {
        *kind = "AttributeError";
        return popc_set_error(POPC_ENOTFOUND, "option '%s' does not exist",
                              name);
    }
    *kind = "ValueError";
    return popci_options_commit_other(o, name, text);
}

/* ---- methods with several arguments or objects ----------------------------------- */

static popc_status call_output_mode(popc_options *o, const popci_val *args,
                                    int n, const char **kind)
{
    static const char *const params[] = {"output_mode",
                                         "output_return_period"};
    const popci_val *a[2];
    char mode[64];
    popc_status st;
    int every_n;

    if ((st = bind("outputMode", args, n, params, 2, 1, a, kind)))
        return st;
    if ((st = set_from_val(o, popci_options_must("outputMode"), a[0], kind)))
        return st;
    popc_options_format(o, "outputMode", mode, sizeof mode);
    every_n = strcmp(mode, "EveryN") == 0;
    if (every_n && (!a[1] || a[1]->kind != POPCI_V_INT || a[1]->i <= 0)) {
        *kind = "AssertionError";
        return popc_set_error(POPC_EINVAL, "outputMode: EveryN anchor must "
                              "have output_return_period set to valid "
                              "positive integer");
    }
    if (!every_n && a[1] && a[1]->kind != POPCI_V_NONE)
        popc_log(POPC_LOG_INFO, "Anchor return period argument ignored with "
                 "output_mode set to %s", mode);
    if (every_n)
        return set_from_val(o, popci_options_must("outputReturnPeriod"), a[1],
                            kind);
    return set_text(o, "outputReturnPeriod", "1", kind);
}

static popc_status call_grouping(popc_options *o, const popci_val *args,
                                 int n, const char **kind)
{
    static const char *const params[] = {"input_group_size",
                                         "input_group_type"};
    const popci_val *a[2];
    popc_status st;

    if ((st = bind("inputReplicaGrouping", args, n, params, 2, 1, a, kind)))
        return st;
    if ((st = set_from_val(o, popci_options_must("inputReplicaGrouping.size"),
                           a[0], kind)))
        return st;
    if (!a[1])
        return set_text(o, "inputReplicaGrouping.type", "Consecutive", kind);
    return set_from_val(o, popci_options_must("inputReplicaGrouping.type"),
                        a[1], kind);
}

static popc_status set_process(popc_options *o, int64_t id, int64_t count,
                               const char **kind)
{
    char buf[32];
    popc_status st;

    if (id >= count) {
        *kind = "ValueError";
        return popc_set_error(POPC_EINVAL, "Distributed.configureProcessId: "
                              "process_id (%" PRId64 ") must be less than "
                              "num_processes (%" PRId64 ")", id, count);
    }
    snprintf(buf, sizeof buf, "%" PRId64, count);
    if ((st = set_text(o, "Distributed.numProcesses", buf, kind)))
        return st;
    snprintf(buf, sizeof buf, "%" PRId64, id);
    return set_text(o, "Distributed.processId", buf, kind);
}

static popc_status call_process_id(popc_options *o, const popci_val *args,
                                   int n, const char **kind)
{
    static const char *const params[] = {"process_id", "num_processes"};
    const popci_val *a[2];
    popc_status st;

    if ((st = bind("configureProcessId", args, n, params, 2, 2, a, kind)))
        return st;
    for (int i = 0; i < 2; i++)
        if (a[i]->kind != POPCI_V_INT) {
            char got[256];

            *kind = "TypeError";
            return popc_set_error(POPC_EINVAL, "Distributed."
                                  "configureProcessId: %s must be an "
                                  "integer, got %s", params[i],
                                  popci_val_describe(a[i], got, sizeof got));
        }
    return set_process(o, a[0]->i, a[1]->i, kind);
}

static popc_status call_disable(popc_options *o, const popci_val *args,
                                int n, const char **kind)
{
    popc_status st;

    if ((st = bind("disable", args, n, NULL, 0, 0, NULL, kind)))
        return st;
    return set_process(o, 0, 1, kind);
}

static popc_status call_env_names(popc_options *o, const popci_val *args,
                                  int n, const char **kind)
{
    static const char *const params[] = {"var_num_processes",
                                         "var_process_id"};
    const popci_val *a[2];
    const char *count_s, *id_s;
    char *end1, *end2;
    long long count, id;
    popc_status st;

    if ((st = bind("setEnvVarNames", args, n, params, 2, 2, a, kind)))
        return st;
    if (a[0]->kind != POPCI_V_STR || a[1]->kind != POPCI_V_STR) {
        *kind = "TypeError";
        return popc_set_error(POPC_EINVAL, "Distributed.setEnvVarNames: both "
                              "arguments must be strings (names of "
                              "environment variables)");
    }
    count_s = getenv(a[0]->s);
    id_s = getenv(a[1]->s);
    count = strtoll(count_s ? count_s : "1", &end1, 10);
    id = strtoll(id_s ? id_s : "0", &end2, 10);
    if (*end1 || *end2 || count < 1 || id < 0) {
        *kind = "ValueError";
        return popc_set_error(POPC_EINVAL, "Distributed.setEnvVarNames: %s "
                              "and %s must hold a process count >= 1 and an "
                              "id >= 0 (got '%s' and '%s')", a[0]->s, a[1]->s,
                              count_s ? count_s : "", id_s ? id_s : "");
    }
    return set_process(o, id, count, kind);
}

static const char *strip_poptorch(const char *s)
{
    return strncmp(s, "poptorch.", 9) == 0 ? s + 9 : s;
}

static popc_status explicit_stages(const char *what, const char **kind)
{
    *kind = "UnsupportedError";
    return popc_set_error(POPC_EUNSUPPORTED, "setExecutionStrategy: explicit "
                          "stage, phase or block lists in %s are not "
                          "supported yet by popc (it would map block ids to "
                          "stages and phases); give the graph's nodes stage "
                          "and phase annotations and call %s() without "
                          "arguments", what, what);
}

static popc_status call_strategy(popc_options *o, const popci_val *args,
                                 int n, const char **kind)
{
    static const char *const params[] = {"strategy"};
    const popci_val *a[1], *s;
    const char *cls;
    int phased, serial;
    popc_status st;

    if ((st = bind("setExecutionStrategy", args, n, params, 1, 1, a, kind)))
        return st;
    s = a[0];
    if (s->kind == POPCI_V_STR || s->kind == POPCI_V_NAME)
        return set_from_val(o, popci_options_must("setExecutionStrategy"), s,
                            kind);
    if (s->kind != POPCI_V_CALL) {
        char got[256];

        *kind = "AssertionError";
        return popc_set_error(POPC_EINVAL, "setExecutionStrategy: expected "
                              "an execution strategy such as "
                              "poptorch.PipelinedExecution(), got %s",
                              popci_val_describe(s, got, sizeof got));
    }
    cls = strip_poptorch(s->s);
    if ((st = set_text(o, "setExecutionStrategy", cls, kind)))
        return st;
    phased = strstr(cls, "Phased") != NULL;
    serial = strncmp(cls, "Serial", 6) == 0;
    /* a new strategy object: its settings start from their defaults */
    if ((st = set_text(o, "setExecutionStrategy.autoStage", "SameAsIpu",
                       kind)) ||
        (st = set_text(o, "setExecutionStrategy.tensorsLiveness",
                       "AlwaysLive", kind)) ||
        (st = set_text(o, "setExecutionStrategy.useSeparateBackwardPhase",
                       "false", kind)))
        return st;
    if (!phased && s->n == 1 && !s->items[0].kw &&
        s->items[0].kind == POPCI_V_NAME) {
        if ((st = set_from_val(o, popci_options_must(
                                      "setExecutionStrategy.autoStage"),
                               &s->items[0], kind)))
            return st;
    } else if (s->n > 0) {
        return explicit_stages(cls, kind);
    }
    for (const popci_val *m = s->next; m; m = m->next) {
        const char *opt = NULL, *def = "true";

        if (strcmp(m->s, "setTensorsLiveness") == 0 && serial)
            opt = "setExecutionStrategy.tensorsLiveness", def = NULL;
        else if (strcmp(m->s, "useSeparateBackwardPhase") == 0 && phased)
            opt = "setExecutionStrategy.useSeparateBackwardPhase";
        else if (strcmp(m->s, "sendTensorsOffChipAfterFwd") == 0 && phased &&
                 !serial) {
            int off = m->n == 0 || (m->items[0].kind == POPCI_V_BOOL &&
                                    m->items[0].i);
            if ((st = set_text(o, "setExecutionStrategy.tensorsLiveness",
                               off ? "OffChipAfterFwd" : "AlwaysLive",
                               kind)))
                return st;
            continue;
        } else if (strcmp(m->s, "phase") == 0 || strcmp(m->s, "stage") == 0) {
            return explicit_stages(cls, kind);
        }
        if (!opt) {
            *kind = "AttributeError";
            return popc_set_error(POPC_ENOTFOUND, "'%s' object has no "
                                  "attribute '%s'", cls, m->s);
        }
        if (m->n > 1 || (m->n == 0 && !def)) {
            *kind = "TypeError";
            return popc_set_error(POPC_EINVAL, "%s() takes 1 argument (%d "
                                  "given)", m->s, m->n);
        }
        if (m->n == 0)
            st = set_text(o, opt, def, kind);
        else
            st = set_from_val(o, popci_options_must(opt), &m->items[0], kind);
        if (st)
            return st;
    }
    return POPC_OK;
}

static popc_status call_amp(popc_options *o, const popci_val *args, int n,
                            const char **kind)
{
    static const char *const params[] = {"available_memory_proportion"};
    const popci_val *a[1];
    char text[2048] = "";
    size_t used = 0;
    popc_status st;

    if ((st = bind("setAvailableMemoryProportion", args, n, params, 1, 1, a,
                   kind)))
        return st;
    if (a[0]->kind != POPCI_V_DICT) {
        char got[256];

        *kind = "AttributeError";
        return popc_set_error(POPC_EINVAL, "setAvailableMemoryProportion: "
                              "expected a dictionary such as {\"IPU0\": 0.5}, "
                              "got %s", popci_val_describe(a[0], got,
                                                           sizeof got));
    }
    for (int i = 0; i + 1 < a[0]->n; i += 2) {
        const popci_val *k = &a[0]->items[i], *v = &a[0]->items[i + 1];
        double x = v->kind == POPCI_V_INT ? (double)v->i : v->f;

        if (k->kind != POPCI_V_STR ||
            (v->kind != POPCI_V_INT && v->kind != POPCI_V_FLOAT)) {
            *kind = "AssertionError";
            return popc_set_error(POPC_EINVAL, "setAvailableMemoryProportion: "
                                  "Available memory proportions are expected "
                                  "to be in a dictionary of {\"IPU0\": 0.5} "
                                  "where the 0 in IPU is the index of the "
                                  "IPU. Invalid entry %d", i / 2);
        }
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%s=%.17g",
                                 used ? "," : "", k->s, x);
        if (used >= sizeof text) {
            *kind = "ValueError";
            return popc_set_error(POPC_EINVAL, "setAvailableMemoryProportion: "
                                  "too many entries");
        }
    }
    *kind = "AssertionError";
    return popci_options_commit_other(o, "setAvailableMemoryProportion",
                                      used ? text : "None");
}

static const char *const location_settings[] = {
    "useOnChipStorage", "useReplicatedTensorSharding", "useIOTilesToLoad",
    "useIOTilesToStore", "minElementsForOffChip",
    "minElementsForReplicatedTensorSharding", NULL};

static popc_status call_location(popc_options *o, const char *full,
                                 const popci_val *args, int n,
                                 const char **kind)
{
    static const char *const params[] = {"location"};
    const popci_val *a[1];
    char opt[512];
    popc_status st;

    if ((st = bind(full, args, n, params, 1, 1, a, kind)))
        return st;
    if (a[0]->kind != POPCI_V_CALL ||
        strcmp(strip_poptorch(a[0]->s), "TensorLocationSettings") != 0 ||
        a[0]->n != 0) {
        *kind = "AssertionError";
        return popc_set_error(POPC_EINVAL, "%s: expected "
                              "poptorch.TensorLocationSettings()...", full);
    }
    /* PopTorch replaces the whole settings of this tensor class. */
    for (int i = 0; location_settings[i]; i++) {
        snprintf(opt, sizeof opt, "%s.%s", full, location_settings[i]);
        if ((st = set_text(o, opt, "None", kind)))
            return st;
    }
    for (const popci_val *m = a[0]->next; m; m = m->next) {
        const char *nk = NULL;
        int idx;

        snprintf(opt, sizeof opt, "%s.%s", full, m->s);
        if ((idx = popci_options_index(opt)) < 0) {
            *kind = "AttributeError";
            return popc_set_error(POPC_ENOTFOUND, "'TensorLocationSettings' "
                                  "object has no attribute '%s'", m->s);
        }
        if ((st = popci_options_call(o, "", opt, m->items, m->n, kind, &nk)))
            return st;
    }
    return POPC_OK;
}

/* anchorTensor(short, long, output_mode=None, output_return_period=1):
** each call adds "short=long[@Mode[:N]]" to the option's list. */
static popc_status call_anchor(popc_options *o, const popci_val *args,
                               int n, const char **kind)
{
    const char *prev = popc_options_get_string(o, "anchorTensor");
    const char *mode = NULL, *dot;
    char text[1024];
    int used;

    *kind = "TypeError";
    if (n < 2 || n > 4 || args[0].kind != POPCI_V_STR ||
        args[1].kind != POPCI_V_STR)
        return popc_set_error(POPC_EINVAL, "anchorTensor() takes the short "
                              "name and the tensor's name as strings, then "
                              "optionally an OutputMode and a period");
    if (n >= 3 && args[2].kind != POPCI_V_NONE) {
        if (args[2].kind != POPCI_V_NAME)
            return popc_set_error(POPC_EINVAL, "anchorTensor(): "
                                  "output_mode must be an OutputMode "
                                  "(poptorch.OutputMode.All)");
        mode = (dot = strrchr(args[2].s, '.')) ? dot + 1 : args[2].s;
    }
    used = snprintf(text, sizeof text, "%s%s%s=%s", prev ? prev : "",
                    prev ? "," : "", args[0].s, args[1].s);
    if (mode && used > 0 && (size_t)used < sizeof text)
        used += snprintf(text + used, sizeof text - (size_t)used, "@%s",
                         mode);
    if (mode && strcmp(mode, "EveryN") == 0 && used > 0 &&
        (size_t)used < sizeof text)
        used += snprintf(text + used, sizeof text - (size_t)used, ":%lld",
                         n == 4 && args[3].kind == POPCI_V_INT
                             ? (long long)args[3].i : 0LL);
    if (used < 0 || (size_t)used >= sizeof text)
        return popc_set_error(POPC_EINVAL, "anchorTensor: too many anchors "
                              "for one option (1023 characters)");
    *kind = "ValueError";
    return popci_options_commit_other(o, "anchorTensor", text);
}

/* sourceLocationExcludes([...]) replaces the list, appendToLocationExcludes
** (a, b, ...) extends it; popc keeps it as one comma-separated string. */
static popc_status call_excludes(popc_options *o, const char *full,
                                 const popci_val *args, int n,
                                 const char **kind)
{
    char text[1024] = "";
    size_t used = 0;
    const popci_val *items = args;
    int count = n;

    if (strcmp(full, "sourceLocationExcludes") == 0 && n == 1 &&
        args[0].kind == POPCI_V_LIST) {
        items = args[0].items;
        count = args[0].n;
    }
    if (strcmp(full, "appendToLocationExcludes") == 0 &&
        popc_options_is_set(o, "sourceLocationExcludes") &&
        !popc_options_is_none(o, "sourceLocationExcludes"))
        used = (size_t)snprintf(text, sizeof text, "%s",
                                popc_options_get_string(
                                    o, "sourceLocationExcludes"));
    for (int i = 0; i < count && used < sizeof text; i++) {
        char got[256];
        const char *s = items[i].kind == POPCI_V_STR
                            ? items[i].s
                            : popci_val_describe(&items[i], got, sizeof got);

        used += (size_t)snprintf(text + used, sizeof text - used, "%s%s",
                                 used ? "," : "", s);
    }
    if (used >= sizeof text)
        return popc_set_error(POPC_EINVAL, "%s: the excludes are longer than "
                              "1023 characters", full);
    *kind = "ValueError";
    return popci_options_commit_other(o, "sourceLocationExcludes",
                                      used ? text : "None");
}

/* ---- dispatch ------------------------------------------------------------------ */

static const char *const categories[] = {"Training.", "Precision.",
                                         "TensorLocations.", "Distributed.",
                                         "Jit.", NULL};

static const char *category_of(const char *full)
{
    for (int i = 0; categories[i]; i++)
        if (strncmp(full, categories[i], strlen(categories[i])) == 0)
            return categories[i];
    return "";
}

popc_status popci_options_call(popc_options *o, const char *prefix,
                               const char *name, const popci_val *args,
                               int n, const char **kind,
                               const char **next_prefix)
{
    const char *dummy_kind, *dummy_prefix;
    char full[256];
    const popci_optdef *d;
    int idx;

    if (!kind)
        kind = &dummy_kind;
    if (!next_prefix)
        next_prefix = &dummy_prefix;
    *kind = "ValueError";
    snprintf(full, sizeof full, "%s%s", prefix ? prefix : "", name);
    *next_prefix = category_of(full);
    if (popc_options_frozen(o)) {
        *kind = "AttributeError";
        return popc_set_error(POPC_ESTATE, "Can't modify frozen Options: %s "
                              "cannot change once a model uses these "
                              "options; change a copy from "
                              "popc_options_clone", full);
    }
    if (strcmp(full, "outputMode") == 0)
        return call_output_mode(o, args, n, kind);
    if (strcmp(full, "inputReplicaGrouping") == 0)
        return call_grouping(o, args, n, kind);
    if (strcmp(full, "Distributed.configureProcessId") == 0)
        return call_process_id(o, args, n, kind);
    if (strcmp(full, "Distributed.disable") == 0)
        return call_disable(o, args, n, kind);
    if (strcmp(full, "Distributed.setEnvVarNames") == 0)
        return call_env_names(o, args, n, kind);
    if (strcmp(full, "setExecutionStrategy") == 0)
        return call_strategy(o, args, n, kind);
    if (strcmp(full, "setAvailableMemoryProportion") == 0)
        return call_amp(o, args, n, kind);
    if (strncmp(full, "TensorLocations.set", 19) == 0 &&
        strcmp(full + strlen(full) - 8, "Location") == 0)
        return call_location(o, full, args, n, kind);
    if (strcmp(full, "anchorTensor") == 0)
        return call_anchor(o, args, n, kind);
    if (strcmp(full, "sourceLocationExcludes") == 0 ||
        strcmp(full, "appendToLocationExcludes") == 0)
        return call_excludes(o, full, args, n, kind);
    if (strcmp(full, "loadFromFile") == 0) {
        *kind = "ValueError";
        return popc_set_error(POPC_EINVAL, "loadFromFile cannot be called "
                              "from an options file or "
                              "POPC_DEFAULT_OPTIONS; load each file with "
                              "popc_options_load_file");
    }
    if ((idx = popci_options_index(full)) < 0) {
        popc_status st = popci_options_unknown(full);
        const char *msg = popc_last_error();
        const char *hint = strstr(msg, "; did you mean");
        char cls[64];

        /* Python's wording, with our suggestion */
        snprintf(cls, sizeof cls, "%s",
                 !*category_of(full)                         ? "Options"
                 : strcmp(category_of(full), "Training.") == 0 ? "_TrainingOptions"
                 : strcmp(category_of(full), "Precision.") == 0
                     ? "_PrecisionOptions"
                 : strcmp(category_of(full), "TensorLocations.") == 0
                     ? "_TensorLocationOptions"
                 : strcmp(category_of(full), "Distributed.") == 0
                     ? "_DistributedOptions"
                     : "_JitOptions");
        *kind = "AttributeError";
        return popc_set_error(st, "'%s' object has no attribute '%s'%s", cls,
                              full + strlen(category_of(full)),
                              hint ? hint : "");
    }
    d = &popci_option_table[idx];
    for (int i = 0; i < n; i++)
        if (args[i].kw && (!d->param || strcmp(args[i].kw, d->param) != 0)) {
            *kind = "TypeError";
            return popc_set_error(POPC_EINVAL, "%s() got an unexpected "
                                  "keyword argument '%s'%s%s%s", full,
                                  args[i].kw, d->param ? " (its parameter is "
                                  "'" : "", d->param ? d->param : "",
                                  d->param ? "')" : "");
        }
    if (n == 0) {
        if (!d->call_default) {
            *kind = "TypeError";
            return popc_set_error(POPC_EINVAL, "%s() missing 1 required "
                                  "positional argument", full);
        }
        return set_text(o, d->info.name, d->call_default, kind);
    }
    if (n > 1) {
        *kind = "TypeError";
        return popc_set_error(POPC_EINVAL, "%s() takes 1 argument but %d "
                              "were given", full, n);
    }
    return set_from_val(o, idx, &args[0], kind);
}
