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
#include "ops/util/oputil.h"

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

    if ((st = opu_want_f32(ic, "GridSample", 0, "input X")) != POPC_OK ||
        (st = opu_want_f32(ic, "GridSample", 1, "grid")) != POPC_OK)
        return st;
    if (x->rank != 4 || g->rank != 4 || g->dims[0] != x->dims[0] ||
        g->dims[3] != 2)
        return opu_error(POPC_EINVAL, "GridSample", ic->node_name,
                         "X must be [N, C, H, W] and grid [N, H_out, W_out, "
                         "2]");
    if (pick(ic->attrs, "mode", modes, 3) < 0 ||
        pick(ic->attrs, "padding_mode", pads, 3) < 0)
        return opu_error(POPC_EINVAL, "GridSample", ic->node_name,
                         "unknown mode or padding_mode");
    d[0] = x->dims[0];
    d[1] = x->dims[1];
    d[2] = g->dims[1];
    d[3] = g->dims[2];
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d, 4);
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

    opu_range(popc_view_numel(&kc->outputs[0]), kc->part, kc->n_parts, &s,
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

/* ---- GridSampleGrad(dY, X, grid) -> dX, dGrid ------------------------------
** The adjoint of the sampling: each output's gradient goes to the taps it
** read, with the same weights (and through the same padding moves); the
** grid's gradient is the derivative of the interpolation weights (linear
** or cubic) times that of the coordinate mapping (unnormalising, border
** clamping, reflection), torch's grid_sampler_2d_backward. Nearest gives
** the grid no gradient. One part: outputs add into shared positions. */

/* The padding move of source() and its derivative (torch's: 0 where the
** clamp holds the coordinate at an edge; reflection flips the sign). */
static double source_d(double c, int64_t size, int pad, int align, double *d)
{
    double r = source(c, size, pad, align), lim = (double)(size - 1);

    *d = 1;
    if (pad == P_ZEROS)
        return r;
    if (pad == P_REFLECTION) {
        double lo2 = align ? 0 : -1;
        double hi2 = align ? 2.0 * lim : 2.0 * (double)size - 1;
        double min = lo2 / 2, span = (hi2 - lo2) / 2, a = c - min;

        if (span <= 0) {
            *d = 0;
            return r;
        }
        if (a < 0) {
            a = -a;
            *d = -1;
        }
        if ((int64_t)floor(a / span) % 2)
            *d = -*d;
        /* the reflected coordinate before the final clamp */
        c = ((int64_t)floor(a / span) % 2 ? span - fmod(a, span)
                                            : fmod(a, span)) +
            min;
    }
    if (c <= 0 || c >= lim)
        *d = 0;
    return r;
}

static void add_at(float *img, int64_t H, int64_t W, int64_t y, int64_t x,
                   double v)
{
    if (y >= 0 && y < H && x >= 0 && x < W)
        img[y * W + x] += (float)v;
}

static void cubic_dw(double t, double *w)
{
    const double A = -0.75;
    double x1 = t + 1, x2 = 1 - t, x3 = 2 - t;

    w[0] = (3 * A * x1 - 10 * A) * x1 + 8 * A;
    w[1] = (3 * (A + 2) * t - 2 * (A + 3)) * t;
    w[2] = -((3 * (A + 2) * x2 - 2 * (A + 3)) * x2);
    w[3] = -((3 * A * x3 - 10 * A) * x3 + 8 * A);
}

static void tap_pos(int64_t H, int64_t W, int64_t *y, int64_t *x, int pad,
                    int align)
{
    if (pad != P_ZEROS) {
        *x = (int64_t)source((double)*x, W, pad, align);
        *y = (int64_t)source((double)*y, H, pad, align);
    }
}

static popc_status gs_grad_infer(popc_infer_ctx *ic)
{
    popc_status st;

    for (int i = 0; i < 3; i++)
        if ((st = opu_want_f32(ic, "GridSampleGrad", i, "every input")) !=
            POPC_OK)
            return st;
    if (ic->inputs[1].rank != 4 || ic->inputs[2].rank != 4 ||
        popc_view_numel(&ic->inputs[0]) !=
            ic->inputs[1].dims[0] * ic->inputs[1].dims[1] *
                ic->inputs[2].dims[1] * ic->inputs[2].dims[2])
        return opu_error(POPC_EINVAL, "GridSampleGrad", ic->node_name,
                         "dY must be [N, C, Ho, Wo] for X [N, C, H, W] and "
                         "grid [N, Ho, Wo, 2]");
    opu_set_like(&ic->outputs[0], &ic->inputs[1]);
    opu_set_like(&ic->outputs[1], &ic->inputs[2]);
    return POPC_OK;
}

static popc_status gs_grad_forward(const popc_kernel_ctx *kc)
{
    static const char *const modes[] = {"bilinear", "nearest", "bicubic"};
    static const char *const pads[] = {"zeros", "border", "reflection"};
    const popc_view *x = &kc->inputs[1], *g = &kc->inputs[2];
    const float *dy = kc->inputs[0].data, *xd = x->data, *gd = g->data;
    float *dx = kc->outputs[0].data, *dg = kc->outputs[1].data;
    int mode = pick(kc->attrs, "mode", modes, 3);
    int pad = pick(kc->attrs, "padding_mode", pads, 3);
    int align = (int)popc_attr_int(kc->attrs, "align_corners", 0);
    int64_t C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t Ho = g->dims[1], Wo = g->dims[2];
    int64_t total = popc_view_numel(&kc->inputs[0]);
    double sx = align ? (double)(W - 1) / 2 : (double)W / 2;
    double sy = align ? (double)(H - 1) / 2 : (double)H / 2;

    memset(dx, 0, popc_view_nbytes(x));
    memset(dg, 0, popc_view_nbytes(g));
    for (int64_t i = 0; i < total; i++) {
        int64_t wo = i % Wo, ho = (i / Wo) % Ho, c = (i / Wo / Ho) % C;
        int64_t n = i / Wo / Ho / C;
        const float *img = xd + (n * C + c) * H * W;
        float *dimg = dx + (n * C + c) * H * W;
        const float *gp = gd + ((n * Ho + ho) * Wo + wo) * 2;
        float *dgp = dg + ((n * Ho + ho) * Wo + wo) * 2;
        double gx = unnormalize(gp[0], W, align);
        double gy = unnormalize(gp[1], H, align), d = dy[i];
        double ddx = 0, ddy = 0, mx = 1, my = 1;

        if (mode == G_BICUBIC) {
            double fx = floor(gx), fy = floor(gy), wx[4], wy[4], vx[4], vy[4];

            cubic_w(gx - fx, wx);
            cubic_w(gy - fy, wy);
            cubic_dw(gx - fx, vx);
            cubic_dw(gy - fy, vy);
            for (int a = 0; a < 4; a++)
                for (int b = 0; b < 4; b++) {
                    int64_t ty = (int64_t)fy - 1 + a, tx = (int64_t)fx - 1 + b;
                    double v = tap(img, H, W, ty, tx, pad, align);

                    ddx += wy[a] * vx[b] * v;
                    ddy += vy[a] * wx[b] * v;
                    tap_pos(H, W, &ty, &tx, pad, align);
                    add_at(dimg, H, W, ty, tx, d * wy[a] * wx[b]);
                }
        } else {
            gx = source_d(gx, W, pad, align, &mx);
            gy = source_d(gy, H, pad, align, &my);
            if (mode == G_NEAREST) {
                add_at(dimg, H, W, (int64_t)nearbyint(gy),
                       (int64_t)nearbyint(gx), d);
                mx = my = 0;
            } else {
                double fx = floor(gx), fy = floor(gy), tx = gx - fx;
                double ty = gy - fy;
                int64_t x0 = (int64_t)fx, y0 = (int64_t)fy;
                double v00 = at(img, H, W, y0, x0);
                double v01 = at(img, H, W, y0, x0 + 1);
                double v10 = at(img, H, W, y0 + 1, x0);
                double v11 = at(img, H, W, y0 + 1, x0 + 1);

                add_at(dimg, H, W, y0, x0, d * (1 - ty) * (1 - tx));
                add_at(dimg, H, W, y0, x0 + 1, d * (1 - ty) * tx);
                add_at(dimg, H, W, y0 + 1, x0, d * ty * (1 - tx));
                add_at(dimg, H, W, y0 + 1, x0 + 1, d * ty * tx);
                ddx = (1 - ty) * (v01 - v00) + ty * (v11 - v10);
                ddy = (1 - tx) * (v10 - v00) + tx * (v11 - v01);
            }
        }
        dgp[0] += (float)(d * ddx * mx * sx);
        dgp[1] += (float)(d * ddy * my * sy);
    }
    return POPC_OK;
}

static popc_status gs_grad(popc_grad_ctx *gc)
{
    int in[3] = {gc->output_grads[0], gc->inputs[0], gc->inputs[1]}, out[2];
    popc_status st;

    if (in[0] < 0)
        return POPC_OK;
    if ((st = gc->host->grad_add_node(gc, "popc", "GridSampleGrad", in, 3,
                                      out, 2, gc->attrs->items,
                                      gc->attrs->n)) != POPC_OK)
        return st;
    gc->input_grads[0] = out[0];
    gc->input_grads[1] = out[1];
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
        return opu_error(POPC_EINVAL, "MaxUnpool", node, "X must have 1 to "
                         "3 spatial dimensions and kernel_shape one value "
                         "each");
    popc_attr_ints(a, "strides", st, sp);
    popc_attr_ints(a, "pads", pads, 2 * sp);
    d[0] = natural[0] = x->dims[0];
    d[1] = natural[1] = x->dims[1];
    for (int i = 0; i < sp; i++)
        natural[2 + i] = (x->dims[2 + i] - 1) * st[i] - pads[i] -
                         pads[sp + i] + k[i];
    if (n_in > 2 && in[2].dtype != POPC_DTYPE_UNDEFINED) {
        if (!in[2].data || popc_view_numel(&in[2]) != x->rank)
            return opu_error(POPC_EINVAL, "MaxUnpool", node, "output_shape "
                             "must be known at compile time");
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

    if ((st = opu_want_f32(ic, "MaxUnpool", 0, "input X")) != POPC_OK ||
        (st = unpool_shape(ic->node_name, ic->inputs, ic->n_inputs,
                           ic->attrs, d, nat)) != POPC_OK)
        return st;
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d, ic->inputs[0].rank);
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
            return opu_error(POPC_EINVAL, "MaxUnpool", kc->node_name,
                             "index %lld is outside the output",
                             (long long)src);
        for (int k = o->rank - 1; k >= 0; k--) {
            at_ += (rem % nat[k]) * stride;
            rem /= nat[k];
            stride *= o->dims[k];
        }
        if (at_ < 0 || at_ >= total)
            return opu_error(POPC_EINVAL, "MaxUnpool", kc->node_name,
                             "index %lld is outside the output",
                             (long long)at_);
        y[at_] = xd[i];
    }
    return POPC_OK;
}

/* MaxUnpoolGrad(dY, X, I, output_shape?) -> dX: each pooled value reads the
** gradient at the place it was written. */
static popc_status unpool_grad_infer(popc_infer_ctx *ic)
{
    int64_t d[POPC_MAX_RANK], nat[POPC_MAX_RANK];
    popc_status st;

    if ((st = opu_want_f32(ic, "MaxUnpoolGrad", 0, "dY")) != POPC_OK ||
        (st = unpool_shape(ic->node_name, ic->inputs + 1, ic->n_inputs - 1,
                           ic->attrs, d, nat)) != POPC_OK)
        return st;
    opu_set_like(&ic->outputs[0], &ic->inputs[1]);
    return POPC_OK;
}

static popc_status unpool_grad_forward(const popc_kernel_ctx *kc)
{
    const popc_view *dy = &kc->inputs[0], *x = &kc->inputs[1];
    const popc_view *ind = &kc->inputs[2];
    int64_t d[POPC_MAX_RANK], nat[POPC_MAX_RANK], total = popc_view_numel(dy);
    float *dx = kc->outputs[0].data;
    popc_status st;

    if ((st = unpool_shape(kc->node_name, kc->inputs + 1, kc->n_inputs - 1,
                           kc->attrs, d, nat)) != POPC_OK)
        return st;
    for (int64_t i = 0; i < popc_view_numel(x); i++) {
        int64_t src = ind->dtype == POPC_DTYPE_I64
                          ? ((const int64_t *)ind->data)[i]
                          : ((const int32_t *)ind->data)[i];
        int64_t at_ = 0, rem = src, stride = 1;

        for (int k = x->rank - 1; k >= 0; k--) {
            at_ += (rem % nat[k]) * stride;
            rem /= nat[k];
            stride *= d[k];
        }
        dx[i] = at_ >= 0 && at_ < total ? ((const float *)dy->data)[at_] : 0;
    }
    return POPC_OK;
}

static popc_status unpool_grad(popc_grad_ctx *gc)
{
    int in[4] = {gc->output_grads[0], gc->inputs[0], gc->inputs[1],
                 gc->n_inputs > 2 ? gc->inputs[2] : -1};

    if (in[0] < 0)
        return POPC_OK;
    return opu_grad_node(gc, "popc", "MaxUnpoolGrad", in, 4, gc->attrs->items,
                      gc->attrs->n, &gc->input_grads[0]);
}

static const popc_op_def gs_ops[] = {
    {.size = sizeof(popc_op_def), .domain = "ai.onnx", .name = "GridSample",
     .since_version = 16, .min_inputs = 2, .max_inputs = 2, .min_outputs = 1,
     .max_outputs = 1, .flags = POPC_OP_SPLIT, .infer = gs_infer,
     .forward = gs_forward, .grad = gs_grad,
     .doc = "sample X at grid points (bilinear, nearest, bicubic)"},
    {.size = sizeof(popc_op_def), .domain = "popc", .name = "GridSampleGrad",
     .since_version = 1, .min_inputs = 3, .max_inputs = 3, .min_outputs = 2,
     .max_outputs = 2, .flags = 0, .infer = gs_grad_infer,
     .forward = gs_grad_forward, .doc = "(dY, X, grid) -> dX, dGrid"},
    {.size = sizeof(popc_op_def), .domain = "ai.onnx", .name = "MaxUnpool",
     .since_version = 11, .min_inputs = 2, .max_inputs = 3, .min_outputs = 1,
     .max_outputs = 1, .flags = 0, .infer = unpool_infer,
     .forward = unpool_forward, .grad = unpool_grad,
     .doc = "scatter pooled maxima back to their positions"},
    {.size = sizeof(popc_op_def), .domain = "popc", .name = "MaxUnpoolGrad",
     .since_version = 1, .min_inputs = 3, .max_inputs = 4, .min_outputs = 1,
     .max_outputs = 1, .flags = 0, .infer = unpool_grad_infer,
     .forward = unpool_grad_forward, .doc = "(dY, X, I, shape?) -> dX"},
};

popc_status nn_register_grid_sample(const popc_host *h, popc_registrar *r)
{
    return opu_register_ops(h, r, gs_ops,
                            (int)(sizeof gs_ops / sizeof gs_ops[0]));
}
