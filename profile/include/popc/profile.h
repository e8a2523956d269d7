/* profile.h - cycle estimates, latencies, performance counters and the
** compilation time of a model (PopTorch's cycleCount, getLatency,
** getHostIpuLatency, getComputeLatency, getIpuHostLatency,
** getPerfCounters, compilationTime).
**
** Iterations. A run is made of micro-batches (deviceIterations x
** gradientAccumulation) on every replica; one iteration is one
** micro-batch on one replica, numbered i = micro_batch * replicas +
** replica (the host layout order). For each iteration the executor
** records when its inputs were requested and fed, when its nodes ran and
** when its outputs were written back. The latency figures are the
** minimum, maximum and mean over the iterations of the last run, as in
** PopTorch:
**   latency   output_complete - input   (round trip)
**   host_ipu  input_complete - input    (inputs reach the device)
**   compute   output - input_complete   (device work; with a pipeline,
**                                        waits between stages included)
**   ipu_host  output_complete - output  (outputs reach the host)
** so host_ipu + compute + ipu_host = latency for every iteration.
** popc_model_latency (model.h) gives the wall time of the whole last run
** instead.
**
** Cycles are the backend's estimates (the ipumodel and offline backends
** model them; the cpu backend has none): the cycles of one run on the
** first replica, pipeline ticks and optimizer steps included as the
** executor schedules them.
**
** enableProfiling(dir) makes the model write dir/profile.json and
** dir/profile.html (one self-contained page with the charts) after the
** compile and after every run; see profile/profile.c for the JSON layout.
** showCompilationProgressBar draws a progress bar on stderr while
** compiling when stderr is a terminal, and logs one INFO line per
** compile phase otherwise.
**
** The getters read figures the model keeps: like every use of a model,
** they are not thread-safe while another thread uses it.
**
** Since 0.1.0 unless a function says otherwise; the conventions of
** popc/status.h (ownership, status codes, threads) apply.
*/
#ifndef POPC_PROFILE_H
#define POPC_PROFILE_H

#include <stdint.h>
#include "popc/status.h"
#include "popc/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Estimated device cycles of the last run (first replica). POPC_OK;
** POPC_EINVAL when m or cycles is NULL; POPC_ECONFIG "Cycle count logging
** is disabled. Please set option logCycleCount to True to enable." when
** logCycleCount is off; POPC_ESTATE "Please run the model at least once
** before obtaining cycle count." before a run (since the last compile, or
** after popc_model_destroy); POPC_EUNSUPPORTED when the backend models no
** cycles. With logCycleCount on, every run logs the count at DEBUG. Not
** thread-safe on one model. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_model_cycle_count(popc_model *m,
    double *cycles);

/* Seconds the last compile took. POPC_ESTATE "Please compile the model
** before obtaining compilation time." when the model is not compiled;
** POPC_ECONFIG "Please set showCompilationProgressBar option to obtain
** compilation time." when that option is off (PopTorch times the compile
** with its progress bar); POPC_EINVAL when m or seconds is NULL; else
** POPC_OK. popc_model_compilation_time (model.h) is the unchecked figure.
** Not thread-safe on one model. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_model_get_compilation_time(
    popc_model *m, double *seconds);

/* Minimum, maximum and mean seconds over the iterations of the last run. */
typedef struct popc_latency {
    double min, max, mean;
} popc_latency;

/* The round-trip latency (getLatency: output_complete - input) of the
** iterations of the last run. POPC_OK; POPC_EINVAL when m or out is NULL;
** POPC_ESTATE "Please run the model at least once before obtaining
** latency." before a run since the last compile (or after
** popc_model_destroy); POPC_EUNSUPPORTED when the runs have too many
** micro-batch tasks (over 2^22) to be timed. Not thread-safe on one model.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_model_get_latency(popc_model *m,
    popc_latency *out);
/* getHostIpuLatency: input_complete - input, over the iterations of the
** last run. POPC_OK, POPC_EINVAL, POPC_ESTATE, POPC_EUNSUPPORTED as for
** popc_model_get_latency. Not thread-safe on one model. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_model_get_host_ipu_latency(
    popc_model *m, popc_latency *out);
/* getComputeLatency: output - input_complete, over the iterations of the
** last run. POPC_OK, POPC_EINVAL, POPC_ESTATE, POPC_EUNSUPPORTED as for
** popc_model_get_latency. Not thread-safe on one model. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_model_get_compute_latency(
    popc_model *m, popc_latency *out);
/* getIpuHostLatency: output_complete - output, over the iterations of the
** last run. POPC_OK, POPC_EINVAL, POPC_ESTATE, POPC_EUNSUPPORTED as for
** popc_model_get_latency. Not thread-safe on one model. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_model_get_ipu_host_latency(
    popc_model *m, popc_latency *out);

/* PopTorch's performance counter keys, in order. */
typedef enum popc_perf_event {
    POPC_PERF_INPUT = 0,         /* "input": inputs requested */
    POPC_PERF_INPUT_COMPLETE,    /* "input_complete": inputs transferred */
    POPC_PERF_COMPUTE,           /* "compute": the first node starts */
    POPC_PERF_COMPUTE_COMPLETE,  /* "compute_complete": the last one ends */
    POPC_PERF_OUTPUT,            /* "output": outputs requested */
    POPC_PERF_OUTPUT_COMPLETE,   /* "output_complete": outputs transferred */
    POPC_PERF_EVENTS
} popc_perf_event;

/* "input", "input_complete", ...; NULL for a bad value. Static strings,
** never freed. Thread-safe. Since 0.1.0. */
POPC_API const char *popc_perf_event_name(popc_perf_event ev);

/* Counters of the last run: times[ev][i] is the second (from the start of
** popc_model_run) at which event ev happened for iteration i; within an
** iteration the six events are in nondecreasing order. All inputs of an
** iteration move together (and so do its outputs), so one list per event
** stands for PopTorch's list per tensor. */
typedef struct popc_perf_counters {
    int64_t n_iterations;        /* micro-batches x replicas */
    int64_t micro_batches;       /* deviceIterations x gradientAccumulation */
    int replicas;
    const double *times[POPC_PERF_EVENTS]; /* borrowed: valid until the
                                              next run, compile or free */
} popc_perf_counters;

/* Fills *out with the counters of the last run; out->times is borrowed
** (valid until the next run, compile or free of m). POPC_OK; POPC_EINVAL
** when m or out is NULL; POPC_ESTATE "Please run the model at least once
** before obtaining performance counters." before a run since the last
** compile (or after popc_model_destroy); POPC_EUNSUPPORTED when the runs
** have too many micro-batch tasks (over 2^22) to be timed. Not
** thread-safe on one model. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_model_get_perf_counters(
    popc_model *m, popc_perf_counters *out);

#ifdef __cplusplus
}
#endif
#endif /* POPC_PROFILE_H */
