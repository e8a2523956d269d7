/* rng.c - popc/random.h, the public face of the core's generator
** (core/layer/rng.h) for code that builds graphs: weight initialisation
** in helpers/ and the module variable factories. The core draws through
** popci_rng itself and never calls these, so they live above it; every
** draw is the core generator's (the same numbers for the same seed,
** stream and index).
*/
#include "config.h"

#include "popc/random.h"
#include "core/layer/rng.h"

/* The public and the core struct hold the same two words; they are copied
** rather than cast, so that no pointer aliases two struct types. */
static popci_rng core_of(const popc_rng *r)
{
    popci_rng c = {r->key, r->counter};

    return c;
}

static void back(popc_rng *r, const popci_rng *c)
{
    r->key = c->key;
    r->counter = c->counter;
}

uint64_t popc_rng_stream(const char *name)
{
    return popci_rng_hash_str(name ? name : "");
}

void popc_rng_init(popc_rng *r, uint64_t seed, uint64_t stream)
{
    popci_rng c;

    popci_rng_init(&c, seed, stream);
    back(r, &c);
}

float popc_rng_uniform(popc_rng *r)
{
    popci_rng c = core_of(r);
    float v = popci_rng_uniform(&c);

    back(r, &c);
    return v;
}

double popc_rng_uniform_double(popc_rng *r)
{
    popci_rng c = core_of(r);
    double v = popci_rng_uniform_double(&c);

    back(r, &c);
    return v;
}

double popc_rng_normal(popc_rng *r)
{
    popci_rng c = core_of(r);
    double v = popci_rng_normal(&c);

    back(r, &c);
    return v;
}

void popc_rng_fill_uniform(popc_rng *r, float *dst, int64_t n, float lo,
                           float hi)
{
    popci_rng c = core_of(r);

    popci_rng_fill_uniform(&c, dst, n, lo, hi);
    back(r, &c);
}
