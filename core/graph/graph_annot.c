/* graph_annot.c - node annotations (name scope, block, ipu, stage, phase,
** recompute, available memory) and the graph's current ones, which every
** new node copies (the Block / name-scope context of PopTorch).
**
** The scope is a stack joined with '/'; popc_graph_set_annotations
** replaces the whole stack with its scope.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"

static char *dup_or_null(const char *s)
{
    return s ? popci_strdup(s) : NULL;
}

void popci_annot_free(popci_annot *a)
{
    free(a->scope);
    free(a->block);
    a->scope = a->block = NULL;
}

popc_status popci_annot_copy(popci_annot *dst, const popci_annot *src)
{
    *dst = *src;
    dst->scope = dup_or_null(src->scope);
    dst->block = dup_or_null(src->block);
    if ((src->scope && !dst->scope) || (src->block && !dst->block)) {
        popci_annot_free(dst);
        return popc_set_error(POPC_ENOMEM, "graph: out of memory");
    }
    return POPC_OK;
}

void popci_annot_reset(popci_annot *a)
{
    popci_annot_free(a);
    a->ipu = a->stage = a->phase = a->recompute = -1;
    a->available_memory = 0.0;
    a->n_frames = 0;
}

static popc_status check_annotations(const popc_annotations *a)
{
    if (a->ipu < -1 || a->stage < -1 || a->phase < -1 || a->recompute < -1)
        return popc_set_error(POPC_EINVAL, "annotations: ipu %d, stage %d, "
                              "phase %d, recompute %d: use -1 for 'not set' "
                              "or a value >= 0", a->ipu, a->stage, a->phase,
                              a->recompute);
    if (!(a->available_memory == 0.0 ||
          (a->available_memory > 0.0 && a->available_memory <= 1.0)))
        return popc_set_error(POPC_EINVAL, "annotations: available memory "
                              "proportion %g is outside (0, 1] (0: not set)",
                              a->available_memory);
    return POPC_OK;
}

void popci_graph_clear_scopes(popc_graph *g)
{
    for (int i = 0; i < g->n_scopes; i++)
        free(g->scopes[i]);
    g->n_scopes = 0;
    free(g->scope_joined);
    g->scope_joined = NULL;
}

static popc_status join_scopes(popc_graph *g)
{
    size_t len = 1, at = 0;
    char *s;

    free(g->scope_joined);
    g->scope_joined = NULL;
    if (!g->n_scopes)
        return POPC_OK;
    for (int i = 0; i < g->n_scopes; i++)
        len += strlen(g->scopes[i]) + 1;
    if (!(s = popci_malloc(len)))
        return popc_set_error(POPC_ENOMEM, "graph: out of memory");
    for (int i = 0; i < g->n_scopes; i++) {
        size_t n = strlen(g->scopes[i]);
        if (i)
            s[at++] = '/';
        memcpy(s + at, g->scopes[i], n);
        at += n;
    }
    s[at] = '\0';
    g->scope_joined = s;
    return POPC_OK;
}

popc_status popc_graph_push_scope(popc_graph *g, const char *scope)
{
    popc_status st;
    char *s;

    if (!g || !scope || !scope[0])
        return popc_set_error(POPC_EINVAL, "popc_graph_push_scope: empty "
                              "scope name");
    if ((st = POPCI_GROW(g, scopes, cap_scopes, g->n_scopes + 1)) != POPC_OK)
        return st;
    if (!(s = popci_strdup(scope)))
        return popc_set_error(POPC_ENOMEM, "graph: out of memory");
    g->scopes[g->n_scopes++] = s;
    if ((st = join_scopes(g)) != POPC_OK) {
        free(g->scopes[--g->n_scopes]);
        return st;
    }
    return POPC_OK;
}

void popc_graph_pop_scope(popc_graph *g)
{
    if (!g || !g->n_scopes)
        return;
    free(g->scopes[--g->n_scopes]);
    if (join_scopes(g) != POPC_OK) {
        /* out of memory while shortening: drop the whole scope rather than
        ** keep a stale joined string */
        popci_graph_clear_scopes(g);
    }
}

popc_status popc_graph_set_annotations(popc_graph *g,
                                       const popc_annotations *a)
{
    popci_annot na;
    popc_status st;

    if (!g)
        return popc_set_error(POPC_EINVAL, "popc_graph_set_annotations: "
                              "graph is NULL");
    if (!a) {
        g->block_ended = 0;
        popci_annot_reset(&g->annot);
        popci_graph_clear_scopes(g);
        return POPC_OK;
    }
    if ((st = check_annotations(a)) != POPC_OK)
        return st;
    memset(&na, 0, sizeof na);
    na.ipu = a->ipu;
    na.stage = a->stage;
    na.phase = a->phase;
    na.recompute = a->recompute;
    na.available_memory = a->available_memory;
    if (a->block && a->block[0] && !(na.block = popci_strdup(a->block)))
        return popc_set_error(POPC_ENOMEM, "graph: out of memory");
    popci_graph_clear_scopes(g);
    if (a->scope && a->scope[0] &&
        (st = popc_graph_push_scope(g, a->scope)) != POPC_OK) {
        free(na.block);
        return st;
    }
    popci_annot_free(&g->annot);
    g->annot = na;
    /* explicit annotations replace the Block context (strategy/blocks.c) */
    g->block_ended = 0;
    return POPC_OK;
}

static popc_annotations public_annot(const popci_annot *a, const char *scope)
{
    popc_annotations r;

    r.scope = scope;
    r.block = a->block;
    r.ipu = a->ipu;
    r.stage = a->stage;
    r.phase = a->phase;
    r.recompute = a->recompute;
    r.available_memory = a->available_memory;
    return r;
}

popc_annotations popc_graph_annotations(const popc_graph *g)
{
    popci_annot none = {.ipu = -1, .stage = -1, .phase = -1,
                        .recompute = -1};

    if (!g)
        return public_annot(&none, NULL);
    return public_annot(&g->annot, g->scope_joined);
}

popc_annotations popc_graph_node_annotations(const popc_graph *g, int node)
{
    popci_annot none = {.ipu = -1, .stage = -1, .phase = -1,
                        .recompute = -1};

    if (!g || node < 0 || node >= g->n_nodes)
        return public_annot(&none, NULL);
    return public_annot(&g->nodes[node].annot, g->nodes[node].annot.scope);
}

popc_status popc_graph_set_node_annotations(popc_graph *g, int node,
                                            const popc_annotations *a)
{
    popci_annot src, na;
    popc_status st;

    if (!g || !a || node < 0 || node >= g->n_nodes)
        return popc_set_error(POPC_EINVAL, "popc_graph_set_node_annotations: "
                              "bad graph, annotations or node id %d", node);
    if ((st = check_annotations(a)) != POPC_OK)
        return st;
    src.scope = (char *)(a->scope && a->scope[0] ? a->scope : NULL);
    src.block = (char *)(a->block && a->block[0] ? a->block : NULL);
    src.ipu = a->ipu;
    src.stage = a->stage;
    src.phase = a->phase;
    src.recompute = a->recompute;
    src.available_memory = a->available_memory;
    /* where the node was added does not change */
    src.n_frames = g->nodes[node].annot.n_frames;
    memcpy(src.frames, g->nodes[node].annot.frames, sizeof src.frames);
    if ((st = popci_annot_copy(&na, &src)) != POPC_OK)
        return st;
    popci_annot_free(&g->nodes[node].annot);
    g->nodes[node].annot = na;
    return POPC_OK;
}
