/* arena.c - the memory plan: where each activation lives in a frame's
** arena.
**
** Buffers: an activation is one buffer, unless it runs in place: the
** output of an op flagged POPC_OP_INPLACE joins the buffer of its input 0
** when that input dies at the node (its last reader; so never a weight,
** input, constant, graph output, anchor, gradient kept for the optimizer
** or a value the backward pass still reads) and both have the same size.
** A buffer is live from the first producer to the last reader of its
** members; two buffers share bytes only when their live ranges are apart.
**
** Placement: the smaller of two plans. First fit in schedule order (a
** buffer takes the lowest gap among those live when it is produced), and
** greedy by size (TFLite's offline planner: the largest buffers first, each
** at the lowest offset clear of the placed buffers it overlaps in time).
** POPC_INPLACE=0 turns aliasing off (results are bitwise the same either
** way; the switch is for tests and comparisons).
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc_priv.h"
#include "core/runtime/plan_priv.h"

#define ALIGN_UP(n) (((n) + POPC_TENSOR_ALIGN - 1) / POPC_TENSOR_ALIGN * \
                     POPC_TENSOR_ALIGN)

typedef struct buffer {
    int first, last;           /* schedule positions */
    int64_t size, off;
} buffer;

typedef struct block {
    int64_t off, size;
} block;

static popc_status oom(void)
{
    return popc_set_error(POPC_ENOMEM, "compile: out of memory (memory "
                          "plan)");
}

int popci_plan_grad_in_accum(const popci_plan *p, int w)
{
    const popci_plan_weight *pw = &p->weights[w];
    int g = pw->grad_slot;

    if (!p->pub.training || pw->accum_slot < 0 || g < 0 ||
        p->slots[g].kind != POPC_SLOT_ACT ||
        p->slots[g].info.dtype != POPC_DTYPE_F32 || /* a float16 gradient
                                                      is widened on the
                                                      host */
        pw->update_slot == g)
        return 0;
    for (int o = 0; o < p->n_weights; o++)
        if (o != w && (p->weights[o].grad_slot == g ||
                       p->weights[o].update_slot == g))
            return 0;
    return 1;
}

/* POPC_INPLACE: unset, empty or 1 -> *on = 1; 0 -> 0; else refused. */
static popc_status inplace_setting(int *on)
{
    const char *s = getenv("POPC_INPLACE");

    *on = 1;
    if (!s || !*s || strcmp(s, "1") == 0)
        return POPC_OK;
    if (strcmp(s, "0") == 0) {
        *on = 0;
        return POPC_OK;
    }
    return popc_set_error(POPC_EINVAL, "compile: POPC_INPLACE is '%s'; set "
                          "it to 0 (no in-place execution) or 1 (the "
                          "default), or unset it", s);
}

static int find(int *root, int s)
{
    while (root[s] != s)
        s = root[s] = root[root[s]];
    return s;
}

static int in_arena(const popci_plan *p, int s)
{
    return s >= 0 && p->slots[s].kind == POPC_SLOT_ACT &&
           popci_plan_slot_bytes(p, s) > 0;
}

/* Node k's output 0 may take input 0's buffer (see the top). */
static int may_alias(const popci_plan *p, int k)
{
    const popc_plan_node *pn = &p->nodes[k];
    int i, o;

    if (!(pn->op->flags & POPC_OP_INPLACE) || pn->n_inputs < 1 ||
        pn->n_outputs < 1)
        return 0;
    i = pn->inputs[0];
    o = pn->outputs[0];
    if (!in_arena(p, i) || !in_arena(p, o) || i == o ||
        p->slots[i].last_use != k || p->slots[o].first_use != k ||
        popci_plan_slot_bytes(p, i) != popci_plan_slot_bytes(p, o))
        return 0;
    for (int j = 1; j < pn->n_inputs; j++)
        if (pn->inputs[j] == i)
            return 0;
    for (int j = 1; j < pn->n_outputs; j++)
        if (pn->outputs[j] == i)
            return 0;
    return 1;
}

/* root[s]: the slot whose buffer s lives in (s itself unless aliased). */
static void make_buffers(popci_plan *p, int inplace,
                         int *root, buffer *buf)
{
    int ns = p->pub.n_slots;

    for (int s = 0; s < ns; s++) {
        root[s] = s;
        buf[s] = (buffer){p->slots[s].first_use, p->slots[s].last_use,
                          (int64_t)ALIGN_UP(popci_plan_slot_bytes(p, s)),
                          -1};
    }
    for (int k = 0; inplace && k < p->pub.n_nodes; k++) {
        int r, o;

        if (!may_alias(p, k))
            continue;
        r = find(root, p->nodes[k].inputs[0]);
        o = p->nodes[k].outputs[0];
        root[o] = r;
        if (buf[o].last > buf[r].last)
            buf[r].last = buf[o].last;
        if (buf[o].size > buf[r].size)
            buf[r].size = buf[o].size;
    }
}

/* First fit among the live blocks (sorted by offset). */
static int64_t place(block *live, int *n_live, int64_t size)
{
    int64_t at = 0;
    int i;

    for (i = 0; i < *n_live; i++) {
        if (live[i].off - at >= size)
            break;
        if (live[i].off + live[i].size > at)
            at = live[i].off + live[i].size;
    }
    memmove(&live[i + 1], &live[i], sizeof *live * (size_t)(*n_live - i));
    live[i] = (block){at, size};
    (*n_live)++;
    return at;
}

static void release(block *live, int *n_live, int64_t off)
{
    for (int i = 0; i < *n_live; i++)
        if (live[i].off == off) {
            memmove(&live[i], &live[i + 1],
                    sizeof *live * (size_t)(*n_live - i - 1));
            (*n_live)--;
            return;
        }
}

/* First fit in schedule order: a node's new buffers are placed before the
** buffers ending at it are released. */
static int64_t first_fit(const popci_plan *p, const int *roots, int n_roots,
                         buffer *buf, block *live)
{
    int n_live = 0;
    int64_t peak = 0;

    for (int k = 0; k < p->pub.n_nodes; k++) {
        for (int i = 0; i < n_roots; i++) {
            buffer *b = &buf[roots[i]];
            if (b->first != k)
                continue;
            b->off = place(live, &n_live, b->size);
            if (b->off + b->size > peak)
                peak = b->off + b->size;
        }
        for (int i = 0; i < n_roots; i++)
            if (buf[roots[i]].last == k)
                release(live, &n_live, buf[roots[i]].off);
    }
    return peak;
}

typedef struct by_size_key {
    int64_t size;
    int first, slot;
} by_size_key;

static int by_size(const void *a, const void *b)
{
    const by_size_key *x = a, *y = b;

    if (x->size != y->size)
        return x->size < y->size ? 1 : -1;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return x->slot - y->slot;
}

static int by_off(const void *a, const void *b)
{
    const block *x = a, *y = b;

    return (x->off > y->off) - (x->off < y->off);
}

/* Greedy by size; roots is reordered. */
static int64_t greedy(int *roots, int n_roots, buffer *buf, block *near)
{
    by_size_key *key = popci_malloc(sizeof *key * (size_t)(n_roots + 1));
    int64_t peak = 0;

    if (!key)
        return -1;
    for (int i = 0; i < n_roots; i++)
        key[i] = (by_size_key){buf[roots[i]].size, buf[roots[i]].first,
                               roots[i]};
    qsort(key, (size_t)n_roots, sizeof *key, by_size);
    for (int i = 0; i < n_roots; i++)
        roots[i] = key[i].slot;
    free(key);
    for (int i = 0; i < n_roots; i++) {
        buffer *b = &buf[roots[i]];
        int n_near = 0;
        int64_t at = 0;

        for (int j = 0; j < i; j++) {
            const buffer *o = &buf[roots[j]];
            if (o->first <= b->last && b->first <= o->last)
                near[n_near++] = (block){o->off, o->size};
        }
        qsort(near, (size_t)n_near, sizeof *near, by_off);
        for (int j = 0; j < n_near && near[j].off - at < b->size; j++)
            if (near[j].off + near[j].size > at)
                at = near[j].off + near[j].size;
        b->off = at;
        if (at + b->size > peak)
            peak = at + b->size;
    }
    return peak;
}

popc_status popci_plan_memory(popci_plan *p)
{
    int ns = p->pub.n_slots, n_roots = 0, inplace;
    int *root = popci_malloc(sizeof *root * (size_t)(ns + 1));
    int *roots = popci_malloc(sizeof *roots * (size_t)(ns + 1));
    buffer *buf = popci_malloc(sizeof *buf * (size_t)(ns + 1));
    int64_t *ff_off = popci_malloc(sizeof *ff_off * (size_t)(ns + 1));
    block *tmp = popci_malloc(sizeof *tmp * (size_t)(ns + 1));
    int64_t ff_peak, gr_peak;
    popc_status st = POPC_OK;

    free(p->arena_offset);
    p->arena_offset = popci_malloc(sizeof(int64_t) * (size_t)(ns + 1));
    if (!root || !roots || !buf || !ff_off || !tmp ||
        !p->arena_offset) {
        st = oom();
        goto done;
    }
    if ((st = inplace_setting(&inplace)) != POPC_OK)
        goto done;
    p->persistent_bytes = 0;
    for (int s = 0; s < ns; s++) {
        p->arena_offset[s] = -1;
        if (p->slots[s].kind != POPC_SLOT_ACT &&
            p->slots[s].kind != POPC_SLOT_INPUT)
            p->persistent_bytes += popci_plan_slot_bytes(p, s);
        else if (p->slots[s].kind == POPC_SLOT_ACT &&
                 p->slots[s].first_use < 0) {
            st = popc_set_error(POPC_EINTERNAL, "compile: value '%s' is "
                                "used but no scheduled node produces it",
                                p->slots[s].name);
            goto done;
        }
    }
    make_buffers(p, inplace, root, buf);
    p->n_inplace = 0;
    for (int s = 0; s < ns; s++) {
        if (!in_arena(p, s))
            continue;
        if (find(root, s) == s)
            roots[n_roots++] = s;
        else
            p->n_inplace++;
    }
    ff_peak = first_fit(p, roots, n_roots, buf, tmp);
    for (int s = 0; s < ns; s++)
        ff_off[s] = buf[s].off;
    if ((gr_peak = greedy(roots, n_roots, buf, tmp)) < 0) {
        st = oom();
        goto done;
    }
    if (ff_peak <= gr_peak)
        for (int s = 0; s < ns; s++)
            buf[s].off = ff_off[s];
    p->arena_bytes = (size_t)(ff_peak <= gr_peak ? ff_peak : gr_peak);
    for (int s = 0; s < ns; s++)
        if (p->slots[s].kind == POPC_SLOT_ACT)
            p->arena_offset[s] = in_arena(p, s)
                                     ? buf[find(root, s)].off
                                     : 0;
done:
    free(root);
    free(roots);
    free(buf);
    free(ff_off);
    free(tmp);
    return st;
}
