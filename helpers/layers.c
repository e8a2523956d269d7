/* layers.c - torch.nn-style layer builders (see layers.h).
**
** Initialisation follows torch 1.13's reset_parameters(): Linear and
** Conv2d use kaiming_uniform_(a = sqrt(5)), whose bound
** gain * sqrt(3 / fan_in) with gain = sqrt(2 / (1 + a^2)) is exactly
** 1 / sqrt(fan_in), and the bias bound is 1 / sqrt(fan_in) as well. Each
** parameter draws from its own stream, keyed by its name, so the values
** do not depend on build order.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/layers.h"
#include "popc/random.h"
#include "helpers/helpers_priv.h"

struct popc_layers {
    popc_graph *g;
    uint64_t seed;
    int counter;        /* for generated layer names */
};

popc_status popc_layers_new(popc_graph *g, uint64_t seed, popc_layers **out)
{
    popc_layers *L;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_layers_new: out is NULL");
    *out = NULL;
    if (!g)
        return popc_set_error(POPC_EINVAL, "popc_layers_new: graph is NULL");
    if (!(L = calloc(1, sizeof *L)))
        return popc_set_error(POPC_ENOMEM, "popc_layers_new: out of memory");
    L->g = g;
    L->seed = seed;
    *out = L;
    return POPC_OK;
}

void popc_layers_free(popc_layers *L)
{
    free(L);
}

/* ---- helpers --------------------------------------------------------------- */

typedef struct layer_name {
    char s[256];
} layer_name;

static popc_status name_layer(popc_layers *L, const char *kind,
                              const char *name, layer_name *out)
{
    if (name && !name[0])
        return popc_set_error(POPC_EINVAL, "%s: empty layer name (use NULL "
                              "for a generated one)", kind);
    if (name)
        snprintf(out->s, sizeof out->s, "%s", name);
    else /* the builder's count, skipping names the graph already has */
        helpers_free_name(L->g, kind, L->counter++, out->s, sizeof out->s);
    return POPC_OK;
}

enum init_kind { INIT_UNIFORM, INIT_CONST };

/* An F32 parameter "<layer>.<suffix>" added as an initializer. */
static popc_status add_param(popc_layers *L, const char *layer,
                             const char *suffix, const int64_t *dims,
                             int rank, enum init_kind kind, double value,
                             int trainable, int *id)
{
    char name[300];
    popc_tensor *t = NULL;
    popc_status st;
    float *p;
    int64_t n;

    *id = -1;
    snprintf(name, sizeof name, "%s.%s", layer, suffix);
    if ((st = popc_tensor_new(POPC_DTYPE_F32, dims, rank, &t)) != POPC_OK)
        return st;
    p = popc_tensor_data(t);
    n = popc_tensor_numel(t);
    if (kind == INIT_UNIFORM) {
        popc_rng r;
        popc_rng_init(&r, L->seed, popc_rng_stream(name));
        popc_rng_fill_uniform(&r, p, n, (float)-value, (float)value);
    } else {
        for (int64_t i = 0; i < n; i++)
            p[i] = (float)value;
    }
    st = popc_graph_add_initializer(L->g, name, t, trainable, id);
    popc_tensor_free(t);
    return st;
}

static popc_status node1(popc_layers *L, const char *domain, const char *op,
                         const int *in, int n_in, const popc_attr *attrs,
                         int n_attrs, const char *name, int *y)
{
    return popc_graph_add_node(L->g, domain, op, 0, in, n_in, y, 1, attrs,
                               n_attrs, name, NULL);
}

static popc_status check_args(popc_layers *L, const char *who, int *y)
{
    if (!y)
        return popc_set_error(POPC_EINVAL, "%s: output pointer is NULL", who);
    *y = -1;
    if (!L)
        return popc_set_error(POPC_EINVAL, "%s: layers builder is NULL", who);
    return POPC_OK;
}

static popc_status check_value(popc_layers *L, const char *who, int v)
{
    if (v < 0 || v >= popc_graph_n_values(L->g))
        return popc_set_error(POPC_EINVAL, "%s: input value id %d does not "
                              "exist", who, v);
    return POPC_OK;
}

/* When x's shape is known, dim `axis` (negative: from the end) must be n. */
static popc_status check_dim(popc_layers *L, const char *kind,
                             const char *layer, int x, int axis, int64_t n,
                             const char *what)
{
    popc_view v = popc_graph_value_info(L->g, x);
    char desc[128];
    int d;

    if (v.dtype == POPC_DTYPE_UNDEFINED)
        return POPC_OK;
    d = axis < 0 ? v.rank + axis : axis;
    if (d >= 0 && d < v.rank && v.dims[d] == n)
        return POPC_OK;
    v.data = NULL;
    popc_view_describe(&v, desc, sizeof desc);
    return popc_set_error(POPC_EINVAL, "%s '%s': input '%s' is %s but the "
                          "layer expects %s = %lld in dimension %d", kind,
                          layer, popc_graph_value_name(L->g, x), desc, what,
                          (long long)n, axis);
}

/* ---- layers with parameters
 * --------------------------------------------------- */

popc_status popc_nn_linear(popc_layers *L, const char *name, int x,
                           int64_t in_features, int64_t out_features,
                           int bias, int *y)
{
    int64_t wd[2] = {out_features, in_features}, bd[1] = {out_features};
    layer_name ln;
    popc_view xi;
    popc_status st;
    int w, b = -1;
    double bound;

    if ((st = check_args(L, "Linear", y)) != POPC_OK ||
        (st = check_value(L, "Linear", x)) != POPC_OK ||
        (st = name_layer(L, "linear", name, &ln)) != POPC_OK)
        return st;
    if (in_features < 1 || out_features < 1)
        return popc_set_error(POPC_EINVAL, "Linear '%s': in_features %lld and "
                              "out_features %lld must be >= 1", ln.s,
                              (long long)in_features,
                              (long long)out_features);
    if ((st = check_dim(L, "Linear", ln.s, x, -1, in_features,
                        "in_features")) != POPC_OK)
        return st;
    bound = 1.0 / sqrt((double)in_features);
    if ((st = add_param(L, ln.s, "weight", wd, 2, INIT_UNIFORM, bound, 1,
                        &w)) != POPC_OK)
        return st;
    if (bias && (st = add_param(L, ln.s, "bias", bd, 1, INIT_UNIFORM, bound,
                                1, &b)) != POPC_OK)
        return st;
    xi = popc_graph_value_info(L->g, x);
    if (xi.dtype == POPC_DTYPE_UNDEFINED || xi.rank == 2) {
        int in[3] = {x, w, b};
        popc_attr tb = popc_attr_make_int("transB", 1);
        return node1(L, NULL, "Gemm", in, bias ? 3 : 2, &tb, 1, ln.s, y);
    } else {
        /* Gemm is 2-D only: x @ W^T (+ b) for other ranks, as torch does */
        int64_t perm[2] = {1, 0};
        popc_attr pa = popc_attr_make_ints("perm", perm, 2);
        char nm[300];
        int wt, mm, in[2];

        snprintf(nm, sizeof nm, "%s/Transpose", ln.s);
        if ((st = node1(L, NULL, "Transpose", &w, 1, &pa, 1, nm, &wt)) !=
            POPC_OK)
            return st;
        in[0] = x;
        in[1] = wt;
        if ((st = node1(L, NULL, "MatMul", in, 2, NULL, 0, ln.s, &mm)) !=
            POPC_OK)
            return st;
        if (!bias) {
            *y = mm;
            return POPC_OK;
        }
        snprintf(nm, sizeof nm, "%s/Add", ln.s);
        in[0] = mm;
        in[1] = b;
        return node1(L, NULL, "Add", in, 2, NULL, 0, nm, y);
    }
}

popc_status popc_nn_conv2d(popc_layers *L, const char *name, int x,
                           int64_t in_ch, int64_t out_ch, int64_t kernel,
                           int64_t stride, int64_t padding, int64_t dilation,
                           int64_t groups, int bias, int *y)
{
    int64_t wd[4], bd[1] = {out_ch}, ks[2] = {kernel, kernel};
    int64_t st2[2] = {stride, stride}, dl[2] = {dilation, dilation};
    int64_t pads[4] = {padding, padding, padding, padding};
    popc_attr attrs[5];
    layer_name ln;
    popc_status st;
    int w, b = -1, in[3];
    double bound;

    if ((st = check_args(L, "Conv2d", y)) != POPC_OK ||
        (st = check_value(L, "Conv2d", x)) != POPC_OK ||
        (st = name_layer(L, "conv2d", name, &ln)) != POPC_OK)
        return st;
    if (in_ch < 1 || out_ch < 1 || kernel < 1 || stride < 1 || padding < 0 ||
        dilation < 1 || groups < 1)
        return popc_set_error(POPC_EINVAL, "Conv2d '%s': in_ch %lld, out_ch "
                              "%lld, kernel %lld, stride %lld, dilation %lld "
                              "and groups %lld must be >= 1 and padding %lld "
                              ">= 0", ln.s, (long long)in_ch,
                              (long long)out_ch, (long long)kernel,
                              (long long)stride, (long long)dilation,
                              (long long)groups, (long long)padding);
    if (in_ch % groups || out_ch % groups)
        return popc_set_error(POPC_EINVAL,
                              "Conv2d '%s': in_ch %lld and out_ch "
                              "%lld must be divisible by groups %lld",
                              ln.s, (long long)in_ch, (long long)out_ch,
                              (long long)groups);
    if ((st = check_dim(L, "Conv2d", ln.s, x, 1, in_ch, "in_ch")) != POPC_OK)
        return st;
    wd[0] = out_ch;
    wd[1] = in_ch / groups;
    wd[2] = wd[3] = kernel;
    bound = 1.0 / sqrt((double)(wd[1] * kernel * kernel));
    if ((st = add_param(L, ln.s, "weight", wd, 4, INIT_UNIFORM, bound, 1,
                        &w)) != POPC_OK)
        return st;
    if (bias && (st = add_param(L, ln.s, "bias", bd, 1, INIT_UNIFORM, bound,
                                1, &b)) != POPC_OK)
        return st;
    attrs[0] = popc_attr_make_ints("kernel_shape", ks, 2);
    attrs[1] = popc_attr_make_ints("strides", st2, 2);
    attrs[2] = popc_attr_make_ints("pads", pads, 4);
    attrs[3] = popc_attr_make_ints("dilations", dl, 2);
    attrs[4] = popc_attr_make_int("group", groups);
    in[0] = x;
    in[1] = w;
    in[2] = b;
    return node1(L, NULL, "Conv", in, bias ? 3 : 2, attrs, 5, ln.s, y);
}

popc_status popc_nn_batchnorm2d(popc_layers *L, const char *name, int x,
                                int64_t channels, double eps, double momentum,
                                int *y)
{
    int64_t cd[1] = {channels};
    popc_attr attrs[2];
    layer_name ln;
    popc_status st;
    int in[5], out[3];

    if ((st = check_args(L, "BatchNorm2d", y)) != POPC_OK ||
        (st = check_value(L, "BatchNorm2d", x)) != POPC_OK ||
        (st = name_layer(L, "batchnorm2d", name, &ln)) != POPC_OK)
        return st;
    if (channels < 1 || !(eps > 0) || !(momentum >= 0 && momentum <= 1))
        return popc_set_error(POPC_EINVAL, "BatchNorm2d '%s': channels %lld "
                              "must be >= 1, eps %g > 0 and momentum %g in "
                              "[0, 1]", ln.s, (long long)channels, eps,
                              momentum);
    if ((st = check_dim(L, "BatchNorm2d", ln.s, x, 1, channels,
                        "channels")) != POPC_OK)
        return st;
    in[0] = x;
    if ((st = add_param(L, ln.s, "weight", cd, 1, INIT_CONST, 1.0, 1,
                        &in[1])) != POPC_OK ||
        (st = add_param(L, ln.s, "bias", cd, 1, INIT_CONST, 0.0, 1,
                        &in[2])) != POPC_OK ||
        (st = add_param(L, ln.s, "running_mean", cd, 1, INIT_CONST, 0.0, 0,
                        &in[3])) != POPC_OK ||
        (st = add_param(L, ln.s, "running_var", cd, 1, INIT_CONST, 1.0, 0,
                        &in[4])) != POPC_OK)
        return st;
    attrs[0] = popc_attr_make_float("epsilon", eps);
    /* ONNX keeps running = running * momentum + batch * (1 - momentum) */
    attrs[1] = popc_attr_make_float("momentum", 1.0 - momentum);
    if ((st = popc_graph_add_node(L->g, NULL, "BatchNormalization", 0, in, 5,
                                  out, 3, attrs, 2, ln.s, NULL)) != POPC_OK)
        return st;
    if ((st = popc_graph_add_update(L->g, in[3], out[1])) != POPC_OK ||
        (st = popc_graph_add_update(L->g, in[4], out[2])) != POPC_OK)
        return st;
    *y = out[0];
    return POPC_OK;
}

popc_status popc_nn_layernorm(popc_layers *L, const char *name, int x,
                              int64_t normalized_size, double eps, int *y)
{
    int64_t cd[1] = {normalized_size};
    popc_attr attrs[2];
    layer_name ln;
    popc_status st;
    int in[3];

    if ((st = check_args(L, "LayerNorm", y)) != POPC_OK ||
        (st = check_value(L, "LayerNorm", x)) != POPC_OK ||
        (st = name_layer(L, "layernorm", name, &ln)) != POPC_OK)
        return st;
    if (normalized_size < 1 || !(eps > 0))
        return popc_set_error(POPC_EINVAL, "LayerNorm '%s': normalized_size "
                              "%lld must be >= 1 and eps %g > 0", ln.s,
                              (long long)normalized_size, eps);
    if ((st = check_dim(L, "LayerNorm", ln.s, x, -1, normalized_size,
                        "normalized_size")) != POPC_OK)
        return st;
    in[0] = x;
    if ((st = add_param(L, ln.s, "weight", cd, 1, INIT_CONST, 1.0, 1,
                        &in[1])) != POPC_OK ||
        (st = add_param(L, ln.s, "bias", cd, 1, INIT_CONST, 0.0, 1,
                        &in[2])) != POPC_OK)
        return st;
    attrs[0] = popc_attr_make_int("axis", -1);
    attrs[1] = popc_attr_make_float("epsilon", eps);
    return node1(L, NULL, "LayerNormalization", in, 3, attrs, 2, ln.s, y);
}

/* ---- layers without parameters
 * ---------------------------------------------- */

static popc_status pool(popc_layers *L, const char *op, int x, int64_t kernel,
                        int64_t stride, int64_t padding, int *y)
{
    int64_t ks[2] = {kernel, kernel}, pads[4] = {padding, padding, padding,
                                                  padding};
    int64_t strides[2];
    popc_attr attrs[4];
    int n = 3;
    popc_status st;

    if ((st = check_args(L, op, y)) != POPC_OK ||
        (st = check_value(L, op, x)) != POPC_OK)
        return st;
    if (stride <= 0)
        stride = kernel;
    if (kernel < 1 || padding < 0 || 2 * padding > kernel)
        return popc_set_error(POPC_EINVAL, "%s: kernel %lld must be >= 1 and "
                              "padding %lld between 0 and half the kernel",
                              op, (long long)kernel, (long long)padding);
    strides[0] = strides[1] = stride;
    attrs[0] = popc_attr_make_ints("kernel_shape", ks, 2);
    attrs[1] = popc_attr_make_ints("strides", strides, 2);
    attrs[2] = popc_attr_make_ints("pads", pads, 4);
    if (strcmp(op, "AveragePool") == 0)
        attrs[n++] = popc_attr_make_int("count_include_pad", 1);
    return node1(L, NULL, op, &x, 1, attrs, n, NULL, y);
}

popc_status popc_nn_maxpool2d(popc_layers *L, int x, int64_t kernel,
                              int64_t stride, int64_t padding, int *y)
{
    return pool(L, "MaxPool", x, kernel, stride, padding, y);
}

popc_status popc_nn_avgpool2d(popc_layers *L, int x, int64_t kernel,
                              int64_t stride, int64_t padding, int *y)
{
    return pool(L, "AveragePool", x, kernel, stride, padding, y);
}

popc_status popc_nn_global_avgpool(popc_layers *L, int x, int *y)
{
    popc_status st;

    if ((st = check_args(L, "GlobalAveragePool", y)) != POPC_OK ||
        (st = check_value(L, "GlobalAveragePool", x)) != POPC_OK)
        return st;
    return node1(L, NULL, "GlobalAveragePool", &x, 1, NULL, 0, NULL, y);
}

popc_status popc_nn_activation(popc_layers *L, const char *op, int x,
                               double alpha, int *y)
{
    static const char *const with_alpha[] = {"LeakyRelu", "Elu", "Celu",
                                             "ThresholdedRelu"};
    popc_attr a = popc_attr_make_float("alpha", alpha);
    int n_attrs = 0;
    popc_status st;

    if ((st = check_args(L, "activation", y)) != POPC_OK ||
        (st = check_value(L, "activation", x)) != POPC_OK)
        return st;
    if (!op || !op[0])
        return popc_set_error(POPC_EINVAL, "activation: no op name given "
                              "(\"Relu\", \"Gelu\", \"Sigmoid\", ...)");
    for (size_t i = 0; i < sizeof with_alpha / sizeof with_alpha[0]; i++)
        if (strcmp(op, with_alpha[i]) == 0)
            n_attrs = 1;
    return node1(L, NULL, op, &x, 1, &a, n_attrs, NULL, y);
}

popc_status popc_nn_flatten(popc_layers *L, int x, int64_t axis, int *y)
{
    popc_attr a = popc_attr_make_int("axis", axis);
    popc_status st;

    if ((st = check_args(L, "Flatten", y)) != POPC_OK ||
        (st = check_value(L, "Flatten", x)) != POPC_OK)
        return st;
    return node1(L, NULL, "Flatten", &x, 1, &a, 1, NULL, y);
}

popc_status popc_nn_dropout(popc_layers *L, int x, double p, int *y)
{
    popc_tensor *t = NULL;
    popc_status st;
    int in[2];

    if ((st = check_args(L, "Dropout", y)) != POPC_OK ||
        (st = check_value(L, "Dropout", x)) != POPC_OK)
        return st;
    if (!(p >= 0.0 && p < 1.0))
        return popc_set_error(POPC_EINVAL, "Dropout: probability %g is "
                              "outside [0, 1)", p);
    if ((st = popc_tensor_new(POPC_DTYPE_F32, NULL, 0, &t)) != POPC_OK)
        return st;
    *(float *)popc_tensor_data(t) = (float)p;
    in[0] = x;
    st = popc_graph_add_constant(L->g, NULL, t, &in[1]);
    popc_tensor_free(t);
    if (st != POPC_OK)
        return st;
    /* the mask output lets the backward pass drop the same elements */
    {
        int out[2];
        if ((st = popc_graph_add_node(L->g, NULL, "Dropout", 0, in, 2, out, 2,
                                      NULL, 0, NULL, NULL)) != POPC_OK)
            return st;
        *y = out[0];
    }
    return POPC_OK;
}

popc_status popc_nn_softmax(popc_layers *L, int x, int64_t axis, int log,
                            int *y)
{
    popc_attr a = popc_attr_make_int("axis", axis);
    const char *op = log ? "LogSoftmax" : "Softmax";
    popc_status st;

    if ((st = check_args(L, op, y)) != POPC_OK ||
        (st = check_value(L, op, x)) != POPC_OK)
        return st;
    return node1(L, NULL, op, &x, 1, &a, 1, NULL, y);
}

/* ---- losses
 * ----------------------------------------------------------------- */

static popc_status torch_loss(popc_layers *L, const char *domain,
                              const char *op, int a, int b,
                              const char *reduction, int *loss)
{
    popc_attr attr;
    popc_status st;
    int in[2] = {a, b};

    if ((st = check_args(L, op, loss)) != POPC_OK ||
        (st = check_value(L, op, a)) != POPC_OK ||
        (st = check_value(L, op, b)) != POPC_OK)
        return st;
    if (!reduction)
        reduction = "mean";
    if (strcmp(reduction, "mean") && strcmp(reduction, "sum") &&
        strcmp(reduction, "none"))
        return popc_set_error(POPC_EINVAL, "%s: reduction '%s' is not one of "
                              "\"mean\", \"sum\", \"none\"", op, reduction);
    attr = popc_attr_make_string("reduction", reduction);
    return node1(L, domain, op, in, 2, &attr, 1, NULL, loss);
}

popc_status popc_nn_cross_entropy(popc_layers *L, int logits, int labels,
                                  const char *reduction, int *loss)
{
    return torch_loss(L, NULL, "SoftmaxCrossEntropyLoss", logits, labels,
                      reduction, loss);
}

popc_status popc_nn_nll_loss(popc_layers *L, int log_probs, int labels,
                             const char *reduction, int *loss)
{
    return torch_loss(L, NULL, "NegativeLogLikelihoodLoss", log_probs, labels,
                      reduction, loss);
}

popc_status popc_nn_mse_loss(popc_layers *L, int x, int target,
                             const char *reduction, int *loss)
{
    return torch_loss(L, POPC_DOMAIN_POPC, "MseLoss", x, target, reduction,
                      loss);
}

popc_status popc_nn_l1_loss(popc_layers *L, int x, int target,
                            const char *reduction, int *loss)
{
    return torch_loss(L, POPC_DOMAIN_POPC, "L1Loss", x, target, reduction,
                      loss);
}

popc_status popc_nn_identity_loss(popc_layers *L, int x,
                                  const char *reduction, int *loss)
{
    static const char *const codes[] = {"sum", "mean", "none"};
    popc_attr a;
    popc_status st;
    int code = -1;

    if ((st = check_args(L, "identity_loss", loss)) != POPC_OK ||
        (st = check_value(L, "identity_loss", x)) != POPC_OK)
        return st;
    for (int i = 0; reduction && i < 3; i++)
        if (strcmp(reduction, codes[i]) == 0)
            code = i;
    if (code < 0)
        return popc_set_error(POPC_EINVAL, "Unsupported reduction type! "
                              "(identity_loss: reduction '%s'; use \"sum\", "
                              "\"mean\" or \"none\")",
                              reduction ? reduction : "(null)");
    a = popc_attr_make_int("reduction", code);
    return node1(L, POPC_DOMAIN_POPC, "IdentityLoss", &x, 1, &a, 1, NULL,
                 loss);
}
