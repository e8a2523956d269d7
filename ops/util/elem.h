/* elem.h - one element of any dtype as a double or an int64.
**
** For ops that serve every dtype ONNX allows through one kernel computing
** in double (floats) or int64 (integers and bool): exact for every value of
** the narrower types; int64 and uint64 values beyond 2^53 lose precision
** on the double path. bfloat16 rounds to nearest even when stored.
*/
#ifndef POPC_OPS_OPU_ELEM_H
#define POPC_OPS_OPU_ELEM_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops/util/oputil.h"

static inline float opu_bf2f(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;

    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint16_t opu_f2bf(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline double opu_load_f(const popc_view *v, int64_t i)
{
    const void *p = v->data;

    switch (v->dtype) {
    case POPC_DTYPE_F32: return ((const float *)p)[i];
    case POPC_DTYPE_F64: return ((const double *)p)[i];
    case POPC_DTYPE_F16: return opu_h2f(((const uint16_t *)p)[i]);
    case POPC_DTYPE_BF16: return opu_bf2f(((const uint16_t *)p)[i]);
    case POPC_DTYPE_I8: return ((const int8_t *)p)[i];
    case POPC_DTYPE_I16: return ((const int16_t *)p)[i];
    case POPC_DTYPE_I32: return ((const int32_t *)p)[i];
    case POPC_DTYPE_I64: return (double)((const int64_t *)p)[i];
    case POPC_DTYPE_U8: case POPC_DTYPE_BOOL: return ((const uint8_t *)p)[i];
    case POPC_DTYPE_U16: return ((const uint16_t *)p)[i];
    case POPC_DTYPE_U32: return ((const uint32_t *)p)[i];
    case POPC_DTYPE_U64: return (double)((const uint64_t *)p)[i];
    default: return 0;
    }
}

static inline int64_t opu_load_i(const popc_view *v, int64_t i)
{
    const void *p = v->data;

    switch (v->dtype) {
    case POPC_DTYPE_I8: return ((const int8_t *)p)[i];
    case POPC_DTYPE_I16: return ((const int16_t *)p)[i];
    case POPC_DTYPE_I32: return ((const int32_t *)p)[i];
    case POPC_DTYPE_I64: return ((const int64_t *)p)[i];
    case POPC_DTYPE_U8: case POPC_DTYPE_BOOL: return ((const uint8_t *)p)[i];
    case POPC_DTYPE_U16: return ((const uint16_t *)p)[i];
    case POPC_DTYPE_U32: return ((const uint32_t *)p)[i];
    case POPC_DTYPE_U64: return (int64_t)((const uint64_t *)p)[i];
    default: return (int64_t)opu_load_f(v, i);
    }
}

/* Float to integer conversion saturates and maps NaN to 0, as Cast does. */
static inline int64_t opu_sat_i64(double x)
{
    if (x != x)
        return 0;
    if (x >= 9223372036854775807.0)
        return INT64_MAX;
    if (x <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)x;
}

static inline void opu_store_i(const popc_view *v, int64_t i, int64_t x)
{
    void *p = v->data;

    switch (v->dtype) {
    case POPC_DTYPE_I8: ((int8_t *)p)[i] = (int8_t)x; break;
    case POPC_DTYPE_I16: ((int16_t *)p)[i] = (int16_t)x; break;
    case POPC_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)x; break;
    case POPC_DTYPE_I64: ((int64_t *)p)[i] = x; break;
    case POPC_DTYPE_U8: ((uint8_t *)p)[i] = (uint8_t)x; break;
    case POPC_DTYPE_BOOL: ((uint8_t *)p)[i] = x != 0; break;
    case POPC_DTYPE_U16: ((uint16_t *)p)[i] = (uint16_t)x; break;
    case POPC_DTYPE_U32: ((uint32_t *)p)[i] = (uint32_t)x; break;
    case POPC_DTYPE_U64: ((uint64_t *)p)[i] = (uint64_t)x; break;
    case POPC_DTYPE_F32: ((float *)p)[i] = (float)x; break;
    case POPC_DTYPE_F64: ((double *)p)[i] = (double)x; break;
    case POPC_DTYPE_F16: ((uint16_t *)p)[i] = opu_f2h((float)x); break;
    case POPC_DTYPE_BF16: ((uint16_t *)p)[i] = opu_f2bf((float)x); break;
    default: break;
    }
}

static inline void opu_store_f(const popc_view *v, int64_t i, double x)
{
    void *p = v->data;

    switch (v->dtype) {
    case POPC_DTYPE_F32: ((float *)p)[i] = (float)x; break;
    case POPC_DTYPE_F64: ((double *)p)[i] = x; break;
    case POPC_DTYPE_F16: ((uint16_t *)p)[i] = opu_f2h((float)x); break;
    case POPC_DTYPE_BF16: ((uint16_t *)p)[i] = opu_f2bf((float)x); break;
    case POPC_DTYPE_BOOL: ((uint8_t *)p)[i] = x != 0; break;
    default: opu_store_i(v, i, opu_sat_i64(x)); break;
    }
}

#endif /* POPC_OPS_OPU_ELEM_H */
