/* tensor_cast.c - popc_tensor_cast (popc/tensor.h): a tensor's elements
** converted to another dtype, built on the core's public tensor API. The
** core itself never casts a tensor; model.half() (opt/), the datasets
** (data/) and the ONNX importer (onnx/) do.
**
** float16 goes through the core's scalar conversions (popc_f32_to_f16,
** popc_f16_to_f32), so a cast rounds exactly as the core and the kernels
** do; bfloat16 is converted here.
*/
#include "config.h"

#include <string.h>

#include "popc/tensor.h"
#include "core/layer/shape.h"

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

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
        CAST_FROM(sdt, float, v, popc_f16_to_f32(v), v, v, v, v);
        break;
    case POPC_DTYPE_F16:
        CAST_FROM(sdt, uint16_t, popc_f32_to_f16(v), v,
                  popc_f32_to_f16((float)v), popc_f32_to_f16((float)v),
                  popc_f32_to_f16((float)v), popc_f32_to_f16((float)v));
        break;
    case POPC_DTYPE_I32:
        CAST_FROM(sdt, int32_t, sat_i32(v), sat_i32(popc_f16_to_f32(v)), v,
                  (uint32_t)v, v, v);
        break;
    case POPC_DTYPE_I64:
        CAST_FROM(sdt, int64_t, sat_i64(v), sat_i64(popc_f16_to_f32(v)), v,
                  v, v, v);
        break;
    case POPC_DTYPE_U8:
        CAST_FROM(sdt, uint8_t, sat_u8(v), sat_u8(popc_f16_to_f32(v)),
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
    case POPC_DTYPE_F16: return popc_f16_to_f32(((const uint16_t *)p)[i]);
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
    case POPC_DTYPE_F16: ((uint16_t *)p)[i] = popc_f32_to_f16((float)v); break;
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
    popc_dtype sdt;
    int64_t numel;
    size_t nbytes;
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
    sdt = popc_tensor_dtype(t);
    if (dt == sdt)
        return popc_tensor_clone(t, out);
    /* The shape check first, so that its messages and the out-of-memory
    ** one name this function, not popc_tensor_new. */
    st = popci_shape_size("popc_tensor_cast", dt, popc_tensor_dims(t),
                          popc_tensor_rank(t), &numel, &nbytes);
    if (st != POPC_OK)
        return st;
    st = popc_tensor_new(dt, popc_tensor_dims(t), popc_tensor_rank(t), out);
    if (st == POPC_ENOMEM)
        return popc_set_error(POPC_ENOMEM, "popc_tensor_cast: out of memory "
                              "for %zu bytes", nbytes);
    if (st != POPC_OK)
        return st;
    if (has_fast_cast(sdt) && has_fast_cast(dt))
        cast_elems(sdt, popc_tensor_cdata(t), dt, popc_tensor_data(*out),
                   numel);
    else
        cast_elems_generic(sdt, popc_tensor_cdata(t), dt,
                           popc_tensor_data(*out), numel);
    return POPC_OK;
}
