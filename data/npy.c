/* npy.c - NumPy .npy files (format 1.0, 2.0 and 3.0).
**
** A file is the magic "\x93NUMPY", a version byte pair, a little-endian
** header length (2 bytes in 1.0, 4 in 2.0/3.0), a Python dict literal with
** 'descr', 'fortran_order' and 'shape', then the raw elements. We write
** 1.0 (rank <= 8 always fits) with the header padded to 64 bytes as NumPy
** does. Elements are stored little endian whatever the host.
*/
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "popc/tensor.h"
#include "core/layer/alloc.h"
#include "fileio/atomic_file.h"
#include "core/layer/shape.h"

/* NumPy refuses headers above 10000 bytes by default; allow more but keep
** a corrupt length from making us allocate gigabytes. */
#define MAX_HEADER (1u << 20)

static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

static int host_is_little(void)
{
    const uint16_t one = 1;
    unsigned char b;

    memcpy(&b, &one, 1);
    return b == 1;
}

static void swap_bytes(void *data, size_t esize, size_t n)
{
    unsigned char *p = data;

    if (esize < 2 || host_is_little())
        return;
    for (size_t i = 0; i < n; i++, p += esize)
        for (size_t j = 0; j < esize / 2; j++) {
            unsigned char c = p[j];
            p[j] = p[esize - 1 - j];
            p[esize - 1 - j] = c;
        }
}

/* ---- header parsing ------------------------------------------------------ */

typedef struct header {
    char descr[32];
    int have_descr, have_fortran, have_shape;
    int fortran;
    int rank;
    int64_t dims[POPC_MAX_RANK];
} header;

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

/* A quoted Python string ('x' or "x") into buf; NULL if malformed. */
static const char *parse_str(const char *p, char *buf, size_t size)
{
    char q = *p;
    size_t n = 0;

    if (q != '\'' && q != '"')
        return NULL;
    for (p++; *p && *p != q; p++) {
        if (n + 1 >= size)
            return NULL;
        buf[n++] = *p;
    }
    if (*p != q)
        return NULL;
    buf[n] = '\0';
    return p + 1;
}

static const char *parse_shape(const char *p, header *h, const char *path,
                               popc_status *st)
{
    if (*p != '(')
        return NULL;
    p = skip_ws(p + 1);
    h->rank = 0;
    while (*p != ')') {
        char *end;
        long long v;

        if (*p < '0' || *p > '9')
            return NULL;
        errno = 0;
        v = strtoll(p, &end, 10);
        if (errno == ERANGE) {
            *st = popc_set_error(POPC_EIO, "%s: corrupt .npy header: shape "
                                 "dimension out of range", path);
            return NULL;
        }
        if (h->rank == POPC_MAX_RANK) {
            *st = popc_set_error(POPC_EUNSUPPORTED, "%s: array has more than "
                                 "%d dimensions; popc tensors have at most %d",
                                 path, POPC_MAX_RANK, POPC_MAX_RANK);
            return NULL;
        }
        h->dims[h->rank++] = v;
        p = skip_ws(end);
        /* NumPy writes 'L' suffixes in files from Python 2. */
        if (*p == 'L')
            p = skip_ws(p + 1);
        if (*p == ',')
            p = skip_ws(p + 1);
        else if (*p != ')')
            return NULL;
    }
    return p + 1;
}

static popc_status parse_header(const char *text, header *h, const char *path)
{
    const char *p = skip_ws(text);
    popc_status st = POPC_OK;

    memset(h, 0, sizeof *h);
    if (*p != '{')
        goto corrupt;
    p = skip_ws(p + 1);
    while (*p != '}') {
        char key[32];

        if (!(p = parse_str(p, key, sizeof key)))
            goto corrupt;
        p = skip_ws(p);
        if (*p != ':')
            goto corrupt;
        p = skip_ws(p + 1);
        if (strcmp(key, "descr") == 0) {
            if (*p == '[')
                return popc_set_error(POPC_EUNSUPPORTED, "%s: structured "
                                      "dtypes are not supported; save a "
                                      "plain array", path);
            if (!(p = parse_str(p, h->descr, sizeof h->descr)))
                goto corrupt;
            h->have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (strncmp(p, "True", 4) == 0) {
                h->fortran = 1;
                p += 4;
            } else if (strncmp(p, "False", 5) == 0) {
                p += 5;
            } else {
                goto corrupt;
            }
            h->have_fortran = 1;
        } else if (strcmp(key, "shape") == 0) {
            if (!(p = parse_shape(p, h, path, &st))) {
                if (st != POPC_OK)
                    return st;
                goto corrupt;
            }
            h->have_shape = 1;
        } else {
            goto corrupt;
        }
        p = skip_ws(p);
        if (*p == ',')
            p = skip_ws(p + 1);
        else if (*p != '}')
            goto corrupt;
    }
    if (!h->have_descr || !h->have_fortran || !h->have_shape)
        goto corrupt;
    return POPC_OK;
corrupt:
    return popc_set_error(POPC_EIO, "%s: corrupt .npy header (expected "
                          "{'descr': ..., 'fortran_order': ..., 'shape': "
                          "(...)}): \"%.80s\"", path, text);
}

/* Maps a descr to a dtype; *wide is set for <f8 when it is read as
** float32 (keep_f64 0), else <f8 is float64. */
static popc_status descr_dtype(const char *descr, const char *path,
                               int keep_f64, popc_dtype *dt, int *wide)
{
    static const struct {
        const char *descr;
        popc_dtype dt;
    } known[] = {
        {"<f4", POPC_DTYPE_F32}, {"<f2", POPC_DTYPE_F16},
        {"<i4", POPC_DTYPE_I32}, {"<i8", POPC_DTYPE_I64},
        {"|u1", POPC_DTYPE_U8},  {"<u1", POPC_DTYPE_U8},
        {"|b1", POPC_DTYPE_BOOL}, {"<b1", POPC_DTYPE_BOOL},
        {"|i1", POPC_DTYPE_I8},  {"<i2", POPC_DTYPE_I16},
        {"<u2", POPC_DTYPE_U16}, {"<u4", POPC_DTYPE_U32},
        {"<u8", POPC_DTYPE_U64},
    };

    *wide = 0;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(descr, known[i].descr) == 0) {
            *dt = known[i].dt;
            return POPC_OK;
        }
    if (strcmp(descr, "<f8") == 0) {
        *dt = keep_f64 ? POPC_DTYPE_F64 : POPC_DTYPE_F32;
        *wide = !keep_f64;
        return POPC_OK;
    }
    if (descr[0] == '>' && strcmp(descr + 1, "u1") != 0 &&
        strcmp(descr + 1, "b1") != 0)
        return popc_set_error(POPC_EUNSUPPORTED, "%s: big-endian dtype '%s' "
                              "is not supported; save it with "
                              "arr.astype(arr.dtype.newbyteorder('<'))",
                              path, descr);
    if (strcmp(descr, ">u1") == 0) {
        *dt = POPC_DTYPE_U8;
        return POPC_OK;
    }
    if (strcmp(descr, ">b1") == 0) {
        *dt = POPC_DTYPE_BOOL;
        return POPC_OK;
    }
    return popc_set_error(POPC_EUNSUPPORTED, "%s: dtype '%s' is not "
                          "supported; use float32 (<f4), float16 (<f2), "
                          "float64 (<f8), int8 (|i1), int16 "
                          "(<i2), int32 (<i4), int64 (<i8), uint8 (|u1), "
                          "uint16 (<u2), uint32 (<u4), uint64 (<u8) or bool "
                          "(|b1)", path, descr);
}

/* ---- loading ------------------------------------------------------------- */

static popc_status read_exact(FILE *f, void *buf, size_t n, const char *path,
                              const char *what)
{
    if (n && fread(buf, 1, n, f) != n)
        return popc_set_error(POPC_EIO, "%s: truncated .npy file (%s)%s%s",
                              path, what, ferror(f) ? ": " : "",
                              ferror(f) ? strerror(errno) : "");
    return POPC_OK;
}

/* <f8 elements, converted in chunks so no double-sized copy is needed. */
/* A header is only a claim: compare it with what the file holds before
** allocating, so a corrupt shape costs an error, not terabytes.  Streams
** that are not regular files (pipes) are left to the short-read check. */
static popc_status check_data_fits(FILE *f, const char *path, int64_t need)
{
    struct stat sb;
    long pos = ftell(f);

    if (pos < 0 || fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode))
        return POPC_OK;
    if (need > (int64_t)sb.st_size - pos)
        return popc_set_error(POPC_EIO, "%s: truncated or corrupt .npy file: "
                              "the header's shape needs %lld bytes of data but "
                              "only %lld follow the header; re-save the array",
                              path, (long long)need,
                              (long long)((int64_t)sb.st_size - pos));
    return POPC_OK;
}

static popc_status read_f64(FILE *f, float *dst, int64_t n, const char *path)
{
    double chunk[1024];

    while (n > 0) {
        size_t k = n > 1024 ? 1024 : (size_t)n;
        popc_status st = read_exact(f, chunk, k * sizeof(double), path,
                                    "data");
        if (st != POPC_OK)
            return st;
        swap_bytes(chunk, sizeof(double), k);
        for (size_t i = 0; i < k; i++)
            *dst++ = (float)chunk[i];
        n -= (int64_t)k;
    }
    return POPC_OK;
}

static popc_status load(const char *path, int keep_f64, popc_tensor **out)
{
    unsigned char pre[10];
    uint32_t hlen;
    char *text = NULL;
    header h;
    popc_dtype dt = POPC_DTYPE_UNDEFINED;
    int wide;
    int64_t numel, need;
    size_t nbytes;
    popc_tensor *t = NULL;
    FILE *f = NULL;
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_npy_load: out is NULL");
    *out = NULL;
    if (!path)
        return popc_set_error(POPC_EINVAL, "popc_npy_load: path is NULL");
    f = fopen(path, "rb");
    if (!f)
        return popc_set_error(POPC_EIO, "%s: cannot open: %s", path,
                              strerror(errno));
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, magic, sizeof magic) != 0) {
        st = popc_set_error(POPC_EIO, "%s: not a .npy file (bad magic; "
                            "expected \\x93NUMPY)", path);
        goto fail;
    }
    if (pre[6] == 1) {
        if ((st = read_exact(f, pre + 8, 2, path, "header")) != POPC_OK)
            goto fail;
        hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
    } else if (pre[6] == 2 || pre[6] == 3) {
        unsigned char l[4];
        if ((st = read_exact(f, l, 4, path, "header")) != POPC_OK)
            goto fail;
        hlen = (uint32_t)l[0] | (uint32_t)l[1] << 8 | (uint32_t)l[2] << 16 |
               (uint32_t)l[3] << 24;
    } else {
        st = popc_set_error(POPC_EUNSUPPORTED, "%s: .npy format version "
                            "%d.%d is not supported (1.0, 2.0, 3.0 are)",
                            path, pre[6], pre[7]);
        goto fail;
    }
    if (hlen > MAX_HEADER) {
        st = popc_set_error(POPC_EIO, "%s: corrupt .npy file: header length "
                            "%u is implausible", path, (unsigned)hlen);
        goto fail;
    }
    if (!(text = popci_malloc((size_t)hlen + 1))) {
        st = popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
        goto fail;
    }
    if ((st = read_exact(f, text, hlen, path, "header")) != POPC_OK)
        goto fail;
    text[hlen] = '\0';
    if (memchr(text, '\0', hlen)) {
        st = popc_set_error(POPC_EIO, "%s: corrupt .npy header (NUL byte)",
                            path);
        goto fail;
    }
    if ((st = parse_header(text, &h, path)) != POPC_OK)
        goto fail;
    if ((st = descr_dtype(h.descr, path, keep_f64, &dt, &wide)) != POPC_OK)
        goto fail;
    if (h.fortran && h.rank > 1) {
        st = popc_set_error(POPC_EUNSUPPORTED, "%s: Fortran-order arrays are "
                            "not supported; save np.ascontiguousarray(a)",
                            path);
        goto fail;
    }
    if (popci_shape_size(path, dt, h.dims, h.rank, &numel, &nbytes) !=
        POPC_OK) {
        st = popc_set_error(POPC_EIO, "%s (corrupt .npy shape)",
                            popc_last_error());
        goto fail;
    }
    if (wide && numel > INT64_MAX / 8) {
        st = popc_set_error(POPC_EIO, "%s: the header claims %lld float64 "
                            "values, more than any file holds (corrupt .npy "
                            "shape)",
                            path, (long long)numel);
        goto fail;
    }
    need = wide ? numel * 8 : (int64_t)nbytes;
    if ((st = check_data_fits(f, path, need)) != POPC_OK)
        goto fail;
    if ((st = popc_tensor_new(dt, h.dims, h.rank, &t)) != POPC_OK) {
        st = popc_set_error(st, "%s: %s", path, popc_last_error());
        goto fail;
    }
    if (wide) {
        st = read_f64(f, popc_tensor_data(t), numel, path);
    } else {
        st = read_exact(f, popc_tensor_data(t), nbytes, path, "data");
        swap_bytes(popc_tensor_data(t), popc_dtype_size(dt), (size_t)numel);
    }
    if (st != POPC_OK)
        goto fail;
    if (dt == POPC_DTYPE_BOOL) {
        /* Keep the 0/1 invariant even for hand-made files. */
        uint8_t *b = popc_tensor_data(t);
        for (int64_t i = 0; i < numel; i++)
            b[i] = b[i] != 0;
    }
    fclose(f);
    free(text);
    *out = t;
    return POPC_OK;
fail:
    popc_tensor_free(t);
    free(text);
    if (f)
        fclose(f);
    return st;
}

popc_status popc_npy_load(const char *path, popc_tensor **out)
{
    return load(path, 0, out);
}

popc_status popc_npy_load_exact(const char *path, popc_tensor **out)
{
    return load(path, 1, out);
}

/* ---- saving -------------------------------------------------------------- */

static const char *dtype_descr(popc_dtype dt)
{
    switch (dt) {
    case POPC_DTYPE_F32: return "<f4";
    case POPC_DTYPE_F16: return "<f2";
    case POPC_DTYPE_I32: return "<i4";
    case POPC_DTYPE_I64: return "<i8";
    case POPC_DTYPE_U8: return "|u1";
    case POPC_DTYPE_BOOL: return "|b1";
    case POPC_DTYPE_F64: return "<f8";
    case POPC_DTYPE_I8: return "|i1";
    case POPC_DTYPE_I16: return "<i2";
    case POPC_DTYPE_U16: return "<u2";
    case POPC_DTYPE_U32: return "<u4";
    case POPC_DTYPE_U64: return "<u8";
    default: return NULL;
    }
}

/* The 10-byte preamble and padded header into buf; returns its length. */
static size_t make_header(const popc_tensor *t, unsigned char *buf,
                          size_t size)
{
    char dict[512], shape[256];
    const int64_t *dims = popc_tensor_dims(t);
    int rank = popc_tensor_rank(t);
    size_t len = 0, total, hlen;

    shape[0] = '\0';
    for (int i = 0; i < rank; i++)
        len += (size_t)snprintf(shape + len, sizeof shape - len, "%s%lld",
                                i ? ", " : "", (long long)dims[i]);
    if (rank == 1)
        snprintf(shape + len, sizeof shape - len, ",");
    len = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', "
                           "'fortran_order': False, 'shape': (%s), }",
                           dtype_descr(popc_tensor_dtype(t)), shape);
    /* Pad with spaces so data starts on a 64-byte boundary; '\n' ends it. */
    total = (10 + len + 1 + 63) / 64 * 64;
    if (total > size)
        return 0;
    hlen = total - 10;
    memcpy(buf, magic, sizeof magic);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (unsigned char)(hlen & 0xff);
    buf[9] = (unsigned char)(hlen >> 8);
    memcpy(buf + 10, dict, len);
    memset(buf + 10 + len, ' ', hlen - len - 1);
    buf[total - 1] = '\n';
    return total;
}

static popc_status write_data(FILE *f, const popc_tensor *t)
{
    size_t esize = popc_dtype_size(popc_tensor_dtype(t));
    size_t nbytes = popc_tensor_nbytes(t);
    const unsigned char *p = popc_tensor_cdata(t);

    if (host_is_little() || esize < 2)
        return fwrite(p, 1, nbytes, f) == nbytes ? POPC_OK : POPC_EIO;
    for (size_t off = 0; off < nbytes; off += esize) {
        unsigned char e[8];
        memcpy(e, p + off, esize);
        swap_bytes(e, esize, 1);
        if (fwrite(e, 1, esize, f) != esize)
            return POPC_EIO;
    }
    return POPC_OK;
}

typedef struct npy_out {
    const popc_tensor *t;
    const unsigned char *head;
    size_t hsize;
} npy_out;

static popc_status fill_npy(FILE *f, void *arg)
{
    const npy_out *o = arg;

    errno = 0;
    if (fwrite(o->head, 1, o->hsize, f) != o->hsize ||
        write_data(f, o->t) != POPC_OK)
        return popc_set_error(POPC_EIO, "write failed: %s",
                              strerror(errno ? errno : ENOSPC));
    return POPC_OK;
}

popc_status popc_npy_save(const char *path, const popc_tensor *t)
{
    unsigned char head[1024];
    npy_out o;

    if (!path || !t)
        return popc_set_error(POPC_EINVAL, "popc_npy_save: %s is NULL",
                              path ? "tensor" : "path");
    if (!dtype_descr(popc_tensor_dtype(t)))
        return popc_set_error(POPC_EINVAL, "%s: cannot save a tensor of dtype "
                              "%s", path, popc_dtype_name(popc_tensor_dtype(t)));
    o = (npy_out){t, head, make_header(t, head, sizeof head)};
    if (!o.hsize)
        return popc_set_error(POPC_EINTERNAL, "%s: .npy header too long",
                              path);
    return popci_write_atomic(path, fill_npy, &o);
}
