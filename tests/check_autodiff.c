/* check_autodiff.c - reverse-mode autodiff: exact results on small test
** ops (accumulation, partial outputs, loss scaling, naming, annotations,
** pruning, failure paths), the finite-difference checker itself, and a
** finite-difference check of every differentiable op the build tree's
** plugins register. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/graph_testops.h"
#include "tests/harness/fd_check.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())
#define HAS(msg, part)                                                     \
    ck_assert_msg(strstr((msg), (part)) != NULL, "'%s' not in: %s", (part), \
                  (msg))

static popc_graph *g;

static void setup(void)
{
    ck_assert_msg(testops_register() == POPC_OK, "%s", popc_last_error());
    ck_assert_int_eq(popc_graph_new("ad", &g), POPC_OK);
}

static void teardown(void)
{
    popc_graph_free(g);
    g = NULL;
}

static const float xv[6] = {0.5f, -1.0f, 2.0f, 1.5f, -0.25f, 3.0f};

static int input(const char *name)
{
    int64_t dims[2] = {2, 3};
    int id;
    OK(popc_graph_add_input(g, name, POPC_DTYPE_F32, dims, 2, &id));
    return id;
}

static int node(const char *op, const int *in, int n, const char *name,
                const popc_attr *attrs, int n_attrs)
{
    int y;
    OK(popc_graph_add_node(g, "test", op, 0, in, n, &y, 1, attrs, n_attrs,
                           name, NULL));
    return y;
}

static int find_node(const char *name)
{
    for (int n = 0; n < popc_graph_n_nodes(g); n++)
        if (strcmp(popc_graph_node_name(g, n), name) == 0)
            return n;
    return -1;
}

static int count_grad_nodes(void)
{
    int c = 0;
    for (int n = 0; n < popc_graph_n_nodes(g); n++)
        c += strstr(popc_graph_node_name(g, n), "/grad/") != NULL;
    return c;
}

/* Evaluate one value with x fed as every graph input. */
static popc_tensor *eval1(int value)
{
    int64_t dims[2] = {2, 3};
    popc_tensor *x = testops_f32(dims, 2, xv), *feed[4], *out = NULL;
    int n_in = popc_graph_n_inputs(g);

    for (int i = 0; i < n_in; i++)
        feed[i] = x;
    OK(popc_graph_eval(g, feed, n_in, &value, 1, &out, 1, 9));
    popc_tensor_free(x);
    return out;
}

static void expect(int value, float (*f)(float))
{
    popc_tensor *t = eval1(value);
    const float *d = popc_tensor_cdata(t);

    ck_assert_int_eq(popc_tensor_numel(t), 6);
    for (int i = 0; i < 6; i++)
        ck_assert_msg(fabsf(d[i] - f(xv[i])) < 1e-5f, "element %d: %g vs %g",
                      i, (double)d[i], (double)f(xv[i]));
    popc_tensor_free(t);
}

static float six_x(float x) { return 6 * x; }
static float twenty_four_x(float x) { return 24 * x; }
static float four_x(float x) { return 4 * x; }
static float two(float x) { (void)x; return 2; }

START_TEST(chain_exact_and_named)
{
    popc_attr a = {.name = "alpha", .type = POPC_ATTR_FLOAT, .f = 3};
    int x = input("x"), sq, sc, loss, grad;

    sq = node("Square", &x, 1, "sq", NULL, 0);
    sc = node("Scale", &sq, 1, "sc", &a, 1);
    loss = node("SumLoss", &sc, 1, "loss", NULL, 0);
    OK(popc_graph_gradients(g, loss, &x, 1, 1.0, &grad));
    ck_assert_int_ge(grad, 0);
    expect(grad, six_x);
    ck_assert_int_ge(find_node("sc/grad/Scale"), 0);
    ck_assert_int_ge(find_node("sq/grad/Mul"), 0);
    ck_assert_int_ge(find_node("loss/grad/Fill"), 0);
    /* the attribute reached the gradient builder */
    {
        popc_attrs at = popc_graph_node_attrs(g, find_node("sc/grad/Scale"));
        ck_assert_double_eq(popc_attr_float(&at, "alpha", 0), 3.0);
    }
    OK(popc_graph_verify(g, 1));
}
END_TEST

START_TEST(seed_scales_gradients)
{
    popc_attr a = {.name = "alpha", .type = POPC_ATTR_FLOAT, .f = 3};
    int x = input("x"), y, loss, grad;

    y = node("Square", &x, 1, NULL, NULL, 0);
    y = node("Scale", &y, 1, NULL, &a, 1);
    loss = node("SumLoss", &y, 1, NULL, NULL, 0);
    OK(popc_graph_gradients(g, loss, &x, 1, 4.0, &grad));
    expect(grad, twenty_four_x);
}
END_TEST

START_TEST(fan_out_is_summed)
{
    int x = input("x"), a, b, c, loss, grad, sum;

    a = node("Square", &x, 1, "a", NULL, 0);
    b = node("Mul", (int[]){x, x}, 2, "b", NULL, 0);
    c = node("Add", (int[]){a, b}, 2, "c", NULL, 0);
    loss = node("SumLoss", &c, 1, "loss", NULL, 0);
    OK(popc_graph_gradients(g, loss, &x, 1, 1.0, &grad));
    expect(grad, four_x);
    /* x has three contributions: one ai.onnx Sum adds them */
    sum = popc_graph_value_producer(g, grad);
    ck_assert_int_ge(sum, 0);
    ck_assert_str_eq(popc_graph_node_op(g, sum), "Sum");
    ck_assert_str_eq(popc_graph_node_name(g, sum), "x/grad/Sum");
    ck_assert_int_eq(popc_graph_node_n_inputs(g, sum), 3);
}
END_TEST

START_TEST(absent_output_gradient)
{
    int x = input("x"), s[2], loss, grad;

    OK(popc_graph_add_node(g, "test", "Split2", 0, &x, 1, s, 2, NULL, 0,
                           "split", NULL));
    loss = node("SumLoss", &s[1], 1, NULL, NULL, 0);
    OK(popc_graph_gradients(g, loss, &x, 1, 1.0, &grad));
    expect(grad, two);
    popc_graph_free(g);
    OK(popc_graph_new("ad", &g));
    /* both outputs used: 1 + 2 per element, plus Square's 2x on top */
    x = input("x");
    OK(popc_graph_add_node(g, "test", "Split2", 0, &x, 1, s, 2, NULL, 0,
                           "split", NULL));
    {
        int sq = node("Square", &s[0], 1, NULL, NULL, 0);
        int sum = node("Add", (int[]){sq, s[1]}, 2, NULL, NULL, 0);
        int sq2 = node("Square", &x, 1, NULL, NULL, 0);
        int tot = node("Add", (int[]){sum, sq2}, 2, NULL, NULL, 0);
        loss = node("SumLoss", &tot, 1, NULL, NULL, 0);
    }
    /* d/dx [x^2 + 2x + x^2] = 4x + 2; Split2 passes g1 + 2 g2 */
    OK(popc_graph_gradients(g, loss, &x, 1, 1.0, &grad));
    {
        popc_tensor *t = eval1(grad);
        const float *d = popc_tensor_cdata(t);
        for (int i = 0; i < 6; i++)
            ck_assert_float_eq_tol(d[i], 4 * xv[i] + 2, 1e-5);
        popc_tensor_free(t);
    }
}
END_TEST

START_TEST(unreachable_and_loss_itself)
{
    int x = input("x"), z = input("z"), y, loss, wrt[3], grads[3];
    popc_tensor *t;

    y = node("Square", &x, 1, NULL, NULL, 0);
    loss = node("SumLoss", &y, 1, NULL, NULL, 0);
    wrt[0] = x;
    wrt[1] = z;
    wrt[2] = loss;
    OK(popc_graph_gradients(g, loss, wrt, 3, 2.5, grads));
    ck_assert_int_ge(grads[0], 0);
    ck_assert_int_eq(grads[1], -1);
    ck_assert_int_ge(grads[2], 0);
    ck_assert_int_eq(popc_graph_value_kind(g, grads[2]), POPC_VALUE_CONSTANT);
    t = eval1(grads[2]);
    ck_assert_int_eq(popc_tensor_rank(t), 0);
    ck_assert_float_eq(((const float *)popc_tensor_cdata(t))[0], 2.5f);
    popc_tensor_free(t);
    /* a loss that does not depend on wrt at all: nothing is added */
    {
        int nn = popc_graph_n_nodes(g), nv = popc_graph_n_values(g);
        OK(popc_graph_gradients(g, loss, &z, 1, 1.0, grads));
        ck_assert_int_eq(grads[0], -1);
        ck_assert_int_eq(popc_graph_n_nodes(g), nn);
        ck_assert_int_eq(popc_graph_n_values(g), nv);
    }
}
END_TEST

START_TEST(no_gradient_on_path_rolls_back)
{
    int x = input("x"), y, loss, grad = 7, nn, nv;

    y = node("Square", &x, 1, "sq", NULL, 0);
    y = node("NoGrad", &y, 1, "ng", NULL, 0);
    y = node("Square", &y, 1, "sq2", NULL, 0);
    loss = node("SumLoss", &y, 1, "loss", NULL, 0);
    nn = popc_graph_n_nodes(g);
    nv = popc_graph_n_values(g);
    ck_assert_int_eq(popc_graph_gradients(g, loss, &x, 1, 1.0, &grad),
                     POPC_ECOMPILE);
    HAS(popc_last_error(), "node 'ng' (test::NoGrad) has no gradient; ");
    ck_assert_int_eq(grad, -1);
    ck_assert_int_eq(popc_graph_n_nodes(g), nn);
    ck_assert_int_eq(popc_graph_n_values(g), nv);
    ck_assert_int_eq(count_grad_nodes(), 0);
    OK(popc_graph_verify(g, 1));
}
END_TEST

START_TEST(no_gradient_off_path_is_fine)
{
    int64_t d[2] = {2, 3};
    popc_tensor *wt = testops_f32(d, 2, xv);
    int x = input("x"), w, c, y, loss, grad;

    OK(popc_graph_add_initializer(g, "frozen", wt, 0, &w));
    popc_tensor_free(wt);
    c = node("NoGrad", &w, 1, "ng", NULL, 0);
    y = node("Mul", (int[]){x, c}, 2, "mul", NULL, 0);
    loss = node("SumLoss", &y, 1, NULL, NULL, 0);
    OK(popc_graph_gradients(g, loss, &x, 1, 1.0, &grad));
    /* dL/dx = w = x's values; Mul's gradient for w is pruned */
    {
        popc_tensor *t = eval1(grad);
        const float *dd = popc_tensor_cdata(t);
        for (int i = 0; i < 6; i++)
            ck_assert_float_eq(dd[i], xv[i]);
        popc_tensor_free(t);
    }
    ck_assert_int_eq(count_grad_nodes(), 2); /* mul/grad/Mul, loss/grad/Fill */
}
END_TEST

START_TEST(annotations_inherited)
{
    popc_annotations a = {.scope = NULL, .block = "b1", .ipu = 1, .stage = 1,
                          .phase = -1, .recompute = 1};
    int x = input("x"), y, loss, grad, n;
    popc_annotations got;

    OK(popc_graph_set_annotations(g, &a));
    y = node("Square", &x, 1, "sq", NULL, 0);
    a.ipu = 0;
    a.stage = 0;
    OK(popc_graph_set_annotations(g, &a));
    loss = node("SumLoss", &y, 1, "loss", NULL, 0);
    OK(popc_graph_set_annotations(g, NULL));
    OK(popc_graph_gradients(g, loss, &x, 1, 1.0, &grad));
    n = find_node("sq/grad/Mul");
    ck_assert_int_ge(n, 0);
    got = popc_graph_node_annotations(g, n);
    ck_assert_int_eq(got.ipu, 1);
    ck_assert_int_eq(got.stage, 1);
    ck_assert_str_eq(got.block, "b1");
    ck_assert_int_eq(got.recompute, -1);
    got = popc_graph_node_annotations(g, find_node("loss/grad/Fill"));
    ck_assert_int_eq(got.ipu, 0);
}
END_TEST

START_TEST(unknown_shape_and_bad_args)
{
    int x = input("x"), y, loss, grad;

    y = node("Square", &x, 1, NULL, NULL, 0);
    OK(popc_graph_add_node(g, "acme", "Thing", 1, &y, 1, &loss, 1, NULL, 0,
                           "thing", NULL));
    ck_assert_int_eq(popc_graph_gradients(g, loss, &x, 1, 1.0, &grad),
                     POPC_ECOMPILE);
    HAS(popc_last_error(), "no known shape");
    ck_assert_int_eq(popc_graph_gradients(g, 999, &x, 1, 1.0, &grad),
                     POPC_EINVAL);
    ck_assert_int_eq(popc_graph_gradients(g, y, (int[]){1234}, 1, 1.0, &grad),
                     POPC_EINVAL);
}
END_TEST

START_TEST(fd_checker_itself)
{
    int64_t d[2] = {2, 3};
    popc_tensor *a = testops_f32(d, 2, xv), *b = testops_f32(d, 2, xv);
    popc_tensor *in[2] = {a, b};
    char why[512];
    int w01[2] = {0, 1};

    ((float *)popc_tensor_data(b))[0] = 0.75f;
    OK(fd_check_op("test", "Square", in, 1, w01, 1, NULL, 0, 1e-3, why,
                   sizeof why));
    OK(fd_check_op("test", "Mul", in, 2, w01, 2, NULL, 0, 1e-3, why,
                   sizeof why));
    OK(fd_check_op_ex("test", "Split2", in, 1, w01, 1, NULL, 0, 2, 1, 1e-3,
                      why, sizeof why));
    ck_assert_int_eq(fd_check_op("test", "BadGrad", in, 1, w01, 1, NULL, 0,
                                 1e-3, why, sizeof why), POPC_EINTERNAL);
    HAS(why, "gradient mismatch");
    HAS(why, "finite difference");
    ck_assert_int_eq(fd_check_op("test", "NoGrad", in, 1, w01, 1, NULL, 0,
                                 1e-3, why, sizeof why), POPC_EUNSUPPORTED);
    ck_assert_int_eq(fd_check_op("test", "Nope", in, 1, w01, 1, NULL, 0,
                                 1e-3, why, sizeof why), POPC_ENOTFOUND);
    popc_tensor_free(a);
    popc_tensor_free(b);
}
END_TEST

/* ---- every differentiable plugin op ---------------------------------------- */

enum { R = 1, /* float32, |v| in [0.3, 1.3], random sign */
       D,     /* float32, distinct: |v| = 0.3 + 0.05 k shuffled, random
              ** sign, so max-like ops have no near-ties */
       P,     /* float32 in [0.5, 1.5] */
       F,     /* float32 values given */
       I,     /* int64 values given */
       B };   /* bool values given (0/1 in vals) */

typedef struct tin {
    int kind;
    int rank;
    int64_t dims[4];
    double vals[8];
} tin;

typedef struct fcase {
    const char *domain, *op, *label;
    int n_in;
    tin in[5];
    int n_wrt;
    int wrt[4];
    int n_attrs;
    popc_attr attrs[4];
    int n_out;       /* 0: the op's minimum */
    int inference;   /* 1: inference kernels (default: training) */
} fcase;

#define AI(nm, v) {.name = nm, .type = POPC_ATTR_INT, .i = v}
#define AF(nm, v) {.name = nm, .type = POPC_ATTR_FLOAT, .f = v}
#define AS(nm, v) {.name = nm, .type = POPC_ATTR_STRING, .s = v}
#define AL(nm, arr) \
    {.name = nm, .type = POPC_ATTR_INTS, .ints = arr, \
     .n = sizeof arr / sizeof arr[0]}
#define T(k, r, ...) {.kind = k, .rank = r, .dims = {__VA_ARGS__}}
#define TV(k, r, d, ...) {.kind = k, .rank = r, .dims = {d}, \
                          .vals = {__VA_ARGS__}}

static const int64_t perm102[] = {1, 0, 2};
static const int64_t k2[] = {2, 2}, k3[] = {3, 3}, s1[] = {1, 1},
                     s2[] = {2, 2}, p1[] = {1, 1, 1, 1}, p0[] = {0, 0, 0, 0};
static const int64_t ax1[] = {1}, ax_last[] = {-1}, sh13[] = {1, 3};

/* Designated fields keep the table readable: op, label, inputs, wrt,
** attributes, outputs. */
#define IN(...) .n_in = sizeof((tin[]){__VA_ARGS__}) / sizeof(tin), \
                .in = {__VA_ARGS__}
#define WRT(...) .n_wrt = sizeof((int[]){__VA_ARGS__}) / sizeof(int), \
                 .wrt = {__VA_ARGS__}
#define ATTRS(...) .n_attrs = sizeof((popc_attr[]){__VA_ARGS__}) / \
                              sizeof(popc_attr), \
                   .attrs = {__VA_ARGS__}
#define X23 T(R, 2, 2, 3)
#define MM_A {.kind = F, .rank = 2, .dims = {2, 3}, \
              .vals = {0.5, -0.7, 0.9, -0.4, 1.1, 0.3}}
#define MM_B {.kind = F, .rank = 2, .dims = {2, 3}, \
              .vals = {0.6, -0.9, 0.2, -0.3, 0.8, -0.2}}

static const fcase cases[] = {
    {.op = "Add", IN(X23, X23), WRT(0, 1)},
    {.op = "Add", .label = "broadcast", IN(X23, T(R, 1, 3)), WRT(0, 1)},
    {.op = "Sub", IN(X23, T(R, 2, 1, 3)), WRT(0, 1)},
    {.op = "Mul", IN(X23, T(R, 2, 2, 1)), WRT(0, 1)},
    {.op = "Div", IN(X23, T(P, 1, 3)), WRT(0, 1)},
    {.op = "Pow", IN(T(P, 2, 2, 3), X23), WRT(0, 1)},
    {.op = "Neg", IN(X23), WRT(0)},
    {.op = "Abs", IN(X23), WRT(0)},
    {.op = "Exp", IN(X23), WRT(0)},
    {.op = "Log", IN(T(P, 2, 2, 3)), WRT(0)},
    {.op = "Sqrt", IN(T(P, 2, 2, 3)), WRT(0)},
    {.op = "Reciprocal", IN(T(P, 2, 2, 3)), WRT(0)},
    {.op = "Relu", IN(X23), WRT(0)},
    {.op = "LeakyRelu", IN(X23), WRT(0), ATTRS(AF("alpha", 0.1))},
    {.op = "Sigmoid", IN(X23), WRT(0)},
    {.op = "Tanh", IN(X23), WRT(0)},
    {.op = "Gelu", IN(X23), WRT(0)},
    {.op = "Gelu", .label = "tanh", IN(X23), WRT(0),
     ATTRS(AS("approximate", "tanh"))},
    {.op = "Elu", IN(X23), WRT(0)},
    {.op = "Celu", IN(X23), WRT(0), ATTRS(AF("alpha", 0.7))},
    {.op = "Softplus", IN(X23), WRT(0)},
    {.op = "Erf", IN(X23), WRT(0)},
    {.op = "Sin", IN(X23), WRT(0)},
    {.op = "Cos", IN(X23), WRT(0)},
    {.op = "Identity", IN(X23), WRT(0)},
    {.op = "Clip", IN(MM_A, TV(F, 0, 0, -0.5), TV(F, 0, 0, 0.7)), WRT(0)},
    /* Max and Min: operands at least 0.1 apart, so no step crosses a tie */
    {.op = "Max", IN(MM_A, MM_B), WRT(0, 1)},
    {.op = "Min", IN(MM_A, MM_B), WRT(0, 1)},
    {.op = "Sum", IN(X23, X23, T(R, 1, 3)), WRT(0, 1, 2)},
    {.op = "Mean", IN(X23, X23), WRT(0, 1)},
    {.op = "Where", IN(TV(B, 1, 3, 1, 0, 1), X23, X23), WRT(1, 2)},
    {.op = "MatMul", IN(X23, T(R, 2, 3, 4)), WRT(0, 1)},
    {.op = "MatMul", .label = "batched", IN(T(R, 3, 2, 2, 3), T(R, 2, 3, 4)),
     WRT(0, 1)},
    {.op = "Gemm", .label = "transB", IN(X23, T(R, 2, 4, 3), T(R, 1, 4)),
     WRT(0, 1, 2), ATTRS(AI("transB", 1))},
    {.op = "Gemm", .label = "transA alpha beta",
     IN(T(R, 2, 3, 2), T(R, 2, 3, 4), T(R, 2, 2, 4)), WRT(0, 1, 2),
     ATTRS(AI("transA", 1), AF("alpha", 0.5), AF("beta", 2.0))},
    {.op = "Transpose", IN(T(R, 3, 2, 3, 2)), WRT(0),
     ATTRS(AL("perm", perm102))},
    {.op = "Reshape", IN(X23, TV(I, 1, 2, 3, -1)), WRT(0)},
    {.op = "Flatten", IN(T(R, 3, 2, 3, 2)), WRT(0), ATTRS(AI("axis", 1))},
    {.op = "Squeeze", IN(T(R, 3, 2, 1, 3), TV(I, 1, 1, 1)), WRT(0)},
    {.op = "Unsqueeze", IN(X23, TV(I, 1, 1, 1)), WRT(0)},
    {.op = "Concat", IN(X23, T(R, 2, 2, 2)), WRT(0, 1), ATTRS(AI("axis", 1))},
    {.op = "Split", IN(T(R, 2, 2, 4), TV(I, 1, 2, 1, 3)), WRT(0),
     ATTRS(AI("axis", 1)), .n_out = 2},
    {.op = "Slice", IN(T(R, 2, 4, 5), TV(I, 1, 2, 1, 0), TV(I, 1, 2, 3, 4)),
     WRT(0)},
    {.op = "Gather", IN(T(R, 2, 4, 3), TV(I, 1, 3, 3, 1, 3)), WRT(0),
     ATTRS(AI("axis", 0))},
    {.op = "Expand", IN(T(R, 2, 3, 1), TV(I, 1, 3, 2, 3, 4)), WRT(0)},
    {.op = "ReduceSum", IN(T(R, 3, 2, 3, 2), TV(I, 1, 1, 1)), WRT(0),
     ATTRS(AI("keepdims", 0))},
    {.op = "ReduceMean", IN(T(R, 3, 2, 3, 2)), WRT(0),
     ATTRS(AL("axes", ax_last))},
    {.op = "ReduceMax", IN(T(D, 3, 2, 3, 2)), WRT(0), ATTRS(AL("axes", ax1))},
    {.op = "Softmax", IN(T(R, 2, 3, 4)), WRT(0), ATTRS(AI("axis", -1))},
    {.op = "LogSoftmax", IN(T(R, 2, 3, 4)), WRT(0), ATTRS(AI("axis", -1))},
    {.op = "Conv", .label = "pads 1",
     IN(T(R, 4, 1, 2, 5, 5), T(R, 4, 3, 2, 3, 3), T(R, 1, 3)), WRT(0, 1, 2),
     ATTRS(AL("kernel_shape", k3), AL("pads", p1))},
    {.op = "Conv", .label = "stride 2 group 2",
     IN(T(R, 4, 1, 4, 5, 5), T(R, 4, 4, 2, 3, 3)), WRT(0, 1),
     ATTRS(AL("kernel_shape", k3), AL("strides", s2), AL("pads", p0),
           AI("group", 2))},
    {.op = "MaxPool", IN(T(D, 4, 1, 2, 4, 4)), WRT(0),
     ATTRS(AL("kernel_shape", k2), AL("strides", s2))},
    {.op = "AveragePool", IN(T(R, 4, 1, 2, 4, 4)), WRT(0),
     ATTRS(AL("kernel_shape", k3), AL("strides", s1), AL("pads", p1),
           AI("count_include_pad", 1))},
    {.op = "GlobalAveragePool", IN(T(R, 4, 2, 3, 2, 2)), WRT(0)},
    {.op = "BatchNormalization",
     IN(T(R, 4, 3, 2, 2, 2), T(R, 1, 2), T(R, 1, 2), T(R, 1, 2), T(P, 1, 2)),
     WRT(0, 1, 2), ATTRS(AF("epsilon", 1e-5)), .n_out = 1},
    {.op = "LayerNormalization", IN(T(R, 3, 2, 3, 4), T(R, 1, 4), T(R, 1, 4)),
     WRT(0, 1, 2), ATTRS(AI("axis", -1), AF("epsilon", 1e-5))},
    /* training Dropout needs its mask output (bool: not part of the loss) */
    {.op = "Dropout", IN(T(R, 2, 3, 4), TV(F, 0, 0, 0.5)), WRT(0),
     .n_out = 2},
    {.op = "Cast", IN(X23), WRT(0), ATTRS(AI("to", POPC_DTYPE_F32))},
    {.domain = "popc", .op = "SumToShape", IN(X23), WRT(0),
     ATTRS(AL("shape", sh13))},
    {.domain = "popc", .op = "IpuPrintTensor", IN(X23), WRT(0),
     ATTRS(AS("title", "fd"))},
    {.domain = "popc", .op = "Nop", IN(X23), WRT(0)},
    {.domain = "popc", .op = "RecomputationCheckpoint", IN(X23), WRT(0)},
    {.op = "SoftmaxCrossEntropyLoss", .label = "mean",
     IN(T(R, 2, 3, 5), TV(I, 1, 3, 1, 0, 4)), WRT(0),
     ATTRS(AS("reduction", "mean"))},
    {.op = "SoftmaxCrossEntropyLoss", .label = "none",
     IN(T(R, 2, 3, 5), TV(I, 1, 3, 1, 0, 4)), WRT(0),
     ATTRS(AS("reduction", "none"))},
    {.op = "NegativeLogLikelihoodLoss", .label = "sum",
     IN(T(R, 2, 3, 5), TV(I, 1, 3, 2, 0, 4)), WRT(0),
     ATTRS(AS("reduction", "sum"))},
    {.domain = "popc", .op = "MseLoss", .label = "mean", IN(X23, X23),
     WRT(0, 1), ATTRS(AS("reduction", "mean"))},
    {.domain = "popc", .op = "MseLoss", .label = "none", IN(X23, X23),
     WRT(0, 1), ATTRS(AS("reduction", "none"))},
    {.domain = "popc", .op = "L1Loss", .label = "sum", IN(MM_A, MM_B),
     WRT(0, 1), ATTRS(AS("reduction", "sum"))},
    {.domain = "popc", .op = "IdentityLoss", .label = "sum", IN(X23), WRT(0),
     ATTRS(AI("reduction", 0))},
    {.domain = "popc", .op = "IdentityLoss", .label = "mean", IN(X23), WRT(0),
     ATTRS(AI("reduction", 1))},
    {.domain = "popc", .op = "IdentityLoss", .label = "none", IN(X23), WRT(0),
     ATTRS(AI("reduction", 2))},
};

static uint64_t rng_state = 12345;

static double uniform(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

static uint64_t case_seed(const fcase *k)
{
    uint64_t h = 1469598103934665603ull;
    const char *parts[3] = {k->domain, k->op, k->label};

    for (int p = 0; p < 3; p++)
        for (const char *c = parts[p]; c && *c; c++)
            h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return h;
}

static popc_tensor *make_input(const tin *t)
{
    popc_dtype dt = t->kind == I ? POPC_DTYPE_I64
                  : t->kind == B ? POPC_DTYPE_BOOL : POPC_DTYPE_F32;
    popc_tensor *x = NULL;
    int64_t n;

    if (!t->kind)
        return NULL;
    if (popc_tensor_new(dt, t->dims, t->rank, &x) != POPC_OK)
        return NULL;
    n = popc_tensor_numel(x);
    for (int64_t i = 0; i < n; i++) {
        void *d = popc_tensor_data(x);
        switch (t->kind) {
        case R: {
            double u = uniform();
            double m = 0.3 + (u < 0.5 ? u * 2 : (u - 0.5) * 2);
            ((float *)d)[i] = (float)(u < 0.5 ? -m : m);
            break;
        }
        case P:
            ((float *)d)[i] = (float)(0.5 + uniform());
            break;
        case D:
            break; /* below */
        case F:
            ((float *)d)[i] = (float)t->vals[i];
            break;
        case I:
            ((int64_t *)d)[i] = (int64_t)t->vals[i];
            break;
        case B:
            ((uint8_t *)d)[i] = t->vals[i] != 0;
            break;
        }
    }
    if (t->kind == D) {
        float *d = popc_tensor_data(x);
        for (int64_t i = 0; i < n; i++)
            d[i] = (float)(0.3 + 0.05 * (double)i);
        for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
            int64_t j = (int64_t)(uniform() * (double)(i + 1));
            float tmp = d[i];
            d[i] = d[j];
            d[j] = tmp;
        }
        for (int64_t i = 0; i < n; i++)
            if (uniform() < 0.5)
                d[i] = -d[i];
    }
    return x;
}

static int covered(const char *domain, const char *name)
{
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        if (strcmp(cases[c].domain ? cases[c].domain : "ai.onnx",
                   domain) == 0 &&
            strcmp(cases[c].op, name) == 0)
            return 1;
    return 0;
}

/* Each case is checked when a plugin provides its op with a gradient; an
** op without a case or gradient is listed. A wrong gradient fails, and
** so does a run that checked no case at all (the ops/ plugins were not
** found), since it would prove nothing. */
START_TEST(plugin_ops_match_finite_differences)
{
    popc_registry *reg;
    char why[1024], failures[8192] = "", missing[2048] = "";
    int checked = 0, absent = 0, failed = 0;

    OK(popc_registry_global(&reg));
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const fcase *k = &cases[c];
        const popc_op_def *def = popc_registry_find_op(reg, k->domain, k->op,
                                                       0);
        popc_tensor *in[5] = {0};
        popc_status st;

        /* the test-only stand-ins do not count as plugin ops */
        if (!def || !def->grad || testops_is_standin(def)) {
            absent++;
            snprintf(missing + strlen(missing),
                     sizeof missing - strlen(missing), " %s", k->op);
            continue;
        }
        /* inputs depend on the case alone, not on its place in the table */
        rng_state = case_seed(k);
        for (int i = 0; i < k->n_in; i++)
            in[i] = make_input(&k->in[i]);
        st = fd_check_op_ex(k->domain, k->op, in, k->n_in, k->wrt, k->n_wrt,
                            k->attrs, k->n_attrs, k->n_out, !k->inference,
                            1e-3, why, sizeof why);
        checked++;
        if (st != POPC_OK) {
            failed++;
            snprintf(failures + strlen(failures),
                     sizeof failures - strlen(failures), "\n  %s (%s): %s",
                     k->op, k->label ? k->label : "-", why);
        }
        for (int i = 0; i < k->n_in; i++)
            popc_tensor_free(in[i]);
    }
    fprintf(stderr, "autodiff: %d op cases checked by finite differences, "
            "%d not available%s%s\n", checked, absent, absent ? ":" : "",
            missing);
    for (int i = 0; i < popc_registry_op_count(reg); i++) {
        const popc_op_def *d = popc_registry_op_at(reg, i);
        if (d->grad && strcmp(d->domain, "test") && !covered(d->domain,
                                                             d->name))
            fprintf(stderr, "autodiff: op %s::%s has a gradient but no "
                    "finite-difference case here\n", d->domain, d->name);
    }
    ck_assert_msg(checked > 0, "no op gradient was checked: none of the "
                  "%d cases found its op with a gradient in the registry; "
                  "build ops/ and point POPC_PLUGIN_PATH at it (make check "
                  "does)", (int)(sizeof cases / sizeof cases[0]));
    ck_assert_msg(failed == 0, "%d op gradients disagree with finite "
                  "differences:%s", failed, failures);
}
END_TEST

static Suite *autodiff_suite(void)
{
    Suite *s = suite_create("autodiff");
    TCase *tc = tcase_create("core");
    TCase *to = tcase_create("ops");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, chain_exact_and_named);
    tcase_add_test(tc, seed_scales_gradients);
    tcase_add_test(tc, fan_out_is_summed);
    tcase_add_test(tc, absent_output_gradient);
    tcase_add_test(tc, unreachable_and_loss_itself);
    tcase_add_test(tc, no_gradient_on_path_rolls_back);
    tcase_add_test(tc, no_gradient_off_path_is_fine);
    tcase_add_test(tc, annotations_inherited);
    tcase_add_test(tc, unknown_shape_and_bad_args);
    tcase_add_test(tc, fd_checker_itself);
    suite_add_tcase(s, tc);
    tcase_add_checked_fixture(to, setup, teardown);
    tcase_set_timeout(to, 300);
    tcase_add_test(to, plugin_ops_match_finite_differences);
    suite_add_tcase(s, to);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(autodiff_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
