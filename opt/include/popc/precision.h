/* precision.h - half precision: PopTorch's model.half() for a popc graph.
**
** popc_graph_to_half copies a graph with its floating-point weights,
** buffers and constants in float16, as an IPU stores them. An op that
** computes float16 itself gets float16 operands; an op that computes
** float32 only gets its float16 operands cast to float32 and its float
** results cast back to float16 (the IPU's float partials: half storage,
** single-precision arithmetic inside the op). The host interface stays
** float32: float32 inputs are cast to float16 on the device, float
** outputs come back as float32 (the most precise version the graph has),
** so data loaders and run files work unchanged.
**
** Options read (opts may be NULL: PopTorch's defaults):
**   Precision.runningStatisticsAlwaysFloat (true): buffers (non-trainable
**       initializers such as BatchNorm's running mean and variance) stay
**       float32;
**   Precision.halfFloatCasting: an op mixing float16 and float32 operands
**       computes in float16, its float32 operands cast down
**       (FloatDowncastToHalf, and Default as in PopTorch 3), or in float32
**       with a float32 result (HalfUpcastToFloat).
**
** Since 0.2.0.
**
** The conventions of popc/status.h (ownership, status codes, threads)
** apply.
*/
#ifndef POPC_PRECISION_H
#define POPC_PRECISION_H

#include "popc/graph.h"
#include "popc/options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The float16 copy of g: the caller owns *out and frees it with
** popc_graph_free(). prefixes: comma-separated name prefixes of the
** weights to convert ("fc1.,conv1."); NULL or "" converts every float32
** initializer and constant (model.half()); a part of the model converts
** only the weights named. Node names, value names of weights and
** annotations are kept, and so is the origin mark (popc_graph_set_origin):
** foreign code in a file's graph still needs the user's consent.
** POPC_OK, POPC_EINVAL (g or out NULL; naming the node when an op accepts
** neither float16 nor float32 operands), POPC_ECOMPILE (a cycle),
** POPC_EUNSUPPORTED (a node with over 64 inputs or outputs),
** POPC_ENOTFOUND (no Cast op loaded), POPC_ENOMEM, or the codes of
** popc_graph_add_node. Safe from any thread while no thread changes g or
** opts. Since 0.2.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_to_half(const popc_graph *g,
    const char *prefixes, const popc_options *opts, popc_graph **out);

#ifdef __cplusplus
}
#endif
#endif /* POPC_PRECISION_H */
