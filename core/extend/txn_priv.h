/* txn_priv.h - undo for training runs that fail half-way (core/extend/txn.c).
**
** A training run commits as it goes: buffer updates (BatchNorm running
** statistics) after every micro-batch, and an optimizer step after every
** accumulated batch (device iteration). When a later op or CPU-op
** callback fails, the run must leave the model as it was before it
** started, so popci_exec_run takes a snapshot of what it may commit and
** rolls back on failure.
**
** A snapshot is taken only when a failure can follow a commit: several
** device iterations (weights, buffers and optimizer state), or buffer
** updates (the buffers only). With one device iteration and no buffers
** the single optimizer step is the run's last action, so nothing is
** copied.
*/
#ifndef POPC_TXN_PRIV_H
#define POPC_TXN_PRIV_H

#include "core/runtime/exec_priv.h"

typedef struct popci_txn popci_txn;

/* *out is NULL when nothing needs saving (inference included).
** POPC_ENOMEM. */
popc_status popci_txn_begin(popci_exec *e, popci_optstate *state,
                            popci_txn **out);
/* Put back what was saved. NULL-safe. */
void popci_txn_rollback(popci_txn *t);
void popci_txn_free(popci_txn *t); /* NULL-safe */

#endif /* POPC_TXN_PRIV_H */
