/* gemm_roof.c - the GEMM roof: OpenBLAS sgemm GFLOP/s at given shapes.
**
**   gemm_roof [--threads N] [--seconds S] M,N,K [M,N,K ...]
**   gemm_roof [--threads N] --model NAME
**
** Times C = A B (row-major, no transposes, beta 0) for each M x K by
** K x N shape for about S seconds (default 0.3) after one warm-up call
** and prints the median GFLOP/s of the timed batches, one line per
** shape, then the flop-weighted mean of the shapes: the rate a model
** whose work is those GEMMs could reach if nothing else took time. N
** threads (default 1) is OpenBLAS's own threading; popc's ipumodel runs
** one-threaded OpenBLAS calls on each worker, so its roof on W workers
** is W times the one-thread figure.
**
** --model names a shape set of bench/README.md's models: the im2col GEMMs
** of the 3x3 and 1x1 convolutions of ResNet-18 at 64x64 (one image per
** call, as popc's im2col path runs them), the projections of the
** transformer (d 256, ff 2048, 16 x 128 tokens), the LSTM's gate GEMMs
** (batch 32, hidden 256) and the Fashion-MNIST MLP (784-512-512-10,
** batch 64 and 100).
*/
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct shape {
    int m, n, k;
} shape;

static const shape resnet18[] = {
    {64, 1024, 147}, {64, 256, 576}, {128, 64, 576}, {128, 64, 1152},
    {128, 64, 64}, {256, 16, 1152}, {256, 16, 2304}, {256, 16, 128},
    {512, 4, 2304}, {512, 4, 4608}, {512, 4, 256}, {0, 0, 0}};
static const shape transformer[] = {
    {2048, 768, 256}, {2048, 256, 256}, {2048, 2048, 256},
    {2048, 256, 2048}, {128, 128, 64}, {0, 0, 0}};
static const shape lstm[] = {
    {32, 1024, 64}, {32, 1024, 256}, {2048, 1024, 256}, {0, 0, 0}};
static const shape mlp[] = {
    {64, 512, 784}, {64, 512, 512}, {64, 10, 512}, {100, 512, 784},
    {100, 512, 512}, {100, 10, 512}, {0, 0, 0}};

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

#define BATCHES 9

/* Median GFLOP/s of BATCHES batches of calls, about `seconds` in all. */
static double rate(const shape *s, double seconds)
{
    size_t na = (size_t)s->m * (size_t)s->k, nb = (size_t)s->k * (size_t)s->n;
    size_t nc = (size_t)s->m * (size_t)s->n;
    float *a = malloc(sizeof *a * na), *b = malloc(sizeof *b * nb);
    float *c = malloc(sizeof *c * nc);
    double flops = 2.0 * s->m * s->n * s->k, r[BATCHES], t0, per;
    long calls;

    if (!a || !b || !c) {
        fprintf(stderr, "gemm_roof: out of memory for %dx%dx%d\n", s->m,
                s->n, s->k);
        exit(1);
    }
    for (size_t i = 0; i < na; i++)
        a[i] = (float)(i % 7) * 0.1f;
    for (size_t i = 0; i < nb; i++)
        b[i] = (float)(i % 5) * 0.1f;
    t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->m, s->n, s->k,
                1.0f, a, s->k, b, s->n, 0.0f, c, s->n);
    per = now() - t0;
    calls = (long)(seconds / BATCHES / (per > 1e-7 ? per : 1e-7));
    if (calls < 1)
        calls = 1;
    for (int i = 0; i < BATCHES; i++) {
        t0 = now();
        for (long j = 0; j < calls; j++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->m,
                        s->n, s->k, 1.0f, a, s->k, b, s->n, 0.0f, c, s->n);
        r[i] = flops * (double)calls / (now() - t0) / 1e9;
    }
    qsort(r, BATCHES, sizeof r[0], cmp_double);
    free(a);
    free(b);
    free(c);
    return r[BATCHES / 2];
}

static int usage(void)
{
    fprintf(stderr, "usage: gemm_roof [--threads N] [--seconds S] "
                    "(M,N,K ... | --model resnet18|transformer|lstm|mlp)\n");
    return 2;
}

int main(int argc, char **argv)
{
    shape given[64];
    const shape *set = given;
    int n = 0, threads = 1;
    double seconds = 0.3, flops = 0.0, time = 0.0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--model") && i + 1 < argc) {
            const char *m = argv[++i];

            set = !strcmp(m, "resnet18")      ? resnet18
                  : !strcmp(m, "transformer") ? transformer
                  : !strcmp(m, "lstm")        ? lstm
                  : !strcmp(m, "mlp")         ? mlp
                                              : NULL;
            if (!set) {
                fprintf(stderr, "gemm_roof: unknown model '%s'\n", m);
                return usage();
            }
        } else if (n < 63 && sscanf(argv[i], "%d,%d,%d", &given[n].m,
                                    &given[n].n, &given[n].k) == 3 &&
                   given[n].m > 0 && given[n].n > 0 && given[n].k > 0) {
            n++;
        } else {
            fprintf(stderr, "gemm_roof: bad argument '%s' (shapes are "
                            "M,N,K with positive sizes)\n", argv[i]);
            return usage();
        }
    }
    given[n] = (shape){0, 0, 0};
    if (threads < 1 || seconds <= 0.0 || !set[0].m)
        return usage();
    openblas_set_num_threads(threads);
    printf("%6s %6s %6s %10s   (OpenBLAS threads %d)\n", "M", "N", "K",
           "GFLOP/s", threads);
    for (const shape *s = set; s->m; s++) {
        double g = rate(s, seconds), f = 2.0 * s->m * s->n * s->k;

        printf("%6d %6d %6d %10.1f\n", s->m, s->n, s->k, g);
        flops += f;
        time += f / g;
    }
    printf("flop-weighted: %.1f GFLOP/s\n", flops / time);
    return 0;
}
