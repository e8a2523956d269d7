/* conv.c - ai.onnx Conv (1-D and 2-D, groups, dilations, optional bias)
** and its gradient builder, and what Conv and its gradient ops
** (conv_grad.c) share: the geometry, im2col/col2im and the Winograd
** driver.
**
** Paths: Conv's own forward, the reference, is im2col + OpenBLAS sgemm,
** each (image, group) product cut into fixed column tiles (output
** positions), so a part builds the im2col columns of its own tiles only
** and writes disjoint output. The other paths are kernels of the "nn"
** provider (conv_kernels.c, docs/kernels.md), chosen per node at compile
** and run through nn_conv2d_forward: depthwise convolutions (one channel
** in and out per group) by direct kernels (depthwise.c); 3x3, stride-1,
** undilated windows with enough channels and tiles by Winograd F(2x2,
** 3x3) (winograd.c); small planes of a batch side by side
** (conv_batched.c); few images with many channels by row tiles. Each path
** and its tiles depend on the shape only, so split and whole runs make
** the same calls and agree bitwise.
*/
#include "config.h"

/* GCC's -O2 vectorizes only loops that need no runtime alias check; the
** copy and add loops of im2col/col2im need the full cost model. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <cblas.h>
#include <string.h>

#include "ops/nn/conv_priv.h"
#include "ops/nn/half_partials.h"
#include "ops/nn/nn_priv.h"
#include "ops/nn/winograd4.h"
#include "ops/util/oputil.h"

/* Largest set of ConvGradWeight partial sums the grad builder makes. */
#define CHUNK_BYTES (4 << 20)

/* Geometry from X's dims, W's dims and the attributes. */
popc_status nn_conv_geom(const char *op, const char *node,
                         const popc_attrs *attrs, const int64_t *xd, int xr,
                         const int64_t *wd, int wr, conv_p *p)
{
    char sx[OPU_DIMS_LEN], sw[OPU_DIMS_LEN];
    int64_t group = popc_attr_int(attrs, "group", 1);
    nn_window *w = &p->w;
    popc_status st;

    memset(p, 0, sizeof *p);
    if (xr != 3 && xr != 4)
        return opu_error(POPC_EUNSUPPORTED, op, node, "input X %s must be "
                         "[N, C, W] or [N, C, H, W]", opu_dims_n(xd, xr, sx));
    if (wr != xr)
        return opu_error(POPC_EINVAL, op, node, "weight W %s must have the "
                         "rank of input X %s ([M, C/group, kernel...])",
                         opu_dims_n(wd, wr, sw), opu_dims_n(xd, xr, sx));
    if (group < 1)
        return opu_error(POPC_EINVAL, op, node, "group is %lld; it must be "
                         "at least 1", (long long)group);
    p->N = xd[0];
    p->C = xd[1];
    p->M = wd[0];
    p->G = group;
    p->Cg = wd[1];
    if (p->Cg * group != p->C)
        return opu_error(POPC_EINVAL, op, node, "input X %s has %lld "
                         "channels but weight W %s with group %lld expects "
                         "%lld (W's dim 1 times group); make W's dim 1 equal "
                         "to X's channels / group", opu_dims_n(xd, xr, sx),
                         (long long)p->C, opu_dims_n(wd, wr, sw),
                         (long long)group, (long long)(p->Cg * group));
    if (p->M % group != 0)
        return opu_error(POPC_EINVAL, op, node, "weight W %s has %lld output "
                         "channels, not a multiple of group %lld",
                         opu_dims_n(wd, wr, sw), (long long)p->M,
                         (long long)group);
    p->Mg = p->M / group;
    if ((st = nn_window_parse(op, node, attrs, xr - 2, xd + 2, wd + 2, 0, 0,
                              w)) != POPC_OK)
        return st;
    p->HW = w->H * w->W;
    p->P = w->OH * w->OW;
    p->KK = w->kh * w->kw;
    p->Kc = p->Cg * p->KK;
    p->direct = p->KK == 1 && w->sh == 1 && w->sw == 1 && w->pt == 0 &&
                w->pl == 0 && w->pb == 0 && w->pr == 0;
    if (p->Kc > 0x7fffffff || p->P > 0x7fffffff || p->Mg > 0x7fffffff)
        return opu_error(POPC_EUNSUPPORTED, op, node, "X %s with W %s is too "
                         "large for BLAS", opu_dims_n(xd, xr, sx),
                         opu_dims_n(wd, wr, sw));
    return POPC_OK;
}

void nn_conv_out_dims(const conv_p *p, int64_t *d, int *rank)
{
    d[0] = p->N;
    d[1] = p->M;
    if (p->w.sp == 2) {
        d[2] = p->w.OH;
        d[3] = p->w.OW;
        *rank = 4;
    } else {
        d[2] = p->w.OW;
        *rank = 3;
    }
}

void nn_valid_span(int64_t off, int64_t s, int64_t n, int64_t n_out,
                       int64_t *lo, int64_t *hi)
{
    int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t h = n - off <= 0 ? 0 : (n - off + s - 1) / s;

    if (h > n_out)
        h = n_out;
    if (l > h)
        l = h;
    *lo = l;
    *hi = h;
}

/* im2col row of tap (ki, kj) of one channel plane xc when the output
** row is as wide as the input and both strides are 1 (e.g. 3x3, pad 1):
** output position q then reads xc[q + shift], so the valid rows are one
** contiguous copy and only the border columns need zeros. */
static void im2col_shift(const conv_p *p, const float *xc, int64_t ki,
                         int64_t kj, int64_t p0, int64_t p1, float *row)
{
    const nn_window *w = &p->w;
    int64_t vs = ki * w->dh - w->pt, hs = kj * w->dw - w->pl;
    int64_t shift = vs * w->W + hs, OW = w->OW;
    int64_t r0 = vs < 0 ? -vs : 0, r1 = w->H - vs < w->OH ? w->H - vs : w->OH;
    int64_t c0 = hs < 0 ? -hs : 0, c1 = w->W - hs < OW ? w->W - hs : OW;
    int64_t qa, qb, sa, sb;

    if (r1 < r0)
        r1 = r0;
    if (c1 < c0)
        c1 = c0;
    qa = r0 * OW < p0 ? p0 : r0 * OW > p1 ? p1 : r0 * OW;
    qb = r1 * OW > p1 ? p1 : r1 * OW < qa ? qa : r1 * OW;
    /* sources outside the plane are border columns, zeroed below */
    sa = qa + shift < 0 ? -shift : qa;
    sb = qb + shift > p->HW ? p->HW - shift : qb;
    memset(row, 0, sizeof *row * (size_t)(qa - p0));
    if (sb > sa)
        memcpy(row + (sa - p0), xc + sa + shift,
               sizeof *row * (size_t)(sb - sa));
    memset(row + (qb - p0), 0, sizeof *row * (size_t)(p1 - qb));
    if (c0 == 0 && c1 == OW)
        return;
    for (int64_t oh = qa / OW; oh * OW < qb; oh++) {
        int64_t b = oh * OW;

        for (int64_t o = 0; o < c0; o++)
            if (b + o >= qa && b + o < qb)
                row[b + o - p0] = 0.0f;
        for (int64_t o = c1; o < OW; o++)
            if (b + o >= qa && b + o < qb)
                row[b + o - p0] = 0.0f;
    }
}

/* Largest taps x positions whose source offsets im2col_table lists. */
#define TABLE_MAX 1024

/* im2col of small planes through a table of each (tap, position)'s
** source offset in the channel plane (-1: padding): the shifted and
** strided paths below spend more on their per-row set-up than on the few
** values of a 2x2 or 4x4 plane's rows. */
static void im2col_table(const conv_p *p, const float *x, int64_t c0,
                         int64_t c1, int64_t p0, int64_t p1, float *col,
                         int64_t ld)
{
    const nn_window *w = &p->w;
    int64_t n = p1 - p0;
    int32_t tab[TABLE_MAX];

    for (int64_t ki = 0; ki < w->kh; ki++)
        for (int64_t kj = 0; kj < w->kw; kj++)
            for (int64_t q = p0; q < p1; q++) {
                int64_t ih = q / w->OW * w->sh - w->pt + ki * w->dh;
                int64_t iw = q % w->OW * w->sw - w->pl + kj * w->dw;

                tab[(ki * w->kw + kj) * n + q - p0] =
                    ih >= 0 && ih < w->H && iw >= 0 && iw < w->W
                        ? (int32_t)(ih * w->W + iw)
                        : -1;
            }
    for (int64_t c = c0; c < c1; c++) {
        const float *xc = x + c * p->HW;

        for (int64_t k = 0; k < p->KK; k++) {
            const int32_t *t = tab + k * n;
            float *row = col + ((c - c0) * p->KK + k) * ld;

            for (int64_t q = 0; q < n; q++)
                row[q] = t[q] >= 0 ? xc[t[q]] : 0.0f;
        }
    }
}

/* im2col of channels [c0, c1) of one group's input x ([Cg, H, W]) for
** output positions [p0, p1): col is [(c1-c0)*kh*kw, p1-p0]. */
void nn_im2col(const conv_p *p, const float *x, int64_t c0, int64_t c1,
               int64_t p0, int64_t p1, float *col, int64_t ld)
{
    const nn_window *w = &p->w;

    if ((p1 - p0) * p->KK <= TABLE_MAX && p->HW < 0x7fffffff) {
        im2col_table(p, x, c0, c1, p0, p1, col, ld);
        return;
    }

    if (w->sh == 1 && w->sw == 1 && w->OW == w->W) {
        for (int64_t c = c0; c < c1; c++)
            for (int64_t ki = 0; ki < w->kh; ki++)
                for (int64_t kj = 0; kj < w->kw; kj++)
                    im2col_shift(p, x + c * p->HW, ki, kj, p0, p1,
                                 col + (((c - c0) * w->kh + ki) * w->kw + kj) *
                                           ld);
        return;
    }
    for (int64_t c = c0; c < c1; c++) {
        const float *xc = x + c * p->HW;

        for (int64_t ki = 0; ki < w->kh; ki++)
            for (int64_t kj = 0; kj < w->kw; kj++) {
                float *row = col + (((c - c0) * w->kh + ki) * w->kw + kj) * ld;
                int64_t lo, hi, off = kj * w->dw - w->pl;

                nn_valid_span(off, w->sw, w->W, w->OW, &lo, &hi);
                for (int64_t q = p0; q < p1;) {
                    int64_t oh = q / w->OW, ow0 = q % w->OW;
                    int64_t ow1 = w->OW - ow0 < p1 - q ? w->OW : ow0 + p1 - q;
                    int64_t ih = oh * w->sh - w->pt + ki * w->dh;
                    int64_t base = q - p0 - ow0; /* row[base + ow] */
                    int64_t a = lo > ow0 ? lo : ow0, b = hi < ow1 ? hi : ow1;

                    q += ow1 - ow0;
                    if (ih < 0 || ih >= w->H)
                        a = b = ow1;
                    if (a > ow1)
                        a = ow1;
                    if (b < a)
                        b = a;
                    for (int64_t o = ow0; o < a; o++)
                        row[base + o] = 0.0f;
                    if (b > a) {
                        const float *xr = xc + ih * w->W;

                        if (w->sw == 1)
                            memcpy(row + base + a, xr + a + off,
                                   sizeof *row * (size_t)(b - a));
                        else if (w->sw == 2) /* a constant: vectorizes */
                            for (int64_t o = a; o < b; o++)
                                row[base + o] = xr[o * 2 + off];
                        else
                            for (int64_t o = a; o < b; o++)
                                row[base + o] = xr[o * w->sw + off];
                    }
                    for (int64_t o = b; o < ow1; o++)
                        row[base + o] = 0.0f;
                }
            }
    }
}

/* col2im_add for one tap row when im2col_shift applies: the row's
** border columns are zeroed (row is scratch) so that the valid rows add
** as one contiguous run. dx holds sums that started at +0 and so is never
** -0: adding +0 for a skipped tap leaves every element's bits unchanged,
** and the taps still add in the same order. */
static void col2im_shift(const conv_p *p, float *row, int64_t ki, int64_t kj,
                         float *xc)
{
    const nn_window *w = &p->w;
    int64_t vs = ki * w->dh - w->pt, hs = kj * w->dw - w->pl;
    int64_t shift = vs * w->W + hs, OW = w->OW;
    int64_t r0 = vs < 0 ? -vs : 0, r1 = w->H - vs < w->OH ? w->H - vs : w->OH;
    int64_t c0 = hs < 0 ? -hs : 0, c1 = w->W - hs < OW ? w->W - hs : OW;
    int64_t sa, sb;

    if (r1 <= r0)
        return;
    if (c1 < c0)
        c1 = c0;
    for (int64_t oh = r0; oh < r1 && (c0 > 0 || c1 < OW); oh++) {
        for (int64_t o = 0; o < c0; o++)
            row[oh * OW + o] = 0.0f;
        for (int64_t o = c1; o < OW; o++)
            row[oh * OW + o] = 0.0f;
    }
    sa = r0 * OW + shift < 0 ? -shift : r0 * OW;
    sb = r1 * OW + shift > p->HW ? p->HW - shift : r1 * OW;
    for (int64_t q = sa; q < sb; q++)
        xc[q + shift] += row[q];
}

/* Adds col ([(c1-c0)*kh*kw, P]) back into channels [c0, c1) of one
** group's dx ([Cg, H, W]); col is scratch and may be changed. */
void nn_col2im_add(const conv_p *p, float *col, int64_t c0, int64_t c1,
                   float *dx, int64_t ld)
{
    const nn_window *w = &p->w;

    if (w->sh == 1 && w->sw == 1 && w->OW == w->W) {
        for (int64_t c = c0; c < c1; c++)
            for (int64_t ki = 0; ki < w->kh; ki++)
                for (int64_t kj = 0; kj < w->kw; kj++)
                    col2im_shift(p,
                                 col + (((c - c0) * w->kh + ki) * w->kw + kj) *
                                           ld,
                                 ki, kj, dx + c * p->HW);
        return;
    }
    for (int64_t c = c0; c < c1; c++) {
        float *xc = dx + c * p->HW;

        for (int64_t ki = 0; ki < w->kh; ki++)
            for (int64_t kj = 0; kj < w->kw; kj++) {
                const float *row =
                    col + (((c - c0) * w->kh + ki) * w->kw + kj) * ld;
                int64_t lo, hi, off = kj * w->dw - w->pl;

                nn_valid_span(off, w->sw, w->W, w->OW, &lo, &hi);
                for (int64_t oh = 0; oh < w->OH; oh++) {
                    int64_t ih = oh * w->sh - w->pt + ki * w->dh;
                    const float *src = row + oh * w->OW;
                    float *xr;

                    if (ih < 0 || ih >= w->H)
                        continue;
                    xr = xc + ih * w->W;
                    if (w->sw == 1)
                        for (int64_t o = lo; o < hi; o++)
                            xr[o + off] += src[o];
                    else
                        for (int64_t o = lo; o < hi; o++)
                            xr[o * w->sw + off] += src[o];
                }
            }
    }
}

/* Column tiles of the output plane for Conv's forward. */
static void conv_tiles(const conv_p *p, nn_tiles *t)
{
    nn_tiles_plan(p->N * p->G, p->Mg, p->P, p->Kc, NN_CONV_UNITS, 64,
                  NN_TILE_COLS, t);
}

int64_t nn_chan_block(int64_t Cg, int64_t outer)
{
    int64_t want;

    if (outer >= NN_CONV_UNITS || Cg <= 1)
        return Cg > 0 ? Cg : 1;
    want = (NN_CONV_UNITS + outer - 1) / outer;
    return (Cg + want - 1) / want;
}

void *nn_conv_scratch(const popc_kernel_ctx *kc, int64_t floats,
                      popc_status *st)
{
    void *buf;

    *st = POPC_OK;
    if (floats <= 0)
        return NULL;
    if (!(buf = kc->host->alloc((size_t)floats * sizeof(float))))
        *st = kc->host->set_error(POPC_ENOMEM,
                                  "'%s': out of memory for a %lld-float "
                                  "scratch buffer",
                                  kc->node_name, (long long)floats);
    return buf;
}

/* Winograd (winograd.c) takes 3x3, stride-1, undilated 2-D windows with
** at least NN_WINO_MIN_CHANNELS channels in and out (its GEMMs have those
** as dimensions) and NN_WINO_MIN_TILES output tiles per image, when the
** batch gives NN_CONV_UNITS (image, group) units, or, for an inference
** model's forward convolution, at any batch: the units are then parts of
** an image (tile blocks x output-channel chunks), so that both cores work
** at batch 1 (training keeps its choice, and its numerics, by batch).
** Each part then transforms the weights for itself, 16 x M x C floats, so
** a split image needs NN_WINO_SPLIT_MIN_TILES tiles to pay for it.
** The choice depends on the shape and the model's kind only.
** ConvGradInput runs it as the forward convolution of dY with turned
** kernels, whose padding 2 - pads must not be negative. */
int nn_wino_fits(const conv_p *p, int64_t cin, int64_t cout, int grad)
{
    const nn_window *w = &p->w;

    return w->sp == 2 && w->kh == 3 && w->kw == 3 && w->sh == 1 &&
           w->sw == 1 && w->dh == 1 && w->dw == 1 &&
           cin >= NN_WINO_MIN_CHANNELS && cout >= NN_WINO_MIN_CHANNELS &&
           w->OH > 0 && w->OW > 0 &&
           ((w->OH + 1) / 2) * ((w->OW + 1) / 2) >= NN_WINO_MIN_TILES &&
           (p->N * p->G >= NN_CONV_UNITS ||
            (p->inference && !grad &&
             ((w->OH + 1) / 2) * ((w->OW + 1) / 2) >=
                 NN_WINO_SPLIT_MIN_TILES)) &&
           (!grad || (w->pt <= 2 && w->pl <= 2));
}

/* Output-channel chunks of an image split for Winograd: enough with the
** tile blocks for NN_CONV_UNITS units, each of at least 16 channels. */
static int64_t wino_chunk(const conv_p *p, const nn_wino *g)
{
    int64_t units = p->N * p->G * nn_wino_blocks(g);
    int64_t want = (NN_CONV_UNITS + units - 1) / units;
    int64_t chunk = (g->M + want - 1) / want;

    chunk = (chunk + 15) / 16 * 16;
    return chunk < g->M ? chunk : g->M;
}

/* Units (group, image) of a Winograd run: x [N, G * xc, xp] to
** y [N, G * yc, yp]; the group's weights are transformed once per part.
** Below NN_CONV_UNITS such units (an inference model), units are (group,
** image, tile block, output-channel chunk). */
popc_status nn_run_wino(const popc_kernel_ctx *kc, const conv_p *p,
                        const nn_wino *g, int transposed, const float *x,
                        int64_t xc, int64_t xp, const float *wt,
                        const float *bias, float *y, int64_t yc, int64_t yp)
{
    int64_t lo, hi, cur = -1, nb = 1, chunk = g->M, nch = 1;
    int split = p->N * p->G < NN_CONV_UNITS;
    float *s;
    popc_status st;

    if (split) {
        nb = nn_wino_blocks(g);
        chunk = wino_chunk(p, g);
        nch = (g->M + chunk - 1) / chunk;
    }
    opu_range(p->N * p->G * nb * nch, kc->part, kc->n_parts, &lo, &hi);
    if (hi <= lo)
        return POPC_OK;
    if (!(s = nn_conv_scratch(kc, nn_wino_scratch(g), &st)) && st)
        return st;
    for (int64_t u = lo; u < hi; u++) {
        int64_t ng = u / (nb * nch), rest = u % (nb * nch);
        int64_t gr = ng / p->N, n = ng % p->N;
        const float *xi = x + (n * p->G + gr) * xc * xp;
        float *yi = y + (n * p->G + gr) * yc * yp;
        const float *bi = bias ? bias + gr * yc : NULL;

        if (gr != cur) {
            nn_wino_weights(g, wt + gr * p->Mg * p->Kc, transposed, s);
            cur = gr;
        }
        if (split) {
            int64_t b = rest / nch, m0 = rest % nch * chunk;
            int64_t m1 = m0 + chunk < g->M ? m0 + chunk : g->M;

            nn_wino_image_part(g, xi, bi, yi, s, b, b + 1, m0, m1, p->epi);
        } else {
            nn_wino_image(g, xi, bi, yi, s);
            nn_epilogue_apply(p->epi, yi, yc * yp);
        }
    }
    kc->host->free(s);
    return POPC_OK;
}

/* ---- Conv ---------------------------------------------------------------- */

static popc_status conv_params(const char *node, const popc_view *in, int n_in,
                               const popc_attrs *attrs, conv_p *p)
{
    popc_status st;

    if ((st = nn_conv_geom("Conv", node, attrs, in[0].dims, in[0].rank,
                           in[1].dims, in[1].rank, p)) != POPC_OK)
        return st;
    if (opu_present_at(in, n_in, 2) &&
        (in[2].rank != 1 || in[2].dims[0] != p->M)) {
        char sb[OPU_DIMS_LEN], sw[OPU_DIMS_LEN];

        return opu_error(POPC_EINVAL, "Conv", node, "bias B %s must be "
                         "[%lld], one value per output channel of W %s",
                         opu_dims(&in[2], sb), (long long)p->M,
                         opu_dims(&in[1], sw));
    }
    return POPC_OK;
}

static popc_status conv_infer(popc_infer_ctx *ic)
{
    conv_p p;
    int64_t d[4];
    int r;
    popc_status st;

    if (ic->inputs[0].rank == 5)
        return nn_nd_conv_infer(ic);
    if ((st = opu_want_f32(ic, "Conv", 0, "input X")) != POPC_OK ||
        (st = opu_want_f32(ic, "Conv", 1, "weight W")) != POPC_OK)
        return st;
    if (opu_present_at(ic->inputs, ic->n_inputs, 2) &&
        (st = opu_want_f32(ic, "Conv", 2, "bias B")) != POPC_OK)
        return st;
    if ((st = conv_params(ic->node_name, ic->inputs, ic->n_inputs, ic->attrs,
                          &p)) != POPC_OK)
        return st;
    nn_conv_out_dims(&p, d, &r);
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d, r);
    return POPC_OK;
}

static popc_status conv_forward_2d(const popc_kernel_ctx *kc, int path);

static popc_status conv_forward(const popc_kernel_ctx *kc)
{
    if (kc->inputs[0].rank == 5 && nn_half_partials(kc))
        return kc->host->set_error(POPC_EUNSUPPORTED,
                                   "Conv '%s': float16 partials "
                                   "(Precision.setPartialsType(torch.half)) "
                                   "cover 1-D and 2-D convolutions; this one "
                                   "is 3-D: keep float partials",
                                   kc->node_name);
    if (kc->inputs[0].rank == 5)
        return nn_nd_conv_forward(kc);
    return conv_forward_2d(kc, NN_PATH_REF);
}

popc_status nn_conv_run(const popc_kernel_ctx *kc, int path)
{
    return conv_forward_2d(kc, path);
}

int nn_conv_node(const popc_infer_ctx *ic, conv_p *p)
{
    const popc_view *in = ic->inputs;

    if (ic->n_inputs < 2 || (in[0].rank != 3 && in[0].rank != 4) ||
        in[0].dtype != POPC_DTYPE_F32 || nn_is_float16_node(ic->attrs) ||
        conv_params(ic->node_name, in, ic->n_inputs, ic->attrs, p) !=
            POPC_OK)
        return 0;
    p->inference = !ic->training;
    return 1;
}

static popc_status conv_forward_2d(const popc_kernel_ctx *kc, int path)
{
    const float *bias = NULL;
    conv_p p;
    popc_status st;

    if ((st = conv_params(kc->node_name, kc->inputs, kc->n_inputs, kc->attrs,
                          &p)) != POPC_OK)
        return st;
    if (opu_present_at(kc->inputs, kc->n_inputs, 2))
        bias = kc->inputs[2].data;
    p.inference = !kc->training;
    p.path = path;
    if (nn_half_partials(kc))
        return nn_conv_half_forward(kc, &p, kc->inputs[0].data,
                                    kc->inputs[1].data, bias,
                                    kc->outputs[0].data);
    return nn_conv2d_forward(kc, &p, kc->inputs[0].data, kc->inputs[1].data,
                             bias, kc->outputs[0].data);
}

/* Few images and small output planes with many channels (ResNet's last
** stages at batch 1): column tiles of a plane would each repack the whole
** weight matrix, megabytes, for a few dozen columns. Row tiles (blocks of
** output channels) instead take the plane's whole im2col, which is built
** once per part and (image, group), and pack each weight row once. */
#define ROWS_IM2COL_BYTES ((double)(4 << 20))

int nn_rows_fits(const conv_p *p)
{
    return p->N * p->G < NN_CONV_UNITS && p->P < p->Mg && p->Kc > 0 &&
           4.0 * (double)p->Kc * (double)p->P <= ROWS_IM2COL_BYTES;
}

static popc_status conv_rows(const popc_kernel_ctx *kc, const conv_p *p,
                             const float *x, const float *wt,
                             const float *bias, float *y)
{
    nn_tiles t;
    int64_t lo, hi, cur = -1;
    float *col = NULL;
    popc_status st;

    nn_tiles_plan(p->N * p->G, p->Mg, p->P, p->Kc, NN_CONV_UNITS, 16,
                  NN_TILE_ROWS, &t);
    opu_range(p->N * p->G * t.n, kc->part, kc->n_parts, &lo, &hi);
    if (hi <= lo)
        return POPC_OK;
    if (!p->direct && !(col = nn_conv_scratch(kc, p->Kc * p->P, &st)) && st)
        return st;
    for (int64_t u = lo; u < hi; u++) {
        int64_t ng = u / t.n, n = ng / p->G, g = ng % p->G;
        int64_t m0 = (u % t.n) * t.blk;
        int64_t m1 = m0 + t.blk < p->Mg ? m0 + t.blk : p->Mg;
        const float *xg = x + (n * p->C + g * p->Cg) * p->HW;
        float *yg = y + (n * p->M + g * p->Mg) * p->P;

        if (!p->direct && ng != cur) {
            nn_im2col(p, xg, 0, p->Cg, 0, p->P, col, p->P);
            cur = ng;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(m1 - m0),
                    (int)p->P, (int)p->Kc, 1.0f,
                    wt + (g * p->Mg + m0) * p->Kc, (int)p->Kc,
                    p->direct ? xg : col, (int)p->P, 0.0f, yg + m0 * p->P,
                    (int)p->P);
        for (int64_t m = m0; m < m1; m++) {
            float *r = yg + m * p->P;

            if (bias) {
                float bv = bias[g * p->Mg + m];

                for (int64_t q = 0; q < p->P; q++)
                    r[q] += bv;
            }
            nn_epilogue_apply(p->epi, r, p->P);
        }
    }
    kc->host->free(col);
    return POPC_OK;
}

/* The reference: each (image, group) product cut into column tiles
** (output positions), every tile building its own im2col columns. */
static popc_status conv_ref(const popc_kernel_ctx *kc, const conv_p *pp,
                            const float *x, const float *wt,
                            const float *bias, float *y)
{
    conv_p p = *pp;
    float *col = NULL;
    nn_tiles t;
    int64_t lo, hi;
    popc_status st;

    conv_tiles(&p, &t);
    opu_range(p.N * p.G * t.n, kc->part, kc->n_parts, &lo, &hi);
    if (hi <= lo)
        return POPC_OK;
    if (!p.direct && !(col = nn_conv_scratch(kc, p.Kc * t.blk, &st)) && st)
        return st;
    for (int64_t u = lo; u < hi; u++) {
        int64_t ng = u / t.n, n = ng / p.G, g = ng % p.G;
        int64_t p0 = (u % t.n) * t.blk;
        int64_t p1 = p0 + t.blk < p.P ? p0 + t.blk : p.P;
        const float *xg = x + (n * p.C + g * p.Cg) * p.HW;
        float *yg = y + (n * p.M + g * p.Mg) * p.P + p0;
        const float *B;
        int64_t ldb;

        if (p.direct) {
            B = xg + p0;
            ldb = p.P;
        } else {
            nn_im2col(&p, xg, 0, p.Cg, p0, p1, col, p1 - p0);
            B = col;
            ldb = p1 - p0;
        }
        if (p.Kc > 0)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)p.Mg,
                        (int)(p1 - p0), (int)p.Kc, 1.0f, wt + g * p.Mg * p.Kc,
                        (int)p.Kc, B, (int)ldb, 0.0f, yg, (int)p.P);
        else
            for (int64_t m = 0; m < p.Mg; m++)
                memset(yg + m * p.P, 0, sizeof *yg * (size_t)(p1 - p0));
        for (int64_t m = 0; m < p.Mg; m++) {
            float *r = yg + m * p.P;

            if (bias) {
                float bv = bias[g * p.Mg + m];

                for (int64_t q = 0; q < p1 - p0; q++)
                    r[q] += bv;
            }
            nn_epilogue_apply(p.epi, r, p1 - p0);
        }
    }
    kc->host->free(col);
    return POPC_OK;
}

static const char *const path_names[NN_PATHS] = {
    "reference",      "depthwise",   "winograd_f2",
    "batched_planes", "im2col_rows", "winograd_f4"};

popc_status nn_conv2d_forward(const popc_kernel_ctx *kc, const conv_p *p,
                              const float *x, const float *wt,
                              const float *bias, float *y)
{
    switch (p->path) {
    case NN_PATH_REF:
        return conv_ref(kc, p, x, wt, bias, y);
    case NN_PATH_DW:
        if (nn_dw_fits(p))
            return nn_dw_forward(kc, p, x, wt, bias, y);
        break;
    case NN_PATH_WINO:
        if (nn_wino_fits(p, p->Cg, p->Mg, 0)) {
            nn_wino g;

            nn_wino_plan(p->Cg, p->Mg, p->w.H, p->w.W, p->w.OH, p->w.OW,
                         p->w.pt, p->w.pl, &g);
            return nn_run_wino(kc, p, &g, 0, x, p->Cg, p->HW, wt, bias, y,
                               p->Mg, p->P);
        }
        break;
    case NN_PATH_BATCHED:
        if (nn_cb_fits(p))
            return nn_cb_forward(kc, p, x, wt, bias, y);
        break;
    case NN_PATH_ROWS:
        if (nn_rows_fits(p))
            return conv_rows(kc, p, x, wt, bias, y);
        break;
    case NN_PATH_WINO4:
        if (nn_wino4_fits(p, p->Cg, p->Mg, NN_WINO4_FORWARD))
            return nn_wino4_forward(kc, p, x, wt, bias, y);
        break;
    }
    return kc->host->set_error(POPC_EINVAL, "Conv '%s': kernel nn:%s does "
                               "not take this convolution; compile the "
                               "model again (kernels are chosen at "
                               "compile)", kc->node_name,
                               p->path > 0 && p->path < NN_PATHS
                                   ? path_names[p->path]
                                   : "?");
}

static popc_status conv_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    conv_p p;
    popc_status st;

    if (ic->inputs[0].rank == 5)
        return nn_nd_cost(ic, c);
    if ((st = conv_params(ic->node_name, ic->inputs, ic->n_inputs, ic->attrs,
                          &p)) != POPC_OK)
        return st;
    c->flops = 2.0 * (double)p.N * (double)p.M * (double)p.P * (double)p.Kc +
               (opu_present_at(ic->inputs, ic->n_inputs, 2)
                    ? (double)p.N * (double)p.M * (double)p.P
                    : 0.0);
    c->bytes = 4.0 * ((double)popc_view_numel(&ic->inputs[0]) +
                      (double)popc_view_numel(&ic->inputs[1]) + (double)p.M +
                      (double)p.N * (double)p.M * (double)p.P);
    c->temp_bytes =
        p.direct || nn_dw_fits(&p) ? 0.0 : 4.0 * (double)p.Kc * (double)p.P;
    return POPC_OK;
}

/* Image chunks for the weight gradient of a batch: NN_CONV_UNITS partial
** sums (each a GEMM over a whole group's dW per image, every operand
** packed once) when the batch has that many images and the partials stay
** small; 0: one ConvGradWeight sum, cut into channel and row blocks. */
static int64_t grad_chunks(const conv_p *p)
{
    if (p->N < NN_CONV_UNITS ||
        (double)NN_CONV_UNITS * (double)p->M * (double)p->Kc * 4.0 >
            (double)CHUNK_BYTES)
        return 0;
    return NN_CONV_UNITS;
}

/* The MultiConv settings (popc/attrs.h) a convolution's backward
** convolutions inherit: out[0..return). */
static const char *const inherited[] = {
    POPC_ATTR_MULTICONV, POPC_ATTR_MULTICONV_PLAN, POPC_ATTR_MULTICONV_BACKOFF,
    POPC_ATTR_MULTICONV_RESERVED, POPC_ATTR_CONV_DITHERING,
    POPC_ATTR_PARTIALS_TYPE};
#define N_INHERITED ((int)(sizeof inherited / sizeof inherited[0]))

static int inherit(const popc_attrs *attrs, popc_attr *out)
{
    int n = 0;

    for (int i = 0; i < N_INHERITED; i++) {
        const popc_attr *a = popc_attrs_find(attrs, inherited[i]);

        if (a)
            out[n++] = *a;
    }
    return n;
}

/* A convolution's own partials type must be one an IPU has for it: half
** partials need float16 operands (model.half()). */
static popc_status conv_prepare(const popc_infer_ctx *ic, void **state)
{
    const char *own = popc_attr_string(ic->attrs, POPC_ATTR_PARTIALS_TYPE,
                                       NULL);

    *state = NULL;
    if (!own)
        return POPC_OK;
    if (strcmp(own, "float") != 0 && strcmp(own, "half") != 0)
        return opu_error(POPC_EINVAL, "Conv", ic->node_name, "partials type "
                         "'%s' is unknown; use float or half", own);
    if (strcmp(own, "half") == 0 && !nn_is_float16_node(ic->attrs))
        return opu_error(POPC_EINVAL, "Conv", ic->node_name, "half partials "
                         "need a float16 convolution; convert the model "
                         "with popc_graph_to_half or use float partials");
    return POPC_OK;
}

static void conv_release(void *state)
{
    (void)state;
}

static popc_status conv_grad(popc_grad_ctx *gc)
{
    const popc_view *xi = &gc->input_info[0], *wi = &gc->input_info[1];
    int dy = gc->output_grads[0];
    int has_bias = gc->n_inputs > 2 && gc->inputs[2] >= 0;
    int half = nn_is_float16_node(gc->attrs);
    nn_window_attrs wa;
    popc_attr a[9 + N_INHERITED];
    int na, in[2], out[2];
    int64_t S;
    conv_p p;
    popc_status st;

    if (dy < 0)
        return POPC_OK;
    if ((st = nn_conv_geom("Conv", gc->node_name, gc->attrs, xi->dims,
                           xi->rank, wi->dims, wi->rank, &p)) != POPC_OK)
        return st;
    na = nn_window_attrs_make(&p.w, 0, &wa);
    memcpy(a, wa.a, sizeof wa.a[0] * (size_t)na);
    a[na++] = popc_attr_make_int("group", p.G);
    na += inherit(gc->attrs, a + na);
    a[na] = popc_attr_make_ints("input_shape", xi->dims, xi->rank);
    in[0] = dy;
    in[1] = gc->inputs[1];
    if ((st = opu_grad_node(gc, "popc", "ConvGradInput", in, 2, a, na + 1,
                         &gc->input_grads[0])) != POPC_OK)
        return st;
    in[0] = gc->inputs[0];
    in[1] = dy;
    /* float16 partials sum dW over the whole batch at once */
    S = half ? 0 : grad_chunks(&p);
    if (S > 0)
        a[na++] = popc_attr_make_int("image_chunks", S);
    if ((st = gc->host->grad_add_node(gc, "popc", "ConvGradWeight", in, 2, out,
                                      has_bias ? 2 : 1, a, na)) != POPC_OK)
        return st;
    if (S == 0) {
        gc->input_grads[1] = out[0];
        if (has_bias)
            gc->input_grads[2] = out[1];
        return POPC_OK;
    }
    if ((st = opu_grad_sum_to_dims(gc, out[0], wi->dims, wi->rank,
                          &gc->input_grads[1])) != POPC_OK)
        return st;
    if (has_bias)
        return opu_grad_sum_to_dims(gc, out[1], &p.M, 1, &gc->input_grads[2]);
    return POPC_OK;
}

static const popc_op_def conv_ops[] = {
    {
        .size = sizeof(popc_op_def),
        .domain = "ai.onnx",
        .name = "Conv",
        .since_version = 11,
        .min_inputs = 2,
        .max_inputs = 3,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = conv_infer,
        .forward = conv_forward,
        .grad = conv_grad,
        .cost = conv_cost,
        .prepare = conv_prepare,
        .release = conv_release,
        .doc = "1-D/2-D convolution (groups, dilations, pads) on sgemm",
    },
};

popc_status nn_register_conv(const popc_host *h, popc_registrar *r)
{
    return opu_register_ops(h, r, conv_ops,
                            (int)(sizeof conv_ops / sizeof conv_ops[0]));
}
