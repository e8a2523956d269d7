/* log_priv.h - a per-thread copy of the log: while a thread has a file set,
** every line it logs (after the level filter and maxRepeatLogs) is also
** appended there. Models use it for their logDir file. */
#ifndef POPC_LOG_PRIV_H
#define POPC_LOG_PRIV_H

#include <stdio.h>

/* Sets this thread's file (NULL: none) and returns the previous one, so
** that nested scopes restore it. The file is borrowed. */
FILE *popci_log_swap_thread_file(FILE *f);

/* Distributed runs: every line names this process's rank (-1: none).
** Read from mpirun's environment at start; set again on joining a group. */
void popci_log_set_rank(int rank);

#endif /* POPC_LOG_PRIV_H */
