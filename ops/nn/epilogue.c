/* epilogue.c - residual and activation applied by fused kernels to
** output they have just written (epilogue.h). The arithmetic is that of
** the separate ops (Add, then Relu, Clip, ...), so a fused graph's
** results match the unfused one's: bitwise for Add, Relu, Clip and
** LeakyRelu, within libm's rounding for the others.
*/
#include "config.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <math.h>
#include <string.h>

#include "ops/nn/epilogue.h"
#include "ops/nn/nn_priv.h"
#include "ops/util/oputil.h"

static const struct {
    const char *name;
    nn_act act;
    int params;
} acts[] = {
    {"", NN_ACT_NONE, 0},        {"Relu", NN_ACT_RELU, 0},
    {"Clip", NN_ACT_CLIP, 2},    {"LeakyRelu", NN_ACT_LEAKY, 1},
    {"Sigmoid", NN_ACT_SIGMOID, 0}, {"Tanh", NN_ACT_TANH, 0},
    {"Gelu", NN_ACT_GELU, 0},    {"SiLU", NN_ACT_SILU, 0},
};
#define N_ACTS ((int)(sizeof acts / sizeof acts[0]))

popc_status nn_epilogue_parse(const char *op, const char *node,
                              const popc_attrs *attrs, nn_epilogue *e)
{
    const char *name = popc_attr_string(attrs, "activation", "");
    const popc_attr *p = popc_attrs_find(attrs, "activation_params");

    memset(e, 0, sizeof *e);
    for (int i = 0; i < N_ACTS; i++) {
        if (strcmp(acts[i].name, name) != 0)
            continue;
        if (acts[i].params &&
            (!p || p->type != POPC_ATTR_FLOATS || p->n != acts[i].params))
            return opu_error(POPC_EINVAL, op, node, "activation %s needs %d "
                             "activation_params", name, acts[i].params);
        e->act = acts[i].act;
        if (acts[i].params > 0)
            e->lo = (float)p->floats[0];
        if (acts[i].params > 1)
            e->hi = (float)p->floats[1];
        return POPC_OK;
    }
    return opu_error(POPC_EINVAL, op, node, "activation '%s' is unknown; use "
                     "Relu, Clip, LeakyRelu, Sigmoid, Tanh, Gelu, SiLU or "
                     "none", name);
}

static void add_residual(float *restrict y, const float *restrict z,
                         int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] += z[i];
}

void nn_epilogue_apply(const nn_epilogue *e, float *y, int64_t n)
{
    if (!e)
        return;
    if (e->z)
        add_residual(y, e->z + (y - e->y0), n);
    switch (e->act) {
    case NN_ACT_NONE:
        break;
    case NN_ACT_RELU:
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] < 0.0f ? 0.0f : y[i];
        break;
    case NN_ACT_CLIP:
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] < e->lo ? e->lo : y[i] > e->hi ? e->hi : y[i];
        break;
    case NN_ACT_LEAKY:
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] > 0.0f ? y[i] : y[i] * e->lo;
        break;
    case NN_ACT_SIGMOID:
        for (int64_t i = 0; i < n; i++)
            y[i] = 1.0f / (1.0f + expf(-y[i]));
        break;
    case NN_ACT_TANH:
        for (int64_t i = 0; i < n; i++)
            y[i] = tanhf(y[i]);
        break;
    case NN_ACT_GELU:
        for (int64_t i = 0; i < n; i++)
            y[i] = 0.5f * y[i] * (1.0f + erff(y[i] * 0.70710678118654752f));
        break;
    case NN_ACT_SILU:
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] / (1.0f + expf(-y[i]));
        break;
    }
}

double nn_epilogue_flops(const nn_epilogue *e)
{
    double f = e->z ? 1.0 : 0.0;

    switch (e->act) {
    case NN_ACT_NONE: return f;
    case NN_ACT_RELU: case NN_ACT_CLIP: case NN_ACT_LEAKY: return f + 1.0;
    default: return f + 8.0; /* a transcendental and a few operations */
    }
}
