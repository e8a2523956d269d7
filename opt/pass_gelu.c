/* pass_gelu.c - the exact GELU as torch.onnx.export writes it before
** opset 20,
**     Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)
** (either operand order of each Mul and Add), becomes one Gelu. Gelu has
** a gradient, so this runs on training graphs too.
*/
#include "config.h"

#include <math.h>

#include "opt/opt_priv.h"

static int near(float v, double want)
{
    return fabs((double)v - want) <= 1e-6 * fabs(want);
}

/* Node `next` reads only value v of node n, and has op `op`. */
static int next_is(const opt_ctx *c, int v, const char *op, int *next)
{
    *next = opt_sole_reader(c, v);
    return *next >= 0 && opt_is(c, *next, op);
}

static popc_status try_gelu(opt_ctx *c, int div, int *done)
{
    int x = opt_input(c, div, 0), erf, add, mul, half, one;
    float k, f;

    if (!opt_scalar(c, opt_input(c, div, 1), &k) || !near(k, sqrt(2.0)) ||
        !next_is(c, opt_output(c, div, 0), "Erf", &erf) ||
        !next_is(c, opt_output(c, erf, 0), "Add", &add) ||
        (one = opt_other_operand(c, add, opt_output(c, erf, 0))) < 0 ||
        !opt_scalar(c, one, &f) || f != 1.0f ||
        !next_is(c, opt_output(c, add, 0), "Mul", &mul) ||
        opt_other_operand(c, mul, opt_output(c, add, 0)) != x ||
        !next_is(c, opt_output(c, mul, 0), "Mul", &half) ||
        !opt_scalar(c, opt_other_operand(c, half, opt_output(c, mul, 0)),
                    &f) ||
        f != 0.5f || !opt_same_place(c, div, half))
        return POPC_OK;
    popc_node_desc d = {.size = sizeof d, .op = "Gelu", .inputs = &x,
                        .n_inputs = 1, .n_outputs = 1};
    c->taken[div] = c->taken[erf] = c->taken[add] = c->taken[mul] =
        c->taken[half] = 1;
    *done = 1;
    return opt_replace(c, div, half, &d, NULL);
}

popc_status opt_recognise_gelu(opt_ctx *c, int *rewrites)
{
    if (!opt_has_op(c, "ai.onnx", "Gelu"))
        return POPC_OK;
    return opt_each(c, "ai.onnx", "Div", try_gelu, rewrites);
}
