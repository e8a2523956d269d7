/* check_preload.c - static builds: plugins linked into the program with
** libtool -dlopen are found through the preload table, with the same
** checks as files (built only with --disable-shared). */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <check.h>
#include <ltdl.h>

#include "popc/popc.h"
#include "tests/harness/assert.h"

static void quiet(int level, const char *msg, void *user)
{
    (void)level;
    (void)msg;
    (void)user;
}

static void setup(void)
{
    /* Only the linked-in modules: no directory may contribute. */
    unsetenv("POPC_PLUGIN_PATH");
    popc_log_set_callback(quiet, NULL);
}

static void check_contents(const popc_registry *r)
{
    const char *problems = popc_registry_problems(r);

    ck_assert_ptr_nonnull(popc_registry_find_backend(r, "test_cpu"));
    ck_assert_ptr_nonnull(popc_registry_find_optimizer(r, "test_sgd"));
    ck_assert_int_eq(popc_registry_find_op(r, NULL, "Twice", 0)
                         ->since_version, 7);
    ck_assert_ptr_nonnull(popc_registry_find_op(r, NULL, "DupOnly", 0));
    ck_assert_ptr_null(popc_registry_find_op(r, NULL, "BadAbiOp", 0));
    ck_assert_int_eq(popc_registry_plugin_count(r), 2);
    ASSERT_HAS(problems, "badabi");
    ASSERT_HAS(problems, "plugin ABI 99, core ABI 3.1");
    ASSERT_HAS(problems, "Twice@1 is already registered");
}

START_TEST(preloaded_modules_load)
{
    popc_registry *r;
    popc_status st;

    ck_assert_int_eq(popc_registry_new(&r), POPC_OK);
    st = popc_registry_load_default(r);
    ck_assert_msg(st == POPC_EABI || st == POPC_EEXIST, "%s: %s",
                  popc_status_name(st), popc_last_error());
    check_contents(r);
    popc_registry_free(r);
}
END_TEST

START_TEST(global_registry_sees_them)
{
    popc_registry *g;

    ck_assert_int_eq(popc_registry_global(&g), POPC_OK);
    check_contents(g);
}
END_TEST

START_TEST(two_registries_share_modules)
{
    popc_registry *a, *b;

    ck_assert_int_eq(popc_registry_new(&a), POPC_OK);
    ck_assert_int_eq(popc_registry_new(&b), POPC_OK);
    (void)!popc_registry_load_default(a);
    (void)!popc_registry_load_default(b);
    popc_registry_free(a);
    check_contents(b);
    popc_registry_free(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("preload");
    TCase *tc = tcase_create("preload");
    SRunner *sr;
    int failed;

    popc_registry_use_preloaded(lt_preloaded_symbols);
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, preloaded_modules_load);
    tcase_add_test(tc, global_registry_sees_them);
    tcase_add_test(tc, two_registries_share_modules);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
