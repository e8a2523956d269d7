/* graph_copy.c - copying one graph's nodes into another, and small
** constants: what the helpers build their subgraphs from. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/helpers_priv.h"

int helpers_same_type(const popc_view *a, const popc_view *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank)
        return 0;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return 0;
    return 1;
}

/* name itself, or name followed by a separator, starts s */
static int uses(const char *s, const char *name, size_t len)
{
    return s && strncmp(s, name, len) == 0 &&
           (s[len] == '\0' || s[len] == '.' || s[len] == '/' ||
            s[len] == ':');
}

static int taken(const popc_graph *g, const char *name)
{
    size_t len = strlen(name);

    for (int v = 0; v < popc_graph_n_values(g); v++)
        if (uses(popc_graph_value_name(g, v), name, len))
            return 1;
    for (int k = 0; k < popc_graph_n_nodes(g); k++) {
        const char *n = popc_graph_node_name(g, k), *slash;

        /* node names carry their scope: compare the last part too */
        if (uses(n, name, len) ||
            ((slash = n ? strrchr(n, '/') : NULL) && uses(slash + 1, name,
                                                          len)))
            return 1;
    }
    return 0;
}

void helpers_free_name(const popc_graph *g, const char *prefix, int first,
                       char *out, size_t size)
{
    int n = first;

    if (n < 0) {
        snprintf(out, size, "%s", prefix);
        if (!taken(g, out))
            return;
        n = 1;
    }
    do
        snprintf(out, size, "%s_%d", prefix, n++);
    while (taken(g, out) && n < 1000000);
}

popc_status helpers_const_i64(popc_graph *g, const char *name,
                              const int64_t *v, int n, int rank, int *id)
{
    int64_t dims[1] = {n};
    popc_tensor *t = NULL;
    popc_status st;

    if ((st = popc_tensor_new(POPC_DTYPE_I64, dims, rank, &t)) != POPC_OK)
        return st;
    memcpy(popc_tensor_data(t), v, sizeof *v * (size_t)n);
    st = popc_graph_add_constant(g, name, t, id);
    popc_tensor_free(t);
    return st;
}

/* dst value of src value v, copying a constant on first use. */
static popc_status map_value(popc_graph *dst, const popc_graph *src, int v,
                             int *map)
{
    if (v < 0 || map[v] >= 0)
        return POPC_OK;
    if (popc_graph_value_kind(src, v) == POPC_VALUE_CONSTANT)
        return popc_graph_add_constant(dst, NULL,
                                       popc_graph_value_tensor(src, v),
                                       &map[v]);
    return popc_set_error(POPC_EINVAL, "graph '%s': value '%s' has no "
                          "producer, is not an input, weight or constant",
                          popc_graph_name(src), popc_graph_value_name(src, v));
}

popc_status helpers_copy_nodes(popc_graph *dst, const popc_graph *src,
                               const int *bind, int n_in, const int *w_src,
                               int n_w, int *res)
{
    int nv = popc_graph_n_values(src), n_nodes = popc_graph_n_nodes(src);
    int *map = malloc(sizeof(int) * (size_t)(nv + 1));
    int *order = malloc(sizeof(int) * (size_t)(n_nodes + 1));
    int *ins = NULL, *outs = NULL, cap = 0;
    popc_status st = POPC_OK;

    if (!map || !order) {
        st = popc_set_error(POPC_ENOMEM, "copying graph '%s': out of memory",
                            popc_graph_name(src));
        goto done;
    }
    for (int v = 0; v < nv; v++)
        map[v] = -1;
    for (int i = 0; i < n_in; i++)
        map[popc_graph_input(src, i)] = bind[i];
    for (int j = 0; j < n_w; j++)
        map[w_src[j]] = bind[n_in + j];
    if ((st = popc_graph_topo_order(src, order)) != POPC_OK)
        goto done;
    for (int k = 0; k < n_nodes && st == POPC_OK; k++) {
        int node = order[k];
        int ni = popc_graph_node_n_inputs(src, node);
        int no = popc_graph_node_n_outputs(src, node);
        popc_attrs attrs = popc_graph_node_attrs(src, node);

        if (ni + no > cap) {
            cap = ni + no;
            free(ins);
            free(outs);
            ins = malloc(sizeof(int) * (size_t)(cap + 1));
            outs = malloc(sizeof(int) * (size_t)(cap + 1));
            if (!ins || !outs) {
                st = popc_set_error(POPC_ENOMEM, "copying graph '%s': out "
                                    "of memory", popc_graph_name(src));
                break;
            }
        }
        for (int i = 0; i < ni && st == POPC_OK; i++) {
            int v = popc_graph_node_input(src, node, i);

            st = map_value(dst, src, v, map);
            ins[i] = v < 0 ? -1 : map[v];
        }
        if (st == POPC_OK)
            st = popc_graph_add_node(dst, popc_graph_node_domain(src, node),
                                     popc_graph_node_op(src, node),
                                     popc_graph_node_version(src, node), ins,
                                     ni, outs, no, attrs.items, attrs.n,
                                     popc_graph_node_name(src, node), NULL);
        for (int i = 0; i < no && st == POPC_OK; i++)
            map[popc_graph_node_output(src, node, i)] = outs[i];
    }
    for (int i = 0; i < popc_graph_n_outputs(src) && st == POPC_OK; i++) {
        int v = popc_graph_output(src, i);

        st = map_value(dst, src, v, map);
        res[i] = map[v];
    }
done:
    free(map);
    free(order);
    free(ins);
    free(outs);
    return st;
}
