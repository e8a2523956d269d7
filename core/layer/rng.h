/* layer/rng.h - the core's seeded random numbers (random data, per-node
** kernel seeds), and the generator the layers above draw from: the public
** face popc/random.h (random/, weight initialisation) and the samplers
** (data/).
**
** A counter-based generator: the k-th draw of a stream is
** splitmix64(key + k * 0x9E3779B97F4A7C15), i.e. Steele, Lea and Flood's
** SplitMix64 finaliser applied to a Weyl sequence ("Fast splittable
** pseudorandom number generators", OOPSLA 2014). The key comes from the
** seed and a stream id, so a parameter's values depend only on (seed,
** stream, index): reproducible across runs, platforms and the order in
** which parameters are created, and any draw can be computed directly
** (popci_rng_at). Not cryptographic.
*/
#ifndef POPC_LAYER_RNG_H
#define POPC_LAYER_RNG_H

#include <stdint.h>

typedef struct popci_rng {
    uint64_t key;
    uint64_t counter;
} popci_rng;

/* SplitMix64's finaliser: a bijective 64-bit mix. */
uint64_t popci_rng_mix64(uint64_t x);
/* Combine two words into one seed (order matters): kernel seeds are
** popci_rng_combine(run_seed, node_id). */
uint64_t popci_rng_combine(uint64_t a, uint64_t b);
/* FNV-1a of a string, to derive a stream id from a name. */
uint64_t popci_rng_hash_str(const char *s);

void popci_rng_init(popci_rng *r, uint64_t seed, uint64_t stream);
/* Draw `index` of the stream without advancing it. */
uint64_t popci_rng_at(const popci_rng *r, uint64_t index);
uint64_t popci_rng_next(popci_rng *r);
/* Uniform in [0, 1) with 24 random bits (exact float32 values). */
float popci_rng_uniform(popci_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double popci_rng_uniform_double(popci_rng *r);
/* Standard normal (Box-Muller on two uniform doubles). */
double popci_rng_normal(popci_rng *r);
/* Uniform integer in [0, n), n > 0 (modulo with rejection: unbiased). */
uint64_t popci_rng_below(popci_rng *r, uint64_t n);
/* dst[i] = lo + (hi - lo) * uniform, i = 0..n-1. */
void popci_rng_fill_uniform(popci_rng *r, float *dst, int64_t n, float lo,
                            float hi);

#endif /* POPC_LAYER_RNG_H */
