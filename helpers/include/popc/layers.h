/* layers.h - torch.nn-style builders that add ops and their parameters to a
** graph.
**
** Each builder adds the nodes of one layer at the graph's current scope and
** annotations, and creates the layer's parameters as initializers named as
** PyTorch names them: "<name>.weight", "<name>.bias", "<name>.running_mean",
** "<name>.running_var". Parameters get PyTorch's default initialisation,
** drawn from a counter-based generator keyed by (seed, parameter name):
** the same seed and names give the same weights on every run and machine,
** whatever the order the layers are built in.
**
**   Linear, Conv2d  weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))
**                   (kaiming_uniform_ with a = sqrt(5), as torch does)
**   norms           weight 1, bias 0; BatchNorm running_mean 0,
**                   running_var 1
**
** A name may be NULL: "<kind>_<n>" is generated ("linear_0"), counted
** per builder and skipping names the graph already uses, so generated
** names never clash (two builders on one graph included).
** Every builder returns POPC_OK, POPC_EINVAL (bad argument, e.g. a size
** < 1, with the layer named), POPC_EEXIST (a parameter or node name is
** taken), POPC_ESTATE (adding ops after popc_block_end), POPC_ENOMEM, or
** the error of shape inference when the input does not fit the layer (the
** op's message, naming the node). Output value ids are written to *y /
** *loss; on failure they are -1 and the graph may hold the parameters
** created so far.
**
** Threads: a builder and its graph are used by one thread at a time;
** builders of different graphs are independent.
**
** Ops used: ai.onnx Gemm (2-D input; MatMul + Add for other ranks), Conv,
** MaxPool, AveragePool, GlobalAveragePool, BatchNormalization,
** LayerNormalization, Flatten, Dropout, Softmax, LogSoftmax,
** SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss and the activation
** named; popc MseLoss, L1Loss, IdentityLoss.
**
** Since 0.1.0 unless a function says otherwise; the conventions of
** popc/status.h (ownership, status codes, threads) apply.
*/
#ifndef POPC_LAYERS_H
#define POPC_LAYERS_H

#include <stdint.h>
#include "popc/status.h"
#include "popc/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct popc_layers popc_layers; /* opaque */

/* A builder for g (borrowed: g must outlive it) drawing its parameters
** from seed. The caller owns *out and frees it with popc_layers_free.
** POPC_OK, POPC_EINVAL (g or out NULL), POPC_ENOMEM. Thread-safe: g is
** not touched here. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_layers_new(popc_graph *g,
    uint64_t seed, popc_layers **out);
/* Frees L; the layers it built stay in the graph. NULL-safe. Not
** thread-safe on one builder. Since 0.1.0. */
POPC_API void popc_layers_free(popc_layers *L); /* NULL-safe */

/* y = x W^T + b; weight [out, in], bias [out]. x's last dim must be
** in_features. POPC_OK, POPC_EINVAL, POPC_EEXIST, POPC_ESTATE,
** POPC_ENOMEM (see above). Not thread-safe on one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_nn_linear(popc_layers *L,
    const char *name, int x, int64_t in_features, int64_t out_features,
    int bias, int *y);

/* NCHW convolution; weight [out_ch, in_ch / groups, k, k], bias [out_ch].
** in_ch and out_ch must be divisible by groups. POPC_OK, POPC_EINVAL,
** POPC_EEXIST, POPC_ESTATE, POPC_ENOMEM (see above). Not thread-safe on
** one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_nn_conv2d(popc_layers *L,
    const char *name, int x, int64_t in_ch, int64_t out_ch, int64_t kernel,
    int64_t stride, int64_t padding, int64_t dilation, int64_t groups,
    int bias, int *y);

/* MaxPool2d: stride <= 0 means stride = kernel (torch's default);
** padding at most half the kernel. POPC_OK, POPC_EINVAL, POPC_ESTATE,
** POPC_ENOMEM (see above). Not thread-safe on one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_nn_maxpool2d(popc_layers *L, int x,
    int64_t kernel, int64_t stride, int64_t padding, int *y);
/* AvgPool2d: the arguments of popc_nn_maxpool2d; counts the padding
** (torch's count_include_pad = True). POPC_OK, POPC_EINVAL, POPC_ESTATE,
** POPC_ENOMEM (see above). Not thread-safe on one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_nn_avgpool2d(popc_layers *L, int x,
    int64_t kernel, int64_t stride, int64_t padding, int *y);
/* The mean over all spatial dimensions (GlobalAveragePool). POPC_OK,
** POPC_EINVAL, POPC_ESTATE, POPC_ENOMEM (see above). Not thread-safe on
** one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_nn_global_avgpool(popc_layers *L,
    int x, int *y);

/* BatchNorm2d: weight, bias (trainable), running_mean, running_var
** (buffers, non-trainable) and popc_graph_add_update for both buffers from
** the node's outputs 1 and 2. momentum is torch's (0.1); the node's ONNX
** momentum attribute is 1 - momentum. eps > 0, momentum in [0, 1].
** POPC_OK, POPC_EINVAL, POPC_EEXIST, POPC_ESTATE, POPC_ENOMEM (see
** above). Not thread-safe on one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_nn_batchnorm2d(popc_layers *L,
    const char *name, int x, int64_t channels, double eps, double momentum,
    int *y);

/* LayerNorm over the last dimension (of size normalized_size); eps > 0.
** POPC_OK, POPC_EINVAL, POPC_EEXIST, POPC_ESTATE, POPC_ENOMEM (see
** above). Not thread-safe on one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_nn_layernorm(popc_layers *L,
    const char *name, int x, int64_t normalized_size, double eps, int *y);

/* An ai.onnx activation by name: "Relu", "Gelu", "Sigmoid", "Tanh",
** "LeakyRelu" (alpha = negative slope), "Elu", "Celu" (alpha), ...; alpha
** is passed to LeakyRelu, Elu, Celu and ThresholdedRelu only (other ops,
** HardSigmoid and Selu included, keep their defaults). An unknown op is
** accepted here and reported by popc_graph_verify. POPC_OK, POPC_EINVAL
** (op NULL or empty, ...), POPC_ESTATE, POPC_ENOMEM (see above). Not
** thread-safe on one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_nn_activation(popc_layers *L,
    const char *op, int x, double alpha, int *y);

/* Flatten to 2-D at axis (ONNX Flatten). POPC_OK, POPC_EINVAL,
** POPC_ESTATE, POPC_ENOMEM (see above). Not thread-safe on one graph.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_nn_flatten(popc_layers *L, int x,
    int64_t axis, int *y);
/* p in [0, 1): drop probability (active only when training). POPC_OK,
** POPC_EINVAL, POPC_ESTATE, POPC_ENOMEM (see above). Not thread-safe on
** one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_nn_dropout(popc_layers *L, int x,
    double p, int *y);
/* Softmax over axis; log != 0: LogSoftmax. POPC_OK, POPC_EINVAL,
** POPC_ESTATE, POPC_ENOMEM (see above). Not thread-safe on one graph.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_nn_softmax(popc_layers *L, int x,
    int64_t axis, int log, int *y);

/* Losses. reduction is torch's: "mean", "sum" or "none"; NULL = "mean".
** labels are int32 or int64 class indices.
**
** CrossEntropyLoss on logits (SoftmaxCrossEntropyLoss). POPC_OK,
** POPC_EINVAL (another reduction, ...), POPC_ESTATE, POPC_ENOMEM (see
** above). Not thread-safe on one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_nn_cross_entropy(popc_layers *L,
    int logits, int labels, const char *reduction, int *loss);
/* NLLLoss on log probabilities (NegativeLogLikelihoodLoss). POPC_OK,
** POPC_EINVAL (another reduction, ...), POPC_ESTATE, POPC_ENOMEM (see
** above). Not thread-safe on one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_nn_nll_loss(popc_layers *L,
    int log_probs, int labels, const char *reduction, int *loss);
/* MSELoss of x against target. POPC_OK, POPC_EINVAL (another reduction,
** ...), POPC_ESTATE, POPC_ENOMEM (see above). Not thread-safe on one
** graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_nn_mse_loss(popc_layers *L, int x,
    int target, const char *reduction, int *loss);
/* L1Loss of x against target. POPC_OK, POPC_EINVAL (another reduction,
** ...), POPC_ESTATE, POPC_ENOMEM (see above). Not thread-safe on one
** graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_nn_l1_loss(popc_layers *L, int x,
    int target, const char *reduction, int *loss);
/* poptorch.identity_loss: marks x (reduced) as the loss. A reduction
** other than "sum", "mean", "none" (NULL included) is POPC_EINVAL
** "Unsupported reduction type!". POPC_OK, POPC_EINVAL, POPC_ESTATE,
** POPC_ENOMEM (see above). Not thread-safe on one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_nn_identity_loss(popc_layers *L,
    int x, const char *reduction, int *loss);

#ifdef __cplusplus
}
#endif
#endif /* POPC_LAYERS_H */
