/* reduce.c - reductions: ReduceSum (axes input, opset 13), ReduceMean and
** ReduceMax (axes attribute, opset 13..17; an axes input as in opset 18 is
** accepted too), ArgMax, and the helpers popc::SumToShape (a broadcast
** gradient summed back to an input's shape) and popc::ReduceMaxGrad.
**
** Sums accumulate in double and visit the reduced elements of every output
** in row-major order, so results do not depend on how the outputs are
** split between parts. With POPC_KERNEL_HALF_PARTIALS, float16 sums are
** rounded to float16 after every term instead (Precision.setPartialsType).
*/
#include "config.h"

/* GCC's -O2 vectorizes only loops that need no runtime alias check; the
** row sums need the full cost model. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <math.h>
#include <string.h>

#include "ops/util/sums.h"
#include "ops/tensor/tensorops.h"

/* ---- geometry ------------------------------------------------------------- */

/* An input seen as alternating kept and reduced dims: size-1 dims dropped,
** neighbours of the same kind merged. */
typedef struct reduce_geom {
    int n_keep, n_red;
    int64_t keep_dims[POPC_MAX_RANK], keep_stride[POPC_MAX_RANK];
    int64_t red_dims[POPC_MAX_RANK], red_stride[POPC_MAX_RANK];
    int inner_reduced;          /* the innermost input dim is reduced */
    int64_t n_out, n_red_elems;
} reduce_geom;

/* Resolved reduction axes: reduce[d] for d < in->rank, and the output
** shape (keepdims or not). *noop when the op is the identity
** (noop_with_empty_axes with no axes). */
typedef struct reduce_spec {
    uint8_t reduce[POPC_MAX_RANK];
    int keepdims, noop;
    int64_t count;              /* elements reduced into each output */
} reduce_spec;

static void geom_init(reduce_geom *g, const popc_view *in,
                      const uint8_t *reduce)
{
    int last_kind = -1;

    memset(g, 0, sizeof *g);
    g->n_out = 1;
    g->n_red_elems = 1;
    for (int d = 0; d < in->rank; d++) {
        int64_t stride = 1;

        for (int j = d + 1; j < in->rank; j++)
            stride *= in->dims[j];
        if (reduce[d])
            g->n_red_elems *= in->dims[d];
        else
            g->n_out *= in->dims[d];
        if (in->dims[d] == 1)
            continue;
        if (reduce[d]) {
            if (last_kind == 1) {
                g->red_dims[g->n_red - 1] *= in->dims[d];
                g->red_stride[g->n_red - 1] = stride;
            } else {
                g->red_dims[g->n_red] = in->dims[d];
                g->red_stride[g->n_red++] = stride;
            }
        } else {
            if (last_kind == 0) {
                g->keep_dims[g->n_keep - 1] *= in->dims[d];
                g->keep_stride[g->n_keep - 1] = stride;
            } else {
                g->keep_dims[g->n_keep] = in->dims[d];
                g->keep_stride[g->n_keep++] = stride;
            }
        }
        last_kind = reduce[d];
    }
    g->inner_reduced = last_kind == 1;
}

/* axes: an explicit list (n >= 0), or n < 0 when none is given. */
static popc_status spec_init(const char *op,
                             const char *node, const popc_view *in,
                             const int64_t *axes, int n, int keepdims,
                             int noop_with_empty, reduce_spec *spec,
                             popc_view *out)
{
    memset(spec, 0, sizeof *spec);
    spec->keepdims = keepdims;
    if (n <= 0 && noop_with_empty) {
        spec->noop = 1;
    } else if (n <= 0) {
        memset(spec->reduce, 1, sizeof spec->reduce);
    } else {
        for (int i = 0; i < n; i++) {
            int ax;
            popc_status st;

            if ((st = opu_axis(op, node, axes[i], in->rank, "axis",
                               &ax)) != POPC_OK)
                return st;
            if (spec->reduce[ax])
                return opu_error(POPC_EINVAL, op, node,
                                 "axis %d is given twice", ax);
            spec->reduce[ax] = 1;
        }
    }
    out->dtype = in->dtype;
    out->rank = 0;
    spec->count = 1;
    for (int d = 0; d < in->rank; d++) {
        int r = spec->reduce[d] && !spec->noop;

        if (r)
            spec->count *= in->dims[d];
        if (!r)
            out->dims[out->rank++] = in->dims[d];
        else if (keepdims)
            out->dims[out->rank++] = 1;
    }
    return POPC_OK;
}

/* ---- kernels ------------------------------------------------------------- */

enum { RED_SUM, RED_MEAN, RED_MAX };

#define RED_CHUNK 256

static inline double load_at(const void *p, int half, int64_t i)
{
    return half ? opu_h2f(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static inline void store_at(void *p, int half, int64_t i, double v)
{
    if (half)
        ((uint16_t *)p)[i] = opu_f2h((float)v);
    else
        ((float *)p)[i] = (float)v;
}

static inline double combine(int kind, double acc, double v)
{
    if (kind != RED_MAX)
        return acc + v;
    return v > acc || v != v ? v : acc;
}

/* Offset of the input element of output index o (row-major over kept). */
static int64_t keep_offset(const reduce_geom *g, int64_t o)
{
    int64_t off = 0;

    for (int d = g->n_keep - 1; d >= 0; d--) {
        off += (o % g->keep_dims[d]) * g->keep_stride[d];
        o /= g->keep_dims[d];
    }
    return off;
}

/* Next reduced multi-index; returns the offset step, 0 at the end. */
static int red_next(const reduce_geom *g, int64_t *idx, int64_t *off,
                    int upto)
{
    for (int d = upto - 1; d >= 0; d--) {
        if (++idx[d] < g->red_dims[d]) {
            *off += g->red_stride[d];
            return 1;
        }
        *off -= (g->red_dims[d] - 1) * g->red_stride[d];
        idx[d] = 0;
    }
    return 0;
}

/* Reduce outputs [s, e) of in into out (float32 or float16); flags: the
** kernel's (half partials). */
static void reduce_range(const reduce_geom *g, int kind, double scale,
                         const popc_view *in, const popc_view *out, int64_t s,
                         int64_t e, unsigned flags)
{
    int half = in->dtype == POPC_DTYPE_F16;
    int hp = half && kind != RED_MAX && (flags & POPC_KERNEL_HALF_PARTIALS);
    double init = kind == RED_MAX ? -INFINITY : 0.0;

    if (g->inner_reduced || g->n_keep == 0) {
        /* each output sums a strided set whose innermost run is contiguous */
        int inner = g->n_red > 0 && g->inner_reduced;
        int64_t run = inner ? g->red_dims[g->n_red - 1] : 1;

        for (int64_t o = s; o < e; o++) {
            int64_t base = keep_offset(g, o), idx[POPC_MAX_RANK] = {0};
            int64_t off = 0;
            double acc = init;

            if (g->n_red_elems > 0 && !half && kind != RED_MAX) {
                /* float sums in eight double lanes: vectorized */
                double lanes[8] = {0};

                do
                    opu_sum8_add(lanes, (const float *)in->data + base + off,
                                 run);
                while (red_next(g, idx, &off, g->n_red - inner));
                acc = opu_sum8_total(lanes);
            } else if (g->n_red_elems > 0) {
                do {
                    for (int64_t i = 0; i < run; i++) {
                        acc = combine(kind, acc, load_at(in->data, half,
                                                         base + off + i));
                        if (hp)
                            acc = opu_round_f16((float)acc);
                    }
                } while (red_next(g, idx, &off, g->n_red - inner));
            }
            store_at(out->data, half, o, kind == RED_MAX ? acc : acc * scale);
        }
        return;
    }
    /* innermost dim kept: add whole rows of outputs at once */
    {
        int64_t len = g->keep_dims[g->n_keep - 1];
        double acc[RED_CHUNK];

        while (s < e) {
            int64_t c0 = s % len;
            int64_t n = len - c0 < e - s ? len - c0 : e - s;
            int64_t base, idx[POPC_MAX_RANK] = {0}, off = 0;

            if (n > RED_CHUNK)
                n = RED_CHUNK;
            base = keep_offset(g, s);
            for (int64_t i = 0; i < n; i++)
                acc[i] = init;
            if (g->n_red_elems > 0) {
                do {
                    if (half) {
                        const uint16_t *p = (const uint16_t *)in->data + base +
                                            off;
                        for (int64_t i = 0; i < n; i++)
                            acc[i] = combine(kind, acc[i], opu_h2f(p[i]));
                        for (int64_t i = 0; hp && i < n; i++)
                            acc[i] = opu_round_f16((float)acc[i]);
                    } else if (kind == RED_MAX) {
                        const float *p = (const float *)in->data + base + off;
                        for (int64_t i = 0; i < n; i++)
                            acc[i] = combine(kind, acc[i], p[i]);
                    } else {
                        const float *p = (const float *)in->data + base + off;
                        for (int64_t i = 0; i < n; i++)
                            acc[i] += p[i];
                    }
                } while (red_next(g, idx, &off, g->n_red));
            }
            for (int64_t i = 0; i < n; i++)
                store_at(out->data, half, s + i,
                         kind == RED_MAX ? acc[i] : acc[i] * scale);
            s += n;
        }
    }
}

/* ---- ReduceSum / ReduceMean / ReduceMax --------------------------------------- */

static const char *const red_names[] = {"ReduceSum", "ReduceMean",
                                        "ReduceMax"};

/* Axes: input 1 when present (ReduceSum-13, opset 18 form), else the
** "axes" attribute; n < 0 when neither. */
static popc_status red_axes(const char *op,
                            const char *node, const popc_view *in, int n_in,
                            const popc_attrs *attrs, int64_t *axes, int *n)
{
    *n = -1;
    if (n_in > 1 && opu_present(&in[1])) {
        if (in[1].rank == 1 && in[1].dims[0] == 0) {
            *n = 0;
            return POPC_OK;
        }
        return opu_const_ints(op, node, &in[1], "axes (input 1)", axes,
                              POPC_MAX_RANK, n);
    }
    *n = (int)popc_attr_ints(attrs, "axes", axes, POPC_MAX_RANK);
    if (*n > POPC_MAX_RANK)
        return opu_error(POPC_EINVAL, op, node, "too many axes (%d)", *n);
    return POPC_OK;
}

static popc_status red_spec(int kind, const char *node,
                            const popc_view *in, int n_in,
                            const popc_attrs *attrs, reduce_spec *spec,
                            popc_view *out)
{
    const char *op = red_names[kind];
    int64_t axes[POPC_MAX_RANK];
    int n;
    popc_status st;

    if (!opu_is_float(in[0].dtype))
        return opu_error(POPC_EINVAL, op, node,
                         "input must be float32 or float16, got %s",
                         popc_dtype_name(in[0].dtype));
    if ((st = red_axes(op, node, in, n_in, attrs, axes, &n)) != POPC_OK)
        return st;
    return spec_init(op, node, &in[0], axes, n,
        (int)popc_attr_int(attrs, "keepdims", 1),
        (int)popc_attr_int(attrs, "noop_with_empty_axes", 0), spec, out);
}

static popc_status red_infer(popc_infer_ctx *ic, int kind)
{
    reduce_spec spec;

    return red_spec(kind, ic->node_name, ic->inputs, ic->n_inputs,
                    ic->attrs, &spec, &ic->outputs[0]);
}

static popc_status red_forward(const popc_kernel_ctx *kc, int kind)
{
    reduce_spec spec;
    reduce_geom g;
    popc_view shape;
    int64_t s, e;
    popc_status st;

    memset(&shape, 0, sizeof shape);
    if ((st = red_spec(kind, kc->node_name, kc->inputs,
                       kc->n_inputs, kc->attrs, &spec, &shape)) != POPC_OK)
        return st;
    if (spec.noop) {
        top_copy_share(kc, &kc->inputs[0], &kc->outputs[0]);
        return POPC_OK;
    }
    geom_init(&g, &kc->inputs[0], spec.reduce);
    opu_range(g.n_out, kc->part, kc->n_parts, &s, &e);
    reduce_range(&g, kind, kind == RED_MEAN ? 1.0 / (double)spec.count : 1.0,
                 &kc->inputs[0], &kc->outputs[0], s, e, kc->flags);
    return POPC_OK;
}

static popc_status reduce_sum_infer(popc_infer_ctx *ic)
{
    return red_infer(ic, RED_SUM);
}

static popc_status reduce_sum_forward(const popc_kernel_ctx *kc)
{
    return red_forward(kc, RED_SUM);
}

static popc_status reduce_mean_infer(popc_infer_ctx *ic)
{
    return red_infer(ic, RED_MEAN);
}

static popc_status reduce_mean_forward(const popc_kernel_ctx *kc)
{
    return red_forward(kc, RED_MEAN);
}

static popc_status reduce_max_infer(popc_infer_ctx *ic)
{
    return red_infer(ic, RED_MAX);
}

static popc_status reduce_max_forward(const popc_kernel_ctx *kc)
{
    return red_forward(kc, RED_MAX);
}

/* The forward's reduction and its output shape with keepdims=1. */
static popc_status grad_spec(popc_grad_ctx *gc, int kind, reduce_spec *spec,
                             popc_view *kept)
{
    popc_view views[2];
    int64_t axes[POPC_MAX_RANK];
    int n;
    popc_status st;

    memset(kept, 0, sizeof *kept);
    views[0] = gc->input_info[0];
    memset(&views[1], 0, sizeof views[1]);
    if (gc->n_inputs > 1 && gc->inputs[1] >= 0 &&
        (st = gc->host->value_info(gc, gc->inputs[1], &views[1])) != POPC_OK)
        return st;
    if ((st = red_axes(red_names[kind], gc->node_name, views,
                       gc->n_inputs > 1 ? 2 : 1, gc->attrs, axes, &n)) !=
        POPC_OK)
        return st;
    return spec_init(red_names[kind], gc->node_name, &views[0],
                     axes, n, 1,
                     (int)popc_attr_int(gc->attrs, "noop_with_empty_axes", 0),
                     spec, kept);
}

/* Sum and Mean: dY (times 1/count) reshaped to keepdims form and expanded
** back to the input's shape. */
static popc_status red_sum_mean_grad(popc_grad_ctx *gc, int kind)
{
    reduce_spec spec;
    popc_view kept;
    int g = gc->output_grads[0], in[2];
    popc_status st;

    if (g < 0)
        return POPC_OK;
    if ((st = grad_spec(gc, kind, &spec, &kept)) != POPC_OK)
        return st;
    if (kind == RED_MEAN && spec.count != 1) {
        int pair[2];

        pair[0] = g;
        if ((st = opu_grad_scalar(gc, gc->output_info[0].dtype,
                                  1.0 / (double)spec.count, &pair[1])) !=
                POPC_OK ||
            (st = opu_grad_node(gc, NULL, "Mul", pair, 2, NULL, 0, &g)) !=
                POPC_OK)
            return st;
    }
    if ((st = opu_grad_reshape(gc, g, &kept, &in[0])) != POPC_OK)
        return st;
    if (opu_same_shape(&kept, &gc->input_info[0])) {
        gc->input_grads[0] = in[0];
        return POPC_OK;
    }
    if ((st = opu_grad_ints(gc, gc->input_info[0].dims,
                            gc->input_info[0].rank, &in[1])) != POPC_OK)
        return st;
    return opu_grad_node(gc, NULL, "Expand", in, 2, NULL, 0,
                         &gc->input_grads[0]);
}

static popc_status reduce_sum_grad(popc_grad_ctx *gc)
{
    return red_sum_mean_grad(gc, RED_SUM);
}

static popc_status reduce_mean_grad(popc_grad_ctx *gc)
{
    return red_sum_mean_grad(gc, RED_MEAN);
}

/* ReduceMaxGrad(dY, X, Y, axes?) with the forward's attributes and, for
** the reductions of reduce_wide.c, "of" naming the forward op. */
popc_status top_reduce_grad(popc_grad_ctx *gc, const char *of)
{
    popc_attr attrs[17];
    int in[4], n_attrs = 0;
    int n = gc->n_inputs > 1 && gc->inputs[1] >= 0 ? 4 : 3;

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if (gc->attrs && gc->attrs->n > 16)
        return opu_error(POPC_EINVAL, of, gc->node_name,
                         "too many attributes (%d)", gc->attrs->n);
    for (int i = 0; gc->attrs && i < gc->attrs->n; i++)
        attrs[n_attrs++] = *popc_attrs_at(gc->attrs, i);
    if (strcmp(of, "ReduceMax") != 0)
        attrs[n_attrs++] = (popc_attr){.name = "of",
                                       .type = POPC_ATTR_STRING, .s = of};
    in[0] = gc->output_grads[0];
    in[1] = gc->inputs[0];
    in[2] = gc->outputs[0];
    in[3] = n == 4 ? gc->inputs[1] : -1;
    return opu_grad_node(gc, "popc", "ReduceMaxGrad", in, n, attrs, n_attrs,
                         &gc->input_grads[0]);
}

static popc_status reduce_max_grad(popc_grad_ctx *gc)
{
    return top_reduce_grad(gc, "ReduceMax");
}

/* ---- ReduceMaxGrad ------------------------------------------------------------ */

/* The spec of the forward ReduceMax, from X (input 1) and its axes (input
** 3 or the attribute). */
static popc_status max_grad_spec(const char *node,
                                 const popc_view *in, int n_in,
                                 const popc_attrs *attrs,
                                 reduce_spec *spec, popc_view *y)
{
    popc_view views[2];

    views[0] = in[1];
    memset(&views[1], 0, sizeof views[1]);
    if (n_in > 3)
        views[1] = in[3];
    return red_spec(RED_MAX, node, views, 2, attrs, spec, y);
}

/* What a reduction's gradient needs to know about one output: the count
** of elements equal to it (Max, Min: torch's amax/amin backward shares
** dY among ties), or the zeros and the product of the other elements
** (Prod: torch's rule when an element is 0). */
enum { G_MAX, G_MIN, G_PROD, G_L1, G_L2, G_LOGSUM, G_LOGSUMEXP, G_SUMSQ };

static int grad_kind(const popc_attrs *a)
{
    static const char *const of[] = {"ReduceMax", "ReduceMin", "ReduceProd",
                                     "ReduceL1", "ReduceL2", "ReduceLogSum",
                                     "ReduceLogSumExp", "ReduceSumSquare"};
    const char *name = popc_attr_string(a, "of", "ReduceMax");

    for (int k = 0; k < (int)(sizeof of / sizeof of[0]); k++)
        if (strcmp(of[k], name) == 0)
            return k;
    return -1;
}

/* d(reduction)/dx for one element x of an output y, with the output's
** ties (Max/Min) or zeros and product of the non-zero elements (Prod). */
static double red_deriv(int kind, double x, double y, int64_t count,
                        double prod_nonzero)
{
    switch (kind) {
    case G_MAX:
    case G_MIN: return x == y ? 1.0 / (double)count : 0.0;
    case G_PROD:
        if (count == 0)
            return y / x;
        return count == 1 && x == 0 ? prod_nonzero : 0.0;
    case G_L1: return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
    case G_L2: return y > 0 ? x / y : 0.0;
    case G_LOGSUM: return exp(-y);
    case G_LOGSUMEXP: return exp(x - y);
    default: return 2.0 * x;
    }
}

static popc_status reduce_max_grad_infer(popc_infer_ctx *ic)
{
    reduce_spec spec;
    popc_view y;
    const popc_view *in = ic->inputs;
    char a[160], b[160];
    popc_status st;

    memset(&y, 0, sizeof y);
    if (grad_kind(ic->attrs) < 0)
        return opu_error(POPC_EINVAL, "ReduceMaxGrad",
                         ic->node_name, "attribute 'of' names no reduction "
                         "it differentiates ('%s')",
                         popc_attr_string(ic->attrs, "of", ""));
    if ((st = max_grad_spec(ic->node_name, in, ic->n_inputs,
                            ic->attrs, &spec, &y)) != POPC_OK)
        return st;
    if (!opu_same_shape(&in[0], &y) || !opu_same_shape(&in[2], &y) ||
        in[0].dtype != in[1].dtype || in[2].dtype != in[1].dtype)
        return opu_error(POPC_EINVAL, "ReduceMaxGrad",
                         ic->node_name,
                         "dY %s and Y %s must both have the reduced shape %s "
                         "and X's dtype", opu_shape_str(&in[0], a, sizeof a),
                         opu_shape_str(&in[2], b, sizeof b),
                         popc_dtype_name(in[1].dtype));
    ic->outputs[0] = in[1];
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

/* dX for every reduction ReduceMaxGrad serves (attribute "of"). A part
** owns outputs [s, e) of Y and writes exactly the X positions that reduce
** into them. */
static popc_status reduce_max_grad_forward(const popc_kernel_ctx *kc)
{
    const popc_view *dy = &kc->inputs[0], *x = &kc->inputs[1];
    const popc_view *y = &kc->inputs[2], *dx = &kc->outputs[0];
    int half = x->dtype == POPC_DTYPE_F16, kind = grad_kind(kc->attrs);
    reduce_spec spec;
    reduce_geom g;
    popc_view shape;
    int64_t s, e;
    popc_status st;

    memset(&shape, 0, sizeof shape);
    if ((st = max_grad_spec(kc->node_name, kc->inputs,
                            kc->n_inputs, kc->attrs, &spec, &shape)) !=
        POPC_OK)
        return st;
    if (spec.noop && kind <= G_PROD) {
        top_copy_share(kc, dy, dx);
        return POPC_OK;
    }
    geom_init(&g, x, spec.reduce);
    opu_range(g.n_out, kc->part, kc->n_parts, &s, &e);
    for (int64_t o = s; o < e; o++) {
        int64_t base = keep_offset(&g, o), idx[POPC_MAX_RANK] = {0}, off = 0;
        double m = load_at(y->data, half, o), d = load_at(dy->data, half, o);
        double prod = 1.0;
        int64_t count = 0;

        if (g.n_red_elems == 0)
            continue;
        if (kind <= G_PROD) {
            do {
                double v = load_at(x->data, half, base + off);

                if (kind == G_PROD) {
                    count += v == 0;
                    prod *= v == 0 ? 1.0 : v;
                } else {
                    count += v == m;
                }
            } while (red_next(&g, idx, &off, g.n_red));
            memset(idx, 0, sizeof idx);
            off = 0;
        }
        do {
            double v = load_at(x->data, half, base + off);

            store_at(dx->data, half, base + off,
                     (kind <= G_MIN && count == 0)
                         ? 0.0
                         : d * red_deriv(kind, v, m, count, prod));
        } while (red_next(&g, idx, &off, g.n_red));
    }
    return POPC_OK;
}

/* ---- SumToShape ---------------------------------------------------------------- */

/* The target shape from attribute "shape"; reduce[d] marks the dims of g
** that are summed. */
static popc_status sum_to_spec(const char *node,
                               const popc_view *g, const popc_attrs *attrs,
                               popc_view *target, uint8_t *reduce)
{
    int64_t n;
    char a[160], b[160];

    memset(target, 0, sizeof *target);
    n = popc_attr_ints(attrs, "shape", target->dims, POPC_MAX_RANK);
    if (n < 0 || n > POPC_MAX_RANK)
        return opu_error(POPC_EINVAL, "SumToShape", node,
                         "attribute 'shape' (ints, rank <= %d) is required",
                         POPC_MAX_RANK);
    target->rank = (int)n;
    target->dtype = g->dtype;
    if (!opu_is_float(g->dtype))
        return opu_error(POPC_EINVAL, "SumToShape", node,
                         "input must be float32 or float16, got %s",
                         popc_dtype_name(g->dtype));
    if (target->rank > g->rank)
        goto mismatch;
    for (int d = 0; d < g->rank; d++) {
        int td = d - (g->rank - target->rank);
        int64_t tv = td < 0 ? 1 : target->dims[td];

        if (tv != g->dims[d] && tv != 1)
            goto mismatch;
        reduce[d] = (td < 0 || tv == 1) && g->dims[d] != 1;
    }
    return POPC_OK;
mismatch:
    return opu_error(POPC_EINVAL, "SumToShape", node,
                     "shape %s does not broadcast to the input's shape %s; "
                     "it must be the shape of an operand of the broadcast",
                     opu_shape_str(target, a, sizeof a),
                     opu_shape_str(g, b, sizeof b));
}

static popc_status sum_to_shape_infer(popc_infer_ctx *ic)
{
    uint8_t reduce[POPC_MAX_RANK];

    return sum_to_spec(ic->node_name, &ic->inputs[0], ic->attrs,
                       &ic->outputs[0], reduce);
}

static popc_status sum_to_shape_forward(const popc_kernel_ctx *kc)
{
    uint8_t reduce[POPC_MAX_RANK] = {0};
    reduce_geom g;
    popc_view target;
    int64_t s, e;
    popc_status st;

    if ((st = sum_to_spec(kc->node_name, &kc->inputs[0], kc->attrs,
                          &target, reduce)) != POPC_OK)
        return st;
    geom_init(&g, &kc->inputs[0], reduce);
    opu_range(g.n_out, kc->part, kc->n_parts, &s, &e);
    reduce_range(&g, RED_SUM, 1.0, &kc->inputs[0], &kc->outputs[0], s, e,
                 kc->flags);
    return POPC_OK;
}

/* The gradient of a sum-to-shape is the broadcast back. */
static popc_status sum_to_shape_grad(popc_grad_ctx *gc)
{
    int in[2];
    popc_status st;

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    in[0] = gc->output_grads[0];
    if ((st = opu_grad_ints(gc, gc->input_info[0].dims,
                            gc->input_info[0].rank, &in[1])) != POPC_OK)
        return st;
    return opu_grad_node(gc, NULL, "Expand", in, 2, NULL, 0,
                         &gc->input_grads[0]);
}

/* ---- ArgMax ------------------------------------------------------------------- */

static popc_status argmax_infer(popc_infer_ctx *ic)
{
    const popc_view *x = &ic->inputs[0];
    popc_view *o = &ic->outputs[0];
    int axis, keep = (int)popc_attr_int(ic->attrs, "keepdims", 1);
    popc_status st;

    if (!opu_is_float(x->dtype) && x->dtype != POPC_DTYPE_I32 &&
        x->dtype != POPC_DTYPE_I64)
        return opu_error(POPC_EINVAL, "ArgMax", ic->node_name,
                         "input must be float or int32/int64, got %s",
                         popc_dtype_name(x->dtype));
    if ((st = opu_axis("ArgMax", ic->node_name,
                       popc_attr_int(ic->attrs, "axis", 0), x->rank, "axis",
                       &axis)) != POPC_OK)
        return st;
    if (x->dims[axis] == 0)
        return opu_error(POPC_EINVAL, "ArgMax", ic->node_name,
                         "axis %d has size 0: there is no maximum", axis);
    o->dtype = POPC_DTYPE_I64;
    o->rank = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != axis)
            o->dims[o->rank++] = x->dims[d];
        else if (keep)
            o->dims[o->rank++] = 1;
    return POPC_OK;
}

static inline double argmax_load(const popc_view *x, int64_t i)
{
    switch (x->dtype) {
    case POPC_DTYPE_F16: return opu_h2f(((const uint16_t *)x->data)[i]);
    case POPC_DTYPE_I32: return ((const int32_t *)x->data)[i];
    case POPC_DTYPE_I64: return (double)((const int64_t *)x->data)[i];
    default: return ((const float *)x->data)[i];
    }
}

/* NaN counts as the maximum (torch); ties go to the first index unless
** select_last_index. */
static popc_status argmax_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0];
    int64_t *out = kc->outputs[0].data;
    int last = (int)popc_attr_int(kc->attrs, "select_last_index", 0);
    int axis;
    int64_t dim, inner, s, e;
    popc_status st;

    if ((st = opu_axis("ArgMax", kc->node_name,
                       popc_attr_int(kc->attrs, "axis", 0), x->rank, "axis",
                       &axis)) != POPC_OK)
        return st;
    dim = x->dims[axis];
    inner = 1;
    for (int d = axis + 1; d < x->rank; d++)
        inner *= x->dims[d];
    if (dim == 0)
        return opu_error(POPC_EINVAL, "ArgMax", kc->node_name,
                         "axis %d has size 0", axis);
    opu_range(popc_view_numel(&kc->outputs[0]), kc->part, kc->n_parts, &s,
              &e);
    for (int64_t o = s; o < e; o++) {
        int64_t base = (o / inner) * dim * inner + o % inner, best_i = 0;
        double best = argmax_load(x, base);

        for (int64_t d = 1; d < dim && best == best; d++) {
            double v = argmax_load(x, base + d * inner);

            if (v > best || v != v || (last && v == best)) {
                best = v;
                best_i = d;
            }
        }
        out[o] = best_i;
    }
    return POPC_OK;
}

/* ---- costs ------------------------------------------------------------------ */

static popc_status reduce_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    c->flops = (double)popc_view_numel(&ic->inputs[0]);
    c->bytes = (double)popc_view_nbytes(&ic->inputs[0]) +
               (double)popc_view_nbytes(&ic->outputs[0]);
    c->temp_bytes = 0;
    return POPC_OK;
}

/* ---- table ------------------------------------------------------------------ */

#define DEF(NAME, VER, MIN_IN, MAX_IN, P, GRAD, DOC)                        \
    OPU_DEF("ai.onnx", NAME, VER, MIN_IN, MAX_IN, 1, 1, POPC_OP_SPLIT, P,    \
            GRAD, reduce_cost, DOC)

const popc_op_def top_reduce_ops[] = {
    OPU_ROLE_DEF(POPC_ROLE_REDUCE_SUM, "ai.onnx", "ReduceSum", 13, 1, 2, 1,
                 1, POPC_OP_SPLIT, reduce_sum, reduce_sum_grad, reduce_cost,
                 "sum over axes (input 1), keepdims, noop_with_empty_axes"),
    DEF("ReduceMean", 13, 1, 2, reduce_mean, reduce_mean_grad,
        "mean over axes (attribute), keepdims"),
    DEF("ReduceMax", 13, 1, 2, reduce_max, reduce_max_grad,
        "max over axes (attribute), keepdims"),
    DEF("ArgMax", 13, 1, 1, argmax, NULL,
        "index of the maximum along axis (int64)"),
    OPU_DEF("popc", "SumToShape", 1, 1, 1, 1, 1, POPC_OP_SPLIT, sum_to_shape,
            sum_to_shape_grad, reduce_cost,
            "sum a broadcast result back to attribute shape"),
    OPU_DEF("popc", "ReduceMaxGrad", 1, 3, 4, 1, 1, POPC_OP_SPLIT,
            reduce_max_grad, NULL, reduce_cost,
            "(dY, X, Y, axes?) -> dX of ReduceMax or of the reduction "
            "named by 'of'"),
};

const int top_reduce_count = sizeof top_reduce_ops / sizeof top_reduce_ops[0];
