/* check_config.c - the libini_config wrapper: order, lines, typed getters,
** parse errors and key checks. Fixtures in tests/data/options/config_*.ini.
*/
#include "config.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/status.h"
#include "run/run_config_priv.h"

static char path_buf[4096];

static const char *data(const char *name)
{
    const char *dir = getenv("POPC_TEST_DATA");

    snprintf(path_buf, sizeof path_buf, "%s/options/%s",
             dir ? dir : "tests/data", name);
    return path_buf;
}

static popci_config *open_ok(const char *name)
{
    popci_config *c = NULL;
    popc_status st = popci_config_open(data(name), &c);

    ck_assert_msg(st == POPC_OK, "%s", popc_last_error());
    ck_assert_ptr_nonnull(c);
    return c;
}

/* The error message must contain every fragment. */
static void expect_error(popc_status st, popc_status want, const char *a,
                         const char *b)
{
    ck_assert_msg(st == want, "status %s, want %s: %s", popc_status_name(st),
                  popc_status_name(want), popc_last_error());
    ck_assert_msg(strstr(popc_last_error(), a), "'%s' not in '%s'", a,
                  popc_last_error());
    if (b)
        ck_assert_msg(strstr(popc_last_error(), b), "'%s' not in '%s'", b,
                      popc_last_error());
}

START_TEST(sections_keep_file_order_and_lines)
{
    popci_config *c = open_ok("config_good.ini");

    ck_assert_int_eq(popci_config_n_sections(c), 4);
    ck_assert_str_eq(popci_config_section(c, 0), "run");
    ck_assert_str_eq(popci_config_section(c, 1), "Layer.dense1");
    ck_assert_str_eq(popci_config_section(c, 2), "empty");
    ck_assert_str_eq(popci_config_section(c, 3), "alpha");
    ck_assert_ptr_null(popci_config_section(c, 4));
    ck_assert_int_eq(popci_config_section_line(c, "run"), 3);
    ck_assert_int_eq(popci_config_section_line(c, "layer.DENSE1"), 12);
    ck_assert_int_eq(popci_config_section_line(c, "alpha"), 19);
    ck_assert_int_eq(popci_config_section_line(c, "nope"), 0);
    ck_assert(popci_config_has_section(c, "empty"));
    ck_assert_int_eq(popci_config_n_keys(c, "empty"), 0);

    ck_assert_int_eq(popci_config_n_keys(c, "run"), 7);
    ck_assert_str_eq(popci_config_key(c, "run", 0), "backend");
    ck_assert_str_eq(popci_config_key(c, "run", 6), "note");
    ck_assert_int_eq(popci_config_key_line(c, "run", "threads"), 5);
    ck_assert_int_eq(popci_config_key_line(c, "run", "THREADS"), 5);
    ck_assert_int_eq(popci_config_key_line(c, "run", "missing"), 0);
    /* [P9]: with INI_PARSE_NOWRAP an indented line is its own key */
    ck_assert_int_eq(popci_config_n_keys(c, "Layer.dense1"), 3);
    ck_assert_str_eq(popci_config_raw(c, "Layer.dense1", "indented"), "5");
    ck_assert_str_eq(popci_config_raw(c, "Layer.dense1", "units"), "128");
    ck_assert_str_eq(popci_config_path(c), data("config_good.ini"));
    popci_config_free(c);
}
END_TEST

START_TEST(typed_getters)
{
    popci_config *c = open_ok("config_good.ini");
    static const char *const backends[] = {"cpu", "ipumodel", "offline",
                                           NULL};
    int64_t i, dims[4];
    double f;
    int b, e, n;
    const char *s;

    ck_assert_int_eq(popci_config_get_int(c, "run", "threads", 0, 0, 64, &i),
                     POPC_OK);
    ck_assert_int_eq(i, 8);
    ck_assert_int_eq(popci_config_get_int(c, "alpha", "x", 0, INT64_MIN,
                                          INT64_MAX, &i), POPC_OK);
    ck_assert_int_eq(i, -7);
    ck_assert_int_eq(popci_config_get_float(c, "run", "ratio", 1.0, 0.0, 1.0,
                                            &f), POPC_OK);
    ck_assert(f == 0.25);
    ck_assert_int_eq(popci_config_get_bool(c, "run", "verbose", 0, &b),
                     POPC_OK);
    ck_assert_int_eq(b, 1);
    ck_assert_int_eq(popci_config_get_string(c, "run", "name", NULL, &s),
                     POPC_OK);
    ck_assert_str_eq(s, "two words");
    ck_assert_str_eq(popci_config_raw(c, "run", "name"), "\"two words\"");
    ck_assert_int_eq(popci_config_get_enum(c, "run", "backend", backends, 0,
                                           &e), POPC_OK);
    ck_assert_int_eq(e, 1);
    ck_assert_int_eq(popci_config_get_int_list(c, "run", "dims", 1, 1024,
                                               dims, 4, &n), POPC_OK);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(dims[0], 1);
    ck_assert_int_eq(dims[1], 28);
    ck_assert_int_eq(dims[2], 28);
    popci_config_free(c);
}
END_TEST

START_TEST(absent_keys_give_the_default)
{
    popci_config *c = open_ok("config_good.ini");
    int64_t i = 0;
    double f = 0;
    int b = 0, e = 0, n = 5;
    int64_t v[2];
    const char *s = "x";
    static const char *const names[] = {"a", "b", NULL};

    ck_assert_int_eq(popci_config_get_int(c, "run", "nope", 42, 0, 100, &i),
                     POPC_OK);
    ck_assert_int_eq(i, 42);
    ck_assert_int_eq(popci_config_get_int(c, "nosection", "x", 7, 0, 100,
                                          &i), POPC_OK);
    ck_assert_int_eq(i, 7);
    ck_assert_int_eq(popci_config_get_float(c, "run", "nope", 0.5, 0, 1, &f),
                     POPC_OK);
    ck_assert(f == 0.5);
    ck_assert_int_eq(popci_config_get_bool(c, "run", "nope", 1, &b),
                     POPC_OK);
    ck_assert_int_eq(b, 1);
    ck_assert_int_eq(popci_config_get_string(c, "run", "nope", NULL, &s),
                     POPC_OK);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(popci_config_get_enum(c, "run", "nope", names, 1, &e),
                     POPC_OK);
    ck_assert_int_eq(e, 1);
    ck_assert_int_eq(popci_config_get_int_list(c, "run", "nope", 0, 9, v, 2,
                                               &n), POPC_OK);
    ck_assert_int_eq(n, 0);
    ck_assert(!popci_config_has_key(c, "run", "nope"));
    ck_assert(popci_config_has_key(c, "run", "threads"));
    popci_config_free(c);
}
END_TEST

START_TEST(malformed_values_name_file_and_line)
{
    popci_config *c = open_ok("config_good.ini");
    static const char *const names[] = {"cpu", "ipumodel", "offline", NULL};
    char want[4200];
    int64_t i = -1, v[2];
    double f = -1;
    int b = -1, e = -1, n;

    /* out of range */
    snprintf(want, sizeof want, "%s:5: [run] threads: must be an integer "
             "between 1 and 4 (got '8')", data("config_good.ini"));
    expect_error(popci_config_get_int(c, "run", "threads", 2, 1, 4, &i),
                 POPC_ECONFIG, want, NULL);
    ck_assert_int_eq(i, 2);
    /* trailing comment: kept by libini_config, explained by us */
    snprintf(want, sizeof want, "%s:10: [run] note: must be an integer >= 0 "
             "(got '3 ; trailing comments stay in the value')",
             data("config_good.ini"));
    expect_error(popci_config_get_int(c, "run", "note", 0, 0, INT64_MAX, &i),
                 POPC_ECONFIG, want, "comments must be on their own line");
    expect_error(popci_config_get_float(c, "run", "backend", 0, -HUGE_VAL,
                                        HUGE_VAL, &f),
                 POPC_ECONFIG, ":4: [run] backend: must be a finite number",
                 NULL);
    ck_assert(f == 0);
    expect_error(popci_config_get_float(c, "run", "ratio", 0, 0.5, 1, &f),
                 POPC_ECONFIG, "must be a number between 0.5 and 1 (got "
                 "'0.25')", NULL);
    expect_error(popci_config_get_bool(c, "run", "threads", 0, &b),
                 POPC_ECONFIG, ":5: [run] threads: must be true or false",
                 NULL);
    ck_assert_int_eq(b, 0);
    expect_error(popci_config_get_enum(c, "Layer.dense1", "type", names, 0,
                                       &e),
                 POPC_ECONFIG, ":13: [Layer.dense1] type: unknown value "
                 "'Dense'", "valid values: cpu, ipumodel, offline");
    expect_error(popci_config_get_int_list(c, "run", "dims", 1, 16, v, 2,
                                           &n),
                 POPC_ECONFIG, "[run] dims: item 2 must be an integer "
                 "between 1 and 16 (got '28')", NULL);
    expect_error(popci_config_get_int_list(c, "run", "dims", 1, 100, v, 2,
                                           &n),
                 POPC_ECONFIG, "[run] dims: at most 2 values", NULL);
    popci_config_free(c);
}
END_TEST

START_TEST(parse_errors_are_libini_lines_with_the_file)
{
    popci_config *c = (popci_config *)1;
    char want[4200];

    snprintf(want, sizeof want, "%s: Error (5) on line 3: Equal sign is "
             "missing.", data("config_noeq.ini"));
    expect_error(popci_config_open(data("config_noeq.ini"), &c),
                 POPC_ECONFIG, want, NULL);
    ck_assert_ptr_null(c);
    expect_error(popci_config_open(data("config_dupkey.ini"), &c),
                 POPC_ECONFIG, "config_dupkey.ini: Error (10) on line 3: "
                 "Duplicate key is not allowed.", NULL);
    expect_error(popci_config_open(data("config_dupsec.ini"), &c),
                 POPC_ECONFIG, "config_dupsec.ini: Error (12) on line 5: "
                 "Duplicate section is not allowed.", NULL);
    snprintf(want, sizeof want, "%s:2: 'threads = 4' is outside any section",
             data("config_orphan.ini"));
    expect_error(popci_config_open(data("config_orphan.ini"), &c),
                 POPC_ECONFIG, want, NULL);
    expect_error(popci_config_open(data("no_such_file.ini"), &c), POPC_EIO,
                 "no_such_file.ini: cannot open: No such file or directory",
                 NULL);
    ck_assert_ptr_null(c);
}
END_TEST

START_TEST(from_text_and_edge_cases)
{
    popci_config *c = NULL;
    const char *s;

    /* UTF-8 byte order mark, CRLF, C comments refused, empty text */
    ck_assert_int_eq(popci_config_from_text("mem.ini", "\xEF\xBB\xBF[a]\r\n"
                                            "k = v\r\n", &c), POPC_OK);
    ck_assert_int_eq(popci_config_section_line(c, "a"), 1);
    ck_assert_int_eq(popci_config_get_string(c, "a", "k", NULL, &s),
                     POPC_OK);
    ck_assert_str_eq(s, "v");
    popci_config_free(c);
    expect_error(popci_config_from_text("mem.ini", "[a]\n// note\n", &c),
                 POPC_ECONFIG, "mem.ini: Error", "line 2");
    ck_assert_int_eq(popci_config_from_text("empty.ini", "", &c), POPC_OK);
    ck_assert_int_eq(popci_config_n_sections(c), 0);
    ck_assert_int_eq(popci_config_n_keys(c, "x"), 0);
    ck_assert_ptr_null(popci_config_key(c, "x", 0));
    popci_config_free(c);
    expect_error(popci_config_from_text("mem.ini", "[a\nk=1\n", &c),
                 POPC_ECONFIG, "mem.ini: Error (2) on line 1: No closing "
                 "bracket.", NULL);
    expect_error(popci_config_from_text("mem.ini", "[a]\n= 1\n", &c),
                 POPC_ECONFIG, "Error (6) on line 2: Property name is "
                 "missing.", NULL);
    /* not UTF-8: the line and column of the first bad byte, not ENOMEM */
    expect_error(popci_config_from_text("mem.ini", "[a]\nk = ok\nv = \xC3\x28"
                                        "\n", &c),
                 POPC_ECONFIG, "mem.ini:3: invalid UTF-8 (byte 0xC3 at "
                 "column 5)", NULL);
    expect_error(popci_config_from_text("mem.ini", "[a]\nk = \xED\xA0\x80\n",
                                        &c),
                 POPC_ECONFIG, "mem.ini:2: invalid UTF-8", NULL);
    ck_assert_int_eq(popci_config_from_text("mem.ini", "[a]\nk = \xC3\xA9t"
                                            "\xC3\xA9 \xF0\x9F\x98\x80\n",
                                            &c), POPC_OK);
    popci_config_free(c);
    popci_config_free(NULL);
}
END_TEST

START_TEST(key_checks_suggest_the_closest_name)
{
    popci_config *c = open_ok("config_good.ini");
    static const char *const run_keys[] = {"backend", "threads", "ratio",
                                           "verbose", "name", "dims", "note",
                                           NULL};
    static const char *const few[] = {"backend", "thread", NULL};
    static const char *const sections[] = {"run", "layer.dense1", "empty",
                                           "alpha", NULL};
    static const char *const some[] = {"run", "alpha", "empty", NULL};

    ck_assert_int_eq(popci_config_check_keys(c, "run", run_keys), POPC_OK);
    ck_assert_int_eq(popci_config_check_keys(c, "absent", few), POPC_OK);
    expect_error(popci_config_check_keys(c, "run", few), POPC_ECONFIG,
                 ":5: [run] unknown key 'threads'; did you mean 'thread'? "
                 "(valid keys: backend, thread)", NULL);
    ck_assert_int_eq(popci_config_check_sections(c, sections), POPC_OK);
    expect_error(popci_config_check_sections(c, some), POPC_ECONFIG,
                 ":12: unknown section [Layer.dense1]", "valid sections: run");
    ck_assert_int_eq(popci_config_require(c, "run", "backend"), POPC_OK);
    expect_error(popci_config_require(c, "alpha", "y"), POPC_ECONFIG,
                 ":19: [alpha] missing required key 'y'", NULL);
    expect_error(popci_config_require(c, "optimizer", "name"), POPC_ECONFIG,
                 "missing section [optimizer]", NULL);
    popci_config_free(c);
}
END_TEST

START_TEST(closest_name)
{
    static const char *const names[] = {"deviceIterations",
                                        "Training.gradientAccumulation",
                                        "replicationFactor", NULL};

    ck_assert_str_eq(popci_closest_name("deviceIteration", names, -1),
                     "deviceIterations");
    ck_assert_str_eq(popci_closest_name("deviceiterations", names, 3),
                     "deviceIterations");
    ck_assert_str_eq(popci_closest_name("gradientAccumulation", names, -1),
                     "Training.gradientAccumulation");
    ck_assert_ptr_null(popci_closest_name("banana", names, -1));
    ck_assert_ptr_null(popci_closest_name(NULL, names, -1));
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("ini");

    tcase_add_test(tc, sections_keep_file_order_and_lines);
    tcase_add_test(tc, typed_getters);
    tcase_add_test(tc, absent_keys_give_the_default);
    tcase_add_test(tc, malformed_values_name_file_and_line);
    tcase_add_test(tc, parse_errors_are_libini_lines_with_the_file);
    tcase_add_test(tc, from_text_and_edge_cases);
    tcase_add_test(tc, key_checks_suggest_the_closest_name);
    tcase_add_test(tc, closest_name);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
