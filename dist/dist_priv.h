/* dist_priv.h - the distribution layer (dist/): replica grouping of a
** model's weights (dist/replica_groups.c), the process-wide
** communicator (dist/dist_comm.c), the ordered gradient reduction across
** ranks (dist/dist_reduce.c), the model-level agreements (dist/
** dist_model.c: the same compiled model on every rank, the same starting
** weights, identical weights at the end) and the hooks by which it follows
** a training model's compiles (dist/dist_hooks.c, core/layer/hooks.h).
**
** The communicator is opened on the first compile of a training model
** whose options say Distributed.numProcesses > 1, and stays open until
** popc_distributed_finalize() (popc/distributed.h) or process exit: MPI
** allows one initialisation per process. Inference models never
** communicate: each rank classifies its own share of the data.
*/
#ifndef POPC_DIST_PRIV_H
#define POPC_DIST_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "popc/collectives.h"
#include "popc/options.h"
#include "core/layer/dist.h"
#include "core/layer/hooks.h"

typedef struct popci_comm popci_comm;

/* The communicator for options o (Distributed.numProcesses,
** Distributed.processId, collectives, collectivesTimeout). With one
** process it is the built-in single-process communicator. Borrowed:
** process-wide. Errors name the mismatch between the options and the
** launcher, or the missing collectives plugin. */
popc_status popci_comm_open(const popc_options *o, popci_comm **out);

int popci_comm_rank(const popci_comm *c);
int popci_comm_size(const popci_comm *c);

/* The calls of popc/collectives.h with the run's timeout; what names the
** operation in error messages ("the gradient reduction of step 12"). */
popc_status popci_comm_send(popci_comm *c, int to, const void *buf,
                            size_t bytes, const char *what);
popc_status popci_comm_recv(popci_comm *c, int from, void *buf, size_t bytes,
                            const char *what);
popc_status popci_comm_bcast(popci_comm *c, int root, void *buf,
                             size_t bytes, const char *what);
popc_status popci_comm_allgather(popci_comm *c, const void *mine, void *all,
                                 size_t bytes, const char *what);

/* Every rank's 64-bit value, compared: POPC_OK when all equal rank 0's,
** otherwise an error "<what> differs on rank K from rank 0's; <fix>". */
popc_status popci_comm_agree(popci_comm *c, uint64_t value, const char *what,
                             const char *fix);

/* ---- one model's distribution (dist/dist_hooks.c) ----------------------- */

typedef struct popci_rgroups popci_rgroups;

/* The layer's data of a model: its replica groups; training, its port to
** the executor (first, so that the port is the model's state), its
** communicator and figures. It outlives the model's executor. */
typedef struct popci_dist_model {
    popci_dist_port port;
    popci_rgroups *groups;     /* replicaGrouping; NULL: none */
    popci_comm *comm;          /* NULL: one process */
    float *buf;                /* the gradients of every trained weight,
                                  flat; NULL until the first step */
    int64_t len;               /* ... in floats */
    int64_t steps;             /* distributed steps run */
    double seconds;            /* ... and their time in collectives
                                  (waiting for slower ranks included) */
} popci_dist_model;

extern const popci_model_hooks popci_dist_hooks;

/* The distribution of m, NULL when it has none (one process, inference,
** not compiled). */
const popci_dist_model *popci_dist_of(const popc_model *m);
/* The layer's data of m, created when missing; POPC_ENOMEM. */
popc_status popci_dist_model_of(popc_model *m, popci_dist_model **out);

/* ---- replica_groups.c ---------------------------------------------------- */

void popci_rgroups_free(popci_rgroups *r); /* NULL-safe */
/* The groupings for the executor (borrowed from r, valid until the
** grouping changes); *n = 0 and NULL without any. */
const popci_exec_grouping *popci_rgroups_exec(popci_rgroups *r, int *n);
/* Device -> host copies of groups 1.. (after the graph's weights). */
void popci_rgroups_pull(popc_model *m, popci_rgroups *r);
/* Host -> device copies of groups 1.. (after the graph's weights). */
void popci_rgroups_push(popc_model *m, popci_rgroups *r);
/* After a compile: optimizer state per group, groups' values to the
** device. Errors of popci_model_state_set_groups. */
popc_status popci_rgroups_compiled(popc_model *m, popci_rgroups *r);
/* Weight `weight` (model index) was set on the host: every group takes
** the graph's new value. */
popc_status popci_rgroups_set_all(popc_model *m, popci_rgroups *r,
                                  int weight);

/* ---- dist_model.c (on a training model's compile) ----------------------- */

/* Before the executor is built: refuse what is not distributed yet, and
** check that every rank compiles the same model (popci_compile_key). */
popc_status popci_dist_check_config(const popc_model *m, popci_comm *c,
                                    const popci_exec_extras *x,
                                    popc_tensor *const *inputs, int n);
/* After compile: every rank takes rank 0's device weights. */
popc_status popci_dist_share_weights(popc_model *m, popci_comm *c);

/* ---- dist_reduce.c (the port's calls) ------------------------------------ */

popc_status popci_dist_reduce(popci_dist_port *self, popci_exec *e,
                              const int *trained, int n, int64_t step);
popc_status popci_dist_broadcast_buffers(popci_dist_port *self,
                                         popci_exec *e);

#endif /* POPC_DIST_PRIV_H */
