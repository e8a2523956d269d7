/* layer/exec.h - a compiled model's executor, as the layers above the
** core see it: its weights (one entry per plan weight, in plan order),
** their device copies and gradient accumulators, and the clock it times
** runs by. The executor itself is core/runtime/exec_priv.h.
*/
#ifndef POPC_LAYER_EXEC_H
#define POPC_LAYER_EXEC_H

#include <stddef.h>
#include <stdint.h>

typedef struct popci_exec popci_exec;

/* Seconds on a monotonic clock. */
double popci_exec_now(void);

/* Replicas of this process (R of replicationFactor). */
int64_t popci_exec_replicas(const popci_exec *e);
/* After each optimizer step, buffers take replica 0's values
** (broadcastBuffers). */
int popci_exec_broadcasts_buffers(const popci_exec *e);

/* Plan weights: count, name, elements, bytes on the device, and whether w
** is a buffer (updated by its op, e.g. running statistics, not
** trained). */
int popci_exec_n_weights(const popci_exec *e);
const char *popci_exec_weight_name(const popci_exec *e, int w);
int64_t popci_exec_weight_numel(const popci_exec *e, int w);
size_t popci_exec_weight_bytes(const popci_exec *e, int w);
int popci_exec_weight_is_buffer(const popci_exec *e, int w);

/* Device copy of plan weight w (replica 0 for per-replica buffers);
** borrowed. */
void *popci_exec_weight(popci_exec *e, int w);
/* Overwrite plan weight w on every replica (nbytes of the weight). */
void popci_exec_write_weight(popci_exec *e, int w, const void *data);

/* Replica groups of plan weight w (1: ungrouped); the device copy of
** group g (borrowed) and its overwrite on every replica of the group. */
int popci_exec_n_groups(const popci_exec *e, int w);
void *popci_exec_group_weight(popci_exec *e, int w, int g);
void popci_exec_write_group_weight(popci_exec *e, int w, int g,
                                   const void *data);

/* The float32 gradient accumulator of weight w on local replica r. */
float *popci_exec_accum(popci_exec *e, int r, int w);
/* What the optimizer step does to weight w's gradient once it is summed
** over every replica (len elements in g): float16 rounding of a float16
** accumulation, then the scale of the mean reduction and loss scaling. */
void popci_exec_finish_sum(const popci_exec *e, int w, float *g,
                           int64_t len);

#endif /* POPC_LAYER_EXEC_H */
