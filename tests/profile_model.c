/* profile_model.c - see profile_model.h. */
#include "config.h"

#include <stddef.h>

#include "tests/profile_model.h"

popc_graph *profile_mlp(int64_t batch, int64_t hidden, int two_ipus,
                        int training)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    popc_annotations a = {.ipu = -1, .stage = -1, .phase = -1,
                          .recompute = -1};
    int64_t xd[2] = {batch, 784}, ld[1] = {batch};
    int x, labels = -1, h, r, o, loss;

    if (popc_graph_new(training ? "mlp_train" : "mlp", &g) != POPC_OK ||
        popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x) != POPC_OK ||
        (training && popc_graph_add_input(g, "labels", POPC_DTYPE_I32, ld,
                                          1, &labels) != POPC_OK) ||
        popc_layers_new(g, 7, &L) != POPC_OK)
        goto fail;
    a.ipu = 0;
    if ((two_ipus && popc_graph_set_annotations(g, &a) != POPC_OK) ||
        popc_nn_linear(L, "fc1", x, 784, hidden, 1, &h) != POPC_OK ||
        popc_nn_activation(L, "Relu", h, 0.0, &r) != POPC_OK)
        goto fail;
    a.ipu = 1;
    if ((two_ipus && popc_graph_set_annotations(g, &a) != POPC_OK) ||
        popc_nn_linear(L, "fc2", r, hidden, 10, 1, &o) != POPC_OK)
        goto fail;
    if (training) {
        if (popc_nn_cross_entropy(L, o, labels, "mean", &loss) != POPC_OK ||
            popc_graph_add_output(g, loss) != POPC_OK)
            goto fail;
    } else if (popc_graph_add_output(g, o) != POPC_OK) {
        goto fail;
    }
    popc_layers_free(L);
    return g;
fail:
    popc_layers_free(L);
    popc_graph_free(g);
    return NULL;
}

int profile_inputs(int64_t rows, int training, popc_tensor **in)
{
    int64_t xd[2] = {rows, 784}, ld[1] = {rows};
    float *x;
    int32_t *l;

    in[0] = in[1] = NULL;
    if (popc_tensor_new(POPC_DTYPE_F32, xd, 2, &in[0]) != POPC_OK)
        return 0;
    x = popc_tensor_data(in[0]);
    for (int64_t i = 0; i < rows * 784; i++)
        x[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    if (!training)
        return 1;
    if (popc_tensor_new(POPC_DTYPE_I32, ld, 1, &in[1]) != POPC_OK) {
        popc_tensor_free(in[0]);
        in[0] = NULL;
        return 0;
    }
    l = popc_tensor_data(in[1]);
    for (int64_t i = 0; i < rows; i++)
        l[i] = (int32_t)(i % 10);
    return 2;
}
