/* tensor.c - TensorProto <-> popc_tensor.
**
** Data comes from raw_data (little-endian bytes), from the typed field the
** ONNX spec assigns to the dtype (float_data; int32_data also carries
** int8/16, uint8/16, bool, float16 and bfloat16 bit patterns; int64_data;
** double_data; uint64_data also carries uint32), or from an external file
** (data_location EXTERNAL: location, offset, length, relative to the
** model's folder, read through a mapping). Every declared size is checked
** against the data present before anything is allocated.
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "popc/file.h"
#include "onnx/onnx_priv.h"

static const struct {
    int onnx;
    popc_dtype dt;
    const char *name;
} dtypes[] = {
    {1, POPC_DTYPE_F32, "float"},     {2, POPC_DTYPE_U8, "uint8"},
    {3, POPC_DTYPE_I8, "int8"},       {4, POPC_DTYPE_U16, "uint16"},
    {5, POPC_DTYPE_I16, "int16"},     {6, POPC_DTYPE_I32, "int32"},
    {7, POPC_DTYPE_I64, "int64"},     {8, POPC_DTYPE_UNDEFINED, "string"},
    {9, POPC_DTYPE_BOOL, "bool"},     {10, POPC_DTYPE_F16, "float16"},
    {11, POPC_DTYPE_F64, "double"},   {12, POPC_DTYPE_U32, "uint32"},
    {13, POPC_DTYPE_U64, "uint64"},
    {14, POPC_DTYPE_UNDEFINED, "complex64"},
    {15, POPC_DTYPE_UNDEFINED, "complex128"},
    {16, POPC_DTYPE_BF16, "bfloat16"},
};
#define N_DTYPES ((int)(sizeof dtypes / sizeof dtypes[0]))

popc_dtype popco_dtype_from_onnx(int onnx_type)
{
    for (int i = 0; i < N_DTYPES; i++)
        if (dtypes[i].onnx == onnx_type)
            return dtypes[i].dt;
    return POPC_DTYPE_UNDEFINED;
}

int popco_dtype_to_onnx(popc_dtype dt)
{
    for (int i = 0; i < N_DTYPES; i++)
        if (dtypes[i].dt == dt && dt != POPC_DTYPE_UNDEFINED)
            return dtypes[i].onnx;
    return -1;
}

const char *popco_onnx_type_name(int onnx_type)
{
    for (int i = 0; i < N_DTYPES; i++)
        if (dtypes[i].onnx == onnx_type)
            return dtypes[i].name;
    return "unknown";
}

/* ---- external data -------------------------------------------------------- */

/* A location that stays inside base_dir: relative, no ".." component. */
static int safe_location(const char *loc)
{
    const char *p = loc;

    if (!*loc || loc[0] == '/')
        return 0;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);

        if (len == 2 && p[0] == '.' && p[1] == '.')
            return 0;
        p += len;
        while (*p == '/')
            p++;
    }
    return 1;
}

/* A folder on the way to the data may be a symlink to anywhere
** (weights/ -> /etc): the resolved path must still lie under the
** resolved folder. */
static popc_status inside_folder(const popco_tensor_src *src,
                                 const char *what, const char *path)
{
    char *dir = realpath(src->base_dir, NULL), *file = realpath(path, NULL);
    size_t n = dir ? strlen(dir) : 0;
    int inside = dir && file && strncmp(dir, file, n) == 0 &&
                 (file[n] == '/' || (n == 1 && dir[0] == '/'));
    int missing = !file;

    free(dir);
    free(file);
    if (inside || missing) /* a missing file is open's error to name */
        return POPC_OK;
    return popc_set_error(POPC_EIO, "%s: %s: external data '%s' leads out "
                          "of the model's folder through a symbolic link; "
                          "copy the data into the folder",
                          src->file, what, path);
}

/* dst NULL: only check that the data is there (before allocating). */
static popc_status read_external(const Onnx__TensorProto *tp,
                                 const popco_tensor_src *src,
                                 const char *what, void *dst, size_t need)
{
    const char *loc = NULL;
    long long offset = 0, length = -1;
    char path[PATH_MAX];
    struct stat sb;
    void *map;
    size_t page, start, span;
    popc_status st;
    int fd;

    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        char *end;

        if (!e->key || !e->value)
            continue;
        if (strcmp(e->key, "location") == 0)
            loc = e->value;
        else if (strcmp(e->key, "offset") == 0 ||
                 strcmp(e->key, "length") == 0) {
            long long v;

            errno = 0;
            v = strtoll(e->value, &end, 10);
            if (errno || *end || v < 0)
                return popc_set_error(POPC_EIO, "%s: %s: external data %s "
                                      "'%s' is not a byte count",
                                      src->file, what, e->key, e->value);
            if (e->key[0] == 'o')
                offset = v;
            else
                length = v;
        }
    }
    if (!loc)
        return popc_set_error(POPC_EIO, "%s: %s: external data without a "
                              "location", src->file, what);
    if (!src->base_dir)
        return popc_set_error(POPC_EINVAL, "%s: %s: external data '%s' "
                              "cannot be read from a model given as bytes; "
                              "load it from its file", src->file, what, loc);
    if (!safe_location(loc))
        return popc_set_error(POPC_EIO, "%s: %s: external data location "
                              "'%s' leaves the model's folder; it must be a "
                              "relative path without '..'",
                              src->file, what, loc);
    if (length >= 0 && (size_t)length != need)
        return popc_set_error(POPC_EIO, "%s: %s: external data length %lld "
                              "does not match its shape (%zu bytes)",
                              src->file, what, length, need);
    if ((size_t)snprintf(path, sizeof path, "%s/%s", src->base_dir, loc) >=
        sizeof path)
        return popc_set_error(POPC_EIO, "%s: %s: external data path too "
                              "long", src->file, what);
    if ((st = inside_folder(src, what, path)) != POPC_OK)
        return st;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
        return popc_set_error(POPC_EIO, "%s: %s: cannot open external data "
                              "'%s': %s", src->file, what, path,
                              strerror(errno));
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
        (unsigned long long)offset > (unsigned long long)sb.st_size ||
        need > (size_t)(sb.st_size - offset)) {
        close(fd);
        return popc_set_error(POPC_EIO, "%s: %s: external data '%s' holds "
                              "fewer than offset %lld + %zu bytes",
                              src->file, what, path, offset, need);
    }
    if (need == 0 || !dst) {
        close(fd);
        return POPC_OK;
    }
    page = (size_t)sysconf(_SC_PAGESIZE);
    start = (size_t)offset / page * page;
    span = (size_t)offset - start + need;
    map = mmap(NULL, span, PROT_READ, MAP_PRIVATE, fd, (off_t)start);
    close(fd);
    if (map == MAP_FAILED)
        return popc_set_error(POPC_EIO, "%s: %s: cannot map '%s': %s",
                              src->file, what, path, strerror(errno));
    popco_copy_from_mapping(dst, (const char *)map + ((size_t)offset - start),
                            need);
    munmap(map, span);
    return POPC_OK;
}

/* ---- TensorProto -> popc -------------------------------------------------- */

/* The number of typed-field elements present, and which field. */
static size_t typed_count(const Onnx__TensorProto *tp, popc_dtype dt)
{
    switch (dt) {
    case POPC_DTYPE_F32:
        return tp->n_float_data;
    case POPC_DTYPE_I32: case POPC_DTYPE_I16: case POPC_DTYPE_I8:
    case POPC_DTYPE_U16: case POPC_DTYPE_U8: case POPC_DTYPE_BOOL:
    case POPC_DTYPE_F16: case POPC_DTYPE_BF16:
        return tp->n_int32_data;
    case POPC_DTYPE_I64:
        return tp->n_int64_data;
    case POPC_DTYPE_F64:
        return tp->n_double_data;
    case POPC_DTYPE_U32: case POPC_DTYPE_U64:
        return tp->n_uint64_data;
    default:
        return 0;
    }
}

static void copy_typed(const Onnx__TensorProto *tp, popc_dtype dt, void *dst,
                       size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (dt) {
        case POPC_DTYPE_F32: ((float *)dst)[i] = tp->float_data[i]; break;
        case POPC_DTYPE_I32: ((int32_t *)dst)[i] = tp->int32_data[i]; break;
        case POPC_DTYPE_I16:
            ((int16_t *)dst)[i] = (int16_t)tp->int32_data[i];
            break;
        case POPC_DTYPE_I8: ((int8_t *)dst)[i] = (int8_t)tp->int32_data[i]; break;
        case POPC_DTYPE_U16: case POPC_DTYPE_F16: case POPC_DTYPE_BF16:
            ((uint16_t *)dst)[i] = (uint16_t)tp->int32_data[i];
            break;
        case POPC_DTYPE_U8:
            ((uint8_t *)dst)[i] = (uint8_t)tp->int32_data[i];
            break;
        case POPC_DTYPE_BOOL:
            ((uint8_t *)dst)[i] = tp->int32_data[i] != 0;
            break;
        case POPC_DTYPE_I64: ((int64_t *)dst)[i] = tp->int64_data[i]; break;
        case POPC_DTYPE_F64: ((double *)dst)[i] = tp->double_data[i]; break;
        case POPC_DTYPE_U32:
            ((uint32_t *)dst)[i] = (uint32_t)tp->uint64_data[i];
            break;
        case POPC_DTYPE_U64: ((uint64_t *)dst)[i] = tp->uint64_data[i]; break;
        default: break;
        }
    }
}

popc_status popco_tensor_from_proto(const Onnx__TensorProto *tp,
                                    const popco_tensor_src *src,
                                    const char *what, popc_tensor **out)
{
    int64_t dims[POPC_MAX_RANK];
    int64_t numel = 1;
    popc_dtype dt;
    size_t esize, nbytes, have;
    popc_tensor *t = NULL;
    popc_status st;
    int external;

    *out = NULL;
    dt = popco_dtype_from_onnx(tp->data_type);
    if (dt == POPC_DTYPE_UNDEFINED)
        return popc_set_error(POPC_EUNSUPPORTED, "%s: %s has element type %s "
                              "(%d), which popc has no dtype for",
                              src->file, what,
                              popco_onnx_type_name(tp->data_type),
                              (int)tp->data_type);
    if (tp->segment)
        return popc_set_error(POPC_EUNSUPPORTED, "%s: %s is a segmented "
                              "tensor; save it whole", src->file, what);
    if (tp->n_dims > POPC_MAX_RANK)
        return popc_set_error(POPC_EUNSUPPORTED, "%s: %s has %zu dimensions; "
                              "popc supports at most %d", src->file, what,
                              tp->n_dims, POPC_MAX_RANK);
    esize = popc_dtype_size(dt);
    for (size_t d = 0; d < tp->n_dims; d++) {
        if (tp->dims[d] < 0)
            return popc_set_error(POPC_EIO, "%s: %s has a negative "
                                  "dimension (%lld)", src->file, what,
                                  (long long)tp->dims[d]);
        if (tp->dims[d] && numel > INT64_MAX / 16 / tp->dims[d])
            return popc_set_error(POPC_EIO, "%s: %s claims too many "
                                  "elements", src->file, what);
        numel *= tp->dims[d];
        dims[d] = tp->dims[d];
    }
    nbytes = (size_t)numel * esize;
    external = tp->has_data_location &&
               tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    /* compare the claim with the data before allocating */
    if (!external) {
        if (tp->raw_data.len)
            have = tp->raw_data.len;
        else
            have = typed_count(tp, dt) * esize;
        if (have != nbytes)
            return popc_set_error(POPC_EIO, "%s: %s: its shape needs %zu "
                                  "bytes of %s data but %zu are present",
                                  src->file, what, nbytes,
                                  popco_onnx_type_name(tp->data_type), have);
    } else if ((st = read_external(tp, src, what, NULL, nbytes)) != POPC_OK) {
        return st;
    }
    /* the data is there (in the file or beside it): may popc hold it? */
    {
        int64_t made = (src->bytes_made ? *src->bytes_made : 0) +
                       (int64_t)nbytes;

        if (made > popc_limit_get(POPC_LIMIT_INITIALIZER_BYTES)) {
            char why[300];

            snprintf(why, sizeof why, "bytes of initializers and constants, "
                     "up to and including %.200s", what);
            return popc_limit_error(POPC_LIMIT_INITIALIZER_BYTES, src->file,
                                    why, made);
        }
        if (src->bytes_made)
            *src->bytes_made = made;
    }
    if ((st = popc_tensor_new(dt, dims, (int)tp->n_dims, &t)) != POPC_OK)
        return popc_set_error(st, "%s: %s: %s", src->file, what,
                              popc_last_error());
    if (external)
        st = read_external(tp, src, what, popc_tensor_data(t), nbytes);
    else if (tp->raw_data.len && src->raw_is_mapped)
        popco_copy_from_mapping(popc_tensor_data(t), tp->raw_data.data,
                                nbytes);
    else if (tp->raw_data.len)
        memcpy(popc_tensor_data(t), tp->raw_data.data, nbytes);
    else
        copy_typed(tp, dt, popc_tensor_data(t), (size_t)numel);
    if (st != POPC_OK) {
        popc_tensor_free(t);
        return st;
    }
    if (dt == POPC_DTYPE_BOOL) {
        uint8_t *b = popc_tensor_data(t);
        for (int64_t i = 0; i < numel; i++)
            b[i] = b[i] != 0;
    }
    *out = t;
    return POPC_OK;
}

/* ---- popc -> TensorProto -------------------------------------------------- */

popc_status popco_tensor_to_proto(const popc_tensor *t, const char *name,
                                  Onnx__TensorProto *tp, int64_t *dims_buf)
{
    int type = popco_dtype_to_onnx(popc_tensor_dtype(t));

    if (type < 0)
        return popc_set_error(POPC_EUNSUPPORTED, "tensor '%s': dtype %s has "
                              "no ONNX type", name ? name : "",
                              popc_dtype_name(popc_tensor_dtype(t)));
    onnx__tensor_proto__init(tp);
    tp->n_dims = (size_t)popc_tensor_rank(t);
    memcpy(dims_buf, popc_tensor_dims(t), tp->n_dims * sizeof(int64_t));
    tp->dims = dims_buf;
    tp->has_data_type = 1;
    tp->data_type = type;
    tp->name = (char *)name;
    tp->has_raw_data = 1;
    tp->raw_data.len = popc_tensor_nbytes(t);
    tp->raw_data.data = (uint8_t *)popc_tensor_cdata(t);
    return POPC_OK;
}

/* ---- TensorProto files ---------------------------------------------------- */

popc_status popc_onnx_read_tensor(const char *path, popc_tensor **out,
                                  char **name)
{
    popco_map m;
    Onnx__TensorProto *tp = NULL;
    popco_tensor_src src = {path, NULL, 0, NULL};
    char *dir = NULL, *slash;
    popc_status st;

    if (!out || !path)
        return popc_set_error(POPC_EINVAL, "popc_onnx_read_tensor: NULL "
                              "path or out");
    *out = NULL;
    if (name)
        *name = NULL;
    if ((st = popco_map_file(path, &m)) != POPC_OK)
        return st;
    st = popco_unpack_tensor(m.data ? m.data : "", m.size, path, &tp);
    popco_unmap(&m);
    if (st != POPC_OK)
        return st;
    if (!(dir = strdup(path))) {
        st = popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        strcpy(dir, ".");
    src.base_dir = dir;
    if ((st = popco_tensor_from_proto(tp, &src, tp->name && *tp->name
                                                    ? tp->name : "the tensor",
                                      out)) != POPC_OK)
        goto done;
    if (name && tp->name && *tp->name && !(*name = strdup(tp->name))) {
        popc_tensor_free(*out);
        *out = NULL;
        st = popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
    }
done:
    free(dir);
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return st;
}

popc_status popc_onnx_write_tensor(const char *path, const popc_tensor *t,
                                   const char *name)
{
    Onnx__TensorProto tp;
    int64_t dims[POPC_MAX_RANK];
    uint8_t *buf;
    size_t len;
    popc_status st;

    if (!path || !t)
        return popc_set_error(POPC_EINVAL, "popc_onnx_write_tensor: NULL "
                              "path or tensor");
    if ((st = popco_tensor_to_proto(t, name, &tp, dims)) != POPC_OK)
        return st;
    len = onnx__tensor_proto__get_packed_size(&tp);
    if (!(buf = malloc(len ? len : 1)))
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
    onnx__tensor_proto__pack(&tp, buf);
    st = popc_write_file_atomic(path, buf, len);
    free(buf);
    return st;
}
