/* layer/atomic_file.h - writing a file so that readers see the old file or
** the whole new one, never a half-written one: for the core and the layers
** of libpopc (data/, run/, exe/, profile/), which write every file this
** way.
**
** The data goes to a temporary file next to `path` ("<path>.tmp-<pid>.
** XXXXXX" by mkstemp, mode 0644), is flushed and fsync'ed, then renamed
** over `path`, and the directory holding it is fsync'ed. On any failure the temporary file is removed and `path` is
** untouched. The public face is popc_write_file_atomic (popc/file.h).
*/
#ifndef POPC_LAYER_ATOMIC_FILE_H
#define POPC_LAYER_ATOMIC_FILE_H

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

/* Remove "<path>.tmp-<pid>[.*]" and "<path>.old-<pid>[.*]" files and
** directories left by processes that no longer run (kill(pid, 0) gives
** ESRCH). Best effort: errors are ignored. A pid reused by a live process
** keeps its leftover until that process ends. */
void popci_remove_stale_temps(const char *path);

/* mkdir -p: dir and its missing parents. POPC_EIO naming `what` (the
** option or command the directory is for) and the part that failed. */
popc_status popci_mkdir_p(const char *dir, const char *what);

/* rm -r path, without following symlinks; best effort. */
void popci_remove_tree(const char *path);

#endif /* POPC_LAYER_ATOMIC_FILE_H */
