/* check_op_onnx_grads.c - gradients of ops added for ONNX models, each
** checked against central finite differences of its forward kernel
** (tests/harness/fd_check.h), on inputs kept away from the ops' kinks:
** the elementwise ops of the math plugin's wide.c (inverse and hyperbolic
** trigonometry, Softsign, Selu, HardSigmoid, HardSwish, ThresholdedRelu,
** Shrink, PRelu and its slope, floating-point Mod and its divisor, and the
** zero gradients of Ceil, Floor, Round and Sign; CastLike); the reductions of
** reduce_wide.c; and the data-movement ops of the tensor plugin (Tile,
** Pad, DepthToSpace, SpaceToDepth, CumSum, ReverseSequence, Trilu, the
** gathers and scatters, Compress, TopK, Hardmax); Einsum (explicit,
** implicit, batched, ellipsis broadcast, transpose), Det (invertible
** and singular matrices) and DFT (complex, real, inverse, onesided,
** dft_length cutting or padding); the nn ops ConvTranspose (1-D and 2-D, groups,
** strides, pads, dilations, output_padding), InstanceNormalization,
** MeanVarianceNormalization, LRN, GlobalMaxPool, Resize (nearest, linear,
** cubic; several coordinate modes), GridSample (three modes, three
** paddings, its grid too) and MaxUnpool; If (both branches), Scan (axis
** 0, axis 1 reversed) and Loop, each reading a captured value. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/harness/attrs.h"
#include "tests/harness/fd_check.h"

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static popc_tensor *grid(int64_t d0, int64_t d1, double start, double step)
{
    int64_t dims[2] = {d0, d1};
    popc_tensor *t = NULL;
    float *p;

    ck_assert_int_eq(popc_tensor_new(POPC_DTYPE_F32, dims, 2, &t), POPC_OK);
    p = popc_tensor_data(t);
    /* a permuted ramp: neighbours differ, no value near a kink */
    for (int64_t i = 0; i < d0 * d1; i++)
        p[i] = (float)(start + step * (double)((i * 7) % (d0 * d1)));
    return t;
}

static void fd_ok(const char *op, popc_tensor **in, int n_in, const int *wrt,
                  int n_wrt, const popc_attr *a, int na)
{
    char why[1024];
    popc_status st = fd_check_op(NULL, op, in, n_in, wrt, n_wrt, a, na, 1e-3,
                                 why, sizeof why);

    ck_assert_msg(st == POPC_OK, "%s: %s", op, why);
}

typedef struct unary_case {
    const char *op;
    double start, step;
} unary_case;

START_TEST(wide_unary_gradients)
{
    /* 24 values start + step * k; with step 0.1 from -1.43 none is within
    ** 0.03 of an integer or a half-integer */
    static const unary_case cases[] = {
        {"Acos", -0.72, 0.06}, {"Asin", -0.72, 0.06}, {"Atan", -1.43, 0.1},
        {"Acosh", 1.13, 0.1}, {"Asinh", -1.43, 0.1}, {"Atanh", -0.72, 0.06},
        {"Cosh", -1.43, 0.1}, {"Sinh", -1.43, 0.1}, {"Tan", -1.03, 0.09},
        {"Softsign", -1.43, 0.1}, {"Selu", -1.43, 0.1},
        {"HardSigmoid", -1.43, 0.1}, {"HardSwish", -1.43, 0.25},
        {"ThresholdedRelu", -1.43, 0.1}, {"Shrink", -1.43, 0.1},
        {"Ceil", -1.43, 0.1}, {"Floor", -1.43, 0.1}, {"Round", -1.43, 0.1},
        {"Sign", -1.43, 0.1},
    };
    static const int wrt[] = {0};

    for (int i = 0; i < N_OF(cases); i++) {
        popc_tensor *x = grid(4, 6, cases[i].start, cases[i].step);

        fd_ok(cases[i].op, &x, 1, wrt, 1, NULL, 0);
        popc_tensor_free(x);
    }
}
END_TEST

START_TEST(wide_attribute_gradients)
{
    popc_attr selu[2] = {{.name = "alpha", .type = POPC_ATTR_FLOAT, .f = 1.3},
                         {.name = "gamma", .type = POPC_ATTR_FLOAT, .f = 0.9}};
    popc_attr hs[2] = {{.name = "alpha", .type = POPC_ATTR_FLOAT, .f = 0.3},
                       {.name = "beta", .type = POPC_ATTR_FLOAT, .f = 0.45}};
    popc_attr shrink[2] = {{.name = "lambd", .type = POPC_ATTR_FLOAT,
                            .f = 0.8},
                           {.name = "bias", .type = POPC_ATTR_FLOAT,
                            .f = 0.2}};
    popc_tensor *x = grid(4, 6, -1.43, 0.1);
    static const int wrt[] = {0};

    fd_ok("Selu", &x, 1, wrt, 1, selu, 2);
    fd_ok("HardSigmoid", &x, 1, wrt, 1, hs, 2);
    fd_ok("Shrink", &x, 1, wrt, 1, shrink, 2);
    popc_tensor_free(x);
}
END_TEST

START_TEST(castlike_gradient)
{
    /* float32 like float32: fd_check differentiates float32 outputs */
    popc_tensor *in[2] = {grid(2, 3, -0.5, 0.1), grid(1, 3, 0.0, 0.0)};
    static const int wrt[] = {0};

    fd_ok("CastLike", in, 2, wrt, 1, NULL, 0);
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
}
END_TEST

START_TEST(wide_binary_gradients)
{
    popc_attr fmod = {.name = "fmod", .type = POPC_ATTR_INT, .i = 1};
    popc_tensor *in[2];
    static const int both[] = {0, 1};

    /* PRelu with a slope broadcast over the rows: its gradient is summed */
    in[0] = grid(4, 6, -1.43, 0.1);
    in[1] = grid(1, 6, 0.11, 0.07);
    fd_ok("PRelu", in, 2, both, 2, NULL, 0);
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    /* fmod(x, y), x / y never near an integer */
    in[0] = grid(4, 6, 0.37, 0.05);
    in[1] = grid(4, 6, 2.9, 0.013);
    fd_ok("Mod", in, 2, both, 2, &fmod, 1);
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
}
END_TEST

static popc_tensor *ints(const int64_t *dims, int rank, const int64_t *v)
{
    popc_tensor *t = NULL;

    ck_assert_int_eq(popc_tensor_from_data(POPC_DTYPE_I64, dims, rank, v, &t),
                     POPC_OK);
    return t;
}

static popc_tensor *ints1(int64_t n, const int64_t *v)
{
    return ints(&n, 1, v);
}

/* a grid of n values reshaped to dims */
static popc_tensor *shaped(const int64_t *dims, int rank, int64_t n,
                           double start, double step)
{
    popc_tensor *flat = grid(1, n, start, step), *t = NULL;

    ck_assert_int_eq(popc_tensor_reshape(flat, dims, rank, &t), POPC_OK);
    popc_tensor_free(flat);
    return t;
}

/* op(x, second) with the gradient checked for x only */
static void fd_x(const char *op, popc_tensor *x, popc_tensor *second,
                 const popc_attr *a, int na)
{
    popc_tensor *in[2] = {x, second};
    static const int wrt[] = {0};

    fd_ok(op, in, second ? 2 : 1, wrt, 1, a, na);
    popc_tensor_free(x);
    popc_tensor_free(second);
}

static popc_status tensor_free_all(popc_tensor **t, int n)
{
    for (int i = 0; i < n; i++)
        popc_tensor_free(t[i]);
    return POPC_OK;
}

START_TEST(reduction_gradients)
{
    static const char *const ops[] = {"ReduceMin", "ReduceProd", "ReduceL1",
                                      "ReduceL2", "ReduceLogSum",
                                      "ReduceLogSumExp", "ReduceSumSquare"};
    int64_t axes[1] = {1};
    popc_attr a[2] = {aints("axes", axes, 1), ai("keepdims", 0)};

    for (int i = 0; i < N_OF(ops); i++) {
        /* positive (LogSum), away from 0 (L1), distinct (Min) */
        fd_x(ops[i], grid(3, 4, 0.31, 0.11), NULL, a, 2);
        fd_x(ops[i], grid(3, 4, 0.31, 0.11), NULL, NULL, 0);
    }
    {
        /* ReduceProd through a zero: the other elements' product */
        popc_tensor *x = grid(3, 4, -0.55, 0.1);

        ((float *)popc_tensor_data(x))[5] = 0.0f;
        fd_x("ReduceProd", x, NULL, a, 2);
    }
}
END_TEST

START_TEST(arrange_gradients)
{
    static const int64_t reps[2] = {2, 3}, pads[4] = {1, -1, 0, 2};
    static const int64_t axis1[1] = {1}, k1[1] = {1}, two[1] = {2};
    static const int64_t lens[2] = {3, 4};
    int64_t d4[4] = {1, 8, 2, 3}, s4[4] = {1, 2, 4, 6}, t3[3] = {4, 2, 3};
    popc_attr b2 = ai("blocksize", 2);
    popc_attr crd[2] = {ai("blocksize", 2), as("mode", "CRD")};
    popc_attr cum[2] = {ai("reverse", 1), ai("exclusive", 1)};
    popc_attr rev[2] = {ai("batch_axis", 1), ai("time_axis", 0)};
    popc_attr lower = ai("upper", 0), topk_axis = ai("axis", 1);

    fd_x("Tile", grid(2, 3, -0.5, 0.1), ints1(2, reps), NULL, 0);
    fd_x("Pad", grid(2, 3, -0.5, 0.1), ints1(4, pads), NULL, 0);
    {
        static const int64_t wide[4] = {2, 1, 1, 2};
        popc_attr reflect = as("mode", "reflect"), edge = as("mode", "edge");

        fd_x("Pad", grid(3, 4, -0.5, 0.1), ints1(4, wide), &reflect, 1);
        fd_x("Pad", grid(3, 4, -0.5, 0.1), ints1(4, wide), &edge, 1);
    }
    fd_x("DepthToSpace", shaped(d4, 4, 48, -0.5, 0.02), NULL, &b2, 1);
    fd_x("DepthToSpace", shaped(d4, 4, 48, -0.5, 0.02), NULL, crd, 2);
    fd_x("SpaceToDepth", shaped(s4, 4, 48, -0.5, 0.02), NULL, &b2, 1);
    fd_x("CumSum", grid(3, 4, -0.5, 0.1), ints(NULL, 0, axis1), NULL, 0);
    fd_x("CumSum", grid(3, 4, -0.5, 0.1), ints(NULL, 0, axis1), cum, 2);
    fd_x("ReverseSequence", shaped(t3, 3, 24, -0.5, 0.04), ints1(2, lens),
         rev, 2);
    fd_x("Trilu", grid(3, 4, -0.5, 0.1), ints(NULL, 0, k1), &lower, 1);
    fd_x("TopK", grid(3, 5, -0.5, 0.07), ints1(1, two), &topk_axis, 1);
    fd_x("Hardmax", grid(3, 5, -0.5, 0.07), NULL, NULL, 0);
}
END_TEST

START_TEST(index_gradients)
{
    static const int64_t ge[6] = {0, 3, 3, 1, 2, 2};   /* [3, 2] on axis 1 */
    static const int64_t nd[4] = {0, 1, 2, 3};         /* [2, 2] pairs */
    static const int64_t se[4] = {2, 0, 1, 2};         /* [1, 4] on axis 0 */
    static const int64_t snd[2] = {1, 2};              /* [2, 1] rows */
    int64_t ged[2] = {3, 2}, ndd[2] = {2, 2}, sed[2] = {1, 4};
    int64_t sndd[2] = {2, 1}, cd[1] = {4}, cfd[1] = {5};
    uint8_t cond[5] = {1, 0, 1, 1, 0};
    popc_attr ax1 = ai("axis", 1), ax0 = ai("axis", 0);
    popc_attr add[2] = {ai("axis", 0), as("reduction", "add")};
    popc_attr add_nd = as("reduction", "add");
    static const int data_upd[2] = {0, 2};
    popc_tensor *in[3], *c = NULL;

    fd_x("GatherElements", grid(3, 4, -0.5, 0.1), ints(ged, 2, ge), &ax1, 1);
    fd_x("GatherND", grid(3, 4, -0.5, 0.1), ints(ndd, 2, nd), NULL, 0);
    in[0] = grid(3, 4, -0.5, 0.1);
    in[1] = ints(sed, 2, se);
    in[2] = grid(1, 4, 0.3, 0.1);
    fd_ok("ScatterElements", in, 3, data_upd, 2, &ax0, 1);
    fd_ok("ScatterElements", in, 3, data_upd, 2, add, 2);
    tensor_free_all(in, 3);
    in[0] = grid(3, 4, -0.5, 0.1);
    in[1] = ints(sndd, 2, snd);
    in[2] = grid(2, 4, 0.3, 0.1);
    fd_ok("ScatterND", in, 3, data_upd, 2, NULL, 0);
    fd_ok("ScatterND", in, 3, data_upd, 2, &add_nd, 1);
    tensor_free_all(in, 3);
    ck_assert_int_eq(popc_tensor_from_data(POPC_DTYPE_BOOL, cd, 1, cond, &c),
                     POPC_OK);
    fd_x("Compress", grid(3, 4, -0.5, 0.1), c, &ax1, 1);
    ck_assert_int_eq(popc_tensor_from_data(POPC_DTYPE_BOOL, cfd, 1, cond, &c),
                     POPC_OK);
    fd_x("Compress", grid(3, 4, -0.5, 0.1), c, NULL, 0);
}
END_TEST

START_TEST(linalg_gradients)
{
    static const char *const eqs[] = {"ij,jk->ik", "bij,bjk->bik",
                                      "ij,jk", "...ij,...jk->...ik",
                                      "ij->ji", "ijk,k->ij"};
    int64_t a2[2] = {3, 4}, b2[2] = {4, 2}, a3[3] = {2, 3, 4};
    int64_t b3[3] = {2, 4, 2}, bb3[3] = {1, 4, 2}, v1[1] = {4};
    const int64_t *ad[6] = {a2, a3, a2, a3, a2, a3};
    const int64_t *bd[6] = {b2, b3, b2, bb3, NULL, v1};
    const int ar[6] = {2, 3, 2, 3, 2, 3}, br[6] = {2, 3, 2, 3, 0, 1};
    static const int both[] = {0, 1};
    int64_t m3[3] = {2, 3, 3};

    for (int i = 0; i < N_OF(eqs); i++) {
        popc_attr eq = {.name = "equation", .type = POPC_ATTR_STRING,
                        .s = eqs[i]};
        int64_t na = 1, nb = 1;
        popc_tensor *in[2];

        for (int d = 0; d < ar[i]; d++)
            na *= ad[i][d];
        for (int d = 0; d < br[i]; d++)
            nb *= bd[i][d];
        in[0] = shaped(ad[i], ar[i], na, -0.6, 0.05);
        in[1] = bd[i] ? shaped(bd[i], br[i], nb, -0.4, 0.07) : NULL;
        fd_ok("Einsum", in, bd[i] ? 2 : 1, both, bd[i] ? 2 : 1, &eq, 1);
        popc_tensor_free(in[0]);
        popc_tensor_free(in[1]);
    }
    /* DFT: complex and real signals, inverse, onesided, a cut and a
    ** padded dft_length */
    {
        int64_t cxd[3] = {2, 6, 2}, rxd[3] = {2, 6, 1};
        static const int64_t cut[1] = {4}, longer[1] = {8};
        popc_attr inv = ai("inverse", 1), one = ai("onesided", 1);

        fd_x("DFT", shaped(cxd, 3, 24, -0.6, 0.05), NULL, NULL, 0);
        fd_x("DFT", shaped(cxd, 3, 24, -0.6, 0.05), NULL, &inv, 1);
        fd_x("DFT", shaped(rxd, 3, 12, -0.6, 0.1), NULL, &one, 1);
        fd_x("DFT", shaped(rxd, 3, 12, -0.6, 0.1), ints(NULL, 0, cut), NULL,
             0);
        fd_x("DFT", shaped(cxd, 3, 24, -0.6, 0.05), ints(NULL, 0, longer),
             &one, 1);
    }
    /* Det over a batch: one invertible matrix, one singular (rank 2) */
    {
        popc_tensor *x = shaped(m3, 3, 18, -0.9, 0.13);
        float *p = popc_tensor_data(x);

        for (int j = 0; j < 3; j++)
            p[9 + 6 + j] = p[9 + j] + p[9 + 3 + j];
        fd_x("Det", x, NULL, NULL, 0);
    }
}
END_TEST

static popc_tensor *floats(const int64_t *dims, int rank, const float *v)
{
    popc_tensor *t = NULL;

    ck_assert_int_eq(popc_tensor_from_data(POPC_DTYPE_F32, dims, rank, v, &t),
                     POPC_OK);
    return t;
}

START_TEST(conv_transpose_gradients)
{
    int64_t x2[4] = {2, 4, 3, 3}, w2[4] = {4, 3, 2, 3}, b2[1] = {6};
    int64_t x1[3] = {1, 2, 5}, w1[3] = {2, 2, 3};
    static const int64_t s2[2] = {2, 1}, p2[4] = {1, 0, 0, 1}, op2[2] = {1, 0};
    static const int64_t s1[1] = {2}, d1[1] = {2};
    popc_attr a2[4] = {aints("strides", s2, 2), aints("pads", p2, 4),
                       aints("output_padding", op2, 2), ai("group", 2)};
    popc_attr a1[2] = {aints("strides", s1, 1), aints("dilations", d1, 1)};
    static const int all3[] = {0, 1, 2}, two[] = {0, 1};
    popc_tensor *in[3];

    in[0] = shaped(x2, 4, 72, -0.7, 0.02);
    in[1] = shaped(w2, 4, 72, -0.5, 0.015);
    in[2] = shaped(b2, 1, 6, -0.2, 0.1);
    fd_ok("ConvTranspose", in, 3, all3, 3, a2, 4);
    tensor_free_all(in, 3);
    in[0] = shaped(x1, 3, 10, -0.7, 0.13);
    in[1] = shaped(w1, 3, 12, -0.5, 0.09);
    fd_ok("ConvTranspose", in, 2, two, 2, a1, 2);
    tensor_free_all(in, 2);
}
END_TEST

START_TEST(norm_gradients)
{
    int64_t x4[4] = {2, 3, 2, 3}, c3[1] = {3};
    static const int64_t mvn_axes[2] = {0, 2};
    popc_attr eps = {.name = "epsilon", .type = POPC_ATTR_FLOAT, .f = 1e-3};
    popc_attr lrn[4] = {ai("size", 3),
                        {.name = "alpha", .type = POPC_ATTR_FLOAT, .f = 0.3},
                        {.name = "beta", .type = POPC_ATTR_FLOAT, .f = 0.6},
                        {.name = "bias", .type = POPC_ATTR_FLOAT, .f = 1.2}};
    popc_attr mvn = aints("axes", mvn_axes, 2);
    static const int all3[] = {0, 1, 2};
    popc_tensor *in[3];

    in[0] = shaped(x4, 4, 36, -0.9, 0.05);
    in[1] = shaped(c3, 1, 3, 0.6, 0.3);
    in[2] = shaped(c3, 1, 3, -0.2, 0.15);
    fd_ok("InstanceNormalization", in, 3, all3, 3, &eps, 1);
    tensor_free_all(in, 3);
    fd_x("MeanVarianceNormalization", shaped(x4, 4, 36, -0.9, 0.05), NULL,
         NULL, 0);
    fd_x("MeanVarianceNormalization", shaped(x4, 4, 36, -0.9, 0.05), NULL,
         &mvn, 1);
    fd_x("LRN", shaped(x4, 4, 36, -0.9, 0.05), NULL, lrn, 4);
    fd_x("GlobalMaxPool", shaped(x4, 4, 36, -0.9, 0.05), NULL, NULL, 0);
}
END_TEST

START_TEST(resize_gradients)
{
    int64_t x4[4] = {1, 2, 3, 4}, four[1] = {4};
    static const float up[4] = {1.0f, 1.0f, 2.0f, 1.5f};
    static const float down[4] = {1.0f, 1.0f, 0.7f, 0.6f};
    popc_attr lin[2] = {as("mode", "linear"),
                        as("coordinate_transformation_mode",
                           "align_corners")};
    popc_attr cub[2] = {as("mode", "cubic"), ai("exclude_outside", 1)};
    popc_attr near = as("coordinate_transformation_mode", "asymmetric");
    const popc_attr *modes[4] = {NULL, &near, lin, cub};
    const int n_attrs[4] = {0, 1, 2, 2};
    static const int wrt[] = {0};

    for (int m = 0; m < 4; m++)
        for (int k = 0; k < 2; k++) {
            popc_tensor *in[3] = {shaped(x4, 4, 24, -0.9, 0.07), NULL,
                                  floats(four, 1, k ? down : up)};

            fd_ok("Resize", in, 3, wrt, 1, modes[m], n_attrs[m]);
            popc_tensor_free(in[0]);
            popc_tensor_free(in[2]);
        }
}
END_TEST

START_TEST(sampling_gradients)
{
    int64_t xd[4] = {1, 2, 4, 5}, gd[4] = {1, 2, 4, 2};
    static const float g[16] = {-0.73f, 0.17f, -0.41f, 0.58f, -0.12f,
                                -0.73f, 0.33f, -0.41f, 0.95f, 0.33f,
                                -0.97f, -0.12f, 0.58f, 0.95f, 0.17f,
                                -0.97f};
    static const char *const pads[3] = {"zeros", "border", "reflection"};
    static const char *const modes[3] = {"bilinear", "bicubic", "nearest"};
    static const int both[] = {0, 1}, x_only[] = {0};

    for (int m = 0; m < 3; m++)
        for (int p = 0; p < 3; p++)
            for (int align = 0; align < 2; align++) {
                popc_attr a[3] = {as("mode", modes[m]),
                                  as("padding_mode", pads[p]),
                                  ai("align_corners", align)};
                popc_tensor *in[2] = {shaped(xd, 4, 40, -0.9, 0.045),
                                      floats(gd, 4, g)};

                /* nearest: the grid has no gradient; bicubic and
                ** reflection or border move taps, not the coordinate */
                fd_ok("GridSample", in, 2, m == 0 ? both : x_only,
                      m == 0 ? 2 : 1, a, 3);
                tensor_free_all(in, 2);
            }
    {
        /* MaxUnpool of a 2x2 pool's indices */
        int64_t xu[4] = {1, 1, 2, 2}, k2[2] = {2, 2};
        static const int64_t idx[4] = {1, 6, 8, 15};
        popc_attr a[2] = {aints("kernel_shape", k2, 2),
                          aints("strides", k2, 2)};
        popc_tensor *in[2] = {shaped(xu, 4, 4, -0.5, 0.3),
                              ints(xu, 4, idx)};

        fd_ok("MaxUnpool", in, 2, x_only, 1, a, 2);
        tensor_free_all(in, 2);
    }
}
END_TEST

/* ---- control flow: bodies built with the graph API ------------------------ */

#define OKG(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

static int gnode(popc_graph *g, const char *op, int a, int b)
{
    int in[2] = {a, b}, out;

    OKG(popc_graph_add_node(g, NULL, op, 0, in, b >= 0 ? 2 : 1, &out, 1,
                            NULL, 0, NULL, NULL));
    return out;
}

static int ginput(popc_graph *g, const char *name, popc_dtype dt,
                  const int64_t *dims, int rank)
{
    int id;

    OKG(popc_graph_add_input(g, name, dt, dims, rank, &id));
    return id;
}

/* fd_ok with n_out outputs */
static void fd_ok_n(const char *op, popc_tensor **in, int n_in,
                    const int *wrt, int n_wrt, const popc_attr *a, int na,
                    int n_out)
{
    char why[1024];
    popc_status st = fd_check_op_ex(NULL, op, in, n_in, wrt, n_wrt, a, na,
                                    n_out, 1, 1e-3, why, sizeof why);

    ck_assert_msg(st == POPC_OK, "%s: %s", op, why);
}

START_TEST(if_gradients)
{
    int64_t d[2] = {2, 3};
    popc_graph *then_g = NULL, *else_g = NULL;
    popc_attr a[3];
    int c;

    /* then: c * c + sin(c); else: tanh(c) * c, both reading the capture */
    OKG(popc_graph_new("then", &then_g));
    c = ginput(then_g, "c", POPC_DTYPE_F32, d, 2);
    OKG(popc_graph_add_output(then_g, gnode(then_g, "Add",
                                            gnode(then_g, "Mul", c, c),
                                            gnode(then_g, "Sin", c, -1))));
    OKG(popc_graph_new("else", &else_g));
    c = ginput(else_g, "c", POPC_DTYPE_F32, d, 2);
    OKG(popc_graph_add_output(else_g, gnode(else_g, "Mul",
                                            gnode(else_g, "Tanh", c, -1), c)));
    a[0] = agraph("then_branch", then_g);
    a[1] = agraph("else_branch", else_g);
    a[2] = ai("__captures", 1);
    for (int taken = 0; taken < 2; taken++) {
        int64_t one[1] = {1};
        uint8_t cond = (uint8_t)taken;
        popc_tensor *in[2] = {NULL, grid(2, 3, -0.7, 0.11)};
        static const int wrt[] = {1};

        OKG(popc_tensor_from_data(POPC_DTYPE_BOOL, one, 1, &cond, &in[0]));
        fd_ok("If", in, 2, wrt, 1, a, 3);
        tensor_free_all(in, 2);
    }
    popc_graph_free(then_g);
    popc_graph_free(else_g);
}
END_TEST

START_TEST(scan_gradients)
{
    int64_t sd[1] = {3}, xd[3] = {2, 4, 3};
    popc_graph *body = NULL;
    int s, x, w, s2;
    static const int64_t axis1[1] = {1}, rev[1] = {1};
    popc_attr a[5];
    static const int all3[] = {0, 1, 2};

    /* s' = tanh(s + x_t * w); y = s' * x_t; w captured */
    OKG(popc_graph_new("body", &body));
    s = ginput(body, "s", POPC_DTYPE_F32, sd, 1);
    x = ginput(body, "x", POPC_DTYPE_F32, sd, 1);
    w = ginput(body, "w", POPC_DTYPE_F32, sd, 1);
    s2 = gnode(body, "Tanh", gnode(body, "Add", s, gnode(body, "Mul", x, w)),
               -1);
    OKG(popc_graph_add_output(body, s2));
    OKG(popc_graph_add_output(body, gnode(body, "Mul", s2, x)));
    a[0] = agraph("body", body);
    a[1] = ai("num_scan_inputs", 1);
    a[2] = ai("__captures", 1);
    a[3] = aints("scan_input_axes", axis1, 1);
    a[4] = aints("scan_input_directions", rev, 1);
    {
        /* x [4, 3] scanned along axis 0 */
        int64_t x2[2] = {4, 3};
        popc_tensor *in[3] = {shaped(sd, 1, 3, 0.1, 0.2),
                              shaped(x2, 2, 12, -0.6, 0.1),
                              shaped(sd, 1, 3, 0.4, 0.15)};

        fd_ok_n("Scan", in, 3, all3, 3, a, 3, 2);
        tensor_free_all(in, 3);
    }
    popc_graph_free(body);
    /* along axis 1, reversed: elements [2, 3], states [2, 3] */
    {
        int64_t s23[2] = {2, 3};
        popc_tensor *in[3];

        OKG(popc_graph_new("body2", &body));
        s = ginput(body, "s", POPC_DTYPE_F32, s23, 2);
        x = ginput(body, "x", POPC_DTYPE_F32, s23, 2);
        w = ginput(body, "w", POPC_DTYPE_F32, s23, 2);
        s2 = gnode(body, "Tanh",
                   gnode(body, "Add", s, gnode(body, "Mul", x, w)), -1);
        OKG(popc_graph_add_output(body, s2));
        OKG(popc_graph_add_output(body, gnode(body, "Mul", s2, x)));
        a[0] = agraph("body", body);
        in[0] = shaped(s23, 2, 6, 0.1, 0.1);
        in[1] = shaped(xd, 3, 24, -0.6, 0.05);
        in[2] = shaped(s23, 2, 6, 0.4, 0.07);
        fd_ok_n("Scan", in, 3, all3, 3, a, 5, 2);
        tensor_free_all(in, 3);
        popc_graph_free(body);
    }
}
END_TEST

START_TEST(loop_gradients)
{
    int64_t vd[2] = {2, 3};
    popc_graph *body = NULL;
    int it, cond, v, w, v2;
    popc_attr a[2];
    static const int64_t three = 3;
    popc_tensor *in[4] = {NULL, NULL, shaped(vd, 2, 6, -0.5, 0.13),
                          shaped(vd, 2, 6, 0.3, 0.1)};
    static const int wrt[] = {2, 3};

    /* v' = tanh(mean(24 copies of v) w + iter); scan = v' + w; w captured */
    OKG(popc_graph_new("body", &body));
    it = ginput(body, "iter", POPC_DTYPE_I64, NULL, 0);
    cond = ginput(body, "cond", POPC_DTYPE_BOOL, NULL, 0);
    v = ginput(body, "v", POPC_DTYPE_F32, vd, 2);
    w = ginput(body, "w", POPC_DTYPE_F32, vd, 2);
    {
        popc_attr to = ai("to", 1);
        int itf;

        OKG(popc_graph_add_node(body, NULL, "Cast", 0, &it, 1, &itf, 1, &to,
                                1, NULL, NULL));
        /* a Sum repeating one value 24 times: more node inputs than the
        ** body has values (grad_inline sizes by arity) */
        int copies[24], vs;

        for (int k = 0; k < 24; k++)
            copies[k] = v;
        OKG(popc_graph_add_node(body, NULL, "Sum", 0, copies, 24, &vs, 1,
                                NULL, 0, NULL, NULL));
        {
            /* scaled back: the mean of the copies */
            float k = 1.0f / 24.0f;
            popc_tensor *kt = NULL;
            int kid;

            OKG(popc_tensor_from_data(POPC_DTYPE_F32, NULL, 0, &k, &kt));
            OKG(popc_graph_add_constant(body, NULL, kt, &kid));
            popc_tensor_free(kt);
            vs = gnode(body, "Mul", vs, kid);
        }
        v2 = gnode(body, "Tanh",
                   gnode(body, "Add", gnode(body, "Mul", vs, w), itf), -1);
    }
    OKG(popc_graph_add_output(body, gnode(body, "Identity", cond, -1)));
    OKG(popc_graph_add_output(body, v2));
    OKG(popc_graph_add_output(body, gnode(body, "Add", v2, w)));
    a[0] = agraph("body", body);
    a[1] = ai("__captures", 1);
    OKG(popc_tensor_from_data(POPC_DTYPE_I64, NULL, 0, &three, &in[0]));
    fd_ok_n("Loop", in, 4, wrt, 2, a, 2, 2);
    tensor_free_all(in, 4);
    popc_graph_free(body);
}
END_TEST

static Suite *grads_suite(void)
{
    Suite *s = suite_create("op_onnx_grads");
    TCase *tc = tcase_create("wide");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, wide_unary_gradients);
    tcase_add_test(tc, wide_attribute_gradients);
    tcase_add_test(tc, wide_binary_gradients);
    tcase_add_test(tc, castlike_gradient);
    suite_add_tcase(s, tc);
    tc = tcase_create("tensor");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, reduction_gradients);
    tcase_add_test(tc, arrange_gradients);
    tcase_add_test(tc, index_gradients);
    tcase_add_test(tc, linalg_gradients);
    suite_add_tcase(s, tc);
    tc = tcase_create("nn");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, conv_transpose_gradients);
    tcase_add_test(tc, norm_gradients);
    tcase_add_test(tc, resize_gradients);
    tcase_add_test(tc, sampling_gradients);
    suite_add_tcase(s, tc);
    tc = tcase_create("flow");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, if_gradients);
    tcase_add_test(tc, scan_gradients);
    tcase_add_test(tc, loop_gradients);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(grads_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
