/* profile.c - enableProfiling: dir/NAME/profile.json and
** dir/NAME/profile.html, NAME being modelName ("training" or "inference"
** by default, as in PopTorch).
**
** profile.json, one object:
**   "format": "popc-profile", "version": 1,
**   "model":   {name (the graph's), model_name (NAME), ipus_reserved (all
**               replicas' IPUs, rounded up by autoRoundNumIPUs),
**               execution_phases (PopTorch's count for phased plans; 0
**               otherwise), execution_phase_ids (PopTorch's ids of the
**               forward phases, ascending: phase x 4 with
**               OffChipAfterEachPhase, x 2 with OffChipAfterFwdNoOverlap;
**               empty when not phased), training,
**               backend,
**               replicas, ipus_per_replica,
**               stages, phases, pipelined, device_iterations,
**               gradient_accumulation, micro_batches, nodes,
**               forward_nodes, arena_bytes, persistent_bytes,
**               inputs: [{name, dtype, shape}]},
**   "compile": {seconds, phases: [{name, seconds}]},
**   "backend_report": true when the next keys come from the backend,
**   "device", "memory", "ops", "stages", "cycles", "seconds", "runtime"
**              copied from the backend's report() when it has one (see
**              backends/common/report.c: per-IPU and per-tile bytes of
**              weights, gradients, state, activations and temporaries;
**              per-op and per-stage cycles of one micro-batch); without
**              one, "memory" (per IPU, no tiles), "ops" and "stages" are
**              the core's figures from the plan,
**   "sources": [{node, source}] where each scheduled node was added
**              (popc_graph_node_source with sourceLocationExcludes; nodes
**              with no known location are left out),
**   "micro_batch_cycles", "run_cycles" (0: no cycle model),
**   "phases":  [{phase, first_node, end_node, stage, ipu, cycles}],
**   "runs":    {count, latencies: [{run, total, host_ipu, compute}] (the
**               last POPCI_PROFILE_HISTORY runs), total: {min, max, mean}},
**   "iterations": {count, latency, host_ipu, compute, ipu_host} of the
**               last run (popc/profile.h),
**   "perf_counters": {input: [...], ..., truncated},
**   "timeline": {run, duration, events: [{phase, stage, replica,
**               micro_batch, start, end, compute_start, compute_end}],
**               steps: [{window, start, end}], truncated}
** Times are seconds from the start of the last run. Lists stop at
** MAX_ITEMS entries (truncated: true).
*/
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/layer/alloc.h"
#include "fileio/atomic_file.h"
#include "core/layer/exec_report.h"
#include "core/layer/graph.h"
#include "core/layer/model.h"
#include "core/layer/options.h"
#include "profile/profile_priv.h"

#define MAX_ITEMS 20000
#define MAX_DEPTH 256

/* ---- a JSON scanner (checks the backend's report) ------------------------ */

static size_t ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' ||
                     s[i] == '\r'))
        i++;
    return i;
}

#define BAD ((size_t)-1)

static size_t scan_string(const char *s, size_t n, size_t i)
{
    if (i >= n || s[i] != '"')
        return BAD;
    for (i++; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"')
            return i + 1;
        if (c < 0x20)
            return BAD;
        if (c == '\\') {
            if (++i >= n)
                return BAD;
            if (s[i] == 'u') {
                for (int k = 1; k <= 4; k++)
                    if (i + (size_t)k >= n ||
                        !strchr("0123456789abcdefABCDEF", s[i + (size_t)k]))
                        return BAD;
                i += 4;
            } else if (!strchr("\"\\/bfnrt", s[i])) {
                return BAD;
            }
        }
    }
    return BAD;
}

static size_t scan_number(const char *s, size_t n, size_t i)
{
    size_t d;

    if (i < n && s[i] == '-')
        i++;
    if (i < n && s[i] == '0')
        i++;
    else if (i < n && s[i] >= '1' && s[i] <= '9')
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    else
        return BAD;
    if (i < n && s[i] == '.') {
        for (d = ++i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            ;
        if (i == d)
            return BAD;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            ;
        if (i == d)
            return BAD;
    }
    return i;
}

/* End of the value starting at s[i] (after white space), or BAD. */
static size_t scan_value(const char *s, size_t n, size_t i, int depth)
{
    i = ws(s, n, i);
    if (i >= n || depth > MAX_DEPTH)
        return BAD;
    switch (s[i]) {
    case '"':
        return scan_string(s, n, i);
    case '{':
    case '[': {
        char close = s[i] == '{' ? '}' : ']';
        int object = s[i] == '{';
        i = ws(s, n, i + 1);
        if (i < n && s[i] == close)
            return i + 1;
        for (;;) {
            if (object) {
                if ((i = scan_string(s, n, ws(s, n, i))) == BAD)
                    return BAD;
                i = ws(s, n, i);
                if (i >= n || s[i] != ':')
                    return BAD;
                i++;
            }
            if ((i = scan_value(s, n, i, depth + 1)) == BAD)
                return BAD;
            i = ws(s, n, i);
            if (i < n && s[i] == close)
                return i + 1;
            if (i >= n || s[i] != ',')
                return BAD;
            i++;
        }
    }
    case 't':
        return n - i >= 4 && memcmp(s + i, "true", 4) == 0 ? i + 4 : BAD;
    case 'f':
        return n - i >= 5 && memcmp(s + i, "false", 5) == 0 ? i + 5 : BAD;
    case 'n':
        return n - i >= 4 && memcmp(s + i, "null", 4) == 0 ? i + 4 : BAD;
    default:
        return scan_number(s, n, i);
    }
}

int popci_json_valid(const char *s, size_t n)
{
    size_t end = s ? scan_value(s, n, 0, 0) : BAD;

    return end != BAD && ws(s, n, end) == n;
}

/* ---- writing ------------------------------------------------------------- */

static void str(popci_sb *sb, const char *s)
{
    popci_sb_printf(sb, "\"");
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            popci_sb_printf(sb, "\\%c", c);
        else if (c < 0x20)
            popci_sb_printf(sb, "\\u%04x", c);
        else
            popci_sb_printf(sb, "%c", c);
    }
    popci_sb_printf(sb, "\"");
}

static void num(popci_sb *sb, double v)
{
    if (isfinite(v))
        popci_sb_printf(sb, "%.9g", v);
    else
        popci_sb_printf(sb, "null");
}

static void latency(popci_sb *sb, const char *key, const popc_latency *l)
{
    popci_sb_printf(sb, "\"%s\": {\"min\": ", key);
    num(sb, l->min);
    popci_sb_printf(sb, ", \"max\": ");
    num(sb, l->max);
    popci_sb_printf(sb, ", \"mean\": ");
    num(sb, l->mean);
    popci_sb_printf(sb, "}");
}

static void put_model(popci_sb *sb, const popci_profile *p,
                      const popc_model *m, const popci_exec *e)
{
    const popc_plan *pp = popci_exec_public_plan(e);

    popci_sb_printf(sb, " \"model\": {\"name\": ");
    str(sb, popci_model_graph_name(m));
    popci_sb_printf(sb, ", \"model_name\": ");
    str(sb, popci_model_name(m));
    popci_sb_printf(sb, ", \"ipus_reserved\": %lld, "
                    "\"execution_phases\": %d",
                    (long long)popci_model_reserved_ipus(m),
                    popci_exec_execution_phases(e));
    {
        int ids[1024], n = popci_exec_execution_phase_ids(e, ids, 1024);

        popci_sb_printf(sb, ", \"execution_phase_ids\": [");
        for (int i = 0; i < n; i++)
            popci_sb_printf(sb, "%s%d", i ? ", " : "", ids[i]);
        popci_sb_printf(sb, "]%s", n < 0 ? ", \"execution_phase_ids_"
                                           "truncated\": true" : "");
    }
    popci_sb_printf(sb, ", \"training\": %s, \"backend\": ",
                    popci_model_training(m) ? "true" : "false");
    str(sb, popci_exec_backend(e)->name);
    popci_sb_printf(sb, ", \"replicas\": %d, \"ipus_per_replica\": %d, "
                    "\"stages\": %d, \"phases\": %d, \"pipelined\": %s, "
                    "\"device_iterations\": %lld, "
                    "\"gradient_accumulation\": %lld, "
                    "\"micro_batches\": %lld, \"nodes\": %d, "
                    "\"forward_nodes\": %d, \"arena_bytes\": %zu, "
                    "\"persistent_bytes\": %zu, \"inputs\": [",
                    p->replicas, pp->n_ipus, pp->n_stages,
                    p->phases, p->pipelined ? "true" : "false",
                    (long long)popci_exec_device_iterations(e),
                    (long long)popci_exec_grad_accum(e),
                    (long long)p->micro_batches, pp->n_nodes,
                    pp->n_forward, popci_exec_arena_bytes(e),
                    popci_exec_persistent_bytes(e));
    for (int i = 0; i < popci_exec_n_inputs(e); i++) {
        const popc_plan_slot *s = &pp->slots[popci_exec_input_slot(e, i)];
        popci_sb_printf(sb, "%s{\"name\": ", i ? ", " : "");
        str(sb, s->name);
        popci_sb_printf(sb, ", \"dtype\": \"%s\", \"shape\": [",
                        popc_dtype_name(s->info.dtype));
        for (int d = 0; d < s->info.rank; d++)
            popci_sb_printf(sb, "%s%lld", d ? ", " : "",
                            (long long)s->info.dims[d]);
        popci_sb_printf(sb, "]}");
    }
    popci_sb_printf(sb, "]},\n \"compile\": {\"seconds\": ");
    num(sb, p->compile_seconds);
    popci_sb_printf(sb, ", \"phases\": [");
    for (int i = 0; i < POPCI_PHASES; i++) {
        popci_sb_printf(sb, "%s{\"name\": ", i ? ", " : "");
        str(sb, popci_progress_phase_name(i, popci_model_training(m)));
        popci_sb_printf(sb, ", \"seconds\": ");
        num(sb, p->phase_seconds[i]);
        popci_sb_printf(sb, "}");
    }
    popci_sb_printf(sb, "]},\n");
}

/* ---- the core's figures when the backend has no report ------------------- */

enum { M_WEIGHTS, M_GRADS, M_STATE, M_ACTS, M_TEMPS, M_COUNT };
static const char *const mem_names[M_COUNT] = {
    "weights", "gradients", "state", "activations", "temporaries"};

/* Per IPU: persistent bytes by kind, activations at their peak over the
** schedule, the largest temporaries of one node. */
static void plan_memory(const popci_exec *e, int ipu, double *b)
{
    const popc_plan *pp = popci_exec_public_plan(e);

    memset(b, 0, sizeof(double) * M_COUNT);
    for (int s = 0; s < pp->n_slots; s++) {
        const popc_plan_slot *sl = &pp->slots[s];
        double bytes = (double)popci_exec_slot_device_bytes(e, s);
        if (sl->ipu != ipu)
            continue;
        if (sl->kind == POPC_SLOT_WEIGHT || sl->kind == POPC_SLOT_CONST)
            b[M_WEIGHTS] += bytes;
        else if (sl->kind == POPC_SLOT_GRAD)
            b[M_GRADS] += bytes;
        else if (sl->kind == POPC_SLOT_STATE)
            b[M_STATE] += bytes;
    }
    for (int k = 0; k < pp->n_nodes; k++) {
        double live = 0.0;
        for (int s = 0; s < pp->n_slots; s++) {
            const popc_plan_slot *sl = &pp->slots[s];
            if (sl->ipu == ipu && (sl->kind == POPC_SLOT_ACT ||
                                   sl->kind == POPC_SLOT_INPUT) &&
                sl->first_use <= k && k <= sl->last_use)
                live += (double)popci_exec_slot_bytes(e, s);
        }
        if (live > b[M_ACTS])
            b[M_ACTS] = live;
        if (pp->nodes[k].ipu == ipu &&
            pp->nodes[k].cost.temp_bytes > b[M_TEMPS])
            b[M_TEMPS] = pp->nodes[k].cost.temp_bytes;
    }
}

static void put_plan_memory(popci_sb *sb, const popci_exec *e)
{
    const popc_plan *pp = popci_exec_public_plan(e);
    int n = pp->n_ipus > 0 ? pp->n_ipus : 1;
    double totals[M_COUNT] = {0}, b[M_COUNT], sum = 0.0;

    popci_sb_printf(sb, " \"memory\": {\"source\": \"plan\", \"ipus\": [");
    for (int ipu = 0; ipu < n; ipu++) {
        double used = 0.0;
        plan_memory(e, ipu, b);
        popci_sb_printf(sb, "%s{\"ipu\": %d", ipu ? ", " : "", ipu);
        for (int c = 0; c < M_COUNT; c++) {
            popci_sb_printf(sb, ", \"%s\": ", mem_names[c]);
            num(sb, b[c]);
            totals[c] += b[c];
            used += b[c];
        }
        popci_sb_printf(sb, ", \"used_bytes\": ");
        num(sb, used);
        popci_sb_printf(sb, ", \"tiles\": []}");
    }
    popci_sb_printf(sb, "], \"totals\": {");
    for (int c = 0; c < M_COUNT; c++) {
        popci_sb_printf(sb, "\"%s\": ", mem_names[c]);
        num(sb, totals[c]);
        popci_sb_printf(sb, ", ");
        sum += totals[c];
    }
    popci_sb_printf(sb, "\"total\": ");
    num(sb, sum);
    popci_sb_printf(sb, "}},\n");
}

static double node_cycles(const popci_exec *e, int k)
{
    return popci_exec_nodes_cycles(e, k, k + 1);
}

static void put_plan_ops(popci_sb *sb, const popci_exec *e)
{
    const popc_plan *pp = popci_exec_public_plan(e);

    popci_sb_printf(sb, " \"ops\": [");
    for (int k = 0; k < pp->n_nodes && k < MAX_ITEMS; k++) {
        const popc_plan_node *nd = &pp->nodes[k];
        popci_sb_printf(sb, "%s\n  {\"index\": %d, \"name\": ", k ? "," : "",
                        k);
        str(sb, nd->name);
        popci_sb_printf(sb, ", \"op\": ");
        str(sb, nd->op ? nd->op->name : "");
        popci_sb_printf(sb, ", \"domain\": ");
        str(sb, nd->op ? nd->op->domain : "");
        popci_sb_printf(sb, ", \"ipu\": %d, \"stage\": %d, \"phase\": %d, "
                        "\"flops\": ", nd->ipu, nd->stage, nd->phase);
        num(sb, nd->cost.flops);
        popci_sb_printf(sb, ", \"bytes\": ");
        num(sb, nd->cost.bytes);
        popci_sb_printf(sb, ", \"temp_bytes\": ");
        num(sb, nd->cost.temp_bytes);
        popci_sb_printf(sb, ", \"cycles\": ");
        num(sb, node_cycles(e, k));
        popci_sb_printf(sb, "}");
    }
    popci_sb_printf(sb, "],\n");
}

static void put_sources(popci_sb *sb, const popc_model *m,
                        const popci_exec *e)
{
    const popc_plan *pp = popci_exec_public_plan(e);
    const popc_graph *g = popci_exec_plan_graph(e);
    const popc_options *o = popci_model_options(m);
    const char *excludes =
        popci_opt_is_none(o, POPCI_O_sourceLocationExcludes)
            ? NULL
            : popci_opt_string(o, POPCI_O_sourceLocationExcludes);
    int n = 0;

    popci_sb_printf(sb, " \"sources\": [");
    for (int k = 0; k < pp->n_nodes && k < MAX_ITEMS; k++) {
        int id = popci_graph_find_node(g, pp->nodes[k].name);
        char where[1024];

        if (id < 0 ||
            !popc_graph_node_source(g, id, excludes, where, sizeof where))
            continue;
        popci_sb_printf(sb, "%s\n  {\"node\": ", n++ ? "," : "");
        str(sb, pp->nodes[k].name);
        popci_sb_printf(sb, ", \"source\": ");
        str(sb, where);
        popci_sb_printf(sb, "}");
    }
    popci_sb_printf(sb, "],\n");
}

static void put_plan_stages(popci_sb *sb, const popci_exec *e)
{
    const popc_plan *pp = popci_exec_public_plan(e);
    int n = 0;

    for (int k = 0; k < pp->n_nodes; k++)
        if (pp->nodes[k].stage + 1 > n)
            n = pp->nodes[k].stage + 1;
    popci_sb_printf(sb, " \"stages\": [");
    for (int st = 0; st < n; st++) {
        double cycles = 0.0;
        int ipu = -1;
        for (int k = 0; k < pp->n_nodes; k++)
            if (pp->nodes[k].stage == st) {
                cycles += node_cycles(e, k);
                if (ipu < 0)
                    ipu = pp->nodes[k].ipu;
            }
        popci_sb_printf(sb, "%s{\"stage\": %d, \"ipu\": %d, \"cycles\": ",
                        st ? ", " : "", st, ipu);
        num(sb, cycles);
        popci_sb_printf(sb, "}");
    }
    popci_sb_printf(sb, "],\n");
}

/* ---- the backend's report, member by member ------------------------------ */

/* Keys the profile writes itself: a backend's member of that name is
** dropped rather than duplicated. */
static const char *const own_keys[] = {
    "format", "version", "model", "compile", "backend_report",
    "micro_batch_cycles", "run_cycles", "phases", "runs", "iterations",
    "perf_counters", "timeline", NULL};

static int key_is(const char *s, size_t k0, size_t k1, const char *key)
{
    size_t n = strlen(key);

    return k1 - k0 == n + 2 && memcmp(s + k0 + 1, key, n) == 0;
}

/* Copy the members of the backend's (valid) report object; *have gets bit
** 0, 1, 2 for "memory", "ops", "stages". */
static void put_backend(popci_sb *sb, const char *s, int *have)
{
    size_t n = strlen(s), i = ws(s, n, 0);

    *have = 0;
    if (i >= n || s[i] != '{')
        return;
    for (i++;;) {
        size_t k0 = ws(s, n, i), k1, v0, v1;
        int skip = 0;

        if (k0 >= n || s[k0] != '"')
            return; /* "}" of an empty object */
        k1 = scan_string(s, n, k0);
        v0 = ws(s, n, ws(s, n, k1) + 1);
        v1 = scan_value(s, n, v0, 0);
        for (int k = 0; own_keys[k]; k++)
            skip |= key_is(s, k0, k1, own_keys[k]);
        if (!skip) {
            popci_sb_printf(sb, " %.*s: %.*s,\n", (int)(k1 - k0), s + k0,
                            (int)(v1 - v0), s + v0);
            *have |= key_is(s, k0, k1, "memory") ? 1
                     : key_is(s, k0, k1, "ops")  ? 2
                     : key_is(s, k0, k1, "stages") ? 4 : 0;
        }
        i = ws(s, n, v1);
        if (i >= n || s[i] != ',')
            return;
        i++;
    }
}

/* ---- runs ---------------------------------------------------------------- */

static void put_phases(popci_sb *sb, const popci_profile *p,
                       const popci_exec *e)
{
    const popc_plan *pp = popci_exec_public_plan(e);

    popci_sb_printf(sb, " \"micro_batch_cycles\": ");
    num(sb, p->mb_cycles);
    popci_sb_printf(sb, ",\n \"run_cycles\": ");
    num(sb, p->run_cycles);
    popci_sb_printf(sb, ",\n \"phases\": [");
    for (int ph = 0; ph < p->phases; ph++) {
        int first = popci_exec_phase_first(e, ph);
        const popc_plan_node *nd = first < pp->n_nodes ? &pp->nodes[first]
                                                       : NULL;
        popci_sb_printf(sb, "%s{\"phase\": %d, \"first_node\": %d, "
                        "\"end_node\": %d, \"stage\": %d, \"ipu\": %d, "
                        "\"cycles\": ", ph ? ", " : "", ph, first,
                        popci_exec_phase_first(e, ph + 1), nd ? nd->stage : 0,
                        nd ? nd->ipu : 0);
        num(sb, p->phase_cycles[ph]);
        popci_sb_printf(sb, "}");
    }
    popci_sb_printf(sb, "],\n");
}

static void put_runs(popci_sb *sb, const popci_profile *p)
{
    popci_sb_printf(sb, " \"runs\": {\"count\": %lld, \"latencies\": [",
                    (long long)p->runs);
    for (int64_t r = p->hist_first; r < p->runs; r++) {
        const double *h = p->hist[r % POPCI_PROFILE_HISTORY];
        popci_sb_printf(sb, "%s{\"run\": %lld, \"total\": ",
                        r > p->hist_first ? ", " : "", (long long)r);
        num(sb, h[0]);
        popci_sb_printf(sb, ", \"host_ipu\": ");
        num(sb, h[1]);
        popci_sb_printf(sb, ", \"compute\": ");
        num(sb, h[2]);
        popci_sb_printf(sb, "}");
    }
    popci_sb_printf(sb, "], ");
    latency(sb, "total", &p->run_total);
    popci_sb_printf(sb, "},\n \"iterations\": {\"count\": %lld, ",
                    (long long)(p->runs && p->trace.task ? p->n_iterations
                                                         : 0));
    latency(sb, "latency", &p->lat[POPCI_LAT_TOTAL]);
    popci_sb_printf(sb, ", ");
    latency(sb, "host_ipu", &p->lat[POPCI_LAT_HOST_IPU]);
    popci_sb_printf(sb, ", ");
    latency(sb, "compute", &p->lat[POPCI_LAT_COMPUTE]);
    popci_sb_printf(sb, ", ");
    latency(sb, "ipu_host", &p->lat[POPCI_LAT_IPU_HOST]);
    popci_sb_printf(sb, "},\n");
}

static void put_counters(popci_sb *sb, const popci_profile *p)
{
    int64_t n = p->runs && p->trace.task ? p->n_iterations : 0;

    popci_sb_printf(sb, " \"perf_counters\": {");
    for (int ev = 0; ev < POPC_PERF_EVENTS; ev++) {
        popci_sb_printf(sb, "\"%s\": [", popc_perf_event_name(ev));
        for (int64_t i = 0; i < n && i < MAX_ITEMS; i++) {
            popci_sb_printf(sb, "%s", i ? ", " : "");
            num(sb, p->perf[ev][i]);
        }
        popci_sb_printf(sb, "], ");
    }
    popci_sb_printf(sb, "\"truncated\": %s},\n",
                    n > MAX_ITEMS ? "true" : "false");
}

static void put_timeline(popci_sb *sb, const popci_profile *p,
                         const popci_exec *e)
{
    const popci_trace *t = &p->trace;
    const popc_plan *pp = popci_exec_public_plan(e);
    int64_t tasks = p->runs && t->task ? p->n_iterations * p->phases : 0;
    int64_t steps = p->runs && t->step && p->training ? p->windows : 0;
    double t0 = p->run_t0, end = 0.0;

    popci_sb_printf(sb, " \"timeline\": {\"run\": %lld, \"events\": [",
                    (long long)(p->runs - 1));
    for (int64_t i = 0; i < tasks && i < MAX_ITEMS; i++) {
        const double *ts = t->task + 4 * i;
        int ph = (int)(i % p->phases);
        int64_t it = i / p->phases;
        int first = popci_exec_phase_first(e, ph);
        popci_sb_printf(sb, "%s\n  {\"phase\": %d, \"stage\": %d, "
                        "\"replica\": %d, \"micro_batch\": %lld, "
                        "\"start\": ", i ? "," : "", ph,
                        first < pp->n_nodes ? pp->nodes[first].stage : 0,
                        (int)(it % p->replicas),
                        (long long)(it / p->replicas));
        num(sb, ts[0] - t0);
        popci_sb_printf(sb, ", \"end\": ");
        num(sb, ts[3] - t0);
        popci_sb_printf(sb, ", \"compute_start\": ");
        num(sb, ts[1] - t0);
        popci_sb_printf(sb, ", \"compute_end\": ");
        num(sb, ts[2] - t0);
        popci_sb_printf(sb, "}");
        if (ts[3] - t0 > end)
            end = ts[3] - t0;
    }
    popci_sb_printf(sb, "],\n  \"steps\": [");
    for (int64_t w = 0; w < steps && w < MAX_ITEMS; w++) {
        popci_sb_printf(sb, "%s{\"window\": %lld, \"start\": ",
                        w ? ", " : "", (long long)w);
        num(sb, t->step[2 * w] - t0);
        popci_sb_printf(sb, ", \"end\": ");
        num(sb, t->step[2 * w + 1] - t0);
        popci_sb_printf(sb, "}");
        if (t->step[2 * w + 1] - t0 > end)
            end = t->step[2 * w + 1] - t0;
    }
    popci_sb_printf(sb, "],\n  \"duration\": ");
    num(sb, end);
    popci_sb_printf(sb, ", \"truncated\": %s}\n",
                    tasks > MAX_ITEMS || steps > MAX_ITEMS ? "true"
                                                           : "false");
}

static char *profile_json(const popci_profile *p, const popc_model *m,
                          const popci_exec *e)
{
    popci_sb sb = {0};
    int have = 0;

    popci_sb_printf(&sb, "{\"format\": \"popc-profile\", \"version\": 1,\n");
    put_model(&sb, p, m, e);
    popci_sb_printf(&sb, " \"backend_report\": %s,\n",
                    p->backend_report ? "true" : "false");
    if (p->backend_report)
        put_backend(&sb, p->backend_report, &have);
    if (!(have & 1))
        put_plan_memory(&sb, e);
    if (!(have & 2))
        put_plan_ops(&sb, e);
    if (!(have & 4))
        put_plan_stages(&sb, e);
    put_sources(&sb, m, e);
    put_phases(&sb, p, e);
    put_runs(&sb, p);
    put_counters(&sb, p);
    put_timeline(&sb, p, e);
    popci_sb_printf(&sb, "}\n");
    return popci_sb_take(&sb);
}

/* ---- files --------------------------------------------------------------- */

popc_status popci_profile_mkdir(const char *dir)
{
    return popci_mkdir_p(dir, "enableProfiling");
}

static popc_status write_atomic(const char *dir, const char *name,
                                const char *data, size_t len)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = popci_malloc(n);
    popc_status st;

    if (!path)
        return popc_set_error(POPC_ENOMEM, "enableProfiling: out of memory");
    snprintf(path, n, "%s/%s", dir, name);
    if ((st = popci_write_file_atomic(path, data, len)) != POPC_OK)
        st = popc_set_error(st, "enableProfiling: %s", popc_last_error());
    free(path);
    return st;
}

popc_status popci_profile_write(const popci_profile *p, const popc_model *m,
                                const popci_exec *e)
{
    char *json, *html;
    popci_sb sb = {0};
    popc_status st;

    if (!p->dir || !e)
        return POPC_OK;
    if ((st = popci_profile_mkdir(p->dir)) != POPC_OK)
        return st;
    if (!(json = profile_json(p, m, e)))
        return popc_set_error(POPC_ENOMEM, "enableProfiling: out of memory "
                              "while writing the profile");
    popci_profile_html(&sb, json, strlen(json));
    if (!(html = popci_sb_take(&sb))) {
        free(json);
        return popc_set_error(POPC_ENOMEM, "enableProfiling: out of memory "
                              "while writing the profile page");
    }
    st = write_atomic(p->dir, "profile.json", json, strlen(json));
    if (st == POPC_OK)
        st = write_atomic(p->dir, "profile.html", html, strlen(html));
    free(json);
    free(html);
    return st;
}
