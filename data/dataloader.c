/* dataloader.c - PopTorch's DataLoader: combined batches from a dataset,
** in Sync mode here and in the Async modes through the worker engine
** (dataloader_async.c).
**
** Both modes take their rows from the same sampler, so they deliver the
** same batches; Sync mode fills the batch in popc_dataloader_next, Async
** mode hands out a batch a worker prepared.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "popc/data.h"
#include "popc/log.h"
#include "core/layer/alloc.h"
#include "data/data_priv.h"

struct popc_dataloader {
    popc_dataset *ds;
    popc_loader_config cfg;
    int64_t combined;
    popci_sampler sampler;
    popci_async *async;          /* NULL in Sync mode */
    popc_data_position pos;      /* Async: position after the last batch */
    int64_t *idx;                /* Sync: rows of the batch being filled */
    popc_tensor *features;       /* Sync: the batch handed out */
    popc_tensor *labels;
};

void popc_loader_config_init(popc_loader_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->batch_size = 1;
    cfg->drop_last = 1;
    cfg->mode = POPC_LOADER_SYNC;
    cfg->workers = 1;
    cfg->buffer_size = 3;
    cfg->load_indefinitely = 1;
    cfg->auto_distributed_partitioning = 1;
}

static int64_t option_int(const popc_options *opts, const char *name,
                          int64_t def)
{
    return opts ? popc_options_get_int(opts, name) : def;
}

/* PopTorch's combinedBatchSize; the options validated every factor. */
static popc_status combined_batch(const popc_options *opts, int64_t batch,
                                  int64_t *out)
{
    int64_t di = option_int(opts, "deviceIterations", 1);
    int64_t r = option_int(opts, "replicationFactor", 1);
    int64_t g = option_int(opts, "inputReplicaGrouping.size", 1);
    int64_t ga = option_int(opts, "Training.gradientAccumulation", 1);

    if (di < 1 || r < 1 || g < 1 || ga < 1 || r % g != 0)
        return popc_set_error(POPC_EINVAL,
                              "data loader: options give deviceIterations "
                              "%lld, replicationFactor %lld, input group "
                              "size %lld, gradientAccumulation %lld: each "
                              "must be >= 1 and the group size must divide "
                              "the replication factor",
                              (long long)di, (long long)r, (long long)g,
                              (long long)ga);
    *out = batch * di * (r / g) * ga;
    return POPC_OK;
}

/* Runs of replica rows in a combined batch: deviceIterations x
** gradientAccumulation (the host layout puts the replicas inside them). */
static int64_t chunks_of(const popc_options *opts)
{
    return option_int(opts, "deviceIterations", 1) *
           option_int(opts, "Training.gradientAccumulation", 1);
}

static popc_status check_config(const popc_loader_config *c, int64_t combined)
{
    if (c->batch_size < 1)
        return popc_set_error(POPC_EINVAL,
                              "data loader: batch_size is %lld; it must be "
                              "at least 1",
                              (long long)c->batch_size);
    if (c->mode != POPC_LOADER_SYNC && c->mode != POPC_LOADER_ASYNC &&
        c->mode != POPC_LOADER_ASYNC_REBATCHED)
        return popc_set_error(POPC_EINVAL,
                              "data loader: mode %d is not Sync (0), Async "
                              "(1) or AsyncRebatched (2)",
                              (int)c->mode);
    if (c->mode == POPC_LOADER_SYNC)
        return POPC_OK;
    if (c->workers < 1 || c->workers > 256)
        return popc_set_error(POPC_EINVAL,
                              "data loader: workers is %d; asynchronous "
                              "loading needs 1..256 worker threads",
                              c->workers);
    if (c->buffer_size < 1 || c->buffer_size > 4096)
        return popc_set_error(POPC_EINVAL,
                              "data loader: buffer_size is %d; the ring "
                              "buffer holds 1..4096 batches",
                              c->buffer_size);
    if (c->rebatched_worker_size < 0 || c->rebatched_worker_size > combined)
        return popc_set_error(POPC_EINVAL,
                              "data loader: The rebatched_worker_size "
                              "(%lld) must be <= to the combined batch size "
                              "(%lld)",
                              (long long)c->rebatched_worker_size,
                              (long long)combined);
    if (c->rebatched_worker_size && c->mode != POPC_LOADER_ASYNC_REBATCHED)
        return popc_set_error(POPC_EINVAL,
                              "data loader: rebatched_worker_size applies "
                              "only to the AsyncRebatched mode");
    return POPC_OK;
}

popc_status popc_dataloader_new(popc_dataset *ds, const popc_options *opts,
                                const popc_loader_config *cfg,
                                popc_dataloader **out)
{
    popc_dataloader *dl = NULL;
    int64_t pid = 0, n_proc = 1, combined = 0, chunk;
    popc_status st;

    *out = NULL;
    if (!ds || !cfg)
        return popc_set_error(POPC_EINVAL,
                              "popc_dataloader_new: dataset and config are "
                              "required");
    if (cfg->batch_size < 1)
        return check_config(cfg, 0);
    if ((st = combined_batch(opts, cfg->batch_size, &combined)) != POPC_OK)
        return st;
    if ((st = check_config(cfg, combined)) != POPC_OK)
        return st;
    if (cfg->auto_distributed_partitioning) {
        pid = option_int(opts, "Distributed.processId", 0);
        n_proc = option_int(opts, "Distributed.numProcesses", 1);
    }
    if (!(dl = popci_calloc(1, sizeof *dl)))
        return popc_set_error(POPC_ENOMEM, "data loader: out of memory");
    dl->ds = ds;
    dl->cfg = *cfg;
    dl->combined = combined;
    if ((st = popci_sampler_init(&dl->sampler, popc_dataset_size(ds),
                                 combined, cfg->shuffle, cfg->seed,
                                 cfg->drop_last, (int)pid, (int)n_proc,
                                 cfg->global_batches ? chunks_of(opts)
                                                     : 0)) !=
        POPC_OK)
        goto fail;
    if (cfg->pad_last && cfg->drop_last) {
        st = popc_set_error(POPC_EINVAL, "data loader: pad_last needs "
                                         "drop_last = false");
        goto fail;
    }
    if (!cfg->drop_last && !cfg->pad_last &&
        dl->sampler.share % combined != 0)
        popc_log(POPC_LOG_WARN,
                 "The number of elements in the dataset (%lld) is not "
                 "divisible by the number of elements processed per step "
                 "(%lld) and drop_last=False. The last tensor will have a "
                 "batch size of %lld. To avoid having to handle this special "
                 "case switch to drop_last=True",
                 (long long)popc_dataset_size(ds),
                 (long long)(combined * n_proc),
                 (long long)(dl->sampler.share % combined));
    dl->pos.epoch = 0;
    dl->pos.batch = 0;
    dl->pos.rng = dl->sampler.rng;
    if (cfg->mode == POPC_LOADER_SYNC) {
        if (!(dl->idx = popci_malloc((size_t)combined * sizeof *dl->idx))) {
            st = popc_set_error(POPC_ENOMEM, "data loader: out of memory");
            goto fail;
        }
    } else {
        chunk = cfg->mode == POPC_LOADER_ASYNC_REBATCHED &&
                        cfg->rebatched_worker_size
                    ? cfg->rebatched_worker_size
                    : combined;
        if ((st = popci_async_new(ds, &dl->sampler, cfg->workers,
                                  cfg->buffer_size, chunk,
                                  cfg->load_indefinitely, cfg->early_preload,
                                  cfg->pad_last, &dl->async)) != POPC_OK)
            goto fail;
    }
    *out = dl;
    return POPC_OK;
fail:
    popc_dataloader_free(dl);
    return st;
}

void popc_dataloader_free(popc_dataloader *dl)
{
    if (!dl)
        return;
    /* the engine borrows the sampler: stop the workers first */
    popci_async_free(dl->async);
    popci_sampler_clear(&dl->sampler);
    popc_tensor_free(dl->features);
    popc_tensor_free(dl->labels);
    free(dl->idx);
    free(dl);
}

popc_status popci_batch_alloc(const popc_dataset *ds, int64_t n,
                              popc_tensor **features, popc_tensor **labels)
{
    int64_t dims[POPC_MAX_RANK + 1];
    int rank;
    const int64_t *shape = popc_dataset_sample_shape(ds, &rank);
    popc_status st;

    if (*features && popc_tensor_dims(*features)[0] == n &&
        popc_tensor_rank(*features) == rank + 1 &&
        memcmp(popc_tensor_dims(*features) + 1, shape,
               (size_t)rank * sizeof *shape) == 0)
        return POPC_OK;
    popc_tensor_free(*features);
    popc_tensor_free(*labels);
    *features = NULL;
    *labels = NULL;
    dims[0] = n;
    memcpy(dims + 1, shape, (size_t)rank * sizeof *shape);
    if ((st = popc_tensor_new(popc_dataset_feature_dtype(ds), dims, rank + 1,
                              features)) != POPC_OK)
        return st;
    if (popc_dataset_has_labels(ds) &&
        (st = popc_tensor_new(POPC_DTYPE_I32, dims, 1, labels)) != POPC_OK) {
        popc_tensor_free(*features);
        *features = NULL;
        return st;
    }
    return POPC_OK;
}

int64_t popci_batch_rows(int64_t *idx, int64_t n, int64_t combined,
                         int pad_last)
{
    if (!pad_last || n >= combined)
        return n;
    for (int64_t i = n; i < combined; i++)
        idx[i] = idx[n - 1];
    return combined;
}

popc_status popci_batch_fill(const popc_dataset *ds, const int64_t *idx,
                             int64_t first, int64_t last,
                             popc_tensor *features, popc_tensor *labels)
{
    int64_t numel = popc_dataset_sample_numel(ds);
    int32_t *l = labels ? popc_tensor_data(labels) : NULL;

    if (popci_dataset_is_integer(ds))
        return popci_dataset_gather_ids(
            ds, idx + first, last - first,
            (char *)popc_tensor_data(features) +
                (size_t)(first * numel) *
                    popc_dtype_size(popc_dataset_feature_dtype(ds)),
            l ? l + first : NULL);
    return popc_dataset_gather(ds, idx + first, last - first,
                               (float *)popc_tensor_data(features) +
                                   first * numel,
                               l ? l + first : NULL);
}

popc_status popc_dataloader_next(popc_dataloader *dl, popc_batch *batch)
{
    uint64_t rng;
    int64_t n, rows;
    popc_status st;

    memset(batch, 0, sizeof *batch);
    if (dl->async)
        return popci_async_next(dl->async, batch, &dl->pos);
    if ((st = popci_sampler_next(&dl->sampler, dl->idx, &n, &batch->epoch,
                                 &batch->index, &rng)) != POPC_OK)
        return st;
    if (n == 0)
        return POPC_OK;
    rows = popci_batch_rows(dl->idx, n, dl->combined, dl->cfg.pad_last);
    if ((st = popci_batch_alloc(dl->ds, rows, &dl->features, &dl->labels)) !=
        POPC_OK)
        return st;
    if ((st = popci_batch_fill(dl->ds, dl->idx, 0, rows, dl->features,
                               dl->labels)) != POPC_OK)
        return st;
    batch->features = dl->features;
    batch->labels = dl->labels;
    batch->n = n;
    return POPC_OK;
}

int64_t popc_dataloader_combined_batch_size(const popc_dataloader *dl)
{
    return dl->combined;
}

int64_t popc_dataloader_len(const popc_dataloader *dl)
{
    return dl->sampler.n_batches;
}

int64_t popc_dataloader_samples_per_epoch(const popc_dataloader *dl)
{
    return dl->sampler.n_samples;
}

popc_data_position popc_dataloader_position(const popc_dataloader *dl)
{
    popc_data_position pos;

    if (dl->async)
        return dl->pos;
    pos.epoch = dl->sampler.epoch;
    pos.batch = dl->sampler.index;
    pos.rng = dl->sampler.rng;
    return pos;
}

popc_status popc_dataloader_set_position(popc_dataloader *dl,
                                         const popc_data_position *pos)
{
    popc_status st;

    if (dl->async) {
        if ((st = popci_async_seek(dl->async, pos)) != POPC_OK)
            return st;
        dl->pos = *pos;
        return POPC_OK;
    }
    return popci_sampler_seek(&dl->sampler, pos);
}
