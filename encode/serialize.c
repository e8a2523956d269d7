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
**
** A layer above the core (encode/): it sees the graph's fields by id
** through core/layer/graph_ids.h, which also rebuilds a graph id by id
** and checks it as a whole.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "popc/limits.h"
#include "core/layer/alloc.h"
#include "core/layer/graph_ids.h"
#include "encode/bytes.h"

/* ---- graph: writing -------------------------------------------------------- */

static void w_annot(popci_wbuf *w, const popci_annot_rec *a)
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

static void w_value(popci_wbuf *w, const popci_value_rec *v, unsigned flags)
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

static void w_node(popci_wbuf *w, const popci_node_rec *n)
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
    popci_value_rec v;
    popci_node_rec n;
    popci_graph_state state;
    int weight, value;

    popci_w_str(w, popc_graph_name(g));
    popci_w_u32(w, flags);
    popci_w_u32(w, (uint32_t)popc_graph_n_values(g));
    for (int i = 0; i < popc_graph_n_values(g); i++) {
        popci_graph_value_rec(g, i, &v);
        w_value(w, &v, flags);
    }
    popci_w_u32(w, (uint32_t)popc_graph_n_nodes(g));
    for (int i = 0; i < popc_graph_n_nodes(g); i++) {
        popci_graph_node_rec(g, i, &n);
        w_node(w, &n);
    }
    popci_w_u32(w, (uint32_t)popc_graph_n_inputs(g));
    for (int i = 0; i < popc_graph_n_inputs(g); i++)
        popci_w_i64(w, popc_graph_input(g, i));
    popci_w_u32(w, (uint32_t)popc_graph_n_outputs(g));
    for (int i = 0; i < popc_graph_n_outputs(g); i++)
        popci_w_i64(w, popc_graph_output(g, i));
    popci_w_u32(w, (uint32_t)popc_graph_n_updates(g));
    for (int i = 0; i < popc_graph_n_updates(g); i++) {
        if (popc_graph_update(g, i, &weight, &value) != POPC_OK)
            weight = value = -1; /* i is in range: never */
        popci_w_i64(w, weight);
        popci_w_i64(w, value);
    }
    popci_graph_state_get(g, &state);
    popci_w_u32(w, (uint32_t)state.n_scopes);
    for (int i = 0; i < state.n_scopes; i++)
        popci_w_str(w, state.scopes[i]);
    w_annot(w, &state.annot);
    popci_w_i64(w, state.n_constants);
    if (w->oom)
        return popc_set_error(POPC_ENOMEM, "graph '%s': out of memory while "
                              "serializing", popc_graph_name(g));
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

/* Annotations into a, whose strings the caller frees (annot_free). */
static void r_annot(popci_rbuf *r, popci_annot_rec *a)
{
    const char *s;
    int has;

    memset(a, 0, sizeof *a);
    has = (int)popci_r_u8(r);
    s = popci_r_str(r);
    a->scope = has && !r->bad ? s : NULL;
    has = (int)popci_r_u8(r);
    s = popci_r_str(r);
    a->block = has && !r->bad ? s : NULL;
    a->ipu = r_int(r, -1, INT32_MAX);
    a->stage = r_int(r, -1, INT32_MAX);
    a->phase = r_int(r, -1, INT32_MAX);
    a->recompute = r_int(r, -1, INT32_MAX);
    a->available_memory = popci_r_f64(r);
    if (r->bad)
        return;
    if (!(a->available_memory >= 0.0 && a->available_memory <= 1.0))
        popci_r_fail(r, "an available-memory proportion is out of range");
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

/* One value, appended to g. */
static popc_status r_value(popci_rbuf *r, popc_graph *g)
{
    popci_value_rec v;
    unsigned kind, trainable, has;
    popc_status st = POPC_OK;

    memset(&v, 0, sizeof v);
    v.name = popci_r_str(r);
    kind = popci_r_u8(r);
    trainable = popci_r_u8(r);
    v.kind = (popc_value_kind)kind;
    v.trainable = trainable != 0;
    if (!r->bad && (kind < POPC_VALUE_INPUT || kind > POPC_VALUE_NODE_OUTPUT))
        popci_r_fail(r, "a value has an unknown kind");
    popci_r_shape(r, &v.info);
    v.producer = r_int(r, -1, INT32_MAX);
    v.producer_slot = r_int(r, -1, INT32_MAX);
    has = popci_r_u8(r);
    if (r->bad)
        return POPC_OK;
    if (!v.name[0])
        popci_r_fail(r, "a value has no name");
    if (has == 1) {
        v.tensor = popci_r_tensor(r, &st);
    } else if (has == 2) {
        popc_view s;
        if (popci_r_shape(r, &s) &&
            (st = r->weights_later
                      ? popci_tensor_new_unfilled(s.dtype, s.dims, s.rank,
                                                  &v.tensor)
                      : popc_tensor_new(s.dtype, s.dims, s.rank,
                                        &v.tensor)) != POPC_OK)
            popci_r_fail(r, "a weight's shape cannot be allocated");
    } else if (has != 0) {
        popci_r_fail(r, "a value has an unknown tensor marker");
    }
    if (st != POPC_OK)
        return st == POPC_ENOMEM ? nomem() : POPC_OK;
    if (!r->bad && (v.kind == POPC_VALUE_INITIALIZER ||
                    v.kind == POPC_VALUE_CONSTANT) != (v.tensor != NULL))
        popci_r_fail(r, "an initializer or constant has no tensor");
    /* the graph takes the tensor; a malformed value is kept for
    ** popc_graph_free to release with the rest */
    return popci_graph_put_value(g, &v);
}

/* cnt ids of at least min into a new array *out (NULL: out of memory). */
static int *r_ids(popci_rbuf *r, uint32_t cnt, int64_t min)
{
    int *ids = popci_malloc(((size_t)cnt + 1) * sizeof(int));

    for (uint32_t i = 0; ids && i < cnt; i++)
        ids[i] = r_int(r, min, INT32_MAX);
    return ids;
}

/* The ids of the node being read (its inputs, then its outputs), in one
** array the reader keeps from node to node: put_node copies them. */
typedef struct id_scratch {
    int *ids;
    size_t cap;
} id_scratch;

/* cnt ids of at least min into s->ids[at ..]; 0 when out of memory. */
static int r_scratch_ids(popci_rbuf *r, id_scratch *s, size_t at,
                         uint32_t cnt, int64_t min)
{
    size_t need = at + cnt + 1;

    if (need > s->cap) {
        size_t cap = s->cap * 2 > need ? s->cap * 2 : need;
        int *p = popci_realloc(s->ids, cap * sizeof *p);

        if (!p)
            return 0;
        s->ids = p;
        s->cap = cap;
    }
    for (uint32_t i = 0; i < cnt; i++)
        s->ids[at + i] = r_int(r, min, INT32_MAX);
    return 1;
}

/* One node, appended to g. */
static popc_status r_node(popci_rbuf *r, popc_graph *g, id_scratch *ids)
{
    popci_node_rec n;
    uint32_t cnt;
    popc_status st = POPC_OK;

    memset(&n, 0, sizeof n);
    n.name = popci_r_str(r);
    n.domain = popci_r_str(r);
    n.op = popci_r_str(r);
    n.version = r_int(r, 0, INT32_MAX);
    cnt = popci_r_count(r, 8);
    if (!r_scratch_ids(r, ids, 0, cnt, -1))
        return nomem();
    n.n_inputs = (int)cnt;
    cnt = popci_r_count(r, 8);
    if (!r_scratch_ids(r, ids, (size_t)n.n_inputs, cnt, 0))
        return nomem();
    n.n_outputs = (int)cnt;
    cnt = popci_r_count(r, 9);
    if (cnt) {
        if (!(n.attrs = popci_calloc(cnt, sizeof *n.attrs))) {
            st = nomem();
            goto done;
        }
        n.n_attrs = (int)cnt;
        for (uint32_t i = 0; i < cnt && !r->bad; i++)
            if ((st = r_attr(r, &n.attrs[i])) != POPC_OK)
                goto done;
        for (uint32_t i = 0; i < cnt && !r->bad; i++)
            for (uint32_t j = 0; j < i; j++)
                if (strcmp(n.attrs[i].name, n.attrs[j].name) == 0)
                    popci_r_fail(r, "a node has an attribute twice");
    }
    r_annot(r, &n.annot);
    if (r->bad)
        goto done;
    n.inputs = ids->ids;
    n.outputs = ids->ids + n.n_inputs;
    st = popci_graph_put_node(g, &n);
    n.attrs = NULL; /* taken */
done:
    popci_attrs_free(n.attrs, n.n_attrs);
    return st;
}

static popc_status r_put_ids(popci_rbuf *r, popc_graph *g)
{
    int *in, *out = NULL, *upd = NULL;
    int n_in, n_out, n_upd = 0;
    uint32_t cnt;
    popc_status st = POPC_OK;

    cnt = popci_r_count(r, 8);
    n_in = (int)cnt;
    if (!(in = r_ids(r, cnt, 0)))
        return nomem();
    cnt = popci_r_count(r, 8);
    n_out = (int)cnt;
    if (!(out = r_ids(r, cnt, 0))) {
        st = nomem();
        goto done;
    }
    cnt = popci_r_count(r, 16);
    n_upd = (int)cnt;
    if (!(upd = r_ids(r, 2 * cnt, 0))) {
        st = nomem();
        goto done;
    }
    if (!r->bad)
        st = popci_graph_put_ids(g, in, n_in, out, n_out, upd, n_upd);
done:
    free(in);
    free(out);
    free(upd);
    return st;
}

/* The builder state: scope stack, annotations, constant counter. */
static popc_status r_state(popci_rbuf *r, popc_graph *g)
{
    popci_graph_state s;
    const char **scopes;
    uint32_t cnt = popci_r_count(r, 5);
    popc_status st = POPC_OK;

    if (!(scopes = popci_calloc((size_t)cnt + 1, sizeof *scopes)))
        return nomem();
    for (uint32_t i = 0; i < cnt && !r->bad; i++)
        scopes[i] = popci_r_str(r);
    s.scopes = scopes;
    s.n_scopes = (int)cnt;
    r_annot(r, &s.annot);
    s.n_constants = r_int(r, 0, INT32_MAX);
    if (!r->bad)
        st = popci_graph_put_state(g, &s);
    free(scopes);
    return st;
}

popc_status popci_graph_read(popci_rbuf *r, popc_graph **out)
{
    popc_graph *g = NULL;
    id_scratch ids = {NULL, 0};
    uint32_t cnt;
    popc_status st;
    const char *name, *why;

    *out = NULL;
    name = popci_r_str(r);
    popci_r_u32(r); /* flags: how initializers were written (per value) */
    if (r->bad)
        goto malformed;
    if ((st = popc_graph_new(name, &g)) != POPC_OK)
        return st;
    /* the smallest value is 32 bytes, the smallest node 87 */
    cnt = popci_r_count(r, 32);
    if ((st = popci_graph_reserve(g, (int)cnt, 0)) != POPC_OK)
        goto fail;
    for (uint32_t v = 0; v < cnt && !r->bad; v++)
        if ((st = r_value(r, g)) != POPC_OK)
            goto fail;
    cnt = popci_r_count(r, 40);
    if (cnt > popc_limit_get(POPC_LIMIT_NODES))
        popci_r_fail(r, "a graph has more nodes than popc's limit "
                     "(POPC_MAX_NODES, default 1000000)");
    if (r->bad)
        goto malformed;
    if ((st = popci_graph_reserve(g, 0, (int)cnt)) != POPC_OK)
        goto fail;
    for (uint32_t n = 0; n < cnt && !r->bad; n++)
        if ((st = r_node(r, g, &ids)) != POPC_OK)
            goto fail;
    if (r->bad)
        goto malformed;
    if ((st = r_put_ids(r, g)) != POPC_OK ||
        (st = r_state(r, g)) != POPC_OK)
        goto fail;
    if (r->bad)
        goto malformed;
    if ((st = popci_graph_seal(g, &why)) != POPC_OK)
        goto fail;
    if (why)
        popci_r_fail(r, why);
    if (r->bad)
        goto malformed;
    free(ids.ids);
    *out = g;
    return POPC_OK;
malformed:
    st = popc_set_error(POPC_EIO, "malformed graph at byte %zu: %s", r->pos,
                        r->why ? r->why : "bad encoding");
fail:
    free(ids.ids);
    popc_graph_free(g);
    return st;
}

/* ---- public API -------------------------------------------------------------- */

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
    popci_rbuf r = {data, size, 0, 0, NULL, 0, 0};
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
