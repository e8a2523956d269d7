/* check_tensor.c - tensors: creation, alignment, reference counting, casts
** between every pair of dtypes (float16 edge cases bit by bit), reshape,
** comparison, description and argument errors. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/fault.h"
#include "popc/popc.h"
#include "tests/harness/assert.h"

#if defined(__SANITIZE_ADDRESS__)
/* ASan reports a huge request as an error instead of returning NULL; the
** library's answer to NULL is what huge_allocation_fails_cleanly checks. */
POPC_API const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}
#endif

static const popc_dtype all_dtypes[] = {POPC_DTYPE_F32, POPC_DTYPE_F16,
                                        POPC_DTYPE_I32, POPC_DTYPE_I64,
                                        POPC_DTYPE_U8,  POPC_DTYPE_BOOL};
#define N_DTYPES (int)(sizeof all_dtypes / sizeof all_dtypes[0])

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- creation ---------------------------------------------------------- */

START_TEST(new_every_dtype_zeroed_and_aligned)
{
    const int64_t dims[3] = {2, 3, 5};

    for (int k = 0; k < N_DTYPES; k++) {
        popc_tensor *t;
        const unsigned char *p;

        ASSERT_OK(popc_tensor_new(all_dtypes[k], dims, 3, &t));
        ck_assert_int_eq(popc_tensor_dtype(t), all_dtypes[k]);
        ck_assert_int_eq(popc_tensor_rank(t), 3);
        ck_assert_int_eq(popc_tensor_dims(t)[2], 5);
        ck_assert_int_eq(popc_tensor_numel(t), 30);
        ck_assert_uint_eq(popc_tensor_nbytes(t),
                          30 * popc_dtype_size(all_dtypes[k]));
        ck_assert_uint_eq((uintptr_t)popc_tensor_data(t) % POPC_TENSOR_ALIGN,
                          0);
        p = popc_tensor_cdata(t);
        for (size_t i = 0; i < popc_tensor_nbytes(t); i++)
            ck_assert_uint_eq(p[i], 0);
        popc_tensor_free(t);
    }
}
END_TEST

START_TEST(scalar_and_empty_tensors)
{
    popc_tensor *s, *e;
    const int64_t zero[2] = {0, 1000000000000LL};
    char buf[64];

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, NULL, 0, &s));
    ck_assert_int_eq(popc_tensor_numel(s), 1);
    ck_assert_uint_eq(popc_tensor_nbytes(s), 4);
    ck_assert_str_eq(popc_tensor_describe(s, buf, sizeof buf), "float32[]");
    /* A zero dimension makes any other size fine. */
    ASSERT_OK(popc_tensor_new(POPC_DTYPE_I64, zero, 2, &e));
    ck_assert_int_eq(popc_tensor_numel(e), 0);
    ck_assert_uint_eq(popc_tensor_nbytes(e), 0);
    ck_assert_ptr_nonnull(popc_tensor_data(e));
    ck_assert_str_eq(popc_tensor_describe(e, buf, sizeof buf),
                     "int64[0, 1000000000000]");
    popc_tensor_free(s);
    popc_tensor_free(e);
}
END_TEST

START_TEST(bad_arguments_are_einval)
{
    popc_tensor *t = (popc_tensor *)1;
    int64_t dims[POPC_MAX_RANK + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    const int64_t neg[2] = {2, -3};
    const int64_t huge[2] = {INT64_MAX / 2, 3};
    const int64_t big[3] = {1LL << 40, 1LL << 20, 1LL << 3};

    ck_assert_int_eq(popc_tensor_new(POPC_DTYPE_F32, dims, 9, &t),
                     POPC_EINVAL);
    ck_assert_ptr_null(t);
    ASSERT_HAS(popc_last_error(), "rank 9 is outside 0..8");
    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, dims, 8, &t));
    popc_tensor_free(t);
    ck_assert_int_eq(popc_tensor_new(POPC_DTYPE_F32, dims, -1, &t),
                     POPC_EINVAL);
    ck_assert_int_eq(popc_tensor_new(POPC_DTYPE_F32, neg, 2, &t),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "dimension 1 is -3");
    ck_assert_int_eq(popc_tensor_new(POPC_DTYPE_UNDEFINED, neg, 1, &t),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "unknown dtype 0");
    ck_assert_int_eq(popc_tensor_new((popc_dtype)42, neg, 1, &t),
                     POPC_EINVAL);
    ck_assert_int_eq(popc_tensor_new(POPC_DTYPE_F32, huge, 2, &t),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "overflows");
    /* 2^63 elements: numel fits nothing. */
    ck_assert_int_eq(popc_tensor_new(POPC_DTYPE_U8, big, 3, &t), POPC_EINVAL);
    ck_assert_int_eq(popc_tensor_new(POPC_DTYPE_F32, NULL, 2, &t),
                     POPC_EINVAL);
    ck_assert_int_eq(popc_tensor_new(POPC_DTYPE_F32, NULL, 0, NULL),
                     POPC_EINVAL);
    ck_assert_ptr_null(t);
}
END_TEST

START_TEST(huge_allocation_fails_cleanly)
{
    /* Representable but far beyond the machine: ENOMEM, not a crash. */
    const int64_t dims[2] = {1LL << 30, 1LL << 26};
    popc_tensor *t;

    ck_assert_int_eq(popc_tensor_new(POPC_DTYPE_F32, dims, 2, &t),
                     POPC_ENOMEM);
    ck_assert_ptr_null(t);
    ASSERT_HAS(popc_last_error(), "out of memory");
}
END_TEST

START_TEST(from_data_copies_and_clone_is_deep)
{
    const int64_t dims[2] = {2, 2};
    int32_t src[4] = {1, -2, 3, -4};
    popc_tensor *a, *b;

    ASSERT_OK(popc_tensor_from_data(POPC_DTYPE_I32, dims, 2, src, &a));
    src[0] = 99;
    ck_assert_int_eq(((int32_t *)popc_tensor_data(a))[0], 1);
    ASSERT_OK(popc_tensor_clone(a, &b));
    ck_assert(popc_tensor_equal(a, b));
    ck_assert_ptr_ne(popc_tensor_data(a), popc_tensor_data(b));
    ((int32_t *)popc_tensor_data(b))[3] = 7;
    ck_assert(!popc_tensor_equal(a, b));
    ck_assert_int_eq(((int32_t *)popc_tensor_data(a))[3], -4);
    popc_tensor_free(b);
    ck_assert_int_eq(popc_tensor_from_data(POPC_DTYPE_I32, dims, 2, NULL,
                                           &b),
                     POPC_EINVAL);
    ck_assert_ptr_null(b);
    ck_assert_int_eq(popc_tensor_clone(NULL, &b), POPC_EINVAL);
    popc_tensor_free(a);
}
END_TEST

START_TEST(view_matches_tensor)
{
    const int64_t dims[3] = {4, 1, 3};
    popc_tensor *t;
    popc_view v;
    char a[64], b[64];

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F16, dims, 3, &t));
    v = popc_tensor_view(t);
    ck_assert_int_eq(v.dtype, POPC_DTYPE_F16);
    ck_assert_int_eq(v.rank, 3);
    ck_assert_int_eq(v.dims[0], 4);
    ck_assert_ptr_eq(v.data, popc_tensor_data(t));
    ck_assert_uint_eq(popc_view_nbytes(&v), popc_tensor_nbytes(t));
    ck_assert_str_eq(popc_view_describe(&v, a, sizeof a),
                     popc_tensor_describe(t, b, sizeof b));
    ck_assert_str_eq(a, "float16[4, 1, 3]");
    /* Always terminated, even when cut. */
    ck_assert_str_eq(popc_tensor_describe(t, a, 6), "float");
    ck_assert_str_eq(popc_tensor_describe(NULL, a, sizeof a), "(null)");
    popc_tensor_free(t);
}
END_TEST

/* ---- reference counting ---------------------------------------------- */

START_TEST(ref_and_free)
{
    popc_tensor *t;
    const int64_t d = 3;

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, &d, 1, &t));
    ck_assert_ptr_eq(popc_tensor_ref(t), t);
    ck_assert_ptr_eq(popc_tensor_ref(t), t);
    popc_tensor_unref(t);
    popc_tensor_free(t);
    /* Still alive: one reference left (ASan would catch a use after free). */
    ((float *)popc_tensor_data(t))[2] = 1.0f;
    popc_tensor_unref(t);
    ck_assert_ptr_null(popc_tensor_ref(NULL));
    popc_tensor_free(NULL);
    popc_tensor_unref(NULL);
    ck_assert_int_eq(popc_tensor_numel(NULL), 0);
    ck_assert_ptr_null(popc_tensor_data(NULL));
}
END_TEST

static void *ref_storm(void *arg)
{
    popc_tensor *t = arg;

    for (int i = 0; i < 100000; i++) {
        popc_tensor_ref(t);
        popc_tensor_free(t);
    }
    popc_tensor_free(t); /* the reference the creator handed over */
    return NULL;
}

START_TEST(refcount_is_atomic)
{
    pthread_t th[4];
    popc_tensor *t;
    const int64_t d = 1000;

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, &d, 1, &t));
    for (int i = 0; i < 4; i++) {
        popc_tensor_ref(t);
        ck_assert_int_eq(pthread_create(&th[i], NULL, ref_storm, t), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    ((float *)popc_tensor_data(t))[999] = 2.0f;
    popc_tensor_free(t);
}
END_TEST

/* ---- float16 ------------------------------------------------------------- */

START_TEST(f16_exact_values)
{
    static const struct {
        uint32_t f32;
        uint16_t f16;
    } exact[] = {
        {0x00000000u, 0x0000}, /* +0 */
        {0x80000000u, 0x8000}, /* -0 */
        {0x3f800000u, 0x3c00}, /* 1 */
        {0xc0000000u, 0xc000}, /* -2 */
        {0x477fe000u, 0x7bff}, /* 65504, largest finite */
        {0x38800000u, 0x0400}, /* 2^-14, smallest normal */
        {0x33800000u, 0x0001}, /* 2^-24, smallest subnormal */
        {0xb3800000u, 0x8001}, /* -2^-24 */
        {0x387fc000u, 0x03ff}, /* largest subnormal */
        {0x7f800000u, 0x7c00}, /* inf */
        {0xff800000u, 0xfc00}, /* -inf */
        {0x3eaaa000u, 0x3555}, /* 0.333251953125 */
    };

    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        float f = from_bits(exact[i].f32);
        ck_assert_msg(popc_f32_to_f16(f) == exact[i].f16,
                      "f32 %08x -> %04x, want %04x", exact[i].f32,
                      popc_f32_to_f16(f), exact[i].f16);
        ck_assert_msg(bits(popc_f16_to_f32(exact[i].f16)) == exact[i].f32,
                      "f16 %04x -> %08x, want %08x", exact[i].f16,
                      bits(popc_f16_to_f32(exact[i].f16)), exact[i].f32);
    }
}
END_TEST

START_TEST(f16_rounding_nearest_even)
{
    /* 1 + 2^-11 is halfway between 1 and 1+2^-10: ties to even (1). */
    ck_assert_uint_eq(popc_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
    /* 1 + 3*2^-11 is halfway between 1+2^-10 and 1+2^-9: to even. */
    ck_assert_uint_eq(popc_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
    /* Just above the tie rounds up. */
    ck_assert_uint_eq(popc_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
    /* 65519 rounds down to 65504; 65520 (a tie) rounds to inf. */
    ck_assert_uint_eq(popc_f32_to_f16(65519.0f), 0x7bff);
    ck_assert_uint_eq(popc_f32_to_f16(65520.0f), 0x7c00);
    ck_assert_uint_eq(popc_f32_to_f16(-1e6f), 0xfc00);
    ck_assert_uint_eq(popc_f32_to_f16(3.4e38f), 0x7c00);
    /* Subnormal rounding: 2^-25 is a tie to 0, above it goes to 2^-24. */
    ck_assert_uint_eq(popc_f32_to_f16(0x1p-25f), 0x0000);
    ck_assert_uint_eq(popc_f32_to_f16(-0x1p-25f), 0x8000);
    ck_assert_uint_eq(popc_f32_to_f16(0x1.000002p-25f), 0x0001);
    ck_assert_uint_eq(popc_f32_to_f16(3 * 0x1p-25f), 0x0002); /* tie, even */
    ck_assert_uint_eq(popc_f32_to_f16(5 * 0x1p-25f), 0x0002); /* tie, even */
    ck_assert_uint_eq(popc_f32_to_f16(1e-30f), 0x0000);
    /* Largest subnormal rounding up into the smallest normal. */
    ck_assert_uint_eq(popc_f32_to_f16(0x1.ffcp-15f + 0x1p-25f), 0x0400);
    /* Float32 subnormals become zero with their sign. */
    ck_assert_uint_eq(popc_f32_to_f16(from_bits(0x80000001u)), 0x8000);
}
END_TEST

START_TEST(f16_nan_stays_nan)
{
    uint16_t h = popc_f32_to_f16(NAN);
    uint16_t neg = popc_f32_to_f16(from_bits(0xff800001u)); /* low payload */

    ck_assert_uint_eq(h & 0x7c00, 0x7c00);
    ck_assert_uint_ne(h & 0x03ff, 0);
    ck_assert_uint_eq(neg & 0xfc00, 0xfc00);
    ck_assert_uint_ne(neg & 0x03ff, 0); /* not turned into -inf */
    ck_assert(isnan(popc_f16_to_f32(0x7e00)));
    ck_assert(isnan(popc_f16_to_f32(0xfc01)));
    ck_assert(isinf(popc_f16_to_f32(0x7c00)));
}
END_TEST

START_TEST(f16_round_trip_all_values)
{
    /* Every half except NaN survives half -> float -> half exactly. */
    for (uint32_t h = 0; h <= 0xffff; h++) {
        float f = popc_f16_to_f32((uint16_t)h);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
            continue;
        ck_assert_msg(popc_f32_to_f16(f) == h, "%04x -> %a -> %04x", h, f,
                      popc_f32_to_f16(f));
    }
}
END_TEST

START_TEST(f16_matches_double_rounding_reference)
{
    /* Compare with a slow reference for many floats around the half range:
    ** round |f| to the nearest multiple of the half ulp at its exponent. */
    uint32_t x = 12345u;

    for (int i = 0; i < 200000; i++) {
        double a, ulp, q, r;
        float f;
        uint16_t got;
        int e;

        x = x * 1664525u + 1013904223u;
        f = from_bits((x & 0x807fffffu) | ((100u + (x >> 24) % 45u) << 23));
        a = fabs((double)f);
        frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
        ulp = ldexp(1.0, (e - 1 < -14 ? -14 : e - 1) - 10);
        q = floor(a / ulp);
        r = a - q * ulp;
        if (r > ulp / 2 || (r == ulp / 2 && fmod(q, 2.0) == 1.0))
            q += 1;
        got = popc_f32_to_f16(f);
        if (q * ulp > 65504.0) {
            ck_assert_uint_eq(got & 0x7fff, 0x7c00);
            continue;
        }
        ck_assert_msg(popc_f16_to_f32(got) == (float)(signbit(f) ? -q * ulp
                                                                 : q * ulp),
                      "%a -> %04x", f, got);
    }
}
END_TEST

/* ---- casts ------------------------------------------------------------- */

/* One value per dtype written from a double. */
static void put(popc_tensor *t, int64_t i, double v)
{
    void *p = popc_tensor_data(t);

    switch (popc_tensor_dtype(t)) {
    case POPC_DTYPE_F32: ((float *)p)[i] = (float)v; break;
    case POPC_DTYPE_F16: ((uint16_t *)p)[i] = popc_f32_to_f16((float)v); break;
    case POPC_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case POPC_DTYPE_I64: ((int64_t *)p)[i] = (int64_t)v; break;
    case POPC_DTYPE_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case POPC_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: break;
    }
}

static double get(const popc_tensor *t, int64_t i)
{
    const void *p = popc_tensor_cdata(t);

    switch (popc_tensor_dtype(t)) {
    case POPC_DTYPE_F32: return ((const float *)p)[i];
    case POPC_DTYPE_F16: return popc_f16_to_f32(((const uint16_t *)p)[i]);
    case POPC_DTYPE_I32: return ((const int32_t *)p)[i];
    case POPC_DTYPE_I64: return (double)((const int64_t *)p)[i];
    case POPC_DTYPE_U8: return ((const uint8_t *)p)[i];
    case POPC_DTYPE_BOOL: return ((const uint8_t *)p)[i];
    default: return NAN;
    }
}

START_TEST(cast_every_pair_small_values)
{
    /* Values every dtype holds exactly (bool only 0 and 1). */
    static const double vals[] = {0, 1, 2, 7, 100, 3, 0, 1};
    const int64_t dims[2] = {2, 4};

    for (int a = 0; a < N_DTYPES; a++)
        for (int b = 0; b < N_DTYPES; b++) {
            popc_tensor *src, *dst;

            ASSERT_OK(popc_tensor_new(all_dtypes[a], dims, 2, &src));
            for (int i = 0; i < 8; i++)
                put(src, i, vals[i]);
            ASSERT_OK(popc_tensor_cast(src, all_dtypes[b], &dst));
            ck_assert_int_eq(popc_tensor_dtype(dst), all_dtypes[b]);
            ck_assert_int_eq(popc_tensor_rank(dst), 2);
            ck_assert_int_eq(popc_tensor_dims(dst)[1], 4);
            for (int i = 0; i < 8; i++) {
                double want = get(src, i);
                if (all_dtypes[b] == POPC_DTYPE_BOOL)
                    want = want != 0;
                ck_assert_msg(get(dst, i) == want, "%s -> %s [%d]: %g vs %g",
                              popc_dtype_name(all_dtypes[a]),
                              popc_dtype_name(all_dtypes[b]), i,
                              get(dst, i), want);
            }
            popc_tensor_free(src);
            popc_tensor_free(dst);
        }
}
END_TEST

START_TEST(cast_float_to_int_truncates_and_saturates)
{
    const float in[] = {2.9f, -2.9f, 0.5f, -0.5f, 3e9f, -3e9f, NAN,
                        INFINITY, 300.0f, -1.0f};
    const int64_t d = 10;
    popc_tensor *f, *i32, *i64, *u8, *b;

    ASSERT_OK(popc_tensor_from_data(POPC_DTYPE_F32, &d, 1, in, &f));
    ASSERT_OK(popc_tensor_cast(f, POPC_DTYPE_I32, &i32));
    ASSERT_OK(popc_tensor_cast(f, POPC_DTYPE_I64, &i64));
    ASSERT_OK(popc_tensor_cast(f, POPC_DTYPE_U8, &u8));
    ASSERT_OK(popc_tensor_cast(f, POPC_DTYPE_BOOL, &b));
    {
        const int32_t w32[] = {2, -2, 0, 0, INT32_MAX, INT32_MIN, 0,
                               INT32_MAX, 300, -1};
        const int64_t w64[] = {2, -2, 0, 0, 3000000000LL, -3000000000LL, 0,
                               INT64_MAX, 300, -1};
        const uint8_t w8[] = {2, 0, 0, 0, 255, 0, 0, 255, 255, 0};
        const uint8_t wb[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
        ck_assert_mem_eq(popc_tensor_data(i32), w32, sizeof w32);
        ck_assert_mem_eq(popc_tensor_data(i64), w64, sizeof w64);
        ck_assert_mem_eq(popc_tensor_data(u8), w8, sizeof w8);
        ck_assert_mem_eq(popc_tensor_data(b), wb, sizeof wb);
    }
    popc_tensor_free(f);
    popc_tensor_free(i32);
    popc_tensor_free(i64);
    popc_tensor_free(u8);
    popc_tensor_free(b);
}
END_TEST

/* Every float dtype into every integer dtype: truncation toward zero,
** NaN to 0, and values beyond the target's range (infinities included)
** saturate to its min or max, whichever path the pair takes. */
typedef struct int_range {
    popc_dtype dt;
    int64_t lo;  /* signed targets */
    uint64_t hi;
    int is_signed;
} int_range;

static const int_range int_ranges[] = {
    {POPC_DTYPE_I8, INT8_MIN, INT8_MAX, 1},
    {POPC_DTYPE_I16, INT16_MIN, INT16_MAX, 1},
    {POPC_DTYPE_I32, INT32_MIN, INT32_MAX, 1},
    {POPC_DTYPE_I64, INT64_MIN, INT64_MAX, 1},
    {POPC_DTYPE_U8, 0, UINT8_MAX, 0},
    {POPC_DTYPE_U16, 0, UINT16_MAX, 0},
    {POPC_DTYPE_U32, 0, UINT32_MAX, 0},
    {POPC_DTYPE_U64, 0, UINT64_MAX, 0},
};

/* Element i of an integer tensor, sign- or zero-extended. */
static uint64_t int_bits(const popc_tensor *t, int64_t i)
{
    const void *p = popc_tensor_cdata(t);

    switch (popc_tensor_dtype(t)) {
    case POPC_DTYPE_I8: return (uint64_t)(int64_t)((const int8_t *)p)[i];
    case POPC_DTYPE_I16: return (uint64_t)(int64_t)((const int16_t *)p)[i];
    case POPC_DTYPE_I32: return (uint64_t)(int64_t)((const int32_t *)p)[i];
    case POPC_DTYPE_I64: return (uint64_t)((const int64_t *)p)[i];
    case POPC_DTYPE_U8: return ((const uint8_t *)p)[i];
    case POPC_DTYPE_U16: return ((const uint16_t *)p)[i];
    case POPC_DTYPE_U32: return ((const uint32_t *)p)[i];
    case POPC_DTYPE_U64: return ((const uint64_t *)p)[i];
    default: return 0;
    }
}

/* What x becomes in r, as int_bits gives it. */
static uint64_t saturated(double x, const int_range *r)
{
    if (isnan(x))
        return 0;
    if (r->is_signed) {
        if (x <= (double)r->lo)
            return (uint64_t)r->lo;
        if (x >= (double)r->hi)
            return r->hi;
        return (uint64_t)(int64_t)x;
    }
    if (x <= 0.0)
        return 0;
    if (x >= (double)r->hi)
        return r->hi;
    return (uint64_t)x;
}

/* Element i of a float tensor, exactly. */
static double float_at(const popc_tensor *t, int64_t i)
{
    const uint16_t *h = popc_tensor_cdata(t);

    switch (popc_tensor_dtype(t)) {
    case POPC_DTYPE_F32: return ((const float *)h)[i];
    case POPC_DTYPE_F16: return popc_f16_to_f32(h[i]);
    case POPC_DTYPE_F64: return ((const double *)h)[i];
    case POPC_DTYPE_BF16: return from_bits((uint32_t)h[i] << 16);
    default: return NAN;
    }
}

START_TEST(cast_float_to_every_int_saturates)
{
    static const popc_dtype floats[] = {POPC_DTYPE_F32, POPC_DTYPE_F16,
                                        POPC_DTYPE_F64, POPC_DTYPE_BF16};
    /* in range for some targets and beyond others' max or min */
    static const double vals[] = {
        3.75, -3.75, 0.5, -0.5, 127.0, 128.0, -128.0, -129.0, 255.9, 300.0,
        32767.0, -32769.0, 65535.0, 70000.0, -70000.0, 3e9, -3e9, 5e9,
        9.3e18, -9.3e18, 1e19, 2e19, 3e38, -3e38, 1e300, -1e300, INFINITY,
        -INFINITY, NAN};
    const int64_t n = (int64_t)(sizeof vals / sizeof vals[0]);

    for (size_t a = 0; a < sizeof floats / sizeof floats[0]; a++) {
        popc_tensor *src = NULL;

        ASSERT_OK(popc_tensor_new(floats[a], &n, 1, &src));
        for (int64_t i = 0; i < n; i++) {
            double v = vals[i];
            void *p = popc_tensor_data(src);

            /* beyond float32 is infinity there (a C conversion would be
            ** undefined) */
            if (floats[a] != POPC_DTYPE_F64 && fabs(v) > 3.4e38)
                v = v > 0 ? INFINITY : -INFINITY;
            switch (floats[a]) {
            case POPC_DTYPE_F32: ((float *)p)[i] = (float)v; break;
            case POPC_DTYPE_F16:
                ((uint16_t *)p)[i] = popc_f32_to_f16((float)v);
                break;
            case POPC_DTYPE_F64: ((double *)p)[i] = v; break;
            default:
                ((uint16_t *)p)[i] = (uint16_t)(bits((float)v) >> 16);
                break;
            }
        }
        for (size_t b = 0; b < sizeof int_ranges / sizeof int_ranges[0];
             b++) {
            const int_range *r = &int_ranges[b];
            popc_tensor *dst = NULL;

            ASSERT_OK(popc_tensor_cast(src, r->dt, &dst));
            for (int64_t i = 0; i < n; i++) {
                double x = float_at(src, i);
                uint64_t got = int_bits(dst, i), want = saturated(x, r);

                ck_assert_msg(got == want,
                              "%s -> %s: %g gives %" PRId64 " (%" PRIu64
                              "), want %" PRId64 " (%" PRIu64 ")",
                              popc_dtype_name(floats[a]),
                              popc_dtype_name(r->dt), x, (int64_t)got,
                              got, (int64_t)want, want);
            }
            popc_tensor_free(dst);
        }
        popc_tensor_free(src);
    }
}
END_TEST

START_TEST(cast_int_wraps_and_to_bool)
{
    const int64_t in[] = {-1, 256, 257, 4294967297LL, 0, -0x80000001LL};
    const int64_t d = 6;
    popc_tensor *t, *i32, *u8, *b, *f16;

    ASSERT_OK(popc_tensor_from_data(POPC_DTYPE_I64, &d, 1, in, &t));
    ASSERT_OK(popc_tensor_cast(t, POPC_DTYPE_I32, &i32));
    ASSERT_OK(popc_tensor_cast(t, POPC_DTYPE_U8, &u8));
    ASSERT_OK(popc_tensor_cast(t, POPC_DTYPE_BOOL, &b));
    ASSERT_OK(popc_tensor_cast(t, POPC_DTYPE_F16, &f16));
    {
        const int32_t w32[] = {-1, 256, 257, 1, 0, 0x7fffffff};
        const uint8_t w8[] = {255, 0, 1, 1, 0, 255};
        const uint8_t wb[] = {1, 1, 1, 1, 0, 1};
        ck_assert_mem_eq(popc_tensor_data(i32), w32, sizeof w32);
        ck_assert_mem_eq(popc_tensor_data(u8), w8, sizeof w8);
        ck_assert_mem_eq(popc_tensor_data(b), wb, sizeof wb);
    }
    /* 4294967297 is beyond float16: inf. */
    ck_assert_uint_eq(((uint16_t *)popc_tensor_data(f16))[3], 0x7c00);
    ck_assert_uint_eq(((uint16_t *)popc_tensor_data(f16))[0], 0xbc00);
    popc_tensor_free(t);
    popc_tensor_free(i32);
    popc_tensor_free(u8);
    popc_tensor_free(b);
    popc_tensor_free(f16);
}
END_TEST

START_TEST(cast_f16_bool_and_negative_zero)
{
    const uint16_t h[] = {0x8000, 0x0000, 0x0001, 0x7e00, 0xbc00};
    const int64_t d = 5;
    popc_tensor *t, *b, *f;

    ASSERT_OK(popc_tensor_from_data(POPC_DTYPE_F16, &d, 1, h, &t));
    ASSERT_OK(popc_tensor_cast(t, POPC_DTYPE_BOOL, &b));
    ASSERT_OK(popc_tensor_cast(t, POPC_DTYPE_F32, &f));
    {
        const uint8_t wb[] = {0, 0, 1, 1, 1};
        ck_assert_mem_eq(popc_tensor_data(b), wb, sizeof wb);
    }
    ck_assert_uint_eq(bits(((float *)popc_tensor_data(f))[0]), 0x80000000u);
    ck_assert_float_eq(((float *)popc_tensor_data(f))[2], 0x1p-24f);
    ck_assert(isnan(((float *)popc_tensor_data(f))[3]));
    popc_tensor_free(t);
    popc_tensor_free(b);
    popc_tensor_free(f);
}
END_TEST

START_TEST(cast_errors)
{
    const int64_t d = 2;
    popc_tensor *t, *o = (popc_tensor *)1;

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, &d, 1, &t));
    ck_assert_int_eq(popc_tensor_cast(t, POPC_DTYPE_UNDEFINED, &o),
                     POPC_EINVAL);
    ck_assert_ptr_null(o);
    ASSERT_HAS(popc_last_error(), "unknown target dtype 0");
    ck_assert_int_eq(popc_tensor_cast(t, (popc_dtype)77, &o), POPC_EINVAL);
    ck_assert_int_eq(popc_tensor_cast(NULL, POPC_DTYPE_F32, &o), POPC_EINVAL);
    ASSERT_OK(popc_tensor_cast(t, POPC_DTYPE_F32, &o));
    ck_assert(popc_tensor_equal(t, o));
    ck_assert_ptr_ne(t, o);
    popc_tensor_free(o);
    popc_tensor_free(t);
}
END_TEST

/* ---- reshape ------------------------------------------------------------- */

START_TEST(reshape_infers_and_copies)
{
    const int64_t dims[2] = {4, 6};
    const int64_t want[3] = {2, -1, 3};
    const int64_t flat[1] = {-1};
    popc_tensor *t, *r, *f;
    char buf[64];

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_I32, dims, 2, &t));
    for (int i = 0; i < 24; i++)
        ((int32_t *)popc_tensor_data(t))[i] = i;
    ASSERT_OK(popc_tensor_reshape(t, want, 3, &r));
    ck_assert_str_eq(popc_tensor_describe(r, buf, sizeof buf),
                     "int32[2, 4, 3]");
    ck_assert_mem_eq(popc_tensor_data(r), popc_tensor_data(t), 96);
    ((int32_t *)popc_tensor_data(r))[0] = 100;
    ck_assert_int_eq(((int32_t *)popc_tensor_data(t))[0], 0);
    ASSERT_OK(popc_tensor_reshape(r, flat, 1, &f));
    ck_assert_str_eq(popc_tensor_describe(f, buf, sizeof buf), "int32[24]");
    popc_tensor_free(f);
    /* Scalar <-> [1]. */
    {
        const int64_t one = 1;
        popc_tensor *s, *s1;
        ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, NULL, 0, &s));
        ASSERT_OK(popc_tensor_reshape(s, &one, 1, &s1));
        ck_assert_int_eq(popc_tensor_rank(s1), 1);
        popc_tensor_free(s);
        ASSERT_OK(popc_tensor_reshape(s1, NULL, 0, &s));
        ck_assert_int_eq(popc_tensor_rank(s), 0);
        popc_tensor_free(s);
        popc_tensor_free(s1);
    }
    popc_tensor_free(r);
    popc_tensor_free(t);
}
END_TEST

START_TEST(reshape_errors)
{
    const int64_t dims[2] = {4, 6};
    const int64_t two_infer[2] = {-1, -1};
    const int64_t wrong[2] = {5, 5};
    const int64_t bad[2] = {-2, 12};
    const int64_t nodiv[2] = {5, -1};
    const int64_t zeroinfer[2] = {0, -1};
    popc_tensor *t, *r = (popc_tensor *)1;

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, dims, 2, &t));
    ck_assert_int_eq(popc_tensor_reshape(t, two_infer, 2, &r), POPC_EINVAL);
    ck_assert_ptr_null(r);
    ASSERT_HAS(popc_last_error(), "more than one -1");
    ck_assert_int_eq(popc_tensor_reshape(t, wrong, 2, &r), POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "cannot reshape [4, 6] (24 elements) into "
                                  "[5, 5] (25 elements)");
    ck_assert_int_eq(popc_tensor_reshape(t, bad, 2, &r), POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "-2");
    ck_assert_int_eq(popc_tensor_reshape(t, nodiv, 2, &r), POPC_EINVAL);
    ck_assert_int_eq(popc_tensor_reshape(t, zeroinfer, 2, &r), POPC_EINVAL);
    ck_assert_int_eq(popc_tensor_reshape(t, dims, 9, &r), POPC_EINVAL);
    ck_assert_int_eq(popc_tensor_reshape(NULL, dims, 2, &r), POPC_EINVAL);
    popc_tensor_free(t);
}
END_TEST

/* Casts and reshapes live above the core (tensorops/) and allocate through
** popc_tensor_new; out of memory must still name the function called. */
START_TEST(cast_and_reshape_out_of_memory_name_themselves)
{
    const int64_t d[2] = {4, 6}, flat = 24;
    popc_tensor *t, *o = (popc_tensor *)1;

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, d, 2, &t));
    popc_fault_fail_alloc(1, 0);
    ck_assert_int_eq(popc_tensor_cast(t, POPC_DTYPE_F16, &o), POPC_ENOMEM);
    ck_assert(popc_fault_alloc_fired());
    ck_assert_ptr_null(o);
    ck_assert_str_eq(popc_last_error(),
                     "popc_tensor_cast: out of memory for 48 bytes");
    popc_fault_fail_alloc(1, 0);
    o = (popc_tensor *)1;
    ck_assert_int_eq(popc_tensor_reshape(t, &flat, 1, &o), POPC_ENOMEM);
    ck_assert(popc_fault_alloc_fired());
    ck_assert_ptr_null(o);
    ck_assert_str_eq(popc_last_error(),
                     "popc_tensor_reshape: out of memory for 96 bytes");
    popc_fault_fail_alloc(0, 0);
    popc_tensor_free(t);
}
END_TEST

/* ---- comparison ---------------------------------------------------------- */

START_TEST(equal_and_max_abs_diff)
{
    const int64_t d = 4, d2[2] = {2, 2};
    const float a[] = {1, 2, 3, 4}, b[] = {1, 2.5f, 3, 3};
    const float nz[] = {0.0f, 2, 3, 4}, negz[] = {-0.0f, 2, 3, 4};
    popc_tensor *ta, *tb, *tc, *ti, *tz, *tn;

    ASSERT_OK(popc_tensor_from_data(POPC_DTYPE_F32, &d, 1, a, &ta));
    ASSERT_OK(popc_tensor_from_data(POPC_DTYPE_F32, &d, 1, b, &tb));
    ASSERT_OK(popc_tensor_from_data(POPC_DTYPE_F32, d2, 2, a, &tc));
    ASSERT_OK(popc_tensor_cast(ta, POPC_DTYPE_I32, &ti));
    ck_assert(popc_tensor_equal(ta, ta));
    ck_assert(!popc_tensor_equal(ta, tb));
    ck_assert(!popc_tensor_equal(ta, tc)); /* same data, other shape */
    ck_assert(!popc_tensor_equal(ta, ti)); /* other dtype */
    ck_assert(!popc_tensor_equal(ta, NULL));
    ck_assert(popc_tensor_equal(NULL, NULL));
    ck_assert(popc_tensor_max_abs_diff(ta, tb) == 1.0);
    ck_assert(popc_tensor_max_abs_diff(ta, ta) == 0.0);
    ck_assert(popc_tensor_max_abs_diff(ta, tc) == -1.0);
    ck_assert(popc_tensor_max_abs_diff(ti, ti) == -1.0);
    ck_assert(popc_tensor_max_abs_diff(ta, NULL) == -1.0);
    /* Bitwise: -0 and +0 differ for equal, not for the difference. */
    ASSERT_OK(popc_tensor_from_data(POPC_DTYPE_F32, &d, 1, nz, &tz));
    ASSERT_OK(popc_tensor_from_data(POPC_DTYPE_F32, &d, 1, negz, &tn));
    ck_assert(!popc_tensor_equal(tz, tn));
    ck_assert(popc_tensor_max_abs_diff(tz, tn) == 0.0);
    /* NaN on one side is an infinite difference. */
    ((float *)popc_tensor_data(tn))[3] = NAN;
    ck_assert(isinf(popc_tensor_max_abs_diff(tz, tn)));
    ((float *)popc_tensor_data(tz))[3] = NAN;
    ck_assert(popc_tensor_max_abs_diff(tz, tn) == 0.0);
    popc_tensor_free(ta);
    popc_tensor_free(tb);
    popc_tensor_free(tc);
    popc_tensor_free(ti);
    popc_tensor_free(tz);
    popc_tensor_free(tn);
}
END_TEST

static Suite *tensor_suite(void)
{
    Suite *s = suite_create("tensor");
    TCase *tc = tcase_create("create");

    tcase_add_test(tc, new_every_dtype_zeroed_and_aligned);
    tcase_add_test(tc, scalar_and_empty_tensors);
    tcase_add_test(tc, bad_arguments_are_einval);
    tcase_add_test(tc, huge_allocation_fails_cleanly);
    tcase_add_test(tc, from_data_copies_and_clone_is_deep);
    tcase_add_test(tc, view_matches_tensor);
    tcase_add_test(tc, ref_and_free);
    tcase_add_test(tc, refcount_is_atomic);
    suite_add_tcase(s, tc);

    tc = tcase_create("f16");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, f16_exact_values);
    tcase_add_test(tc, f16_rounding_nearest_even);
    tcase_add_test(tc, f16_nan_stays_nan);
    tcase_add_test(tc, f16_round_trip_all_values);
    tcase_add_test(tc, f16_matches_double_rounding_reference);
    suite_add_tcase(s, tc);

    tc = tcase_create("cast");
    tcase_add_test(tc, cast_every_pair_small_values);
    tcase_add_test(tc, cast_float_to_int_truncates_and_saturates);
    tcase_add_test(tc, cast_float_to_every_int_saturates);
    tcase_add_test(tc, cast_int_wraps_and_to_bool);
    tcase_add_test(tc, cast_f16_bool_and_negative_zero);
    tcase_add_test(tc, cast_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("shape");
    tcase_add_test(tc, reshape_infers_and_copies);
    tcase_add_test(tc, reshape_errors);
    tcase_add_test(tc, cast_and_reshape_out_of_memory_name_themselves);
    tcase_add_test(tc, equal_and_max_abs_diff);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(tensor_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
