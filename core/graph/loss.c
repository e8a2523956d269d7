/* loss.c - finding the one final loss of a training graph (PopTorch's rule,
** docs/semantics.md §3).
**
** A loss node is any node whose op carries POPC_OP_LOSS: popc::IdentityLoss
** (poptorch.identity_loss) and the loss ops (SoftmaxCrossEntropyLoss,
** MseLoss, ...). A loss whose result flows, through any path, into another
** loss only feeds that one (PopTorch turns it into a plain reduction, which
** is what IdentityLoss computes anyway), so it is not final. Exactly one
** final loss must remain. The error texts are PopTorch's, verbatim, with a
** popc hint after them.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"

static int is_loss(const popc_graph *g, int n)
{
    const popc_op_def *def = popci_graph_node_def_c(g, n);

    return def && (def->flags & POPC_OP_LOSS) && g->nodes[n].n_outputs > 0;
}

popc_status popci_graph_final_loss(const popc_graph *g, int *loss_value)
{
    popci_consumers c = {0};
    int *order = NULL, n_final = 0, first = -1;
    unsigned char *loss = NULL, *feeds = NULL;
    popci_sb names = {0};
    popc_status st;
    char *list;

    *loss_value = -1;
    order = popci_malloc(((size_t)g->n_nodes + 1) * sizeof *order);
    loss = popci_calloc((size_t)g->n_nodes + 1, 1);
    feeds = popci_calloc((size_t)g->n_nodes + 1, 1);
    if (!order || !loss || !feeds) {
        st = popc_set_error(POPC_ENOMEM, "graph: out of memory");
        goto done;
    }
    if ((st = popci_graph_topo(g, order)) != POPC_OK ||
        (st = popci_consumers_build(g, &c)) != POPC_OK)
        goto done;
    for (int n = 0; n < g->n_nodes; n++)
        loss[n] = (unsigned char)is_loss(g, n);
    /* feeds[n]: some output of n reaches a loss node (reverse topo order,
    ** so consumers are settled first) */
    for (int k = g->n_nodes - 1; k >= 0; k--) {
        int n = order[k];
        const popci_node *x = &g->nodes[n];

        for (int j = 0; j < x->n_outputs && !feeds[n]; j++) {
            int v = x->outputs[j];
            for (int i = c.start[v]; i < c.start[v + 1]; i++)
                if (loss[c.idx[i]] || feeds[c.idx[i]]) {
                    feeds[n] = 1;
                    break;
                }
        }
    }
    for (int n = 0; n < g->n_nodes; n++) {
        if (!loss[n] || feeds[n])
            continue;
        if (first < 0)
            first = n;
        popci_sb_printf(&names, "%s'%s'", n_final ? ", " : "",
                        g->nodes[n].name);
        n_final++;
    }
    if (n_final == 1) {
        *loss_value = g->nodes[first].outputs[0];
        st = POPC_OK;
    } else if (n_final == 0) {
        st = popc_set_error(POPC_ECOMPILE, "Couldn't find a loss in graph! "
                            "(graph '%s': training needs a node whose op is "
                            "a loss: wrap the loss in popc::IdentityLoss "
                            "(popc_nn_identity_loss) or use a loss op such "
                            "as SoftmaxCrossEntropyLoss)", g->name);
    } else {
        list = popci_sb_take(&names);
        st = popc_set_error(POPC_ECOMPILE, "Multiple independent losses found "
                            "in graph. Graph must have one final loss. Wrap "
                            "final graph loss in poptorch.identity_loss. "
                            "(graph '%s': final losses %s; combine them, e.g. "
                            "with Add, and pass the sum to "
                            "popc_nn_identity_loss)", g->name,
                            list ? list : "");
        free(list);
    }
done:
    popci_sb_free(&names);
    popci_consumers_free(&c);
    free(order);
    free(loss);
    free(feeds);
    return st;
}
