/* graph_attr.c - deep copies of node attributes, and the growable string
** the graph code uses for listings and multi-part error messages.
**
** A copied attribute owns every byte it points at: name, string, list
** storage, and a tensor attribute's view plus its data, so the caller's
** arrays may go away as soon as popc_graph_add_node returns.
*/
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"

/* ---- growable string ------------------------------------------------------ */

void popci_sb_vprintf(popci_sb *sb, const char *fmt, va_list ap)
{
    va_list ap2;
    int n;

    if (sb->oom)
        return;
    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    if (sb->len + (size_t)n + 1 > sb->cap) {
        size_t cap = sb->cap ? sb->cap : 256;
        char *p;

        while (cap < sb->len + (size_t)n + 1)
            cap *= 2;
        if (!(p = popci_realloc(sb->buf, cap))) {
            sb->oom = 1;
            return;
        }
        sb->buf = p;
        sb->cap = cap;
    }
    vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
    sb->len += (size_t)n;
}

void popci_sb_printf(popci_sb *sb, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    popci_sb_vprintf(sb, fmt, ap);
    va_end(ap);
}

void popci_sb_view(popci_sb *sb, const popc_view *v)
{
    popci_sb_printf(sb, "%s[", popc_dtype_name(v->dtype));
    for (int i = 0; i < v->rank; i++)
        popci_sb_printf(sb, "%s%" PRId64, i ? ", " : "", v->dims[i]);
    popci_sb_printf(sb, "]");
}

char *popci_sb_take(popci_sb *sb)
{
    char *s = NULL;

    if (!sb->oom) {
        s = sb->buf ? sb->buf : popci_strdup("");
        sb->buf = NULL;
    }
    popci_sb_free(sb);
    return s;
}

void popci_sb_free(popci_sb *sb)
{
    free(sb->buf);
    memset(sb, 0, sizeof *sb);
}

/* ---- attributes ----------------------------------------------------------- */

static void attr_clear(popc_attr *a)
{
    free((char *)a->name);
    free((char *)a->s);
    free((int64_t *)a->ints);
    free((double *)a->floats);
    if (a->strings) {
        for (int64_t k = 0; k < a->n; k++)
            free((char *)a->strings[k]);
        free((char **)a->strings);
    }
    if (a->tensor) {
        free(a->tensor->data);
        free((popc_view *)a->tensor);
    }
    popc_graph_free((popc_graph *)a->graph);
    memset(a, 0, sizeof *a);
}

void popci_attrs_free(popc_attr *a, int n)
{
    if (!a)
        return;
    for (int i = 0; i < n; i++)
        attr_clear(&a[i]);
    free(a);
}

static popc_status copy_list(const popc_attr *src, popc_attr *dst)
{
    if (src->n < 0 || (src->n > 0 && src->type == POPC_ATTR_INTS &&
                       !src->ints) ||
        (src->n > 0 && src->type == POPC_ATTR_FLOATS && !src->floats) ||
        (src->n > 0 && src->type == POPC_ATTR_STRINGS && !src->strings))
        return popc_set_error(POPC_EINVAL, "attribute '%s': list of %" PRId64
                              " items without data", src->name, src->n);
    dst->n = src->n;
    if (src->type == POPC_ATTR_INTS) {
        int64_t *p = popci_calloc((size_t)src->n + 1, sizeof *p);
        if (!p)
            return popc_set_error(POPC_ENOMEM, "attribute '%s': out of memory",
                                  src->name);
        if (src->n)
            memcpy(p, src->ints, (size_t)src->n * sizeof *p);
        dst->ints = p;
    } else if (src->type == POPC_ATTR_FLOATS) {
        double *p = popci_calloc((size_t)src->n + 1, sizeof *p);
        if (!p)
            return popc_set_error(POPC_ENOMEM, "attribute '%s': out of memory",
                                  src->name);
        if (src->n)
            memcpy(p, src->floats, (size_t)src->n * sizeof *p);
        dst->floats = p;
    } else {
        char **p = popci_calloc((size_t)src->n + 1, sizeof *p);
        if (!p)
            return popc_set_error(POPC_ENOMEM, "attribute '%s': out of memory",
                                  src->name);
        dst->strings = (const char *const *)p;
        for (int64_t k = 0; k < src->n; k++) {
            if (!src->strings[k])
                return popc_set_error(POPC_EINVAL, "attribute '%s': string "
                                      "%" PRId64 " is NULL", src->name, k);
            if (!(p[k] = popci_strdup(src->strings[k])))
                return popc_set_error(POPC_ENOMEM,
                                      "attribute '%s': out of memory",
                                      src->name);
        }
    }
    return POPC_OK;
}

static popc_status copy_tensor(const popc_attr *src, popc_attr *dst)
{
    const popc_view *v = src->tensor;
    popc_view *copy;
    size_t nbytes;

    if (!v || v->rank < 0 || v->rank > POPC_MAX_RANK ||
        !popc_dtype_size(v->dtype))
        return popc_set_error(POPC_EINVAL, "attribute '%s': tensor value is "
                              "missing or has a bad dtype or rank",
                              src->name);
    for (int d = 0; d < v->rank; d++)
        if (v->dims[d] < 0)
            return popc_set_error(POPC_EINVAL, "attribute '%s': negative "
                                  "dimension", src->name);
    nbytes = popc_view_nbytes(v);
    if (nbytes && !v->data)
        return popc_set_error(POPC_EINVAL, "attribute '%s': tensor value has "
                              "no data", src->name);
    if (!(copy = popci_calloc(1, sizeof *copy)))
        return popc_set_error(POPC_ENOMEM, "attribute '%s': out of memory",
                              src->name);
    *copy = *v;
    copy->data = popci_malloc(nbytes ? nbytes : 1);
    dst->tensor = copy;
    if (!copy->data)
        return popc_set_error(POPC_ENOMEM, "attribute '%s': out of memory",
                              src->name);
    if (nbytes)
        memcpy(copy->data, v->data, nbytes);
    return POPC_OK;
}

static popc_status copy_one(const popc_attr *src, popc_attr *dst)
{
    if (!(dst->name = popci_strdup(src->name)))
        return popc_set_error(POPC_ENOMEM, "attribute '%s': out of memory",
                              src->name);
    dst->type = src->type;
    switch (src->type) {
    case POPC_ATTR_INT:
        dst->i = src->i;
        return POPC_OK;
    case POPC_ATTR_FLOAT:
        dst->f = src->f;
        return POPC_OK;
    case POPC_ATTR_STRING:
        if (!src->s)
            return popc_set_error(POPC_EINVAL, "attribute '%s': string value "
                                  "is NULL", src->name);
        if (!(dst->s = popci_strdup(src->s)))
            return popc_set_error(POPC_ENOMEM, "attribute '%s': out of memory",
                                  src->name);
        return POPC_OK;
    case POPC_ATTR_INTS:
    case POPC_ATTR_FLOATS:
    case POPC_ATTR_STRINGS:
        return copy_list(src, dst);
    case POPC_ATTR_TENSOR:
        return copy_tensor(src, dst);
    case POPC_ATTR_GRAPH:
        if (!src->graph)
            return popc_set_error(POPC_EINVAL, "attribute '%s': subgraph is "
                                  "NULL", src->name);
        return popc_graph_clone(src->graph, (popc_graph **)&dst->graph);
    }
    return popc_set_error(POPC_EINVAL, "attribute '%s': unknown type %d",
                          src->name, (int)src->type);
}

popc_status popci_attrs_copy(const popc_attr *src, int n, popc_attr **out)
{
    popc_attr *a;
    popc_status st;

    *out = NULL;
    if (n == 0)
        return POPC_OK;
    if (n < 0 || !src)
        return popc_set_error(POPC_EINVAL, "attributes: %d given without an "
                              "array", n);
    for (int i = 0; i < n; i++) {
        if (!src[i].name || !src[i].name[0])
            return popc_set_error(POPC_EINVAL, "attribute %d has no name", i);
        for (int j = 0; j < i; j++)
            if (strcmp(src[i].name, src[j].name) == 0)
                return popc_set_error(POPC_EINVAL, "attribute '%s' is given "
                                      "twice", src[i].name);
    }
    if (!(a = popci_calloc((size_t)n, sizeof *a)))
        return popc_set_error(POPC_ENOMEM, "attributes: out of memory");
    for (int i = 0; i < n; i++)
        if ((st = copy_one(&src[i], &a[i])) != POPC_OK) {
            popci_attrs_free(a, n);
            return st;
        }
    *out = a;
    return POPC_OK;
}

/* ---- changing a node's attributes ---------------------------------------- */

popc_status popc_graph_set_node_attr(popc_graph *g, int node,
                                     const popc_attr *a)
{
    popci_node *n;
    popc_attr *copy = NULL, *grown;
    popc_status st;
    int at;

    if (!g || !a || !a->name || node < 0 || node >= g->n_nodes)
        return popc_set_error(POPC_EINVAL, "popc_graph_set_node_attr: bad "
                              "graph, attribute or node id %d", node);
    n = &g->nodes[node];
    if ((st = popci_attrs_copy(a, 1, &copy)) != POPC_OK)
        return st;
    for (at = 0; at < n->n_attrs; at++)
        if (strcmp(n->attrs[at].name, a->name) == 0)
            break;
    if (at == n->n_attrs) {
        if (!(grown = popci_realloc(n->attrs, sizeof *grown *
                                                  (size_t)(n->n_attrs + 1)))) {
            popci_attrs_free(copy, 1);
            return popc_set_error(POPC_ENOMEM, "node '%s': out of memory "
                                  "for attribute '%s'", n->name, a->name);
        }
        n->attrs = grown;
        n->n_attrs++;
    } else {
        attr_clear(&n->attrs[at]);
    }
    n->attrs[at] = copy[0];
    free(copy);                /* the array only: its contents moved */
    return POPC_OK;
}
