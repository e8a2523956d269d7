/* layer/dist.h - how a distribution layer (dist/) takes part in a
** training model's runs: the port the executor reduces gradients through,
** and the rank the core's log names.
**
** The layer hands the port to the compile in its exec_config hook
** (core/layer/hooks.h); the executor borrows it for the executor's life,
** so it must outlive the executor (the model's layer data does: the
** model frees its executor before its layers' data).
*/
#ifndef POPC_LAYER_DIST_H
#define POPC_LAYER_DIST_H

#include <stdint.h>

#include "popc/status.h"
#include "core/layer/exec.h"

typedef struct popci_dist_port popci_dist_port;

struct popci_dist_port {
    int rank, size;            /* this process among size (> 1) processes */
    /* The cross-replica reduction over every rank: the accumulators of the
    ** n weights trained[] are summed in global replica order, finished
    ** (popci_exec_finish_sum) and left in local replica 0's accumulators
    ** on every rank. step names the optimizer step in error messages. */
    popc_status (*reduce)(popci_dist_port *self, popci_exec *e,
                          const int *trained, int n, int64_t step);
    /* broadcastBuffers across ranks: rank 0's replica 0 buffers to
    ** replica 0 of every rank (the executor then copies them on). */
    popc_status (*broadcast_buffers)(popci_dist_port *self, popci_exec *e);
};

/* Log lines carry "[rank K]" from now on; -1: none (one process). */
void popci_log_set_rank(int rank);

#endif /* POPC_LAYER_DIST_H */
