/* types.h - element types and the plain tensor view shared by the API and
** the plugin ABI.
**
** A popc_view is a borrowed look at dense, row-major, contiguous memory. It
** owns nothing; whoever hands one out says how long `data` stays valid.
*/
#ifndef POPC_TYPES_H
#define POPC_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define POPC_MAX_RANK 8

/* Values are stored in executables: append only. */
typedef enum popc_dtype {
    POPC_DTYPE_UNDEFINED = 0,
    POPC_DTYPE_F32 = 1,
    POPC_DTYPE_F16 = 2,  /* IEEE binary16, stored as uint16_t */
    POPC_DTYPE_I32 = 3,
    POPC_DTYPE_I64 = 4,
    POPC_DTYPE_U8 = 5,
    POPC_DTYPE_BOOL = 6, /* one byte, 0 or 1 */
    POPC_DTYPE_F64 = 7,
    POPC_DTYPE_I8 = 8,
    POPC_DTYPE_I16 = 9,
    POPC_DTYPE_U16 = 10,
    POPC_DTYPE_U32 = 11,
    POPC_DTYPE_U64 = 12,
    POPC_DTYPE_BF16 = 13 /* bfloat16, stored as uint16_t (high half of a float) */
} popc_dtype;

#define POPC_DTYPE_COUNT 14

/* A tensor's dtype, shape and data. Frozen for the whole plugin ABI major
** version: no size, no growth. It crosses in arrays everywhere (kernel
** inputs and outputs, frame slots, plan slots) and its members say all a
** dense tensor is, so what more a call needs goes into the size-prefixed
** context around the views instead. Changing it is an ABI major bump. */
typedef struct popc_view {
    popc_dtype dtype;
    int rank;                       /* 0 (scalar) .. POPC_MAX_RANK */
    int64_t dims[POPC_MAX_RANK];
    void *data;                     /* may be NULL: shape only */
} popc_view;

/* Bytes per element; 0 for POPC_DTYPE_UNDEFINED or an unknown value. */
static inline size_t popc_dtype_size(popc_dtype dt)
{
    switch (dt) {
    case POPC_DTYPE_F32: case POPC_DTYPE_I32: case POPC_DTYPE_U32: return 4;
    case POPC_DTYPE_F16: case POPC_DTYPE_BF16: case POPC_DTYPE_I16:
    case POPC_DTYPE_U16: return 2;
    case POPC_DTYPE_I64: case POPC_DTYPE_U64: case POPC_DTYPE_F64: return 8;
    case POPC_DTYPE_U8: case POPC_DTYPE_I8: case POPC_DTYPE_BOOL: return 1;
    default: return 0;
    }
}

/* "float32", "float16", "int32", "int64", "uint8", "bool", "float64",
** "int8", "int16", "uint16", "uint32", "uint64", "bfloat16", "undefined". */
static inline const char *popc_dtype_name(popc_dtype dt)
{
    switch (dt) {
    case POPC_DTYPE_F32: return "float32";
    case POPC_DTYPE_F16: return "float16";
    case POPC_DTYPE_I32: return "int32";
    case POPC_DTYPE_I64: return "int64";
    case POPC_DTYPE_U8: return "uint8";
    case POPC_DTYPE_BOOL: return "bool";
    case POPC_DTYPE_F64: return "float64";
    case POPC_DTYPE_I8: return "int8";
    case POPC_DTYPE_I16: return "int16";
    case POPC_DTYPE_U16: return "uint16";
    case POPC_DTYPE_U32: return "uint32";
    case POPC_DTYPE_U64: return "uint64";
    case POPC_DTYPE_BF16: return "bfloat16";
    default: return "undefined";
    }
}

/* 1 for the floating-point dtypes (float32, float16, float64, bfloat16). */
static inline int popc_dtype_is_float(popc_dtype dt)
{
    return dt == POPC_DTYPE_F32 || dt == POPC_DTYPE_F16 ||
           dt == POPC_DTYPE_F64 || dt == POPC_DTYPE_BF16;
}

static inline int64_t popc_view_numel(const popc_view *v)
{
    int64_t n = 1;
    for (int i = 0; i < v->rank; i++)
        n *= v->dims[i];
    return n;
}

static inline size_t popc_view_nbytes(const popc_view *v)
{
    return (size_t)popc_view_numel(v) * popc_dtype_size(v->dtype);
}

#ifdef __cplusplus
}
#endif
#endif /* POPC_TYPES_H */
