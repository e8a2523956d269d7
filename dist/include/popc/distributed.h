/* distributed.h - runs over several processes (PopTorch's
** Options.Distributed, PopRun/PopDist), since 0.3.0.
**
** Launch N copies of a program (`mpirun -np N prog`, or `popc launch -n N
** popc train RUN.ini`). Each process ("rank") runs replicationFactor local
** replicas, N x replicationFactor in all. Options read
** Distributed.numProcesses and Distributed.processId from the launcher's
** environment (OMPI_COMM_WORLD_SIZE / _RANK) or from
** Distributed.configureProcessId; a data loader gives each rank its
** contiguous share of the (shuffled) dataset, as PopTorch's does.
**
** A training model whose options say numProcesses > 1 joins the process
** group on its first compile (through a "collectives" plugin, see
** popc/collectives.h) and then:
** - checks at compile that every rank compiles the same graph with the
**   same options, optimizer and inputs (POPC_EDISTRIBUTED otherwise);
** - starts every rank from rank 0's weights;
** - reduces the gradients of every replica of every rank in global replica
**   order (rank 0's replicas first), so N processes x R replicas give the
**   bits of one process with N x R replicas;
** - makes BatchNorm-style buffers follow global replica 0 (rank 0) when
**   broadcastBuffers is on.
** Inference models never communicate.
**
** Faults: a collective that waits longer than the option
** collectivesTimeout (seconds) for another rank fails with
** POPC_EDISTRIBUTED naming that rank. A program that gets an error on one
** rank calls popc_distributed_abort() so that the others stop at once
** instead of waiting for it.
**
** Thread safety: the popc_distributed_* functions may be called from any
** thread (each says what else may run meanwhile); the model functions
** follow popc/status.h (one model is not thread-safe).
**
** The conventions of popc/status.h (ownership, status codes, threads)
** apply.
*/
#ifndef POPC_DISTRIBUTED_H
#define POPC_DISTRIBUTED_H

#include <stdint.h>

#include "popc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct popc_model;

/* This process's rank once a model joined the group; 0 before (or
** without) a distributed run. Thread-safe (reads the process-wide group
** under its lock). Since 0.3.0. */
POPC_API int popc_distributed_rank(void);

/* The number of ranks once a model joined the group; 1 before (or
** without) a distributed run. Thread-safe (reads the process-wide group
** under its lock). Since 0.3.0. */
POPC_API int popc_distributed_size(void);

/* Stop every rank now with exit_code (MPI_Abort under MPI): the whole
** process exits. Returns only when this process has not joined a group.
** Thread-safe: takes no lock, so a thread can call it while another is
** inside a collective. Since 0.3.0. */
POPC_API void popc_distributed_abort(int exit_code);

/* Leave the group cleanly (every rank calls it once, after its last
** distributed model is freed): closes the process-wide collectives
** (MPI_Finalize when popc started MPI). popc also leaves at process exit.
** MPI cannot start again, so no distributed model may compile after it.
** Thread-safe against popc_distributed_rank/size, but no distributed
** model may be in use on another thread. Since 0.3.0. */
POPC_API void popc_distributed_finalize(void);

/* Seconds this rank spent in the cross-rank gradient reduction and buffer
** broadcasts since the model was compiled (waiting for slower ranks
** included), and the optimizer steps that took them (*steps, may be
** NULL). 0 for a model that does not communicate or is NULL. Not
** thread-safe with a run of m on another thread. Since 0.3.0. */
POPC_API double popc_model_collective_seconds(const struct popc_model *m,
                                              int64_t *steps);

/* A checksum of the model's weights, optimizer state and (with
** broadcastBuffers) buffers, checked equal on every rank of the model's
** group: POPC_OK and the checksum when all ranks hold identical bits.
** Collective: every rank must call it. Without a group it only computes
** the checksum. Returns POPC_OK, POPC_EINVAL (m or checksum NULL),
** POPC_ESTATE (m not compiled), POPC_EDISTRIBUTED (a rank differs, naming
** the first, or did not answer in time), POPC_ENOMEM. Not thread-safe on
** one model. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_model_check_ranks_agree(
    struct popc_model *m, uint64_t *checksum);

#ifdef __cplusplus
}
#endif
#endif /* POPC_DISTRIBUTED_H */
