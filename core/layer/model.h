/* layer/model.h - a model, as the layers above the core see it beside the
** public popc/model.h: its executor, the backend it runs on, and the
** optimizer state and host copy it keeps. The model itself is
** core/runtime/model_priv.h.
*/
#ifndef POPC_LAYER_MODEL_H
#define POPC_LAYER_MODEL_H

#include <stdint.h>

#include "popc/model.h"
#include "popc/options.h"
#include "popc/plugin.h"
#include "popc/registry.h"
#include "core/layer/exec.h"

/* POPC_ESTATE "Model has not been compiled or has been destroyed." unless
** m has an executor. */
popc_status popci_model_require_compiled(const popc_model *m);
/* m's executor, NULL when not compiled; borrowed. */
popci_exec *popci_model_executor(popc_model *m);
/* 1 for a training model, 0 for inference. */
int popci_model_training(const popc_model *m);
/* The options m was made with (frozen); borrowed. */
const popc_options *popci_model_options(const popc_model *m);
/* m's executor through a const model (reports read it); borrowed. */
const popci_exec *popci_model_executor_c(const popc_model *m);

/* The modelName option, or "training" / "inference" when it is None
** (PopTorch's default): names the model's profile subdirectory. */
const char *popci_model_name(const popc_model *m);
/* IPUs m holds: all replicas', rounded up as the device is attached. */
int64_t popci_model_reserved_ipus(const popc_model *m);
/* Seconds the last compile took, and the last run's total, host-to-
** device and compute wall times (set before the layers' run_end). */
double popci_model_compile_time(const popc_model *m);
void popci_model_latencies(const popc_model *m, double *total,
                           double *host, double *compute);

/* The backend a model with options o runs on: the one "backend" names or,
** when the option is left at its default and that backend is not loaded,
** the best loaded backend that runs (*stand_in = 1). NULL: none. */
const popc_backend_def *popci_backend_for(const popc_options *o,
                                          const popc_registry *reg,
                                          int *stand_in);

/* The device copies changed behind the model's back (e.g. another rank's
** values were written): the host copy is refreshed before it is read. */
void popci_model_host_stale(popc_model *m);

/* m's weights (initializers of its graph): count, name, the host tensor
** (borrowed; the graph's) and its index among the executor's plan
** weights (-1: not compiled, or not in the plan). */
int popci_model_n_weights(const popc_model *m);
const char *popci_model_weight_name(const popc_model *m, int i);
popc_tensor *popci_model_weight_host(const popc_model *m, int i);
int popci_model_weight_plan(const popc_model *m, int i);
/* The name of m's graph. */
const char *popci_model_graph_name(const popc_model *m);
/* The graph holding m's host weights (m's; borrowed), for the layers
** that restore weights into it (exe/: popc_model_load_executable), and
** the value id of weight i in it. */
popc_graph *popci_model_host_graph(const popc_model *m);
int popci_model_weight_value(const popc_model *m, int i);
/* The input signature m was compiled with: count, and input i as given
** (combined batch; data NULL or borrowed). */
int popci_model_n_inputs(const popc_model *m);
popc_view popci_model_input_sig(const popc_model *m, int i);
/* m's optimizer (training; NULL for inference); borrowed. */
const popc_optimizer *popci_model_optimizer(const popc_model *m);
/* Runs so far, which seed random ops: saved and restored with a
** model. */
uint64_t popci_model_runs(const popc_model *m);
void popci_model_set_runs(popc_model *m, uint64_t runs);

/* Device -> host for every weight when the device is newer. */
popc_status popci_model_sync_host(popc_model *m);
/* A host copy was changed in place: the device takes it before the next
** run. */
void popci_model_host_changed(popc_model *m);

/* Weight name's optimizer state holds n_groups states (replica groups),
** when m has a state; POPC_EINVAL (n_groups < 1), POPC_ENOMEM. */
popc_status popci_model_state_set_groups(popc_model *m, const char *name,
                                         int n_groups);

/* The optimizer state m holds (0 when none): entry i's name and a new
** copy of its value (the caller frees it). */
int popci_model_n_states(const popc_model *m);
const char *popci_model_state_name(const popc_model *m, int i);
popc_status popci_model_state_get(const popc_model *m, int i,
                                  popc_tensor **out);

#endif /* POPC_LAYER_MODEL_H */
