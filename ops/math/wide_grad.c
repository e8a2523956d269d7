/* wide_grad.c - gradients of the differentiable ops of wide.c through one
** helper op, popc::WideGrad(dY, X[, Y]): the forward op's name in the
** STRING attribute "of", its own attributes, and "wrt" (0: d/dX; 1: d/dY
** of PRelu's slope or Mod's divisor). It computes dY * d op(x, y)/d wrt
** elementwise over dY's shape, in double; the builder sums it down to the
** input's shape. At a kink the derivative is torch's: HardSigmoid and
** HardSwish pass nothing outside their open linear range, PRelu takes the
** slope at 0, Ceil, Floor, Round and Sign have zero gradient.
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "ops/math/mathops.h"
#include "ops/util/elem.h"

typedef double (*wide_df)(double x, double y, const popc_attrs *a, int wrt);

#define D1(NAME, EXPR)                                                      \
    static double NAME(double x, double y, const popc_attrs *a, int wrt)    \
    {                                                                       \
        (void)x;                                                            \
        (void)y;                                                            \
        (void)a;                                                            \
        (void)wrt;                                                          \
        return (EXPR);                                                      \
    }

D1(d_acos, -1.0 / sqrt(1.0 - x * x))
D1(d_asin, 1.0 / sqrt(1.0 - x * x))
D1(d_atan, 1.0 / (1.0 + x * x))
D1(d_acosh, 1.0 / sqrt(x * x - 1.0))
D1(d_asinh, 1.0 / sqrt(x * x + 1.0))
D1(d_atanh, 1.0 / (1.0 - x * x))
D1(d_cosh, sinh(x))
D1(d_sinh, cosh(x))
D1(d_tan, 1.0 + tan(x) * tan(x))
D1(d_softsign, 1.0 / ((1.0 + fabs(x)) * (1.0 + fabs(x))))
D1(d_zero, 0.0)
D1(d_hardswish, x < -3.0 ? 0.0 : x > 3.0 ? 1.0 : x / 3.0 + 0.5)

static double d_selu(double x, double y, const popc_attrs *a, int wrt)
{
    double alpha = opu_attr_num(a, "alpha", 1.67326319217681884765625);
    double gamma = opu_attr_num(a, "gamma", 1.05070102214813232421875);

    (void)y;
    (void)wrt;
    return x > 0 ? gamma : gamma * alpha * exp(x);
}

static double d_hardsigmoid(double x, double y, const popc_attrs *a, int wrt)
{
    double alpha = opu_attr_num(a, "alpha", 0.2), beta = opu_attr_num(a, "beta", 0.5);
    double u = alpha * x + beta;

    (void)y;
    (void)wrt;
    return u > 0.0 && u < 1.0 ? alpha : 0.0;
}

static double d_thresholded_relu(double x, double y, const popc_attrs *a,
                                  int wrt)
{
    (void)y;
    (void)wrt;
    return x > opu_attr_num(a, "alpha", 1.0) ? 1.0 : 0.0;
}

static double d_shrink(double x, double y, const popc_attrs *a, int wrt)
{
    double lambd = opu_attr_num(a, "lambd", 0.5);

    (void)y;
    (void)wrt;
    return x < -lambd || x > lambd ? 1.0 : 0.0;
}

/* PRelu: x > 0 ? x : slope x */
static double d_prelu(double x, double slope, const popc_attrs *a, int wrt)
{
    (void)a;
    if (wrt == 0)
        return x > 0 ? 1.0 : slope;
    return x > 0 ? 0.0 : x;
}

/* Mod with fmod = 1: x - trunc(x / y) y */
static double d_mod(double x, double y, const popc_attrs *a, int wrt)
{
    (void)a;
    return wrt == 0 ? 1.0 : -trunc(x / y);
}

static const struct {
    const char *op;
    wide_df df;
} derivs[] = {
    {"Acos", d_acos}, {"Asin", d_asin}, {"Atan", d_atan},
    {"Acosh", d_acosh}, {"Asinh", d_asinh}, {"Atanh", d_atanh},
    {"Cosh", d_cosh}, {"Sinh", d_sinh}, {"Tan", d_tan},
    {"Softsign", d_softsign}, {"Selu", d_selu},
    {"HardSigmoid", d_hardsigmoid}, {"HardSwish", d_hardswish},
    {"ThresholdedRelu", d_thresholded_relu}, {"Ceil", d_zero},
    {"Floor", d_zero}, {"Round", d_zero}, {"Sign", d_zero},
    {"Shrink", d_shrink}, {"PRelu", d_prelu}, {"Mod", d_mod},
};

static wide_df find_deriv(const popc_attrs *a)
{
    const char *of = popc_attr_string(a, "of", "");

    for (size_t i = 0; i < sizeof derivs / sizeof derivs[0]; i++)
        if (strcmp(derivs[i].op, of) == 0)
            return derivs[i].df;
    return NULL;
}

static popc_status wgrad_infer(popc_infer_ctx *ic)
{
    int64_t wrt = popc_attr_int(ic->attrs, "wrt", 0);

    if (!find_deriv(ic->attrs))
        return opu_error(POPC_EINVAL, "WideGrad", ic->node_name,
                         "attribute 'of' names no op with a derivative "
                         "here ('%s')", popc_attr_string(ic->attrs, "of", ""));
    if (wrt < 0 || wrt > ic->n_inputs - 2)
        return opu_error(POPC_EINVAL, "WideGrad", ic->node_name,
                         "wrt %lld is not an input of the op", (long long)wrt);
    for (int i = 0; i < ic->n_inputs; i++)
        if (!popc_dtype_is_float(ic->inputs[i].dtype))
            return opu_error(POPC_EINVAL, "WideGrad",
                             ic->node_name, "input %d must be floating "
                             "point", i);
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

static popc_status wgrad_forward(const popc_kernel_ctx *kc)
{
    const popc_view *out = &kc->outputs[0];
    wide_df df = find_deriv(kc->attrs);
    int wrt = (int)popc_attr_int(kc->attrs, "wrt", 0), n = kc->n_inputs;
    opu_bcast b;
    opu_bcast_iter it;
    int64_t s, e;

    opu_bcast_init(&b, out, kc->inputs, n);
    opu_range(popc_view_numel(out), kc->part, kc->n_parts, &s, &e);
    opu_bcast_begin(&it, &b, s, e);
    while (opu_bcast_next(&it)) {
        for (int64_t k = 0; k < it.n; k++) {
            double g = opu_load_f(&kc->inputs[0],
                                  it.in_off[0] + k * b.inner[0]);
            double x = opu_load_f(&kc->inputs[1],
                                  it.in_off[1] + k * b.inner[1]);
            double y = n > 2 ? opu_load_f(&kc->inputs[2],
                                          it.in_off[2] + k * b.inner[2])
                             : 0.0;

            opu_store_f(out, it.out_off + k, g * df(x, y, kc->attrs, wrt));
        }
    }
    return POPC_OK;
}

popc_status mop_wide_grad(popc_grad_ctx *gc, const char *op)
{
    popc_attr attrs[16];
    int n_attrs = 0, in[3], n_in = gc->n_inputs + 1;
    popc_status st;

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if (gc->attrs->n > 14)
        return opu_error(POPC_EINVAL, op, gc->node_name,
                         "too many attributes (%d)", gc->attrs->n);
    for (int i = 0; i < gc->attrs->n; i++)
        attrs[n_attrs++] = *popc_attrs_at(gc->attrs, i);
    attrs[n_attrs++] = (popc_attr){.name = "of", .type = POPC_ATTR_STRING,
                                   .s = op};
    in[0] = gc->output_grads[0];
    for (int i = 0; i < gc->n_inputs; i++)
        in[1 + i] = gc->inputs[i];
    for (int wrt = 0; wrt < gc->n_inputs; wrt++) {
        int t;

        if (!popc_dtype_is_float(gc->input_info[wrt].dtype))
            continue;
        attrs[n_attrs] = (popc_attr){.name = "wrt", .type = POPC_ATTR_INT,
                                     .i = wrt};
        if ((st = opu_grad_node(gc, "popc", "WideGrad", in, n_in, attrs,
                                n_attrs + 1, &t)) != POPC_OK ||
            (st = opu_grad_sum_to(gc, t, &gc->input_info[wrt],
                                  &gc->input_grads[wrt])) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

const popc_op_def mop_wide_grad_ops[] = {
    OPU_DEF("popc", "WideGrad", 1, 2, 3, 1, 1, POPC_OP_SPLIT, wgrad, NULL,
            NULL, "dY * d op(x, y)/d wrt for the ops of wide.c"),
};

const int mop_wide_grad_count =
    sizeof mop_wide_grad_ops / sizeof mop_wide_grad_ops[0];
