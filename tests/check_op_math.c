/* check_op_math.c - the "math" op plugin: every op run through the op
** harness (whole and split in 3 parts, bitwise equal), compared with numpy
** and torch results from tests/ref/gen_ops_math.py and hand-computed
** values, plus the error paths of shape and attribute checking. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/harness/fd_check.h"
#include "tests/harness/op_expect.h"
#include "tests/harness/op_harness.h"

/* ---- helpers ------------------------------------------------------------ */

static popc_tensor *ref(const char *name)
{
    char path[256];
    popc_tensor *t;

    snprintf(path, sizeof path, "ops/%s", name);
    t = harness_ref(path);
    ck_assert_msg(t != NULL, "reference %s: %s", path, popc_last_error());
    return t;
}

static popc_tensor *scalar_f32(float v)
{
    return expect_tensor(POPC_DTYPE_F32, NULL, 0, &v);
}

static void expect_ref(popc_tensor *got, const char *name, double atol,
                       double rtol)
{
    popc_tensor *w = ref(name);

    expect_close(got, w, atol, rtol);
    popc_tensor_free(w);
    popc_tensor_free(got);
}

static void free_all(popc_tensor **t, int n)
{
    for (int i = 0; i < n; i++)
        popc_tensor_free(t[i]);
}

/* ---- arithmetic ---------------------------------------------------------- */

START_TEST(binary_broadcast_matches_numpy)
{
    popc_tensor *in[2] = {ref("add_bcast_a"), ref("add_bcast_b")};
    popc_tensor *dv[2] = {in[0], ref("div_bcast_d")};

    /* numpy rounds float32 arithmetic the same way: exact */
    expect_ref(expect_run(NULL, "Add", in, 2, NULL, 0, 0), "add_bcast_out", 0,
               0);
    expect_ref(expect_run(NULL, "Sub", in, 2, NULL, 0, 0), "sub_bcast_out", 0,
               0);
    expect_ref(expect_run(NULL, "Mul", in, 2, NULL, 0, 0), "mul_bcast_out", 0,
               0);
    expect_ref(expect_run(NULL, "Div", dv, 2, NULL, 0, 0), "div_bcast_out", 0,
               0);
    free_all(in, 2);
    popc_tensor_free(dv[1]);
}
END_TEST

START_TEST(broadcast_either_side_and_scalars)
{
    const int64_t d1[2] = {3, 1}, d2[1] = {4};
    const float a[3] = {1, 2, 3}, b[4] = {10, 20, 30, 40};
    popc_tensor *in[2] = {expect_tensor(POPC_DTYPE_F32, d2, 1, b),
                          expect_tensor(POPC_DTYPE_F32, d1, 2, a)};
    popc_tensor *out = expect_run(NULL, "Sub", in, 2, NULL, 0, 0);
    const float *o = popc_tensor_cdata(out);
    popc_tensor *sc[2];

    ck_assert_int_eq(popc_tensor_rank(out), 2);
    ck_assert_int_eq(popc_tensor_dims(out)[0], 3);
    ck_assert_int_eq(popc_tensor_dims(out)[1], 4);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            ck_assert_float_eq(o[i * 4 + j], b[j] - a[i]);
    popc_tensor_free(out);
    /* scalar * tensor keeps the tensor's shape */
    sc[0] = scalar_f32(0.5f);
    sc[1] = in[0];
    out = expect_run(NULL, "Mul", sc, 2, NULL, 0, 0);
    ck_assert_int_eq(popc_tensor_rank(out), 1);
    ck_assert_float_eq(((const float *)popc_tensor_cdata(out))[3], 20.0f);
    popc_tensor_free(out);
    popc_tensor_free(sc[0]);
    free_all(in, 2);
}
END_TEST

START_TEST(integer_arithmetic_wraps_and_truncates)
{
    const int64_t d[1] = {6};
    const int32_t a[6] = {7, -7, 7, -7, INT32_MIN, 5};
    const int32_t b[6] = {2, 2, -2, 0, -1, 3};
    popc_tensor *in[2] = {expect_tensor(POPC_DTYPE_I32, d, 1, a),
                          expect_tensor(POPC_DTYPE_I32, d, 1, b)};
    popc_tensor *q = expect_run(NULL, "Div", in, 2, NULL, 0, 0);
    popc_tensor *s = expect_run(NULL, "Add", in, 2, NULL, 0, 0);
    popc_tensor *n = expect_run(NULL, "Neg", in, 1, NULL, 0, 0);
    const int32_t want_q[6] = {3, -3, -3, 0, INT32_MIN, 1};
    const int32_t want_s[6] = {9, -5, 5, -7, INT32_MAX, 8};

    ck_assert_int_eq(popc_tensor_dtype(q), POPC_DTYPE_I32);
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(((const int32_t *)popc_tensor_cdata(q))[i],
                         want_q[i]);
        ck_assert_int_eq(((const int32_t *)popc_tensor_cdata(s))[i],
                         want_s[i]);
    }
    ck_assert_int_eq(((const int32_t *)popc_tensor_cdata(n))[4], INT32_MIN);
    ck_assert_int_eq(((const int32_t *)popc_tensor_cdata(n))[1], 7);
    popc_tensor_free(q);
    popc_tensor_free(s);
    popc_tensor_free(n);
    free_all(in, 2);
}
END_TEST

START_TEST(int64_mul_abs)
{
    const int64_t d[1] = {3};
    const int64_t a[3] = {-3000000000LL, 4, -1};
    const int64_t b[3] = {3, -5, -1};
    popc_tensor *in[2] = {expect_tensor(POPC_DTYPE_I64, d, 1, a),
                          expect_tensor(POPC_DTYPE_I64, d, 1, b)};
    popc_tensor *m = expect_run(NULL, "Mul", in, 2, NULL, 0, 0);
    popc_tensor *ab = expect_run(NULL, "Abs", in, 1, NULL, 0, 0);
    const int64_t *mp = popc_tensor_cdata(m), *ap = popc_tensor_cdata(ab);

    ck_assert(mp[0] == -9000000000LL && mp[1] == -20 && mp[2] == 1);
    ck_assert(ap[0] == 3000000000LL && ap[1] == 4 && ap[2] == 1);
    popc_tensor_free(m);
    popc_tensor_free(ab);
    free_all(in, 2);
}
END_TEST

START_TEST(pow_and_unary_match_numpy)
{
    popc_tensor *pw[2] = {ref("pow_a"), ref("pow_b")};
    popc_tensor *p = ref("unary_pos"), *x = ref("unary_x");

    expect_ref(expect_run(NULL, "Pow", pw, 2, NULL, 0, 0), "pow_out", 1e-6,
               1e-6);
    expect_ref(expect_run(NULL, "Sqrt", &p, 1, NULL, 0, 0), "sqrt_out", 0, 0);
    expect_ref(expect_run(NULL, "Log", &p, 1, NULL, 0, 0), "log_out", 1e-7,
               1e-6);
    expect_ref(expect_run(NULL, "Exp", &x, 1, NULL, 0, 0), "exp_out", 0, 1e-6);
    expect_ref(expect_run(NULL, "Reciprocal", &p, 1, NULL, 0, 0),
               "reciprocal_out", 0, 0);
    free_all(pw, 2);
    popc_tensor_free(p);
    popc_tensor_free(x);
}
END_TEST

START_TEST(neg_abs_float)
{
    const int64_t d[1] = {4};
    const float a[4] = {-1.5f, 0.0f, 2.0f, -0.0f};
    popc_tensor *x = expect_tensor(POPC_DTYPE_F32, d, 1, a);
    popc_tensor *n = expect_run(NULL, "Neg", &x, 1, NULL, 0, 0);
    popc_tensor *ab = expect_run(NULL, "Abs", &x, 1, NULL, 0, 0);

    for (int i = 0; i < 4; i++) {
        ck_assert_float_eq(((const float *)popc_tensor_cdata(n))[i], -a[i]);
        ck_assert_float_eq(((const float *)popc_tensor_cdata(ab))[i],
                           fabsf(a[i]));
    }
    popc_tensor_free(n);
    popc_tensor_free(ab);
    popc_tensor_free(x);
}
END_TEST

START_TEST(sum_variadic_broadcasts)
{
    popc_tensor *in[3] = {ref("sum3_a"), ref("sum3_b"), ref("sum3_c")};
    popc_tensor *one;

    expect_ref(expect_run(NULL, "Sum", in, 3, NULL, 0, 0), "sum3_out", 0, 0);
    one = expect_run(NULL, "Sum", in, 1, NULL, 0, 0);
    ck_assert(popc_tensor_equal(one, in[0]));
    popc_tensor_free(one);
    free_all(in, 3);
}
END_TEST

START_TEST(max_min_mean_fold)
{
    popc_tensor *in[3] = {ref("sum3_a"), ref("sum3_b"), ref("sum3_c")};
    const int64_t d[1] = {3};
    const float a[3] = {NAN, 1.0f, -2.0f}, b[3] = {0.0f, NAN, -3.0f};
    popc_tensor *nan_in[2] = {expect_tensor(POPC_DTYPE_F32, d, 1, a),
                              expect_tensor(POPC_DTYPE_F32, d, 1, b)};
    popc_tensor *mx;
    const float *m;

    expect_ref(expect_run(NULL, "Max", in, 3, NULL, 0, 0), "max3_out", 0, 0);
    expect_ref(expect_run(NULL, "Min", in, 3, NULL, 0, 0), "min3_out", 0, 0);
    expect_ref(expect_run(NULL, "Mean", in, 3, NULL, 0, 0), "mean3_out", 0, 0);
    /* NaN wins from either side, like torch.maximum */
    mx = expect_run(NULL, "Max", nan_in, 2, NULL, 0, 0);
    m = popc_tensor_cdata(mx);
    ck_assert(isnan(m[0]) && isnan(m[1]) && m[2] == -2.0f);
    popc_tensor_free(mx);
    free_all(nan_in, 2);
    free_all(in, 3);
}
END_TEST

START_TEST(empty_broadcast)
{
    const int64_t d0[2] = {0, 3}, d3[1] = {3};
    const float b[3] = {1, 2, 3};
    popc_tensor *in[2] = {NULL, expect_tensor(POPC_DTYPE_F32, d3, 1, b)}, *y;

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, d0, 2, &in[0]));
    y = expect_run(NULL, "Add", in, 2, NULL, 0, 0);
    ck_assert_int_eq(popc_tensor_rank(y), 2);
    ck_assert_int_eq(popc_tensor_numel(y), 0);
    popc_tensor_free(y);
    y = expect_run(NULL, "Gelu", in, 1, NULL, 0, 0);
    ck_assert_int_eq(popc_tensor_numel(y), 0);
    popc_tensor_free(y);
    free_all(in, 2);
}
END_TEST

START_TEST(float16_add_matches_numpy)
{
    popc_tensor *in[2] = {ref("add_f16_a"), ref("add_f16_b")};
    popc_tensor *want = ref("add_f16_out");
    popc_tensor *got = expect_run(NULL, "Add", in, 2, NULL, 0, 0);

    ck_assert_int_eq(popc_tensor_dtype(got), POPC_DTYPE_F16);
    ck_assert(popc_tensor_equal(got, want));
    popc_tensor_free(got);
    popc_tensor_free(want);
    free_all(in, 2);
}
END_TEST

START_TEST(comparisons_give_bool)
{
    const int64_t d[1] = {4};
    const float a[4] = {1, 2, 3, NAN}, b[4] = {2, 2, 2, 2};
    const int32_t ia[4] = {1, 2, 3, 4}, ib[1] = {3};
    popc_tensor *in[2] = {expect_tensor(POPC_DTYPE_F32, d, 1, a),
                          expect_tensor(POPC_DTYPE_F32, d, 1, b)};
    const int64_t d1[1] = {1};
    popc_tensor *ii[2] = {expect_tensor(POPC_DTYPE_I32, d, 1, ia),
                          expect_tensor(POPC_DTYPE_I32, d1, 1, ib)};
    static const struct {
        const char *op;
        uint8_t f[4], i[4];
    } cases[] = {
        {"Equal", {0, 1, 0, 0}, {0, 0, 1, 0}},
        {"Less", {1, 0, 0, 0}, {1, 1, 0, 0}},
        {"Greater", {0, 0, 1, 0}, {0, 0, 0, 1}},
        {"LessOrEqual", {1, 1, 0, 0}, {1, 1, 1, 0}},
        {"GreaterOrEqual", {0, 1, 1, 0}, {0, 0, 1, 1}},
    };
    popc_tensor *nt;

    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        popc_tensor *f = expect_run(NULL, cases[c].op, in, 2, NULL, 0, 0);
        popc_tensor *i = expect_run(NULL, cases[c].op, ii, 2, NULL, 0, 0);

        ck_assert_int_eq(popc_tensor_dtype(f), POPC_DTYPE_BOOL);
        ck_assert(memcmp(popc_tensor_cdata(f), cases[c].f, 4) == 0);
        ck_assert(memcmp(popc_tensor_cdata(i), cases[c].i, 4) == 0);
        if (c == 0) {
            nt = expect_run(NULL, "Not", &f, 1, NULL, 0, 0);
            ck_assert(memcmp(popc_tensor_cdata(nt), "\1\0\1\1", 4) == 0);
            popc_tensor_free(nt);
        }
        popc_tensor_free(f);
        popc_tensor_free(i);
    }
    free_all(in, 2);
    free_all(ii, 2);
}
END_TEST

START_TEST(arith_errors_name_node_and_shapes)
{
    const int64_t d1[2] = {2, 3}, d2[2] = {4, 3};
    const float z[12] = {0};
    const int32_t zi[6] = {0};
    popc_tensor *in[2] = {expect_tensor(POPC_DTYPE_F32, d1, 2, z),
                          expect_tensor(POPC_DTYPE_F32, d2, 2, z)};
    popc_tensor *mixed[2] = {in[0], expect_tensor(POPC_DTYPE_I32, d1, 2, zi)};

    expect_error(NULL, "Add", in, 2, NULL, 0, POPC_EINVAL, "[2, 3]",
                 "[4, 3]");
    ASSERT_HAS(popc_last_error(), "Add 'Add'");
    expect_error(NULL, "Mul", mixed, 2, NULL, 0, POPC_EINVAL, "float32",
                 "int32");
    expect_error(NULL, "Sqrt", &mixed[1], 1, NULL, 0, POPC_EINVAL, "int32",
                 "Sqrt");
    free_all(in, 2);
    popc_tensor_free(mixed[1]);
}
END_TEST

/* ---- activations
 * ------------------------------------------------------------ */

START_TEST(activations_match_torch)
{
    popc_tensor *x = ref("act_x");
    popc_attr leaky = popc_attr_make_float("alpha", 0.2);
    popc_attr tanh_mode = popc_attr_make_string("approximate", "tanh");
    popc_attr none_mode = popc_attr_make_string("approximate", "none");

    expect_ref(expect_run(NULL, "Relu", &x, 1, NULL, 0, 0), "relu_out", 0, 0);
    expect_ref(expect_run(NULL, "LeakyRelu", &x, 1, &leaky, 1, 0), "leaky_out",
               0, 0);
    expect_ref(expect_run(NULL, "Gelu", &x, 1, NULL, 0, 0), "gelu_out", 1e-6,
               1e-6);
    expect_ref(expect_run(NULL, "Gelu", &x, 1, &none_mode, 1, 0), "gelu_out",
               1e-6, 1e-6);
    expect_ref(expect_run(NULL, "Gelu", &x, 1, &tanh_mode, 1, 0),
               "gelu_tanh_out", 1e-6, 1e-6);
    expect_ref(expect_run(NULL, "Sigmoid", &x, 1, NULL, 0, 0), "sigmoid_out",
               1e-7, 1e-6);
    expect_ref(expect_run(NULL, "Tanh", &x, 1, NULL, 0, 0), "tanh_out", 1e-7,
               1e-6);
    leaky = popc_attr_make_float("alpha", 0.7);
    expect_ref(expect_run(NULL, "Elu", &x, 1, &leaky, 1, 0), "elu_out", 1e-7,
               1e-6);
    leaky = popc_attr_make_float("alpha", 0.5);
    expect_ref(expect_run(NULL, "Celu", &x, 1, &leaky, 1, 0), "celu_out", 1e-7,
               1e-6);
    expect_ref(expect_run(NULL, "Softplus", &x, 1, NULL, 0, 0), "softplus_out",
               1e-7, 1e-6);
    expect_ref(expect_run(NULL, "Erf", &x, 1, NULL, 0, 0), "erf_out", 1e-7,
               1e-6);
    expect_ref(expect_run(NULL, "Sin", &x, 1, NULL, 0, 0), "sin_out", 1e-7,
               1e-6);
    expect_ref(expect_run(NULL, "Cos", &x, 1, NULL, 0, 0), "cos_out", 1e-7,
               1e-6);
    popc_tensor_free(x);
}
END_TEST

START_TEST(leaky_relu_default_alpha)
{
    const int64_t d[1] = {2};
    const float a[2] = {-2.0f, 3.0f};
    popc_tensor *x = expect_tensor(POPC_DTYPE_F32, d, 1, a);
    popc_tensor *y = expect_run(NULL, "LeakyRelu", &x, 1, NULL, 0, 0);

    ck_assert_float_eq(((const float *)popc_tensor_cdata(y))[0], -0.02f);
    ck_assert_float_eq(((const float *)popc_tensor_cdata(y))[1], 3.0f);
    popc_tensor_free(y);
    popc_tensor_free(x);
}
END_TEST

START_TEST(gelu_float16)
{
    popc_tensor *x = ref("gelu_f16_x"), *want = ref("gelu_f16_out");
    popc_tensor *got = expect_run(NULL, "Gelu", &x, 1, NULL, 0, 0);
    popc_tensor *g32, *w32;

    ck_assert_int_eq(popc_tensor_dtype(got), POPC_DTYPE_F16);
    ASSERT_OK(popc_tensor_cast(got, POPC_DTYPE_F32, &g32));
    ASSERT_OK(popc_tensor_cast(want, POPC_DTYPE_F32, &w32));
    /* torch's float32 result rounded to float16, within float16 precision
    ** (in the x < -3 tail 1 + erf cancels and libm and torch differ) */
    expect_close(g32, w32, 1e-6, 1.0 / 512);
    popc_tensor_free(g32);
    popc_tensor_free(w32);
    popc_tensor_free(got);
    popc_tensor_free(want);
    popc_tensor_free(x);
}
END_TEST

START_TEST(clip_optional_bounds)
{
    popc_tensor *x = ref("act_x");
    popc_tensor *lo = scalar_f32(-1.5f), *hi = scalar_f32(2.0f);
    popc_tensor *both[3] = {x, lo, hi}, *only_max[3] = {x, NULL, NULL};
    popc_tensor *none;
    const int64_t d[1] = {3};
    const int64_t iv[3] = {-5, 3, 9}, ilo = 0, ihi = 4;
    popc_tensor *ix[3] = {expect_tensor(POPC_DTYPE_I64, d, 1, iv),
                          expect_tensor(POPC_DTYPE_I64, NULL, 0, &ilo),
                          expect_tensor(POPC_DTYPE_I64, NULL, 0, &ihi)};
    popc_tensor *ic;

    expect_ref(expect_run(NULL, "Clip", both, 3, NULL, 0, 0), "clip_out", 0,
               0);
    only_max[2] = scalar_f32(0.5f);
    expect_ref(expect_run(NULL, "Clip", only_max, 3, NULL, 0, 0),
               "clip_max_out", 0, 0);
    none = expect_run(NULL, "Clip", &x, 1, NULL, 0, 0);
    ck_assert(popc_tensor_equal(none, x));
    ic = expect_run(NULL, "Clip", ix, 3, NULL, 0, 0);
    ck_assert(((const int64_t *)popc_tensor_cdata(ic))[0] == 0 &&
              ((const int64_t *)popc_tensor_cdata(ic))[1] == 3 &&
              ((const int64_t *)popc_tensor_cdata(ic))[2] == 4);
    /* a bound that is not a scalar is refused */
    both[1] = x;
    expect_error(NULL, "Clip", both, 2, NULL, 0, POPC_EINVAL, "min",
                 "scalar");
    popc_tensor_free(ic);
    popc_tensor_free(none);
    popc_tensor_free(only_max[2]);
    free_all(ix, 3);
    popc_tensor_free(lo);
    popc_tensor_free(hi);
    popc_tensor_free(x);
}
END_TEST

START_TEST(gelu_bad_mode)
{
    popc_tensor *x = scalar_f32(1.0f);
    popc_attr a = popc_attr_make_string("approximate", "fast");

    expect_error(NULL, "Gelu", &x, 1, &a, 1, POPC_EINVAL, "fast", "tanh");
    popc_tensor_free(x);
}
END_TEST

/* ---- gradient helpers
 * ------------------------------------------------------------ */

START_TEST(activation_grads_match_torch)
{
    popc_tensor *x = ref("act_x"), *dy = ref("act_dy");
    popc_attr leaky = popc_attr_make_float("alpha", 0.2);
    popc_attr tanh_mode = popc_attr_make_string("approximate", "tanh");
    popc_tensor *y, *in[2] = {dy, x};
    popc_tensor *lo = scalar_f32(-1.5f), *hi = scalar_f32(2.0f);
    popc_tensor *clip_in[4] = {dy, x, lo, hi};

    /* helpers saving the output take (dY, Y) */
    y = expect_run(NULL, "Relu", &x, 1, NULL, 0, 0);
    in[1] = y;
    expect_ref(expect_run("popc", "ReluGrad", in, 2, NULL, 0, 0), "relu_dx", 0,
               0);
    popc_tensor_free(y);
    y = expect_run(NULL, "Sigmoid", &x, 1, NULL, 0, 0);
    in[1] = y;
    expect_ref(expect_run("popc", "SigmoidGrad", in, 2, NULL, 0, 0),
               "sigmoid_dx", 1e-7, 1e-5);
    popc_tensor_free(y);
    y = expect_run(NULL, "Tanh", &x, 1, NULL, 0, 0);
    in[1] = y;
    expect_ref(expect_run("popc", "TanhGrad", in, 2, NULL, 0, 0), "tanh_dx",
               1e-6, 1e-5);
    popc_tensor_free(y);
    /* the others take (dY, X) */
    in[1] = x;
    expect_ref(expect_run("popc", "LeakyReluGrad", in, 2, &leaky, 1, 0),
               "leaky_dx", 0, 0);
    /* torch's vectorised erf/tanh differ from libm's by a few ulp where
    ** 1 + erf or 1 + tanh cancels (x < -5): a tiny absolute slack */
    expect_ref(expect_run("popc", "GeluGrad", in, 2, NULL, 0, 0), "gelu_dx",
               3e-6, 1e-5);
    expect_ref(expect_run("popc", "GeluGrad", in, 2, &tanh_mode, 1, 0),
               "gelu_tanh_dx", 3e-6, 1e-5);
    expect_ref(expect_run("popc", "ClipGrad", clip_in, 4, NULL, 0, 0),
               "clip_dx", 0, 0);
    leaky = popc_attr_make_float("alpha", 0.7);
    expect_ref(expect_run("popc", "EluGrad", in, 2, &leaky, 1, 0), "elu_dx",
               1e-7, 1e-5);
    leaky = popc_attr_make_float("alpha", 0.5);
    expect_ref(expect_run("popc", "CeluGrad", in, 2, &leaky, 1, 0), "celu_dx",
               1e-7, 1e-5);
    expect_ref(expect_run("popc", "SoftplusGrad", in, 2, NULL, 0, 0),
               "softplus_dx", 1e-7, 1e-5);
    expect_ref(expect_run("popc", "ErfGrad", in, 2, NULL, 0, 0), "erf_dx",
               1e-7, 1e-5);
    popc_tensor_free(lo);
    popc_tensor_free(hi);
    popc_tensor_free(x);
    popc_tensor_free(dy);
}
END_TEST

START_TEST(arith_grads_match_torch)
{
    popc_tensor *p = ref("unary_pos"), *x = ref("unary_x");
    popc_tensor *dy = ref("unary_dy"), *y, *in[3];
    popc_tensor *out[2];

    y = expect_run(NULL, "Sqrt", &p, 1, NULL, 0, 0);
    in[0] = dy;
    in[1] = y;
    expect_ref(expect_run("popc", "SqrtGrad", in, 2, NULL, 0, 0), "sqrt_dx",
               1e-7, 1e-6);
    popc_tensor_free(y);
    in[1] = x;
    expect_ref(expect_run("popc", "AbsGrad", in, 2, NULL, 0, 0), "abs_dx", 0,
               0);
    in[0] = ref("pow_dz");
    in[1] = ref("pow_a");
    in[2] = ref("pow_b");
    ASSERT_OK(harness_run_op("popc", "PowGrad", in, 3, NULL, 0, out, 2, 0));
    expect_ref(out[0], "pow_da", 1e-6, 1e-5);
    expect_ref(out[1], "pow_db", 1e-6, 1e-5);
    free_all(in, 3);
    popc_tensor_free(p);
    popc_tensor_free(x);
    popc_tensor_free(dy);
}
END_TEST

/* ---- Where, Cast, Identity, Constant
 * ---------------------------------------------- */

START_TEST(where_broadcasts_any_dtype)
{
    const int64_t dc[2] = {2, 1}, dx[1] = {3};
    const uint8_t c[2] = {1, 0};
    const int64_t x[3] = {1, 2, 3}, y = -1;
    const uint16_t hx[3] = {0x3c00, 0x4000, 0x4200}, hy = 0xbc00;
    popc_tensor *in[3] = {expect_tensor(POPC_DTYPE_BOOL, dc, 2, c),
                          expect_tensor(POPC_DTYPE_I64, dx, 1, x),
                          expect_tensor(POPC_DTYPE_I64, NULL, 0, &y)};
    popc_tensor *out = expect_run(NULL, "Where", in, 3, NULL, 0, 0);
    const int64_t want[6] = {1, 2, 3, -1, -1, -1};
    popc_tensor *h[3] = {in[0], expect_tensor(POPC_DTYPE_F16, dx, 1, hx),
                         expect_tensor(POPC_DTYPE_F16, NULL, 0, &hy)};
    popc_tensor *ho;

    ck_assert_int_eq(popc_tensor_rank(out), 2);
    ck_assert(memcmp(popc_tensor_cdata(out), want, sizeof want) == 0);
    ho = expect_run(NULL, "Where", h, 3, NULL, 0, 0);
    ck_assert_uint_eq(((const uint16_t *)popc_tensor_cdata(ho))[2], 0x4200);
    ck_assert_uint_eq(((const uint16_t *)popc_tensor_cdata(ho))[4], 0xbc00);
    /* a float condition is refused */
    h[0] = h[1];
    expect_error(NULL, "Where", h, 3, NULL, 0, POPC_EINVAL, "bool", NULL);
    popc_tensor_free(ho);
    popc_tensor_free(h[1]);
    popc_tensor_free(h[2]);
    popc_tensor_free(out);
    free_all(in, 3);
}
END_TEST

START_TEST(cast_between_types)
{
    const int64_t d[1] = {6};
    const float f[6] = {1.9f, -1.9f, 3e10f, NAN, 0.0f, 65504.0f};
    popc_tensor *x = expect_tensor(POPC_DTYPE_F32, d, 1, f);
    popc_attr to = popc_attr_make_int("to", 6);
    popc_tensor *i32 = expect_run(NULL, "Cast", &x, 1, &to, 1, 0);
    const int32_t *ip = popc_tensor_cdata(i32);
    popc_tensor *h, *b, *back, *ref_h;

    ck_assert_int_eq(popc_tensor_dtype(i32), POPC_DTYPE_I32);
    ck_assert(ip[0] == 1 && ip[1] == -1 && ip[2] == INT32_MAX && ip[3] == 0);
    to = popc_attr_make_int("to", 10);
    h = expect_run(NULL, "Cast", &x, 1, &to, 1, 0);
    ASSERT_OK(popc_tensor_cast(x, POPC_DTYPE_F16, &ref_h));
    ck_assert(popc_tensor_equal(h, ref_h));
    to = popc_attr_make_int("to", 9);
    b = expect_run(NULL, "Cast", &x, 1, &to, 1, 0);
    ck_assert(memcmp(popc_tensor_cdata(b), "\1\1\1\1\0\1", 6) == 0);
    to = popc_attr_make_int("to", 1);
    back = expect_run(NULL, "Cast", &i32, 1, &to, 1, 0);
    ck_assert_float_eq(((const float *)popc_tensor_cdata(back))[1], -1.0f);
    /* float64, bfloat16 (upper 16 bits, as ONNX's reference), int8 */
    to = popc_attr_make_int("to", 11);
    popc_tensor_free(b);
    b = expect_run(NULL, "Cast", &x, 1, &to, 1, 0);
    ck_assert_int_eq(popc_tensor_dtype(b), POPC_DTYPE_F64);
    for (int i = 0; i < 6; i++) {
        double wide = ((const double *)popc_tensor_cdata(b))[i];
        float src = ((const float *)popc_tensor_cdata(x))[i];

        ck_assert(wide == (double)src || (isnan(wide) && isnan(src)));
    }
    to = popc_attr_make_int("to", 16);
    popc_tensor_free(b);
    b = expect_run(NULL, "Cast", &x, 1, &to, 1, 0);
    for (int i = 0; i < 6; i++) {
        uint32_t bits;
        float src = ((const float *)popc_tensor_cdata(x))[i];

        memcpy(&bits, &src, sizeof bits);
        ck_assert_uint_eq(((const uint16_t *)popc_tensor_cdata(b))[i],
                          bits >> 16);
    }
    /* uint8 saturates like popc_tensor_cast: 1.9 -1.9 3e10 NaN 0 65504 */
    to = popc_attr_make_int("to", 2);
    popc_tensor_free(b);
    b = expect_run(NULL, "Cast", &x, 1, &to, 1, 0);
    ck_assert(memcmp(popc_tensor_cdata(b), "\1\0\377\0\0\377", 6) == 0);
    {
        popc_tensor *u8 = NULL;

        ASSERT_OK(popc_tensor_cast(x, POPC_DTYPE_U8, &u8));
        ck_assert(popc_tensor_equal(b, u8));
        popc_tensor_free(u8);
    }
    to = popc_attr_make_int("to", 8);
    expect_error(NULL, "Cast", &x, 1, &to, 1, POPC_EUNSUPPORTED, "to=8",
                 "strings");
    expect_error(NULL, "Cast", &x, 1, NULL, 0, POPC_EINVAL, "'to'", NULL);
    popc_tensor_free(back);
    popc_tensor_free(b);
    popc_tensor_free(ref_h);
    popc_tensor_free(h);
    popc_tensor_free(i32);
    popc_tensor_free(x);
}
END_TEST

START_TEST(identity_and_constant)
{
    popc_tensor *x = ref("act_x"),
                *y = expect_run(NULL, "Identity", &x, 1, NULL, 0, 0);
    popc_attr a[2];
    const double fl[3] = {0.5, -1.0, 2.0};
    const int64_t iv[2] = {7, -8};
    popc_view v = popc_tensor_view(x);
    popc_tensor *c;

    ck_assert(popc_tensor_equal(x, y));
    popc_tensor_free(y);
    memset(a, 0, sizeof a);
    a[0].name = "value";
    a[0].type = POPC_ATTR_TENSOR;
    a[0].tensor = &v;
    c = expect_run(NULL, "Constant", NULL, 0, a, 1, 0);
    ck_assert(popc_tensor_equal(c, x));
    popc_tensor_free(c);
    a[0].name = "value_floats";
    a[0].type = POPC_ATTR_FLOATS;
    a[0].floats = fl;
    a[0].n = 3;
    c = expect_run(NULL, "Constant", NULL, 0, a, 1, 0);
    ck_assert_int_eq(popc_tensor_dims(c)[0], 3);
    ck_assert_float_eq(((const float *)popc_tensor_cdata(c))[2], 2.0f);
    popc_tensor_free(c);
    a[0].name = "value_ints";
    a[0].type = POPC_ATTR_INTS;
    a[0].ints = iv;
    a[0].n = 2;
    c = expect_run(NULL, "Constant", NULL, 0, a, 1, 0);
    ck_assert_int_eq(popc_tensor_dtype(c), POPC_DTYPE_I64);
    ck_assert(((const int64_t *)popc_tensor_cdata(c))[1] == -8);
    popc_tensor_free(c);
    a[0] = popc_attr_make_int("value_int", 42);
    c = expect_run(NULL, "Constant", NULL, 0, a, 1, 0);
    ck_assert_int_eq(popc_tensor_rank(c), 0);
    ck_assert(*(const int64_t *)popc_tensor_cdata(c) == 42);
    popc_tensor_free(c);
    a[1] = popc_attr_make_float("value_float", 1.0);
    expect_error(NULL, "Constant", NULL, 0, a, 2, POPC_EINVAL, "value_int",
                 "exactly one");
    expect_error(NULL, "Constant", NULL, 0, NULL, 0, POPC_EINVAL, "no value",
                 NULL);
    popc_tensor_free(x);
}
END_TEST

/* ---- Dropout
 * ------------------------------------------------------------------- */

START_TEST(dropout_inference_is_identity)
{
    popc_tensor *x = ref("act_x"), *in[2] = {x, scalar_f32(0.3f)};
    popc_tensor *out[2];
    const uint8_t *m;

    ASSERT_OK(harness_run_op(NULL, "Dropout", in, 2, NULL, 0, out, 2, 0));
    ck_assert(popc_tensor_equal(out[0], x));
    m = popc_tensor_cdata(out[1]);
    for (int64_t i = 0; i < popc_tensor_numel(x); i++)
        ck_assert_uint_eq(m[i], 1);
    free_all(out, 2);
    free_all(in, 2);
}
END_TEST

START_TEST(dropout_training_drops_and_scales)
{
    const int64_t d[2] = {64, 250};
    popc_tensor *x, *in[3], *out[2], *again[2], *dx;
    float *xp;
    const float *y, *g;
    const uint8_t *m;
    int64_t n = d[0] * d[1], dropped = 0;
    const uint8_t off = 0;

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, d, 2, &x));
    xp = popc_tensor_data(x);
    for (int64_t i = 0; i < n; i++)
        xp[i] = 1.0f + (float)(i % 7);
    in[0] = x;
    in[1] = scalar_f32(0.25f);
    ASSERT_OK(harness_run_op(NULL, "Dropout", in, 2, NULL, 0, out, 2, 1));
    y = popc_tensor_cdata(out[0]);
    m = popc_tensor_cdata(out[1]);
    for (int64_t i = 0; i < n; i++) {
        if (m[i])
            ck_assert_float_eq(y[i], xp[i] * (1.0f / 0.75f));
        else
            ck_assert_float_eq(y[i], 0.0f);
        dropped += !m[i];
    }
    /* 16000 Bernoulli(0.25) draws: 4000 +- 55 (1 sigma) */
    ck_assert_msg(dropped > 3700 && dropped < 4300, "dropped %lld",
                  (long long)dropped);
    /* the same seed gives the same mask */
    ASSERT_OK(harness_run_op(NULL, "Dropout", in, 2, NULL, 0, again, 2, 1));
    ck_assert(popc_tensor_equal(again[1], out[1]));
    /* the gradient drops the same elements */
    {
        popc_tensor *gin[3] = {x, out[1], in[1]};

        dx = expect_run("popc", "DropoutGrad", gin, 3, NULL, 0, 1);
        g = popc_tensor_cdata(dx);
        for (int64_t i = 0; i < n; i++)
            ck_assert_float_eq(g[i], y[i]);
        popc_tensor_free(dx);
    }
    /* training_mode = false switches it off */
    in[2] = expect_tensor(POPC_DTYPE_BOOL, NULL, 0, &off);
    free_all(again, 2);
    ASSERT_OK(harness_run_op(NULL, "Dropout", in, 3, NULL, 0, again, 1, 1));
    ck_assert(popc_tensor_equal(again[0], x));
    popc_tensor_free(again[0]);
    free_all(out, 2);
    free_all(in, 3);
}
END_TEST

/* float16 Dropout (converted a block at a time): the float32 run's mask,
** and the float32 run's results rounded once to float16 (the inputs,
** multiples of 1/16 below 4, are exact in float16). */
START_TEST(dropout_float16_matches_float32)
{
    const int64_t d[1] = {1000}; /* several blocks and a partial one */
    popc_tensor *x, *h, *in[2], *in16[2], *out[2], *out16[2];
    float *xp;
    const uint16_t *y16;
    const float *y;
    const uint8_t *m, *m16;

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, d, 1, &x));
    xp = popc_tensor_data(x);
    for (int64_t i = 0; i < d[0]; i++)
        xp[i] = (float)((i * 37) % 101 - 50) / 16.0f;
    ASSERT_OK(popc_tensor_cast(x, POPC_DTYPE_F16, &h));
    in[0] = x;
    in[1] = scalar_f32(0.4f);
    in16[0] = h;
    in16[1] = in[1];
    ASSERT_OK(harness_run_op(NULL, "Dropout", in, 2, NULL, 0, out, 2, 1));
    ASSERT_OK(harness_run_op(NULL, "Dropout", in16, 2, NULL, 0, out16, 2, 1));
    ck_assert_int_eq(popc_tensor_dtype(out16[0]), POPC_DTYPE_F16);
    m = popc_tensor_cdata(out[1]);
    m16 = popc_tensor_cdata(out16[1]);
    y16 = popc_tensor_cdata(out16[0]);
    y = popc_tensor_cdata(out[0]);
    for (int64_t i = 0; i < d[0]; i++) {
        ck_assert_float_eq(popc_f16_to_f32(popc_f32_to_f16(xp[i])), xp[i]);
        ck_assert_uint_eq(m16[i], m[i]);
        ck_assert_uint_eq(y16[i], popc_f32_to_f16(y[i]));
    }
    free_all(out, 2);
    free_all(out16, 2);
    popc_tensor_free(h);
    free_all(in, 2);
}
END_TEST

/* Without the mask output the backward pass could not drop the same
** elements: differentiating must fail and say how to fix it. */
START_TEST(dropout_grad_needs_mask)
{
    popc_graph *g;
    const int64_t d[2] = {2, 3};
    int x, y, grad;

    ASSERT_OK(popc_graph_new("drop", &g));
    ASSERT_OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, d, 2, &x));
    ASSERT_OK(popc_graph_add_node(g, NULL, "Dropout", 0, &x, 1, &y, 1, NULL,
                                  0, "drop1", NULL));
    ck_assert_int_eq(popc_graph_gradients(g, y, &x, 1, 1.0, &grad),
                     POPC_EUNSUPPORTED);
    ASSERT_HAS(popc_last_error(), "drop1");
    ASSERT_HAS(popc_last_error(), "mask");
    popc_graph_free(g);
}
END_TEST

START_TEST(dropout_bad_ratio)
{
    popc_tensor *in[2] = {scalar_f32(1.0f), scalar_f32(1.5f)};

    expect_error(NULL, "Dropout", in, 2, NULL, 0, POPC_EINVAL, "ratio",
                 "1.5");
    free_all(in, 2);
}
END_TEST

/* ---- finite-difference checks of the gradient builders
 * ---------------------- */

static uint64_t fd_state = 777;

/* float32 with |v| in [0.3, 1.3] and random sign (away from kinks at 0) */
static popc_tensor *rnd(int rank, int64_t d0, int64_t d1, int64_t d2)
{
    const int64_t dims[3] = {d0, d1, d2};
    popc_tensor *t = NULL;
    float *p;

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, dims, rank, &t));
    p = popc_tensor_data(t);
    for (int64_t i = 0; i < popc_tensor_numel(t); i++) {
        uint64_t z = (fd_state += 0x9E3779B97F4A7C15ull);
        double u;

        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        u = (double)(z >> 11) * (1.0 / 9007199254740992.0);
        p[i] = (float)(u < 0.5 ? -(0.3 + 2 * u) : 0.3 + 2 * (u - 0.5));
    }
    return t;
}

/* positive: |rnd| + 0.2 */
static popc_tensor *pos(int rank, int64_t d0, int64_t d1, int64_t d2)
{
    popc_tensor *t = rnd(rank, d0, d1, d2);
    float *p = popc_tensor_data(t);

    for (int64_t i = 0; i < popc_tensor_numel(t); i++)
        p[i] = fabsf(p[i]) + 0.2f;
    return t;
}

/* Check op's gradient w.r.t. inputs wrt[] by finite differences, then free
** the inputs. */
static void fd(const char *domain, const char *op, popc_tensor **in,
               int n_in, const int *wrt, int n_wrt, const popc_attr *attrs,
               int n_attrs, int n_out)
{
    char why[1024] = "";
    popc_status st = fd_check_op_ex(domain, op, in, n_in, wrt, n_wrt, attrs,
                                    n_attrs, n_out, 1, 1e-3, why, sizeof why);

    ck_assert_msg(st == POPC_OK, "%s: %s", op, why);
    free_all(in, n_in);
}

#define FD(op, wrt_list, attrs, n_attrs, n_out, ...)                          \
    do {                                                                      \
        popc_tensor *in_[] = {__VA_ARGS__};                                   \
        const int wrt_[] = wrt_list;                                          \
        fd(NULL, op, in_, (int)(sizeof in_ / sizeof in_[0]), wrt_,           \
           (int)(sizeof wrt_ / sizeof wrt_[0]), attrs, n_attrs, n_out);      \
    } while (0)

#define W(...) {__VA_ARGS__}

START_TEST(fd_arith_broadcasting)
{
    FD("Add", W(0, 1), NULL, 0, 1, rnd(3, 2, 1, 3), rnd(2, 4, 1, 0));
    FD("Sub", W(0, 1), NULL, 0, 1, rnd(0, 0, 0, 0), rnd(2, 2, 3, 0));
    FD("Mul", W(0, 1), NULL, 0, 1, rnd(2, 3, 1, 0), rnd(2, 1, 4, 0));
    FD("Div", W(0, 1), NULL, 0, 1, rnd(1, 4, 0, 0), pos(2, 3, 4, 0));
    FD("Pow", W(0, 1), NULL, 0, 1, pos(2, 2, 3, 0), rnd(0, 0, 0, 0));
    FD("Sum", W(0, 1, 2), NULL, 0, 1, rnd(3, 2, 1, 3), rnd(1, 3, 0, 0),
       rnd(2, 4, 1, 0));
    FD("Max", W(0, 1, 2), NULL, 0, 1, rnd(2, 2, 3, 0), rnd(1, 3, 0, 0),
       rnd(2, 2, 1, 0));
    FD("Min", W(0, 1), NULL, 0, 1, rnd(2, 2, 3, 0), rnd(2, 2, 1, 0));
    FD("Mean", W(0, 1, 2), NULL, 0, 1, rnd(2, 2, 3, 0), rnd(1, 3, 0, 0),
       rnd(0, 0, 0, 0));
}
END_TEST

START_TEST(fd_unary)
{
    static const char *const ops[] = {"Neg", "Abs", "Exp", "Reciprocal",
                                      "Erf", "Sin", "Cos", "Relu",
                                      "Sigmoid", "Tanh", "Gelu", "Elu",
                                      "Softplus", "LeakyRelu", "Identity"};
    popc_attr a[2] = {popc_attr_make_float("alpha", 0.5),
                      popc_attr_make_string("approximate", "tanh")};
    popc_attr to = popc_attr_make_int("to", 1);

    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        FD(ops[i], W(0), NULL, 0, 1, rnd(2, 3, 5, 0));
    FD("Sqrt", W(0), NULL, 0, 1, pos(2, 3, 5, 0));
    FD("Log", W(0), NULL, 0, 1, pos(2, 3, 5, 0));
    FD("Gelu", W(0), &a[1], 1, 1, rnd(2, 3, 5, 0));
    FD("Celu", W(0), a, 1, 1, rnd(2, 3, 5, 0));
    FD("Elu", W(0), a, 1, 1, rnd(2, 3, 5, 0));
    FD("LeakyRelu", W(0), a, 1, 1, rnd(2, 3, 5, 0));
    FD("Cast", W(0), &to, 1, 1, rnd(2, 3, 5, 0));
}
END_TEST

START_TEST(fd_clip_where_dropout)
{
    const int64_t dc[2] = {2, 1};
    const uint8_t c[2] = {1, 0};

    FD("Clip", W(0), NULL, 0, 1, rnd(2, 4, 5, 0), scalar_f32(-0.7f));
    FD("Clip", W(0), NULL, 0, 1, rnd(2, 4, 5, 0), NULL, scalar_f32(0.8f));
    FD("Where", W(1, 2), NULL, 0, 1, expect_tensor(POPC_DTYPE_BOOL, dc, 2, c),
       rnd(1, 3, 0, 0), rnd(2, 2, 3, 0));
    /* training: the same mask forward and backward */
    FD("Dropout", W(0), NULL, 0, 2, rnd(2, 8, 16, 0), scalar_f32(0.3f));
}
END_TEST

/* ---- suite
 * ------------------------------------------------------------------------ */

static Suite *math_suite(void)
{
    Suite *s = suite_create("op_math");
    TCase *a = tcase_create("arith");
    TCase *act = tcase_create("activations");
    TCase *misc = tcase_create("misc");

    tcase_add_test(a, binary_broadcast_matches_numpy);
    tcase_add_test(a, broadcast_either_side_and_scalars);
    tcase_add_test(a, integer_arithmetic_wraps_and_truncates);
    tcase_add_test(a, int64_mul_abs);
    tcase_add_test(a, pow_and_unary_match_numpy);
    tcase_add_test(a, neg_abs_float);
    tcase_add_test(a, sum_variadic_broadcasts);
    tcase_add_test(a, max_min_mean_fold);
    tcase_add_test(a, empty_broadcast);
    tcase_add_test(a, float16_add_matches_numpy);
    tcase_add_test(a, comparisons_give_bool);
    tcase_add_test(a, arith_errors_name_node_and_shapes);
    tcase_add_test(a, arith_grads_match_torch);
    suite_add_tcase(s, a);
    tcase_add_test(act, activations_match_torch);
    tcase_add_test(act, leaky_relu_default_alpha);
    tcase_add_test(act, gelu_float16);
    tcase_add_test(act, clip_optional_bounds);
    tcase_add_test(act, gelu_bad_mode);
    tcase_add_test(act, activation_grads_match_torch);
    suite_add_tcase(s, act);
    tcase_add_test(misc, where_broadcasts_any_dtype);
    tcase_add_test(misc, cast_between_types);
    tcase_add_test(misc, identity_and_constant);
    tcase_add_test(misc, dropout_inference_is_identity);
    tcase_add_test(misc, dropout_training_drops_and_scales);
    tcase_add_test(misc, dropout_float16_matches_float32);
    tcase_add_test(misc, dropout_bad_ratio);
    tcase_add_test(misc, dropout_grad_needs_mask);
    suite_add_tcase(s, misc);
    {
        TCase *fdc = tcase_create("finite_differences");

        tcase_set_timeout(fdc, 120);
        tcase_add_test(fdc, fd_arith_broadcasting);
        tcase_add_test(fdc, fd_unary);
        tcase_add_test(fdc, fd_clip_where_dropout);
        suite_add_tcase(s, fdc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(math_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
