/* file.h - writing files the way popc writes its own.
**
** popc never leaves a half-written file behind: the data goes to a
** temporary file next to the target, named "<path>.tmp-<pid>.XXXXXX"
** (created with O_EXCL, so a symlink planted there is never followed), is
** flushed and fsync'ed, then renamed over the target, and the directory
** is fsync'ed so that the rename survives a crash (a directory that cannot
** be synced is logged as a warning). On failure the temporary file is
** removed and the target is untouched.
**
** Temporary files and directories of processes that died before they could
** rename them ("<path>.tmp-<pid>..." whose <pid> no longer runs on this
** host) are removed the next time popc writes the same path.
**
** Since 0.1.0 unless a function says otherwise; the conventions of
** popc/status.h (ownership, status codes, threads) apply.
*/
#ifndef POPC_FILE_H
#define POPC_FILE_H

#include <stddef.h>

#include "popc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Replace path with len bytes of data (borrowed for the call),
** atomically; the new file has mode 0644. Leftovers of dead processes
** next to path are removed first. Returns POPC_OK, POPC_EINVAL (path NULL
** or empty, data NULL with len > 0), POPC_EIO (naming path and the
** failing step: create, write, fsync, rename), POPC_ENOMEM. Thread-safe
** for distinct paths; two writers of the same path each produce a
** complete file and the last rename wins. Since 0.2.0. */
POPC_API popc_status popc_write_file_atomic(const char *path,
                                            const void *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* POPC_FILE_H */
