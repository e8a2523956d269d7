/* loss.c - the "loss" op plugin: losses matching torch.nn.functional
** (cross_entropy, nll_loss, mse_loss, l1_loss), all flagged POPC_OP_LOSS,
** and their popc:: gradient ops. */
#include "config.h"

#include "ops/loss/loss_priv.h"
#include "ops/util/oputil.h"

static popc_status loss_init(const popc_host *host, popc_registrar *reg)
{
    popc_status st;

    if ((st = opu_init(host, "loss")) != POPC_OK)
        return st;
    if ((st = loss_register_xent(host, reg)) != POPC_OK ||
        (st = loss_register_pointwise(host, reg)) != POPC_OK)
        return st;
    return POPC_OK;
}

POPC_PLUGIN_DEFINE(loss, "0.1.0",
                   "cross-entropy, NLL, MSE and L1 losses and their grads",
                   "MIT", loss_init, NULL)
