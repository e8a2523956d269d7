/* random.h - popc's seeded random numbers, for code that builds graphs
** (weight initialisation in popc/layers.h and the module variable
** factories): the same counter-based generator the core uses.
**
** The k-th draw of a stream is SplitMix64's finaliser applied to a Weyl
** sequence from a key made of the seed and a stream id, so a tensor's
** values depend only on (seed, stream, index): reproducible across runs,
** platforms and the order tensors are made in. Not cryptographic.
**
** Since 0.3.0; the conventions of popc/status.h apply (a generator is not
** thread-safe; use one per thread).
*/
#ifndef POPC_RANDOM_H
#define POPC_RANDOM_H

#include <stdint.h>

#include "popc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct popc_rng {
    uint64_t key;              /* from seed and stream */
    uint64_t counter;          /* draws taken */
} popc_rng;

/* A stream id from a name (64-bit FNV-1a), e.g. a weight's name; NULL
** hashes as "". Thread-safe (a pure function). Since 0.3.0. */
POPC_API uint64_t popc_rng_stream(const char *name);

/* A generator at the start of stream `stream` of `seed`. Thread-safe
** (writes *r only). Since 0.3.0. */
POPC_API void popc_rng_init(popc_rng *r, uint64_t seed, uint64_t stream);

/* Uniform in [0, 1) with 24 random bits (exact float32 values); one draw.
** Not thread-safe on one generator (it advances r). Since 0.3.0. */
POPC_API float popc_rng_uniform(popc_rng *r);

/* Uniform in [0, 1) with 53 random bits; one draw. Not thread-safe on one
** generator (it advances r). Since 0.3.0. */
POPC_API double popc_rng_uniform_double(popc_rng *r);

/* Standard normal (Box-Muller on two uniform doubles); two draws. Not
** thread-safe on one generator (it advances r). Since 0.3.0. */
POPC_API double popc_rng_normal(popc_rng *r);

/* dst[i] = lo + (hi - lo) * uniform, i = 0..n-1 (float32 arithmetic);
** n draws. Not thread-safe on one generator (it advances r).
** Since 0.3.0. */
POPC_API void popc_rng_fill_uniform(popc_rng *r, float *dst, int64_t n,
                                    float lo, float hi);

#ifdef __cplusplus
}
#endif
#endif /* POPC_RANDOM_H */
