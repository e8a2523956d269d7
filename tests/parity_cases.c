/* parity_cases.c - the graphs of the backend parity test (contract in
** parity_cases.h). Each builder makes a small graph around one op family;
** training cases route a trainable weight through the ops so that autodiff
** adds their gradient ops too, and end in a loss. Shapes are chosen so
** that most nodes are large enough for ipumodel to split them.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "tests/parity_cases.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())
#define B PC_B

/* ---- building graphs ---------------------------------------------------- */

static int input(bld *b, popc_dtype dt, const int64_t *dims, int rank,
                 double lo, double hi)
{
    char name[16];
    int v;

    ck_assert_int_lt(b->n_in, PC_MAX_IN);
    snprintf(name, sizeof name, "in%d", b->n_in);
    OK(popc_graph_add_input(b->g, name, dt, dims, rank, &v));
    b->lo[b->n_in] = lo;
    b->hi[b->n_in] = hi;
    b->coarse[b->n_in] = 0;
    b->n_in++;
    return v;
}

/* A float input [B, 64, 64]. */
int pc_in3(bld *b, double lo, double hi)
{
    int64_t d[3] = {B, 64, 64};
    return input(b, POPC_DTYPE_F32, d, 3, lo, hi);
}

uint64_t pc_mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double pc_uniform(uint64_t key, int64_t i)
{
    return (double)(pc_mix(key ^ pc_mix((uint64_t)i)) >> 11) * 0x1.0p-53;
}

static popc_tensor *filled(const int64_t *dims, int rank, double lo,
                           double hi, uint64_t key)
{
    popc_tensor *t = NULL;
    float *p;

    OK(popc_tensor_new(POPC_DTYPE_F32, dims, rank, &t));
    p = popc_tensor_data(t);
    for (int64_t i = 0; i < popc_tensor_numel(t); i++)
        p[i] = (float)(lo + (hi - lo) * pc_uniform(key, i));
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

int pc_nodes_n(bld *b, const char *domain, const char *op,
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

    ck_assert_msg(pc_nodes_n(b, domain, op, in, n_in, attrs, n_attrs, &y, 1),
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

void pc_output(bld *b, int v)
{
    OK(popc_graph_add_output(b->g, v));
}

/* y is an output and its mean the loss. */
static void mean_loss(bld *b, int y)
{
    pc_output(b, y);
    OK(popc_nn_identity_loss(b->L, y, "mean", &b->loss));
    pc_output(b, b->loss);
}

/* h = x + w (w broadcast over the batch, trainable): gradients flow into
** w through whatever follows. */
static int trained(bld *b, double lo, double hi)
{
    int64_t d[2] = {64, 64};
    int x = pc_in3(b, lo, hi);
    int w = weight(b, "w", d, 2, 0.0, 0.1);

    return node2(b, "Add", x, w);
}

/* ---- cases: math -------------------------------------------------------- */

const char *const pc_binary_ops[] = {"Add", "Sub", "Mul", "Div", "Pow"};
const char *const pc_unary_ops[] = {
    "Neg", "Abs", "Sqrt", "Exp", "Log", "Relu", "Sigmoid", "Tanh",
    "Identity", "Gelu"};
const char *const pc_compare_ops[] = {
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};

int pc_case_arg; /* which op of a table the generic builders take */

void pc_b_binary(bld *b)
{
    int h = trained(b, 0.5, 1.5);
    int z = pc_in3(b, 0.5, 2.0);

    mean_loss(b, node2(b, pc_binary_ops[pc_case_arg], h, z));
}

static void b_sum(bld *b)
{
    int h = trained(b, -1.0, 1.0);
    int in[3] = {h, pc_in3(b, -1.0, 1.0), pc_in3(b, -1.0, 1.0)};

    mean_loss(b, node(b, NULL, "Sum", in, 3, NULL, 0));
}

void pc_b_unary(bld *b)
{
    const char *op = pc_unary_ops[pc_case_arg];
    int positive = !strcmp(op, "Sqrt") || !strcmp(op, "Log");
    int h = trained(b, positive ? 0.5 : -2.0, 2.0);

    mean_loss(b, node1(b, op, h));
}

static void b_gelu_tanh(bld *b)
{
    int h = trained(b, -2.0, 2.0);
    popc_attr a = popc_attr_make_string("approximate", "tanh");

    mean_loss(b, node(b, NULL, "Gelu", &h, 1, &a, 1));
}

static void b_leaky(bld *b)
{
    int h = trained(b, -1.0, 1.0);
    popc_attr a = popc_attr_make_float("alpha", 0.1);

    mean_loss(b, node(b, NULL, "LeakyRelu", &h, 1, &a, 1));
}

static void b_clip(bld *b)
{
    int h = trained(b, -1.0, 1.0);
    int in[3] = {h, const_f32(b, -0.5f), const_f32(b, 0.4f)};

    mean_loss(b, node(b, NULL, "Clip", in, 3, NULL, 0));
}

/* gradients of wide.c's ops (popc::WideGrad), PRelu's slope trained */
static void b_wide_train(bld *b)
{
    int64_t sd[1] = {64};
    int h = trained(b, -1.0, 1.0);
    int slope = weight(b, "slope", sd, 1, 0.05, 0.3);
    int y = node2(b, "PRelu", h, slope);

    y = node2(b, "Add", y, node1(b, "Softsign", h));
    y = node2(b, "Add", y, node1(b, "Atan", h));
    mean_loss(b, node2(b, "Add", y, node1(b, "HardSwish", h)));
}

/* Mod has no default for floats: fmod = 1 is required */
static void b_mod(bld *b)
{
    int in[2] = {pc_in3(b, -4.0, 4.0), pc_in3(b, 0.5, 2.0)};
    popc_attr a = popc_attr_make_int("fmod", 1);

    pc_output(b, node(b, NULL, "Mod", in, 2, &a, 1));
}

static int cast_to(bld *b, int x, int64_t onnx_type)
{
    popc_attr a = popc_attr_make_int("to", onnx_type);

    return node(b, NULL, "Cast", &x, 1, &a, 1);
}

/* unsigned shifts; uint8 (ONNX type 2) operands */
static void b_bitshift(bld *b)
{
    int x = cast_to(b, pc_in3(b, 0.0, 255.0), 2);
    int n = cast_to(b, pc_in3(b, 0.0, 9.0), 2);
    popc_attr l = popc_attr_make_string("direction", "LEFT"),
              r = popc_attr_make_string("direction", "RIGHT");
    int in[2] = {x, n};

    pc_output(b, node(b, NULL, "BitShift", in, 2, &l, 1));
    pc_output(b, node(b, NULL, "BitShift", in, 2, &r, 1));
}

/* And, Or, Xor of two comparisons */
static void b_logic(bld *b)
{
    int p = node2(b, "Less", pc_in3(b, -1.0, 1.0), pc_in3(b, -1.0, 1.0));
    int q = node2(b, "Less", pc_in3(b, -1.0, 1.0), pc_in3(b, -1.0, 1.0));

    pc_output(b, node2(b, "And", p, q));
    pc_output(b, node2(b, "Or", p, q));
    pc_output(b, node2(b, "Xor", p, q));
}

static int const_i64n(bld *b, const int64_t *v, const int64_t *dims,
                      int rank)
{
    popc_tensor *t = NULL;
    int id;

    OK(popc_tensor_from_data(POPC_DTYPE_I64, dims, rank, v, &t));
    OK(popc_graph_add_constant(b->g, NULL, t, &id));
    popc_tensor_free(t);
    return id;
}

static int const_bool(bld *b, const uint8_t *v, const int64_t *dims)
{
    popc_tensor *t = NULL;
    int id;

    OK(popc_tensor_from_data(POPC_DTYPE_BOOL, dims, 1, v, &t));
    OK(popc_graph_add_constant(b->g, NULL, t, &id));
    popc_tensor_free(t);
    return id;
}

static int const_scalar_i64(bld *b, int64_t v)
{
    return const_i64n(b, &v, NULL, 0);
}

/* ConstantOfShape, Range and EyeLike */
static void b_generate(bld *b)
{
    int64_t shape[2] = {4, 8}, d1[1] = {2}, xd[2] = {B, 64};
    int in[3], x = input(b, POPC_DTYPE_F32, xd, 2, -1.0, 1.0);

    pc_output(b, node1(b, "ConstantOfShape", const_i64n(b, shape, d1, 1)));
    in[0] = const_scalar_i64(b, 1);
    in[1] = const_scalar_i64(b, 20);
    in[2] = const_scalar_i64(b, 3);
    pc_output(b, node(b, NULL, "Range", in, 3, NULL, 0));
    pc_output(b, node1(b, "EyeLike", x));
    pc_output(b, node1(b, "HannWindow", const_scalar_i64(b, 10)));
    pc_output(b, node1(b, "HammingWindow", const_scalar_i64(b, 7)));
    pc_output(b, node1(b, "BlackmanWindow", const_scalar_i64(b, 9)));
}

/* GatherElements, ScatterElements, Scatter, GatherND, ScatterND, OneHot,
** Compress */
static void b_indexing(bld *b)
{
    int64_t id3[3] = {B, 64, 64}, idn[3] = {B, 5, 1}, oh[2] = {B, 8};
    int64_t sidx[2] = {1, 3}, sd[2] = {2, 1}, two[1] = {2}, c64[1] = {64};
    int64_t onoff[2] = {-2, 5};
    uint8_t cond[64];
    int x = pc_in3(b, -1.0, 1.0), u = pc_in3(b, -1.0, 1.0);
    int idx = input(b, POPC_DTYPE_I64, id3, 3, 0.0, 64.0);
    int ind = input(b, POPC_DTYPE_I64, idn, 3, 0.0, 64.0);
    int hot = input(b, POPC_DTYPE_I64, oh, 2, 0.0, 10.0);
    popc_attr ax2 = popc_attr_make_int("axis", 2),
              bd = popc_attr_make_int("batch_dims", 1);
    popc_attr red[2] = {popc_attr_make_int("axis", 2),
                        popc_attr_make_string("reduction", "add")};
    int in[3] = {x, idx, u};

    pc_output(b, node(b, NULL, "GatherElements", in, 2, &ax2, 1));
    pc_output(b, node(b, NULL, "ScatterElements", in, 3, red, 2));
    pc_output(b, node(b, NULL, "Scatter", in, 3, &ax2, 1));
    in[1] = ind;
    pc_output(b, node(b, NULL, "GatherND", in, 2, &bd, 1));
    in[1] = const_i64n(b, sidx, sd, 2);
    in[2] = node(b, NULL, "GatherND", in, 2, NULL, 0);
    pc_output(b, node(b, NULL, "ScatterND", in, 3, NULL, 0));
    in[0] = hot;
    in[1] = const_scalar_i64(b, 10);
    in[2] = const_i64n(b, onoff, two, 1);
    pc_output(b, node(b, NULL, "OneHot", in, 3, NULL, 0));
    for (int i = 0; i < 64; i++)
        cond[i] = i % 3 == 1;
    in[0] = x;
    in[1] = const_bool(b, cond, c64);
    pc_output(b, node(b, NULL, "Compress", in, 2, &ax2, 1));
}

/* Tile, DepthToSpace, SpaceToDepth, Pad */
static void b_arrange(bld *b)
{
    int64_t d4[4] = {B, 8, 4, 4}, reps[3] = {1, 1, 2}, three[1] = {3};
    int64_t pads[6] = {0, 1, 2, 0, 3, 1}, six[1] = {6};
    int x = pc_in3(b, -1.0, 1.0);
    int y = input(b, POPC_DTYPE_F32, d4, 4, -1.0, 1.0);
    popc_attr bs[2] = {popc_attr_make_int("blocksize", 2),
                       popc_attr_make_string("mode", "CRD")};
    popc_attr refl = popc_attr_make_string("mode", "reflect");
    int in[2] = {x, const_i64n(b, reps, three, 1)};

    pc_output(b, node(b, NULL, "Tile", in, 2, NULL, 0));
    pc_output(b, node(b, NULL, "DepthToSpace", &y, 1, bs, 1));
    pc_output(b, node(b, NULL, "DepthToSpace", &y, 1, bs, 2));
    pc_output(b, node(b, NULL, "SpaceToDepth", &y, 1, bs, 1));
    in[1] = const_i64n(b, pads, six, 1);
    pc_output(b, node(b, NULL, "Pad", in, 2, &refl, 1));
    pc_output(b, node(b, NULL, "Pad", in, 2, NULL, 0));
}

/* CumSum, TopK, ReverseSequence */
static void b_scan(bld *b)
{
    int64_t lens[B], nb[1] = {B};
    int x = pc_in3(b, -1.0, 1.0);
    popc_attr excl[2] = {popc_attr_make_int("exclusive", 1),
                         popc_attr_make_int("reverse", 1)};
    popc_attr rs[2] = {popc_attr_make_int("batch_axis", 0),
                       popc_attr_make_int("time_axis", 1)};
    int in[2] = {x, -1}, out[2];

    in[1] = const_scalar_i64(b, 2);
    pc_output(b, node(b, NULL, "CumSum", in, 2, excl, 2));
    in[1] = const_scalar_i64(b, 5);
    ck_assert(pc_nodes_n(b, NULL, "TopK", in, 2, NULL, 0, out, 2));
    pc_output(b, out[0]);
    pc_output(b, out[1]);
    for (int i = 0; i < B; i++)
        lens[i] = 1 + 13 * i;
    in[1] = const_i64n(b, lens, nb, 1);
    pc_output(b, node(b, NULL, "ReverseSequence", in, 2, rs, 2));
}

/* 3-D Conv and pools (direct loops) and a strided, grouped ConvTranspose */
static void b_spatial_nd(bld *b)
{
    int64_t x5[5] = {B, 4, 5, 6, 5}, w5[5] = {6, 2, 3, 2, 3};
    int64_t x4[4] = {B, 4, 5, 6}, wt[4] = {4, 3, 3, 2};
    int x = input(b, POPC_DTYPE_F32, x5, 5, -1.0, 1.0);
    int w = input(b, POPC_DTYPE_F32, w5, 5, -1.0, 1.0);
    int y = input(b, POPC_DTYPE_F32, x4, 4, -1.0, 1.0);
    int v = input(b, POPC_DTYPE_F32, wt, 4, -1.0, 1.0);
    int64_t k[3] = {2, 3, 2}, st[2] = {2, 1}, op[2] = {1, 0};
    popc_attr conv[2] = {
        popc_attr_make_int("group", 2),
        popc_attr_make_ints("pads", (int64_t[]){1, 0, 1, 0, 1, 1}, 6)};
    popc_attr pool[2] = {popc_attr_make_ints("kernel_shape", k, 3),
                         popc_attr_make_int("count_include_pad", 1)};
    popc_attr ct[3] = {popc_attr_make_ints("strides", st, 2),
                       popc_attr_make_int("group", 2),
                       popc_attr_make_ints("output_padding", op, 2)};
    int in[2] = {x, w};

    pc_output(b, node(b, NULL, "Conv", in, 2, conv, 2));
    pc_output(b, node(b, NULL, "MaxPool", &x, 1, pool, 1));
    pc_output(b, node(b, NULL, "AveragePool", &x, 1, pool, 2));
    in[0] = y;
    in[1] = v;
    pc_output(b, node(b, NULL, "ConvTranspose", in, 2, ct, 3));
}

/* The graph optimizer's fused ops, built directly: FusedConv on the
** im2col path (strided, padded), the depthwise path and Winograd (two
** groups of 8 channels, 4 images: 8 units), with residuals and
** activations; FusedMatMul with a transposed weight, bias, residual and
** each transcendental activation. */
static void b_fused_conv(bld *b)
{
    int64_t xd[4] = {B, 16, 9, 9}, w1[4] = {6, 16, 3, 3}, zd[4] = {B, 6, 5, 5};
    int64_t wd[4] = {16, 1, 3, 3}, ww[4] = {16, 8, 3, 3}, bd[1] = {16};
    int64_t b6[1] = {6};
    int x = input(b, POPC_DTYPE_F32, xd, 4, -1.0, 1.0);
    int in[4];
    int64_t st2[2] = {2, 2}, p1[4] = {1, 1, 1, 1};
    double clip[2] = {-0.25, 0.5}, leak[1] = {0.1};
    popc_attr a[6];

    /* im2col: stride 2, pads 1, residual, Clip */
    in[0] = x;
    in[1] = input(b, POPC_DTYPE_F32, w1, 4, -0.3, 0.3);
    in[2] = input(b, POPC_DTYPE_F32, b6, 1, -0.5, 0.5);
    in[3] = input(b, POPC_DTYPE_F32, zd, 4, -1.0, 1.0);
    a[0] = popc_attr_make_ints("strides", st2, 2);
    a[1] = popc_attr_make_ints("pads", p1, 4);
    a[2] = popc_attr_make_string("activation", "Clip");
    a[3] = (popc_attr){.name = "activation_params", .type = POPC_ATTR_FLOATS,
                       .n = 2, .floats = clip};
    pc_output(b, node(b, "popc", "FusedConv", in, 4, a, 4));
    /* depthwise: LeakyRelu, no residual */
    in[1] = input(b, POPC_DTYPE_F32, wd, 4, -0.5, 0.5);
    in[2] = input(b, POPC_DTYPE_F32, bd, 1, -0.5, 0.5);
    a[0] = popc_attr_make_int("group", 16);
    a[1] = popc_attr_make_ints("pads", p1, 4);
    a[2] = popc_attr_make_string("activation", "LeakyRelu");
    a[3] = (popc_attr){.name = "activation_params", .type = POPC_ATTR_FLOATS,
                       .n = 1, .floats = leak};
    pc_output(b, node(b, "popc", "FusedConv", in, 3, a, 4));
    /* Winograd: 2 groups, residual x, Relu */
    in[1] = input(b, POPC_DTYPE_F32, ww, 4, -0.2, 0.2);
    in[3] = x;
    a[0] = popc_attr_make_int("group", 2);
    a[2] = popc_attr_make_string("activation", "Relu");
    pc_output(b, node(b, "popc", "FusedConv", in, 4, a, 3));
}

/* The blocked (NCHWc) ops the layout pass makes, built directly: the
** reorders with blocks of 16 and 8 (20 channels: a padded last block),
** BlockedConv group 1 (stride 2, pads 1, residual, Relu) and depthwise
** (Clip), BlockedPool max and global average. */
static void b_blocked(bld *b)
{
    int64_t xd[4] = {B, 20, 9, 9}, wd[6] = {2, 2, 3, 3, 16, 16};
    int64_t dd[4] = {2, 3, 3, 16}, bd[1] = {32}, zd[5] = {B, 2, 5, 5, 16};
    int64_t ch[2] = {20, 24}, cd[2] = {20, 20}, st2[2] = {2, 2};
    int64_t p1[4] = {1, 1, 1, 1}, k3[2] = {3, 3};
    double clip[2] = {-0.25, 0.5};
    int x = input(b, POPC_DTYPE_F32, xd, 4, -1.0, 1.0);
    popc_attr a[6];
    int in[4], xb, y;

    a[0] = popc_attr_make_int("block", 8);
    pc_output(b, node(b, "popc", "ToBlocked", &x, 1, a, 1));
    a[0] = popc_attr_make_int("block", 16);
    xb = node(b, "popc", "ToBlocked", &x, 1, a, 1);
    in[0] = xb;
    in[1] = input(b, POPC_DTYPE_F32, wd, 6, -0.3, 0.3);
    in[2] = input(b, POPC_DTYPE_F32, bd, 1, -0.5, 0.5);
    in[3] = input(b, POPC_DTYPE_F32, zd, 5, -1.0, 1.0);
    a[0] = popc_attr_make_ints("strides", st2, 2);
    a[1] = popc_attr_make_ints("pads", p1, 4);
    a[2] = popc_attr_make_ints("channels", ch, 2);
    a[3] = popc_attr_make_string("activation", "Relu");
    y = node(b, "popc", "BlockedConv", in, 4, a, 4);
    pc_output(b, y);
    a[0] = popc_attr_make_string("mode", "global_average");
    pc_output(b, node(b, "popc", "BlockedPool", &y, 1, a, 1));
    in[1] = input(b, POPC_DTYPE_F32, dd, 4, -0.5, 0.5);
    a[0] = popc_attr_make_int("group", 20);
    a[2] = popc_attr_make_ints("channels", cd, 2);
    a[3] = popc_attr_make_string("activation", "Clip");
    a[4] = (popc_attr){.name = "activation_params", .type = POPC_ATTR_FLOATS,
                       .n = 2, .floats = clip};
    y = node(b, "popc", "BlockedConv", in, 3, a, 5);
    a[0] = popc_attr_make_string("mode", "max");
    a[1] = popc_attr_make_ints("kernel_shape", k3, 2);
    a[2] = popc_attr_make_ints("strides", st2, 2);
    a[3] = popc_attr_make_ints("pads", p1, 4);
    y = node(b, "popc", "BlockedPool", &y, 1, a, 4);
    a[0] = popc_attr_make_int("channels", 20);
    pc_output(b, node(b, "popc", "FromBlocked", &y, 1, a, 1));
}

/* popc::Attention over 4 x 2 heads: 40 query rows (two blocks, one
** short) against 24 keys */
static void b_attention(bld *b)
{
    int64_t qd[4] = {B, 2, 40, 16}, kd[4] = {B, 2, 16, 24};
    int64_t vd[4] = {B, 2, 24, 8};
    int in[3] = {input(b, POPC_DTYPE_F32, qd, 4, -1.0, 1.0),
                 input(b, POPC_DTYPE_F32, kd, 4, -1.0, 1.0),
                 input(b, POPC_DTYPE_F32, vd, 4, -1.0, 1.0)};
    popc_attr a = popc_attr_make_float("scale", 0.25);

    pc_output(b, node(b, "popc", "Attention", in, 3, &a, 1));
}

static void b_fused_matmul(bld *b)
{
    int64_t ad[3] = {B, 7, 24}, md[2] = {10, 24}, yd[3] = {B, 7, 10};
    int64_t b10[1] = {10};
    int in[4];
    popc_attr a[3];

    /* transposed weight, bias, residual, each transcendental activation */
    in[0] = input(b, POPC_DTYPE_F32, ad, 3, -1.0, 1.0);
    in[1] = input(b, POPC_DTYPE_F32, md, 2, -0.5, 0.5);
    in[2] = input(b, POPC_DTYPE_F32, b10, 1, -0.5, 0.5);
    in[3] = input(b, POPC_DTYPE_F32, yd, 3, -1.0, 1.0);
    a[0] = popc_attr_make_int("trans_b", 1);
    a[1] = popc_attr_make_float("alpha", 0.5);
    for (int i = 0; i < 4; i++) {
        static const char *const acts[4] = {"Gelu", "SiLU", "Sigmoid",
                                            "Tanh"};

        a[2] = popc_attr_make_string("activation", acts[i]);
        pc_output(b, node(b, "popc", "FusedMatMul", in, i < 2 ? 4 : 3, a,
                          3));
    }
}

static void b_instance_norm(bld *b)
{
    int64_t c[1] = {64};
    int in[3] = {pc_in3(b, -1.0, 1.0),
                 input(b, POPC_DTYPE_F32, c, 1, 0.5, 1.5),
                 input(b, POPC_DTYPE_F32, c, 1, -1.0, 1.0)};

    pc_output(b, node(b, NULL, "InstanceNormalization", in, 3, NULL, 0));
}

/* quantize two operands, multiply them quantized, dequantize */
static void b_quant(bld *b)
{
    int64_t ad[3] = {B, 8, 16}, bd[3] = {B, 16, 4};
    int a = input(b, POPC_DTYPE_F32, ad, 3, -1.0, 1.0);
    int w = input(b, POPC_DTYPE_F32, bd, 3, -1.0, 1.0);
    int sa = const_f32(b, 0.01f), sb = const_f32(b, 0.02f);
    int sy = const_f32(b, 0.05f);
    int qa = node2(b, "QuantizeLinear", a, sa);
    int qb = node2(b, "QuantizeLinear", w, sb);
    int za = node(b, NULL, "QuantizeLinear", (int[]){const_f32(b, 0.5f), sa},
                  2, NULL, 0);
    int in[8] = {qa, sa, za, qb, sb, za, sy, za};
    int y = node(b, NULL, "QLinearMatMul", in, 8, NULL, 0);

    pc_output(b, node2(b, "DequantizeLinear", y, sy));
}

/* ai.onnx.preview.training updates of one tensor */
static void b_train_ops(bld *b)
{
    int x = pc_in3(b, -1.0, 1.0), g = pc_in3(b, -1.0, 1.0);
    int v = pc_in3(b, -1.0, 1.0), h = pc_in3(b, 0.0, 1.0);
    int r = const_f32(b, 0.1f), t = const_scalar_i64(b, 3);
    int in4[5] = {r, t, x, g, h}, in6[6] = {r, t, x, g, v, h}, out[3];
    popc_attr eps = popc_attr_make_float("epsilon", 1e-3);
    const char *dom = "ai.onnx.preview.training";

    ck_assert(pc_nodes_n(b, dom, "Adagrad", in4, 5, &eps, 1, out, 2));
    pc_output(b, out[0]);
    pc_output(b, out[1]);
    in4[4] = v;
    ck_assert(pc_nodes_n(b, dom, "Momentum", in4, 5, NULL, 0, out, 2));
    pc_output(b, out[0]);
    ck_assert(pc_nodes_n(b, dom, "Adam", in6, 6, &eps, 1, out, 3));
    pc_output(b, out[0]);
    pc_output(b, out[2]);
}

/* nearest, linear and cubic resizes of an image batch */
static void b_resize(bld *b)
{
    int64_t d4[4] = {B, 3, 7, 5}, four[1] = {4}, sizes[4] = {B, 3, 11, 8};
    int x = input(b, POPC_DTYPE_F32, d4, 4, -1.0, 1.0);
    popc_tensor *t = NULL;
    const float sc[4] = {1.0f, 1.0f, 2.0f, 1.5f};
    int scales, in[4];
    popc_attr lin[2] = {popc_attr_make_string("mode", "linear"),
                        popc_attr_make_string("coordinate_transformation_mode",
                               "align_corners")};
    popc_attr cub[2] = {popc_attr_make_string("mode", "cubic"),
                        popc_attr_make_int("exclude_outside", 1)};

    OK(popc_tensor_from_data(POPC_DTYPE_F32, four, 1, sc, &t));
    OK(popc_graph_add_constant(b->g, NULL, t, &scales));
    popc_tensor_free(t);
    in[0] = x;
    in[1] = -1;
    in[2] = scales;
    pc_output(b, node(b, NULL, "Resize", in, 3, NULL, 0));
    pc_output(b, node(b, NULL, "Resize", in, 3, lin, 2));
    in[2] = -1;
    in[3] = const_i64n(b, sizes, four, 1);
    pc_output(b, node(b, NULL, "Resize", in, 4, cub, 2));
}

/* bidirectional LSTM with peepholes */
static void b_recurrent(bld *b)
{
    int64_t xd[3] = {B, 3, 5};
    int64_t wl[3] = {2, 16, 5}, rl[3] = {2, 16, 4}, bl[2] = {2, 32};
    int64_t pl[2] = {2, 12};
    int x = input(b, POPC_DTYPE_F32, xd, 3, -1.0, 1.0);
    popc_attr lstm[3] = {popc_attr_make_int("hidden_size", 4),
                         popc_attr_make_string("direction", "bidirectional"),
                         popc_attr_make_int("layout", 1)};
    int in[8] = {x, input(b, POPC_DTYPE_F32, wl, 3, -0.5, 0.5),
                 input(b, POPC_DTYPE_F32, rl, 3, -0.5, 0.5),
                 input(b, POPC_DTYPE_F32, bl, 2, -0.5, 0.5), -1, -1, -1,
                 input(b, POPC_DTYPE_F32, pl, 2, -0.5, 0.5)};
    int out[3];

    ck_assert(pc_nodes_n(b, NULL, "LSTM", in, 8, lstm, 3, out, 3));
    pc_output(b, out[0]);
    pc_output(b, out[2]);
}

/* GRU (linear_before_reset) and RNN */
static void b_gru_rnn(bld *b)
{
    int64_t xd[3] = {B, 3, 5}, wg[3] = {1, 12, 5}, rg[3] = {1, 12, 4};
    int64_t wr[3] = {1, 4, 5}, rr[3] = {1, 4, 4};
    popc_attr gru[3] = {popc_attr_make_int("hidden_size", 4),
                        popc_attr_make_int("linear_before_reset", 1),
                        popc_attr_make_int("layout", 1)};
    int in[3], out[2];

    in[0] = input(b, POPC_DTYPE_F32, xd, 3, -1.0, 1.0);
    in[1] = input(b, POPC_DTYPE_F32, wg, 3, -0.5, 0.5);
    in[2] = input(b, POPC_DTYPE_F32, rg, 3, -0.5, 0.5);
    ck_assert(pc_nodes_n(b, NULL, "GRU", in, 3, gru, 3, out, 2));
    pc_output(b, out[1]);
    in[1] = input(b, POPC_DTYPE_F32, wr, 3, -0.5, 0.5);
    in[2] = input(b, POPC_DTYPE_F32, rr, 3, -0.5, 0.5);
    ck_assert(pc_nodes_n(b, NULL, "RNN", in, 3, gru, 1, out, 2));
    pc_output(b, out[0]);
}

/* LSTM (bidirectional, peepholes), GRU and RNN with trainable weights:
** the gradient ops popc::LSTMGrad, GRUGrad and RNNGrad */
static void b_recurrent_train(bld *b)
{
    int64_t xd[3] = {B, 3, 5};
    int64_t wl[3] = {2, 16, 5}, rl[3] = {2, 16, 4}, bl[2] = {2, 32};
    int64_t pl[2] = {2, 12}, wg[3] = {1, 12, 5}, rg[3] = {1, 12, 4};
    int64_t wr[3] = {1, 4, 5}, rr[3] = {1, 4, 4};
    int x = input(b, POPC_DTYPE_F32, xd, 3, -1.0, 1.0);
    popc_attr lstm[3] = {popc_attr_make_int("hidden_size", 4),
                         popc_attr_make_string("direction", "bidirectional"),
                         popc_attr_make_int("layout", 1)};
    popc_attr one[2] = {popc_attr_make_int("hidden_size", 4),
                        popc_attr_make_int("layout", 1)};
    int in[8] = {x, weight(b, "lw", wl, 3, -0.5, 0.5),
                 weight(b, "lr", rl, 3, -0.5, 0.5),
                 weight(b, "lb", bl, 2, -0.5, 0.5), -1, -1, -1,
                 weight(b, "lp", pl, 2, -0.5, 0.5)};
    int out[3], sum;

    ck_assert(pc_nodes_n(b, NULL, "LSTM", in, 8, lstm, 3, out, 3));
    sum = node1(b, "ReduceMean", out[0]);
    in[1] = weight(b, "gw", wg, 3, -0.5, 0.5);
    in[2] = weight(b, "gr", rg, 3, -0.5, 0.5);
    ck_assert(pc_nodes_n(b, NULL, "GRU", in, 3, one, 2, out, 2));
    sum = node2(b, "Add", sum, node1(b, "ReduceMean", out[0]));
    in[1] = weight(b, "rw", wr, 3, -0.5, 0.5);
    in[2] = weight(b, "rr", rr, 3, -0.5, 0.5);
    ck_assert(pc_nodes_n(b, NULL, "RNN", in, 3, one, 2, out, 2));
    sum = node2(b, "Add", sum, node1(b, "ReduceMean", out[0]));
    mean_loss(b, sum);
}

/* A subgraph with float inputs of the given shapes whose outputs are
** op(input k) for the listed (op, k) pairs; non-float inputs (Loop's
** iteration count and condition) come first when with_loop_head. */
static popc_graph *body(const char *name, int with_loop_head,
                        const int64_t *const *dims, const int *ranks,
                        int n_in, const char *const *ops, const int *args,
                        int n_out)
{
    popc_graph *g = NULL;
    int v[8], head = with_loop_head ? 2 : 0, out;

    OK(popc_graph_new(name, &g));
    if (with_loop_head) {
        OK(popc_graph_add_input(g, "iter", POPC_DTYPE_I64, NULL, 0, &v[0]));
        OK(popc_graph_add_input(g, "cond", POPC_DTYPE_BOOL, NULL, 0, &v[1]));
        OK(popc_graph_add_node(g, NULL, "Identity", 0, &v[1], 1, &out, 1,
                               NULL, 0, NULL, NULL));
        OK(popc_graph_add_output(g, out));
    }
    for (int i = 0; i < n_in; i++) {
        char in_name[16];

        snprintf(in_name, sizeof in_name, "x%d", i);
        OK(popc_graph_add_input(g, in_name, POPC_DTYPE_F32, dims[i], ranks[i],
                                &v[head + i]));
    }
    for (int j = 0; j < n_out; j++) {
        int in2[2] = {v[head + args[j]], v[head + (args[j] + 1) % n_in]};
        int binary = strcmp(ops[j], "Add") == 0;

        OK(popc_graph_add_node(g, NULL, ops[j], 0, in2, binary ? 2 : 1, &out,
                               1, NULL, 0, NULL, NULL));
        OK(popc_graph_add_output(g, out));
    }
    return g;
}

/* If (both branches, reading a captured value), Loop (3 iterations, one
** carried value, one scan output) and Scan (a running sum over the batch
** axis); training: their mean is the loss, so the unrolled gradients run */
static void flow_graphs(bld *b, int train)
{
    static const int64_t img[2] = {64, 64}, one[1] = {1};
    const int64_t *d1[1] = {img}, *d2[2] = {img, img};
    const int r1[1] = {2}, r2[2] = {2, 2};
    static const char *const neg[1] = {"Neg"}, *const tanh_[1] = {"Tanh"};
    static const char *const loop_ops[2] = {"Tanh", "Neg"};
    static const char *const scan_ops[2] = {"Add", "Tanh"};
    static const int a0[2] = {0, 0};
    static const uint8_t yes = 1, no = 0;
    int64_t xd[3] = {B, 64, 64};
    int x = input(b, POPC_DTYPE_F32, xd, 3, -1.0, 1.0);
    int w = weight(b, "img", img, 2, -1.0, 1.0), out[2], in[4];
    popc_graph *then_g = body("then", 0, d1, r1, 1, neg, a0, 1);
    popc_graph *else_g = body("else", 0, d1, r1, 1, tanh_, a0, 1);
    popc_graph *loop_g = body("loop", 1, d1, r1, 1, loop_ops, a0, 2);
    popc_graph *scan_g = body("scan", 0, d2, r2, 2, scan_ops, a0, 2);
    popc_attr ifa[3] = {{.name = "then_branch", .type = POPC_ATTR_GRAPH,
                         .graph = then_g},
                        {.name = "else_branch", .type = POPC_ATTR_GRAPH,
                         .graph = else_g},
                        popc_attr_make_int("__captures", 1)};
    popc_attr la = {.name = "body", .type = POPC_ATTR_GRAPH, .graph = loop_g};
    popc_attr sa[2] = {{.name = "body", .type = POPC_ATTR_GRAPH,
                        .graph = scan_g},
                       popc_attr_make_int("num_scan_inputs", 1)};

    in[0] = const_bool(b, &yes, one);
    in[1] = w;
    pc_output(b, node(b, NULL, "If", in, 2, ifa, 3));
    in[0] = const_bool(b, &no, one);
    pc_output(b, node(b, NULL, "If", in, 2, ifa, 3));
    in[0] = const_scalar_i64(b, 3);
    in[1] = -1;
    in[2] = w;
    ck_assert(pc_nodes_n(b, NULL, "Loop", in, 3, &la, 1, out, 2));
    pc_output(b, out[0]);
    pc_output(b, out[1]);
    in[0] = w;
    in[1] = x;
    ck_assert(pc_nodes_n(b, NULL, "Scan", in, 2, sa, 2, out, 2));
    if (!train) {
        pc_output(b, out[0]);
        pc_output(b, out[1]);
    } else {
        int y = node1(b, "ReduceMean", out[1]);

        in[0] = const_bool(b, &yes, one);
        in[1] = w;
        y = node2(b, "Add", y, node1(b, "ReduceMean",
                                     node(b, NULL, "If", in, 2, ifa, 3)));
        in[0] = const_scalar_i64(b, 3);
        in[1] = -1;
        in[2] = w;
        ck_assert(pc_nodes_n(b, NULL, "Loop", in, 3, &la, 1, out, 2));
        y = node2(b, "Add", y, node1(b, "ReduceMean", out[1]));
        mean_loss(b, y);
    }
    popc_graph_free(then_g);
    popc_graph_free(else_g);
    popc_graph_free(loop_g);
    popc_graph_free(scan_g);
}

/* Einsum, DFT and Det with trainable operands (their gradients: Einsum,
** popc::DFTGrad and popc::DetGrad) */
static void b_linalg_train(bld *b)
{
    int64_t ad[3] = {B, 3, 4}, wd[2] = {4, 4}, md[3] = {B, 3, 3};
    int x = input(b, POPC_DTYPE_F32, ad, 3, -1.0, 1.0);
    int w = weight(b, "ew", wd, 2, -0.5, 0.5);
    int m = input(b, POPC_DTYPE_F32, md, 3, -1.0, 1.0);
    int mw = weight(b, "dw", md + 1, 2, 0.5, 1.0);
    popc_attr eq = popc_attr_make_string("equation", "bij,jk->bik");
    int in[2] = {x, w}, y, d;

    y = node1(b, "ReduceMean", node(b, NULL, "Einsum", in, 2, &eq, 1));
    {
        int64_t sd[3] = {B, 6, 2};
        int sig = input(b, POPC_DTYPE_F32, sd, 3, -1.0, 1.0);
        int sw = weight(b, "sw", sd + 1, 2, -0.5, 0.5);
        int f = node1(b, "DFT", node2(b, "Add", sig, sw));

        y = node2(b, "Add", y, node1(b, "ReduceMean", node2(b, "Mul", f, f)));
    }
    d = node1(b, "Det", node2(b, "Add", m, mw));
    mean_loss(b, node2(b, "Add", y, node1(b, "ReduceMean", d)));
}

/* nn ops with new gradients, weights trained: ConvTranspose, Instance-
** Normalization, MeanVarianceNormalization, LRN, GlobalMaxPool, Resize,
** GridSample, MaxUnpool */
static void b_nn_train(bld *b)
{
    int64_t xd[4] = {B, 4, 6, 6}, wd[4] = {4, 2, 3, 3}, cd[1] = {4};
    int64_t gd[4] = {B, 3, 4, 2}, k2[2] = {2, 2}, four[1] = {4};
    int64_t s2[2] = {2, 2};
    int x = input(b, POPC_DTYPE_F32, xd, 4, -1.0, 1.0);
    int grid = input(b, POPC_DTYPE_F32, gd, 4, -0.9, 0.9);
    int w = weight(b, "ctw", wd, 4, -0.3, 0.3);
    int sc = weight(b, "ins", cd, 1, 0.5, 1.5), bi = weight(b, "inb", cd, 1,
                                                              -0.2, 0.2);
    int h = node2(b, "Add", x, weight(b, "xw", xd + 1, 3, -0.1, 0.1));
    popc_attr ct[2] = {popc_attr_make_ints("strides", s2, 2),
                       popc_attr_make_int("group", 2)};
    popc_attr lrn = popc_attr_make_int("size", 3);
    popc_attr lin = popc_attr_make_string("mode", "linear");
    popc_attr pool[2] = {popc_attr_make_ints("kernel_shape", k2, 2),
                         popc_attr_make_ints("strides", k2, 2)};
    static const float up[4] = {1.0f, 1.0f, 1.5f, 2.0f};
    popc_tensor *t = NULL;
    int in[4], out[2], y, scales;

    in[0] = h;
    in[1] = w;
    y = node1(b, "ReduceMean", node(b, NULL, "ConvTranspose", in, 2, ct, 2));
    in[1] = sc;
    in[2] = bi;
    y = node2(b, "Add", y, node1(b, "ReduceMean",
                                 node(b, NULL, "InstanceNormalization", in,
                                      3, NULL, 0)));
    y = node2(b, "Add", y, node1(b, "ReduceMean",
                                 node1(b, "MeanVarianceNormalization", h)));
    y = node2(b, "Add", y, node1(b, "ReduceMean",
                                 node(b, NULL, "LRN", &h, 1, &lrn, 1)));
    y = node2(b, "Add", y, node1(b, "ReduceMean",
                                 node1(b, "GlobalMaxPool", h)));
    OK(popc_tensor_from_data(POPC_DTYPE_F32, four, 1, up, &t));
    OK(popc_graph_add_constant(b->g, NULL, t, &scales));
    popc_tensor_free(t);
    in[1] = -1;
    in[2] = scales;
    y = node2(b, "Add", y, node1(b, "ReduceMean",
                                 node(b, NULL, "Resize", in, 3, &lin, 1)));
    in[1] = grid;
    y = node2(b, "Add", y, node1(b, "ReduceMean",
                                 node(b, NULL, "GridSample", in, 2, NULL,
                                      0)));
    {
        static const int64_t pads[8] = {0, 0, 1, 2, 0, 0, 2, 1};
        popc_attr reflect = popc_attr_make_string("mode", "reflect");
        int pin[2] = {h, const_i64(b, pads, 8)};

        y = node2(b, "Add", y, node1(b, "ReduceMean",
                                     node(b, NULL, "Pad", pin, 2, &reflect,
                                          1)));
    }
    ck_assert(pc_nodes_n(b, NULL, "MaxPool", &h, 1, pool, 2, out, 2));
    y = node2(b, "Add", y, node1(b, "ReduceMean",
                                 node(b, NULL, "MaxUnpool", out, 2, pool,
                                      2)));
    mean_loss(b, y);
}

static void b_flow(bld *b)
{
    flow_graphs(b, 0);
}

static void b_flow_train(bld *b)
{
    flow_graphs(b, 1);
}

static void b_einsum(bld *b)
{
    int64_t ad[3] = {B, 3, 4}, bd[3] = {B, 4, 5};
    int in[2] = {input(b, POPC_DTYPE_F32, ad, 3, -1.0, 1.0),
                 input(b, POPC_DTYPE_F32, bd, 3, -1.0, 1.0)};
    popc_attr mm = popc_attr_make_string("equation", "bij,bjk->bik");
    popc_attr tr = popc_attr_make_string("equation", "...ij->...ji");

    pc_output(b, node(b, NULL, "Einsum", in, 2, &mm, 1));
    pc_output(b, node(b, NULL, "Einsum", in, 1, &tr, 1));
}

/* GridSample (three modes and paddings) and MaxPool -> MaxUnpool */
static void b_sampling(bld *b)
{
    int64_t xd[4] = {B, 2, 6, 8}, gd[4] = {B, 5, 4, 2}, k[2] = {2, 2};
    int x = input(b, POPC_DTYPE_F32, xd, 4, -1.0, 1.0);
    int g = input(b, POPC_DTYPE_F32, gd, 4, -1.2, 1.2);
    popc_attr bil = popc_attr_make_string("padding_mode", "border");
    popc_attr near[2] = {popc_attr_make_string("mode", "nearest"),
                         popc_attr_make_string("padding_mode", "reflection")};
    popc_attr cub[2] = {popc_attr_make_string("mode", "bicubic"),
                        popc_attr_make_int("align_corners", 1)};
    popc_attr pool[2] = {popc_attr_make_ints("kernel_shape", k, 2),
                         popc_attr_make_ints("strides", k, 2)};
    int in[2] = {x, g}, out[2];

    pc_output(b, node(b, NULL, "GridSample", in, 2, &bil, 1));
    pc_output(b, node(b, NULL, "GridSample", in, 2, near, 2));
    pc_output(b, node(b, NULL, "GridSample", in, 2, cub, 2));
    ck_assert(pc_nodes_n(b, NULL, "MaxPool", &x, 1, pool, 2, out, 2));
    pc_output(b, node(b, NULL, "MaxUnpool", out, 2, pool, 2));
}

/* ConvInteger and QLinearConv of quantized operands; a DFT */
static void b_int_conv(bld *b)
{
    int64_t xd[4] = {B, 2, 6, 5}, wd[4] = {3, 2, 3, 2}, sd[3] = {B, 8, 1};
    int x = input(b, POPC_DTYPE_F32, xd, 4, -1.0, 1.0);
    int w = input(b, POPC_DTYPE_F32, wd, 4, -1.0, 1.0);
    int sig = input(b, POPC_DTYPE_F32, sd, 3, -1.0, 1.0);
    int sx = const_f32(b, 0.01f), sw = const_f32(b, 0.02f);
    int sy = const_f32(b, 0.05f);
    int qx = node2(b, "QuantizeLinear", x, sx);
    int qw = node2(b, "QuantizeLinear", w, sw);
    int z = node(b, NULL, "QuantizeLinear", (int[]){const_f32(b, 0.3f), sx},
                 2, NULL, 0);
    int64_t pads[4] = {1, 0, 1, 1};
    popc_attr pa = popc_attr_make_ints("pads", pads, 4);
    int ci[4] = {qx, qw, z, z};
    int ql[8] = {qx, sx, z, qw, sw, z, sy, z};

    pc_output(b, node(b, NULL, "ConvInteger", ci, 4, &pa, 1));
    pc_output(b, node(b, NULL, "QLinearConv", ql, 8, &pa, 1));
    pc_output(b, node1(b, "DFT", sig));
}

static void b_dropout(bld *b)
{
    int h = trained(b, -1.0, 1.0), y;

    OK(popc_nn_dropout(b->L, h, 0.25, &y));
    mean_loss(b, y);
}

void pc_b_compare(bld *b)
{
    int x = pc_in3(b, -1.0, 1.0), z = pc_in3(b, -1.0, 1.0);

    b->coarse[0] = b->coarse[1] = 1;
    pc_output(b, node2(b, pc_compare_ops[pc_case_arg], x, z));
}

static void b_not_where(bld *b)
{
    int h = trained(b, -1.0, 1.0);
    int z = pc_in3(b, -1.0, 1.0);
    int c = node2(b, "Less", pc_in3(b, -1.0, 1.0), z);
    int in[3] = {node1(b, "Not", c), h, z};

    pc_output(b, c);
    mean_loss(b, node(b, NULL, "Where", in, 3, NULL, 0));
}

static void b_cast(bld *b)
{
    int x = pc_in3(b, -100.0, 100.0);
    popc_attr to = popc_attr_make_int("to", 6); /* ONNX INT32 */
    int i = node(b, NULL, "Cast", &x, 1, &to, 1);

    to.i = 1; /* ONNX FLOAT */
    pc_output(b, i);
    pc_output(b, node(b, NULL, "Cast", &i, 1, &to, 1));
}

static void b_constant(bld *b)
{
    int64_t d[2] = {64, 64};
    popc_tensor *t = filled(d, 2, -1.0, 1.0, 7);
    popc_view v = popc_tensor_view(t);
    popc_attr a;
    int c, x = pc_in3(b, -1.0, 1.0);

    memset(&a, 0, sizeof a);
    a.name = "value";
    a.type = POPC_ATTR_TENSOR;
    a.tensor = &v;
    c = node(b, NULL, "Constant", NULL, 0, &a, 1);
    popc_tensor_free(t);
    pc_output(b, node2(b, "Mul", x, c));
}

/* ---- cases: tensor ------------------------------------------------------ */

static void b_reshape(bld *b)
{
    int64_t shape[2] = {B, 64 * 64};
    int h = trained(b, -1.0, 1.0);

    mean_loss(b, node2(b, "Reshape", h, const_i64(b, shape, 2)));
}

static void b_flatten(bld *b)
{
    int h = trained(b, -1.0, 1.0);
    popc_attr a = popc_attr_make_int("axis", 1);

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

    mean_loss(b, node2(b, "Mul", e, pc_in3(b, -1.0, 1.0)));
}

static void b_shape_argmax(bld *b)
{
    int x = pc_in3(b, -1.0, 1.0);
    popc_attr a[2] = {popc_attr_make_int("axis", 2),
                      popc_attr_make_int("keepdims", 0)};

    pc_output(b, node1(b, "Shape", x));
    pc_output(b, node(b, NULL, "ArgMax", &x, 1, a, 2));
}

static void b_transpose(bld *b)
{
    int64_t perm[3] = {0, 2, 1};
    int h = trained(b, -1.0, 1.0);
    popc_attr a = popc_attr_make_ints("perm", perm, 3);
    int t = node(b, NULL, "Transpose", &h, 1, &a, 1);

    mean_loss(b, node2(b, "Mul", t, pc_in3(b, -1.0, 1.0)));
}

static void b_concat_split(bld *b)
{
    int64_t sizes[2] = {48, 80};
    int h = trained(b, -1.0, 1.0);
    int in[2] = {h, pc_in3(b, -1.0, 1.0)}, parts[2], c;
    popc_attr a = popc_attr_make_int("axis", 2);

    c = node(b, NULL, "Concat", in, 2, &a, 1);
    in[0] = c;
    in[1] = const_i64(b, sizes, 2);
    ck_assert_msg(pc_nodes_n(b, NULL, "Split", in, 2, &a, 1, parts, 2), "%s",
                  popc_last_error());
    pc_output(b, parts[1]);
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
    int x = pc_in3(b, -1.0, 1.0);
    int idx = input(b, POPC_DTYPE_I64, id, 1, 0.0, 64.0);
    popc_attr a = popc_attr_make_int("axis", 2);
    int in[2] = {x, idx};

    pc_output(b, node(b, NULL, "Gather", in, 2, &a, 1));
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
    popc_attr a[2] = {popc_attr_make_ints("axes", &ax1, 1),
                      popc_attr_make_int("keepdims", 0)};
    int sum = node2(b, "ReduceSum", h, const_i64(b, &ax2, 1));
    int mean = node(b, NULL, "ReduceMean", &h, 1, a, 1);
    int max, in[2];

    a[0] = popc_attr_make_ints("axes", &ax2, 1);
    max = node(b, NULL, "ReduceMax", &h, 1, a, 2);
    pc_output(b, sum);
    pc_output(b, mean);
    in[0] = node1(b, "Tanh", max);
    in[1] = node1(b, "Tanh", node1(b, "Flatten", mean));
    mean_loss(b, node2(b, "Add", in[0], node2(b, "Mul", in[1], in[1])));
}

/* ---- cases: nn and losses ----------------------------------------------- */

static void b_matmul(bld *b)
{
    int64_t wd[2] = {64, 96};
    int h = trained(b, -1.0, 1.0);
    int w = weight(b, "w2", wd, 2, -0.2, 0.2);
    int bm = node2(b, "MatMul", pc_in3(b, -1.0, 1.0), h);

    pc_output(b, bm);
    mean_loss(b, node1(b, "Tanh", node2(b, "MatMul", h, w)));
}

static void b_gemm(bld *b)
{
    int64_t d[2] = {B * 8, 256}, ad[2] = {256, 64};
    int x = input(b, POPC_DTYPE_F32, d, 2, -1.0, 1.0), y, in[3];
    popc_attr a[4] = {
        popc_attr_make_int("transA", 1), popc_attr_make_int("transB", 1),
        popc_attr_make_float("alpha", 0.5), popc_attr_make_float("beta", 2.0)};

    OK(popc_nn_linear(b->L, "fc", x, 256, 128, 1, &y));
    in[0] = input(b, POPC_DTYPE_F32, ad, 2, -1.0, 1.0);
    in[1] = x;
    in[2] = const_f32(b, 0.25f);
    pc_output(b, node(b, NULL, "Gemm", in, 3, a, 4));
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
    pc_output(b, a);
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
    pc_output(b, bn);
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
    pc_output(b, ce);
    mean_loss(b, node(b, NULL, "Sum", in, 4, NULL, 0));
}

static void b_popc_ops(bld *b)
{
    int h = trained(b, -1.0, 1.0);
    popc_attr t = popc_attr_make_string("title", "parity");
    int p = node(b, "popc", "IpuPrintTensor", &h, 1, &t, 1);
    int n = node(b, "popc", "Nop", &p, 1, NULL, 0);
    int r = node(b, "popc", "RecomputationCheckpoint", &n, 1, NULL, 0);

    mean_loss(b, node1(b, "Sigmoid", r));
}

/* ---- whole models ------------------------------------------------------- */

static void set_ipu(bld *b, int ipu)
{
    popc_annotations a = {.ipu = ipu, .stage = -1, .phase = -1,
                          .recompute = -1};

    if (b->pipelined)
        OK(popc_graph_set_annotations(b->g, &a));
}

/* Fashion-MNIST sized MLP: 784 -> 256 ReLU Dropout -> 10, cross entropy. */
void pc_b_mlp(bld *b)
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
    pc_output(b, o);
    pc_output(b, b->loss);
}

void pc_b_mlp_pipe(bld *b)
{
    b->pipelined = 1;
    pc_b_mlp(b);
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
    pc_output(b, v);
    pc_output(b, b->loss);
}

/* ---- the other cases --------------------------------------------------- */


/* popc::CTCBeamSearchDecoder on log-softmaxed [T 4, B 64, C 64] with
** lengths 0..4 */
static void b_ctc(bld *b)
{
    int64_t len[64], dims[1] = {64};
    popc_attr ax = popc_attr_make_int("axis", 2);
    popc_attr a[3] = {popc_attr_make_int("blank", 0),
                      popc_attr_make_int("beam_width", 4),
                      popc_attr_make_int("top_paths", 2)};
    int x = pc_in3(b, -3.0, 3.0), in[2], out[3];

    for (int i = 0; i < 64; i++)
        len[i] = i % 5;
    in[0] = node(b, NULL, "LogSoftmax", &x, 1, &ax, 1);
    in[1] = cast_to(b, const_i64n(b, len, dims, 1), 6); /* ONNX INT32 */
    ck_assert_msg(pc_nodes_n(b, "popc", "CTCBeamSearchDecoder", in, 2, a, 3,
                             out, 3), "%s", popc_last_error());
    for (int k = 0; k < 3; k++)
        pc_output(b, out[k]);
}

const pcase pc_cases[] = {
    {"sum", b_sum, 1},
    {"fused_conv", b_fused_conv, 0},
    {"blocked", b_blocked, 0},
    {"fused_matmul", b_fused_matmul, 0},
    {"attention", b_attention, 0},
    {"gelu_tanh", b_gelu_tanh, 1},
    {"leaky_relu", b_leaky, 1},
    {"clip", b_clip, 1},
    {"mod", b_mod, 0},
    {"wide_train", b_wide_train, 1},
    {"bitshift", b_bitshift, 0},
    {"logic", b_logic, 0},
    {"generate", b_generate, 0},
    {"indexing", b_indexing, 0},
    {"arrange", b_arrange, 0},
    {"scan", b_scan, 0},
    {"spatial_nd", b_spatial_nd, 0},
    {"instance_norm", b_instance_norm, 0},
    {"quant", b_quant, 0},
    {"train_ops", b_train_ops, 0},
    {"resize", b_resize, 0},
    {"recurrent", b_recurrent, 0},
    {"gru_rnn", b_gru_rnn, 0},
    {"recurrent_train", b_recurrent_train, 1},
    {"flow", b_flow, 0},
    {"flow_train", b_flow_train, 1},
    {"linalg_train", b_linalg_train, 1},
    {"nn_train", b_nn_train, 1},
    {"einsum", b_einsum, 0},
    {"sampling", b_sampling, 0},
    {"int_conv", b_int_conv, 0},
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
    {"ctc", b_ctc, 0},
    {"cnn", b_cnn, 1},
};
