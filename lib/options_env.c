/* options_env.c - the environment's options every new popc_options takes
** (POPC_THREADS, OMPI_COMM_WORLD_*, POPC_CACHE_DIR, POPC_DEFAULT_OPTIONS):
** read by optfmt/, handed to the core here, above both, as lib/layers.c
** hands it the layers that follow a model. The core names no layer. */
#include "config.h"

#include "core/layer/options_table.h"
#include "optfmt/optfmt.h"

const popci_options_env_fn popci_layer_options_env =
    popci_options_apply_environment;
