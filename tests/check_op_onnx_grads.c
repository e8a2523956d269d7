/* check_op_onnx_grads.c - gradients of ops added for ONNX models, each
** checked against central finite differences of its forward kernel
** (tests/harness/fd_check.h), on inputs kept away from the ops' kinks:
** the elementwise ops of the math plugin's wide.c (inverse and hyperbolic
** trigonometry, Softsign, Selu, HardSigmoid, HardSwish, ThresholdedRelu,
** Shrink, PRelu and its slope, floating-point Mod and its divisor, and the
** zero gradients of Ceil, Floor, Round and Sign). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
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

static Suite *grads_suite(void)
{
    Suite *s = suite_create("op_onnx_grads");
    TCase *tc = tcase_create("wide");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, wide_unary_gradients);
    tcase_add_test(tc, wide_attribute_gradients);
    tcase_add_test(tc, wide_binary_gradients);
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
