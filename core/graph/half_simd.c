/* half_simd.c - see half_simd.h. */
#include "config.h"

#include "core/graph/half_simd.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>
#define HAVE_F16C_PATH 1

__attribute__((target("avx,f16c"))) static void h2f_f16c(float *dst,
                                                         const uint16_t *src,
                                                         int64_t n)
{
    int64_t i = 0;

    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                      (const __m128i *)(src + i))));
    for (; i < n; i++)
        dst[i] = _cvtsh_ss(src[i]);
}

__attribute__((target("avx,f16c"))) static void f2h_f16c(uint16_t *dst,
                                                         const float *src,
                                                         int64_t n)
{
    int64_t i = 0;

    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i),
                                         _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++)
        dst[i] = _cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT);
}

/* CPUID says F16C and AVX, and the OS saves the YMM registers (XGETBV);
** asked once (clang has no __builtin_cpu_supports("f16c")). */
static int detect_f16c(void)
{
    unsigned a, b, c, d, lo, hi;

    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_F16C) ||
        !(c & bit_AVX) || !(c & bit_OSXSAVE))
        return 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    return (lo & 6u) == 6u;
}

int popci_have_f16c(void)
{
    static atomic_int known = -1;
    int v = atomic_load_explicit(&known, memory_order_relaxed);

    if (v < 0) {
        v = detect_f16c();
        atomic_store_explicit(&known, v, memory_order_relaxed);
    }
    return v;
}
#else
int popci_have_f16c(void)
{
    return 0;
}
#endif

void popci_h2f_n(float *dst, const uint16_t *src, int64_t n,
                 float (*h2f)(uint16_t))
{
#ifdef HAVE_F16C_PATH
    if (popci_have_f16c()) {
        h2f_f16c(dst, src, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++)
        dst[i] = h2f(src[i]);
}

void popci_f2h_n(uint16_t *dst, const float *src, int64_t n,
                 uint16_t (*f2h)(float))
{
#ifdef HAVE_F16C_PATH
    if (popci_have_f16c()) {
        f2h_f16c(dst, src, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++)
        dst[i] = f2h(src[i]);
}
