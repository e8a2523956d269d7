/* fused.c - the ops the graph optimizer (opt/) fuses into, as ONNX
** Runtime's FusedConv and FusedMatMul:
**   popc::FusedConv(X, W, [B], [Z])       Y = act(Conv(X, W) + B + Z)
**   popc::FusedMatMul(A, W, [bias], [Z])  Y = act(alpha * A op(W) + bias
**                                                 + Z)
** with Conv's attributes, "activation" and "activation_params" (Clip's
** min and max, LeakyRelu's alpha), "trans_b" and "alpha" for FusedMatMul,
** and "fused" (the names of the nodes it replaced, for profiles). A's
** leading dimensions are rows; W is a 2-D weight, bias is [N] and Z has
** Y's shape. The residual and the activation are applied to each stretch
** of output right after the GEMM or the convolution path wrote it. Both
** are inference ops (no gradient): the optimizer fuses inference graphs
** only.
*/
#include "config.h"

#include <cblas.h>
#include <string.h>

#include "ops/nn/conv_priv.h"
#include "ops/nn/epilogue.h"
#include "ops/nn/half_partials.h"
#include "ops/nn/nn_priv.h"
#include "ops/util/oputil.h"

#define TILE_TARGET 8

/* Input i is present and has exactly the dims of want. */
static popc_status check_same(const char *op, const char *node,
                              const popc_view *in, int n_in, int i,
                              const char *what, const int64_t *want,
                              int rank)
{
    char sa[OPU_DIMS_LEN];
    int ok;

    if (!opu_present_at(in, n_in, i))
        return POPC_OK;
    ok = in[i].dtype == POPC_DTYPE_F32 && in[i].rank == rank;
    for (int d = 0; ok && d < rank; d++)
        ok = in[i].dims[d] == want[d];
    if (ok)
        return POPC_OK;
    return opu_error(POPC_EINVAL, op, node, "%s %s must be float32 of the "
                     "output's shape", what, opu_dims(&in[i], sa));
}

/* ---- FusedConv ----------------------------------------------------------- */

static popc_status fconv_params(const char *node, const popc_view *in,
                                int n_in, const popc_attrs *attrs, conv_p *p,
                                int64_t *d, int *r)
{
    char sb[OPU_DIMS_LEN];
    popc_status st;

    if (in[0].rank != 3 && in[0].rank != 4)
        return opu_error(POPC_EUNSUPPORTED, "FusedConv", node, "input X "
                         "must be [N, C, W] or [N, C, H, W]");
    if ((st = nn_conv_geom("FusedConv", node, attrs, in[0].dims, in[0].rank,
                           in[1].dims, in[1].rank, p)) != POPC_OK)
        return st;
    if (opu_present_at(in, n_in, 2) &&
        (in[2].rank != 1 || in[2].dims[0] != p->M))
        return opu_error(POPC_EINVAL, "FusedConv", node, "bias B %s must be "
                         "[%lld]", opu_dims(&in[2], sb), (long long)p->M);
    nn_conv_out_dims(p, d, r);
    return check_same("FusedConv", node, in, n_in, 3, "residual Z", d, *r);
}

/* The epilogue and the geometry of a FusedConv node. */
static popc_status fconv_setup(const char *node, const popc_view *in,
                               int n_in, const popc_attrs *attrs, conv_p *p,
                               nn_epilogue *e, int64_t *d, int *r)
{
    popc_status st;

    if ((st = nn_epilogue_parse("FusedConv", node, attrs, e)) != POPC_OK)
        return st;
    return fconv_params(node, in, n_in, attrs, p, d, r);
}

static popc_status fconv_infer(popc_infer_ctx *ic)
{
    conv_p p;
    nn_epilogue e;
    int64_t d[4];
    int r;
    popc_status st;

    for (int i = 0; i < 3; i++)
        if ((i < 2 || opu_present_at(ic->inputs, ic->n_inputs, i)) &&
            (st = opu_want_f32(ic, "FusedConv", i, i == 0   ? "input X"
                                                    : i == 1 ? "weight W"
                                                             : "bias B")) !=
                POPC_OK)
            return st;
    if ((st = fconv_setup(ic->node_name, ic->inputs, ic->n_inputs,
                          ic->attrs, &p, &e, d, &r)) != POPC_OK)
        return st;
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d, r);
    return POPC_OK;
}

int nn_fconv_node(const popc_infer_ctx *ic, conv_p *p)
{
    nn_epilogue e;
    int64_t d[4];
    int r;

    if (ic->n_inputs < 2 ||
        (ic->inputs[0].rank != 3 && ic->inputs[0].rank != 4) ||
        ic->inputs[0].dtype != POPC_DTYPE_F32 ||
        nn_is_float16_node(ic->attrs) ||
        fconv_setup(ic->node_name, ic->inputs, ic->n_inputs, ic->attrs, p,
                    &e, d, &r) != POPC_OK)
        return 0;
    p->inference = !ic->training;
    return 1;
}

popc_status nn_fconv_run(const popc_kernel_ctx *kc, int path)
{
    conv_p p;
    nn_epilogue e;
    int64_t d[4];
    int r;
    popc_status st;

    if ((st = fconv_setup(kc->node_name, kc->inputs, kc->n_inputs,
                          kc->attrs, &p, &e, d, &r)) != POPC_OK)
        return st;
    e.y0 = kc->outputs[0].data;
    e.z = opu_present_at(kc->inputs, kc->n_inputs, 3) ? kc->inputs[3].data
                                                    : NULL;
    p.epi = &e;
    p.inference = !kc->training;
    p.path = path;
    return nn_conv2d_forward(kc, &p, kc->inputs[0].data, kc->inputs[1].data,
                             opu_present_at(kc->inputs, kc->n_inputs, 2)
                                 ? kc->inputs[2].data : NULL,
                             kc->outputs[0].data);
}

static popc_status fconv_forward(const popc_kernel_ctx *kc)
{
    return nn_fconv_run(kc, NN_PATH_REF);
}

static popc_status fconv_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    conv_p p;
    nn_epilogue e;
    int64_t d[4];
    int r;
    double out;
    popc_status st;

    if ((st = fconv_setup(ic->node_name, ic->inputs, ic->n_inputs,
                          ic->attrs, &p, &e, d, &r)) != POPC_OK)
        return st;
    e.z = opu_present_at(ic->inputs, ic->n_inputs, 3) ? (const float *)1 : NULL;
    out = (double)p.N * (double)p.M * (double)p.P;
    c->flops = 2.0 * out * (double)p.Kc + out * nn_epilogue_flops(&e) +
               (opu_present_at(ic->inputs, ic->n_inputs, 2) ? out : 0.0);
    c->bytes = 4.0 * ((double)popc_view_numel(&ic->inputs[0]) +
                      (double)popc_view_numel(&ic->inputs[1]) + (double)p.M +
                      out * (e.z ? 2.0 : 1.0));
    c->temp_bytes =
        p.direct || nn_dw_fits(&p) ? 0.0 : 4.0 * (double)p.Kc * (double)p.P;
    return POPC_OK;
}

/* ---- FusedMatMul --------------------------------------------------------- */

typedef struct fmm_p {
    int64_t M, N, K;      /* rows of A (its leading dims), columns, depth */
    int tb;
    float alpha;
} fmm_p;

static popc_status fmm_params(const char *node, const popc_view *in, int n_in,
                              const popc_attrs *attrs, fmm_p *p, int64_t *d,
                              int *r)
{
    char sa[OPU_DIMS_LEN], sw[OPU_DIMS_LEN];
    const popc_view *a = &in[0], *w = &in[1];

    p->tb = (int)popc_attr_int(attrs, "trans_b", 0);
    p->alpha = (float)popc_attr_float(attrs, "alpha", 1.0);
    if (a->rank < 1 || w->rank != 2 || (p->tb != 0 && p->tb != 1))
        return opu_error(POPC_EINVAL, "FusedMatMul", node, "A %s must have a "
                         "rank and W %s must be 2-D (trans_b 0 or 1)",
                         opu_dims(a, sa), opu_dims(w, sw));
    p->K = a->dims[a->rank - 1];
    p->N = p->tb ? w->dims[0] : w->dims[1];
    if ((p->tb ? w->dims[1] : w->dims[0]) != p->K)
        return opu_error(POPC_EINVAL, "FusedMatMul", node, "A %s and W %s "
                         "(trans_b %d) do not multiply", opu_dims(a, sa),
                         opu_dims(w, sw), p->tb);
    p->M = 1;
    for (int i = 0; i < a->rank - 1; i++) {
        p->M *= a->dims[i];
        d[i] = a->dims[i];
    }
    d[a->rank - 1] = p->N;
    *r = a->rank;
    if (opu_present_at(in, n_in, 2) &&
        (in[2].rank != 1 || in[2].dims[0] != p->N))
        return opu_error(POPC_EINVAL, "FusedMatMul", node, "bias %s must be "
                         "[%lld]", opu_dims(&in[2], sa), (long long)p->N);
    return check_same("FusedMatMul", node, in, n_in, 3, "residual Z", d, *r);
}

/* The epilogue and the shapes of a FusedMatMul node. */
static popc_status fmm_setup(const char *node, const popc_view *in, int n_in,
                             const popc_attrs *attrs, fmm_p *p,
                             nn_epilogue *e, int64_t *d, int *r)
{
    popc_status st;

    if ((st = nn_epilogue_parse("FusedMatMul", node, attrs, e)) != POPC_OK)
        return st;
    return fmm_params(node, in, n_in, attrs, p, d, r);
}

static popc_status fmm_infer(popc_infer_ctx *ic)
{
    fmm_p p;
    nn_epilogue e;
    int64_t d[POPC_MAX_RANK];
    int r;
    popc_status st;

    for (int i = 0; i < 3; i++)
        if ((i < 2 || opu_present_at(ic->inputs, ic->n_inputs, i)) &&
            (st = opu_want_f32(ic, "FusedMatMul", i, i == 0   ? "input A"
                                                      : i == 1 ? "weight W"
                                                               : "bias")) !=
                POPC_OK)
            return st;
    if ((st = fmm_setup(ic->node_name, ic->inputs, ic->n_inputs,
                        ic->attrs, &p, &e, d, &r)) != POPC_OK)
        return st;
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d, r);
    return POPC_OK;
}

static popc_status fmm_forward(const popc_kernel_ctx *kc)
{
    const float *A = kc->inputs[0].data, *W = kc->inputs[1].data;
    const float *bias = NULL;
    float *Y = kc->outputs[0].data;
    fmm_p p;
    nn_epilogue e;
    nn_tiles t;
    int64_t d[POPC_MAX_RANK], lo, hi;
    int r;
    popc_status st;

    if ((st = fmm_setup(kc->node_name, kc->inputs, kc->n_inputs,
                        kc->attrs, &p, &e, d, &r)) != POPC_OK)
        return st;
    if (opu_present_at(kc->inputs, kc->n_inputs, 2))
        bias = kc->inputs[2].data;
    e.y0 = Y;
    e.z = opu_present_at(kc->inputs, kc->n_inputs, 3) ? kc->inputs[3].data
                                                    : NULL;
    nn_tiles_plan(1, p.M, p.N, p.K, TILE_TARGET, 64, NN_TILE_AUTO, &t);
    opu_range(t.n, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        int64_t r0, r1, c0, c1;

        nn_tile_bounds(&t, u, p.M, p.N, &r0, &r1, &c0, &c1);
        nn_sgemm_tile(&t, u, 0, p.tb, p.M, p.N, p.K, p.alpha, A, p.K, W,
                      p.tb ? p.K : p.N, 0.0f, Y, p.N);
        for (int64_t i = r0; i < r1; i++) {
            float *row = Y + i * p.N;

            if (bias)
                for (int64_t j = c0; j < c1; j++)
                    row[j] += bias[j];
            nn_epilogue_apply(&e, row + c0, c1 - c0);
        }
    }
    return POPC_OK;
}

static popc_status fmm_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    fmm_p p;
    nn_epilogue e;
    int64_t d[POPC_MAX_RANK];
    int r;
    double out;
    popc_status st;

    if ((st = fmm_setup(ic->node_name, ic->inputs, ic->n_inputs,
                        ic->attrs, &p, &e, d, &r)) != POPC_OK)
        return st;
    e.z = opu_present_at(ic->inputs, ic->n_inputs, 3) ? (const float *)1 : NULL;
    out = (double)p.M * (double)p.N;
    c->flops = 2.0 * out * (double)p.K + out * nn_epilogue_flops(&e) +
               (opu_present_at(ic->inputs, ic->n_inputs, 2) ? out : 0.0);
    c->bytes = 4.0 * ((double)p.M * (double)p.K + (double)p.K * (double)p.N +
                      out * (e.z ? 2.0 : 1.0));
    c->temp_bytes = 0.0;
    return POPC_OK;
}

static const popc_op_def fused_ops[] = {
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "FusedConv",
        .since_version = 1,
        .min_inputs = 2,
        .max_inputs = 4,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = fconv_infer,
        .forward = fconv_forward,
        .cost = fconv_cost,
        .doc = "Conv + bias + residual Add + activation in one pass (made "
               "by the graph optimizer; inference)",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "FusedMatMul",
        .since_version = 1,
        .min_inputs = 2,
        .max_inputs = 4,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = fmm_infer,
        .forward = fmm_forward,
        .cost = fmm_cost,
        .doc = "MatMul/Gemm by a 2-D weight + bias + residual Add + "
               "activation in one pass (made by the graph optimizer; "
               "inference)",
    },
};

popc_status nn_register_fused(const popc_host *h, popc_registrar *r)
{
    return opu_register_ops(h, r, fused_ops,
                            (int)(sizeof fused_ops / sizeof fused_ops[0]));
}
