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
** Precision.runningStatisticsAlwaysFloat (true by default, as in
** PopTorch) is the `keep_buffers_float` argument: buffers (non-trainable
** initializers such as BatchNorm's running mean and variance) stay
** float32.
**
** Since 0.2.0.
*/
#ifndef POPC_PRECISION_H
#define POPC_PRECISION_H

#include "popc/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The float16 copy of g (caller frees *out). prefixes: comma-separated
** name prefixes of the weights to convert ("fc1.,conv1."); NULL or ""
** converts every float32 initializer and constant (model.half()); a part
** of the model converts only the weights named. Node names, value names
** of weights and annotations are kept. POPC_EINVAL naming the node when an
** op accepts neither float16 nor float32 operands. */
POPC_API POPC_NODISCARD popc_status popc_graph_to_half(const popc_graph *g,
    const char *prefixes, int keep_buffers_float, popc_graph **out);

#ifdef __cplusplus
}
#endif
#endif /* POPC_PRECISION_H */
