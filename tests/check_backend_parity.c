/* check_backend_parity.c - the ipumodel backend against the cpu oracle, in
** the spirit of ggml's test-backend-ops: every op of the math, tensor, nn,
** loss and popc plugins (listed from the registry) is built into a small
** graph and run through popc_model for inference (2 device iterations, 2
** replicas) and, when it has a gradient, for training (2 accumulation
** steps, 2 replicas, 2 runs of SGD with momentum), on cpu and on ipumodel
** with 2 and 3 worker threads. Outputs and every weight and buffer after
** training must agree bitwise, or within 1e-6 relative where the two
** orders of a reduction may differ. The MLP and CNN of layers.h (BatchNorm,
** Dropout) and a two-IPU pipeline go through the same comparison. Ops
** without a hand-written case get a generic one (float inputs of one
** shape); an op neither covers fails the test by name.
**
** Shapes are chosen so that most nodes are large enough for ipumodel to
** split them over its workers (tests/check_ipumodel checks that it does).
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "popc/layers.h"
#include "popc/registry.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

#define B 4          /* micro-batch */
#define MAX_IN 8
#define MAX_OUT 8
#define STEPS 2
#define REL 1e-6
#define MAX_OPS 512

/* ---- building graphs ------------------------------------------------------------ */

typedef struct bld {
    popc_graph *g;
    popc_layers *L;
    int n_in;
    double lo[MAX_IN], hi[MAX_IN]; /* floats: uniform [lo, hi); ints [0, hi) */
    int coarse[MAX_IN];            /* floats: multiples of 0.5 (ties) */
    int loss;                      /* training: the loss value; -1 */
    int pipelined;                 /* nodes on two IPUs */
} bld;

typedef struct pcase {
    const char *name;
    void (*build)(bld *b);
    int training;
} pcase;

static int input(bld *b, popc_dtype dt, const int64_t *dims, int rank,
                 double lo, double hi)
{
    char name[16];
    int v;

    ck_assert_int_lt(b->n_in, MAX_IN);
    snprintf(name, sizeof name, "in%d", b->n_in);
    OK(popc_graph_add_input(b->g, name, dt, dims, rank, &v));
    b->lo[b->n_in] = lo;
    b->hi[b->n_in] = hi;
    b->coarse[b->n_in] = 0;
    b->n_in++;
    return v;
}

/* A float input [B, 64, 64]. */
static int in3(bld *b, double lo, double hi)
{
    int64_t d[3] = {B, 64, 64};
    return input(b, POPC_DTYPE_F32, d, 3, lo, hi);
}

static uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t key, int64_t i)
{
    return (double)(mix(key ^ mix((uint64_t)i)) >> 11) * 0x1.0p-53;
}

static popc_tensor *filled(const int64_t *dims, int rank, double lo,
                           double hi, uint64_t key)
{
    popc_tensor *t = NULL;
    float *p;

    OK(popc_tensor_new(POPC_DTYPE_F32, dims, rank, &t));
    p = popc_tensor_data(t);
    for (int64_t i = 0; i < popc_tensor_numel(t); i++)
        p[i] = (float)(lo + (hi - lo) * uniform(key, i));
    return t;
}

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int weight(bld *b, const char *name, const int64_t *dims, int rank,
                  double lo, double hi)
{
    popc_tensor *t = filled(dims, rank, lo, hi, hash(name));
    int v;

    OK(popc_graph_add_initializer(b->g, name, t, 1, &v));
    popc_tensor_free(t);
    return v;
}

static int const_i64(bld *b, const int64_t *vals, int64_t n)
{
    popc_tensor *t = NULL;
    int v;

    OK(popc_tensor_from_data(POPC_DTYPE_I64, &n, 1, vals, &t));
    OK(popc_graph_add_constant(b->g, NULL, t, &v));
    popc_tensor_free(t);
    return v;
}

static int const_f32(bld *b, float x)
{
    popc_tensor *t = NULL;
    int v;

    OK(popc_tensor_from_data(POPC_DTYPE_F32, NULL, 0, &x, &t));
    OK(popc_graph_add_constant(b->g, NULL, t, &v));
    popc_tensor_free(t);
    return v;
}

static popc_attr attr_i(const char *name, int64_t v)
{
    popc_attr a;

    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = POPC_ATTR_INT;
    a.i = v;
    return a;
}

static popc_attr attr_f(const char *name, double v)
{
    popc_attr a;

    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = POPC_ATTR_FLOAT;
    a.f = v;
    return a;
}

static popc_attr attr_ints(const char *name, const int64_t *v, int64_t n)
{
    popc_attr a;

    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = POPC_ATTR_INTS;
    a.ints = v;
    a.n = n;
    return a;
}

static popc_attr attr_s(const char *name, const char *s)
{
    popc_attr a;

    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = POPC_ATTR_STRING;
    a.s = s;
    return a;
}

static int nodes_n(bld *b, const char *domain, const char *op,
                   const int *in, int n_in, const popc_attr *attrs,
                   int n_attrs, int *out, int n_out)
{
    return popc_graph_add_node(b->g, domain, op, 0, in, n_in, out, n_out,
                               attrs, n_attrs, NULL, NULL) == POPC_OK;
}

static int node(bld *b, const char *domain, const char *op, const int *in,
                int n_in, const popc_attr *attrs, int n_attrs)
{
    int y = -1;

    ck_assert_msg(nodes_n(b, domain, op, in, n_in, attrs, n_attrs, &y, 1),
                  "%s: %s", op, popc_last_error());
    return y;
}

static int node1(bld *b, const char *op, int x)
{
    return node(b, NULL, op, &x, 1, NULL, 0);
}

static int node2(bld *b, const char *op, int x, int y)
{
    int in[2] = {x, y};
    return node(b, NULL, op, in, 2, NULL, 0);
}

static void output(bld *b, int v)
{
    OK(popc_graph_add_output(b->g, v));
}

/* y is an output and its mean the loss. */
static void mean_loss(bld *b, int y)
{
    output(b, y);
    OK(popc_nn_identity_loss(b->L, y, "mean", &b->loss));
    output(b, b->loss);
}

/* h = x + w (w broadcast over the batch, trainable): gradients flow into
** w through whatever follows. */
static int trained(bld *b, double lo, double hi)
{
    int64_t d[2] = {64, 64};
    int x = in3(b, lo, hi);
    int w = weight(b, "w", d, 2, 0.0, 0.1);

    return node2(b, "Add", x, w);
}

/* ---- cases: math ------------------------------------------------------------------ */

static const char *const binary_ops[] = {"Add", "Sub", "Mul", "Div", "Pow"};
static const char *const unary_ops[] = {
    "Neg", "Abs", "Sqrt", "Exp", "Log", "Relu", "Sigmoid", "Tanh",
    "Identity", "Gelu"};
static const char *const compare_ops[] = {
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};

static int case_arg; /* which op of a table the generic builders take */

static void b_binary(bld *b)
{
    int h = trained(b, 0.5, 1.5);
    int z = in3(b, 0.5, 2.0);

    mean_loss(b, node2(b, binary_ops[case_arg], h, z));
}

static void b_sum(bld *b)
{
    int h = trained(b, -1.0, 1.0);
    int in[3] = {h, in3(b, -1.0, 1.0), in3(b, -1.0, 1.0)};

    mean_loss(b, node(b, NULL, "Sum", in, 3, NULL, 0));
}

static void b_unary(bld *b)
{
    const char *op = unary_ops[case_arg];
    int positive = !strcmp(op, "Sqrt") || !strcmp(op, "Log");
    int h = trained(b, positive ? 0.5 : -2.0, 2.0);

    mean_loss(b, node1(b, op, h));
}

static void b_gelu_tanh(bld *b)
{
    int h = trained(b, -2.0, 2.0);
    popc_attr a = attr_s("approximate", "tanh");

    mean_loss(b, node(b, NULL, "Gelu", &h, 1, &a, 1));
}

static void b_leaky(bld *b)
{
    int h = trained(b, -1.0, 1.0);
    popc_attr a = attr_f("alpha", 0.1);

    mean_loss(b, node(b, NULL, "LeakyRelu", &h, 1, &a, 1));
}

static void b_clip(bld *b)
{
    int h = trained(b, -1.0, 1.0);
    int in[3] = {h, const_f32(b, -0.5f), const_f32(b, 0.4f)};

    mean_loss(b, node(b, NULL, "Clip", in, 3, NULL, 0));
}

static void b_dropout(bld *b)
{
    int h = trained(b, -1.0, 1.0), y;

    OK(popc_nn_dropout(b->L, h, 0.25, &y));
    mean_loss(b, y);
}

static void b_compare(bld *b)
{
    int x = in3(b, -1.0, 1.0), z = in3(b, -1.0, 1.0);

    b->coarse[0] = b->coarse[1] = 1;
    output(b, node2(b, compare_ops[case_arg], x, z));
}

static void b_not_where(bld *b)
{
    int h = trained(b, -1.0, 1.0);
    int z = in3(b, -1.0, 1.0);
    int c = node2(b, "Less", in3(b, -1.0, 1.0), z);
    int in[3] = {node1(b, "Not", c), h, z};

    output(b, c);
    mean_loss(b, node(b, NULL, "Where", in, 3, NULL, 0));
}

static void b_cast(bld *b)
{
    int x = in3(b, -100.0, 100.0);
    popc_attr to = attr_i("to", POPC_DTYPE_I32);
    int i = node(b, NULL, "Cast", &x, 1, &to, 1);

    to.i = POPC_DTYPE_F32;
    output(b, i);
    output(b, node(b, NULL, "Cast", &i, 1, &to, 1));
}

static void b_constant(bld *b)
{
    int64_t d[2] = {64, 64};
    popc_tensor *t = filled(d, 2, -1.0, 1.0, 7);
    popc_view v = popc_tensor_view(t);
    popc_attr a;
    int c, x = in3(b, -1.0, 1.0);

    memset(&a, 0, sizeof a);
    a.name = "value";
    a.type = POPC_ATTR_TENSOR;
    a.tensor = &v;
    c = node(b, NULL, "Constant", NULL, 0, &a, 1);
    popc_tensor_free(t);
    output(b, node2(b, "Mul", x, c));
}

/* ---- cases: tensor ---------------------------------------------------------------- */

static void b_reshape(bld *b)
{
    int64_t shape[2] = {B, 64 * 64};
    int h = trained(b, -1.0, 1.0);

    mean_loss(b, node2(b, "Reshape", h, const_i64(b, shape, 2)));
}

static void b_flatten(bld *b)
{
    int h = trained(b, -1.0, 1.0);
    popc_attr a = attr_i("axis", 1);

    mean_loss(b, node(b, NULL, "Flatten", &h, 1, &a, 1));
}

static void b_squeeze(bld *b)
{
    int64_t ax = 1;
    int h = trained(b, -1.0, 1.0);
    int u = node2(b, "Unsqueeze", h, const_i64(b, &ax, 1));

    mean_loss(b, node2(b, "Squeeze", node1(b, "Tanh", u),
                       const_i64(b, &ax, 1)));
}

static void b_expand(bld *b)
{
    int64_t d[3] = {B, 1, 64}, wd[2] = {1, 64}, shape[3] = {B, 64, 64};
    int x = input(b, POPC_DTYPE_F32, d, 3, -1.0, 1.0);
    int w = weight(b, "w", wd, 2, -0.1, 0.1);
    int e = node2(b, "Expand", node2(b, "Add", x, w),
                  const_i64(b, shape, 3));

    mean_loss(b, node2(b, "Mul", e, in3(b, -1.0, 1.0)));
}

static void b_shape_argmax(bld *b)
{
    int x = in3(b, -1.0, 1.0);
    popc_attr a[2] = {attr_i("axis", 2), attr_i("keepdims", 0)};

    output(b, node1(b, "Shape", x));
    output(b, node(b, NULL, "ArgMax", &x, 1, a, 2));
}

static void b_transpose(bld *b)
{
    int64_t perm[3] = {0, 2, 1};
    int h = trained(b, -1.0, 1.0);
    popc_attr a = attr_ints("perm", perm, 3);
    int t = node(b, NULL, "Transpose", &h, 1, &a, 1);

    mean_loss(b, node2(b, "Mul", t, in3(b, -1.0, 1.0)));
}

static void b_concat_split(bld *b)
{
    int64_t sizes[2] = {48, 80};
    int h = trained(b, -1.0, 1.0);
    int in[2] = {h, in3(b, -1.0, 1.0)}, parts[2], c;
    popc_attr a = attr_i("axis", 2);

    c = node(b, NULL, "Concat", in, 2, &a, 1);
    in[0] = c;
    in[1] = const_i64(b, sizes, 2);
    ck_assert_msg(nodes_n(b, NULL, "Split", in, 2, &a, 1, parts, 2), "%s",
                  popc_last_error());
    output(b, parts[1]);
    mean_loss(b, node1(b, "Tanh", parts[0]));
}

static void b_gather(bld *b)
{
    int64_t td[2] = {100, 64}, id[2] = {B, 48};
    int table = weight(b, "table", td, 2, -1.0, 1.0);
    int idx = input(b, POPC_DTYPE_I32, id, 2, 0.0, 100.0);
    int in[2] = {table, idx};

    mean_loss(b, node1(b, "Tanh", node(b, NULL, "Gather", in, 2, NULL, 0)));
}

static void b_gather_axis(bld *b)
{
    int64_t id[1] = {B};
    int x = in3(b, -1.0, 1.0);
    int idx = input(b, POPC_DTYPE_I64, id, 1, 0.0, 64.0);
    popc_attr a = attr_i("axis", 2);
    int in[2] = {x, idx};

    output(b, node(b, NULL, "Gather", in, 2, &a, 1));
}

static void b_slice(bld *b)
{
    int64_t st[2] = {1, 3}, en[2] = {60, 64}, ax[2] = {1, 2}, sp[2] = {1, 2};
    int h = trained(b, -1.0, 1.0);
    int in[5] = {h, const_i64(b, st, 2), const_i64(b, en, 2),
                 const_i64(b, ax, 2), const_i64(b, sp, 2)};

    mean_loss(b, node(b, NULL, "Slice", in, 5, NULL, 0));
}

static void b_reduce(bld *b)
{
    int64_t ax2 = 2, ax1 = 1;
    int h = trained(b, -1.0, 1.0);
    popc_attr a[2] = {attr_ints("axes", &ax1, 1), attr_i("keepdims", 0)};
    int sum = node2(b, "ReduceSum", h, const_i64(b, &ax2, 1));
    int mean = node(b, NULL, "ReduceMean", &h, 1, a, 1);
    int max, in[2];

    a[0] = attr_ints("axes", &ax2, 1);
    max = node(b, NULL, "ReduceMax", &h, 1, a, 2);
    output(b, sum);
    output(b, mean);
    in[0] = node1(b, "Tanh", max);
    in[1] = node1(b, "Tanh", node1(b, "Flatten", mean));
    mean_loss(b, node2(b, "Add", in[0], node2(b, "Mul", in[1], in[1])));
}

/* ---- cases: nn and losses -------------------------------------------------------- */

static void b_matmul(bld *b)
{
    int64_t wd[2] = {64, 96};
    int h = trained(b, -1.0, 1.0);
    int w = weight(b, "w2", wd, 2, -0.2, 0.2);
    int bm = node2(b, "MatMul", in3(b, -1.0, 1.0), h);

    output(b, bm);
    mean_loss(b, node1(b, "Tanh", node2(b, "MatMul", h, w)));
}

static void b_gemm(bld *b)
{
    int64_t d[2] = {B * 8, 256}, ad[2] = {256, 64};
    int x = input(b, POPC_DTYPE_F32, d, 2, -1.0, 1.0), y, in[3];
    popc_attr a[4] = {attr_i("transA", 1), attr_i("transB", 1),
                      attr_f("alpha", 0.5), attr_f("beta", 2.0)};

    OK(popc_nn_linear(b->L, "fc", x, 256, 128, 1, &y));
    in[0] = input(b, POPC_DTYPE_F32, ad, 2, -1.0, 1.0);
    in[1] = x;
    in[2] = const_f32(b, 0.25f);
    output(b, node(b, NULL, "Gemm", in, 3, a, 4));
    mean_loss(b, node1(b, "Sigmoid", y));
}

static void b_conv(bld *b)
{
    int64_t d[4] = {B, 4, 18, 18};
    int x = input(b, POPC_DTYPE_F32, d, 4, -1.0, 1.0), y, z;

    OK(popc_nn_conv2d(b->L, "c1", x, 4, 8, 3, 2, 1, 1, 2, 1, &y));
    OK(popc_nn_conv2d(b->L, "c2", y, 8, 6, 3, 1, 2, 2, 1, 0, &z));
    mean_loss(b, node1(b, "Tanh", z));
}

static void b_pool(bld *b)
{
    int64_t d[4] = {B, 8, 20, 20};
    int x = input(b, POPC_DTYPE_F32, d, 4, -1.0, 1.0), c, m, a, gp, s;

    OK(popc_nn_conv2d(b->L, "c", x, 8, 8, 3, 1, 1, 1, 1, 1, &c));
    OK(popc_nn_maxpool2d(b->L, c, 3, 2, 1, &m));
    OK(popc_nn_avgpool2d(b->L, m, 2, 0, 1, &a));
    OK(popc_nn_global_avgpool(b->L, a, &gp));
    output(b, a);
    s = node2(b, "Add", node1(b, "Flatten", gp),
              node1(b, "ReduceMean", node1(b, "Flatten", m)));
    mean_loss(b, node1(b, "Tanh", s));
}

static void b_norms(bld *b)
{
    int64_t d[4] = {B, 6, 24, 24};
    int x = input(b, POPC_DTYPE_F32, d, 4, -2.0, 3.0), bn, ln, sm, lsm;

    OK(popc_nn_batchnorm2d(b->L, "bn", x, 6, 1e-5, 0.1, &bn));
    OK(popc_nn_layernorm(b->L, "ln", bn, 24, 1e-5, &ln));
    OK(popc_nn_softmax(b->L, ln, 3, 0, &sm));
    OK(popc_nn_softmax(b->L, ln, 2, 1, &lsm));
    output(b, bn);
    mean_loss(b, node2(b, "Mul", sm, lsm));
}

static void b_losses(bld *b)
{
    int64_t xd[2] = {B * 4, 64}, td[2] = {B * 4, 10}, ld[1] = {B * 4};
    int x = input(b, POPC_DTYPE_F32, xd, 2, -1.0, 1.0);
    int lab = input(b, POPC_DTYPE_I32, ld, 1, 0.0, 10.0);
    int t = input(b, POPC_DTYPE_F32, td, 2, -1.0, 1.0);
    int y, ce, lp, nll, mse, l1, in[4];

    OK(popc_nn_linear(b->L, "fc", x, 64, 10, 1, &y));
    OK(popc_nn_cross_entropy(b->L, y, lab, "mean", &ce));
    OK(popc_nn_softmax(b->L, y, 1, 1, &lp));
    OK(popc_nn_nll_loss(b->L, lp, lab, "sum", &nll));
    OK(popc_nn_mse_loss(b->L, node1(b, "Tanh", y), t, "mean", &mse));
    OK(popc_nn_l1_loss(b->L, node1(b, "Sigmoid", y), t, "sum", &l1));
    in[0] = ce;
    in[1] = nll;
    in[2] = mse;
    in[3] = l1;
    output(b, ce);
    mean_loss(b, node(b, NULL, "Sum", in, 4, NULL, 0));
}

static void b_popc_ops(bld *b)
{
    int h = trained(b, -1.0, 1.0);
    popc_attr t = attr_s("title", "parity");
    int p = node(b, "popc", "IpuPrintTensor", &h, 1, &t, 1);
    int n = node(b, "popc", "Nop", &p, 1, NULL, 0);
    int r = node(b, "popc", "RecomputationCheckpoint", &n, 1, NULL, 0);

    mean_loss(b, node1(b, "Sigmoid", r));
}

/* ---- whole models ------------------------------------------------------------------ */

static void set_ipu(bld *b, int ipu)
{
    popc_annotations a = {.ipu = ipu, .stage = -1, .phase = -1,
                          .recompute = -1};

    if (b->pipelined)
        OK(popc_graph_set_annotations(b->g, &a));
}

/* Fashion-MNIST sized MLP: 784 -> 256 ReLU Dropout -> 10, cross entropy. */
static void b_mlp(bld *b)
{
    int64_t xd[2] = {16, 784}, ld[1] = {16};
    int x = input(b, POPC_DTYPE_F32, xd, 2, 0.0, 1.0);
    int lab = input(b, POPC_DTYPE_I32, ld, 1, 0.0, 10.0);
    int h, r, d, o;

    set_ipu(b, 0);
    OK(popc_nn_linear(b->L, "fc1", x, 784, 256, 1, &h));
    OK(popc_nn_activation(b->L, "Relu", h, 0.0, &r));
    OK(popc_nn_dropout(b->L, r, 0.2, &d));
    set_ipu(b, 1);
    OK(popc_nn_linear(b->L, "fc2", d, 256, 10, 1, &o));
    OK(popc_nn_cross_entropy(b->L, o, lab, "mean", &b->loss));
    output(b, o);
    output(b, b->loss);
}

static void b_mlp_pipe(bld *b)
{
    b->pipelined = 1;
    b_mlp(b);
}

/* CNN: conv 1->8, BN, ReLU, maxpool; conv 8->16, BN, ReLU; global average
** pool; Dropout; linear 16 -> 10; cross entropy. */
static void b_cnn(bld *b)
{
    int64_t xd[4] = {8, 1, 28, 28}, ld[1] = {8};
    int x = input(b, POPC_DTYPE_F32, xd, 4, 0.0, 1.0);
    int lab = input(b, POPC_DTYPE_I32, ld, 1, 0.0, 10.0);
    int v;

    OK(popc_nn_conv2d(b->L, "conv1", x, 1, 8, 3, 1, 1, 1, 1, 1, &v));
    OK(popc_nn_batchnorm2d(b->L, "bn1", v, 8, 1e-5, 0.1, &v));
    OK(popc_nn_activation(b->L, "Relu", v, 0.0, &v));
    OK(popc_nn_maxpool2d(b->L, v, 2, 0, 0, &v));
    OK(popc_nn_conv2d(b->L, "conv2", v, 8, 16, 3, 1, 1, 1, 1, 1, &v));
    OK(popc_nn_batchnorm2d(b->L, "bn2", v, 16, 1e-5, 0.1, &v));
    OK(popc_nn_activation(b->L, "Relu", v, 0.0, &v));
    OK(popc_nn_global_avgpool(b->L, v, &v));
    OK(popc_nn_flatten(b->L, v, 1, &v));
    OK(popc_nn_dropout(b->L, v, 0.1, &v));
    OK(popc_nn_linear(b->L, "fc", v, 16, 10, 1, &v));
    OK(popc_nn_cross_entropy(b->L, v, lab, "mean", &b->loss));
    output(b, v);
    output(b, b->loss);
}

/* ---- running ---------------------------------------------------------------------- */

typedef struct result {
    int n_out, steps;
    popc_tensor *out[STEPS][MAX_OUT];
    int n_w;
    char *names[64];
    popc_tensor *w[64];
} result;

static void result_free(result *r)
{
    for (int s = 0; s < STEPS; s++)
        for (int i = 0; i < MAX_OUT; i++)
            popc_tensor_free(r->out[s][i]);
    for (int i = 0; i < r->n_w; i++) {
        free(r->names[i]);
        popc_tensor_free(r->w[i]);
    }
    memset(r, 0, sizeof *r);
}

/* Coverage: "domain::Name" of every op built into a graph. */
static char covered[MAX_OPS][80];
static int n_covered;

static void cover(const char *domain, const char *op)
{
    char key[80];

    snprintf(key, sizeof key, "%s::%s", domain ? domain : "ai.onnx", op);
    for (int i = 0; i < n_covered; i++)
        if (!strcmp(covered[i], key))
            return;
    if (n_covered < MAX_OPS)
        snprintf(covered[n_covered++], sizeof covered[0], "%s", key);
}

static int is_covered(const char *key)
{
    for (int i = 0; i < n_covered; i++)
        if (!strcmp(covered[i], key))
            return 1;
    return 0;
}

static void cover_graph(const popc_graph *g)
{
    for (int k = 0; k < popc_graph_n_nodes(g); k++)
        cover(popc_graph_node_domain(g, k), popc_graph_node_op(g, k));
}

/* The forward ops and those autodiff adds for the weights. */
static void cover_case(const bld *b)
{
    popc_graph *c = NULL;
    int wrt[64], grads[64], n = 0;

    cover_graph(b->g);
    if (b->loss < 0)
        return;
    OK(popc_graph_clone(b->g, &c));
    for (int v = 0; v < popc_graph_n_values(c) && n < 64; v++)
        if (popc_graph_value_kind(c, v) == POPC_VALUE_INITIALIZER &&
            popc_graph_value_trainable(c, v))
            wrt[n++] = v;
    OK(popc_graph_gradients(c, b->loss, wrt, n, 1.0, grads));
    cover_graph(c);
    popc_graph_free(c);
}

static void build_case(const pcase *c, bld *b)
{
    memset(b, 0, sizeof *b);
    b->loss = -1;
    OK(popc_graph_new(c->name, &b->g));
    OK(popc_layers_new(b->g, 11, &b->L));
    c->build(b);
    ck_assert_msg(!c->training || b->loss >= 0, "%s: no loss", c->name);
}

/* The combined batch of input i: rows x R x DI x GA of the graph's. */
static popc_tensor *make_input(const bld *b, int i, int64_t times,
                               uint64_t key)
{
    popc_view v = popc_graph_value_info(b->g, popc_graph_input(b->g, i));
    popc_tensor *t = NULL;
    int64_t n;

    v.dims[0] *= times;
    OK(popc_tensor_new(v.dtype, v.dims, v.rank, &t));
    n = popc_tensor_numel(t);
    for (int64_t e = 0; e < n; e++) {
        double u = uniform(key + (uint64_t)i * 7919u, e);
        double x = b->lo[i] + (b->hi[i] - b->lo[i]) * u;

        switch (v.dtype) {
        case POPC_DTYPE_F32:
            ((float *)popc_tensor_data(t))[e] =
                b->coarse[i] ? (float)(floor(x * 2.0) / 2.0) : (float)x;
            break;
        case POPC_DTYPE_I32:
            ((int32_t *)popc_tensor_data(t))[e] = (int32_t)(b->hi[i] * u);
            break;
        case POPC_DTYPE_I64:
            ((int64_t *)popc_tensor_data(t))[e] = (int64_t)(b->hi[i] * u);
            break;
        default:
            ((uint8_t *)popc_tensor_data(t))[e] = u < 0.5;
            break;
        }
    }
    return t;
}

static popc_model *make_model(const pcase *c, const bld *b,
                              const char *backend, int threads)
{
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    OK(popc_options_set_int(o, "threads", threads));
    OK(popc_options_set_int(o, "replicationFactor", 2));
    OK(popc_options_set_int(o, "randomSeed", 42));
    if (c->training) {
        OK(popc_options_set_int(o, "Training.gradientAccumulation",
                                b->pipelined ? 4 : 2));
        OK(popc_optimizer_new("sgd", &opt));
        OK(popc_optimizer_set(opt, "lr", 0.05));
        OK(popc_optimizer_set(opt, "momentum", 0.9));
        OK(popc_model_new_training(b->g, o, opt, &m));
    } else {
        OK(popc_options_set_int(o, "deviceIterations", 2));
        OK(popc_model_new_inference(b->g, o, &m));
    }
    popc_optimizer_free(opt);
    popc_options_free(o);
    return m;
}

static void run_case(const pcase *c, const char *backend, int threads,
                     result *r)
{
    bld b;
    popc_model *m;
    popc_tensor *in[MAX_IN];
    int64_t times;

    build_case(c, &b);
    if (!strcmp(backend, "cpu"))
        cover_case(&b);
    m = make_model(c, &b, backend, threads);
    times = 2 * (c->training ? (b.pipelined ? 4 : 2) : 2);
    r->n_out = popc_graph_n_outputs(b.g);
    r->steps = c->training ? STEPS : 1;
    ck_assert_int_le(r->n_out, MAX_OUT);
    for (int s = 0; s < r->steps; s++) {
        for (int i = 0; i < b.n_in; i++)
            in[i] = make_input(&b, i, times, mix(1000u + (uint64_t)s));
        ck_assert_msg(popc_model_run(m, in, b.n_in, r->out[s], r->n_out) ==
                          POPC_OK,
                      "%s on %s (%d threads): %s", c->name, backend, threads,
                      popc_last_error());
        for (int i = 0; i < b.n_in; i++)
            popc_tensor_free(in[i]);
    }
    if (c->training) {
        r->n_w = popc_model_n_tensors(m);
        ck_assert_int_le(r->n_w, 64);
        for (int i = 0; i < r->n_w; i++) {
            const popc_tensor *t = NULL;
            r->names[i] = strdup(popc_model_tensor_name(m, i));
            OK(popc_model_get_weight(m, r->names[i], &t));
            OK(popc_tensor_clone(t, &r->w[i]));
        }
    }
    popc_model_free(m);
    popc_layers_free(b.L);
    popc_graph_free(b.g);
}

/* ---- comparing ---------------------------------------------------------------------- */

/* 0: bitwise equal; 1: within REL; fails the test otherwise. */
static int compare(const char *what, const popc_tensor *a,
                   const popc_tensor *b)
{
    int64_t n = popc_tensor_numel(a);

    ck_assert_msg(popc_tensor_dtype(a) == popc_tensor_dtype(b) &&
                      popc_tensor_rank(a) == popc_tensor_rank(b) &&
                      n == popc_tensor_numel(b),
                  "%s: dtype or shape differs", what);
    if (!memcmp(popc_tensor_cdata(a), popc_tensor_cdata(b),
                popc_tensor_nbytes(a)))
        return 0;
    ck_assert_msg(popc_tensor_dtype(a) == POPC_DTYPE_F32,
                  "%s: %s values differ", what,
                  popc_dtype_name(popc_tensor_dtype(a)));
    for (int64_t i = 0; i < n; i++) {
        double x = ((const float *)popc_tensor_cdata(a))[i];
        double y = ((const float *)popc_tensor_cdata(b))[i];
        double scale = fabs(x) > fabs(y) ? fabs(x) : fabs(y);

        ck_assert_msg(x == y || fabs(x - y) <= REL * scale,
                      "%s: element %lld: cpu %.9g, ipumodel %.9g", what,
                      (long long)i, x, y);
    }
    return 1;
}

static int compare_results(const pcase *c, const result *ref,
                           const result *got, int threads)
{
    char what[256];
    int close = 0;

    for (int s = 0; s < ref->steps; s++)
        for (int i = 0; i < ref->n_out; i++) {
            snprintf(what, sizeof what, "%s (%d threads) run %d output %d",
                     c->name, threads, s, i);
            close |= compare(what, ref->out[s][i], got->out[s][i]);
        }
    ck_assert_int_eq(ref->n_w, got->n_w);
    for (int i = 0; i < ref->n_w; i++) {
        ck_assert_str_eq(ref->names[i], got->names[i]);
        snprintf(what, sizeof what, "%s (%d threads) weight %s", c->name,
                 threads, ref->names[i]);
        close |= compare(what, ref->w[i], got->w[i]);
    }
    return close;
}

static void check_case(const pcase *c)
{
    result ref, got;
    int close[2];

    memset(&ref, 0, sizeof ref);
    run_case(c, "cpu", 1, &ref);
    for (int threads = 2; threads <= 3; threads++) {
        memset(&got, 0, sizeof got);
        run_case(c, "ipumodel", threads, &got);
        close[threads - 2] = compare_results(c, &ref, &got, threads);
        result_free(&got);
    }
    result_free(&ref);
    printf("parity %-22s %-9s ipumodel 2 threads: %s, 3 threads: %s\n",
           c->name, c->training ? "training" : "inference",
           close[0] ? "within 1e-6" : "bitwise",
           close[1] ? "within 1e-6" : "bitwise");
    fflush(stdout);
}

/* ---- the cases ------------------------------------------------------------------------- */

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const pcase cases[] = {
    {"sum", b_sum, 1},
    {"gelu_tanh", b_gelu_tanh, 1},
    {"leaky_relu", b_leaky, 1},
    {"clip", b_clip, 1},
    {"dropout", b_dropout, 1},
    {"not_where", b_not_where, 1},
    {"cast", b_cast, 0},
    {"constant", b_constant, 0},
    {"reshape", b_reshape, 1},
    {"flatten", b_flatten, 1},
    {"squeeze", b_squeeze, 1},
    {"expand", b_expand, 1},
    {"shape_argmax", b_shape_argmax, 0},
    {"transpose", b_transpose, 1},
    {"concat_split", b_concat_split, 1},
    {"gather", b_gather, 1},
    {"gather_axis", b_gather_axis, 0},
    {"slice", b_slice, 1},
    {"reduce", b_reduce, 1},
    {"matmul", b_matmul, 1},
    {"gemm", b_gemm, 1},
    {"conv", b_conv, 1},
    {"pool", b_pool, 1},
    {"norms", b_norms, 1},
    {"losses", b_losses, 1},
    {"popc_ops", b_popc_ops, 1},
    {"cnn", b_cnn, 1},
};

START_TEST(binary_ops_match)
{
    pcase c = {binary_ops[_i], b_binary, 1};

    case_arg = _i;
    check_case(&c);
}
END_TEST

START_TEST(unary_ops_match)
{
    pcase c = {unary_ops[_i], b_unary, 1};

    case_arg = _i;
    check_case(&c);
}
END_TEST

START_TEST(compare_ops_match)
{
    pcase c = {compare_ops[_i], b_compare, 0};

    case_arg = _i;
    check_case(&c);
}
END_TEST

START_TEST(op_cases_match)
{
    check_case(&cases[_i]);
}
END_TEST

START_TEST(mlp_inference_and_training_match)
{
    pcase train = {"mlp", b_mlp, 1}, infer = {"mlp_infer", b_mlp, 0};

    check_case(&train);
    check_case(&infer);
}
END_TEST

START_TEST(pipelined_mlp_matches)
{
    pcase train = {"mlp_pipelined", b_mlp_pipe, 1};
    pcase infer = {"mlp_pipelined_infer", b_mlp_pipe, 0};

    check_case(&train);
    check_case(&infer);
}
END_TEST

/* ---- coverage ---------------------------------------------------------------------------- */

static const char *const families[] = {"math", "tensor", "nn", "loss",
                                       "popc"};

static int is_family(const char *plugin)
{
    for (int i = 0; i < N_OF(families); i++)
        if (!strcmp(plugin, families[i]))
            return 1;
    return 0;
}

static const popc_op_def *generic_op;

/* Float inputs [B, 64, 64] in [0.5, 1.5) and the op with no attributes. */
static void b_generic(bld *b)
{
    const popc_op_def *d = generic_op;
    int in[3], out[MAX_OUT], n_in = d->min_inputs > 0 ? d->min_inputs : 1;
    int n_out = d->min_outputs > 0 ? d->min_outputs : 1;

    ck_assert_int_le(n_in, 3);
    ck_assert_int_le(n_out, MAX_OUT);
    for (int i = 0; i < n_in; i++)
        in[i] = in3(b, 0.5, 1.5);
    ck_assert_msg(nodes_n(b, d->domain, d->name, in, n_in, NULL, 0, out,
                          n_out),
                  "no parity case for %s::%s and the generic one (%d float "
                  "inputs [%d, 64, 64]) does not build: %s; add a case to "
                  "tests/check_backend_parity.c", d->domain, d->name, n_in,
                  B, popc_last_error());
    for (int j = 0; j < n_out; j++)
        output(b, out[j]);
}

static void cover_builder(void (*build)(bld *), int training, int arg)
{
    pcase c = {"coverage", build, training};
    bld b;

    case_arg = arg;
    build_case(&c, &b);
    cover_case(&b);
    popc_layers_free(b.L);
    popc_graph_free(b.g);
}

/* Every op of the five families is built by a hand-written case (forward
** or by autodiff), or goes through a generic one here. */
START_TEST(every_op_is_covered)
{
    popc_registry *reg = NULL;
    int generic = 0;

    OK(popc_registry_global(&reg));
    for (int i = 0; i < N_OF(binary_ops); i++)
        cover_builder(b_binary, 1, i);
    for (int i = 0; i < N_OF(unary_ops); i++)
        cover_builder(b_unary, 1, i);
    for (int i = 0; i < N_OF(compare_ops); i++)
        cover_builder(b_compare, 0, i);
    for (int i = 0; i < N_OF(cases); i++)
        cover_builder(cases[i].build, cases[i].training, 0);
    cover_builder(b_mlp, 1, 0);
    for (int p = 0; p < popc_registry_plugin_count(reg); p++) {
        popc_plugin_record rec = popc_registry_plugin_at(reg, p);

        if (!is_family(rec.name))
            continue;
        for (int j = 0; j < rec.n_ops; j++) {
            const char *item = popc_registry_plugin_item(reg, p, j);
            const char *sep = strstr(item, "::"), *at = strchr(item, '@');
            char domain[64], name[64], key[80];
            pcase c = {NULL, b_generic, 0};

            ck_assert_ptr_nonnull(sep);
            snprintf(domain, sizeof domain, "%.*s", (int)(sep - item), item);
            snprintf(name, sizeof name, "%.*s",
                     at ? (int)(at - sep - 2) : (int)strlen(sep + 2),
                     sep + 2);
            snprintf(key, sizeof key, "%s::%s", domain, name);
            if (is_covered(key))
                continue;
            generic_op = popc_registry_find_op(reg, domain, name, 0);
            ck_assert_ptr_nonnull(generic_op);
            c.name = name;
            check_case(&c);
            generic++;
        }
    }
    printf("parity: %d ops of the math, tensor, nn, loss and popc plugins "
           "covered, %d of them by generic cases\n", n_covered + generic,
           generic);
}
END_TEST

static Suite *parity_suite(void)
{
    Suite *s = suite_create("backend_parity");
    TCase *ops = tcase_create("ops");
    TCase *models = tcase_create("models");
    TCase *cov = tcase_create("coverage");

    tcase_set_timeout(ops, 600);
    tcase_add_loop_test(ops, binary_ops_match, 0, N_OF(binary_ops));
    tcase_add_loop_test(ops, unary_ops_match, 0, N_OF(unary_ops));
    tcase_add_loop_test(ops, compare_ops_match, 0, N_OF(compare_ops));
    tcase_add_loop_test(ops, op_cases_match, 0, N_OF(cases));
    suite_add_tcase(s, ops);
    tcase_set_timeout(models, 600);
    tcase_add_test(models, mlp_inference_and_training_match);
    tcase_add_test(models, pipelined_mlp_matches);
    suite_add_tcase(s, models);
    tcase_set_timeout(cov, 600);
    tcase_add_test(cov, every_op_is_covered);
    suite_add_tcase(s, cov);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(parity_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
