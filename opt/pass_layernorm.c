/* pass_layernorm.c - the layer normalisation torch.onnx.export writes
** before opset 17,
**     m = ReduceMean(x, [-1]); d = Sub(x, m)
**     y = Div(d, Sqrt(Add(ReduceMean(Pow(d, 2), [-1]), eps))) [* gamma]
**         [+ beta]
** becomes one LayerNormalization over the last axis (gamma and beta
** default to ones and zeros). LayerNormalization has a gradient, so this
** runs on training graphs too; it then keeps gamma and beta as the
** weights they were.
*/
#include "config.h"

#include <string.h>

#include "opt/opt_priv.h"

/* ReduceMean over the last axis only, keeping it. */
static int mean_last(const opt_ctx *c, int n)
{
    popc_attrs at = popc_graph_node_attrs(c->g, n);
    popc_view x = popc_graph_value_info(c->g, opt_input(c, n, 0));
    int64_t ax[2];

    return opt_is(c, n, "ReduceMean") &&
           popc_attr_int(&at, "keepdims", 1) == 1 &&
           popc_attr_ints(&at, "axes", ax, 2) == 1 &&
           (ax[0] == -1 || ax[0] == x.rank - 1) &&
           popc_graph_node_n_inputs(c->g, n) == 1;
}

/* The reader of v other than `skip` with op `op`, among exactly two. */
static int second_reader(const opt_ctx *c, int v, int skip, const char *op)
{
    return c->uses[v] == 2 ? opt_reader_with(c, v, op, skip) : -1;
}

static int sole(const opt_ctx *c, int v, const char *op)
{
    int n = opt_sole_reader(c, v);

    return n >= 0 && opt_is(c, n, op) ? n : -1;
}

/* A 1-D float32 value of d elements. */
static int vector_of(const opt_ctx *c, int v, int64_t d)
{
    popc_view vi = popc_graph_value_info(c->g, v);

    return v >= 0 && vi.dtype == POPC_DTYPE_F32 && vi.rank == 1 &&
           vi.dims[0] == d;
}

static popc_status try_layernorm(opt_ctx *c, int mean, int *done)
{
    int x = opt_input(c, mean, 0), sub, pw, mean2, add, sq, div, mul, badd;
    int nodes[9], nn = 0, last, gamma = -1, beta = -1, d, y;
    popc_view xv = popc_graph_value_info(c->g, x);
    float two, eps;
    popc_status st;

    if (!mean_last(c, mean) || xv.dtype != POPC_DTYPE_F32 || xv.rank < 1 ||
        (sub = second_reader(c, x, mean, "Sub")) < 0 ||
        opt_input(c, sub, 0) != x ||
        opt_input(c, sub, 1) != opt_output(c, mean, 0))
        return POPC_OK;
    d = opt_output(c, sub, 0);
    if ((pw = second_reader(c, d, -1, "Pow")) < 0 ||
        opt_input(c, pw, 0) != d ||
        !opt_scalar(c, opt_input(c, pw, 1), &two) || two != 2.0f ||
        (div = second_reader(c, d, pw, "Div")) < 0 ||
        opt_input(c, div, 0) != d ||
        (mean2 = sole(c, opt_output(c, pw, 0), "ReduceMean")) < 0 ||
        !mean_last(c, mean2) ||
        (add = sole(c, opt_output(c, mean2, 0), "Add")) < 0 ||
        !opt_scalar(c, opt_other_operand(c, add, opt_output(c, mean2, 0)),
                    &eps) ||
        (sq = sole(c, opt_output(c, add, 0), "Sqrt")) < 0 ||
        opt_input(c, div, 1) != opt_output(c, sq, 0))
        return POPC_OK;
    nodes[nn++] = mean;
    nodes[nn++] = sub;
    nodes[nn++] = pw;
    nodes[nn++] = mean2;
    nodes[nn++] = add;
    nodes[nn++] = sq;
    nodes[nn++] = div;
    last = div;
    y = opt_output(c, div, 0);
    if ((mul = sole(c, y, "Mul")) >= 0 &&
        vector_of(c, opt_other_operand(c, mul, y),
                  xv.dims[xv.rank - 1])) {
        gamma = opt_other_operand(c, mul, y);
        nodes[nn++] = last = mul;
        y = opt_output(c, mul, 0);
        if ((badd = sole(c, y, "Add")) >= 0 &&
            vector_of(c, opt_other_operand(c, badd, y),
                      xv.dims[xv.rank - 1])) {
            beta = opt_other_operand(c, badd, y);
            nodes[nn++] = last = badd;
        }
    }
    for (int i = 0; i < nn; i++)
        if (!opt_same_place(c, mean, nodes[i]))
            return POPC_OK;
    if (gamma < 0 || beta < 0) {
        int64_t dd = xv.dims[xv.rank - 1];
        float *p;

        if (gamma < 0 &&
            (st = opt_add_constant(c, "layernorm_scale", &dd, 1, NULL,
                                   &gamma, &p)) == POPC_OK)
            for (int64_t i = 0; i < dd; i++)
                p[i] = 1.0f;
        if (beta < 0 &&
            (st = opt_add_constant(c, "layernorm_bias", &dd, 1, NULL, &beta,
                                   &p)) != POPC_OK)
            return st;
    }
    int ins[3] = {x, gamma, beta};
    popc_attr a[2] = {popc_attr_make_int("axis", -1),
                      popc_attr_make_float("epsilon", eps)};
    popc_node_desc nd = {.size = sizeof nd, .op = "LayerNormalization",
                         .version = 17, .inputs = ins, .n_inputs = 3,
                         .n_outputs = 1, .attrs = a, .n_attrs = 2};
    for (int i = 0; i < nn; i++)
        c->taken[nodes[i]] = 1;
    *done = 1;
    return opt_replace(c, mean, last, &nd, NULL);
}

popc_status opt_recognise_layernorm(opt_ctx *c, int *rewrites)
{
    if (!opt_has_op(c, "ai.onnx", "LayerNormalization"))
        return POPC_OK;
    return opt_each(c, "ai.onnx", "ReduceMean", try_layernorm, rewrites);
}
