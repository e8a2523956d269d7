/* quant.c - linear quantization: QuantizeLinear, DequantizeLinear,
** DynamicQuantizeLinear, MatMulInteger and QLinearMatMul (uint8 and int8,
** per-tensor or per-axis scales and zero points). Rounding is half to
** even and results saturate to the target type, as ONNX specifies.
** Matrix products take 2-D operands or stacks of them with the same
** leading dims. Not differentiable.
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "ops/math/mathops.h"
#include "ops/util/elem.h"

static double saturate(double v, popc_dtype dt)
{
    double lo = dt == POPC_DTYPE_I8 ? -128 : 0, hi = dt == POPC_DTYPE_I8 ? 127
                                                                          : 255;

    if (dt == POPC_DTYPE_I32) {
        lo = -2147483648.0;
        hi = 2147483647.0;
    }
    return v < lo ? lo : v > hi ? hi : v;
}

/* The scale and zero point that apply to element i of x (per-tensor when
** scale has one element, else along axis). */
static void qparams(const popc_view *x, const popc_view *scale,
                    const popc_view *zp, int axis, int64_t i, double *s,
                    double *z)
{
    int64_t k = 0;

    if (popc_view_numel(scale) > 1) {
        int64_t inner = 1;

        for (int d = axis + 1; d < x->rank; d++)
            inner *= x->dims[d];
        k = (i / inner) % x->dims[axis];
    }
    *s = opu_load_f(scale, k);
    *z = zp && opu_present(zp) ? opu_load_f(zp, k) : 0.0;
}

/* The axis matters only for per-axis scales. */
static popc_status q_axis(const char *op, const char *node,
                          const popc_view *x, const popc_view *scale,
                          const popc_attrs *a, int *axis)
{
    *axis = 0;
    if (popc_view_numel(scale) <= 1)
        return POPC_OK;
    return opu_axis(op, node, popc_attr_int(a, "axis", 1), x->rank,
                    "axis", axis);
}

/* ---- QuantizeLinear / DequantizeLinear ------------------------------------- */

static popc_status quantize_infer(popc_infer_ctx *ic)
{
    int axis;

    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    ic->outputs[0].dtype = ic->n_inputs > 2 && opu_present(&ic->inputs[2])
                               ? ic->inputs[2].dtype
                               : POPC_DTYPE_U8;
    return q_axis("QuantizeLinear", ic->node_name, &ic->inputs[0],
                  &ic->inputs[1], ic->attrs, &axis);
}

static popc_status quantize_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *o = &kc->outputs[0];
    const popc_view *zp = kc->n_inputs > 2 ? &kc->inputs[2] : NULL;
    int axis;
    int64_t s, e;
    popc_status st;

    if ((st = q_axis("QuantizeLinear", kc->node_name, x,
                     &kc->inputs[1], kc->attrs, &axis)) != POPC_OK)
        return st;
    opu_range(popc_view_numel(o), kc->part, kc->n_parts, &s, &e);
    for (int64_t i = s; i < e; i++) {
        double sc, z;

        qparams(x, &kc->inputs[1], zp, axis, i, &sc, &z);
        opu_store_i(o, i, (int64_t)saturate(nearbyint(opu_load_f(x, i) /
                                                      sc) + z,
                                            o->dtype));
    }
    return POPC_OK;
}

static popc_status dequantize_infer(popc_infer_ctx *ic)
{
    int axis;

    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    ic->outputs[0].dtype = POPC_DTYPE_F32;
    return q_axis("DequantizeLinear", ic->node_name,
                  &ic->inputs[0], &ic->inputs[1], ic->attrs, &axis);
}

static popc_status dequantize_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *o = &kc->outputs[0];
    const popc_view *zp = kc->n_inputs > 2 ? &kc->inputs[2] : NULL;
    int axis;
    int64_t s, e;
    popc_status st;

    if ((st = q_axis("DequantizeLinear", kc->node_name, x,
                     &kc->inputs[1], kc->attrs, &axis)) != POPC_OK)
        return st;
    opu_range(popc_view_numel(o), kc->part, kc->n_parts, &s, &e);
    for (int64_t i = s; i < e; i++) {
        double sc, z;

        qparams(x, &kc->inputs[1], zp, axis, i, &sc, &z);
        opu_store_f(o, i, (opu_load_f(x, i) - z) * sc);
    }
    return POPC_OK;
}

/* ---- DynamicQuantizeLinear ------------------------------------------------------- */

static popc_status dyn_quantize_infer(popc_infer_ctx *ic)
{
    if (ic->inputs[0].dtype != POPC_DTYPE_F32)
        return opu_error(POPC_EINVAL, "DynamicQuantizeLinear",
                         ic->node_name, "input must be float32");
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    ic->outputs[0].dtype = POPC_DTYPE_U8;
    memset(&ic->outputs[1], 0, sizeof ic->outputs[1]);
    ic->outputs[1].dtype = POPC_DTYPE_F32;
    memset(&ic->outputs[2], 0, sizeof ic->outputs[2]);
    ic->outputs[2].dtype = POPC_DTYPE_U8;
    return POPC_OK;
}

static popc_status dyn_quantize_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0];
    int64_t n = popc_view_numel(x);
    double lo = 0, hi = 0, sc, zp;

    for (int64_t i = 0; i < n; i++) {
        double v = opu_load_f(x, i);

        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    sc = (hi - lo) / 255.0;
    if (sc == 0)
        sc = 1;
    /* float32 arithmetic, as the reference computes it */
    sc = (float)sc;
    zp = saturate(nearbyintf((float)-lo / (float)sc), POPC_DTYPE_U8);
    for (int64_t i = 0; i < n; i++)
        ((uint8_t *)kc->outputs[0].data)[i] = (uint8_t)saturate(
            nearbyintf((float)opu_load_f(x, i) / (float)sc) + zp,
            POPC_DTYPE_U8);
    *(float *)kc->outputs[1].data = (float)sc;
    *(uint8_t *)kc->outputs[2].data = (uint8_t)zp;
    return POPC_OK;
}

/* ---- MatMulInteger / QLinearMatMul ------------------------------------------------ */

/* Shape of a stack of [M, K] x [K, N] products; both operands' leading
** dims must agree. */
static popc_status mm_shape(const char *op,
                            const char *node, const popc_view *a,
                            const popc_view *b, popc_view *o)
{
    if (a->rank < 2 || b->rank < 2 || a->rank != b->rank ||
        a->dims[a->rank - 1] != b->dims[b->rank - 2] ||
        memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)(a->rank - 2)))
        return opu_error(POPC_EINVAL, op, node, "operands must be "
                         "[..., M, K] and [..., K, N] with equal leading "
                         "dims");
    *o = *a;
    o->data = NULL;
    o->dims[o->rank - 1] = b->dims[b->rank - 1];
    return POPC_OK;
}

/* o[..., m, n] = sum_k (a - za)(b - zb), then finish(). */
static void mm_run(const popc_view *a, const popc_view *b, double za,
                   double zb, const popc_view *o, double mul, double zy,
                   int requant)
{
    int64_t M = a->dims[a->rank - 2], K = a->dims[a->rank - 1];
    int64_t N = b->dims[b->rank - 1];
    int64_t batch = M * N > 0 ? popc_view_numel(o) / (M * N) : 0;

    for (int64_t t = 0; t < batch; t++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double acc = 0;
                int64_t at = (t * M + m) * N + n;

                for (int64_t k = 0; k < K; k++)
                    acc += (opu_load_f(a, (t * M + m) * K + k) - za) *
                           (opu_load_f(b, (t * K + k) * N + n) - zb);
                if (requant)
                    opu_store_i(o, at, (int64_t)saturate(
                                           nearbyint(acc * mul) + zy,
                                           o->dtype));
                else
                    opu_store_i(o, at, (int64_t)acc);
            }
}

static popc_status matmul_integer_infer(popc_infer_ctx *ic)
{
    popc_status st = mm_shape("MatMulInteger", ic->node_name,
                              &ic->inputs[0], &ic->inputs[1],
                              &ic->outputs[0]);

    ic->outputs[0].dtype = POPC_DTYPE_I32;
    return st;
}

static double zp_scalar(const popc_kernel_ctx *kc, int i)
{
    return kc->n_inputs > i && opu_present(&kc->inputs[i])
               ? opu_load_f(&kc->inputs[i], 0)
               : 0.0;
}

static popc_status matmul_integer_forward(const popc_kernel_ctx *kc)
{
    mm_run(&kc->inputs[0], &kc->inputs[1], zp_scalar(kc, 2),
           zp_scalar(kc, 3), &kc->outputs[0], 1.0, 0.0, 0);
    return POPC_OK;
}

static popc_status qlinear_matmul_infer(popc_infer_ctx *ic)
{
    popc_status st = mm_shape("QLinearMatMul", ic->node_name,
                              &ic->inputs[0], &ic->inputs[3],
                              &ic->outputs[0]);

    ic->outputs[0].dtype = ic->inputs[7].dtype;
    return st;
}

static popc_status qlinear_matmul_forward(const popc_kernel_ctx *kc)
{
    double mul = opu_load_f(&kc->inputs[1], 0) *
                 opu_load_f(&kc->inputs[4], 0) /
                 opu_load_f(&kc->inputs[6], 0);

    mm_run(&kc->inputs[0], &kc->inputs[3], zp_scalar(kc, 2),
           zp_scalar(kc, 5), &kc->outputs[0], mul, zp_scalar(kc, 7), 1);
    return POPC_OK;
}

const popc_op_def mop_quant_ops[] = {
    OPU_DEF("ai.onnx", "QuantizeLinear", 13, 2, 3, 1, 1, POPC_OP_SPLIT,
            quantize, NULL, NULL, "saturate(round(x / scale) + zero_point)"),
    OPU_DEF("ai.onnx", "DequantizeLinear", 13, 2, 3, 1, 1, POPC_OP_SPLIT,
            dequantize, NULL, NULL, "(x - zero_point) * scale"),
    OPU_DEF("ai.onnx", "DynamicQuantizeLinear", 11, 1, 1, 3, 3, 0,
            dyn_quantize, NULL, NULL, "uint8 with computed scale and zp"),
    OPU_DEF("ai.onnx", "MatMulInteger", 10, 2, 4, 1, 1, 0, matmul_integer,
            NULL, NULL, "int32 product of zero-point-shifted operands"),
    OPU_DEF("ai.onnx", "QLinearMatMul", 10, 8, 8, 1, 1, 0, qlinear_matmul,
            NULL, NULL, "quantized product, requantized to y's type"),
};

const int mop_quant_count = sizeof mop_quant_ops / sizeof mop_quant_ops[0];
