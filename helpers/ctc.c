/* ctc.c - poptorch.ctc_beam_search_decoder: one popc::CTCBeamSearchDecoder
** node (ops/popc/ctc_beam.c decodes). */
#include "config.h"

#include "popc/helpers.h"

popc_status popc_ctc_beam_search_decoder(popc_graph *g, int log_probs,
                                         int lengths, int blank,
                                         int beam_width, int top_paths,
                                         int outputs[3])
{
    popc_attr attrs[3] = {
        {.name = "blank", .type = POPC_ATTR_INT, .i = blank},
        {.name = "beam_width", .type = POPC_ATTR_INT, .i = beam_width},
        {.name = "top_paths", .type = POPC_ATTR_INT, .i = top_paths}};
    int in[2] = {log_probs, lengths};

    if (!g || !outputs)
        return popc_set_error(POPC_EINVAL, "ctc_beam_search_decoder: graph "
                              "or outputs is NULL");
    return popc_graph_add_node(g, POPC_DOMAIN_POPC, "CTCBeamSearchDecoder", 1,
                               in, 2, outputs, 3, attrs, 3, NULL, NULL);
}
