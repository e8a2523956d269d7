/* check_data.c - datasets (IDX plain and gzip, NPY, CSV, every bad-data
** case) and the data loader (combined batch, shuffling, drop_last, async
** against sync, distributed shares, resuming from a position).
**
** Broken files are generated in a temporary directory per test. Loader
** tests use a dataset whose label is the sample's row, so a batch's
** labels show exactly which rows it holds.
*/
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <check.h>

#include "popc/data.h"
#include "popc/log.h"
#include "popc/options.h"
#include "popc/tensor.h"

#define FMNIST "/usr/share/datasets/fashion-mnist"

static char tmpdir[256];
static char pathbuf[8][512];
static int pathnext;

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/popc-check-data-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    char p[768];

    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(tmpdir);
}

static const char *tmp(const char *name)
{
    char *p = pathbuf[pathnext++ % 8];

    snprintf(p, 512, "%s/%s", tmpdir, name);
    return p;
}

static void expect(popc_status st, popc_status want, const char *a,
                   const char *b)
{
    ck_assert_msg(st == want, "status %s, want %s: %s", popc_status_name(st),
                  popc_status_name(want), popc_last_error());
    if (a)
        ck_assert_msg(strstr(popc_last_error(), a), "'%s' not in '%s'", a,
                      popc_last_error());
    if (b)
        ck_assert_msg(strstr(popc_last_error(), b), "'%s' not in '%s'", b,
                      popc_last_error());
}

#define OK(call)                                                              \
    do {                                                                      \
        popc_status st_ = (call);                                             \
        ck_assert_msg(st_ == POPC_OK, "%s: %s", #call, popc_last_error());    \
    } while (0)

/* ---- writing IDX files -------------------------------------------------- */

static void put_bytes(const char *path, int gz, const void *buf, size_t n)
{
    if (gz) {
        gzFile f = gzopen(path, "wb");

        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(gzwrite(f, buf, (unsigned)n), (int)n);
        gzclose(f);
    } else {
        FILE *f = fopen(path, "wb");

        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(buf, 1, n, f), n);
        fclose(f);
    }
}

/* IDX bytes: magic, dims, payload; `cut` bytes removed from the end. */
static void write_idx(const char *path, int gz, int type, int ndims,
                      const uint32_t *dims, const void *payload,
                      size_t payload_bytes, size_t cut)
{
    size_t n = 4 + 4 * (size_t)ndims + payload_bytes;
    unsigned char *buf = malloc(n);

    buf[0] = 0;
    buf[1] = 0;
    buf[2] = (unsigned char)type;
    buf[3] = (unsigned char)ndims;
    for (int i = 0; i < ndims; i++) {
        buf[4 + 4 * i] = (unsigned char)(dims[i] >> 24);
        buf[5 + 4 * i] = (unsigned char)(dims[i] >> 16);
        buf[6 + 4 * i] = (unsigned char)(dims[i] >> 8);
        buf[7 + 4 * i] = (unsigned char)dims[i];
    }
    memcpy(buf + 4 + 4 * ndims, payload, payload_bytes);
    put_bytes(path, gz, buf, n - cut);
    free(buf);
}

/* 6 images of 2x3 (pixel = 10 * i + k) and labels i % 3. */
static void write_small(const char *images, const char *labels, int gz)
{
    uint32_t idims[3] = {6, 2, 3}, ldims[1] = {6};
    unsigned char px[36], lab[6];

    for (int i = 0; i < 6; i++) {
        for (int k = 0; k < 6; k++)
            px[6 * i + k] = (unsigned char)(10 * i + k);
        lab[i] = (unsigned char)(i % 3);
    }
    write_idx(images, gz, 0x08, 3, idims, px, sizeof px, 0);
    write_idx(labels, gz, 0x08, 1, ldims, lab, sizeof lab, 0);
}

static void check_small(popc_dataset *ds)
{
    int64_t idx[2] = {5, 1};
    float f[12];
    int32_t l[2];
    int rank;
    const int64_t *shape = popc_dataset_sample_shape(ds, &rank);

    ck_assert_int_eq(popc_dataset_size(ds), 6);
    ck_assert_int_eq(rank, 2);
    ck_assert_int_eq(shape[0], 2);
    ck_assert_int_eq(shape[1], 3);
    ck_assert_int_eq(popc_dataset_sample_numel(ds), 6);
    ck_assert(popc_dataset_has_labels(ds));
    ck_assert_int_eq(popc_dataset_label_count(ds), 3);
    OK(popc_dataset_gather(ds, idx, 2, f, l));
    for (int k = 0; k < 6; k++) {
        ck_assert_float_eq(f[k], (float)(50 + k) / 255.0f);
        ck_assert_float_eq(f[6 + k], (float)(10 + k) / 255.0f);
    }
    ck_assert_int_eq(l[0], 2);
    ck_assert_int_eq(l[1], 1);
}

START_TEST(idx_plain_and_gzip)
{
    for (int gz = 0; gz < 2; gz++) {
        popc_dataset *ds = NULL;
        const char *im = tmp(gz ? "im.gz" : "im.idx");
        const char *lb = tmp(gz ? "lb.gz" : "lb.idx");

        write_small(im, lb, gz);
        OK(popc_dataset_load_idx(im, lb, &ds));
        check_small(ds);
        ck_assert_ptr_nonnull(strstr(popc_dataset_source(ds), im));
        OK(popc_dataset_set_classes(ds, 3));
        popc_dataset_free(ds);
    }
}
END_TEST

START_TEST(idx_other_element_types)
{
    /* int16 big endian images are read as their values, not scaled */
    uint32_t dims[2] = {2, 2}, ldims[1] = {2};
    unsigned char px[8] = {0x01, 0x00, 0xff, 0xff, 0x00, 0x07, 0x80, 0x00};
    unsigned char lab[8] = {0, 0, 0, 1, 0, 0, 0, 0};
    popc_dataset *ds = NULL;
    int64_t idx[2] = {0, 1};
    float f[4];
    int32_t l[2];

    write_idx(tmp("i16"), 0, 0x0B, 2, dims, px, sizeof px, 0);
    write_idx(tmp("l32"), 0, 0x0C, 1, ldims, lab, sizeof lab, 0);
    OK(popc_dataset_load_idx(tmp("i16"), tmp("l32"), &ds));
    OK(popc_dataset_gather(ds, idx, 2, f, l));
    ck_assert_float_eq(f[0], 256.0f);
    ck_assert_float_eq(f[1], -1.0f);
    ck_assert_float_eq(f[2], 7.0f);
    ck_assert_float_eq(f[3], -32768.0f);
    ck_assert_int_eq(l[0], 1);
    ck_assert_int_eq(l[1], 0);
    popc_dataset_free(ds);
}
END_TEST

START_TEST(idx_unlabelled)
{
    popc_dataset *ds = NULL;

    write_small(tmp("im"), tmp("lb"), 0);
    OK(popc_dataset_load_idx(tmp("im"), NULL, &ds));
    ck_assert(!popc_dataset_has_labels(ds));
    expect(popc_dataset_set_classes(ds, 3), POPC_EINVAL, "no labels", NULL);
    popc_dataset_free(ds);
}
END_TEST

START_TEST(idx_truncated)
{
    uint32_t dims[3] = {6, 2, 3};
    unsigned char px[36] = {0};
    popc_dataset *ds = NULL;

    for (int gz = 0; gz < 2; gz++) {
        const char *p = tmp(gz ? "trunc.gz" : "trunc");

        write_idx(p, gz, 0x08, 3, dims, px, sizeof px, 5);
        expect(popc_dataset_load_idx(p, NULL, &ds), POPC_EIO, p,
               "truncated");
        ck_assert_ptr_null(ds);
    }
    /* a gzip stream cut in the middle */
    {
        const char *full = tmp("full.gz"), *cut = tmp("cut.gz");
        unsigned char big[4000];
        uint32_t bdims[2] = {40, 100};
        FILE *f;
        unsigned char buf[8192];
        size_t n;

        for (int i = 0; i < 4000; i++)
            big[i] = (unsigned char)(i * 7919 % 251);
        write_idx(full, 1, 0x08, 2, bdims, big, sizeof big, 0);
        f = fopen(full, "rb");
        n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        put_bytes(cut, 0, buf, n / 2);
        expect(popc_dataset_load_idx(cut, NULL, &ds), POPC_EIO, cut,
               "truncated");
    }
    /* a header claiming 2^36 bytes over a few: refused before allocating,
    ** plain or gzip (deflate expands at most 1032 times) */
    for (int gz = 0; gz < 2; gz++) {
        const char *p = tmp(gz ? "claim.gz" : "claim");
        uint32_t huge[3] = {65536, 65536, 16};

        write_idx(p, gz, 0x08, 3, huge, px, sizeof px, 0);
        expect(popc_dataset_load_idx(p, NULL, &ds), POPC_EIO, p,
               "declares 68719476736 bytes of data but the");
    }
    /* a header that ends early */
    put_bytes(tmp("tiny"), 0, "\0\0\x08", 3);
    expect(popc_dataset_load_idx(tmp("tiny"), NULL, &ds), POPC_EIO,
           tmp("tiny"), "truncated");
}
END_TEST

START_TEST(idx_wrong_magic)
{
    const char *html = "<!DOCTYPE html><html>not found</html>";
    uint32_t dims[2] = {1, 4};
    unsigned char px[4] = {0};
    popc_dataset *ds = NULL;

    put_bytes(tmp("page.gz"), 0, html, strlen(html));
    expect(popc_dataset_load_idx(tmp("page.gz"), NULL, &ds), POPC_EIO,
           tmp("page.gz"), "wrong magic");
    /* unknown element type 0x07 */
    write_idx(tmp("badtype"), 0, 0x07, 2, dims, px, sizeof px, 0);
    expect(popc_dataset_load_idx(tmp("badtype"), NULL, &ds), POPC_EIO,
           tmp("badtype"), "wrong magic");
    put_bytes(tmp("empty"), 0, "", 0);
    expect(popc_dataset_load_idx(tmp("empty"), NULL, &ds), POPC_EIO,
           tmp("empty"), NULL);
    expect(popc_dataset_load_idx(tmp("missing"), NULL, &ds), POPC_EIO,
           tmp("missing"), "cannot open");
}
END_TEST

START_TEST(idx_extra_data_and_swapped_files)
{
    uint32_t dims[2] = {2, 2};
    unsigned char px[5] = {1, 2, 3, 4, 5};
    popc_dataset *ds = NULL;

    /* header says 4 values, the file has 5 */
    write_idx(tmp("extra"), 0, 0x08, 2, dims, px, sizeof px, 0);
    expect(popc_dataset_load_idx(tmp("extra"), NULL, &ds), POPC_EIO,
           tmp("extra"), "extra data");
    write_small(tmp("im"), tmp("lb"), 1);
    expect(popc_dataset_load_idx(tmp("lb"), NULL, &ds), POPC_EIO,
           tmp("lb"), "labels file");
    expect(popc_dataset_load_idx(tmp("im"), tmp("im"), &ds), POPC_EIO,
           tmp("im"), "images file");
}
END_TEST

START_TEST(idx_count_mismatch)
{
    uint32_t ldims[1] = {5};
    unsigned char lab[5] = {0};
    popc_dataset *ds = NULL;

    write_small(tmp("im"), tmp("lb"), 0);
    write_idx(tmp("lb5"), 0, 0x08, 1, ldims, lab, sizeof lab, 0);
    expect(popc_dataset_load_idx(tmp("im"), tmp("lb5"), &ds), POPC_EIO,
           "6 samples", "5 labels");
    ck_assert_ptr_nonnull(strstr(popc_last_error(), tmp("lb5")));
    ck_assert_ptr_null(ds);
}
END_TEST

START_TEST(labels_out_of_range)
{
    popc_dataset *ds = NULL;

    write_small(tmp("im"), tmp("lb"), 0);
    OK(popc_dataset_load_idx(tmp("im"), tmp("lb"), &ds));
    /* labels are 0, 1, 2: sample 2 has label 2, outside 2 classes */
    expect(popc_dataset_set_classes(ds, 2), POPC_EINVAL, tmp("lb"),
           "label 2 of sample 2");
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "2 classes"));
    OK(popc_dataset_set_classes(ds, 3));
    popc_dataset_free(ds);
}
END_TEST

START_TEST(fashion_mnist_test_split)
{
    popc_dataset *ds = NULL;
    double mean, std;
    int64_t idx[1] = {0};
    float f[784];
    int32_t l;

    /* the data is a dependency (scripts/install-deps installs it), not an
    ** excuse to check nothing */
    ck_assert_msg(access(FMNIST "/t10k-images-idx3-ubyte.gz", R_OK) == 0,
                  "%s/t10k-images-idx3-ubyte.gz: cannot read it (%s); "
                  "install the Debian package dataset-fashion-mnist", FMNIST,
                  strerror(errno));
    OK(popc_dataset_load_idx(FMNIST "/t10k-images-idx3-ubyte.gz",
                             FMNIST "/t10k-labels-idx1-ubyte.gz", &ds));
    ck_assert_int_eq(popc_dataset_size(ds), 10000);
    ck_assert_int_eq(popc_dataset_sample_numel(ds), 784);
    ck_assert_int_eq(popc_dataset_label_count(ds), 10);
    OK(popc_dataset_set_classes(ds, 10));
    /* the first t10k sample is an ankle boot (class 9) */
    OK(popc_dataset_gather(ds, idx, 1, f, &l));
    ck_assert_int_eq(l, 9);
    popc_dataset_stats(ds, &mean, &std);
    /* torchvision's published t10k statistics */
    ck_assert_double_eq_tol(mean, 0.2868, 0.001);
    ck_assert_double_eq_tol(std, 0.3524, 0.001);
    popc_dataset_free(ds);
}
END_TEST

START_TEST(normalize_and_reshape)
{
    popc_dataset *ds = NULL;
    const int64_t chw[3] = {2, 1, 3}, bad[2] = {4, 2};
    const float mean1 = 0.5f, std1 = 0.25f;
    const float mean2[2] = {0.0f, 1.0f}, std2[2] = {1.0f, 2.0f};
    const float mean3[3] = {0, 0, 0}, std3[3] = {1, 1, 1};
    int64_t idx[1] = {1};
    float f[6];
    double m, s;

    write_small(tmp("im"), tmp("lb"), 0);
    OK(popc_dataset_load_idx(tmp("im"), tmp("lb"), &ds));
    expect(popc_dataset_set_sample_shape(ds, bad, 2), POPC_EINVAL, "[2, 3]",
           "[4, 2]");
    OK(popc_dataset_normalize(ds, &mean1, &std1, 1));
    OK(popc_dataset_gather(ds, idx, 1, f, NULL));
    for (int k = 0; k < 6; k++)
        ck_assert_float_eq(f[k], ((float)(10 + k) / 255.0f - 0.5f) / 0.25f);
    /* per channel: one value per first sample dimension */
    expect(popc_dataset_normalize(ds, mean3, std3, 3), POPC_EINVAL,
           "channels", NULL);
    OK(popc_dataset_set_sample_shape(ds, chw, 3));
    OK(popc_dataset_normalize(ds, mean2, std2, 2));
    OK(popc_dataset_gather(ds, idx, 1, f, NULL));
    for (int k = 0; k < 3; k++) {
        ck_assert_float_eq(f[k], (float)(10 + k) / 255.0f);
        ck_assert_float_eq(f[3 + k], ((float)(13 + k) / 255.0f - 1.0f) / 2.0f);
    }
    expect(popc_dataset_normalize(ds, mean2, (const float[]){1, 0}, 2),
           POPC_EINVAL, "std must be > 0", NULL);
    popc_dataset_stats(ds, &m, &s);
    ck_assert(m > 0.0 && s > 0.0);
    popc_dataset_free(ds);
}
END_TEST

START_TEST(npy_files)
{
    popc_tensor *f = NULL, *l = NULL;
    popc_dataset *ds = NULL;
    const int64_t fd[3] = {4, 2, 2}, ld[1] = {4};
    unsigned char *px;
    int64_t *lab, idx[1] = {3};
    float g[4];
    int32_t gl;

    OK(popc_tensor_new(POPC_DTYPE_U8, fd, 3, &f));
    OK(popc_tensor_new(POPC_DTYPE_I64, ld, 1, &l));
    px = popc_tensor_data(f);
    lab = popc_tensor_data(l);
    for (int i = 0; i < 16; i++)
        px[i] = (unsigned char)(i * 10);
    for (int i = 0; i < 4; i++)
        lab[i] = 3 - i;
    OK(popc_npy_save(tmp("x.npy"), f));
    OK(popc_npy_save(tmp("y.npy"), l));
    OK(popc_dataset_load_npy(tmp("x.npy"), tmp("y.npy"), &ds));
    ck_assert_int_eq(popc_dataset_size(ds), 4);
    OK(popc_dataset_gather(ds, idx, 1, g, &gl));
    ck_assert_float_eq(g[3], 150.0f / 255.0f);
    ck_assert_int_eq(gl, 0);
    popc_dataset_free(ds);
    /* labels for 3 samples only */
    popc_tensor_free(l);
    {
        const int64_t l3[1] = {3};

        OK(popc_tensor_new(POPC_DTYPE_I32, l3, 1, &l));
    }
    OK(popc_npy_save(tmp("y3.npy"), l));
    expect(popc_dataset_load_npy(tmp("x.npy"), tmp("y3.npy"), &ds), POPC_EIO,
           "4 samples", "3 labels");
    popc_tensor_free(f);
    popc_tensor_free(l);
}
END_TEST

static void write_text(const char *path, const char *text)
{
    put_bytes(path, 0, text, strlen(text));
}

START_TEST(csv_files)
{
    popc_dataset *ds = NULL;
    int64_t idx[2] = {0, 1};
    float f[4];
    int32_t l[2];

    write_text(tmp("h.csv"), "label,a,b\n1,0.5,2\n\n0, -1 ,3e1\r\n");
    OK(popc_dataset_load_csv(tmp("h.csv"), NULL, &ds));
    ck_assert_int_eq(popc_dataset_size(ds), 2);
    ck_assert_int_eq(popc_dataset_sample_numel(ds), 2);
    OK(popc_dataset_gather(ds, idx, 2, f, l));
    ck_assert_float_eq(f[0], 0.5f);
    ck_assert_float_eq(f[1], 2.0f);
    ck_assert_float_eq(f[2], -1.0f);
    ck_assert_float_eq(f[3], 30.0f);
    ck_assert_int_eq(l[0], 1);
    ck_assert_int_eq(l[1], 0);
    popc_dataset_free(ds);
    /* no header: label chosen by position */
    write_text(tmp("n.csv"), "1,2,7\n3,4,8\n");
    OK(popc_dataset_load_csv(tmp("n.csv"), "last", &ds));
    OK(popc_dataset_gather(ds, idx, 2, f, l));
    ck_assert_int_eq(l[1], 8);
    ck_assert_float_eq(f[3], 4.0f);
    popc_dataset_free(ds);
    OK(popc_dataset_load_csv(tmp("n.csv"), "none", &ds));
    ck_assert(!popc_dataset_has_labels(ds));
    ck_assert_int_eq(popc_dataset_sample_numel(ds), 3);
    popc_dataset_free(ds);
    OK(popc_dataset_load_csv(tmp("h.csv"), "b", &ds));
    popc_dataset_free(ds);
    expect(popc_dataset_load_csv(tmp("n.csv"), NULL, &ds), POPC_EINVAL,
           tmp("n.csv"), "label");
    expect(popc_dataset_load_csv(tmp("h.csv"), "c", &ds), POPC_EINVAL,
           "no column named 'c'", NULL);
    expect(popc_dataset_load_csv(tmp("h.csv"), "3", &ds), POPC_EINVAL,
           "outside 0..2", NULL);
}
END_TEST

START_TEST(csv_errors)
{
    popc_dataset *ds = NULL;
    char want[600];

    write_text(tmp("ragged.csv"), "label,a,b\n1,2,3\n1,2\n");
    snprintf(want, sizeof want, "%s:3:", tmp("ragged.csv"));
    expect(popc_dataset_load_csv(tmp("ragged.csv"), NULL, &ds), POPC_EIO,
           want, "2 fields");
    write_text(tmp("nan.csv"), "label,a,b\n1,2,3\n1,x2,3\n");
    snprintf(want, sizeof want, "%s:3:", tmp("nan.csv"));
    expect(popc_dataset_load_csv(tmp("nan.csv"), NULL, &ds), POPC_EIO, want,
           "column 2 ('a')");
    write_text(tmp("frac.csv"), "label,a\n1.5,2\n");
    expect(popc_dataset_load_csv(tmp("frac.csv"), NULL, &ds), POPC_EIO,
           "not a whole number", NULL);
    write_text(tmp("hdr.csv"), "label,a\n");
    expect(popc_dataset_load_csv(tmp("hdr.csv"), NULL, &ds), POPC_EIO,
           "no data rows", NULL);
    ck_assert_ptr_null(ds);
}
END_TEST

/* ---- loader ------------------------------------------------------------- */

/* n samples of 2 features; label = row, features = (row, -row). */
static popc_dataset *rows(int64_t n)
{
    const int64_t fd[2] = {n, 2}, ld[1] = {n};
    popc_tensor *f = NULL, *l = NULL;
    popc_dataset *ds = NULL;
    float *fp;
    int32_t *lp;

    OK(popc_tensor_new(POPC_DTYPE_F32, fd, 2, &f));
    OK(popc_tensor_new(POPC_DTYPE_I32, ld, 1, &l));
    fp = popc_tensor_data(f);
    lp = popc_tensor_data(l);
    for (int64_t i = 0; i < n; i++) {
        fp[2 * i] = (float)i;
        fp[2 * i + 1] = (float)-i;
        lp[i] = (int32_t)i;
    }
    OK(popc_dataset_from_tensors(f, l, &ds));
    popc_tensor_free(f);
    popc_tensor_free(l);
    return ds;
}

/* Rows of the next batch into out (returns n; 0 at the end of an epoch);
** also checks the features agree with the labels. */
static int64_t next_rows(popc_dataloader *dl, int32_t *out)
{
    popc_batch b;
    const float *f;
    const int32_t *l;

    OK(popc_dataloader_next(dl, &b));
    if (b.n == 0) {
        ck_assert_ptr_null(b.features);
        return 0;
    }
    /* n rows, or the full combined batch with pad_last */
    ck_assert_int_ge(popc_tensor_dims(b.features)[0], b.n);
    ck_assert_int_eq(popc_tensor_dims(b.labels)[0],
                     popc_tensor_dims(b.features)[0]);
    f = popc_tensor_cdata(b.features);
    l = popc_tensor_cdata(b.labels);
    for (int64_t i = 0; i < b.n; i++) {
        ck_assert_float_eq(f[2 * i], (float)l[i]);
        ck_assert_float_eq(f[2 * i + 1], (float)-l[i]);
        out[i] = l[i];
    }
    return b.n;
}

/* All rows of `epochs` epochs, with -1 after each epoch. */
static int64_t record(popc_dataloader *dl, int epochs, int32_t *out)
{
    int64_t k = 0, n;

    for (int e = 0; e < epochs; e++) {
        while ((n = next_rows(dl, out + k)) > 0)
            k += n;
        out[k++] = -1;
    }
    return k;
}

static popc_dataloader *loader(popc_dataset *ds, const popc_options *o,
                               const popc_loader_config *c)
{
    popc_dataloader *dl = NULL;

    OK(popc_dataloader_new(ds, o, c, &dl));
    return dl;
}

/* int32 and int64 features (token ids) reach every batch unchanged, sync
** and async; popc_dataset_cast_features converts them for a model of
** another input dtype, and refuses float features as ids. */
START_TEST(integer_features)
{
    const int64_t fd[2] = {6, 3};
    popc_tensor *f = NULL;
    popc_dataset *ds = NULL;
    popc_dataloader *dl = NULL;
    popc_loader_config c;
    popc_batch b;
    int64_t *ids, idx[1] = {5};
    float g[3];
    const float one = 1.0f;

    OK(popc_tensor_new(POPC_DTYPE_I64, fd, 2, &f));
    ids = popc_tensor_data(f);
    for (int i = 0; i < 18; i++)
        ids[i] = (int64_t)1 << 40 | i; /* not a float32 value */
    OK(popc_npy_save(tmp("ids.npy"), f));
    OK(popc_dataset_load_npy(tmp("ids.npy"), NULL, &ds));
    ck_assert_int_eq(popc_dataset_feature_dtype(ds), POPC_DTYPE_I64);
    popc_loader_config_init(&c);
    c.batch_size = 2;
    for (int mode = 0; mode < 2; mode++) {
        c.mode = mode ? POPC_LOADER_ASYNC : POPC_LOADER_SYNC;
        dl = loader(ds, NULL, &c);
        OK(popc_dataloader_next(dl, &b));
        ck_assert_int_eq(popc_tensor_dtype(b.features), POPC_DTYPE_I64);
        ck_assert_int_eq(memcmp(popc_tensor_cdata(b.features), ids,
                                6 * sizeof *ids), 0);
        popc_dataloader_free(dl);
    }
    /* int32 for an int32 input; values outside int32 are named */
    expect(popc_dataset_cast_features(ds, POPC_DTYPE_I32), POPC_EINVAL,
           "outside int32", "sample 0");
    popc_dataset_free(ds);
    for (int i = 0; i < 18; i++)
        ids[i] = 17 - i;
    OK(popc_dataset_from_tensors(f, NULL, &ds));
    OK(popc_dataset_cast_features(ds, POPC_DTYPE_I32));
    ck_assert_int_eq(popc_dataset_feature_dtype(ds), POPC_DTYPE_I32);
    dl = loader(ds, NULL, &c);
    OK(popc_dataloader_next(dl, &b));
    ck_assert_int_eq(popc_tensor_dtype(b.features), POPC_DTYPE_I32);
    ck_assert_int_eq(((const int32_t *)popc_tensor_cdata(b.features))[4], 13);
    popc_dataloader_free(dl);
    /* the float gather converts; a float32 model gets float32 batches */
    OK(popc_dataset_gather(ds, idx, 1, g, NULL));
    ck_assert_float_eq(g[2], 0.0f);
    OK(popc_dataset_cast_features(ds, POPC_DTYPE_F32));
    ck_assert_int_eq(popc_dataset_feature_dtype(ds), POPC_DTYPE_F32);
    expect(popc_dataset_cast_features(ds, POPC_DTYPE_I64), POPC_EINVAL,
           "not integers", "np.int64");
    popc_dataset_free(ds);
    /* normalised ids are float32 */
    OK(popc_dataset_from_tensors(f, NULL, &ds));
    OK(popc_dataset_normalize(ds, &one, &one, 1));
    ck_assert_int_eq(popc_dataset_feature_dtype(ds), POPC_DTYPE_F32);
    popc_dataset_free(ds);
    popc_tensor_free(f);
}
END_TEST

START_TEST(sequential_and_drop_last)
{
    popc_dataset *ds = rows(10);
    popc_loader_config c;
    popc_dataloader *dl;
    int32_t got[64];

    popc_loader_config_init(&c);
    c.batch_size = 3;
    dl = loader(ds, NULL, &c);
    ck_assert_int_eq(popc_dataloader_combined_batch_size(dl), 3);
    ck_assert_int_eq(popc_dataloader_len(dl), 3);
    ck_assert_int_eq(popc_dataloader_samples_per_epoch(dl), 9);
    ck_assert_int_eq(record(dl, 1, got), 10);
    for (int i = 0; i < 9; i++)
        ck_assert_int_eq(got[i], i);
    ck_assert_int_eq(got[9], -1);
    popc_dataloader_free(dl);

    c.drop_last = 0;
    dl = loader(ds, NULL, &c);
    ck_assert_int_eq(popc_dataloader_len(dl), 4);
    ck_assert_int_eq(popc_dataloader_samples_per_epoch(dl), 10);
    ck_assert_int_eq(next_rows(dl, got), 3);
    ck_assert_int_eq(next_rows(dl, got), 3);
    ck_assert_int_eq(next_rows(dl, got), 3);
    ck_assert_int_eq(next_rows(dl, got), 1);
    ck_assert_int_eq(got[0], 9);
    ck_assert_int_eq(next_rows(dl, got), 0);
    /* the next epoch starts again with full batches */
    ck_assert_int_eq(next_rows(dl, got), 3);
    ck_assert_int_eq(got[0], 0);
    popc_dataloader_free(dl);
    popc_dataset_free(ds);
}
END_TEST

START_TEST(pad_last_keeps_the_shape)
{
    popc_dataset *ds = rows(10);
    popc_loader_config c;
    popc_dataloader *dl;
    popc_batch b;
    const int32_t *l;

    popc_loader_config_init(&c);
    c.batch_size = 4;
    c.pad_last = 1;
    ck_assert_int_eq(popc_dataloader_new(ds, NULL, &c, &dl), POPC_EINVAL);
    c.drop_last = 0;
    for (int mode = 0; mode < 2; mode++) {
        c.mode = mode ? POPC_LOADER_ASYNC : POPC_LOADER_SYNC;
        dl = loader(ds, NULL, &c);
        OK(popc_dataloader_next(dl, &b));
        OK(popc_dataloader_next(dl, &b));
        OK(popc_dataloader_next(dl, &b));
        ck_assert_int_eq(b.n, 2);
        ck_assert_int_eq(popc_tensor_dims(b.features)[0], 4);
        ck_assert_int_eq(popc_tensor_dims(b.labels)[0], 4);
        l = popc_tensor_cdata(b.labels);
        ck_assert_int_eq(l[0], 8);
        ck_assert_int_eq(l[1], 9);
        ck_assert_int_eq(l[2], 9);
        ck_assert_int_eq(l[3], 9);
        OK(popc_dataloader_next(dl, &b));
        ck_assert_int_eq(b.n, 0);
        popc_dataloader_free(dl);
    }
    popc_dataset_free(ds);
}
END_TEST

static char warned[1024];

static void capture(int level, const char *msg, void *user)
{
    (void)user;
    if (level == POPC_LOG_WARN)
        snprintf(warned, sizeof warned, "%s", msg);
}

START_TEST(drop_last_false_warns_like_poptorch)
{
    popc_dataset *ds = rows(10);
    popc_loader_config c;
    popc_dataloader *dl;

    popc_log_set_callback(capture, NULL);
    popc_loader_config_init(&c);
    c.batch_size = 4;
    warned[0] = '\0';
    dl = loader(ds, NULL, &c);
    ck_assert_str_eq(warned, "");
    popc_dataloader_free(dl);
    c.drop_last = 0;
    dl = loader(ds, NULL, &c);
    ck_assert_msg(strstr(warned, "The number of elements in the dataset (10) "
                                 "is not divisible by the number of elements "
                                 "processed per step (4) and drop_last=False"),
                  "%s", warned);
    ck_assert_ptr_nonnull(strstr(warned, "batch size of 2"));
    popc_dataloader_free(dl);
    popc_log_set_callback(NULL, NULL);
    popc_dataset_free(ds);
}
END_TEST

START_TEST(combined_batch_from_options)
{
    popc_dataset *ds = rows(200);
    popc_options *o = NULL;
    popc_loader_config c;
    popc_dataloader *dl;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "deviceIterations", "2"));
    OK(popc_options_set(o, "replicationFactor", "2"));
    OK(popc_options_set(o, "Training.gradientAccumulation", "3"));
    popc_loader_config_init(&c);
    c.batch_size = 4;
    dl = loader(ds, o, &c);
    ck_assert_int_eq(popc_dataloader_combined_batch_size(dl), 4 * 2 * 2 * 3);
    ck_assert_int_eq(popc_dataloader_len(dl), 200 / 48);
    popc_dataloader_free(dl);
    c.batch_size = 0;
    expect(popc_dataloader_new(ds, o, &c, &dl), POPC_EINVAL, "batch_size",
           NULL);
    ck_assert_ptr_null(dl);
    c.batch_size = 100;
    expect(popc_dataloader_new(ds, o, &c, &dl), POPC_EINVAL, "1200",
           "drop_last");
    popc_options_free(o);
    popc_dataset_free(ds);
}
END_TEST

static int is_permutation(const int32_t *v, int64_t n)
{
    char seen[4096] = {0};

    for (int64_t i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] >= n || seen[v[i]])
            return 0;
        seen[v[i]] = 1;
    }
    return 1;
}

START_TEST(shuffle_is_reproducible)
{
    popc_dataset *ds = rows(100);
    popc_loader_config c;
    popc_dataloader *a, *b;
    int32_t ra[512], rb[512];
    int64_t n;

    popc_loader_config_init(&c);
    c.batch_size = 10;
    c.shuffle = 1;
    c.seed = 42;
    a = loader(ds, NULL, &c);
    b = loader(ds, NULL, &c);
    n = record(a, 3, ra);
    ck_assert_int_eq(n, 303);
    ck_assert_int_eq(record(b, 3, rb), n);
    ck_assert_mem_eq(ra, rb, (size_t)n * sizeof *ra);
    /* every epoch is a permutation, and epochs differ */
    for (int e = 0; e < 3; e++)
        ck_assert(is_permutation(ra + 101 * e, 100));
    ck_assert(memcmp(ra, ra + 101, 100 * sizeof *ra) != 0);
    ck_assert(memcmp(ra + 101, ra + 202, 100 * sizeof *ra) != 0);
    popc_dataloader_free(b);
    /* another seed, another order */
    c.seed = 43;
    b = loader(ds, NULL, &c);
    record(b, 1, rb);
    ck_assert(memcmp(ra, rb, 100 * sizeof *ra) != 0);
    popc_dataloader_free(a);
    popc_dataloader_free(b);
    popc_dataset_free(ds);
}
END_TEST

/* Async delivers exactly the sync batches, epoch ends included. */
START_TEST(async_equals_sync)
{
    popc_dataset *ds = rows(103);
    popc_loader_config c;
    static int32_t want[2048], got[2048];

    for (int shuffle = 0; shuffle < 2; shuffle++)
        for (int drop = 0; drop < 2; drop++) {
            popc_dataloader *s;
            int64_t n;

            popc_loader_config_init(&c);
            c.batch_size = 8;
            c.shuffle = shuffle;
            c.seed = 7;
            c.drop_last = drop;
            c.pad_last = !drop && shuffle;
            s = loader(ds, NULL, &c);
            n = record(s, 4, want);
            popc_dataloader_free(s);
            for (int v = 0; v < 8; v++) {
                popc_dataloader *a;

                c.mode = v % 2 ? POPC_LOADER_ASYNC_REBATCHED
                               : POPC_LOADER_ASYNC;
                c.workers = 1 + v % 3;
                c.buffer_size = 1 + v % 4;
                c.load_indefinitely = v / 4;
                c.early_preload = v % 3 == 0;
                c.rebatched_worker_size = v % 2 ? 3 : 0;
                a = loader(ds, NULL, &c);
                ck_assert_int_eq(record(a, 4, got), n);
                ck_assert_msg(memcmp(want, got, (size_t)n * sizeof *got) == 0,
                              "variant %d shuffle %d drop %d differs", v,
                              shuffle, drop);
                popc_dataloader_free(a);
            }
        }
    popc_dataset_free(ds);
}
END_TEST

START_TEST(async_free_mid_epoch)
{
    popc_dataset *ds = rows(1000);
    popc_loader_config c;
    int32_t got[16];

    popc_loader_config_init(&c);
    c.batch_size = 16;
    c.mode = POPC_LOADER_ASYNC;
    c.workers = 4;
    c.buffer_size = 8;
    c.early_preload = 1;
    for (int i = 0; i < 20; i++) {
        popc_dataloader *dl = loader(ds, NULL, &c);

        for (int k = 0; k < i % 5; k++)
            ck_assert_int_eq(next_rows(dl, got), 16);
        popc_dataloader_free(dl);
    }
    popc_dataset_free(ds);
}
END_TEST

START_TEST(async_settings_validated)
{
    popc_dataset *ds = rows(100);
    popc_loader_config c;
    popc_dataloader *dl = NULL;

    popc_loader_config_init(&c);
    c.batch_size = 10;
    c.mode = POPC_LOADER_ASYNC_REBATCHED;
    c.rebatched_worker_size = 11;
    expect(popc_dataloader_new(ds, NULL, &c, &dl), POPC_EINVAL,
           "rebatched_worker_size (11) must be <= to the combined batch size "
           "(10)",
           NULL);
    c.rebatched_worker_size = 0;
    c.workers = 0;
    expect(popc_dataloader_new(ds, NULL, &c, &dl), POPC_EINVAL, "workers",
           NULL);
    c.workers = 1;
    c.buffer_size = 0;
    expect(popc_dataloader_new(ds, NULL, &c, &dl), POPC_EINVAL,
           "buffer_size", NULL);
    c.mode = POPC_LOADER_ASYNC;
    c.buffer_size = 2;
    c.rebatched_worker_size = 5;
    expect(popc_dataloader_new(ds, NULL, &c, &dl), POPC_EINVAL,
           "AsyncRebatched", NULL);
    ck_assert_ptr_null(dl);
    popc_dataset_free(ds);
}
END_TEST

static popc_options *process(int id, int count)
{
    popc_options *o = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set_int(o, "Distributed.numProcesses", count));
    OK(popc_options_set_int(o, "Distributed.processId", id));
    return o;
}

/* Every process's rows for one epoch; checks disjoint and, when
** complete, that they cover the dataset. */
static void check_shares(int64_t n, int procs, int64_t batch, int shuffle,
                         int drop)
{
    popc_dataset *ds = rows(n);
    popc_loader_config c;
    char owner[4096];
    int64_t total = 0, first_len = -1;

    memset(owner, -1, sizeof owner);
    popc_loader_config_init(&c);
    c.batch_size = batch;
    c.shuffle = shuffle;
    c.seed = 3;
    c.drop_last = drop;
    for (int p = 0; p < procs; p++) {
        popc_options *o = process(p, procs);
        popc_dataloader *dl = loader(ds, o, &c);
        int32_t got[4096];
        int64_t k = record(dl, 1, got) - 1;

        if (drop) {
            /* every process runs the same number of steps */
            if (first_len < 0)
                first_len = popc_dataloader_len(dl);
            ck_assert_int_eq(popc_dataloader_len(dl), first_len);
        }
        for (int64_t i = 0; i < k; i++) {
            ck_assert_msg(owner[got[i]] == -1,
                          "row %d given to processes %d and %d", got[i],
                          owner[got[i]], p);
            owner[got[i]] = (char)p;
        }
        total += k;
        popc_dataloader_free(dl);
        popc_options_free(o);
    }
    if (!drop)
        ck_assert_int_eq(total, n);
    else
        ck_assert_int_eq(total, procs * first_len * batch);
    popc_dataset_free(ds);
}

START_TEST(distributed_shares)
{
    /* without auto partitioning every process reads everything */
    {
        popc_dataset *ds = rows(12);
        popc_options *o = process(1, 3);
        popc_loader_config c;
        popc_dataloader *dl;

        popc_loader_config_init(&c);
        c.batch_size = 4;
        c.auto_distributed_partitioning = 0;
        dl = loader(ds, o, &c);
        ck_assert_int_eq(popc_dataloader_len(dl), 3);
        popc_dataloader_free(dl);
        c.auto_distributed_partitioning = 1;
        dl = loader(ds, o, &c);
        ck_assert_int_eq(popc_dataloader_len(dl), 1);
        popc_dataloader_free(dl);
        popc_options_free(o);
        popc_dataset_free(ds);
    }
    check_shares(100, 3, 4, 0, 0);
    check_shares(100, 3, 4, 1, 0);
    check_shares(101, 4, 5, 1, 1);
    check_shares(101, 4, 5, 0, 1);
    check_shares(7, 7, 1, 1, 0);
}
END_TEST

START_TEST(distributed_shuffle_uses_every_row)
{
    /* with drop_last the leftovers alternate in on every other epoch */
    popc_dataset *ds = rows(26);
    popc_loader_config c;
    char seen[26] = {0};

    popc_loader_config_init(&c);
    c.batch_size = 4;
    c.shuffle = 1;
    c.seed = 11;
    for (int p = 0; p < 2; p++) {
        popc_options *o = process(p, 2);
        popc_dataloader *dl = loader(ds, o, &c);
        int32_t got[128];
        int64_t k = record(dl, 2, got);

        for (int64_t i = 0; i < k; i++)
            if (got[i] >= 0)
                seen[got[i]] = 1;
        popc_dataloader_free(dl);
        popc_options_free(o);
    }
    for (int i = 0; i < 26; i++)
        ck_assert_msg(seen[i], "row %d never used in two epochs", i);
    popc_dataset_free(ds);
}
END_TEST

/* A loader of process `id` of `procs` with R replicas (R = 4 / procs),
** 2 device iterations, gradient accumulation 2 and micro-batch 2. */
static popc_dataloader *global_loader(popc_dataset *ds, int id, int procs,
                                      int global, int drop)
{
    popc_options *o = process(id, procs);
    popc_loader_config c;
    popc_dataloader *dl;

    OK(popc_options_set_int(o, "replicationFactor", 4 / procs));
    OK(popc_options_set_int(o, "deviceIterations", 2));
    OK(popc_options_set_int(o, "Training.gradientAccumulation", 2));
    popc_loader_config_init(&c);
    c.batch_size = 2;
    c.shuffle = 1;
    c.seed = 5;
    c.drop_last = drop;
    c.global_batches = global;
    dl = loader(ds, o, &c);
    popc_options_free(o);
    return dl;
}

/* Global batches: with N processes of 4 / N replicas, the rows process k
** gets at row i of a combined batch are, in one process with 4 replicas,
** at row (i / run) x N x run + k x run + i % run (run = replicas x
** micro-batch): the host layout [deviceIterations][gradientAccumulation]
** [replica][micro-batch]. Three shuffled epochs of 100 rows (3 global
** batches of 32, 4 rows dropped). */
START_TEST(distributed_global_batches)
{
    popc_dataset *ds = rows(100);
    popc_dataloader *one = global_loader(ds, 0, 1, 1, 1);
    static int32_t ref[512], got[4][512];
    int64_t n_ref = record(one, 3, ref);

    ck_assert_int_eq(n_ref, 3 * (3 * 32 + 1));
    popc_dataloader_free(one);
    for (int procs = 2; procs <= 4; procs *= 2) {
        int64_t run = 2 * (4 / procs), combined = 32 / procs;

        for (int k = 0; k < procs; k++) {
            popc_dataloader *dl = global_loader(ds, k, procs, 1, 1);

            ck_assert_int_eq(popc_dataloader_len(dl), 3);
            ck_assert_int_eq(record(dl, 3, got[k]), 3 * (3 * combined + 1));
            popc_dataloader_free(dl);
        }
        for (int64_t e = 0; e < 3; e++)
            for (int64_t b = 0; b < 3; b++)
                for (int k = 0; k < procs; k++)
                    for (int64_t i = 0; i < combined; i++) {
                        int64_t at = (i / run) * procs * run + k * run +
                                     i % run;

                        ck_assert_int_eq(
                            got[k][e * (3 * combined + 1) + b * combined + i],
                            ref[e * 97 + b * 32 + at]);
                    }
    }
    /* PopTorch's blocks read other batches: process 0's first batch is
    ** the start of the order, not the rows of its replicas */
    {
        popc_dataloader *dl = global_loader(ds, 1, 2, 0, 1);

        ck_assert_int_eq(record(dl, 1, got[0]), 3 * 16 + 1);
        ck_assert_int_ne(got[0][0], ref[4]);
        popc_dataloader_free(dl);
    }
    /* without drop_last the dataset must hold whole global batches */
    {
        popc_dataloader *dl = NULL;
        popc_options *o = process(0, 2);
        popc_loader_config c;

        OK(popc_options_set_int(o, "replicationFactor", 2));
        popc_loader_config_init(&c);
        c.batch_size = 2;
        c.drop_last = 0;
        c.global_batches = 1;
        ck_assert_int_eq(popc_dataloader_new(ds, o, &c, &dl), POPC_EINVAL);
        ck_assert_str_eq(popc_last_error(),
                         "data loader: global batches with drop_last = false "
                         "need the dataset's 100 samples to be a multiple of "
                         "the global batch, 8 (combined batch 4 x 2 "
                         "processes); set drop_last or change the batch size");
        popc_options_free(o);
    }
    popc_dataset_free(ds);
}
END_TEST

/* Reading the position mid-run and restoring it in a fresh loader gives
** the same remaining batches, in both modes. */
START_TEST(position_resumes_exactly)
{
    popc_dataset *ds = rows(50);
    popc_loader_config c;
    static int32_t full[1024], tail[1024];

    for (int mode = 0; mode < 2; mode++) {
        popc_dataloader *a, *b;
        popc_data_position pos;
        int64_t n, k = 0, m;
        int32_t tmpb[8];

        popc_loader_config_init(&c);
        c.batch_size = 8;
        c.shuffle = 1;
        c.seed = 5;
        c.drop_last = 0;
        c.mode = mode ? POPC_LOADER_ASYNC : POPC_LOADER_SYNC;
        c.workers = 2;
        a = loader(ds, NULL, &c);
        n = record(a, 3, full);
        popc_dataloader_free(a);
        /* consume 1 epoch and 3 batches, then save the position */
        a = loader(ds, NULL, &c);
        for (int i = 0; i < 8 + 3; i++)
            k += (m = next_rows(a, tmpb)) ? m : 1;
        pos = popc_dataloader_position(a);
        ck_assert_int_eq(pos.epoch, 1);
        ck_assert_int_eq(pos.batch, 3);
        popc_dataloader_free(a);
        b = loader(ds, NULL, &c);
        OK(popc_dataloader_set_position(b, &pos));
        m = record(b, 2, tail);
        ck_assert_int_eq(k + m, n);
        ck_assert_mem_eq(full + k, tail, (size_t)m * sizeof *tail);
        /* seeking back to the start replays epoch 0 */
        pos.epoch = 0;
        pos.batch = 0;
        pos.rng = popc_data_rng_from_seed(5);
        OK(popc_dataloader_set_position(b, &pos));
        m = record(b, 1, tail);
        ck_assert_mem_eq(full, tail, (size_t)m * sizeof *tail);
        pos.batch = 99;
        expect(popc_dataloader_set_position(b, &pos), POPC_EINVAL, "batch 99",
               NULL);
        popc_dataloader_free(b);
    }
    popc_dataset_free(ds);
}
END_TEST

static Suite *data_suite(void)
{
    Suite *s = suite_create("data");
    TCase *files = tcase_create("files");
    TCase *load = tcase_create("loader");

    tcase_add_checked_fixture(files, setup, teardown);
    tcase_add_test(files, idx_plain_and_gzip);
    tcase_add_test(files, idx_other_element_types);
    tcase_add_test(files, idx_unlabelled);
    tcase_add_test(files, idx_truncated);
    tcase_add_test(files, idx_wrong_magic);
    tcase_add_test(files, idx_extra_data_and_swapped_files);
    tcase_add_test(files, idx_count_mismatch);
    tcase_add_test(files, labels_out_of_range);
    tcase_add_test(files, fashion_mnist_test_split);
    tcase_add_test(files, normalize_and_reshape);
    tcase_add_test(files, npy_files);
    tcase_add_test(files, integer_features);
    tcase_add_test(files, csv_files);
    tcase_add_test(files, csv_errors);
    tcase_set_timeout(files, 60);
    suite_add_tcase(s, files);

    tcase_add_test(load, sequential_and_drop_last);
    tcase_add_test(load, pad_last_keeps_the_shape);
    tcase_add_test(load, drop_last_false_warns_like_poptorch);
    tcase_add_test(load, combined_batch_from_options);
    tcase_add_test(load, shuffle_is_reproducible);
    tcase_add_test(load, async_equals_sync);
    tcase_add_test(load, async_free_mid_epoch);
    tcase_add_test(load, async_settings_validated);
    tcase_add_test(load, distributed_shares);
    tcase_add_test(load, distributed_shuffle_uses_every_row);
    tcase_add_test(load, distributed_global_batches);
    tcase_add_test(load, position_resumes_exactly);
    tcase_set_timeout(load, 60);
    suite_add_tcase(s, load);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(data_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
