/* check_optimize.c - the graph optimizer (opt/, popc/optimize.h): each
** pass on a small graph, before and after (which ops remain), and the
** rewritten graph's outputs against the unrewritten one's on the cpu
** backend's reference kernels (optimizationLevel 0), within 1e-5 of the
** output's scale (bitwise where the pass only moves data or fuses Add,
** Relu and Clip); the levels, and what must not be rewritten.
*/
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "harness/assert.h"
#include "popc/optimize.h"
#include "popc/popc.h"

#define B 2

static uint64_t rng_state;

static float uniform(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) & 0xffffff) / (float)0x1000000 - 0.5f;
}

static popc_tensor *random_tensor(const int64_t *dims, int rank, float scale)
{
    popc_tensor *t = NULL;
    float *p;

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, dims, rank, &t));
    p = popc_tensor_data(t);
    for (int64_t i = 0; i < popc_tensor_numel(t); i++)
        p[i] = scale * uniform();
    return t;
}

static int constant(popc_graph *g, const int64_t *dims, int rank, float scale)
{
    popc_tensor *t = random_tensor(dims, rank, scale);
    int v;

    ASSERT_OK(popc_graph_add_constant(g, NULL, t, &v));
    popc_tensor_free(t);
    return v;
}

static int scalar(popc_graph *g, float x)
{
    popc_tensor *t = NULL;
    int v;

    ASSERT_OK(popc_tensor_from_data(POPC_DTYPE_F32, NULL, 0, &x, &t));
    ASSERT_OK(popc_graph_add_constant(g, NULL, t, &v));
    popc_tensor_free(t);
    return v;
}

static int op(popc_graph *g, const char *domain, const char *name,
              const int *in, int n_in, const popc_attr *a, int n_a)
{
    int y;

    ASSERT_OK(popc_graph_add_node(g, domain, name, 0, in, n_in, &y, 1, a, n_a,
                                  NULL, NULL));
    return y;
}

static int op2(popc_graph *g, const char *name, int a, int b)
{
    int in[2] = {a, b};

    return op(g, NULL, name, in, 2, NULL, 0);
}

static int op1(popc_graph *g, const char *name, int a)
{
    return op(g, NULL, name, &a, 1, NULL, 0);
}

/* How many nodes of g have op `name` (any domain). */
static int count(const popc_graph *g, const char *name)
{
    int n = 0;

    for (int i = 0; i < popc_graph_n_nodes(g); i++)
        n += strcmp(popc_graph_node_op(g, i), name) == 0;
    return n;
}

/* A copy of g optimized at level (inference unless training). */
static popc_graph *optimized(const popc_graph *g, int level, int training,
                             int *rewrites)
{
    popc_graph *c = NULL;
    popc_optimize_options o = {.size = sizeof o, .level = level,
                               .training = training};

    ASSERT_OK(popc_graph_clone(g, &c));
    ASSERT_OK(popc_graph_optimize(c, &o, rewrites));
    ASSERT_OK(popc_graph_verify(c, 0));
    return c;
}

#define MAX_OUT 4

/* g's outputs (at most MAX_OUT) on input x by an inference model at
** level, into y. */
static void run_at(const popc_graph *g, popc_tensor *x, int level,
                   const char *backend, popc_tensor **y)
{
    popc_options *o = NULL;
    popc_model *m = NULL;
    int n = popc_graph_n_outputs(g);

    ck_assert_int_le(n, MAX_OUT);
    ASSERT_OK(popc_options_new(&o));
    ASSERT_OK(popc_options_set(o, "backend", backend));
    ASSERT_OK(popc_options_set_int(o, "optimizationLevel", level));
    ASSERT_OK(popc_model_new_inference(g, o, &m));
    ASSERT_OK(popc_model_run(m, &x, 1, y, n));
    popc_model_free(m);
    popc_options_free(o);
}

/* Level 2 against level 0 on the cpu backend (and level 2 on the
** ipumodel, bitwise like the cpu's): within tol of each output's
** largest magnitude (0: bitwise). */
static void same_outputs(const popc_graph *g, popc_tensor *x, double tol)
{
    popc_tensor *ref[MAX_OUT], *opt[MAX_OUT], *ipu[MAX_OUT];

    run_at(g, x, 0, "cpu", ref);
    run_at(g, x, 2, "cpu", opt);
    run_at(g, x, 2, "ipumodel", ipu);
    for (int k = 0; k < popc_graph_n_outputs(g); k++) {
        double scale = 0.0, diff = popc_tensor_max_abs_diff(ref[k], opt[k]);
        const float *r = popc_tensor_data(ref[k]);

        for (int64_t i = 0; i < popc_tensor_numel(ref[k]); i++)
            scale = fmax(scale, fabs((double)r[i]));
        ck_assert_msg(diff <= tol * fmax(scale, 1.0), "optimized output %d "
                      "differs by %g (scale %g, tolerance %g)", k, diff,
                      scale, tol);
        ck_assert_msg(popc_tensor_max_abs_diff(opt[k], ipu[k]) == 0.0,
                      "ipumodel and cpu differ on the optimized graph");
        popc_tensor_free(ref[k]);
        popc_tensor_free(opt[k]);
        popc_tensor_free(ipu[k]);
    }
}

static popc_graph *graph_with_input(const int64_t *dims, int rank, int *x)
{
    popc_graph *g = NULL;

    ASSERT_OK(popc_graph_new("opt", &g));
    ASSERT_OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, dims, rank, x));
    return g;
}

static void setup(void)
{
    rng_state = 7;
    /* the passes alone, in NCHW: blocked layouts (POPC_NCHWC_BLOCK=0 turns
    ** them off) are tests/check_blocked.c's */
    setenv("POPC_NCHWC_BLOCK", "0", 1);
}

/* ---- level 1 ------------------------------------------------------------ */

START_TEST(constants_fold)
{
    int64_t d[2] = {B, 8};
    int x;
    popc_graph *g = graph_with_input(d, 2, &x), *o;
    int c = op2(g, "Add", constant(g, d + 1, 1, 1.0f),
                constant(g, d + 1, 1, 1.0f));
    int y = op2(g, "Mul", x, op1(g, "Exp", c));
    popc_tensor *in = random_tensor(d, 2, 2.0f);
    int n;

    ASSERT_OK(popc_graph_add_output(g, y));
    o = optimized(g, 1, 0, &n);
    ck_assert_int_eq(count(o, "Add"), 0);
    ck_assert_int_eq(count(o, "Exp"), 0);
    ck_assert_int_eq(popc_graph_n_nodes(o), 1);
    ck_assert_int_eq(n, 2);
    same_outputs(g, in, 0.0);
    popc_tensor_free(in);
    popc_graph_free(o);
    popc_graph_free(g);
}
END_TEST

START_TEST(identities_and_inference_dropout_go)
{
    int64_t d[2] = {B, 8};
    int x;
    popc_graph *g = graph_with_input(d, 2, &x), *o, *t;
    int a = op1(g, "Identity", x), y, out;
    popc_attr r = popc_attr_make_float("ratio", 0.5);

    y = op(g, NULL, "Dropout", &a, 1, &r, 1);
    y = op1(g, "Relu", y);
    out = op1(g, "Identity", y); /* a graph output keeps its name */
    ASSERT_OK(popc_graph_add_output(g, out));
    o = optimized(g, 1, 0, NULL);
    ck_assert_int_eq(count(o, "Dropout"), 0);
    ck_assert_int_eq(count(o, "Identity"), 1);
    ck_assert_int_eq(count(o, "Relu"), 1);
    /* a training graph keeps its Dropout */
    t = optimized(g, 1, 1, NULL);
    ck_assert_int_eq(count(t, "Dropout"), 1);
    popc_graph_free(t);
    popc_graph_free(o);
    popc_graph_free(g);
}
END_TEST

/* Conv -> BatchNormalization with constant parameters: one Conv. */
static popc_graph *conv_bn(int weights_are_constants, int *x)
{
    int64_t xd[4] = {B, 3, 7, 7}, wd[4] = {5, 3, 3, 3}, c[1] = {5};
    popc_graph *g = graph_with_input(xd, 4, x);
    int in[5], y;
    popc_attr p = popc_attr_make_ints("pads", (int64_t[]){1, 1, 1, 1}, 4);
    popc_attr eps = popc_attr_make_float("epsilon", 1e-3);

    in[0] = *x;
    if (weights_are_constants) {
        in[1] = constant(g, wd, 4, 1.0f);
    } else {
        popc_tensor *w = random_tensor(wd, 4, 1.0f);

        ASSERT_OK(popc_graph_add_initializer(g, "w", w, 1, &in[1]));
        popc_tensor_free(w);
    }
    in[2] = constant(g, c, 1, 1.0f);
    y = op(g, NULL, "Conv", in, 3, &p, 1);
    in[0] = y;
    in[1] = constant(g, c, 1, 2.0f);
    in[2] = constant(g, c, 1, 1.0f);
    in[3] = constant(g, c, 1, 1.0f);
    in[4] = op1(g, "Abs", constant(g, c, 1, 2.0f)); /* folded first */
    y = op(g, NULL, "BatchNormalization", in, 5, &eps, 1);
    ASSERT_OK(popc_graph_add_output(g, y));
    return g;
}

START_TEST(batchnorm_folds_into_conv)
{
    int64_t xd[4] = {B, 3, 7, 7};
    int x;
    popc_graph *g = conv_bn(1, &x), *o, *w;
    popc_tensor *in = random_tensor(xd, 4, 2.0f);

    o = optimized(g, 1, 0, NULL);
    ck_assert_int_eq(count(o, "BatchNormalization"), 0);
    ck_assert_int_eq(count(o, "Conv"), 1);
    ck_assert_int_eq(popc_graph_n_nodes(o), 1);
    same_outputs(g, in, 1e-5);
    /* a weight stays a weight: nothing folds into it */
    w = conv_bn(0, &x);
    popc_graph_free(o);
    o = optimized(w, 1, 0, NULL);
    ck_assert_int_eq(count(o, "BatchNormalization"), 1);
    /* a training graph normalises by its batch */
    popc_graph_free(o);
    o = optimized(g, 2, 1, NULL);
    ck_assert_int_eq(count(o, "BatchNormalization"), 1);
    popc_tensor_free(in);
    popc_graph_free(o);
    popc_graph_free(w);
    popc_graph_free(g);
}
END_TEST

START_TEST(batchnorm_folds_into_gemm)
{
    int64_t xd[2] = {B, 6}, c[1] = {4};
    popc_tensor *in = random_tensor(xd, 2, 2.0f);

    for (int tb = 0; tb < 2; tb++) {
        int64_t wd[2] = {tb ? 4 : 6, tb ? 6 : 4};
        int x;
        popc_graph *g = graph_with_input(xd, 2, &x), *o;
        popc_attr a[2] = {popc_attr_make_int("transB", tb),
                          popc_attr_make_float("beta", 0.5)};
        int ins[5] = {x, constant(g, wd, 2, 1.0f), constant(g, c, 1, 1.0f)};
        int y = op(g, NULL, "Gemm", ins, 3, a, 2);

        ins[0] = y;
        ins[1] = constant(g, c, 1, 2.0f);
        ins[2] = constant(g, c, 1, 1.0f);
        ins[3] = constant(g, c, 1, 1.0f);
        ins[4] = op2(g, "Add", constant(g, c, 1, 0.5f), scalar(g, 1.0f));
        y = op(g, NULL, "BatchNormalization", ins, 5, NULL, 0);
        ASSERT_OK(popc_graph_add_output(g, y));
        o = optimized(g, 1, 0, NULL);
        ck_assert_int_eq(count(o, "BatchNormalization"), 0);
        ck_assert_int_eq(popc_graph_n_nodes(o), 1);
        same_outputs(g, in, 1e-5);
        popc_graph_free(o);
        popc_graph_free(g);
    }
    popc_tensor_free(in);
}
END_TEST

START_TEST(transposes_and_reshapes_cancel)
{
    int64_t d[3] = {B, 4, 6}, flat[2] = {B, 24}, back[3] = {B, 4, 6};
    int x;
    popc_graph *g = graph_with_input(d, 3, &x), *o;
    popc_attr p021 = popc_attr_make_ints("perm", (int64_t[]){0, 2, 1}, 3);
    popc_attr p102 = popc_attr_make_ints("perm", (int64_t[]){1, 0, 2}, 3);
    popc_tensor *s1 = NULL, *s2 = NULL, *in = random_tensor(d, 3, 1.0f);
    int a, b2, c1, c2, r;

    a = op(g, NULL, "Transpose", &x, 1, &p021, 1);
    a = op(g, NULL, "Transpose", &a, 1, &p021, 1); /* cancels */
    b2 = op(g, NULL, "Transpose", &a, 1, &p021, 1);
    b2 = op(g, NULL, "Transpose", &b2, 1, &p102, 1); /* chains to one */
    ASSERT_OK(popc_tensor_from_data(POPC_DTYPE_I64, (int64_t[]){2}, 1, flat,
                                    &s1));
    ASSERT_OK(popc_tensor_from_data(POPC_DTYPE_I64, (int64_t[]){3}, 1, back,
                                    &s2));
    ASSERT_OK(popc_graph_add_constant(g, NULL, s1, &c1));
    ASSERT_OK(popc_graph_add_constant(g, NULL, s2, &c2));
    r = op2(g, "Reshape", op1(g, "Relu", x), c1);
    r = op2(g, "Reshape", r, c2); /* back to x's shape: gone */
    ASSERT_OK(popc_graph_add_output(g, op2(g, "Add", a, r)));
    ASSERT_OK(popc_graph_add_output(g, b2));
    o = optimized(g, 1, 0, NULL);
    ck_assert_int_eq(count(o, "Transpose"), 1);
    ck_assert_int_eq(count(o, "Reshape"), 0);
    same_outputs(g, in, 0.0);
    popc_tensor_free(s1);
    popc_tensor_free(s2);
    popc_tensor_free(in);
    popc_graph_free(o);
    popc_graph_free(g);
}
END_TEST

/* ---- level 2 ------------------------------------------------------------ */

/* torch.onnx.export's GELU and LayerNorm, as exported before opset 17 */
static int torch_gelu(popc_graph *g, int x)
{
    int e = op1(g, "Erf", op2(g, "Div", x, scalar(g, 1.41421353816986f)));
    int m = op2(g, "Mul", x, op2(g, "Add", e, scalar(g, 1.0f)));

    return op2(g, "Mul", m, scalar(g, 0.5f));
}

static int torch_layernorm(popc_graph *g, int x, int64_t dim)
{
    popc_attr ax = popc_attr_make_ints("axes", (int64_t[]){-1}, 1);
    int mean = op(g, NULL, "ReduceMean", &x, 1, &ax, 1);
    int d = op2(g, "Sub", x, mean);
    int p = op2(g, "Pow", d, scalar(g, 2.0f));
    int v = op(g, NULL, "ReduceMean", &p, 1, &ax, 1);
    int s = op1(g, "Sqrt", op2(g, "Add", v, scalar(g, 1e-5f)));
    int n = op2(g, "Div", d, s);

    n = op2(g, "Mul", n, constant(g, &dim, 1, 2.0f));
    return op2(g, "Add", n, constant(g, &dim, 1, 1.0f));
}

START_TEST(gelu_and_layernorm_are_recognised)
{
    int64_t d[3] = {B, 5, 16};
    int x;
    popc_graph *g = graph_with_input(d, 3, &x), *o, *t;
    popc_tensor *in = random_tensor(d, 3, 4.0f);

    ASSERT_OK(popc_graph_add_output(g, torch_layernorm(g, torch_gelu(g, x),
                                                      16)));
    o = optimized(g, 2, 0, NULL);
    ck_assert_int_eq(count(o, "Gelu"), 1);
    ck_assert_int_eq(count(o, "LayerNormalization"), 1);
    ck_assert_int_eq(popc_graph_n_nodes(o), 2);
    same_outputs(g, in, 1e-5);
    /* both have gradients: a training graph gets them too */
    t = optimized(g, 2, 1, NULL);
    ck_assert_int_eq(popc_graph_n_nodes(t), 2);
    popc_graph_free(t);
    popc_tensor_free(in);
    popc_graph_free(o);
    popc_graph_free(g);
}
END_TEST

/* nn.MultiheadAttention's core as exported: the scale on Q (Div) or on
** the scores (Mul by a constant on either side) */
START_TEST(attention_is_recognised)
{
    int64_t qd[3] = {B, 6, 8}, kd[3] = {B, 8, 5}, vd[3] = {B, 5, 4};
    popc_tensor *in = random_tensor(qd, 3, 4.0f);

    for (int on_scores = 0; on_scores < 2; on_scores++) {
        int x;
        popc_graph *g = graph_with_input(qd, 3, &x), *o;
        popc_attr ax = popc_attr_make_int("axis", -1);
        int kt = constant(g, kd, 3, 2.0f), v = constant(g, vd, 3, 1.0f);
        int sc, p;

        if (on_scores) {
            sc = op2(g, "Mul", scalar(g, 0.35f), op2(g, "MatMul", x, kt));
        } else {
            sc = op2(g, "MatMul", op2(g, "Div", x, scalar(g, 2.828427f)),
                     kt);
        }
        p = op(g, NULL, "Softmax", &sc, 1, &ax, 1);
        ASSERT_OK(popc_graph_add_output(g, op2(g, "MatMul", p, v)));
        o = optimized(g, 2, 0, NULL);
        ck_assert_int_eq(popc_graph_n_nodes(o), 1);
        ck_assert_int_eq(count(o, "Attention"), 1);
        same_outputs(g, in, 1e-5);
        popc_graph_free(o);
        /* training keeps the ops autodiff knows */
        o = optimized(g, 2, 1, NULL);
        ck_assert_int_eq(count(o, "Attention"), 0);
        popc_graph_free(o);
        popc_graph_free(g);
    }
    popc_tensor_free(in);
}
END_TEST

/* conv (stride, pads, groups as given) + residual + activation */
static popc_graph *conv_block(int64_t c, int64_t group, int64_t stride,
                              const char *act, int *x)
{
    int64_t xd[4] = {B, c, 9, 9}, wd[4] = {c, c / group, 3, 3}, bd[1] = {c};
    popc_graph *g = graph_with_input(xd, 4, x);
    popc_attr a[3] = {popc_attr_make_ints("pads", (int64_t[]){1, 1, 1, 1}, 4),
                      popc_attr_make_int("group", group),
                      popc_attr_make_ints("strides", (int64_t[]){stride,
                                                                 stride}, 2)};
    int in[3] = {*x, constant(g, wd, 4, 0.5f), constant(g, bd, 1, 1.0f)};
    int y = op(g, NULL, "Conv", in, 3, a, 3);

    if (stride == 1)
        y = op2(g, "Add", *x, y); /* residual, either operand order */
    if (strcmp(act, "Clip") == 0) {
        int ci[3] = {y, scalar(g, 0.0f), scalar(g, 6.0f)};

        y = op(g, NULL, "Clip", ci, 3, NULL, 0);
    } else if (strcmp(act, "SiLU") == 0) {
        y = op2(g, "Mul", y, op1(g, "Sigmoid", y));
    } else {
        y = op1(g, act, y);
    }
    ASSERT_OK(popc_graph_add_output(g, y));
    return g;
}

START_TEST(conv_fuses_with_residual_and_activation)
{
    static const struct {
        int64_t c, group, stride;
        const char *act;
        double tol;
    } cases[] = {
        {4, 1, 1, "Relu", 0.0},   {6, 1, 2, "Clip", 0.0},
        {8, 8, 1, "Relu", 0.0},   {8, 8, 2, "Sigmoid", 1e-6},
        {16, 2, 1, "Clip", 0.0},  {5, 1, 1, "SiLU", 1e-6},
        {3, 3, 1, "Tanh", 1e-6},  {7, 1, 2, "LeakyRelu", 0.0},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int x;
        popc_graph *g = conv_block(cases[i].c, cases[i].group,
                                   cases[i].stride, cases[i].act, &x);
        popc_graph *o = optimized(g, 2, 0, NULL);
        int64_t xd[4] = {B, cases[i].c, 9, 9};
        popc_tensor *in = random_tensor(xd, 4, 3.0f);

        ck_assert_msg(popc_graph_n_nodes(o) == 1 &&
                          count(o, "FusedConv") == 1,
                      "case %zu: %d nodes", i, popc_graph_n_nodes(o));
        same_outputs(g, in, cases[i].tol);
        popc_tensor_free(in);
        popc_graph_free(o);
        popc_graph_free(g);
    }
}
END_TEST

START_TEST(matmul_and_gemm_fuse_with_bias_and_activation)
{
    int64_t ad[3] = {B, 3, 12}, wd[2] = {12, 7}, bd[1] = {7}, a2[2] = {B, 12};
    int64_t wt[2] = {7, 12};
    int x, y;
    popc_graph *g = graph_with_input(ad, 3, &x), *o;
    popc_tensor *in = random_tensor(ad, 3, 2.0f), *in2;

    /* MatMul + bias (either order) + residual + Gelu */
    y = op2(g, "MatMul", x, constant(g, wd, 2, 1.0f));
    y = op2(g, "Add", constant(g, bd, 1, 1.0f), y);
    y = op2(g, "Add", y, op1(g, "Neg", y)); /* y read twice: no residual */
    ASSERT_OK(popc_graph_add_output(g, op1(g, "Gelu", y)));
    o = optimized(g, 2, 0, NULL);
    ck_assert_int_eq(count(o, "FusedMatMul"), 1);
    ck_assert_int_eq(count(o, "Gelu"), 1); /* after the 2-reader Add */
    same_outputs(g, in, 1e-5);
    popc_graph_free(o);
    popc_graph_free(g);
    /* Gemm (transB) with its C + Relu: Linear, ReLU */
    g = graph_with_input(a2, 2, &x);
    {
        popc_attr tb = popc_attr_make_int("transB", 1);
        int in3[3] = {x, constant(g, wt, 2, 1.0f), constant(g, bd, 1, 1.0f)};

        y = op(g, NULL, "Gemm", in3, 3, &tb, 1);
    }
    ASSERT_OK(popc_graph_add_output(g, op1(g, "Relu", y)));
    o = optimized(g, 2, 0, NULL);
    ck_assert_int_eq(popc_graph_n_nodes(o), 1);
    ck_assert_int_eq(count(o, "FusedMatMul"), 1);
    in2 = random_tensor(a2, 2, 2.0f);
    same_outputs(g, in2, 1e-6);
    popc_tensor_free(in2);
    popc_tensor_free(in);
    popc_graph_free(o);
    popc_graph_free(g);
}
END_TEST

START_TEST(fusions_leave_training_and_marked_nodes_alone)
{
    int x;
    popc_graph *g = conv_block(4, 1, 1, "Relu", &x), *o;
    popc_attr mark = popc_attr_make_int(POPC_ATTR_OVERLAP_OUTPUT, 1);

    o = optimized(g, 2, 1, NULL);
    ck_assert_int_eq(count(o, "FusedConv"), 0);
    ck_assert_int_eq(count(o, "Conv"), 1);
    popc_graph_free(o);
    /* a node with one of popc's marks asks for something of itself */
    ASSERT_OK(popc_graph_set_node_attr(g, popc_graph_n_nodes(g) - 1, &mark));
    o = optimized(g, 2, 0, NULL);
    ck_assert_int_eq(count(o, "Relu"), 1);
    popc_graph_free(o);
    popc_graph_free(g);
}
END_TEST

/* ---- the option, through a model ---------------------------------------- */

START_TEST(levels_and_refusals)
{
    popc_options *o = NULL;
    popc_graph *g = NULL;
    popc_optimize_options bad = {.size = sizeof bad, .level = 3};

    ASSERT_OK(popc_options_new(&o));
    ck_assert_int_eq(popc_options_set(o, "optimizationLevel", "3"),
                     POPC_EUNSUPPORTED);
    ASSERT_HAS(popc_last_error(), "not supported yet");
    ck_assert_int_eq(popc_options_set(o, "optimizationLevel", "4"),
                     POPC_EINVAL);
    ASSERT_OK(popc_options_set(o, "optimizationLevel", "1"));
    ASSERT_OK(popc_graph_new("g", &g));
    ck_assert_int_eq(popc_graph_optimize(g, &bad, NULL), POPC_EINVAL);
    ASSERT_HAS(popc_last_error(), "level");
    ck_assert_int_eq(popc_graph_optimize(NULL, NULL, NULL), POPC_EINVAL);
    popc_graph_free(g);
    popc_options_free(o);
}
END_TEST

/* An anchored value survives: anchorTensor reads it by name. */
START_TEST(anchored_values_survive)
{
    int x;
    popc_graph *g = conv_block(4, 1, 1, "Relu", &x), *c = NULL;
    const char *keep = popc_graph_value_name(g, popc_graph_node_output(g, 0,
                                                                       0));
    popc_optimize_options o = {.size = sizeof o, .level = 2, .keep = &keep,
                               .n_keep = 1};

    ASSERT_OK(popc_graph_clone(g, &c));
    ASSERT_OK(popc_graph_optimize(c, &o, NULL));
    ck_assert_int_eq(count(c, "Conv"), 1);
    ck_assert_int_ge(popc_graph_find_value(c, keep), 0);
    popc_graph_free(c);
    popc_graph_free(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("optimize");
    TCase *tc = tcase_create("passes");
    SRunner *sr;
    int failed;

    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, constants_fold);
    tcase_add_test(tc, identities_and_inference_dropout_go);
    tcase_add_test(tc, batchnorm_folds_into_conv);
    tcase_add_test(tc, batchnorm_folds_into_gemm);
    tcase_add_test(tc, transposes_and_reshapes_cancel);
    tcase_add_test(tc, gelu_and_layernorm_are_recognised);
    tcase_add_test(tc, attention_is_recognised);
    tcase_add_test(tc, conv_fuses_with_residual_and_activation);
    tcase_add_test(tc, matmul_and_gemm_fuse_with_bias_and_activation);
    tcase_add_test(tc, fusions_leave_training_and_marked_nodes_alone);
    tcase_add_test(tc, levels_and_refusals);
    tcase_add_test(tc, anchored_values_survive);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
