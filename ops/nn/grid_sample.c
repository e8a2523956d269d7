/* grid_sample.c - GridSample-16 and MaxUnpool-11 on float32.
**
** GridSample follows torch.nn.functional.grid_sample (which ONNX's
** expected values come from): grid coordinates in [-1, 1] are scaled to
** pixels (align_corners chooses corner or edge centres), bilinear and
** nearest (half to even) sample after the padding mode moved the
** coordinate (border clamps it, reflection mirrors it), bicubic
** (A = -0.75) samples 4 x 4 taps, each moved by the padding mode; zeros
** padding reads 0 outside the image.
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "ops/nn/nn_priv.h"
#include "ops/nn/util.h"

enum { G_BILINEAR, G_NEAREST, G_BICUBIC };
enum { P_ZEROS, P_BORDER, P_REFLECTION };

static int pick(const popc_attrs *a, const char *name,
                const char *const *v, int n)
{
    const popc_attr *x = popc_attrs_find(a, name);

    if (!x || !x->s)
        return 0;
    for (int i = 0; i < n; i++)
        if (!strcmp(x->s, v[i]))
            return i;
    return -1;
}

static popc_status gs_infer(popc_infer_ctx *ic)
{
    static const char *const modes[] = {"bilinear", "nearest", "bicubic"};
    static const char *const pads[] = {"zeros", "border", "reflection"};
    const popc_view *x = &ic->inputs[0], *g = &ic->inputs[1];
    int64_t d[4];
    popc_status st;

    if ((st = opsu_want_f32(ic, "GridSample", 0, "input X")) != POPC_OK ||
        (st = opsu_want_f32(ic, "GridSample", 1, "grid")) != POPC_OK)
        return st;
    if (x->rank != 4 || g->rank != 4 || g->dims[0] != x->dims[0] ||
        g->dims[3] != 2)
        return opsu_host->set_error(POPC_EINVAL, "GridSample '%s': X must be "
                                    "[N, C, H, W] and grid [N, H_out, "
                                    "W_out, 2]", ic->node_name);
    if (pick(ic->attrs, "mode", modes, 3) < 0 ||
        pick(ic->attrs, "padding_mode", pads, 3) < 0)
        return opsu_host->set_error(POPC_EINVAL, "GridSample '%s': unknown "
                                    "mode or padding_mode", ic->node_name);
    d[0] = x->dims[0];
    d[1] = x->dims[1];
    d[2] = g->dims[1];
    d[3] = g->dims[2];
    opsu_set(&ic->outputs[0], POPC_DTYPE_F32, d, 4);
    return POPC_OK;
}

static double unnormalize(double c, int64_t size, int align)
{
    return align ? (c + 1) / 2 * (double)(size - 1)
                 : ((c + 1) * (double)size - 1) / 2;
}

static double reflect(double c, double lo2, double hi2)
{
    double min, span, extra;
    int64_t flips;

    if (lo2 == hi2)
        return 0;
    min = lo2 / 2;
    span = (hi2 - lo2) / 2;
    c = fabs(c - min);
    extra = fmod(c, span);
    flips = (int64_t)floor(c / span);
    return flips % 2 == 0 ? extra + min : span - extra + min;
}

static double clip_coord(double c, int64_t size)
{
    return fmin((double)(size - 1), fmax(c, 0.0));
}

/* The padding mode applied to a coordinate (torch's compute_source_index
** after unnormalising). */
static double source(double c, int64_t size, int pad, int align)
{
    if (pad == P_BORDER)
        return clip_coord(c, size);
    if (pad == P_REFLECTION) {
        c = align ? reflect(c, 0, 2.0 * (double)(size - 1))
                  : reflect(c, -1, 2.0 * (double)size - 1);
        return clip_coord(c, size);
    }
    return c;
}

static double at(const float *img, int64_t H, int64_t W, int64_t y,
                 int64_t x)
{
    return y >= 0 && y < H && x >= 0 && x < W ? img[y * W + x] : 0.0;
}

/* A bicubic tap: its index moved by the padding mode. */
static double tap(const float *img, int64_t H, int64_t W, int64_t y,
                  int64_t x, int pad, int align)
{
    if (pad != P_ZEROS) {
        x = (int64_t)source((double)x, W, pad, align);
        y = (int64_t)source((double)y, H, pad, align);
    }
    return at(img, H, W, y, x);
}

static void cubic_w(double t, double *w)
{
    const double A = -0.75;
    double x1 = t + 1, x2 = 1 - t, x3 = 2 - t;

    w[0] = ((A * x1 - 5 * A) * x1 + 8 * A) * x1 - 4 * A;
    w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
    w[2] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
    w[3] = ((A * x3 - 5 * A) * x3 + 8 * A) * x3 - 4 * A;
}

static popc_status gs_forward(const popc_kernel_ctx *kc)
{
    static const char *const modes[] = {"bilinear", "nearest", "bicubic"};
    static const char *const pads[] = {"zeros", "border", "reflection"};
    const popc_view *x = &kc->inputs[0], *g = &kc->inputs[1];
    const float *xd = x->data, *gd = g->data;
    float *y = kc->outputs[0].data;
    int mode = pick(kc->attrs, "mode", modes, 3);
    int pad = pick(kc->attrs, "padding_mode", pads, 3);
    int align = (int)popc_attr_int(kc->attrs, "align_corners", 0);
    int64_t C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t Ho = g->dims[1], Wo = g->dims[2], s, e;

    opsu_range(popc_view_numel(&kc->outputs[0]), kc->part, kc->n_parts, &s,
               &e);
    for (int64_t i = s; i < e; i++) {
        int64_t wo = i % Wo, ho = (i / Wo) % Ho, c = (i / Wo / Ho) % C;
        int64_t n = i / Wo / Ho / C;
        const float *img = xd + (n * C + c) * H * W;
        const float *gp = gd + ((n * Ho + ho) * Wo + wo) * 2;
        double gx = unnormalize(gp[0], W, align);
        double gy = unnormalize(gp[1], H, align);
        double v = 0;

        if (mode == G_BICUBIC) {
            double fx = floor(gx), fy = floor(gy), wx[4], wy[4];

            cubic_w(gx - fx, wx);
            cubic_w(gy - fy, wy);
            for (int a = 0; a < 4; a++)
                for (int b = 0; b < 4; b++)
                    v += wy[a] * wx[b] *
                         tap(img, H, W, (int64_t)fy - 1 + a,
                             (int64_t)fx - 1 + b, pad, align);
        } else {
            gx = source(gx, W, pad, align);
            gy = source(gy, H, pad, align);
            if (mode == G_NEAREST) {
                v = at(img, H, W, (int64_t)nearbyint(gy),
                       (int64_t)nearbyint(gx));
            } else {
                double fx = floor(gx), fy = floor(gy), tx = gx - fx;
                double ty = gy - fy;
                int64_t x0 = (int64_t)fx, y0 = (int64_t)fy;

                v = (1 - ty) * ((1 - tx) * at(img, H, W, y0, x0) +
                                tx * at(img, H, W, y0, x0 + 1)) +
                    ty * ((1 - tx) * at(img, H, W, y0 + 1, x0) +
                          tx * at(img, H, W, y0 + 1, x0 + 1));
            }
        }
        y[i] = (float)v;
    }
    return POPC_OK;
}

/* ---- MaxUnpool ---------------------------------------------------------------- */

static popc_status unpool_shape(const char *node, const popc_view *in,
                                int n_in, const popc_attrs *a, int64_t *d,
                                int64_t *natural)
{
    const popc_view *x = &in[0];
    int sp = x->rank - 2;
    int64_t k[4], st[4] = {1, 1, 1, 1}, pads[8] = {0};

    if (sp < 1 || sp > 3 || popc_attr_ints(a, "kernel_shape", k, sp) != sp)
        return opsu_host->set_error(POPC_EINVAL, "MaxUnpool '%s': X must "
                                    "have 1 to 3 spatial dimensions and "
                                    "kernel_shape one value each", node);
    popc_attr_ints(a, "strides", st, sp);
    popc_attr_ints(a, "pads", pads, 2 * sp);
    d[0] = natural[0] = x->dims[0];
    d[1] = natural[1] = x->dims[1];
    for (int i = 0; i < sp; i++)
        natural[2 + i] = (x->dims[2 + i] - 1) * st[i] - pads[i] -
                         pads[sp + i] + k[i];
    if (n_in > 2 && in[2].dtype != POPC_DTYPE_UNDEFINED) {
        if (!in[2].data || popc_view_numel(&in[2]) != x->rank)
            return opsu_host->set_error(POPC_EINVAL, "MaxUnpool '%s': "
                                        "output_shape must be known at "
                                        "compile time", node);
        for (int i = 0; i < x->rank; i++)
            d[i] = ((const int64_t *)in[2].data)[i];
        return POPC_OK;
    }
    memcpy(d + 2, natural + 2, sizeof(int64_t) * (size_t)sp);
    return POPC_OK;
}

static popc_status unpool_infer(popc_infer_ctx *ic)
{
    int64_t d[POPC_MAX_RANK], nat[POPC_MAX_RANK];
    popc_status st;

    if ((st = opsu_want_f32(ic, "MaxUnpool", 0, "input X")) != POPC_OK ||
        (st = unpool_shape(ic->node_name, ic->inputs, ic->n_inputs,
                           ic->attrs, d, nat)) != POPC_OK)
        return st;
    opsu_set(&ic->outputs[0], POPC_DTYPE_F32, d, ic->inputs[0].rank);
    return POPC_OK;
}

/* Indices are flat over the natural unpooled shape, as MaxPool's Indices
** are over its input; a larger output_shape keeps each element's
** coordinates (the extra space is at the end of each dimension). */
static popc_status unpool_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *ind = &kc->inputs[1];
    const popc_view *o = &kc->outputs[0];
    const float *xd = x->data;
    float *y = o->data;
    int64_t total = popc_view_numel(o), d[POPC_MAX_RANK], nat[POPC_MAX_RANK];
    int64_t nat_total = 1;
    popc_status st;

    if ((st = unpool_shape(kc->node_name, kc->inputs, kc->n_inputs,
                           kc->attrs, d, nat)) != POPC_OK)
        return st;
    for (int k = 0; k < o->rank; k++)
        nat_total *= nat[k];
    memset(y, 0, (size_t)total * sizeof *y);
    for (int64_t i = 0; i < popc_view_numel(x); i++) {
        int64_t src = ind->dtype == POPC_DTYPE_I64
                          ? ((const int64_t *)ind->data)[i]
                          : ((const int32_t *)ind->data)[i];
        int64_t at_ = 0, rem = src, stride = 1;

        if (src < 0 || src >= nat_total)
            return opsu_host->set_error(POPC_EINVAL, "MaxUnpool '%s': index "
                                        "%lld is outside the output",
                                        kc->node_name, (long long)src);
        for (int k = o->rank - 1; k >= 0; k--) {
            at_ += (rem % nat[k]) * stride;
            rem /= nat[k];
            stride *= o->dims[k];
        }
        if (at_ < 0 || at_ >= total)
            return opsu_host->set_error(POPC_EINVAL, "MaxUnpool '%s': index "
                                        "%lld is outside the output",
                                        kc->node_name, (long long)at_);
        y[at_] = xd[i];
    }
    return POPC_OK;
}

static const popc_op_def gs_ops[] = {
    {.size = sizeof(popc_op_def), .domain = "ai.onnx", .name = "GridSample",
     .since_version = 16, .min_inputs = 2, .max_inputs = 2, .min_outputs = 1,
     .max_outputs = 1, .flags = POPC_OP_SPLIT, .infer = gs_infer,
     .forward = gs_forward,
     .doc = "sample X at grid points (bilinear, nearest, bicubic)"},
    {.size = sizeof(popc_op_def), .domain = "ai.onnx", .name = "MaxUnpool",
     .since_version = 11, .min_inputs = 2, .max_inputs = 3, .min_outputs = 1,
     .max_outputs = 1, .flags = 0, .infer = unpool_infer,
     .forward = unpool_forward,
     .doc = "scatter pooled maxima back to their positions"},
};

popc_status nn_register_grid_sample(const popc_host *h, popc_registrar *r)
{
    popc_status st;

    for (size_t i = 0; i < sizeof gs_ops / sizeof gs_ops[0]; i++)
        if ((st = h->register_op(r, &gs_ops[i])) != POPC_OK)
            return st;
    return POPC_OK;
}
