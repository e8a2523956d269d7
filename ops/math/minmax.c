/* minmax.c - variadic Max, Min and Mean with numpy broadcasting.
**
** Like Sum, the inputs are folded left to right over this part's share of
** the output. Max and Min propagate NaN (torch.maximum); their gradient
** goes to every input equal to the result, split evenly between ties (as
** torch does for two inputs).
*/
#include "config.h"

/* GCC's -O2 vectorizes only loops that need no runtime alias check; the
** run functions below do need one (outputs may alias inputs), so ask for
** the full cost model. Elementwise IEEE arithmetic gives the same bits
** either way. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <math.h>

#include "ops/math/mathops.h"

#define MAXMIN(T)                                                           \
    MOP_BINARY(max_##T, T, T, x > y ? x : y)                               \
    MOP_BINARY(min_##T, T, T, x < y ? x : y)                               \
    MOP_UNARY(copy_##T, T, T, x)

MAXMIN(int32_t)
MAXMIN(int64_t)

MOP_BINARY(max_f32, float, float, x > y || x != x ? x : y)
MOP_BINARY(min_f32, float, float, x < y || x != x ? x : y)
MOP_BINARY(add_f32, float, float, x + y)
MOP_UNARY(copy_f32, float, float, x)
MOP_UNARY(scale_f32, float, float, x * p->alpha)

static double max_wf(double x, double y)
{
    return x > y || x != x ? x : y;
}

static double min_wf(double x, double y)
{
    return x < y || x != x ? x : y;
}

static double copy_wf(double x, double y)
{
    (void)y;
    return x;
}

static int64_t max_wi(int64_t x, int64_t y)
{
    return x > y ? x : y;
}

static int64_t min_wi(int64_t x, int64_t y)
{
    return x < y ? x : y;
}

static int64_t copy_wi(int64_t x, int64_t y)
{
    (void)y;
    return x;
}

static const mop_kernels k_max = {max_f32, max_int32_t, max_int64_t, NULL,
                                  max_wf, max_wi};
static const mop_kernels k_min = {min_f32, min_int32_t, min_int64_t, NULL,
                                  min_wf, min_wi};
static const mop_kernels k_copy = {copy_f32, copy_int32_t, copy_int64_t,
                                   NULL, copy_wf, copy_wi};
static const mop_kernels k_add = {add_f32, NULL, NULL, NULL, NULL, NULL};
static const mop_kernels k_scale = {scale_f32, NULL, NULL, NULL, NULL,
                                    NULL};

static popc_status fold(const popc_kernel_ctx *kc, const mop_kernels *k)
{
    popc_view pair[2];
    popc_status st;

    if (kc->n_inputs == 1)
        return mop_map(kc, &k_copy, kc->inputs, 1, kc->outputs, 1, NULL);
    if ((st = mop_map(kc, k, kc->inputs, 2, kc->outputs, 1, NULL)) !=
        POPC_OK)
        return st;
    pair[0] = kc->outputs[0];
    for (int i = 2; i < kc->n_inputs; i++) {
        pair[1] = kc->inputs[i];
        if ((st = mop_map(kc, k, pair, 2, kc->outputs, 1, NULL)) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

static popc_status max_infer(popc_infer_ctx *ic)
{
    return mop_infer_ew(ic, "Max", ic->n_inputs,
                        MOP_F | MOP_I | MOP_WF | MOP_WI,
                        POPC_DTYPE_UNDEFINED);
}

static popc_status max_forward(const popc_kernel_ctx *kc)
{
    return fold(kc, &k_max);
}

static popc_status min_infer(popc_infer_ctx *ic)
{
    return mop_infer_ew(ic, "Min", ic->n_inputs,
                        MOP_F | MOP_I | MOP_WF | MOP_WI,
                        POPC_DTYPE_UNDEFINED);
}

static popc_status min_forward(const popc_kernel_ctx *kc)
{
    return fold(kc, &k_min);
}

static popc_status mean_infer(popc_infer_ctx *ic)
{
    return mop_infer_ew(ic, "Mean", ic->n_inputs, MOP_F,
                        POPC_DTYPE_UNDEFINED);
}

static popc_status mean_forward(const popc_kernel_ctx *kc)
{
    mop_params p = {.alpha = 1.0f / (float)kc->n_inputs};
    popc_status st;

    if ((st = fold(kc, &k_add)) != POPC_OK || kc->n_inputs == 1)
        return st;
    return mop_map(kc, &k_scale, kc->outputs, 1, kc->outputs, 1, &p);
}

/* dX_i = SumToShape(Where(X_i == Y, dY / ties, 0)), ties = number of
** inputs equal to Y at each element. */
static popc_status maxmin_grad(popc_grad_ctx *gc)
{
    int g = gc->output_grads[0], n = gc->n_inputs;
    int eq[64], ties = -1, share, zero, in[3], t;
    popc_dtype dt = gc->output_info[0].dtype;
    popc_attr to = {.name = "to", .type = POPC_ATTR_INT};
    popc_status st;

    if (g < 0)
        return POPC_OK;
    if (n == 1) {
        gc->input_grads[0] = g;
        return POPC_OK;
    }
    if (n > 64)
        return gc->host->set_error(POPC_EUNSUPPORTED,
                                   "'%s': gradients through more than 64 "
                                   "inputs are not supported", gc->node_name);
    to.i = opu_dtype_to_onnx(dt);
    for (int i = 0; i < n; i++) {
        int c;

        in[0] = gc->inputs[i];
        in[1] = gc->outputs[0];
        if ((st = opu_grad_node(gc, NULL, "Equal", in, 2, NULL, 0, &eq[i])) !=
                POPC_OK ||
            (st = opu_grad_node(gc, NULL, "Cast", &eq[i], 1, &to, 1, &c)) !=
                POPC_OK)
            return st;
        if (ties < 0) {
            ties = c;
            continue;
        }
        in[0] = ties;
        in[1] = c;
        if ((st = opu_grad_node(gc, NULL, "Add", in, 2, NULL, 0, &ties)) !=
            POPC_OK)
            return st;
    }
    in[0] = g;
    in[1] = ties;
    if ((st = opu_grad_node(gc, NULL, "Div", in, 2, NULL, 0, &share)) !=
            POPC_OK ||
        (st = opu_grad_scalar(gc, dt, 0.0, &zero)) != POPC_OK)
        return st;
    for (int i = 0; i < n; i++) {
        in[0] = eq[i];
        in[1] = share;
        in[2] = zero;
        if ((st = opu_grad_node(gc, NULL, "Where", in, 3, NULL, 0, &t)) !=
                POPC_OK ||
            (st = opu_grad_sum_to(gc, t, &gc->input_info[i],
                                  &gc->input_grads[i])) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

static popc_status mean_grad(popc_grad_ctx *gc)
{
    int g = gc->output_grads[0], in[2];
    popc_status st;

    if (g < 0)
        return POPC_OK;
    in[0] = g;
    if ((st = opu_grad_scalar(gc, gc->output_info[0].dtype,
                              1.0 / gc->n_inputs, &in[1])) != POPC_OK ||
        (st = opu_grad_node(gc, NULL, "Mul", in, 2, NULL, 0, &g)) != POPC_OK)
        return st;
    for (int i = 0; i < gc->n_inputs; i++)
        if ((st = opu_grad_sum_to(gc, g, &gc->input_info[i],
                                  &gc->input_grads[i])) != POPC_OK)
            return st;
    return POPC_OK;
}

const popc_op_def mop_minmax_ops[] = {
    OPU_DEF("ai.onnx", "Max", 13, 1, 64, 1, 1, POPC_OP_SPLIT, max,
            maxmin_grad, NULL,
            "elementwise maximum of 1..64 inputs with broadcasting"),
    OPU_DEF("ai.onnx", "Min", 13, 1, 64, 1, 1, POPC_OP_SPLIT, min,
            maxmin_grad, NULL,
            "elementwise minimum of 1..64 inputs with broadcasting"),
    OPU_DEF("ai.onnx", "Mean", 13, 1, 64, 1, 1, POPC_OP_SPLIT, mean,
            mean_grad, NULL,
            "elementwise mean of 1..64 inputs with broadcasting"),
};

const int mop_minmax_count = sizeof mop_minmax_ops / sizeof mop_minmax_ops[0];
