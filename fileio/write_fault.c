/* write_fault.c - the write and fsync faults a test arms
** (popc_fault_fail_writes, popc/fault.h) and the fsync every file written
** goes through (fileio/write_fault.h): only this layer writes files, so
** only it needs them; the allocation faults stay in the core
** (core/fault.c).
*/
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <unistd.h>

#include "popc/fault.h"
#include "fileio/write_fault.h"

static atomic_int write_err;
static atomic_llong write_limit;
static atomic_long syncs;

void popc_fault_fail_writes(int err, long long after_bytes)
{
    atomic_store(&write_limit, after_bytes);
    atomic_store(&write_err, err > 0 ? err : 0);
}

long long popci_write_room(long long written, int *err)
{
    long long limit = atomic_load(&write_limit);

    *err = atomic_load(&write_err);
    if (!*err || limit < 0)
        return LLONG_MAX;
    return limit > written ? limit - written : 0;
}

int popci_sync_fault(void)
{
    int err = atomic_load(&write_err);

    return err && atomic_load(&write_limit) < 0 ? err : 0;
}

int popci_fsync(int fd)
{
    int err;

    if (fsync(fd) != 0)
        return -1;
    atomic_fetch_add(&syncs, 1);
    if ((err = popci_sync_fault()) != 0) {
        errno = err;
        return -1;
    }
    return 0;
}

long popc_fault_sync_count(void)
{
    return atomic_load(&syncs);
}
