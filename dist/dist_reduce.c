/* dist_reduce.c - the gradient reduction of a distributed run.
**
** One process sums the accumulators of its replicas in replica order:
** g = a0; g += a1; g += a2; ... (core/runtime/train_step.c). Floating-point
** addition is not associative, so a reduction across ranks gives the same
** bits only if it adds in that same global order. Here the running sum
** travels along the ranks as a pipelined chain: rank k receives the sum of
** every replica of ranks 0..k-1, adds its own replicas in order and passes
** it on; the last rank scales it (loss scaling, Mean) and broadcasts it.
** The buffer moves in chunks, so rank k+1 adds chunk c while rank k adds
** chunk c+1: each link carries the gradient bytes once and the chain costs
** about 2 x bytes / bandwidth, against 2 (N-1)/N x bytes / bandwidth for a
** ring all-reduce whose summation order changes with N.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/layer/alloc.h"
#include "dist/dist_priv.h"

/* Floats per message. A chain of N ranks moving C chunks takes N - 1 + C
** message times, so chunks must be small against the buffer (a quarter
** of its share per link) yet large enough to amortise a message's
** latency: between 64 KiB and 1 MiB. bench/scaling_model.sh models the
** same rule. */
static int64_t chunk_floats(int64_t total, int n_ranks)
{
    int64_t c = total / (4 * (int64_t)(n_ranks > 1 ? n_ranks - 1 : 1));

    if (c < ((int64_t)1 << 14))
        c = (int64_t)1 << 14;
    if (c > ((int64_t)1 << 18))
        c = (int64_t)1 << 18;
    return c;
}

static popc_status ensure_buffer(popci_dist_model *d, const popci_exec *e,
                                 const int *trained, int n)
{
    int64_t total = 0;

    for (int i = 0; i < n; i++)
        total += popci_exec_weight_numel(e, trained[i]);
    if (d->buf && d->len == total)
        return POPC_OK;
    free(d->buf);
    d->len = 0;
    if (!(d->buf = popci_malloc(sizeof(float) * (size_t)(total + 1))))
        return popc_set_error(POPC_ENOMEM, "distributed gradient reduction: "
                              "out of memory for %lld gradients",
                              (long long)total);
    d->len = total;
    return POPC_OK;
}

/* Add this rank's replicas into flat elements [lo, hi). With no partial
** sum from earlier ranks (rank 0) the first replica starts it. */
static void fold(popci_dist_model *d, popci_exec *e, const int *trained,
                 int n, int64_t lo, int64_t hi, int have_partial)
{
    int R = (int)popci_exec_replicas(e);
    int64_t off = 0;

    for (int i = 0; i < n && off < hi; i++) {
        int w = trained[i];
        int64_t len = popci_exec_weight_numel(e, w), a, b;
        float *dst;

        if (off + len <= lo) {
            off += len;
            continue;
        }
        a = lo > off ? lo - off : 0;
        b = (hi < off + len ? hi : off + len) - off;
        dst = d->buf + off + a;
        for (int r = 0; r < R; r++) {
            const float *src = popci_exec_accum(e, r, w) + a;

            if (r == 0 && !have_partial) {
                memcpy(dst, src, sizeof(float) * (size_t)(b - a));
                continue;
            }
            for (int64_t j = 0; j < b - a; j++)
                dst[j] += src[j];
        }
        off += len;
    }
}

/* The last rank: what core/runtime/train_step.c does to a finished sum. */
static void finish(popci_dist_model *d, const popci_exec *e,
                   const int *trained, int n)
{
    int64_t off = 0;

    for (int i = 0; i < n; i++) {
        int64_t len = popci_exec_weight_numel(e, trained[i]);

        popci_exec_finish_sum(e, trained[i], d->buf + off, len);
        off += len;
    }
}

popc_status popci_dist_reduce(popci_dist_port *self, popci_exec *e,
                              const int *trained, int n, int64_t step)
{
    popci_dist_model *d = (popci_dist_model *)self;
    popci_comm *c = d->comm;
    int k = popci_comm_rank(c), N = popci_comm_size(c);
    char what[96];
    int64_t off = 0, chunk;
    popc_status st;

    double t0 = popci_exec_now();

    if ((st = ensure_buffer(d, e, trained, n)) != POPC_OK)
        return st;
    chunk = chunk_floats(d->len, N);
    for (int64_t lo = 0; lo < d->len; lo += chunk) {
        int64_t hi = lo + chunk < d->len ? lo + chunk : d->len;
        size_t bytes = sizeof(float) * (size_t)(hi - lo);

        if (k > 0) {
            snprintf(what, sizeof what, "the gradient reduction of step "
                     "%lld, receiving from rank %d", (long long)step, k - 1);
            if ((st = popci_comm_recv(c, k - 1, d->buf + lo, bytes,
                                      what)) != POPC_OK)
                return st;
        }
        fold(d, e, trained, n, lo, hi, k > 0);
        if (k < N - 1) {
            snprintf(what, sizeof what, "the gradient reduction of step "
                     "%lld, sending to rank %d", (long long)step, k + 1);
            if ((st = popci_comm_send(c, k + 1, d->buf + lo, bytes,
                                      what)) != POPC_OK)
                return st;
        }
    }
    if (k == N - 1)
        finish(d, e, trained, n);
    snprintf(what, sizeof what, "the broadcast of the reduced gradients of "
             "step %lld from rank %d", (long long)step, N - 1);
    if ((st = popci_comm_bcast(c, N - 1, d->buf,
                               sizeof(float) * (size_t)d->len, what)) !=
        POPC_OK)
        return st;
    for (int i = 0; i < n; i++) {
        int w = trained[i];
        int64_t len = popci_exec_weight_numel(e, w);

        memcpy(popci_exec_accum(e, 0, w), d->buf + off,
               sizeof(float) * (size_t)len);
        off += len;
    }
    d->steps++;
    d->seconds += popci_exec_now() - t0;
    return POPC_OK;
}

popc_status popci_dist_broadcast_buffers(popci_dist_port *self,
                                         popci_exec *e)
{
    popci_dist_model *d = (popci_dist_model *)self;
    double t0 = popci_exec_now();
    popc_status st;

    for (int w = 0; w < popci_exec_n_weights(e); w++) {
        if (!popci_exec_weight_is_buffer(e, w))
            continue;
        if ((st = popci_comm_bcast(d->comm, 0, popci_exec_weight(e, w),
                                   popci_exec_weight_bytes(e, w),
                                   "broadcastBuffers from rank 0")) !=
            POPC_OK)
            return st;
    }
    d->seconds += popci_exec_now() - t0;
    return POPC_OK;
}
