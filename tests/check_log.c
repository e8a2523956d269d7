/* check_log.c - log levels, POPC_LOG_LEVEL / POPC_LOG_DEST, maxRepeatLogs
** and thread safety. Each test runs in its own process (Check forks), so
** the environment is read afresh by each. */
#include "config.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/harness/assert.h"

#define MAX_LINES 64
static char lines[MAX_LINES][1100];
static int levels[MAX_LINES];
static int n_lines;
static int n_total;

static void capture(int level, const char *msg, void *user)
{
    (void)user;
    if (n_lines < MAX_LINES) {
        snprintf(lines[n_lines], sizeof lines[0], "%s", msg);
        levels[n_lines++] = level;
    }
    n_total++;
}

static void setup(void)
{
    n_lines = n_total = 0;
    unsetenv("POPC_LOG_LEVEL");
    unsetenv("POPC_LOG_DEST");
}

START_TEST(parse_level_names)
{
    static const char *const names[] = {"TRACE", "debug", "Info", "WARN",
                                        "err", "OFF"};
    int level = -1;

    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(popc_log_parse_level(names[i], &level), POPC_OK);
        ck_assert_int_eq(level, i);
    }
    ck_assert_int_eq(popc_log_parse_level("ERROR", &level), POPC_OK);
    ck_assert_int_eq(level, POPC_LOG_ERR);
    level = 77;
    ck_assert_int_eq(popc_log_parse_level("LOUD", &level), POPC_EINVAL);
    ck_assert_int_eq(level, 77);
    ck_assert_str_eq(popc_last_error(), "Unknown POPC_LOG_LEVEL 'LOUD'. "
                     "Valid values are TRACE, DEBUG, INFO, WARN, ERR and "
                     "OFF.");
    ck_assert_int_eq(popc_log_parse_level(NULL, &level), POPC_EINVAL);
}
END_TEST

START_TEST(default_level_is_warn)
{
    popc_log_set_callback(capture, NULL);
    ck_assert_int_eq(popc_log_level(), POPC_LOG_WARN);
    popc_log(POPC_LOG_INFO, "hidden");
    popc_log(POPC_LOG_WARN, "shown %d", 1);
    popc_log(POPC_LOG_ERR, "shown %s", "too");
    popc_log(POPC_LOG_OFF, "never");
    popc_log(-1, "never");
    ck_assert_int_eq(n_lines, 2);
    ck_assert_str_eq(lines[0], "shown 1");
    ck_assert_int_eq(levels[0], POPC_LOG_WARN);
    ck_assert_str_eq(lines[1], "shown too");
    ck_assert_int_eq(levels[1], POPC_LOG_ERR);
}
END_TEST

START_TEST(level_from_environment)
{
    setenv("POPC_LOG_LEVEL", "debug", 1);
    popc_log_set_callback(capture, NULL);
    ck_assert_int_eq(popc_log_level(), POPC_LOG_DEBUG);
    popc_log(POPC_LOG_TRACE, "hidden");
    popc_log(POPC_LOG_DEBUG, "debug line");
    ck_assert_int_eq(n_lines, 1);
    ck_assert_str_eq(lines[0], "debug line");
}
END_TEST

START_TEST(bad_environment_level_is_reported_once)
{
    setenv("POPC_LOG_LEVEL", "LOUD", 1);
    popc_log_set_callback(capture, NULL);
    ck_assert_int_eq(popc_log_level(), POPC_LOG_WARN);
    popc_log(POPC_LOG_WARN, "first");
    popc_log(POPC_LOG_WARN, "second");
    ck_assert_int_eq(n_lines, 3);
    ck_assert_str_eq(lines[0], "Unknown POPC_LOG_LEVEL 'LOUD'. Valid values "
                     "are TRACE, DEBUG, INFO, WARN, ERR and OFF. Using "
                     "WARN.");
    ck_assert_str_eq(lines[1], "first");
    ck_assert_str_eq(lines[2], "second");
}
END_TEST

START_TEST(set_level_and_off)
{
    popc_log_set_callback(capture, NULL);
    popc_log_set_level(POPC_LOG_TRACE);
    popc_log(POPC_LOG_TRACE, "trace");
    popc_log_set_level(99); /* ignored */
    ck_assert_int_eq(popc_log_level(), POPC_LOG_TRACE);
    popc_log_set_level(POPC_LOG_OFF);
    popc_log(POPC_LOG_ERR, "nothing");
    ck_assert_int_eq(n_lines, 1);
    ck_assert_str_eq(lines[0], "trace");
}
END_TEST

static char *read_all(const char *path)
{
    static char buf[1 << 20];
    FILE *f = fopen(path, "r");
    size_t n;

    ck_assert_ptr_nonnull(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

START_TEST(destination_file_is_complete_at_once)
{
    char path[] = "/tmp/popc-check-log-XXXXXX";
    int fd = mkstemp(path);

    ck_assert_int_ge(fd, 0);
    close(fd);
    setenv("POPC_LOG_DEST", path, 1);
    popc_log(POPC_LOG_WARN, "hello %d", 42);
    popc_log(POPC_LOG_ERR, "bye");
    /* Read before exit: lines must not sit in a buffer. */
    ck_assert_str_eq(read_all(path), "[popc WARN] hello 42\n"
                                     "[popc ERR] bye\n");
    unlink(path);
}
END_TEST

/* A callback that logs does not wait for the lock it runs under: its own
** line goes to the destination. */
static void logging_capture(int level, const char *msg, void *user)
{
    capture(level, msg, user);
    popc_log(POPC_LOG_ERR, "inside the callback: %s", msg);
}

START_TEST(callback_that_logs_does_not_hang)
{
    char path[] = "/tmp/popc-check-log-XXXXXX";
    int fd = mkstemp(path);

    ck_assert_int_ge(fd, 0);
    close(fd);
    setenv("POPC_LOG_DEST", path, 1);
    popc_log_set_callback(logging_capture, NULL);
    popc_log(POPC_LOG_WARN, "outer");
    popc_log_set_callback(NULL, NULL);
    ck_assert_int_eq(n_total, 1);
    ck_assert_str_eq(lines[0], "outer");
    ck_assert_str_eq(read_all(path), "[popc ERR] inside the callback: "
                                     "outer\n");
    unlink(path);
}
END_TEST

START_TEST(destination_unwritable_falls_back)
{
    setenv("POPC_LOG_DEST", "/nonexistent/dir/popc.log", 1);
    popc_log_set_callback(capture, NULL);
    popc_log(POPC_LOG_ERR, "still logged");
    ck_assert_int_eq(n_lines, 2);
    ASSERT_HAS(lines[0], "cannot open POPC_LOG_DEST "
                         "'/nonexistent/dir/popc.log'");
    ck_assert_str_eq(lines[1], "still logged");
}
END_TEST

static void log_run(int n, const char *line)
{
    for (int i = 0; i < n; i++)
        popc_log(POPC_LOG_WARN, "%s", line);
}

START_TEST(repeats_default_four)
{
    popc_log_set_callback(capture, NULL);
    log_run(10, "same");
    log_run(1, "other");
    ck_assert_int_eq(n_lines, 6);
    for (int i = 0; i < 4; i++)
        ck_assert_str_eq(lines[i], "same");
    ck_assert_str_eq(lines[4], "(last message repeated 6 more times)");
    ck_assert_str_eq(lines[5], "other");
}
END_TEST

START_TEST(repeats_configurable)
{
    popc_log_set_callback(capture, NULL);
    popc_log_set_max_repeats(2);
    log_run(3, "a");
    log_run(2, "b"); /* not over the limit: no note */
    log_run(1, "c");
    ck_assert_int_eq(n_lines, 6);
    ck_assert_str_eq(lines[0], "a");
    ck_assert_str_eq(lines[1], "a");
    ck_assert_str_eq(lines[2], "(last message repeated 1 more times)");
    ck_assert_str_eq(lines[3], "b");
    ck_assert_str_eq(lines[4], "b");
    ck_assert_str_eq(lines[5], "c");

    n_lines = 0;
    popc_log_set_max_repeats(-1); /* maxRepeatLogs(None): show all */
    log_run(20, "d");
    ck_assert_int_eq(n_lines, 20);

    n_lines = 0;
    popc_log_set_max_repeats(INT_MAX);
    log_run(7, "e");
    ck_assert_int_eq(n_lines, 7);

    log_run(1, "separator");
    n_lines = 0;
    popc_log_set_max_repeats(0); /* the first line always shows */
    log_run(3, "f");
    log_run(1, "g");
    ck_assert_int_eq(n_lines, 3);
    ck_assert_str_eq(lines[0], "f");
    ck_assert_str_eq(lines[1], "(last message repeated 2 more times)");
}
END_TEST

START_TEST(long_lines_are_cut_not_overflowed)
{
    static char big[5000];

    memset(big, 'x', sizeof big - 1);
    popc_log_set_callback(capture, NULL);
    popc_log(POPC_LOG_WARN, "%s", big);
    ck_assert_int_eq(n_lines, 1);
    ck_assert_uint_eq(strlen(lines[0]), 1023);
}
END_TEST

static void *log_thread(void *arg)
{
    long id = (long)arg;

    for (int i = 0; i < 2000; i++)
        popc_log(POPC_LOG_WARN, "thread %ld line %d", id, i);
    return NULL;
}

START_TEST(threads_do_not_interleave)
{
    char path[] = "/tmp/popc-check-log-XXXXXX";
    int fd = mkstemp(path);
    pthread_t th[4];
    char *text, *save = NULL;
    int count = 0;

    ck_assert_int_ge(fd, 0);
    close(fd);
    setenv("POPC_LOG_DEST", path, 1);
    for (long i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, log_thread, (void *)i),
                         0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    text = read_all(path);
    for (char *l = strtok_r(text, "\n", &save); l;
         l = strtok_r(NULL, "\n", &save)) {
        long id;
        int n;
        ck_assert_msg(sscanf(l, "[popc WARN] thread %ld line %d", &id, &n) ==
                          2,
                      "mangled line: %s", l);
        count++;
    }
    ck_assert_int_eq(count, 8000);
    unlink(path);
}
END_TEST

static Suite *log_suite(void)
{
    Suite *s = suite_create("log");
    TCase *tc = tcase_create("log");

    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, parse_level_names);
    tcase_add_test(tc, default_level_is_warn);
    tcase_add_test(tc, level_from_environment);
    tcase_add_test(tc, bad_environment_level_is_reported_once);
    tcase_add_test(tc, set_level_and_off);
    tcase_add_test(tc, destination_file_is_complete_at_once);
    tcase_add_test(tc, destination_unwritable_falls_back);
    tcase_add_test(tc, callback_that_logs_does_not_hang);
    tcase_add_test(tc, repeats_default_four);
    tcase_add_test(tc, repeats_configurable);
    tcase_add_test(tc, long_lines_are_cut_not_overflowed);
    tcase_add_test(tc, threads_do_not_interleave);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(log_suite());
    int failed;

    /* Every test reads the environment afresh: it needs its own process. */
    if (srunner_fork_status(sr) == CK_NOFORK) {
        fprintf(stderr, "check_log needs CK_FORK=yes\n");
        srunner_free(sr);
        return 77;
    }
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
