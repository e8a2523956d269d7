/* pass_attention.c - scaled dot-product attention as torch.onnx.export
** writes nn.MultiheadAttention,
**     MatMul(Softmax(MatMul(Div(Q, c), Kt), last axis), V)
** (the scale may also be a Mul by a constant, on Q or on the scores, or
** absent), becomes one popc::Attention(Q, Kt, V, scale), whose kernel
** never writes the score matrix out. Q, Kt and V must have the same
** leading dimensions. An inference rewrite: Attention has no gradient.
*/
#include "config.h"

#include "opt/opt_priv.h"

/* n is a Div or Mul of a value by a scalar constant, read only by `by`:
** *x the value, *scale the factor. */
static int scaled(const opt_ctx *c, int n, int by, int *x, float *scale)
{
    float k;

    if (n < 0 || (!opt_is(c, n, "Div") && !opt_is(c, n, "Mul")) ||
        opt_sole_reader(c, opt_output(c, n, 0)) != by ||
        !opt_same_place(c, n, by))
        return 0;
    if (opt_scalar(c, opt_input(c, n, 1), &k)) {
        *x = opt_input(c, n, 0);
    } else if (opt_is(c, n, "Mul") && opt_scalar(c, opt_input(c, n, 0), &k)) {
        *x = opt_input(c, n, 1);
    } else {
        return 0;
    }
    if (opt_is(c, n, "Div")) {
        if (k == 0.0f)
            return 0;
        k = 1.0f / k;
    }
    *scale = k;
    return 1;
}

static int same_lead(const popc_view *a, const popc_view *b)
{
    if (a->rank != b->rank || a->rank < 2 || a->dtype != POPC_DTYPE_F32 ||
        b->dtype != POPC_DTYPE_F32)
        return 0;
    for (int i = 0; i < a->rank - 2; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

static popc_status try_attention(opt_ctx *c, int sm, int *done)
{
    popc_attrs at = popc_graph_node_attrs(c->g, sm);
    int in = opt_input(c, sm, 0), p = opt_output(c, sm, 0);
    int mm2 = opt_sole_reader(c, p), mm1, scale_node = -1, q, kt, v;
    int nodes[4], nn = 0;
    popc_view sv = popc_graph_value_info(c->g, in), qv, kv, vv;
    float scale = 1.0f;
    int64_t axis = popc_attr_int(&at, "axis", -1);

    if (axis != -1 && axis != sv.rank - 1)
        return POPC_OK;
    if (mm2 < 0 || !opt_is(c, mm2, "MatMul") || opt_input(c, mm2, 0) != p ||
        !opt_same_place(c, sm, mm2))
        return POPC_OK;
    mm1 = opt_producer(c, in);
    if (mm1 >= 0 && !opt_is(c, mm1, "MatMul") &&
        scaled(c, mm1, sm, &in, &scale)) {
        scale_node = mm1;
        mm1 = opt_producer(c, in);
    }
    if (mm1 < 0 || !opt_is(c, mm1, "MatMul") ||
        opt_sole_reader(c, opt_output(c, mm1, 0)) !=
            (scale_node >= 0 ? scale_node : sm) ||
        !opt_same_place(c, mm1, sm))
        return POPC_OK;
    q = opt_input(c, mm1, 0);
    kt = opt_input(c, mm1, 1);
    if (scale_node < 0) {
        int qn = opt_producer(c, q);
        float k2;

        if (scaled(c, qn, mm1, &q, &k2)) {
            scale = k2;
            nodes[nn++] = qn;
        }
    } else {
        nodes[nn++] = scale_node;
    }
    v = opt_input(c, mm2, 1);
    qv = popc_graph_value_info(c->g, q);
    kv = popc_graph_value_info(c->g, kt);
    vv = popc_graph_value_info(c->g, v);
    if (!same_lead(&qv, &kv) || !same_lead(&qv, &vv) ||
        kv.dims[kv.rank - 2] != qv.dims[qv.rank - 1] ||
        vv.dims[vv.rank - 2] != kv.dims[kv.rank - 1])
        return POPC_OK;
    nodes[nn++] = mm1;
    nodes[nn++] = sm;
    nodes[nn++] = mm2;
    int ins[3] = {q, kt, v};
    popc_attr a = popc_attr_make_float("scale", scale);
    popc_node_desc d = {.size = sizeof d, .domain = "popc",
                        .op = "Attention", .inputs = ins, .n_inputs = 3,
                        .n_outputs = 1, .attrs = &a, .n_attrs = 1};
    for (int i = 0; i < nn; i++)
        c->taken[nodes[i]] = 1;
    *done = 1;
    return opt_replace(c, sm, mm2, &d, NULL);
}

popc_status opt_recognise_attention(opt_ctx *c, int *rewrites)
{
    if (!opt_has_op(c, "popc", "Attention"))
        return POPC_OK;
    return opt_each(c, "ai.onnx", "Softmax", try_attention, rewrites);
}
