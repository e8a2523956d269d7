/* check_helpers.c - PopTorch's op helpers (popc/helpers.h) on the cpu and
** ipumodel backends:
** - for_loop: the forward result and one SGD step through three
**   iterations against torch (tests/ref/gen_helpers.py), count 0, and the
**   errors for a body that does not fit;
** - dynamic_slice / dynamic_update: hand-derived rows for starts inside,
**   wrapping past the end, beyond the end and negative, with the offset
**   fed at run time, and their gradients (one SGD step, lr 1);
** - ctc_beam_search_decoder against the NumPy decoder of
**   tests/ref/gen_ctc.py (ties included);
** - removeBlocks: a two-IPU pipelined model compiles on one IPU;
** - ipuHardwareIsAvailable / ipuHardwareVersion without hardware. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "popc/helpers.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

static const char *const backends[] = {"cpu", "ipumodel"};

static popc_tensor *ref(const char *name)
{
    const char *dir = getenv("POPC_TEST_REF");
    char path[4096];
    popc_tensor *t = NULL;

    snprintf(path, sizeof path, "%s/helpers/%s.npy", dir ? dir : "tests/ref",
             name);
    ck_assert_msg(popc_npy_load(path, &t) == POPC_OK, "%s",
                  popc_last_error());
    return t;
}

static popc_tensor *filled(const int64_t *dims, int rank,
                           float (*f)(int64_t i, int64_t j, int64_t cols))
{
    popc_tensor *t = NULL;
    int64_t cols = rank > 1 ? dims[1] : dims[0];
    int64_t rows = rank > 1 ? dims[0] : 1;
    float *p;

    OK(popc_tensor_new(POPC_DTYPE_F32, dims, rank, &t));
    p = popc_tensor_data(t);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            p[i * cols + j] = f(i, j, cols);
    return t;
}

static float x0_at(int64_t i, int64_t j, int64_t c)
{
    return 0.1f * (float)(c * i + j) - 0.3f;
}

static float w_at(int64_t i, int64_t j, int64_t c)
{
    (void)c;
    return 0.05f * (float)(i - j) + 0.02f * (float)i;
}

static float b_at(int64_t i, int64_t j, int64_t c)
{
    (void)i, (void)c;
    return 0.01f * (float)(j + 1);
}

static float one_at(int64_t i, int64_t j, int64_t c)
{
    (void)i, (void)j, (void)c;
    return 1.0f;
}

static void close_to(const popc_tensor *got, const popc_tensor *want,
                     double tol, const char *what)
{
    double d = popc_tensor_max_abs_diff(got, want);

    ck_assert_msg(d <= tol, "%s: largest difference %g (tolerance %g)", what,
                  d, tol);
}

/* y = tanh(y W^T + b) with its own weights fc.weight, fc.bias. */
static popc_graph *loop_body(void)
{
    int64_t xd[2] = {2, 4}, wd[2] = {4, 4}, bd[1] = {4};
    popc_graph *b = NULL;
    popc_tensor *w = filled(wd, 2, w_at), *bias = filled(bd, 1, b_at);
    popc_attr trans = {.name = "transB", .type = POPC_ATTR_INT, .i = 1};
    int x, wv, bv, in[3], h, y;

    OK(popc_graph_new("body", &b));
    OK(popc_graph_add_input(b, "y", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_initializer(b, "fc.weight", w, 1, &wv));
    OK(popc_graph_add_initializer(b, "fc.bias", bias, 1, &bv));
    in[0] = x;
    in[1] = wv;
    in[2] = bv;
    OK(popc_graph_add_node(b, NULL, "Gemm", 0, in, 3, &h, 1, &trans, 1,
                           "fc", NULL));
    OK(popc_graph_add_node(b, NULL, "Tanh", 0, &h, 1, &y, 1, NULL, 0, "act",
                           NULL));
    OK(popc_graph_add_output(b, y));
    popc_tensor_free(w);
    popc_tensor_free(bias);
    return b;
}

/* x = x0 * ones (x0 trainable), three iterations, loss mean(y^2). */
static popc_graph *loop_model(int64_t count, int *y_out)
{
    int64_t xd[2] = {2, 4};
    popc_graph *g = NULL, *body = loop_body();
    popc_tensor *x0 = filled(xd, 2, x0_at);
    popc_layers *L = NULL;
    int ones, x0v, x, y, yy, loss, in[2];

    OK(popc_graph_new("loop", &g));
    OK(popc_graph_add_input(g, "ones", POPC_DTYPE_F32, xd, 2, &ones));
    OK(popc_graph_add_initializer(g, "x0", x0, 1, &x0v));
    in[0] = x0v;
    in[1] = ones;
    OK(popc_graph_add_node(g, NULL, "Mul", 0, in, 2, &x, 1, NULL, 0, "x",
                           NULL));
    OK(popc_for_loop(g, "loop", count, body, &x, 1, &y));
    in[0] = y;
    in[1] = y;
    OK(popc_graph_add_node(g, NULL, "Mul", 0, in, 2, &yy, 1, NULL, 0, "sq",
                           NULL));
    OK(popc_layers_new(g, 0, &L));
    OK(popc_nn_identity_loss(L, yy, "mean", &loss));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    popc_graph_free(body);
    popc_tensor_free(x0);
    if (y_out)
        *y_out = y;
    return g;
}

START_TEST(for_loop_forward_matches_torch)
{
    int64_t xd[2] = {2, 4};
    int y;
    popc_graph *g = loop_model(3, &y);
    popc_tensor *ones = filled(xd, 2, one_at), *out = NULL;
    popc_tensor *want = ref("loop_y");

    OK(popc_graph_eval(g, &ones, 1, &y, 1, &out, 0, 0));
    close_to(out, want, 1e-6, "for_loop forward");
    popc_tensor_free(out);
    popc_tensor_free(want);
    popc_tensor_free(ones);
    popc_graph_free(g);
}
END_TEST

START_TEST(for_loop_trains_like_torch)
{
    int64_t xd[2] = {2, 4};
    static const char *const names[3] = {"x0", "loop/fc.weight",
                                         "loop/fc.bias"};
    static const char *const refs[3] = {"loop_x0", "loop_w", "loop_b"};
    popc_graph *g = loop_model(3, NULL);
    popc_tensor *ones = filled(xd, 2, one_at), *loss = NULL;
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backends[_i]));
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", 0.5));
    OK(popc_model_new_training(g, o, opt, &m));
    OK(popc_model_run(m, &ones, 1, &loss, 1));
    for (int k = 0; k < 3; k++) {
        const popc_tensor *got = NULL;
        popc_tensor *want = ref(refs[k]);

        OK(popc_model_get_weight(m, names[k], &got));
        close_to(got, want, 2e-6, names[k]);
        popc_tensor_free(want);
    }
    popc_tensor_free(loss);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
    popc_tensor_free(ones);
    popc_graph_free(g);
}
END_TEST

START_TEST(for_loop_zero_iterations_and_errors)
{
    int64_t xd[2] = {2, 4}, other[2] = {2, 3};
    int y, x, z;
    popc_graph *g = loop_model(0, &y), *body = loop_body(), *h = NULL;
    popc_tensor *ones = filled(xd, 2, one_at), *out = NULL;
    popc_tensor *x0 = filled(xd, 2, x0_at);

    /* no iteration: the input itself */
    OK(popc_graph_eval(g, &ones, 1, &y, 1, &out, 0, 0));
    close_to(out, x0, 0.0, "for_loop with count 0");
    OK(popc_graph_new("h", &h));
    OK(popc_graph_add_input(h, "z", POPC_DTYPE_F32, other, 2, &z));
    ck_assert_int_eq(popc_for_loop(h, NULL, 2, body, &z, 1, &x),
                     POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "for_loop: input 0 is"),
                  "%s", popc_last_error());
    ck_assert_int_eq(popc_for_loop(h, NULL, -1, body, &z, 1, &x),
                     POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "count is -1"), "%s",
                  popc_last_error());
    {   /* loops without a name get names of their own */
        int k, a, b;

        OK(popc_graph_add_input(h, "k", POPC_DTYPE_F32, xd, 2, &k));
        OK(popc_for_loop(h, NULL, 2, body, &k, 1, &a));
        OK(popc_for_loop(h, NULL, 3, body, &a, 1, &b));
        ck_assert_str_eq(popc_graph_node_name(h, popc_graph_value_producer(
                                                     h, a)), "for_loop");
        ck_assert_str_eq(popc_graph_node_name(h, popc_graph_value_producer(
                                                     h, b)), "for_loop_1");
        ck_assert_int_ge(popc_graph_find_value(h, "for_loop_1/fc.weight"),
                         0);
    }
    popc_tensor_free(out);
    popc_tensor_free(ones);
    popc_tensor_free(x0);
    popc_graph_free(g);
    popc_graph_free(h);
    popc_graph_free(body);
}
END_TEST

/* ---- dynamic_slice / dynamic_update ------------------------------------- */

/* x [5, 3] = 10 r + c, a trainable weight times the input "ones";
** start an int32 input; y = dynamic_slice(x, 0, start, 2) or the update
** of rows with src = 100 + 10 r + c (a weight too); loss sum(y * coef)
** with coef = 1 + r + 3 c over y's rows. */
static popc_graph *dyn_model(int update, int *yv)
{
    int64_t xd[2] = {5, 3}, sd[2] = {2, 3}, one[1] = {1};
    int64_t yd[2] = {update ? 5 : 2, 3};
    popc_graph *g = NULL;
    popc_tensor *x0 = NULL, *src0 = NULL, *coef = NULL;
    popc_layers *L = NULL;
    float *p;
    int ones, start, xw, x, sw, y, c, prod, loss, in[2];

    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &x0));
    OK(popc_tensor_new(POPC_DTYPE_F32, sd, 2, &src0));
    OK(popc_tensor_new(POPC_DTYPE_F32, yd, 2, &coef));
    p = popc_tensor_data(x0);
    for (int r = 0; r < 5; r++)
        for (int k = 0; k < 3; k++)
            p[r * 3 + k] = (float)(10 * r + k);
    p = popc_tensor_data(src0);
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 3; k++)
            p[r * 3 + k] = (float)(100 + 10 * r + k);
    p = popc_tensor_data(coef);
    for (int r = 0; r < yd[0]; r++)
        for (int k = 0; k < 3; k++)
            p[r * 3 + k] = (float)(1 + r + 3 * k);
    OK(popc_graph_new("dyn", &g));
    OK(popc_graph_add_input(g, "ones", POPC_DTYPE_F32, xd, 2, &ones));
    OK(popc_graph_add_input(g, "start", POPC_DTYPE_I32, one, 1, &start));
    OK(popc_graph_add_initializer(g, "x", x0, 1, &xw));
    in[0] = xw;
    in[1] = ones;
    OK(popc_graph_add_node(g, NULL, "Mul", 0, in, 2, &x, 1, NULL, 0, NULL,
                           NULL));
    if (update) {
        OK(popc_graph_add_initializer(g, "src", src0, 1, &sw));
        OK(popc_dynamic_update(g, x, sw, 0, start, 2, &y));
    } else {
        OK(popc_dynamic_slice(g, x, 0, start, 2, 1, &y));
    }
    OK(popc_graph_add_constant(g, "coef", coef, &c));
    in[0] = y;
    in[1] = c;
    OK(popc_graph_add_node(g, NULL, "Mul", 0, in, 2, &prod, 1, NULL, 0, NULL,
                           NULL));
    OK(popc_layers_new(g, 0, &L));
    OK(popc_nn_identity_loss(L, prod, "sum", &loss));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    popc_tensor_free(x0);
    popc_tensor_free(src0);
    popc_tensor_free(coef);
    *yv = y;
    return g;
}

/* Rows read for start s of a dim of 5, size 2 (the IPU's rule). */
static void rows_for(int s, int r[2])
{
    int b = s >= 0 && s < 5 ? s : 0;

    r[0] = b % 5;
    r[1] = (b + 1) % 5;
}

static const int starts[] = {1, 4, 7, -1};

START_TEST(dynamic_slice_rows)
{
    int64_t xd[2] = {5, 3}, one[1] = {1};
    int y, rows[2];
    popc_graph *g = dyn_model(0, &y);
    popc_tensor *in[2], *out = NULL;
    const float *p;

    in[0] = filled(xd, 2, one_at);
    for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
        int32_t s = starts[k];

        OK(popc_tensor_from_data(POPC_DTYPE_I32, one, 1, &s, &in[1]));
        OK(popc_graph_eval(g, in, 2, &y, 1, &out, 0, 0));
        rows_for(s, rows);
        p = popc_tensor_cdata(out);
        for (int r = 0; r < 2; r++)
            for (int c = 0; c < 3; c++)
                ck_assert_msg(p[r * 3 + c] == (float)(10 * rows[r] + c),
                              "start %d: y[%d][%d] = %g, want row %d", s, r,
                              c, p[r * 3 + c], rows[r]);
        popc_tensor_free(out);
        popc_tensor_free(in[1]);
    }
    popc_tensor_free(in[0]);
    popc_graph_free(g);
}
END_TEST

/* One SGD step (lr 1) at start s: x loses coef at the rows read (slice)
** or keeps all but the replaced rows' gradient (update). */
static void dyn_step(int update, const char *backend, int32_t s)
{
    int64_t xd[2] = {5, 3}, one[1] = {1};
    int y, rows[2];
    popc_graph *g = dyn_model(update, &y);
    popc_tensor *in[2], *loss = NULL;
    const popc_tensor *x = NULL, *src = NULL;
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    const float *p;

    in[0] = filled(xd, 2, one_at);
    OK(popc_tensor_from_data(POPC_DTYPE_I32, one, 1, &s, &in[1]));
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", 1.0));
    OK(popc_model_new_training(g, o, opt, &m));
    OK(popc_model_run(m, in, 2, &loss, 1));
    OK(popc_model_get_weight(m, "x", &x));
    rows_for(s, rows);
    p = popc_tensor_cdata(x);
    for (int r = 0; r < 5; r++)
        for (int c = 0; c < 3; c++) {
            float want = (float)(10 * r + c);

            if (!update && (r == rows[0] || r == rows[1]))
                want -= (float)(1 + (r == rows[0] ? 0 : 1) + 3 * c);
            if (update && r != rows[0] && r != rows[1])
                want -= (float)(1 + r + 3 * c);
            ck_assert_msg(fabsf(p[r * 3 + c] - want) < 1e-5f,
                          "%s %s, start %d: x[%d][%d] = %g, want %g",
                          update ? "dynamic_update" : "dynamic_slice",
                          backend, s, r, c, p[r * 3 + c], want);
        }
    if (update) {
        OK(popc_model_get_weight(m, "src", &src));
        p = popc_tensor_cdata(src);
        /* src row k lands on row rows[k], whose coef row is rows[k] */
        for (int k = 0; k < 2; k++)
            for (int c = 0; c < 3; c++) {
                float want = (float)(100 + 10 * k + c) -
                             (float)(1 + rows[k] + 3 * c);

                ck_assert_msg(fabsf(p[k * 3 + c] - want) < 1e-5f,
                              "dynamic_update %s, start %d: src[%d][%d] = "
                              "%g, want %g", backend, s, k, c, p[k * 3 + c],
                              want);
            }
    }
    popc_tensor_free(loss);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_graph_free(g);
}

START_TEST(dynamic_slice_gradient)
{
    for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++)
        dyn_step(0, backends[_i], starts[k]);
}
END_TEST

START_TEST(dynamic_update_rows_and_gradients)
{
    int64_t xd[2] = {5, 3}, one[1] = {1};
    int y, rows[2];
    popc_graph *g = dyn_model(1, &y);
    popc_tensor *in[2], *out = NULL;
    const float *p;

    in[0] = filled(xd, 2, one_at);
    for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
        int32_t s = starts[k];

        OK(popc_tensor_from_data(POPC_DTYPE_I32, one, 1, &s, &in[1]));
        OK(popc_graph_eval(g, in, 2, &y, 1, &out, 0, 0));
        rows_for(s, rows);
        p = popc_tensor_cdata(out);
        for (int r = 0; r < 5; r++)
            for (int c = 0; c < 3; c++) {
                float want = r == rows[0]   ? (float)(100 + c)
                             : r == rows[1] ? (float)(110 + c)
                                            : (float)(10 * r + c);

                ck_assert_msg(p[r * 3 + c] == want, "start %d: y[%d][%d] = "
                              "%g, want %g", s, r, c, p[r * 3 + c], want);
            }
        popc_tensor_free(out);
        popc_tensor_free(in[1]);
        dyn_step(1, backends[_i], s);
    }
    popc_tensor_free(in[0]);
    popc_graph_free(g);
}
END_TEST

START_TEST(dynamic_errors)
{
    int64_t xd[2] = {5, 3}, fd[1] = {1};
    popc_graph *g = NULL;
    int x, s, f, y;

    OK(popc_graph_new("e", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_input(g, "s", POPC_DTYPE_I32, fd, 1, &s));
    OK(popc_graph_add_input(g, "f", POPC_DTYPE_F32, fd, 1, &f));
    ck_assert_int_eq(popc_dynamic_slice(g, x, 0, s, 2, 2, &y),
                     POPC_EUNSUPPORTED);
    ck_assert_int_eq(popc_dynamic_slice(g, x, 2, s, 2, 1, &y), POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "dim 2 is outside"), "%s",
                  popc_last_error());
    ck_assert_int_eq(popc_dynamic_slice(g, x, 0, s, 6, 1, &y), POPC_EINVAL);
    ck_assert_int_eq(popc_dynamic_slice(g, x, 0, f, 2, 1, &y), POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "start is"), "%s",
                  popc_last_error());
    ck_assert_int_eq(popc_dynamic_update(g, x, x, 0, s, 2, &y), POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "src is"), "%s",
                  popc_last_error());
    popc_graph_free(g);
}
END_TEST

/* ---- ctc_beam_search_decoder against tests/ref/gen_ctc.py --------------- */

static popc_tensor *ctc_ref(const char *c, const char *part)
{
    const char *dir = getenv("POPC_TEST_REF");
    char path[4096];
    popc_tensor *t = NULL;

    snprintf(path, sizeof path, "%s/ctc/ctc_%s_%s.npy",
             dir ? dir : "tests/ref", c, part);
    ck_assert_msg(popc_npy_load(path, &t) == POPC_OK, "%s",
                  popc_last_error());
    return t;
}

/* name, blank, beam_width, top_paths: as gen_ctc.py's CASES */
static const struct {
    const char *name;
    int blank, width, top;
} ctc_cases[] = {{"random", 0, 4, 3}, {"ties", 0, 3, 3},
                 {"blank2", 2, 5, 2}, {"narrow", 0, 1, 1},
                 {"few", 1, 8, 4}};

START_TEST(ctc_beam_search_matches_numpy)
{
    const char *c = ctc_cases[_i].name;
    popc_tensor *in[2] = {ctc_ref(c, "log_probs"), ctc_ref(c, "lengths")};
    popc_tensor *want[3] = {ctc_ref(c, "probs"), ctc_ref(c, "lens"),
                            ctc_ref(c, "paths")};
    popc_tensor *got[3] = {NULL, NULL, NULL};
    popc_graph *g = NULL;
    int lp, len, outs[3];

    OK(popc_graph_new("ctc", &g));
    OK(popc_graph_add_input(g, "log_probs", POPC_DTYPE_F32,
                            popc_tensor_dims(in[0]), 3, &lp));
    OK(popc_graph_add_input(g, "lengths", POPC_DTYPE_I32,
                            popc_tensor_dims(in[1]), 1, &len));
    OK(popc_ctc_beam_search_decoder(g, lp, len, ctc_cases[_i].blank,
                                    ctc_cases[_i].width, ctc_cases[_i].top,
                                    outs));
    OK(popc_graph_eval(g, in, 2, outs, 3, got, 0, 0));
    {
        const float *gp = popc_tensor_cdata(got[0]);
        const float *wp = popc_tensor_cdata(want[0]);

        for (int64_t i = 0; i < popc_tensor_numel(want[0]); i++)
            ck_assert_msg(gp[i] == wp[i] || fabsf(gp[i] - wp[i]) < 1e-5f,
                          "%s: log probability %lld is %g, want %g", c,
                          (long long)i, gp[i], wp[i]);
    }
    ck_assert_msg(popc_tensor_equal(got[1], want[1]), "%s: lengths", c);
    ck_assert_msg(popc_tensor_equal(got[2], want[2]), "%s: paths", c);
    for (int k = 0; k < 3; k++) {
        popc_tensor_free(got[k]);
        popc_tensor_free(want[k]);
    }
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_graph_free(g);
}
END_TEST

START_TEST(ctc_errors)
{
    int64_t d3[3] = {4, 2, 3}, d1[1] = {3};
    popc_graph *g = NULL;
    int lp, len, outs[3];

    OK(popc_graph_new("e", &g));
    OK(popc_graph_add_input(g, "lp", POPC_DTYPE_F32, d3, 3, &lp));
    OK(popc_graph_add_input(g, "len", POPC_DTYPE_I32, d1, 1, &len));
    ck_assert_int_ne(popc_ctc_beam_search_decoder(g, lp, len, 0, 4, 1, outs),
                     POPC_OK);
    ck_assert_msg(strstr(popc_last_error(), "lengths must be"), "%s",
                  popc_last_error());
    popc_graph_free(g);
    OK(popc_graph_new("e", &g));
    d1[0] = 2;
    OK(popc_graph_add_input(g, "lp", POPC_DTYPE_F32, d3, 3, &lp));
    OK(popc_graph_add_input(g, "len", POPC_DTYPE_I32, d1, 1, &len));
    ck_assert_int_ne(popc_ctc_beam_search_decoder(g, lp, len, 3, 4, 1, outs),
                     POPC_OK);
    ck_assert_msg(strstr(popc_last_error(), "blank 3 is not a class"), "%s",
                  popc_last_error());
    ck_assert_int_ne(popc_ctc_beam_search_decoder(g, lp, len, 0, 2, 3, outs),
                     POPC_OK);
    ck_assert_msg(strstr(popc_last_error(), "top_paths 3"), "%s",
                  popc_last_error());
    popc_graph_free(g);
}
END_TEST

/* ---- removeBlocks --------------------------------------------------------- */

/* x [4, 4] -> fc1 on IPU 0, fc2 on IPU 1 -> mean loss. */
static popc_graph *two_blocks(void)
{
    int64_t xd[2] = {4, 4};
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int x, v, loss;

    OK(popc_graph_new("blocks", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_layers_new(g, 3, &L));
    OK(popc_block_begin(g, "first", 0));
    OK(popc_nn_linear(L, "fc1", x, 4, 4, 1, &v));
    OK(popc_block_begin(g, "second", 1));
    OK(popc_nn_linear(L, "fc2", v, 4, 4, 1, &v));
    OK(popc_nn_identity_loss(L, v, "mean", &loss));
    OK(popc_graph_add_output(g, loss));
    OK(popc_block_end(g));
    popc_layers_free(L);
    return g;
}

static int ipus_of(popc_graph *g, popc_status *st)
{
    int64_t xd[2] = {4, 4};
    popc_tensor *x = filled(xd, 2, one_at);
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    popc_plan_info info = {0};

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "cpu"));
    OK(popc_options_set(o, "setExecutionStrategy", "PipelinedExecution"));
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_model_new_training(g, o, opt, &m));
    *st = popc_model_compile(m, &x, 1);
    if (*st == POPC_OK)
        OK(popc_model_get_plan_info(m, &info));
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
    popc_tensor_free(x);
    return info.n_ipus;
}

START_TEST(remove_blocks_runs_on_one_ipu)
{
    popc_graph *g = two_blocks();
    popc_status st;
    int x, y;

    /* two IPUs pipelined need gradientAccumulation >= 3 */
    ipus_of(g, &st);
    ck_assert_int_eq(st, POPC_EINVAL);
    OK(popc_remove_blocks(g));
    ck_assert_int_eq(ipus_of(g, &st), 1);
    OK(st);
    for (int n = 0; n < popc_graph_n_nodes(g); n++) {
        popc_annotations a = popc_graph_node_annotations(g, n);

        ck_assert_ptr_null(a.block);
        ck_assert_int_eq(a.ipu, -1);
    }
    /* no block context left: nodes added now need none */
    x = popc_graph_output(g, 0);
    OK(popc_graph_add_node(g, NULL, "Identity", 0, &x, 1, &y, 1, NULL, 0,
                           "after", NULL));
    ck_assert_int_eq(popc_remove_blocks(NULL), POPC_EINVAL);
    popc_graph_free(g);
}
END_TEST

START_TEST(no_ipu_hardware)
{
    int v = 7;

    ck_assert_int_eq(popc_ipu_hardware_is_available(1), 0);
    ck_assert_int_eq(popc_ipu_hardware_version(&v), POPC_ENOTFOUND);
    ck_assert_int_eq(v, -1);
    ck_assert_msg(strstr(popc_last_error(), "No IPU hardware is available"),
                  "%s", popc_last_error());
}
END_TEST

int main(void)
{
    Suite *s = suite_create("helpers");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, for_loop_forward_matches_torch);
    tcase_add_loop_test(tc, for_loop_trains_like_torch, 0, 2);
    tcase_add_test(tc, for_loop_zero_iterations_and_errors);
    tcase_add_test(tc, dynamic_slice_rows);
    tcase_add_loop_test(tc, dynamic_slice_gradient, 0, 2);
    tcase_add_loop_test(tc, dynamic_update_rows_and_gradients, 0, 2);
    tcase_add_test(tc, dynamic_errors);
    tcase_add_loop_test(tc, ctc_beam_search_matches_numpy, 0,
                        (int)(sizeof ctc_cases / sizeof ctc_cases[0]));
    tcase_add_test(tc, ctc_errors);
    tcase_add_test(tc, remove_blocks_runs_on_one_ipu);
    tcase_add_test(tc, no_ipu_hardware);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
