/* math.c - the "math" op plugin: elementwise arithmetic, comparisons,
** activations, Max/Min/Mean, Where, Cast, Identity, Constant, Dropout and
** their gradient helpers in domain "popc". */
#include "config.h"

#include "ops/math/mathops.h"

static popc_status register_all(const popc_host *host, popc_registrar *reg,
                                const popc_op_def *defs, int n)
{
    popc_status st;

    for (int i = 0; i < n; i++)
        if ((st = host->register_op(reg, &defs[i])) != POPC_OK)
            return st;
    return POPC_OK;
}

static popc_status math_init(const popc_host *host, popc_registrar *reg)
{
    popc_status st;

    if ((st = opu_init(host, "math")) != POPC_OK)
        return st;
    if ((st = register_all(host, reg, mop_arith_ops, mop_arith_count)) !=
        POPC_OK)
        return st;
    if ((st = register_all(host, reg, mop_act_ops, mop_act_count)) != POPC_OK)
        return st;
    if ((st = register_all(host, reg, mop_minmax_ops, mop_minmax_count)) !=
        POPC_OK)
        return st;
    if ((st = register_all(host, reg, mop_wide_ops, mop_wide_count)) !=
            POPC_OK ||
        (st = register_all(host, reg, mop_wide_grad_ops,
                           mop_wide_grad_count)) != POPC_OK ||
        (st = register_all(host, reg, mop_quant_ops, mop_quant_count)) !=
            POPC_OK ||
        (st = register_all(host, reg, mop_train_ops, mop_train_count)) !=
            POPC_OK)
        return st;
    return register_all(host, reg, mop_misc_ops, mop_misc_count);
}

POPC_PLUGIN_DEFINE(math, "0.1.0",
                   "elementwise math, activations, Where, Cast, Dropout",
                   "MIT", math_init, NULL)
