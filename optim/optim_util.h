/* optim_util.h - static helpers shared by the optimizer plugins.
**
** Header-only on purpose: each plugin is a separate module that exports
** nothing but its entry symbol, so shared code is compiled into each one.
*/
#ifndef POPC_OPTIM_UTIL_H
#define POPC_OPTIM_UTIL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "popc/plugin.h"

/* Accumulation types, as the enum codes the hyper-parameters carry. */
#define OPTIM_ACCUM_F32 0
#define OPTIM_ACCUM_F16 1

/* x rounded to the nearest binary16 value (ties to even), kept as float:
** a state tensor declared float16 holds exactly what a half tensor would. */
static inline float optim_round_f16(float x)
{
    uint32_t u, a;
    float f;

    memcpy(&u, &x, sizeof u);
    a = u & 0x7fffffffu;
    if (a >= 0x7f800000u)
        return x;
    if (a >= 0x477ff000u) {
        /* 65520 and above round to infinity. */
        a = 0x7f800000u;
    } else if (a >= 0x38800000u) {
        /* Normal half: drop 13 mantissa bits, round half to even; a carry
        ** into the exponent is the right result. */
        a = (a + 0x0fffu + ((a >> 13) & 1u)) & ~0x1fffu;
    } else {
        /* Subnormal half: quantum 2^-24, which is the float ulp at 0.5. */
        memcpy(&f, &a, sizeof f);
        f = (f + 0.5f) - 0.5f;
        memcpy(&a, &f, sizeof a);
    }
    u = (u & 0x80000000u) | a;
    memcpy(&x, &u, sizeof x);
    return x;
}

static inline void optim_round_f16_array(float *restrict s, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        s[i] = optim_round_f16(s[i]);
}

/* Rounds s when its accumulation type is float16. */
static inline void optim_store_as(double accum_type, float *restrict s,
                                  int64_t n)
{
    if (accum_type == OPTIM_ACCUM_F16)
        optim_round_f16_array(s, n);
}

/* Checks an accumulation-type hyper-parameter (0 float32, 1 float16). */
static inline popc_status optim_check_accum(const popc_host *host,
                                            const char *optim,
                                            const char *name, double v)
{
    if (v == OPTIM_ACCUM_F32 || v == OPTIM_ACCUM_F16)
        return POPC_OK;
    return host->set_error(POPC_EINVAL,
                           "Optimizer %s: Accumulation types must be either "
                           "torch.float32 or torch.float16 (%s = %g; popc "
                           "takes 0 for float32, 1 for float16)",
                           optim, name, v);
}

/* The dtype an accumulation-type value stands for. */
static inline popc_dtype optim_accum_dtype(double accum_type)
{
    return accum_type == OPTIM_ACCUM_F16 ? POPC_DTYPE_F16 : POPC_DTYPE_F32;
}

/* Fails when a step needs n_needed state arrays that are missing. */
static inline popc_status optim_check_state(const popc_optim_step_ctx *c,
                                            const char *optim, int n_needed,
                                            const char *why)
{
    if (c->n == 0 || n_needed == 0)
        return POPC_OK;
    if (c->state)
        for (int i = 0; i < n_needed; i++)
            if (!c->state[i])
                goto missing;
    if (c->state)
        return POPC_OK;
missing:
    return c->host->set_error(
        POPC_EINTERNAL,
        "Optimizer %s, weight '%s': %s needs %d state tensor(s) but the step "
        "was given fewer; the state was allocated for other "
        "hyper-parameters (compile the model again after changing them)",
        optim, c->weight_name ? c->weight_name : "?", why, n_needed);
}

#endif /* POPC_OPTIM_UTIL_H */
