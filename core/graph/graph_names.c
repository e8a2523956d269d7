/* graph_names.c - the name maps of a graph (value names and node names are
** separate namespaces) and unique-name generation.
**
** Open addressing with linear probing, load kept under one half; keys
** point at the strings owned by the values and nodes, so a map is rebuilt
** after ids move (popci_graph_compact_tail) rather than edited.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"

static size_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */

    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return (size_t)h;
}

int popci_name_map_find(const popci_name_map *m, const char *name)
{
    size_t i;

    if (!m->cap || !name)
        return -1;
    for (i = hash_str(name) & (m->cap - 1); m->slots[i].key;
         i = (i + 1) & (m->cap - 1))
        if (strcmp(m->slots[i].key, name) == 0)
            return m->slots[i].id;
    return -1;
}

void popci_name_map_put(popci_name_map *m, const char *key, int id)
{
    size_t i = hash_str(key) & (m->cap - 1);

    while (m->slots[i].key)
        i = (i + 1) & (m->cap - 1);
    m->slots[i].key = key;
    m->slots[i].id = id;
    m->used++;
}

/* Room for one more key (load kept under one half). */
popc_status popci_name_map_reserve(popci_name_map *m)
{
    popci_name_map bigger;

    if ((m->used + 1) * 2 <= m->cap)
        return POPC_OK;
    bigger.cap = m->cap ? m->cap * 2 : 64;
    bigger.used = 0;
    if (!(bigger.slots = popci_calloc(bigger.cap, sizeof *bigger.slots)))
        return popc_set_error(POPC_ENOMEM, "graph: out of memory (names)");
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key)
            popci_name_map_put(&bigger, m->slots[i].key, m->slots[i].id);
    free(m->slots);
    *m = bigger;
    return POPC_OK;
}

void popci_name_map_free(popci_name_map *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

popc_status popci_graph_rebuild_names(popc_graph *g)
{
    popc_status st;

    popci_name_map_free(&g->value_names);
    popci_name_map_free(&g->node_names);
    for (int v = 0; v < g->n_values; v++) {
        if ((st = popci_name_map_reserve(&g->value_names)) != POPC_OK)
            return st;
        popci_name_map_put(&g->value_names, g->values[v].name, v);
    }
    for (int n = 0; n < g->n_nodes; n++) {
        if ((st = popci_name_map_reserve(&g->node_names)) != POPC_OK)
            return st;
        popci_name_map_put(&g->node_names, g->nodes[n].name, n);
    }
    return POPC_OK;
}

char *popci_unique_name(const popci_name_map *map, const char *base)
{
    size_t len = strlen(base);
    char *s;

    if (popci_name_map_find(map, base) < 0)
        return popci_strdup(base);
    if (!(s = popci_malloc(len + 24)))
        return NULL;
    for (unsigned long k = 1;; k++) {
        snprintf(s, len + 24, "%s_%lu", base, k);
        if (popci_name_map_find(map, s) < 0)
            return s;
    }
}

/* Linear probing without tombstones: shift later entries of the probe
** run back into the hole, so lookups never stop early. */
static void name_map_remove(popci_name_map *m, const char *name)
{
    size_t mask = m->cap - 1, i, j;

    if (!m->cap)
        return;
    for (i = hash_str(name) & mask; m->slots[i].key; i = (i + 1) & mask)
        if (strcmp(m->slots[i].key, name) == 0)
            break;
    if (!m->slots[i].key)
        return;
    for (j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
        size_t home = hash_str(m->slots[j].key) & mask;
        int movable = i <= j ? (home <= i || home > j)
                             : (home <= i && home > j);

        if (movable) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].key = NULL;
    m->used--;
}

popc_status popc_graph_set_value_name(popc_graph *g, int value,
                                      const char *name)
{
    char *copy;
    int other;
    popc_status st;

    if (!g || !name || !*name || value < 0 || value >= g->n_values)
        return popc_set_error(POPC_EINVAL, "popc_graph_set_value_name: %s",
                              !g ? "graph is NULL"
                              : !name || !*name ? "empty name"
                                                : "no such value");
    other = popci_name_map_find(&g->value_names, name);
    if (other == value)
        return POPC_OK;
    if (other >= 0)
        return popc_set_error(POPC_EEXIST, "graph '%s': a value is already "
                              "named '%s'", g->name, name);
    if (!(copy = popci_strdup(name)))
        return popc_set_error(POPC_ENOMEM, "graph: out of memory (names)");
    if ((st = popci_name_map_reserve(&g->value_names)) != POPC_OK) {
        free(copy);
        return st;
    }
    name_map_remove(&g->value_names, g->values[value].name);
    free(g->values[value].name);
    g->values[value].name = copy;
    popci_name_map_put(&g->value_names, copy, value);
    return POPC_OK;
}

/* disableModuleNamescope: "<scope>/<name>" becomes "<name>"; a name taken
** by an earlier node gets a suffix ("_1"), so names stay unique. */
popc_status popci_graph_drop_scopes(popc_graph *g)
{
    popc_status st;

    popci_name_map_free(&g->node_names);
    for (int n = 0; n < g->n_nodes; n++) {
        popci_node *nd = &g->nodes[n];
        const char *scope = nd->annot.scope;
        size_t len = scope ? strlen(scope) : 0;
        const char *base = nd->name;
        char *s;

        if (len && strncmp(base, scope, len) == 0 && base[len] == '/')
            base += len + 1;
        if (!(s = popci_unique_name(&g->node_names, base)))
            return popc_set_error(POPC_ENOMEM, "graph: out of memory");
        free(nd->name);
        nd->name = s;
        if ((st = popci_name_map_reserve(&g->node_names)) != POPC_OK)
            return st;
        popci_name_map_put(&g->node_names, nd->name, n);
    }
    return POPC_OK;
}
