/* half_simd.h - float16 <-> float32 conversion of whole arrays, round to
** nearest even, with the x86 F16C instructions when the CPU has them
** (checked at run time), else with the caller's scalar conversion (libpopc
** and the plugins each have their own); both give the same bits. Compiled
** into libpopc and the math plugin (core/graph/half_simd.c). */
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

#endif /* POPC_HALF_SIMD_H */
