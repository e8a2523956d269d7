/* dataset_idx.c - IDX files (the MNIST / Fashion-MNIST format), plain or
** gzip-compressed.
**
** An IDX file is a 4-byte magic (0, 0, element type, number of
** dimensions), the dimensions as big-endian uint32, then the elements in
** big-endian row-major order. zlib's gz* functions read compressed and
** plain files alike, so the format is detected from the content, never
** from the file name. The file must hold exactly what its header
** declares: a short file is "truncated", a longer one has "extra data".
*/
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "popc/data.h"
#include "core/layer/alloc.h"
#include "data/data_priv.h"

#define IDX_MAX_DIMS (POPC_MAX_RANK + 1)

typedef struct idx_file {
    const char *path;
    gzFile gz;
    int type;                 /* IDX element type code */
    int elem_size;
    int ndims;
    int64_t dims[IDX_MAX_DIMS];
    int64_t count;            /* elements */
} idx_file;

static const char *type_name(int type)
{
    switch (type) {
    case 0x08: return "uint8";
    case 0x09: return "int8";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return NULL;
    }
}

static int type_size(int type)
{
    switch (type) {
    case 0x08: case 0x09: return 1;
    case 0x0B: return 2;
    case 0x0C: case 0x0D: return 4;
    case 0x0E: return 8;
    default: return 0;
    }
}

/* Read exactly n bytes; POPC_EIO naming the file when it ends early.
** The n bytes may be a part of a block of whole bytes, before of which
** were read already (for the message; whole 0: the block is n bytes). */
static popc_status read_exact(idx_file *f, void *buf, size_t n,
                              const char *what, int64_t *got_total,
                              size_t before, size_t whole)
{
    unsigned char *p = buf;
    size_t done = 0;

    while (done < n) {
        unsigned chunk = n - done > (1u << 30) ? (1u << 30)
                                               : (unsigned)(n - done);
        int r = gzread(f->gz, p + done, chunk);

        if (r <= 0) {
            int zerr = Z_OK;
            const char *msg = gzerror(f->gz, &zerr);

            if (r < 0 && zerr != Z_BUF_ERROR)
                return popc_set_error(POPC_EIO,
                                      "%s: cannot read %s: %s", f->path,
                                      what,
                                      zerr == Z_ERRNO ? strerror(errno)
                                                      : msg);
            if (got_total)
                *got_total += (int64_t)done;
            return popc_set_error(
                POPC_EIO,
                "%s: truncated: the %s needs %zu bytes but the file ends "
                "after %zu%s; the file is incomplete (download it again)",
                f->path, what, whole ? whole : n, before + done,
                zerr == Z_BUF_ERROR ? " (compressed stream cut short)" : "");
        }
        done += (size_t)r;
    }
    if (got_total)
        *got_total += (int64_t)done;
    return POPC_OK;
}

/* The header is a claim: before its elements are allocated, check that
** the file can hold them. A plain file must hold them all; a gzip file
** can expand at most 1032 times (deflate's limit). */
static popc_status check_claim(const idx_file *f)
{
    struct stat sb;
    double need = (double)f->count * (double)f->elem_size;
    double have;

    if (stat(f->path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return POPC_OK; /* pipes: the short read check applies */
    have = (double)sb.st_size;
    if (!gzdirect(f->gz))
        have = have * 1032.0 + 65536.0;
    if (need > have)
        return popc_set_error(POPC_EIO, "%s: the IDX header declares %.0f "
                              "bytes of data but the %lld-byte file cannot "
                              "hold them: the file is truncated or corrupt",
                              f->path, need, (long long)sb.st_size);
    return POPC_OK;
}

static popc_status open_idx(const char *path, idx_file *f)
{
    unsigned char magic[4], raw[4 * IDX_MAX_DIMS];
    popc_status st;

    memset(f, 0, sizeof *f);
    f->path = path;
    errno = 0;
    if (!(f->gz = gzopen(path, "rb")))
        return popc_set_error(POPC_EIO, "%s: cannot open: %s", path,
                              errno ? strerror(errno) : "out of memory");
    gzbuffer(f->gz, 1u << 17);
    if ((st = read_exact(f, magic, 4, "IDX magic", NULL, 0, 0)) != POPC_OK)
        return st;
    if (magic[0] != 0 || magic[1] != 0 || !type_name(magic[2]) ||
        magic[3] < 1 || magic[3] > IDX_MAX_DIMS)
        return popc_set_error(
            POPC_EIO,
            "%s: not an IDX file: wrong magic %02x %02x %02x %02x (an IDX "
            "file starts with 00 00, a type code 08 09 0b 0c 0d or 0e, and "
            "1 to %d dimensions); check the path and that the download is "
            "not an error page",
            path, magic[0], magic[1], magic[2], magic[3], IDX_MAX_DIMS);
    f->type = magic[2];
    f->elem_size = type_size(f->type);
    f->ndims = magic[3];
    if ((st = read_exact(f, raw, (size_t)f->ndims * 4, "dimension list",
                         NULL, 0, 0)) != POPC_OK)
        return st;
    f->count = 1;
    for (int i = 0; i < f->ndims; i++) {
        f->dims[i] = (int64_t)raw[4 * i] << 24 |
                     (int64_t)raw[4 * i + 1] << 16 |
                     (int64_t)raw[4 * i + 2] << 8 | (int64_t)raw[4 * i + 3];
        /* 2^40 bytes is far beyond any dataset; it also stops overflow */
        if (f->dims[i] > 0 && f->count > (INT64_C(1) << 40) / f->dims[i])
            return popc_set_error(POPC_EIO,
                                  "%s: IDX header declares an impossible "
                                  "size (dimension %d is %lld)",
                                  path, i, (long long)f->dims[i]);
        f->count *= f->dims[i];
    }
    for (int i = 0; i < f->ndims; i++)
        if (f->dims[i] == 0)
            return popc_set_error(POPC_EIO,
                                  "%s: IDX dimension %d is 0: the file holds "
                                  "no samples",
                                  path, i);
    return check_claim(f);
}

/* The whole element block into *out (popci_malloc'ed), then a check that
** nothing follows it. A gzip file may claim up to 1032 times its size
** (check_claim) yet hold far less: its buffer grows with the bytes that
** actually arrive, so a small file that claims a gigabyte costs what it
** holds before its short read is reported, not the gigabyte. */
static popc_status read_payload(idx_file *f, unsigned char **out)
{
    size_t bytes = (size_t)f->count * (size_t)f->elem_size, have = 0;
    size_t cap = gzdirect(f->gz) || bytes < ((size_t)1 << 24)
                     ? bytes
                     : (size_t)1 << 24;
    unsigned char *buf = popci_malloc(cap + 1), extra;
    popc_status st;

    while (buf && have < bytes) {
        size_t want = cap - have;

        st = read_exact(f, buf + have, want, "data declared by the header",
                        NULL, have, bytes);
        if (st != POPC_OK) {
            free(buf);
            return st;
        }
        have += want;
        if (have < bytes) {
            unsigned char *grown;

            cap = bytes - cap > cap ? 2 * cap : bytes;
            if (!(grown = popci_realloc(buf, cap + 1))) {
                free(buf);
                buf = NULL;
            } else {
                buf = grown;
            }
        }
    }
    if (!buf)
        return popc_set_error(POPC_ENOMEM, "%s: out of memory for %zu "
                              "bytes of data", f->path, bytes);
    if (gzread(f->gz, &extra, 1) == 1) {
        free(buf);
        return popc_set_error(POPC_EIO,
                              "%s: extra data after the %zu bytes declared "
                              "by the IDX header; the file is corrupt or "
                              "not the file you meant",
                              f->path, bytes);
    }
    *out = buf;
    return POPC_OK;
}

static uint64_t be(const unsigned char *p, int n)
{
    uint64_t v = 0;

    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* Element i of a big-endian block as double (integers are exact). */
static double element(const idx_file *f, const unsigned char *raw, int64_t i)
{
    const unsigned char *p = raw + i * f->elem_size;
    uint64_t v = be(p, f->elem_size);

    switch (f->type) {
    case 0x08: return (double)v;
    case 0x09: return (double)(int8_t)v;
    case 0x0B: return (double)(int16_t)(uint16_t)v;
    case 0x0C: return (double)(int32_t)(uint32_t)v;
    case 0x0D: {
        uint32_t u = (uint32_t)v;
        float x;

        memcpy(&x, &u, sizeof x);
        return x;
    }
    default: {
        double x;

        memcpy(&x, &v, sizeof x);
        return x;
    }
    }
}

static popc_status read_images(const char *path, int64_t *n, int *rank,
                               int64_t *dims, popc_dtype *storage,
                               void **out)
{
    idx_file f;
    unsigned char *raw = NULL;
    float *conv = NULL;
    popc_status st;

    *out = NULL;
    if ((st = open_idx(path, &f)) != POPC_OK)
        goto done;
    if (f.ndims < 2) {
        st = popc_set_error(POPC_EIO,
                            "%s: an IDX images file needs at least 2 "
                            "dimensions (samples, features...) but this one "
                            "has 1 (%lld values): is it a labels file?",
                            path, (long long)f.dims[0]);
        goto done;
    }
    if ((st = read_payload(&f, &raw)) != POPC_OK)
        goto done;
    *n = f.dims[0];
    *rank = f.ndims - 1;
    memcpy(dims, f.dims + 1, (size_t)(f.ndims - 1) * sizeof *dims);
    if (f.type == 0x08) {
        *storage = POPC_DTYPE_U8;
        *out = raw;
        raw = NULL;
        goto done;
    }
    if (!(conv = popci_malloc((size_t)f.count * sizeof *conv + 1))) {
        st = popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    for (int64_t i = 0; i < f.count; i++)
        conv[i] = (float)element(&f, raw, i);
    *storage = POPC_DTYPE_F32;
    *out = conv;
done:
    free(raw);
    if (f.gz)
        gzclose(f.gz);
    return st;
}

static popc_status read_labels(const char *path, int64_t *n, int32_t **out)
{
    idx_file f;
    unsigned char *raw = NULL;
    int32_t *lab = NULL;
    popc_status st;

    *out = NULL;
    if ((st = open_idx(path, &f)) != POPC_OK)
        goto done;
    if (f.ndims != 1 && !(f.ndims == 2 && f.dims[1] == 1)) {
        st = popc_set_error(POPC_EIO,
                            "%s: an IDX labels file must be 1-d (one label "
                            "per sample) but has %d dimensions: is it an "
                            "images file?",
                            path, f.ndims);
        goto done;
    }
    if (f.type == 0x0D || f.type == 0x0E) {
        st = popc_set_error(POPC_EIO,
                            "%s: labels must have an integer type, not %s",
                            path, type_name(f.type));
        goto done;
    }
    if ((st = read_payload(&f, &raw)) != POPC_OK)
        goto done;
    if (!(lab = popci_malloc((size_t)f.count * sizeof *lab + 1))) {
        st = popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    for (int64_t i = 0; i < f.count; i++)
        lab[i] = (int32_t)element(&f, raw, i);
    *n = f.count;
    *out = lab;
    lab = NULL;
done:
    free(raw);
    free(lab);
    if (f.gz)
        gzclose(f.gz);
    return st;
}

popc_status popc_dataset_load_idx(const char *images, const char *labels,
                                  popc_dataset **out)
{
    int64_t n = 0, n_labels = 0, dims[POPC_MAX_RANK];
    int rank = 0;
    popc_dtype storage = POPC_DTYPE_U8;
    void *data = NULL;
    int32_t *lab = NULL;
    char *source = NULL;
    popc_status st;

    *out = NULL;
    if (!images)
        return popc_set_error(POPC_EINVAL,
                              "popc_dataset_load_idx: images path is NULL");
    if ((st = read_images(images, &n, &rank, dims, &storage, &data)) !=
        POPC_OK)
        goto fail;
    if (labels) {
        if ((st = read_labels(labels, &n_labels, &lab)) != POPC_OK)
            goto fail;
        if ((st = popci_dataset_check_counts(images, n, labels, n_labels)) !=
            POPC_OK)
            goto fail;
    }
    if (!(source = popci_dataset_source_name(images, labels))) {
        st = popc_set_error(POPC_ENOMEM, "%s: out of memory", images);
        goto fail;
    }
    st = popci_dataset_new(source, n, dims, rank, storage, data, lab, out);
    free(source);
    return st;
fail:
    free(data);
    free(lab);
    return st;
}
