/* data_priv.h - internals shared by the dataset readers and the loader.
**
** The sampler decides which dataset rows make up each batch (order,
** shuffling, distributed share, drop_last); it knows nothing of threads.
** The async engine runs samplers' batches on worker threads; the loader
** (dataloader.c) owns both.
*/
#ifndef POPC_DATA_PRIV_H
#define POPC_DATA_PRIV_H

#include <stdint.h>
#include "popc/data.h"

/* ---- datasets ----------------------------------------------------------- */

/* A dataset over data already in memory. Takes ownership of features
** (malloc'd, n x numel(dims) elements of storage: POPC_DTYPE_U8,
** POPC_DTYPE_F32, or POPC_DTYPE_I32/I64 for ids) and labels (malloc'd n int32, may be NULL), also on
** failure. source is copied. */
popc_status popci_dataset_new(const char *source, int64_t n,
                              const int64_t *dims, int rank,
                              popc_dtype storage, void *features,
                              int32_t *labels, popc_dataset **out);

/* From tensors (copied), naming them features_name / labels_name in
** messages; labels may be NULL. */
popc_status popci_dataset_from_tensors(const char *features_name,
                                       const char *labels_name,
                                       const popc_tensor *features,
                                       const popc_tensor *labels,
                                       popc_dataset **out);

/* Whether ds holds int32 or int64 features (kept as they are). */
int popci_dataset_is_integer(const popc_dataset *ds);

/* popc_dataset_gather for integer features: rows copied unchanged into
** features (n x sample_numel of popc_dataset_feature_dtype). */
popc_status popci_dataset_gather_ids(const popc_dataset *ds,
                                     const int64_t *indices, int64_t n,
                                     void *features, int32_t *labels);

/* "a + b", or "a" when b is NULL, into a malloc'd string (NULL: no memory). */
char *popci_dataset_source_name(const char *a, const char *b);

/* Check that two files agree on the sample count. */
popc_status popci_dataset_check_counts(const char *features_path,
                                       int64_t n_features,
                                       const char *labels_path,
                                       int64_t n_labels);

/* ---- shuffle generator -------------------------------------------------- */

/* The shuffle generator state of the epoch after the one using `state`
** (states come from popc_data_rng_from_seed; draws use core/layer/rng.h). */
uint64_t popci_data_next_epoch_rng(uint64_t state);

/* ---- sampler ------------------------------------------------------------ */

typedef struct popci_sampler {
    int64_t n_total;      /* dataset rows */
    int64_t batch;        /* combined batch size */
    int64_t share;        /* rows of this process per epoch (before drop) */
    int64_t offset;       /* start of the share in the (shuffled) order */
    int64_t leftovers;    /* rows outside every share (drop_last, shuffled
                          ** distributed runs alternate them in) */
    int64_t n_batches;    /* batches per epoch */
    int64_t n_samples;    /* rows per epoch after drop_last */
    int shuffle;
    int drop_last;
    int distributed;      /* more than one process */
    /* global batches (popc_loader_config.global_batches): this process
    ** takes its replicas' rows of each global batch of n_processes x
    ** batch rows, laid out as chunks of n_processes x run rows */
    int global;
    int process_id, n_processes;
    int64_t run;          /* rows of this process per chunk: replicas x
                          ** micro-batch */
    /* position of the next batch */
    int64_t epoch;
    int64_t index;
    uint64_t rng;         /* generator state of `epoch` */
    int64_t perm_epoch;   /* epoch `perm` was drawn for; -1: none */
    int64_t *perm;        /* n_total rows, when shuffling */
} popci_sampler;

/* process_id in [0, n_processes). chunks: 0 for PopTorch's contiguous
** blocks, else global batches of chunks (deviceIterations x
** gradientAccumulation) runs of replicas x micro-batch rows per process.
** POPC_EINVAL (share smaller than one batch with drop_last, no rows,
** global batches that do not divide), POPC_ENOMEM. */
popc_status popci_sampler_init(popci_sampler *s, int64_t n_total,
                               int64_t batch, int shuffle, uint64_t seed,
                               int drop_last, int process_id,
                               int n_processes, int64_t chunks);
void popci_sampler_clear(popci_sampler *s);

/* The next batch: writes its rows to idx (batch entries), *n (0 at the end
** of an epoch, after which the sampler is at the next epoch), and the
** epoch, index and epoch generator state it belongs to. */
popc_status popci_sampler_next(popci_sampler *s, int64_t *idx, int64_t *n,
                               int64_t *epoch, int64_t *index,
                               uint64_t *rng);

/* Jump to a position. POPC_EINVAL when pos->batch > n_batches. */
popc_status popci_sampler_seek(popci_sampler *s,
                               const popc_data_position *pos);

/* ---- asynchronous engine ------------------------------------------------ */

typedef struct popci_async popci_async;

/* Worker threads filling a ring of buffer_size batches from the sampler
** (borrowed; only touched under the engine's lock from now on). chunk is
** the rows per worker job. POPC_ENOMEM, POPC_EINTERNAL (thread start). */
popc_status popci_async_new(const popc_dataset *ds, popci_sampler *sampler,
                            int workers, int buffer_size, int64_t chunk,
                            int load_indefinitely, int early_preload,
                            int pad_last, popci_async **out);
/* Stops and joins the workers. NULL-safe. */
void popci_async_free(popci_async *a);

/* Release the previous batch and return the next one (as
** popc_dataloader_next); *pos receives the position after it. */
popc_status popci_async_next(popci_async *a, popc_batch *batch,
                             popc_data_position *pos);

/* Drop every prepared batch and continue from pos. */
popc_status popci_async_seek(popci_async *a, const popc_data_position *pos);

/* Rows to allocate for a batch of n samples: n, or the combined batch
** with pad_last, repeating the last sample (idx is extended in place). */
int64_t popci_batch_rows(int64_t *idx, int64_t n, int64_t combined,
                         int pad_last);

/* Fill rows [first, last) of a batch's tensors from the dataset. */
popc_status popci_batch_fill(const popc_dataset *ds, const int64_t *idx,
                             int64_t first, int64_t last,
                             popc_tensor *features, popc_tensor *labels);

/* (Re)allocate a batch's tensors for n rows, keeping them when they
** already have n rows. */
popc_status popci_batch_alloc(const popc_dataset *ds, int64_t n,
                              popc_tensor **features, popc_tensor **labels);

#endif /* POPC_DATA_PRIV_H */
