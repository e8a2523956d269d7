/* rng.c - see core/layer/rng.h for the generator and its guarantees; its
** public face (popc/random.h) is random/rng.c. */
#include "config.h"

#include <math.h>

#include "core/layer/rng.h"

#define GOLDEN 0x9E3779B97F4A7C15ull

uint64_t popci_rng_mix64(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

uint64_t popci_rng_combine(uint64_t a, uint64_t b)
{
    return popci_rng_mix64(popci_rng_mix64(a) + GOLDEN * (b + 1));
}

uint64_t popci_rng_hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;

    while (s && *s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

void popci_rng_init(popci_rng *r, uint64_t seed, uint64_t stream)
{
    r->key = popci_rng_combine(seed, stream);
    r->counter = 0;
}

uint64_t popci_rng_at(const popci_rng *r, uint64_t index)
{
    return popci_rng_mix64(r->key + GOLDEN * (index + 1));
}

uint64_t popci_rng_next(popci_rng *r)
{
    return popci_rng_at(r, r->counter++);
}

float popci_rng_uniform(popci_rng *r)
{
    return (float)(popci_rng_next(r) >> 40) * (1.0f / 16777216.0f);
}

double popci_rng_uniform_double(popci_rng *r)
{
    return (double)(popci_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

double popci_rng_normal(popci_rng *r)
{
    const double two_pi = 6.283185307179586476925286766559;
    double u1 = 1.0 - popci_rng_uniform_double(r); /* (0, 1]: log is finite */
    double u2 = popci_rng_uniform_double(r);

    return sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
}

uint64_t popci_rng_below(popci_rng *r, uint64_t n)
{
    /* reject the lowest 2^64 mod n draws so every residue is equally likely */
    uint64_t threshold = (0 - n) % n, x;

    do
        x = popci_rng_next(r);
    while (x < threshold);
    return x % n;
}

void popci_rng_fill_uniform(popci_rng *r, float *dst, int64_t n, float lo,
                            float hi)
{
    float span = hi - lo;

    for (int64_t i = 0; i < n; i++)
        dst[i] = lo + span * popci_rng_uniform(r);
}
