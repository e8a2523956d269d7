/* epilogue.h - what a fused kernel does to each stretch of output it has
** just written, while it is still in cache: add a residual of the
** output's shape, then apply an activation (popc::FusedConv,
** popc::FusedMatMul; the graph optimizer in opt/ makes them).
*/
#ifndef POPC_OPS_NN_EPILOGUE_H
#define POPC_OPS_NN_EPILOGUE_H

#include <stdint.h>

#include "popc/plugin.h"

typedef enum nn_act {
    NN_ACT_NONE = 0,
    NN_ACT_RELU,
    NN_ACT_CLIP,       /* params: min, max (ReLU6: 0, 6) */
    NN_ACT_LEAKY,      /* params: alpha */
    NN_ACT_SIGMOID,
    NN_ACT_TANH,
    NN_ACT_GELU,       /* erf form: x * (1 + erf(x / sqrt 2)) / 2 */
    NN_ACT_SILU        /* x * sigmoid(x) */
} nn_act;

typedef struct nn_epilogue {
    nn_act act;
    float lo, hi;      /* Clip's bounds; LeakyRelu's alpha in lo */
    float *y0;         /* the whole output: residual offsets count from it */
    const float *z;    /* residual of the output's shape, or NULL */
} nn_epilogue;

/* The "activation" and "activation_params" attributes of op's node:
** POPC_OK, or POPC_EINVAL naming the node and the activations known. */
popc_status nn_epilogue_parse(const char *op, const char *node,
                              const popc_attrs *attrs, nn_epilogue *e);
/* y[0..n) = act(y + z at y's offset); nothing for NULL e. */
void nn_epilogue_apply(const nn_epilogue *e, float *y, int64_t n);
/* Element ops of the activation per output element, for cost(). */
double nn_epilogue_flops(const nn_epilogue *e);

#endif /* POPC_OPS_NN_EPILOGUE_H */
