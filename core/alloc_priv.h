/* alloc_priv.h - the fault switches behind libpopc's counted allocator
** (core/layer/alloc.h); popci_alloc (host_priv.h) is the aligned,
** zero-filled variant plugins get. */
#ifndef POPC_ALLOC_PRIV_H
#define POPC_ALLOC_PRIV_H

#include "core/layer/alloc.h"

/* 1 when the allocation being made must fail (an armed fault). */
int popci_alloc_should_fail(void);

/* Bytes a file that holds `written` bytes may still take before the
** armed write fault hits (*err: its errno); LLONG_MAX when none is armed.
** popci_sync_fault: the errno an fsync must fail with, or 0. */
long long popci_write_room(long long written, int *err);
int popci_sync_fault(void);

/* fsync(fd), counted when it succeeds (popc_fault_sync_count), then the
** armed sync fault if any: the real call always runs, so a test can see
** that a writer synced and not only that it asked the fault switch. */
int popci_fsync(int fd);

#endif /* POPC_ALLOC_PRIV_H */
