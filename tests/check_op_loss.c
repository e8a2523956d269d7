/* check_op_loss.c - the loss plugin: SoftmaxCrossEntropyLoss,
** NegativeLogLikelihoodLoss, MseLoss, L1Loss and their gradient ops against
** torch.nn.functional (tests/ref/nn/, gen_ops_nn.py), gradients through the
** graph vs torch autograd and finite differences, and label errors. */
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

#define ASSERT_CLOSE(got, want, what)                                          \
    do {                                                                       \
        char m_[512];                                                          \
        ck_assert_msg(rc_close((got), (want), 1e-5, 1e-6, m_, sizeof m_),      \
                      "%s: %s", (what), m_);                                   \
    } while (0)

static const char *const reds[] = {"mean", "sum", "none"};

static popc_tensor *load(const char *c, const char *what)
{
    popc_tensor *t = rc_load(c, what);

    ck_assert_msg(t != NULL, "reference %s_%s missing", c, what);
    return t;
}

static void free_all(popc_tensor **t, int n)
{
    for (int i = 0; i < n; i++) {
        popc_tensor_free(t[i]);
        t[i] = NULL;
    }
}

static void expect_ref(popc_tensor *got, const char *c, const char *what)
{
    popc_tensor *want = load(c, what);
    char label[128];

    snprintf(label, sizeof label, "%s_%s", c, what);
    ASSERT_CLOSE(got, want, label);
    popc_tensor_free(want);
}

/* dL: the reference upstream gradient for "none", else a scalar 1. */
static popc_tensor *upstream(const char *c, const char *red)
{
    float one = 1.0f;

    if (strcmp(red, "none") == 0)
        return load(c, "g");
    return harness_f32(NULL, 0, &one);
}

static void fd_ok(const char *domain, const char *op, popc_tensor **in,
                  int n_in, const int *wrt, int n_wrt, const popc_attr *a,
                  int na, int n_out, double tol)
{
    char why[1024];

    ck_assert_msg(fd_check_op_ex(domain, op, in, n_in, wrt, n_wrt, a, na, n_out,
                                 1, tol, why, sizeof why) == POPC_OK,
                  "%s", why);
}

static int is_loss(const char *domain, const char *op)
{
    popc_registry *reg;
    const popc_op_def *d;

    ASSERT_OK(popc_registry_global(&reg));
    d = popc_registry_find_op(reg, domain, op, 0);
    ck_assert_msg(d != NULL, "%s not registered", op);
    return (d->flags & POPC_OP_LOSS) != 0;
}

START_TEST(losses_are_flagged)
{
    ck_assert(is_loss(NULL, "SoftmaxCrossEntropyLoss"));
    ck_assert(is_loss(NULL, "NegativeLogLikelihoodLoss"));
    ck_assert(is_loss("popc", "MseLoss"));
    ck_assert(is_loss("popc", "L1Loss"));
}
END_TEST

/* ---- SoftmaxCrossEntropyLoss --------------------------------------------- */

START_TEST(cross_entropy_matches_torch)
{
    popc_tensor *scores = load("xent", "scores"),
                *labels = load("xent", "labels");
    popc_tensor *weights = load("xent", "weights");

    for (int w = 0; w < 2; w++)
        for (int r = 0; r < 3; r++) {
            char c[64];
            popc_attr a[2] = {popc_attr_make_string("reduction", reds[r]),
                              popc_attr_make_int("ignore_index", 2)};
            popc_tensor *in[4], *out[2] = {0}, *grads[1] = {0}, *dl;
            static const int wrt[] = {0};

            snprintf(c, sizeof c, "xent_%s%s", w ? "w_" : "", reds[r]);
            in[0] = scores;
            in[1] = labels;
            in[2] = w ? weights : NULL;
            ASSERT_OK(harness_run_op(NULL, "SoftmaxCrossEntropyLoss", in, 3, a,
                                     w ? 2 : 1, out, 2, 0));
            expect_ref(out[0], c, "loss");
            expect_ref(out[1], "xent", "logprob");
            /* the gradient op directly, then through the graph */
            dl = upstream(c, reds[r]);
            in[0] = dl;
            in[1] = scores;
            in[2] = labels;
            in[3] = w ? weights : NULL;
            free_all(out, 2);
            ASSERT_OK(harness_run_op("popc", "SoftmaxCrossEntropyLossGrad", in,
                                     4, a, w ? 2 : 1, out, 1, 1));
            expect_ref(out[0], c, "dscores");
            in[0] = scores;
            in[1] = labels;
            in[2] = w ? weights : NULL;
            ASSERT_OK(rc_graph_grads(NULL, "SoftmaxCrossEntropyLoss", in, 3,
                                     wrt, 1, a, w ? 2 : 1, 1,
                                     r == 2 ? dl : NULL, 1, grads));
            expect_ref(grads[0], c, "dscores");
            free_all(grads, 1);
            free_all(out, 2);
            popc_tensor_free(dl);
        }
    popc_tensor_free(scores);
    popc_tensor_free(labels);
    popc_tensor_free(weights);
}
END_TEST

START_TEST(cross_entropy_kdim_int32_labels)
{
    popc_tensor *in[2] = {load("xent4", "scores"), load("xent4", "labels")};
    popc_tensor *out[1] = {0}, *grads[1] = {0};
    static const int wrt[] = {0};

    ck_assert_int_eq(popc_tensor_dtype(in[1]), POPC_DTYPE_I32);
    ASSERT_OK(harness_run_op(NULL, "SoftmaxCrossEntropyLoss", in, 2, NULL, 0,
                             out, 1, 0));
    expect_ref(out[0], "xent4", "loss");
    ASSERT_OK(rc_graph_grads(NULL, "SoftmaxCrossEntropyLoss", in, 2, wrt, 1,
                             NULL, 0, 1, NULL, 1, grads));
    expect_ref(grads[0], "xent4", "dscores");
    free_all(grads, 1);
    free_all(out, 1);
    free_all(in, 2);
}
END_TEST

START_TEST(cross_entropy_label_errors)
{
    int64_t sd[2] = {3, 5}, ld[1] = {3};
    int64_t bad[3] = {1, 7, 0}, neg[3] = {1, -100, 0};
    popc_tensor *scores = rc_random(sd, 2, 1), *labels = NULL, *out[1] = {0};
    popc_tensor *in[2];
    popc_attr ig = popc_attr_make_int("ignore_index", -100);

    ASSERT_OK(popc_tensor_from_data(POPC_DTYPE_I64, ld, 1, bad, &labels));
    in[0] = scores;
    in[1] = labels;
    ck_assert_int_eq(harness_run_op(NULL, "SoftmaxCrossEntropyLoss", in, 2,
                                    NULL, 0, out, 1, 0),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "SoftmaxCrossEntropyLoss 'Softmax");
    ASSERT_HAS(popc_last_error(), "label 7");
    ASSERT_HAS(popc_last_error(), "5 classes");
    ck_assert_int_eq(harness_run_op(NULL, "NegativeLogLikelihoodLoss", in, 2,
                                    NULL, 0, out, 1, 0),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "label 7");
    popc_tensor_free(labels);
    /* -100 is an error without ignore_index and skipped with it */
    ASSERT_OK(popc_tensor_from_data(POPC_DTYPE_I64, ld, 1, neg, &labels));
    in[1] = labels;
    ck_assert_int_eq(harness_run_op(NULL, "SoftmaxCrossEntropyLoss", in, 2,
                                    NULL, 0, out, 1, 0),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "label -100");
    ASSERT_OK(harness_run_op(NULL, "SoftmaxCrossEntropyLoss", in, 2, &ig, 1,
                             out, 1, 0));
    ck_assert(isfinite(*(const float *)popc_tensor_cdata(out[0])));
    free_all(out, 1);
    /* labels of the wrong shape, a bad reduction */
    in[1] = scores;
    ck_assert_int_eq(harness_run_op(NULL, "SoftmaxCrossEntropyLoss", in, 2,
                                    NULL, 0, out, 1, 0),
                     POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "int32 or int64");
    popc_tensor_free(scores);
    popc_tensor_free(labels);
}
END_TEST

START_TEST(cross_entropy_all_ignored_mean_is_nan)
{
    int64_t sd[2] = {2, 3}, ld[1] = {2}, lab[2] = {1, 1};
    popc_tensor *in[2] = {rc_random(sd, 2, 1), NULL}, *out[1] = {0};
    popc_attr ig = popc_attr_make_int("ignore_index", 1);

    ASSERT_OK(popc_tensor_from_data(POPC_DTYPE_I64, ld, 1, lab, &in[1]));
    ASSERT_OK(harness_run_op(NULL, "SoftmaxCrossEntropyLoss", in, 2, &ig, 1,
                             out, 1, 0));
    ck_assert(isnan(*(const float *)popc_tensor_cdata(out[0])));
    free_all(out, 1);
    free_all(in, 2);
}
END_TEST

START_TEST(cross_entropy_finite_differences)
{
    popc_tensor *in[3] = {load("xent", "scores"), load("xent", "labels"),
                          load("xent", "weights")};
    static const int wrt[] = {0};

    for (int r = 0; r < 3; r++) {
        popc_attr a[2] = {popc_attr_make_string("reduction", reds[r]),
                          popc_attr_make_int("ignore_index", 2)};

        fd_ok(NULL, "SoftmaxCrossEntropyLoss", in, 3, wrt, 1, a, 2, 1, 1e-3);
        /* with the log_prob output in the loss too */
        fd_ok(NULL, "SoftmaxCrossEntropyLoss", in, 3, wrt, 1, a, 2, 2, 1e-3);
        fd_ok(NULL, "NegativeLogLikelihoodLoss", in, 3, wrt, 1, a, 2, 1, 1e-3);
    }
    free_all(in, 3);
}
END_TEST

/* ---- NegativeLogLikelihoodLoss ------------------------------------------- */

START_TEST(nll_matches_torch)
{
    popc_tensor *x = load("nll", "input"), *labels = load("xent", "labels");
    popc_tensor *weights = load("xent", "weights");

    for (int r = 0; r < 3; r++) {
        char c[32];
        popc_attr a[3] = {popc_attr_make_string("reduction", reds[r]),
                          popc_attr_make_int("ignore_index", 2),
                          {.name = "input_shape",
                           .type = POPC_ATTR_INTS,
                           .n = 2,
                           .ints = popc_tensor_dims(x)}};
        popc_tensor *in[3] = {x, labels, weights}, *out[1] = {0},
                    *grads[1] = {0}, *dl;
        static const int wrt[] = {0};

        snprintf(c, sizeof c, "nll_%s", reds[r]);
        ASSERT_OK(harness_run_op(NULL, "NegativeLogLikelihoodLoss", in, 3, a, 2,
                                 out, 1, 0));
        expect_ref(out[0], c, "loss");
        free_all(out, 1);
        dl = upstream(c, reds[r]);
        in[0] = dl;
        in[1] = labels;
        in[2] = weights;
        ASSERT_OK(harness_run_op("popc", "NegativeLogLikelihoodLossGrad", in, 3,
                                 a, 3, out, 1, 1));
        expect_ref(out[0], c, "dinput");
        in[0] = x;
        ASSERT_OK(rc_graph_grads(NULL, "NegativeLogLikelihoodLoss", in, 3, wrt,
                                 1, a, 2, 1, r == 2 ? dl : NULL, 1, grads));
        expect_ref(grads[0], c, "dinput");
        free_all(grads, 1);
        free_all(out, 1);
        popc_tensor_free(dl);
    }
    popc_tensor_free(x);
    popc_tensor_free(labels);
    popc_tensor_free(weights);
}
END_TEST

/* ---- MseLoss / L1Loss ---------------------------------------------------- */

START_TEST(mse_l1_match_torch)
{
    static const char *const names[] = {"mse", "l1"};
    static const char *const ops[] = {"MseLoss", "L1Loss"};
    static const char *const gops[] = {"MseLossGrad", "L1LossGrad"};
    popc_tensor *x = load("pw", "x"), *t = load("pw", "t");

    for (int k = 0; k < 2; k++)
        for (int r = 0; r < 3; r++) {
            char c[32];
            popc_attr a = popc_attr_make_string("reduction", reds[r]);
            popc_tensor *in[3] = {x, t, NULL}, *out[1] = {0}, *grads[2] = {0},
                        *dl;
            static const int wrt[] = {0, 1};

            snprintf(c, sizeof c, "%s_%s", names[k], reds[r]);
            ASSERT_OK(harness_run_op("popc", ops[k], in, 2, &a, 1, out, 1, 0));
            expect_ref(out[0], c, "loss");
            free_all(out, 1);
            dl = upstream(c, reds[r]);
            in[0] = dl;
            in[1] = x;
            in[2] = t;
            ASSERT_OK(harness_run_op("popc", gops[k], in, 3, &a, 1, out, 1, 1));
            expect_ref(out[0], c, "dx");
            in[0] = x;
            in[1] = t;
            ASSERT_OK(rc_graph_grads("popc", ops[k], in, 2, wrt, 2, &a, 1, 1,
                                     r == 2 ? dl : NULL, 1, grads));
            expect_ref(grads[0], c, "dx");
            expect_ref(grads[1], c, "dt");
            free_all(grads, 2);
            free_all(out, 1);
            popc_tensor_free(dl);
        }
    popc_tensor_free(x);
    popc_tensor_free(t);
}
END_TEST

START_TEST(mse_l1_errors_and_fd)
{
    int64_t d[2] = {3, 4}, bad[2] = {4, 3};
    popc_tensor *x = rc_random(d, 2, 1), *t = rc_random(d, 2, 2);
    popc_tensor *in[2] = {x, t}, *out[1] = {0}, *tb = rc_random(bad, 2, 3);
    static const int wrt[] = {0, 1};
    float *px = popc_tensor_data(x);
    const float *pt = popc_tensor_cdata(t);

    /* keep |x - t| away from L1's kink */
    for (int i = 0; i < 12; i++)
        if (fabsf(px[i] - pt[i]) < 0.1f)
            px[i] = pt[i] + 0.3f;
    for (int r = 0; r < 3; r++) {
        popc_attr a = popc_attr_make_string("reduction", reds[r]);

        fd_ok("popc", "MseLoss", in, 2, wrt, 2, &a, 1, 1, 1e-3);
        fd_ok("popc", "L1Loss", in, 2, wrt, 2, &a, 1, 1, 1e-3);
    }
    in[1] = tb;
    ck_assert_int_eq(
        harness_run_op("popc", "MseLoss", in, 2, NULL, 0, out, 1, 0),
        POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "MseLoss 'MseLoss'");
    ASSERT_HAS(popc_last_error(), "[3, 4]");
    ASSERT_HAS(popc_last_error(), "[4, 3]");
    {
        popc_attr a = popc_attr_make_string("reduction", "average");

        in[1] = t;
        ck_assert_int_eq(
            harness_run_op("popc", "L1Loss", in, 2, &a, 1, out, 1, 0),
            POPC_EINVAL);
        ASSERT_HAS(popc_last_error(), "reduction 'average'");
    }
    popc_tensor_free(x);
    popc_tensor_free(t);
    popc_tensor_free(tb);
}
END_TEST

static Suite *loss_suite(void)
{
    Suite *s = suite_create("op_loss");
    TCase *tc = tcase_create("loss");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, losses_are_flagged);
    tcase_add_test(tc, cross_entropy_matches_torch);
    tcase_add_test(tc, cross_entropy_kdim_int32_labels);
    tcase_add_test(tc, cross_entropy_label_errors);
    tcase_add_test(tc, cross_entropy_all_ignored_mean_is_nan);
    tcase_add_test(tc, cross_entropy_finite_differences);
    tcase_add_test(tc, nll_matches_torch);
    tcase_add_test(tc, mse_l1_match_torch);
    tcase_add_test(tc, mse_l1_errors_and_fd);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(loss_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
