/* layer/model_state.h - the optimizer state of a model that may not be
** compiled yet, for the layers that restore it (run/: checkpoints).
**
** Public readers see the state only once the model has been compiled
** (docs/semantics.md R4.6); a resume must still check the files it loads
** against the arrays the compile will start from.
*/
#ifndef POPC_LAYER_MODEL_STATE_H
#define POPC_LAYER_MODEL_STATE_H

#include "popc/model.h"

/* A copy of state `name` as it stands: the optimizer's initial values, or
** the value set (and held) before the compile. The caller frees *out.
** POPC_OK, POPC_EINVAL (out NULL), POPC_ESTATE (inference model),
** POPC_ENOTFOUND (unknown name), POPC_ENOMEM. */
popc_status popci_model_peek_optimizer_state(popc_model *m, const char *name,
                                             popc_tensor **out);

#endif /* POPC_LAYER_MODEL_STATE_H */
