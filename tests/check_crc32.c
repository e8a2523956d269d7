/* check_crc32.c - the executable's CRC-32 (exe/crc32_fast.c) is zlib's:
** popci_crc32 equals zlib's crc32 on random bytes of every length from 0
** to 1100 at every alignment within 16 bytes, on large buffers (46 MB, as
** ResNet-18's constants), from many starting values, and chained (the
** CRC of a then b is that of ab, split anywhere); on an x86-64 CPU with
** PCLMULQDQ the folding path is the one taken. The test compiles
** exe/crc32_fast.c itself: its symbols are hidden in libpopc. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <check.h>

#include "exe/crc32_fast.h"

/* xorshift: the same bytes on every run, no libc rand() state */
static void fill(unsigned char *b, size_t n, uint64_t seed)
{
    uint64_t s = seed | 1;

    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        b[i] = (unsigned char)(s >> 24);
    }
}

static uint32_t zlib_crc(uint32_t c, const unsigned char *b, size_t n)
{
    return (uint32_t)crc32(c, b, (uInt)n);
}

START_TEST(every_length_and_alignment)
{
    enum { MAXN = 1100 };
    unsigned char *b = malloc(MAXN + 16);

    ck_assert_ptr_nonnull(b);
    fill(b, MAXN + 16, 7);
    for (size_t n = 0; n <= MAXN; n++)
        for (size_t off = 0; off < 16; off++) {
            uint32_t c0 = (uint32_t)(n * 2654435761u + off);
            uint32_t want = zlib_crc(c0, b + off, n);
            uint32_t got = popci_crc32(c0, b + off, n);

            ck_assert_msg(got == want, "length %zu, offset %zu, start "
                          "%08x: %08x, zlib %08x", n, off, (unsigned)c0,
                          (unsigned)got, (unsigned)want);
        }
    free(b);
}
END_TEST

START_TEST(large_buffers)
{
    static const size_t sizes[] = {4096, 65536 + 13, (size_t)46 << 20};

    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        unsigned char *b = malloc(n);

        ck_assert_ptr_nonnull(b);
        fill(b, n, 1000 + i);
        ck_assert_uint_eq(popci_crc32(0, b, n), zlib_crc(0, b, n));
        ck_assert_uint_eq(popci_crc32(0xdeadbeefu, b + 1, n - 1),
                          zlib_crc(0xdeadbeefu, b + 1, n - 1));
        ck_assert_uint_eq(popci_crc32_zlib(0, b, n), zlib_crc(0, b, n));
        /* all zeros and all ones: no value the fold could lose */
        memset(b, 0, n);
        ck_assert_uint_eq(popci_crc32(0, b, n), zlib_crc(0, b, n));
        memset(b, 0xff, n);
        ck_assert_uint_eq(popci_crc32(0, b, n), zlib_crc(0, b, n));
        free(b);
    }
}
END_TEST

START_TEST(chained)
{
    enum { N = 3000 };
    unsigned char *b = malloc(N);
    uint32_t whole;

    ck_assert_ptr_nonnull(b);
    fill(b, N, 99);
    whole = zlib_crc(0, b, N);
    for (size_t cut = 0; cut <= N; cut += (cut < 300 ? 1 : 97)) {
        uint32_t c = popci_crc32(popci_crc32(0, b, cut), b + cut, N - cut);

        ck_assert_msg(c == whole, "split at %zu: %08x, whole %08x", cut,
                      (unsigned)c, (unsigned)whole);
    }
    free(b);
}
END_TEST

/* a build or dispatch mistake would leave zlib doing all the work */
START_TEST(folds_where_the_cpu_can)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    ck_assert_int_eq(popci_crc32_folds(),
                     __builtin_cpu_supports("pclmul") ? 1 : 0);
#else
    ck_assert_int_eq(popci_crc32_folds(), 0);
#endif
}
END_TEST

static Suite *crc32_suite(void)
{
    Suite *s = suite_create("crc32");
    TCase *tc = tcase_create("zlib");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_length_and_alignment);
    tcase_add_test(tc, large_buffers);
    tcase_add_test(tc, chained);
    tcase_add_test(tc, folds_where_the_cpu_can);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr;
    int failed;

    sr = srunner_create(crc32_suite());
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
