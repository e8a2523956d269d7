/* lean.c - unpacking a mapped model file without copying its weights.
**
** protobuf-c copies every bytes field out of the buffer it parses, so a
** model file mapped and unpacked the usual way is held twice (the pages of
** the mapping and the unpacked raw_data), and the tensors made from it a
** third time. Instead, the protobuf wire format of the file is walked
** (ModelProto.graph -> GraphProto.initializer -> TensorProto.raw_data):
** a skeleton copy of the file without the raw_data payloads of the main
** graph's initializers is unpacked, and each initializer's raw_data is
** pointed at its bytes in the mapping. After the importer copies one
** into its tensor, popco_lean_release drops those pages of the mapping,
** so the weights are held about once.
**
** Anything unusual in the wire format (groups, a graph given twice) makes
** the walk give up, and the file is unpacked the usual way. Before either,
** the whole file is checked against popc's limits (wire.c), so that
** neither this walk nor protobuf-c's recursive unpack sees a file nested
** deeper, or holding more, than popc accepts.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "onnx/onnx_priv.h"

#define MODEL_GRAPH 7      /* ModelProto.graph */
#define GRAPH_INITIALIZER 5 /* GraphProto.initializer */
#define TENSOR_RAW_DATA 9  /* TensorProto.raw_data */

typedef struct buf {
    uint8_t *p;
    size_t len, cap;
} buf;

static int put(buf *b, const void *data, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        uint8_t *p;

        while (cap < b->len + n)
            cap *= 2;
        if (!(p = realloc(b->p, cap)))
            return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return 0;
}

static int put_varint(buf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;

    do {
        tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return put(b, tmp, n);
}

typedef struct walk {
    const uint8_t *p;
    popco_raw_ref *refs;
    size_t n_refs, cap_refs;
} walk;

static int add_ref(walk *w, size_t off, size_t len)
{
    if (w->n_refs == w->cap_refs) {
        size_t cap = w->cap_refs ? 2 * w->cap_refs : 64;
        popco_raw_ref *r = realloc(w->refs, cap * sizeof *r);

        if (!r)
            return -1;
        w->refs = r;
        w->cap_refs = cap;
    }
    w->refs[w->n_refs].off = off;
    w->refs[w->n_refs].len = len;
    w->n_refs++;
    return 0;
}

/* The fields of a message in [from, end) into out, except: a
** length-delimited dropped_field is left out (its payload remembered in
** w->refs), and a length-delimited nested_field is rewritten by inner. */
typedef int (*rewrite)(walk *w, size_t from, size_t end, buf *out);

static int copy_fields(walk *w, size_t from, size_t end, buf *out,
                       uint32_t nested_field, rewrite inner,
                       uint32_t dropped_field, int *dropped)
{
    size_t at = from;

    while (at < end) {
        size_t start = at, payload, len;
        uint32_t field;
        int wire;

        if (popco_wire_field(w->p, end, &at, &field, &wire, &payload, &len) != 0)
            return -1;
        if (wire == 2 && field == dropped_field) {
            /* the last raw_data of a message wins, as in protobuf */
            if (*dropped)
                w->n_refs--;
            if (add_ref(w, payload, len) != 0)
                return -1;
            *dropped = 1;
        } else if (wire == 2 && field == nested_field && inner) {
            buf sub = {0};
            int rc = inner(w, payload, payload + len, &sub);

            rc = rc ? rc
                    : put_varint(out, (uint64_t)field << 3 | 2) ||
                          put_varint(out, sub.len) ||
                          (sub.len && put(out, sub.p, sub.len));
            free(sub.p);
            if (rc)
                return -1;
        } else if (put(out, w->p + start, at - start) != 0) {
            return -1;
        }
    }
    return 0;
}

static int rewrite_tensor(walk *w, size_t from, size_t end, buf *out)
{
    size_t before = w->n_refs;
    int dropped = 0;

    if (copy_fields(w, from, end, out, 0, NULL, TENSOR_RAW_DATA, &dropped))
        return -1;
    /* one entry per initializer, raw_data or not */
    return w->n_refs == before ? add_ref(w, 0, 0) : 0;
}

static int rewrite_graph(walk *w, size_t from, size_t end, buf *out)
{
    int none = 0;

    return copy_fields(w, from, end, out, GRAPH_INITIALIZER, rewrite_tensor,
                       0, &none);
}

/* The skeleton of the model; -1 to fall back to a plain unpack. */
static int skeleton(walk *w, size_t size, buf *out)
{
    size_t at = 0;
    int graphs = 0;

    /* a second graph field would be merged into the first by protobuf */
    while (at < size) {
        size_t payload, len;
        uint32_t field;
        int wire;

        if (popco_wire_field(w->p, size, &at, &field, &wire, &payload, &len) != 0)
            return -1;
        graphs += field == MODEL_GRAPH;
    }
    if (graphs != 1)
        return -1;
    {
        int none = 0;

        return copy_fields(w, 0, size, out, MODEL_GRAPH, rewrite_graph, 0,
                           &none);
    }
}

popc_status popco_unpack_model_lean(const void *data, size_t size,
                                    const char *name, Onnx__ModelProto **out,
                                    popco_raw_ref **refs)
{
    walk w = {.p = data};
    buf skel = {0};
    Onnx__GraphProto *gp;
    popc_status st;

    *refs = NULL;
    if (size && (st = popco_wire_check(data, size,
                                       &onnx__model_proto__descriptor,
                                       name)) != POPC_OK)
        return st;
    if (size == 0 || skeleton(&w, size, &skel) != 0)
        goto plain;
    st = popco_unpack_model(skel.p ? skel.p : (const uint8_t *)"", skel.len,
                            name, out);
    free(skel.p);
    skel.p = NULL;
    if (st != POPC_OK)
        goto plain; /* the plain unpack names the problem */
    gp = (*out)->graph;
    if (gp->n_initializer != w.n_refs) {
        onnx__model_proto__free_unpacked(*out, NULL);
        *out = NULL;
        goto plain;
    }
    for (size_t i = 0; i < w.n_refs; i++) {
        if (!w.refs[i].len)
            continue;
        gp->initializer[i]->has_raw_data = 1;
        gp->initializer[i]->raw_data.data =
            (uint8_t *)data + w.refs[i].off;
        gp->initializer[i]->raw_data.len = w.refs[i].len;
    }
    if (!w.n_refs) {
        free(w.refs);
        w.refs = NULL;
    }
    *refs = w.refs;
    return POPC_OK;
plain:
    free(skel.p);
    free(w.refs);
    return popco_unpack_model(data, size, name, out);
}

/* Whole pages inside [lo, hi) only: the neighbours may still be read. */
static void drop_pages(uintptr_t lo, uintptr_t hi)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

    lo = (lo + page - 1) / page * page;
    hi = hi / page * page;
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

void popco_copy_from_mapping(void *dst, const void *src, size_t n)
{
    const size_t chunk = (size_t)8 << 20;

    for (size_t done = 0; done < n; done += chunk) {
        size_t k = n - done < chunk ? n - done : chunk;

        memcpy((char *)dst + done, (const char *)src + done, k);
        drop_pages((uintptr_t)src + done, (uintptr_t)src + done + k);
    }
}

void popco_lean_release(Onnx__TensorProto *tp, const popco_map *map)
{
    if (!tp->raw_data.data || !map->data)
        return;
    drop_pages((uintptr_t)tp->raw_data.data,
               (uintptr_t)tp->raw_data.data + tp->raw_data.len);
    tp->raw_data.data = NULL;
    tp->raw_data.len = 0;
    tp->has_raw_data = 0;
}

void popco_lean_forget(Onnx__ModelProto *mp, popco_raw_ref *refs)
{
    /* borrowed pointers into the mapping must not reach protobuf-c's free */
    if (mp && refs)
        for (size_t i = 0; i < mp->graph->n_initializer; i++)
            if (refs[i].len &&
                mp->graph->initializer[i]->raw_data.data) {
                mp->graph->initializer[i]->raw_data.data = NULL;
                mp->graph->initializer[i]->raw_data.len = 0;
            }
    free(refs);
}
