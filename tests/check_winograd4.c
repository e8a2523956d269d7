/* check_winograd4.c - Winograd F(4x4, 3x3) (ops/nn/winograd4*.c) through
** the nn plugin's Conv, popc::FusedConv, popc::ConvGradInput and
** popc::ConvGradWeight, on shapes its predicate takes (checked here with
** the predicate itself): pads 0, 1, 2 and uneven, planes not a multiple
** of 4, channel counts not a multiple of 8, groups, batch 1 (8 groups),
** 4 and 8; the forward as in an inference model, the gradients as in a
** training one. Each result is compared with a direct
** convolution summed in double; the harness also runs every kernel split
** in 3 parts and fails unless whole and split agree bitwise.
**
** Tolerance: the largest error over the largest magnitude of the
** reference, at most TOL = 2e-5 (measured on these shapes: 4-6e-6 for
** the forward and dX, 2-3e-6 for dW; a coefficient of the output
** transform off by 1e-4 gives 7e-4). ConvGradWeight's dB, which F(4x4)
** sums from the same reads of dY as the transform, is checked against
** the double sum, a hand-derived value and the im2col path's dB.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "ops/nn/winograd4.h"
#include "popc/popc.h"
#include "tests/harness/assert.h"
#include "tests/harness/op_harness.h"
#include "tests/harness/ref_check.h"

#define TOL 2e-5

typedef struct geo {
    int64_t N, C, M, G, H, W;
    int64_t pads[4]; /* top, left, bottom, right */
} geo;

static int64_t oh_of(const geo *g)
{
    return g->H + g->pads[0] + g->pads[2] - 2;
}

static int64_t ow_of(const geo *g)
{
    return g->W + g->pads[1] + g->pads[3] - 2;
}

/* y (double, [N, M, OH, OW]) = the direct convolution of x with w */
static double *direct(const geo *g, const float *x, const float *w,
                      const float *b)
{
    int64_t OH = oh_of(g), OW = ow_of(g), Cg = g->C / g->G, Mg = g->M / g->G;
    double *y = calloc((size_t)(g->N * g->M * OH * OW), sizeof *y);

    ck_assert_ptr_nonnull(y);
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t m = 0; m < g->M; m++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    int64_t gr = m / Mg;
                    double s = b ? b[m] : 0.0;

                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t i = 0; i < 3; i++)
                            for (int64_t j = 0; j < 3; j++) {
                                int64_t ih = oh - g->pads[0] + i;
                                int64_t iw = ow - g->pads[1] + j;

                                if (ih < 0 || ih >= g->H || iw < 0 ||
                                    iw >= g->W)
                                    continue;
                                s += (double)x[((n * g->C + gr * Cg + c) *
                                                    g->H + ih) * g->W + iw] *
                                     w[((m * Cg + c) * 3 + i) * 3 + j];
                            }
                    y[((n * g->M + m) * OH + oh) * OW + ow] = s;
                }
    return y;
}

/* dX and dW (double) of the direct convolution for dY */
static void direct_grads(const geo *g, const float *x, const float *w,
                         const float *dy, double *dx, double *dw)
{
    int64_t OH = oh_of(g), OW = ow_of(g), Cg = g->C / g->G, Mg = g->M / g->G;

    for (int64_t n = 0; n < g->N; n++)
        for (int64_t m = 0; m < g->M; m++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    int64_t gr = m / Mg;
                    double e = dy[((n * g->M + m) * OH + oh) * OW + ow];

                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t i = 0; i < 3; i++)
                            for (int64_t j = 0; j < 3; j++) {
                                int64_t ih = oh - g->pads[0] + i;
                                int64_t iw = ow - g->pads[1] + j;
                                int64_t xi = ((n * g->C + gr * Cg + c) * g->H +
                                              ih) * g->W + iw;
                                int64_t wi = ((m * Cg + c) * 3 + i) * 3 + j;

                                if (ih < 0 || ih >= g->H || iw < 0 ||
                                    iw >= g->W)
                                    continue;
                                dx[xi] += e * w[wi];
                                dw[wi] += e * x[xi];
                            }
                }
}

/* The largest |got - want| over the largest |want|. */
static double rel_err(const float *got, const double *want, int64_t n)
{
    double e = 0.0, big = 1e-30;

    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);

        e = d > e ? d : e;
        big = fabs(want[i]) > big ? fabs(want[i]) : big;
    }
    return e / big;
}

/* The predicate Conv, ConvGradInput and ConvGradWeight consult. */
static int takes(const geo *g, int inference, nn_wino4_use use)
{
    conv_p p;
    int64_t Cg = g->C / g->G, Mg = g->M / g->G;

    memset(&p, 0, sizeof p);
    p.N = g->N;
    p.G = g->G;
    p.inference = inference;
    p.w.sp = 2;
    p.w.kh = p.w.kw = 3;
    p.w.sh = p.w.sw = p.w.dh = p.w.dw = 1;
    p.w.H = g->H;
    p.w.W = g->W;
    p.w.OH = oh_of(g);
    p.w.OW = ow_of(g);
    p.w.pt = g->pads[0];
    p.w.pl = g->pads[1];
    return use == NN_WINO4_GRAD_INPUT ? nn_wino4_fits(&p, Mg, Cg, use)
                                      : nn_wino4_fits(&p, Cg, Mg, use);
}

static popc_attr conv_attrs(const geo *g, popc_attr *a, int64_t *k)
{
    k[0] = k[1] = 3;
    a[0] = popc_attr_make_ints("pads", g->pads, 4);
    a[1] = popc_attr_make_int("group", g->G);
    a[2] = popc_attr_make_ints("kernel_shape", k, 2);
    return a[0];
}

static void check_shape(const geo *g, uint64_t seed)
{
    int64_t OH = oh_of(g), OW = ow_of(g), Cg = g->C / g->G;
    int64_t xd[4] = {g->N, g->C, g->H, g->W}, wd[4] = {g->M, Cg, 3, 3};
    int64_t yd[4] = {g->N, g->M, OH, OW}, bd[1] = {g->M}, k[2];
    int64_t nx = g->N * g->C * g->H * g->W, nw = g->M * Cg * 9;
    int64_t ny = g->N * g->M * OH * OW;
    popc_tensor *x = rc_random(xd, 4, seed), *w = rc_random(wd, 4, seed + 1);
    popc_tensor *b = rc_random(bd, 1, seed + 2);
    popc_tensor *dy = rc_random(yd, 4, seed + 3);
    popc_tensor *in[3] = {x, w, b}, *out[2] = {0};
    popc_attr a[5];
    const float *xf = popc_tensor_cdata(x), *wf = popc_tensor_cdata(w);
    const float *bf = popc_tensor_cdata(b), *dyf = popc_tensor_cdata(dy);
    double *y = direct(g, xf, wf, bf);
    double *dx = calloc((size_t)nx, sizeof *dx);
    double *dw = calloc((size_t)nw, sizeof *dw);
    double e;
    char what[160];

    snprintf(what, sizeof what, "N %lld C %lld M %lld G %lld %lldx%lld "
             "pads %lld %lld %lld %lld", (long long)g->N, (long long)g->C,
             (long long)g->M, (long long)g->G, (long long)g->H,
             (long long)g->W, (long long)g->pads[0], (long long)g->pads[1],
             (long long)g->pads[2], (long long)g->pads[3]);
    ck_assert_msg(takes(g, 1, NN_WINO4_FORWARD) &&
                      takes(g, 0, NN_WINO4_GRAD_INPUT) &&
                      takes(g, 0, NN_WINO4_GRAD_WEIGHT),
                  "%s: F(4x4) does not take this shape", what);
    ck_assert_ptr_nonnull(dx);
    ck_assert_ptr_nonnull(dw);
    conv_attrs(g, a, k);

    /* forward, with bias, in an inference model (a training model's
    ** forward keeps F(2x2)) */
    ASSERT_OK(harness_run_op(NULL, "Conv", in, 3, a, 2, out, 1, 0));
    e = rel_err(popc_tensor_cdata(out[0]), y, ny);
    ck_assert_msg(e <= TOL, "%s: Conv error %.3g > %.0e", what, e, TOL);
    popc_tensor_free(out[0]);

    /* dX */
    direct_grads(g, xf, wf, dyf, dx, dw);
    a[2] = popc_attr_make_ints("input_shape", xd, 4);
    in[0] = dy;
    in[1] = w;
    ASSERT_OK(harness_run_op("popc", "ConvGradInput", in, 2, a, 3, out, 1, 1));
    e = rel_err(popc_tensor_cdata(out[0]), dx, nx);
    ck_assert_msg(e <= TOL, "%s: ConvGradInput error %.3g > %.0e", what, e,
                  TOL);
    popc_tensor_free(out[0]);

    /* dW and dB in image chunks (the S partials summed here) */
    {
        int64_t S = g->N >= 2 ? 2 : 1, M = g->M;
        float *sw = calloc((size_t)nw, sizeof *sw);
        float *sb = calloc((size_t)M, sizeof *sb);
        const float *pw, *pb;
        double *db = calloc((size_t)M, sizeof *db);

        ck_assert(sw && sb && db);
        a[2] = popc_attr_make_ints("kernel_shape", k, 2);
        a[3] = popc_attr_make_int("image_chunks", S);
        in[0] = x;
        in[1] = dy;
        ASSERT_OK(harness_run_op("popc", "ConvGradWeight", in, 2, a, 4, out,
                                 2, 1));
        pw = popc_tensor_cdata(out[0]);
        pb = popc_tensor_cdata(out[1]);
        for (int64_t s = 0; s < S; s++) {
            for (int64_t i = 0; i < nw; i++)
                sw[i] += pw[s * nw + i];
            for (int64_t m = 0; m < M; m++)
                sb[m] += pb[s * M + m];
        }
        for (int64_t i = 0; i < ny; i++)
            db[i / (OH * OW) % M] += dyf[i];
        e = rel_err(sw, dw, nw);
        ck_assert_msg(e <= TOL, "%s: ConvGradWeight dW error %.3g > %.0e",
                      what, e, TOL);
        for (int64_t m = 0; m < M; m++)
            ck_assert_msg(fabs(sb[m] - db[m]) <= 1e-5 * (1.0 + fabs(db[m])),
                          "%s: dB[%lld] %.9g, want %.9g", what, (long long)m,
                          (double)sb[m], db[m]);
        popc_tensor_free(out[0]);
        popc_tensor_free(out[1]);
        free(sw);
        free(sb);
        free(db);
    }
    free(y);
    free(dx);
    free(dw);
    popc_tensor_free(x);
    popc_tensor_free(w);
    popc_tensor_free(b);
    popc_tensor_free(dy);
}

START_TEST(pads_0_1_2_odd_planes)
{
    /* 30x31 with pad 0: 28x29 outputs; 29x27 with pad 1; 26x26 with pad
    ** 2: 28x28 */
    static const geo g[] = {
        {8, 33, 35, 1, 30, 31, {0, 0, 0, 0}},
        {8, 37, 34, 1, 29, 27, {1, 1, 1, 1}},
        {8, 32, 40, 1, 26, 26, {2, 2, 2, 2}},
        {8, 36, 33, 1, 23, 25, {1, 2, 0, 1}},
    };

    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
        check_shape(&g[i], 100 + 10 * i);
}
END_TEST

START_TEST(groups_and_batch_1)
{
    /* groups give the units at batch 1 (8 groups) and 4 (2 groups) */
    static const geo g[] = {
        {1, 8 * 33, 8 * 34, 8, 17, 19, {1, 1, 1, 1}},
        {4, 2 * 35, 2 * 41, 2, 21, 18, {1, 1, 1, 1}},
    };

    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
        check_shape(&g[i], 200 + 10 * i);
}
END_TEST

START_TEST(inference_with_fused_epilogue)
{
    /* an inference model's forward, and FusedConv's residual and ReLU
    ** applied to each stretch the output transform writes */
    geo g = {8, 34, 48, 1, 45, 37, {1, 1, 1, 1}};
    int64_t xd[4] = {8, 34, 45, 37}, wd[4] = {48, 34, 3, 3}, bd[1] = {48};
    int64_t yd[4] = {8, 48, 45, 37}, k[2], ny = 8 * 48 * 45 * 37;
    popc_tensor *in[4] = {rc_random(xd, 4, 301), rc_random(wd, 4, 302),
                          rc_random(bd, 1, 303), rc_random(yd, 4, 304)};
    popc_tensor *out[1] = {0};
    popc_attr a[3];
    double *y = direct(&g, popc_tensor_cdata(in[0]), popc_tensor_cdata(in[1]),
                       popc_tensor_cdata(in[2]));
    const float *z = popc_tensor_cdata(in[3]);
    double e;

    ck_assert(takes(&g, 1, NN_WINO4_FORWARD));
    conv_attrs(&g, a, k);
    ASSERT_OK(harness_run_op(NULL, "Conv", in, 3, a, 2, out, 1, 0));
    e = rel_err(popc_tensor_cdata(out[0]), y, ny);
    ck_assert_msg(e <= TOL, "Conv (inference): error %.3g", e);
    popc_tensor_free(out[0]);
    for (int64_t i = 0; i < ny; i++)
        y[i] = y[i] + z[i] > 0.0 ? y[i] + z[i] : 0.0;
    a[2] = popc_attr_make_string("activation", "Relu");
    ASSERT_OK(harness_run_op("popc", "FusedConv", in, 4, a, 3, out, 1, 0));
    e = rel_err(popc_tensor_cdata(out[0]), y, ny);
    ck_assert_msg(e <= TOL, "FusedConv (inference): error %.3g", e);
    popc_tensor_free(out[0]);
    free(y);
    for (int i = 0; i < 4; i++)
        popc_tensor_free(in[i]);
}
END_TEST

START_TEST(fused_bias_grad_hand_derived)
{
    /* dY[n, m, ...] = (m + 1) / 4 everywhere: dB[m] is (m + 1) / 4 times
    ** N OH OW = 8 * 28 * 28, exact in float; the image-chunk partials
    ** are exact too. The im2col path (no image chunks) gives the same. */
    int64_t xd[4] = {8, 32, 28, 28}, yd[4] = {8, 32, 28, 28}, k[2] = {3, 3};
    int64_t pd[4] = {1, 1, 1, 1}, n = 8 * 32 * 28 * 28;
    popc_tensor *in[2] = {rc_random(xd, 4, 401), NULL};
    popc_tensor *wino[2] = {0}, *plain[2] = {0};
    popc_attr a[3] = {popc_attr_make_ints("kernel_shape", k, 2),
                      popc_attr_make_ints("pads", pd, 4),
                      popc_attr_make_int("image_chunks", 8)};
    float *d = malloc(sizeof *d * (size_t)n);
    const float *pb, *qb;

    ck_assert_ptr_nonnull(d);
    for (int64_t i = 0; i < n; i++)
        d[i] = (float)(i / (28 * 28) % 32 + 1) / 4.0f;
    in[1] = harness_f32(yd, 4, d);
    ASSERT_OK(harness_run_op("popc", "ConvGradWeight", in, 2, a, 3, wino, 2,
                             1));
    ASSERT_OK(harness_run_op("popc", "ConvGradWeight", in, 2, a, 2, plain, 2,
                             1));
    pb = popc_tensor_cdata(wino[1]);
    qb = popc_tensor_cdata(plain[1]);
    for (int64_t m = 0; m < 32; m++) {
        float want = (float)(m + 1) / 4.0f * 8 * 28 * 28, got = 0.0f;

        for (int s = 0; s < 8; s++)
            got += pb[s * 32 + m];
        ck_assert_msg(got == want && qb[m] == want,
                      "dB[%lld]: F(4x4) %.9g, im2col %.9g, want %.9g",
                      (long long)m, (double)got, (double)qb[m],
                      (double)want);
    }
    free(d);
    for (int i = 0; i < 2; i++) {
        popc_tensor_free(in[i]);
        popc_tensor_free(wino[i]);
        popc_tensor_free(plain[i]);
    }
}
END_TEST

START_TEST(predicate_keeps_small_planes_off)
{
    /* where F(4x4) measured slower (bench/README.md): 14x14 planes, 16
    ** channels, fewer than NN_CONV_UNITS (image, group) units (batch 1);
    ** and a training model's forward, for accuracy (winograd4_fits.c) */
    static const nn_wino4_use all[3] = {
        NN_WINO4_FORWARD, NN_WINO4_GRAD_INPUT, NN_WINO4_GRAD_WEIGHT};
    geo small = {8, 256, 256, 1, 14, 14, {1, 1, 1, 1}};
    geo thin = {8, 16, 16, 1, 56, 56, {1, 1, 1, 1}};
    geo few = {1, 64, 64, 1, 56, 56, {1, 1, 1, 1}};
    geo resnet = {8, 64, 64, 1, 56, 56, {1, 1, 1, 1}};

    for (int u = 0; u < 3; u++)
        for (int inference = 0; inference < 2; inference++) {
            ck_assert(!takes(&small, inference, all[u]));
            ck_assert(!takes(&thin, inference, all[u]));
            ck_assert(!takes(&few, inference, all[u]));
        }
    ck_assert(takes(&resnet, 1, NN_WINO4_FORWARD));
    ck_assert(!takes(&resnet, 0, NN_WINO4_FORWARD));
    ck_assert(takes(&resnet, 0, NN_WINO4_GRAD_INPUT));
    ck_assert(takes(&resnet, 0, NN_WINO4_GRAD_WEIGHT));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("winograd4");
    TCase *tc = tcase_create("winograd4");

    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, pads_0_1_2_odd_planes);
    tcase_add_test(tc, groups_and_batch_1);
    tcase_add_test(tc, inference_with_fused_epilogue);
    tcase_add_test(tc, fused_bias_grad_hand_derived);
    tcase_add_test(tc, predicate_keeps_small_planes_off);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
