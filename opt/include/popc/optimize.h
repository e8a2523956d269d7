/* popc/optimize.h - graph optimization passes, the compiler of opt/.
**
** A model's compile runs them on its own copy of the graph at the
** optimizationLevel option (popc options), after the input shapes are
** bound and the pipeline stages resolved, before autodiff and the memory
** plan; C programs may
** also run them on a graph of their own. The levels follow ONNX Runtime's:
**   0  nothing;
**   1  basic: constant folding, BatchNormalization folded into the Conv
**      or Gemm before it, Identity and inference Dropout removed,
**      transposes and reshapes that cancel or chain;
**   2  extended: also the GELU and LayerNorm that torch.onnx.export
**      writes as small ops recognised as one op (Gelu,
**      LayerNormalization), nn.MultiheadAttention's scaled dot-product
**      attention as one popc::Attention, and Conv, Gemm and MatMul fused
**      with their
**      bias, a residual Add and an activation (Relu, Clip/ReLU6,
**      LeakyRelu, Sigmoid, Tanh, GELU, SiLU) into popc::FusedConv and
**      popc::FusedMatMul, and convolutions with their pools and
**      activations in blocked NCHWc layouts (docs/optimizer.md).
** A training graph gets the passes whose results autodiff can
** differentiate: folding of constants, copies, transposes and reshapes,
** the GELU and LayerNorm recognition, and a MatMul by a 2-D weight with
** its bias Add made one Gemm (whose gradient takes the weight and bias
** gradients together). BatchNormalization folding
** (training normalises by the batch), attention recognition, the
** fusions (the fused ops have no gradient) and the blocked layouts apply
** to inference only.
** Only constants are folded: weights (initializers) keep their
** names and stay updatable (popc_model_set_weight, copyWeightsToDevice).
** Every rewrite keeps the graph's outputs within the float tolerance
** docs/optimizer.md states. Since 0.4.0; conventions (ownership, status
** codes, threads): popc/status.h.
*/
#ifndef POPC_OPTIMIZE_H
#define POPC_OPTIMIZE_H

#include "popc/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Highest optimizationLevel popc has. */
#define POPC_OPT_LEVEL_MAX 2

typedef struct popc_optimize_options {
    uint32_t size;             /* sizeof(popc_optimize_options) */
    int level;                 /* 0 .. POPC_OPT_LEVEL_MAX */
    int training;              /* 1: the graph will be trained */
    /* values (by name) that must survive, e.g. anchors */
    const char *const *keep;
    int n_keep;
} popc_optimize_options;

/* Rewrite g in place at o->level (level 2 when o is NULL). Value and node
** ids of g change; names of inputs, weights, outputs and kept values stay.
** *rewrites (may be NULL) receives the number of rewrites made. Returns
** POPC_OK, POPC_EINVAL (g NULL, a level outside 0..POPC_OPT_LEVEL_MAX, o
** too small), POPC_ENOMEM, or the status of a failed constant fold. On
** failure g may be partly rewritten but still computes the same outputs.
** Not thread-safe on one graph. Since 0.4.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_optimize(popc_graph *g,
    const popc_optimize_options *o, int *rewrites);

#ifdef __cplusplus
}
#endif

#endif /* POPC_OPTIMIZE_H */
