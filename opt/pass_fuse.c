/* pass_fuse.c - Conv, Gemm and MatMul by a 2-D weight, with what follows
** them while each result has no other reader: a bias Add (MatMul), a
** residual Add of the output's shape, and one activation (Relu, Clip with
** constant bounds, LeakyRelu, Sigmoid, Tanh, exact Gelu, SiLU as
** x * Sigmoid(x)), become one popc::FusedConv or popc::FusedMatMul. The
** fused kernel applies the residual and the activation to each stretch of
** output while it is in cache, instead of three passes over memory.
*/
#include "config.h"

#include <float.h>
#include <stdio.h>
#include <string.h>

#include "opt/opt_priv.h"

typedef struct chain {
    int head, last;          /* first and last node */
    int bias, z;             /* values, or -1 */
    const char *act;         /* NULL: none */
    double params[2];
    int n_params;
    char names[1024];        /* the fused nodes' names */
    int nodes[8], n_nodes;   /* the fused nodes */
} chain;

static void add_name(const opt_ctx *c, chain *ch, int n)
{
    size_t len = strlen(ch->names);

    if (ch->n_nodes < 8)
        ch->nodes[ch->n_nodes++] = n;
    snprintf(ch->names + len, sizeof ch->names - len, "%s%s",
             len ? "+" : "", popc_graph_node_name(c->g, n));
}

/* Extend ch by an Add reading `cur` alone: the bias (1-D of n_cols) when
** want_bias, else the residual (cur's shape). */
static int take_add(const opt_ctx *c, chain *ch, int *cur, int want_bias,
                    int64_t n_cols)
{
    int n = opt_sole_reader(c, *cur), other;
    popc_view cv = popc_graph_value_info(c->g, *cur), ov;

    if (n < 0 || !opt_is(c, n, "Add") || !opt_same_place(c, ch->head, n) ||
        (other = opt_other_operand(c, n, *cur)) < 0 || other == *cur)
        return 0;
    ov = popc_graph_value_info(c->g, other);
    if (want_bias ? !(ov.dtype == POPC_DTYPE_F32 && ov.rank == 1 &&
                      ov.dims[0] == n_cols)
                  : !opt_same_shape(&ov, &cv))
        return 0;
    if (want_bias)
        ch->bias = other;
    else
        ch->z = other;
    add_name(c, ch, n);
    ch->last = n;
    *cur = opt_output(c, n, 0);
    return 1;
}

static int take_clip(const opt_ctx *c, chain *ch, int n)
{
    popc_attrs at = popc_graph_node_attrs(c->g, n);
    float lo = -FLT_MAX, hi = FLT_MAX;
    int mn = opt_input(c, n, 1), mx = opt_input(c, n, 2);

    if (popc_graph_node_version(c->g, n) < 11) {
        lo = (float)popc_attr_float(&at, "min", -FLT_MAX);
        hi = (float)popc_attr_float(&at, "max", FLT_MAX);
    } else if ((mn >= 0 && !opt_scalar(c, mn, &lo)) ||
               (mx >= 0 && !opt_scalar(c, mx, &hi))) {
        return 0;
    }
    ch->act = "Clip";
    ch->params[0] = lo;
    ch->params[1] = hi;
    ch->n_params = 2;
    return 1;
}

/* Extend ch by the activation reading `cur`. */
static void take_activation(const opt_ctx *c, chain *ch, int cur)
{
    static const char *const plain[] = {"Relu", "Sigmoid", "Tanh"};
    int n = opt_sole_reader(c, cur);

    if (n >= 0 && !opt_same_place(c, ch->head, n))
        return;
    for (size_t i = 0; n >= 0 && i < sizeof plain / sizeof *plain; i++)
        if (opt_is(c, n, plain[i]))
            ch->act = plain[i];
    if (n >= 0 && opt_is(c, n, "LeakyRelu")) {
        popc_attrs at = popc_graph_node_attrs(c->g, n);

        ch->act = "LeakyRelu";
        ch->params[0] = popc_attr_float(&at, "alpha", 0.01);
        ch->n_params = 1;
    }
    if (n >= 0 && opt_is(c, n, "Gelu")) {
        popc_attrs at = popc_graph_node_attrs(c->g, n);

        if (strcmp(popc_attr_string(&at, "approximate", "none"), "none") ==
            0)
            ch->act = "Gelu";
    }
    if (n >= 0 && opt_is(c, n, "Clip") && !take_clip(c, ch, n))
        return;
    if (ch->act) {
        add_name(c, ch, n);
        ch->last = n;
        return;
    }
    /* SiLU: cur read by Sigmoid(cur) and by Mul(cur, that) alone */
    if (c->uses[cur] == 2) {
        int sg = opt_reader_with(c, cur, "Sigmoid", -1), s, mul;

        if (sg < 0 || !opt_same_place(c, ch->head, sg))
            return;
        s = opt_output(c, sg, 0);
        mul = opt_sole_reader(c, s);
        if (mul < 0 || !opt_is(c, mul, "Mul") ||
            opt_other_operand(c, mul, s) != cur ||
            !opt_same_place(c, ch->head, mul))
            return;
        ch->act = "SiLU";
        add_name(c, ch, sg);
        add_name(c, ch, mul);
        ch->last = mul;
    }
}

/* Gemm's own attributes only (a MatMul has none): serializedMatMul's
** factor and mode keep the node as it is. */
static int known_attrs(const opt_ctx *c, int n)
{
    static const char *const known[] = {"alpha", "beta", "transA",
                                        "transB"};
    popc_attrs at = popc_graph_node_attrs(c->g, n);

    for (int a = 0; a < at.n; a++) {
        int ok = 0;

        for (size_t k = 0; k < sizeof known / sizeof *known; k++)
            ok |= strcmp(at.items[a].name, known[k]) == 0;
        if (!ok)
            return 0;
    }
    return 1;
}

/* Conv attributes the fused op takes; any other (a MultiConv or float16
** mark, a partials type) keeps the Conv as it is. */
static int plain_conv(const opt_ctx *c, int n)
{
    static const char *const known[] = {"auto_pad", "dilations", "group",
                                        "kernel_shape", "pads", "strides"};
    popc_attrs at = popc_graph_node_attrs(c->g, n);
    popc_view x = popc_graph_value_info(c->g, opt_input(c, n, 0));

    if (x.dtype != POPC_DTYPE_F32 || (x.rank != 3 && x.rank != 4))
        return 0;
    for (int a = 0; a < at.n; a++) {
        int ok = 0;

        for (size_t k = 0; k < sizeof known / sizeof *known; k++)
            ok |= strcmp(at.items[a].name, known[k]) == 0;
        if (!ok)
            return 0;
    }
    return 1;
}

static popc_status emit(opt_ctx *c, chain *ch, const char *op,
                        const int *ins, const popc_attr *base, int n_base)
{
    popc_attr a[16];
    int na = 0;

    for (int i = 0; i < n_base && na < 12; i++)
        a[na++] = base[i];
    if (ch->act) {
        a[na++] = popc_attr_make_string("activation", ch->act);
        if (ch->n_params)
            a[na++] = (popc_attr){.name = "activation_params",
                                  .type = POPC_ATTR_FLOATS,
                                  .n = ch->n_params, .floats = ch->params};
    }
    a[na++] = popc_attr_make_string("fused", ch->names);
    popc_node_desc d = {.size = sizeof d, .domain = "popc", .op = op,
                        .inputs = ins, .n_inputs = 4, .n_outputs = 1,
                        .attrs = a, .n_attrs = na};
    for (int i = 0; i < ch->n_nodes; i++)
        c->taken[ch->nodes[i]] = 1;
    return opt_replace(c, ch->head, ch->last, &d, NULL);
}

static popc_status fuse_conv(opt_ctx *c, int n, int *done)
{
    chain ch = {.head = n, .last = n, .bias = -1, .z = -1};
    int cur = opt_output(c, n, 0);
    popc_attrs at = popc_graph_node_attrs(c->g, n);

    if (!plain_conv(c, n))
        return POPC_OK;
    add_name(c, &ch, n);
    take_add(c, &ch, &cur, 0, 0);
    take_activation(c, &ch, cur);
    if (ch.last == n)
        return POPC_OK;
    int ins[4] = {opt_input(c, n, 0), opt_input(c, n, 1), opt_input(c, n, 2),
                  ch.z};
    *done = 1;
    return emit(c, &ch, "FusedConv", ins, at.items, at.n);
}

static popc_status fuse_matmul(opt_ctx *c, int n, int *done)
{
    chain ch = {.head = n, .last = n, .bias = -1, .z = -1};
    int cur = opt_output(c, n, 0), gemm = opt_is(c, n, "Gemm");
    int wv = opt_input(c, n, 1);
    popc_view a = popc_graph_value_info(c->g, opt_input(c, n, 0));
    popc_view w = popc_graph_value_info(c->g, wv);
    popc_attrs at = popc_graph_node_attrs(c->g, n);
    int tb = gemm ? (int)popc_attr_int(&at, "transB", 0) : 0;
    double alpha = gemm ? popc_attr_float(&at, "alpha", 1.0) : 1.0;
    int64_t n_cols;

    if (a.dtype != POPC_DTYPE_F32 || w.dtype != POPC_DTYPE_F32 ||
        a.rank < 2 || w.rank != 2 || !known_attrs(c, n))
        return POPC_OK;
    n_cols = tb ? w.dims[0] : w.dims[1];
    if (gemm) {
        int cv = opt_input(c, n, 2);
        popc_view cvi = popc_graph_value_info(c->g, cv);

        if (popc_attr_int(&at, "transA", 0) != 0)
            return POPC_OK;
        if (cv >= 0) {
            if (popc_attr_float(&at, "beta", 1.0) != 1.0 ||
                cvi.dtype != POPC_DTYPE_F32 || cvi.rank != 1 ||
                cvi.dims[0] != n_cols)
                return POPC_OK;
            ch.bias = cv;
        }
    }
    add_name(c, &ch, n);
    if (ch.bias < 0)
        take_add(c, &ch, &cur, 1, n_cols);
    take_add(c, &ch, &cur, 0, 0);
    take_activation(c, &ch, cur);
    if (ch.last == n)
        return POPC_OK;
    int ins[4] = {opt_input(c, n, 0), wv, ch.bias, ch.z};
    popc_attr base[2] = {popc_attr_make_int("trans_b", tb),
                         popc_attr_make_float("alpha", alpha)};
    *done = 1;
    return emit(c, &ch, "FusedMatMul", ins, base, 2);
}

popc_status opt_fuse_contractions(opt_ctx *c, int *rewrites)
{
    int conv_ok = opt_has_op(c, "popc", "FusedConv");
    int mm_ok = opt_has_op(c, "popc", "FusedMatMul");
    popc_status st;

    for (int n = 0; n < c->n_nodes; n++) {
        int done = 0;

        if (conv_ok && opt_is(c, n, "Conv"))
            st = fuse_conv(c, n, &done);
        else if (mm_ok && (opt_is(c, n, "Gemm") || opt_is(c, n, "MatMul")))
            st = fuse_matmul(c, n, &done);
        else
            continue;
        if (st != POPC_OK)
            return st;
        *rewrites += done;
    }
    return POPC_OK;
}
