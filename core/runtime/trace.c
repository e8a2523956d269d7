/* trace.c - the executor's record of when each task of a run began and
** ended (profile/ reads it for the latency figures and the profile's
** timeline). Concurrent tasks write disjoint records.
*/
#include "config.h"

#include <string.h>

#include "core/runtime/hooks_priv.h"

void popci_trace_task(popci_trace *t, int r, int p, int64_t mb,
                      const double ts[4])
{
    size_t i;

    if (!t || !t->task || r < 0 || r >= t->replicas || p < 0 ||
        p >= t->phases || mb < 0 || mb >= t->micro_batches)
        return;
    i = ((size_t)mb * (size_t)t->replicas + (size_t)r) * (size_t)t->phases +
        (size_t)p;
    memcpy(t->task + 4 * i, ts, 4 * sizeof *ts);
}

void popci_trace_step(popci_trace *t, int64_t w, double t0, double t1)
{
    if (!t || !t->step || w < 0 || w >= t->windows)
        return;
    t->step[2 * w] = t0;
    t->step[2 * w + 1] = t1;
}
