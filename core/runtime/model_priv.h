/* model_priv.h - the model wrapper's state, shared by core/runtime/model.c
** (lifecycle, compile, run) and core/runtime/model_weights.c (weights, sharing,
** optimizer and its state).
**
** Host and device copies: the model's graph holds the host copy of every
** weight; the executor holds the device copy. host_dirty means the device
** is newer (training ran); device_dirty means the host is newer (a weight
** was set). host_version counts changes of the host copy, so inference
** models sharing a training model's weights know when to copy them.
*/
#ifndef POPC_MODEL_PRIV_H
#define POPC_MODEL_PRIV_H

#include <stdint.h>
#include <stdio.h>

#include "popc/model.h"
#include "core/layer/model.h"
#include "core/runtime/exec_priv.h"
#include "core/runtime/hooks_priv.h"
#include "core/extend/callbacks_priv.h"

struct popc_model {
    int training;
    popc_graph *graph;           /* owned: the host weights */
    popc_options *opts;          /* owned, frozen */
    popc_optimizer *optimizer;   /* training: owned */
    popci_optstate *state;       /* training: created on first need */
    int state_exists;            /* compiled once: the state can be read
                                    (before, a set value is held for the
                                    compile; semantics §4) */
    popci_exec *exec;            /* NULL until compiled, after destroy */

    int n_inputs;                /* compiled input signature */
    popc_view *sig;              /* as given (combined batch, no data) */
    popc_dtype *run_dtype;       /* dtype streamed (int64 -> int32) */

    int n_weights;               /* initializers of the graph */
    int *weight_values;          /* value ids */
    int *weight_plan;            /* plan weight index per model weight */

    int host_dirty, device_dirty;
    uint64_t host_version;

    popc_model *shared_from;     /* inference: training model read */
    uint64_t shared_version;     /* its host_version last copied */
    popc_model **sharers;        /* training: inference models reading */
    int n_sharers;

    uint64_t runs;
    double lat_host, lat_compute, lat_total, compile_time;

    popci_callbacks *callbacks;  /* CPU op callbacks (core/extend/callbacks.c);
                                    NULL until one is registered */

    /* what the layers above the core keep per model, one slot per table
    ** of popci_layer_hooks (core/layer/hooks.h): exe/ the
    ** executable being loaded, profile/ the figures and files */
    void *layer_data[POPCI_MAX_LAYERS];

    int detached;                /* popc_model_detach_from_device */
    FILE *log_file;              /* logDir/NAME.log; NULL: none */
    struct popci_anchors *anchors; /* anchorTensor (core/runtime/anchors_priv.h);
                                    NULL: none; set by compile */
    int64_t reserved_ipus;       /* IPUs held: all replicas', rounded up to
                                    a power of 2 by autoRoundNumIPUs */
};

/* ---- model_weights.c ----------------------------------------------------- */

/* popci_model_sync_host: core/layer/model.h */
/* Host -> device for every weight. */
void popci_model_push_weights(popc_model *m);
/* Inference sharing a training model: bring its weights over if they
** changed since the last run. */
popc_status popci_model_sync_shared(popc_model *m);
/* Create the optimizer state if it does not exist yet. */
popc_status popci_model_ensure_state(popc_model *m);
/* Forget the links of sharing models (on free). */
void popci_model_unshare(popc_model *m);

/* ---- model.c ------------------------------------------------------------- */

/* popci_model_require_compiled and the other views the layers have of a
** model are in core/layer/model.h. */

/* popci_model_name is in core/layer/model.h. */

/* logDir (core/runtime/model_log.c): opens LOGDIR/NAME.log when the option is
** set. log_begin makes the calling thread's log lines go there too and
** returns what log_end must restore. */
popc_status popci_model_open_log(popc_model *m);
FILE *popci_model_log_begin(const popc_model *m);
void popci_model_log_end(FILE *prev);

/* PopTorch's IPU count rule (core/runtime/ipu_count.c): fails with its text when
** the IPUs of all replicas are more than 64 or, without autoRoundNumIPUs,
** not a power of 2. *reserved: the IPUs the process holds. */
popc_status popci_ipu_count(const popc_options *o,
                            const popc_backend_def *be, int ipus_per_replica,
                            int64_t replicas, int64_t *reserved);
/* POPC_ECONFIG when an option describing IPU hardware (useIpuId,
** syncPattern, Training.setConvolutionDithering) is set for a backend
** that models none (core/runtime/ipu_count.c). */
popc_status popci_ipu_device_options(const popc_options *o,
                                     const popc_backend_def *be);
/* useIpuId's device id, -1 when not set (None). */
int popci_use_ipu_id(const popc_options *o);

/* Borrowed views of the compiled model, NULL when not compiled. */
const popci_exec *popci_model_exec(const popc_model *m);

/* popci_backend_for is in core/layer/model.h. */

#endif /* POPC_MODEL_PRIV_H */
