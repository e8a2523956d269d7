/* reduce_wide.c - the ONNX reductions beyond Sum/Mean/Max (ReduceMin,
** ReduceProd, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp,
** ReduceSumSquare) and ArgMin, for every numeric dtype, accumulating in
** double. Axes are the "axes" attribute (opset 13; older versions are
** upgraded to it on import), negative from the back; keepdims as ONNX.
** Each part computes its own share of the outputs. Gradients:
** popc::ReduceMaxGrad with "of" (reduce.c).
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "ops/util/elem.h"
#include "ops/tensor/tensorops.h"

enum { W_MIN, W_PROD, W_L1, W_L2, W_LOGSUM, W_LOGSUMEXP, W_SUMSQ };

static const char *const names[] = {"ReduceMin", "ReduceProd", "ReduceL1",
                                    "ReduceL2", "ReduceLogSum",
                                    "ReduceLogSumExp", "ReduceSumSquare"};

/* Which input dims are reduced, from the attributes. */
static popc_status reduced_dims(const char *op,
                                const char *node, const popc_view *x,
                                const popc_attrs *attrs, uint8_t *red)
{
    int64_t axes[POPC_MAX_RANK];
    int64_t n = popc_attr_ints(attrs, "axes", axes, POPC_MAX_RANK);
    popc_status st;

    if (n > POPC_MAX_RANK)
        return opu_error(POPC_EINVAL, op, node, "too many axes");
    memset(red, n <= 0, POPC_MAX_RANK);
    for (int64_t i = 0; i < n; i++) {
        int ax;

        if ((st = opu_axis(op, node, axes[i], x->rank, "axes", &ax)) !=
            POPC_OK)
            return st;
        red[ax] = 1;
    }
    return POPC_OK;
}

static void out_shape(const popc_view *x, const uint8_t *red, int keep,
                      popc_view *o)
{
    o->rank = 0;
    for (int d = 0; d < x->rank; d++)
        if (!red[d])
            o->dims[o->rank++] = x->dims[d];
        else if (keep)
            o->dims[o->rank++] = 1;
}

static popc_status wide_infer(popc_infer_ctx *ic, int kind)
{
    const popc_view *x = &ic->inputs[0];
    uint8_t red[POPC_MAX_RANK];
    popc_status st;

    if (popc_dtype_size(x->dtype) == 0 || x->dtype == POPC_DTYPE_BOOL)
        return opu_error(POPC_EINVAL, names[kind], ic->node_name,
                         "input must be numeric, got %s",
                         popc_dtype_name(x->dtype));
    if ((st = reduced_dims(names[kind], ic->node_name, x,
                           ic->attrs, red)) != POPC_OK)
        return st;
    out_shape(x, red, (int)popc_attr_int(ic->attrs, "keepdims", 1),
              &ic->outputs[0]);
    ic->outputs[0].dtype = x->dtype;
    return POPC_OK;
}

/* Strides of x, and for output index o the offset of its first element. */
typedef struct walk {
    int rank;
    int64_t dims[POPC_MAX_RANK], stride[POPC_MAX_RANK];
    uint8_t red[POPC_MAX_RANK];
    int64_t count;   /* elements per output */
} walk;

static void walk_init(walk *w, const popc_view *x, const uint8_t *red)
{
    int64_t s = 1;

    w->rank = x->rank;
    w->count = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        w->dims[d] = x->dims[d];
        w->stride[d] = s;
        w->red[d] = red[d];
        s *= x->dims[d];
        if (red[d])
            w->count *= x->dims[d];
    }
}

static int64_t base_of(const walk *w, int64_t o)
{
    int64_t off = 0;

    for (int d = w->rank - 1; d >= 0; d--)
        if (!w->red[d]) {
            off += (o % w->dims[d]) * w->stride[d];
            o /= w->dims[d];
        }
    return off;
}

/* The k-th reduced element's offset from the base. */
static int64_t red_off(const walk *w, int64_t k)
{
    int64_t off = 0;

    for (int d = w->rank - 1; d >= 0; d--)
        if (w->red[d]) {
            off += (k % w->dims[d]) * w->stride[d];
            k /= w->dims[d];
        }
    return off;
}

static double reduce_one(const walk *w, const popc_view *x, int64_t base,
                         int kind)
{
    double acc = kind == W_MIN ? INFINITY : kind == W_PROD ? 1.0 : 0.0;
    double mx = -INFINITY;

    if (kind == W_LOGSUMEXP) {
        for (int64_t k = 0; k < w->count; k++)
            mx = fmax(mx, opu_load_f(x, base + red_off(w, k)));
        if (isinf(mx))
            mx = 0;
    }
    for (int64_t k = 0; k < w->count; k++) {
        double v = opu_load_f(x, base + red_off(w, k));

        switch (kind) {
        case W_MIN: acc = v < acc || v != v ? v : acc; break;
        case W_PROD: acc *= v; break;
        case W_L1: acc += fabs(v); break;
        case W_L2: case W_SUMSQ: acc += v * v; break;
        case W_LOGSUM: acc += v; break;
        default: acc += exp(v - mx); break;
        }
    }
    switch (kind) {
    case W_L2: return sqrt(acc);
    case W_LOGSUM: return log(acc);
    case W_LOGSUMEXP: return mx + log(acc);
    default: return acc;
    }
}

static popc_status wide_forward(const popc_kernel_ctx *kc, int kind)
{
    const popc_view *x = &kc->inputs[0];
    uint8_t red[POPC_MAX_RANK];
    walk w;
    int64_t s, e;
    popc_status st;

    if ((st = reduced_dims(names[kind], kc->node_name, x,
                           kc->attrs, red)) != POPC_OK)
        return st;
    walk_init(&w, x, red);
    opu_range(popc_view_numel(&kc->outputs[0]), kc->part, kc->n_parts, &s,
              &e);
    for (int64_t o = s; o < e; o++) {
        double r = reduce_one(&w, x, base_of(&w, o), kind);

        if (popc_dtype_is_float(x->dtype))
            opu_store_f(&kc->outputs[0], o, r);
        else
            opu_store_i(&kc->outputs[0], o, opu_sat_i64(r));
    }
    return POPC_OK;
}

#define KIND(ID, K)                                                         \
    static popc_status ID##_infer(popc_infer_ctx *ic)                       \
    {                                                                       \
        return wide_infer(ic, K);                                           \
    }                                                                       \
    static popc_status ID##_forward(const popc_kernel_ctx *kc)              \
    {                                                                       \
        return wide_forward(kc, K);                                         \
    }

KIND(reduce_min, W_MIN)
KIND(reduce_prod, W_PROD)
KIND(reduce_l1, W_L1)
KIND(reduce_l2, W_L2)
KIND(reduce_log_sum, W_LOGSUM)
KIND(reduce_log_sum_exp, W_LOGSUMEXP)
KIND(reduce_sum_square, W_SUMSQ)

/* ---- ArgMin ----------------------------------------------------------------- */

static popc_status argmin_infer(popc_infer_ctx *ic)
{
    const popc_view *x = &ic->inputs[0];
    popc_view *o = &ic->outputs[0];
    int axis, keep = (int)popc_attr_int(ic->attrs, "keepdims", 1);
    popc_status st;

    if (popc_dtype_size(x->dtype) == 0 || x->dtype == POPC_DTYPE_BOOL)
        return opu_error(POPC_EINVAL, "ArgMin", ic->node_name,
                         "input must be numeric, got %s",
                         popc_dtype_name(x->dtype));
    if ((st = opu_axis("ArgMin", ic->node_name,
                       popc_attr_int(ic->attrs, "axis", 0), x->rank, "axis",
                       &axis)) != POPC_OK)
        return st;
    if (x->dims[axis] == 0)
        return opu_error(POPC_EINVAL, "ArgMin", ic->node_name,
                         "axis %d has size 0: there is no minimum", axis);
    o->dtype = POPC_DTYPE_I64;
    o->rank = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != axis)
            o->dims[o->rank++] = x->dims[d];
        else if (keep)
            o->dims[o->rank++] = 1;
    return POPC_OK;
}

/* NaN counts as the minimum; ties go to the first index unless
** select_last_index. */
static popc_status argmin_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0];
    int64_t *out = kc->outputs[0].data;
    int last = (int)popc_attr_int(kc->attrs, "select_last_index", 0);
    int axis;
    int64_t dim, inner = 1, s, e;
    popc_status st;

    if ((st = opu_axis("ArgMin", kc->node_name,
                       popc_attr_int(kc->attrs, "axis", 0), x->rank, "axis",
                       &axis)) != POPC_OK)
        return st;
    dim = x->dims[axis];
    for (int d = axis + 1; d < x->rank; d++)
        inner *= x->dims[d];
    opu_range(popc_view_numel(&kc->outputs[0]), kc->part, kc->n_parts, &s,
              &e);
    for (int64_t o = s; o < e; o++) {
        int64_t base = (o / inner) * dim * inner + o % inner, best_i = 0;
        double best = opu_load_f(x, base);

        for (int64_t d = 1; d < dim && best == best; d++) {
            double v = opu_load_f(x, base + d * inner);

            if (v < best || v != v || (last && v == best)) {
                best = v;
                best_i = d;
            }
        }
        out[o] = best_i;
    }
    return POPC_OK;
}

#define RGRAD(P, NAME)                                                      \
    static popc_status P##_grad(popc_grad_ctx *gc)                          \
    {                                                                       \
        return top_reduce_grad(gc, NAME);                                   \
    }

RGRAD(reduce_min, "ReduceMin")
RGRAD(reduce_prod, "ReduceProd")
RGRAD(reduce_l1, "ReduceL1")
RGRAD(reduce_l2, "ReduceL2")
RGRAD(reduce_log_sum, "ReduceLogSum")
RGRAD(reduce_log_sum_exp, "ReduceLogSumExp")
RGRAD(reduce_sum_square, "ReduceSumSquare")

#define RDEF(NAME, P, DOC)                                                  \
    OPU_DEF("ai.onnx", NAME, 13, 1, 1, 1, 1, POPC_OP_SPLIT, P, P##_grad,    \
            NULL, DOC)

const popc_op_def top_reduce_wide_ops[] = {
    RDEF("ReduceMin", reduce_min, "min over axes, keepdims"),
    RDEF("ReduceProd", reduce_prod, "product over axes, keepdims"),
    RDEF("ReduceL1", reduce_l1, "sum of |x| over axes, keepdims"),
    RDEF("ReduceL2", reduce_l2, "sqrt of the sum of squares, keepdims"),
    RDEF("ReduceLogSum", reduce_log_sum, "log of the sum, keepdims"),
    RDEF("ReduceLogSumExp", reduce_log_sum_exp,
         "log of the sum of exp (stable), keepdims"),
    RDEF("ReduceSumSquare", reduce_sum_square, "sum of squares, keepdims"),
    OPU_DEF("ai.onnx", "ArgMin", 13, 1, 1, 1, 1, POPC_OP_SPLIT, argmin, NULL,
            NULL, "index of the minimum along axis (int64)"),
};

const int top_reduce_wide_count =
    sizeof top_reduce_wide_ops / sizeof top_reduce_wide_ops[0];
