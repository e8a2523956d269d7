/* check_op_tensor.c - the "tensor" op plugin: shape ops, Transpose,
** Concat, Split, Slice, Gather, reductions, ArgMax and the gradient helpers
** SumToShape, GatherGrad, SliceGrad, ReduceMaxGrad, each run through the op
** harness (whole and split in 3 parts, bitwise equal) and compared with
** numpy results from tests/ref/gen_ops_math.py or hand-computed values,
** plus the error paths. */
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

static popc_tensor *ints(const int64_t *v, int n)
{
    const int64_t d[1] = {n};

    return expect_tensor(POPC_DTYPE_I64, d, 1, v);
}

static void expect_dims(const popc_tensor *t, int rank, const int64_t *dims)
{
    ck_assert_int_eq(popc_tensor_rank(t), rank);
    for (int i = 0; i < rank; i++)
        ck_assert_int_eq(popc_tensor_dims(t)[i], dims[i]);
}

/* ---- reshapes ------------------------------------------------------------ */

START_TEST(reshape_zero_and_minus_one)
{
    popc_tensor *x = ref("t345");
    const int64_t s1[3] = {0, -1, 2}, s2[2] = {-1, 5};
    const int64_t w1[3] = {3, 10, 2}, w2[2] = {12, 5};
    popc_tensor *in[2] = {x, ints(s1, 3)};
    popc_tensor *y = expect_run(NULL, "Reshape", in, 2, NULL, 0, 0);

    expect_dims(y, 3, w1);
    ck_assert(memcmp(popc_tensor_cdata(y), popc_tensor_cdata(x),
                     popc_tensor_nbytes(x)) == 0);
    popc_tensor_free(y);
    popc_tensor_free(in[1]);
    in[1] = ints(s2, 2);
    y = expect_run(NULL, "Reshape", in, 2, NULL, 0, 0);
    expect_dims(y, 2, w2);
    popc_tensor_free(y);
    popc_tensor_free(in[1]);
    popc_tensor_free(x);
}
END_TEST

START_TEST(reshape_allowzero_and_errors)
{
    const int64_t dz[2] = {0, 3}, s0[2] = {3, 0}, bad[2] = {4, 4};
    const int64_t two[2] = {-1, -1}, with0[2] = {0, -1};
    popc_tensor *e, *in[2], *y;
    popc_attr az = popc_attr_make_int("allowzero", 1);

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, dz, 2, &e));
    in[0] = e;
    in[1] = ints(s0, 2);
    y = expect_run(NULL, "Reshape", in, 2, &az, 1, 0);
    expect_dims(y, 2, s0);
    popc_tensor_free(y);
    popc_tensor_free(in[1]);
    popc_tensor_free(e);
    in[0] = ref("t345");
    in[1] = ints(bad, 2);
    expect_error(NULL, "Reshape", in, 2, NULL, 0, POPC_EINVAL, "[3, 4, 5]",
                 "[4, 4]");
    ASSERT_HAS(popc_last_error(), "60 elements");
    popc_tensor_free(in[1]);
    in[1] = ints(two, 2);
    expect_error(NULL, "Reshape", in, 2, NULL, 0, POPC_EINVAL,
                 "more than one -1", NULL);
    popc_tensor_free(in[1]);
    in[1] = ints(with0, 2);
    expect_error(NULL, "Reshape", in, 2, &az, 1, POPC_EINVAL, "allowzero",
                 NULL);
    popc_tensor_free(in[1]);
    /* a shape computed at run time cannot be compiled statically */
    in[1] = NULL;
    expect_error(NULL, "Reshape", in, 2, NULL, 0, POPC_EINVAL, "missing",
                 NULL);
    popc_tensor_free(in[0]);
}
END_TEST

START_TEST(flatten_squeeze_unsqueeze)
{
    popc_tensor *x = ref("t345"), *y, *in[2];
    const int64_t f1[2] = {3, 20}, f0[2] = {1, 60}, f3[2] = {60, 1};
    const int64_t f2[2] = {12, 5};
    const int64_t ax_u[2] = {0, -1}, u_dims[5] = {1, 3, 4, 5, 1};
    const int64_t ax_s[2] = {-1, 0}, ax_bad[1] = {1};
    popc_attr a;

    y = expect_run(NULL, "Flatten", &x, 1, NULL, 0, 0);
    expect_dims(y, 2, f1);
    popc_tensor_free(y);
    a = popc_attr_make_int("axis", 0);
    y = expect_run(NULL, "Flatten", &x, 1, &a, 1, 0);
    expect_dims(y, 2, f0);
    popc_tensor_free(y);
    a = popc_attr_make_int("axis", 3);
    y = expect_run(NULL, "Flatten", &x, 1, &a, 1, 0);
    expect_dims(y, 2, f3);
    popc_tensor_free(y);
    a = popc_attr_make_int("axis", -1);
    y = expect_run(NULL, "Flatten", &x, 1, &a, 1, 0);
    expect_dims(y, 2, f2);
    popc_tensor_free(y);
    a = popc_attr_make_int("axis", 4);
    expect_error(NULL, "Flatten", &x, 1, &a, 1, POPC_EINVAL, "axis 4",
                 NULL);
    in[0] = x;
    in[1] = ints(ax_u, 2);
    y = expect_run(NULL, "Unsqueeze", in, 2, NULL, 0, 0);
    expect_dims(y, 5, u_dims);
    ck_assert(memcmp(popc_tensor_cdata(y), popc_tensor_cdata(x),
                     popc_tensor_nbytes(x)) == 0);
    popc_tensor_free(in[1]);
    in[0] = y;
    in[1] = ints(ax_s, 2);
    {
        popc_tensor *z = expect_run(NULL, "Squeeze", in, 2, NULL, 0, 0);
        popc_tensor *all = expect_run(NULL, "Squeeze", in, 1, NULL, 0, 0);

        ck_assert(popc_tensor_equal(z, x));
        ck_assert(popc_tensor_equal(all, x));
        popc_tensor_free(z);
        popc_tensor_free(all);
    }
    popc_tensor_free(in[1]);
    in[1] = ints(ax_bad, 1);
    expect_error(NULL, "Squeeze", in, 2, NULL, 0, POPC_EINVAL, "size 3",
                 "not 1");
    popc_tensor_free(in[1]);
    popc_tensor_free(y);
    in[0] = x;
    in[1] = ints(ax_u, 1);
    {
        const int64_t dup[2] = {1, 1};

        popc_tensor_free(in[1]);
        in[1] = ints(dup, 2);
        expect_error(NULL, "Unsqueeze", in, 2, NULL, 0, POPC_EINVAL,
                     "twice", NULL);
    }
    popc_tensor_free(in[1]);
    popc_tensor_free(x);
}
END_TEST

START_TEST(expand_and_shape)
{
    popc_tensor *x = ref("expand_x");
    const int64_t sh[3] = {2, 1, 4}, bad[2] = {2, 5};
    popc_tensor *in[2] = {x, ints(sh, 3)};
    popc_tensor *s;
    popc_attr a = popc_attr_make_int("start", -2);
    const int64_t *sp;

    expect_ref(expect_run(NULL, "Expand", in, 2, NULL, 0, 0), "expand_out", 0,
               0);
    popc_tensor_free(in[1]);
    in[1] = ints(bad, 2);
    expect_error(NULL, "Expand", in, 2, NULL, 0, POPC_EINVAL, "[3, 1]",
                 "[2, 5]");
    popc_tensor_free(in[1]);
    in[0] = ref("t345");
    s = expect_run(NULL, "Shape", in, 1, &a, 1, 0);
    sp = popc_tensor_cdata(s);
    ck_assert_int_eq(popc_tensor_numel(s), 2);
    ck_assert(sp[0] == 4 && sp[1] == 5);
    popc_tensor_free(s);
    popc_tensor_free(in[0]);
    popc_tensor_free(x);
}
END_TEST

/* ---- data movement ------------------------------------------------------- */

START_TEST(transpose_matches_numpy)
{
    popc_tensor *x = ref("t345"), *m = ref("t_big");
    const int64_t p[3] = {2, 0, 1}, rev[2] = {1, 0};
    popc_attr a = popc_attr_make_ints("perm", p, 3);

    expect_ref(expect_run(NULL, "Transpose", &x, 1, &a, 1, 0),
               "transpose_201_out", 0, 0);
    expect_ref(expect_run(NULL, "Transpose", &x, 1, NULL, 0, 0),
               "transpose_rev_out", 0, 0);
    a = popc_attr_make_ints("perm", rev, 2);
    expect_ref(expect_run(NULL, "Transpose", &m, 1, &a, 1, 0),
               "transpose_big_out", 0, 0);
    popc_tensor_free(m);
    popc_tensor_free(x);
}
END_TEST

START_TEST(transpose_float16_and_bad_perm)
{
    const int64_t d[2] = {2, 3}, bad[3] = {0, 0, 1}, short_p[2] = {1, 0};
    const uint16_t h[6] = {1, 2, 3, 4, 5, 6}, want[6] = {1, 4, 2, 5, 3, 6};
    popc_tensor *x = expect_tensor(POPC_DTYPE_F16, d, 2, h);
    popc_tensor *y = expect_run(NULL, "Transpose", &x, 1, NULL, 0, 0);
    popc_tensor *c = ref("t345");
    popc_attr a = popc_attr_make_ints("perm", bad, 3);

    ck_assert(memcmp(popc_tensor_cdata(y), want, sizeof want) == 0);
    expect_error(NULL, "Transpose", &c, 1, &a, 1, POPC_EINVAL, "[0, 0, 1]",
                 "permutation");
    a = popc_attr_make_ints("perm", short_p, 2);
    expect_error(NULL, "Transpose", &c, 1, &a, 1, POPC_EINVAL, "rank 3",
                 NULL);
    popc_tensor_free(c);
    popc_tensor_free(y);
    popc_tensor_free(x);
}
END_TEST

START_TEST(concat_and_split)
{
    popc_tensor *in[3] = {ref("concat_a"), ref("concat_b"), ref("concat_c")};
    popc_attr a = popc_attr_make_int("axis", 1);
    popc_tensor *cat = expect_run(NULL, "Concat", in, 3, &a, 1, 0);
    const int64_t sizes[3] = {3, 1, 4};
    popc_tensor *sp_in[2] = {cat, ints(sizes, 3)}, *parts[3];
    popc_tensor *bad[2] = {in[0], NULL};
    const int64_t d[3] = {2, 3, 3};

    expect_ref(popc_tensor_ref(cat), "concat_out", 0, 0);
    ASSERT_OK(harness_run_op(NULL, "Split", sp_in, 2, &a, 1, parts, 3, 0));
    for (int k = 0; k < 3; k++) {
        ck_assert(popc_tensor_equal(parts[k], in[k]));
        popc_tensor_free(parts[k]);
    }
    /* no split input: equal parts; 8 does not split in 3 */
    ASSERT_OK(harness_run_op(NULL, "Split", &cat, 1, NULL, 0, parts, 2, 0));
    ck_assert_int_eq(popc_tensor_dims(parts[0])[0], 1);
    free_all(parts, 2);
    ck_assert_int_eq(harness_run_op(NULL, "Split", &cat, 1, &a, 1, parts, 3,
                                    0), POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "evenly");
    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, d, 3, &bad[1]));
    expect_error(NULL, "Concat", bad, 2, &a, 1, POPC_EINVAL, "[2, 3, 3]",
                 "except axis 1");
    expect_error(NULL, "Concat", bad, 2, NULL, 0, POPC_EINVAL, "'axis'",
                 NULL);
    popc_tensor_free(bad[1]);
    popc_tensor_free(sp_in[1]);
    popc_tensor_free(cat);
    free_all(in, 3);
}
END_TEST

static void slice_case(const char *name)
{
    char buf[64];
    const char *parts[4] = {"starts", "ends", "axes", "steps"};
    popc_tensor *in[5], *g[5];

    in[0] = ref("t345");
    for (int i = 0; i < 4; i++) {
        snprintf(buf, sizeof buf, "%s_%s", name, parts[i]);
        in[i + 1] = ref(buf);
    }
    snprintf(buf, sizeof buf, "%s_out", name);
    expect_ref(expect_run(NULL, "Slice", in, 5, NULL, 0, 0), buf, 0, 0);
    /* the gradient helper scatters dY back */
    {
        const int64_t *dims = popc_tensor_dims(in[0]);
        popc_attr a = popc_attr_make_ints("shape", dims, 3);

        snprintf(buf, sizeof buf, "%s_dy", name);
        g[0] = ref(buf);
        for (int i = 1; i < 5; i++)
            g[i] = in[i];
        snprintf(buf, sizeof buf, "%s_dx", name);
        expect_ref(expect_run("popc", "SliceGrad", g, 5, &a, 1, 0), buf, 0, 0);
        popc_tensor_free(g[0]);
    }
    free_all(in, 5);
}

START_TEST(slice_matches_numpy)
{
    slice_case("slice_basic");
    slice_case("slice_neg");
    slice_case("slice_clamp");
}
END_TEST

START_TEST(slice_defaults_and_errors)
{
    const int64_t st[1] = {1}, en[1] = {3}, zero[1] = {0}, ax[1] = {5};
    popc_tensor *in[5] = {ref("t345"), ints(st, 1), ints(en, 1), NULL, NULL};
    popc_tensor *y = expect_run(NULL, "Slice", in, 3, NULL, 0, 0);
    const int64_t w[3] = {2, 4, 5};

    expect_dims(y, 3, w);
    popc_tensor_free(y);
    in[4] = ints(zero, 1);
    expect_error(NULL, "Slice", in, 5, NULL, 0, POPC_EINVAL, "step", NULL);
    popc_tensor_free(in[4]);
    in[4] = NULL;
    in[3] = ints(ax, 1);
    expect_error(NULL, "Slice", in, 4, NULL, 0, POPC_EINVAL, "axis 5",
                 "rank-3");
    free_all(in, 5);
}
END_TEST

/* float16 GatherGrad (rows added a block at a time): every index of a
** repeated row adds its gradient in index order, each sum rounded to
** float16, as the float16 reference computed here one value at a time. */
START_TEST(gather_grad_float16_repeats)
{
    enum { ROWS = 3, COLS = 700, N_IDX = 5 };
    const int64_t gd[2] = {N_IDX, COLS}, xd[2] = {ROWS, COLS}, nd[1] = {N_IDX};
    const int64_t idx[N_IDX] = {2, 0, 2, -1, 2}; /* -1 is row 2 again */
    popc_tensor *g[2], *dx;
    popc_attr ga[2];
    uint16_t *gh;
    const uint16_t *out;

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F16, gd, 2, &g[0]));
    gh = popc_tensor_data(g[0]);
    for (int i = 0; i < N_IDX * COLS; i++)
        gh[i] = popc_f32_to_f16((float)((i * 29) % 97 - 48) / 7.0f);
    g[1] = expect_tensor(POPC_DTYPE_I64, nd, 1, idx);
    ga[0] = popc_attr_make_int("axis", 0);
    ga[1] = popc_attr_make_ints("shape", xd, 2);
    dx = expect_run("popc", "GatherGrad", g, 2, ga, 2, 0);
    ck_assert_int_eq(popc_tensor_dtype(dx), POPC_DTYPE_F16);
    out = popc_tensor_cdata(dx);
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++) {
            uint16_t want = 0;

            for (int j = 0; j < N_IDX; j++)
                if ((idx[j] + ROWS) % ROWS == r)
                    want = popc_f32_to_f16(popc_f16_to_f32(want) +
                                           popc_f16_to_f32(gh[j * COLS + c]));
            ck_assert_msg(out[r * COLS + c] == want, "dx[%d, %d] %04x, want "
                          "%04x", r, c, out[r * COLS + c], want);
        }
    popc_tensor_free(dx);
    free_all(g, 2);
}
END_TEST

START_TEST(gather_matches_numpy)
{
    popc_tensor *in[2] = {ref("gather_data"), ref("gather_idx")};
    popc_tensor *x = ref("t345");
    const int32_t i32[3] = {3, -4, 0};
    const int64_t d[1] = {3};
    popc_tensor *ax1[2] = {x, expect_tensor(POPC_DTYPE_I32, d, 1, i32)};
    popc_attr a = popc_attr_make_int("axis", 1);
    popc_tensor *g[2];
    popc_attr ga[2];
    const int64_t bad[1] = {6};

    expect_ref(expect_run(NULL, "Gather", in, 2, NULL, 0, 0), "gather_out", 0,
               0);
    expect_ref(expect_run(NULL, "Gather", ax1, 2, &a, 1, 0), "gather_ax1_out",
               0, 0);
    g[0] = ref("gather_dy");
    g[1] = in[1];
    ga[0] = popc_attr_make_int("axis", 0);
    ga[1] = popc_attr_make_ints("shape", popc_tensor_dims(in[0]), 2);
    expect_ref(expect_run("popc", "GatherGrad", g, 2, ga, 2, 0), "gather_dx",
               1e-6, 0);
    popc_tensor_free(g[0]);
    popc_tensor_free(in[1]);
    in[1] = ints(bad, 1);
    expect_error(NULL, "Gather", in, 2, NULL, 0, POPC_EINVAL, "index 6",
                 "size 6");
    free_all(in, 2);
    free_all(ax1, 2);
}
END_TEST

START_TEST(empty_tensors)
{
    const int64_t d0[2] = {0, 3}, d3[1] = {3}, r1[1] = {0};
    const float b[3] = {1, 2, 3};
    popc_tensor *e, *in[2], *y;
    popc_attr a = popc_attr_make_int("axis", 0);

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, d0, 2, &e));
    y = expect_run(NULL, "Transpose", &e, 1, NULL, 0, 0);
    ck_assert_int_eq(popc_tensor_numel(y), 0);
    popc_tensor_free(y);
    /* a Concat with an empty part */
    in[0] = e;
    in[1] = expect_tensor(POPC_DTYPE_F32, (const int64_t[]){1, 3}, 2, b);
    y = expect_run(NULL, "Concat", in, 2, &a, 1, 0);
    ck_assert(memcmp(popc_tensor_cdata(y), b, sizeof b) == 0);
    popc_tensor_free(y);
    popc_tensor_free(in[1]);
    /* reducing an empty axis gives zeros */
    in[1] = ints(r1, 1);
    y = expect_run(NULL, "ReduceSum", in, 2, NULL, 0, 0);
    ck_assert_int_eq(popc_tensor_numel(y), 3);
    ck_assert_float_eq(((const float *)popc_tensor_cdata(y))[1], 0.0f);
    popc_tensor_free(y);
    popc_tensor_free(in[1]);
    in[1] = expect_tensor(POPC_DTYPE_F32, d3, 1, b);
    ck_assert_int_eq(harness_run_op(NULL, "Expand", in, 1, NULL, 0, &y, 1,
                                    0), POPC_EINVAL);
    popc_tensor_free(in[1]);
    popc_tensor_free(e);
}
END_TEST

/* ---- reductions ----------------------------------------------------------- */

START_TEST(reduce_sum_mean_max)
{
    popc_tensor *r = ref("r456");
    const int64_t a1[1] = {1}, a02[2] = {0, -1}, a12[2] = {1, 2};
    const int64_t a0[1] = {0}, a01[2] = {0, 1}, a2[1] = {2};
    popc_tensor *in[2] = {r, ints(a1, 1)};
    popc_attr k0 = popc_attr_make_int("keepdims", 0), attrs[2];

    expect_ref(expect_run(NULL, "ReduceSum", in, 2, NULL, 0, 0), "rsum_1_out",
               1e-6, 1e-6);
    popc_tensor_free(in[1]);
    in[1] = ints(a02, 2);
    expect_ref(expect_run(NULL, "ReduceSum", in, 2, &k0, 1, 0), "rsum_02_out",
               1e-5, 1e-6);
    popc_tensor_free(in[1]);
    expect_ref(expect_run(NULL, "ReduceSum", in, 1, NULL, 0, 0),
               "rsum_all_out", 1e-5, 1e-6);
    attrs[0] = popc_attr_make_ints("axes", a12, 2);
    attrs[1] = k0;
    expect_ref(expect_run(NULL, "ReduceMean", in, 1, attrs, 2, 0),
               "rmean_12_out", 1e-6, 1e-6);
    attrs[0] = popc_attr_make_ints("axes", a0, 1);
    expect_ref(expect_run(NULL, "ReduceMean", in, 1, attrs, 1, 0),
               "rmean_0_out", 1e-6, 1e-6);
    attrs[0] = popc_attr_make_ints("axes", a2, 1);
    expect_ref(expect_run(NULL, "ReduceMax", in, 1, attrs, 2, 0), "rmax_2_out",
               0, 0);
    attrs[0] = popc_attr_make_ints("axes", a01, 2);
    expect_ref(expect_run(NULL, "ReduceMax", in, 1, attrs, 1, 0),
               "rmax_01_out", 0, 0);
    popc_tensor_free(r);
}
END_TEST

START_TEST(reduce_noop_and_errors)
{
    popc_tensor *r = ref("r456");
    popc_attr noop = popc_attr_make_int("noop_with_empty_axes", 1);
    const int64_t twice[2] = {1, -2}, far[1] = {3};
    popc_tensor *in[2] = {r, NULL}, *y;

    y = expect_run(NULL, "ReduceSum", in, 1, &noop, 1, 0);
    ck_assert(popc_tensor_equal(y, r));
    popc_tensor_free(y);
    in[1] = ints(twice, 2);
    expect_error(NULL, "ReduceSum", in, 2, NULL, 0, POPC_EINVAL, "axis 1",
                 "twice");
    popc_tensor_free(in[1]);
    in[1] = ints(far, 1);
    expect_error(NULL, "ReduceSum", in, 2, NULL, 0, POPC_EINVAL, "axis 3",
                 "ReduceSum 'ReduceSum'");
    popc_tensor_free(in[1]);
    popc_tensor_free(r);
}
END_TEST

START_TEST(argmax_keepdims_and_ties)
{
    popc_tensor *r = ref("r456"), *w = ref("argmax_1_out"), *y;
    popc_attr a[3] = {popc_attr_make_int("axis", 1),
                      popc_attr_make_int("keepdims", 0),
                      popc_attr_make_int("select_last_index", 1)};
    const int64_t d[2] = {2, 4};
    const float tie[8] = {1, 3, 3, 0, 5, NAN, 2, NAN};
    popc_tensor *t = expect_tensor(POPC_DTYPE_F32, d, 2, tie);
    const int64_t *p;
    popc_attr last[2] = {popc_attr_make_int("axis", -1),
                         popc_attr_make_int("select_last_index", 1)};

    y = expect_run(NULL, "ArgMax", &r, 1, a, 2, 0);
    ck_assert(popc_tensor_equal(y, w));
    popc_tensor_free(y);
    y = expect_run(NULL, "ArgMax", &t, 1, last, 1, 0);
    p = popc_tensor_cdata(y);
    ck_assert_int_eq(popc_tensor_rank(y), 2);
    ck_assert(p[0] == 1 && p[1] == 1);
    popc_tensor_free(y);
    y = expect_run(NULL, "ArgMax", &t, 1, last, 2, 0);
    p = popc_tensor_cdata(y);
    ck_assert(p[0] == 2 && p[1] == 1);
    popc_tensor_free(y);
    popc_tensor_free(t);
    popc_tensor_free(w);
    popc_tensor_free(r);
}
END_TEST

START_TEST(sum_to_shape)
{
    popc_tensor *g = ref("sumto_g");
    const int64_t s51[2] = {5, 1}, s416[3] = {4, 1, 6}, bad[2] = {4, 6};
    popc_attr a = popc_attr_make_ints("shape", s51, 2);
    popc_tensor *y;

    expect_ref(expect_run("popc", "SumToShape", &g, 1, &a, 1, 0),
               "sumto_51_out", 1e-5, 1e-6);
    a = popc_attr_make_ints("shape", s416, 3);
    expect_ref(expect_run("popc", "SumToShape", &g, 1, &a, 1, 0),
               "sumto_416_out", 1e-5, 1e-6);
    a = popc_attr_make_ints("shape", popc_tensor_dims(g), 3);
    y = expect_run("popc", "SumToShape", &g, 1, &a, 1, 0);
    ck_assert(popc_tensor_equal(y, g));
    popc_tensor_free(y);
    a = popc_attr_make_ints("shape", bad, 2);
    expect_error("popc", "SumToShape", &g, 1, &a, 1, POPC_EINVAL, "[4, 6]",
                 "[4, 5, 6]");
    popc_tensor_free(g);
}
END_TEST

START_TEST(reduce_max_grad_shares_ties)
{
    const int64_t d[2] = {2, 3}, axes[1] = {1};
    const float x[6] = {1, 4, 4, -1, -2, -3};
    popc_tensor *xt = expect_tensor(POPC_DTYPE_F32, d, 2, x);
    popc_attr a[2] = {popc_attr_make_ints("axes", axes, 1),
                      popc_attr_make_int("keepdims", 0)};
    popc_tensor *y = expect_run(NULL, "ReduceMax", &xt, 1, a, 2, 0);
    const int64_t dd[1] = {2};
    const float dy[2] = {2.0f, 3.0f};
    popc_tensor *in[3] = {expect_tensor(POPC_DTYPE_F32, dd, 1, dy), xt, y};
    popc_tensor *dx = expect_run("popc", "ReduceMaxGrad", in, 3, a, 2, 0);
    const float want[6] = {0, 1, 1, 3, 0, 0};

    ck_assert(memcmp(popc_tensor_cdata(dx), want, sizeof want) == 0);
    popc_tensor_free(dx);
    free_all(in, 3);
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

START_TEST(fd_shape_ops)
{
    const int64_t sh[3] = {0, -1, 2}, ax[2] = {-1, 0}, sq[1] = {1};
    const int64_t ex[3] = {2, 3, 4}, perm[3] = {1, 2, 0};
    popc_attr p = popc_attr_make_ints("perm", perm, 3),
              f0 = popc_attr_make_int("axis", 0);

    FD("Reshape", W(0), NULL, 0, 1, rnd(3, 3, 4, 2), ints(sh, 3));
    FD("Flatten", W(0), &f0, 1, 1, rnd(3, 3, 4, 2));
    FD("Transpose", W(0), &p, 1, 1, rnd(3, 3, 4, 2));
    FD("Squeeze", W(0), NULL, 0, 1, rnd(3, 3, 1, 2));
    FD("Squeeze", W(0), NULL, 0, 1, rnd(3, 3, 1, 2), ints(sq, 1));
    FD("Unsqueeze", W(0), NULL, 0, 1, rnd(2, 3, 2, 0), ints(ax, 2));
    FD("Expand", W(0), NULL, 0, 1, rnd(2, 3, 1, 0), ints(ex, 3));
}
END_TEST

START_TEST(fd_data_movement)
{
    const int64_t st[2] = {-1, 4}, en[2] = {-4, -100}, axs[2] = {0, -1};
    const int64_t stp[2] = {-1, -2}, split[3] = {1, 2, 1};
    const int32_t idx[4] = {2, -1, 0, 2};
    const int64_t di[2] = {2, 2}, shape[2] = {2, 3};
    popc_attr a0 = popc_attr_make_int("axis", 0),
              a1 = popc_attr_make_int("axis", 1);
    popc_attr sa[2] = {popc_attr_make_int("axis", 1),
                       popc_attr_make_ints("shape", shape, 2)};

    FD("Concat", W(0, 1, 2), &a0, 1, 1, rnd(2, 1, 3, 0), rnd(2, 2, 3, 0),
       rnd(2, 1, 3, 0));
    FD("Split", W(0), &a1, 1, 3, rnd(2, 2, 4, 0), ints(split, 3));
    FD("Split", W(0), &a0, 1, 2, rnd(2, 4, 3, 0));
    FD("Slice", W(0), NULL, 0, 1, rnd(3, 4, 3, 5), ints(st, 2), ints(en, 2),
       ints(axs, 2), ints(stp, 2));
    FD("Gather", W(0), &a1, 1, 1, rnd(3, 2, 3, 2),
       expect_tensor(POPC_DTYPE_I32, di, 2, idx));
    /* SumToShape's own gradient (broadcast back) */
    fd("popc", "SumToShape", (popc_tensor *[]){rnd(3, 4, 2, 3)}, 1,
       (const int[]){0}, 1, &sa[1], 1, 1);
}
END_TEST

START_TEST(fd_reductions)
{
    const int64_t a1[1] = {1}, a02[2] = {0, 2};
    popc_attr k0 = popc_attr_make_int("keepdims", 0),
              noop = popc_attr_make_int("noop_with_empty_axes", 1);
    popc_attr m[2] = {popc_attr_make_ints("axes", a02, 2),
                      popc_attr_make_int("keepdims", 0)};

    FD("ReduceSum", W(0), &k0, 1, 1, rnd(3, 2, 3, 4), ints(a1, 1));
    FD("ReduceSum", W(0), NULL, 0, 1, rnd(3, 2, 3, 4));
    FD("ReduceSum", W(0), &noop, 1, 1, rnd(3, 2, 3, 4));
    FD("ReduceMean", W(0), m, 2, 1, rnd(3, 2, 3, 4));
    FD("ReduceMean", W(0), NULL, 0, 1, rnd(3, 2, 3, 4));
    FD("ReduceMax", W(0), m, 2, 1, rnd(3, 2, 3, 4));
    FD("ReduceMax", W(0), m, 1, 1, rnd(3, 2, 3, 4));
}
END_TEST

/* ---- suite
 * ------------------------------------------------------------------ */

static Suite *tensor_suite(void)
{
    Suite *s = suite_create("op_tensor");
    TCase *sh = tcase_create("shape");
    TCase *mv = tcase_create("move");
    TCase *rd = tcase_create("reduce");

    tcase_add_test(sh, reshape_zero_and_minus_one);
    tcase_add_test(sh, reshape_allowzero_and_errors);
    tcase_add_test(sh, flatten_squeeze_unsqueeze);
    tcase_add_test(sh, expand_and_shape);
    suite_add_tcase(s, sh);
    tcase_add_test(mv, transpose_matches_numpy);
    tcase_add_test(mv, transpose_float16_and_bad_perm);
    tcase_add_test(mv, concat_and_split);
    tcase_add_test(mv, slice_matches_numpy);
    tcase_add_test(mv, slice_defaults_and_errors);
    tcase_add_test(mv, gather_matches_numpy);
    tcase_add_test(mv, gather_grad_float16_repeats);
    tcase_add_test(mv, empty_tensors);
    suite_add_tcase(s, mv);
    tcase_add_test(rd, reduce_sum_mean_max);
    tcase_add_test(rd, reduce_noop_and_errors);
    tcase_add_test(rd, argmax_keepdims_and_ties);
    tcase_add_test(rd, sum_to_shape);
    tcase_add_test(rd, reduce_max_grad_shares_ties);
    suite_add_tcase(s, rd);
    {
        TCase *fdc = tcase_create("finite_differences");

        tcase_set_timeout(fdc, 120);
        tcase_add_test(fdc, fd_shape_ops);
        tcase_add_test(fdc, fd_data_movement);
        tcase_add_test(fdc, fd_reductions);
        suite_add_tcase(s, fdc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(tensor_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
