/* check_npy.c - .npy files: NumPy-written fixtures of every dtype and header
** version (tests/data/npy, made by tests/ref/gen_npy_fixtures.py), byte-exact
** round trips, and refusal of corrupt or unsupported files by name. */
#include "config.h"

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/harness/assert.h"

#ifndef TEST_NPY_DIR
#error "TEST_NPY_DIR must point at tests/data/npy"
#endif

static char tmpdir[PATH_MAX];

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/popc-check-npy-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
    char cmd[PATH_MAX + 16];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *fixture(const char *name)
{
    static char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", TEST_NPY_DIR, name);
    return p;
}

static const char *scratch(const char *name)
{
    static char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    return p;
}

static popc_tensor *load(const char *name)
{
    popc_tensor *t = NULL;
    ASSERT_OK(popc_npy_load(fixture(name), &t));
    return t;
}

static char *slurp(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;

    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)*len + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_int_eq(fread(buf, 1, (size_t)*len, f), *len);
    fclose(f);
    return buf;
}

static void shape_is(const popc_tensor *t, popc_dtype dt, const char *desc)
{
    char buf[128];

    ck_assert_int_eq(popc_tensor_dtype(t), dt);
    ck_assert_str_eq(popc_tensor_describe(t, buf, sizeof buf), desc);
}

/* ---- NumPy fixtures -------------------------------------------------------- */

START_TEST(loads_every_dtype)
{
    popc_tensor *t;

    t = load("f32_2x3.npy");
    shape_is(t, POPC_DTYPE_F32, "float32[2, 3]");
    for (int i = 0; i < 6; i++)
        ck_assert_float_eq(((float *)popc_tensor_data(t))[i], i * 0.5f - 1);
    popc_tensor_free(t);

    t = load("i32_2x2.npy");
    shape_is(t, POPC_DTYPE_I32, "int32[2, 2]");
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(((int32_t *)popc_tensor_data(t))[i], i - 3);
    popc_tensor_free(t);

    t = load("i64_3.npy");
    shape_is(t, POPC_DTYPE_I64, "int64[3]");
    ck_assert_int_eq(((int64_t *)popc_tensor_data(t))[0], -(1LL << 40));
    ck_assert_int_eq(((int64_t *)popc_tensor_data(t))[2], 1LL << 62);
    popc_tensor_free(t);

    t = load("u8_5.npy");
    shape_is(t, POPC_DTYPE_U8, "uint8[5]");
    {
        const uint8_t w[] = {0, 1, 127, 128, 255};
        ck_assert_mem_eq(popc_tensor_data(t), w, sizeof w);
    }
    popc_tensor_free(t);

    t = load("bool_4.npy");
    shape_is(t, POPC_DTYPE_BOOL, "bool[4]");
    {
        const uint8_t w[] = {1, 0, 0, 1};
        ck_assert_mem_eq(popc_tensor_data(t), w, sizeof w);
    }
    popc_tensor_free(t);

    t = load("scalar_f32.npy");
    shape_is(t, POPC_DTYPE_F32, "float32[]");
    ck_assert_float_eq(*(float *)popc_tensor_data(t), 3.5f);
    popc_tensor_free(t);

    t = load("empty_0x3.npy");
    shape_is(t, POPC_DTYPE_F32, "float32[0, 3]");
    popc_tensor_free(t);

    t = load("rank8_i32.npy");
    shape_is(t, POPC_DTYPE_I32, "int32[2, 1, 2, 1, 1, 2, 1, 3]");
    ck_assert_int_eq(((int32_t *)popc_tensor_data(t))[23], 23);
    popc_tensor_free(t);
}
END_TEST

START_TEST(float16_special_values)
{
    popc_tensor *t = load("f16_special.npy");
    const uint16_t *h = popc_tensor_data(t);
    const uint16_t want[] = {0x0000, 0x8000, 0x3c00, 0xc100, 0x7bff,
                             0x7c00, 0xfc00, 0,      0x0001, 0x0400};

    shape_is(t, POPC_DTYPE_F16, "float16[10]");
    for (int i = 0; i < 10; i++) {
        if (i == 7) {
            ck_assert(isnan(popc_f16_to_f32(h[i])));
            continue;
        }
        ck_assert_uint_eq(h[i], want[i]);
    }
    popc_tensor_free(t);
}
END_TEST

START_TEST(float64_is_read_as_float32)
{
    popc_tensor *t = load("f64_2x2.npy");
    const float *f = popc_tensor_data(t);

    shape_is(t, POPC_DTYPE_F32, "float32[2, 2]");
    ck_assert(f[0] == (float)0.1);
    ck_assert(f[1] == (float)-1e30);
    ck_assert(f[2] == 3.25f);
    ck_assert(f[3] == (float)1e-3);
    popc_tensor_free(t);
}
END_TEST

START_TEST(header_versions_2_and_3)
{
    popc_tensor *v1 = load("f32_2x3.npy");
    popc_tensor *v2 = load("v2_f32.npy");
    popc_tensor *v3 = load("v3_f32.npy");

    ck_assert(popc_tensor_equal(v1, v2));
    ck_assert(popc_tensor_equal(v1, v3));
    popc_tensor_free(v1);
    popc_tensor_free(v2);
    popc_tensor_free(v3);
}
END_TEST

/* ---- writing -------------------------------------------------------------- */

START_TEST(save_is_byte_identical_to_numpy)
{
    static const char *const names[] = {
        "f32_2x3.npy", "f16_special.npy", "i32_2x2.npy", "i64_3.npy",
        "u8_5.npy",    "bool_4.npy",      "scalar_f32.npy",
        "empty_0x3.npy", "rank8_i32.npy"};

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        popc_tensor *t = load(names[i]), *back = NULL;
        long la, lb;
        char *a, *b;

        ASSERT_OK(popc_npy_save(scratch(names[i]), t));
        a = slurp(fixture(names[i]), &la);
        b = slurp(scratch(names[i]), &lb);
        ck_assert_msg(la == lb && memcmp(a, b, (size_t)la) == 0,
                      "%s differs from NumPy's file", names[i]);
        ASSERT_OK(popc_npy_load(scratch(names[i]), &back));
        ck_assert(popc_tensor_equal(t, back));
        free(a);
        free(b);
        popc_tensor_free(t);
        popc_tensor_free(back);
    }
}
END_TEST

START_TEST(round_trip_every_dtype)
{
    static const popc_dtype dts[] = {POPC_DTYPE_F32, POPC_DTYPE_F16,
                                     POPC_DTYPE_I32, POPC_DTYPE_I64,
                                     POPC_DTYPE_U8,  POPC_DTYPE_BOOL};
    const int64_t dims[3] = {3, 5, 7};

    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        popc_tensor *t, *back;
        unsigned char *p;

        ASSERT_OK(popc_tensor_new(dts[k], dims, 3, &t));
        p = popc_tensor_data(t);
        for (size_t i = 0; i < popc_tensor_nbytes(t); i++)
            p[i] = dts[k] == POPC_DTYPE_BOOL ? (unsigned char)(i % 3 == 0)
                                             : (unsigned char)(i * 37 + 11);
        ASSERT_OK(popc_npy_save(scratch("rt.npy"), t));
        ASSERT_OK(popc_npy_load(scratch("rt.npy"), &back));
        ck_assert_msg(popc_tensor_equal(t, back), "%s",
                      popc_dtype_name(dts[k]));
        popc_tensor_free(t);
        popc_tensor_free(back);
    }
}
END_TEST

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

START_TEST(save_replaces_atomically_and_leaves_no_temp)
{
    popc_tensor *a = load("f32_2x3.npy"), *b = load("i64_3.npy"), *back;
    struct stat sb;

    ASSERT_OK(popc_npy_save(scratch("x.npy"), a));
    ASSERT_OK(popc_npy_save(scratch("x.npy"), b));
    ck_assert_int_eq(count_entries(tmpdir), 1);
    ASSERT_OK(popc_npy_load(scratch("x.npy"), &back));
    ck_assert(popc_tensor_equal(b, back));
    ck_assert_int_eq(stat(scratch("x.npy"), &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0644);
    popc_tensor_free(back);

    ck_assert_int_eq(popc_npy_save("/nonexistent/dir/x.npy", a), POPC_EIO);
    ASSERT_HAS(popc_last_error(), "/nonexistent/dir/x.npy");
    ck_assert_int_eq(popc_npy_save(NULL, a), POPC_EINVAL);
    ck_assert_int_eq(popc_npy_save(scratch("y.npy"), NULL), POPC_EINVAL);
    ck_assert_int_eq(count_entries(tmpdir), 1);
    popc_tensor_free(a);
    popc_tensor_free(b);
}
END_TEST

/* The pid of a process that has exited (and been reaped). */
static long dead_pid(void)
{
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
    return (long)pid;
}

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");

    ck_assert_ptr_nonnull(f);
    fclose(f);
}

/* A run killed mid-write leaves "<path>.tmp-<pid>..." behind; the next
** write of the same path removes it, but never a live process's temp. */
START_TEST(stale_temps_of_dead_processes_are_removed)
{
    popc_tensor *a = load("f32_2x3.npy");
    char stale[4400], stale_dir[4400], inner[4500], live[4400], other[4400];
    struct stat sb;

    snprintf(stale, sizeof stale, "%s.tmp-%ld.Ab12Cd", scratch("x.npy"),
             dead_pid());
    snprintf(stale_dir, sizeof stale_dir, "%s.tmp-%ld", scratch("x.npy"),
             dead_pid());
    snprintf(inner, sizeof inner, "%s/w.npy", stale_dir);
    snprintf(live, sizeof live, "%s.tmp-1.Zz99Zz", scratch("x.npy"));
    snprintf(other, sizeof other, "%s.tmp-%ld.Ab12Cd", scratch("z.npy"),
             dead_pid());
    touch(stale);
    ck_assert_int_eq(mkdir(stale_dir, 0777), 0);
    touch(inner);
    touch(live);
    touch(other);
    ASSERT_OK(popc_npy_save(scratch("x.npy"), a));
    ck_assert_int_ne(stat(stale, &sb), 0);
    ck_assert_int_ne(stat(stale_dir, &sb), 0);
    ck_assert_int_eq(stat(live, &sb), 0);   /* pid 1 is alive */
    ck_assert_int_eq(stat(other, &sb), 0);  /* another target's temp */
    unlink(live);
    unlink(other);
    popc_tensor_free(a);
}
END_TEST

/* ---- refused files ----------------------------------------------------------- */

static void refused(const char *path, popc_status want, const char *words)
{
    popc_tensor *t = (popc_tensor *)1;
    popc_status st = popc_npy_load(path, &t);

    ck_assert_msg(st == want, "%s: got %s (%s), want %s", path,
                  popc_status_name(st), popc_last_error(),
                  popc_status_name(want));
    ck_assert_ptr_null(t);
    ASSERT_HAS(popc_last_error(), path);
    ASSERT_HAS(popc_last_error(), words);
}

/* A file with a hand-written header and n data bytes. */
static const char *handmade(const char *name, int major, const char *header,
                            size_t data_bytes, unsigned char fill)
{
    const char *path = scratch(name);
    FILE *f = fopen(path, "wb");
    size_t hl = strlen(header);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y',
                             (unsigned char)major, 0,
                             (unsigned char)(hl & 0xff),
                             (unsigned char)(hl >> 8)};

    ck_assert_ptr_nonnull(f);
    fwrite(pre, 1, sizeof pre, f);
    fwrite(header, 1, hl, f);
    for (size_t i = 0; i < data_bytes; i++)
        fputc(fill, f);
    fclose(f);
    return path;
}

START_TEST(unsupported_files_are_refused_by_name)
{
    refused(fixture("fortran_2x3.npy"), POPC_EUNSUPPORTED, "Fortran-order");
    refused(fixture("bigendian_f32.npy"), POPC_EUNSUPPORTED, "big-endian "
                                                             "dtype '>f4'");
    refused(fixture("rank9.npy"), POPC_EUNSUPPORTED, "more than 8 dimensions");
    refused(handmade("complex.npy", 1, "{'descr': '<c8', 'fortran_order': "
                     "False, 'shape': (2,), }\n", 16, 0),
            POPC_EUNSUPPORTED, "dtype '<c8' is not supported");
}
END_TEST

START_TEST(narrow_integers_load)
{
    popc_tensor *t = NULL;
    const int16_t *v;

    ck_assert_int_eq(popc_npy_load(fixture("int16.npy"), &t), POPC_OK);
    ck_assert_int_eq(popc_tensor_dtype(t), POPC_DTYPE_I16);
    ck_assert_int_eq(popc_tensor_numel(t), 3);
    v = popc_tensor_cdata(t);
    ck_assert(v[0] == 0 && v[1] == 1 && v[2] == 2);
    popc_tensor_free(t);
}
END_TEST

START_TEST(corrupt_files_are_eio_by_name)
{
    refused(fixture("truncated_data.npy"), POPC_EIO, "truncated");
    refused(fixture("truncated_header.npy"), POPC_EIO, "truncated");
    refused(fixture("bad_magic.npy"), POPC_EIO, "bad magic");
    refused(fixture("not_npy.npy"), POPC_EIO, "not a .npy file");
    refused(fixture("no_such_file.npy"), POPC_EIO, "cannot open");
}
END_TEST

START_TEST(malformed_headers)
{
    popc_tensor *t;

    refused(handmade("a.npy", 1, "{'descr': '<f4', 'fortran_order': False}\n",
                     16, 0),
            POPC_EIO, "corrupt .npy header");
    refused(handmade("b.npy", 1, "{'descr': '<f4', 'fortran_order': False, "
                                 "'shape': (-1,), }\n", 16, 0),
            POPC_EIO, "corrupt .npy header");
    refused(handmade("c.npy", 1, "{'descr': '<f4' 'fortran_order': False, "
                                 "'shape': (2,), }\n", 16, 0),
            POPC_EIO, "corrupt .npy header");
    refused(handmade("d.npy", 1, "not a dict at all\n", 16, 0), POPC_EIO,
            "corrupt .npy header");
    refused(handmade("e.npy", 9, "{}", 0, 0), POPC_EUNSUPPORTED,
            "format version 9.0");
    refused(handmade("f.npy", 1, "{'descr': [('a', '<f4')], "
                                 "'fortran_order': False, 'shape': (1,), }\n",
                     4, 0),
            POPC_EUNSUPPORTED, "structured");
    refused(handmade("g.npy", 1, "{'descr': '<f4', 'fortran_order': False, "
                                 "'shape': (9223372036854775807, 2), }\n",
                     16, 0),
            POPC_EIO, "corrupt .npy shape");
    refused(handmade("h.npy", 1, "{'descr': '<f4', 'fortran_order': False, "
                                 "'shape': (99999999999999999999,), }\n",
                     16, 0),
            POPC_EIO, "out of range");
    /* Extra spacing, double quotes, reordered keys and no trailing comma
    ** are all valid Python; bool bytes other than 0/1 read as 1. */
    ASSERT_OK(popc_npy_load(handmade("ok.npy", 1,
                                     "{ \"shape\" : ( 3 , ) , \"descr\": "
                                     "'|b1', 'fortran_order': False}\n",
                                     3, 2),
                            &t));
    shape_is(t, POPC_DTYPE_BOOL, "bool[3]");
    ck_assert_uint_eq(((uint8_t *)popc_tensor_data(t))[1], 1);
    popc_tensor_free(t);
    /* Fortran order is harmless for one dimension. */
    ASSERT_OK(popc_npy_load(handmade("f1.npy", 1, "{'descr': '<i4', "
                                     "'fortran_order': True, 'shape': "
                                     "(2,), }\n", 8, 1),
                            &t));
    ck_assert_int_eq(((int32_t *)popc_tensor_data(t))[1], 0x01010101);
    popc_tensor_free(t);
    ck_assert_int_eq(popc_npy_load(NULL, &t), POPC_EINVAL);
    ck_assert_int_eq(popc_npy_load(fixture("f32_2x3.npy"), NULL),
                     POPC_EINVAL);
}
END_TEST

START_TEST(huge_header_length_is_refused)
{
    const char *path = scratch("long.npy");
    FILE *f = fopen(path, "wb");
    const unsigned char pre[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0,
                                   0xff, 0xff, 0xff, 0x7f};

    ck_assert_ptr_nonnull(f);
    fwrite(pre, 1, sizeof pre, f);
    fclose(f);
    refused(path, POPC_EIO, "header length");
}
END_TEST

/* 2^40 floats claimed, 16 bytes present: refused before any allocation. */
START_TEST(shape_larger_than_file_is_refused_before_allocating)
{
    refused(handmade("claim.npy", 1, "{'descr': '<f4', 'fortran_order': "
                     "False, 'shape': (1099511627776,), }\n", 16, 0),
            POPC_EIO, "needs 4398046511104 bytes of data but only 16");
}
END_TEST

static Suite *npy_suite(void)
{
    Suite *s = suite_create("npy");
    TCase *tc = tcase_create("npy");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, loads_every_dtype);
    tcase_add_test(tc, float16_special_values);
    tcase_add_test(tc, float64_is_read_as_float32);
    tcase_add_test(tc, header_versions_2_and_3);
    tcase_add_test(tc, save_is_byte_identical_to_numpy);
    tcase_add_test(tc, round_trip_every_dtype);
    tcase_add_test(tc, save_replaces_atomically_and_leaves_no_temp);
    tcase_add_test(tc, stale_temps_of_dead_processes_are_removed);
    tcase_add_test(tc, unsupported_files_are_refused_by_name);
    tcase_add_test(tc, narrow_integers_load);
    tcase_add_test(tc, corrupt_files_are_eio_by_name);
    tcase_add_test(tc, malformed_headers);
    tcase_add_test(tc, huge_header_length_is_refused);
    tcase_add_test(tc, shape_larger_than_file_is_refused_before_allocating);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(npy_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
