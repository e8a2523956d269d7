/* blocks.c - the Block context of the C builder and explicit stage lists
** (PopTorch's Block, BeginBlock, Stage, Phase; see popc/blocks.h).
**
** A block is nothing but the graph's current annotations (block id, IPU)
** plus one flag: after popc_block_end the graph refuses new ops until a
** block begins again. The strategy turns the annotations into stages when
** a model is compiled (strategy/stages.c). The graph keeps that context;
** this layer sets it through core/layer/strategy.h.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/blocks.h"
#include "core/layer/alloc.h"
#include "core/layer/strategy.h"

popc_status popc_block_begin(popc_graph *g, const char *user_id, int ipu_id)
{
    char auto_id[24], *id;

    if (!g)
        return popc_set_error(POPC_EINVAL, "popc_block_begin: graph is NULL");
    if (user_id && !user_id[0])
        return popc_set_error(POPC_EINVAL, "popc_block_begin: empty block id "
                              "(use NULL for an automatic one)");
    if (ipu_id < -1)
        return popc_set_error(POPC_EINVAL, "popc_block_begin: block '%s': "
                              "ipu_id %d; use -1 for none or an IPU >= 0",
                              user_id ? user_id : "(auto)", ipu_id);
    if (!user_id) {
        snprintf(auto_id, sizeof auto_id, "%d",
                 popci_graph_block_next_id(g));
        user_id = auto_id;
    }
    if (!(id = popci_strdup(user_id)))
        return popc_set_error(POPC_ENOMEM, "popc_block_begin: out of memory");
    if (user_id == auto_id)
        popci_graph_set_block_next_id(g, popci_graph_block_next_id(g) + 1);
    popci_graph_set_block(g, id, ipu_id, 0);
    return POPC_OK;
}

popc_status popc_block_end(popc_graph *g)
{
    if (!g)
        return popc_set_error(POPC_EINVAL, "popc_block_end: graph is NULL");
    if (!popc_graph_annotations(g).block)
        return popc_set_error(POPC_ESTATE, "popc_block_end: no active Block "
                              "in graph '%s'; start one with "
                              "popc_block_begin", popc_graph_name(g));
    popci_graph_set_block(g, NULL, -1, 1);
    return POPC_OK;
}

void popc_block_use_auto_id(popc_graph *g)
{
    if (g)
        popci_graph_set_block_next_id(g, 0);
}

/* ---- explicit stages ---------------------------------------------------- */

/* Stage of block id in the specs, -1 when not listed. */
static int stage_of(const popc_stage_spec *stages, int n, const char *id)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < stages[i].n_blocks; j++)
            if (strcmp(stages[i].blocks[j], id) == 0)
                return i;
    return -1;
}

static popc_status check_specs(const popc_stage_spec *stages, int n)
{
    if (!stages || n < 1)
        return popc_set_error(POPC_EINVAL, "popc_graph_set_stages: no "
                              "stages given");
    for (int i = 0; i < n; i++) {
        const popc_stage_spec *s = &stages[i];

        if (s->n_blocks < 1 || !s->blocks)
            return popc_set_error(POPC_EINVAL, "popc_graph_set_stages: stage "
                                  "%d lists no blocks", i);
        if (s->ipu < -1 || s->phase < -1)
            return popc_set_error(POPC_EINVAL, "popc_graph_set_stages: stage "
                                  "%d: ipu %d, phase %d; use -1 for none or "
                                  "a value >= 0", i, s->ipu, s->phase);
        for (int j = 0; j < s->n_blocks; j++) {
            const char *id = s->blocks[j];

            if (!id || !id[0])
                return popc_set_error(POPC_EINVAL, "popc_graph_set_stages: "
                                      "stage %d: block %d has no id", i, j);
            /* the first listing must be this one */
            for (int k = 0; k <= i; k++)
                for (int l = 0; l < stages[k].n_blocks; l++) {
                    if (k == i && l == j)
                        break;
                    if (strcmp(stages[k].blocks[l], id) == 0)
                        return popc_set_error(POPC_EINVAL, "%s associated "
                                              "with more than one stage",
                                              id);
                }
        }
    }
    return POPC_OK;
}

/* "Unknown Block 'X' list of expected Blocks: ['A', 'B']" */
static popc_status unknown_block(const popc_stage_spec *stages, int n,
                                 const char *id)
{
    char list[1024];
    size_t len = 0;

    list[0] = '\0';
    for (int i = 0; i < n && len < sizeof list; i++)
        for (int j = 0; j < stages[i].n_blocks && len < sizeof list; j++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s'%s'",
                                    len ? ", " : "", stages[i].blocks[j]);
    return popc_set_error(POPC_EINVAL, "Unknown Block '%s' list of expected "
                          "Blocks: [%s]", id, list);
}

popc_status popc_graph_set_stages(popc_graph *g, const popc_stage_spec *stages,
                                  int n_stages)
{
    popc_status st;

    if (!g)
        return popc_set_error(POPC_EINVAL, "popc_graph_set_stages: graph is "
                              "NULL");
    if ((st = check_specs(stages, n_stages)) != POPC_OK)
        return st;
    for (int k = 0; k < popc_graph_n_nodes(g); k++) {
        const char *id = popc_graph_node_annotations(g, k).block;
        if (id && stage_of(stages, n_stages, id) < 0)
            return unknown_block(stages, n_stages, id);
    }
    for (int k = 0; k < popc_graph_n_nodes(g); k++) {
        popc_annotations a = popc_graph_node_annotations(g, k);
        int s;

        if (!a.block)
            continue;
        s = stage_of(stages, n_stages, a.block);
        popci_graph_place_node(g, k,
                               stages[s].ipu >= 0 ? stages[s].ipu : a.ipu, s,
                               stages[s].phase >= 0 ? stages[s].phase
                                                    : a.phase);
    }
    return POPC_OK;
}
