/* nn.c - the "nn" op plugin: MatMul, Gemm, Conv, pools, normalisations,
** Softmax/LogSoftmax and the popc:: gradient ops they use. */
#include "config.h"

#include "ops/nn/blocked.h"
#include "ops/nn/nn_priv.h"
#include "ops/util/oputil.h"

static popc_status nn_init(const popc_host *host, popc_registrar *reg)
{
    popc_status st;

    if ((st = opu_init(host, "nn")) != POPC_OK)
        return st;
    if ((st = nn_register_matmul(host, reg)) != POPC_OK ||
        (st = nn_register_gemm_grad(host, reg)) != POPC_OK ||
        (st = nn_register_conv(host, reg)) != POPC_OK ||
        (st = nn_register_conv_grad(host, reg)) != POPC_OK ||
        (st = nn_register_pool(host, reg)) != POPC_OK ||
        (st = nn_register_nd(host, reg)) != POPC_OK ||
        (st = nn_register_norm_more(host, reg)) != POPC_OK ||
        (st = nn_register_resize(host, reg)) != POPC_OK ||
        (st = nn_register_recurrent(host, reg)) != POPC_OK ||
        (st = nn_register_grid_sample(host, reg)) != POPC_OK ||
        (st = nn_register_norm(host, reg)) != POPC_OK ||
        (st = nn_register_softmax(host, reg)) != POPC_OK ||
        (st = nn_register_fused(host, reg)) != POPC_OK ||
        (st = nn_register_blocked(host, reg)) != POPC_OK ||
        (st = nn_register_attention(host, reg)) != POPC_OK ||
        (st = nn_register_conv_kernels(host, reg)) != POPC_OK)
        return st;
    return POPC_OK;
}

POPC_PLUGIN_DEFINE(nn, "0.1.0",
                   "MatMul, Gemm, Conv, pools, norms, softmax and their grads",
                   "MIT", nn_init, NULL)
