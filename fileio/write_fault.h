/* write_fault.h - the write and fsync faults a test arms
** (popc_fault_fail_writes, popc/fault.h), for the writer of files
** (atomic_file.c), which must fail the way a full disk does when one is
** armed. The switches live in write_fault.c.
*/
#ifndef POPC_FILEIO_WRITE_FAULT_H
#define POPC_FILEIO_WRITE_FAULT_H

/* Bytes a file that holds `written` bytes may still take before the
** armed write fault hits (*err: its errno); LLONG_MAX when none is armed.
** popci_sync_fault: the errno an fsync must fail with, or 0. */
long long popci_write_room(long long written, int *err);
int popci_sync_fault(void);

/* fsync(fd), counted when it succeeds (popc_fault_sync_count), then the
** armed sync fault if any: the real call always runs, so a test can see
** that a writer synced and not only that it asked the fault switch. */
int popci_fsync(int fd);

#endif /* POPC_FILEIO_WRITE_FAULT_H */
