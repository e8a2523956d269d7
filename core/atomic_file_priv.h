/* atomic_file_priv.h - writing a file so that readers see the old file or
** the whole new one, never a half-written one.
**
** The data goes to a temporary file next to `path` (mkstemp, mode 0644),
** is flushed and fsync'ed, then renamed over `path`. On any failure the
** temporary file is removed and `path` is untouched.
*/
#ifndef POPC_ATOMIC_FILE_PRIV_H
#define POPC_ATOMIC_FILE_PRIV_H

#include <stddef.h>
#include <stdio.h>

#include "popc/status.h"

/* fill() writes the contents to f; a failure it reports (with a message)
** aborts the write. Write errors of f itself are caught afterwards.
** POPC_EIO names path and the failing step. */
popc_status popci_write_atomic(const char *path,
                               popc_status (*fill)(FILE *f, void *arg),
                               void *arg);

/* popci_write_atomic of len bytes. */
popc_status popci_write_file_atomic(const char *path, const void *data,
                                    size_t len);

#endif /* POPC_ATOMIC_FILE_PRIV_H */
