/* popc_priv.h - the ops of the "popc" plugin defined outside popc.c. */
#ifndef POPC_OPS_POPC_PRIV_H
#define POPC_OPS_POPC_PRIV_H

#include "popc/plugin.h"

/* CTCBeamSearchDecoder (ctc_beam.c). */
extern const popc_op_def popc_ctc_beam_def;

#endif /* POPC_OPS_POPC_PRIV_H */
