/* blocked_pool.c - popc::BlockedPool(X): MaxPool, AveragePool or
** GlobalAveragePool (string "mode": "max", "average", "global_average")
** on the blocked layout (blocked.h), with the pool's own attributes
** (kernel_shape, strides, pads, dilations for max, ceil_mode, auto_pad,
** count_include_pad). X and Y are [N, C/c, H, W, c]; each lane is pooled
** alone, so the padded lanes stay what they were (zero stays zero).
*/
#include "config.h"

#include <string.h>

#include "ops/nn/blocked.h"
#include "ops/util/oputil.h"

enum { MODE_MAX, MODE_AVG, MODE_GLOBAL };

typedef struct bpool {
    int mode, cip;
    nn_window w;
    bk_geom g;
    int64_t yd[5];
} bpool;

static popc_status setup(const char *node, const popc_view *x,
                         const popc_attrs *attrs, bpool *b)
{
    const char *mode = popc_attr_string(attrs, "mode", "");
    char sx[OPU_DIMS_LEN];
    int64_t d[2] = {1, 1};
    popc_status st;

    memset(b, 0, sizeof *b);
    if (x->rank != 5 || (x->dims[4] != 8 && x->dims[4] != 16))
        return opu_error(POPC_EINVAL, "BlockedPool", node, "input X %s must "
                         "be [N, C/c, H, W, c] with c 8 or 16",
                         opu_dims(x, sx));
    b->mode = strcmp(mode, "max") == 0       ? MODE_MAX
              : strcmp(mode, "average") == 0 ? MODE_AVG
              : strcmp(mode, "global_average") == 0 ? MODE_GLOBAL : -1;
    if (b->mode < 0)
        return opu_error(POPC_EINVAL, "BlockedPool", node, "mode '%s' is "
                         "unknown; use max, average or global_average", mode);
    b->cip = popc_attr_int(attrs, "count_include_pad", 0) != 0;
    b->g = (bk_geom){.c = x->dims[4], .N = x->dims[0], .Cb = x->dims[1],
                     .H = x->dims[2], .W = x->dims[3], .OH = 1, .OW = 1};
    if (b->mode == MODE_AVG && popc_attr_ints(attrs, "dilations", d, 2) >= 0 &&
        (d[0] != 1 || d[1] != 1))
        return opu_error(POPC_EUNSUPPORTED, "BlockedPool", node,
                         "dilations are not supported by AveragePool "
                         "(opset 17); remove them");
    if (b->mode != MODE_GLOBAL) {
        if ((st = nn_window_parse("BlockedPool", node, attrs, 2, x->dims + 2,
                                  NULL, 1, 1, &b->w)) != POPC_OK)
            return st;
        b->g.OH = b->w.OH;
        b->g.OW = b->w.OW;
    }
    memcpy(b->yd, x->dims, sizeof b->yd);
    b->yd[2] = b->g.OH;
    b->yd[3] = b->g.OW;
    return POPC_OK;
}

static popc_status bpool_infer(popc_infer_ctx *ic)
{
    bpool b;
    popc_status st;

    if ((st = opu_want_f32(ic, "BlockedPool", 0, "input X")) != POPC_OK ||
        (st = setup(ic->node_name, &ic->inputs[0], ic->attrs, &b)) != POPC_OK)
        return st;
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, b.yd, 5);
    return POPC_OK;
}

static popc_status bpool_forward(const popc_kernel_ctx *kc)
{
    const bk_kernels *k;
    bpool b;
    int64_t lo, hi;
    popc_status st;

    if ((st = setup(kc->node_name, &kc->inputs[0], kc->attrs, &b)) !=
        POPC_OK)
        return st;
    k = bk_kernels_for(b.g.c);
    if (b.mode == MODE_GLOBAL) {
        opu_range(b.g.N * b.g.Cb, kc->part, kc->n_parts, &lo, &hi);
        k->global_avg(&b.g, kc->inputs[0].data, kc->outputs[0].data, lo, hi);
        return POPC_OK;
    }
    opu_range(bk_pool_units(&b.g), kc->part, kc->n_parts, &lo, &hi);
    k->pool(&b.g, &b.w, b.mode == MODE_AVG, b.cip, kc->inputs[0].data,
            kc->outputs[0].data, lo, hi);
    return POPC_OK;
}

/* One operation per window element read (the NCHW pools' count), over the
** padded lanes the blocked tensors hold. */
static popc_status bpool_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    bpool b;
    double out;
    popc_status st;

    if ((st = setup(ic->node_name, &ic->inputs[0], ic->attrs, &b)) !=
        POPC_OK)
        return st;
    out = (double)(b.yd[0] * b.yd[1] * b.yd[2] * b.yd[3] * b.yd[4]);
    c->flops = b.mode == MODE_GLOBAL
                   ? (double)popc_view_numel(&ic->inputs[0])
                   : out * (double)(b.w.kh * b.w.kw);
    c->bytes = 4.0 * ((double)popc_view_numel(&ic->inputs[0]) + out);
    c->temp_bytes = 0.0;
    return POPC_OK;
}

static const popc_op_def bpool_op = {
    .size = sizeof(popc_op_def),
    .domain = "popc",
    .name = "BlockedPool",
    .since_version = 1,
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .flags = POPC_OP_SPLIT,
    .infer = bpool_infer,
    .forward = bpool_forward,
    .cost = bpool_cost,
    .doc = "MaxPool, AveragePool or GlobalAveragePool on NCHWc blocks "
           "(made by the graph optimizer)",
};

popc_status nn_register_blocked_pool(const popc_host *h, popc_registrar *r)
{
    return h->register_op(r, &bpool_op);
}
