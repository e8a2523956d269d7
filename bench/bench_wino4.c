/* bench_wino4.c - Winograd F(4x4, 3x3) (ops/nn/winograd4.c) against
** F(2x2, 3x3) (ops/nn/winograd.c) on the 3x3, stride-1 convolutions of
** ResNet-18, one thread, the kernels called directly:
**
**   bench_wino4 [REPEATS [IMAGES [C HW]]]
**
** For each shape (channels C = M, output plane HxW, pad 1) it prints the
** CPU time per image of the forward convolution (which is also
** ConvGradInput's, on the transposed weights) and of the weight gradient,
** with the weight transform counted once per IMAGES images (default 16:
** a batch of 32 over two workers), the best of REPEATS (default 5), and
** the F(2x2)/F(4x4) ratio (above 1: F(4x4) is faster). The figures set
** the thresholds of ops/nn/winograd4_fits.c. C and HW time that one
** shape instead of ResNet-18's (for a profile).
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "ops/nn/nn_priv.h"
#include "ops/nn/winograd4.h"

static double cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static float *randoms(int64_t n, unsigned seed)
{
    float *a = malloc(sizeof *a * (size_t)(n > 0 ? n : 1));

    srand(seed);
    for (int64_t i = 0; a && i < n; i++)
        a[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    return a;
}

typedef struct shape {
    int64_t C, HW;
} shape;

/* ms per image: forward (fw) and weight gradient (gw) of F(2x2), F(4x4) */
static void time_shape(const shape *s, int reps, int images, double t[4])
{
    int64_t C = s->C, H = s->HW, W = s->HW;
    float *x = randoms(images * C * H * W, 1);
    float *y = randoms(images * C * H * W, 2);
    float *w = randoms(C * C * 9, 3), *dw = randoms(C * C * 9, 4);
    nn_wino g2;
    nn_wino4 g4;
    float *s2, *s4, *t2, *t4;
    int64_t plane = C * H * W;

    nn_wino_plan(C, C, H, W, H, W, 1, 1, &g2);
    nn_wino4_plan(C, C, H, W, H, W, 1, 1, &g4);
    s2 = calloc((size_t)nn_wino_scratch(&g2), sizeof *s2);
    s4 = calloc((size_t)nn_wino4_scratch(&g4), sizeof *s4);
    t2 = calloc((size_t)nn_wino_grad_scratch(&g2), sizeof *t2);
    t4 = calloc((size_t)nn_wino4_grad_scratch(&g4), sizeof *t4);
    for (int k = 0; k < 4; k++)
        t[k] = 1e30;
    for (int r = 0; r < reps && x && y && s2 && s4 && t2 && t4; r++) {
        double a, d[4];

        a = cpu_now();
        nn_wino_weights(&g2, w, 0, s2);
        for (int n = 0; n < images; n++)
            nn_wino_image(&g2, x + n * plane, NULL, y + n * plane, s2);
        d[0] = cpu_now() - a;
        a = cpu_now();
        nn_wino4_weights(&g4, w, 0, s4);
        for (int n = 0; n < images; n++)
            nn_wino4_image_part(&g4, x + n * plane, NULL, y + n * plane, s4,
                                0, nn_wino4_blocks(&g4), 0, C, NULL);
        d[1] = cpu_now() - a;
        a = cpu_now();
        nn_wino_grad_begin(&g2, t2);
        for (int n = 0; n < images; n++)
            nn_wino_grad_image(&g2, x + n * plane, y + n * plane, t2);
        nn_wino_grad_finish(&g2, t2, dw);
        d[2] = cpu_now() - a;
        a = cpu_now();
        nn_wino4_grad_begin(&g4, t4);
        for (int n = 0; n < images; n++)
            nn_wino4_grad_image(&g4, x + n * plane, y + n * plane, t4, NULL);
        nn_wino4_grad_finish(&g4, t4, dw);
        d[3] = cpu_now() - a;
        for (int k = 0; k < 4; k++)
            if (d[k] * 1e3 / images < t[k])
                t[k] = d[k] * 1e3 / images;
    }
    free(x);
    free(y);
    free(w);
    free(dw);
    free(s2);
    free(s4);
    free(t2);
    free(t4);
}

int main(int argc, char **argv)
{
    static const shape shapes[] = {
        {64, 56}, {128, 28}, {256, 14}, {512, 7},  /* 224x224 input */
        {64, 16}, {128, 8},                         /* 64x64 input */
        {16, 28}, {32, 28}, {64, 28}, {64, 32}, {128, 14}, {64, 14},
        {32, 14}, {256, 28},
    };
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    int images = argc > 2 ? atoi(argv[2]) : 16;

    shape one = {argc > 4 ? atoll(argv[3]) : 0, argc > 4 ? atoll(argv[4]) : 0};
    const shape *list = argc > 4 ? &one : shapes;
    size_t n = argc > 4 ? 1 : sizeof shapes / sizeof shapes[0];

    if (reps < 1 || images < 1 || (argc > 4 && (one.C < 1 || one.HW < 1))) {
        fprintf(stderr, "usage: bench_wino4 [REPEATS >= 1 [IMAGES >= 1 "
                        "[C >= 1 HW >= 1]]]\n");
        return 2;
    }
    openblas_set_num_threads(1);
    printf("%5s %5s %6s | %9s %9s %6s | %9s %9s %6s\n", "C=M", "HxW",
           "tiles4", "fw F2 ms", "fw F4 ms", "F2/F4", "gw F2 ms", "gw F4 ms",
           "F2/F4");
    for (size_t i = 0; i < n; i++) {
        double t[4];
        int64_t tiles = (list[i].HW + 3) / 4;

        time_shape(&list[i], reps, images, t);
        printf("%5lld %2lldx%-2lld %6lld | %9.3f %9.3f %6.2f | %9.3f %9.3f "
               "%6.2f\n",
               (long long)list[i].C, (long long)list[i].HW,
               (long long)list[i].HW, (long long)(tiles * tiles), t[0],
               t[1], t[0] / t[1], t[2], t[3], t[2] / t[3]);
    }
    return 0;
}
