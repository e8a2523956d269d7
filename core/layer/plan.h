/* layer/plan.h - the layout of a compiled plan, for the layer that
** saves and reloads compiled models (exe/: executables and their cache).
**
** That layer needs the layout, not accessors: an executable stores the
** plan's own graph (forward and backward nodes), the gradient value of
** each trainable weight, the loss and seed values and the memory plan of
** the slots (docs/executable-format.md), and gives a compiled graph back
** to the planner through popci_plan_config.compiled, so a reloaded model
** plans exactly what was saved. Compiling a plan is
** core/runtime/plan_priv.h; the file is the plan's contract with exe/.
*/
#ifndef POPC_LAYER_PLAN_H
#define POPC_LAYER_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "popc/graph.h"
#include "popc/kernel.h"
#include "popc/plugin.h"
#include "core/layer/exec.h"

/* One initializer of the graph: a weight (trainable) or a buffer. */
typedef struct popci_plan_weight {
    const char *name;          /* borrowed from the plan's graph */
    int value;                 /* value id in the plan's graph */
    int slot;                  /* its WEIGHT slot */
    int trainable;
    int grad_slot;             /* slot of d(loss)/dw per micro-batch; -1 */
    int accum_slot;            /* GRAD slot accumulating it; -1 */
    int update_slot;           /* popc_graph_add_update source; -1 */
    int first_state, n_state;  /* STATE slots [first, first + n) */
} popci_plan_weight;

/* A plan graph from an earlier compile of the same graph and inputs (the
** executable cache, popc_load; exe/exe_cache.c checks that it fits):
** already shaped for the micro-batch and differentiated, with g's weights
** and the gradient seed holding cfg->loss_scaling. */
typedef struct popci_plan_compiled {
    popc_graph *graph;         /* taken by popci_plan_new (set to NULL) */
    int n_forward;             /* nodes of the model's graph */
    int loss;                  /* training: the final loss value */
    int seed;                  /* the loss-gradient seed constant; -1 */
    int n_wrt;                 /* trainable initializers, in value order */
    const int *wrt, *grads;    /* their ids and gradient ids (-1: none) */
    /* (optional) that compile's memory plan (popci_plan.arena_offset of
    ** the slots before optimizer state): used when the slot count agrees,
    ** else memory is planned again */
    int n_slots;
    const int64_t *arena_offset;
    size_t arena_bytes;
} popci_plan_compiled;

/* The execution strategy a plan is compiled for (helper "strategies",
** strategy/stages.c); all zero: PipelinedExecution, AutoStage SameAsIpu,
** AlwaysLive. Values are popc_execution_strategy, popc_auto_stage and
** popc_liveness; separate_backward is useSeparateBackwardPhase. */
typedef struct popci_strategy {
    int kind;
    int auto_stage;
    int liveness;
    int separate_backward;
} popci_strategy;

/* What to compile. inputs[i] gives dtype and the micro-batch shape of
** graph input i (data ignored). */
typedef struct popci_plan_config {
    int training;
    int n_inputs;
    const popc_view *inputs;
    double loss_scaling;       /* gradient seed (training) */
    int replicas;
    /* (optional) use this instead of shape inference, verification and
    ** autodiff of g (helper "exe": executable cache and popc_load) */
    popci_plan_compiled *compiled;
    popci_strategy strategy;
    /* anchorTensor: names of values to keep to the end of each micro-batch
    ** and return (core/runtime/anchors_priv.h) */
    int n_anchors;
    const char *const *anchors;
    /* (optional) rewrites the plan's copy of the graph once its input
    ** shapes are bound (graph optimization, optimizationLevel) */
    popc_status (*rewrite)(popc_graph *g, int level, int training,
                           const char *const *keep, int n_keep);
    int opt_level;
    /* (optional) picks node ic's kernel at kernelSelection `selection`:
    ** fills *derived (ic->op with the kernel's functions) and *kernel, or
    ** leaves *kernel NULL for the op's own forward */
    popc_status (*choose)(const popc_infer_ctx *ic, int selection,
                          popc_op_def *derived,
                                 const popc_kernel_def **kernel);
    int kernel_selection;
} popci_plan_config;

typedef struct popci_plan {
    popc_plan pub;             /* handed to backends; arrays below */
    popc_graph *graph;         /* owned: clone with backward nodes */
    int n_graph_forward;       /* graph's nodes before autodiff (ids below
                                  are forward nodes) */
    popc_plan_slot *slots;
    popc_plan_node *nodes;
    int *node_io;              /* inputs and outputs of every node */
    popc_attrs *node_attrs;
    popc_op_def *derived;      /* per node: the op running its kernel */
    const popc_kernel_def **node_kernel; /* per node: pub's */
    char **slot_names;         /* owned names of slots not in the graph */
    int *value_slot;           /* graph value -> slot, -1 */
    int n_values;

    int n_inputs;
    int *input_slots;          /* per graph input */
    int n_outputs;
    int *output_slots;         /* per graph output */
    int n_anchors;
    int *anchor_slots;         /* per anchorTensor, returned after the
                                  outputs */
    int n_weights;
    popci_plan_weight *weights;
    int n_trainable;           /* weights with a gradient */
    int loss_slot;             /* training: the final loss; else -1 */
    int seed_value, seed_slot; /* the constant seeding the loss gradient
                                  (holds the loss scaling), its slot; -1 */
    double loss_scaling;       /* the seed's value at compile time */

    int64_t *arena_offset;     /* per slot; -1 when not in the arena */
    size_t arena_bytes;        /* peak activation bytes of one frame */
    size_t persistent_bytes;   /* weights + constants + grads + state */

    /* strategies (strategy/stages.c, strategy/recompute.c, strategy/offchip.c) */
    popci_strategy strategy;
    int n_recomputed;          /* forward nodes cloned into the backward
                                  pass (recomputation) */
    popc_dtype *store_dtype;   /* per slot, pub.store_dtype; NULL */
    unsigned char *slot_location; /* per slot, pub.slot_location; NULL */
    int *offchip_from;         /* per slot, pub.offchip_from/to; NULL */
    int *offchip_to;
    size_t stored_bytes;       /* activations live across the forward /
                                  backward boundary (training) */
    size_t offchip_bytes;      /* activations sent off chip (liveness) */
    size_t onchip_peak;        /* peak live activation bytes on chip */
    int n_inplace;             /* activations sharing their input's bytes
                                  (POPC_OP_INPLACE) */
} popci_plan;

/* Bytes of a slot's data (dtype size x elements). */
size_t popci_plan_slot_bytes(const popci_plan *p, int slot);

/* 1 when weight w's gradient may serve as its accumulator with one
** micro-batch per step: a float32 gradient of its own, not a buffer
** update. The executor then keeps no accumulator of its own: the
** optimizer reads the gradient in the arena, where it lives to the end of
** the step. */
int popci_plan_grad_in_accum(const popci_plan *p, int w);

/* The plan e runs; borrowed. */
const popci_plan *popci_exec_plan(const popci_exec *e);

#endif /* POPC_LAYER_PLAN_H */
