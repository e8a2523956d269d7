/* check_op_popc.c - the popc plugin: IdentityLoss (reductions, gradients),
** IpuPrintTensor (logged text, gradient printing), Nop and
** RecomputationCheckpoint (identities of any dtype, never folded). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/harness/assert.h"
#include "tests/harness/fd_check.h"
#include "tests/harness/op_harness.h"
#include "tests/harness/ref_check.h"

static const popc_op_def *find(const char *op)
{
    popc_registry *reg;
    const popc_op_def *d;

    ASSERT_OK(popc_registry_global(&reg));
    d = popc_registry_find_op(reg, "popc", op, 0);
    ck_assert_msg(d != NULL, "popc::%s not registered", op);
    return d;
}

static float scalar(popc_tensor *t)
{
    ck_assert_int_eq(popc_tensor_rank(t), 0);
    return *(const float *)popc_tensor_cdata(t);
}

static void fd_ok(const char *op, popc_tensor **in, int n_in, const int *wrt,
                  int n_wrt, const popc_attr *a, int na, int n_out)
{
    char why[1024];

    ck_assert_msg(fd_check_op_ex("popc", op, in, n_in, wrt, n_wrt, a, na, n_out,
                                 1, 1e-3, why, sizeof why) == POPC_OK,
                  "%s", why);
}

/* ---- IdentityLoss -------------------------------------------------------- */

START_TEST(identity_loss_reductions)
{
    int64_t d[2] = {2, 3};
    float v[6] = {1, 2, 3, 4, 5, 6.5f};
    popc_tensor *x = harness_f32(d, 2, v), *out = NULL;
    popc_attr a;

    ck_assert(find("IdentityLoss")->flags & POPC_OP_LOSS);
    a = popc_attr_make_int("reduction", 0);
    ASSERT_OK(harness_run_op("popc", "IdentityLoss", &x, 1, &a, 1, &out, 1, 0));
    ck_assert_float_eq(scalar(out), 21.5f);
    popc_tensor_free(out);
    a = popc_attr_make_int("reduction", 1);
    ASSERT_OK(harness_run_op("popc", "IdentityLoss", &x, 1, &a, 1, &out, 1, 0));
    ck_assert_float_eq_tol(scalar(out), 21.5f / 6, 1e-6f);
    popc_tensor_free(out);
    a = popc_attr_make_string("reduction", "none");
    ASSERT_OK(harness_run_op("popc", "IdentityLoss", &x, 1, &a, 1, &out, 1, 0));
    ck_assert(popc_tensor_equal(out, x));
    popc_tensor_free(out);
    /* default: mean */
    ASSERT_OK(
        harness_run_op("popc", "IdentityLoss", &x, 1, NULL, 0, &out, 1, 0));
    ck_assert_float_eq_tol(scalar(out), 21.5f / 6, 1e-6f);
    popc_tensor_free(out);
    a = popc_attr_make_int("reduction", 3);
    ck_assert_int_eq(
        harness_run_op("popc", "IdentityLoss", &x, 1, &a, 1, &out, 1, 0),
        POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "Unsupported reduction type!");
    ASSERT_HAS(popc_last_error(), "IdentityLoss 'IdentityLoss'");
    popc_tensor_free(x);
}
END_TEST

START_TEST(identity_loss_gradients)
{
    int64_t d[2] = {2, 3};
    popc_tensor *x = rc_random(d, 2, 5), *grads[1] = {0};
    static const int wrt[] = {0};
    /* sum and none seed every element with 1; mean with 1 / numel */
    static const float want[3] = {1.0f, 1.0f / 6, 1.0f};

    for (int r = 0; r < 3; r++) {
        popc_attr a = popc_attr_make_int("reduction", r);
        const float *g;

        ASSERT_OK(rc_graph_grads("popc", "IdentityLoss", &x, 1, wrt, 1, &a, 1,
                                 1, NULL, 1, grads));
        ck_assert_int_eq(popc_tensor_numel(grads[0]), 6);
        g = popc_tensor_cdata(grads[0]);
        for (int i = 0; i < 6; i++)
            ck_assert_float_eq_tol(g[i], want[r], 1e-7f);
        popc_tensor_free(grads[0]);
        fd_ok("IdentityLoss", &x, 1, wrt, 1, &a, 1, 1);
    }
    popc_tensor_free(x);
}
END_TEST

/* ---- IpuPrintTensor ------------------------------------------------------ */

static char logged[8192];

static void capture(int level, const char *msg, void *user)
{
    (void)user;
    if (level == POPC_LOG_INFO &&
        strlen(logged) + strlen(msg) + 2 < sizeof logged) {
        strcat(logged, msg);
        strcat(logged, "\n");
    }
}

static int count(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void capture_on(void)
{
    logged[0] = '\0';
    popc_log_set_level(POPC_LOG_INFO);
    popc_log_set_callback(capture, NULL);
}

static void capture_off(void)
{
    popc_log_set_callback(NULL, NULL);
    popc_log_set_level(POPC_LOG_WARN);
}

START_TEST(print_tensor_logs_and_passes_through)
{
    int64_t d[2] = {2, 3}, big[1] = {2000};
    float v[6] = {1, 2, 3, 4, 5, 6};
    popc_tensor *x = harness_f32(d, 2, v), *out = NULL, *y;
    popc_attr t = popc_attr_make_string("title", "summation");
    const popc_op_def *def = find("IpuPrintTensor");

    ck_assert(def->flags & POPC_OP_NOFOLD);
    capture_on();
    ASSERT_OK(
        harness_run_op("popc", "IpuPrintTensor", &x, 1, &t, 1, &out, 1, 0));
    capture_off();
    ck_assert(popc_tensor_equal(out, x));
    ASSERT_HAS(logged, "summation: float32[2, 3] [[1, 2, 3], [4, 5, 6]]");
    /* once per run: the harness runs it whole, then split in 3 parts */
    ck_assert_int_eq(count(logged, "summation:"), 2);
    popc_tensor_free(out);
    /* long tensors are summarised with their edge items */
    y = rc_random(big, 1, 3);
    capture_on();
    ASSERT_OK(
        harness_run_op("popc", "IpuPrintTensor", &y, 1, NULL, 0, &out, 1, 0));
    capture_off();
    ASSERT_HAS(logged, "float32[2000] [");
    ASSERT_HAS(logged, "..., ");
    ck_assert(popc_tensor_equal(out, y));
    popc_tensor_free(out);
    popc_tensor_free(y);
    popc_tensor_free(x);
}
END_TEST

START_TEST(print_tensor_prints_its_gradient)
{
    int64_t d[1] = {3};
    float v[3] = {1, 2, 3};
    popc_tensor *x = harness_f32(d, 1, v), *grads[1] = {0};
    static const int wrt[] = {0};
    popc_attr a[2] = {popc_attr_make_string("title", "act"),
                      popc_attr_make_int("print_gradient", 1)};
    const float *g;

    capture_on();
    ASSERT_OK(rc_graph_grads("popc", "IpuPrintTensor", &x, 1, wrt, 1, a, 2, 1,
                             NULL, 1, grads));
    capture_off();
    ASSERT_HAS(logged, "act_gradient: float32[3] [1, 1, 1]");
    g = popc_tensor_cdata(grads[0]);
    ck_assert_float_eq(g[0], 1.0f);
    popc_tensor_free(grads[0]);
    /* without print_gradient the gradient passes silently */
    a[1] = popc_attr_make_int("print_gradient", 0);
    capture_on();
    ASSERT_OK(rc_graph_grads("popc", "IpuPrintTensor", &x, 1, wrt, 1, a, 2, 1,
                             NULL, 1, grads));
    capture_off();
    ck_assert_ptr_null(strstr(logged, "act_gradient"));
    popc_tensor_free(grads[0]);
    fd_ok("IpuPrintTensor", &x, 1, wrt, 1, a, 2, 1);
    popc_tensor_free(x);
}
END_TEST

/* ---- Nop / RecomputationCheckpoint --------------------------------------- */

START_TEST(nop_and_checkpoint_are_identities)
{
    int64_t d[2] = {3, 5}, li[1] = {4}, lv[4] = {1, -2, 3, 1LL << 40};
    popc_tensor *x = rc_random(d, 2, 9), *l = NULL, *out[2] = {0};
    popc_tensor *in[2];
    static const int wrt[] = {0}, wrt2[] = {0, 1};

    ck_assert(find("Nop")->flags & POPC_OP_NOFOLD);
    ASSERT_OK(popc_tensor_from_data(POPC_DTYPE_I64, li, 1, lv, &l));
    ASSERT_OK(harness_run_op("popc", "Nop", &x, 1, NULL, 0, out, 1, 0));
    ck_assert(popc_tensor_equal(out[0], x));
    popc_tensor_free(out[0]);
    ASSERT_OK(harness_run_op("popc", "Nop", &l, 1, NULL, 0, out, 1, 0));
    ck_assert(popc_tensor_equal(out[0], l));
    popc_tensor_free(out[0]);
    in[0] = x;
    in[1] = l;
    ASSERT_OK(harness_run_op("popc", "RecomputationCheckpoint", in, 2, NULL, 0,
                             out, 2, 0));
    ck_assert(popc_tensor_equal(out[0], x));
    ck_assert(popc_tensor_equal(out[1], l));
    popc_tensor_free(out[0]);
    popc_tensor_free(out[1]);
    ck_assert_int_eq(harness_run_op("popc", "RecomputationCheckpoint", in, 2,
                                    NULL, 0, out, 1, 0),
                     POPC_EINVAL);
    fd_ok("Nop", &x, 1, wrt, 1, NULL, 0, 1);
    fd_ok("RecomputationCheckpoint", &x, 1, wrt, 1, NULL, 0, 1);
    in[1] = rc_random(d, 2, 10);
    fd_ok("RecomputationCheckpoint", in, 2, wrt2, 2, NULL, 0, 2);
    popc_tensor_free(in[1]);
    popc_tensor_free(l);
    popc_tensor_free(x);
}
END_TEST

static Suite *popc_suite(void)
{
    Suite *s = suite_create("op_popc");
    TCase *tc = tcase_create("popc");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, identity_loss_reductions);
    tcase_add_test(tc, identity_loss_gradients);
    tcase_add_test(tc, print_tensor_logs_and_passes_through);
    tcase_add_test(tc, print_tensor_prints_its_gradient);
    tcase_add_test(tc, nop_and_checkpoint_are_identities);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(popc_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
