/* data_sampler.c - which dataset rows form each batch: order, shuffling,
** the distributed share of this process and drop_last.
**
** The order of an epoch depends only on the generator state of that
** epoch, which depends only on the seed and the epoch number: a batch is
** a pure function of (seed, epoch, index). That is what makes async
** loading equal to sync loading and a resumed run equal to an
** uninterrupted one.
**
** Distributed partitioning follows PopTorch's _SubDataset: the (shuffled)
** global order is cut into one contiguous block per process. With
** drop_last every process gets the same whole number of combined batches
** and the rows left over are alternated in on every other epoch when
** shuffling; without drop_last the rows are spread as evenly as possible,
** so the shares are disjoint and cover the dataset.
**
** Global batches (popc's option) cut the order as one process with every
** replica would: batch i of the epoch is rows [i G, (i + 1) G) of the
** order, G = n_processes x batch, and each process takes the rows of its
** own replicas in the host layout [deviceIterations][gradientAccumulation]
** [replica][micro-batch]. N processes then read exactly the batches of
** one process with all N x R replicas; nothing alternates, as nothing
** does in one process.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "popc/data.h"
#include "core/layer/alloc.h"
#include "data/data_priv.h"
#include "core/layer/rng.h"

/* Stream ids of the core generator (core/layer/rng.h) used here. */
#define STREAM_SEED  0x64617461u    /* "data" */
#define STREAM_EPOCH 1u

uint64_t popc_data_rng_from_seed(uint64_t seed)
{
    return popci_rng_combine(seed, STREAM_SEED);
}

uint64_t popci_data_next_epoch_rng(uint64_t state)
{
    return popci_rng_combine(state, STREAM_EPOCH);
}

/* Fisher-Yates from the epoch's state: the order is a function of it. */
static void draw_permutation(popci_sampler *s)
{
    popci_rng r;
    int64_t *p = s->perm;

    popci_rng_init(&r, s->rng, 0);
    for (int64_t i = 0; i < s->n_total; i++)
        p[i] = i;
    for (int64_t i = s->n_total - 1; i > 0; i--) {
        int64_t j = (int64_t)popci_rng_below(&r, (uint64_t)i + 1);
        int64_t t = p[i];

        p[i] = p[j];
        p[j] = t;
    }
    s->perm_epoch = s->epoch;
}

popc_status popci_sampler_init(popci_sampler *s, int64_t n_total,
                               int64_t batch, int shuffle, uint64_t seed,
                               int drop_last, int process_id,
                               int n_processes, int64_t chunks)
{
    memset(s, 0, sizeof *s);
    s->perm_epoch = -1;
    s->n_total = n_total;
    s->batch = batch;
    s->shuffle = shuffle;
    s->drop_last = drop_last;
    s->distributed = n_processes > 1;
    s->rng = popc_data_rng_from_seed(seed);
    if (n_total < 1)
        return popc_set_error(POPC_EINVAL, "data loader: the dataset is "
                                           "empty");
    if (n_processes < 1 || process_id < 0 || process_id >= n_processes)
        return popc_set_error(POPC_EINVAL,
                              "data loader: process id %d is outside 0..%d "
                              "for %d processes (Distributed."
                              "configureProcessId)",
                              process_id, n_processes - 1, n_processes);
    if (n_processes > 1 && chunks > 0) {
        int64_t global = batch * n_processes;

        s->global = 1;
        s->process_id = process_id;
        s->n_processes = n_processes;
        s->run = batch / chunks;
        if (!drop_last && n_total % global != 0)
            return popc_set_error(
                POPC_EINVAL,
                "data loader: global batches with drop_last = false need "
                "the dataset's %lld samples to be a multiple of the global "
                "batch, %lld (combined batch %lld x %d processes); set "
                "drop_last or change the batch size",
                (long long)n_total, (long long)global, (long long)batch,
                n_processes);
        s->share = batch * (n_total / global);
    } else if (n_processes > 1 && drop_last) {
        int64_t per = batch * (n_total / (batch * n_processes));

        s->share = per;
        s->offset = (int64_t)process_id * per;
        s->leftovers = n_total - (int64_t)n_processes * per;
    } else if (n_processes > 1) {
        int64_t base = n_total / n_processes, extra = n_total % n_processes;

        s->share = base + (process_id < extra);
        s->offset = (int64_t)process_id * base +
                    (process_id < extra ? process_id : extra);
    } else {
        s->share = n_total;
    }
    s->n_batches = drop_last ? s->share / batch
                             : (s->share + batch - 1) / batch;
    s->n_samples = drop_last ? s->n_batches * batch : s->share;
    if (s->n_batches == 0)
        return popc_set_error(
            POPC_EINVAL,
            "data loader: the dataset has %lld samples%s but one combined "
            "batch needs %lld (batch_size x deviceIterations x "
            "replicationFactor / inputGroupSize x gradientAccumulation%s); "
            "with drop_last no batch is left: use a smaller batch or "
            "drop_last = false",
            (long long)n_total,
            n_processes > 1 ? " to share between processes" : "",
            (long long)batch, n_processes > 1 ? " per process" : "");
    if (shuffle &&
        !(s->perm = popci_malloc((size_t)n_total * sizeof *s->perm)))
        return popc_set_error(POPC_ENOMEM, "data loader: out of memory for "
                                           "the shuffle order");
    return POPC_OK;
}

void popci_sampler_clear(popci_sampler *s)
{
    free(s->perm);
    s->perm = NULL;
}

popc_status popci_sampler_next(popci_sampler *s, int64_t *idx, int64_t *n,
                               int64_t *epoch, int64_t *index,
                               uint64_t *rng)
{
    int64_t first, count, start;

    *epoch = s->epoch;
    *index = s->index;
    *rng = s->rng;
    if (s->index >= s->n_batches) {
        *n = 0;
        s->epoch++;
        s->index = 0;
        s->rng = popci_data_next_epoch_rng(s->rng);
        return POPC_OK;
    }
    if (s->shuffle && s->perm_epoch != s->epoch)
        draw_permutation(s);
    first = s->index * s->batch;
    if (s->global) {
        /* batches are whole here: the share is a multiple of them */
        int64_t base = s->index * s->batch * s->n_processes;

        for (int64_t i = 0; i < s->batch; i++) {
            int64_t at = base + ((i / s->run) * s->n_processes +
                                 s->process_id) * s->run + i % s->run;

            idx[i] = s->perm ? s->perm[at] : at;
        }
        *n = s->batch;
        s->index++;
        return POPC_OK;
    }
    count = s->n_samples - first < s->batch ? s->n_samples - first
                                            : s->batch;
    start = s->offset + first;
    /* PopTorch's swap_range: shift the block over the leftovers on every
    ** other epoch so that shuffled distributed runs see every row */
    if (s->shuffle && s->distributed && s->epoch % 2 == 0)
        start += s->leftovers;
    for (int64_t i = 0; i < count; i++)
        idx[i] = s->perm ? s->perm[start + i] : start + i;
    *n = count;
    s->index++;
    return POPC_OK;
}

popc_status popci_sampler_seek(popci_sampler *s,
                               const popc_data_position *pos)
{
    if (pos->epoch < 0 || pos->batch < 0 || pos->batch > s->n_batches)
        return popc_set_error(POPC_EINVAL,
                              "data loader: position epoch %lld batch %lld "
                              "is outside this loader's epochs of %lld "
                              "batches (was it saved with another dataset, "
                              "batch size or process count?)",
                              (long long)pos->epoch, (long long)pos->batch,
                              (long long)s->n_batches);
    s->epoch = pos->epoch;
    s->index = pos->batch;
    s->rng = pos->rng;
    s->perm_epoch = -1;
    return POPC_OK;
}
