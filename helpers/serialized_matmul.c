/* serialized_matmul.c - poptorch.serializedMatMul: one MatMul node whose
** attributes ask the nn plugin to compute it as `factor` products, one
** after the other (ops/nn/matmul_serial.h holds the kernel's rules). */
#include "config.h"

#include "popc/helpers.h"
#include "popc/plugin.h"

static const char *const mode_attr[] = {"none", "input_channels",
                                        "reducing_dim", "output_channels"};
static const char *const mode_name[] = {"Disabled", "InputChannels",
                                        "ReducingDim", "OutputChannels"};

popc_status popc_serialized_matmul(popc_graph *g, int lhs, int rhs,
                                   popc_matmul_serialization mode,
                                   int64_t factor, int keep_precision,
                                   int *out)
{
    popc_attr a[3];
    int n = 0;

    if (!g || !out)
        return popc_set_error(POPC_EINVAL, "serializedMatMul: graph and "
                              "output must not be NULL");
    if ((int)mode < 0 || mode > POPC_MATMUL_SERIALIZE_OUTPUT_CHANNELS)
        return popc_set_error(POPC_EINVAL, "serializedMatMul: mode %d is not "
                              "a popc_matmul_serialization; use "
                              "POPC_MATMUL_SERIALIZE_*", (int)mode);
    if (mode != POPC_MATMUL_SERIALIZE_DISABLED && factor < 1)
        return popc_set_error(POPC_EINVAL, "serializedMatMul: factor %lld "
                              "with mode %s; give the number of products "
                              "(>= 1, a divisor of the split dimension)",
                              (long long)factor, mode_name[mode]);
    if (mode != POPC_MATMUL_SERIALIZE_DISABLED) {
        a[n++] = (popc_attr){.name = "serialization_mode",
                             .type = POPC_ATTR_STRING,
                             .s = mode_attr[mode]};
        a[n++] = (popc_attr){.name = POPC_ATTR_SERIAL_FACTOR,
                             .type = POPC_ATTR_INT, .i = factor};
        a[n++] = (popc_attr){.name = "keep_precision", .type = POPC_ATTR_INT,
                             .i = keep_precision != 0};
    }
    /* shape inference checks that factor divides the split dimension */
    return popc_graph_add_node(g, NULL, "MatMul", 0, (int[]){lhs, rhs}, 2,
                               out, 1, n ? a : NULL, n, NULL, NULL);
}
