/* check_limits.c - popc/limits.h: defaults, the POPC_MAX_* variables, an
** invalid variable named in the error, popc_limit_set and its reset, and
** the error text. Each test runs in its own process (Check forks), so the
** environment and the process-wide values are fresh in each. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/harness/assert.h"

START_TEST(defaults_are_documented_values)
{
    unsetenv("POPC_MAX_NESTING");
    unsetenv("POPC_MAX_NODES");
    ck_assert_int_eq(popc_limit_get(POPC_LIMIT_NESTING), 32);
    ck_assert_int_eq(popc_limit_get(POPC_LIMIT_MESSAGE_DEPTH), 128);
    ck_assert_int_eq(popc_limit_get(POPC_LIMIT_MESSAGES), 16777216);
    ck_assert_int_eq(popc_limit_get(POPC_LIMIT_NODES), 1000000);
    ck_assert_int_eq(popc_limit_get(POPC_LIMIT_INITIALIZER_BYTES),
                     (int64_t)32 << 30);
    ck_assert_int_eq(popc_limit_get(POPC_LIMIT_ATTRIBUTE_ELEMENTS),
                     16777216);
    ck_assert_int_eq(popc_limit_get(POPC_LIMIT_STRING_BYTES), 1 << 20);
    ck_assert_int_eq(popc_limit_get(POPC_LIMIT_LOOP_TRIPS), 1 << 20);
    ck_assert_int_eq(popc_limit_get(POPC_LIMIT_UNROLLED_STEPS), 4096);
    for (int i = 0; i < POPC_LIMIT_COUNT; i++) {
        ck_assert_int_eq(popc_limit_get((popc_limit)i),
                         popc_limit_default((popc_limit)i));
        ck_assert_ptr_nonnull(popc_limit_env((popc_limit)i));
        ck_assert(strncmp(popc_limit_env((popc_limit)i), "POPC_MAX_", 9) ==
                  0);
    }
    ck_assert_int_eq(popc_limit_get(POPC_LIMIT_COUNT), -1);
    ck_assert_ptr_null(popc_limit_env(POPC_LIMIT_COUNT));
}
END_TEST

START_TEST(environment_raises_a_limit)
{
    setenv("POPC_MAX_NESTING", "64", 1);
    ck_assert_int_eq(popc_limit_get(POPC_LIMIT_NESTING), 64);
    setenv("POPC_MAX_NESTING", "32", 1); /* the default, given explicitly */
    ck_assert_int_eq(popc_limit_get(POPC_LIMIT_NESTING), 32);
    popc_limit_error(POPC_LIMIT_NESTING, "m.onnx", "subgraphs nested", 33);
    ck_assert_ptr_null(strstr(popc_last_error(), "not a positive"));
}
END_TEST

START_TEST(invalid_environment_keeps_the_default_and_says_so)
{
    const char *bad[] = {"abc", "-5", "0", "12x", "99999999999999999999999"};

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("POPC_MAX_NODES", bad[i], 1);
        ck_assert_int_eq(popc_limit_get(POPC_LIMIT_NODES), 1000000);
        ck_assert_int_eq(popc_limit_error(POPC_LIMIT_NODES, "m.onnx",
                                          "too many nodes", 1000001),
                         POPC_EUNSUPPORTED);
        ASSERT_HAS(popc_last_error(), "is not a positive integer, so the "
                                      "default applies");
        ASSERT_HAS(popc_last_error(), bad[i]);
    }
}
END_TEST

START_TEST(set_overrides_and_zero_restores)
{
    setenv("POPC_MAX_UNROLLED_STEPS", "100", 1);
    ASSERT_OK(popc_limit_set(POPC_LIMIT_UNROLLED_STEPS, 7));
    ck_assert_int_eq(popc_limit_get(POPC_LIMIT_UNROLLED_STEPS), 7);
    ASSERT_OK(popc_limit_set(POPC_LIMIT_UNROLLED_STEPS, 0));
    ck_assert_int_eq(popc_limit_get(POPC_LIMIT_UNROLLED_STEPS), 100);
    ck_assert_int_eq(popc_limit_set(POPC_LIMIT_UNROLLED_STEPS, -1),
                     POPC_EINVAL);
    ck_assert_int_eq(popc_limit_set(POPC_LIMIT_COUNT, 5), POPC_EINVAL);
    ck_assert_int_eq(popc_limit_get(POPC_LIMIT_UNROLLED_STEPS), 100);
}
END_TEST

START_TEST(error_names_file_count_limit_and_variable)
{
    ck_assert_int_eq(popc_limit_error(POPC_LIMIT_STRING_BYTES, "net.onnx",
                                      "a name too long, in bytes", 2000000),
                     POPC_EUNSUPPORTED);
    ck_assert_str_eq(popc_last_error(),
                     "net.onnx: a name too long, in bytes: 2000000, over "
                     "popc's limit of 1048576 (POPC_MAX_STRING_BYTES); if "
                     "the file is trusted, raise the limit "
                     "(POPC_MAX_STRING_BYTES=N in the environment, or "
                     "popc_limit_set)");
    popc_limit_error(POPC_LIMIT_NESTING, NULL, "nested", -1);
    ck_assert(strncmp(popc_last_error(), "<memory>: nested: over popc's "
                                         "limit of 32", 39) == 0);
}
END_TEST

static Suite *limits_suite(void)
{
    Suite *s = suite_create("limits");
    TCase *tc = tcase_create("limits");

    tcase_add_test(tc, defaults_are_documented_values);
    tcase_add_test(tc, environment_raises_a_limit);
    tcase_add_test(tc, invalid_environment_keeps_the_default_and_says_so);
    tcase_add_test(tc, set_overrides_and_zero_restores);
    tcase_add_test(tc, error_names_file_count_limit_and_variable);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(limits_suite());
    int failed;

    if (srunner_fork_status(sr) == CK_NOFORK) {
        fprintf(stderr, "check_limits needs CK_FORK=yes\n");
        srunner_free(sr);
        return 77;
    }
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
