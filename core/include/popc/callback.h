/* callback.h - the host callbacks of CPU ops (poptorch.CPU): the function
** a CPU op calls and its registration with the model that runs it. The
** executor of the core calls them while the model runs; the CPU op nodes
** themselves are added by popc_cpu_op (popc/custom.h).
**
** Since 0.1.0 unless a function says otherwise; the conventions of
** popc/status.h (ownership, status codes, threads) apply.
*/
#ifndef POPC_CALLBACK_H
#define POPC_CALLBACK_H

#include "popc/status.h"
#include "popc/types.h"
#include "popc/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A host callback. in[0..n_in) are the op's inputs (borrowed, read-only),
** out[0..n_out) its outputs with the dtypes and shapes given to
** popc_cpu_op, zero-filled before each call; write every element. Every
** dtype is passed as it is (no conversion to float32). Return POPC_OK, or
** an error status after popc_set_error() with the reason: the run stops
** with that message (status POPC_ECALLBACK) and a training model keeps
** the weights and optimizer state it had before the run. Callbacks of one
** model are called one at a time, on whatever thread runs the node; they
** must not call back into the model that runs them. */
typedef popc_status (*popc_callback_fn)(void *user, const popc_view *in,
                                        int n_in, const popc_view *out,
                                        int n_out);

/* Register fn (with user, borrowed) under id for the CPU ops of model m.
** The first registration of an ID wins: registering the same fn and user
** again is POPC_OK, another function under a taken ID is POPC_EEXIST (the
** first stays). May be called before or after compiling. The time spent
** in callbacks is counted in popc_model_latency's host_ipu figure (the
** device waits for the host meanwhile), not in compute.
** Returns POPC_OK, POPC_EEXIST, POPC_EINVAL (NULL argument; empty or
** non-printable id), POPC_ENOMEM. fn and user must stay valid while m
** lives. Not thread-safe on one model: register before m runs on another
** thread (the callbacks themselves are serialised). Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_model_register_callback(
    popc_model *m, const char *id, popc_callback_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif /* POPC_CALLBACK_H */
