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

/* A new optimizer of the plugin `name` ("sgd", "adam", ...) with its
** default values, in *out; the caller owns it and frees it with
** popc_optimizer_free(). Since 0.1.0. Thread-safe (looks name up in the
** process-wide registry, which loads on first use). POPC_OK, POPC_EINVAL
** (no name, or a broken plugin definition), POPC_ENOTFOUND when no plugin
** registers `name`, POPC_ENOMEM, or the codes of popc_registry_global. */
POPC_API POPC_NODISCARD popc_status popc_optimizer_new(const char *name,
    popc_optimizer **out);
/* Free o. A model keeps its own copy, so o may be freed once handed to
** one. Since 0.1.0. Not thread-safe: no other thread may use o meanwhile. */
POPC_API void popc_optimizer_free(popc_optimizer *o); /* NULL-safe */
/* Deep copy (values, groups, variable marks) in *out, owned by the
** caller, who frees it with popc_optimizer_free(). Since 0.1.0.
** Thread-safe while no thread changes o. POPC_OK, POPC_EINVAL (o NULL),
** POPC_ENOMEM. */
POPC_API POPC_NODISCARD popc_status popc_optimizer_clone(
    const popc_optimizer *o, popc_optimizer **out);
/* The plugin's name ("sgd"); "" for NULL o. Borrowed, valid while o
** lives. Since 0.1.0. Thread-safe (the name never changes). */
POPC_API const char *popc_optimizer_name(const popc_optimizer *o);

/* Set a value of the default group (group 0) and mark it variable (unless
** the plugin fixes it at compile time). Since 0.1.0. Not thread-safe on
** one object. POPC_OK, POPC_ENOTFOUND for an unknown name ("Unknown
** attribute x, allowed values: [...]"), POPC_EINVAL for NULL o or a bad
** value (NaN max_grad_norm, amsgrad), or the plugin's validate() code. */
POPC_API POPC_NODISCARD popc_status popc_optimizer_set(popc_optimizer *o,
    const char *name, double value);
/* Parameter groups: a new group matching weights whose name starts with
** one of the comma-separated prefixes; *group receives its index (>= 1).
** Groups inherit the default group's values. Since 0.1.0. Not
** thread-safe on one object. POPC_OK, POPC_EINVAL (NULL argument, an
** empty prefix, or a prefix already in a group; *group is then -1),
** POPC_ENOMEM. */
POPC_API POPC_NODISCARD popc_status popc_optimizer_add_group(
    popc_optimizer *o, const char *prefixes, int *group);
/* Set a value of one group (0: the default group); it is not marked
** variable. Global attributes can be set in group 0 only. Since 0.1.0.
** Not thread-safe on one object. POPC_OK, POPC_EINVAL (NULL o, no such
** group, a global attribute for group > 0, a bad value), POPC_ENOTFOUND
** (unknown name), or the plugin's validate() code. */
POPC_API POPC_NODISCARD popc_status popc_optimizer_set_group(
    popc_optimizer *o, int group, const char *name, double value);
/* Mark a value variable: popc_model_set_optimizer may then change it
** without recompiling. Since 0.1.0. Not thread-safe on one object.
** POPC_OK, POPC_EINVAL (o NULL), POPC_ENOTFOUND (unknown name, or one the
** plugin fixes at compile time). */
POPC_API POPC_NODISCARD popc_status popc_optimizer_mark_variable(
    popc_optimizer *o, const char *name);
/* Mark a value constant: it is fixed when a model compiles. Since 0.1.0.
** Not thread-safe on one object. POPC_OK, POPC_EINVAL (o NULL),
** POPC_ENOTFOUND (unknown name, or one the plugin fixes anyway). */
POPC_API POPC_NODISCARD popc_status popc_optimizer_mark_constant(
    popc_optimizer *o, const char *name);
/* A value of group (its own, else the default group's); NAN for NULL o,
** no such group or an unknown name. Since 0.1.0. Thread-safe while no
** thread changes o. */
POPC_API double popc_optimizer_get(const popc_optimizer *o, int group,
                                   const char *name);
/* Nonzero when the value is variable; 0 for NULL o or an unknown name.
** Since 0.1.0. Thread-safe while no thread changes o. */
POPC_API int popc_optimizer_is_variable(const popc_optimizer *o,
                                        const char *name);

#ifdef __cplusplus
}
#endif
#endif /* POPC_OPTIMIZER_H */
