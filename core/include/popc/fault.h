/* fault.h - fault injection, for testing code that must survive running
** out of memory or disk.
**
** Every allocation libpopc and its plugins make goes through one place
** (the host allocator), and every file popc writes goes through one
** writer; both can be told to fail on purpose, as SQLite's test hooks do.
** A test arms a fault, runs anything (compile, run, train, save, load),
** disarms it, and checks that popc returned a clean error and left
** nothing broken behind. Allocations made by other libraries (libc's
** stdio, protobuf-c, OpenBLAS) are not counted.
**
** The counters are process-wide and atomic, so threads (the ipumodel
** backend's workers) count too. Not meant for production programs.
**
** Since 0.2.0; the conventions of popc/status.h (ownership, status codes,
** threads) apply.
*/
#ifndef POPC_FAULT_H
#define POPC_FAULT_H

#include "popc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* From now on, the nth allocation (1-based) returns NULL; with persist,
** every later one does too. nth = 0 disarms. Resets the count and the
** fired flag. Thread-safe: allocations on every thread count, so which
** one fails depends on their timing. Since 0.2.0. */
POPC_API void popc_fault_fail_alloc(long nth, int persist);
/* Allocations counted since the last popc_fault_fail_alloc (counted
** only while armed). Thread-safe. Since 0.2.0. */
POPC_API long popc_fault_alloc_count(void);
/* 1 when an armed allocation fault has made an allocation fail since
** the last popc_fault_fail_alloc. Thread-safe. Since 0.2.0. */
POPC_API int popc_fault_alloc_fired(void);

/* From now on, file writes fail with errno err (ENOSPC, EIO, ...): once
** a file popc writes would grow past after_bytes bytes, or, with
** after_bytes = -1, when the written data is flushed to disk (fsync).
** err = 0 disarms. Thread-safe, but a write running on another thread
** meanwhile may see a mix of the old and new settings. Since 0.2.0. */
POPC_API void popc_fault_fail_writes(int err, long long after_bytes);
/* fsync calls that succeeded on the files and directories popc wrote,
** since the process started (an armed sync fault fails the write after
** the real call, which still counts). A test reads it before and after a
** write to see that the data and the rename reached the disk.
** Thread-safe. Since 0.4.0. */
POPC_API long popc_fault_sync_count(void);

#ifdef __cplusplus
}
#endif

#endif /* POPC_FAULT_H */
