/* model.h - inference and training models (PopTorch's inferenceModel and
** trainingModel).
**
** A model owns a copy of the graph and of the options (frozen in the
** caller's object too). It compiles on the first run or on
** popc_model_compile, with input shapes and dtypes fixed by the tensors
** given (the combined batch: dim 0 = B x deviceIterations x
** (replicationFactor / inputGroupSize) x gradientAccumulation). A run takes
** the whole combined batch and returns outputs per the output mode.
** Runtime mismatches give PopTorch's texts ("Shape mismatch for x: ...").
** popc_model_destroy frees the executable (training: weights and optimizer
** state are first copied to the host); the next run recompiles.
**
** A model is used by one thread at a time.
**
** Since 0.1.0 unless a function says otherwise; the conventions of
** popc/status.h (ownership, status codes, threads) apply.
*/
#ifndef POPC_MODEL_H
#define POPC_MODEL_H

#include <stdint.h>
#include "popc/status.h"
#include "popc/tensor.h"
#include "popc/graph.h"
#include "popc/options.h"
#include "popc/optimizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct popc_model popc_model; /* opaque */

/* A new inference model of g in *out, owned by the caller, who frees it
** with popc_model_free(). The graph is copied; opts may be NULL
** (defaults) and is frozen when the call succeeds (a failure leaves it
** as it was).
** Since 0.1.0. Threads: g is only read; opts is written, so no other
** thread may use it during the call. POPC_OK, POPC_EINVAL (g or out NULL,
** gradientAccumulation != 1), POPC_EIO (logDir), POPC_ENOMEM, or the
** codes of popc_options_new (opts NULL). */
POPC_API POPC_NODISCARD popc_status popc_model_new_inference(
    const popc_graph *g, popc_options *opts, popc_model **out);
/* A new training model of g in *out, owned by the caller, who frees it
** with popc_model_free(). The graph must have one final loss
** (identity_loss or a loss op); g and opts as for popc_model_new_inference.
** optimizer is copied and may be NULL: SGD with lr 0.01 (PopTorch's
** default). Since 0.1.0. Threads: g and optimizer are only read; no other
** thread may use opts during the call. POPC_OK, POPC_EINVAL (g or out
** NULL), POPC_ECOMPILE (not one final loss), POPC_EIO (logDir),
** POPC_ENOMEM, or the codes of popc_options_new and popc_optimizer_new. */
POPC_API POPC_NODISCARD popc_status popc_model_new_training(
    const popc_graph *g, popc_options *opts, const popc_optimizer *optimizer,
    popc_model **out);
/* popc_model_free and popc_model_destroy side by side:
**   free releases the model and everything it owns (graph copy, options,
**   optimizer, executable, device, weights and optimizer state). Nothing is
**   copied back: read weights first (popc_model_get_weight or
**   popc_model_copy_weights_to_host) if they are wanted. NULL-safe.
**   destroy is PopTorch's destroy(): it releases only the compiled
**   executable and the device. A training model first copies its weights
**   and optimizer state to the host, where they stay readable; the model
**   remains, and the next popc_model_run compiles it again.
** A program ends with free; destroy is for giving the device up while
** keeping the model.
** popc_model_free: Since 0.1.0. Not thread-safe: no other thread may use m,
** or a model that shares weights with m, during the call. Everything
** borrowed from m becomes invalid. */
POPC_API void popc_model_free(popc_model *m); /* NULL-safe */

/* Compile for these inputs (one per graph input, in order; borrowed):
** their shapes and dtypes are fixed until popc_model_destroy. On a
** compiled model the call is ignored with a warning and returns POPC_OK.
** Since 0.1.0. Not thread-safe on one model. POPC_OK, POPC_EINVAL (m NULL,
** inputs that do not fit the graph or options), POPC_ECONFIG (the
** backend option names no registered backend, listing those there are;
** since 0.3.0, before POPC_ENOTFOUND; a useIpuId the device list lacks
** or the backend models no device for), POPC_ECOMPILE, POPC_EPERM (foreign code), POPC_EUNSUPPORTED, POPC_EIO,
** POPC_ENOMEM, or a backend's or collectives' code (POPC_EBACKEND, ...). */
POPC_API POPC_NODISCARD popc_status popc_model_compile(popc_model *m,
    popc_tensor *const *inputs, int n_inputs);
/* Nonzero when m holds an executable: 0 for NULL m, before the first
** compile and after popc_model_destroy. Since 0.1.0. Not thread-safe
** while another thread compiles, runs or destroys m. */
POPC_API int popc_model_is_compiled(const popc_model *m);

/* Run one combined batch. outputs[0..n_outputs) receive new tensors owned
** by the caller (one per graph output; free each with popc_tensor_free);
** they are NULL after a failure. Compiles first if needed; re-attaches a
** detached model. Since 0.1.0. Not thread-safe on one model, nor on the
** training model it shares weights with. POPC_OK, POPC_EINVAL (m NULL,
** inputs or outputs do not match), POPC_ESTATE (offline device, or a
** backend that only compiles), the codes of popc_model_compile, or the
** run's (POPC_EBACKEND, POPC_ECALLBACK, POPC_EDISTRIBUTED, POPC_ENOMEM). */
POPC_API POPC_NODISCARD popc_status popc_model_run(popc_model *m,
    popc_tensor *const *inputs, int n_inputs, popc_tensor **outputs,
    int n_outputs);

/* PopTorch's destroy(); see popc_model_free above. Since 0.1.0. Not
** thread-safe on one model. Returns POPC_OK (also for NULL m or a model
** that is not compiled) or the status of the copy to the host, which
** cannot fail at present. */
POPC_API POPC_NODISCARD popc_status popc_model_destroy(popc_model *m);

/* PopTorch's detachFromDevice / attachToDevice. A compiled
** model is attached unless its connectionType is Never. Detaching a
** training model first copies its weights and optimizer state to the
** host; attaching copies the host weights to the device. A run on a
** detached model re-attaches. Errors (POPC_ESTATE): "Model has not been
** compiled or has been destroyed.", "Device is not attached", "Device is
** already attached", "Trying to attach to an offline device
** (ConnectionType.Never)".
** popc_model_detach_from_device: Since 0.1.0. Not thread-safe on one
** model. POPC_OK or POPC_ESTATE (m NULL, not compiled, destroyed, already
** detached, or offline: "Device is not attached"). */
POPC_API POPC_NODISCARD popc_status popc_model_detach_from_device(
    popc_model *m);
/* Attach a detached model again (see above). Since 0.1.0. Not
** thread-safe on one model. POPC_OK or POPC_ESTATE (m NULL, not compiled
** or destroyed, already attached, or offline). */
POPC_API POPC_NODISCARD popc_status popc_model_attach_to_device(
    popc_model *m);
/* Nonzero when m is compiled, not detached and not offline (0 for NULL
** m). Since 0.1.0. Not thread-safe while another thread changes m. */
POPC_API int popc_model_is_attached(const popc_model *m);

/* Weights. Copy the device's weights to the host copies that
** popc_model_get_weight reads. Since 0.1.0. Not thread-safe on one model.
** POPC_OK or POPC_ESTATE (m NULL, not compiled, or destroyed). */
POPC_API POPC_NODISCARD popc_status popc_model_copy_weights_to_host(
    popc_model *m);
/* Copy the host weights to the device. Host values win: training done on
** the device since the last copy to the host is dropped, as in PopTorch.
** Since 0.1.0. Not thread-safe on one model. POPC_OK or POPC_ESTATE
** (m NULL, not compiled, or destroyed). */
POPC_API POPC_NODISCARD popc_status popc_model_copy_weights_to_device(
    popc_model *m);
/* Host copy of a weight or buffer (syncs from the device if dirty).
** Borrowed, valid until the next run, popc_model_set_weight or
** popc_model_free; clone it to keep it. Since 0.1.0. Not thread-safe on
** one model (it may write the host copy). POPC_OK, POPC_EINVAL (m or out
** NULL), POPC_ENOTFOUND (no such weight). */
POPC_API POPC_NODISCARD popc_status popc_model_get_weight(popc_model *m,
    const char *name, const popc_tensor **out);
/* Replace a host weight (t is copied; same dtype and shape); reaches the
** device on the next run or popc_model_copy_weights_to_device.
** Since 0.1.0. Not thread-safe on one model. POPC_OK, POPC_EINVAL (m or t
** NULL, other dtype or shape), POPC_ENOTFOUND (no such weight),
** POPC_ENOMEM. */
POPC_API POPC_NODISCARD popc_status popc_model_set_weight(popc_model *m,
    const char *name, const popc_tensor *t);
/* The last run's value of an anchored tensor (option anchorTensor,
** "SHORT=LONG[@MODE]"), by its short name, shaped by its output mode like
** an output. Borrowed, valid until the next run. POPC_OK, POPC_EINVAL
** (NULL argument), POPC_ENOTFOUND (PopTorch's "No tensor with name X
** found.") for an unknown name, POPC_ESTATE before the first run.
** Since 0.2.0. Not thread-safe while another thread runs m. */
POPC_API POPC_NODISCARD popc_status popc_model_get_anchored_tensor(
    const popc_model *m, const char *short_name, const popc_tensor **out);

/* Number of weights and buffers (0 for NULL m). Since 0.1.0. Not
** thread-safe on one model (popc/status.h). */
POPC_API int popc_model_n_tensors(const popc_model *m);
/* Name of weight or buffer i (0 <= i < popc_model_n_tensors), NULL when
** out of range. Borrowed, valid while m lives. Since 0.1.0. Not
** thread-safe on one model (popc/status.h). */
POPC_API const char *popc_model_tensor_name(const popc_model *m, int i);
/* Inference model reading a training model's weights (synchronised before
** each run, as PopTorch does for models sharing a user model). Both stay
** the caller's and are linked until either is freed. Since 0.1.0. Not
** thread-safe: the pair then counts as one object for threads (a run of
** inference reads and syncs training; freeing either updates the other).
** POPC_OK, POPC_EINVAL (not an inference and a training model, no weight
** name in common, or a shared weight's dtype or shape differs),
** POPC_ENOMEM. */
POPC_API POPC_NODISCARD popc_status popc_model_share_weights(
    popc_model *inference, popc_model *training);

/* Optimizer (training): o is copied. Once m is compiled, the new one must
** have the same type and groups and may change only variable values.
** Since 0.1.0. Not thread-safe on one model; o is only read. POPC_OK,
** POPC_EINVAL (NULL argument, or o does not fit the compiled model),
** POPC_ESTATE (inference model), POPC_ENOMEM. */
POPC_API POPC_NODISCARD popc_status popc_model_set_optimizer(popc_model *m,
    const popc_optimizer *o);

/* Optimizer state (training), for checkpoints: named tensors
** "<weight>/<state>" (float32, the weight's shape; e.g.
** "fc1.weight/exp_avg") and "<weight>/step" (int64 scalar: updates applied
** to that weight). As in PopTorch, the state does not exist before the
** model is compiled: popc_model_get_optimizer_state fails with
** POPC_ESTATE until the first compile (or run). A state set before the
** compile (a resume, popc_checkpoint_load) is held, and the compile starts
** from it; the rest start at zeros or the optimizer's initial values.
** From the compile on, the state survives popc_model_destroy and
** recompiles. The names are the optimizer's and are listed at any time.
** popc_model_n_optimizer_states: the count; 0 for NULL m, an inference
** model, or when the state cannot be created. Since 0.1.0. Not
** thread-safe on one model (it may create the state). */
POPC_API int popc_model_n_optimizer_states(popc_model *m);
/* Name of state i; NULL when out of range or for an inference model.
** Borrowed, valid until the optimizer changes type (popc_model_set_optimizer)
** or m is freed. Since 0.1.0. Not thread-safe on one model. */
POPC_API const char *popc_model_optimizer_state_name(popc_model *m, int i);
/* A new tensor with the state's value in *out, owned by the caller, who
** frees it with popc_tensor_free(). Since 0.1.0. Not thread-safe on one
** model. POPC_OK, POPC_EINVAL (m or out NULL), POPC_ESTATE (inference
** model, or a model never compiled: "... the optimizer state does not
** exist before the compile ..."), POPC_ENOTFOUND (unknown name),
** POPC_ENOMEM. */
POPC_API POPC_NODISCARD popc_status popc_model_get_optimizer_state(
    popc_model *m, const char *name, popc_tensor **out);
/* Set a state from t (copied: float32 with the state's element count, or
** one int64 or int32 for "<weight>/step"); before the compile the value
** is held for it. Since 0.1.0. Not thread-safe
** on one model. POPC_OK, POPC_EINVAL (m or t NULL, wrong dtype or size),
** POPC_ESTATE (inference model), POPC_ENOTFOUND (unknown name),
** POPC_ENOMEM. */
POPC_API POPC_NODISCARD popc_status popc_model_set_optimizer_state(
    popc_model *m, const char *name, const popc_tensor *t);

/* Seconds of the last successful run (compilation excluded): host_ipu is
** the time spent outside the device (input checks and conversion, weight
** uploads, output buffers), compute the time running micro-batches and
** optimizer steps, total the wall time of popc_model_run. Each pointer may
** be NULL; all are 0 for NULL m. Since 0.1.0. Not thread-safe while
** another thread runs m. */
POPC_API void popc_model_latency(const popc_model *m, double *host_ipu,
                                 double *compute, double *total);
/* Seconds the last compilation took; 0 if m was never compiled or is
** NULL. Since 0.1.0. Not thread-safe while another thread compiles m. */
POPC_API double popc_model_compilation_time(const popc_model *m);
/* The loss scaling the next step uses: the optimizer's loss_scaling, or
** with Training.setAutomaticLossScaling the value the device adjusted
** (halved after each step skipped for inf or NaN gradients, doubled after
** 2000 finite steps). 1 for an inference model or NULL m. Since 0.2.0.
** Not thread-safe while another thread runs m. */
POPC_API double popc_model_loss_scaling(const popc_model *m);
/* Number of training steps taken (optimizer updates; skipped steps of
** automatic loss scaling are not counted); 0 for NULL m or an inference
** model. Since 0.1.0. Not thread-safe while another thread runs m. */
POPC_API int64_t popc_model_steps(const popc_model *m);

#ifdef __cplusplus
}
#endif
#endif /* POPC_MODEL_H */
