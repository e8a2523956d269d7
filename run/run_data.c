/* run_data.c - [data]: dataset files, normalisation and loader settings.
**
** The train split is shuffled and cut as [data] says; the test split is
** read in order, keeps its last batch and pads it to the combined batch
** so the compiled inference model can run it (only the real rows count).
** "mean = auto" normalises with the train split's statistics, for the
** test split too.
**
** With several processes, each reads its replicas' rows of the global
** batches one process with every replica would read ("distributed_batches
** = global", the default), so N ranks train bit for bit like one process;
** "blocks" is PopTorch's contiguous block per process.
*/
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "popc/data.h"
#include "popc/run.h"
#include "core/layer/alloc.h"
#include "run/run_priv.h"

static const char *const data_keys[] = {
    "format",      "train",         "train_labels",
    "test",        "test_labels",   "label_column",
    "batch_size",  "shuffle",       "seed",
    "drop_last",   "mode",          "workers",
    "buffer_size", "load_indefinitely", "early_preload",
    "rebatched_worker_size", "mean", "std",
    "limit",       "test_limit",    "distributed_batches", NULL};

enum { FMT_AUTO, FMT_IDX, FMT_NPY, FMT_CSV };

#define SRC(k) popci_run_src(r, "data", k)

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);

    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

static int file_format(const popc_run *r, const char *path)
{
    if (r->format != FMT_AUTO)
        return r->format;
    if (ends_with(path, ".npy"))
        return FMT_NPY;
    if (ends_with(path, ".csv"))
        return FMT_CSV;
    return FMT_IDX;
}

/* "auto" or numbers separated by commas. */
static popc_status parse_norm(popc_run *r, const char *key, float *vals,
                              int *n, int *is_auto)
{
    const char *text = NULL, *p;
    char where[700];
    popc_status st;

    *n = 0;
    *is_auto = 0;
    if ((st = popci_config_get_string(SRC(key), "data", key, NULL, &text)) ||
        !text)
        return st;
    if (strcasecmp(text, "auto") == 0) {
        *is_auto = 1;
        return POPC_OK;
    }
    for (p = text; *p;) {
        char *end;
        double v;

        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        if (!*p)
            break;
        errno = 0;
        v = strtod(p, &end);
        if (end == p || errno || !isfinite(v) || *n == RUN_MAX_NORM ||
            (*end && *end != ',' && *end != ' ' && *end != '\t'))
            return popc_set_error(POPC_ECONFIG,
                                  "%s: must be 'auto' or up to %d numbers "
                                  "separated by commas, one per channel "
                                  "(got '%s')",
                                  popci_run_where(r, "data", key, where,
                                                  sizeof where),
                                  RUN_MAX_NORM, text);
        vals[(*n)++] = (float)v;
        p = end;
    }
    if (*n == 0)
        return popc_set_error(POPC_ECONFIG, "%s: no value given",
                              popci_run_where(r, "data", key, where,
                                              sizeof where));
    return POPC_OK;
}

static popc_status parse_norms(popc_run *r)
{
    int n_mean, n_std, auto_mean, auto_std;
    char where[700];
    popc_status st;

    if ((st = parse_norm(r, "mean", r->mean, &n_mean, &auto_mean)) ||
        (st = parse_norm(r, "std", r->std, &n_std, &auto_std)))
        return st;
    if (!n_mean && !n_std && !auto_mean && !auto_std)
        return POPC_OK;
    if (auto_mean != auto_std || n_mean != n_std)
        return popc_set_error(POPC_ECONFIG,
                              "%s: mean and std go together: both 'auto', "
                              "or the same number of values",
                              popci_run_where(r, "data",
                                              n_mean || auto_mean ? "mean"
                                                                  : "std",
                                              where, sizeof where));
    for (int i = 0; i < n_std; i++)
        if (!(r->std[i] > 0))
            return popc_set_error(POPC_ECONFIG,
                                  "%s: every std must be > 0",
                                  popci_run_where(r, "data", "std", where,
                                                  sizeof where));
    r->norm = auto_mean ? 2 : 1;
    r->n_norm = n_mean;
    return POPC_OK;
}

/* A key that only applies to the asynchronous modes. */
static popc_status async_only(popc_run *r, const char *key, int mode_ok)
{
    char where[700];

    if (mode_ok || !popci_run_has(r, "data", key))
        return POPC_OK;
    return popc_set_error(POPC_ECONFIG,
                          "%s: only applies to mode = async or "
                          "async_rebatched%s",
                          popci_run_where(r, "data", key, where, sizeof where),
                          strcmp(key, "rebatched_worker_size") == 0
                              ? " (rebatched_worker_size: async_rebatched)"
                              : "");
}

popc_status popci_run_parse_data(popc_run *r)
{
    static const char *const formats[] = {"auto", "idx", "npy", "csv", NULL};
    static const char *const modes[] = {"sync", "async", "async_rebatched",
                                        NULL};
    /* global first: index 0 is the default */
    static const char *const splits[] = {"global", "blocks", NULL};
    int split = 0;
    const char *label_column = NULL;
    int64_t seed = 0;
    int mode = 0;
    char where[700];
    popc_status st;

    if ((st = popci_run_check_keys(r, "data", data_keys)) ||
        (st = popci_config_get_enum(SRC("format"), "data", "format", formats,
                                    FMT_AUTO, &r->format)) ||
        (st = popci_run_path(r, "data", "train", 1, NULL, &r->train)) ||
        (st = popci_run_path(r, "data", "train_labels", 1, NULL,
                             &r->train_labels)) ||
        (st = popci_run_path(r, "data", "test", 1, NULL, &r->test)) ||
        (st = popci_run_path(r, "data", "test_labels", 1, NULL,
                             &r->test_labels)) ||
        (st = popci_config_get_string(SRC("label_column"), "data",
                                      "label_column", NULL, &label_column)) ||
        (st = popci_config_get_int(SRC("batch_size"), "data", "batch_size", 1,
                                   1, 1 << 24, &r->batch_size)) ||
        (st = popci_config_get_bool(SRC("shuffle"), "data", "shuffle", 0,
                                    &r->shuffle)) ||
        (st = popci_config_get_int(SRC("seed"), "data", "seed", 0, 0,
                                   INT64_MAX, &seed)) ||
        (st = popci_config_get_bool(SRC("drop_last"), "data", "drop_last", 1,
                                    &r->drop_last)) ||
        (st = popci_config_get_enum(SRC("mode"), "data", "mode", modes, 0,
                                    &mode)) ||
        (st = popci_config_get_int(SRC("workers"), "data", "workers", 1, 1,
                                   256, &r->workers)) ||
        (st = popci_config_get_int(SRC("buffer_size"), "data", "buffer_size",
                                   3, 1, 4096, &r->buffer_size)) ||
        (st = popci_config_get_bool(SRC("load_indefinitely"), "data",
                                    "load_indefinitely", 1,
                                    &r->load_indefinitely)) ||
        (st = popci_config_get_bool(SRC("early_preload"), "data",
                                    "early_preload", 0, &r->early_preload)) ||
        (st = popci_config_get_int(SRC("rebatched_worker_size"), "data",
                                   "rebatched_worker_size", 0, 1, 1 << 30,
                                   &r->rebatched_worker_size)) ||
        (st = popci_config_get_int(SRC("limit"), "data", "limit", 0, 1,
                                   INT64_MAX, &r->limit)) ||
        (st = popci_config_get_int(SRC("test_limit"), "data", "test_limit", 0,
                                   1, INT64_MAX, &r->test_limit)) ||
        (st = popci_config_get_enum(SRC("distributed_batches"), "data",
                                    "distributed_batches", splits, 0,
                                    &split)))
        return st;
    r->global_batches = split == 0;
    r->seed = (uint64_t)seed;
    r->mode = (popc_loader_mode)mode;
    if ((st = async_only(r, "workers", mode != 0)) ||
        (st = async_only(r, "buffer_size", mode != 0)) ||
        (st = async_only(r, "load_indefinitely", mode != 0)) ||
        (st = async_only(r, "early_preload", mode != 0)) ||
        (st = async_only(r, "rebatched_worker_size", mode == 2)))
        return st;
    if (label_column && !(r->label_column = popci_strdup(label_column)))
        return popc_set_error(POPC_ENOMEM, "out of memory");
    if (r->train && !r->train_labels && file_format(r, r->train) != FMT_CSV)
        return popc_set_error(POPC_ECONFIG,
                              "%s: training needs labels: add train_labels "
                              "= <file>",
                              popci_run_where(r, "data", "train", where,
                                              sizeof where));
    if ((r->train_labels && !r->train) || (r->test_labels && !r->test))
        return popc_set_error(POPC_ECONFIG,
                              "%s: labels without their samples file (add "
                              "%s = <file>)",
                              popci_run_where(r, "data",
                                              r->train_labels && !r->train
                                                  ? "train_labels"
                                                  : "test_labels",
                                              where, sizeof where),
                              r->train_labels && !r->train ? "train"
                                                           : "test");
    return parse_norms(r);
}

#undef SRC

static popc_status load_file(popc_run *r, popc_split split,
                             popc_dataset **out)
{
    const char *path = split == POPC_SPLIT_TRAIN ? r->train : r->test;
    const char *labels =
        split == POPC_SPLIT_TRAIN ? r->train_labels : r->test_labels;

    switch (file_format(r, path)) {
    case FMT_NPY:
        return popc_dataset_load_npy(path, labels, out);
    case FMT_CSV:
        return popc_dataset_load_csv(path, r->label_column, out);
    default:
        return popc_dataset_load_idx(path, labels, out);
    }
}

popc_status popc_run_load_dataset(popc_run *r, popc_split split,
                                  popc_dataset **out)
{
    const char *path = split == POPC_SPLIT_TRAIN ? r->train : r->test;
    int64_t limit = split == POPC_SPLIT_TRAIN ? r->limit : r->test_limit;
    popc_dataset *ds = NULL;
    char where[700];
    popc_status st;

    *out = NULL;
    if (!path)
        return popc_set_error(POPC_ENOTFOUND,
                              "%s: [data] names no %s file (add %s = "
                              "<file>)",
                              r->path,
                              split == POPC_SPLIT_TRAIN ? "train" : "test",
                              split == POPC_SPLIT_TRAIN ? "train" : "test");
    /* the test split is normalised with the train split's statistics */
    if (r->norm == 2 && r->n_norm == 0 && split != POPC_SPLIT_TRAIN) {
        if (!r->train)
            return popc_set_error(POPC_ECONFIG,
                                  "%s: mean = auto needs the train split "
                                  "to compute statistics; give numbers "
                                  "instead",
                                  popci_run_where(r, "data", "mean", where,
                                                  sizeof where));
        if ((st = popc_run_load_dataset(r, POPC_SPLIT_TRAIN, &ds)) != POPC_OK)
            return st;
        popc_dataset_free(ds);
        ds = NULL;
    }
    if ((st = load_file(r, split, &ds)) != POPC_OK)
        return st;
    if (limit > 0)
        popc_dataset_truncate(ds, limit);
    if (popc_dataset_has_labels(ds) &&
        (st = popc_dataset_set_classes(ds, (int)r->classes)) != POPC_OK) {
        st = popc_set_error(POPC_ECONFIG, "%s: %s",
                            popci_run_where(r, "model", "classes", where,
                                            sizeof where),
                            popc_last_error());
        goto fail;
    }
    if ((st = popc_dataset_set_sample_shape(ds, r->input, r->input_rank)) !=
        POPC_OK) {
        st = popc_set_error(POPC_ECONFIG, "%s: %s",
                            popci_run_where(r, "model", "input", where,
                                            sizeof where),
                            popc_last_error());
        goto fail;
    }
    if (r->norm == 2 && r->n_norm == 0) {
        double mean, std;

        popc_dataset_stats(ds, &mean, &std);
        r->mean[0] = (float)mean;
        r->std[0] = std > 0 ? (float)std : 1.0f;
        r->n_norm = 1;
    }
    if (r->n_norm &&
        (st = popc_dataset_normalize(ds, r->mean, r->std, r->n_norm)) !=
            POPC_OK) {
        st = popc_set_error(POPC_ECONFIG, "%s: %s",
                            popci_run_where(r, "data", "mean", where,
                                            sizeof where),
                            popc_last_error());
        goto fail;
    }
    *out = ds;
    return POPC_OK;
fail:
    popc_dataset_free(ds);
    return st;
}

popc_status popci_run_match_data(const popc_run *r, popc_split split,
                                 popc_dataset *ds, popc_dtype input)
{
    popc_dtype have = popc_dataset_feature_dtype(ds);
    const char *key = split == POPC_SPLIT_TRAIN ? "train" : "test";
    const char *file = split == POPC_SPLIT_TRAIN ? r->train : r->test;
    char where[700];

    if (have == input)
        return POPC_OK;
    if (input == POPC_DTYPE_I32 || input == POPC_DTYPE_I64) {
        if (have == POPC_DTYPE_F32)
            return popc_set_error(
                POPC_ECONFIG, "%s = %s: the data's features are float32, "
                "but the model's input is %s (such as token ids): give an "
                ".npy file of int32 or int64 features (np.int64), without "
                "mean and std", popci_run_where(r, "data", key, where,
                                                sizeof where),
                file, popc_dtype_name(input));
    } else if (input != POPC_DTYPE_F32) {
        return POPC_OK; /* the model refuses other dtypes itself */
    }
    if (popc_dataset_cast_features(ds, input) != POPC_OK)
        return popc_set_error(POPC_ECONFIG, "%s = %s: %s",
                              popci_run_where(r, "data", key, where,
                                              sizeof where),
                              file, popc_last_error());
    return POPC_OK;
}

popc_status popc_run_new_loader(const popc_run *r, popc_split split,
                                popc_dataset *ds, popc_dataloader **out)
{
    popc_loader_config cfg;

    popc_loader_config_init(&cfg);
    cfg.batch_size = r->batch_size;
    cfg.mode = r->mode;
    cfg.workers = (int)r->workers;
    cfg.buffer_size = (int)r->buffer_size;
    cfg.load_indefinitely = r->load_indefinitely;
    cfg.early_preload = r->early_preload;
    cfg.rebatched_worker_size = r->rebatched_worker_size;
    if (split == POPC_SPLIT_TRAIN) {
        cfg.shuffle = r->shuffle;
        cfg.seed = r->seed;
        cfg.drop_last = r->drop_last;
        cfg.global_batches = r->global_batches;
        return popc_dataloader_new(ds, r->opts, &cfg, out);
    }
    cfg.drop_last = 0;
    cfg.pad_last = 1;
    /* rank 0 alone evaluates and infers, on the whole split */
    cfg.auto_distributed_partitioning = 0;
    /* the inference combined batch has no gradient accumulation */
    cfg.rebatched_worker_size = 0;
    return popc_dataloader_new(ds, r->infer_opts, &cfg, out);
}
