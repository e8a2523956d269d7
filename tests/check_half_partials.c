/* check_half_partials.c - Precision.setPartialsType(torch.half): float16
** MatMul, Conv, their gradients and reductions keep float16 partial sums,
** rounded after every term (ops/nn/half_partials.h states the rule).
**
** The hand-derived case: 2048 + 1 + 1 + 1 + 1. In float32 partials the sum
** is 2052, a float16 value. In float16 partials 2048 + 1 = 2049 is a tie
** between 2048 and 2050 and rounds to the even 2048, every time: 2048.
** A general convolution is checked against a direct loop written here from
** the documented summation order.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

static const float terms[5] = {2048.0f, 1.0f, 1.0f, 1.0f, 1.0f};

static popc_tensor *tensor(const int64_t *dims, int rank, const float *v)
{
    popc_tensor *t = NULL;

    OK(popc_tensor_from_data(POPC_DTYPE_F32, dims, rank, v, &t));
    return t;
}

static void add_weight(popc_graph *g, const char *name, const int64_t *dims,
                       int rank, const float *v, int *id)
{
    popc_tensor *t = tensor(dims, rank, v);

    OK(popc_graph_add_initializer(g, name, t, 1, id));
    popc_tensor_free(t);
}

static popc_options *options(const char *backend, const char *partials)
{
    popc_options *o = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    OK(popc_options_set(o, "Precision.setPartialsType", partials));
    return o;
}

/* The first output of one inference run of g (converted to half when
** half) with input x. */
static float infer1(const popc_graph *g, int half, const char *backend,
                    const char *partials, popc_tensor *x)
{
    popc_options *o = options(backend, partials);
    popc_graph *h = NULL;
    popc_model *m = NULL;
    popc_tensor *y = NULL;
    float v;

    if (half)
        OK(popc_graph_to_half(g, NULL, o, &h));
    OK(popc_model_new_inference(half ? h : g, o, &m));
    OK(popc_model_run(m, &x, 1, &y, 1));
    ck_assert_int_eq(popc_tensor_dtype(y), POPC_DTYPE_F32);
    v = ((const float *)popc_tensor_data(y))[0];
    popc_tensor_free(y);
    popc_model_free(m);
    popc_graph_free(h);
    popc_options_free(o);
    return v;
}

/* x [1, 5] @ ones [5, 1]; ReduceMean of x over axis 1; a 1x1 Conv of x
** [1, 5, 1, 1] with ones: op 0, 1, 2. */
static popc_graph *sum_graph(int op, popc_tensor **x)
{
    static const float ones[5] = {1, 1, 1, 1, 1};
    int64_t xd[4] = {1, 5, 1, 1}, wd[4] = {5, 1, 0, 0}, cd[4] = {1, 5, 1, 1};
    int64_t axes[1] = {1};
    popc_attr a = {.name = "axes", .type = POPC_ATTR_INTS, .n = 1,
                   .ints = axes};
    popc_graph *g = NULL;
    int in[2], y;

    OK(popc_graph_new("sums", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, op == 2 ? 4 : 2,
                            &in[0]));
    *x = tensor(xd, op == 2 ? 4 : 2, terms);
    if (op == 0) {
        add_weight(g, "w", wd, 2, ones, &in[1]);
        OK(popc_graph_add_node(g, NULL, "MatMul", 0, in, 2, &y, 1, NULL, 0,
                               "mm", NULL));
    } else if (op == 1) {
        OK(popc_graph_add_node(g, NULL, "ReduceMean", 13, in, 1, &y, 1, &a,
                               1, "mean", NULL));
    } else {
        cd[0] = 1;
        add_weight(g, "w", cd, 4, ones, &in[1]);
        OK(popc_graph_add_node(g, NULL, "Conv", 0, in, 2, &y, 1, NULL, 0,
                               "conv", NULL));
    }
    OK(popc_graph_add_output(g, y));
    return g;
}

static void check_sums(const char *backend)
{
    /* ReduceMean: 2052 / 5 = 410.4 and 2048 / 5 = 409.6, to float16 */
    static const float want_float[3] = {2052.0f, 410.5f, 2052.0f};
    static const float want_half[3] = {2048.0f, 409.5f, 2048.0f};

    for (int op = 0; op < 3; op++) {
        popc_tensor *x = NULL;
        popc_graph *g = sum_graph(op, &x);
        float f = infer1(g, 1, backend, "float", x);
        float h = infer1(g, 1, backend, "half", x);
        float wide = infer1(g, 0, backend, "half", x);

        ck_assert_msg(f == want_float[op] && h == want_half[op],
                      "%s op %d: float partials %g (want %g), half partials "
                      "%g (want %g)", backend, op, f, want_float[op], h,
                      want_half[op]);
        /* float32 operations ignore the option */
        ck_assert_msg(wide == (op == 1 ? 410.4f : 2052.0f), "%s op %d: "
                      "float32 model gave %g", backend, op, wide);
        popc_tensor_free(x);
        popc_graph_free(g);
    }
}

START_TEST(sums_cpu)
{
    check_sums("cpu");
}
END_TEST

START_TEST(sums_ipumodel)
{
    check_sums("ipumodel");
}
END_TEST

/* ---- a general convolution against the documented order ------------------- */

#define N 2
#define C 4
#define H 5
#define W 6
#define M 6
#define G 2
#define K 3

static float round_half(float v)
{
    return popc_f16_to_f32(popc_f32_to_f16(v));
}

/* Float16 values of modest size with many significant bits, so that
** rounding partial sums matters. */
static void fill(float *v, int n, unsigned seed)
{
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = round_half(((float)((seed >> 8) % 20001) - 10000.0f) / 997.0f);
    }
}

/* Conv with stride 2, pads 1, groups G, bias; output [N, M, OH, OW]: sums
** over the group's channels, kernel rows, kernel columns, rounded after
** every term; the bias added to the finished sum. */
static void reference_conv(const float *x, const float *w, const float *b,
                           float *y, int oh_n, int ow_n)
{
    for (int n = 0; n < N; n++)
        for (int m = 0; m < M; m++)
            for (int oh = 0; oh < oh_n; oh++)
                for (int ow = 0; ow < ow_n; ow++) {
                    int g = m / (M / G);
                    float acc = 0.0f;

                    for (int c = 0; c < C / G; c++)
                        for (int i = 0; i < K; i++)
                            for (int j = 0; j < K; j++) {
                                int ih = oh * 2 - 1 + i, iw = ow * 2 - 1 + j;

                                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                                    continue;
                                acc = round_half(
                                    acc +
                                    x[((n * C + g * (C / G) + c) * H + ih) *
                                          W + iw] *
                                        w[((m * (C / G) + c) * K + i) * K +
                                          j]);
                            }
                    y[((n * M + m) * oh_n + oh) * ow_n + ow] =
                        round_half(acc + b[m]);
                }
}

static void check_conv(const char *backend)
{
    int64_t xd[4] = {N, C, H, W}, wd[4] = {M, C / G, K, K}, bd[1] = {M};
    int64_t strides[2] = {2, 2}, pads[4] = {1, 1, 1, 1};
    popc_attr a[3] = {
        {.name = "strides", .type = POPC_ATTR_INTS, .n = 2, .ints = strides},
        {.name = "pads", .type = POPC_ATTR_INTS, .n = 4, .ints = pads},
        {.name = "group", .type = POPC_ATTR_INT, .i = G}};
    float x[N * C * H * W], w[M * (C / G) * K * K], b[M], want[N * M * 3 * 3];
    popc_graph *g = NULL, *h = NULL;
    popc_options *o = options(backend, "half");
    popc_model *m = NULL;
    popc_tensor *xt, *y = NULL;
    int in[3], out;

    fill(x, N * C * H * W, 1);
    fill(w, M * (C / G) * K * K, 2);
    fill(b, M, 3);
    reference_conv(x, w, b, want, 3, 3);
    OK(popc_graph_new("conv", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 4, &in[0]));
    add_weight(g, "w", wd, 4, w, &in[1]);
    add_weight(g, "b", bd, 1, b, &in[2]);
    OK(popc_graph_add_node(g, NULL, "Conv", 0, in, 3, &out, 1, a, 3, "conv",
                           NULL));
    OK(popc_graph_add_output(g, out));
    OK(popc_graph_to_half(g, NULL, o, &h));
    OK(popc_model_new_inference(h, o, &m));
    xt = tensor(xd, 4, x);
    OK(popc_model_run(m, &xt, 1, &y, 1));
    ck_assert_int_eq(popc_tensor_numel(y), N * M * 3 * 3);
    for (int i = 0; i < N * M * 3 * 3; i++) {
        float got = ((const float *)popc_tensor_data(y))[i];

        ck_assert_msg(got == want[i], "%s: y[%d] = %.6g, the documented "
                      "order gives %.6g", backend, i, got, want[i]);
    }
    popc_tensor_free(xt);
    popc_tensor_free(y);
    popc_model_free(m);
    popc_graph_free(g);
    popc_graph_free(h);
    popc_options_free(o);
}

START_TEST(conv_cpu)
{
    check_conv("cpu");
}
END_TEST

START_TEST(conv_ipumodel)
{
    check_conv("ipumodel");
}
END_TEST

/* ---- gradients ------------------------------------------------------------- */

/* One SGD step (lr 1) of a graph whose loss is the sum of y; returns the
** updated weight `name` [0] as float. */
static float step(popc_graph *g, int y, const char *backend,
                  const char *partials, popc_tensor *x, const char *name)
{
    popc_options *o = options(backend, partials);
    popc_optimizer *opt = NULL;
    popc_layers *L = NULL;
    popc_graph *h = NULL;
    popc_model *m = NULL;
    popc_tensor *loss = NULL, *wide = NULL;
    const popc_tensor *wt;
    int l;
    float v;

    OK(popc_layers_new(g, 1, &L));
    OK(popc_nn_identity_loss(L, y, "sum", &l));
    OK(popc_graph_add_output(g, l));
    popc_layers_free(L);
    OK(popc_graph_to_half(g, NULL, o, &h));
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", 1.0));
    OK(popc_model_new_training(h, o, opt, &m));
    OK(popc_model_run(m, &x, 1, &loss, 1));
    OK(popc_model_get_weight(m, name, &wt));
    OK(popc_tensor_cast(wt, POPC_DTYPE_F32, &wide));
    v = ((const float *)popc_tensor_data(wide))[0];
    popc_tensor_free(wide);
    popc_tensor_free(loss);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_graph_free(h);
    popc_options_free(o);
    return v;
}

/* kind 0: MatMul x [5, 1] @ w [1, 1]: dw = x^T 1 sums the five terms.
** kind 1: Conv of x [5, 1, 1, 1] with w [1, 1, 1, 1]: ConvGradWeight sums
** them over the batch. kind 2: s [1] * x [1, 1, 1, 1], then Conv with w
** [5, 1, 1, 1] = the terms: ds = ConvGradInput's sum over output
** channels. The weight read back: w (kinds 0, 1) or s. */
static float grad_step(int kind, const char *backend, const char *partials)
{
    static const float one[1] = {1.0f};
    int64_t col[2] = {5, 1}, sq[2] = {1, 1}, x4[4] = {5, 1, 1, 1};
    int64_t w4[4] = {1, 1, 1, 1}, s1[1] = {1};
    popc_graph *g = NULL;
    popc_tensor *x;
    int in[2], y, sx;
    float v;

    OK(popc_graph_new("grads", &g));
    if (kind == 0) {
        OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, col, 2, &in[0]));
        x = tensor(col, 2, terms);
        add_weight(g, "w", sq, 2, one, &in[1]);
        OK(popc_graph_add_node(g, NULL, "MatMul", 0, in, 2, &y, 1, NULL, 0,
                               "mm", NULL));
    } else if (kind == 1) {
        OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, x4, 4, &in[0]));
        x = tensor(x4, 4, terms);
        add_weight(g, "w", w4, 4, one, &in[1]);
        OK(popc_graph_add_node(g, NULL, "Conv", 0, in, 2, &y, 1, NULL, 0,
                               "conv", NULL));
    } else {
        OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, w4, 4, &in[0]));
        x = tensor(w4, 4, one);
        add_weight(g, "s", s1, 1, one, &in[1]);
        OK(popc_graph_add_node(g, NULL, "Mul", 0, in, 2, &sx, 1, NULL, 0,
                               "scale", NULL));
        in[0] = sx;
        add_weight(g, "w", x4, 4, terms, &in[1]);
        OK(popc_graph_add_node(g, NULL, "Conv", 0, in, 2, &y, 1, NULL, 0,
                               "conv", NULL));
    }
    v = step(g, y, backend, partials, x, kind == 2 ? "s" : "w");
    popc_tensor_free(x);
    popc_graph_free(g);
    return v;
}

static void check_grads(const char *backend)
{
    for (int kind = 0; kind < 3; kind++) {
        /* float16 weights: 1 - 2052 = -2051 rounds to the even -2052;
        ** 1 - 2048 = -2047 is a float16 value */
        float f = grad_step(kind, backend, "float");
        float h = grad_step(kind, backend, "half");

        ck_assert_msg(f == -2052.0f && h == -2047.0f, "%s kind %d: updated "
                      "weight %g with float partials (want -2052), %g with "
                      "half partials (want -2047)", backend, kind, f, h);
    }
}

START_TEST(grads_cpu)
{
    check_grads("cpu");
}
END_TEST

START_TEST(grads_ipumodel)
{
    check_grads("ipumodel");
}
END_TEST

/* The general convolution of check_conv trained one step (lr 0.01) on the
** mean of y * y after a trainable scale s [C, 1, 1] of x (so that dX is
** needed): the updated w, then s, as float, into out. */
static void general_step(const char *backend, const char *partials,
                         float *out)
{
    int64_t xd[4] = {N, C, H, W}, wd[4] = {M, C / G, K, K}, bd[1] = {M};
    int64_t sd[3] = {C, 1, 1}, strides[2] = {2, 2}, pads[4] = {1, 1, 1, 1};
    popc_attr a[3] = {
        {.name = "strides", .type = POPC_ATTR_INTS, .n = 2, .ints = strides},
        {.name = "pads", .type = POPC_ATTR_INTS, .n = 4, .ints = pads},
        {.name = "group", .type = POPC_ATTR_INT, .i = G}};
    float x[N * C * H * W], w[M * (C / G) * K * K], b[M], sc[C];
    popc_options *o = options(backend, partials);
    popc_optimizer *opt = NULL;
    popc_layers *L = NULL;
    popc_graph *g = NULL, *h = NULL;
    popc_model *m = NULL;
    popc_tensor *xt, *loss = NULL, *wide = NULL;
    const popc_tensor *wt;
    int in[3], xs, y, yy, l;

    fill(x, N * C * H * W, 1);
    fill(w, M * (C / G) * K * K, 2);
    fill(b, M, 3);
    fill(sc, C, 4);
    for (int i = 0; i < C; i++) /* y * y stays below float16's 65504 */
        sc[i] = round_half(sc[i] / 64.0f);
    OK(popc_graph_new("conv", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 4, &in[0]));
    add_weight(g, "s", sd, 3, sc, &in[1]);
    OK(popc_graph_add_node(g, NULL, "Mul", 0, in, 2, &xs, 1, NULL, 0,
                           "scale", NULL));
    in[0] = xs;
    add_weight(g, "w", wd, 4, w, &in[1]);
    add_weight(g, "b", bd, 1, b, &in[2]);
    OK(popc_graph_add_node(g, NULL, "Conv", 0, in, 3, &y, 1, a, 3, "conv",
                           NULL));
    in[0] = in[1] = y;
    OK(popc_graph_add_node(g, NULL, "Mul", 0, in, 2, &yy, 1, NULL, 0,
                           "square", NULL));
    OK(popc_layers_new(g, 1, &L));
    OK(popc_nn_identity_loss(L, yy, "mean", &l));
    OK(popc_graph_add_output(g, l));
    popc_layers_free(L);
    OK(popc_graph_to_half(g, NULL, o, &h));
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", 0.01));
    OK(popc_model_new_training(h, o, opt, &m));
    xt = tensor(xd, 4, x);
    OK(popc_model_run(m, &xt, 1, &loss, 1));
    OK(popc_model_get_weight(m, "w", &wt));
    OK(popc_tensor_cast(wt, POPC_DTYPE_F32, &wide));
    memcpy(out, popc_tensor_data(wide), sizeof w);
    popc_tensor_free(wide);
    OK(popc_model_get_weight(m, "s", &wt));
    OK(popc_tensor_cast(wt, POPC_DTYPE_F32, &wide));
    memcpy(out + M * (C / G) * K * K, popc_tensor_data(wide), sizeof sc);
    popc_tensor_free(wide);
    popc_tensor_free(loss);
    popc_tensor_free(xt);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_graph_free(g);
    popc_graph_free(h);
    popc_options_free(o);
}

/* Half partials give the same bits on cpu and on the split ipumodel
** kernels, and stay close to float partials (the geometry is right). */
START_TEST(general_conv_training)
{
    enum { NW = M * (C / G) * K * K + C };
    float hc[NW], hi[NW], fc[NW];

    general_step("cpu", "half", hc);
    general_step("ipumodel", "half", hi);
    general_step("cpu", "float", fc);
    ck_assert_msg(memcmp(hc, hi, sizeof hc) == 0, "cpu and ipumodel differ");
    /* per tensor (w, then s): the largest difference against the largest
    ** value */
    for (int t = 0; t < 2; t++) {
        int i0 = t ? NW - C : 0, i1 = t ? NW : NW - C;
        double diff = 0.0, scale = 0.0;

        for (int i = i0; i < i1; i++) {
            diff = fmax(diff, fabs(hc[i] - fc[i]));
            scale = fmax(scale, fabs(fc[i]));
        }
        ck_assert_msg(diff > 0.0 && diff < 0.01 * scale, "%s: half and "
                      "float partials differ by %g (values up to %g)",
                      t ? "s" : "w", diff, scale);
    }
}
END_TEST

START_TEST(option_values)
{
    popc_options *o = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "Precision.setPartialsType", "half"));
    ck_assert_int_eq(popc_options_get_int(o, "Precision.setPartialsType"), 1);
    OK(popc_options_set(o, "Precision.setPartialsType", "float16"));
    ck_assert_int_eq(popc_options_get_int(o, "Precision.setPartialsType"), 1);
    ck_assert_int_ne(popc_options_set(o, "Precision.setPartialsType",
                                      "int8"), POPC_OK);
    popc_options_free(o);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("half_partials");
    TCase *tc = tcase_create("half_partials");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, sums_cpu);
    tcase_add_test(tc, sums_ipumodel);
    tcase_add_test(tc, conv_cpu);
    tcase_add_test(tc, conv_ipumodel);
    tcase_add_test(tc, grads_cpu);
    tcase_add_test(tc, grads_ipumodel);
    tcase_add_test(tc, general_conv_training);
    tcase_add_test(tc, option_values);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
