/* popc.h - umbrella header for applications. */
#ifndef POPC_H
#define POPC_H

#include "popc/status.h"
#include "popc/file.h"
#include "popc/types.h"
#include "popc/tensor.h"
#include "popc/log.h"
#include "popc/plugin.h"
#include "popc/registry.h"
#include "popc/graph.h"
#include "popc/layers.h"
#include "popc/precision.h"
#include "popc/options.h"
#include "popc/optimizer.h"
#include "popc/model.h"
#include "popc/profile.h"
#include "popc/data.h"
#include "popc/custom.h"
#include "popc/executable.h"
#include "popc/blocks.h"
#include "popc/strategy.h"
#include "popc/distributed.h"

/* The version of the headers; popc_version() gives the library's, which
** a program linked against an older or newer libpopc sees differ. */
#define POPC_VERSION_STRING "0.3.0"

/* The version of the libpopc the program runs with ("0.3.0"). Static
** storage; thread-safe. Since 0.3.0. */
POPC_API const char *popc_version(void);

#endif /* POPC_H */
