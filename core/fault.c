/* fault.c - the counted allocator and its fault-injection switches
** (popc/fault.h, core/alloc_priv.h); the write faults are fileio/'s
** (fileio/write_fault.c). */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "popc/fault.h"
#include "core/alloc_priv.h"

static atomic_long fail_at;    /* 0: allocations are not counted */
static atomic_long seen;
static atomic_int persist_after;
static atomic_int fired;

void popc_fault_fail_alloc(long nth, int persist)
{
    atomic_store(&fail_at, 0);
    atomic_store(&seen, 0);
    atomic_store(&fired, 0);
    atomic_store(&persist_after, persist != 0);
    atomic_store(&fail_at, nth > 0 ? nth : 0);
}

long popc_fault_alloc_count(void)
{
    return atomic_load(&seen);
}

int popc_fault_alloc_fired(void)
{
    return atomic_load(&fired);
}

int popci_alloc_should_fail(void)
{
    long at = atomic_load_explicit(&fail_at, memory_order_relaxed), n;

    if (!at)
        return 0;
    n = atomic_fetch_add(&seen, 1) + 1;
    if (n == at || (n > at && atomic_load(&persist_after))) {
        atomic_store(&fired, 1);
        return 1;
    }
    return 0;
}

void *popci_malloc(size_t n)
{
    return popci_alloc_should_fail() ? NULL : malloc(n);
}

void *popci_calloc(size_t n, size_t size)
{
    return popci_alloc_should_fail() ? NULL : calloc(n, size);
}

void *popci_realloc(void *p, size_t n)
{
    return popci_alloc_should_fail() ? NULL : realloc(p, n);
}

char *popci_strdup(const char *s)
{
    return popci_alloc_should_fail() ? NULL : strdup(s);
}

char *popci_strndup(const char *s, size_t n)
{
    return popci_alloc_should_fail() ? NULL : strndup(s, n);
}
