/* check_random.c - popc/random.h (random/rng.c), the seeded generator
** graph builders initialise weights with: stream ids, keys and every kind
** of draw against tests/ref/random_values.h, which tests/ref/gen_random.py
** computed from the generator's documented definition (not from popc's
** code); and that the draws depend only on (seed, stream, index). */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/random.h"
#include "tests/ref/random_values.h"

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

START_TEST(stream_ids_are_fnv1a_of_the_name)
{
    ck_assert_uint_eq(popc_rng_stream(REF_NAME), REF_STREAM);
    ck_assert_uint_eq(popc_rng_stream(""), REF_EMPTY_STREAM);
    ck_assert_uint_eq(popc_rng_stream(NULL), REF_EMPTY_STREAM);
}
END_TEST

START_TEST(draws_match_the_reference)
{
    popc_rng r;
    float fill[5];

    popc_rng_init(&r, REF_SEED, REF_STREAM);
    ck_assert_uint_eq(r.key, REF_KEY);
    ck_assert_uint_eq(r.counter, 0);
    for (int k = 0; k < 4; k++)
        ck_assert_uint_eq(bits(popc_rng_uniform(&r)), ref_uniform_bits[k]);
    for (int k = 0; k < 2; k++)
        ck_assert(popc_rng_uniform_double(&r) == ref_uniform_double[k]);
    ck_assert_uint_eq(r.counter, 6);
    /* Box-Muller goes through log and cos: the last bit may differ from
    ** Python's libm calls. */
    ck_assert_double_eq_tol(popc_rng_normal(&r), ref_normal, 1e-12);
    ck_assert_uint_eq(r.counter, 8);
    popc_rng_fill_uniform(&r, fill, 5, -1.0f, 2.0f);
    ck_assert_uint_eq(r.counter, 13);
    for (int i = 0; i < 5; i++) {
        ck_assert_float_eq_tol(fill[i], ref_fill[i], 1e-6f);
        ck_assert(fill[i] >= -1.0f && fill[i] < 2.0f);
    }
}
END_TEST

/* A copy of a generator replays its draws, and a draw depends on the
** stream: two names give different numbers from the same seed. */
START_TEST(draws_depend_only_on_seed_stream_and_index)
{
    popc_rng a, b, c;
    float x[8], y[8], z[8];

    popc_rng_init(&a, 7, popc_rng_stream("w"));
    b = a;
    popc_rng_init(&c, 7, popc_rng_stream("b"));
    popc_rng_fill_uniform(&a, x, 8, 0.0f, 1.0f);
    popc_rng_fill_uniform(&b, y, 8, 0.0f, 1.0f);
    popc_rng_fill_uniform(&c, z, 8, 0.0f, 1.0f);
    ck_assert_mem_eq(x, y, sizeof x);
    ck_assert(memcmp(x, z, sizeof x) != 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("random");
    TCase *tc = tcase_create("rng");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, stream_ids_are_fnv1a_of_the_name);
    tcase_add_test(tc, draws_match_the_reference);
    tcase_add_test(tc, draws_depend_only_on_seed_stream_and_index);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
