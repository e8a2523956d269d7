/* fuzz_model.h - the model the weights and checkpoint harnesses load
** into: fuzz/corpus/ini/tiny.ini's MLP (8 -> 4 -> 3) as a training model
** with Adam on the cpu backend, built once per process. */
#ifndef POPC_FUZZ_MODEL_H
#define POPC_FUZZ_MODEL_H

#include "popc/popc.h"

/* NULL when it cannot be built (plugins missing: POPC_PLUGIN_PATH). */
popc_model *fuzz_training_model(void);

#endif /* POPC_FUZZ_MODEL_H */
