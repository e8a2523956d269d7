/* synth.c - see synth.h. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tests/synth.h"

static unsigned next(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static int put(const char *dir, const char *name, const unsigned char *buf,
               size_t n, int gz)
{
    char path[4096];
    int ok;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (gz) {
        gzFile f = gzopen(path, "wb");

        if (!f)
            return -1;
        ok = gzwrite(f, buf, (unsigned)n) == (int)n;
        return gzclose(f) == Z_OK && ok ? 0 : -1;
    } else {
        FILE *f = fopen(path, "wb");

        if (!f)
            return -1;
        ok = fwrite(buf, 1, n, f) == n;
        return fclose(f) == 0 && ok ? 0 : -1;
    }
}

static void header(unsigned char *p, int type, int ndims, const int *dims)
{
    p[0] = 0;
    p[1] = 0;
    p[2] = (unsigned char)type;
    p[3] = (unsigned char)ndims;
    for (int i = 0; i < ndims; i++) {
        p[4 + 4 * i] = (unsigned char)(dims[i] >> 24);
        p[5 + 4 * i] = (unsigned char)(dims[i] >> 16);
        p[6 + 4 * i] = (unsigned char)(dims[i] >> 8);
        p[7 + 4 * i] = (unsigned char)dims[i];
    }
}

static int split(const char *dir, const char *images, const char *labels,
                 int n, unsigned *s, int gz)
{
    const int side = SYNTH_SIDE, half = SYNTH_SIDE / 2;
    int idims[3] = {n, side, side}, ldims[1] = {n};
    size_t ibytes = 16 + (size_t)n * side * side, lbytes = 8 + (size_t)n;
    unsigned char *im = malloc(ibytes), *lb = malloc(lbytes);
    int rc = -1;

    if (!im || !lb)
        goto done;
    header(im, 0x08, 3, idims);
    header(lb, 0x08, 1, ldims);
    for (int i = 0; i < n; i++) {
        int k = (int)(next(s) % SYNTH_CLASSES);
        unsigned char *px = im + 16 + (size_t)i * side * side;

        lb[8 + i] = (unsigned char)k;
        for (int y = 0; y < side; y++)
            for (int x = 0; x < side; x++) {
                int q = (y >= half) * 2 + (x >= half);
                unsigned v = next(s) % 80;

                px[y * side + x] = (unsigned char)(q == k ? 140 + v : v);
            }
    }
    rc = put(dir, images, im, ibytes, gz) || put(dir, labels, lb, lbytes, 0)
             ? -1
             : 0;
done:
    free(im);
    free(lb);
    return rc;
}

int synth_write(const char *dir, int n_train, int n_test, unsigned seed)
{
    unsigned s = seed * 2654435761u + 1;

    if (split(dir, SYNTH_TRAIN_IMAGES, SYNTH_TRAIN_LABELS, n_train, &s, 0))
        return -1;
    return split(dir, SYNTH_TEST_IMAGES, SYNTH_TEST_LABELS, n_test, &s, 1);
}
