/* pass_batchnorm.c - an inference BatchNormalization that follows a Conv
** or a Gemm is an affine map per output channel, so it folds into the
** weights and bias before it:
**   s = scale / sqrt(var + epsilon)
**   W'[m] = W[m] * s[m],  B'[m] = (B[m] - mean[m]) * s[m] + bias[m]
** (for Gemm, column m of the product, and its C). Everything involved
** must be a constant: a weight stays a weight, and a BatchNormalization
** in training mode (or in a training graph) normalises by its batch.
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "opt/opt_priv.h"

/* The per-channel factors of BatchNormalization node bn over m channels:
** s[] and t[] with y = x * s + t. */
typedef struct bn_affine {
    const float *scale, *bias, *mean, *var;
    double eps;
} bn_affine;

static const float *vec_of(const opt_ctx *c, int v, int64_t m)
{
    const popc_tensor *t = opt_constant(c, v);
    popc_view tv;

    if (!t)
        return NULL;
    tv = popc_tensor_view((popc_tensor *)t);
    return tv.dtype == POPC_DTYPE_F32 && tv.rank == 1 && tv.dims[0] == m
               ? tv.data : NULL;
}

static int bn_of(const opt_ctx *c, int bn, int64_t m, bn_affine *a)
{
    popc_attrs at = popc_graph_node_attrs(c->g, bn);

    if (popc_attr_int(&at, "training_mode", 0) != 0 ||
        popc_graph_node_n_outputs(c->g, bn) != 1)
        return 0;
    a->scale = vec_of(c, opt_input(c, bn, 1), m);
    a->bias = vec_of(c, opt_input(c, bn, 2), m);
    a->mean = vec_of(c, opt_input(c, bn, 3), m);
    a->var = vec_of(c, opt_input(c, bn, 4), m);
    a->eps = popc_attr_float(&at, "epsilon", 1e-5);
    return a->scale && a->bias && a->mean && a->var;
}

static float factor(const bn_affine *a, int64_t m)
{
    return (float)((double)a->scale[m] /
                   sqrt((double)a->var[m] + a->eps));
}

/* New constants W' (from w, `rows` blocks of `per` floats per channel
** when by_row, else one float per channel in each row of m) and B'. */
static popc_status scaled_weights(opt_ctx *c, int wv, const bn_affine *a,
                                  int64_t m, int by_row, int *w_out)
{
    popc_view wv_ = popc_graph_value_info(c->g, wv);
    const float *w = popc_tensor_view((popc_tensor *)opt_constant(c, wv)).data;
    int64_t n = popc_view_numel(&wv_);
    float *nw;
    popc_status st;

    if ((st = opt_add_constant(c, "bn_folded_weight", wv_.dims, wv_.rank, w,
                               w_out, &nw)) != POPC_OK)
        return st;
    for (int64_t i = 0; i < n; i++)
        nw[i] *= factor(a, by_row ? i / (n / m) : i % m);
    return POPC_OK;
}

static popc_status folded_bias(opt_ctx *c, const float *b, double beta,
                               const bn_affine *a, int64_t m, int *b_out)
{
    float *nb;
    popc_status st;

    if ((st = opt_add_constant(c, "bn_folded_bias", &m, 1, NULL, b_out,
                               &nb)) != POPC_OK)
        return st;
    for (int64_t i = 0; i < m; i++) {
        double bi = b ? beta * (double)b[i] : 0.0;

        nb[i] = (float)((bi - (double)a->mean[i]) * (double)factor(a, i) +
                        (double)a->bias[i]);
    }
    return POPC_OK;
}

static popc_status fold_into_conv(opt_ctx *c, int conv, int bn, int *done)
{
    int wv = opt_input(c, conv, 1), bv = opt_input(c, conv, 2), nw, nb;
    popc_view w = popc_graph_value_info(c->g, wv);
    popc_attrs at = popc_graph_node_attrs(c->g, conv);
    bn_affine a;
    const float *b = NULL;
    popc_status st;

    if (!opt_constant(c, wv) || w.dtype != POPC_DTYPE_F32 || w.rank < 3 ||
        !bn_of(c, bn, w.dims[0], &a) ||
        (bv >= 0 && !(b = vec_of(c, bv, w.dims[0]))))
        return POPC_OK;
    if ((st = scaled_weights(c, wv, &a, w.dims[0], 1, &nw)) != POPC_OK ||
        (st = folded_bias(c, b, 1.0, &a, w.dims[0], &nb)) != POPC_OK)
        return st;
    int ins[3] = {opt_input(c, conv, 0), nw, nb};
    popc_node_desc d = {.size = sizeof d, .op = "Conv",
                        .version = popc_graph_node_version(c->g, conv),
                        .inputs = ins, .n_inputs = 3, .n_outputs = 1,
                        .attrs = at.items, .n_attrs = at.n};

    if ((st = opt_replace(c, conv, bn, &d, NULL)) != POPC_OK)
        return st;
    c->taken[conv] = c->taken[bn] = 1;
    *done = 1;
    return POPC_OK;
}

static popc_status fold_into_gemm(opt_ctx *c, int gemm, int bn, int *done)
{
    popc_attrs at = popc_graph_node_attrs(c->g, gemm);
    int wv = opt_input(c, gemm, 1), cv = opt_input(c, gemm, 2), nw, nb;
    int trans_b = (int)popc_attr_int(&at, "transB", 0);
    popc_view w = popc_graph_value_info(c->g, wv);
    int64_t m = trans_b ? w.dims[0] : w.dims[1];
    bn_affine a;
    const float *b = NULL;
    popc_status st;

    if (popc_attr_int(&at, "transA", 0) != 0 || !opt_constant(c, wv) ||
        w.dtype != POPC_DTYPE_F32 || w.rank != 2 || !bn_of(c, bn, m, &a))
        return POPC_OK;
    if (cv >= 0 && !(b = vec_of(c, cv, m)))
        return POPC_OK; /* a C of another shape: not folded */
    if ((st = scaled_weights(c, wv, &a, m, trans_b, &nw)) != POPC_OK ||
        (st = folded_bias(c, b, popc_attr_float(&at, "beta", 1.0), &a, m,
                          &nb)) != POPC_OK)
        return st;
    popc_attr na[3] = {
        popc_attr_make_int("transB", trans_b),
        popc_attr_make_float("alpha", popc_attr_float(&at, "alpha", 1.0)),
        popc_attr_make_float("beta", 1.0)};
    int ins[3] = {opt_input(c, gemm, 0), nw, nb};
    popc_node_desc d = {.size = sizeof d, .op = "Gemm",
                        .version = popc_graph_node_version(c->g, gemm),
                        .inputs = ins, .n_inputs = 3, .n_outputs = 1,
                        .attrs = na, .n_attrs = 3};

    if ((st = opt_replace(c, gemm, bn, &d, NULL)) != POPC_OK)
        return st;
    c->taken[gemm] = c->taken[bn] = 1;
    *done = 1;
    return POPC_OK;
}

popc_status opt_fold_batchnorm(opt_ctx *c, int *rewrites)
{
    popc_status st;

    for (int bn = 0; bn < c->n_nodes; bn++) {
        int x, p, done = 0;

        if (!opt_is(c, bn, "BatchNormalization"))
            continue;
        x = opt_input(c, bn, 0);
        p = opt_producer(c, x);
        if (p < 0 || opt_sole_reader(c, x) != bn || !opt_same_place(c, p, bn))
            continue;
        if (opt_is(c, p, "Conv"))
            st = fold_into_conv(c, p, bn, &done);
        else if (opt_is(c, p, "Gemm"))
            st = fold_into_gemm(c, p, bn, &done);
        else
            continue;
        if (st != POPC_OK)
            return st;
        *rewrites += done;
    }
    return POPC_OK;
}
