/* math.c - the "math" op plugin: elementwise arithmetic, comparisons,
** activations, Max/Min/Mean, Where, Cast, Identity, Constant, Dropout and
** their gradient helpers in domain "popc". */
#include "config.h"

#include "ops/math/mathops.h"

static popc_status math_init(const popc_host *host, popc_registrar *reg)
{
    popc_status st;

    if ((st = opu_init(host, "math")) != POPC_OK)
        return st;
    if ((st = opu_register_ops(host, reg, mop_arith_ops, mop_arith_count)) !=
        POPC_OK)
        return st;
    if ((st = opu_register_ops(host, reg, mop_act_ops, mop_act_count)) != POPC_OK)
        return st;
    if ((st = opu_register_ops(host, reg, mop_minmax_ops, mop_minmax_count)) !=
        POPC_OK)
        return st;
    if ((st = opu_register_ops(host, reg, mop_wide_ops, mop_wide_count)) !=
            POPC_OK ||
        (st = opu_register_ops(host, reg, mop_wide_grad_ops,
                           mop_wide_grad_count)) != POPC_OK ||
        (st = opu_register_ops(host, reg, mop_quant_ops, mop_quant_count)) !=
            POPC_OK ||
        (st = opu_register_ops(host, reg, mop_train_ops, mop_train_count)) !=
            POPC_OK)
        return st;
    return opu_register_ops(host, reg, mop_misc_ops, mop_misc_count);
}

POPC_PLUGIN_DEFINE(math, "0.1.0",
                   "elementwise math, activations, Where, Cast, Dropout",
                   "MIT", math_init, NULL)
