/* serialize.c - graphs to bytes and back (popc_graph_serialize and the
** graph sections of executable files).
**
** A graph is written with its ids: values and nodes in id order, so a
** reader rebuilds the arrays directly instead of replaying the builder
** (which would re-run shape inference and rename generated values). What
** a clone keeps is kept here too: names, kinds, dtypes and shapes, tensor
** bytes, trainable flags, producers, every attribute type, annotations,
** graph inputs, outputs and buffer updates, and the builder state (scope
** stack, current annotations, constant counter). Node op definitions are
** looked up again when first needed, as for a node added before its
** plugin was loaded.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc_priv.h"
#include "popc/limits.h"
#include "core/graph/bytes_priv.h"
#include "core/graph/graph_priv.h"

/* ---- graph: writing -------------------------------------------------------- */

static void w_annot(popci_wbuf *w, const popci_annot *a)
{
    popci_w_u8(w, a->scope != NULL);
    popci_w_str(w, a->scope);
    popci_w_u8(w, a->block != NULL);
    popci_w_str(w, a->block);
    popci_w_i64(w, a->ipu);
    popci_w_i64(w, a->stage);
    popci_w_i64(w, a->phase);
    popci_w_i64(w, a->recompute);
    popci_w_f64(w, a->available_memory);
}

static void w_attr(popci_wbuf *w, const popc_attr *a)
{
    popci_w_str(w, a->name);
    popci_w_u32(w, (uint32_t)a->type);
    switch (a->type) {
    case POPC_ATTR_INT:
        popci_w_i64(w, a->i);
        break;
    case POPC_ATTR_FLOAT:
        popci_w_f64(w, a->f);
        break;
    case POPC_ATTR_STRING:
        popci_w_str(w, a->s);
        break;
    case POPC_ATTR_INTS:
        popci_w_u32(w, (uint32_t)a->n);
        for (int64_t k = 0; k < a->n; k++)
            popci_w_i64(w, a->ints[k]);
        break;
    case POPC_ATTR_FLOATS:
        popci_w_u32(w, (uint32_t)a->n);
        for (int64_t k = 0; k < a->n; k++)
            popci_w_f64(w, a->floats[k]);
        break;
    case POPC_ATTR_STRINGS:
        popci_w_u32(w, (uint32_t)a->n);
        for (int64_t k = 0; k < a->n; k++)
            popci_w_str(w, a->strings[k]);
        break;
    case POPC_ATTR_TENSOR:
        popci_w_shape(w, a->tensor);
        popci_w_u64(w, (uint64_t)popc_view_nbytes(a->tensor));
        popci_w_bytes(w, a->tensor->data, popc_view_nbytes(a->tensor));
        break;
    case POPC_ATTR_GRAPH:
        /* a subgraph's initializers are part of the program: always kept */
        (void)popci_graph_write(a->graph, 0, w);
        break;
    }
}

static void w_value(popci_wbuf *w, const popci_value *v, unsigned flags)
{
    int data = v->tensor && !(v->kind == POPC_VALUE_INITIALIZER &&
                              (flags & POPCI_SER_NO_WEIGHTS));

    popci_w_str(w, v->name);
    popci_w_u8(w, (unsigned)v->kind);
    popci_w_u8(w, (unsigned)v->trainable);
    popci_w_shape(w, &v->info);
    popci_w_i64(w, v->producer);
    popci_w_i64(w, v->producer_slot);
    /* 0: no tensor, 1: tensor with its bytes, 2: shape only; a digest
    ** (POPCI_SER_DIGEST) is never read back */
    popci_w_u8(w, !v->tensor ? 0 : data ? 1 : 2);
    if (data && (flags & POPCI_SER_DIGEST)) {
        popc_view s = popc_tensor_view(v->tensor);
        popci_w_shape(w, &s);
        popci_w_u64(w, popci_hash_bytes(s.data, popc_view_nbytes(&s)));
    } else if (data) {
        popci_w_tensor(w, v->tensor);
    } else if (v->tensor) {
        popc_view s = popc_tensor_view(v->tensor);
        popci_w_shape(w, &s);
    }
}

static void w_node(popci_wbuf *w, const popci_node *n)
{
    popci_w_str(w, n->name);
    popci_w_str(w, n->domain);
    popci_w_str(w, n->op);
    popci_w_i64(w, n->version);
    popci_w_u32(w, (uint32_t)n->n_inputs);
    for (int i = 0; i < n->n_inputs; i++)
        popci_w_i64(w, n->inputs[i]);
    popci_w_u32(w, (uint32_t)n->n_outputs);
    for (int i = 0; i < n->n_outputs; i++)
        popci_w_i64(w, n->outputs[i]);
    popci_w_u32(w, (uint32_t)n->n_attrs);
    for (int i = 0; i < n->n_attrs; i++)
        w_attr(w, &n->attrs[i]);
    w_annot(w, &n->annot);
}

popc_status popci_graph_write(const popc_graph *g, unsigned flags,
                              popci_wbuf *w)
{
    popci_w_str(w, g->name);
    popci_w_u32(w, flags);
    popci_w_u32(w, (uint32_t)g->n_values);
    for (int v = 0; v < g->n_values; v++)
        w_value(w, &g->values[v], flags);
    popci_w_u32(w, (uint32_t)g->n_nodes);
    for (int n = 0; n < g->n_nodes; n++)
        w_node(w, &g->nodes[n]);
    popci_w_u32(w, (uint32_t)g->n_inputs);
    for (int i = 0; i < g->n_inputs; i++)
        popci_w_i64(w, g->inputs[i]);
    popci_w_u32(w, (uint32_t)g->n_outputs);
    for (int i = 0; i < g->n_outputs; i++)
        popci_w_i64(w, g->outputs[i]);
    popci_w_u32(w, (uint32_t)g->n_updates);
    for (int i = 0; i < g->n_updates; i++) {
        popci_w_i64(w, g->updates[i].weight);
        popci_w_i64(w, g->updates[i].value);
    }
    popci_w_u32(w, (uint32_t)g->n_scopes);
    for (int i = 0; i < g->n_scopes; i++)
        popci_w_str(w, g->scopes[i]);
    w_annot(w, &g->annot);
    popci_w_i64(w, g->n_constants);
    if (w->oom)
        return popc_set_error(POPC_ENOMEM, "graph '%s': out of memory while "
                              "serializing", g->name);
    return POPC_OK;
}

/* ---- graph: reading -------------------------------------------------------- */

static popc_status nomem(void)
{
    return popc_set_error(POPC_ENOMEM, "reading a graph: out of memory");
}

static char *r_dup(popci_rbuf *r)
{
    const char *s = popci_r_str(r);

    return r->bad ? NULL : popci_strdup(s);
}

/* A small integer (id, annotation) that must fit an int and be >= min. */
static int r_int(popci_rbuf *r, int64_t min, int64_t max)
{
    int64_t v = popci_r_i64(r);

    if (r->bad)
        return 0;
    if (v < min || v > max) {
        popci_r_fail(r, "an id or annotation is out of range");
        return 0;
    }
    return (int)v;
}

static popc_status r_annot(popci_rbuf *r, popci_annot *a)
{
    int has;

    memset(a, 0, sizeof *a);
    has = (int)popci_r_u8(r);
    a->scope = r_dup(r);
    if (!has && a->scope) {
        free(a->scope);
        a->scope = NULL;
    }
    has = (int)popci_r_u8(r);
    a->block = r_dup(r);
    if (!has && a->block) {
        free(a->block);
        a->block = NULL;
    }
    a->ipu = r_int(r, -1, INT32_MAX);
    a->stage = r_int(r, -1, INT32_MAX);
    a->phase = r_int(r, -1, INT32_MAX);
    a->recompute = r_int(r, -1, INT32_MAX);
    a->available_memory = popci_r_f64(r);
    if (r->bad)
        return POPC_OK;
    if (!(a->available_memory >= 0.0 && a->available_memory <= 1.0))
        popci_r_fail(r, "an available-memory proportion is out of range");
    return POPC_OK;
}

/* One attribute into a (owned as graph_attr.c owns copies). */
static popc_status r_attr(popci_rbuf *r, popc_attr *a)
{
    uint32_t type, n;

    memset(a, 0, sizeof *a);
    if (!(a->name = r_dup(r)))
        return r->bad ? POPC_OK : nomem();
    if (!a->name[0])
        popci_r_fail(r, "an attribute has no name");
    type = popci_r_u32(r);
    a->type = (popc_attr_type)type;
    switch (type) {
    case POPC_ATTR_INT:
        a->i = popci_r_i64(r);
        return POPC_OK;
    case POPC_ATTR_FLOAT:
        a->f = popci_r_f64(r);
        return POPC_OK;
    case POPC_ATTR_STRING:
        if (!(a->s = r_dup(r)) && !r->bad)
            return nomem();
        return POPC_OK;
    case POPC_ATTR_INTS:
    case POPC_ATTR_FLOATS: {
        n = popci_r_count(r, 8);
        a->n = n;
        if (type == POPC_ATTR_INTS) {
            int64_t *p = popci_calloc((size_t)n + 1, sizeof *p);
            if (!p)
                return nomem();
            for (uint32_t k = 0; k < n; k++)
                p[k] = popci_r_i64(r);
            a->ints = p;
        } else {
            double *p = popci_calloc((size_t)n + 1, sizeof *p);
            if (!p)
                return nomem();
            for (uint32_t k = 0; k < n; k++)
                p[k] = popci_r_f64(r);
            a->floats = p;
        }
        return POPC_OK;
    }
    case POPC_ATTR_STRINGS: {
        char **p;

        n = popci_r_count(r, 5);
        if (!(p = popci_calloc((size_t)n + 1, sizeof *p)))
            return nomem();
        a->strings = (const char *const *)p;
        a->n = n;
        for (uint32_t k = 0; k < n && !r->bad; k++)
            if (!(p[k] = r_dup(r)) && !r->bad)
                return nomem();
        return POPC_OK;
    }
    case POPC_ATTR_TENSOR: {
        popc_view *v = popci_calloc(1, sizeof *v);
        const void *data;
        uint64_t nbytes;

        if (!v)
            return nomem();
        a->tensor = v;
        if (!popci_r_shape(r, v))
            return POPC_OK;
        nbytes = popci_r_u64(r);
        if (v->dtype == POPC_DTYPE_UNDEFINED ||
            nbytes != (uint64_t)popc_view_nbytes(v)) {
            popci_r_fail(r, "a tensor attribute's byte count does not match "
                         "its shape");
            return POPC_OK;
        }
        if (!(data = popci_r_bytes(r, (size_t)nbytes)))
            return POPC_OK;
        if (!(v->data = popci_malloc(nbytes ? (size_t)nbytes : 1)))
            return nomem();
        if (nbytes)
            memcpy(v->data, data, (size_t)nbytes);
        return POPC_OK;
    }
    case POPC_ATTR_GRAPH: {
        popc_graph *sub = NULL;
        popc_status st;

        /* Subgraphs nest; a crafted file must not recurse without bound. */
        if (r->depth >= popc_limit_get(POPC_LIMIT_NESTING)) {
            popci_r_fail(r, "subgraphs are nested deeper than popc's limit "
                         "(POPC_MAX_NESTING, default 32)");
            return POPC_OK;
        }
        r->depth++;
        st = popci_graph_read(r, &sub);
        r->depth--;
        if (st != POPC_OK)
            return st;
        a->graph = sub;
        if (!sub)
            popci_r_fail(r, "a subgraph attribute is malformed");
        return POPC_OK;
    }
    }
    popci_r_fail(r, "an attribute has an unknown type");
    a->type = POPC_ATTR_INT;
    return POPC_OK;
}

static popc_status r_value(popci_rbuf *r, popc_graph *g, popci_value *v)
{
    unsigned kind, trainable, has;
    popc_status st = POPC_OK;

    memset(v, 0, sizeof *v);
    if (!(v->name = r_dup(r)))
        return r->bad ? POPC_OK : nomem();
    kind = popci_r_u8(r);
    trainable = popci_r_u8(r);
    v->kind = (popc_value_kind)kind;
    v->trainable = trainable != 0;
    if (!r->bad && (kind < POPC_VALUE_INPUT || kind > POPC_VALUE_NODE_OUTPUT))
        popci_r_fail(r, "a value has an unknown kind");
    popci_r_shape(r, &v->info);
    v->producer = r_int(r, -1, INT32_MAX);
    v->producer_slot = r_int(r, -1, INT32_MAX);
    has = popci_r_u8(r);
    if (r->bad)
        return POPC_OK;
    if (!v->name[0])
        popci_r_fail(r, "a value has no name");
    if (has == 1) {
        v->tensor = popci_r_tensor(r, &st);
    } else if (has == 2) {
        popc_view s;
        if (popci_r_shape(r, &s) &&
            (st = popc_tensor_new(s.dtype, s.dims, s.rank, &v->tensor)) !=
                POPC_OK)
            popci_r_fail(r, "a weight's shape cannot be allocated");
    } else if (has != 0) {
        popci_r_fail(r, "a value has an unknown tensor marker");
    }
    if (st != POPC_OK)
        return st == POPC_ENOMEM ? nomem() : POPC_OK;
    if (!r->bad && (v->kind == POPC_VALUE_INITIALIZER ||
                    v->kind == POPC_VALUE_CONSTANT) != (v->tensor != NULL))
        popci_r_fail(r, "an initializer or constant has no tensor");
    (void)g;
    return POPC_OK;
}

static popc_status r_node(popci_rbuf *r, popci_node *n)
{
    uint32_t cnt;
    popc_status st;

    memset(n, 0, sizeof *n);
    popci_annot_reset(&n->annot);
    n->name = r_dup(r);
    n->domain = r_dup(r);
    n->op = r_dup(r);
    if (!r->bad && (!n->name || !n->domain || !n->op))
        return nomem();
    n->version = r_int(r, 0, INT32_MAX);
    cnt = popci_r_count(r, 8);
    if (!(n->inputs = popci_malloc(((size_t)cnt + 1) * sizeof(int))))
        return nomem();
    n->n_inputs = (int)cnt;
    for (uint32_t i = 0; i < cnt; i++)
        n->inputs[i] = r_int(r, -1, INT32_MAX);
    cnt = popci_r_count(r, 8);
    if (!(n->outputs = popci_malloc(((size_t)cnt + 1) * sizeof(int))))
        return nomem();
    n->n_outputs = (int)cnt;
    for (uint32_t i = 0; i < cnt; i++)
        n->outputs[i] = r_int(r, 0, INT32_MAX);
    cnt = popci_r_count(r, 9);
    if (cnt) {
        if (!(n->attrs = popci_calloc(cnt, sizeof *n->attrs)))
            return nomem();
        n->n_attrs = (int)cnt;
        for (uint32_t i = 0; i < cnt && !r->bad; i++)
            if ((st = r_attr(r, &n->attrs[i])) != POPC_OK)
                return st;
        for (uint32_t i = 0; i < cnt && !r->bad; i++)
            for (uint32_t j = 0; j < i; j++)
                if (strcmp(n->attrs[i].name, n->attrs[j].name) == 0)
                    popci_r_fail(r, "a node has an attribute twice");
    }
    return r_annot(r, &n->annot);
}

/* Ids in range, producers consistent and names unique, so that nothing
** downstream indexes out of bounds on a crafted file. */
static void check_graph(popci_rbuf *r, popc_graph *g)
{
    for (int v = 0; v < g->n_values && !r->bad; v++) {
        const popci_value *x = &g->values[v];
        if (popci_name_map_find(&g->value_names, x->name) != v)
            popci_r_fail(r, "two values have the same name");
        else if (x->producer >= g->n_nodes ||
                 (x->kind == POPC_VALUE_NODE_OUTPUT) != (x->producer >= 0))
            popci_r_fail(r, "a value's producer is out of range");
        else if (x->producer >= 0 &&
                 (x->producer_slot >= g->nodes[x->producer].n_outputs ||
                  x->producer_slot < 0 ||
                  g->nodes[x->producer].outputs[x->producer_slot] != v))
            popci_r_fail(r, "a value's producer does not list it");
    }
    for (int n = 0; n < g->n_nodes && !r->bad; n++) {
        const popci_node *x = &g->nodes[n];
        if (popci_name_map_find(&g->node_names, x->name) != n)
            popci_r_fail(r, "two nodes have the same name");
        for (int i = 0; i < x->n_outputs && !r->bad; i++)
            if (x->outputs[i] >= g->n_values ||
                g->values[x->outputs[i]].producer != n)
                popci_r_fail(r, "a node output is out of range");
    }
    for (int i = 0; i < g->n_inputs && !r->bad; i++)
        if (g->inputs[i] >= g->n_values ||
            g->values[g->inputs[i]].kind != POPC_VALUE_INPUT)
            popci_r_fail(r, "a graph input is out of range");
    for (int i = 0; i < g->n_outputs && !r->bad; i++)
        if (g->outputs[i] >= g->n_values)
            popci_r_fail(r, "a graph output is out of range");
    for (int i = 0; i < g->n_updates && !r->bad; i++)
        if (g->updates[i].weight >= g->n_values ||
            g->updates[i].value >= g->n_values ||
            g->values[g->updates[i].weight].kind != POPC_VALUE_INITIALIZER)
            popci_r_fail(r, "a buffer update is out of range");
}

static popc_status read_ids(popci_rbuf *r, popc_graph *g, int **arr, int *n,
                            int *cap)
{
    uint32_t cnt = popci_r_count(r, 8);
    popc_status st;

    if ((st = popci_grow((void **)arr, cap, (int)cnt + 1, sizeof **arr)) !=
        POPC_OK)
        return st;
    for (uint32_t i = 0; i < cnt; i++)
        (*arr)[i] = r_int(r, 0, INT32_MAX);
    *n = r->bad ? 0 : (int)cnt;
    (void)g;
    return POPC_OK;
}

popc_status popci_graph_read(popci_rbuf *r, popc_graph **out)
{
    popc_graph *g = NULL;
    uint32_t cnt;
    popc_status st;
    const char *name;

    *out = NULL;
    name = popci_r_str(r);
    popci_r_u32(r); /* flags: how initializers were written (per value) */
    if (r->bad)
        goto malformed;
    if ((st = popc_graph_new(name, &g)) != POPC_OK)
        return st;
    /* the smallest value is 32 bytes, the smallest node 87 */
    cnt = popci_r_count(r, 32);
    if ((st = POPCI_GROW(g, values, cap_values, (int)cnt + 1)) != POPC_OK)
        goto fail;
    for (uint32_t v = 0; v < cnt && !r->bad; v++) {
        st = r_value(r, g, &g->values[v]);
        g->n_values = (int)v + 1;
        if (st != POPC_OK)
            goto fail;
    }
    cnt = popci_r_count(r, 40);
    if (cnt > popc_limit_get(POPC_LIMIT_NODES))
        popci_r_fail(r, "a graph has more nodes than popc's limit "
                     "(POPC_MAX_NODES, default 1000000)");
    if (r->bad)
        goto malformed;
    if ((st = POPCI_GROW(g, nodes, cap_nodes, (int)cnt + 1)) != POPC_OK)
        goto fail;
    for (uint32_t n = 0; n < cnt && !r->bad; n++) {
        st = r_node(r, &g->nodes[n]);
        g->n_nodes = (int)n + 1;
        if (st != POPC_OK)
            goto fail;
    }
    if (r->bad)
        goto malformed;
    if ((st = read_ids(r, g, &g->inputs, &g->n_inputs, &g->cap_inputs)) !=
            POPC_OK ||
        (st = read_ids(r, g, &g->outputs, &g->n_outputs, &g->cap_outputs)) !=
            POPC_OK)
        goto fail;
    cnt = popci_r_count(r, 16);
    if ((st = POPCI_GROW(g, updates, cap_updates, (int)cnt + 1)) != POPC_OK)
        goto fail;
    for (uint32_t i = 0; i < cnt && !r->bad; i++) {
        g->updates[i].weight = r_int(r, 0, INT32_MAX);
        g->updates[i].value = r_int(r, 0, INT32_MAX);
        g->n_updates = (int)i + 1;
    }
    cnt = popci_r_count(r, 5);
    if ((st = POPCI_GROW(g, scopes, cap_scopes, (int)cnt + 1)) != POPC_OK)
        goto fail;
    for (uint32_t i = 0; i < cnt && !r->bad; i++) {
        if (!(g->scopes[i] = r_dup(r))) {
            if (r->bad)
                break;
            st = nomem();
            goto fail;
        }
        g->n_scopes = (int)i + 1;
    }
    popci_annot_free(&g->annot);
    if ((st = r_annot(r, &g->annot)) != POPC_OK)
        goto fail;
    g->n_constants = r_int(r, 0, INT32_MAX);
    if (r->bad)
        goto malformed;
    if (g->n_scopes) {
        size_t len = 1;
        for (int i = 0; i < g->n_scopes; i++)
            len += strlen(g->scopes[i]) + 1;
        if (!(g->scope_joined = popci_malloc(len))) {
            st = nomem();
            goto fail;
        }
        g->scope_joined[0] = '\0';
        for (int i = 0; i < g->n_scopes; i++) {
            if (i)
                strcat(g->scope_joined, "/");
            strcat(g->scope_joined, g->scopes[i]);
        }
    }
    /* The scope is kept in the stack only (see graph_priv.h). */
    free(g->annot.scope);
    g->annot.scope = NULL;
    if ((st = popci_graph_rebuild_names(g)) != POPC_OK)
        goto fail;
    check_graph(r, g);
    if (r->bad)
        goto malformed;
    *out = g;
    return POPC_OK;
malformed:
    st = popc_set_error(POPC_EIO, "malformed graph at byte %zu: %s", r->pos,
                        r->why ? r->why : "bad encoding");
fail:
    popc_graph_free(g);
    return st;
}

/* ---- public API -------------------------------------------------------------- */

int popc_graph_n_updates(const popc_graph *g)
{
    return g ? g->n_updates : 0;
}

popc_status popc_graph_update(const popc_graph *g, int i, int *weight,
                              int *value)
{
    if (weight)
        *weight = -1;
    if (value)
        *value = -1;
    if (!g || i < 0 || i >= g->n_updates)
        return popc_set_error(POPC_EINVAL, "popc_graph_update: graph '%s' "
                              "has no update %d (it has %d)",
                              g ? g->name : "(null)", i,
                              g ? g->n_updates : 0);
    if (weight)
        *weight = g->updates[i].weight;
    if (value)
        *value = g->updates[i].value;
    return POPC_OK;
}

popc_status popc_graph_serialize(const popc_graph *g, void **data,
                                 size_t *size)
{
    popci_wbuf w = {0};
    popc_status st;

    if (data)
        *data = NULL;
    if (size)
        *size = 0;
    if (!g || !data || !size)
        return popc_set_error(POPC_EINVAL, "popc_graph_serialize: graph, "
                              "data or size is NULL");
    /* a leading marker and the format version, so a stray buffer is told
    ** apart from a graph */
    popci_w_bytes(&w, "POPCGRF", 8);
    popci_w_u32(&w, POPCI_ENCODING_FORMAT);
    if ((st = popci_graph_write(g, 0, &w)) != POPC_OK) {
        popci_wbuf_free(&w);
        return st;
    }
    *data = w.buf;
    *size = w.len;
    return POPC_OK;
}

popc_status popc_graph_deserialize(const void *data, size_t size,
                                   popc_graph **out)
{
    popci_rbuf r = {data, size, 0, 0, NULL, 0};
    const char *magic;
    uint32_t version;
    popc_status st;

    if (out)
        *out = NULL;
    if (!out || (!data && size))
        return popc_set_error(POPC_EINVAL, "popc_graph_deserialize: data or "
                              "out is NULL");
    magic = popci_r_bytes(&r, 8);
    version = popci_r_u32(&r);
    if (r.bad || memcmp(magic, "POPCGRF", 8) != 0)
        return popc_set_error(POPC_EIO, "popc_graph_deserialize: the %zu "
                              "bytes are not a serialized popc graph (no "
                              "POPCGRF marker)", size);
    if (version != POPCI_ENCODING_FORMAT)
        return popc_set_error(POPC_EUNSUPPORTED, "popc_graph_deserialize: "
                              "graph format version %u; this popc reads "
                              "version %u", (unsigned)version,
                              (unsigned)POPCI_ENCODING_FORMAT);
    if ((st = popci_graph_read(&r, out)) != POPC_OK)
        return popc_set_error(st, "popc_graph_deserialize: %s",
                              popc_last_error());
    if (r.pos != size) {
        popc_graph_free(*out);
        *out = NULL;
        return popc_set_error(POPC_EIO, "popc_graph_deserialize: %zu "
                              "unexpected bytes after the graph",
                              size - r.pos);
    }
    /* Bytes come from somewhere outside the program: like a file's graph,
    ** foreign code in them needs consent (popc_graph_set_origin(g, NULL)
    ** vouches for them). */
    if ((st = popc_graph_set_origin(*out, "serialized graph bytes")) !=
        POPC_OK) {
        popc_graph_free(*out);
        *out = NULL;
        return st;
    }
    return POPC_OK;
}
