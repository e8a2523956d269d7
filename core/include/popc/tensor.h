/* tensor.h - dense n-d host tensors with aligned, reference-counted storage.
**
** A tensor is row-major and contiguous. popc_tensor_new gives the caller
** one reference; popc_tensor_ref adds one, popc_tensor_unref (or its older
** name popc_tensor_free) drops one and frees the storage with the last.
** References may be taken and dropped from any thread. A tensor's dtype
** and shape never change; its elements are not thread-safe for concurrent
** writes, while concurrent reads are fine.
**
** Since 0.1.0 unless a function says otherwise; the conventions of
** popc/status.h (ownership, status codes, threads) apply.
*/
#ifndef POPC_TENSOR_H
#define POPC_TENSOR_H

#include <stdint.h>
#include "popc/status.h"
#include "popc/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct popc_tensor popc_tensor; /* opaque */

/* Storage is aligned to this many bytes (one cache line, AVX-512 safe). */
#define POPC_TENSOR_ALIGN 64

/* Zero-filled tensor. The caller owns the one reference in *out and drops
** it with popc_tensor_unref(); *out is NULL on failure. POPC_OK,
** POPC_EINVAL (out NULL, rank outside 0..POPC_MAX_RANK, negative dim,
** unknown dtype, size overflow), POPC_ENOMEM. Thread-safe. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_tensor_new(popc_dtype dt,
    const int64_t *dims, int rank, popc_tensor **out);

/* As popc_tensor_new, then copies nbytes(dims) bytes from data (copied;
** NULL only for an empty tensor). The caller owns *out. POPC_OK,
** POPC_EINVAL (as popc_tensor_new, or data NULL), POPC_ENOMEM.
** Thread-safe. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_tensor_from_data(popc_dtype dt,
    const int64_t *dims, int rank, const void *data, popc_tensor **out);

/* New tensor with the same dtype, shape and contents; the caller owns
** *out. POPC_OK, POPC_EINVAL (t or out NULL), POPC_ENOMEM. Any thread,
** while no thread writes t. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_tensor_clone(const popc_tensor *t,
    popc_tensor **out);

/* Adds a reference, which the caller then owns; returns t. NULL-safe.
** Thread-safe (atomic count). Since 0.1.0. */
POPC_API popc_tensor *popc_tensor_ref(popc_tensor *t);

/* Drops a reference; the last one frees the storage, so t must not be
** used after the caller's last reference is released. NULL-safe.
** Thread-safe: the last owner sees every other owner's writes.
** Since 0.3.0. */
POPC_API void popc_tensor_unref(popc_tensor *t);
/* popc_tensor_unref under its older name: drops one reference and frees
** the storage only with the last, not while others hold one. NULL-safe.
** Thread-safe. Since 0.1.0. */
POPC_API void popc_tensor_free(popc_tensor *t);

/* POPC_DTYPE_UNDEFINED for a NULL t. Thread-safe. Since 0.1.0. */
POPC_API popc_dtype popc_tensor_dtype(const popc_tensor *t);
/* 0 for a NULL t. Thread-safe. Since 0.1.0. */
POPC_API int popc_tensor_rank(const popc_tensor *t);
/* The rank dimensions. Borrowed: valid while t lives; NULL for a NULL
** t. Thread-safe. Since 0.1.0. */
POPC_API const int64_t *popc_tensor_dims(const popc_tensor *t);
/* Element count (1 for rank 0); 0 for a NULL t. Thread-safe.
** Since 0.1.0. */
POPC_API int64_t popc_tensor_numel(const popc_tensor *t);
/* Bytes of the elements; 0 for a NULL t. Thread-safe. Since 0.1.0. */
POPC_API size_t popc_tensor_nbytes(const popc_tensor *t);
/* Borrowed pointer to the elements (POPC_TENSOR_ALIGN-aligned); valid
** while t lives; NULL for a NULL t. Any thread; writing through it is
** not thread-safe with other readers or writers of t. Since 0.1.0. */
POPC_API void *popc_tensor_data(popc_tensor *t);
/* Read-only popc_tensor_data. Borrowed: valid while t lives. Any thread,
** while no thread writes t. Since 0.1.0. */
POPC_API const void *popc_tensor_cdata(const popc_tensor *t);
/* A view of the whole tensor (borrowed data: valid while t lives); an
** empty view for a NULL t. Thread-safe. Since 0.1.0. */
POPC_API popc_view popc_tensor_view(popc_tensor *t);

/* Converting copy into a new tensor of dtype dt, owned by the caller (the
** same dtype gives a clone). Float to integer truncates toward zero (NaN
** gives 0); values outside the target's range, infinities included,
** saturate to its min or max, for every float and integer dtype.
** Integer to a narrower integer wraps as in NumPy; any value to bool is
** (v != 0); to float16 rounds to nearest even. POPC_OK, POPC_EINVAL (t or
** out NULL, unknown dtype), POPC_ENOMEM. Any thread, while no thread
** writes t. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_tensor_cast(const popc_tensor *t,
    popc_dtype dt, popc_tensor **out);

/* Same data, new shape with the same element count (a copy the caller
** owns; the original is untouched). One dim may be -1 (inferred).
** POPC_OK, POPC_EINVAL (t or out NULL, bad rank or dims, another element
** count), POPC_ENOMEM. Any thread, while no thread writes t.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_tensor_reshape(const popc_tensor *t,
    const int64_t *dims, int rank, popc_tensor **out);

/* True when dtype and shape agree and every element is equal (bitwise for
** floats); two NULLs are equal. Any thread, while no thread writes a or
** b. Since 0.1.0. */
POPC_API int popc_tensor_equal(const popc_tensor *a, const popc_tensor *b);

/* Largest absolute elementwise difference of two float32 tensors of the same
** shape; -1.0 when dtypes or shapes differ (or either is NULL). A NaN on
** one side only counts as +inf; NaN against NaN (and inf against the same
** inf) as 0. Any thread, while no thread writes a or b. Since 0.1.0. */
POPC_API double popc_tensor_max_abs_diff(const popc_tensor *a,
    const popc_tensor *b);

/* "float32[64, 784]" into buf (always terminated; "(null)" for a NULL t;
** nothing when buf is NULL or size 0). Returns buf, which the caller
** owns. Thread-safe. Since 0.1.0. */
POPC_API char *popc_tensor_describe(const popc_tensor *t, char *buf,
    size_t size);
/* As popc_tensor_describe, for a view. Returns buf, which the caller
** owns. Thread-safe. Since 0.1.0. */
POPC_API char *popc_view_describe(const popc_view *v, char *buf, size_t size);

/* IEEE binary16 conversion, round to nearest even; NaN and inf kept.
** Thread-safe. Since 0.1.0. */
POPC_API uint16_t popc_f32_to_f16(float f);
/* Exact binary16 to float32 conversion. Thread-safe. Since 0.1.0. */
POPC_API float popc_f16_to_f32(uint16_t h);

/* Stochastic rounding to binary16 (Precision.enableStochasticRounding): x
** goes to one of the two halves around it, the farther one with
** probability proportional to x's distance from the nearer, so the
** rounding error has mean 0. random: a uniform 32-bit number. f2h and h2f
** are round-to-nearest conversions (popc_f32_to_f16 and popc_f16_to_f32,
** or a plugin's own). Exact values, NaN and infinities are kept. A
** static inline so that plugins need not link libpopc. Since 0.2.0. */
static inline uint16_t popc_f16_stochastic(float x, uint32_t random,
                                           uint16_t (*f2h)(float),
                                           float (*h2f)(uint16_t))
{
    uint16_t near = f2h(x), other;
    double ax = x < 0 ? -(double)x : (double)x, an = h2f(near), ao, lo, hi;

    if (h2f(near) == x || x != x || (near & 0x7c00) == 0x7c00)
        return near;
    an = an < 0 ? -an : an;
    /* the neighbour on x's side: one step of the magnitude */
    other = an < ax ? (uint16_t)(near + 1) : (uint16_t)(near - 1);
    ao = h2f(other);
    ao = ao < 0 ? -ao : ao;
    lo = an < ao ? an : ao;
    hi = an < ao ? ao : an;
    /* P(hi) = (|x| - lo) / (hi - lo) */
    if ((double)random < (ax - lo) / (hi - lo) * 4294967296.0)
        return an < ao ? other : near;
    return an < ao ? near : other;
}

/* NumPy .npy files (format 1.0/2.0/3.0, read and written by libpopc's data
** layer, data/npy.c; little endian, C order; dtypes <f4
** <f2 <i4 <i8 |u1 |b1, and |i1 <i2 <u2 <u4 <u8; <f8 is read as float32).
** The caller owns *out (NULL on failure). Errors name the file and what
** is wrong: POPC_EIO (cannot open, truncated, bad magic, corrupt header),
** POPC_EUNSUPPORTED (Fortran order, big endian, other dtypes, rank above
** POPC_MAX_RANK), POPC_EINVAL (path or out NULL), POPC_ENOMEM; else
** POPC_OK. Thread-safe. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_npy_load(const char *path,
    popc_tensor **out);
/* The same, keeping every dtype as the file has it: <f8 is float64. For
** callers that feed a file to a graph input of the file's own type (popc
** infer MODEL.onnx -i NAME=FILE.npy). The caller owns *out (NULL on
** failure). POPC_OK, POPC_EIO, POPC_EUNSUPPORTED, POPC_EINVAL,
** POPC_ENOMEM, as popc_npy_load. Thread-safe. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_npy_load_exact(const char *path,
    popc_tensor **out);
/* Writes t as a .npy 1.0 file to a temporary name renamed into place, so
** a reader never sees half a file. POPC_OK, POPC_EINVAL (path or t NULL,
** a dtype .npy has no code for), POPC_EIO, POPC_ENOMEM, POPC_EINTERNAL
** (a bug). Any thread, while no thread writes t. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_npy_save(const char *path,
    const popc_tensor *t);

#ifdef __cplusplus
}
#endif
#endif /* POPC_TENSOR_H */
