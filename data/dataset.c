/* dataset.c - in-memory datasets: samples, labels, scaling and
** normalisation, and the gather that builds batches.
**
** Features are kept in the element type they were read in (uint8 images
** stay one byte a value) and converted to float32 only when a batch is
** gathered, with torchvision's arithmetic: x / 255 for uint8, then
** (x - mean) / std. So a dataset costs its file size in memory, and the
** conversion is one pass over the batch. int32 and int64 features (token
** ids) are the exception: their batches keep the integers, unchanged,
** for a model whose input is an integer (an embedding's indices).
*/
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/data.h"
#include "core/layer/alloc.h"
#include "data/data_priv.h"

struct popc_dataset {
    char *source;
    int64_t n;
    int rank;
    int64_t dims[POPC_MAX_RANK];
    int64_t numel;          /* elements per sample */
    popc_dtype storage;     /* POPC_DTYPE_U8, F32, or I32/I64 (ids) */
    void *data;
    int32_t *labels;        /* NULL: unlabelled */
    int n_classes;          /* declared; 0: not declared */
    int n_norm;             /* 0: no normalisation */
    float *mean;
    float *std;
};

/* ---- internal helpers --------------------------------------------------- */

char *popci_dataset_source_name(const char *a, const char *b)
{
    size_t len = strlen(a) + (b ? strlen(b) + 3 : 0) + 1;
    char *s = popci_malloc(len);

    if (!s)
        return NULL;
    if (b)
        snprintf(s, len, "%s + %s", a, b);
    else
        snprintf(s, len, "%s", a);
    return s;
}

popc_status popci_dataset_check_counts(const char *features_path,
                                       int64_t n_features,
                                       const char *labels_path,
                                       int64_t n_labels)
{
    if (n_features == n_labels)
        return POPC_OK;
    return popc_set_error(POPC_EIO,
                          "%s has %lld samples but %s has %lld labels: the "
                          "two files must describe the same samples (check "
                          "that they belong to the same split, e.g. both "
                          "train or both t10k)",
                          features_path, (long long)n_features, labels_path,
                          (long long)n_labels);
}

popc_status popci_dataset_new(const char *source, int64_t n,
                              const int64_t *dims, int rank,
                              popc_dtype storage, void *features,
                              int32_t *labels, popc_dataset **out)
{
    popc_dataset *ds;

    *out = NULL;
    if (rank < 1 || rank > POPC_MAX_RANK) {
        free(features);
        free(labels);
        return popc_set_error(POPC_EIO,
                              "%s: samples have %d dimensions; popc reads "
                              "1 to %d",
                              source, rank, POPC_MAX_RANK);
    }
    if (!(ds = popci_calloc(1, sizeof *ds)) ||
        !(ds->source = popci_strdup(source))) {
        free(ds);
        free(features);
        free(labels);
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", source);
    }
    ds->n = n;
    ds->rank = rank;
    ds->numel = 1;
    for (int i = 0; i < rank; i++) {
        ds->dims[i] = dims[i];
        ds->numel *= dims[i];
    }
    ds->storage = storage;
    ds->data = features;
    ds->labels = labels;
    *out = ds;
    return POPC_OK;
}

/* Feature i of the whole set as a number (float32 and integer storage). */
static double value_at(const popc_dataset *ds, int64_t i)
{
    switch (ds->storage) {
    case POPC_DTYPE_I32: return ((const int32_t *)ds->data)[i];
    case POPC_DTYPE_I64: return (double)((const int64_t *)ds->data)[i];
    case POPC_DTYPE_U8: return ((const uint8_t *)ds->data)[i];
    default: return ((const float *)ds->data)[i];
    }
}

int popci_dataset_is_integer(const popc_dataset *ds)
{
    return ds->storage == POPC_DTYPE_I32 || ds->storage == POPC_DTYPE_I64;
}

popc_status popci_dataset_gather_ids(const popc_dataset *ds,
                                     const int64_t *indices, int64_t n,
                                     void *features, int32_t *labels)
{
    size_t row_bytes = (size_t)ds->numel * popc_dtype_size(ds->storage);

    for (int64_t r = 0; r < n; r++) {
        int64_t row = indices[r];

        if (row < 0 || row >= ds->n)
            return popc_set_error(POPC_EINVAL,
                                  "%s: sample index %lld is outside 0..%lld",
                                  ds->source, (long long)row,
                                  (long long)ds->n - 1);
        memcpy((char *)features + (size_t)r * row_bytes,
               (const char *)ds->data + (size_t)row * row_bytes, row_bytes);
        if (labels)
            labels[r] = ds->labels ? ds->labels[row] : 0;
    }
    return POPC_OK;
}

/* ---- public API --------------------------------------------------------- */

popc_dtype popc_dataset_feature_dtype(const popc_dataset *ds)
{
    return popci_dataset_is_integer(ds) ? ds->storage : POPC_DTYPE_F32;
}

popc_status popc_dataset_cast_features(popc_dataset *ds, popc_dtype dtype)
{
    int64_t total = ds->n * ds->numel;
    void *data;

    if (dtype == popc_dataset_feature_dtype(ds))
        return POPC_OK;
    if (dtype != POPC_DTYPE_F32 && dtype != POPC_DTYPE_I32 &&
        dtype != POPC_DTYPE_I64)
        return popc_set_error(POPC_EINVAL, "%s: features can be float32, "
                              "int32 or int64, not %s", ds->source,
                              popc_dtype_name(dtype));
    if (!popci_dataset_is_integer(ds))
        return popc_set_error(POPC_EINVAL, "%s: features are float32 (or "
                              "scaled uint8), not integers: they cannot "
                              "become %s; save the ids as an integer array "
                              "(np.int64)", ds->source,
                              popc_dtype_name(dtype));
    if (!(data = popci_malloc((size_t)total * popc_dtype_size(dtype))))
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", ds->source);
    for (int64_t i = 0; i < total; i++) {
        int64_t v = ds->storage == POPC_DTYPE_I32
                        ? ((const int32_t *)ds->data)[i]
                        : ((const int64_t *)ds->data)[i];

        if (dtype == POPC_DTYPE_I32 && (v < INT32_MIN || v > INT32_MAX)) {
            free(data);
            return popc_set_error(POPC_EINVAL, "%s: feature %lld of sample "
                                  "%lld is %lld, outside int32; the model "
                                  "needs int32 ids", ds->source,
                                  (long long)(i % ds->numel),
                                  (long long)(i / ds->numel), (long long)v);
        }
        if (dtype == POPC_DTYPE_F32)
            ((float *)data)[i] = (float)v;
        else if (dtype == POPC_DTYPE_I32)
            ((int32_t *)data)[i] = (int32_t)v;
        else
            ((int64_t *)data)[i] = v;
    }
    free(ds->data);
    ds->data = data;
    ds->storage = dtype;
    return POPC_OK;
}

void popc_dataset_free(popc_dataset *ds)
{
    if (!ds)
        return;
    free(ds->source);
    free(ds->data);
    free(ds->labels);
    free(ds->mean);
    free(ds->std);
    free(ds);
}

popc_status popci_dataset_from_tensors(const char *features_name,
                                       const char *labels_name,
                                       const popc_tensor *features,
                                       const popc_tensor *labels,
                                       popc_dataset **out)
{
    popc_tensor *f32 = NULL, *l32 = NULL;
    void *data = NULL;
    int32_t *lab = NULL;
    char *source = NULL;
    popc_dtype storage;
    int64_t n, numel;
    int rank;
    popc_status st;

    *out = NULL;
    rank = popc_tensor_rank(features);
    if (rank < 2)
        return popc_set_error(POPC_EINVAL,
                              "%s: features must be [samples, sample "
                              "dims...] but have rank %d",
                              features_name, rank);
    n = popc_tensor_dims(features)[0];
    numel = popc_tensor_numel(features);
    if (n < 1 || numel == 0)
        return popc_set_error(POPC_EINVAL, "%s: holds no samples or "
                              "samples without values",
                              features_name);
    if (labels) {
        popc_dtype ldt = popc_tensor_dtype(labels);
        int lrank = popc_tensor_rank(labels);
        const int64_t *ld = popc_tensor_dims(labels);

        if (ldt != POPC_DTYPE_I32 && ldt != POPC_DTYPE_I64 &&
            ldt != POPC_DTYPE_U8)
            return popc_set_error(POPC_EINVAL,
                                  "%s: labels must be int32, int64 or "
                                  "uint8, not %s",
                                  labels_name, popc_dtype_name(ldt));
        if (!(lrank == 1 || (lrank == 2 && ld[1] == 1)))
            return popc_set_error(POPC_EINVAL,
                                  "%s: labels must be 1-d (one per sample) "
                                  "but have rank %d",
                                  labels_name, lrank);
        if ((st = popci_dataset_check_counts(features_name, n, labels_name,
                                             ld[0])) != POPC_OK)
            return st;
    }
    if (popc_tensor_dtype(features) == POPC_DTYPE_U8 ||
        popc_tensor_dtype(features) == POPC_DTYPE_I32 ||
        popc_tensor_dtype(features) == POPC_DTYPE_I64) {
        size_t bytes = (size_t)numel *
                       popc_dtype_size(popc_tensor_dtype(features));

        storage = popc_tensor_dtype(features);
        if (!(data = popci_malloc(bytes)))
            goto nomem;
        memcpy(data, popc_tensor_cdata(features), bytes);
    } else {
        storage = POPC_DTYPE_F32;
        if ((st = popc_tensor_cast(features, POPC_DTYPE_F32, &f32)) !=
            POPC_OK)
            goto fail;
        if (!(data = popci_malloc((size_t)numel * sizeof(float))))
            goto nomem;
        memcpy(data, popc_tensor_cdata(f32), (size_t)numel * sizeof(float));
    }
    if (labels) {
        if ((st = popc_tensor_cast(labels, POPC_DTYPE_I32, &l32)) != POPC_OK)
            goto fail;
        if (!(lab = popci_malloc((size_t)n * sizeof *lab)))
            goto nomem;
        memcpy(lab, popc_tensor_cdata(l32), (size_t)n * sizeof *lab);
    }
    if (!(source = popci_dataset_source_name(features_name, labels_name)))
        goto nomem;
    popc_tensor_free(f32);
    popc_tensor_free(l32);
    /* ownership of data and lab passes on, also on failure */
    st = popci_dataset_new(source, n, popc_tensor_dims(features) + 1,
                           rank - 1, storage, data, lab, out);
    free(source);
    return st;
nomem:
    st = popc_set_error(POPC_ENOMEM, "%s: out of memory", features_name);
fail:
    popc_tensor_free(f32);
    popc_tensor_free(l32);
    free(data);
    free(lab);
    return st;
}

popc_status popc_dataset_from_tensors(const popc_tensor *features,
                                      const popc_tensor *labels,
                                      popc_dataset **out)
{
    *out = NULL;
    if (!features)
        return popc_set_error(POPC_EINVAL,
                              "popc_dataset_from_tensors: features is NULL");
    return popci_dataset_from_tensors("features tensor",
                                      labels ? "labels tensor" : NULL,
                                      features, labels, out);
}

popc_status popc_dataset_set_classes(popc_dataset *ds, int n_classes)
{
    if (n_classes < 1)
        return popc_set_error(POPC_EINVAL,
                              "%s: class count %d must be at least 1",
                              ds->source, n_classes);
    if (!ds->labels)
        return popc_set_error(POPC_EINVAL,
                              "%s: has no labels, so it cannot be checked "
                              "against %d classes; give a labels file",
                              ds->source, n_classes);
    for (int64_t i = 0; i < ds->n; i++)
        if (ds->labels[i] < 0 || ds->labels[i] >= n_classes)
            return popc_set_error(POPC_EINVAL,
                                  "%s: label %d of sample %lld is out of "
                                  "range for %d classes (labels must be 0.."
                                  "%d); declare the right number of classes "
                                  "or fix the labels",
                                  ds->source, (int)ds->labels[i],
                                  (long long)i, n_classes, n_classes - 1);
    ds->n_classes = n_classes;
    return POPC_OK;
}

void popc_dataset_truncate(popc_dataset *ds, int64_t n)
{
    if (n >= 1 && n < ds->n)
        ds->n = n;
}

static void format_shape(const int64_t *dims, int rank, char *buf,
                         size_t size)
{
    size_t off = 0;

    off += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < rank && off < size; i++)
        off += (size_t)snprintf(buf + off, size - off, "%s%lld",
                                i ? ", " : "", (long long)dims[i]);
    if (off < size)
        snprintf(buf + off, size - off, "]");
}

popc_status popc_dataset_set_sample_shape(popc_dataset *ds,
                                          const int64_t *dims, int rank)
{
    char have[128], want[128];
    int64_t numel = 1;

    if (rank < 1 || rank > POPC_MAX_RANK)
        return popc_set_error(POPC_EINVAL,
                              "%s: sample rank %d is outside 1..%d",
                              ds->source, rank, POPC_MAX_RANK);
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 1)
            return popc_set_error(POPC_EINVAL,
                                  "%s: sample dimension %d is %lld; every "
                                  "dimension must be at least 1",
                                  ds->source, i, (long long)dims[i]);
        numel *= dims[i];
    }
    format_shape(ds->dims, ds->rank, have, sizeof have);
    format_shape(dims, rank, want, sizeof want);
    if (numel != ds->numel)
        return popc_set_error(POPC_EINVAL,
                              "%s: samples of shape %s (%lld values) cannot "
                              "be viewed as %s (%lld values); give an input "
                              "shape with the same number of values",
                              ds->source, have, (long long)ds->numel, want,
                              (long long)numel);
    if (ds->n_norm > 1 && dims[0] != ds->n_norm)
        return popc_set_error(POPC_EINVAL,
                              "%s: samples normalised per channel (%d "
                              "channels) cannot take shape %s",
                              ds->source, ds->n_norm, want);
    ds->rank = rank;
    memcpy(ds->dims, dims, (size_t)rank * sizeof *dims);
    return POPC_OK;
}

popc_status popc_dataset_normalize(popc_dataset *ds, const float *mean,
                                   const float *std, int n)
{
    popc_status st;
    float *m, *s;

    if (n < 1 || !mean || !std)
        return popc_set_error(POPC_EINVAL,
                              "%s: normalisation needs at least one mean "
                              "and std",
                              ds->source);
    if (n > 1 && (ds->rank < 2 || ds->dims[0] != n))
        return popc_set_error(POPC_EINVAL,
                              "%s: %d normalisation values given but "
                              "samples have %lld channels (first sample "
                              "dimension of %d); give 1 value or one per "
                              "channel",
                              ds->source, n, (long long)ds->dims[0],
                              ds->rank);
    for (int i = 0; i < n; i++)
        if (!isfinite(mean[i]) || !isfinite(std[i]) || !(std[i] > 0))
            return popc_set_error(POPC_EINVAL,
                                  "%s: normalisation value %d (mean %g, std "
                                  "%g) is invalid: std must be > 0 and both "
                                  "finite",
                                  ds->source, i, (double)mean[i],
                                  (double)std[i]);
    /* normalised ids are no longer ids: the features become float32 */
    if (popci_dataset_is_integer(ds) &&
        (st = popc_dataset_cast_features(ds, POPC_DTYPE_F32)) != POPC_OK)
        return st;
    m = popci_malloc((size_t)n * sizeof *m);
    s = popci_malloc((size_t)n * sizeof *s);
    if (!m || !s) {
        free(m);
        free(s);
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", ds->source);
    }
    memcpy(m, mean, (size_t)n * sizeof *m);
    memcpy(s, std, (size_t)n * sizeof *s);
    free(ds->mean);
    free(ds->std);
    ds->mean = m;
    ds->std = s;
    ds->n_norm = n;
    return POPC_OK;
}

void popc_dataset_stats(const popc_dataset *ds, double *mean, double *std)
{
    int64_t total = ds->n * ds->numel;
    double sum = 0, sq = 0;

    if (ds->storage == POPC_DTYPE_U8) {
        /* a histogram is exact and one pass over bytes */
        const uint8_t *p = ds->data;
        int64_t hist[256] = {0};

        for (int64_t i = 0; i < total; i++)
            hist[p[i]]++;
        for (int v = 0; v < 256; v++) {
            double x = (double)(float)((float)v / 255.0f);

            sum += x * (double)hist[v];
            sq += x * x * (double)hist[v];
        }
    } else {
        for (int64_t i = 0; i < total; i++) {
            double x = value_at(ds, i);

            sum += x;
            sq += x * x;
        }
    }
    if (total == 0) {
        *mean = 0;
        *std = 0;
        return;
    }
    *mean = sum / (double)total;
    *std = sqrt(fmax(sq / (double)total - *mean * *mean, 0.0));
}

int64_t popc_dataset_size(const popc_dataset *ds)
{
    return ds->n;
}

const int64_t *popc_dataset_sample_shape(const popc_dataset *ds, int *rank)
{
    if (rank)
        *rank = ds->rank;
    return ds->dims;
}

int64_t popc_dataset_sample_numel(const popc_dataset *ds)
{
    return ds->numel;
}

int popc_dataset_has_labels(const popc_dataset *ds)
{
    return ds->labels != NULL;
}

int popc_dataset_label_count(const popc_dataset *ds)
{
    int32_t max = -1;

    if (!ds->labels)
        return 0;
    for (int64_t i = 0; i < ds->n; i++)
        if (ds->labels[i] > max)
            max = ds->labels[i];
    return (int)max + 1;
}

const char *popc_dataset_source(const popc_dataset *ds)
{
    return ds->source;
}

popc_status popc_dataset_gather(const popc_dataset *ds,
                                const int64_t *indices, int64_t n,
                                float *features, int32_t *labels)
{
    const int64_t numel = ds->numel;
    const int64_t per_channel = ds->n_norm ? numel / ds->n_norm : numel;

    for (int64_t r = 0; r < n; r++) {
        int64_t row = indices[r];
        float *dst = features + r * numel;

        if (row < 0 || row >= ds->n)
            return popc_set_error(POPC_EINVAL,
                                  "%s: sample index %lld is outside 0..%lld",
                                  ds->source, (long long)row,
                                  (long long)ds->n - 1);
        if (ds->storage == POPC_DTYPE_U8) {
            const uint8_t *src = (const uint8_t *)ds->data + row * numel;

            for (int64_t k = 0; k < numel; k++)
                dst[k] = (float)src[k] / 255.0f;
        } else if (ds->storage == POPC_DTYPE_F32) {
            memcpy(dst, (const float *)ds->data + row * numel,
                   (size_t)numel * sizeof *dst);
        } else {
            for (int64_t k = 0; k < numel; k++)
                dst[k] = (float)value_at(ds, row * numel + k);
        }
        for (int c = 0; c < ds->n_norm; c++) {
            float *p = dst + c * per_channel;
            const float m = ds->mean[c], s = ds->std[c];

            for (int64_t k = 0; k < per_channel; k++)
                p[k] = (p[k] - m) / s;
        }
        if (labels)
            labels[r] = ds->labels ? ds->labels[row] : 0;
    }
    return POPC_OK;
}
