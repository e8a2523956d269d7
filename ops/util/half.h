/* half.h - float16 in the op plugins, through the host's one conversion
** (popc/services.h, looked up by opu_init).
**
** Loops convert blocks with opu_h2f_n / opu_f2h_n / opu_f2h_out, one
** service call per block, never per element: the services use the CPU's
** F16C instructions when it has them. opu_h2f and opu_f2h convert one
** value, for scalars and for the float16 loops that round after every
** step (a running sum), where no block exists.
*/
#ifndef POPC_OPS_UTIL_HALF_H
#define POPC_OPS_UTIL_HALF_H

#include <stdint.h>

#include "ops/util/host.h"

static inline float opu_h2f(uint16_t h)
{
    return opu_svc.h2f(h);
}

static inline uint16_t opu_f2h(float f)
{
    return opu_svc.f2h(f);
}

/* v rounded to the nearest float16 value, as a float (a running sum kept
** in float16). */
static inline float opu_round_f16(float v)
{
    return opu_svc.h2f(opu_svc.f2h(v));
}

static inline void opu_h2f_n(float *dst, const uint16_t *src, int64_t n)
{
    opu_svc.h2f_n(dst, src, n);
}

static inline void opu_f2h_n(uint16_t *dst, const float *src, int64_t n)
{
    opu_svc.f2h_n(dst, src, n);
}

/* src[0..n) as output elements first, first + 1, ... of a kernel: to
** nearest, or stochastically under Precision.enableStochasticRounding
** (POPC_KERNEL_STOCHASTIC_ROUNDING, drawing from kc->seed and the
** element's index, so split and whole runs agree). */
static inline void opu_f2h_out(const popc_kernel_ctx *kc, uint16_t *dst,
                               const float *src, int64_t n, int64_t first)
{
    if (kc->flags & POPC_KERNEL_STOCHASTIC_ROUNDING)
        opu_svc.f2h_stochastic_n(dst, src, n, kc->seed, first);
    else
        opu_svc.f2h_n(dst, src, n);
}

#endif /* POPC_OPS_UTIL_HALF_H */
