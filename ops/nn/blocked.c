/* blocked.c - the reorders at the borders of a blocked region:
**   popc::ToBlocked(X)    [N, C, H, W] -> [N, ceil(C/c), H, W, c], the
**                         last block's extra lanes zero; int "block" c
**   popc::FromBlocked(Y)  back to [N, C, H, W]; int "channels" C
** The graph optimizer (opt/pass_layout.c) puts them where a region of
** blocked ops begins and ends; they only move data.
*/
#include "config.h"

#include <string.h>

#include "ops/nn/blocked.h"
#include "ops/util/oputil.h"

static popc_status want_block(const char *op, const char *node, int64_t c)
{
    if (c == 8 || c == 16)
        return POPC_OK;
    return opu_error(POPC_EINVAL, op, node, "block %lld must be 8 or 16",
                     (long long)c);
}

static popc_status to_infer(popc_infer_ctx *ic)
{
    const popc_view *x = &ic->inputs[0];
    int64_t c = popc_attr_int(ic->attrs, "block", 0), d[5];
    char sx[OPU_DIMS_LEN];
    popc_status st;

    if ((st = opu_want_f32(ic, "ToBlocked", 0, "input X")) != POPC_OK ||
        (st = want_block("ToBlocked", ic->node_name, c)) != POPC_OK)
        return st;
    if (x->rank != 4)
        return opu_error(POPC_EINVAL, "ToBlocked", ic->node_name, "input X "
                         "%s must be [N, C, H, W]", opu_dims(x, sx));
    d[0] = x->dims[0];
    d[1] = bk_blocks(x->dims[1], c);
    d[2] = x->dims[2];
    d[3] = x->dims[3];
    d[4] = c;
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d, 5);
    return POPC_OK;
}

static popc_status to_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0];
    const float *xs = x->data;
    float *y = kc->outputs[0].data;
    int64_t c = kc->outputs[0].dims[4], C = x->dims[1];
    int64_t Cb = kc->outputs[0].dims[1], hw = x->dims[2] * x->dims[3], lo, hi;

    opu_range(x->dims[0] * Cb, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        int64_t n = u / Cb, b = u % Cb;
        float *yp = y + u * hw * c;

        for (int64_t l = 0; l < c; l++) {
            int64_t ch = b * c + l;
            const float *xp = xs + (n * C + ch) * hw;

            if (ch >= C)
                for (int64_t i = 0; i < hw; i++)
                    yp[i * c + l] = 0.0f;
            else
                for (int64_t i = 0; i < hw; i++)
                    yp[i * c + l] = xp[i];
        }
    }
    return POPC_OK;
}

static popc_status from_infer(popc_infer_ctx *ic)
{
    const popc_view *x = &ic->inputs[0];
    int64_t C = popc_attr_int(ic->attrs, "channels", 0), d[4];
    char sx[OPU_DIMS_LEN];
    popc_status st;

    if ((st = opu_want_f32(ic, "FromBlocked", 0, "input X")) != POPC_OK)
        return st;
    if (x->rank != 5 ||
        (st = want_block("FromBlocked", ic->node_name, x->dims[4])) !=
            POPC_OK)
        return st != POPC_OK ? st
                             : opu_error(POPC_EINVAL, "FromBlocked",
                                         ic->node_name, "input X %s must be "
                                         "[N, C/c, H, W, c]",
                                         opu_dims(x, sx));
    if (C <= (x->dims[1] - 1) * x->dims[4] || C > x->dims[1] * x->dims[4])
        return opu_error(POPC_EINVAL, "FromBlocked", ic->node_name,
                         "channels %lld do not fill the last of the %lld "
                         "blocks of %lld in X %s", (long long)C,
                         (long long)x->dims[1], (long long)x->dims[4],
                         opu_dims(x, sx));
    d[0] = x->dims[0];
    d[1] = C;
    d[2] = x->dims[2];
    d[3] = x->dims[3];
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d, 4);
    return POPC_OK;
}

static popc_status from_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0];
    const float *xs = x->data;
    float *y = kc->outputs[0].data;
    int64_t c = x->dims[4], Cb = x->dims[1], C = kc->outputs[0].dims[1];
    int64_t hw = x->dims[2] * x->dims[3], lo, hi;

    opu_range(x->dims[0] * Cb, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        int64_t n = u / Cb, b = u % Cb;
        const float *xp = xs + u * hw * c;

        for (int64_t l = 0; l < c && b * c + l < C; l++) {
            float *yp = y + (n * C + b * c + l) * hw;

            for (int64_t i = 0; i < hw; i++)
                yp[i] = xp[i * c + l];
        }
    }
    return POPC_OK;
}

/* A reorder moves every element once: no arithmetic. */
static popc_status reorder_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    memset(c, 0, sizeof *c);
    c->bytes = 4.0 * (double)(popc_view_numel(&ic->inputs[0]) +
                              popc_view_numel(&ic->outputs[0]));
    return POPC_OK;
}

static const popc_op_def reorder_ops[] = {
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "ToBlocked",
        .since_version = 1,
        .min_inputs = 1,
        .max_inputs = 1,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = to_infer,
        .forward = to_forward,
        .cost = reorder_cost,
        .doc = "NCHW to NCHWc, blocks of c channels (made by the graph "
               "optimizer at a blocked region's start)",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "FromBlocked",
        .since_version = 1,
        .min_inputs = 1,
        .max_inputs = 1,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = from_infer,
        .forward = from_forward,
        .cost = reorder_cost,
        .doc = "NCHWc back to NCHW (made by the graph optimizer at a "
               "blocked region's end)",
    },
};

popc_status nn_register_blocked(const popc_host *h, popc_registrar *r)
{
    popc_status st;

    if ((st = opu_register_ops(h, r, reorder_ops,
                               (int)(sizeof reorder_ops / sizeof reorder_ops[0]))) !=
        POPC_OK)
        return st;
    if ((st = nn_register_blocked_conv(h, r)) != POPC_OK)
        return st;
    return nn_register_blocked_pool(h, r);
}
