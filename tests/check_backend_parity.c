/* check_backend_parity.c - the ipumodel backend against the cpu oracle, in
** the spirit of ggml's test-backend-ops: every op of the math, tensor, nn,
** loss and popc plugins (listed from the registry) is built into a small
** graph and run through popc_model for inference (2 device iterations)
** and, when it has a gradient, for training (2 accumulation steps, 2 runs
** of SGD with momentum), on cpu and on ipumodel: 1 replica on 2 and on 3
** worker threads, and 2 replicas on 3 threads. Outputs and every weight
** and buffer after training must agree bitwise, or within 1e-6 relative
** where two orders of a reduction may differ. The MLP and CNN of layers.h
** (BatchNorm, Dropout) and a two-IPU pipeline go through the same
** comparison. Ops without a hand-written case get a generic one (float
** inputs of one shape); an op neither covers fails the test by name.
** The graphs are in tests/parity_cases.c.
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
#include "tests/parity_cases.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

#define MAX_OUT 8
#define STEPS 2
#define REL 1e-6
#define MAX_OPS 512

/* ---- running ------------------------------------------------------------ */

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
static char covered[MAX_OPS][136];
static int n_covered;

static void cover(const char *domain, const char *op)
{
    char key[136];

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
        double u = pc_uniform(key + (uint64_t)i * 7919u, e);
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
                              const char *backend, int threads, int replicas)
{
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    OK(popc_options_set_int(o, "threads", threads));
    OK(popc_options_set_int(o, "replicationFactor", replicas));
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
                     int replicas, result *r)
{
    bld b;
    popc_model *m;
    popc_tensor *in[PC_MAX_IN];
    int64_t times;

    build_case(c, &b);
    if (!strcmp(backend, "cpu"))
        cover_case(&b);
    m = make_model(c, &b, backend, threads, replicas);
    times = replicas * (c->training ? (b.pipelined ? 4 : 2) : 2);
    r->n_out = popc_graph_n_outputs(b.g);
    r->steps = c->training ? STEPS : 1;
    ck_assert_int_le(r->n_out, MAX_OUT);
    for (int s = 0; s < r->steps; s++) {
        for (int i = 0; i < b.n_in; i++)
            in[i] = make_input(&b, i, times, pc_mix(1000u + (uint64_t)s));
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

/* ---- comparing ---------------------------------------------------------- */

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
                           const result *got, int threads, int replicas)
{
    char what[256];
    int close = 0;

    for (int s = 0; s < ref->steps; s++)
        for (int i = 0; i < ref->n_out; i++) {
            snprintf(what, sizeof what, "%s (%d replicas, %d threads) run "
                     "%d output %d", c->name, replicas, threads, s, i);
            close |= compare(what, ref->out[s][i], got->out[s][i]);
        }
    ck_assert_int_eq(ref->n_w, got->n_w);
    for (int i = 0; i < ref->n_w; i++) {
        ck_assert_str_eq(ref->names[i], got->names[i]);
        snprintf(what, sizeof what, "%s (%d replicas, %d threads) weight "
                 "%s", c->name, replicas, threads, ref->names[i]);
        close |= compare(what, ref->w[i], got->w[i]);
    }
    return close;
}

/* One replica on 2 and 3 workers (nodes split over all of them), and 2
** replicas on 3 workers (uneven groups of 2 and 1). */
static void check_case(const pcase *c)
{
    static const int config[3][2] = {{1, 2}, {1, 3}, {2, 3}};
    const char *how[3];
    result ref, got;

    memset(&ref, 0, sizeof ref);
    for (int k = 0; k < 3; k++) {
        int replicas = config[k][0], threads = config[k][1];

        if (k == 0 || replicas != config[k - 1][0]) {
            result_free(&ref);
            run_case(c, "cpu", 1, replicas, &ref);
        }
        memset(&got, 0, sizeof got);
        run_case(c, "ipumodel", threads, replicas, &got);
        how[k] = compare_results(c, &ref, &got, threads, replicas) ?
                     "within 1e-6" : "bitwise";
        result_free(&got);
    }
    result_free(&ref);
    printf("parity %-20s %-9s ipumodel R1 x 2 threads: %s, R1 x 3: %s, "
           "R2 x 3: %s\n", c->name, c->training ? "training" : "inference",
           how[0], how[1], how[2]);
    fflush(stdout);
}

START_TEST(binary_ops_match)
{
    pcase c = {pc_binary_ops[_i], pc_b_binary, 1};

    pc_case_arg = _i;
    check_case(&c);
}
END_TEST

START_TEST(unary_ops_match)
{
    pcase c = {pc_unary_ops[_i], pc_b_unary, 1};

    pc_case_arg = _i;
    check_case(&c);
}
END_TEST

START_TEST(compare_ops_match)
{
    pcase c = {pc_compare_ops[_i], pc_b_compare, 0};

    pc_case_arg = _i;
    check_case(&c);
}
END_TEST

START_TEST(op_cases_match)
{
    check_case(&pc_cases[_i]);
}
END_TEST

START_TEST(mlp_inference_and_training_match)
{
    pcase train = {"mlp", pc_b_mlp, 1}, infer = {"mlp_infer", pc_b_mlp, 0};

    check_case(&train);
    check_case(&infer);
}
END_TEST

START_TEST(pipelined_mlp_matches)
{
    pcase train = {"mlp_pipelined", pc_b_mlp_pipe, 1};
    pcase infer = {"mlp_pipelined_infer", pc_b_mlp_pipe, 0};

    check_case(&train);
    check_case(&infer);
}
END_TEST

/* ---- coverage ----------------------------------------------------------- */

static const char *const families[] = {"math", "tensor", "nn", "loss",
                                       "popc"};

static int is_family(const char *plugin)
{
    for (int i = 0; i < PC_N(families); i++)
        if (!strcmp(plugin, families[i]))
            return 1;
    return 0;
}

static const popc_op_def *generic_op;

/* Float inputs [PC_B, 64, 64] in [0.5, 1.5) and the op with no attributes. */
static void b_generic(bld *b)
{
    const popc_op_def *d = generic_op;
    int in[3], out[MAX_OUT], n_in = d->min_inputs > 0 ? d->min_inputs : 1;
    int n_out = d->min_outputs > 0 ? d->min_outputs : 1;

    ck_assert_int_le(n_in, 3);
    ck_assert_int_le(n_out, MAX_OUT);
    for (int i = 0; i < n_in; i++)
        in[i] = pc_in3(b, 0.5, 1.5);
    ck_assert_msg(pc_nodes_n(b, d->domain, d->name, in, n_in, NULL, 0, out,
                          n_out),
                  "no parity case for %s::%s and the generic one (%d float "
                  "inputs [%d, 64, 64]) does not build: %s; add a case to "
                  "tests/check_backend_parity.c", d->domain, d->name, n_in,
                  PC_B, popc_last_error());
    for (int j = 0; j < n_out; j++)
        pc_output(b, out[j]);
}

static void cover_builder(void (*build)(bld *), int training, int arg)
{
    pcase c = {"coverage", build, training};
    bld b;

    pc_case_arg = arg;
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
    for (int i = 0; i < PC_N(pc_binary_ops); i++)
        cover_builder(pc_b_binary, 1, i);
    for (int i = 0; i < PC_N(pc_unary_ops); i++)
        cover_builder(pc_b_unary, 1, i);
    for (int i = 0; i < PC_N(pc_compare_ops); i++)
        cover_builder(pc_b_compare, 0, i);
    for (int i = 0; i < PC_N(pc_cases); i++)
        cover_builder(pc_cases[i].build, pc_cases[i].training, 0);
    cover_builder(pc_b_mlp, 1, 0);
    for (int p = 0; p < popc_registry_plugin_count(reg); p++) {
        popc_plugin_record rec = popc_registry_plugin_at(reg, p);

        if (!is_family(rec.name))
            continue;
        for (int j = 0; j < rec.n_ops; j++) {
            const char *item = popc_registry_plugin_item(reg, p, j);
            const char *sep = strstr(item, "::"), *at = strchr(item, '@');
            char domain[64], name[64], key[136];
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
           "covered, %d of them by generic cases\n", n_covered,
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
    tcase_add_loop_test(ops, binary_ops_match, 0, PC_N(pc_binary_ops));
    tcase_add_loop_test(ops, unary_ops_match, 0, PC_N(pc_unary_ops));
    tcase_add_loop_test(ops, compare_ops_match, 0, PC_N(pc_compare_ops));
    tcase_add_loop_test(ops, op_cases_match, 0, PC_N(pc_cases));
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
