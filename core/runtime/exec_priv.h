/* exec_priv.h - running a compiled plan with PopTorch's batching
** semantics (core/runtime/executor.c, core/runtime/batching.c, core/runtime/train_step.c).
**
** One run consumes the combined batch: DI device iterations x GA
** accumulation steps x R replicas (R / G input groups) micro-batches in
** the host layout [DI][GA][R/G][B] (semantics §0). Micro-batches go
** through the plan's phases (contiguous node ranges of one pipeline stage)
** as a wavefront: at tick t, phase p of every replica works on micro-batch
** t - p. All (replica, phase) tasks of a tick are independent and are
** handed to backend->parallel; everything that orders results (gradient
** accumulation, output sums, buffer updates, the cross-replica reduction)
** happens in a fixed order, so any backend gives the serial result
** bitwise. With one phase this is the plain loop over micro-batches.
** A window is what flows through the pipeline between weight updates: the
** GA micro-batches of one optimizer step when training (the step drains
** the pipeline), all DI micro-batches for inference. Phases exist only
** for multi-IPU PipelinedExecution; a backend's run_nodes may then be
** called concurrently (from inside its own parallel()) on distinct frames.
**
** Storage: trainable weights and constants have one device copy shared by
** every replica (read-only while micro-batches run; the optimizer updates
** it between windows, so replicas stay identical). Weights that receive
** buffer updates (BatchNorm running statistics) have one copy per replica,
** as on IPUs; the host reads replica 0's. Each replica has its own gradient
** accumulators and min(phases, window) frames with their activation arena.
** A replica-grouped weight has one copy per group, shared by the group's
** replicas, updated from the gradients reduced within the group only;
** with broadcastBuffers, buffers take the values of their group's first
** replica after every optimizer step.
*/
#ifndef POPC_EXEC_PRIV_H
#define POPC_EXEC_PRIV_H

#include <stdint.h>

#include "popc/model.h"
#include "popc/options.h"
#include "popc/plugin.h"
#include "core/layer/dist.h"
#include "core/layer/exec.h"
#include "core/layer/exec_report.h"
#include "core/layer/hooks.h"
#include "core/runtime/plan_priv.h"

typedef struct popci_optstate popci_optstate;
typedef struct popci_trace popci_trace; /* core/layer/hooks.h */

/* popci_exec_grouping: core/layer/hooks.h */

/* syntheticDataMode: values of generated floating-point inputs. */
enum { POPCI_SYNTH_NORMAL = 0, POPCI_SYNTH_UNIFORM = 1, POPCI_SYNTH_ZEROS = 2 };

typedef struct popci_exec_config {
    int training;
    int64_t device_iterations;     /* DI >= 1 */
    int64_t replicas;              /* R >= 1 */
    int64_t grad_accum;            /* GA >= 1 (1 for inference) */
    int64_t input_group;           /* G, divides R */
    int input_orthogonal;          /* groups are replica % (R / G) */
    popc_output_mode mode;         /* resolved: never DEFAULT */
    int64_t period;                /* EveryN */
    popc_reduction_type reduction; /* SUM or MEAN */
    popc_mean_strategy strategy;   /* RUNNING or POST */
    int accum_f16;                 /* gradient accumulators hold float16
                                      values (the optimizer's accum_type) */
    int synthetic;                 /* enableSyntheticData: no host I/O */
    int auto_loss_scaling;         /* Training.setAutomaticLossScaling */
    int synthetic_mode;            /* POPCI_SYNTH_* */
    uint64_t random_seed;
    int pipelined;                 /* stages overlap (wavefront) */
    int broadcast_buffers;         /* after each optimizer step, buffers
                                      take the first replica's values
                                      (of their replica group) */
    int n_groupings;               /* grouped weights (borrowed array, read
                                      by popci_exec_new) */
    const popci_exec_grouping *groupings;
    /* Distributed training (core/layer/dist.h): the ranks the gradients
    ** are reduced over, through a layer's port (borrowed); NULL or one
    ** rank: this process only. Local replica r is global replica
    ** replica_base + r of replicas_global. */
    popci_dist_port *dist;
    int64_t replica_base;          /* set by popci_exec_new from comm */
    int64_t replicas_global;
    /* per anchorTensor (plan->anchor_slots): output mode and period
    ** (borrowed arrays, copied by popci_exec_new) */
    const popc_output_mode *anchor_mode;
    const int64_t *anchor_period;
} popci_exec_config;

/* What one run reads and writes. */
typedef struct popci_exec_io {
    const popc_view *inputs;       /* per graph input: the combined batch,
                                      in the compiled dtype */
    const popc_view *outputs;      /* per graph output, shaped by
                                      popci_exec_output_view */
    uint64_t run_index;            /* runs before this one (seeds) */
    const popc_optimizer *optimizer; /* training */
    popci_optstate *state;         /* training */
    void *user;                    /* kc->user (host callbacks) */
    popci_trace *trace;            /* (optional) timestamps of every task
                                      and optimizer step; NULL: none */
} popci_exec_io;

/* ---- executor.c ---------------------------------------------------------- */

/* Open the backend, compile the plan on it and allocate frames, weights
** and accumulators. Takes ownership of plan, even on failure. Device
** weights start as the plan graph's initializers. */
popc_status popci_exec_new(popci_plan *plan, const popc_backend_def *be,
                           const popc_backend_config *bcfg,
                           const popci_exec_config *cfg, popci_exec **out);
void popci_exec_free(popci_exec *e); /* NULL-safe */

/* popci_exec_plan is in core/layer/plan.h; popci_exec_backend,
** popci_exec_n_phases, popci_exec_cycles and the other figures a report
** reads are in core/layer/exec_report.h. */

/* Shape and dtype of graph output i as a run returns it (R1.6). */
popc_view popci_exec_output_view(const popci_exec *e, int i);

/* popci_exec_weight, popci_exec_write_weight and the other views of the
** weights are in core/layer/exec.h. */

/* The group of replica r for plan weight w (popci_exec_n_groups of
** core/layer/exec.h) and the first replica of group g (where the
** group's copy lives). */
int popci_exec_group_of(const popci_exec *e, int w, int r);
int popci_exec_group_leader(const popci_exec *e, int w, int g);


/* ---- batching.c ---------------------------------------------------------- */

/* One run over the combined batch. compute receives the seconds spent
** running micro-batches and optimizer steps. */
popc_status popci_exec_run(popci_exec *e, const popci_exec_io *io,
                           double *compute);

/* ---- train_step.c -------------------------------------------------------- */

/* Optimizer state of every trainable weight of a model, kept on the host
** (it is the device copy too: backends read it through STATE slots). */
popc_status popci_optstate_new(const popc_optimizer *o, const popc_graph *g,
                               popci_optstate **out);
void popci_optstate_free(popci_optstate *s); /* NULL-safe */
/* Named state tensors "<weight>/<state>" and "<weight>/step". */
int popci_optstate_count(const popci_optstate *s);
const char *popci_optstate_name(const popci_optstate *s, int i);
/* New tensor (owned by the caller) holding state i. */
popc_status popci_optstate_get(const popci_optstate *s, int i,
                               popc_tensor **out);
/* Overwrite state i from t (same shape; float32, or int64 for steps). */
popc_status popci_optstate_set(popci_optstate *s, int i,
                               const popc_tensor *t);
/* Replica groups of weight name (helper "strategies"): its state arrays
** hold n_groups states, each group starting from group 0's; the named
** state tensors become [n_groups, *shape]. No-op for an unknown name.
** POPC_EINVAL (n_groups < 1), POPC_ENOMEM. */
popc_status popci_optstate_set_groups(popci_optstate *s, const char *name,
                                      int n_groups);
/* Steps taken by the first trainable weight (0 without weights). */
int64_t popci_optstate_steps(const popci_optstate *s);
/* Arrays of the weight named name, or NULL. *n_state receives the count. */
float *const *popci_optstate_arrays(popci_optstate *s, const char *name,
                                    int *n_state);
/* State names of weight name, in order; NULL when unknown. */
const char *popci_optstate_state_name(const popci_optstate *s,
                                      const char *name, int i);

/* Before a run: a changed (variable) loss scaling goes into the gradient
** seed. No-op when unchanged, 0, or the seed cannot be found. */
void popci_exec_set_loss_scaling(popci_exec *e, double ls);

/* After GA micro-batches: reduce gradients over accumulation steps and
** replicas, unscale, clip, and apply the optimizer to every weight. */
popc_status popci_exec_train_step(popci_exec *e, const popci_exec_io *io);
/* 1 / (loss scaling x the counts a Mean reduction divides by) for plan
** weight w: what multiplies its summed gradient. */
float popci_exec_grad_scale(const popci_exec *e, int w);

/* ---- the executor's state, shared by its three files --------------------- */

struct popci_exec {
    popci_plan *plan;              /* owned */
    popci_exec_config cfg;
    const popc_backend_def *be;
    void *bctx, *exe;
    int n_phases;
    int *phase_first;              /* n_phases + 1 node positions */
    int n_frames;                  /* per replica */
    popc_frame *frames;            /* [replica * n_frames + f] */
    popc_view *views;              /* n_slots per frame */
    void **arenas;                 /* one per frame */
    void **wdata;                  /* [replica * n_weights + w] */
    unsigned char *w_own;          /* wdata entry allocated by this slot */
    float **accum;                 /* [replica * n_weights + w]; trained */
    int *w_groups;                 /* per weight: replica groups (1) */
    unsigned char *w_orth;         /* per weight: orthogonal groups */
    /* what a run returns: the graph outputs, then the anchors */
    int n_ret;
    popc_view *out_views;          /* per returned tensor, as returned */
    size_t *out_item;              /* bytes of one micro-batch result */
    popc_output_mode *ret_mode;    /* per returned tensor */
    int64_t *ret_period;
    int64_t micro_batches;         /* DI x GA per replica */
    double loss_scaling;           /* value in the plan's gradient seed */
    void **synth;                  /* [replica * n_inputs + i]: generated
                                      inputs (enableSyntheticData); NULL */
    int64_t finite_steps;          /* automatic loss scaling: steps since
                                      the scale last changed */
    int64_t skipped_steps;         /* ... and steps skipped (non-finite) */
};

/* Slot of returned tensor i: graph output i, then anchor i - n_outputs. */
static inline int popci_ret_slot(const popci_plan *p, int i)
{
    return i < p->n_outputs ? p->output_slots[i]
                            : p->anchor_slots[i - p->n_outputs];
}

/* enableSyntheticData (core/runtime/synthetic.c): generate every replica's inputs
** once; free them. */
popc_status popci_synthetic_init(popci_exec *e);
void popci_synthetic_free(popci_exec *e);

#endif /* POPC_EXEC_PRIV_H */
