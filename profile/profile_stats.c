/* profile_stats.c - the figures a model keeps about its compile and runs:
** the run trace, performance counters and latencies, cycle estimates of a
** run, and the public getters of popc/profile.h.
**
** The cycles of a run follow the executor's schedule (exec_priv.h): a
** window of W micro-batches through P phases takes W + P - 1 ticks, and
** a tick lasts as long as its slowest phase (the stages of a pipeline run
** on their own IPUs, in step). Optimizer steps run on the host here and
** add no device cycles.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/log.h"
#include "core/layer/alloc.h"
#include "core/layer/exec_report.h"
#include "core/layer/model.h"
#include "core/layer/options.h"
#include "profile/profile_priv.h"

/* Tasks recorded at most (4 doubles each: 128 MiB); a run with more
** records no trace and has no counters. */
#define MAX_TRACE_TASKS ((int64_t)1 << 22)

static const char *const event_names[POPC_PERF_EVENTS] = {
    "input", "input_complete", "compute", "compute_complete", "output",
    "output_complete"};

const char *popc_perf_event_name(popc_perf_event ev)
{
    if ((int)ev < 0 || ev >= POPC_PERF_EVENTS)
        return NULL;
    return event_names[ev];
}

/* ---- the trace ----------------------------------------------------------- */

static void reset(popci_profile *p)
{
    free(p->phase_cycles);
    free(p->dir);
    free(p->backend_report);
    free(p->trace.task);
    free(p->trace.step);
    for (int ev = 0; ev < POPC_PERF_EVENTS; ev++)
        free(p->perf[ev]);
    memset(p, 0, sizeof *p);
}

void popci_profile_free(popci_profile *p)
{
    if (!p)
        return;
    reset(p);
    free(p);
}

popci_trace *popci_profile_trace(popci_profile *p)
{
    return p && p->trace.task ? &p->trace : NULL;
}

/* ---- compile ------------------------------------------------------------- */

/* Device cycles of one run on one replica (see the file comment). */
static double cycles_of_run(const popci_profile *p)
{
    int64_t w = p->training ? p->micro_batches / p->windows
                            : p->micro_batches;
    double window = 0.0;

    for (int64_t t = 0; t < w + p->phases - 1; t++) {
        double tick = 0.0;
        for (int ph = 0; ph < p->phases; ph++)
            if (t - ph >= 0 && t - ph < w && p->phase_cycles[ph] > tick)
                tick = p->phase_cycles[ph];
        window += tick;
    }
    return window * (double)p->windows;
}

static popc_status oom(void)
{
    return popc_set_error(POPC_ENOMEM, "profile: out of memory");
}

/* The bytes a backend's report_to writes, gathered. */
typedef struct report_buf {
    char *data;
    size_t len, cap;
} report_buf;

static popc_status gather(void *user, const void *bytes, size_t n)
{
    report_buf *b = user;

    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        char *p;

        while (cap < b->len + n + 1)
            cap *= 2;
        if (!(p = popci_realloc(b->data, cap)))
            return popc_set_error(POPC_ENOMEM, "profile: out of memory for "
                                  "the backend's report");
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
    b->data[b->len] = '\0';
    return POPC_OK;
}

/* The backend's own JSON report, through the sink of report_to. A backend
** without it, or one that fails, leaves the profile to the core's figures
** (logged). */
static void fetch_report(popci_profile *p, const popci_exec *e)
{
    report_buf b = {0};

    if (!popci_exec_has_report(e))
        return;
    if (popci_exec_report(e, gather, &b) != POPC_OK) {
        popc_log(POPC_LOG_WARN, "enableProfiling: the %s backend's report "
                 "failed (%s); the profile has the core's figures only",
                 popci_exec_backend(e)->name, popc_last_error());
    } else if (!b.data || !popci_json_valid(b.data, b.len)) {
        popc_log(POPC_LOG_WARN, "enableProfiling: the %s backend's report "
                 "is not valid JSON; the profile has the core's figures "
                 "only", popci_exec_backend(e)->name);
    } else {
        p->backend_report = b.data;
        return;
    }
    free(b.data);
}

popc_status popci_profile_compiled(popci_profile **pp, const popc_model *m,
                                   const popci_exec *e,
                                   const popci_progress *pg)
{
    popci_profile *p = *pp;
    const char *dir = popci_opt_string(popci_model_options(m),
                                       POPCI_O_enableProfiling);
    popci_sb sb = {0};
    int64_t tasks;
    popc_status st;

    if (!p && !(p = *pp = popci_calloc(1, sizeof *p)))
        return oom();
    reset(p);
    p->training = popci_model_training(m);
    p->replicas = (int)popci_exec_replicas(e);
    p->phases = popci_exec_n_phases(e);
    p->pipelined = popci_exec_pipelined(e);
    p->micro_batches = popci_exec_micro_batches(e);
    p->windows = p->training ? popci_exec_device_iterations(e) : 1;
    p->n_iterations = p->micro_batches * p->replicas;
    p->compile_seconds = pg->total;
    memcpy(p->phase_seconds, pg->seconds, sizeof p->phase_seconds);
    if (!(p->phase_cycles = popci_calloc((size_t)p->phases + 1,
                                   sizeof *p->phase_cycles)))
        return oom();
    if (popci_exec_has_cycles(e)) {
        for (int ph = 0; ph < p->phases; ph++)
            p->phase_cycles[ph] = popci_exec_nodes_cycles(
                e, popci_exec_phase_first(e, ph),
                popci_exec_phase_first(e, ph + 1));
        p->mb_cycles = popci_exec_cycles(e);
        p->run_cycles = cycles_of_run(p);
    }
    tasks = p->n_iterations * p->phases;
    if (tasks <= MAX_TRACE_TASKS) {
        p->trace = (popci_trace){.micro_batches = p->micro_batches,
                                 .windows = p->windows,
                                 .replicas = p->replicas,
                                 .phases = p->phases};
        p->trace.task = popci_calloc((size_t)tasks * 4 + 1, sizeof(double));
        p->trace.step = popci_calloc((size_t)p->windows * 2 + 1, sizeof(double));
        for (int ev = 0; ev < POPC_PERF_EVENTS; ev++)
            if (!(p->perf[ev] = popci_calloc((size_t)p->n_iterations + 1,
                                       sizeof(double))))
                return oom();
        if (!p->trace.task || !p->trace.step)
            return oom();
    } else {
        popc_log(POPC_LOG_WARN, "a run has %lld micro-batch tasks: too many "
                 "to time each; latencies and performance counters are not "
                 "recorded", (long long)tasks);
    }
    if (!dir || !*dir)
        return POPC_OK;
    /* PopTorch: modelName is the report directory's subdirectory, so that
    ** a training and an inference model can profile into one directory. */
    popci_sb_printf(&sb, "%s/%s", dir, popci_model_name(m));
    if (!(p->dir = popci_sb_take(&sb)))
        return oom();
    if ((st = popci_profile_mkdir(p->dir)) != POPC_OK)
        return st;
    fetch_report(p, e);
    return popci_profile_write(p, m, e);
}

/* ---- runs ---------------------------------------------------------------- */

static void stats(popc_latency *l, const double *v, int64_t n)
{
    double sum = 0.0;

    l->min = n > 0 ? v[0] : 0.0;
    l->max = l->min;
    for (int64_t i = 0; i < n; i++) {
        if (v[i] < l->min)
            l->min = v[i];
        if (v[i] > l->max)
            l->max = v[i];
        sum += v[i];
    }
    l->mean = n > 0 ? sum / (double)n : 0.0;
}

/* Counters of iteration i = mb * R + r: its first phase gives the input
** events, its last phase the output events. */
static void counters(popci_profile *p, double t0)
{
    const popci_trace *t = &p->trace;
    int P = t->phases;
    int64_t n = p->n_iterations;
    double *lat[POPCI_LATS];

    for (int64_t i = 0; i < n; i++) {
        const double *first = t->task + 4 * ((size_t)i * (size_t)P);
        const double *last = first + 4 * (P - 1);

        p->perf[POPC_PERF_INPUT][i] = first[0] - t0;
        p->perf[POPC_PERF_INPUT_COMPLETE][i] = first[1] - t0;
        p->perf[POPC_PERF_COMPUTE][i] = first[1] - t0;
        p->perf[POPC_PERF_COMPUTE_COMPLETE][i] = last[2] - t0;
        p->perf[POPC_PERF_OUTPUT][i] = last[2] - t0;
        p->perf[POPC_PERF_OUTPUT_COMPLETE][i] = last[3] - t0;
    }
    /* the latency lists reuse one buffer per figure */
    lat[0] = popci_malloc(sizeof(double) * (size_t)(n + 1) * POPCI_LATS);
    if (!lat[0]) {
        memset(p->lat, 0, sizeof p->lat);
        return;
    }
    for (int k = 1; k < POPCI_LATS; k++)
        lat[k] = lat[0] + (size_t)(n + 1) * (size_t)k;
    for (int64_t i = 0; i < n; i++) {
        double in = p->perf[POPC_PERF_INPUT][i];
        double inc = p->perf[POPC_PERF_INPUT_COMPLETE][i];
        double out = p->perf[POPC_PERF_OUTPUT][i];
        double outc = p->perf[POPC_PERF_OUTPUT_COMPLETE][i];

        lat[POPCI_LAT_TOTAL][i] = outc - in;
        lat[POPCI_LAT_HOST_IPU][i] = inc - in;
        lat[POPCI_LAT_COMPUTE][i] = out - inc;
        lat[POPCI_LAT_IPU_HOST][i] = outc - out;
    }
    for (int k = 0; k < POPCI_LATS; k++)
        stats(&p->lat[k], lat[k], n);
    free(lat[0]);
}

void popci_profile_ran(popci_profile *p, const popc_model *m, double t0)
{
    const popci_exec *e = popci_model_executor_c(m);
    double *h;

    if (!p)
        return;
    p->runs++;
    p->run_t0 = t0;
    if (p->trace.task)
        counters(p, t0);
    h = p->hist[(p->runs - 1) % POPCI_PROFILE_HISTORY];
    popci_model_latencies(m, &h[0], &h[1], &h[2]);
    p->hist_first = p->runs > POPCI_PROFILE_HISTORY
                        ? p->runs - POPCI_PROFILE_HISTORY : 0;
    if (p->runs == 1 || h[0] < p->run_total.min)
        p->run_total.min = h[0];
    if (p->runs == 1 || h[0] > p->run_total.max)
        p->run_total.max = h[0];
    p->run_total.mean += (h[0] - p->run_total.mean) /
                         (double)p->runs;
    if (p->run_cycles > 0.0 &&
        popci_opt_int(popci_model_options(m), POPCI_O_logCycleCount))
        popc_log(POPC_LOG_DEBUG, "Total number of IPU cycles: %.0f (%s "
                 "backend estimate for replica 0: %lld micro-batches, "
                 "%.0f cycles each)", p->run_cycles,
                 e ? popci_exec_backend(e)->name : "?",
                 (long long)p->micro_batches, p->mb_cycles);
    if (p->dir && popci_profile_write(p, m, e) != POPC_OK)
        popc_log(POPC_LOG_WARN, "enableProfiling: the profile was not "
                 "updated after run %lld: %s", (long long)p->runs,
                 popc_last_error());
}

/* ---- public getters ------------------------------------------------------ */

static const popci_profile *ran(const popc_model *m)
{
    const popci_profile *p =
        m ? popci_model_layer_data_c(m, &popci_profile_hooks) : NULL;

    return m && popci_model_executor_c(m) && p && p->runs > 0 ? p : NULL;
}

popc_status popc_model_cycle_count(popc_model *m, double *cycles)
{
    const popci_profile *p;

    if (!m || !cycles)
        return popc_set_error(POPC_EINVAL, "popc_model_cycle_count: %s is "
                              "NULL", m ? "cycles" : "model");
    *cycles = 0.0;
    if (!popci_opt_int(popci_model_options(m), POPCI_O_logCycleCount))
        return popc_set_error(POPC_ECONFIG, "Cycle count logging is "
                              "disabled. Please set option logCycleCount to "
                              "True to enable.");
    if (!(p = ran(m)))
        return popc_set_error(POPC_ESTATE, "Please run the model at least "
                              "once before obtaining cycle count.");
    if (p->run_cycles <= 0.0)
        return popc_set_error(POPC_EUNSUPPORTED, "cycleCount: the %s backend "
                              "has no cycle model; use the ipumodel backend "
                              "(option backend = ipumodel) for cycle "
                              "estimates",
                              popci_exec_backend(
                                  popci_model_executor_c(m))->name);
    *cycles = p->run_cycles;
    return POPC_OK;
}

popc_status popc_model_get_compilation_time(popc_model *m, double *seconds)
{
    if (!m || !seconds)
        return popc_set_error(POPC_EINVAL, "popc_model_get_compilation_time: "
                              "%s is NULL", m ? "seconds" : "model");
    *seconds = 0.0;
    if (!popci_model_executor_c(m))
        return popc_set_error(POPC_ESTATE, "Please compile the model before "
                              "obtaining compilation time.");
    if (!popci_opt_int(popci_model_options(m),
                       POPCI_O_showCompilationProgressBar))
        return popc_set_error(POPC_ECONFIG, "Please set "
                              "showCompilationProgressBar option to obtain "
                              "compilation time.");
    *seconds = popci_model_compile_time(m);
    return POPC_OK;
}

static popc_status latency(popc_model *m, int k, const char *fn,
                           popc_latency *out)
{
    const popci_profile *p;

    if (!m || !out)
        return popc_set_error(POPC_EINVAL, "%s: %s is NULL", fn,
                              m ? "out" : "model");
    memset(out, 0, sizeof *out);
    if (!(p = ran(m)))
        return popc_set_error(POPC_ESTATE, "Please run the model at least "
                              "once before obtaining latency.");
    if (!p->trace.task)
        return popc_set_error(POPC_EUNSUPPORTED, "%s: the runs of this model "
                              "have too many micro-batches (%lld) to be "
                              "timed one by one", fn,
                              (long long)p->n_iterations);
    *out = p->lat[k];
    return POPC_OK;
}

popc_status popc_model_get_latency(popc_model *m, popc_latency *out)
{
    return latency(m, POPCI_LAT_TOTAL, "popc_model_get_latency", out);
}

popc_status popc_model_get_host_ipu_latency(popc_model *m, popc_latency *out)
{
    return latency(m, POPCI_LAT_HOST_IPU, "popc_model_get_host_ipu_latency",
                   out);
}

popc_status popc_model_get_compute_latency(popc_model *m, popc_latency *out)
{
    return latency(m, POPCI_LAT_COMPUTE, "popc_model_get_compute_latency",
                   out);
}

popc_status popc_model_get_ipu_host_latency(popc_model *m, popc_latency *out)
{
    return latency(m, POPCI_LAT_IPU_HOST, "popc_model_get_ipu_host_latency",
                   out);
}

popc_status popc_model_get_perf_counters(popc_model *m,
                                         popc_perf_counters *out)
{
    const popci_profile *p;

    if (!m || !out)
        return popc_set_error(POPC_EINVAL, "popc_model_get_perf_counters: %s "
                              "is NULL", m ? "out" : "model");
    memset(out, 0, sizeof *out);
    if (!(p = ran(m)))
        return popc_set_error(POPC_ESTATE, "Please run the model at least "
                              "once before obtaining performance counters.");
    if (!p->trace.task)
        return popc_set_error(POPC_EUNSUPPORTED, "popc_model_get_perf_"
                              "counters: the runs of this model have too "
                              "many micro-batches (%lld) to be timed one by "
                              "one", (long long)p->n_iterations);
    out->n_iterations = p->n_iterations;
    out->micro_batches = p->micro_batches;
    out->replicas = p->replicas;
    for (int ev = 0; ev < POPC_PERF_EVENTS; ev++)
        out->times[ev] = p->perf[ev];
    return POPC_OK;
}
