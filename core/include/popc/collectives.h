/* collectives.h - the plugin ABI of communication between the processes
** of a distributed run (since 0.3.0).
**
** A distributed run is N processes ("ranks"), each running
** replicationFactor local replicas (PopTorch's Options.Distributed; the
** launcher is usually mpirun). The core reduces gradients across every
** replica of every rank with a handful of point-to-point and collective
** calls, which a "collectives" plugin provides: the plugin registers a
** popc_collectives_def from its init() with host->register_collectives
** (read it only when POPC_HAS_FIELD(popc_host, size, register_collectives)).
** popc ships an MPI implementation (collectives/mpi.c) and a built-in
** single-process one used when numProcesses is 1.
**
** Rules every implementation follows:
** - open() joins the process group once per process; the core keeps the
**   context until popc_distributed_finalize() or process exit.
** - Every call that waits for another rank gives up after `timeout`
**   seconds (0: wait forever) with POPC_ETIMEOUT and a message naming the
**   rank it waited for when it knows it. A dead rank must never make the
**   others hang.
** - Messages between two ranks arrive in the order they were sent.
** - Calls come from one thread at a time (the core serialises them).
** - Errors are reported with host->set_error, as everywhere in the ABI.
*/
#ifndef POPC_COLLECTIVES_H
#define POPC_COLLECTIVES_H

#include <stddef.h>
#include <stdint.h>

#include "popc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct popc_collectives_def {
    uint32_t size;             /* sizeof(popc_collectives_def) */
    const char *name;          /* the `collectives` option selects by it */
    const char *description;
    /* How well this implementation fits the current process, 0: it cannot
    ** serve it (for example MPI outside an MPI launcher). With the option
    ** `collectives = auto`, the highest score wins. */
    int (*probe)(void);
    /* Join the process group: *rank in 0..*n_ranks-1. */
    popc_status (*open)(void **ctx, int *rank, int *n_ranks);
    /* Leave the group (a clean shutdown; every rank calls it). */
    void (*close)(void *ctx);
    /* Point to point, blocking until the buffer may be reused. */
    popc_status (*send)(void *ctx, int to, const void *buf, size_t bytes,
                        double timeout);
    popc_status (*recv)(void *ctx, int from, void *buf, size_t bytes,
                        double timeout);
    /* root's buf to every rank's buf. */
    popc_status (*bcast)(void *ctx, int root, void *buf, size_t bytes,
                         double timeout);
    /* all[r * bytes ...] receives rank r's mine, on every rank. */
    popc_status (*allgather)(void *ctx, const void *mine, void *all,
                             size_t bytes, double timeout);
    /* Stop every rank at once (a failed or timed-out rank calls it after
    ** printing its reason). Does not return. */
    void (*abort)(void *ctx, int exit_code);
} popc_collectives_def;

#ifdef __cplusplus
}
#endif
#endif /* POPC_COLLECTIVES_H */
