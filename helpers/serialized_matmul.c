/* serialized_matmul.c - poptorch.serializedMatMul: one MatMul node whose
** attributes ask the nn plugin to compute it as `factor` products, one
** after the other (ops/nn/matmul_serial.h holds the kernel's rules). */
#include "config.h"

#include <string.h>

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

/* M, N and K of MatMul or Gemm node `node`, from its operands' shapes. */
static popc_status product_dims(const popc_graph *g, int node, int gemm,
                                int64_t d[3])
{
    popc_view a = popc_graph_value_info(g, popc_graph_node_input(g, node, 0));
    popc_view b = popc_graph_value_info(g, popc_graph_node_input(g, node, 1));
    popc_attrs at = popc_graph_node_attrs(g, node);
    int ta = gemm && popc_attr_int(&at, "transA", 0);
    int tb = gemm && popc_attr_int(&at, "transB", 0);

    if (a.dtype == POPC_DTYPE_UNDEFINED || b.dtype == POPC_DTYPE_UNDEFINED ||
        a.rank < 1 || b.rank < 1)
        return popc_set_error(POPC_EINVAL, "serializedMatMul: the operands "
                              "of node '%s' have no known shape; serialize "
                              "a node whose inputs' shapes are inferred",
                              popc_graph_node_name(g, node));
    if (gemm) {
        d[0] = ta ? a.dims[1] : a.dims[0];
        d[2] = ta ? a.dims[0] : a.dims[1];
        d[1] = tb ? b.dims[0] : b.dims[1];
    } else {
        d[0] = a.rank == 1 ? 1 : a.dims[a.rank - 2];
        d[2] = a.dims[a.rank - 1];
        d[1] = b.rank == 1 ? 1 : b.dims[b.rank - 1];
    }
    return POPC_OK;
}

popc_status popc_serialize_matmul_node(popc_graph *g, int node,
                                       popc_matmul_serialization mode,
                                       int64_t factor, int keep_precision)
{
    static const int split[4] = {-1, 0, 2, 1}; /* mode -> M, N or K */
    const char *op, *domain;
    int64_t d[3];
    popc_attr a[3];
    int gemm;
    popc_status st;

    if (!g || node < 0 || node >= popc_graph_n_nodes(g))
        return popc_set_error(POPC_EINVAL, "serializedMatMul: no node %d in "
                              "the graph", node);
    op = popc_graph_node_op(g, node);
    domain = popc_graph_node_domain(g, node);
    gemm = strcmp(op, "Gemm") == 0;
    if ((domain && domain[0] && strcmp(domain, "ai.onnx") != 0) ||
        (!gemm && strcmp(op, "MatMul") != 0))
        return popc_set_error(POPC_EINVAL, "serializedMatMul: node '%s' is "
                              "%s; only MatMul and Gemm nodes serialize",
                              popc_graph_node_name(g, node), op);
    if ((int)mode < 0 || mode > POPC_MATMUL_SERIALIZE_OUTPUT_CHANNELS)
        return popc_set_error(POPC_EINVAL, "serializedMatMul: mode %d is not "
                              "a popc_matmul_serialization; use "
                              "POPC_MATMUL_SERIALIZE_*", (int)mode);
    if ((st = product_dims(g, node, gemm, d)) != POPC_OK)
        return st;
    if (mode != POPC_MATMUL_SERIALIZE_DISABLED &&
        (factor < 1 || d[split[mode]] % factor != 0))
        return popc_set_error(POPC_EINVAL, "serializedMatMul: factor %lld "
                              "does not divide the %s dimension (%lld) of "
                              "node '%s'; use a divisor of %lld",
                              (long long)factor, mode_attr[mode],
                              (long long)d[split[mode]],
                              popc_graph_node_name(g, node),
                              (long long)d[split[mode]]);
    a[0] = (popc_attr){.name = "serialization_mode", .type = POPC_ATTR_STRING,
                       .s = mode_attr[mode]};
    a[1] = (popc_attr){.name = POPC_ATTR_SERIAL_FACTOR, .type = POPC_ATTR_INT,
                       .i = mode == POPC_MATMUL_SERIALIZE_DISABLED ? 1
                                                                   : factor};
    a[2] = (popc_attr){.name = "keep_precision", .type = POPC_ATTR_INT,
                       .i = keep_precision != 0};
    for (int i = 0; i < 3; i++)
        if ((st = popc_graph_set_node_attr(g, node, &a[i])) != POPC_OK)
            return st;
    return POPC_OK;
}
