/* check_modules.c - PopXL-style modules (popc/module.h), cpu and ipumodel:
** - three calls of one bound module equal the same ops written inline,
**   forward and after SGD steps, and the graph holds one outlined body
**   (three Call nodes, one body id);
** - two bindings have separate variables;
** - the autodiff module's gradients equal what an SGD step (lr 1) of an
**   ordinary training model takes off the weights;
** - an explicit forward / backward / update program trains like popc's
**   own SGD;
** - weights copied from a training model into an inference model give the
**   same outputs. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "popc/module.h"
#include "tests/minijson.h"
#include "tests/profile_files.h"

#ifndef STEPS
#define STEPS 4
#endif
#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

static const char *const backends[] = {"cpu", "ipumodel"};

/* block: y = relu(x W + b), x [4, 8], W [8, 8], b [8] */
static popc_status build_block(popc_module_builder *b, void *user)
{
    int64_t xd[2] = {4, 8}, wd[2] = {8, 8}, bd[1] = {8};
    popc_variable_factory normal = {POPC_INIT_NORMAL, 0.0, 0.3, NULL, 0};
    popc_variable_factory bias = {POPC_INIT_CONSTANT, 0.05, 0.0, NULL, 0};
    popc_graph *g = popc_module_builder_graph(b);
    int x, w, bv, h, in[2], y;
    popc_status st;

    if (user) /* frozen variables: the explicit program updates them */
        normal.frozen = bias.frozen = 1;
    if ((st = popc_module_add_input(b, "x", POPC_DTYPE_F32, xd, 2, &x)) ||
        (st = popc_module_add_variable(b, "weight", POPC_DTYPE_F32, wd, 2,
                                       &normal, &w)) ||
        (st = popc_module_add_variable(b, "bias", POPC_DTYPE_F32, bd, 1,
                                       &bias, &bv)))
        return st;
    in[0] = x;
    in[1] = w;
    if ((st = popc_graph_add_node(g, NULL, "MatMul", 0, in, 2, &h, 1, NULL, 0,
                                  "mm", NULL)))
        return st;
    in[0] = h;
    in[1] = bv;
    if ((st = popc_graph_add_node(g, NULL, "Add", 0, in, 2, &h, 1, NULL, 0,
                                  "add", NULL)) ||
        (st = popc_graph_add_node(g, NULL, "Relu", 0, &h, 1, &y, 1, NULL, 0,
                                  "relu", NULL)))
        return st;
    return popc_module_add_output(b, "y", y);
}

static popc_tensor *input_x(void)
{
    int64_t xd[2] = {4, 8};
    popc_tensor *t = NULL;
    float *p;

    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &t));
    p = popc_tensor_data(t);
    for (int i = 0; i < 32; i++)
        p[i] = 0.1f * (float)((i * 7) % 11) - 0.4f;
    return t;
}

/* loss = mean(y^2) */
static void add_loss(popc_graph *g, int y)
{
    popc_layers *L = NULL;
    int in[2] = {y, y}, sq, loss;

    OK(popc_graph_add_node(g, NULL, "Mul", 0, in, 2, &sq, 1, NULL, 0, "sq",
                           NULL));
    OK(popc_layers_new(g, 0, &L));
    OK(popc_nn_identity_loss(L, sq, "mean", &loss));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
}

/* Parent graph: three calls of one binding "blk" (or inline copies of the
** same ops reading the same weights when inline is set). */
static popc_graph *three_calls(const popc_module *m, int inline_ops,
                               popc_bound **bound_out, int *y_out)
{
    int64_t xd[2] = {4, 8};
    popc_graph *g = NULL;
    popc_bound *b = NULL;
    int x, y;

    OK(popc_graph_new("parent", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_module_bind(m, g, "blk", 42, &b));
    y = x;
    for (int k = 0; k < 3; k++) {
        if (inline_ops) {
            int in[2] = {y, popc_bound_variable(b, "weight")}, h;

            OK(popc_graph_add_node(g, NULL, "MatMul", 0, in, 2, &h, 1, NULL,
                                   0, NULL, NULL));
            in[0] = h;
            in[1] = popc_bound_variable(b, "bias");
            OK(popc_graph_add_node(g, NULL, "Add", 0, in, 2, &h, 1, NULL, 0,
                                   NULL, NULL));
            OK(popc_graph_add_node(g, NULL, "Relu", 0, &h, 1, &y, 1, NULL, 0,
                                   NULL, NULL));
        } else {
            OK(popc_module_call(g, m, b, &y, 1, &y, 1));
        }
    }
    if (y_out)
        *y_out = y;
    add_loss(g, y);
    if (bound_out)
        *bound_out = b;
    else
        popc_bound_free(b);
    return g;
}

static popc_model *train(popc_graph *g, const char *backend, double lr,
                         int steps)
{
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    popc_tensor *x = input_x(), *loss = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", lr));
    OK(popc_model_new_training(g, o, opt, &m));
    for (int s = 0; s < steps; s++) {
        OK(popc_model_run(m, &x, 1, &loss, 1));
        popc_tensor_free(loss);
    }
    popc_tensor_free(x);
    popc_optimizer_free(opt);
    popc_options_free(o);
    return m;
}

static void same_weight(popc_model *a, popc_model *b, const char *name,
                        double tol)
{
    const popc_tensor *x = NULL, *y = NULL;
    double d;

    OK(popc_model_get_weight(a, name, &x));
    OK(popc_model_get_weight(b, name, &y));
    d = popc_tensor_max_abs_diff(x, y);
    ck_assert_msg(d <= tol, "%s: largest difference %g", name, d);
}

START_TEST(calls_equal_inline_ops)
{
    popc_module *m = NULL;
    popc_graph *called, *inl;
    popc_tensor *x = input_x(), *a = NULL, *b = NULL;
    popc_model *ma, *mb;
    int ya, yb, calls = 0;
    const char *id = NULL;

    OK(popc_module_new("block", build_block, NULL, &m));
    called = three_calls(m, 0, NULL, &ya);
    inl = three_calls(m, 1, NULL, &yb);
    /* one outlined body: three Call nodes naming the same body */
    for (int n = 0; n < popc_graph_n_nodes(called); n++) {
        popc_attrs at = popc_graph_node_attrs(called, n);
        const popc_attr *bid = popc_attrs_find(&at, "__body_id");

        if (strcmp(popc_graph_node_op(called, n), "Call") != 0)
            continue;
        calls++;
        ck_assert_ptr_nonnull(bid);
        if (!id)
            id = bid->s;
        ck_assert_str_eq(bid->s, id);
    }
    ck_assert_int_eq(calls, 3);
    OK(popc_graph_eval(called, &x, 1, &ya, 1, &a, 0, 0));
    OK(popc_graph_eval(inl, &x, 1, &yb, 1, &b, 0, 0));
    ck_assert_msg(popc_tensor_max_abs_diff(a, b) <= 1e-6, "forward %g",
                  popc_tensor_max_abs_diff(a, b));
    /* training through the calls: the Call's gradient */
    ma = train(called, backends[_i], 0.1, 3);
    mb = train(inl, backends[_i], 0.1, 3);
    same_weight(ma, mb, "blk/weight", 1e-6);
    same_weight(ma, mb, "blk/bias", 1e-6);
    popc_model_free(ma);
    popc_model_free(mb);
    popc_tensor_free(a);
    popc_tensor_free(b);
    popc_tensor_free(x);
    popc_graph_free(called);
    popc_graph_free(inl);
    popc_module_free(m);
}
END_TEST

/* The IPU model's report of an inference run of g on input_x(), at
** optimizationLevel 0: the graph optimizer rewrites the inline graph
** but not the Calls' bodies, and the comparison is of the same ops. */
static mj_value *report_of(popc_graph *g)
{
    popc_tensor *x = input_x();
    mj_value *r = pf_inference_report_at(g, &x, 1, 1, 0);

    popc_tensor_free(x);
    return r;
}

/* A Call costs what its body's ops cost inline: the same flops and bytes
** in the IPU model's report, and cycles. */
START_TEST(call_costs_its_body)
{
    popc_module *m = NULL;
    popc_graph *called, *inl;
    mj_value *rc, *ri;
    const mj_value *e;
    double flops_c = 0.0, flops_i = 0.0, bytes_c = 0.0, bytes_i = 0.0;
    int calls = 0;

    OK(popc_module_new("block", build_block, NULL, &m));
    called = three_calls(m, 0, NULL, NULL);
    inl = three_calls(m, 1, NULL, NULL);
    rc = report_of(called);
    ri = report_of(inl);
    for (int i = 0; (e = mj_at(mj_get(rc, "ops"), i)) != NULL; i++) {
        flops_c += mj_num(e, "flops", 0.0);
        bytes_c += mj_num(e, "bytes", 0.0);
        if (strcmp(mj_str(e, "op"), "Call") == 0) {
            calls++;
            ck_assert_msg(mj_num(e, "cycles", 0.0) > 150.0, "a Call of a "
                          "MatMul, Add and Relu costs more than a sync");
        }
    }
    for (int i = 0; (e = mj_at(mj_get(ri, "ops"), i)) != NULL; i++) {
        flops_i += mj_num(e, "flops", 0.0);
        bytes_i += mj_num(e, "bytes", 0.0);
    }
    ck_assert_int_eq(calls, 3);
    ck_assert_msg(flops_c == flops_i && bytes_c == bytes_i, "calls: %g flops "
                  "%g bytes; inline: %g flops %g bytes", flops_c, bytes_c,
                  flops_i, bytes_i);
    mj_free(rc);
    mj_free(ri);
    popc_graph_free(called);
    popc_graph_free(inl);
    popc_module_free(m);
}
END_TEST

/* One Scan over `steps` rows: s <- s + x_t, y_t = s * s. */
static popc_graph *scan_graph(int64_t steps)
{
    int64_t sd[1] = {2}, xd[2] = {steps, 2};
    popc_graph *body = NULL, *g = NULL;
    popc_attr a[2];
    int bs, bx, t, y, s0, seq, out[2];

    OK(popc_graph_new("step", &body));
    OK(popc_graph_add_input(body, "s", POPC_DTYPE_F32, sd, 1, &bs));
    OK(popc_graph_add_input(body, "x", POPC_DTYPE_F32, sd, 1, &bx));
    OK(popc_graph_add_node(body, NULL, "Add", 0, (int[]){bs, bx}, 2, &t, 1,
                           NULL, 0, "add", NULL));
    OK(popc_graph_add_node(body, NULL, "Mul", 0, (int[]){t, t}, 2, &y, 1,
                           NULL, 0, "sq", NULL));
    OK(popc_graph_add_output(body, t));
    OK(popc_graph_add_output(body, y));
    OK(popc_graph_new("scan", &g));
    OK(popc_graph_add_input(g, "s0", POPC_DTYPE_F32, sd, 1, &s0));
    OK(popc_graph_add_input(g, "seq", POPC_DTYPE_F32, xd, 2, &seq));
    a[0] = (popc_attr){.name = "body", .type = POPC_ATTR_GRAPH, .graph = body};
    a[1] = popc_attr_make_int("num_scan_inputs", 1);
    OK(popc_graph_add_node(g, NULL, "Scan", 0, (int[]){s0, seq}, 2, out, 2, a,
                           2, "scan", NULL));
    OK(popc_graph_add_output(g, out[0]));
    OK(popc_graph_add_output(g, out[1]));
    popc_graph_free(body);
    return g;
}

/* The flops the IPU model's report gives the Scan of scan_graph(steps). */
static double scan_flops(int64_t steps)
{
    int64_t sd[1] = {2}, xd[2] = {steps, 2};
    popc_graph *g = scan_graph(steps);
    popc_tensor *in[2] = {NULL, NULL};
    mj_value *r;
    const mj_value *e;
    double flops = -1.0;

    OK(popc_tensor_new(POPC_DTYPE_F32, sd, 1, &in[0]));
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &in[1]));
    r = pf_inference_report(g, in, 2, 2);
    for (int i = 0; (e = mj_at(mj_get(r, "ops"), i)) != NULL; i++)
        if (strcmp(mj_str(e, "op"), "Scan") == 0)
            flops = mj_num(e, "flops", -1.0);
    mj_free(r);
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_graph_free(g);
    return flops;
}

/* A Scan costs its body once per step. */
START_TEST(scan_costs_its_body_per_step)
{
    double one = scan_flops(1), five = scan_flops(5);

    ck_assert_msg(one > 0.0, "a Scan step costs its body: %g flops", one);
    ck_assert_msg(five == 5.0 * one, "5 steps: %g flops, one: %g", five, one);
}
END_TEST

START_TEST(bindings_are_separate)
{
    int64_t xd[2] = {4, 8};
    popc_module *m = NULL;
    popc_graph *g = NULL;
    popc_bound *b1 = NULL, *b2 = NULL;
    popc_model *t;
    const popc_tensor *w1 = NULL, *w2 = NULL;
    int x, y;

    OK(popc_module_new("block", build_block, NULL, &m));
    OK(popc_graph_new("two", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_module_bind(m, g, "first", 1, &b1));
    OK(popc_module_bind(m, g, "second", 2, &b2));
    ck_assert_int_ne(popc_bound_variable(b1, "weight"),
                     popc_bound_variable(b2, "weight"));
    OK(popc_module_call(g, m, b1, &x, 1, &y, 1));
    OK(popc_module_call(g, m, b2, &y, 1, &y, 1));
    add_loss(g, y);
    t = train(g, "cpu", 0.1, 1);
    OK(popc_model_get_weight(t, "first/weight", &w1));
    OK(popc_model_get_weight(t, "second/weight", &w2));
    ck_assert(popc_tensor_max_abs_diff(w1, w2) > 0.01);
    /* calling without a binding is refused, naming the variable */
    ck_assert_int_eq(popc_module_call(g, m, NULL, &x, 1, &y, 1),
                     POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "bind it"), "%s",
                  popc_last_error());
    popc_model_free(t);
    popc_bound_free(b1);
    popc_bound_free(b2);
    popc_graph_free(g);
    popc_module_free(m);
}
END_TEST

/* The backward module, called explicitly with dL/dy = the gradient of
** sum(y * 1), equals what SGD with lr 1 takes off the weights of a
** training model whose loss is sum(y). */
START_TEST(autodiff_module_gradients)
{
    int64_t xd[2] = {4, 8};
    popc_module *m = NULL, *gm = NULL;
    popc_graph *g = NULL, *t = NULL;
    popc_bound *b = NULL;
    popc_tensor *x = input_x(), *ones = NULL, *in[2], *got[2] = {0};
    popc_layers *L = NULL;
    popc_model *tm;
    int xv, gy, y, outs[3], loss, args[4], want[2];
    float *p;

    OK(popc_module_new("block", build_block, NULL, &m));
    OK(popc_module_autodiff(m, &gm));
    ck_assert_int_eq(popc_module_n_slots(gm), 4);
    ck_assert_str_eq(popc_module_slot(gm, 3, NULL), "grad:y");
    ck_assert_str_eq(popc_module_output_name(gm, 1), "grad:weight");
    /* explicit: (x, W, b, dy) -> (dx, dW, db) */
    OK(popc_graph_new("explicit", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &xv));
    OK(popc_graph_add_input(g, "dy", POPC_DTYPE_F32, xd, 2, &gy));
    OK(popc_module_bind(m, g, "blk", 42, &b));
    args[0] = xv;
    args[1] = popc_bound_variable(b, "weight");
    args[2] = popc_bound_variable(b, "bias");
    args[3] = gy;
    OK(popc_module_call(g, gm, NULL, args, 4, outs, 3));
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &ones));
    p = popc_tensor_data(ones);
    for (int i = 0; i < 32; i++)
        p[i] = 1.0f;
    in[0] = x;
    in[1] = ones;
    want[0] = outs[1];
    want[1] = outs[2];
    OK(popc_graph_eval(g, in, 2, want, 2, got, 0, 0));
    /* the same through an ordinary training model, loss sum(y) */
    OK(popc_graph_new("trained", &t));
    OK(popc_graph_add_input(t, "x", POPC_DTYPE_F32, xd, 2, &xv));
    popc_bound_free(b);
    OK(popc_module_bind(m, t, "blk", 42, &b));
    OK(popc_module_call(t, m, b, &xv, 1, &y, 1));
    OK(popc_layers_new(t, 0, &L));
    OK(popc_nn_identity_loss(L, y, "sum", &loss));
    OK(popc_graph_add_output(t, loss));
    popc_layers_free(L);
    tm = train(t, backends[_i], 1.0, 1);
    {
        static const char *const names[2] = {"weight", "bias"};

        for (int k = 0; k < 2; k++) {
            char full[64];
            const popc_tensor *after = NULL;
            popc_tensor *before = popc_graph_value_tensor(g, args[1 + k]);
            const float *pa, *pb, *pg;

            snprintf(full, sizeof full, "blk/%s", names[k]);
            OK(popc_model_get_weight(tm, full, &after));
            pa = popc_tensor_cdata(after);
            pb = popc_tensor_cdata(before);
            pg = popc_tensor_cdata(got[k]);
            for (int64_t i = 0; i < popc_tensor_numel(after); i++)
                ck_assert_msg(fabsf((pb[i] - pa[i]) - pg[i]) < 1e-5f,
                              "%s[%lld]: SGD took %g, the backward module "
                              "gives %g", names[k], (long long)i,
                              pb[i] - pa[i], pg[i]);
        }
    }
    popc_model_free(tm);
    popc_tensor_free(got[0]);
    popc_tensor_free(got[1]);
    popc_tensor_free(ones);
    popc_tensor_free(x);
    popc_bound_free(b);
    popc_graph_free(g);
    popc_graph_free(t);
    popc_module_free(gm);
    popc_module_free(m);
}
END_TEST

/* Forward call, loss mean(y^2), backward call, w -= lr * dw as buffer
** updates of frozen variables: the program trains like SGD. */
START_TEST(explicit_program_trains_like_sgd)
{
    int64_t xd[2] = {4, 8};
    popc_module *m = NULL, *fm = NULL, *gm = NULL;
    popc_graph *g = NULL, *ref;
    popc_bound *b = NULL;
    popc_layers *L = NULL;
    popc_model *pm, *rm;
    popc_tensor *lr = NULL;
    int x, y, sq, loss, dy, in[2], args[4], grads[3], lrv, scale;
    int frozen = 1;

    OK(popc_module_new("block", build_block, NULL, &m));
    OK(popc_module_new("block", build_block, &frozen, &fm));
    OK(popc_module_autodiff(fm, &gm));
    OK(popc_graph_new("program", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_module_bind(fm, g, "blk", 42, &b));
    OK(popc_module_call(g, fm, b, &x, 1, &y, 1));
    in[0] = y;
    in[1] = y;
    OK(popc_graph_add_node(g, NULL, "Mul", 0, in, 2, &sq, 1, NULL, 0, NULL,
                           NULL));
    OK(popc_layers_new(g, 0, &L));
    OK(popc_nn_identity_loss(L, sq, "mean", &loss));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    /* dL/dy = 2 y / numel */
    OK(popc_tensor_new(POPC_DTYPE_F32, NULL, 0, &lr));
    *(float *)popc_tensor_data(lr) = 2.0f / 32.0f;
    OK(popc_graph_add_constant(g, "dscale", lr, &scale));
    in[0] = y;
    in[1] = scale;
    OK(popc_graph_add_node(g, NULL, "Mul", 0, in, 2, &dy, 1, NULL, 0, NULL,
                           NULL));
    args[0] = x;
    args[1] = popc_bound_variable(b, "weight");
    args[2] = popc_bound_variable(b, "bias");
    args[3] = dy;
    OK(popc_module_call(g, gm, NULL, args, 4, grads, 3));
    /* the graph holds a reference to a constant's tensor: a new one */
    popc_tensor_free(lr);
    OK(popc_tensor_new(POPC_DTYPE_F32, NULL, 0, &lr));
    *(float *)popc_tensor_data(lr) = 0.1f;
    OK(popc_graph_add_constant(g, "lr", lr, &lrv));
    for (int k = 1; k <= 2; k++) {
        int step, next;

        in[0] = grads[k];
        in[1] = lrv;
        OK(popc_graph_add_node(g, NULL, "Mul", 0, in, 2, &step, 1, NULL, 0,
                               NULL, NULL));
        in[0] = args[k];
        in[1] = step;
        OK(popc_graph_add_node(g, NULL, "Sub", 0, in, 2, &next, 1, NULL, 0,
                               NULL, NULL));
        OK(popc_graph_add_update(g, args[k], next));
    }
    pm = train(g, backends[_i], 0.1, STEPS);
    /* the reference: one call, popc's autodiff and SGD */
    OK(popc_graph_new("ref", &ref));
    {
        int xr, yr;
        popc_bound *rb = NULL;

        OK(popc_graph_add_input(ref, "x", POPC_DTYPE_F32, xd, 2, &xr));
        OK(popc_module_bind(m, ref, "blk", 42, &rb));
        OK(popc_module_call(ref, m, rb, &xr, 1, &yr, 1));
        add_loss(ref, yr);
        popc_bound_free(rb);
    }
    rm = train(ref, backends[_i], 0.1, STEPS);
    same_weight(pm, rm, "blk/weight", 1e-5);
    same_weight(pm, rm, "blk/bias", 1e-5);
    popc_model_free(pm);
    popc_model_free(rm);
    popc_tensor_free(lr);
    popc_bound_free(b);
    popc_graph_free(g);
    popc_graph_free(ref);
    popc_module_free(gm);
    popc_module_free(fm);
    popc_module_free(m);
}
END_TEST

START_TEST(copy_weights_into_inference)
{
    popc_module *m = NULL;
    popc_graph *tg, *ig;
    popc_model *tm, *im = NULL;
    popc_options *o = NULL;
    popc_tensor *x = input_x(), *out = NULL, *want = NULL;
    int n = 0, y;

    OK(popc_module_new("block", build_block, NULL, &m));
    tg = three_calls(m, 0, NULL, NULL);
    tm = train(tg, "cpu", 0.1, 3);
    /* the inference graph: the same calls, returning y */
    ig = three_calls(m, 0, NULL, &y);
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backends[_i]));
    OK(popc_model_new_inference(ig, o, &im));
    OK(popc_model_copy_weights(im, tm, "blk/", &n));
    ck_assert_int_eq(n, 2);
    OK(popc_model_run(im, &x, 1, &out, 1));
    /* the trained model's own forward: evaluate its graph with its
    ** trained weights */
    {
        const popc_tensor *w = NULL;

        OK(popc_model_get_weight(tm, "blk/weight", &w));
        OK(popc_graph_set_initializer(
            ig, popc_graph_find_value(ig, "blk/weight"), w));
        OK(popc_model_get_weight(tm, "blk/bias", &w));
        OK(popc_graph_set_initializer(
            ig, popc_graph_find_value(ig, "blk/bias"), w));
        OK(popc_graph_eval(ig, &x, 1, &y, 1, &want, 0, 0));
    }
    ck_assert_msg(popc_tensor_max_abs_diff(out, want) <= 1e-6, "%g",
                  popc_tensor_max_abs_diff(out, want));
    popc_tensor_free(out);
    popc_tensor_free(want);
    popc_tensor_free(x);
    popc_model_free(im);
    popc_model_free(tm);
    popc_options_free(o);
    popc_graph_free(tg);
    popc_graph_free(ig);
    popc_module_free(m);
}
END_TEST

/* A variable whose rank does not fit is refused before its dims are read
** (a tensor factory copies them). */
static popc_status build_rank_too_big(popc_module_builder *b, void *user)
{
    int64_t dims[POPC_MAX_RANK + 1] = {0};
    popc_tensor *t = user;
    popc_variable_factory f = {POPC_INIT_TENSOR, 0.0, 0.0, t, 0};
    int v;

    return popc_module_add_variable(b, "w", POPC_DTYPE_F32, dims,
                                    POPC_MAX_RANK + 1, &f, &v);
}

START_TEST(module_errors)
{
    popc_module *m = NULL;
    int64_t one = 1;
    popc_tensor *t = NULL;

    ck_assert_int_eq(popc_module_new("", build_block, NULL, &m), POPC_EINVAL);
    ck_assert_int_eq(popc_module_new("x", NULL, NULL, &m), POPC_EINVAL);
    ck_assert_ptr_null(m);
    ck_assert_int_eq(popc_tensor_new(POPC_DTYPE_F32, &one, 1, &t), POPC_OK);
    ck_assert_int_eq(popc_module_new("big", build_rank_too_big, t, &m),
                     POPC_EINVAL);
    ck_assert_msg(strstr(popc_last_error(), "variable 'w': rank 9") != NULL,
                  "%s", popc_last_error());
    ck_assert_ptr_null(m);
    popc_tensor_unref(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("modules");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, calls_equal_inline_ops, 0, 2);
    tcase_add_test(tc, call_costs_its_body);
    tcase_add_test(tc, scan_costs_its_body_per_step);
    tcase_add_test(tc, bindings_are_separate);
    tcase_add_loop_test(tc, autodiff_module_gradients, 0, 2);
    tcase_add_loop_test(tc, explicit_program_trains_like_sgd, 0, 2);
    tcase_add_loop_test(tc, copy_weights_into_inference, 0, 2);
    tcase_add_test(tc, module_errors);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
