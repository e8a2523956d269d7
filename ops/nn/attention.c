/* attention.c - popc::Attention, the scaled dot-product attention the
** graph optimizer (opt/pass_attention.c) recognises in torch.onnx.export's
** MultiheadAttention:
**     Y = Softmax(scale * Q Kt, last axis) V
** with Q [..., S, D], Kt [..., D, T] (K already transposed, as the export
** has it) and V [..., T, E], the leading dimensions the same for all
** three. Units are (batch entry, block of ROWS query rows): each takes
** its rows' scores with one GEMM, their softmax in place while they are
** in cache, and its rows of Y with a second GEMM; the [S, T] score matrix
** is never written out. The blocks depend on the shape only. An
** inference op (no gradient).
*/
#include "config.h"

#include <cblas.h>

#include "ops/nn/nn_priv.h"
#include "ops/util/oputil.h"

/* Query rows per unit. */
#define ROWS 32

typedef struct att_p {
    int64_t batch, S, D, T, E;
    float scale;
} att_p;

static popc_status att_params(const char *node, const popc_view *in,
                              const popc_attrs *attrs, att_p *p)
{
    char sq[OPU_DIMS_LEN], sk[OPU_DIMS_LEN], sv[OPU_DIMS_LEN];
    const popc_view *q = &in[0], *k = &in[1], *v = &in[2];
    int r = q->rank, ok = r >= 2 && k->rank == r && v->rank == r;

    for (int i = 0; ok && i < r - 2; i++)
        ok = k->dims[i] == q->dims[i] && v->dims[i] == q->dims[i];
    if (ok)
        ok = k->dims[r - 2] == q->dims[r - 1] &&
             v->dims[r - 2] == k->dims[r - 1];
    if (!ok)
        return opu_error(POPC_EINVAL, "Attention", node, "Q %s, Kt %s and V "
                         "%s must be [..., S, D], [..., D, T] and [..., T, "
                         "E] with the same leading dimensions",
                         opu_dims(q, sq), opu_dims(k, sk), opu_dims(v, sv));
    p->batch = 1;
    for (int i = 0; i < r - 2; i++)
        p->batch *= q->dims[i];
    p->S = q->dims[r - 2];
    p->D = q->dims[r - 1];
    p->T = k->dims[r - 1];
    p->E = v->dims[r - 1];
    p->scale = (float)popc_attr_float(attrs, "scale", 1.0);
    return POPC_OK;
}

static popc_status att_infer(popc_infer_ctx *ic)
{
    att_p p;
    int64_t d[POPC_MAX_RANK];
    int r = ic->inputs[0].rank;
    popc_status st;

    for (int i = 0; i < 3; i++)
        if ((st = opu_want_f32(ic, "Attention", i, i == 0   ? "Q"
                                                    : i == 1 ? "Kt"
                                                             : "V")) !=
            POPC_OK)
            return st;
    if ((st = att_params(ic->node_name, ic->inputs, ic->attrs, &p)) !=
        POPC_OK)
        return st;
    for (int i = 0; i < r - 1; i++)
        d[i] = ic->inputs[0].dims[i];
    d[r - 1] = p.E;
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d, r);
    return POPC_OK;
}

static popc_status att_forward(const popc_kernel_ctx *kc)
{
    const float *q = kc->inputs[0].data, *k = kc->inputs[1].data;
    const float *v = kc->inputs[2].data;
    float *y = kc->outputs[0].data, *s;
    int64_t blocks, lo, hi;
    att_p p;
    popc_status st;

    if ((st = att_params(kc->node_name, kc->inputs, kc->attrs, &p)) !=
        POPC_OK)
        return st;
    blocks = (p.S + ROWS - 1) / ROWS;
    opu_range(p.batch * blocks, kc->part, kc->n_parts, &lo, &hi);
    if (hi <= lo || p.T == 0)
        return POPC_OK;
    if (!(s = kc->host->alloc(sizeof *s * (size_t)(ROWS * p.T))))
        return kc->host->set_error(POPC_ENOMEM, "Attention '%s': out of "
                                   "memory for its scores", kc->node_name);
    for (int64_t u = lo; u < hi; u++) {
        int64_t b = u / blocks, r0 = u % blocks * ROWS;
        int64_t n = p.S - r0 < ROWS ? p.S - r0 : ROWS;

        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n,
                    (int)p.T, (int)p.D, p.scale,
                    q + (b * p.S + r0) * p.D, (int)p.D, k + b * p.D * p.T,
                    (int)p.T, 0.0f, s, (int)p.T);
        for (int64_t i = 0; i < n; i++)
            nn_softmax_row(s + i * p.T, s + i * p.T, p.T);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n,
                    (int)p.E, (int)p.T, 1.0f, s, (int)p.T,
                    v + b * p.T * p.E, (int)p.E, 0.0f,
                    y + (b * p.S + r0) * p.E, (int)p.E);
    }
    kc->host->free(s);
    return POPC_OK;
}

static popc_status att_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    att_p p;
    popc_status st;

    if ((st = att_params(ic->node_name, ic->inputs, ic->attrs, &p)) !=
        POPC_OK)
        return st;
    c->flops = (double)p.batch * (double)p.S * (double)p.T *
               (2.0 * (double)p.D + 2.0 * (double)p.E + 5.0);
    c->bytes = 4.0 * (double)p.batch *
               ((double)p.S * (double)p.D + (double)p.D * (double)p.T +
                (double)p.T * (double)p.E + (double)p.S * (double)p.E);
    c->temp_bytes = 4.0 * ROWS * (double)p.T;
    return POPC_OK;
}

static const popc_op_def attention_op = {
    .size = sizeof(popc_op_def),
    .domain = "popc",
    .name = "Attention",
    .since_version = 1,
    .min_inputs = 3,
    .max_inputs = 3,
    .min_outputs = 1,
    .max_outputs = 1,
    .flags = POPC_OP_SPLIT,
    .infer = att_infer,
    .forward = att_forward,
    .cost = att_cost,
    .doc = "Softmax(scale * Q Kt) V in blocks of query rows (made by the "
           "graph optimizer; inference)",
};

popc_status nn_register_attention(const popc_host *h, popc_registrar *r)
{
    return h->register_op(r, &attention_op);
}
