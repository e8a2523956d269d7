/* popc.h - umbrella header for applications: every layer of libpopc
** (the core, helpers, data and run; ONNX is popc/onnx.h, libpopc-onnx). */
#ifndef POPC_H
#define POPC_H

#include "popc/status.h"
#include "popc/file.h"
#include "popc/limits.h"
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
#include "popc/version.h"
#include "popc/helpers.h"
#include "popc/module.h"
#include "popc/run.h"

#endif /* POPC_H */
