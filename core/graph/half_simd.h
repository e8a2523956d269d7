/* half_simd.h - float16 <-> float32 conversion of whole arrays, round to
** nearest even, with the x86 F16C instructions when the CPU has them
** (checked at run time), else with the given scalar conversion; both give
** the same bits. Plugins reach these through the host services
** (popc/services.h, served from half_service.c), never by compiling them. */
#ifndef POPC_HALF_SIMD_H
#define POPC_HALF_SIMD_H

#include <stdint.h>

/* Whether the CPU (and OS) run AVX and F16C; asked once. Callers with
** their own F16C kernels (target attribute) dispatch on it. */
int popci_have_f16c(void);

void popci_h2f_n(float *dst, const uint16_t *src, int64_t n,
                 float (*h2f)(uint16_t));
void popci_f2h_n(uint16_t *dst, const float *src, int64_t n,
                 uint16_t (*f2h)(float));

/* The float16 services (half_service.c); popc/services.h states them. */
void popci_f32_to_f16_n(uint16_t *dst, const float *src, int64_t n);
void popci_f16_to_f32_n(float *dst, const uint16_t *src, int64_t n);
void popci_f32_to_f16_stochastic_n(uint16_t *dst, const float *src,
                                   int64_t n, uint64_t seed, int64_t first);

#endif /* POPC_HALF_SIMD_H */
