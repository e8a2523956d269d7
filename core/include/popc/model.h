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

/* The graph is copied; opts may be NULL (defaults) and is frozen. */
POPC_API POPC_NODISCARD popc_status popc_model_new_inference(
    const popc_graph *g, popc_options *opts, popc_model **out);
/* optimizer may be NULL: SGD with lr 0.01 (PopTorch's default). The graph
** must have one final loss (identity_loss or a loss op). */
POPC_API POPC_NODISCARD popc_status popc_model_new_training(
    const popc_graph *g, popc_options *opts, const popc_optimizer *optimizer,
    popc_model **out);
/* popc_model_free and popc_model_destroy side by side:
**   free releases the model and everything it owns (graph copy, options,
**   optimizer, executable, device, weights and optimizer state). Nothing is
**   copied back: read weights first (popc_model_get_weight or
**   popc_model_copy_weights_to_host) if they are wanted. NULL-safe;
**   m must not be used by another thread.
**   destroy is PopTorch's destroy(): it releases only the compiled
**   executable and the device. A training model first copies its weights
**   and optimizer state to the host, where they stay readable; the model
**   remains, and the next popc_model_run compiles it again. POPC_OK on a
**   model that is not compiled; otherwise the status of the copy to host.
** A program ends with free; destroy is for giving the device up while
** keeping the model (since 0.1.0). */
POPC_API void popc_model_free(popc_model *m); /* NULL-safe */

/* Compile for these inputs (one per graph input, in order; borrowed). */
POPC_API POPC_NODISCARD popc_status popc_model_compile(popc_model *m,
    popc_tensor *const *inputs, int n_inputs);
POPC_API int popc_model_is_compiled(const popc_model *m);

/* Run one combined batch. outputs[0..n_outputs) receive new tensors owned
** by the caller (one per graph output). Compiles first if needed. */
POPC_API POPC_NODISCARD popc_status popc_model_run(popc_model *m,
    popc_tensor *const *inputs, int n_inputs, popc_tensor **outputs,
    int n_outputs);

/* See popc_model_free above. */
POPC_API POPC_NODISCARD popc_status popc_model_destroy(popc_model *m);

/* PopTorch's detachFromDevice / attachToDevice. A compiled
** model is attached unless its connectionType is Never. Detaching a
** training model first copies its weights and optimizer state to the
** host; attaching copies the host weights to the device. A run on a
** detached model re-attaches. Errors (POPC_ESTATE): "Model has not been
** compiled or has been destroyed.", "Device is not attached", "Device is
** already attached", "Trying to attach to an offline device
** (ConnectionType.Never)". */
POPC_API POPC_NODISCARD popc_status popc_model_detach_from_device(
    popc_model *m);
POPC_API POPC_NODISCARD popc_status popc_model_attach_to_device(
    popc_model *m);
POPC_API int popc_model_is_attached(const popc_model *m);

/* Weights. */
POPC_API POPC_NODISCARD popc_status popc_model_copy_weights_to_host(
    popc_model *m);
POPC_API POPC_NODISCARD popc_status popc_model_copy_weights_to_device(
    popc_model *m);
/* Host copy of a weight or buffer (syncs from the device if dirty).
** Borrowed, valid until the next run. */
POPC_API POPC_NODISCARD popc_status popc_model_get_weight(popc_model *m,
    const char *name, const popc_tensor **out);
/* Replace a host weight (copied); reaches the device on the next run or
** popc_model_copy_weights_to_device. */
POPC_API POPC_NODISCARD popc_status popc_model_set_weight(popc_model *m,
    const char *name, const popc_tensor *t);
/* Names of weights and buffers; borrowed. */
/* The last run's value of an anchored tensor (option anchorTensor,
** "SHORT=LONG[@MODE]"), by its short name, shaped by its output mode like
** an output. Borrowed, valid until the next run. POPC_ENOTFOUND (PopTorch's
** "No tensor with name X found.") for an unknown name, POPC_ESTATE before
** the first run. Since 0.2.0. */
POPC_API POPC_NODISCARD popc_status popc_model_get_anchored_tensor(
    const popc_model *m, const char *short_name, const popc_tensor **out);

POPC_API int popc_model_n_tensors(const popc_model *m);
POPC_API const char *popc_model_tensor_name(const popc_model *m, int i);
/* Inference model reading a training model's weights (synchronised before
** each run, as PopTorch does for models sharing a user model). */
POPC_API POPC_NODISCARD popc_status popc_model_share_weights(
    popc_model *inference, popc_model *training);

/* Optimizer (training). */
POPC_API POPC_NODISCARD popc_status popc_model_set_optimizer(popc_model *m,
    const popc_optimizer *o);

/* Optimizer state (training), for checkpoints: named tensors
** "<weight>/<state>" (float32, the weight's shape; e.g. "fc1.weight/exp_avg")
** and "<weight>/step" (int64 scalar: updates applied to that weight). The
** state is created on first use (zeros, or the optimizer's initial values)
** and survives popc_model_destroy and recompiles. The count is 0 for an
** inference model. Names are borrowed, valid until the optimizer changes
** type. get gives a new tensor (owned by the caller); set copies t (same
** element count). POPC_ENOTFOUND for an unknown name, POPC_ESTATE on an
** inference model, POPC_EINVAL for a wrong dtype or size. */
POPC_API int popc_model_n_optimizer_states(popc_model *m);
POPC_API const char *popc_model_optimizer_state_name(popc_model *m, int i);
POPC_API POPC_NODISCARD popc_status popc_model_get_optimizer_state(
    popc_model *m, const char *name, popc_tensor **out);
POPC_API POPC_NODISCARD popc_status popc_model_set_optimizer_state(
    popc_model *m, const char *name, const popc_tensor *t);

/* Seconds of the last successful run (compilation excluded): host_ipu is
** the time spent outside the device (input checks and conversion, weight
** uploads, output buffers), compute the time running micro-batches and
** optimizer steps, total the wall time of popc_model_run. Each pointer may
** be NULL. */
POPC_API void popc_model_latency(const popc_model *m, double *host_ipu,
                                 double *compute, double *total);
POPC_API double popc_model_compilation_time(const popc_model *m);
/* The loss scaling the next step uses: the optimizer's loss_scaling, or
** with Training.setAutomaticLossScaling the value the device adjusted
** (halved after each step skipped for inf or NaN gradients, doubled after
** 2000 finite steps). 1 for an inference model. Since 0.2.0. */
POPC_API double popc_model_loss_scaling(const popc_model *m);
/* Number of training steps taken (optimizer updates; skipped steps of
** automatic loss scaling are not counted). */
POPC_API int64_t popc_model_steps(const popc_model *m);

#ifdef __cplusplus
}
#endif
#endif /* POPC_MODEL_H */
