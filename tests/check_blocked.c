/* check_blocked.c - NCHWc blocked layouts (optimizationLevel 2, the
** default; opt/pass_layout.c, the popc::*Blocked* ops of ops/nn/blocked*.c). Each
** blocked op against its NCHW form on the cpu backend's reference
** kernels (level 0), on strided, padded and dilated windows, channel
** counts that are not a multiple of the block, batch 1 and 3; with blocks
** of 16 and of 8 (POPC_NCHWC_BLOCK), each on the CPU's own kernels and on
** the plain C ones (POPC_NCHWC_ISA=generic); the ipumodel backend, which
** splits nodes over its workers, bitwise like the cpu's. The pass on
** small graphs before and after: the region's reorders are only at its
** borders, outputs keep their names, anchors keep their NCHW producer,
** and what cannot be blocked stays.
*/
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "harness/assert.h"
#include "tests/profile_files.h"
#include "popc/optimize.h"
#include "popc/popc.h"

/* Blocked sums run in another order than the reference's (lanes and
** taps): agreement within this much of the output's largest magnitude */
#define TOL 2e-5

static uint64_t rng_state;

static float uniform(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) & 0xffffff) / (float)0x1000000 - 0.5f;
}

static popc_tensor *random_tensor(const int64_t *dims, int rank)
{
    popc_tensor *t = NULL;
    float *p;

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, dims, rank, &t));
    p = popc_tensor_data(t);
    for (int64_t i = 0; i < popc_tensor_numel(t); i++)
        p[i] = 2.0f * uniform();
    return t;
}

static int constant(popc_graph *g, const int64_t *dims, int rank)
{
    popc_tensor *t = random_tensor(dims, rank);
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

static int op(popc_graph *g, const char *name, const int *in, int n_in,
              const popc_attr *a, int n_a)
{
    int y;

    ASSERT_OK(popc_graph_add_node(g, NULL, name, 0, in, n_in, &y, 1, a, n_a,
                                  NULL, NULL));
    return y;
}

/* Conv of x (C channels) to M channels, kernel k, with bias. */
static int conv(popc_graph *g, int x, int64_t C, int64_t M, int64_t k,
                int64_t stride, int64_t pad, int64_t group, int64_t dil)
{
    int64_t wd[4] = {M, C / group, k, k}, bd[1] = {M};
    int64_t s[2] = {stride, stride}, p[4] = {pad, pad, pad, pad};
    int64_t d[2] = {dil, dil};
    popc_attr a[4] = {popc_attr_make_ints("strides", s, 2),
                      popc_attr_make_ints("pads", p, 4),
                      popc_attr_make_int("group", group),
                      popc_attr_make_ints("dilations", d, 2)};
    int in[3] = {x, constant(g, wd, 4), constant(g, bd, 1)};

    return op(g, "Conv", in, 3, a, 4);
}

static int relu(popc_graph *g, int x)
{
    return op(g, "Relu", &x, 1, NULL, 0);
}

static int clip6(popc_graph *g, int x)
{
    int in[3] = {x, scalar(g, 0.0f), scalar(g, 6.0f)};

    return op(g, "Clip", in, 3, NULL, 0);
}

static int add(popc_graph *g, int a, int b)
{
    int in[2] = {a, b};

    return op(g, "Add", in, 2, NULL, 0);
}

static int count(const popc_graph *g, const char *name)
{
    int n = 0;

    for (int i = 0; i < popc_graph_n_nodes(g); i++)
        n += strcmp(popc_graph_node_op(g, i), name) == 0;
    return n;
}

static popc_graph *optimized(const popc_graph *g, int level,
                             const char *const *keep, int n_keep)
{
    popc_graph *c = NULL;
    popc_optimize_options o = {.size = sizeof o, .level = level,
                               .keep = keep, .n_keep = n_keep};

    ASSERT_OK(popc_graph_clone(g, &c));
    ASSERT_OK(popc_graph_optimize(c, &o, NULL));
    ASSERT_OK(popc_graph_verify(c, 0));
    return c;
}

#define MAX_OUT 4

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

static const char *const blocks[] = {"16", "8"};
static const char *const isas[] = {"native", "generic"};

/* g at level 2 against level 0, for both blocks on both kernel sets;
** `want` blocked convolutions and pools in the level 2 graph. */
static void check_graph(const popc_graph *g, popc_tensor *x, int want)
{
    popc_tensor *ref[MAX_OUT], *blk[MAX_OUT], *ipu[MAX_OUT];
    int n = popc_graph_n_outputs(g);

    run_at(g, x, 0, "cpu", ref);
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 2; i++) {
            popc_graph *o;

            setenv("POPC_NCHWC_BLOCK", blocks[b], 1);
            if (i)
                setenv("POPC_NCHWC_ISA", "generic", 1);
            else
                unsetenv("POPC_NCHWC_ISA");
            o = optimized(g, 2, NULL, 0);
            ck_assert_msg(count(o, "BlockedConv") + count(o, "BlockedPool") ==
                              want, "block %s: %d blocked ops, want %d",
                          blocks[b],
                          count(o, "BlockedConv") + count(o, "BlockedPool"),
                          want);
            for (int k = 0; k < n; k++)
                ck_assert_str_eq(
                    popc_graph_value_name(o, popc_graph_output(o, k)),
                    popc_graph_value_name(g, popc_graph_output(g, k)));
            popc_graph_free(o);
            run_at(g, x, 2, "cpu", blk);
            run_at(g, x, 2, "ipumodel", ipu);
            for (int k = 0; k < n; k++) {
                double scale = 1.0;
                double diff = popc_tensor_max_abs_diff(ref[k], blk[k]);
                const float *r = popc_tensor_data(ref[k]);

                for (int64_t e = 0; e < popc_tensor_numel(ref[k]); e++)
                    scale = fmax(scale, fabs((double)r[e]));
                ck_assert_msg(diff <= TOL * scale, "block %s, %s kernels: "
                              "output %d differs by %g (scale %g)",
                              blocks[b], isas[i], k, diff, scale);
                ck_assert_msg(popc_tensor_max_abs_diff(blk[k], ipu[k]) == 0.0,
                              "block %s, %s kernels: ipumodel and cpu "
                              "differ", blocks[b], isas[i]);
                popc_tensor_free(blk[k]);
                popc_tensor_free(ipu[k]);
            }
        }
    for (int k = 0; k < n; k++)
        popc_tensor_free(ref[k]);
    unsetenv("POPC_NCHWC_BLOCK");
    unsetenv("POPC_NCHWC_ISA");
}

static popc_graph *graph_with_input(const int64_t *dims, int *x)
{
    popc_graph *g = NULL;

    ASSERT_OK(popc_graph_new("blk", &g));
    ASSERT_OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, dims, 4, x));
    return g;
}

/* The block the layout pass picks on this CPU. */
static int64_t cpu_block(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return 16;
#endif
    return 8;
}

static void setup(void)
{
    rng_state = 11;
}

/* 3x3 and 5x5 convolutions (group 1), strided, padded and dilated, with
** 13 and 21 channels (neither a multiple of 8), batch 3. */
START_TEST(general_convolutions)
{
    int64_t d[4] = {3, 13, 11, 9};
    int x;
    popc_graph *g = graph_with_input(d, &x);
    int a = relu(g, conv(g, x, 13, 21, 3, 1, 1, 1, 1));
    int b = conv(g, a, 21, 19, 5, 2, 2, 1, 1);
    int c = relu(g, conv(g, b, 19, 17, 3, 1, 2, 1, 2));
    int e = conv(g, c, 17, 33, 1, 2, 0, 1, 1);
    popc_tensor *in = random_tensor(d, 4);

    ASSERT_OK(popc_graph_add_output(g, e));
    check_graph(g, in, 4);
    popc_tensor_free(in);
    popc_graph_free(g);
}
END_TEST

/* MobileNetV2's block: 1x1 expansion, depthwise 3x3 (stride 1 and 2)
** with ReLU6, 1x1 projection and the residual Add; batch 1 and 2, planes
** of 14 and 7 and an odd one. */
START_TEST(depthwise_and_pointwise)
{
    for (int t = 0; t < 3; t++) {
        int64_t N = t == 1 ? 2 : 1, H = t == 0 ? 14 : t == 1 ? 7 : 9;
        int64_t d[4] = {N, 24, H, H};
        int x;
        popc_graph *g = graph_with_input(d, &x);
        int e = clip6(g, conv(g, x, 24, 90, 1, 1, 0, 1, 1));
        int dw = clip6(g, conv(g, e, 90, 90, 3, 1, 1, 90, 1));
        int p = conv(g, dw, 90, 24, 1, 1, 0, 1, 1);
        int r = add(g, p, x);
        int s = clip6(g, conv(g, r, 24, 24, 3, 2, 1, 24, 1));
        popc_tensor *in = random_tensor(d, 4);

        ASSERT_OK(popc_graph_add_output(g, s));
        check_graph(g, in, 4);
        popc_tensor_free(in);
        popc_graph_free(g);
    }
}
END_TEST

/* Pools and the neighbours that are not fused: MaxPool 3x3/2 pad 1,
** AveragePool with count_include_pad and ceil_mode, a Relu and an Add
** of two blocked values, GlobalAveragePool; 2 outputs. */
START_TEST(pools_and_neighbours)
{
    int64_t d[4] = {2, 20, 13, 13};
    int64_t k[2] = {3, 3}, s[2] = {2, 2}, p[4] = {1, 1, 1, 1};
    popc_attr mp[3] = {popc_attr_make_ints("kernel_shape", k, 2),
                       popc_attr_make_ints("strides", s, 2),
                       popc_attr_make_ints("pads", p, 4)};
    popc_attr ap[5] = {mp[0], mp[1], mp[2],
                       popc_attr_make_int("count_include_pad", 1),
                       popc_attr_make_int("ceil_mode", 1)};
    int x;
    popc_graph *g = graph_with_input(d, &x);
    int c = conv(g, x, 20, 20, 3, 1, 1, 1, 1);
    int m = op(g, "MaxPool", &c, 1, mp, 3);
    int a = op(g, "AveragePool", &c, 1, ap, 5);
    int r = relu(g, add(g, m, a));
    int gp = op(g, "GlobalAveragePool", &r, 1, NULL, 0);
    popc_tensor *in = random_tensor(d, 4);

    ASSERT_OK(popc_graph_add_output(g, gp));
    ASSERT_OK(popc_graph_add_output(g, m));
    check_graph(g, in, 4);
    popc_tensor_free(in);
    popc_graph_free(g);
}
END_TEST

/* Before and after: one ToBlocked where the region begins, a FromBlocked
** only where an NCHW reader or an output reads it; an anchored value
** stays NCHW; a convolution of 3 channels (an RGB stem), training graphs
** and, on planes over 256 pixels, a 3x3 group-1 convolution and a 1x1
** that no blocked value feeds stay NCHW; level 1 and POPC_NCHWC_BLOCK=0
** block nothing. */
START_TEST(reorders_only_at_borders)
{
    int64_t d[4] = {1, 3, 16, 16};
    int x;
    popc_graph *g = graph_with_input(d, &x), *o;
    int stem = relu(g, conv(g, x, 3, 16, 3, 2, 1, 1, 1));
    int a = relu(g, conv(g, stem, 16, 16, 3, 1, 1, 1, 1));
    int b = relu(g, conv(g, a, 16, 16, 3, 1, 1, 1, 1));
    int c = conv(g, b, 16, 16, 1, 1, 0, 1, 1);
    int sm = op(g, "Softmax", &c, 1, NULL, 0);
    const char *keep[1];
    popc_tensor *in = random_tensor(d, 4);
    char aname[256];

    ASSERT_OK(popc_graph_add_output(g, sm));
    snprintf(aname, sizeof aname, "%s", popc_graph_value_name(g, a));
    keep[0] = aname;
    o = optimized(g, 2, NULL, 0);
    for (int i = 0; i < popc_graph_n_nodes(o); i++)
        if (strcmp(popc_graph_node_op(o, i), "ToBlocked") == 0) {
            popc_attrs at = popc_graph_node_attrs(o, i);

            /* blocks of 16 where the CPU has AVX-512, else 8 */
            ck_assert_int_eq(popc_attr_int(&at, "block", 0), cpu_block());
        }
    ck_assert_int_eq(count(o, "BlockedConv"), 3);
    ck_assert_int_eq(count(o, "FusedConv"), 1);      /* the stem */
    ck_assert_int_eq(count(o, "ToBlocked"), 1);
    ck_assert_int_eq(count(o, "FromBlocked"), 1);    /* before Softmax */
    popc_graph_free(o);
    /* an anchor keeps its NCHW producer: the region restarts after it */
    o = optimized(g, 2, keep, 1);
    ck_assert_int_eq(count(o, "BlockedConv"), 2);
    ck_assert_int_eq(count(o, "ToBlocked"), 1);
    ck_assert_int_eq(count(o, "FromBlocked"), 1);
    ck_assert_int_ge(popc_graph_find_value(o, aname), 0);
    ck_assert_str_eq(popc_graph_node_op(o, popc_graph_value_producer(
                         o, popc_graph_find_value(o, aname))),
                     "FusedConv");
    popc_graph_free(o);
    o = optimized(g, 1, NULL, 0);                    /* level 1: none */
    ck_assert_int_eq(count(o, "ToBlocked") + count(o, "BlockedConv"), 0);
    popc_graph_free(o);
    setenv("POPC_NCHWC_BLOCK", "0", 1);              /* turned off */
    o = optimized(g, 2, NULL, 0);
    ck_assert_int_eq(count(o, "ToBlocked") + count(o, "BlockedConv"), 0);
    ck_assert_int_eq(count(o, "FusedConv") + count(o, "Conv"), 4);
    popc_graph_free(o);
    unsetenv("POPC_NCHWC_BLOCK");
    {
        popc_optimize_options tr = {.size = sizeof tr, .level = 2,
                                    .training = 1};

        ASSERT_OK(popc_graph_clone(g, &o));
        ASSERT_OK(popc_graph_optimize(o, &tr, NULL));
        ck_assert_int_eq(count(o, "ToBlocked") + count(o, "BlockedConv"), 0);
        popc_graph_free(o);
    }
    check_graph(g, in, 3);
    popc_tensor_free(in);
    popc_graph_free(g);
}
END_TEST

/* On a plane of 24x24 (576 pixels) a 3x3 group-1 convolution keeps the
** NCHW path (Winograd), a 1x1 reading its NCHW output too; the depthwise
** after them is blocked, and so is the 1x1 that reads it. */
START_TEST(large_planes_keep_winograd)
{
    int64_t d[4] = {1, 16, 24, 24};
    int x;
    popc_graph *g = graph_with_input(d, &x), *o;
    int a = relu(g, conv(g, x, 16, 16, 3, 1, 1, 1, 1));
    int b = relu(g, conv(g, a, 16, 32, 1, 1, 0, 1, 1));
    int c = clip6(g, conv(g, b, 32, 32, 3, 1, 1, 32, 1));
    int e = conv(g, c, 32, 16, 1, 1, 0, 1, 1);
    popc_tensor *in = random_tensor(d, 4);

    ASSERT_OK(popc_graph_add_output(g, e));
    o = optimized(g, 2, NULL, 0);
    ck_assert_int_eq(count(o, "FusedConv"), 2);
    ck_assert_int_eq(count(o, "BlockedConv"), 2);
    ck_assert_int_eq(count(o, "ToBlocked"), 1);
    popc_graph_free(o);
    check_graph(g, in, 2);
    popc_tensor_free(in);
    popc_graph_free(g);
}
END_TEST

/* The IPU model keeps its meaning: the profile lists the blocked
** convolutions by op, each with the flops of its NCHW form (the real
** channels), and the reorders with bytes and no flops. */
START_TEST(profile_shows_blocked_ops)
{
    int64_t d[4] = {1, 20, 10, 10};
    int x;
    popc_graph *g = graph_with_input(d, &x);
    int a = relu(g, conv(g, x, 20, 24, 3, 1, 1, 1, 1));
    int b = clip6(g, conv(g, a, 24, 24, 3, 2, 1, 24, 1));
    popc_tensor *in = random_tensor(d, 4);
    mj_value *blk, *ref;
    const mj_value *e;
    double fb = 0.0, fr = 0.0;
    int nb = 0, nr = 0, reorders = 0;

    ASSERT_OK(popc_graph_add_output(g, b));
    blk = pf_inference_report_at(g, &in, 1, 1, 2);
    setenv("POPC_NCHWC_BLOCK", "0", 1);
    ref = pf_inference_report_at(g, &in, 1, 1, 2);
    unsetenv("POPC_NCHWC_BLOCK");
    for (int i = 0; (e = mj_at(mj_get(blk, "ops"), i)) != NULL; i++) {
        const char *op = mj_str(e, "op");

        if (strcmp(op, "BlockedConv") == 0) {
            nb++;
            fb += mj_num(e, "flops", 0.0);
            ck_assert(mj_num(e, "cycles", 0.0) > 0.0);
        }
        if (strcmp(op, "ToBlocked") == 0 || strcmp(op, "FromBlocked") == 0) {
            reorders++;
            ck_assert(mj_num(e, "flops", -1.0) == 0.0);
            ck_assert(mj_num(e, "bytes", 0.0) > 0.0);
        }
    }
    for (int i = 0; (e = mj_at(mj_get(ref, "ops"), i)) != NULL; i++)
        if (strcmp(mj_str(e, "op"), "FusedConv") == 0) {
            nr++;
            fr += mj_num(e, "flops", 0.0);
        }
    ck_assert_int_eq(nb, 2);
    ck_assert_int_eq(nr, 2);
    ck_assert_int_eq(reorders, 2);
    ck_assert_msg(fb == fr, "blocked %g flops, NCHW %g", fb, fr);
    mj_free(blk);
    mj_free(ref);
    popc_tensor_free(in);
    popc_graph_free(g);
}
END_TEST

/* The ops refuse what they cannot run, naming the node and the fix. */
static int warned;

static void on_log(int level, const char *msg, void *user)
{
    (void)user;
    if (level == POPC_LOG_WARN && strstr(msg, "ignored"))
        warned++;
}

/* Optimize a small blockable graph at level 2: the layout pass chooses
** the block. */
static void optimize_blockable(void)
{
    int64_t d[4] = {1, 16, 12, 12};
    int x;
    popc_graph *g = graph_with_input(d, &x), *o;
    int y = relu(g, conv(g, x, 16, 16, 3, 1, 1, 1, 1));

    ASSERT_OK(popc_graph_add_output(g, y));
    o = optimized(g, 2, NULL, 0);
    popc_graph_free(o);
    popc_graph_free(g);
}

/* Environment switches with a value they do not know say so when the
** layouts are chosen, instead of changing nothing in silence. */
START_TEST(unknown_switch_values_warn)
{
    static const char *const vars[][2] = {{"POPC_NCHWC_ISA", "avx2"},
                                          {"POPC_NCHWC_BLOCK", "4"}};

    popc_log_set_callback(on_log, NULL);
    for (int i = 0; i < 2; i++) {
        warned = 0;
        setenv(vars[i][0], vars[i][1], 1);
        optimize_blockable();
        unsetenv(vars[i][0]);
        ck_assert_msg(warned == 1, "%s=%s: %d warnings, want 1", vars[i][0],
                      vars[i][1], warned);
    }
    warned = 0;
    setenv("POPC_NCHWC_ISA", "generic", 1);
    optimize_blockable();
    unsetenv("POPC_NCHWC_ISA");
    ck_assert_int_eq(warned, 0);
    popc_log_set_callback(NULL, NULL);
}
END_TEST

START_TEST(bad_blocked_nodes_are_refused)
{
    int64_t d[4] = {1, 8, 4, 4};
    int x, y, t;
    popc_graph *g = graph_with_input(d, &x);
    popc_attr bad = popc_attr_make_int("block", 12);
    popc_attr ok = popc_attr_make_int("block", 8);
    popc_attr ch = popc_attr_make_int("channels", 9);
    popc_attr mode = popc_attr_make_string("mode", "median");

    ck_assert_int_eq(popc_graph_add_node(g, "popc", "ToBlocked", 0, &x, 1, &y,
                                         1, &bad, 1, "tb", NULL),
                     POPC_EINVAL);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "block 12 must be 8 or "
                                                    "16"));
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "tb"));
    ASSERT_OK(popc_graph_add_node(g, "popc", "ToBlocked", 0, &x, 1, &t, 1,
                                  &ok, 1, "tb2", NULL));
    ck_assert_int_eq(popc_graph_add_node(g, "popc", "FromBlocked", 0, &t, 1,
                                         &y, 1, &ch, 1, "fb", NULL),
                     POPC_EINVAL);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "channels 9"));
    ck_assert_int_eq(popc_graph_add_node(g, "popc", "BlockedPool", 0, &t, 1,
                                         &y, 1, &mode, 1, "bp", NULL),
                     POPC_EINVAL);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "mode 'median'"));
    ck_assert_int_eq(popc_graph_add_node(g, "popc", "BlockedConv", 0, &t, 1,
                                         &y, 1, &ok, 1, "bc", NULL),
                     POPC_EINVAL);
    popc_graph_free(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("blocked");
    TCase *tc = tcase_create("nchwc");
    SRunner *sr;
    int failed;

    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, general_convolutions);
    tcase_add_test(tc, depthwise_and_pointwise);
    tcase_add_test(tc, pools_and_neighbours);
    tcase_add_test(tc, reorders_only_at_borders);
    tcase_add_test(tc, large_planes_keep_winograd);
    tcase_add_test(tc, profile_shows_blocked_ops);
    tcase_add_test(tc, bad_blocked_nodes_are_refused);
    tcase_add_test(tc, unknown_switch_values_warn);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
