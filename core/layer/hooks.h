/* layer/hooks.h - the table by which a layer above the core follows a
** model's compiles and runs (the graph optimizer opt/, the executable
** cache and popc_load in exe/, profiles and the compile progress in
** profile/), and the list of tables lib/layers.c defines.
**
** The core includes no header of those layers. It calls, in order, the
** tables of popci_layer_hooks, which the top of libpopc defines
** (lib/layers.c) and so links in. Each table keeps its per-model data in
** one slot of the model, which the hooks receive as `data`; a compile's
** own state (`state`) lives from compile_begin to compile_end. Any hook
** may be NULL. The hooks run on the thread that compiles or runs the
** model, under the model's rules (one thread). The core's side, which
** calls them, is core/runtime/hooks_priv.h.
*/
#ifndef POPC_LAYER_HOOKS_H
#define POPC_LAYER_HOOKS_H

#include <stdint.h>

#include "popc/model.h"
#include "popc/kernel.h"

/* Known to the layers that use them only by their own interfaces. */
typedef struct popci_plan_config popci_plan_config;
typedef struct popci_exec popci_exec;
typedef struct popci_trace popci_trace;
typedef struct popci_dist_port popci_dist_port; /* core/layer/dist.h */

/* Replica grouping of one weight (PopTorch's replicaGrouping): the weight
** has n_groups values; replica r holds value r % n_groups (orthogonal) or
** r / (R / n_groups) (consecutive). */
typedef struct popci_exec_grouping {
    const char *name;              /* the weight (borrowed) */
    int n_groups;                  /* divides R */
    int orthogonal;
} popci_exec_grouping;

/* What a layer may add to the executor's configuration (exec_config). */
typedef struct popci_exec_extras {
    int training;                  /* in */
    int64_t input_group;           /* in: inputReplicaGrouping's size G */
    int n_groupings;               /* in: replica-grouped weights ... */
    const popci_exec_grouping *groupings; /* ... (borrowed) */
    popci_dist_port *dist;         /* out: the ranks gradients are reduced
                                      over; NULL: this process only */
} popci_exec_extras;

/* The phases of a compile, in order. */
enum {
    POPCI_PHASE_VERIFY = 0,    /* inputs, options, backend lookup */
    POPCI_PHASE_PLAN,          /* verification, autodiff (training),
                                  schedule and memory plan: popci_plan_new */
    POPCI_PHASE_BACKEND,       /* the backend's compile, device buffers */
    POPCI_PHASES
};

/* Most tables popci_layer_hooks may hold. */
#define POPCI_MAX_LAYERS 6

typedef struct popci_model_hooks {
    const char *layer;         /* "exe": names the layer in messages */
    /* A compile of m began, before its inputs are checked. */
    popc_status (*compile_begin)(popc_model *m, void **data, void **state);
    /* The compile entered phase (POPCI_PHASE_*). */
    void (*compile_phase)(void *state, int phase);
    /* Before planning: may hand the planner a compiled graph in
    ** pc->compiled (a cache hit, a loaded executable); may create the
    ** compile's state here instead of in compile_begin. */
    popc_status (*compile_plan)(void **state, popc_model *m, void **data,
                                popc_tensor *const *inputs, int n,
                                popci_plan_config *pc);
    /* The executor e is built (m->exec is not set yet); a failure fails
    ** the compile. */
    popc_status (*compiled)(void *state, popc_model *m, void **data,
                            const popci_exec *e);
    /* The compile ended: ok (m is compiled) or failed. Frees state. */
    void (*compile_end)(void *state, popc_model *m, void **data, int ok);
    /* A run of m is about to start: the trace its executor fills, or
    ** NULL. The first table that returns one wins. */
    popci_trace *(*run_begin)(popc_model *m, void **data);
    /* A run that began at t0 succeeded (m->lat_* are set). */
    void (*run_end)(popc_model *m, void **data, double t0);
    /* m is being freed: release *data. */
    void (*model_free)(popc_model *m, void **data);
    /* Planning, after the input shapes are bound and the pipeline stages
    ** resolved, before autodiff: may rewrite g (the plan's own copy) at optimizationLevel
    ** level; values named in keep[0..n_keep) (anchors) must survive. */
    popc_status (*rewrite_graph)(popc_graph *g, int level, int training,
                                 const char *const *keep, int n_keep);
    /* The executor's configuration is being built from the plan of
    ** inputs[0..n); a failure fails the compile. */
    popc_status (*exec_config)(popc_model *m, void **data,
                               popci_exec_extras *x,
                               popc_tensor *const *inputs, int n);
    /* m holds its new executor (after compiled); a failure fails the
    ** compile, and m has no executor again. */
    popc_status (*adopted)(popc_model *m, void **data);
    /* The host copies of m's weights were refreshed from the device. */
    void (*weights_to_host)(popc_model *m, void **data);
    /* The device copies of m's weights were written from the host. */
    void (*weights_to_device)(popc_model *m, void **data);
    /* Weight i of m (popci_model_n_weights' order) was set on the host. */
    popc_status (*weight_set)(popc_model *m, void **data, int i);
    /* Planning, per node once its shapes are final: may pick a kernel
    ** (popci_plan_config.choose); the first table that picks one wins. */
    popc_status (*choose_kernel)(const popc_infer_ctx *ic, int selection,
                                 popc_op_def *derived,
                                 const popc_kernel_def **kernel);
} popci_model_hooks;

/* NULL-terminated, at most POPCI_MAX_LAYERS tables. */
extern const popci_model_hooks *const popci_layer_hooks[];

/* The run trace run_begin hands the executor (core/runtime/trace.c fills
** it): */
/* Absolute popci_exec_now() times of one run. A task is (replica r, phase
** p, micro-batch mb of the run). */
struct popci_trace {
    int64_t micro_batches;     /* per replica */
    int64_t windows;           /* optimizer steps per run (training) */
    int replicas, phases;
    double *task;              /* 4 per task, at ((mb * R + r) * P + p) */
    double *step;              /* 2 per optimizer step */
};

/* The slot of m that table h keeps its data in; NULL when h is not one
** of popci_layer_hooks (a table looks its own slot up outside a hook,
** e.g. popc_model_load_executable). */
void **popci_model_layer_data(popc_model *m, const popci_model_hooks *h);
const void *popci_model_layer_data_c(const popc_model *m,
                                     const popci_model_hooks *h);

#endif /* POPC_LAYER_HOOKS_H */
