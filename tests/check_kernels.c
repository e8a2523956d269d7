/* check_kernels.c - kernels chosen per node at compile (popc/kernel.h,
** docs/kernels.md).
**
** Every registered kernel of every op is run, over the shapes of its op's
** grid that its supports() takes (strided, padded, grouped, dilated, odd
** sizes, batch 1 and more, training and inference), beside the op's own
** forward (the reference, the oracle); its outputs must lie within the
** documented tolerance of the reference's, and its split run (3 parts)
** must agree bitwise with its whole run. A kernel of an op without a grid
** here fails the test: a new kernel brings its shapes. Then a compiled
** model's choice per node is the one the scores give, kernelSelection
** =reference puts every node on its reference with the same outputs, and
** a bad kernelSelection is refused with the values it takes.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/kernel.h"
#include "popc/kernels.h"
#include "popc/popc.h"
#include "tests/harness/assert.h"

/* docs/kernels.md: |kernel - reference| <= RTOL * max|reference| + ATOL
** elementwise, over the node's whole output. */
#define RTOL 1e-4
#define ATOL 1e-5

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- one convolution case ------------------------------------------------ */

typedef struct conv_case {
    int fused;                 /* popc::FusedConv (Relu, residual) */
    int64_t N, C, M, G, H, W, kh, kw, s, pad, dil;
    int bias, training;
} conv_case;

typedef struct coverage {
    int cases, training, inference, strided, padded, grouped, dilated,
        batch1, batchn, odd;
} coverage;

static float rnd(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return (float)((*state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static popc_tensor *random_tensor(const int64_t *d, int rank, unsigned seed)
{
    popc_tensor *t = NULL;
    float *p;

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, d, rank, &t));
    p = popc_tensor_data(t);
    for (int64_t i = 0; i < popc_tensor_numel(t); i++)
        p[i] = rnd(&seed);
    return t;
}

typedef struct conv_node {
    popc_tensor *in[4];
    popc_view iv[4];
    int n_in;
    popc_attr a[6];
    popc_attrs attrs;
    int64_t k[2], st[2], pads[4], dil[2];
    popc_view out;
} conv_node;

static void node_make(const conv_case *c, conv_node *n)
{
    int64_t xd[4] = {c->N, c->C, c->H, c->W};
    int64_t wd[4] = {c->M, c->C / c->G, c->kh, c->kw};
    int64_t bd[1] = {c->M};
    int na = 0;

    memset(n, 0, sizeof *n);
    n->in[0] = random_tensor(xd, 4, 1u + (unsigned)c->C);
    n->in[1] = random_tensor(wd, 4, 7u + (unsigned)c->M);
    n->n_in = 2;
    if (c->bias || c->fused) {
        n->in[2] = c->bias ? random_tensor(bd, 1, 11u) : NULL;
        n->n_in = 3;
    }
    n->k[0] = c->kh;
    n->k[1] = c->kw;
    n->st[0] = n->st[1] = c->s;
    for (int i = 0; i < 4; i++)
        n->pads[i] = c->pad;
    n->dil[0] = n->dil[1] = c->dil;
    n->a[na++] = popc_attr_make_ints("kernel_shape", n->k, 2);
    n->a[na++] = popc_attr_make_ints("strides", n->st, 2);
    n->a[na++] = popc_attr_make_ints("pads", n->pads, 4);
    n->a[na++] = popc_attr_make_ints("dilations", n->dil, 2);
    n->a[na++] = popc_attr_make_int("group", c->G);
    if (c->fused)
        n->a[na++] = popc_attr_make_string("activation", "Relu");
    n->attrs = POPC_ATTRS(na, n->a);
    for (int i = 0; i < n->n_in; i++) {
        if (n->in[i])
            n->iv[i] = popc_tensor_view(n->in[i]);
        else
            memset(&n->iv[i], 0, sizeof n->iv[i]);
    }
}

/* The residual of a FusedConv has the output's shape: known after infer. */
static void node_add_residual(const conv_case *c, conv_node *n)
{
    if (!c->fused)
        return;
    n->in[3] = random_tensor(n->out.dims, n->out.rank, 13u);
    n->iv[3] = popc_tensor_view(n->in[3]);
    n->n_in = 4;
}

static void node_free(conv_node *n)
{
    for (int i = 0; i < 4; i++)
        popc_tensor_free(n->in[i]);
}

static popc_infer_ctx infer_ctx(const popc_op_def *op, conv_node *n,
                                int training)
{
    return (popc_infer_ctx){.size = sizeof(popc_infer_ctx), .op = op,
                            .host = popc_registry_host(),
                            .node_name = "k", .n_inputs = n->n_in,
                            .inputs = n->iv, .n_outputs = 1,
                            .outputs = &n->out, .attrs = &n->attrs,
                            .training = training};
}

/* Runs forward (prepare()d by prepare, released by release) in `parts`
** parts into a new tensor. */
static popc_tensor *run(const popc_op_def *op, conv_node *n, int training,
                        popc_status (*forward)(const popc_kernel_ctx *),
                        int parts)
{
    popc_infer_ctx ic = infer_ctx(op, n, training);
    popc_tensor *y = NULL;
    popc_view yv;
    popc_kernel_ctx kc;
    void *state = NULL;

    ASSERT_OK(popc_tensor_new(POPC_DTYPE_F32, n->out.dims, n->out.rank, &y));
    yv = popc_tensor_view(y);
    if (op->prepare)
        ASSERT_OK(op->prepare(&ic, &state));
    kc = (popc_kernel_ctx){.size = sizeof kc, .op = op,
                           .host = popc_registry_host(), .node_name = "k",
                           .n_inputs = n->n_in, .inputs = n->iv,
                           .n_outputs = 1, .outputs = &yv,
                           .attrs = &n->attrs, .training = training,
                           .seed = 1, .state = state, .n_parts = parts};
    for (int p = 0; p < parts; p++) {
        kc.part = p;
        ck_assert_msg(forward(&kc) == POPC_OK, "%s: %s", op->name,
                      popc_last_error());
    }
    if (op->release)
        op->release(state);
    return y;
}

static double max_abs(const popc_tensor *t)
{
    const float *p = popc_tensor_cdata(t);
    double m = 0.0;

    for (int64_t i = 0; i < popc_tensor_numel(t); i++)
        m = fabs(p[i]) > m ? fabs(p[i]) : m;
    return m;
}

static double max_diff(const popc_tensor *a, const popc_tensor *b)
{
    const float *p = popc_tensor_cdata(a), *q = popc_tensor_cdata(b);
    double m = 0.0;

    for (int64_t i = 0; i < popc_tensor_numel(a); i++)
        m = fabs((double)p[i] - q[i]) > m ? fabs((double)p[i] - q[i]) : m;
    return m;
}

static const char *describe(const conv_case *c, char *buf, size_t n)
{
    snprintf(buf, n, "%s N%lld C%lld M%lld G%lld %lldx%lld k%lldx%lld s%lld "
             "p%lld d%lld bias %d training %d",
             c->fused ? "FusedConv" : "Conv", (long long)c->N,
             (long long)c->C, (long long)c->M, (long long)c->G,
             (long long)c->H, (long long)c->W, (long long)c->kh,
             (long long)c->kw, (long long)c->s, (long long)c->pad,
             (long long)c->dil, c->bias, c->training);
    return buf;
}

/* Runs every kernel of op that supports case c against the reference. */
static void check_case(const popc_registry *reg, const popc_op_def *op,
                       const conv_case *c, coverage *cov)
{
    conv_node n;
    popc_infer_ctx ic;
    popc_tensor *ref = NULL;
    char what[256];

    node_make(c, &n);
    ic = infer_ctx(op, &n, c->training);
    /* windows larger than their padded input are no convolution */
    if (op->infer(&ic) != POPC_OK) {
        node_free(&n);
        return;
    }
    node_add_residual(c, &n);
    for (int i = 0; i < popc_registry_kernel_count(reg); i++) {
        const popc_kernel_def *k = popc_registry_kernel_at(reg, i);
        popc_tensor *whole, *split;
        double d, tol;

        ic = infer_ctx(op, &n, c->training);
        if (strcmp(k->op, op->name) != 0 ||
            strcmp(k->domain, op->domain) != 0 || !k->supports(&ic))
            continue;
        ck_assert_msg(k->score(&ic) > 0.0, "%s:%s scores %g on %s",
                      k->provider, k->name, k->score(&ic),
                      describe(c, what, sizeof what));
        if (!ref)
            ref = run(op, &n, c->training, op->forward, 1);
        whole = run(op, &n, c->training, k->forward, 1);
        split = run(op, &n, c->training, k->forward,
                    (k->flags & POPC_OP_SPLIT) ? 3 : 1);
        d = max_diff(whole, ref);
        tol = RTOL * max_abs(ref) + ATOL;
        ck_assert_msg(d <= tol, "%s:%s differs from the reference by %g "
                      "(tolerance %g) on %s", k->provider, k->name, d, tol,
                      describe(c, what, sizeof what));
        ck_assert_msg(max_diff(whole, split) == 0.0, "%s:%s split in 3 "
                      "parts differs from its whole run on %s", k->provider,
                      k->name, describe(c, what, sizeof what));
        popc_tensor_free(whole);
        popc_tensor_free(split);
        cov[i].cases++;
        cov[i].training += c->training;
        cov[i].inference += !c->training;
        cov[i].strided += c->s > 1;
        cov[i].padded += c->pad > 0;
        cov[i].grouped += c->G > 1;
        cov[i].dilated += c->dil > 1;
        cov[i].batch1 += c->N == 1;
        cov[i].batchn += c->N > 1;
        cov[i].odd += (c->H % 2) || (c->W % 2);
    }
    popc_tensor_free(ref);
    node_free(&n);
}

/* Channel layouts: (C, M, G) plain, wide, grouped, depthwise. */
static const int64_t chans[][3] = {
    {16, 24, 1}, {4, 72, 1}, {16, 16, 2}, {8, 8, 8}, {9, 9, 9}};
/* Planes: a small odd one, a medium odd one, one with enough 2x2 tiles
** for Winograd on one image. */
static const int64_t planes[][2] = {{5, 7}, {9, 11}, {26, 25}};
static const int64_t batches[] = {1, 3, 8};
static const int64_t windows[][2] = {{1, 1}, {3, 3}, {5, 3}};

static void conv_grid(const popc_registry *reg, int fused, coverage *cov)
{
    const popc_op_def *op =
        fused ? popc_registry_find_op(reg, "popc", "FusedConv", 0)
              : popc_registry_find_op(reg, "ai.onnx", "Conv", 0);

    ck_assert_ptr_nonnull(op);
    for (int b = 0; b < N_OF(batches); b++)
        for (int ch = 0; ch < N_OF(chans); ch++)
            for (int pl = 0; pl < N_OF(planes); pl++)
                for (int w = 0; w < N_OF(windows); w++)
                    for (int v = 0; v < 8; v++) {
                        conv_case c = {
                            .fused = fused, .N = batches[b],
                            .C = chans[ch][0], .M = chans[ch][1],
                            .G = chans[ch][2], .H = planes[pl][0],
                            .W = planes[pl][1], .kh = windows[w][0],
                            .kw = windows[w][1], .s = 1 + (v & 1),
                            .pad = (v >> 1) & 1, .dil = 1 + ((v >> 2) & 1),
                            .bias = (b + w + v) % 2, .training = v % 3 == 0};

                        /* big planes at batch 8 add time, not coverage */
                        if (c.N == 8 && pl == 2)
                            continue;
                        check_case(reg, op, &c, cov);
                        c.training = !c.training;
                        check_case(reg, op, &c, cov);
                    }
}

START_TEST(every_kernel_matches_reference)
{
    popc_registry *reg;
    coverage *cov;
    int n;

    ASSERT_OK(popc_registry_global(&reg));
    n = popc_registry_kernel_count(reg);
    ck_assert_msg(n >= 8, "only %d kernels registered (the nn provider "
                  "has 8)", n);
    cov = calloc((size_t)n, sizeof *cov);
    ck_assert_ptr_nonnull(cov);
    conv_grid(reg, 0, cov);
    conv_grid(reg, 1, cov);
    for (int i = 0; i < n; i++) {
        const popc_kernel_def *k = popc_registry_kernel_at(reg, i);
        const coverage *c = &cov[i];

        printf("kernel %s:%s (%s::%s): %d shapes (training %d, inference "
               "%d, strided %d, padded %d, grouped %d, dilated %d, batch 1 "
               "%d, batch > 1 %d, odd %d)\n", k->provider, k->name,
               k->domain, k->op, c->cases, c->training, c->inference,
               c->strided, c->padded, c->grouped, c->dilated, c->batch1,
               c->batchn, c->odd);
        ck_assert_msg(c->cases >= 4, "kernel %s:%s of %s::%s ran on %d "
                      "shapes: give its op a grid in check_kernels.c that "
                      "it supports", k->provider, k->name, k->domain, k->op,
                      c->cases);
        ck_assert_msg(c->training > 0 && c->inference > 0 && c->padded > 0
                      && c->odd > 0, "kernel %s:%s: the grid misses "
                      "training, inference, padding or odd sizes",
                      k->provider, k->name);
    }
    free(cov);
}
END_TEST

/* ---- the choice in a compiled model --------------------------------------- */

/* One convolution layer of the model below. */
typedef struct layer {
    int64_t C, M, G, k, s, pad;
} layer;

/* At [2, 8, 26, 26]: Winograd on one image's many tiles, depthwise,
** a strided 3x3 to 13x13, then small 7x7 planes with more channels than
** positions (batched planes and row tiles both apply). */
static const layer layers[] = {
    {8, 16, 1, 3, 1, 1}, {16, 16, 16, 3, 2, 1}, {16, 32, 1, 3, 2, 1},
    {32, 80, 1, 1, 1, 0}, {80, 80, 80, 5, 1, 2}};

static popc_model *compile_model(const char *selection, popc_tensor *x,
                                 popc_tensor **y)
{
    popc_graph *g = NULL;
    popc_options *o = NULL;
    popc_model *m = NULL;
    int v, id;
    int64_t xd[4] = {2, 8, 26, 26};

    ASSERT_OK(popc_graph_new("kernels", &g));
    ASSERT_OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 4, &v));
    for (int i = 0; i < N_OF(layers); i++) {
        const layer *l = &layers[i];
        int64_t wd[4] = {l->M, l->C / l->G, l->k, l->k};
        int64_t ks[2] = {l->k, l->k}, st[2] = {l->s, l->s};
        int64_t pads[4] = {l->pad, l->pad, l->pad, l->pad};
        popc_tensor *w = random_tensor(wd, 4, 100u + (unsigned)i);
        popc_attr a[4] = {popc_attr_make_ints("kernel_shape", ks, 2),
                          popc_attr_make_ints("strides", st, 2),
                          popc_attr_make_ints("pads", pads, 4),
                          popc_attr_make_int("group", l->G)};
        char name[16];
        int in[2];

        snprintf(name, sizeof name, "w%d", i);
        ASSERT_OK(popc_graph_add_initializer(g, name, w, 0, &in[1]));
        popc_tensor_free(w);
        in[0] = v;
        snprintf(name, sizeof name, "conv%d", i);
        ASSERT_OK(popc_graph_add_node(g, NULL, "Conv", 0, in, 2, &v, 1, a,
                                      4, name, &id));
    }
    ASSERT_OK(popc_graph_add_output(g, v));
    ASSERT_OK(popc_options_new(&o));
    ASSERT_OK(popc_options_set(o, "backend", "cpu"));
    ASSERT_OK(popc_options_set(o, "kernelSelection", selection));
    ASSERT_OK(popc_model_new_inference(g, o, &m));
    ASSERT_OK(popc_model_compile(m, &x, 1));
    ASSERT_OK(popc_model_run(m, &x, 1, y, 1));
    popc_options_free(o);
    popc_graph_free(g);
    return m;
}

START_TEST(choice_follows_scores_and_switch)
{
    int64_t xd[4] = {2, 8, 26, 26};
    popc_tensor *x = random_tensor(xd, 4, 5u), *ys = NULL, *yr = NULL;
    popc_model *ms = compile_model("score", x, &ys);
    popc_model *mr = compile_model("reference", x, &yr);
    popc_registry *reg;
    int chosen = 0, kinds = 0;
    const char *seen[8] = {0};

    ASSERT_OK(popc_registry_global(&reg));
    for (int k = 0;; k++) {
        popc_node_kernel s, r;
        const popc_op_def *op;
        const char *want = NULL;
        double best = 1.0;
        popc_status st = popc_model_node_kernel(ms, k, &s);

        if (st == POPC_ENOTFOUND)
            break;
        ASSERT_OK(st);
        ASSERT_OK(popc_model_node_kernel(mr, k, &r));
        ck_assert_msg(r.provider == NULL && r.kernel == NULL, "node %s runs "
                      "%s:%s with kernelSelection=reference", r.node,
                      r.provider, r.kernel);
        op = popc_registry_find_op(reg, s.domain, s.op, 0);
        ck_assert_ptr_nonnull(op);
        /* the scores the compile saw, recomputed on the node's shapes */
        {
            int i = atoi(s.node + 4);
            conv_case c = {.N = 2, .C = layers[i].C, .M = layers[i].M,
                           .G = layers[i].G, .kh = layers[i].k,
                           .kw = layers[i].k, .s = layers[i].s,
                           .pad = layers[i].pad, .dil = 1};
            int64_t hw = 26;
            conv_node n;
            popc_infer_ctx ic;

            for (int j = 0; j < i; j++)
                hw = (hw + 2 * layers[j].pad - layers[j].k) / layers[j].s + 1;
            c.H = c.W = hw;
            node_make(&c, &n);
            ic = infer_ctx(op, &n, 0);
            ASSERT_OK(op->infer(&ic));
            for (int q = 0; q < popc_registry_kernel_count(reg); q++) {
                const popc_kernel_def *kd = popc_registry_kernel_at(reg, q);

                ic = infer_ctx(op, &n, 0);
                if (strcmp(kd->op, op->name) == 0 &&
                    strcmp(kd->domain, op->domain) == 0 &&
                    kd->supports(&ic) && kd->score(&ic) > best) {
                    best = kd->score(&ic);
                    want = kd->name;
                }
            }
            node_free(&n);
        }
        ck_assert_msg((want == NULL && s.kernel == NULL) ||
                          (want && s.kernel && strcmp(want, s.kernel) == 0),
                      "node %s runs %s but the scores choose %s", s.node,
                      s.kernel ? s.kernel : "the reference",
                      want ? want : "the reference");
        if (s.kernel) {
            int known = 0;

            chosen++;
            for (int j = 0; j < kinds; j++)
                known |= strcmp(seen[j], s.kernel) == 0;
            if (!known && kinds < N_OF(seen))
                seen[kinds++] = s.kernel;
        }
    }
    /* the model is built so that several kernels win somewhere */
    ck_assert_msg(kinds >= 3, "only %d different kernels chosen", kinds);
    ck_assert_int_ge(chosen, 3);
    {
        double d = max_diff(ys, yr), tol = RTOL * max_abs(yr) + ATOL;

        ck_assert_msg(d <= tol, "score and reference runs differ by %g "
                      "(tolerance %g)", d, tol);
    }
    popc_tensor_free(ys);
    popc_tensor_free(yr);
    popc_tensor_free(x);
    popc_model_free(ms);
    popc_model_free(mr);
}
END_TEST

START_TEST(bad_selection_refused)
{
    popc_options *o = NULL;

    ASSERT_OK(popc_options_new(&o));
    ck_assert_int_eq(popc_options_set(o, "kernelSelection", "fastest"),
                     POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "kernelSelection") &&
                      strstr(popc_last_error(), "reference"),
                  "message: %s", popc_last_error());
    popc_options_free(o);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels");
    TCase *tc = tcase_create("kernels");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, every_kernel_matches_reference);
    tcase_add_test(tc, choice_follows_scores_and_switch);
    tcase_add_test(tc, bad_selection_refused);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
