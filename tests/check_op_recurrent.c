/* check_op_recurrent.c - gradients of RNN, GRU and LSTM (popc::RNNGrad,
** GRUGrad, LSTMGrad, built by backpropagation through time) against
** central finite differences of the forward kernels, for every input that
** has a gradient (X, W, R, B, initial_h, initial_c, P) and through every
** output (Y, Y_h, Y_c), over the attributes that change the arithmetic:
** direction (forward, reverse, bidirectional), layout, sequence_lens,
** peepholes, input_forget, linear_before_reset, clip and non-default
** activations with their alpha and beta. Training parity on whole models
** exported from PyTorch is tests/onnx/test_seq_train.sh. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/harness/attrs.h"
#include "tests/harness/fd_check.h"
#include "tests/harness/op_harness.h"
#include "tests/harness/ref_check.h"

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static popc_tensor *rnd(int64_t d0, int64_t d1, int64_t d2, int rank,
                        uint64_t seed, float scale)
{
    int64_t dims[3] = {d0, d1, d2};
    popc_tensor *t = rc_random(dims, rank, seed);
    float *p;

    ck_assert_ptr_nonnull(t);
    p = popc_tensor_data(t);
    for (int64_t i = 0; i < popc_tensor_numel(t); i++)
        p[i] *= scale;
    return t;
}

static popc_tensor *lens(int64_t a, int64_t b)
{
    int64_t dims[1] = {2};
    int32_t v[2] = {(int32_t)a, (int32_t)b};
    popc_tensor *t = NULL;

    ck_assert_int_eq(popc_tensor_from_data(POPC_DTYPE_I32, dims, 1, v, &t),
                     POPC_OK);
    return t;
}

/* One recurrent configuration: seq 4, batch 2, input 3, hidden 4. */
typedef struct rcase {
    const char *op;
    int gates, dirs, layout;
    int bias, lens, h0, c0, peep;
    int n_out;
    const popc_attr *attrs;
    int n_attrs;
} rcase;

static void check_case(const rcase *c)
{
    enum { S = 4, N = 2, I = 3, H = 4 };
    popc_tensor *in[8] = {0};
    int wrt[8], n_wrt = 0;
    char why[1024];
    popc_status st;

    in[0] = c->layout ? rnd(N, S, I, 3, 1, 1.0f) : rnd(S, N, I, 3, 1, 1.0f);
    in[1] = rnd(c->dirs, c->gates * H, I, 3, 2, 0.6f);
    in[2] = rnd(c->dirs, c->gates * H, H, 3, 3, 0.6f);
    wrt[n_wrt++] = 0, wrt[n_wrt++] = 1, wrt[n_wrt++] = 2;
    if (c->bias) {
        in[3] = rnd(c->dirs, 2 * c->gates * H, 0, 2, 4, 0.5f);
        wrt[n_wrt++] = 3;
    }
    if (c->lens)
        in[4] = lens(S, S - 2);
    if (c->h0) {
        in[5] = c->layout ? rnd(N, c->dirs, H, 3, 5, 0.5f)
                          : rnd(c->dirs, N, H, 3, 5, 0.5f);
        wrt[n_wrt++] = 5;
    }
    if (c->c0) {
        in[6] = c->layout ? rnd(N, c->dirs, H, 3, 6, 0.5f)
                          : rnd(c->dirs, N, H, 3, 6, 0.5f);
        wrt[n_wrt++] = 6;
    }
    if (c->peep) {
        in[7] = rnd(c->dirs, 3 * H, 0, 2, 7, 0.5f);
        wrt[n_wrt++] = 7;
    }
    st = fd_check_op_ex(NULL, c->op, in, c->peep ? 8 : c->c0 ? 7 : 6, wrt,
                        n_wrt, c->attrs, c->n_attrs, c->n_out, 1, 2e-3, why,
                        sizeof why);
    ck_assert_msg(st == POPC_OK, "%s: %s", c->op, why);
    for (int i = 0; i < 8; i++)
        popc_tensor_free(in[i]);
}

START_TEST(lstm_gradients)
{
    popc_attr plain[] = {ai("hidden_size", 4)};
    popc_attr bidi[] = {ai("hidden_size", 4), as("direction", "bidirectional"),
                        ai("layout", 1)};
    popc_attr rev[] = {ai("hidden_size", 4), as("direction", "reverse"),
                       ai("input_forget", 1), af("clip", 50.0)};
    const rcase cases[] = {
        {"LSTM", 4, 1, 0, 1, 0, 1, 1, 1, 3, plain, N_OF(plain)},
        {"LSTM", 4, 1, 0, 0, 0, 0, 0, 0, 1, plain, N_OF(plain)},
        {"LSTM", 4, 2, 1, 1, 1, 1, 1, 1, 3, bidi, N_OF(bidi)},
        {"LSTM", 4, 1, 0, 1, 1, 0, 1, 1, 3, rev, N_OF(rev)},
        /* the sgemm path (lstm_gemm.c): no peepholes, lens or clip */
        {"LSTM", 4, 1, 0, 1, 0, 1, 1, 0, 3, plain, N_OF(plain)},
        {"LSTM", 4, 2, 1, 1, 0, 1, 1, 0, 3, bidi, N_OF(bidi)},
    };

    for (int i = 0; i < N_OF(cases); i++)
        check_case(&cases[i]);
}
END_TEST

/* The sgemm path (float, lstm_gemm.c) against the double reference
** (recurrent_cell.c) on the same numbers: the reference runs when a
** peephole input P is present, and a zero P changes nothing. Outputs and
** the gradients of every input agree to float rounding. */
static void check_gemm_vs_reference(int dirs, int layout, int bias,
                                    const popc_attr *attrs, int n_attrs,
                                    int64_t N)
{
    enum { S = 7, I = 6, H = 9 };
    popc_tensor *in[8] = {0}, *out[2][3] = {{0}}, *gr[2][6] = {{0}}, *g;
    int64_t pd[2] = {dirs, 3 * H}, yd[4];
    int wrt[6] = {0, 1, 2, 5, 6, 3}, n_wrt = bias ? 6 : 5;
    char msg[256];

    in[0] = layout ? rnd(N, S, I, 3, 11, 1.0f) : rnd(S, N, I, 3, 11, 1.0f);
    in[1] = rnd(dirs, 4 * H, I, 3, 12, 0.5f);
    in[2] = rnd(dirs, 4 * H, H, 3, 13, 0.5f);
    in[3] = bias ? rnd(dirs, 8 * H, 0, 2, 14, 0.5f) : NULL;
    in[5] = layout ? rnd(N, dirs, H, 3, 15, 0.5f) : rnd(dirs, N, H, 3, 15, 0.5f);
    in[6] = layout ? rnd(N, dirs, H, 3, 16, 0.5f) : rnd(dirs, N, H, 3, 16, 0.5f);
    yd[0] = layout ? N : S, yd[1] = layout ? S : dirs;
    yd[2] = layout ? dirs : N, yd[3] = H;
    g = rc_random(yd, 4, 17);
    for (int ref = 0; ref < 2; ref++) {
        if (ref)
            ck_assert_int_eq(popc_tensor_new(POPC_DTYPE_F32, pd, 2, &in[7]),
                             POPC_OK); /* zeros */
        ck_assert_int_eq(harness_run_op(NULL, "LSTM", in, ref ? 8 : 7, attrs,
                                        n_attrs, out[ref], 3, 0),
                         POPC_OK);
        ck_assert_int_eq(rc_graph_grads(NULL, "LSTM", in, ref ? 8 : 7, wrt,
                                        n_wrt, attrs, n_attrs, 1, g, 1,
                                        gr[ref]),
                         POPC_OK);
    }
    for (int j = 0; j < 3; j++)
        ck_assert_msg(rc_close(out[0][j], out[1][j], 1e-5, 1e-6, msg,
                               sizeof msg),
                      "LSTM output %d, sgemm path vs reference: %s", j, msg);
    for (int j = 0; j < n_wrt; j++) {
        ck_assert_ptr_nonnull(gr[0][j]);
        ck_assert_msg(rc_close(gr[0][j], gr[1][j], 1e-5, 2e-6, msg,
                               sizeof msg),
                      "LSTM gradient of input %d, sgemm path vs reference: "
                      "%s", wrt[j], msg);
    }
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < 6; j++) {
            if (j < 3)
                popc_tensor_free(out[r][j]);
            popc_tensor_free(gr[r][j]);
        }
    for (int i = 0; i < 8; i++)
        popc_tensor_free(in[i]);
    popc_tensor_free(g);
}

START_TEST(lstm_gemm_matches_reference)
{
    popc_attr plain[] = {ai("hidden_size", 9)};
    popc_attr bidi[] = {ai("hidden_size", 9), as("direction", "bidirectional"),
                        ai("layout", 1)};
    popc_attr rev[] = {ai("hidden_size", 9), as("direction", "reverse")};

    check_gemm_vs_reference(1, 0, 1, plain, N_OF(plain), 5);
    check_gemm_vs_reference(2, 1, 1, bidi, N_OF(bidi), 5);
    check_gemm_vs_reference(1, 0, 0, rev, N_OF(rev), 5);
    /* forward units of 16 entries: two blocks, gathered (layout 0) and
    ** contiguous (layout 1) */
    check_gemm_vs_reference(1, 0, 1, plain, N_OF(plain), 21);
    check_gemm_vs_reference(2, 1, 1, bidi, N_OF(bidi), 21);
}
END_TEST

START_TEST(gru_gradients)
{
    const char *acts[] = {"Sigmoid", "Tanh", "HardSigmoid", "Softsign"};
    float alpha[] = {0, 0, 0.25f, 0}, beta[] = {0, 0, 0.45f, 0};
    double alphad[4], betad[4];
    popc_attr plain[] = {ai("hidden_size", 4)};
    popc_attr lbr[] = {ai("hidden_size", 4), ai("linear_before_reset", 1),
                       as("direction", "bidirectional")};
    popc_attr act[6] = {ai("hidden_size", 4), as("direction", "bidirectional"),
                        ai("layout", 1)};
    const rcase *cs;

    for (int i = 0; i < 4; i++)
        alphad[i] = alpha[i], betad[i] = beta[i];
    act[3] = (popc_attr){.name = "activations", .type = POPC_ATTR_STRINGS,
                         .n = 4, .strings = acts};
    act[4] = (popc_attr){.name = "activation_alpha", .type = POPC_ATTR_FLOATS,
                         .n = 4, .floats = alphad};
    act[5] = (popc_attr){.name = "activation_beta", .type = POPC_ATTR_FLOATS,
                         .n = 4, .floats = betad};
    {
        const rcase cases[] = {
            {"GRU", 3, 1, 0, 1, 0, 1, 0, 0, 2, plain, N_OF(plain)},
            {"GRU", 3, 1, 0, 0, 0, 0, 0, 0, 1, plain, N_OF(plain)},
            {"GRU", 3, 2, 0, 1, 1, 1, 0, 0, 2, lbr, N_OF(lbr)},
            {"GRU", 3, 2, 1, 1, 0, 1, 0, 0, 2, act, N_OF(act)},
        };
        cs = cases;
        for (int i = 0; i < N_OF(cases); i++)
            check_case(&cs[i]);
    }
}
END_TEST

START_TEST(rnn_gradients)
{
    const char *scaled[] = {"ScaledTanh"};
    double sa[] = {1.5}, sb[] = {0.7};
    popc_attr plain[] = {ai("hidden_size", 4)};
    popc_attr act[] = {
        ai("hidden_size", 4), as("direction", "reverse"), ai("layout", 1),
        {.name = "activations", .type = POPC_ATTR_STRINGS, .n = 1,
         .strings = scaled},
        {.name = "activation_alpha", .type = POPC_ATTR_FLOATS, .n = 1,
         .floats = sa},
        {.name = "activation_beta", .type = POPC_ATTR_FLOATS, .n = 1,
         .floats = sb}};
    const rcase cases[] = {
        {"RNN", 1, 1, 0, 1, 0, 1, 0, 0, 2, plain, N_OF(plain)},
        {"RNN", 1, 1, 1, 1, 1, 1, 0, 0, 2, act, N_OF(act)},
    };

    for (int i = 0; i < N_OF(cases); i++)
        check_case(&cases[i]);
}
END_TEST

static Suite *recurrent_suite(void)
{
    Suite *s = suite_create("op_recurrent");
    TCase *tc = tcase_create("gradients");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, lstm_gradients);
    tcase_add_test(tc, lstm_gemm_matches_reference);
    tcase_add_test(tc, gru_gradients);
    tcase_add_test(tc, rnn_gradients);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(recurrent_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
