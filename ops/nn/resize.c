/* resize.c - Resize (opset 11 and 13 forms; Resize-10 and Upsample are
** rewritten to it on import) on float32 of any rank.
**
** Each output coordinate maps back to the input by the
** coordinate_transformation_mode (half_pixel, pytorch_half_pixel,
** align_corners, asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize),
** where the scale is output/input as a real number (from scales, or from
** sizes). The value is then a weighted sum of neighbours, dimension by
** dimension, as ONNX's reference does it: nearest (nearest_mode picks one
** of the two neighbours), linear (two) or cubic (four, cubic_coeff_a,
** exclude_outside); neighbours beyond the edge repeat the edge value, and
** tf_crop_and_resize outside the region gives extrapolation_value.
** Scales and sizes must be known at compile time. The gradient
** (popc::ResizeGrad) is the adjoint: each output's gradient goes back to
** its taps with the same weights.
*/
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn/nn_priv.h"
#include "ops/util/oputil.h"

enum { M_NEAREST, M_LINEAR, M_CUBIC };
enum { C_HALF, C_PYTORCH_HALF, C_ALIGN, C_ASYM, C_TF_NN, C_TF_CROP };
enum { N_PREFER_FLOOR, N_PREFER_CEIL, N_FLOOR, N_CEIL };

typedef struct rs_params {
    int rank;
    int64_t in[POPC_MAX_RANK], out[POPC_MAX_RANK];
    double scale[POPC_MAX_RANK];
    double roi[2 * POPC_MAX_RANK];
    int mode, coord, nearest, exclude;
    double a, extrap;
} rs_params;

static int pick(const popc_attrs *a, const char *name,
                const char *const *names, int n, int def)
{
    const popc_attr *x = popc_attrs_find(a, name);

    if (!x || !x->s)
        return def;
    for (int i = 0; i < n; i++)
        if (!strcmp(x->s, names[i]))
            return i;
    return -1;
}

static popc_status params(const char *node, const popc_view *in, int n_in,
                          const popc_attrs *a, rs_params *p)
{
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const coords[] = {
        "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
        "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    static const char *const nearest[] = {"round_prefer_floor",
                                          "round_prefer_ceil", "floor",
                                          "ceil"};
    const popc_view *x = &in[0];
    const popc_view *roi = n_in > 1 && in[1].dtype ? &in[1] : NULL;
    const popc_view *sc = n_in > 2 && in[2].dtype && popc_view_numel(&in[2])
                              ? &in[2]
                              : NULL;
    const popc_view *sz = n_in > 3 && in[3].dtype ? &in[3] : NULL;

    memset(p, 0, sizeof *p);
    p->rank = x->rank;
    p->mode = pick(a, "mode", modes, 3, M_NEAREST);
    p->coord = pick(a, "coordinate_transformation_mode", coords, 6, C_HALF);
    p->nearest = pick(a, "nearest_mode", nearest, 4, N_PREFER_FLOOR);
    p->exclude = (int)popc_attr_int(a, "exclude_outside", 0);
    p->a = popc_attr_float(a, "cubic_coeff_a", -0.75);
    p->extrap = popc_attr_float(a, "extrapolation_value", 0.0);
    if (p->mode < 0 || p->coord < 0 || p->nearest < 0)
        return opu_error(POPC_EINVAL, "Resize", node, "unknown mode, "
                         "coordinate_transformation_mode or nearest_mode");
    if ((sc && !sc->data) || (sz && !sz->data) || (!sc && !sz))
        return opu_error(POPC_EINVAL, "Resize", node, "scales or sizes must "
                         "be given and known at compile time (shapes are "
                         "static)");
    if ((sc && popc_view_numel(sc) != x->rank) ||
        (sz && popc_view_numel(sz) != x->rank))
        return opu_error(POPC_EINVAL, "Resize", node, "scales or sizes need "
                         "one value per dimension (%d)", x->rank);
    for (int d = 0; d < x->rank; d++) {
        p->in[d] = x->dims[d];
        if (sz) {
            p->out[d] = sz->dtype == POPC_DTYPE_I64
                            ? ((const int64_t *)sz->data)[d]
                            : ((const int32_t *)sz->data)[d];
            p->scale[d] = p->in[d] ? (double)p->out[d] / (double)p->in[d]
                                   : 1.0;
        } else {
            p->scale[d] = ((const float *)sc->data)[d];
            p->out[d] = (int64_t)floor((double)p->in[d] * p->scale[d]);
        }
        if (p->out[d] < 0 || p->scale[d] <= 0)
            return opu_error(POPC_EINVAL, "Resize", node, "dimension %d gets "
                             "a non-positive scale", d);
        p->roi[d] = 0;
        p->roi[d + x->rank] = 1;
        if (roi && roi->data && popc_view_numel(roi) == 2 * x->rank) {
            p->roi[d] = ((const float *)roi->data)[d];
            p->roi[d + x->rank] = ((const float *)roi->data)[d + x->rank];
        }
    }
    return POPC_OK;
}

static popc_status resize_infer(popc_infer_ctx *ic)
{
    rs_params p;
    popc_status st;

    if ((st = opu_want_f32(ic, "Resize", 0, "input X")) != POPC_OK ||
        (st = params(ic->node_name, ic->inputs, ic->n_inputs, ic->attrs,
                     &p)) != POPC_OK)
        return st;
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, p.out, p.rank);
    return POPC_OK;
}

/* Taps of one output coordinate along one dimension: input indexes
** (clamped to the edge) and weights; returns the count, or -1 when the
** coordinate falls outside a tf_crop_and_resize region. */
static int taps(const rs_params *p, int d, int64_t x, int64_t *idx,
                double *w)
{
    double in = (double)p->in[d], sc = p->scale[d], out = sc * in, xo, r;
    double cw[4];
    int64_t base;
    int n = 0, lo;

    switch (p->coord) {
    case C_ALIGN: xo = out == 1 ? 0 : (double)x * (in - 1) / (out - 1); break;
    case C_ASYM: xo = (double)x / sc; break;
    case C_TF_NN: xo = ((double)x + 0.5) / sc; break;
    case C_PYTORCH_HALF:
        xo = out == 1 ? -0.5 : ((double)x + 0.5) / sc - 0.5;
        break;
    case C_TF_CROP: {
        double s0 = p->roi[d], s1 = p->roi[d + p->rank];

        xo = out == 1 ? (s1 - s0) * (in - 1) / 2
                      : (double)x * (s1 - s0) * (in - 1) / (out - 1);
        xo += s0 * (in - 1);
        if (xo < 0 || xo > in - 1)
            return -1;
        break;
    }
    default: xo = ((double)x + 0.5) / sc - 0.5; break;
    }
    /* the left neighbour; r in (0, 1] */
    base = (int64_t)floor(xo);
    r = xo - (double)base;
    if (r == 0) {
        base--;
        r = 1;
    }
    if (p->mode == M_CUBIC) {
        double A = p->a, s = 0;

        cw[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
        cw[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
        cw[2] = ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1;
        cw[3] = ((A * ((1 - r) + 1) - 5 * A) * ((1 - r) + 1) + 8 * A) *
                    ((1 - r) + 1) -
                4 * A;
        lo = -1;
        for (int k = 0; k < 4; k++) {
            int64_t i = base + lo + k;

            if (p->exclude && (i < 0 || i >= p->in[d]))
                cw[k] = 0;
            s += cw[k];
        }
        for (int k = 0; k < 4; k++) {
            int64_t i = base + lo + k;

            idx[n] = i < 0 ? 0 : i >= p->in[d] ? p->in[d] - 1 : i;
            w[n++] = p->exclude ? cw[k] / s : cw[k];
        }
        return n;
    }
    if (p->mode == M_LINEAR) {
        cw[0] = 1 - r;
        cw[1] = r;
    } else {
        int right = r == 1 || (p->nearest == N_PREFER_FLOOR && r > 0.5) ||
                    (p->nearest == N_PREFER_CEIL && r >= 0.5) ||
                    p->nearest == N_CEIL;

        cw[0] = !right;
        cw[1] = right;
    }
    for (int k = 0; k < 2; k++) {
        int64_t i = base + k;

        if (cw[k] == 0)
            continue;
        idx[n] = i < 0 ? 0 : i >= p->in[d] ? p->in[d] - 1 : i;
        w[n++] = cw[k];
    }
    return n;
}

/* Outputs [s, e) as weighted sums of x's taps (back = 0), or the
** adjoint (back = 1): each output's dY added into dX at its taps with the
** same weights; extrapolated outputs take no input and pass no gradient. */
static popc_status walk(const popc_kernel_ctx *kc, const rs_params *p,
                        const float *src, float *dst, int back, int64_t s,
                        int64_t e)
{
    int64_t *tidx[POPC_MAX_RANK] = {0}, xs[POPC_MAX_RANK];
    double *tw[POPC_MAX_RANK] = {0};
    int *tn[POPC_MAX_RANK] = {0};
    popc_status st;

    /* per dimension and output coordinate: up to 4 taps */
    for (int d = 0; d < p->rank; d++) {
        tidx[d] = kc->host->alloc(sizeof(int64_t) * 4 *
                                  (size_t)(p->out[d] + 1));
        tw[d] = kc->host->alloc(sizeof(double) * 4 * (size_t)(p->out[d] + 1));
        tn[d] = kc->host->alloc(sizeof(int) * (size_t)(p->out[d] + 1));
        if (!tidx[d] || !tw[d] || !tn[d]) {
            st = opu_error(POPC_ENOMEM, "Resize", kc->node_name, "out of "
                           "memory");
            goto done;
        }
        for (int64_t o = 0; o < p->out[d]; o++)
            tn[d][o] = taps(p, d, o, tidx[d] + 4 * o, tw[d] + 4 * o);
    }
    xs[p->rank - 1] = 1;
    for (int d = p->rank - 2; d >= 0; d--)
        xs[d] = xs[d + 1] * p->in[d + 1];
    for (int64_t i = s; i < e; i++) {
        int64_t c[POPC_MAX_RANK], rem = i;
        int k[POPC_MAX_RANK] = {0}, outside = 0;
        double acc = 0;

        for (int d = p->rank - 1; d >= 0; d--) {
            c[d] = rem % p->out[d];
            rem /= p->out[d];
            outside |= tn[d][c[d]] < 0;
        }
        if (outside) {
            if (!back)
                dst[i] = (float)p->extrap;
            continue;
        }
        /* every combination of one tap per dimension */
        for (;;) {
            double wgt = 1;
            int64_t off = 0;
            int d;

            for (d = 0; d < p->rank; d++) {
                wgt *= tw[d][4 * c[d] + k[d]];
                off += tidx[d][4 * c[d] + k[d]] * xs[d];
            }
            if (back)
                dst[off] += (float)(wgt * src[i]);
            else
                acc += wgt * src[off];
            for (d = p->rank - 1; d >= 0; d--) {
                if (++k[d] < tn[d][c[d]])
                    break;
                k[d] = 0;
            }
            if (d < 0)
                break;
        }
        if (!back)
            dst[i] = (float)acc;
    }
    st = POPC_OK;
done:
    for (int d = 0; d < p->rank; d++) {
        kc->host->free(tidx[d]);
        kc->host->free(tw[d]);
        kc->host->free(tn[d]);
    }
    return st;
}

static popc_status resize_forward(const popc_kernel_ctx *kc)
{
    rs_params p;
    int64_t s, e;
    popc_status st;

    if ((st = params(kc->node_name, kc->inputs, kc->n_inputs, kc->attrs,
                     &p)) != POPC_OK)
        return st;
    opu_range(popc_view_numel(&kc->outputs[0]), kc->part, kc->n_parts, &s,
               &e);
    return walk(kc, &p, kc->inputs[0].data, kc->outputs[0].data, 0, s, e);
}

/* ---- ResizeGrad(dY, X, roi?, scales?, sizes?) -> dX -------------------------- */

static popc_status resize_grad(popc_grad_ctx *gc)
{
    int in[5] = {gc->output_grads[0], -1, -1, -1, -1};

    if (in[0] < 0)
        return POPC_OK;
    for (int i = 0; i < gc->n_inputs && i < 4; i++)
        in[1 + i] = gc->inputs[i];
    return opu_grad_node(gc, "popc", "ResizeGrad", in, 1 + gc->n_inputs,
                      gc->attrs->items, gc->attrs->n, &gc->input_grads[0]);
}

static popc_status resize_grad_infer(popc_infer_ctx *ic)
{
    rs_params p;
    popc_status st;

    if ((st = opu_want_f32(ic, "ResizeGrad", 0, "dY")) != POPC_OK ||
        (st = params(ic->node_name, ic->inputs + 1, ic->n_inputs - 1,
                     ic->attrs, &p)) != POPC_OK)
        return st;
    for (int d = 0; d < p.rank; d++)
        if (ic->inputs[0].rank != p.rank || ic->inputs[0].dims[d] != p.out[d])
            return opu_error(POPC_EINVAL, "ResizeGrad", ic->node_name,
                             "dY must have the resized shape");
    opu_set_like(&ic->outputs[0], &ic->inputs[1]);
    return POPC_OK;
}

/* one part: outputs scatter into shared input positions */
static popc_status resize_grad_forward(const popc_kernel_ctx *kc)
{
    rs_params p;
    popc_status st;

    if ((st = params(kc->node_name, kc->inputs + 1, kc->n_inputs - 1,
                     kc->attrs, &p)) != POPC_OK)
        return st;
    memset(kc->outputs[0].data, 0, popc_view_nbytes(&kc->outputs[0]));
    return walk(kc, &p, kc->inputs[0].data, kc->outputs[0].data, 1, 0,
                popc_view_numel(&kc->inputs[0]));
}

static const popc_op_def resize_ops[] = {
    {
        .size = sizeof(popc_op_def),
        .domain = "ai.onnx",
        .name = "Resize",
        .since_version = 13,
        .min_inputs = 1,
        .max_inputs = 4,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = resize_infer,
        .forward = resize_forward,
        .grad = resize_grad,
        .doc = "nearest, linear or cubic resize with ONNX's coordinate "
               "modes",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "ResizeGrad",
        .since_version = 1,
        .min_inputs = 2,
        .max_inputs = 5,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = 0,
        .infer = resize_grad_infer,
        .forward = resize_grad_forward,
        .doc = "(dY, X, roi?, scales?, sizes?) -> dX of Resize",
    },
};

popc_status nn_register_resize(const popc_host *h, popc_registrar *r)
{
    return opu_register_ops(h, r, resize_ops,
                            (int)(sizeof resize_ops / sizeof resize_ops[0]));
}
