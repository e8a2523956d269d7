/* optimizer.h - the optimizer description handed to a training model.
**
** An optimizer names a registered optimizer plugin ("sgd", "adam", "adamw",
** "rmsprop", "lamb") and holds hyper-parameter values for the default group
** and for extra parameter groups. As in PopTorch, a value passed explicitly
** (popc_optimizer_set) is *variable*: it can change with
** popc_model_set_optimizer without recompiling; values left at their
** default are *constant* unless marked variable. Global attributes
** (loss_scaling, max_grad_norm, accum types, use_combined_accum,
** bias_correction, centered, use_tf_variant) apply to every group.
**
** Since 0.1.0 unless a function says otherwise; the conventions of
** popc/status.h (ownership, status codes, threads) apply.
*/
#ifndef POPC_OPTIMIZER_H
#define POPC_OPTIMIZER_H

#include "popc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct popc_optimizer popc_optimizer; /* opaque */

/* POPC_ENOTFOUND when no plugin registers `name`. */
POPC_API POPC_NODISCARD popc_status popc_optimizer_new(const char *name,
    popc_optimizer **out);
POPC_API void popc_optimizer_free(popc_optimizer *o); /* NULL-safe */
POPC_API POPC_NODISCARD popc_status popc_optimizer_clone(
    const popc_optimizer *o, popc_optimizer **out);
POPC_API const char *popc_optimizer_name(const popc_optimizer *o);

/* Set a value of the default group (group 0) and mark it variable.
** POPC_ENOTFOUND for an unknown name ("Unknown attribute x, allowed values:
** [...]"), POPC_EINVAL for a bad value (NaN max_grad_norm, amsgrad). */
POPC_API POPC_NODISCARD popc_status popc_optimizer_set(popc_optimizer *o,
    const char *name, double value);
/* Parameter groups: a new group matching weights whose name starts with
** one of the comma-separated prefixes; *group receives its index (>= 1).
** Groups inherit the default group's values. */
POPC_API POPC_NODISCARD popc_status popc_optimizer_add_group(
    popc_optimizer *o, const char *prefixes, int *group);
POPC_API POPC_NODISCARD popc_status popc_optimizer_set_group(
    popc_optimizer *o, int group, const char *name, double value);
POPC_API POPC_NODISCARD popc_status popc_optimizer_mark_variable(
    popc_optimizer *o, const char *name);
POPC_API POPC_NODISCARD popc_status popc_optimizer_mark_constant(
    popc_optimizer *o, const char *name);
POPC_API double popc_optimizer_get(const popc_optimizer *o, int group,
                                   const char *name);
POPC_API int popc_optimizer_is_variable(const popc_optimizer *o,
                                        const char *name);

#ifdef __cplusplus
}
#endif
#endif /* POPC_OPTIMIZER_H */
