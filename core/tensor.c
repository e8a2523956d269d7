/* tensor.c - dense host tensors: creation, reference counting, float16
** scalars, shapes as text (casts, reshapes and comparisons are above the
** core, in tensorops/).
**
** The header and the elements live in one popci_alloc block: the header is
** padded to POPC_TENSOR_ALIGN bytes so the elements that follow it are
** aligned too. The reference count is atomic, so tensors may be shared
** between threads (the graph holds initializers the user also holds).
*/
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "popc/tensor.h"
#include "core/host_priv.h"
#include "core/layer/alloc.h"
#include "core/graph/half_simd.h"
#include "core/tensor_priv.h"

struct popc_tensor {
    atomic_int refs;
    popc_dtype dtype;
    int rank;
    int64_t dims[POPC_MAX_RANK];
    int64_t numel;
    size_t nbytes;
    void *data;
};

#define HEADER_SIZE                                                          \
    ((sizeof(struct popc_tensor) + POPC_TENSOR_ALIGN - 1) /                  \
     POPC_TENSOR_ALIGN * POPC_TENSOR_ALIGN)

/* ---- shapes -------------------------------------------------------------- */

char *popci_dims_str(const int64_t *dims, int rank, char *buf, size_t size)
{
    size_t len = 0;

    if (!buf || size == 0)
        return buf;
    buf[0] = '\0';
    len += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < rank && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld",
                                i ? ", " : "", (long long)dims[i]);
    if (len < size)
        snprintf(buf + len, size - len, "]");
    return buf;
}

popc_status popci_shape_size(const char *what, popc_dtype dt,
                             const int64_t *dims, int rank, int64_t *numel,
                             size_t *nbytes)
{
    size_t esize = popc_dtype_size(dt);
    int64_t n = 1;
    int zero = 0;

    if (esize == 0)
        return popc_set_error(POPC_EINVAL, "%s: unknown dtype %d; use one of "
                              "POPC_DTYPE_F32, F16, I32, I64, U8, BOOL",
                              what, (int)dt);
    if (rank < 0 || rank > POPC_MAX_RANK)
        return popc_set_error(POPC_EINVAL, "%s: rank %d is outside 0..%d",
                              what, rank, POPC_MAX_RANK);
    if (rank > 0 && !dims)
        return popc_set_error(POPC_EINVAL, "%s: dims is NULL for rank %d",
                              what, rank);
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return popc_set_error(POPC_EINVAL, "%s: dimension %d is %lld; "
                                  "dimensions must be >= 0", what, i,
                                  (long long)dims[i]);
        if (dims[i] == 0)
            zero = 1;
    }
    /* Any zero dimension makes the product 0, however large the others. */
    if (zero)
        n = 0;
    else
        for (int i = 0; i < rank; i++) {
            if (n > INT64_MAX / dims[i])
                goto overflow;
            n *= dims[i];
        }
    if ((uint64_t)n > (uint64_t)(PTRDIFF_MAX - HEADER_SIZE) / esize)
        goto overflow;
    *numel = n;
    *nbytes = (size_t)n * esize;
    return POPC_OK;
overflow: {
        char shape[256];
        return popc_set_error(POPC_EINVAL, "%s: %s%s has too many elements "
                              "(size overflows)", what, popc_dtype_name(dt),
                              popci_dims_str(dims, rank, shape, sizeof shape));
    }
}

/* ---- lifetime ------------------------------------------------------------ */

/* filled: the elements start at zero; else the caller writes them all. */
static popc_status tensor_alloc(const char *what, popc_dtype dt,
                                const int64_t *dims, int rank, int filled,
                                popc_tensor **out)
{
    int64_t numel;
    size_t nbytes;
    popc_tensor *t;
    popc_status st;

    *out = NULL;
    st = popci_shape_size(what, dt, dims, rank, &numel, &nbytes);
    if (st != POPC_OK)
        return st;
    t = filled ? popci_alloc(HEADER_SIZE + nbytes)
               : popci_alloc_unfilled(HEADER_SIZE + nbytes);
    if (!t)
        return popc_set_error(POPC_ENOMEM, "%s: out of memory for %zu bytes",
                              what, nbytes);
    atomic_init(&t->refs, 1);
    t->dtype = dt;
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    t->numel = numel;
    t->nbytes = nbytes;
    t->data = (char *)t + HEADER_SIZE;
    *out = t;
    return POPC_OK;
}

popc_status popc_tensor_new(popc_dtype dt, const int64_t *dims, int rank,
                            popc_tensor **out)
{
    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_tensor_new: out is NULL");
    return tensor_alloc("popc_tensor_new", dt, dims, rank, 1, out);
}

popc_status popci_tensor_new_unfilled(popc_dtype dt, const int64_t *dims,
                                      int rank, popc_tensor **out)
{
    return tensor_alloc("popc_tensor_new", dt, dims, rank, 0, out);
}

popc_status popc_tensor_from_data(popc_dtype dt, const int64_t *dims,
                                  int rank, const void *data,
                                  popc_tensor **out)
{
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL,
                              "popc_tensor_from_data: out is NULL");
    st = tensor_alloc("popc_tensor_from_data", dt, dims, rank, 0, out);
    if (st != POPC_OK)
        return st;
    if ((*out)->nbytes) {
        if (!data) {
            popc_tensor_free(*out);
            *out = NULL;
            return popc_set_error(POPC_EINVAL,
                                  "popc_tensor_from_data: data is NULL");
        }
        memcpy((*out)->data, data, (*out)->nbytes);
    }
    return POPC_OK;
}

popc_status popc_tensor_clone(const popc_tensor *t, popc_tensor **out)
{
    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_tensor_clone: out is NULL");
    *out = NULL;
    if (!t)
        return popc_set_error(POPC_EINVAL, "popc_tensor_clone: t is NULL");
    return popc_tensor_from_data(t->dtype, t->dims, t->rank, t->data, out);
}

popc_tensor *popc_tensor_ref(popc_tensor *t)
{
    if (t)
        atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    return t;
}

void popc_tensor_unref(popc_tensor *t)
{
    if (!t)
        return;
    /* acq_rel: the last owner must see every other owner's writes. */
    if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) == 1)
        popci_free(t);
}

void popc_tensor_free(popc_tensor *t)
{
    popc_tensor_unref(t);
}

/* ---- accessors ----------------------------------------------------------- */

popc_dtype popc_tensor_dtype(const popc_tensor *t)
{
    return t ? t->dtype : POPC_DTYPE_UNDEFINED;
}

int popc_tensor_rank(const popc_tensor *t)
{
    return t ? t->rank : 0;
}

const int64_t *popc_tensor_dims(const popc_tensor *t)
{
    return t ? t->dims : NULL;
}

int64_t popc_tensor_numel(const popc_tensor *t)
{
    return t ? t->numel : 0;
}

size_t popc_tensor_nbytes(const popc_tensor *t)
{
    return t ? t->nbytes : 0;
}

void *popc_tensor_data(popc_tensor *t)
{
    return t ? t->data : NULL;
}

const void *popc_tensor_cdata(const popc_tensor *t)
{
    return t ? t->data : NULL;
}

popc_view popc_tensor_view(popc_tensor *t)
{
    popc_view v;

    memset(&v, 0, sizeof v);
    if (!t)
        return v;
    v.dtype = t->dtype;
    v.rank = t->rank;
    for (int i = 0; i < t->rank; i++)
        v.dims[i] = t->dims[i];
    v.data = t->data;
    return v;
}

/* ---- float16 ------------------------------------------------------------- */

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint16_t f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    uint32_t e, m, r, rem, half;
    int shift;

    if (ax >= 0x7f800000u) {
        if (ax == 0x7f800000u)
            return sign | 0x7c00u;
        /* NaN: keep the top payload bits and force a quiet NaN so the
        ** mantissa cannot truncate to zero (which would be inf). */
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    }
    /* 65520 and above round to infinity (65504 is the largest half). */
    if (ax >= 0x477ff000u)
        return sign | 0x7c00u;
    if (ax >= 0x38800000u) {
        /* Normal half: rebias the exponent, round the 13 dropped bits to
        ** nearest even; a carry into the exponent is the right result. */
        uint32_t h = ((ax >> 13) - (112u << 10));
        rem = ax & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
    /* Below 2^-25 everything rounds to zero (2^-25 itself is a tie to 0). */
    if (ax <= 0x33000000u)
        return sign;
    /* Subnormal half: the value in units of 2^-24 is m * 2^(e - 126). */
    e = ax >> 23;
    m = (ax & 0x7fffffu) | 0x800000u;
    shift = 126 - (int)e;
    r = m >> shift;
    rem = m & ((1u << shift) - 1u);
    half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u)))
        r++;
    return (uint16_t)(sign | r);
}

static inline float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;

    if (e == 0x1f)
        return bits_f32(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (m == 0)
            return bits_f32(sign);
        /* Subnormal: normalise the mantissa. */
        e = 113;
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        m &= 0x3ffu;
        return bits_f32(sign | (e << 23) | (m << 13));
    }
    return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

uint16_t popc_f32_to_f16(float f)
{
    return f32_to_f16(f);
}

float popc_f16_to_f32(uint16_t h)
{
    return f16_to_f32(h);
}

void popci_round_f16(float *x, int64_t n)
{
    uint16_t h[1024];

    for (int64_t c = 0; c < n; c += 1024) {
        int64_t m = n - c < 1024 ? n - c : 1024;

        popci_f2h_n(h, x + c, m, popc_f32_to_f16);
        popci_h2f_n(x + c, h, m, popc_f16_to_f32);
    }
}

/* ---- text ---------------------------------------------------------------- */

char *popc_view_describe(const popc_view *v, char *buf, size_t size)
{
    char dims[200];
    int rank;

    if (!buf || size == 0)
        return buf;
    if (!v) {
        snprintf(buf, size, "(null)");
        return buf;
    }
    rank = v->rank < 0 ? 0 : v->rank > POPC_MAX_RANK ? POPC_MAX_RANK : v->rank;
    snprintf(buf, size, "%s%s", popc_dtype_name(v->dtype),
             popci_dims_str(v->dims, rank, dims, sizeof dims));
    return buf;
}

char *popc_tensor_describe(const popc_tensor *t, char *buf, size_t size)
{
    popc_view v;

    if (!t) {
        if (buf && size)
            snprintf(buf, size, "(null)");
        return buf;
    }
    v = popc_tensor_view((popc_tensor *)t);
    return popc_view_describe(&v, buf, size);
}
