/* spatial_nd.c - convolution and pooling over any number of spatial
** dimensions (1 to 3), as direct loops accumulating in double: Conv and
** the pools on 3-D inputs ([N, C, D, H, W]; 1-D and 2-D keep their sgemm
** and tiled paths), and ConvTranspose on 1-D to 3-D. Window rules are
** ONNX's: kernel_shape, strides, dilations, pads (begins then ends),
** auto_pad (SAME_UPPER puts the odd padding at the end, SAME_LOWER at the
** beginning), ceil_mode (a last window starting in the end padding is
** dropped, as torch does); ConvTranspose adds output_padding and
** output_shape. Each part computes its own share of the output elements.
** float32 only; forward only for now (no gradient builders).
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "ops/nn/nn_priv.h"
#include "ops/util/oputil.h"
#include "ops/util/elem.h"

#define MAX_SP 3

typedef struct nd_win {
    int sp;                       /* spatial dims */
    int64_t in[MAX_SP], out[MAX_SP], k[MAX_SP];
    int64_t s[MAX_SP], d[MAX_SP], p0[MAX_SP], p1[MAX_SP];
} nd_win;

static popc_status ints_attr(const char *op, const char *node,
                             const popc_attrs *a, const char *name, int n,
                             int64_t def, int64_t *out)
{
    int64_t got = popc_attr_ints(a, name, out, n);

    if (got < 0) {
        for (int i = 0; i < n; i++)
            out[i] = def;
        return POPC_OK;
    }
    if (got != n)
        return opu_error(POPC_EINVAL, op, node, "attribute %s has %lld "
                         "values; the input has %d spatial dimensions", name,
                         (long long)got, n);
    return POPC_OK;
}

static int auto_pad_of(const popc_attrs *a)
{
    const popc_attr *x = popc_attrs_find(a, "auto_pad");

    if (!x || !x->s || !strcmp(x->s, "NOTSET"))
        return 0;
    if (!strcmp(x->s, "SAME_UPPER"))
        return 1;
    if (!strcmp(x->s, "SAME_LOWER"))
        return 2;
    return 3; /* VALID */
}

/* Forward windows (Conv, pools): out from in. kd: kernel dims or NULL. */
static popc_status win_forward(const char *op, const char *node,
                               const popc_attrs *a, const popc_view *x,
                               const int64_t *kd, int ceil_ok, nd_win *w)
{
    int64_t pads[2 * MAX_SP];
    int ap = auto_pad_of(a), ceil_mode;
    popc_status st;

    w->sp = x->rank - 2;
    if (w->sp < 1 || w->sp > MAX_SP)
        return opu_error(POPC_EUNSUPPORTED, op, node, "input must have 1 to "
                         "3 spatial dimensions");
    for (int i = 0; i < w->sp; i++)
        w->in[i] = x->dims[2 + i];
    if (kd)
        memcpy(w->k, kd, sizeof(int64_t) * (size_t)w->sp);
    if ((!kd && popc_attr_ints(a, "kernel_shape", w->k, w->sp) != w->sp) ||
        (st = ints_attr(op, node, a, "strides", w->sp, 1, w->s)) != POPC_OK ||
        (st = ints_attr(op, node, a, "dilations", w->sp, 1, w->d)) !=
            POPC_OK ||
        (st = ints_attr(op, node, a, "pads", 2 * w->sp, 0, pads)) != POPC_OK)
        return opu_error(POPC_EINVAL, op, node, "kernel_shape, strides, "
                         "dilations and pads must have one value per "
                         "spatial dimension (pads two)");
    ceil_mode = ceil_ok ? (int)popc_attr_int(a, "ceil_mode", 0) : 0;
    for (int i = 0; i < w->sp; i++) {
        int64_t span = w->d[i] * (w->k[i] - 1) + 1, num;

        if (w->s[i] < 1 || w->d[i] < 1 || w->k[i] < 1)
            return opu_error(POPC_EINVAL, op, node, "kernel, strides and "
                             "dilations must be >= 1");
        w->p0[i] = pads[i];
        w->p1[i] = pads[i + w->sp];
        if (ap == 1 || ap == 2) {
            int64_t o = (w->in[i] + w->s[i] - 1) / w->s[i];
            int64_t total = (o - 1) * w->s[i] + span - w->in[i];

            if (total < 0)
                total = 0;
            w->p0[i] = ap == 1 ? total / 2 : total - total / 2;
            w->p1[i] = total - w->p0[i];
        } else if (ap == 3) {
            w->p0[i] = w->p1[i] = 0;
        }
        num = w->in[i] + w->p0[i] + w->p1[i] - span;
        if (num < 0)
            return opu_error(POPC_EINVAL, op, node, "the kernel is larger "
                             "than the padded input");
        if (ceil_mode) {
            w->out[i] = (num + w->s[i] - 1) / w->s[i] + 1;
            if ((w->out[i] - 1) * w->s[i] >= w->in[i] + w->p0[i])
                w->out[i]--;
        } else {
            w->out[i] = num / w->s[i] + 1;
        }
    }
    return POPC_OK;
}

static int64_t sp_size(const int64_t *dims, int sp)
{
    int64_t n = 1;

    for (int i = 0; i < sp; i++)
        n *= dims[i];
    return n;
}

/* Spatial multi-index of flat position f over dims. */
static void unflatten(int64_t f, const int64_t *dims, int sp, int64_t *idx)
{
    for (int i = sp - 1; i >= 0; i--) {
        idx[i] = f % dims[i];
        f /= dims[i];
    }
}

/* Window tap k at position pos (an output of a convolution, or an input of
** a transposed one): pos * s - p0 + k * d per spatial dim, as a flat
** offset over lim; -1 when it falls in the padding. */
static int64_t tap_offset(const nd_win *w, const int64_t *pos, int64_t k,
                          const int64_t *lim)
{
    int64_t ki[MAX_SP], off = 0;

    unflatten(k, w->k, w->sp, ki);
    for (int q = 0; q < w->sp; q++) {
        int64_t p = pos[q] * w->s[q] - w->p0[q] + ki[q] * w->d[q];

        if (p < 0 || p >= lim[q])
            return -1;
        off = off * lim[q] + p;
    }
    return off;
}

/* ---- Conv (3-D) ------------------------------------------------------------ */

static popc_status conv_win(const char *node, const popc_view *in,
                            const popc_attrs *a, nd_win *w, int64_t *group)
{
    popc_status st;

    *group = popc_attr_int(a, "group", 1);
    if (in[1].rank != in[0].rank)
        return opu_error(POPC_EINVAL, "Conv", node, "W must have X's rank");
    if ((st = win_forward("Conv", node, a, &in[0], in[1].dims + 2, 0, w)) !=
        POPC_OK)
        return st;
    if (*group < 1 || in[1].dims[1] * *group != in[0].dims[1] ||
        in[1].dims[0] % *group)
        return opu_error(POPC_EINVAL, "Conv", node, "channels do not match "
                         "W and group");
    return POPC_OK;
}

popc_status nn_nd_conv_infer(popc_infer_ctx *ic)
{
    nd_win w;
    int64_t g, d[2 + MAX_SP];
    popc_status st;

    if ((st = opu_want_f32(ic, "Conv", 0, "input X")) != POPC_OK ||
        (st = opu_want_f32(ic, "Conv", 1, "weight W")) != POPC_OK ||
        (st = conv_win(ic->node_name, ic->inputs, ic->attrs, &w, &g)) !=
            POPC_OK)
        return st;
    d[0] = ic->inputs[0].dims[0];
    d[1] = ic->inputs[1].dims[0];
    memcpy(d + 2, w.out, sizeof(int64_t) * (size_t)w.sp);
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d, 2 + w.sp);
    return POPC_OK;
}

popc_status nn_nd_conv_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *wt = &kc->inputs[1];
    const float *xd = x->data, *wd = wt->data, *bias = NULL;
    float *y = kc->outputs[0].data;
    nd_win w;
    int64_t g, M, C, Cg, Mg, osz, isz, ksz, s, e;
    popc_status st;

    if ((st = conv_win(kc->node_name, kc->inputs, kc->attrs, &w, &g)) !=
        POPC_OK)
        return st;
    if (kc->n_inputs > 2 && kc->inputs[2].data)
        bias = kc->inputs[2].data;
    M = wt->dims[0];
    C = x->dims[1];
    Cg = C / g;
    Mg = M / g;
    osz = sp_size(w.out, w.sp);
    isz = sp_size(w.in, w.sp);
    ksz = sp_size(w.k, w.sp);
    opu_range(popc_view_numel(&kc->outputs[0]), kc->part, kc->n_parts, &s,
               &e);
    for (int64_t i = s; i < e; i++) {
        int64_t o = i % osz, m = (i / osz) % M, n = i / osz / M;
        int64_t oi[MAX_SP];
        double acc = bias ? bias[m] : 0.0;
        int64_t c0 = (m / Mg) * Cg;

        unflatten(o, w.out, w.sp, oi);
        for (int64_t k = 0; k < ksz; k++) {
            int64_t off = tap_offset(&w, oi, k, w.in);

            if (off < 0)
                continue;
            for (int64_t c = 0; c < Cg; c++)
                acc += (double)xd[(n * C + c0 + c) * isz + off] *
                       wd[(m * Cg + c) * ksz + k];
        }
        y[i] = (float)acc;
    }
    return POPC_OK;
}

/* ---- pools (3-D) ------------------------------------------------------------- */

popc_status nn_nd_pool_infer(popc_infer_ctx *ic, const char *op)
{
    nd_win w;
    int64_t d[2 + MAX_SP];
    popc_status st;

    if ((st = opu_want_f32(ic, op, 0, "input X")) != POPC_OK ||
        (st = win_forward(op, ic->node_name, ic->attrs, &ic->inputs[0], NULL,
                          1, &w)) != POPC_OK)
        return st;
    d[0] = ic->inputs[0].dims[0];
    d[1] = ic->inputs[0].dims[1];
    memcpy(d + 2, w.out, sizeof(int64_t) * (size_t)w.sp);
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d, 2 + w.sp);
    if (ic->n_outputs > 1)
        opu_set(&ic->outputs[1], POPC_DTYPE_I64, d, 2 + w.sp);
    return POPC_OK;
}

popc_status nn_nd_pool_forward(const popc_kernel_ctx *kc, int is_max)
{
    const popc_view *x = &kc->inputs[0];
    const float *xd = x->data;
    float *y = kc->outputs[0].data;
    int64_t *ind = kc->n_outputs > 1 ? kc->outputs[1].data : NULL;
    int incl = (int)popc_attr_int(kc->attrs, "count_include_pad", 0);
    nd_win w;
    int64_t osz, isz, ksz, s, e;
    popc_status st;

    if ((st = win_forward(is_max ? "MaxPool" : "AveragePool", kc->node_name,
                          kc->attrs, x, NULL, 1, &w)) != POPC_OK)
        return st;
    osz = sp_size(w.out, w.sp);
    isz = sp_size(w.in, w.sp);
    ksz = sp_size(w.k, w.sp);
    opu_range(popc_view_numel(&kc->outputs[0]), kc->part, kc->n_parts, &s,
               &e);
    for (int64_t i = s; i < e; i++) {
        int64_t o = i % osz, nc = i / osz, oi[MAX_SP], ki[MAX_SP];
        double acc = is_max ? -INFINITY : 0.0;
        int64_t best = -1, count = 0;

        unflatten(o, w.out, w.sp, oi);
        for (int64_t k = 0; k < ksz; k++) {
            int64_t off = 0;
            int inside = 1, in_pad_region = 1;

            unflatten(k, w.k, w.sp, ki);
            for (int q = 0; q < w.sp; q++) {
                int64_t p = oi[q] * w.s[q] - w.p0[q] + ki[q] * w.d[q];

                if (p >= w.in[q] + w.p1[q])
                    in_pad_region = 0;
                if (p < 0 || p >= w.in[q])
                    inside = 0;
                off = off * w.in[q] + p;
            }
            if (!inside) {
                count += incl && in_pad_region;
                continue;
            }
            count++;
            if (is_max) {
                double v = xd[nc * isz + off];

                if (v > acc || best < 0) {
                    acc = v;
                    best = nc * isz + off;
                }
            } else {
                acc += xd[nc * isz + off];
            }
        }
        y[i] = (float)(is_max ? acc : count ? acc / (double)count : 0.0);
        if (ind)
            ind[i] = best;
    }
    return POPC_OK;
}

/* Work of a direct 3-D Conv or pool: each output reads its window (of all
** its group's channels for Conv). */
popc_status nn_nd_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    double outs = (double)popc_view_numel(&ic->outputs[0]);
    double window = 1;

    if (ic->n_inputs > 1 && ic->inputs[1].rank == ic->inputs[0].rank)
        for (int d = 1; d < ic->inputs[1].rank; d++)
            window *= (double)ic->inputs[1].dims[d];
    else
        for (int d = 2; d < ic->inputs[0].rank; d++)
            window *= (double)ic->inputs[0].dims[d] /
                      (double)(ic->outputs[0].dims[d] ? ic->outputs[0].dims[d]
                                                      : 1);
    c->flops = 2.0 * outs * window;
    c->bytes = 0;
    for (int i = 0; i < ic->n_inputs; i++)
        c->bytes += (double)popc_view_nbytes(&ic->inputs[i]);
    for (int j = 0; j < ic->n_outputs; j++)
        c->bytes += (double)popc_view_nbytes(&ic->outputs[j]);
    c->temp_bytes = 0;
    return POPC_OK;
}

/* ---- ConvTranspose ------------------------------------------------------------ */

static popc_status convt_win(const char *node, const popc_view *in,
                             const popc_attrs *a, nd_win *w, int64_t *group)
{
    const popc_view *x = &in[0], *wt = &in[1];
    int64_t pads[2 * MAX_SP], op[MAX_SP], oshape[MAX_SP];
    int ap = auto_pad_of(a), has_shape;
    popc_status st;

    *group = popc_attr_int(a, "group", 1);
    w->sp = x->rank - 2;
    if (w->sp < 1 || w->sp > MAX_SP || wt->rank != x->rank)
        return opu_error(POPC_EUNSUPPORTED, "ConvTranspose", node,
                         "X must have 1 to 3 spatial dimensions and W the "
                         "same rank");
    if (*group < 1 || wt->dims[0] != x->dims[1] || x->dims[1] % *group)
        return opu_error(POPC_EINVAL, "ConvTranspose", node, "W's dim 0 "
                         "must equal X's channels, divisible by group");
    for (int i = 0; i < w->sp; i++) {
        w->in[i] = x->dims[2 + i];
        w->k[i] = wt->dims[2 + i];
    }
    has_shape = popc_attr_ints(a, "output_shape", oshape, w->sp) == w->sp;
    if ((st = ints_attr("ConvTranspose", node, a, "strides", w->sp, 1,
                        w->s)) != POPC_OK ||
        (st = ints_attr("ConvTranspose", node, a, "dilations", w->sp, 1,
                        w->d)) != POPC_OK ||
        (st = ints_attr("ConvTranspose", node, a, "pads", 2 * w->sp, 0,
                        pads)) != POPC_OK ||
        (st = ints_attr("ConvTranspose", node, a, "output_padding", w->sp, 0,
                        op)) != POPC_OK)
        return st;
    for (int i = 0; i < w->sp; i++) {
        int64_t full = w->s[i] * (w->in[i] - 1) + op[i] +
                       (w->k[i] - 1) * w->d[i] + 1;

        w->p0[i] = pads[i];
        w->p1[i] = pads[i + w->sp];
        if (has_shape || ap == 1 || ap == 2) {
            int64_t want = has_shape ? oshape[i] : x->dims[2 + i] * w->s[i];
            int64_t total = full - want;
            /* floor division, as ONNX's reference: a negative total (an
            ** output_shape larger than the full result) pads at the end */
            int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);

            if (!has_shape && total < 0)
                total = half = 0;
            if (ap == 1) {
                w->p0[i] = half;
                w->p1[i] = total - half;
            } else {
                w->p0[i] = total - half;
                w->p1[i] = half;
            }
        }
        w->out[i] = full - w->p0[i] - w->p1[i];
        if (w->out[i] < 1)
            return opu_error(POPC_EINVAL, "ConvTranspose", node, "the "
                             "output would be empty");
    }
    return POPC_OK;
}

static popc_status convt_infer(popc_infer_ctx *ic)
{
    nd_win w;
    int64_t g, d[2 + MAX_SP];
    popc_status st;

    if ((st = opu_want_f32(ic, "ConvTranspose", 0, "input X")) != POPC_OK ||
        (st = opu_want_f32(ic, "ConvTranspose", 1, "weight W")) !=
            POPC_OK ||
        (st = convt_win(ic->node_name, ic->inputs, ic->attrs, &w, &g)) !=
            POPC_OK)
        return st;
    d[0] = ic->inputs[0].dims[0];
    d[1] = ic->inputs[1].dims[1] * g;
    memcpy(d + 2, w.out, sizeof(int64_t) * (size_t)w.sp);
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d, 2 + w.sp);
    return POPC_OK;
}

/* Gathers into each output element the input elements that scatter to it,
** so parts write disjoint outputs. */
static popc_status convt_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *wt = &kc->inputs[1];
    const float *xd = x->data, *wd = wt->data, *bias = NULL;
    float *y = kc->outputs[0].data;
    nd_win w;
    int64_t g, C, Cg, Mg, M, osz, isz, ksz, s, e;
    popc_status st;

    if ((st = convt_win(kc->node_name, kc->inputs, kc->attrs, &w, &g)) !=
        POPC_OK)
        return st;
    if (kc->n_inputs > 2 && kc->inputs[2].data)
        bias = kc->inputs[2].data;
    C = x->dims[1];
    Cg = C / g;
    Mg = wt->dims[1];
    M = Mg * g;
    osz = sp_size(w.out, w.sp);
    isz = sp_size(w.in, w.sp);
    ksz = sp_size(w.k, w.sp);
    opu_range(popc_view_numel(&kc->outputs[0]), kc->part, kc->n_parts, &s,
               &e);
    for (int64_t i = s; i < e; i++) {
        int64_t o = i % osz, m = (i / osz) % M, n = i / osz / M;
        int64_t oi[MAX_SP], ki[MAX_SP], grp = m / Mg, mm = m % Mg;
        double acc = bias ? bias[m] : 0.0;

        unflatten(o, w.out, w.sp, oi);
        for (int64_t k = 0; k < ksz; k++) {
            int64_t off = 0;
            int ok = 1;

            unflatten(k, w.k, w.sp, ki);
            for (int q = 0; q < w.sp && ok; q++) {
                int64_t t = oi[q] + w.p0[q] - ki[q] * w.d[q];

                ok = t >= 0 && t % w.s[q] == 0 && t / w.s[q] < w.in[q];
                off = off * w.in[q] + (ok ? t / w.s[q] : 0);
            }
            if (!ok)
                continue;
            for (int64_t c = 0; c < Cg; c++) {
                int64_t ci = grp * Cg + c;

                acc += (double)xd[(n * C + ci) * isz + off] *
                       wd[(ci * Mg + mm) * ksz + k];
            }
        }
        y[i] = (float)acc;
    }
    return POPC_OK;
}

/* ConvTranspose's gradient: popc::ConvTransposeGrad(dY, X, W) with the
** forward's attributes -> dX, dW, dB. Input element ii and kernel tap k
** reach output o = ii s - p0 + k d (the forward's scatter), so dX gathers
** W dY over (k, group channel) and dW sums X dY over (n, ii); dB sums dY.
** One part: every image adds into dW. */
static popc_status convt_grad(popc_grad_ctx *gc)
{
    int in[3] = {gc->output_grads[0], gc->inputs[0], gc->inputs[1]}, out[3];
    popc_status st;

    if (in[0] < 0)
        return POPC_OK;
    if ((st = gc->host->grad_add_node(gc, "popc", "ConvTransposeGrad", in, 3,
                                      out, 3, gc->attrs->items,
                                      gc->attrs->n)) != POPC_OK)
        return st;
    gc->input_grads[0] = out[0];
    gc->input_grads[1] = out[1];
    if (gc->n_inputs > 2 && gc->inputs[2] >= 0)
        gc->input_grads[2] = out[2];
    return POPC_OK;
}

static popc_status convt_grad_infer(popc_infer_ctx *ic)
{
    nd_win w;
    int64_t g;
    popc_status st;

    for (int i = 0; i < 3; i++)
        if ((st = opu_want_f32(ic, "ConvTransposeGrad", i,
                                "every input")) != POPC_OK)
            return st;
    if ((st = convt_win(ic->node_name, ic->inputs + 1, ic->attrs, &w, &g)) !=
        POPC_OK)
        return st;
    if (popc_view_numel(&ic->inputs[0]) !=
        ic->inputs[1].dims[0] * ic->inputs[2].dims[1] * g *
            sp_size(w.out, w.sp))
        return opu_error(POPC_EINVAL, "ConvTransposeGrad", ic->node_name,
                         "dY does not have the forward's output shape");
    opu_set_like(&ic->outputs[0], &ic->inputs[1]);
    opu_set_like(&ic->outputs[1], &ic->inputs[2]);
    {
        int64_t m = ic->inputs[2].dims[1] * g;

        opu_set(&ic->outputs[2], POPC_DTYPE_F32, &m, 1);
    }
    return POPC_OK;
}

static popc_status convt_grad_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[1], *wt = &kc->inputs[2];
    const float *dy = kc->inputs[0].data, *xd = x->data, *wd = wt->data;
    float *dx = kc->outputs[0].data, *dw = kc->outputs[1].data;
    float *db = kc->outputs[2].data;
    nd_win w;
    int64_t g, C, Cg, Mg, M, osz, isz, ksz, N;
    double *acc;
    popc_status st;

    if ((st = convt_win(kc->node_name, kc->inputs + 1, kc->attrs, &w, &g)) !=
        POPC_OK)
        return st;
    N = x->dims[0];
    C = x->dims[1];
    Cg = C / g;
    Mg = wt->dims[1];
    M = Mg * g;
    osz = sp_size(w.out, w.sp);
    isz = sp_size(w.in, w.sp);
    ksz = sp_size(w.k, w.sp);
    if (!(acc = kc->host->alloc(sizeof(double) *
                                (size_t)(popc_view_numel(wt) + M + 1))))
        return opu_error(POPC_ENOMEM, "ConvTransposeGrad", kc->node_name,
                         "out of memory");
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) {
            int64_t grp = c / Cg;

            for (int64_t ii = 0; ii < isz; ii++) {
                int64_t xi[MAX_SP];
                double xv = xd[(n * C + c) * isz + ii], gx = 0;

                unflatten(ii, w.in, w.sp, xi);
                for (int64_t k = 0; k < ksz; k++) {
                    int64_t o = tap_offset(&w, xi, k, w.out);

                    if (o < 0)
                        continue;
                    for (int64_t mm = 0; mm < Mg; mm++) {
                        double gy = dy[(n * M + grp * Mg + mm) * osz + o];

                        gx += wd[(c * Mg + mm) * ksz + k] * gy;
                        acc[(c * Mg + mm) * ksz + k] += xv * gy;
                    }
                }
                dx[(n * C + c) * isz + ii] = (float)gx;
            }
        }
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t o = 0; o < osz; o++)
                acc[popc_view_numel(wt) + m] += dy[(n * M + m) * osz + o];
    for (int64_t i = 0; i < popc_view_numel(wt); i++)
        dw[i] = (float)acc[i];
    for (int64_t m = 0; m < M; m++)
        db[m] = (float)acc[popc_view_numel(wt) + m];
    kc->host->free(acc);
    return POPC_OK;
}

/* ---- ConvInteger ------------------------------------------------------------- */

/* Conv of (x - x_zero_point) and (w - w_zero_point) in int32 (uint8 or
** int8 operands; w's zero point per tensor or per output channel), 1-D to
** 3-D, direct loops. */
static popc_status conv_integer_infer(popc_infer_ctx *ic)
{
    nd_win w;
    int64_t g, d[2 + MAX_SP];
    popc_status st;

    if (popc_dtype_is_float(ic->inputs[0].dtype) ||
        popc_dtype_is_float(ic->inputs[1].dtype))
        return opu_error(POPC_EINVAL, "ConvInteger", ic->node_name,
                         "x and w must be 8-bit integers");
    if ((st = conv_win(ic->node_name, ic->inputs, ic->attrs, &w, &g)) !=
        POPC_OK)
        return st;
    d[0] = ic->inputs[0].dims[0];
    d[1] = ic->inputs[1].dims[0];
    memcpy(d + 2, w.out, sizeof(int64_t) * (size_t)w.sp);
    opu_set(&ic->outputs[0], POPC_DTYPE_I32, d, 2 + w.sp);
    return POPC_OK;
}

static popc_status conv_integer_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *wt = &kc->inputs[1];
    const popc_view *xz = kc->n_inputs > 2 ? &kc->inputs[2] : NULL;
    const popc_view *wz = kc->n_inputs > 3 ? &kc->inputs[3] : NULL;
    int32_t *y = kc->outputs[0].data;
    nd_win w;
    int64_t g, M, C, Cg, Mg, osz, isz, ksz, s, e;
    popc_status st;

    if ((st = conv_win(kc->node_name, kc->inputs, kc->attrs, &w, &g)) !=
        POPC_OK)
        return st;
    if (xz && xz->dtype == POPC_DTYPE_UNDEFINED)
        xz = NULL;
    if (wz && wz->dtype == POPC_DTYPE_UNDEFINED)
        wz = NULL;
    M = wt->dims[0];
    C = x->dims[1];
    Cg = C / g;
    Mg = M / g;
    osz = sp_size(w.out, w.sp);
    isz = sp_size(w.in, w.sp);
    ksz = sp_size(w.k, w.sp);
    opu_range(popc_view_numel(&kc->outputs[0]), kc->part, kc->n_parts, &s,
               &e);
    for (int64_t i = s; i < e; i++) {
        int64_t o = i % osz, m = (i / osz) % M, n = i / osz / M;
        int64_t oi[MAX_SP], acc = 0, c0 = (m / Mg) * Cg;
        int64_t zx = xz ? opu_load_i(xz, 0) : 0;
        int64_t zw = wz ? opu_load_i(wz, popc_view_numel(wz) > 1 ? m : 0)
                        : 0;

        unflatten(o, w.out, w.sp, oi);
        for (int64_t k = 0; k < ksz; k++) {
            int64_t off = tap_offset(&w, oi, k, w.in);
            int inside = off >= 0;

            for (int64_t c = 0; c < Cg; c++) {
                /* padding holds the zero point: it contributes 0 */
                int64_t xv = inside ? opu_load_i(x, (n * C + c0 + c) * isz +
                                                        off) -
                                          zx
                                    : 0;

                acc += xv * (opu_load_i(wt, (m * Cg + c) * ksz + k) - zw);
            }
        }
        y[i] = (int32_t)acc;
    }
    return POPC_OK;
}

/* QLinearConv: ConvInteger of the zero-point-shifted operands plus the
** int32 bias, requantized with x_scale * w_scale / y_scale (w_scale per
** tensor or per output channel), rounded half to even, saturated. */
static popc_status qlinear_conv_infer(popc_infer_ctx *ic)
{
    popc_view xw[2] = {ic->inputs[0], ic->inputs[3]};
    nd_win w;
    int64_t g, d[2 + MAX_SP];
    popc_status st;

    if ((st = conv_win(ic->node_name, xw, ic->attrs, &w, &g)) != POPC_OK)
        return st;
    d[0] = xw[0].dims[0];
    d[1] = xw[1].dims[0];
    memcpy(d + 2, w.out, sizeof(int64_t) * (size_t)w.sp);
    opu_set(&ic->outputs[0], ic->inputs[7].dtype, d, 2 + w.sp);
    return POPC_OK;
}

static popc_status qlinear_conv_forward(const popc_kernel_ctx *kc)
{
    popc_view xw[2] = {kc->inputs[0], kc->inputs[3]};
    const popc_view *x = &xw[0], *wt = &xw[1], *o = &kc->outputs[0];
    const popc_view *bias = kc->n_inputs > 8 &&
                                    kc->inputs[8].dtype != POPC_DTYPE_UNDEFINED
                                ? &kc->inputs[8]
                                : NULL;
    double xs = opu_load_f(&kc->inputs[1], 0), ys = opu_load_f(&kc->inputs[6],
                                                               0);
    int64_t zx = opu_load_i(&kc->inputs[2], 0), zy = opu_load_i(&kc->inputs[7],
                                                                0);
    int lo = o->dtype == POPC_DTYPE_I8 ? -128 : 0;
    int hi = o->dtype == POPC_DTYPE_I8 ? 127 : 255;
    nd_win w;
    int64_t g, M, C, Cg, Mg, osz, isz, ksz, s, e;
    popc_status st;

    if ((st = conv_win(kc->node_name, xw, kc->attrs, &w, &g)) != POPC_OK)
        return st;
    M = wt->dims[0];
    C = x->dims[1];
    Cg = C / g;
    Mg = M / g;
    osz = sp_size(w.out, w.sp);
    isz = sp_size(w.in, w.sp);
    ksz = sp_size(w.k, w.sp);
    opu_range(popc_view_numel(o), kc->part, kc->n_parts, &s, &e);
    for (int64_t i = s; i < e; i++) {
        int64_t oo = i % osz, m = (i / osz) % M, n = i / osz / M;
        int64_t oi[MAX_SP], ki[MAX_SP], acc = bias ? opu_load_i(bias, m) : 0;
        int64_t c0 = (m / Mg) * Cg, pc = popc_view_numel(&kc->inputs[5]) > 1;
        int64_t zw = opu_load_i(&kc->inputs[5], pc ? m : 0);
        double ws = opu_load_f(&kc->inputs[4],
                               popc_view_numel(&kc->inputs[4]) > 1 ? m : 0);
        double q;

        unflatten(oo, w.out, w.sp, oi);
        for (int64_t k = 0; k < ksz; k++) {
            int64_t off = 0;
            int inside = 1;

            unflatten(k, w.k, w.sp, ki);
            for (int qd = 0; qd < w.sp && inside; qd++) {
                int64_t p = oi[qd] * w.s[qd] - w.p0[qd] + ki[qd] * w.d[qd];

                inside = p >= 0 && p < w.in[qd];
                off = off * w.in[qd] + p;
            }
            if (!inside)
                continue;
            for (int64_t c = 0; c < Cg; c++)
                acc += (opu_load_i(x, (n * C + c0 + c) * isz + off) - zx) *
                       (opu_load_i(wt, (m * Cg + c) * ksz + k) - zw);
        }
        q = nearbyint((double)acc * xs * ws / ys) + (double)zy;
        opu_store_i(o, i, (int64_t)(q < lo ? lo : q > hi ? hi : q));
    }
    return POPC_OK;
}

static const popc_op_def nd_ops[] = {
    {
        .size = sizeof(popc_op_def),
        .domain = "ai.onnx",
        .name = "QLinearConv",
        .since_version = 10,
        .min_inputs = 8,
        .max_inputs = 9,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = qlinear_conv_infer,
        .forward = qlinear_conv_forward,
        .doc = "quantized convolution, requantized to y's type",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "ai.onnx",
        .name = "ConvInteger",
        .since_version = 10,
        .min_inputs = 2,
        .max_inputs = 4,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = conv_integer_infer,
        .forward = conv_integer_forward,
        .doc = "int32 convolution of zero-point-shifted 8-bit operands",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "ai.onnx",
        .name = "ConvTranspose",
        .since_version = 11,
        .min_inputs = 2,
        .max_inputs = 3,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = convt_infer,
        .forward = convt_forward,
        .grad = convt_grad,
        .doc = "transposed convolution, 1-D to 3-D (output_padding, "
               "output_shape, groups)",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "ConvTransposeGrad",
        .since_version = 1,
        .min_inputs = 3,
        .max_inputs = 3,
        .min_outputs = 3,
        .max_outputs = 3,
        .flags = 0,
        .infer = convt_grad_infer,
        .forward = convt_grad_forward,
        .doc = "(dY, X, W) -> dX, dW, dB of ConvTranspose",
    },
};

popc_status nn_register_nd(const popc_host *h, popc_registrar *r)
{
    return opu_register_ops(h, r, nd_ops,
                            (int)(sizeof nd_ops / sizeof nd_ops[0]));
}
