/* pool.c - ai.onnx MaxPool (optional Indices), AveragePool and
** GlobalAveragePool over [N, C, W] or [N, C, H, W], and their gradient ops
** popc::MaxPoolGrad, popc::AveragePoolGrad, popc::GlobalAveragePoolGrad.
**
** Numerics follow torch's CPU kernels: max picks the first maximum and
** propagates NaN; the average divisor with count_include_pad counts the
** padding but not the part of a ceil_mode window beyond it. Every kernel
** splits over (n, c) planes, so parts write disjoint planes. The max
** window kernels are in pool_max.c.
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "ops/nn/blocked.h"
#include "ops/nn/nn_priv.h"
#include "ops/util/oputil.h"

typedef struct pool_p {
    nn_window w;
    int64_t N, C, HW, P;
    int ceil_mode;
} pool_p;

static popc_status pool_geom(const char *op, const char *node,
                             const popc_attrs *attrs, const int64_t *xd, int xr,
                             int is_max, pool_p *p)
{
    char sx[OPU_DIMS_LEN];
    int64_t d[2];
    popc_status st;

    memset(p, 0, sizeof *p);
    if (xr != 3 && xr != 4)
        return opu_error(POPC_EUNSUPPORTED, op, node, "input X %s must be "
                         "[N, C, W] or [N, C, H, W]", opu_dims_n(xd, xr, sx));
    if (!is_max && popc_attr_ints(attrs, "dilations", d, 2) >= 0)
        for (int i = 0; i < xr - 2; i++)
            if (d[i] != 1)
                return opu_error(POPC_EUNSUPPORTED, op, node, "dilations "
                                 "are not supported by AveragePool (opset "
                                 "17); remove them");
    if (is_max && popc_attr_int(attrs, "storage_order", 0) != 0)
        return opu_error(POPC_EUNSUPPORTED, op, node, "storage_order 1 "
                         "(column major indices) is not supported");
    if ((st = nn_window_parse(op, node, attrs, xr - 2, xd + 2, NULL, 1, 1,
                              &p->w)) != POPC_OK)
        return st;
    p->N = xd[0];
    p->C = xd[1];
    p->HW = p->w.H * p->w.W;
    p->P = p->w.OH * p->w.OW;
    p->ceil_mode = popc_attr_int(attrs, "ceil_mode", 0) != 0;
    return POPC_OK;
}

static void pool_out_dims(const pool_p *p, int64_t *d, int *rank)
{
    d[0] = p->N;
    d[1] = p->C;
    if (p->w.sp == 2) {
        d[2] = p->w.OH;
        d[3] = p->w.OW;
        *rank = 4;
    } else {
        d[2] = p->w.OW;
        *rank = 3;
    }
}

/* dY must have the pool's output shape. */
static popc_status check_dy(const char *op, const char *node,
                            const popc_view *dy, const pool_p *p)
{
    char s1[OPU_DIMS_LEN], s2[OPU_DIMS_LEN];
    int64_t d[4];
    int r;

    pool_out_dims(p, d, &r);
    if (dy->rank == r && !memcmp(dy->dims, d, sizeof d[0] * (size_t)r))
        return POPC_OK;
    return opu_error(POPC_EINVAL, op, node, "dY %s must have the pool's "
                     "output shape %s", opu_dims(dy, s1),
                     opu_dims_n(d, r, s2));
}

static popc_status maxpool_forward_2d(const popc_kernel_ctx *kc);
static popc_status avgpool_forward_2d(const popc_kernel_ctx *kc);

/* ---- MaxPool ------------------------------------------------------------- */

static popc_status maxpool_infer(popc_infer_ctx *ic)
{
    pool_p p;
    int64_t d[4];
    int r;
    popc_status st;

    if (ic->inputs[0].rank == 5)
        return nn_nd_pool_infer(ic, "MaxPool");
    if ((st = opu_want_f32(ic, "MaxPool", 0, "input X")) != POPC_OK)
        return st;
    if ((st = pool_geom("MaxPool", ic->node_name, ic->attrs, ic->inputs[0].dims,
                        ic->inputs[0].rank, 1, &p)) != POPC_OK)
        return st;
    pool_out_dims(&p, d, &r);
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d, r);
    if (ic->n_outputs > 1)
        opu_set(&ic->outputs[1], POPC_DTYPE_I64, d, r);
    return POPC_OK;
}

static popc_status maxpool_forward(const popc_kernel_ctx *kc)
{
    if (kc->inputs[0].rank == 5)
        return nn_nd_pool_forward(kc, 1);
    return maxpool_forward_2d(kc);
}

static popc_status maxpool_forward_2d(const popc_kernel_ctx *kc)
{
    const float *x = kc->inputs[0].data;
    float *y = kc->outputs[0].data;
    int64_t *idx = opu_out_ready(kc, 1) ? kc->outputs[1].data : NULL;
    pool_p p;
    int64_t lo, hi;
    popc_status st;

    if ((st = pool_geom("MaxPool", kc->node_name, kc->attrs, kc->inputs[0].dims,
                        kc->inputs[0].rank, 1, &p)) != POPC_OK)
        return st;
    opu_range(p.N * p.C, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t pl = lo; pl < hi; pl++) {
        const float *xp = x + pl * p.HW;
        float *yp = y + pl * p.P;

        for (int64_t oh = 0; oh < p.w.OH; oh++)
            for (int64_t o0 = 0; o0 < p.w.OW; o0 += NN_POOL_ROW) {
                int64_t o1 =
                    o0 + NN_POOL_ROW < p.w.OW ? o0 + NN_POOL_ROW : p.w.OW;
                int64_t *ir = idx ? idx + pl * p.P + oh * p.w.OW : NULL;

                nn_pool_max_row(&p.w, xp, oh, o0, o1, yp + oh * p.w.OW + o0,
                         ir ? ir + o0 : NULL);
                for (int64_t o = o0; ir && o < o1; o++)
                    ir[o] = ir[o] < 0 ? -1 : pl * p.HW + ir[o];
            }
    }
    return POPC_OK;
}

static popc_status pool_cost_common(const popc_infer_ctx *ic, const pool_p *p,
                                    popc_cost *c)
{
    double outs = (double)p->N * (double)p->C * (double)p->P;

    c->flops = outs * (double)(p->w.kh * p->w.kw);
    c->bytes = 4.0 * ((double)popc_view_numel(&ic->inputs[0]) + outs) +
               (ic->n_outputs > 1 ? 8.0 * outs : 0.0);
    c->temp_bytes = 0;
    return POPC_OK;
}

static popc_status maxpool_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    pool_p p;
    popc_status st;

    if (ic->inputs[0].rank == 5)
        return nn_nd_cost(ic, c);

    if ((st = pool_geom("MaxPool", ic->node_name, ic->attrs, ic->inputs[0].dims,
                        ic->inputs[0].rank, 1, &p)) != POPC_OK)
        return st;
    return pool_cost_common(ic, &p, c);
}

static popc_status maxpool_grad(popc_grad_ctx *gc)
{
    const popc_view *xi = &gc->input_info[0];
    nn_window_attrs wa;
    pool_p p;
    int in[2], na;
    popc_status st;

    if ((st = opu_no_grad_output(gc, "MaxPool", 1, "Indices")) != POPC_OK)
        return st;
    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if ((st = pool_geom("MaxPool", gc->node_name, gc->attrs, xi->dims, xi->rank,
                        1, &p)) != POPC_OK)
        return st;
    na = nn_window_attrs_make(&p.w, p.ceil_mode, &wa);
    in[0] = gc->inputs[0];
    in[1] = gc->output_grads[0];
    return opu_grad_node(gc, "popc", "MaxPoolGrad", in, 2, wa.a, na,
                      &gc->input_grads[0]);
}

/* ---- MaxPoolGrad: dX from X and dY --------------------------------------- */

static popc_status mpg_infer(popc_infer_ctx *ic)
{
    pool_p p;
    popc_status st;

    if ((st = opu_want_f32(ic, "MaxPoolGrad", 0, "input X")) != POPC_OK ||
        (st = opu_want_f32(ic, "MaxPoolGrad", 1, "dY")) != POPC_OK)
        return st;
    if ((st = pool_geom("MaxPoolGrad", ic->node_name, ic->attrs,
                        ic->inputs[0].dims, ic->inputs[0].rank, 1, &p)) !=
            POPC_OK ||
        (st = check_dy("MaxPoolGrad", ic->node_name, &ic->inputs[1], &p)) !=
            POPC_OK)
        return st;
    opu_set_like(&ic->outputs[0], &ic->inputs[0]);
    return POPC_OK;
}

static popc_status mpg_forward(const popc_kernel_ctx *kc)
{
    const float *x = kc->inputs[0].data, *dy = kc->inputs[1].data;
    float *dx = kc->outputs[0].data;
    pool_p p;
    int64_t lo, hi;
    int tiled;
    popc_status st;

    if ((st = pool_geom("MaxPoolGrad", kc->node_name, kc->attrs,
                        kc->inputs[0].dims, kc->inputs[0].rank, 1, &p)) !=
        POPC_OK)
        return st;
    tiled = p.w.kh == 2 && p.w.kw == 2 && p.w.sh == 2 && p.w.sw == 2 &&
            p.w.dh == 1 && p.w.dw == 1 && p.w.pt == 0 && p.w.pl == 0 &&
            2 * p.w.OH <= p.w.H && 2 * p.w.OW <= p.w.W;
    opu_range(p.N * p.C, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t pl = lo; pl < hi; pl++) {
        const float *xp = x + pl * p.HW, *gp = dy + pl * p.P;
        float *dp = dx + pl * p.HW;

        if (tiled) {
            nn_pool_max_grad_2x2(&p.w, xp, gp, dp);
            continue;
        }
        memset(dp, 0, sizeof *dp * (size_t)p.HW);
        for (int64_t oh = 0; oh < p.w.OH; oh++)
            for (int64_t o0 = 0; o0 < p.w.OW; o0 += NN_POOL_ROW) {
                int64_t o1 =
                    o0 + NN_POOL_ROW < p.w.OW ? o0 + NN_POOL_ROW : p.w.OW;
                const float *gr = gp + oh * p.w.OW;
                float m[NN_POOL_ROW];
                int64_t at[NN_POOL_ROW];

                nn_pool_max_row(&p.w, xp, oh, o0, o1, m, at);
                for (int64_t o = o0; o < o1; o++)
                    if (at[o - o0] >= 0)
                        dp[at[o - o0]] += gr[o];
            }
    }
    return POPC_OK;
}

static popc_status mpg_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    pool_p p;
    popc_status st;

    if ((st = pool_geom("MaxPoolGrad", ic->node_name, ic->attrs,
                        ic->inputs[0].dims, ic->inputs[0].rank, 1, &p)) !=
        POPC_OK)
        return st;
    if ((st = pool_cost_common(ic, &p, c)) != POPC_OK)
        return st;
    c->bytes += 4.0 * (double)popc_view_numel(&ic->inputs[0]);
    return POPC_OK;
}

/* ---- AveragePool --------------------------------------------------------- */

/* One window's clipped span and torch's divisor. */
void nn_avg_window(const nn_window *w, int cip, int64_t oh, int64_t ow,
                   int64_t *h0, int64_t *h1, int64_t *w0, int64_t *w1,
                   int64_t *div)
{
    int64_t hs = oh * w->sh - w->pt, ws = ow * w->sw - w->pl;
    int64_t he = hs + w->kh, we = ws + w->kw, size;

    if (he > w->H + w->pb)
        he = w->H + w->pb;
    if (we > w->W + w->pr)
        we = w->W + w->pr;
    size = (he - hs) * (we - ws);
    *h0 = hs < 0 ? 0 : hs;
    *w0 = ws < 0 ? 0 : ws;
    *h1 = he > w->H ? w->H : he;
    *w1 = we > w->W ? w->W : we;
    *div = cip ? size : (*h1 - *h0) * (*w1 - *w0);
}

static popc_status avgpool_infer(popc_infer_ctx *ic)
{
    pool_p p;
    int64_t d[4];
    int r;
    popc_status st;

    if (ic->inputs[0].rank == 5)
        return nn_nd_pool_infer(ic, "AveragePool");
    if ((st = opu_want_f32(ic, "AveragePool", 0, "input X")) != POPC_OK)
        return st;
    if ((st = pool_geom("AveragePool", ic->node_name, ic->attrs,
                        ic->inputs[0].dims, ic->inputs[0].rank, 0, &p)) !=
        POPC_OK)
        return st;
    pool_out_dims(&p, d, &r);
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d, r);
    return POPC_OK;
}

static popc_status avgpool_forward(const popc_kernel_ctx *kc)
{
    if (kc->inputs[0].rank == 5)
        return nn_nd_pool_forward(kc, 0);
    return avgpool_forward_2d(kc);
}

static popc_status avgpool_forward_2d(const popc_kernel_ctx *kc)
{
    const float *x = kc->inputs[0].data;
    float *y = kc->outputs[0].data;
    int cip = popc_attr_int(kc->attrs, "count_include_pad", 0) != 0;
    pool_p p;
    int64_t lo, hi;
    popc_status st;

    if ((st = pool_geom("AveragePool", kc->node_name, kc->attrs,
                        kc->inputs[0].dims, kc->inputs[0].rank, 0, &p)) !=
        POPC_OK)
        return st;
    opu_range(p.N * p.C, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t pl = lo; pl < hi; pl++) {
        const float *xp = x + pl * p.HW;
        float *yp = y + pl * p.P;

        for (int64_t oh = 0; oh < p.w.OH; oh++)
            for (int64_t ow = 0; ow < p.w.OW; ow++) {
                int64_t h0, h1, w0, w1, div;
                double s = 0.0;

                nn_avg_window(&p.w, cip, oh, ow, &h0, &h1, &w0, &w1, &div);
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++)
                        s += xp[ih * p.w.W + iw];
                yp[oh * p.w.OW + ow] = div > 0 && h0 < h1 && w0 < w1
                                           ? (float)(s / (double)div)
                                           : 0.0f;
            }
    }
    return POPC_OK;
}

static popc_status avgpool_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    pool_p p;
    popc_status st;

    if (ic->inputs[0].rank == 5)
        return nn_nd_cost(ic, c);

    if ((st = pool_geom("AveragePool", ic->node_name, ic->attrs,
                        ic->inputs[0].dims, ic->inputs[0].rank, 0, &p)) !=
        POPC_OK)
        return st;
    return pool_cost_common(ic, &p, c);
}

static popc_status avgpool_grad(popc_grad_ctx *gc)
{
    const popc_view *xi = &gc->input_info[0];
    nn_window_attrs wa;
    popc_attr a[8];
    pool_p p;
    int na;
    popc_status st;

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if ((st = pool_geom("AveragePool", gc->node_name, gc->attrs, xi->dims,
                        xi->rank, 0, &p)) != POPC_OK)
        return st;
    na = nn_window_attrs_make(&p.w, p.ceil_mode, &wa);
    memcpy(a, wa.a, sizeof a[0] * (size_t)na);
    a[na++] = popc_attr_make_int("count_include_pad",
                            popc_attr_int(gc->attrs, "count_include_pad", 0));
    a[na++] = popc_attr_make_ints("input_shape", xi->dims, xi->rank);
    return opu_grad_node(gc, "popc", "AveragePoolGrad", &gc->output_grads[0], 1, a,
                      na, &gc->input_grads[0]);
}

/* ---- AveragePoolGrad: dX from dY (attr input_shape) ---------------------- */

static popc_status apg_params(const char *node, const popc_view *dy,
                              const popc_attrs *attrs, int64_t *xd, int *xr,
                              pool_p *p)
{
    int64_t r = popc_attr_ints(attrs, "input_shape", xd, POPC_MAX_RANK);
    popc_status st;

    if (r < 3 || r > 4)
        return opu_error(POPC_EINVAL, "AveragePoolGrad", node, "attribute "
                         "input_shape must give X's shape");
    *xr = (int)r;
    if ((st = pool_geom("AveragePoolGrad", node, attrs, xd, (int)r, 0, p)) !=
        POPC_OK)
        return st;
    return check_dy("AveragePoolGrad", node, dy, p);
}

static popc_status apg_infer(popc_infer_ctx *ic)
{
    int64_t xd[POPC_MAX_RANK];
    int xr;
    pool_p p;
    popc_status st;

    if ((st = opu_want_f32(ic, "AveragePoolGrad", 0, "dY")) != POPC_OK)
        return st;
    if ((st = apg_params(ic->node_name, &ic->inputs[0], ic->attrs, xd, &xr,
                         &p)) != POPC_OK)
        return st;
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, xd, xr);
    return POPC_OK;
}

static popc_status apg_forward(const popc_kernel_ctx *kc)
{
    const float *dy = kc->inputs[0].data;
    float *dx = kc->outputs[0].data;
    int cip = popc_attr_int(kc->attrs, "count_include_pad", 0) != 0;
    int64_t xd[POPC_MAX_RANK], lo, hi;
    int xr;
    pool_p p;
    popc_status st;

    if ((st = apg_params(kc->node_name, &kc->inputs[0], kc->attrs, xd, &xr,
                         &p)) != POPC_OK)
        return st;
    opu_range(p.N * p.C, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t pl = lo; pl < hi; pl++) {
        const float *gp = dy + pl * p.P;
        float *dp = dx + pl * p.HW;

        memset(dp, 0, sizeof *dp * (size_t)p.HW);
        for (int64_t oh = 0; oh < p.w.OH; oh++)
            for (int64_t ow = 0; ow < p.w.OW; ow++) {
                int64_t h0, h1, w0, w1, div;
                float g;

                nn_avg_window(&p.w, cip, oh, ow, &h0, &h1, &w0, &w1, &div);
                if (div <= 0)
                    continue;
                g = gp[oh * p.w.OW + ow] / (float)div;
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++)
                        dp[ih * p.w.W + iw] += g;
            }
    }
    return POPC_OK;
}

static popc_status apg_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    int64_t xd[POPC_MAX_RANK];
    int xr;
    pool_p p;
    popc_status st;

    if ((st = apg_params(ic->node_name, &ic->inputs[0], ic->attrs, xd, &xr,
                         &p)) != POPC_OK)
        return st;
    c->flops =
        (double)p.N * (double)p.C * (double)p.P * (double)(p.w.kh * p.w.kw);
    c->bytes = 4.0 * (double)p.N * (double)p.C * (double)(p.P + p.HW);
    c->temp_bytes = 0;
    return POPC_OK;
}

/* ---- GlobalAveragePool --------------------------------------------------- */

static popc_status gap_infer(popc_infer_ctx *ic)
{
    const popc_view *x = &ic->inputs[0];
    char sx[OPU_DIMS_LEN];
    int64_t d[POPC_MAX_RANK];
    popc_status st;

    if ((st = opu_want_f32(ic, "GlobalAveragePool", 0, "input X")) != POPC_OK)
        return st;
    if (x->rank < 3)
        return ic->host->set_error(POPC_EINVAL,
                                   "GlobalAveragePool '%s': input X %s must "
                                   "be [N, C, spatial...]",
                                   ic->node_name, opu_dims(x, sx));
    for (int i = 0; i < x->rank; i++)
        d[i] = i < 2 ? x->dims[i] : 1;
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d, x->rank);
    return POPC_OK;
}

static popc_status gap_forward(const popc_kernel_ctx *kc)
{
    const popc_view *xv = &kc->inputs[0];
    const float *x = xv->data;
    float *y = kc->outputs[0].data;
    int64_t planes = xv->dims[0] * xv->dims[1];
    int64_t hw = planes > 0 ? popc_view_numel(xv) / planes : 0;
    int64_t lo, hi;

    opu_range(planes, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t pl = lo; pl < hi; pl++) {
        const float *xp = x + pl * hw;
        double s = 0.0;

        for (int64_t i = 0; i < hw; i++)
            s += xp[i];
        y[pl] = hw > 0 ? (float)(s / (double)hw) : NAN;
    }
    return POPC_OK;
}

static popc_status gap_grad(popc_grad_ctx *gc)
{
    const popc_view *xi = &gc->input_info[0];
    popc_attr a = popc_attr_make_ints("input_shape", xi->dims, xi->rank);

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    return opu_grad_node(gc, "popc", "GlobalAveragePoolGrad", &gc->output_grads[0],
                      1, &a, 1, &gc->input_grads[0]);
}

/* ---- GlobalAveragePoolGrad: dX from dY (attr input_shape) ---------------- */

static popc_status gapg_infer(popc_infer_ctx *ic)
{
    const popc_view *dy = &ic->inputs[0];
    int64_t xd[POPC_MAX_RANK];
    int64_t r = popc_attr_ints(ic->attrs, "input_shape", xd, POPC_MAX_RANK);
    char s1[OPU_DIMS_LEN], s2[OPU_DIMS_LEN];
    int ok;
    popc_status st;

    if ((st = opu_want_f32(ic, "GlobalAveragePoolGrad", 0, "dY")) != POPC_OK)
        return st;
    ok = r >= 3 && r <= POPC_MAX_RANK && dy->rank == r;
    for (int i = 0; ok && i < r; i++)
        ok = dy->dims[i] == (i < 2 ? xd[i] : 1);
    if (!ok)
        return ic->host->set_error(POPC_EINVAL,
                                   "GlobalAveragePoolGrad '%s': dY %s does "
                                   "not match input_shape %s",
                                   ic->node_name, opu_dims(dy, s1),
                                   r < 0 ? "(missing)"
                                         : opu_dims_n(xd, (int)r, s2));
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, xd, (int)r);
    return POPC_OK;
}

static popc_status gapg_forward(const popc_kernel_ctx *kc)
{
    const popc_view *xv = &kc->outputs[0];
    const float *dy = kc->inputs[0].data;
    float *dx = xv->data;
    int64_t planes = xv->dims[0] * xv->dims[1];
    int64_t hw = planes > 0 ? popc_view_numel(xv) / planes : 0;
    int64_t lo, hi;

    opu_range(planes, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t pl = lo; pl < hi; pl++) {
        float g = dy[pl] / (float)hw;
        float *dp = dx + pl * hw;

        for (int64_t i = 0; i < hw; i++)
            dp[i] = g;
    }
    return POPC_OK;
}

static const popc_op_def pool_ops[] = {
    {
        .size = sizeof(popc_op_def),
        .domain = "ai.onnx",
        .name = "MaxPool",
        .since_version = 12,
        .min_inputs = 1,
        .max_inputs = 1,
        .min_outputs = 1,
        .max_outputs = 2,
        .flags = POPC_OP_SPLIT,
        .infer = maxpool_infer,
        .forward = maxpool_forward,
        .grad = maxpool_grad,
        .cost = maxpool_cost,
        .doc = "max pooling (pads, dilations, ceil_mode, Indices)",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "ai.onnx",
        .name = "AveragePool",
        .since_version = 11,
        .min_inputs = 1,
        .max_inputs = 1,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = avgpool_infer,
        .forward = avgpool_forward,
        .grad = avgpool_grad,
        .cost = avgpool_cost,
        .doc = "average pooling (pads, ceil_mode, count_include_pad)",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "ai.onnx",
        .name = "GlobalAveragePool",
        .since_version = 1,
        .min_inputs = 1,
        .max_inputs = 1,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = gap_infer,
        .forward = gap_forward,
        .grad = gap_grad,
        .doc = "mean over all spatial dimensions",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "MaxPoolGrad",
        .since_version = 1,
        .min_inputs = 2,
        .max_inputs = 2,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = mpg_infer,
        .forward = mpg_forward,
        .cost = mpg_cost,
        .doc = "MaxPool input gradient (X, dY)",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "AveragePoolGrad",
        .since_version = 1,
        .min_inputs = 1,
        .max_inputs = 1,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = apg_infer,
        .forward = apg_forward,
        .cost = apg_cost,
        .doc = "AveragePool input gradient (dY; attr input_shape)",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "GlobalAveragePoolGrad",
        .since_version = 1,
        .min_inputs = 1,
        .max_inputs = 1,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = gapg_infer,
        .forward = gapg_forward,
        .doc = "GlobalAveragePool input gradient (dY; attr input_shape)",
    },
};

popc_status nn_register_pool(const popc_host *h, popc_registrar *r)
{
    return opu_register_ops(h, r, pool_ops,
                            (int)(sizeof pool_ops / sizeof pool_ops[0]));
}
