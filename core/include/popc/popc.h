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

#define POPC_VERSION_STRING "0.1.0"

#endif /* POPC_H */
