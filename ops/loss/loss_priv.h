/* loss_priv.h - registration functions shared by the files of the loss
** plugin (module-internal, hidden). */
#ifndef POPC_OPS_LOSS_PRIV_H
#define POPC_OPS_LOSS_PRIV_H

#include "popc/plugin.h"

/* SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss and their grads. */
popc_status loss_register_xent(const popc_host *h, popc_registrar *r);
/* MseLoss, L1Loss and their grads. */
popc_status loss_register_pointwise(const popc_host *h, popc_registrar *r);

#endif /* POPC_OPS_LOSS_PRIV_H */
