/* half_service.c - the float16 services plugins find by name
** (popc/services.h): the core's one float16 conversion, whole arrays
** through half_simd.c's F16C loops. */
#include "config.h"

#include "popc/tensor.h"
#include "core/graph/half_simd.h"

void popci_f32_to_f16_n(uint16_t *dst, const float *src, int64_t n)
{
    popci_f2h_n(dst, src, n, popc_f32_to_f16);
}

void popci_f16_to_f32_n(float *dst, const uint16_t *src, int64_t n)
{
    popci_h2f_n(dst, src, n, popc_f16_to_f32);
}

/* A uniform 32-bit number from (seed, i) alone (a SplitMix64 step), so
** that a kernel's parts and a whole run draw the same numbers. */
static uint32_t random32(uint64_t seed, int64_t i)
{
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

void popci_f32_to_f16_stochastic_n(uint16_t *dst, const float *src,
                                   int64_t n, uint64_t seed, int64_t first)
{
    for (int64_t k = 0; k < n; k++)
        dst[k] = popc_f16_stochastic(src[k], random32(seed, first + k),
                                     popc_f32_to_f16, popc_f16_to_f32);
}
