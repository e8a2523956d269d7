/* conv_grad.c - popc::ConvGradInput (dX from dY and W) and
** popc::ConvGradWeight (dW and dB from X and dY), the ops Conv's gradient
** builder (conv.c) adds.
**
** Depthwise convolutions run the direct kernels of depthwise.c, small
** output planes the side-by-side GEMMs of conv_batched.c (ConvGradWeight:
** the images of a block side by side in each unit's GEMM).
** ConvGradInput: Winograd units (group, image) when nn_wino4_fits (F(4x4,
** 3x3), winograd4*.c) or nn_wino_fits (F(2x2, 3x3)), as the convolution
** of dY with the turned kernels; else im2col units (image, group,
** input-channel block), each writing its own dX channels.
** ConvGradWeight: with image_chunks S, units (group, chunk) each sum a
** whole group's dW over the chunk's images into partial sum s (Winograd
** F(3x3, 4x4) or F(3x3, 2x2) when the window fits, dB from the same
** reads of dY); without, units (group, channel block, row block) of dW
** sum over the batch. dB is always summed inside ConvGradWeight while dY
** is in cache, never by a separate ReduceSum over dY. Sums run in image
** order and units depend on the shape only, so split and whole runs agree
** bitwise.
*/
#include "config.h"

/* GCC's -O2 vectorizes only loops that need no runtime alias check; the
** dB sums need the full cost model. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <cblas.h>
#include <string.h>

#include "ops/nn/conv_priv.h"
#include "ops/nn/half_partials.h"
#include "ops/nn/nn_priv.h"
#include "ops/nn/winograd4.h"
#include "ops/util/sums.h"
#include "ops/util/oputil.h"

/* ---- ConvGradInput: dX from dY and W ------------------------------------- */

static popc_status gi_params(const char *node, const popc_view *in,
                             const popc_attrs *attrs, conv_p *p)
{
    const char *op = "ConvGradInput";
    int64_t xd[POPC_MAX_RANK], yd[4];
    int64_t xr = popc_attr_ints(attrs, "input_shape", xd, POPC_MAX_RANK);
    char s1[OPU_DIMS_LEN], s2[OPU_DIMS_LEN];
    int r;
    popc_status st;

    if (xr < 3 || xr > 4)
        return opu_error(POPC_EINVAL, op, node, "attribute input_shape must "
                         "give X's shape ([N, C, H, W])");
    if ((st = nn_conv_geom(op, node, attrs, xd, (int)xr, in[1].dims,
                           in[1].rank, p)) != POPC_OK)
        return st;
    nn_conv_out_dims(p, yd, &r);
    if (in[0].rank != r || memcmp(in[0].dims, yd, sizeof yd[0] * (size_t)r))
        return opu_error(POPC_EINVAL, op, node, "dY %s must have Conv's "
                         "output shape %s", opu_dims(&in[0], s1),
                         opu_dims_n(yd, r, s2));
    return POPC_OK;
}

static popc_status gi_infer(popc_infer_ctx *ic)
{
    int64_t xd[POPC_MAX_RANK];
    int64_t xr = popc_attr_ints(ic->attrs, "input_shape", xd, POPC_MAX_RANK);
    conv_p p;
    popc_status st;

    if ((st = opu_want_f32(ic, "ConvGradInput", 0, "dY")) != POPC_OK ||
        (st = opu_want_f32(ic, "ConvGradInput", 1, "weight W")) != POPC_OK)
        return st;
    if ((st = gi_params(ic->node_name, ic->inputs, ic->attrs, &p)) != POPC_OK)
        return st;
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, xd, (int)xr);
    return POPC_OK;
}

static popc_status gi_forward(const popc_kernel_ctx *kc)
{
    const float *dy = kc->inputs[0].data, *wt = kc->inputs[1].data;
    float *dx = kc->outputs[0].data, *dcol = NULL;
    conv_p p;
    int64_t cb, nblk, lo, hi;
    popc_status st;

    if ((st = gi_params(kc->node_name, kc->inputs, kc->attrs, &p)) != POPC_OK)
        return st;
    if (nn_half_partials(kc))
        return nn_conv_half_grad_input(kc, &p, dy, wt, dx);
    if (nn_dw_fits(&p))
        return nn_dw_grad_input(kc, &p, dy, wt, dx);
    if (nn_wino4_fits(&p, p.Mg, p.Cg, NN_WINO4_GRAD_INPUT))
        return nn_wino4_grad_input(kc, &p, dy, wt, dx);
    if (nn_wino_fits(&p, p.Mg, p.Cg, 1)) {
        nn_wino g;

        /* dX is dY convolved with the turned kernels, padded 2 - pads */
        nn_wino_plan(p.Mg, p.Cg, p.w.OH, p.w.OW, p.w.H, p.w.W, 2 - p.w.pt,
                     2 - p.w.pl, &g);
        return nn_run_wino(kc, &p, &g, 1, dy, p.Mg, p.P, wt, NULL, dx, p.Cg,
                           p.HW);
    }
    if (nn_cb_fits(&p))
        return nn_cb_grad_input(kc, &p, dy, wt, dx);
    cb = nn_chan_block(p.Cg, p.N * p.G);
    nblk = p.Cg > 0 ? (p.Cg + cb - 1) / cb : 0;
    opu_range(p.N * p.G * nblk, kc->part, kc->n_parts, &lo, &hi);
    if (hi <= lo)
        return POPC_OK;
    if (!p.direct &&
        !(dcol = nn_conv_scratch(kc, cb * p.KK * p.P, &st)) && st)
        return st;
    for (int64_t u = lo; u < hi; u++) {
        int64_t ng = u / nblk, n = ng / p.G, g = ng % p.G;
        int64_t c0 = (u % nblk) * cb, c1 = c0 + cb < p.Cg ? c0 + cb : p.Cg;
        float *dxg = dx + (n * p.C + g * p.Cg) * p.HW;
        float *C = p.direct ? dxg + c0 * p.HW : dcol;

        if (p.Mg > 0 && p.P > 0)
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans,
                        (int)((c1 - c0) * p.KK), (int)p.P, (int)p.Mg, 1.0f,
                        wt + g * p.Mg * p.Kc + c0 * p.KK, (int)p.Kc,
                        dy + (n * p.M + g * p.Mg) * p.P, (int)p.P, 0.0f, C,
                        (int)p.P);
        else
            memset(C, 0, sizeof *C * (size_t)((c1 - c0) * p.KK * p.P));
        if (!p.direct) {
            memset(dxg + c0 * p.HW, 0,
                   sizeof *dxg * (size_t)((c1 - c0) * p.HW));
            nn_col2im_add(&p, dcol, c0, c1, dxg, p.P);
        }
    }
    kc->host->free(dcol);
    return POPC_OK;
}

static popc_status gi_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    conv_p p;
    popc_status st;

    if ((st = gi_params(ic->node_name, ic->inputs, ic->attrs, &p)) != POPC_OK)
        return st;
    c->flops = 2.0 * (double)p.N * (double)p.M * (double)p.P * (double)p.Kc;
    c->bytes = 4.0 * ((double)popc_view_numel(&ic->inputs[0]) +
                      (double)popc_view_numel(&ic->inputs[1]) +
                      (double)p.N * (double)p.C * (double)p.HW);
    c->temp_bytes =
        p.direct || nn_dw_fits(&p) ? 0.0 : 4.0 * (double)p.Kc * (double)p.P;
    return POPC_OK;
}

/* ---- ConvGradWeight: dW (and dB) from X and dY --------------------------- */

static popc_status gw_params(const char *node, const popc_view *in,
                             const popc_attrs *attrs, conv_p *p)
{
    const char *op = "ConvGradWeight";
    const popc_view *x = &in[0], *dy = &in[1];
    int64_t wd[4], k[2], yd[4], group = popc_attr_int(attrs, "group", 1);
    int64_t nk = popc_attr_ints(attrs, "kernel_shape", k, 2);
    char s1[OPU_DIMS_LEN], s2[OPU_DIMS_LEN];
    int r;
    popc_status st;

    if (x->rank < 3 || x->rank > 4 || nk != x->rank - 2 || group < 1 ||
        dy->rank != x->rank || x->dims[1] % group != 0)
        return opu_error(POPC_EINVAL, op, node, "X %s, dY %s, kernel_shape "
                         "and group %lld do not describe a Conv",
                         opu_dims(x, s1), opu_dims(dy, s2), (long long)group);
    wd[0] = dy->dims[1];
    wd[1] = x->dims[1] / group;
    for (int i = 0; i < nk; i++)
        wd[2 + i] = k[i];
    if ((st = nn_conv_geom(op, node, attrs, x->dims, x->rank, wd, x->rank,
                           p)) != POPC_OK)
        return st;
    nn_conv_out_dims(p, yd, &r);
    if (memcmp(dy->dims, yd, sizeof yd[0] * (size_t)r))
        return opu_error(POPC_EINVAL, op, node, "dY %s must have Conv's "
                         "output shape %s", opu_dims(dy, s1),
                         opu_dims_n(yd, r, s2));
    p->S = popc_attr_int(attrs, "image_chunks", 0);
    if (p->S < 0 || p->S > 0xfffff)
        return opu_error(POPC_EINVAL, op, node, "image_chunks is %lld; use 0 "
                         "(one sum over the batch) or a count of partial "
                         "sums up to 1048575", (long long)p->S);
    return POPC_OK;
}

static popc_status gw_infer(popc_infer_ctx *ic)
{
    const popc_view *x = &ic->inputs[0];
    int64_t wd[5];
    conv_p p;
    popc_status st;

    if ((st = opu_want_f32(ic, "ConvGradWeight", 0, "input X")) != POPC_OK ||
        (st = opu_want_f32(ic, "ConvGradWeight", 1, "dY")) != POPC_OK)
        return st;
    if ((st = gw_params(ic->node_name, ic->inputs, ic->attrs, &p)) != POPC_OK)
        return st;
    /* with image_chunks S: one partial sum per chunk, [S, dW...] */
    wd[0] = p.S;
    wd[1] = p.M;
    wd[2] = p.Cg;
    wd[3] = p.w.sp == 2 ? p.w.kh : p.w.kw;
    wd[4] = p.w.kw;
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, wd + (p.S == 0),
             x->rank + (p.S > 0));
    if (ic->n_outputs > 1)
        opu_set(&ic->outputs[1], POPC_DTYPE_F32, wd + (p.S == 0),
                 1 + (p.S > 0));
    return POPC_OK;
}

/* Row blocks of dW for ConvGradWeight: with fewer than NN_CONV_UNITS
** (group, channel block) units, the Mg rows are cut into blocks of at
** least 8 so that a one-channel input (the first layer) still splits. */
static int64_t row_block(int64_t Mg, int64_t units)
{
    int64_t want, rb;

    if (units >= NN_CONV_UNITS || Mg <= 8)
        return Mg > 0 ? Mg : 1;
    want = (NN_CONV_UNITS + units - 1) / units;
    rb = (Mg + want - 1) / want;
    rb = (rb + 7) / 8 * 8;
    return rb < Mg ? rb : Mg;
}

/* ConvGradWeight with image chunks by Winograd (winograd.c): units are
** (group, chunk); dB rows are summed while dY is in cache. */
static popc_status gw_wino(const popc_kernel_ctx *kc, const conv_p *p,
                           const float *x, const float *dy, float *dw,
                           float *db)
{
    nn_wino g;
    int64_t lo, hi;
    double *acc;
    float *s;
    popc_status st;

    nn_wino_plan(p->Cg, p->Mg, p->w.H, p->w.W, p->w.OH, p->w.OW, p->w.pt,
                 p->w.pl, &g);
    opu_range(p->G * p->S, kc->part, kc->n_parts, &lo, &hi);
    if (hi <= lo)
        return POPC_OK;
    /* dB sums (8 doubles per row, as 16 floats) first */
    if (!(acc = nn_conv_scratch(kc, 16 * p->Mg + nn_wino_grad_scratch(&g),
                                &st)) &&
        st)
        return st;
    s = (float *)acc + 16 * p->Mg;
    for (int64_t u = lo; u < hi; u++) {
        int64_t gr = u / p->S, c = u % p->S;
        int64_t n0 = p->N * c / p->S, n1 = p->N * (c + 1) / p->S;

        nn_wino_grad_begin(&g, s);
        memset(acc, 0, sizeof *acc * (size_t)(8 * p->Mg));
        for (int64_t n = n0; n < n1; n++) {
            const float *dyn = dy + (n * p->G + gr) * p->Mg * p->P;

            nn_wino_grad_image(&g, x + (n * p->G + gr) * p->Cg * p->HW, dyn,
                               s);
            for (int64_t m = 0; db && m < p->Mg; m++)
                opu_sum8_add(acc + 8 * m, dyn + m * p->P, p->P);
        }
        nn_wino_grad_finish(&g, s, dw + (c * p->G + gr) * p->Mg * p->Kc);
        for (int64_t m = 0; db && m < p->Mg; m++)
            db[c * p->M + gr * p->Mg + m] = (float)opu_sum8_total(acc + 8 * m);
    }
    kc->host->free(acc);
    return POPC_OK;
}

/* Units are (group, image chunk, channel block, row block) of dW; each
** sums its block over its images in image order. Without image_chunks
** there is one chunk and dW is cut into channel and row blocks; with S
** chunks each unit sums a whole group's dW over its images into partial
** sum s (every operand is packed once per image; the grad builder adds
** the S partials up). dB row m of a (group, chunk, row block) is summed
** whole by one of that row block's channel-block units. */
static popc_status gw_forward(const popc_kernel_ctx *kc)
{
    const float *x = kc->inputs[0].data, *dy = kc->inputs[1].data;
    float *dw = kc->outputs[0].data, *col, *dyb;
    float *db = opu_out_ready(kc, 1) ? kc->outputs[1].data : NULL;
    double *acc;
    conv_p p;
    int64_t S, cb, nblk, rb, nrb, per_g, lo, hi, ib;
    popc_status st;

    if ((st = gw_params(kc->node_name, kc->inputs, kc->attrs, &p)) != POPC_OK)
        return st;
    if (nn_half_partials(kc)) {
        if (p.S > 0)
            return kc->host->set_error(POPC_EUNSUPPORTED,
                                       "ConvGradWeight '%s': float16 "
                                       "partials take one sum over the batch; "
                                       "drop image_chunks",
                                       kc->node_name);
        return nn_conv_half_grad_weight(kc, &p, x, dy, dw, db);
    }
    if (nn_dw_fits(&p))
        return nn_dw_grad_weight(kc, &p, x, dy, dw, db);
    if (p.S > 0 && nn_wino4_fits(&p, p.Cg, p.Mg, NN_WINO4_GRAD_WEIGHT))
        return nn_wino4_grad_weight(kc, &p, x, dy, dw, db);
    if (p.S > 0 && nn_wino_fits(&p, p.Cg, p.Mg, 0))
        return gw_wino(kc, &p, x, dy, dw, db);
    S = p.S > 0 ? p.S : 1;
    cb = p.S > 0 ? (p.Cg > 0 ? p.Cg : 1) : nn_chan_block(p.Cg, p.G);
    nblk = p.Cg > 0 ? (p.Cg + cb - 1) / cb : 0;
    rb = p.S > 0 ? (p.Mg > 0 ? p.Mg : 1) : row_block(p.Mg, p.G * nblk);
    nrb = p.Mg > 0 ? (p.Mg + rb - 1) / rb : 0;
    per_g = S * nblk * nrb;
    opu_range(p.G * per_g, kc->part, kc->n_parts, &lo, &hi);
    if (hi <= lo)
        return POPC_OK;
    /* small planes: the images of a block side by side (conv_batched.c),
    ** dY's rows gathered into dyb */
    ib = nn_cb_fits(&p) ? nn_cb_images(&p) : 0;
    /* dB sums (8 doubles per row, as 16 floats) first, then im2col */
    if (!(acc = nn_conv_scratch(
              kc,
              16 * rb + (ib ? (cb * p.KK + rb) * ib * p.P
                            : p.direct ? 0 : cb * p.KK * p.P),
              &st)) &&
        st)
        return st;
    col = (float *)acc + 16 * rb;
    dyb = col + cb * p.KK * ib * p.P;
    for (int64_t u = lo; u < hi; u++) {
        int64_t g = u / per_g, s = u / (nblk * nrb) % S, bi = u / nrb % nblk;
        int64_t m0 = (u % nrb) * rb, m1 = m0 + rb < p.Mg ? m0 + rb : p.Mg;
        int64_t c0 = bi * cb, c1 = c0 + cb < p.Cg ? c0 + cb : p.Cg;
        int64_t n0 = p.N * s / S, n1 = p.N * (s + 1) / S;
        float *dwg = dw + s * p.M * p.Kc + (g * p.Mg + m0) * p.Kc + c0 * p.KK;
        float *dbs = db ? db + s * p.M : NULL;
        /* dB rows of this unit, summed while dY is in cache */
        int64_t b0 = db ? g * p.Mg + m0 + (m1 - m0) * bi / nblk : 0;
        int64_t b1 = db ? g * p.Mg + m0 + (m1 - m0) * (bi + 1) / nblk : 0;

        for (int64_t m = m0; m < m1; m++)
            memset(dwg + (m - m0) * p.Kc, 0,
                   sizeof *dwg * (size_t)((c1 - c0) * p.KK));
        memset(acc, 0, sizeof *acc * (size_t)(8 * (b1 - b0)));
        for (int64_t nb = n0; ib && nb < n1; nb += ib) {
            int64_t ne = nb + ib < n1 ? nb + ib : n1, ld = (ne - nb) * p.P;

            for (int64_t n = nb; n < ne; n++) {
                nn_im2col(&p, x + n * p.C * p.HW, c0, c1, 0, p.P,
                          col + (n - nb) * p.P, ld);
                for (int64_t m = m0; m < m1; m++)
                    memcpy(dyb + (m - m0) * ld + (n - nb) * p.P,
                           dy + (n * p.M + m) * p.P,
                           sizeof *dyb * (size_t)p.P);
                for (int64_t m = b0; m < b1; m++)
                    opu_sum8_add(acc + 8 * (m - b0), dy + (n * p.M + m) * p.P,
                                 p.P);
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans,
                        (int)(m1 - m0), (int)((c1 - c0) * p.KK), (int)ld,
                        1.0f, dyb, (int)ld, col, (int)ld, 1.0f, dwg,
                        (int)p.Kc);
        }
        for (int64_t n = n0; !ib && n < n1 && p.P > 0; n++) {
            const float *xg = x + (n * p.C + g * p.Cg) * p.HW;
            const float *B = xg + c0 * p.HW;

            if (!p.direct) {
                nn_im2col(&p, xg, c0, c1, 0, p.P, col, p.P);
                B = col;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans,
                        (int)(m1 - m0), (int)((c1 - c0) * p.KK), (int)p.P,
                        1.0f, dy + (n * p.M + g * p.Mg + m0) * p.P, (int)p.P,
                        B, (int)p.P, 1.0f, dwg, (int)p.Kc);
            for (int64_t m = b0; m < b1; m++)
                opu_sum8_add(acc + 8 * (m - b0), dy + (n * p.M + m) * p.P, p.P);
        }
        for (int64_t m = b0; m < b1; m++)
            dbs[m] = (float)opu_sum8_total(acc + 8 * (m - b0));
    }
    kc->host->free(acc);
    return POPC_OK;
}

static popc_status gw_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    conv_p p;
    popc_status st;

    if ((st = gw_params(ic->node_name, ic->inputs, ic->attrs, &p)) != POPC_OK)
        return st;
    c->flops = 2.0 * (double)p.N * (double)p.M * (double)p.P * (double)p.Kc;
    c->bytes = 4.0 * ((double)popc_view_numel(&ic->inputs[0]) +
                      (double)popc_view_numel(&ic->inputs[1]) +
                      (double)(p.S > 0 ? p.S : 1) * (double)p.M *
                          (double)p.Kc);
    c->temp_bytes =
        p.direct || nn_dw_fits(&p) ? 0.0 : 4.0 * (double)p.Kc * (double)p.P;
    return POPC_OK;
}

static const popc_op_def conv_grad_ops[] = {
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "ConvGradInput",
        .since_version = 1,
        .min_inputs = 2,
        .max_inputs = 2,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = gi_infer,
        .forward = gi_forward,
        .cost = gi_cost,
        .doc = "Conv input gradient (dY, W; attr input_shape)",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "ConvGradWeight",
        .since_version = 1,
        .min_inputs = 2,
        .max_inputs = 2,
        .min_outputs = 1,
        .max_outputs = 2,
        .flags = POPC_OP_SPLIT,
        .infer = gw_infer,
        .forward = gw_forward,
        .cost = gw_cost,
        .doc = "Conv weight and bias gradients (X, dY; attrs kernel_shape, "
               "image_chunks: S partial sums [S, ...])",
    },
};

popc_status nn_register_conv_grad(const popc_host *h, popc_registrar *r)
{
    return opu_register_ops(h, r, conv_grad_ops,
                            (int)(sizeof conv_grad_ops / sizeof conv_grad_ops[0]));
}
