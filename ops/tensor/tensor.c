/* tensor.c - the "tensor" op plugin: shape ops, data movement and
** reductions, with the gradient helpers popc::SumToShape, GatherGrad,
** SliceGrad and ReduceMaxGrad. */
#include "config.h"

#include "ops/tensor/tensorops.h"

static popc_status tensor_init(const popc_host *host, popc_registrar *reg)
{
    popc_status st;

    if ((st = opu_init(host, "tensor")) != POPC_OK)
        return st;
    if ((st = opu_register_ops(host, reg, top_shape_ops, top_shape_count)) !=
            POPC_OK ||
        (st = opu_register_ops(host, reg, top_move_ops, top_move_count)) !=
            POPC_OK ||
        (st = opu_register_ops(host, reg, top_slice_ops, top_slice_count)) !=
            POPC_OK)
        return st;
    if ((st = opu_register_ops(host, reg, top_reduce_ops, top_reduce_count)) !=
        POPC_OK)
        return st;
    if ((st = opu_register_ops(host, reg, top_reduce_wide_ops,
                           top_reduce_wide_count)) != POPC_OK ||
        (st = opu_register_ops(host, reg, top_generate_ops,
                           top_generate_count)) != POPC_OK ||
        (st = opu_register_ops(host, reg, top_index_ops, top_index_count)) !=
            POPC_OK)
        return st;
    if ((st = opu_register_ops(host, reg, top_arrange_ops, top_arrange_count)) !=
        POPC_OK)
        return st;
    if ((st = opu_register_ops(host, reg, top_linalg_grad_ops,
                           top_linalg_grad_count)) != POPC_OK)
        return st;
    return opu_register_ops(host, reg, top_linalg_ops, top_linalg_count);
}

POPC_PLUGIN_DEFINE(tensor, "0.1.0",
                   "shape ops, Transpose, Concat, Split, Slice, Gather, "
                   "reductions, ArgMax",
                   "MIT", tensor_init, NULL)
