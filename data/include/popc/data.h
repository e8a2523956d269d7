/* data.h - datasets and PopTorch's DataLoader.
**
** A dataset holds N samples in host memory: features of a fixed sample
** shape and, optionally, one int32 class label per sample. Features are
** handed out as float32: 8-bit data (IDX images, uint8 NPY) is scaled to
** [0, 1] by dividing by 255 (as torchvision's ToTensor), then an optional
** (x - mean) / std normalisation is applied, per channel or for all
** features. Files are read whole when the dataset is created; every
** problem (truncated file, wrong magic, labels out of range, sample counts
** that differ) is reported naming the file.
**
** A data loader (poptorch.DataLoader) cuts a dataset into combined batches
** of batch_size x deviceIterations x (replicationFactor / inputGroupSize)
** x gradientAccumulation samples, the rows one popc_model_run consumes.
** It can shuffle (reproducibly from a seed, reshuffled for every epoch),
** drop or keep the incomplete last batch, partition the dataset between
** the processes of a distributed run (Distributed.processId /
** numProcesses), and prepare batches on worker threads ahead of time
** (the Async mode of PopTorch's AsynchronousDataAccessor: a ring buffer
** of buffer_size batches). Sync and Async modes deliver exactly the same
** batches in the same order.
**
** The loader's position (epoch, batch index and the shuffle generator's
** state) can be read and restored, so a checkpointed run resumes on the
** exact batch where it stopped.
**
** A dataset is read-only after its setters have been called and may be
** shared by several loaders (and their worker threads). A loader is used
** by one thread at a time.
**
** Since 0.1.0 unless a function says otherwise; the conventions of
** popc/status.h (ownership, status codes, threads) apply.
*/
#ifndef POPC_DATA_H
#define POPC_DATA_H

#include <stdint.h>
#include "popc/status.h"
#include "popc/tensor.h"
#include "popc/options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- datasets ----------------------------------------------------------- */

typedef struct popc_dataset popc_dataset; /* opaque */

/* IDX files (the MNIST format), gzip-compressed or plain (detected from
** the content). images holds N samples of any shape (at least one sample
** dimension; uint8 data is scaled to [0, 1], other element types are read
** as they are); labels may be NULL (an unlabelled set) or a 1-d file of N
** integer labels. Returns POPC_OK, POPC_EINVAL (images NULL), POPC_EIO
** (cannot open, truncated, wrong magic, unknown element type, extra data,
** images and labels with different sample counts, a labels file that is
** not 1-d or holds floats), POPC_ENOMEM. The caller owns *out (NULL on
** failure) and frees it with popc_dataset_free(). Thread-safe.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_dataset_load_idx(const char *images,
    const char *labels, popc_dataset **out);

/* NumPy .npy files (popc_npy_load): features [N, ...] (uint8 is scaled to
** [0, 1]; int32 and int64 stay integers, unchanged in every batch, for
** models whose input is an integer such as token ids; other types become
** float32), labels [N] or [N, 1] of int32,
** int64 or uint8 (may be NULL). Returns POPC_OK, POPC_EINVAL (features
** NULL, of rank < 2 or without samples; labels of another type or rank),
** POPC_EIO (unreadable or corrupt file, sample counts that differ),
** POPC_EUNSUPPORTED (an .npy layout or dtype popc_npy_load does not
** read), POPC_ENOMEM. The caller owns *out (NULL on failure) and frees it
** with popc_dataset_free(). Thread-safe. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_dataset_load_npy(
    const char *features, const char *labels, popc_dataset **out);

/* CSV text: one sample per line, numbers separated by commas, an optional
** header line (detected: a field that is not a number). label_column
** names the label column: a header name ("label"), a 0-based index ("0"),
** "first", "last", or "none" for an unlabelled file; NULL means "label"
** when the header has such a column and is an error otherwise. Feature
** values are used as they are (normalise with mean 0 and std 255 to
** scale pixel values). Errors name the file, line and column. Returns
** POPC_OK, POPC_EINVAL (path NULL, label_column not found), POPC_EIO
** (unreadable, no data rows, no feature column, ragged rows, a field that
** is not a number, a label that is not an integer), POPC_ENOMEM. The
** caller owns *out (NULL on failure) and frees it with
** popc_dataset_free(). Thread-safe. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_dataset_load_csv(const char *path,
    const char *label_column, popc_dataset **out);

/* From tensors (copied; they stay the caller's): features [N, ...] (uint8
** is scaled to [0, 1], int32 and int64 stay integers, other types become
** float32), labels [N] or [N, 1]
** of int32, int64 or uint8, or NULL. Returns POPC_OK, POPC_EINVAL
** (features NULL, of rank < 2 or without samples; labels of another type
** or rank), POPC_EIO (a label count other than N, as for files),
** POPC_ENOMEM. The caller owns *out (NULL on failure) and frees it with
** popc_dataset_free(). Thread-safe. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_dataset_from_tensors(
    const popc_tensor *features, const popc_tensor *labels,
    popc_dataset **out);

/* Free ds and its samples. NULL-safe. Not thread-safe: no loader or
** other thread may still use ds. Since 0.1.0. */
POPC_API void popc_dataset_free(popc_dataset *ds);

/* Declare the number of classes: every label must be in [0, n_classes).
** Returns POPC_OK, POPC_EINVAL (n_classes < 1; a dataset without labels;
** a label out of range, naming the file, the first bad sample and its
** label). A setter: not thread-safe; call it before ds is shared.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_dataset_set_classes(
    popc_dataset *ds, int n_classes);

/* Give samples another shape with the same element count (e.g. [28, 28]
** -> [1, 28, 28] for a convolution). Returns POPC_OK, POPC_EINVAL (rank
** outside 1..POPC_MAX_RANK, a dimension < 1, another element count naming
** both shapes, a first dimension that no longer matches a per-channel
** normalisation). A setter: not thread-safe; call it before ds is shared.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_dataset_set_sample_shape(
    popc_dataset *ds, const int64_t *dims, int rank);

/* Keep only the first n samples (n >= 1; no effect when n >= size or
** n < 1). A setter: not thread-safe; call it before a loader is made
** over ds. Since 0.1.0. */
POPC_API void popc_dataset_truncate(popc_dataset *ds, int64_t n);

/* Normalise features: x -> (x - mean[c]) / std[c] after the [0, 1]
** scaling (integer features become float32 first). n == 1 applies mean[0], std[0] to every feature; otherwise n
** must equal the first sample dimension (channels). Arrays are copied.
** Replaces an earlier normalisation. Returns POPC_OK, POPC_EINVAL (mean
** or std NULL, n < 1, std <= 0, non-finite values, a channel count that
** does not match), POPC_ENOMEM. A setter: not thread-safe; call it before
** ds is shared. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_dataset_normalize(popc_dataset *ds,
    const float *mean, const float *std, int n);

/* Mean and standard deviation (population) of all features after the
** [0, 1] scaling and before normalisation, computed in double. Thread-safe
** (reads ds only). Since 0.1.0. */
POPC_API void popc_dataset_stats(const popc_dataset *ds, double *mean,
                                 double *std);

/* The dtype of ds's batches: int32 or int64 for integer features (kept
** unchanged), float32 for every other kind. Thread-safe (reads ds only).
** Since 0.3.0. */
POPC_API popc_dtype popc_dataset_feature_dtype(const popc_dataset *ds);

/* Convert integer features to dtype (float32, int32 or int64), as a model
** of that input dtype needs them; no effect when they already are.
** Returns POPC_OK, POPC_EINVAL (features that are not integers becoming
** integers, naming the source; another dtype; an int64 value outside
** int32, naming the sample), POPC_ENOMEM. A setter: not thread-safe; call
** it before a loader is made over ds. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_dataset_cast_features(
    popc_dataset *ds, popc_dtype dtype);

/* Samples in ds (after popc_dataset_truncate). Thread-safe (reads ds
** only). Since 0.1.0. */
POPC_API int64_t popc_dataset_size(const popc_dataset *ds);

/* The sample shape; *rank (may be NULL) gets its rank. Borrowed: valid
** while ds lives and its shape is not changed. Thread-safe (reads ds
** only). Since 0.1.0. */
POPC_API const int64_t *popc_dataset_sample_shape(const popc_dataset *ds,
                                                  int *rank);

/* Elements per sample. Thread-safe (reads ds only). Since 0.1.0. */
POPC_API int64_t popc_dataset_sample_numel(const popc_dataset *ds);

/* 1 when ds has labels, else 0. Thread-safe (reads ds only).
** Since 0.1.0. */
POPC_API int popc_dataset_has_labels(const popc_dataset *ds);

/* Largest label + 1 (0 without labels), scanning every label. Thread-safe
** (reads ds only). Since 0.1.0. */
POPC_API int popc_dataset_label_count(const popc_dataset *ds);

/* "train-images.gz + train-labels.gz": the files it came from. Borrowed:
** valid while ds lives. Thread-safe (reads ds only). Since 0.1.0. */
POPC_API const char *popc_dataset_source(const popc_dataset *ds);

/* Copy samples indices[0..n) into features (n x sample_numel float32,
** normalised; integer features converted) and labels (n int32, 0 for an unlabelled set; may be NULL).
** Returns POPC_OK, POPC_EINVAL (an index outside [0, size); the rows
** before it are already written). Thread-safe: reads ds only, as loader
** workers do at once. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_dataset_gather(
    const popc_dataset *ds, const int64_t *indices, int64_t n,
    float *features, int32_t *labels);

/* ---- data loader -------------------------------------------------------- */

typedef struct popc_dataloader popc_dataloader; /* opaque */

typedef enum popc_loader_mode {
    POPC_LOADER_SYNC = 0,           /* prepared in popc_dataloader_next */
    POPC_LOADER_ASYNC = 1,          /* worker threads fill a ring buffer */
    POPC_LOADER_ASYNC_REBATCHED = 2 /* as Async, workers load chunks of
                                    ** rebatched_worker_size samples */
} popc_loader_mode;

/* Loader settings. Initialise with popc_loader_config_init (defaults as
** PopTorch's), then change members. Members are only ever appended. */
typedef struct popc_loader_config {
    int64_t batch_size;        /* micro-batch size (>= 1); default 1 */
    int shuffle;               /* default 0 */
    uint64_t seed;             /* shuffle seed; default 0 */
    int drop_last;             /* default 1 (PopTorch's default) */
    popc_loader_mode mode;     /* default POPC_LOADER_SYNC */
    int workers;               /* worker threads for Async modes; default 1 */
    int buffer_size;           /* ring buffer batches (>= 1); default 3 */
    int load_indefinitely;     /* Async: prefetch across epoch ends;
                               ** default 1 */
    int early_preload;         /* Async: fill the ring before the first
                               ** popc_dataloader_next; default 0 */
    int64_t rebatched_worker_size; /* AsyncRebatched: samples per worker
                               ** job, 1..combined batch; 0 = combined */
    int auto_distributed_partitioning; /* default 1 */
    int pad_last;              /* popc: with drop_last 0, the incomplete
                               ** last batch keeps the full size, its extra
                               ** rows repeating its last sample (batch.n
                               ** counts the real rows), so a compiled model
                               ** can run it; default 0 */
    int global_batches;        /* popc: with more than one process
                               ** (auto_distributed_partitioning), each
                               ** process takes its replicas' rows of the
                               ** global batch that one process with all
                               ** N x R replicas would read (host layout
                               ** [deviceIterations][gradientAccumulation]
                               ** [replica][micro-batch]), so N processes
                               ** train bit for bit like one; no rows
                               ** alternate between epochs. With drop_last
                               ** 0 the dataset must hold whole global
                               ** batches. Default 0: PopTorch's contiguous
                               ** block per process (_SubDataset). */
} popc_loader_config;

/* Set *cfg to the defaults above. Thread-safe (writes *cfg only).
** Since 0.1.0. */
POPC_API void popc_loader_config_init(popc_loader_config *cfg);

/* Where a loader is: the next batch it returns is batch `batch` of epoch
** `epoch`; rng is the shuffle generator's state for that epoch. */
typedef struct popc_data_position {
    int64_t epoch;
    int64_t batch;
    uint64_t rng;
} popc_data_position;

/* One combined batch (n rows, or the full combined batch with pad_last).
** Tensors are borrowed: valid until the next popc_dataloader_next,
** popc_dataloader_set_position or popc_dataloader_free on the same
** loader. */
typedef struct popc_batch {
    popc_tensor *features;     /* [n, sample shape...] of
                               ** popc_dataset_feature_dtype */
    popc_tensor *labels;       /* int32 [n]; NULL for an unlabelled set */
    int64_t n;                 /* rows; 0 marks the end of an epoch */
    int64_t epoch;
    int64_t index;             /* batch index within the epoch */
} popc_batch;

/* A loader over ds (borrowed: must outlive the loader). opts may be NULL
** (every factor 1, one process); it is read once here (deviceIterations,
** replicationFactor, inputReplicaGrouping's group size,
** Training.gradientAccumulation, Distributed.processId/numProcesses).
** When drop_last is 0 and the share is not a multiple of the combined
** batch, logs PopTorch's warning (the last batch is smaller) unless
** pad_last is set. Async modes start the worker threads here (with every
** signal blocked); from then on they read ds. Returns POPC_OK,
** POPC_EINVAL (ds or cfg NULL, or bad settings, the message naming the
** setting and the valid range: batch_size < 1, mode, workers outside
** 1..256, buffer_size outside 1..4096, rebatched_worker_size > combined
** batch, option factors, an empty dataset, a process id outside
** numProcesses, a share smaller than one combined batch with drop_last,
** pad_last with drop_last), POPC_ENOMEM, POPC_EINTERNAL (a worker thread
** cannot start). The caller owns *out (NULL on failure) and frees it with
** popc_dataloader_free(). Thread-safe; loaders over one ds may run in
** different threads. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_dataloader_new(popc_dataset *ds,
    const popc_options *opts, const popc_loader_config *cfg,
    popc_dataloader **out);

/* Stops and joins the worker threads, then frees dl and the batch
** tensors it handed out. NULL-safe. Not thread-safe on one loader.
** Since 0.1.0. */
POPC_API void popc_dataloader_free(popc_dataloader *dl);

/* The next batch into *batch. At the end of an epoch returns POPC_OK with
** batch->n == 0; the call after that starts the next epoch. Returns
** POPC_OK, POPC_ENOMEM, POPC_EINVAL (a sample beyond a dataset truncated
** after the loader was made). In Async modes a worker thread's error is
** returned here, and on every call until popc_dataloader_set_position.
** batch->features and labels are borrowed (see popc_batch). Not
** thread-safe on one loader. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_dataloader_next(
    popc_dataloader *dl, popc_batch *batch);

/* Samples per call (PopTorch's combinedBatchSize). Thread-safe (fixed
** when dl is made). Since 0.1.0. */
POPC_API int64_t popc_dataloader_combined_batch_size(
    const popc_dataloader *dl);

/* Batches per epoch in this process (len(DataLoader)). Thread-safe (fixed
** when dl is made). Since 0.1.0. */
POPC_API int64_t popc_dataloader_len(const popc_dataloader *dl);

/* Samples per epoch in this process (after drop_last). Thread-safe (fixed
** when dl is made). Since 0.1.0. */
POPC_API int64_t popc_dataloader_samples_per_epoch(const popc_dataloader *dl);

/* Where dl is: the position of the next batch popc_dataloader_next
** returns (batches Async workers prepared ahead do not count). Not
** thread-safe on one loader. Since 0.1.0. */
POPC_API popc_data_position popc_dataloader_position(
    const popc_dataloader *dl);

/* Continue from pos (as read by popc_dataloader_position, possibly in
** another process). Batches handed out before are invalidated, and an
** Async worker's error is cleared. Returns POPC_OK, POPC_EINVAL (a
** negative epoch or batch, or pos->batch beyond the epoch; dl is
** unchanged). Not thread-safe on one loader. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_dataloader_set_position(
    popc_dataloader *dl, const popc_data_position *pos);

/* Shuffle generator state at epoch 0 for a seed (what a fresh loader
** starts from). Thread-safe (a pure function). Since 0.1.0. */
POPC_API uint64_t popc_data_rng_from_seed(uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif /* POPC_DATA_H */
