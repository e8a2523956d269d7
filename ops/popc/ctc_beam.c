/* ctc_beam.c - popc::CTCBeamSearchDecoder, poptorch.ctc_beam_search_decoder.
**
** Inputs: log_probs [T, B, C] float32 (log probabilities), lengths [B]
** int32 or int64 (0..T). Attributes: blank (0), beam_width (100),
** top_paths (1, at most beam_width). Outputs: the paths' log
** probabilities [B, top_paths] float32, their lengths [B, top_paths] int32
** and the paths [B, top_paths, T] int32, padded with blank.
**
** The decoder is CTC prefix beam search. Each beam is a collapsed prefix
** with two log probabilities: ending in blank (pb) and not (pnb). At every
** step t < length, every beam, in beam order, is extended by every class c
** in ascending order:
** - c == blank: pb(prefix) += pb + pnb;
** - c == the prefix's last label: pnb(prefix) += pnb (a repeat collapses)
**   and pnb(prefix + c) += pb (a repeat after a blank);
** - any other c: pnb(prefix + c) += pb + pnb;
** each term times p_t(c), added in log space by lse(a, b) = max +
** log1p(exp(-|a - b|)), in double.
**
** The beam_width best candidates are kept, ordered by:
** 1. total = lse(pb, pnb), compared after rounding to 1e-9 (so that totals
**    equal up to rounding tie);
** 2. then the shorter prefix;
** 3. then the lexicographically smaller one.
**
** That order is total, so the result never depends on how candidates
** were enumerated or sorted. tests/ref/gen_ctc.py is an independent NumPy
** decoder with the same rules. Prefixes are trie nodes (parent, label), so
** extending one is a hash look-up, not a copy.
*/
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/util/oputil.h"
#include "ops/popc/popc_priv.h"

typedef struct node {
    int parent, label, depth;
} node;

typedef struct cand {
    int node, depth;
    double pb, pnb, total;
    int64_t key;               /* total rounded to 1e-9 */
    const int *path;           /* the prefix's labels, for ties */
} cand;

typedef struct decoder {
    node *nodes;
    int n_nodes, cap_nodes;
    int *table;                /* open addressing: (parent, label) -> node */
    int cap_table;
    cand *cands;
    int n_cands, cap_cands;
    int *slot_of;              /* node -> index in cands, -1 */
    int cap_slot;
    int *paths;                /* the candidates' labels, T ints each */
    int cap_paths;
} decoder;

static double lse(double a, double b)
{
    double m, d;

    if (a == -INFINITY)
        return b;
    if (b == -INFINITY)
        return a;
    m = a > b ? a : b;
    d = a > b ? b - a : a - b;
    return m + log1p(exp(d));
}

static int64_t round_key(double total)
{
    return total == -INFINITY ? INT64_MIN
                              : (int64_t)floor(total * 1e9 + 0.5);
}

static popc_status oom(const char *nodename)
{
    return opu_error(POPC_ENOMEM, "CTCBeamSearchDecoder", nodename,
                     "out of memory");
}

static int grow(void **p, int *cap, int need, size_t size)
{
    int n = *cap ? *cap : 64;
    void *q;

    if (need <= *cap)
        return 0;
    while (n < need)
        n *= 2;
    if (!(q = realloc(*p, (size_t)n * size)))
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

static unsigned hash2(int parent, int label)
{
    uint64_t h = (uint64_t)(uint32_t)parent * 0x9E3779B97F4A7C15ull ^
                 (uint64_t)(uint32_t)label * 0xC2B2AE3D27D4EB4Full;

    return (unsigned)(h ^ (h >> 29));
}

static int rehash(decoder *d, int cap)
{
    int *t = malloc(sizeof(int) * (size_t)cap);

    if (!t)
        return -1;
    for (int i = 0; i < cap; i++)
        t[i] = -1;
    for (int i = 1; i < d->n_nodes; i++) {
        unsigned h = hash2(d->nodes[i].parent, d->nodes[i].label);

        while (t[h & (unsigned)(cap - 1)] >= 0)
            h++;
        t[h & (unsigned)(cap - 1)] = i;
    }
    free(d->table);
    d->table = t;
    d->cap_table = cap;
    return 0;
}

/* The node of prefix parent + label, created when new; -1: no memory. */
static int child(decoder *d, int parent, int label)
{
    unsigned h = hash2(parent, label);
    int i;

    for (;; h++) {
        i = d->table[h & (unsigned)(d->cap_table - 1)];
        if (i < 0)
            break;
        if (d->nodes[i].parent == parent && d->nodes[i].label == label)
            return i;
    }
    if (grow((void **)&d->nodes, &d->cap_nodes, d->n_nodes + 1,
             sizeof(node)))
        return -1;
    i = d->n_nodes++;
    d->nodes[i] = (node){parent, label, d->nodes[parent].depth + 1};
    if (2 * d->n_nodes > d->cap_table)
        return rehash(d, 2 * d->cap_table) ? -1 : i;
    d->table[h & (unsigned)(d->cap_table - 1)] = i;
    return i;
}

/* The candidate of node n, created with zero probability when new. */
static cand *cand_of(decoder *d, int n)
{
    int old = d->cap_slot;

    if (grow((void **)&d->slot_of, &d->cap_slot, d->n_nodes, sizeof(int)))
        return NULL;
    for (int i = old; i < d->cap_slot; i++)
        d->slot_of[i] = -1;
    if (d->slot_of[n] >= 0)
        return &d->cands[d->slot_of[n]];
    if (grow((void **)&d->cands, &d->cap_cands, d->n_cands + 1,
             sizeof(cand)))
        return NULL;
    d->slot_of[n] = d->n_cands;
    d->cands[d->n_cands] = (cand){n, d->nodes[n].depth, -INFINITY,
                                  -INFINITY, 0, 0, NULL};
    return &d->cands[d->n_cands++];
}

static void path_of(const decoder *d, int n, int *out)
{
    for (int k = d->nodes[n].depth - 1; k >= 0; k--) {
        out[k] = d->nodes[n].label;
        n = d->nodes[n].parent;
    }
}

static int by_rank(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;

    if (a->key != b->key)
        return a->key > b->key ? -1 : 1;
    if (a->depth != b->depth)
        return a->depth < b->depth ? -1 : 1;
    for (int k = 0; k < a->depth; k++)
        if (a->path[k] != b->path[k])
            return a->path[k] < b->path[k] ? -1 : 1;
    return 0;
}

/* One sequence of the batch; beams in *beams (n_beams) on return. */
static popc_status decode(decoder *d, const char *nodename, const float *lp,
                          int64_t T, int64_t B, int64_t C, int64_t b,
                          int64_t len, int blank, int width, cand **beams,
                          int *n_beams)
{
    cand *cur = malloc(sizeof(cand) * (size_t)width);
    int n_cur = 1;

    if (!cur)
        return oom(nodename);
    d->n_nodes = 1;
    d->nodes[0] = (node){-1, -1, 0};
    for (int i = 0; i < d->cap_table; i++)
        d->table[i] = -1;
    cur[0] = (cand){0, 0, 0.0, -INFINITY, 0.0, 0, NULL};
    for (int64_t t = 0; t < len; t++) {
        const float *p = lp + (t * B + b) * C;

        d->n_cands = 0;
        for (int i = 0; i < d->cap_slot; i++)
            d->slot_of[i] = -1;
        for (int k = 0; k < n_cur; k++) {
            const cand bm = cur[k];
            double total = lse(bm.pb, bm.pnb);
            int last = bm.node ? d->nodes[bm.node].label : -1;

            for (int64_t c = 0; c < C; c++) {
                double pc = (double)p[c];
                cand *x;
                int nn;

                if (c == blank) {
                    if (!(x = cand_of(d, bm.node)))
                        goto nomem;
                    x->pb = lse(x->pb, total + pc);
                    continue;
                }
                if ((nn = child(d, bm.node, (int)c)) < 0)
                    goto nomem;
                if (c == last) {
                    if (!(x = cand_of(d, nn)))
                        goto nomem;
                    x->pnb = lse(x->pnb, bm.pb + pc);
                    if (!(x = cand_of(d, bm.node)))
                        goto nomem;
                    x->pnb = lse(x->pnb, bm.pnb + pc);
                } else {
                    if (!(x = cand_of(d, nn)))
                        goto nomem;
                    x->pnb = lse(x->pnb, total + pc);
                }
            }
        }
        if ((int64_t)d->n_cands * T > INT32_MAX ||
            grow((void **)&d->paths, &d->cap_paths,
                 (int)(d->n_cands * T), sizeof(int)))
            goto nomem;
        for (int i = 0; i < d->n_cands; i++) {
            cand *x = &d->cands[i];
            int *path = d->paths + (size_t)i * (size_t)T;

            x->total = lse(x->pb, x->pnb);
            x->key = round_key(x->total);
            path_of(d, x->node, path);
            x->path = path;
        }
        qsort(d->cands, (size_t)d->n_cands, sizeof(cand), by_rank);
        n_cur = d->n_cands < width ? d->n_cands : width;
        memcpy(cur, d->cands, sizeof(cand) * (size_t)n_cur);
    }
    for (int k = 0; k < n_cur; k++)
        cur[k].total = lse(cur[k].pb, cur[k].pnb);
    *beams = cur;
    *n_beams = n_cur;
    return POPC_OK;
nomem:
    free(cur);
    return oom(nodename);
}

static void decoder_free(decoder *d)
{
    free(d->nodes);
    free(d->table);
    free(d->cands);
    free(d->slot_of);
    free(d->paths);
}

static popc_status attrs_of(const char *nodename, const popc_attrs *attrs,
                            int64_t C, int *blank, int *width, int *top)
{
    int64_t bl = popc_attr_int(attrs, "blank", 0);
    int64_t w = popc_attr_int(attrs, "beam_width", 100);
    int64_t tp = popc_attr_int(attrs, "top_paths", 1);

    if (bl < 0 || bl >= C)
        return opu_error(POPC_EINVAL, "CTCBeamSearchDecoder", nodename,
                         "blank %lld is not a class of the %lld classes",
                         (long long)bl, (long long)C);
    if (w < 1 || w > 100000)
        return opu_error(POPC_EINVAL, "CTCBeamSearchDecoder", nodename,
                         "beam_width %lld; give 1..100000", (long long)w);
    if (tp < 1 || tp > w)
        return opu_error(POPC_EINVAL, "CTCBeamSearchDecoder", nodename,
                         "top_paths %lld; give 1..beam_width (%lld)",
                         (long long)tp, (long long)w);
    *blank = (int)bl;
    *width = (int)w;
    *top = (int)tp;
    return POPC_OK;
}

static popc_status ctc_infer(popc_infer_ctx *ic)
{
    const popc_view *lp = &ic->inputs[0], *len = &ic->inputs[1];
    int blank, width, top;
    int64_t d2[2], d3[3];
    popc_status st;

    if ((st = opu_want_f32(ic, "CTCBeamSearchDecoder", 0, "log_probs")) !=
        POPC_OK)
        return st;
    if (lp->rank != 3 || lp->dims[2] < 1)
        return opu_error(POPC_EINVAL, "CTCBeamSearchDecoder", ic->node_name,
                         "log_probs must be [input_length, batch_size, "
                         "num_classes]");
    if ((len->dtype != POPC_DTYPE_I32 && len->dtype != POPC_DTYPE_I64) ||
        len->rank != 1 || len->dims[0] != lp->dims[1])
        return opu_error(POPC_EINVAL, "CTCBeamSearchDecoder", ic->node_name,
                         "lengths must be int32 or int64 [batch_size] (%lld)",
                         (long long)lp->dims[1]);
    if ((st = attrs_of(ic->node_name, ic->attrs, lp->dims[2], &blank, &width,
                       &top)) != POPC_OK)
        return st;
    d2[0] = d3[0] = lp->dims[1];
    d2[1] = d3[1] = top;
    d3[2] = lp->dims[0];
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d2, 2);
    opu_set(&ic->outputs[1], POPC_DTYPE_I32, d2, 2);
    opu_set(&ic->outputs[2], POPC_DTYPE_I32, d3, 3);
    return POPC_OK;
}

static popc_status ctc_forward(const popc_kernel_ctx *kc)
{
    const popc_view *lpv = &kc->inputs[0], *lenv = &kc->inputs[1];
    int64_t T = lpv->dims[0], B = lpv->dims[1], C = lpv->dims[2];
    float *prob = kc->outputs[0].data;
    int32_t *lens = kc->outputs[1].data, *paths = kc->outputs[2].data;
    decoder d;
    int blank, width, top;
    popc_status st;

    if ((st = attrs_of(kc->node_name, kc->attrs, C, &blank, &width, &top)) !=
        POPC_OK)
        return st;
    memset(&d, 0, sizeof d);
    if (grow((void **)&d.nodes, &d.cap_nodes, 1, sizeof(node)) ||
        !(d.table = malloc(sizeof(int) * 1024))) {
        decoder_free(&d);
        return oom(kc->node_name);
    }
    d.cap_table = 1024;
    for (int64_t b = 0; b < B; b++) {
        int64_t len = lenv->dtype == POPC_DTYPE_I32
                          ? ((const int32_t *)lenv->data)[b]
                          : ((const int64_t *)lenv->data)[b];
        cand *beams = NULL;
        int n = 0;

        if (len < 0 || len > T) {
            decoder_free(&d);
            return opu_error(POPC_EINVAL, "CTCBeamSearchDecoder",
                             kc->node_name, "lengths[%lld] is %lld, outside "
                             "0..%lld (the input length)", (long long)b,
                             (long long)len, (long long)T);
        }
        if ((st = decode(&d, kc->node_name, lpv->data, T, B, C, b, len,
                         blank, width, &beams, &n)) != POPC_OK) {
            decoder_free(&d);
            return st;
        }
        for (int k = 0; k < top; k++) {
            int32_t *row = paths + (b * top + k) * T;

            for (int64_t t = 0; t < T; t++)
                row[t] = blank;
            if (k < n) {
                prob[b * top + k] = (float)beams[k].total;
                lens[b * top + k] = d.nodes[beams[k].node].depth;
                path_of(&d, beams[k].node, row);
            } else { /* fewer distinct prefixes than top_paths */
                prob[b * top + k] = -INFINITY;
                lens[b * top + k] = 0;
            }
        }
        free(beams);
    }
    decoder_free(&d);
    return POPC_OK;
}

const popc_op_def popc_ctc_beam_def = {
    .size = sizeof(popc_op_def),
    .domain = "popc",
    .name = "CTCBeamSearchDecoder",
    .since_version = 1,
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 3,
    .max_outputs = 3,
    .infer = ctc_infer,
    .forward = ctc_forward,
    .doc = "poptorch.ctc_beam_search_decoder(log_probs, lengths; blank, "
           "beam_width, top_paths): log probabilities, lengths and paths "
           "of the best prefixes",
};
