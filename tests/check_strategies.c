/* check_strategies.c - execution strategies (docs/semantics.md §6):
** Block / Stage / Phase annotations and their errors, pipelined, sharded
** and phased runs equal to the single-IPU model, tensor liveness,
** recomputation, replica grouping of weights, inputReplicaGrouping and
** broadcastBuffers. Runs on the cpu backend, and on ipumodel where the
** brief asks for both. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include <unistd.h>

#include "popc/popc.h"
#include "popc/run.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

static void expect(popc_status got, popc_status want, const char *text)
{
    ck_assert_msg(got == want, "status %d, want %d: %s", (int)got,
                  (int)want, popc_last_error());
    ck_assert_msg(strstr(popc_last_error(), text), "'%s' does not contain "
                  "'%s'", popc_last_error(), text);
}

/* ---- models ------------------------------------------------------------- */

/* Three layers: fc1 (4 -> H) + ReLU, fc2 (H -> H) + ReLU, fc3 (H -> 3) and
** an MSE loss. Outputs: the prediction and the loss. */
typedef struct spec {
    int blocks;               /* popc_block_begin before each layer */
    const char *ids[3];       /* block ids (NULL: automatic) */
    int ipus[3];              /* -1: none */
    int ckpt;                 /* 1: a RecomputationCheckpoint node after the
                                 second ReLU, 2: a recompute annotation on
                                 it */
    int hidden;               /* H, 8 when 0 */
} spec;

static const spec plain = {0, {NULL, NULL, NULL}, {-1, -1, -1}, 0, 0};

static void begin_layer(popc_graph *g, const spec *s, int i)
{
    if (s->blocks)
        OK(popc_block_begin(g, s->ids[i], s->ipus[i]));
}

static int checkpoint(popc_graph *g, const spec *s, int v)
{
    int out;

    if (s->ckpt == 1) {
        OK(popc_graph_add_node(g, "popc", "RecomputationCheckpoint", 1, &v, 1,
                               &out, 1, NULL, 0, NULL, NULL));
        return out;
    }
    if (s->ckpt == 2) {
        int node = popc_graph_value_producer(g, v);
        popc_annotations a = popc_graph_node_annotations(g, node);
        a.recompute = 1;
        OK(popc_graph_set_node_annotations(g, node, &a));
    }
    return v;
}

static popc_graph *make_graph(const spec *s)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int64_t h = s->hidden ? s->hidden : 8, xd[2] = {1, 4}, yd[2] = {1, 3};
    int x, y, a, b, o, loss;

    OK(popc_graph_new("mlp", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_input(g, "y", POPC_DTYPE_F32, yd, 2, &y));
    OK(popc_layers_new(g, 7, &L));
    begin_layer(g, s, 0);
    OK(popc_nn_linear(L, "fc1", x, 4, h, 1, &a));
    OK(popc_nn_activation(L, "Relu", a, 0.0, &a));
    begin_layer(g, s, 1);
    OK(popc_nn_linear(L, "fc2", a, h, h, 1, &b));
    OK(popc_nn_activation(L, "Relu", b, 0.0, &b));
    b = checkpoint(g, s, b);
    begin_layer(g, s, 2);
    OK(popc_nn_linear(L, "fc3", b, h, 3, 1, &o));
    OK(popc_nn_mse_loss(L, o, y, "mean", &loss));
    OK(popc_graph_add_output(g, o));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    return g;
}

static void make_data(int64_t n, popc_tensor **x, popc_tensor **y)
{
    int64_t xd[2] = {n, 4}, yd[2] = {n, 3};
    float *p;

    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, x));
    OK(popc_tensor_new(POPC_DTYPE_F32, yd, 2, y));
    p = popc_tensor_data(*x);
    for (int64_t i = 0; i < 4 * n; i++)
        p[i] = (float)((i * 37) % 23) / 11.0f - 1.0f;
    p = popc_tensor_data(*y);
    for (int64_t i = 0; i < 3 * n; i++)
        p[i] = (float)((i * 13) % 17) / 8.0f - 1.0f;
}

typedef struct cfg {
    const char *backend;
    int64_t di, ga, r;
    const char *strategy, *auto_stage, *liveness;
    int separate_backward;    /* useSeparateBackwardPhase */
    int auto_round;           /* autoRoundNumIPUs */
} cfg;

static popc_options *options(const cfg *c)
{
    popc_options *o = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", c->backend ? c->backend : "cpu"));
    OK(popc_options_set_int(o, "deviceIterations", c->di ? c->di : 1));
    OK(popc_options_set_int(o, "replicationFactor", c->r ? c->r : 1));
    if (c->ga > 1)
        OK(popc_options_set_int(o, "Training.gradientAccumulation", c->ga));
    OK(popc_options_set(o, "outputMode", "All"));
    if (c->strategy)
        OK(popc_options_set(o, "setExecutionStrategy", c->strategy));
    if (c->auto_stage)
        OK(popc_options_set(o, "setExecutionStrategy.autoStage",
                            c->auto_stage));
    if (c->liveness)
        OK(popc_options_set(o, "setExecutionStrategy.tensorsLiveness",
                            c->liveness));
    if (c->separate_backward)
        OK(popc_options_set_bool(
            o, "setExecutionStrategy.useSeparateBackwardPhase", 1));
    if (c->auto_round)
        OK(popc_options_set_bool(o, "autoRoundNumIPUs", 1));
    return o;
}

static popc_model *training_model(popc_graph *g, const cfg *c)
{
    popc_options *o = options(c);
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;

    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", 0.05));
    OK(popc_optimizer_set(opt, "momentum", 0.9));
    OK(popc_model_new_training(g, o, opt, &m));
    popc_optimizer_free(opt);
    popc_options_free(o);
    return m;
}

static popc_model *inference_model(popc_graph *g, const cfg *c)
{
    popc_options *o = options(c);
    popc_model *m = NULL;

    OK(popc_model_new_inference(g, o, &m));
    popc_options_free(o);
    return m;
}

static int64_t rows(const cfg *c, int training)
{
    return (c->di ? c->di : 1) * (training && c->ga ? c->ga : 1) *
           (c->r ? c->r : 1);
}

static void run(popc_model *m, popc_tensor *x, popc_tensor *y,
                popc_tensor **out)
{
    popc_tensor *in[2] = {x, y};

    OK(popc_model_run(m, in, 2, out, 2));
}

static popc_status try_run(popc_model *m, int64_t n)
{
    popc_tensor *x, *y, *out[2];
    popc_tensor *in[2];
    popc_status st;

    make_data(n, &x, &y);
    in[0] = x;
    in[1] = y;
    st = popc_model_run(m, in, 2, out, 2);
    if (st == POPC_OK) {
        popc_tensor_free(out[0]);
        popc_tensor_free(out[1]);
    }
    popc_tensor_free(x);
    popc_tensor_free(y);
    return st;
}

static void same(const popc_tensor *a, const popc_tensor *b, double tol)
{
    if (tol == 0.0)
        ck_assert(popc_tensor_equal(a, b));
    else
        ck_assert_msg(popc_tensor_max_abs_diff(a, b) <= tol, "diff %g",
                      popc_tensor_max_abs_diff(a, b));
}

static void same_weights(popc_model *a, popc_model *b, double tol)
{
    ck_assert_int_eq(popc_model_n_tensors(a), popc_model_n_tensors(b));
    for (int i = 0; i < popc_model_n_tensors(a); i++) {
        const char *name = popc_model_tensor_name(a, i);
        const popc_tensor *ta = NULL, *tb = NULL;

        OK(popc_model_get_weight(a, name, &ta));
        OK(popc_model_get_weight(b, name, &tb));
        same(ta, tb, tol);
    }
}

/* Train a (spec sa, options ca) and b (sb, cb) side by side for `runs`
** runs on the same data, micro-batches of mb rows: outputs and weights
** must agree within tol. */
static void compare_mb(const spec *sa, const cfg *ca, const spec *sb,
                       const cfg *cb, int runs, double tol, int64_t mb)
{
    popc_graph *ga = make_graph(sa), *gb = make_graph(sb);
    popc_model *a = training_model(ga, ca), *b = training_model(gb, cb);
    popc_tensor *x, *y, *oa[2], *ob[2];

    ck_assert_int_eq(rows(ca, 1), rows(cb, 1));
    make_data(mb * rows(ca, 1), &x, &y);
    for (int k = 0; k < runs; k++) {
        run(a, x, y, oa);
        run(b, x, y, ob);
        for (int i = 0; i < 2; i++) {
            same(oa[i], ob[i], tol);
            popc_tensor_free(oa[i]);
            popc_tensor_free(ob[i]);
        }
    }
    same_weights(a, b, tol);
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_model_free(a);
    popc_model_free(b);
    popc_graph_free(ga);
    popc_graph_free(gb);
}

static void compare_training(const spec *sa, const cfg *ca, const spec *sb,
                             const cfg *cb, int runs, double tol)
{
    compare_mb(sa, ca, sb, cb, runs, tol, 2);
}

static popc_plan_info info_of(popc_model *m)
{
    popc_plan_info pi;

    OK(popc_model_get_plan_info(m, &pi));
    return pi;
}

/* ---- blocks ------------------------------------------------------------- */

START_TEST(block_context)
{
    popc_graph *g = NULL;
    int64_t d[2] = {1, 4};
    int x, a, b, c;
    popc_annotations an;

    OK(popc_graph_new("blocks", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, d, 2, &x));
    expect(popc_block_end(g), POPC_ESTATE, "no active Block");
    /* ops before any block are fine */
    OK(popc_graph_add_node(g, NULL, "Relu", 0, &x, 1, &a, 1, NULL, 0, NULL,
                           NULL));
    OK(popc_block_begin(g, NULL, 1));
    OK(popc_graph_add_node(g, NULL, "Relu", 0, &a, 1, &b, 1, NULL, 0, NULL,
                           NULL));
    an = popc_graph_node_annotations(g, popc_graph_value_producer(g, b));
    ck_assert_str_eq(an.block, "0");
    ck_assert_int_eq(an.ipu, 1);
    ck_assert_int_eq(an.stage, -1);
    OK(popc_block_end(g));
    expect(popc_graph_add_node(g, NULL, "Relu", 0, &b, 1, &c, 1, NULL, 0,
                               NULL, NULL),
           POPC_ESTATE, "No active Block, all the ops must belong to a "
           "Block");
    {   /* CPU ops and foreign calls obey the same rule */
        popc_view info = {.dtype = POPC_DTYPE_F32, .rank = 2,
                          .dims = {1, 4}};
        expect(popc_cpu_op(g, "late", &b, 1, &info, 1, &c), POPC_ESTATE,
               "No active Block");
        expect(popc_foreign_op(g, "libm.so.6", "cosf", "f32(in f32)", &b, 1,
                               NULL, 1, &c),
               POPC_ESTATE, "No active Block");
    }
    OK(popc_block_begin(g, NULL, -1));
    OK(popc_graph_add_node(g, NULL, "Relu", 0, &b, 1, &c, 1, NULL, 0, NULL,
                           NULL));
    an = popc_graph_node_annotations(g, popc_graph_value_producer(g, c));
    ck_assert_str_eq(an.block, "1");
    ck_assert_int_eq(an.ipu, -1);
    popc_block_use_auto_id(g);
    OK(popc_block_begin(g, NULL, 0));
    OK(popc_graph_add_node(g, NULL, "Relu", 0, &c, 1, &a, 1, NULL, 0, NULL,
                           NULL));
    an = popc_graph_node_annotations(g, popc_graph_value_producer(g, a));
    ck_assert_str_eq(an.block, "0");
    OK(popc_block_end(g));
    /* explicit annotations leave the block context */
    OK(popc_graph_set_annotations(g, NULL));
    OK(popc_graph_add_node(g, NULL, "Relu", 0, &a, 1, &b, 1, NULL, 0, NULL,
                           NULL));
    expect(popc_block_begin(g, "", 0), POPC_EINVAL, "empty block id");
    expect(popc_block_begin(g, "A", -2), POPC_EINVAL, "ipu_id -2");
    popc_graph_free(g);
}
END_TEST

/* A clone carries the Block context: after popc_block_end it refuses ops
** as the original does, and its next automatic block id follows the
** original's. */
START_TEST(block_context_survives_clone)
{
    popc_graph *g = NULL, *c = NULL;
    int64_t d[2] = {1, 4};
    int x, a, b;
    popc_annotations an;

    OK(popc_graph_new("blocks", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, d, 2, &x));
    OK(popc_block_begin(g, NULL, 0));
    OK(popc_graph_add_node(g, NULL, "Relu", 0, &x, 1, &a, 1, NULL, 0, NULL,
                           NULL));
    OK(popc_block_end(g));
    OK(popc_graph_clone(g, &c));
    expect(popc_graph_add_node(c, NULL, "Relu", 0, &a, 1, &b, 1, NULL, 0,
                               NULL, NULL),
           POPC_ESTATE, "No active Block");
    OK(popc_block_begin(c, NULL, -1));
    OK(popc_graph_add_node(c, NULL, "Relu", 0, &a, 1, &b, 1, NULL, 0, NULL,
                           NULL));
    an = popc_graph_node_annotations(c, popc_graph_value_producer(c, b));
    ck_assert_str_eq(an.block, "1");
    /* the clone's blocks are its own: the original still refuses ops */
    expect(popc_graph_add_node(g, NULL, "Relu", 0, &a, 1, &b, 1, NULL, 0,
                               NULL, NULL),
           POPC_ESTATE, "No active Block");
    popc_graph_free(c);
    popc_graph_free(g);
}
END_TEST

START_TEST(explicit_stage_lists)
{
    spec s = {1, {"A", "B", "C"}, {-1, -1, -1}, 0, 0};
    popc_graph *g = make_graph(&s);
    const char *ab[] = {"A", "B"}, *b[] = {"B"}, *c[] = {"C"}, *a[] = {"A"};
    popc_stage_spec dup[2] = {{ab, 2, -1, -1}, {b, 1, -1, -1}};
    popc_stage_spec missing[1] = {{ab, 2, -1, -1}};
    popc_stage_spec good[2] = {{ab, 2, 0, -1}, {c, 1, 1, -1}};
    popc_stage_spec three[3] = {{a, 1, -1, -1}, {b, 1, -1, -1},
                                {c, 1, -1, -1}};
    cfg one = {"cpu", 1, 3, 1, NULL, NULL, NULL, 0, 0};
    popc_model *m;

    expect(popc_graph_set_stages(g, dup, 2), POPC_EINVAL,
           "B associated with more than one stage");
    expect(popc_graph_set_stages(g, missing, 1), POPC_EINVAL,
           "Unknown Block 'C' list of expected Blocks: ['A', 'B']");
    expect(popc_graph_set_stages(g, NULL, 0), POPC_EINVAL, "no stages");
    /* without stages or IPUs, SameAsIpu cannot place the blocks */
    m = training_model(g, &one);
    expect(try_run(m, 3), POPC_EINVAL,
           "poptorch.AutoStage.SameAsIpu was selected but no IPU was "
           "specified for block A");
    popc_model_free(m);
    /* PipelinedExecution("A", "B", ...): stage = position, IPU = stage id
    ** when the stage gives none */
    OK(popc_graph_set_stages(g, three, 3));
    m = training_model(g, &one);
    expect(try_run(m, 3), POPC_EINVAL,
           "poptorch.Options().Training.gradientAccumulation must be "
           "greater than or equal to the number of pipeline stages (5) when "
           "using poptorch.PipelinedExecution. Please note that a model "
           "with 3 pipeline stages in PopTorch will have an additional 2 "
           "stages when training.");
    popc_model_free(m);
    /* Stage("A", "B").ipu(0), Stage("C").ipu(1): two stages */
    OK(popc_graph_set_stages(g, good, 2));
    m = training_model(g, &one);
    OK(try_run(m, 3));
    ck_assert_int_eq(info_of(m).pipeline_stages, 2);
    ck_assert_int_eq(info_of(m).n_ipus, 2);
    ck_assert(info_of(m).pipelined);
    popc_model_free(m);
    popc_graph_free(g);
}
END_TEST

START_TEST(auto_stages_and_depth)
{
    /* AutoIncrement: blocks A, B get stages 1, 2 and, without IPUs, those
    ** IPUs: two forward stages */
    spec s = {1, {"A", "B", "B"}, {-1, -1, -1}, 0, 0};
    cfg inc = {"cpu", 1, 2, 1, NULL, "AutoIncrement", NULL, 0, 0};
    popc_graph *g = make_graph(&s);
    popc_model *m = training_model(g, &inc);
    /* A on IPU 0, B on 1, C back on 0: SameAsIpu gives stage ids 0, 1, 0
    ** and refuses them; AutoIncrement gives stages 1, 2, 3 on IPUs 0, 1, 0:
    ** three forward stages */
    spec back = {1, {"A", "B", "C"}, {0, 1, 0}, 0, 0};
    cfg same = {"cpu", 1, 8, 1, NULL, NULL, NULL, 0, 0};
    cfg same_di = {"cpu", 8, 1, 1, NULL, NULL, NULL, 0, 0};
    cfg ga4 = {"cpu", 1, 4, 1, NULL, "AutoIncrement", NULL, 0, 0};
    cfg ga5 = {"cpu", 1, 5, 1, NULL, "AutoIncrement", NULL, 0, 0};
    cfg di2 = {"cpu", 2, 1, 1, NULL, "AutoIncrement", NULL, 0, 0};
    const char *went_back =
        "poptorch.AutoStage.SameAsIpu gives block C (IPU 0) stage id 0, "
        "but it reads 'Relu_3:0' from block B in the later stage 1: with "
        "SameAsIpu the stage ids must not go back along the model; use "
        "AutoStage.AutoIncrement or explicit stages to return to an IPU";
    /* two blocks on one IPU merge */
    spec merged = {1, {"A", "B", "C"}, {0, 0, 1}, 0, 0};
    cfg inc3 = {"cpu", 1, 3, 1, NULL, "AutoIncrement", NULL, 0, 0};

    expect(try_run(m, 2), POPC_EINVAL, "number of pipeline stages (3) when "
           "using poptorch.PipelinedExecution. Please note that a model "
           "with 2 pipeline stages in PopTorch will have an additional 1 "
           "stages when training.");
    popc_model_free(m);
    m = training_model(g, &inc3);
    OK(try_run(m, 3));
    ck_assert_int_eq(info_of(m).n_ipus, 3); /* IPUs 1 and 2 used */
    ck_assert_int_eq(info_of(m).pipeline_stages, 2);
    popc_model_free(m);
    popc_graph_free(g);

    g = make_graph(&back);
    m = training_model(g, &same);
    ck_assert_int_eq(try_run(m, 8), POPC_EINVAL);
    ck_assert_str_eq(popc_last_error(), went_back);
    popc_model_free(m);
    m = inference_model(g, &same_di);
    ck_assert_int_eq(try_run(m, 8), POPC_EINVAL);
    ck_assert_str_eq(popc_last_error(), went_back);
    popc_model_free(m);
    m = training_model(g, &ga5);
    OK(try_run(m, 5));
    ck_assert_int_eq(info_of(m).pipeline_stages, 3);
    ck_assert_int_eq(info_of(m).n_ipus, 2);
    popc_model_free(m);
    m = training_model(g, &ga4);
    expect(try_run(m, 4), POPC_EINVAL, "number of pipeline stages (5) when "
           "using poptorch.PipelinedExecution. Please note that a model "
           "with 3 pipeline stages");
    popc_model_free(m);
    m = inference_model(g, &di2);
    expect(try_run(m, 2), POPC_EINVAL, "poptorch.Options().deviceIterations "
           "must be greater than or equal to the number of pipeline stages "
           "(3) when using PopTorch.PipelinedExecution.");
    popc_model_free(m);
    popc_graph_free(g);

    g = make_graph(&merged);
    m = training_model(g, &inc3);
    OK(try_run(m, 3));
    ck_assert_int_eq(info_of(m).pipeline_stages, 2);
    ck_assert_int_eq(info_of(m).n_ipus, 2);
    popc_model_free(m);
    popc_graph_free(g);
}
END_TEST

/* ---- pipelined, sharded ------------------------------------------------- */

static const spec three_ipus = {1, {"A", "B", "C"}, {0, 1, 2}, 0, 0};

START_TEST(pipelined_equals_single_ipu_cpu)
{
    cfg c = {"cpu", 2, 5, 2, NULL, NULL, NULL, 0, 0};

    compare_training(&three_ipus, &c, &plain, &c, 3, 0.0);
}
END_TEST

START_TEST(pipelined_equals_single_ipu_ipumodel)
{
    /* 3 IPUs x 2 replicas: the IPU model needs autoRoundNumIPUs */
    cfg c = {"ipumodel", 2, 5, 2, NULL, NULL, NULL, 0, 1};

    compare_training(&three_ipus, &c, &plain, &c, 3, 1e-5);
}
END_TEST

START_TEST(pipelined_ipumodel_equals_cpu)
{
    cfg i = {"ipumodel", 1, 6, 1, NULL, NULL, NULL, 0, 1};
    cfg c = {"cpu", 1, 6, 1, NULL, NULL, NULL, 0, 0};

    compare_training(&three_ipus, &i, &plain, &c, 2, 1e-5);
}
END_TEST

/* PopTorch's IPU count rule on the backends that model IPUs: 3 IPUs is
** not a power of 2 (an error naming autoRoundNumIPUs, or with it a
** warning and 4 reserved); more than 64 is always an error; the cpu
** reference has no rule. */
START_TEST(ipu_count_rule)
{
    static const char *const odd =
        "The model specifies the use of 3 IPUs, however PopTorch must "
        "reserve a minimum of 4 in order to allow the model to run, because "
        "PopTorch must reserve a power of 2 or maximum of 64 IPUs per "
        "process. Please reconfigure your model to use a different number "
        "of IPUs or set poptorch.Options().autoRoundNumIPUs(True).";
    cfg strict = {"ipumodel", 1, 6, 1, NULL, NULL, NULL, 0, 0};
    cfg rounded = {"ipumodel", 1, 6, 1, NULL, NULL, NULL, 0, 1};
    cfg offline = {"offline", 1, 6, 1, NULL, NULL, NULL, 0, 0};
    cfg cpu = {"cpu", 1, 6, 1, NULL, NULL, NULL, 0, 0};
    cfg many = {"ipumodel", 1, 6, 32, NULL, NULL, NULL, 0, 1};
    popc_graph *g = make_graph(&three_ipus);
    popc_model *m = training_model(g, &strict);

    expect(try_run(m, rows(&strict, 1)), POPC_EINVAL, odd);
    ck_assert(!popc_model_is_compiled(m));
    popc_model_free(m);
    m = training_model(g, &offline);
    expect(try_run(m, rows(&offline, 1)), POPC_EINVAL, odd);
    popc_model_free(m);
    m = training_model(g, &rounded);
    OK(try_run(m, rows(&rounded, 1)));
    popc_model_free(m);
    m = training_model(g, &cpu);
    OK(try_run(m, rows(&cpu, 1)));
    popc_model_free(m);
    m = training_model(g, &many);
    expect(try_run(m, rows(&many, 1)), POPC_EINVAL,
           "Too many IPUs requested (96). Experiments that need more than "
           "64 IPUs require distributed execution.");
    popc_model_free(m);
    popc_graph_free(g);
}
END_TEST

START_TEST(sharded_equals_single_ipu)
{
    /* no DI / GA constraint: one micro-batch at a time */
    cfg sh = {"cpu", 1, 1, 1, "ShardedExecution", NULL, NULL, 0, 0};
    cfg one = {"cpu", 1, 1, 1, NULL, NULL, NULL, 0, 0};
    popc_graph *g = make_graph(&three_ipus);
    popc_model *m = training_model(g, &sh);

    compare_training(&three_ipus, &sh, &plain, &one, 3, 0.0);
    OK(try_run(m, 1));
    ck_assert_int_eq(info_of(m).n_ipus, 3);
    ck_assert_int_eq(info_of(m).pipeline_stages, 3);
    ck_assert(!info_of(m).pipelined);
    popc_model_free(m);
    popc_graph_free(g);
}
END_TEST

/* ---- phased ------------------------------------------------------------- */

/* Blocks A, B, C in phases 0, 1, 2 on IPUs 0, 1, 0 (good parity) or all
** on IPU 0 (bad parity for phase 1). */
static popc_graph *phased_graph(int ipu_b, int hidden)
{
    spec s = {1, {"A", "B", "C"}, {-1, -1, -1}, 0, hidden};
    popc_graph *g = make_graph(&s);
    const char *a[] = {"A"}, *b[] = {"B"}, *c[] = {"C"};
    popc_stage_spec st[3] = {{a, 1, 0, 0}, {b, 1, ipu_b, 1}, {c, 1, 0, 2}};

    OK(popc_graph_set_stages(g, st, 3));
    return g;
}

START_TEST(phased_errors)
{
    spec s = {1, {"A", "B", "C"}, {0, 1, 0}, 0, 0};
    popc_graph *g = make_graph(&s), *bad = phased_graph(0, 0);
    cfg serial = {"cpu", 1, 1, 1, "SerialPhasedExecution", NULL, NULL, 0, 0};
    cfg par = {"cpu", 1, 1, 1, "ParallelPhasedExecution", NULL, NULL, 0, 0};
    cfg par_each = {"cpu", 1, 1, 1, "ParallelPhasedExecution", NULL,
                    "OffChipAfterEachPhase", 0, 0};
    cfg par_noov = {"cpu", 1, 1, 1, "ParallelPhasedExecution", NULL,
                    "OffChipAfterFwdNoOverlap", 0, 0};
    cfg pipe_live = {"cpu", 1, 1, 1, NULL, NULL, "OffChipAfterFwd", 0, 0};
    cfg pipe_sep = {"cpu", 1, 1, 1, NULL, NULL, NULL, 1, 0};
    popc_model *m;

    m = training_model(g, &serial);
    expect(try_run(m, 1), POPC_EINVAL, "There is currently no AutoStage for "
           "PhasedExecution, please explicitly specify the phases");
    popc_model_free(m);
    m = training_model(bad, &par);
    expect(try_run(m, 1), POPC_EINVAL, "When phases are executed in "
           "parallel: even phases must run on even IPUs and odd phases on "
           "odd IPUs");
    popc_model_free(m);
    m = training_model(bad, &par_each);
    expect(try_run(m, 1), POPC_EINVAL, "This is only supported for serial "
           "phase execution");
    popc_model_free(m);
    m = training_model(bad, &par_noov);
    expect(try_run(m, 1), POPC_EINVAL, "This is only supported for serial "
           "phase execution");
    popc_model_free(m);
    m = training_model(g, &pipe_live);
    expect(try_run(m, 1), POPC_EINVAL, "tensor liveness applies to "
           "SerialPhasedExecution and ParallelPhasedExecution only");
    popc_model_free(m);
    m = training_model(g, &pipe_sep);
    expect(try_run(m, 1), POPC_EINVAL, "useSeparateBackwardPhase applies "
           "to SerialPhasedExecution and ParallelPhasedExecution only");
    popc_model_free(m);
    /* a phase cannot read what a later phase computes */
    {
        const char *a[] = {"A"}, *b[] = {"B"}, *c[] = {"C"};
        popc_stage_spec back[3] = {{a, 1, 0, 1}, {b, 1, 0, 0},
                                   {c, 1, 0, 2}};

        OK(popc_graph_set_stages(g, back, 3));
        m = training_model(g, &serial);
        expect(try_run(m, 1), POPC_EINVAL, "node 'fc2' is in phase 0 but "
               "reads 'Relu_1:0', which node 'Relu_1' computes in "
               "the later phase 1");
        popc_model_free(m);
    }
    popc_graph_free(g);
    popc_graph_free(bad);
}
END_TEST

/* Train the phased graph and the plain one side by side. */
static void phased_equal(popc_graph *ph, const cfg *c, popc_plan_info *pi)
{
    cfg one = {"cpu", c->di, c->ga, c->r, NULL, NULL, NULL, 0, 0};
    popc_graph *pg = make_graph(&plain);
    popc_model *a = training_model(ph, c), *b = training_model(pg, &one);
    popc_tensor *x, *y, *oa[2], *ob[2];

    make_data(2 * rows(c, 1), &x, &y);
    for (int k = 0; k < 3; k++) {
        run(a, x, y, oa);
        run(b, x, y, ob);
        for (int i = 0; i < 2; i++) {
            same(oa[i], ob[i], 0.0);
            popc_tensor_free(oa[i]);
            popc_tensor_free(ob[i]);
        }
    }
    same_weights(a, b, 0.0);
    *pi = info_of(a);
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_model_free(a);
    popc_model_free(b);
    popc_graph_free(pg);
}

START_TEST(phased_results_equal)
{
    popc_graph *g = phased_graph(1, 0);
    cfg serial = {"cpu", 2, 2, 1, "SerialPhasedExecution", NULL, NULL, 0, 0};
    cfg par = {"cpu", 2, 2, 2, "ParallelPhasedExecution", NULL, NULL, 0, 0};
    cfg each = {"cpu", 1, 1, 1, "SerialPhasedExecution", NULL,
                "OffChipAfterEachPhase", 0, 0};
    cfg fwd = {"cpu", 1, 1, 1, "ParallelPhasedExecution", NULL,
               "OffChipAfterFwd", 0, 0};
    cfg live = {"cpu", 1, 1, 1, "SerialPhasedExecution", NULL, NULL, 0, 0};
    cfg sep = {"cpu", 1, 1, 1, "SerialPhasedExecution", NULL,
               "OffChipAfterEachPhase", 1, 0};
    popc_plan_info pi, pe, pf, pl, ps;

    phased_equal(g, &serial, &pi);
    ck_assert_int_eq(pi.n_phases, 3);
    ck_assert(!pi.pipelined);
    ck_assert_int_eq(pi.offchip_bytes, 0);
    phased_equal(g, &par, &pi);
    ck_assert_int_eq(pi.n_phases, 3);
    /* liveness: activations of finished phases are off chip */
    phased_equal(g, &live, &pl);
    phased_equal(g, &each, &pe);
    phased_equal(g, &fwd, &pf);
    ck_assert_int_eq(pl.offchip_bytes, 0);
    ck_assert_int_gt(pe.offchip_bytes, 0);
    ck_assert_int_gt(pf.offchip_bytes, 0);
    ck_assert_int_ge(pe.offchip_bytes, pf.offchip_bytes);
    ck_assert_int_lt(pe.onchip_peak_bytes, pl.onchip_peak_bytes);
    ck_assert_int_le(pf.onchip_peak_bytes, pl.onchip_peak_bytes);
    fprintf(stderr, "liveness (serial phases): on-chip activation peak "
            "AlwaysLive %lld, OffChipAfterEachPhase %lld (%lld bytes off "
            "chip), OffChipAfterFwd (parallel) %lld (%lld bytes off chip)\n",
            (long long)pl.onchip_peak_bytes, (long long)pe.onchip_peak_bytes,
            (long long)pe.offchip_bytes, (long long)pf.onchip_peak_bytes,
            (long long)pf.offchip_bytes);
    /* the host-side arena is not affected: only the on-chip accounting */
    ck_assert_int_eq(pe.activation_bytes, pl.activation_bytes);
    /* a backward pass with phases of its own: the last forward phase's
    ** activations leave the chip too */
    {
        spec two = {1, {"A", "B", "C"}, {-1, -1, -1}, 0, 0};
        popc_graph *g2 = make_graph(&two);
        const char *a[] = {"A"}, *bc[] = {"B", "C"};
        popc_stage_spec st[2] = {{a, 1, 0, 0}, {bc, 2, 0, 1}};

        OK(popc_graph_set_stages(g2, st, 2));
        phased_equal(g2, &each, &pe);
        phased_equal(g2, &sep, &ps);
        ck_assert_int_gt(ps.offchip_bytes, pe.offchip_bytes);
        ck_assert_int_eq(ps.n_phases, 2);
        popc_graph_free(g2);
    }
    popc_graph_free(g);
}
END_TEST

/* The ipumodel memory map's activation total (enableProfiling's copy of
** the backend report: "totals": {..., "activations": N, ...}). */
static long long ipumodel_activations(popc_graph *g, const char *liveness)
{
    cfg c = {"ipumodel", 1, 1, 1, "SerialPhasedExecution", NULL, liveness,
             0, 0};
    char dir[] = "/tmp/popc_strategies_XXXXXX", path[256], *text, *at;
    popc_options *o = options(&c);
    popc_model *m = NULL;
    long long acts = -1;
    FILE *f;
    long n;

    ck_assert(mkdtemp(dir) != NULL);
    OK(popc_options_set(o, "enableProfiling", dir));
    OK(popc_model_new_training(g, o, NULL, &m));
    /* tensors large enough to spread over every tile, so that tiles are
    ** shared and what leaves the chip lowers their peaks */
    OK(try_run(m, 256));
    if (strcmp(liveness, "AlwaysLive") != 0)
        ck_assert_int_gt(info_of(m).offchip_bytes, 0);
    popc_model_free(m);
    popc_options_free(o);
    snprintf(path, sizeof path, "%s/training/profile.json", dir);
    ck_assert((f = fopen(path, "rb")) != NULL);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    text = calloc((size_t)n + 1, 1);
    ck_assert(text && fread(text, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    at = strstr(text, "\"totals\"");
    ck_assert(at != NULL);
    at = strstr(at, "\"activations\"");
    ck_assert(at != NULL);
    acts = strtoll(strchr(at, ':') + 1, NULL, 10);
    free(text);
    remove(path);
    snprintf(path, sizeof path, "%s/training/profile.html", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/training", dir);
    rmdir(path);
    rmdir(dir);
    return acts;
}

/* profile.json's model.execution_phases for the phased graph under c. */
static int execution_phases_ids(popc_graph *g, const cfg *c, char *ids,
                                size_t size);

static int execution_phases(popc_graph *g, const cfg *c)
{
    return execution_phases_ids(g, c, NULL, 0);
}

/* The model's execution_phases in profile.json; ids (when not NULL)
** receives its execution_phase_ids list, brackets included. */
static int execution_phases_ids(popc_graph *g, const cfg *c, char *ids,
                                size_t size)
{
    char dir[] = "/tmp/popc_phases_XXXXXX", path[256], buf[8192];
    popc_options *o = options(c);
    popc_model *m = NULL;
    const char *at;
    size_t n;
    FILE *f;

    ck_assert(mkdtemp(dir) != NULL);
    OK(popc_options_set(o, "enableProfiling", dir));
    OK(popc_model_new_training(g, o, NULL, &m));
    OK(try_run(m, 2 * rows(c, 1)));
    popc_model_free(m);
    popc_options_free(o);
    snprintf(path, sizeof path, "%s/training/profile.json", dir);
    ck_assert((f = fopen(path, "rb")) != NULL);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    remove(path);
    snprintf(path, sizeof path, "%s/training/profile.html", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/training", dir);
    rmdir(path);
    rmdir(dir);
    if (ids) {
        const char *list = strstr(buf, "\"execution_phase_ids\": ["), *end;

        ck_assert(list != NULL);
        list += strlen("\"execution_phase_ids\": ");
        ck_assert((end = strchr(list, ']')) != NULL);
        ck_assert((size_t)(end - list) + 2 <= size);
        memcpy(ids, list, (size_t)(end - list) + 1);
        ids[end - list + 1] = '\0';
    }
    ck_assert((at = strstr(buf, "\"execution_phases\": ")) != NULL);
    return atoi(at + strlen("\"execution_phases\": "));
}

/* PopTorch's phase count for the 3-phase graph, derived by hand from its
** rule: the largest effective phase + 1 (phase x 4 with
** OffChipAfterEachPhase, x 2 with OffChipAfterFwdNoOverlap), + 3 when
** tensors leave the chip, else + 1 for a separate backward phase. */
START_TEST(execution_phase_count)
{
    popc_graph *g = phased_graph(1, 0);
    cfg c = {"cpu", 1, 1, 1, "SerialPhasedExecution", NULL, NULL, 0, 0};

    ck_assert_int_eq(execution_phases(g, &c), 3);
    c.separate_backward = 1;
    ck_assert_int_eq(execution_phases(g, &c), 4);
    c.separate_backward = 0;
    c.liveness = "OffChipAfterFwd";
    ck_assert_int_eq(execution_phases(g, &c), 2 + 1 + 3);
    c.liveness = "OffChipAfterFwdNoOverlap";
    ck_assert_int_eq(execution_phases(g, &c), 2 * 2 + 1 + 3);
    c.liveness = "OffChipAfterEachPhase";
    ck_assert_int_eq(execution_phases(g, &c), 2 * 4 + 1 + 3);
    popc_graph_free(g);
}
END_TEST

/* PopTorch's phase ids (semantics §6), derived by hand for the graph of
** phases 0, 1, 2 (IPUs 0, 1, 0): serial execution numbers them phase x 4
** with OffChipAfterEachPhase (0, 4, 8), x 2 with OffChipAfterFwdNoOverlap
** (0, 2, 4), else as given; the count is the largest id + 1, + 3 when
** tensors leave the chip, else + 1 for a separate backward phase. Parallel
** execution (two IPU groups) keeps the ids, so even phases sit on even
** IPUs, counts the same way, and refuses the x 2 and x 4 livenesses
** (phased_errors). Not phased: no ids, no count. */
START_TEST(execution_phase_ids)
{
    popc_graph *g = phased_graph(1, 0);
    cfg c = {"cpu", 1, 1, 1, "SerialPhasedExecution", NULL, NULL, 0, 0};
    cfg pipe = {"cpu", 1, 1, 1, "ShardedExecution", NULL, NULL, 0, 0};
    char ids[256];

    ck_assert_int_eq(execution_phases_ids(g, &c, ids, sizeof ids), 3);
    ck_assert_str_eq(ids, "[0, 1, 2]");
    c.liveness = "OffChipAfterFwdNoOverlap";
    ck_assert_int_eq(execution_phases_ids(g, &c, ids, sizeof ids), 4 + 1 + 3);
    ck_assert_str_eq(ids, "[0, 2, 4]");
    c.liveness = "OffChipAfterEachPhase";
    ck_assert_int_eq(execution_phases_ids(g, &c, ids, sizeof ids), 8 + 1 + 3);
    ck_assert_str_eq(ids, "[0, 4, 8]");
    /* the separate backward phase adds nothing once tensors go off chip */
    c.separate_backward = 1;
    ck_assert_int_eq(execution_phases_ids(g, &c, ids, sizeof ids), 8 + 1 + 3);
    /* parallel */
    c.strategy = "ParallelPhasedExecution";
    c.liveness = NULL;
    c.separate_backward = 0;
    ck_assert_int_eq(execution_phases_ids(g, &c, ids, sizeof ids), 3);
    ck_assert_str_eq(ids, "[0, 1, 2]");
    c.separate_backward = 1;
    ck_assert_int_eq(execution_phases_ids(g, &c, ids, sizeof ids), 3 + 1);
    c.separate_backward = 0;
    c.liveness = "OffChipAfterFwd";
    ck_assert_int_eq(execution_phases_ids(g, &c, ids, sizeof ids), 3 + 3);
    ck_assert_str_eq(ids, "[0, 1, 2]");
    popc_graph_free(g);
    /* sharded execution has stages, not phases */
    g = phased_graph(1, 0);
    ck_assert_int_eq(execution_phases_ids(g, &pipe, ids, sizeof ids), 0);
    ck_assert_str_eq(ids, "[]");
    popc_graph_free(g);
}
END_TEST

/* Activation off-chip bytes of one phased run with one extra option. */
static long long phased_offchip(popc_graph *g, const char *name,
                                const char *value)
{
    cfg each = {"cpu", 1, 1, 1, "SerialPhasedExecution", NULL,
                "OffChipAfterEachPhase", 0, 0};
    popc_options *o = options(&each);
    popc_model *m = NULL;
    long long bytes;

    if (name)
        OK(popc_options_set(o, name, value));
    OK(popc_model_new_training(g, o, NULL, &m));
    OK(try_run(m, 2 * rows(&each, 1)));
    bytes = info_of(m).offchip_bytes;
    popc_model_free(m);
    popc_options_free(o);
    return bytes;
}

/* TensorLocations.setActivationLocation under phased execution: on-chip
** storage keeps every activation, minElementsForOffChip the small ones;
** the liveness decides for the rest. */
START_TEST(phased_activation_locations)
{
    const char *act = "TensorLocations.setActivationLocation.";
    char name[128];
    popc_graph *g = phased_graph(1, 0);

    ck_assert_int_gt(phased_offchip(g, NULL, NULL), 0);
    snprintf(name, sizeof name, "%suseOnChipStorage", act);
    ck_assert_int_eq(phased_offchip(g, name, "true"), 0);
    snprintf(name, sizeof name, "%sminElementsForOffChip", act);
    ck_assert_int_eq(phased_offchip(g, name, "1000000000"), 0);
    /* the default threshold (2 elements, PopART's) keeps a scalar on chip */
    ck_assert_int_eq(phased_offchip(g, name, "0"),
                     phased_offchip(g, NULL, NULL) + 4);
    popc_graph_free(g);
}
END_TEST

START_TEST(phased_on_ipumodel)
{
    popc_graph *g = phased_graph(1, 512);
    long long live = ipumodel_activations(g, "AlwaysLive");
    long long each = ipumodel_activations(g, "OffChipAfterEachPhase");

    fprintf(stderr, "ipumodel memory map, activations at the peak: "
            "AlwaysLive %lld, OffChipAfterEachPhase %lld bytes\n", live,
            each);
    ck_assert(live > 0);
    ck_assert(each < live);
    popc_graph_free(g);
}
END_TEST

/* ---- recomputation ------------------------------------------------------ */

static void recompute_case(const char *backend, int ckpt)
{
    spec none = {0, {NULL, NULL, NULL}, {-1, -1, -1}, 0, 64};
    spec rc = {0, {NULL, NULL, NULL}, {-1, -1, -1}, ckpt, 64};
    cfg c = {backend, 2, 2, 2, NULL, NULL, NULL, 0, 0};
    popc_graph *ga = make_graph(&none), *gb = make_graph(&rc);
    popc_model *a = training_model(ga, &c), *b = training_model(gb, &c);
    popc_plan_info pa, pb;

    compare_mb(&none, &c, &rc, &c, 3, 0.0, 32);
    OK(try_run(a, 32 * rows(&c, 1)));
    OK(try_run(b, 32 * rows(&c, 1)));
    pa = info_of(a);
    pb = info_of(b);
    ck_assert_int_eq(pa.recomputed_nodes, 0);
    ck_assert_int_gt(pb.recomputed_nodes, 0);
    ck_assert_int_lt(pb.stored_bytes, pa.stored_bytes);
    fprintf(stderr, "recomputation (%s, %s): stored activations %lld -> "
            "%lld bytes, activation arena %lld -> %lld bytes, %d nodes "
            "recomputed\n", backend, ckpt == 1 ? "checkpoint nodes" :
            "annotations", (long long)pa.stored_bytes,
            (long long)pb.stored_bytes, (long long)pa.activation_bytes,
            (long long)pb.activation_bytes, pb.recomputed_nodes);
    popc_model_free(a);
    popc_model_free(b);
    popc_graph_free(ga);
    popc_graph_free(gb);
}

START_TEST(recomputation_cpu)
{
    recompute_case("cpu", 1);
    recompute_case("cpu", 2);
}
END_TEST

START_TEST(recomputation_ipumodel)
{
    recompute_case("ipumodel", 1);
}
END_TEST

START_TEST(recomputation_pipelined)
{
    spec rc = {1, {"A", "B", "C"}, {0, 1, 2}, 1, 16};
    spec none = {0, {NULL, NULL, NULL}, {-1, -1, -1}, 0, 16};
    cfg c = {"cpu", 1, 5, 1, NULL, NULL, NULL, 0, 0};

    compare_training(&rc, &c, &none, &c, 2, 0.0);
}
END_TEST

/* ---- replica grouping --------------------------------------------------- */

/* y = x W^T (W [1, 2], no bias), MSE loss against t: with B = 1 row per
** replica, dL/dW = 2 (x.W - t) x. */
static popc_graph *linear_graph(void)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int64_t xd[2] = {1, 2}, td[2] = {1, 1};
    int x, t, o, loss;

    OK(popc_graph_new("lin", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_input(g, "t", POPC_DTYPE_F32, td, 2, &t));
    OK(popc_layers_new(g, 1, &L));
    OK(popc_nn_linear(L, "fc", x, 2, 1, 0, &o));
    OK(popc_nn_mse_loss(L, o, t, "mean", &loss));
    OK(popc_graph_add_output(g, o));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    return g;
}

static popc_tensor *vec2(float a, float b)
{
    int64_t d[2] = {1, 2};
    popc_tensor *t = NULL;
    float *p;

    OK(popc_tensor_new(POPC_DTYPE_F32, d, 2, &t));
    p = popc_tensor_data(t);
    p[0] = a;
    p[1] = b;
    return t;
}

static popc_model *grouped_model(popc_graph *g, const char *backend,
                                 int64_t r, double momentum)
{
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    OK(popc_options_set_int(o, "replicationFactor", r));
    OK(popc_options_set(o, "outputMode", "All"));
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", 0.1));
    if (momentum > 0.0)
        OK(popc_optimizer_set(opt, "momentum", momentum));
    OK(popc_model_new_training(g, o, opt, &m));
    popc_optimizer_free(opt);
    popc_options_free(o);
    return m;
}

/* One step by hand: replica r has row x_r, target t_r and the weight of
** its group; the group's gradient is the mean over its replicas. */
static void hand_step(int R, int G, int orth, float w[][2],
                      const float *x, const float *t, float lr)
{
    float g[8][2] = {{0}};
    int cnt[8] = {0};

    for (int r = 0; r < R; r++) {
        int k = orth ? r % G : r / (R / G);
        float e = x[2 * r] * w[k][0] + x[2 * r + 1] * w[k][1] - t[r];
        g[k][0] += 2.0f * e * x[2 * r];
        g[k][1] += 2.0f * e * x[2 * r + 1];
        cnt[k]++;
    }
    for (int k = 0; k < G; k++)
        for (int j = 0; j < 2; j++)
            w[k][j] -= lr * g[k][j] / (float)cnt[k];
}

static void grouping_case(const char *backend, popc_comm_group_type type,
                          int shards, int G, int orth)
{
    enum { R = 4 };
    popc_graph *g = linear_graph();
    popc_model *m = grouped_model(g, backend, R, 0.0);
    float w[8][2], xs[2 * R], ts[R];
    int64_t xd[2] = {R, 2}, td[2] = {R, 1};
    popc_tensor *x, *t, *out[2], *all = NULL, *one = NULL;
    popc_tensor *in[2];

    OK(popc_model_set_replica_grouping(m, "fc.weight", type, shards,
                                       POPC_RETRIEVE_ALL_REPLICAS));
    ck_assert_int_eq(popc_model_n_replica_groups(m, "fc.weight"), G);
    for (int k = 0; k < G; k++) {
        popc_tensor *v = vec2(0.5f + (float)k, -0.25f * (float)(k + 1));
        w[k][0] = 0.5f + (float)k;
        w[k][1] = -0.25f * (float)(k + 1);
        OK(popc_model_set_group_weight(m, "fc.weight", k, v));
        popc_tensor_free(v);
    }
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_tensor_new(POPC_DTYPE_F32, td, 2, &t));
    for (int i = 0; i < 2 * R; i++)
        xs[i] = ((float*)popc_tensor_data(x))[i] =
            (float)((i * 5) % 7) / 3.0f - 1.0f;
    for (int i = 0; i < R; i++)
        ts[i] = ((float*)popc_tensor_data(t))[i] = (float)i * 0.5f - 0.7f;
    in[0] = x;
    in[1] = t;
    for (int step = 0; step < 3; step++) {
        OK(popc_model_run(m, in, 2, out, 2));
        /* replica r's prediction used its group's weight */
        for (int r = 0; r < R; r++) {
            int k = orth ? r % G : r / (R / G);
            float want = xs[2 * r] * w[k][0] + xs[2 * r + 1] * w[k][1];
            ck_assert(fabsf(((float *)popc_tensor_data(out[0]))[r] - want) <
                      1e-5f);
        }
        popc_tensor_free(out[0]);
        popc_tensor_free(out[1]);
        hand_step(R, G, orth, w, xs, ts, 0.1f);
    }
    /* AllReplicas: one row per replica, equal within groups */
    OK(popc_model_get_grouped_weight(m, "fc.weight", &all));
    ck_assert_int_eq(popc_tensor_dims(all)[0], R);
    for (int r = 0; r < R; r++) {
        int k = orth ? r % G : r / (R / G);
        const float *p = (const float *)popc_tensor_cdata(all) + 2 * r;
        ck_assert(fabsf(p[0] - w[k][0]) < 1e-5f);
        ck_assert(fabsf(p[1] - w[k][1]) < 1e-5f);
    }
    if (G > 1) {
        const float *p = popc_tensor_cdata(all);
        int other = orth ? 1 : R - 1;
        ck_assert(p[0] != p[2 * other]);
    }
    OK(popc_model_get_group_weight(m, "fc.weight", G - 1, &one));
    ck_assert(fabsf(((const float *)popc_tensor_cdata(one))[0] -
                    w[G - 1][0]) < 1e-5f);
    popc_tensor_free(one);
    popc_tensor_free(all);
    popc_tensor_free(x);
    popc_tensor_free(t);
    popc_model_free(m);
    popc_graph_free(g);
}

START_TEST(replica_grouping_hand_computed)
{
    grouping_case("cpu", POPC_COMM_CONSECUTIVE, 2, 2, 0);
    grouping_case("cpu", POPC_COMM_ORTHOGONAL, 2, 2, 1);
    grouping_case("cpu", POPC_COMM_NO_GROUPING, 0, 4, 0);
    grouping_case("cpu", POPC_COMM_ALL, 0, 1, 0);
    grouping_case("ipumodel", POPC_COMM_CONSECUTIVE, 2, 2, 0);
}
END_TEST

START_TEST(replica_grouping_api)
{
    popc_graph *g = linear_graph();
    popc_model *m = grouped_model(g, "cpu", 4, 0.9);
    popc_tensor *x, *t, *out[2], *st = NULL, *v = vec2(1.0f, 2.0f);
    popc_tensor *in[2], *one = NULL;
    int64_t xd[2] = {4, 2}, td[2] = {4, 1};

    expect(popc_model_set_replica_grouping(m, "fc.nope",
                                           POPC_COMM_CONSECUTIVE, 2,
                                           POPC_RETRIEVE_ONE_PER_GROUP),
           POPC_ENOTFOUND, "no weight or buffer named 'fc.nope'");
    expect(popc_model_set_replica_grouping(m, "fc.weight",
                                           POPC_COMM_CONSECUTIVE, 3,
                                           POPC_RETRIEVE_ONE_PER_GROUP),
           POPC_EINVAL, "must be a factor of replicationFactor (4)");
    expect(popc_model_set_replica_grouping(m, "fc.weight",
                                           POPC_COMM_CONSECUTIVE, 2,
                                           (popc_variable_retrieval_mode)1),
           POPC_EINVAL, "not a VariableRetrievalMode");
    OK(popc_model_set_replica_grouping(m, "fc.weight", POPC_COMM_ORTHOGONAL,
                                       2, POPC_RETRIEVE_ONE_PER_GROUP));
    expect(popc_model_set_group_weight(m, "fc.weight", 2, v), POPC_EINVAL,
           "group 2 does not exist");
    OK(popc_model_set_group_weight(m, "fc.weight", 1, v));
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_tensor_new(POPC_DTYPE_F32, td, 2, &t));
    for (int i = 0; i < 8; i++)
        ((float *)popc_tensor_data(x))[i] = (float)i * 0.1f;
    in[0] = x;
    in[1] = t;
    OK(popc_model_run(m, in, 2, out, 2));
    popc_tensor_free(out[0]);
    popc_tensor_free(out[1]);
    expect(popc_model_set_replica_grouping(m, "fc.weight", POPC_COMM_ALL, 0,
                                           POPC_RETRIEVE_ONE_PER_GROUP),
           POPC_ESTATE, "the model is compiled");
    /* one momentum state per group, stacked */
    OK(popc_model_get_optimizer_state(m, "fc.weight/momentum_buffer", &st));
    ck_assert_int_eq(popc_tensor_rank(st), 3);
    ck_assert_int_eq(popc_tensor_dims(st)[0], 2);
    popc_tensor_free(st);
    /* OnePerGroup: [groups, 1, 2] */
    OK(popc_model_get_grouped_weight(m, "fc.weight", &one));
    ck_assert_int_eq(popc_tensor_rank(one), 3);
    ck_assert_int_eq(popc_tensor_dims(one)[0], 2);
    popc_tensor_free(one);
    /* set_weight sets every group */
    OK(popc_model_set_weight(m, "fc.weight", v));
    OK(popc_model_get_grouped_weight(m, "fc.weight", &one));
    ck_assert(memcmp(popc_tensor_cdata(one),
                     (const float *)popc_tensor_cdata(one) + 2,
                     2 * sizeof(float)) == 0);
    popc_tensor_free(one);
    /* after destroy the grouping may change again */
    OK(popc_model_destroy(m));
    OK(popc_model_set_replica_grouping(m, "fc.weight", POPC_COMM_ALL, 0,
                                       POPC_RETRIEVE_ONE_PER_GROUP));
    OK(popc_model_run(m, in, 2, out, 2));
    popc_tensor_free(out[0]);
    popc_tensor_free(out[1]);
    OK(popc_model_get_optimizer_state(m, "fc.weight/momentum_buffer", &st));
    ck_assert_int_eq(popc_tensor_rank(st), 2);
    popc_tensor_free(st);
    popc_tensor_free(v);
    popc_tensor_free(x);
    popc_tensor_free(t);
    popc_model_free(m);
    popc_graph_free(g);
}
END_TEST

/* ---- inputReplicaGrouping ----------------------------------------------- */

/* Output = the input (popc::Nop): each replica shows the slice it got. */
static void input_groups(int64_t di, int64_t r, int64_t size,
                         const char *type)
{
    popc_graph *g = NULL;
    popc_options *o = NULL;
    popc_model *m = NULL;
    int64_t groups = r / size, n = di * groups, xd[2] = {1, 2}, nd[2];
    int x, y;
    popc_tensor *in = NULL, *out = NULL;

    OK(popc_graph_new("id", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_node(g, "popc", "Nop", 1, &x, 1, &y, 1, NULL, 0, NULL,
                           NULL));
    OK(popc_graph_add_output(g, y));
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "cpu"));
    OK(popc_options_set_int(o, "deviceIterations", di));
    OK(popc_options_set_int(o, "replicationFactor", r));
    OK(popc_options_set_int(o, "inputReplicaGrouping.size", size));
    OK(popc_options_set(o, "inputReplicaGrouping.type", type));
    OK(popc_model_new_inference(g, o, &m));
    nd[0] = n;
    nd[1] = 2;
    OK(popc_tensor_new(POPC_DTYPE_F32, nd, 2, &in));
    for (int64_t i = 0; i < 2 * n; i++)
        ((float *)popc_tensor_data(in))[i] = (float)i;
    OK(popc_model_run(m, &in, 1, &out, 1));
    ck_assert_int_eq(popc_tensor_dims(out)[0], di * r);
    /* host layout [DI][R / G][B] in, [DI][R][B] out: group k gets slice k */
    for (int64_t d = 0; d < di; d++)
        for (int64_t rep = 0; rep < r; rep++) {
            int64_t k = strcmp(type, "Orthogonal") == 0 ? rep % groups
                                                        : rep / size;
            const float *got = (const float *)popc_tensor_cdata(out) +
                               2 * (d * r + rep);
            ck_assert(got[0] == (float)(2 * (d * groups + k)));
            ck_assert(got[1] == (float)(2 * (d * groups + k) + 1));
        }
    popc_tensor_free(in);
    popc_tensor_free(out);
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
}

START_TEST(input_replica_grouping)
{
    input_groups(1, 4, 2, "Consecutive");
    input_groups(3, 4, 2, "Consecutive");
    input_groups(1, 4, 2, "Orthogonal");
    input_groups(2, 6, 3, "Orthogonal");
    input_groups(2, 4, 1, "NoGrouping");
}
END_TEST

/* ---- broadcastBuffers --------------------------------------------------- */

/* BatchNorm over [2, 2, 1, 1] inputs; a second output reads the running
** mean buffer (popc::Nop), so each replica shows the buffer it holds. */
static void bn_buffers(int broadcast, float *r0, float *r1)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    popc_options *o = NULL;
    popc_model *m = NULL;
    int64_t xd[4] = {2, 2, 1, 1}, nd[4] = {2 * 2 * 2, 2, 1, 1};
    int x, y, loss, rm, seen, outs[1];
    popc_tensor *in = NULL, *out[3];

    OK(popc_graph_new("bn", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 4, &x));
    OK(popc_layers_new(g, 3, &L));
    OK(popc_nn_batchnorm2d(L, "bn", x, 2, 1e-5, 0.1, &y));
    OK(popc_nn_identity_loss(L, y, "sum", &loss));
    rm = popc_graph_find_value(g, "bn.running_mean");
    OK(popc_graph_add_node(g, "popc", "Nop", 1, &rm, 1, outs, 1, NULL, 0,
                           NULL, NULL));
    seen = outs[0];
    OK(popc_graph_add_output(g, loss));
    OK(popc_graph_add_output(g, seen));
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "cpu"));
    OK(popc_options_set_int(o, "deviceIterations", 2));
    OK(popc_options_set_int(o, "replicationFactor", 2));
    OK(popc_options_set(o, "outputMode", "All"));
    OK(popc_options_set_bool(o, "broadcastBuffers", broadcast));
    OK(popc_model_new_training(g, o, NULL, &m));
    OK(popc_tensor_new(POPC_DTYPE_F32, nd, 4, &in));
    for (int64_t i = 0; i < 16; i++)
        ((float *)popc_tensor_data(in))[i] = (float)(i * i % 11);
    OK(popc_model_run(m, &in, 1, out, 2));
    /* rows [DI][R]: device iteration 1 shows the buffers after step 0 */
    ck_assert_int_eq(popc_tensor_dims(out[1])[0], 4 * 2);
    memcpy(r0, (const float *)popc_tensor_cdata(out[1]) + 2 * 2,
           2 * sizeof(float));
    memcpy(r1, (const float *)popc_tensor_cdata(out[1]) + 3 * 2,
           2 * sizeof(float));
    popc_tensor_free(out[0]);
    popc_tensor_free(out[1]);
    popc_tensor_free(in);
    popc_model_free(m);
    popc_options_free(o);
    popc_layers_free(L);
    popc_graph_free(g);
}

START_TEST(broadcast_buffers)
{
    float a0[2], a1[2], b0[2], b1[2];

    bn_buffers(1, a0, a1);
    bn_buffers(0, b0, b1);
    /* replica 0's statistics are the same either way */
    ck_assert(memcmp(a0, b0, sizeof a0) == 0);
    ck_assert(a0[0] != 0.0f);
    /* broadcast: replica 1 took replica 0's; else it kept its own */
    ck_assert(memcmp(a0, a1, sizeof a0) == 0);
    ck_assert(memcmp(b0, b1, sizeof b0) != 0);
}
END_TEST

/* ---- INI placement keys ------------------------------------------------- */

static popc_annotations annot_of(popc_graph *g, const char *value)
{
    int v = popc_graph_find_value(g, value);

    ck_assert_msg(v >= 0, "no value %s", value);
    return popc_graph_node_annotations(g, popc_graph_value_producer(g, v));
}

START_TEST(ini_placement_keys)
{
    static const char ini[] =
        "[options]\nbackend = cpu\nTraining.gradientAccumulation = 3\n"
        "[model]\ninput = 4\nclasses = 3\nlayers = fc1, relu, fc2\n"
        "[layer fc1]\ntype = linear\nout_features = 8\nipu = 0\n"
        "block = first\n"
        "[layer fc2]\ntype = linear\nout_features = 3\nipu = 1\n"
        "recompute = true\n";
    char path[] = "/tmp/popc_strategies_XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    popc_run *r = NULL;
    popc_graph *g = NULL;
    popc_annotations a;
    popc_model *m = NULL;
    popc_tensor *x = NULL, *lab = NULL, *out[4], *in[2];
    int64_t xd[2] = {6, 4}, ld[1] = {6};

    ck_assert(f != NULL);
    fputs(ini, f);
    fclose(f);
    OK(popc_run_load(path, NULL, 0, &r));
    OK(popc_run_build_graph(r, 1, 2, &g));
    a = annot_of(g, "fc1:0");
    ck_assert_int_eq(a.ipu, 0);
    ck_assert_str_eq(a.block, "first");
    ck_assert_int_eq(a.recompute, -1);
    /* the relu follows fc1's placement */
    ck_assert_int_eq(annot_of(g, "Relu_1:0").ipu, 0);
    a = annot_of(g, "fc2:0");
    ck_assert_int_eq(a.ipu, 1);
    ck_assert_int_eq(a.recompute, 1);
    ck_assert(a.block == NULL);
    /* the model trains as a two-stage pipeline */
    ck_assert_int_le(popc_graph_n_outputs(g), 4);
    OK(popc_model_new_training(g, popc_run_options(r), NULL, &m));
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_tensor_new(POPC_DTYPE_I32, ld, 1, &lab));
    in[0] = x;
    in[1] = lab;
    OK(popc_model_run(m, in, 2, out, popc_graph_n_outputs(g)));
    for (int i = 0; i < popc_graph_n_outputs(g); i++)
        popc_tensor_free(out[i]);
    ck_assert_int_eq(info_of(m).pipeline_stages, 2);
    ck_assert(info_of(m).pipelined);
    popc_model_free(m);
    popc_tensor_free(x);
    popc_tensor_free(lab);
    popc_graph_free(g);
    popc_run_free(r);
    remove(path);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("strategies");
    TCase *blocks = tcase_create("blocks");
    TCase *run_tc = tcase_create("strategies");
    TCase *rep = tcase_create("replication");
    SRunner *sr;
    int failed;

    tcase_set_timeout(blocks, 60);
    tcase_set_timeout(run_tc, 300);
    tcase_set_timeout(rep, 120);
    tcase_add_test(blocks, block_context);
    tcase_add_test(blocks, block_context_survives_clone);
    tcase_add_test(blocks, explicit_stage_lists);
    tcase_add_test(blocks, auto_stages_and_depth);
    tcase_add_test(blocks, ini_placement_keys);
    tcase_add_test(run_tc, pipelined_equals_single_ipu_cpu);
    tcase_add_test(run_tc, pipelined_equals_single_ipu_ipumodel);
    tcase_add_test(run_tc, pipelined_ipumodel_equals_cpu);
    tcase_add_test(run_tc, ipu_count_rule);
    tcase_add_test(run_tc, sharded_equals_single_ipu);
    tcase_add_test(run_tc, phased_errors);
    tcase_add_test(run_tc, phased_results_equal);
    tcase_add_test(run_tc, phased_on_ipumodel);
    tcase_add_test(run_tc, phased_activation_locations);
    tcase_add_test(run_tc, execution_phase_count);
    tcase_add_test(run_tc, execution_phase_ids);
    tcase_add_test(run_tc, recomputation_cpu);
    tcase_add_test(run_tc, recomputation_ipumodel);
    tcase_add_test(run_tc, recomputation_pipelined);
    tcase_add_test(rep, replica_grouping_hand_computed);
    tcase_add_test(rep, replica_grouping_api);
    tcase_add_test(rep, input_replica_grouping);
    tcase_add_test(rep, broadcast_buffers);
    suite_add_tcase(s, blocks);
    suite_add_tcase(s, run_tc);
    suite_add_tcase(s, rep);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
