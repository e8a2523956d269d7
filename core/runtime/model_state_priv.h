/* model_state_priv.h - the optimizer state of a model before its compile,
** for the core; the layers' interface is core/layer/model_state.h. */
#ifndef POPC_MODEL_STATE_PRIV_H
#define POPC_MODEL_STATE_PRIV_H

#include "core/layer/model_state.h"

#endif /* POPC_MODEL_STATE_PRIV_H */
