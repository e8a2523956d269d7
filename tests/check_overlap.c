/* check_overlap.c - set_overlap_for_input / set_overlap_for_output
** (popc/helpers.h) on the IPU model:
** - results never change (bitwise against the same model without overlap);
** - OverlapDeviceIterationLoop hides the host copies of inference behind
**   compute: the report's cycles equal the hand-derived cost of cost.c's
**   rule from the report's own op cycles, and are below the plain model's;
**   OverlapAccumulationLoop cannot help inference (a chain of one
**   micro-batch) and costs the I/O-tile copy;
** - training with gradient accumulation: the accumulation loop's overlap
**   lowers the cycles, the weights are bitwise equal;
** - the I/O tiles hold one buffer per overlapped tensor, two across device
**   iterations (memory.io_tiles), and too many bytes fail to compile;
** - overlap with PipelinedExecution (PopTorch's default, one IPU too),
**   without numIOTiles, with outputMode Final, on a value that is not a
**   graph input or output, or with an unknown mode is refused, with
**   PopTorch's messages. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "popc/helpers.h"
#include "tests/minijson.h"
#include "tests/profile_files.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

#define IN 784
#define HIDDEN 64
#define OUT 10

static popc_tensor *filled(int64_t r, int64_t c, float scale)
{
    int64_t d[2] = {r, c};
    popc_tensor *t = NULL;

    OK(popc_tensor_new(POPC_DTYPE_F32, d, 2, &t));
    for (int64_t i = 0; i < r * c; i++)
        ((float *)popc_tensor_data(t))[i] =
            scale * (float)((i * 7919) % 1000 - 500) / 500.0f;
    return t;
}

/* y = relu(x W1) W2 for B rows; x and y overlapped as asked. Training:
** loss = mean(y^2) through identity_loss instead of y. */
static popc_graph *mlp(int64_t B, popc_overlap_mode in_mode,
                       popc_overlap_mode out_mode, int training)
{
    int64_t xd[2] = {B, IN};
    popc_graph *g = NULL;
    popc_tensor *w1 = filled(IN, HIDDEN, 0.05f), *w2 = filled(HIDDEN, OUT,
                                                              0.1f);
    int x, xi, w1v, w2v, h, r, y, yo;

    OK(popc_graph_new("mlp", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_initializer(g, "w1", w1, 1, &w1v));
    OK(popc_graph_add_initializer(g, "w2", w2, 1, &w2v));
    OK(popc_set_overlap_for_input(g, x, in_mode, &xi));
    OK(popc_graph_add_node(g, NULL, "MatMul", 0, (int[]){xi, w1v}, 2, &h, 1,
                           NULL, 0, "fc1", NULL));
    OK(popc_graph_add_node(g, NULL, "Relu", 0, &h, 1, &r, 1, NULL, 0, "act",
                           NULL));
    OK(popc_graph_add_node(g, NULL, "MatMul", 0, (int[]){r, w2v}, 2, &y, 1,
                           NULL, 0, "fc2", NULL));
    if (training) {
        popc_layers *L = NULL;
        int yy, loss;

        OK(popc_graph_add_node(g, NULL, "Mul", 0, (int[]){y, y}, 2, &yy, 1,
                               NULL, 0, "sq", NULL));
        OK(popc_layers_new(g, 0, &L));
        OK(popc_nn_identity_loss(L, yy, "mean", &loss));
        OK(popc_set_overlap_for_output(g, loss, out_mode, &yo));
        popc_layers_free(L);
    } else {
        OK(popc_set_overlap_for_output(g, y, out_mode, &yo));
    }
    OK(popc_graph_add_output(g, yo));
    popc_tensor_free(w1);
    popc_tensor_free(w2);
    return g;
}

typedef struct run {
    mj_value *report;
    double cycles;
    popc_tensor *y;            /* the output (inference) or w1 (training) */
} run;

/* One run of the model on the IPU model with DI device iterations and GA
** gradient accumulation (training when GA > 0). */
static run run_model(popc_graph *g, int64_t B, int64_t DI, int64_t GA,
                     const char *io_tiles)
{
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    popc_tensor *x = filled(B * DI * (GA > 0 ? GA : 1), IN, 1.0f), *y = NULL;
    char *dir = pf_temp_dir(), *sub;
    const popc_tensor *w;
    run r = {0};

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "ipumodel"));
    OK(popc_options_set(o, "enableProfiling", dir));
    OK(popc_options_set_int(o, "deviceIterations", DI));
    OK(popc_options_set(o, "setExecutionStrategy", "ShardedExecution"));
    OK(popc_options_set(o, "outputMode", "All"));
    if (io_tiles)
        OK(popc_options_set(o, "TensorLocations.numIOTiles", io_tiles));
    if (GA > 0) {
        OK(popc_options_set_int(o, "Training.gradientAccumulation", GA));
        OK(popc_optimizer_new("sgd", &opt));
        OK(popc_optimizer_set(opt, "lr", 0.01));
        OK(popc_model_new_training(g, o, opt, &m));
    } else {
        OK(popc_model_new_inference(g, o, &m));
    }
    OK(popc_model_run(m, &x, 1, &y, 1));
    if (GA > 0) {
        OK(popc_model_get_weight(m, "w1", &w));
        OK(popc_tensor_clone(w, &r.y));
        popc_tensor_free(y);
    } else {
        r.y = y;
    }
    sub = pf_sub_dir(dir, GA > 0 ? "training" : "inference");
    r.report = pf_read_profile(sub);
    r.cycles = mj_num(r.report, "cycles", -1.0);
    free(sub);
    pf_remove_dir(dir);
    free(dir);
    popc_tensor_free(x);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
    return r;
}

static void done(run *r)
{
    mj_free(r->report);
    popc_tensor_free(r->y);
}

static double io_mem(const run *r, const char *what)
{
    return mj_num(mj_get(mj_get(r->report, "memory"), "io_tiles"), what,
                  -1.0);
}

static double ops_cycles(const run *r)
{
    const mj_value *e;
    double c = 0.0;

    for (int i = 0; (e = mj_at(mj_get(r->report, "ops"), i)) != NULL; i++)
        c += mj_num(e, "cycles", 0.0);
    return c;
}

/* cost.c's rule: a copy takes bytes / 12 + 3000 cycles; of L copies in a
** chain the first waits, the others cost what exceeds the C cycles of
** work; each moves from 32 I/O tiles at 24 bytes per cycle, plus a sync. */
static double hidden_copy(double bytes, double L, double C)
{
    double t = bytes / 12.0 + 3000.0;

    return t / L + (1.0 - 1.0 / L) * fmax(0.0, t - C) +
           bytes / (24.0 * 32.0) + 150.0;
}

START_TEST(device_iteration_overlap_hides_inference_copies)
{
    const int64_t B = 16, DI = 4;
    popc_graph *plain = mlp(B, 0, 0, 0);
    popc_graph *iter = mlp(B, POPC_OVERLAP_MODE_DEVICE_ITERATION_LOOP,
                           POPC_OVERLAP_MODE_DEVICE_ITERATION_LOOP, 0);
    popc_graph *accum = mlp(B, POPC_OVERLAP_MODE_ACCUMULATION_LOOP,
                            POPC_OVERLAP_MODE_ACCUMULATION_LOOP, 0);
    run p = run_model(plain, B, DI, 0, "32");
    run it = run_model(iter, B, DI, 0, "32");
    run ac = run_model(accum, B, DI, 0, "32");
    double in = 4.0 * (double)B * IN, out = 4.0 * (double)B * OUT;
    double bytes = in + out, C = ops_cycles(&it), L = (double)DI;
    double want = C + hidden_copy(in, L, C) + hidden_copy(out, L, C);
    double t = in / 12.0 + 3000.0 + out / 12.0 + 3000.0;

    ck_assert_msg(popc_tensor_max_abs_diff(p.y, it.y) == 0.0 &&
                      popc_tensor_max_abs_diff(p.y, ac.y) == 0.0,
                  "overlap must not change results");
    /* the plain model pays both copies in full */
    /* (the report prints each op's cycles to 0.1) */
    ck_assert_msg(fabs(p.cycles - (ops_cycles(&p) + t)) <= 0.5,
                  "plain: %g cycles, want %g", p.cycles, ops_cycles(&p) + t);
    ck_assert_msg(fabs(it.cycles - want) <= 0.5,
                  "device-iteration overlap: %g cycles, want %g", it.cycles,
                  want);
    ck_assert_msg(it.cycles < p.cycles, "overlap %g >= plain %g", it.cycles,
                  p.cycles);
    ck_assert_msg(ac.cycles > p.cycles, "an accumulation loop of one "
                  "micro-batch hides nothing: %g vs %g", ac.cycles,
                  p.cycles);
    /* buffers: two per tensor across device iterations, one otherwise */
    ck_assert(io_mem(&it, "overlap_buffers") == 2.0 * bytes);
    ck_assert(io_mem(&ac, "overlap_buffers") == bytes);
    ck_assert(io_mem(&p, "overlap_buffers") == 0.0);
    ck_assert(io_mem(&p, "capacity") == 32.0 * 624 * 1024);
    done(&p);
    done(&it);
    done(&ac);
    popc_graph_free(plain);
    popc_graph_free(iter);
    popc_graph_free(accum);
}
END_TEST

START_TEST(accumulation_overlap_helps_training)
{
    const int64_t B = 8, GA = 4;
    popc_graph *plain = mlp(B, 0, 0, 1);
    popc_graph *accum = mlp(B, POPC_OVERLAP_MODE_ACCUMULATION_LOOP,
                            POPC_OVERLAP_MODE_NONE, 1);
    run p = run_model(plain, B, 1, GA, "32");
    run ac = run_model(accum, B, 1, GA, "32");

    ck_assert_msg(popc_tensor_max_abs_diff(p.y, ac.y) == 0.0,
                  "overlap must not change the trained weights");
    ck_assert_msg(ac.cycles < p.cycles, "accumulation overlap %g >= plain "
                  "%g", ac.cycles, p.cycles);
    ck_assert(io_mem(&ac, "overlap_buffers") == 4.0 * (double)B * IN);
    done(&p);
    done(&ac);
    popc_graph_free(plain);
    popc_graph_free(accum);
}
END_TEST

/* The status and message of compiling g for inference (sharded unless
** `pipelined`; outputMode `mode`, NULL: the default). */
static popc_status compile_with(popc_graph *g, const char *io_tiles,
                                int pipelined, const char *mode)
{
    popc_options *o = NULL;
    popc_model *m = NULL;
    popc_status st;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "ipumodel"));
    if (!pipelined)
        OK(popc_options_set(o, "setExecutionStrategy", "ShardedExecution"));
    if (mode)
        OK(popc_options_set(o, "outputMode", mode));
    if (io_tiles)
        OK(popc_options_set(o, "TensorLocations.numIOTiles", io_tiles));
    st = popc_model_new_inference(g, o, &m);
    if (st == POPC_OK) {
        int64_t xd[2] = {popc_graph_value_info(g, popc_graph_input(g, 0))
                             .dims[0], IN};
        popc_tensor *x = NULL;

        OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &x));
        st = popc_model_compile(m, &x, 1);
        popc_tensor_free(x);
    }
    popc_model_free(m);
    popc_options_free(o);
    return st;
}

static popc_status compile(popc_graph *g, const char *io_tiles)
{
    return compile_with(g, io_tiles, 0, NULL);
}

START_TEST(misuse_is_refused)
{
    popc_graph *g = mlp(16, POPC_OVERLAP_MODE_ACCUMULATION_LOOP, 0, 0);
    popc_graph *big = mlp(4096, POPC_OVERLAP_MODE_DEVICE_ITERATION_LOOP, 0,
                          0);
    popc_graph *h = NULL;
    int64_t xd[2] = {2, 3};
    int x, y, z;

    /* PopTorch's conditions, in its order */
    ck_assert_int_eq(compile_with(g, "32", 1, NULL), POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "Overlapped IO is not supported "
                         "with poptorch.PipelinedExecution. If you are "
                         "using only one IPU, please switch to "
                         "poptorch.ShardedExecution.") != NULL,
                  "%s", popc_last_error());
    ck_assert_int_eq(compile(g, NULL), POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "No IO tiles allocated") != NULL,
                  "%s", popc_last_error());
    ck_assert_int_eq(compile_with(g, "32", 0, "Final"), POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "Unsupported output mode for "
                         "overlapped IO") != NULL, "%s", popc_last_error());
    OK(compile_with(g, "32", 0, "Sum"));
    OK(compile(g, "32"));
    /* 2 x 12.8 MB of buffers against 32 I/O tiles of 624 KiB */
    ck_assert_int_eq(compile(big, "32"), POPC_ECOMPILE);
    ck_assert_msg(strstr(popc_last_error(), "raise numIOTiles") != NULL,
                  "%s", popc_last_error());
    OK(compile(big, "64"));

    OK(popc_graph_new("bad", &h));
    OK(popc_graph_add_input(h, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_node(h, NULL, "Relu", 0, &x, 1, &y, 1, NULL, 0, "r",
                           NULL));
    ck_assert_int_eq(popc_set_overlap_for_input(
                         h, y, POPC_OVERLAP_MODE_ACCUMULATION_LOOP, &z),
                     POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "which is not a tensor "
                         "input to the model") != NULL, "%s",
                  popc_last_error());
    ck_assert_int_eq(popc_set_overlap_for_input(h, x, (popc_overlap_mode)7,
                                                &z),
                     POPC_EINVAL);
    /* an overlapped output that the graph reads on instead of returning */
    OK(popc_set_overlap_for_output(h, y, POPC_OVERLAP_MODE_ACCUMULATION_LOOP,
                                   &z));
    OK(popc_graph_add_node(h, NULL, "Relu", 0, &z, 1, &y, 1, NULL, 0, "r2",
                           NULL));
    OK(popc_graph_add_output(h, y));
    ck_assert_int_eq(compile(h, "32"), POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "is not a graph output") != NULL,
                  "%s", popc_last_error());
    popc_graph_free(h);
    popc_graph_free(g);
    popc_graph_free(big);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("overlap");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, device_iteration_overlap_hides_inference_copies);
    tcase_add_test(tc, accumulation_overlap_helps_training);
    tcase_add_test(tc, misuse_is_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    int failed;

    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
