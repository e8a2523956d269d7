/* backend_option.h - how the core answers a backend's option queries. */
#ifndef POPC_CORE_BACKEND_OPTION_H
#define POPC_CORE_BACKEND_OPTION_H

#include "popc/options.h"
#include "popc/plugin.h"

/* Makes cfg->option_int answer from o, which must outlive cfg's use. */
void popci_backend_config_options(popc_backend_config *cfg,
                                  const popc_options *o);

#endif /* POPC_CORE_BACKEND_OPTION_H */
