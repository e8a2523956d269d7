/* layer/optimizer.h - what the runtime and the layers above the core
** (exe/ saves and checks optimizers, the tests drive them) may ask of a
** popc_optimizer beside the public popc/optimizer.h. Its representation
** stays in core/optimizer/optimizer_priv.h.
**
** A popc_optimizer holds hyper-parameter values per group; the maths lives
** in the optimizer plugin (popc_optim_def). The runtime:
**   1. at compile: group_of() for each trained weight, n_state() state
**      arrays of the weight's size, init_state() on them, state_name() for
**      their keys; loss_scaling() seeds the loss gradient, max_grad_norm()
**      enables clipping;
**   2. per optimizer step: unscale the reduced gradients, clip them with
**      clip_by_global_norm() over all weights, then apply() per weight
**      (or hypers() once per group and def->step() per weight);
**   3. on popc_model_set_optimizer: check_replacement(compiled, next).
** All functions only read the optimizer, so they may run concurrently.
*/
#ifndef POPC_LAYER_OPTIMIZER_H
#define POPC_LAYER_OPTIMIZER_H

#include <stdint.h>

#include "popc/optimizer.h"
#include "popc/plugin.h"

/* Most hyper-parameters a definition may declare. */
#define POPCI_OPTIM_MAX_HYPERS 64

/* An optimizer for a definition that need not be in the global registry
** (tests, embedded plugins); def must outlive the optimizer. POPC_EINVAL
** for a malformed definition, POPC_ENOMEM. */
popc_status popci_optimizer_new_def(const popc_optim_def *def,
                                    popc_optimizer **out);

/* Borrowed; lives while the plugin is loaded. */
const popc_optim_def *popci_optimizer_def(const popc_optimizer *o);

int popci_optimizer_group_count(const popc_optimizer *o);

/* Group of a weight: the group with the longest prefix of weight_name
** (0, the default group, when none matches). */
int popci_optimizer_group_of(const popc_optimizer *o, const char *weight_name);

/* Index of a hyper-parameter in def->hypers, -1 if unknown. */
int popci_optimizer_hyper_index(const popc_optimizer *o, const char *name);

/* The values of group `group`, in definition order, into values[0 ..
** def->n_hypers). POPC_EINVAL for a bad group, a required value never set
** ("lr" of sgd) or a combination def->validate refuses. */
popc_status popci_optimizer_hypers(const popc_optimizer *o, int group,
                                   double *values);

/* The "loss_scaling" value, 1.0 if the optimizer has none. */
double popci_optimizer_loss_scaling(const popc_optimizer *o);
/* The "max_grad_norm" value, INFINITY (no clipping) if it has none. */
double popci_optimizer_max_grad_norm(const popc_optimizer *o);

/* State arrays a weight of `group` needs. Variable hyper-parameters may
** change later, so the definition is also asked with them set to NaN
** ("any value") and the larger count wins: e.g. sgd with a variable
** momentum of 0 still gets its velocity, as PopART gives it one. */
int popci_optimizer_n_state(const popc_optimizer *o, int group);
/* Name of state array `index` ("exp_avg"); borrowed, NULL if out of range. */
const char *popci_optimizer_state_name(const popc_optimizer *o, int group,
                                       int index);
/* The dtype the device stores state array `index` of `group` in
** (def->state_dtype; float32 without one). float16 state is kept as
** float32 arrays holding half values: step() rounds them. */
popc_dtype popci_optimizer_state_dtype(const popc_optimizer *o, int group,
                                      int index);
/* The gradient accumulator's dtype (def->accum_dtype, PopTorch's
** accum_type); float32 without one. */
popc_dtype popci_optimizer_accum_dtype(const popc_optimizer *o);

/* Initial values of the n_state() arrays of one weight (zeros unless the
** definition says otherwise, e.g. rmsprop's TF variant starts at 1). */
void popci_optimizer_init_state(const popc_optimizer *o, int group,
                                float *const *state, int64_t n);

/* May `next` replace the optimizer a model was compiled with, without
** recompiling? POPC_OK or POPC_EINVAL with PopART's texts: "Clip norm
** settings do not match.", "Can not replace optimizer of type A with new
** optimizer of type B", "Problem with learning rates. Values are constant
** but do not match.", "Problem with X. Can not replace a constant value
** with a non constant value.", "... this does not require a velocity
** tensor, but other does.", and fixed attributes that differ. */
popc_status popci_optimizer_check_replacement(const popc_optimizer *compiled,
                                              const popc_optimizer *next);

/* One weight's update: the hyper-parameters of its group, then def->step.
** grad is final (unscaled, clipped); step counts this weight's updates
** from 1; state holds n_state() arrays of n floats. */
popc_status popci_optimizer_apply(const popc_optimizer *o,
                                  const char *weight_name, int64_t step,
                                  float *w, const float *grad,
                                  float *const *state, int64_t n);

/* Scales all gradients by max_norm / max(max_norm, ||all grads||) (PopART's
** clipping; no-op when max_norm is infinite or the norm is within it).
** Returns the global norm before clipping (accumulated in double). */
double popci_clip_by_global_norm(float *const *grads, const int64_t *n,
                                 int n_tensors, double max_norm);

/* ---- the stored form, for the executable format (exe/) ----------------- */
/* An executable saves an optimizer as it stands and loads it back exactly:
** the variable flags and each group's prefixes, values and own flags. The
** raw reads and writes below do no validation; the writer of a value is
** the one that checked it (the optimizer the file was saved from). */

/* Hyper-parameters (def->n_hypers). */
int popci_optimizer_n_hypers(const popc_optimizer *o);
/* Whether hyper h was marked variable / mark it so. */
int popci_optimizer_is_variable(const popc_optimizer *o, int h);
void popci_optimizer_set_variable(popc_optimizer *o, int h, int variable);
/* Prefixes of group g (0 for the default group); prefix i is borrowed. */
int popci_optimizer_n_prefixes(const popc_optimizer *o, int g);
const char *popci_optimizer_prefix(const popc_optimizer *o, int g, int i);
/* Hyper h's value stored on group g, and in *own whether g set it itself
** (always 1 for the default group); unlike popci_optimizer_hypers, a
** value group g inherits is not resolved. */
double popci_optimizer_group_value(const popc_optimizer *o, int g, int h,
                                   int *own);
/* Store a value read back from a file on group g (own ignored for the
** default group). */
void popci_optimizer_restore_value(popc_optimizer *o, int g, int h,
                                   double v, int own);

#endif /* POPC_LAYER_OPTIMIZER_H */
