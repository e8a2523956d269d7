/* tensor.c - dense host tensors: creation, reference counting, casts.
**
** The header and the elements live in one popci_alloc block: the header is
** padded to POPC_TENSOR_ALIGN bytes so the elements that follow it are
** aligned too. The reference count is atomic, so tensors may be shared
** between threads (the graph holds initializers the user also holds).
*/
#include "config.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "popc/tensor.h"
#include "core/host_priv.h"
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

/* ---- casts --------------------------------------------------------------- */

/* Float to integer truncates toward zero; NaN becomes 0 and values outside
** the target range saturate (C leaves both undefined). Integer to narrower
** integer wraps, as in NumPy and PyTorch. */
static inline int32_t sat_i32(double v)
{
    if (v != v)
        return 0;
    if (v >= 2147483647.0)
        return INT32_MAX;
    if (v <= -2147483648.0)
        return INT32_MIN;
    return (int32_t)v;
}

static inline int64_t sat_i64(double v)
{
    if (v != v)
        return 0;
    if (v >= 9223372036854775807.0)
        return INT64_MAX;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

static inline uint8_t sat_u8(double v)
{
    if (v != v || v <= 0.0)
        return 0;
    if (v >= 255.0)
        return 255;
    return (uint8_t)v;
}

/* The same for the other integer targets, [lo, hi] within int64 (both
** exact as doubles up to 32 bits; for int64, hi rounds up to 2^63, which
** the >= keeps out of the conversion). */
static inline int64_t sat_range(double v, int64_t lo, int64_t hi)
{
    if (v != v)
        return 0;
    if (v <= (double)lo)
        return lo;
    if (v >= (double)hi)
        return hi;
    return (int64_t)v;
}

/* One tight loop per (source, destination) pair: EXPR uses `v`. */
#define CAST_LOOP(ST, DT, EXPR)                                             \
    do {                                                                    \
        const ST *s_ = src;                                                 \
        DT *d_ = dst;                                                       \
        for (int64_t i_ = 0; i_ < n; i_++) {                                \
            ST v = s_[i_];                                                  \
            d_[i_] = (DT)(EXPR);                                            \
        }                                                                   \
    } while (0)

#define CAST_FROM(SRCDT, DT, F32E, F16E, I32E, I64E, U8E, BOOLE)            \
    switch (SRCDT) {                                                        \
    case POPC_DTYPE_F32: CAST_LOOP(float, DT, F32E); break;                 \
    case POPC_DTYPE_F16: CAST_LOOP(uint16_t, DT, F16E); break;              \
    case POPC_DTYPE_I32: CAST_LOOP(int32_t, DT, I32E); break;               \
    case POPC_DTYPE_I64: CAST_LOOP(int64_t, DT, I64E); break;               \
    case POPC_DTYPE_U8: CAST_LOOP(uint8_t, DT, U8E); break;                 \
    case POPC_DTYPE_BOOL: CAST_LOOP(uint8_t, DT, BOOLE); break;             \
    default: break;                                                         \
    }

static void cast_elems(popc_dtype sdt, const void *src, popc_dtype ddt,
                       void *dst, int64_t n)
{
    switch (ddt) {
    case POPC_DTYPE_F32:
        CAST_FROM(sdt, float, v, f16_to_f32(v), v, v, v, v);
        break;
    case POPC_DTYPE_F16:
        CAST_FROM(sdt, uint16_t, f32_to_f16(v), v, f32_to_f16((float)v),
                  f32_to_f16((float)v), f32_to_f16((float)v),
                  f32_to_f16((float)v));
        break;
    case POPC_DTYPE_I32:
        CAST_FROM(sdt, int32_t, sat_i32(v), sat_i32(f16_to_f32(v)), v,
                  (uint32_t)v, v, v);
        break;
    case POPC_DTYPE_I64:
        CAST_FROM(sdt, int64_t, sat_i64(v), sat_i64(f16_to_f32(v)), v, v, v,
                  v);
        break;
    case POPC_DTYPE_U8:
        CAST_FROM(sdt, uint8_t, sat_u8(v), sat_u8(f16_to_f32(v)),
                  (uint32_t)v, (uint64_t)v, v, v);
        break;
    case POPC_DTYPE_BOOL:
        CAST_FROM(sdt, uint8_t, v != 0.0f, (v & 0x7fffu) != 0, v != 0,
                  v != 0, v != 0, v != 0);
        break;
    default:
        break;
    }
}

/* The dtypes of the first release have the tight loops above; casts that
** involve a later dtype (float64, bfloat16, the narrow and unsigned
** integers) go element by element through double or a 64-bit integer,
** which holds every value of the source exactly except 64-bit integers
** beyond 2^53 going to a float. */
static int has_fast_cast(popc_dtype dt)
{
    return dt >= POPC_DTYPE_F32 && dt <= POPC_DTYPE_BOOL;
}

static float bf16_to_f32(uint16_t b)
{
    return bits_f32((uint32_t)b << 16);
}

/* Round to nearest even; NaN stays a (quiet) NaN. */
static uint16_t f32_to_bf16(float f)
{
    uint32_t x;

    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static double load_float(popc_dtype dt, const void *p, int64_t i)
{
    switch (dt) {
    case POPC_DTYPE_F32: return ((const float *)p)[i];
    case POPC_DTYPE_F16: return f16_to_f32(((const uint16_t *)p)[i]);
    case POPC_DTYPE_F64: return ((const double *)p)[i];
    case POPC_DTYPE_BF16: return bf16_to_f32(((const uint16_t *)p)[i]);
    default: return 0.0;
    }
}

static int64_t load_int(popc_dtype dt, const void *p, int64_t i)
{
    switch (dt) {
    case POPC_DTYPE_I32: return ((const int32_t *)p)[i];
    case POPC_DTYPE_I64: return ((const int64_t *)p)[i];
    case POPC_DTYPE_U8: case POPC_DTYPE_BOOL: return ((const uint8_t *)p)[i];
    case POPC_DTYPE_I8: return ((const int8_t *)p)[i];
    case POPC_DTYPE_I16: return ((const int16_t *)p)[i];
    case POPC_DTYPE_U16: return ((const uint16_t *)p)[i];
    case POPC_DTYPE_U32: return ((const uint32_t *)p)[i];
    case POPC_DTYPE_U64: return (int64_t)((const uint64_t *)p)[i];
    default: return 0;
    }
}

/* From an integer source: integer destinations wrap, as in NumPy. */
static void store_int(popc_dtype dt, void *p, int64_t i, int64_t v)
{
    switch (dt) {
    case POPC_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
    case POPC_DTYPE_I64: ((int64_t *)p)[i] = v; break;
    case POPC_DTYPE_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case POPC_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case POPC_DTYPE_I8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; break;
    case POPC_DTYPE_I16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v; break;
    case POPC_DTYPE_U16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case POPC_DTYPE_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case POPC_DTYPE_U64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    default: break;
    }
}

/* v comes from a float source or goes to a float destination. Integer
** destinations saturate, each to its own range, as the tight loops do:
** going through int64 first would wrap a value beyond a narrower type. */
static void store_float(popc_dtype dt, void *p, int64_t i, double v)
{
    switch (dt) {
    case POPC_DTYPE_F32: ((float *)p)[i] = (float)v; break;
    case POPC_DTYPE_F16: ((uint16_t *)p)[i] = f32_to_f16((float)v); break;
    case POPC_DTYPE_F64: ((double *)p)[i] = v; break;
    case POPC_DTYPE_BF16: ((uint16_t *)p)[i] = f32_to_bf16((float)v); break;
    case POPC_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0.0; break;
    case POPC_DTYPE_I8:
        ((int8_t *)p)[i] = (int8_t)sat_range(v, INT8_MIN, INT8_MAX);
        break;
    case POPC_DTYPE_I16:
        ((int16_t *)p)[i] = (int16_t)sat_range(v, INT16_MIN, INT16_MAX);
        break;
    case POPC_DTYPE_I32: ((int32_t *)p)[i] = sat_i32(v); break;
    case POPC_DTYPE_I64: ((int64_t *)p)[i] = sat_i64(v); break;
    case POPC_DTYPE_U8: ((uint8_t *)p)[i] = sat_u8(v); break;
    case POPC_DTYPE_U16:
        ((uint16_t *)p)[i] = (uint16_t)sat_range(v, 0, UINT16_MAX);
        break;
    case POPC_DTYPE_U32:
        ((uint32_t *)p)[i] = (uint32_t)sat_range(v, 0, UINT32_MAX);
        break;
    case POPC_DTYPE_U64:
        ((uint64_t *)p)[i] = v != v || v <= 0.0 ? 0u
                             : v >= 18446744073709551615.0 ? UINT64_MAX
                                                          : (uint64_t)v;
        break;
    default: break;
    }
}

static void cast_elems_generic(popc_dtype sdt, const void *src, popc_dtype ddt,
                               void *dst, int64_t n)
{
    int sf = popc_dtype_is_float(sdt), df = popc_dtype_is_float(ddt);

    for (int64_t i = 0; i < n; i++) {
        if (sf) {
            store_float(ddt, dst, i, load_float(sdt, src, i));
        } else if (df) {
            double v = sdt == POPC_DTYPE_U64
                           ? (double)((const uint64_t *)src)[i]
                           : (double)load_int(sdt, src, i);
            store_float(ddt, dst, i, v);
        } else {
            store_int(ddt, dst, i, load_int(sdt, src, i));
        }
    }
}

popc_status popc_tensor_cast(const popc_tensor *t, popc_dtype dt,
                             popc_tensor **out)
{
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_tensor_cast: out is NULL");
    *out = NULL;
    if (!t)
        return popc_set_error(POPC_EINVAL, "popc_tensor_cast: t is NULL");
    if (popc_dtype_size(dt) == 0)
        return popc_set_error(POPC_EINVAL, "popc_tensor_cast: unknown target "
                              "dtype %d; use one of the POPC_DTYPE_* values",
                              (int)dt);
    if (dt == t->dtype)
        return popc_tensor_clone(t, out);
    st = tensor_alloc("popc_tensor_cast", dt, t->dims, t->rank, 1, out);
    if (st != POPC_OK)
        return st;
    if (has_fast_cast(t->dtype) && has_fast_cast(dt))
        cast_elems(t->dtype, t->data, dt, (*out)->data, t->numel);
    else
        cast_elems_generic(t->dtype, t->data, dt, (*out)->data, t->numel);
    return POPC_OK;
}

/* ---- shape changes and comparison ---------------------------------------- */

popc_status popc_tensor_reshape(const popc_tensor *t, const int64_t *dims,
                                int rank, popc_tensor **out)
{
    int64_t shape[POPC_MAX_RANK];
    int64_t known = 1;
    int infer = -1;
    char want[256], have[256];
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_tensor_reshape: out is NULL");
    *out = NULL;
    if (!t)
        return popc_set_error(POPC_EINVAL, "popc_tensor_reshape: t is NULL");
    if (rank < 0 || rank > POPC_MAX_RANK || (rank > 0 && !dims))
        return popc_set_error(POPC_EINVAL, "popc_tensor_reshape: rank %d is "
                              "outside 0..%d", rank, POPC_MAX_RANK);
    popci_dims_str(t->dims, t->rank, have, sizeof have);
    popci_dims_str(dims, rank, want, sizeof want);
    for (int i = 0; i < rank; i++) {
        shape[i] = dims[i];
        if (dims[i] == -1) {
            if (infer >= 0)
                return popc_set_error(POPC_EINVAL, "popc_tensor_reshape: "
                                      "shape %s has more than one -1", want);
            infer = i;
        } else if (dims[i] < 0) {
            return popc_set_error(POPC_EINVAL, "popc_tensor_reshape: shape %s "
                                  "has dimension %lld; use >= 0 or one -1",
                                  want, (long long)dims[i]);
        } else if (known != 0 && dims[i] != 0 && known > INT64_MAX / dims[i]) {
            return popc_set_error(POPC_EINVAL, "popc_tensor_reshape: shape %s "
                                  "overflows", want);
        } else {
            known *= dims[i];
        }
    }
    if (infer >= 0) {
        if (known == 0 || t->numel % known != 0)
            return popc_set_error(POPC_EINVAL, "popc_tensor_reshape: cannot "
                                  "reshape %s (%lld elements) into %s", have,
                                  (long long)t->numel, want);
        shape[infer] = t->numel / known;
        known = t->numel;
    }
    if (known != t->numel)
        return popc_set_error(POPC_EINVAL, "popc_tensor_reshape: cannot "
                              "reshape %s (%lld elements) into %s (%lld "
                              "elements)", have, (long long)t->numel, want,
                              (long long)known);
    st = tensor_alloc("popc_tensor_reshape", t->dtype, shape, rank, 1, out);
    if (st != POPC_OK)
        return st;
    memcpy((*out)->data, t->data, t->nbytes);
    return POPC_OK;
}

static int same_shape(const popc_tensor *a, const popc_tensor *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

int popc_tensor_equal(const popc_tensor *a, const popc_tensor *b)
{
    if (!a || !b)
        return a == b;
    return same_shape(a, b) && memcmp(a->data, b->data, a->nbytes) == 0;
}

/* A NaN on one side only counts as an infinite difference, so a test that
** compares against a threshold fails; NaN against NaN counts as equal. */
double popc_tensor_max_abs_diff(const popc_tensor *a, const popc_tensor *b)
{
    const float *x, *y;
    double worst = 0.0;

    if (!a || !b || a->dtype != POPC_DTYPE_F32 || !same_shape(a, b))
        return -1.0;
    x = a->data;
    y = b->data;
    for (int64_t i = 0; i < a->numel; i++) {
        double d;
        if (isnan(x[i]) || isnan(y[i])) {
            if (isnan(x[i]) != isnan(y[i]))
                return INFINITY;
            continue;
        }
        if (x[i] == y[i])
            continue; /* also covers inf == inf */
        d = fabs((double)x[i] - (double)y[i]);
        if (d > worst)
            worst = d;
    }
    return worst;
}

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
