/* pool.h - the ipumodel backend's persistent worker pool.
**
** A pool has `threads` workers: the thread that calls it (worker 0) and
** threads - 1 helper threads started by ipum_pool_new, which wait (spin
** briefly, then block) until they are given work; no thread is created
** after that.
**
** Workers are organised in groups. The thread calling the pool from
** outside leads the root group of all workers. ipum_pool_split runs the
** parts of one node on the caller's group and returns after all of them
** (the BSP barrier). ipum_pool_parallel cuts the caller's group into
** min(n, width) subgroups of width / k workers (at least 1); each
** subgroup's first worker takes tasks in index order and runs them as the
** leader of its subgroup, so a task that splits nodes (run_nodes) uses
** only its own subgroup: nested parallelism never deadlocks and never uses
** more threads than the pool has.
**
** Failures: a split or parallel call returns the status of the lowest
** failing part or task index (tasks after a failure may be skipped, tasks
** before it always run), and that worker's message is copied into the
** calling thread's error: an error is reported where the operation that
** failed was asked for, never lost on the thread it happened on.
**
** A pool is used by one outside thread at a time.
*/
#ifndef POPC_BACKENDS_IPUMODEL_POOL_H
#define POPC_BACKENDS_IPUMODEL_POOL_H

#include "popc/plugin.h"

typedef struct ipum_pool ipum_pool;
typedef popc_status (*ipum_task_fn)(void *arg, int i);

/* Install the host table; returns the table to give kernels, whose
** set_error also records the message for the thread joining the worker.
** Call once from the module's init(). */
const popc_host *ipum_pool_setup(const popc_host *host);

/* threads >= 1. POPC_ENOMEM, POPC_EBACKEND (a thread cannot start). */
popc_status ipum_pool_new(int threads, ipum_pool **out);
void ipum_pool_free(ipum_pool *p); /* NULL-safe; joins the helpers */

int ipum_pool_threads(const ipum_pool *p);
/* Workers of the calling thread's group (the whole pool from outside). */
int ipum_pool_width(const ipum_pool *p);

/* fn(arg, part) for part in [0, n) on the caller's group: the caller and
** the workers that are free take parts one at a time; returns when all
** are done. n may exceed the width (smaller parts balance the load when a
** worker is slow or descheduled). Above 2^20 - 1 parts, or on a group of
** one, the parts run in order on the caller. */
popc_status ipum_pool_split(ipum_pool *p, int n, ipum_task_fn fn, void *arg);

/* fn(arg, i) for i in [0, n), concurrently over subgroups. */
popc_status ipum_pool_parallel(ipum_pool *p, int n, ipum_task_fn fn,
                               void *arg);

#endif /* POPC_BACKENDS_IPUMODEL_POOL_H */
