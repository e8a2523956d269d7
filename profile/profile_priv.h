/* profile_priv.h - what the model records about compiles and runs
** (profile/profile_stats.c), from the run trace the executor fills
** (core/layer/hooks.h), the enableProfiling files
** (profile/profile.c, profile/profile_html.c) and the compile progress bar
** (profile/progress.c); profile_hooks.c connects them to a model. The
** public side is popc/profile.h.
**
** A model owns one popci_profile, created by its first compile and reset
** by every compile. Nothing here is shared between models or threads
** except the trace, whose records are written by concurrent executor
** tasks: each task writes only its own record.
*/
#ifndef POPC_PROFILE_PRIV_H
#define POPC_PROFILE_PRIV_H

#include <stdint.h>

#include "popc/options.h"
#include "popc/profile.h"
#include "core/layer/exec.h"
#include "core/layer/hooks.h"
#include "core/layer/strbuf.h"

/* ---- progress.c --------------------------------------------------------- */

typedef struct popci_progress {
    int on;                    /* showCompilationProgressBar */
    int tty;                   /* draw a bar on stderr, else log lines */
    int training;
    int phase;                 /* current phase, -1 before the first */
    int ended;                 /* popci_progress_end was called */
    double t0, phase_t0;
    double seconds[POPCI_PHASES]; /* time spent in each phase */
    double total;              /* set by popci_progress_end */
    char name[64];             /* the graph's name, shortened */
} popci_progress;

/* Start timing a compile of graph `name` (options o decide whether
** anything is shown). */
void popci_progress_begin(popci_progress *p, const popc_options *o,
                          const char *name, int training);
/* Enter phase (POPCI_PHASE_*): closes the previous one. */
void popci_progress_phase(popci_progress *p, int phase);
/* The compile finished (ok) or failed in the current phase. */
void popci_progress_end(popci_progress *p, int ok);
/* "verify", "plan" / "autodiff and plan", "backend compile". */
const char *popci_progress_phase_name(int phase, int training);

/* ---- profile_stats.c ---------------------------------------------------- */

enum { POPCI_LAT_TOTAL = 0, POPCI_LAT_HOST_IPU, POPCI_LAT_COMPUTE,
       POPCI_LAT_IPU_HOST, POPCI_LATS };

/* Whole-run wall times of the most recent runs (a ring). */
#define POPCI_PROFILE_HISTORY 256

typedef struct popci_profile {
    /* from the compile */
    int training, replicas, phases, pipelined;
    int64_t micro_batches, windows, n_iterations;
    double mb_cycles;          /* one micro-batch, all nodes; 0: no model */
    double run_cycles;         /* one run, first replica; 0: no model */
    double *phase_cycles;      /* per phase, one micro-batch */
    double compile_seconds;
    double phase_seconds[POPCI_PHASES];
    char *dir;                 /* enableProfiling directory, or NULL */
    char *backend_report;      /* the backend's report() JSON, or NULL */
    popci_trace trace;         /* task == NULL: too big to record */

    /* from the runs since the compile */
    int64_t runs;
    double run_t0;             /* start of the last run */
    double *perf[POPC_PERF_EVENTS]; /* n_iterations each, from run_t0 */
    popc_latency lat[POPCI_LATS];
    double hist[POPCI_PROFILE_HISTORY][3]; /* total, host_ipu, compute */
    int64_t hist_first;        /* run index of the oldest kept */
    popc_latency run_total;    /* over every run since the compile */
} popci_profile;

void popci_profile_free(popci_profile *p); /* NULL-safe */

/* The hooks of a model's compiles and runs (core/layer/hooks.h;
** profile_hooks.c): the progress of each compile, then the model's
** popci_profile, kept as the layer's model data. */
extern const popci_model_hooks popci_profile_hooks;

/* After a compile of m gave e (m->exec is not set yet): reset every run
** figure, size the trace, compute the cycles of a run and, with
** enableProfiling, fetch the backend's report and write the profile.
** *pp is created on first use. POPC_ENOMEM, POPC_EIO (profile not
** writable; the message names the file). */
popc_status popci_profile_compiled(popci_profile **pp, const popc_model *m,
                                   const popci_exec *e,
                                   const popci_progress *pg);

/* The trace the next run of m fills; NULL when none is kept. */
popci_trace *popci_profile_trace(popci_profile *p);

/* After a successful run of m that began at t0 (m->lat_* are set): the
** counters and latencies, the DEBUG cycle log (logCycleCount) and the
** profile files (a write failure is logged as a warning: the run itself
** succeeded). */
void popci_profile_ran(popci_profile *p, const popc_model *m, double t0);

/* ---- profile.c ---------------------------------------------------------- */

/* Write dir/profile.json and dir/profile.html for m compiled as e (both
** through a temporary file renamed into place; dir is created if it is
** missing). POPC_EIO naming the file, POPC_ENOMEM. */
popc_status popci_profile_write(const popci_profile *p, const popc_model *m,
                                const popci_exec *e);

/* Create dir and its missing parents. POPC_EIO naming the directory. */
popc_status popci_profile_mkdir(const char *dir);

/* Is s[0..n) one JSON value (RFC 8259, surrounding white space allowed)?
** The backend's report is checked before it is copied into the profile. */
int popci_json_valid(const char *s, size_t n);

/* ---- profile_html.c ----------------------------------------------------- */

/* The page: template with json (the profile) embedded; '<' in json is
** written as \u003c so that no "</script>" can end the data early. */
void popci_profile_html(popci_sb *sb, const char *json, size_t len);

#endif /* POPC_PROFILE_PRIV_H */
