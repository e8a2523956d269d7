/* blocked_conv.c - popc::BlockedConv(X, W, [B], [Z]): popc::FusedConv on
** the blocked layout (blocked.h). Y = act(Conv(X, W) + B + Z) with X, Z
** and Y as [N, ceil(C/c), H, W, c]; Conv's attributes (kernel_shape,
** strides, pads, dilations, auto_pad, group), FusedConv's "activation" and
** "activation_params", "fused" (the names of the nodes it replaced), and
** "channels" = [C, M], the real channels in and out. The graph optimizer
** blocks the weights once, at compile:
**   group 1:          W [Mb, Cb, kh, kw, c (in), c (out)]
**   depthwise (C == M == group):  W [Mb, kh, kw, c]
** zero in the lanes of padded channels, and B is [Mb * c]. Inference
** only (no gradient), as FusedConv.
*/
#include "config.h"

#include <string.h>

#include "ops/nn/blocked.h"
#include "ops/nn/conv_priv.h"
#include "ops/util/oputil.h"

typedef struct bconv {
    bk_geom g;
    conv_p p;                   /* the NCHW geometry, for cost() */
    nn_epilogue e;
    int64_t yd[5];
} bconv;

static popc_status bad(const char *node, const char *what,
                       const popc_view *v, const char *want)
{
    char s[OPU_DIMS_LEN];

    return opu_error(POPC_EINVAL, "BlockedConv", node, "%s %s must be %s",
                     what, opu_dims(v, s), want);
}

/* The blocked weight's dims for geometry p and block c: *rank, d. */
static int weight_dims(const conv_p *p, int dw, int64_t c, int64_t *d)
{
    int64_t Cb = bk_blocks(p->C, c), Mb = bk_blocks(p->M, c);

    if (dw) {
        d[0] = Mb, d[1] = p->w.kh, d[2] = p->w.kw, d[3] = c;
        return 4;
    }
    d[0] = Mb, d[1] = Cb, d[2] = p->w.kh, d[3] = p->w.kw, d[4] = c, d[5] = c;
    return 6;
}

static popc_status setup(const char *node, const popc_view *in, int n_in,
                         const popc_attrs *attrs, bconv *b)
{
    const popc_view *x = &in[0], *w = &in[1];
    int64_t ch[2], xd[4], wd[4], want[6], c;
    int64_t G = popc_attr_int(attrs, "group", 1);
    int dw, wr;
    popc_status st;

    memset(b, 0, sizeof *b);
    if ((st = nn_epilogue_parse("BlockedConv", node, attrs, &b->e)) !=
        POPC_OK)
        return st;
    if (popc_attr_ints(attrs, "channels", ch, 2) != 2 || ch[0] < 1 ||
        ch[1] < 1)
        return opu_error(POPC_EINVAL, "BlockedConv", node, "needs the ints "
                         "\"channels\" = [C, M], the real channels in and "
                         "out");
    if (x->rank != 5 || (x->dims[4] != 8 && x->dims[4] != 16))
        return bad(node, "input X", x, "[N, C/c, H, W, c] with c 8 or 16");
    c = x->dims[4];
    if (x->dims[1] != bk_blocks(ch[0], c))
        return bad(node, "input X", x, "blocks of the \"channels\" in");
    dw = G > 1;
    if (dw && (G != ch[0] || G != ch[1]))
        return opu_error(POPC_EUNSUPPORTED, "BlockedConv", node, "group "
                         "%lld: only 1 or depthwise (group = channels in = "
                         "channels out) are blocked", (long long)G);
    if (w->rank != (dw ? 4 : 6))
        return bad(node, "weight W", w, dw ? "[M/c, kh, kw, c]"
                                           : "[M/c, C/c, kh, kw, c, c]");
    xd[0] = x->dims[0], xd[1] = ch[0], xd[2] = x->dims[2], xd[3] = x->dims[3];
    wd[0] = ch[1], wd[1] = ch[0] / G;
    wd[2] = w->dims[dw ? 1 : 2], wd[3] = w->dims[dw ? 2 : 3];
    if ((st = nn_conv_geom("BlockedConv", node, attrs, xd, 4, wd, 4,
                           &b->p)) != POPC_OK)
        return st;
    wr = weight_dims(&b->p, dw, c, want);
    for (int i = 0; i < wr; i++)
        if (w->dims[i] != want[i])
            return bad(node, "weight W", w, "the blocked weight of "
                       "\"channels\" (popc's graph optimizer makes it)");
    b->g = (bk_geom){.c = c, .N = xd[0], .C = ch[0], .M = ch[1],
                     .Cb = x->dims[1], .Mb = bk_blocks(ch[1], c),
                     .H = b->p.w.H, .W = b->p.w.W, .OH = b->p.w.OH,
                     .OW = b->p.w.OW, .kh = b->p.w.kh, .kw = b->p.w.kw,
                     .sh = b->p.w.sh, .sw = b->p.w.sw, .dh = b->p.w.dh,
                     .dw = b->p.w.dw, .pt = b->p.w.pt, .pl = b->p.w.pl,
                     .depthwise = dw};
    if (b->p.direct) { /* one row of H*W pixels (blocked.h) */
        b->g.W = b->g.OW = b->g.H * b->g.W;
        b->g.H = b->g.OH = 1;
    }
    b->yd[0] = b->g.N, b->yd[1] = b->g.Mb, b->yd[2] = b->p.w.OH;
    b->yd[3] = b->p.w.OW, b->yd[4] = c;
    if (opu_present_at(in, n_in, 2) &&
        (in[2].rank != 1 || in[2].dims[0] != b->g.Mb * c))
        return bad(node, "bias B", &in[2], "[M/c * c], padded with zeros");
    if (opu_present_at(in, n_in, 3)) {
        int ok = in[3].rank == 5 && in[3].dtype == POPC_DTYPE_F32;

        for (int i = 0; ok && i < 5; i++)
            ok = in[3].dims[i] == b->yd[i];
        if (!ok)
            return bad(node, "residual Z", &in[3], "float32 of the output's "
                       "shape");
    }
    return POPC_OK;
}

static popc_status bconv_infer(popc_infer_ctx *ic)
{
    bconv b;
    popc_status st;

    for (int i = 0; i < 3; i++)
        if ((i < 2 || opu_present_at(ic->inputs, ic->n_inputs, i)) &&
            (st = opu_want_f32(ic, "BlockedConv", i, i == 0   ? "input X"
                                                      : i == 1 ? "weight W"
                                                               : "bias B")) !=
                POPC_OK)
            return st;
    if ((st = setup(ic->node_name, ic->inputs, ic->n_inputs, ic->attrs,
                    &b)) != POPC_OK)
        return st;
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, b.yd, 5);
    return POPC_OK;
}

static popc_status bconv_forward(const popc_kernel_ctx *kc)
{
    const bk_kernels *k;
    bconv b;
    int64_t lo, hi;
    popc_status st;

    if ((st = setup(kc->node_name, kc->inputs, kc->n_inputs, kc->attrs,
                    &b)) != POPC_OK)
        return st;
    b.e.y0 = kc->outputs[0].data;
    b.e.z = opu_present_at(kc->inputs, kc->n_inputs, 3) ? kc->inputs[3].data
                                                      : NULL;
    k = bk_kernels_for(b.g.c);
    opu_range(bk_conv_units(&b.g, k), kc->part, kc->n_parts, &lo, &hi);
    if (k->conv(&b.g, kc->inputs[0].data, kc->inputs[1].data,
                opu_present_at(kc->inputs, kc->n_inputs, 2)
                    ? kc->inputs[2].data : NULL,
                kc->outputs[0].data,
                b.e.act != NN_ACT_NONE || b.e.z ? &b.e : NULL, lo, hi) != 0)
        return opu_error(POPC_ENOMEM, "BlockedConv", kc->node_name, "out of "
                         "memory for the padded input rows");
    return POPC_OK;
}

/* The NCHW convolution's flops (an IPU computes the real channels); the
** bytes count the padded lanes the blocked tensors hold. */
static popc_status bconv_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    bconv b;
    double out;
    popc_status st;

    if ((st = setup(ic->node_name, ic->inputs, ic->n_inputs, ic->attrs,
                    &b)) != POPC_OK)
        return st;
    b.e.z = opu_present_at(ic->inputs, ic->n_inputs, 3) ? (const float *)1
                                                      : NULL;
    out = (double)b.p.N * (double)b.p.M * (double)b.p.P;
    c->flops = 2.0 * out * (double)b.p.Kc + out * nn_epilogue_flops(&b.e) +
               (opu_present_at(ic->inputs, ic->n_inputs, 2) ? out : 0.0);
    c->bytes = 4.0 * ((double)popc_view_numel(&ic->inputs[0]) +
                      (double)popc_view_numel(&ic->inputs[1]) +
                      (double)(b.g.Mb * b.g.c) +
                      (double)(b.yd[0] * b.yd[1] * b.yd[2] * b.yd[3] *
                               b.yd[4]) * (b.e.z ? 2.0 : 1.0));
    c->temp_bytes = 0.0;
    return POPC_OK;
}

static const popc_op_def bconv_op = {
    .size = sizeof(popc_op_def),
    .domain = "popc",
    .name = "BlockedConv",
    .since_version = 1,
    .min_inputs = 2,
    .max_inputs = 4,
    .min_outputs = 1,
    .max_outputs = 1,
    .flags = POPC_OP_SPLIT,
    .infer = bconv_infer,
    .forward = bconv_forward,
    .cost = bconv_cost,
    .doc = "FusedConv on NCHWc blocks (group 1 or depthwise; made by the "
           "graph optimizer; inference)",
};

popc_status nn_register_blocked_conv(const popc_host *h, popc_registrar *r)
{
    return h->register_op(r, &bconv_op);
}
