/* overlap.c - PopTorch's set_overlap_for_input / set_overlap_for_output:
** an Identity node marked with POPC_ATTR_OVERLAP_INPUT or _OUTPUT, which
** the core turns into the slot's host-I/O bits (strategy/host_io.c)
** and the IPU model into I/O-tile buffers and hidden transfer cycles. */
#include "config.h"

#include "popc/helpers.h"

static popc_status mark(popc_graph *g, const char *who, const char *attr,
                        int value, popc_overlap_mode mode, int *out)
{
    popc_attr a = {.name = attr, .type = POPC_ATTR_INT, .i = (int64_t)mode};

    if (!g || !out)
        return popc_set_error(POPC_EINVAL, "%s: graph and output must not "
                              "be NULL", who);
    if ((int)mode < POPC_OVERLAP_NONE ||
        (int)mode > POPC_OVERLAP_DEVICE_ITERATION_LOOP)
        return popc_set_error(POPC_EINVAL, "%s: mode %d is not an "
                              "OverlapMode; use POPC_OVERLAP_NONE, "
                              "POPC_OVERLAP_ACCUMULATION_LOOP or "
                              "POPC_OVERLAP_DEVICE_ITERATION_LOOP", who,
                              (int)mode);
    if (value < 0 || value >= popc_graph_n_values(g))
        return popc_set_error(POPC_EINVAL, "%s: value %d is not a value of "
                              "graph '%s'", who, value, popc_graph_name(g));
    if (mode == POPC_OVERLAP_NONE) {
        *out = value;
        return POPC_OK;
    }
    return popc_graph_add_node(g, NULL, "Identity", 0, &value, 1, out, 1, &a,
                               1, NULL, NULL);
}

popc_status popc_set_overlap_for_input(popc_graph *g, int input,
                                       popc_overlap_mode mode, int *out)
{
    const char *who = "set_overlap_for_input";

    if (g && input >= 0 && input < popc_graph_n_values(g) &&
        popc_graph_value_kind(g, input) != POPC_VALUE_INPUT)
        return popc_set_error(POPC_EINVAL, "poptorch.set_overlap_for_input "
                              "applied on a node which is not a tensor "
                              "input to the model ('%s' of graph '%s'); "
                              "overlap the graph's inputs only",
                              popc_graph_value_name(g, input),
                              popc_graph_name(g));
    return mark(g, who, POPC_ATTR_OVERLAP_INPUT, input, mode, out);
}

popc_status popc_set_overlap_for_output(popc_graph *g, int output,
                                        popc_overlap_mode mode, int *out)
{
    return mark(g, "set_overlap_for_output", POPC_ATTR_OVERLAP_OUTPUT, output,
                mode, out);
}
