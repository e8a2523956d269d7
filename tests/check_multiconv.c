/* check_multiconv.c - poptorch.MultiConv (popc_multiconv_begin/end):
** - values and trained weights equal the separate convolutions' bitwise
**   (cpu and ipumodel), and the backward convolutions form a group too;
** - the parallel plan: the IPU model gives the convolutions disjoint tiles
**   and the run costs the slowest of them (hand-summed from the report),
**   less than the serial plan;
** - perConvReservedTiles and cycleBackOff set the tiles as the planner's
**   rule says (backends/common/multiconv.c);
** - per-convolution available memory, partials type (against whole-model
**   runs with Precision.setPartialsType) and dithering (against
**   Training.setConvolutionDithering);
** - the refusals. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "popc/helpers.h"
#include "popc/precision.h"
#include "tests/minijson.h"
#include "tests/profile_files.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

static const char *const backends[] = {"cpu", "ipumodel"};

/* Conv A: [1, 8, 16, 16] * [16, 8, 3, 3], or with `big_a` [1, 16, 32, 32]
** * [32, 16, 3, 3] (alone it would take every tile); conv B: [1, 4, 16,
** 16] * [8, 4, 3, 3]; both padded to keep their size. */
static const int64_t small_xa[4] = {1, 8, 16, 16}, small_wa[4] = {16, 8, 3, 3};
static const int64_t big_xa[4] = {1, 16, 32, 32}, big_wa[4] = {32, 16, 3, 3};
static const int64_t xb_d[4] = {1, 4, 16, 16}, wb_d[4] = {8, 4, 3, 3};
static int big_a;
#define xa_d (big_a ? big_xa : small_xa)
#define wa_d (big_a ? big_wa : small_wa)

static popc_tensor *filled(const int64_t *d, int rank, int salt)
{
    popc_tensor *t = NULL;
    int64_t n = 1;

    for (int i = 0; i < rank; i++)
        n *= d[i];
    OK(popc_tensor_new(POPC_DTYPE_F32, d, rank, &t));
    for (int64_t i = 0; i < n; i++)
        ((float *)popc_tensor_data(t))[i] =
            (float)((i * 7919 + salt * 104729) % 2001 - 1000) / 731.0f;
    return t;
}

static int conv(popc_graph *g, int x, int w, const char *name)
{
    static const int64_t k[2] = {3, 3}, pads[4] = {1, 1, 1, 1};
    popc_attr a[2] = {
        {.name = "kernel_shape", .type = POPC_ATTR_INTS, .n = 2, .ints = k},
        {.name = "pads", .type = POPC_ATTR_INTS, .n = 4, .ints = pads}};
    int y;

    OK(popc_graph_add_node(g, NULL, "Conv", 0, (int[]){x, w}, 2, &y, 1, a, 2,
                           name, NULL));
    return y;
}

/* The two convolutions, in a MultiConv when o is given (o->size 0: no
** MultiConv). Training: loss = mean(ya^2) + mean(yb^2); else outputs ya,
** yb. *end receives popc_multiconv_end's status. */
static popc_graph *model(const popc_multiconv_options *o, int training,
                         popc_status *end)
{
    popc_graph *g = NULL;
    popc_tensor *wa = filled(wa_d, 4, 1), *wb = filled(wb_d, 4, 2);
    popc_multiconv *mc = NULL;
    int xa, xb, wav, wbv, ya, yb;

    OK(popc_graph_new("two_convs", &g));
    OK(popc_graph_add_input(g, "xa", POPC_DTYPE_F32, xa_d, 4, &xa));
    OK(popc_graph_add_input(g, "xb", POPC_DTYPE_F32, xb_d, 4, &xb));
    OK(popc_graph_add_initializer(g, "wa", wa, 1, &wav));
    OK(popc_graph_add_initializer(g, "wb", wb, 1, &wbv));
    if (o)
        OK(popc_multiconv_begin(g, &mc));
    ya = conv(g, xa, wav, "conv_a");
    yb = conv(g, xb, wbv, "conv_b");
    if (o) {
        popc_status st = popc_multiconv_end(mc, o->size ? o : NULL);

        if (end)
            *end = st;
        else
            OK(st);
    }
    if (training) {
        popc_layers *L = NULL;
        int sa, sb, qa, qb, s, loss;
        popc_attr keep = {.name = "keepdims", .type = POPC_ATTR_INT, .i = 0};

        OK(popc_graph_add_node(g, NULL, "Mul", 0, (int[]){ya, ya}, 2, &qa, 1,
                               NULL, 0, "qa", NULL));
        OK(popc_graph_add_node(g, NULL, "Mul", 0, (int[]){yb, yb}, 2, &qb, 1,
                               NULL, 0, "qb", NULL));
        OK(popc_graph_add_node(g, NULL, "ReduceMean", 0, &qa, 1, &sa, 1,
                               &keep, 1, "ma", NULL));
        OK(popc_graph_add_node(g, NULL, "ReduceMean", 0, &qb, 1, &sb, 1,
                               &keep, 1, "mb", NULL));
        OK(popc_graph_add_node(g, NULL, "Add", 0, (int[]){sa, sb}, 2, &s, 1,
                               NULL, 0, "s", NULL));
        OK(popc_layers_new(g, 0, &L));
        OK(popc_nn_identity_loss(L, s, "sum", &loss));
        OK(popc_graph_add_output(g, loss));
        popc_layers_free(L);
    } else {
        OK(popc_graph_add_output(g, ya));
        OK(popc_graph_add_output(g, yb));
    }
    popc_tensor_free(wa);
    popc_tensor_free(wb);
    return g;
}

typedef struct run {
    popc_tensor *out[2];       /* ya, yb, or the weights wa, wb */
    mj_value *report;          /* ipumodel with profiling only */
    popc_status st;
} run;

/* Runs g once; `set` holds "name=value" options (NULL-terminated). */
static run run_graph(popc_graph *g, const char *backend, int training,
                     const char *const *set)
{
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    popc_tensor *in[2] = {filled(xa_d, 4, 3), filled(xb_d, 4, 4)};
    popc_tensor *out[2] = {NULL, NULL};
    char *dir = NULL;
    run r = {0};

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    if (strcmp(backend, "ipumodel") == 0) {
        dir = pf_temp_dir();
        OK(popc_options_set(o, "enableProfiling", dir));
    }
    for (int i = 0; set && set[i]; i++) {
        char name[128];
        const char *eq = strchr(set[i], '=');

        snprintf(name, sizeof name, "%.*s", (int)(eq - set[i]), set[i]);
        OK(popc_options_set(o, name, eq + 1));
    }
    if (training) {
        OK(popc_optimizer_new("sgd", &opt));
        OK(popc_optimizer_set(opt, "lr", 0.1));
        OK(popc_model_new_training(g, o, opt, &m));
    } else {
        OK(popc_model_new_inference(g, o, &m));
    }
    r.st = popc_model_run(m, in, 2, out, training ? 1 : 2);
    if (r.st == POPC_OK && training) {
        const popc_tensor *w;

        OK(popc_model_get_weight(m, "wa", &w));
        OK(popc_tensor_clone(w, &r.out[0]));
        OK(popc_model_get_weight(m, "wb", &w));
        OK(popc_tensor_clone(w, &r.out[1]));
        popc_tensor_free(out[0]);
    } else if (r.st == POPC_OK) {
        r.out[0] = out[0];
        r.out[1] = out[1];
    }
    if (dir && r.st == POPC_OK) {
        char *sub = pf_sub_dir(dir, training ? "training" : "inference");

        r.report = pf_read_profile(sub);
        free(sub);
    }
    if (dir) {
        pf_remove_dir(dir);
        free(dir);
    }
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
    return r;
}

static void done(run *r)
{
    popc_tensor_free(r->out[0]);
    popc_tensor_free(r->out[1]);
    mj_free(r->report);
}

static const mj_value *op_named(const run *r, const char *name)
{
    const mj_value *e;

    for (int i = 0; (e = mj_at(mj_get(r->report, "ops"), i)) != NULL; i++)
        if (strcmp(mj_str(e, "name"), name) == 0)
            return e;
    ck_abort_msg("no op '%s' in the report", name);
    return NULL;
}

static double num(const mj_value *e, const char *key)
{
    return mj_num(e, key, -1.0);
}

/* A MultiConv with the defaults and one change. */
static popc_multiconv_options defaults(void)
{
    popc_multiconv_options o;

    popc_multiconv_options_init(&o);
    return o;
}

START_TEST(values_and_training_equal_separate_convolutions)
{
    popc_multiconv_options o = defaults();

    for (int training = 0; training < 2; training++) {
        popc_graph *plain = model(NULL, training, NULL);
        popc_graph *multi = model(&o, training, NULL);
        run p = run_graph(plain, backends[_i], training, NULL);
        run mc = run_graph(multi, backends[_i], training, NULL);

        OK(p.st);
        OK(mc.st);
        for (int k = 0; k < 2; k++)
            ck_assert_msg(popc_tensor_max_abs_diff(p.out[k], mc.out[k]) ==
                              0.0,
                          "%s, training %d, output %d differs", backends[_i],
                          training, k);
        if (training && mc.report) {
            /* the weight gradients of the two form a group of their own */
            const mj_value *e;
            int grouped = 0;

            for (int i = 0; (e = mj_at(mj_get(mc.report, "ops"), i)); i++)
                if (strcmp(mj_str(e, "op"), "ConvGradWeight") == 0 &&
                    num(e, "parallel_with") >= 0)
                    grouped++;
            ck_assert_int_eq(grouped, 2);
        }
        done(&p);
        done(&mc);
        popc_graph_free(plain);
        popc_graph_free(multi);
    }
}
END_TEST

START_TEST(parallel_plan_runs_the_group_at_once)
{
    popc_multiconv_options o = defaults(), serial = defaults();
    popc_graph *g, *s = NULL;
    run r, rs;
    const mj_value *a, *b, *e;
    double sum = 0.0;
    int lead;

    /* without back-off each takes the tiles it would use alone */
    o.cycle_back_off = 0.0;
    g = model(&o, 0, NULL);
    r = run_graph(g, "ipumodel", 0, NULL);

    serial.plan_type = POPC_MULTICONV_PLAN_SERIAL;
    s = model(&serial, 0, NULL);
    rs = run_graph(s, "ipumodel", 0, NULL);
    a = op_named(&r, "conv_a");
    b = op_named(&r, "conv_b");
    lead = (int)num(a, "index");
    ck_assert_int_eq((int)num(a, "parallel_with"), lead);
    ck_assert_int_eq((int)num(b, "parallel_with"), lead);
    /* disjoint runs of tiles, the larger convolution first */
    ck_assert(num(a, "first_tile") == 0);
    ck_assert(num(b, "first_tile") == num(a, "tiles"));
    /* planned alone, each uses the same tiles as in the group here */
    ck_assert_msg(num(a, "tiles") == num(op_named(&rs, "conv_a"), "tiles") &&
                      num(b, "tiles") ==
                          num(op_named(&rs, "conv_b"), "tiles"),
                  "tiles in the group %g, %g; alone %g, %g", num(a, "tiles"),
                  num(b, "tiles"), num(op_named(&rs, "conv_a"), "tiles"),
                  num(op_named(&rs, "conv_b"), "tiles"));
    ck_assert_int_eq((int)num(op_named(&rs, "conv_b"), "parallel_with"), -1);
    for (int i = 0; (e = mj_at(mj_get(r.report, "ops"), i)) != NULL; i++)
        if (num(e, "parallel_with") < 0)
            sum += num(e, "cycles");
    sum += fmax(num(a, "cycles"), num(b, "cycles"));
    /* and the host copies of the inputs and of the outputs (cost.c) */
    sum += 4.0 * (8 + 4) * 256 / 12.0 + 3000.0;
    sum += 4.0 * (16 + 8) * 256 / 12.0 + 3000.0;
    ck_assert_msg(fabs(sum - num(r.report, "cycles")) <= 0.5, "report "
                  "cycles %g, ops give %g", num(r.report, "cycles"), sum);
    /* serially, both are paid */
    ck_assert_msg(num(r.report, "cycles") < num(rs.report, "cycles") &&
                      fabs(num(rs.report, "cycles") - num(r.report, "cycles") -
                           fmin(num(a, "cycles"), num(b, "cycles"))) <= 1.0,
                  "parallel %g, serial %g", num(r.report, "cycles"),
                  num(rs.report, "cycles"));
    done(&r);
    done(&rs);
    popc_graph_free(g);
    popc_graph_free(s);
}
END_TEST

/* Tiles of conv_a with the given back-off and reserved tiles. */
static run planned(double back_off, int64_t reserved)
{
    popc_multiconv_options o = defaults();
    popc_graph *g;
    run r;

    o.cycle_back_off = back_off;
    o.per_conv_reserved_tiles = reserved;
    g = model(&o, 0, NULL);
    r = run_graph(g, "ipumodel", 0, NULL);
    popc_graph_free(g);
    return r;
}

START_TEST(reserved_tiles_and_cycle_back_off_plan_the_tiles)
{
    run alone = planned(0.0, 0), none = planned(0.0, 50);
    run half = planned(0.5, 50), tight, too_many;

    big_a = 1;
    tight = planned(0.0, 700);
    too_many = planned(0.0, 800);
    big_a = 0;
    const mj_value *a0 = op_named(&none, "conv_a");
    const mj_value *a5 = op_named(&half, "conv_a");

    /* no back-off: conv_a takes every tile it would use alone */
    ck_assert(num(a0, "tiles") == num(op_named(&alone, "conv_a"), "tiles"));
    /* back-off 0.5: fewer tiles, at most 1.5x the cycles */
    ck_assert_msg(num(a5, "tiles") < num(a0, "tiles"), "%g vs %g tiles",
                  num(a5, "tiles"), num(a0, "tiles"));
    ck_assert(num(a5, "cycles") <= 1.5 * num(a0, "cycles") + 0.1);
    ck_assert(num(op_named(&half, "conv_b"), "first_tile") ==
              num(a5, "tiles"));
    /* 700 reserved for conv_b leave the big conv_a 1472 - 700 tiles */
    ck_assert(num(op_named(&tight, "conv_a"), "tiles") == 772);
    ck_assert(num(op_named(&tight, "conv_b"), "first_tile") == 772);
    /* 2 x 800 reserved tiles do not fit 1472 */
    ck_assert_int_eq(too_many.st, POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "lower perConvReservedTiles") !=
                      NULL,
                  "%s", popc_last_error());
    done(&alone);
    done(&none);
    done(&half);
    done(&tight);
    done(&too_many);
}
END_TEST

START_TEST(per_convolution_available_memory)
{
    popc_multiconv_options o = defaults();
    const double amp[2] = {0.0001, 0.5};
    popc_graph *g, *plain;
    run r, p;

    big_a = 1;
    plain = model(NULL, 0, NULL);
    o.n_convs = 2;
    o.available_memory_proportions = amp;
    g = model(&o, 0, NULL);
    for (int k = 0; k < popc_graph_n_nodes(g); k++)
        if (strcmp(popc_graph_node_op(g, k), "Conv") == 0)
            ck_assert(popc_graph_node_annotations(g, k).available_memory ==
                      amp[strcmp(popc_graph_node_name(g, k), "conv_b") == 0]);
    r = run_graph(g, "ipumodel", 0, NULL);
    p = run_graph(plain, "ipumodel", 0, NULL);
    big_a = 0;
    /* conv_a's temporaries no longer fit 0.01% of a tile: more steps */
    ck_assert(num(op_named(&p, "conv_a"), "temp_bytes") > 0);
    ck_assert_msg(num(op_named(&r, "conv_a"), "serial") >
                      num(op_named(&p, "conv_a"), "serial"),
                  "serial %g vs %g", num(op_named(&r, "conv_a"), "serial"),
                  num(op_named(&p, "conv_a"), "serial"));
    done(&r);
    done(&p);
    popc_graph_free(g);
    popc_graph_free(plain);
}
END_TEST

/* The float16 copy of model(o). */
static popc_graph *half_model(const popc_multiconv_options *o)
{
    popc_graph *g = model(o, 0, NULL), *h = NULL;

    OK(popc_graph_to_half(g, NULL, NULL, &h));
    popc_graph_free(g);
    return h;
}

START_TEST(per_convolution_partials_type)
{
    static const char *const half_opt[] = {"Precision.setPartialsType=half",
                                           NULL};
    popc_multiconv_options o = defaults();
    const popc_dtype types[2] = {POPC_DTYPE_F16, POPC_DTYPE_F32};
    popc_graph *plain = half_model(NULL), *mixed;
    popc_graph *f32 = NULL;
    run all_half, all_float, r, bad;

    o.n_convs = 2;
    o.partials_types = types;
    mixed = half_model(&o);
    all_half = run_graph(plain, "cpu", 0, half_opt);
    all_float = run_graph(plain, "cpu", 0, NULL);
    r = run_graph(mixed, "cpu", 0, NULL);
    OK(r.st);
    ck_assert_msg(popc_tensor_max_abs_diff(all_half.out[0], all_float.out[0]) >
                      0.0,
                  "the data must tell half partials from float ones");
    ck_assert(popc_tensor_max_abs_diff(r.out[0], all_half.out[0]) == 0.0);
    ck_assert(popc_tensor_max_abs_diff(r.out[1], all_float.out[1]) == 0.0);
    /* half partials on a float32 convolution are refused */
    f32 = model(&o, 0, NULL);
    bad = run_graph(f32, "cpu", 0, NULL);
    ck_assert_int_eq(bad.st, POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "half partials need a float16 "
                         "convolution") != NULL, "%s", popc_last_error());
    done(&all_half);
    done(&all_float);
    done(&r);
    done(&bad);
    popc_graph_free(plain);
    popc_graph_free(mixed);
    popc_graph_free(f32);
}
END_TEST

/* Settings given once apply to every convolution of the scope. */
START_TEST(settings_given_once_apply_to_all)
{
    popc_multiconv_options o = defaults();
    popc_graph *g;
    int convs = 0;

    o.available_memory_proportion = 0.25;
    o.partials_type = POPC_DTYPE_F32;
    o.conv_dithering = 0;
    o.plan_type = POPC_MULTICONV_PLAN_SERIAL;
    g = model(&o, 0, NULL);
    for (int k = 0; k < popc_graph_n_nodes(g); k++) {
        popc_attrs a = popc_graph_node_attrs(g, k);

        if (strcmp(popc_graph_node_op(g, k), "Conv") != 0)
            continue;
        convs++;
        ck_assert(popc_graph_node_annotations(g, k).available_memory ==
                  0.25);
        ck_assert_str_eq(popc_attr_string(&a, "partials_type", ""), "float");
        ck_assert_int_eq(popc_attr_int(&a, "__conv_dithering", -1), 0);
        ck_assert_int_eq(popc_attr_int(&a, "__multiconv_plan", -1),
                         POPC_MULTICONV_PLAN_SERIAL);
    }
    ck_assert_int_eq(convs, 2);
    popc_graph_free(g);
}
END_TEST

START_TEST(per_convolution_dithering)
{
    static const char *const dither[] = {
        "Training.setConvolutionDithering=true", NULL};
    popc_multiconv_options o = defaults();
    const int d[2] = {1, 0};
    popc_graph *g, *plain = model(NULL, 0, NULL);
    run r, all, par;

    o.plan_type = POPC_MULTICONV_PLAN_SERIAL;
    o.n_convs = 2;
    o.conv_dithering_list = d;
    g = model(&o, 0, NULL);
    r = run_graph(g, "ipumodel", 0, dither);
    all = run_graph(plain, "ipumodel", 0, dither);
    ck_assert(num(op_named(&r, "conv_a"), "first_tile") ==
              num(op_named(&all, "conv_a"), "first_tile"));
    ck_assert(num(op_named(&all, "conv_b"), "first_tile") != 0);
    /* conv_b's own 0 wins over the option */
    ck_assert(num(op_named(&r, "conv_b"), "first_tile") == 0);
    popc_graph_free(g);
    /* the parallel plan fixes the start tiles */
    o.plan_type = POPC_MULTICONV_PLAN_PARALLEL;
    g = model(&o, 0, NULL);
    par = run_graph(g, "ipumodel", 0, NULL);
    ck_assert_int_eq(par.st, POPC_EUNSUPPORTED);
    ck_assert_msg(strstr(popc_last_error(), "not supported yet") != NULL,
                  "%s", popc_last_error());
    done(&r);
    done(&all);
    done(&par);
    popc_graph_free(g);
    popc_graph_free(plain);
}
END_TEST

START_TEST(misuse_is_refused)
{
    popc_multiconv_options o = defaults();
    const double amp[3] = {0.5, 0.5, 0.5};
    popc_graph *g = NULL;
    popc_multiconv *mc = NULL, *inner = NULL;
    popc_status st;

    o.n_convs = 3;
    o.available_memory_proportions = amp;
    g = model(&o, 0, &st);
    ck_assert_int_eq(st, POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "have 3 entries but the scope "
                         "holds 2") != NULL, "%s", popc_last_error());
    popc_graph_free(g);
    o = defaults();
    o.cycle_back_off = 2.0;
    g = model(&o, 0, &st);
    ck_assert_int_eq(st, POPC_EINVAL);
    popc_graph_free(g);
    o = defaults();
    o.plan_type = (popc_multiconv_plan_type)5;
    g = model(&o, 0, &st);
    ck_assert_int_eq(st, POPC_EINVAL);
    /* a scope without convolutions, and scopes that nest */
    OK(popc_multiconv_begin(g, &mc));
    ck_assert_int_eq(popc_multiconv_end(mc, NULL), POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "no convolution") != NULL, "%s",
                  popc_last_error());
    OK(popc_multiconv_begin(g, &mc));
    OK(popc_multiconv_begin(g, &inner));
    conv(g, popc_graph_input(g, 0), popc_graph_find_value(g, "wa"), "c3");
    OK(popc_multiconv_end(inner, NULL));
    ck_assert_int_eq(popc_multiconv_end(mc, NULL), POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "do not nest") != NULL, "%s",
                  popc_last_error());
    ck_assert_int_eq(popc_multiconv_end(NULL, NULL), POPC_EINVAL);
    popc_graph_free(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("multiconv");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, values_and_training_equal_separate_convolutions,
                        0, 2);
    tcase_add_test(tc, parallel_plan_runs_the_group_at_once);
    tcase_add_test(tc, reserved_tiles_and_cycle_back_off_plan_the_tiles);
    tcase_add_test(tc, per_convolution_available_memory);
    tcase_add_test(tc, per_convolution_partials_type);
    tcase_add_test(tc, per_convolution_dithering);
    tcase_add_test(tc, settings_given_once_apply_to_all);
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
