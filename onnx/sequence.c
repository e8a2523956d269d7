/* sequence.c - ONNX sequences, resolved at import.
**
** popc's graphs hold tensors only. A sequence whose length and positions
** are known when the model is imported (positions from initializers,
** constants or frozen inputs, as PopTorch fixes shapes at compile) is a
** list of tensor values kept by the importer: SequenceEmpty, Construct,
** Insert and Erase edit the list, SequenceAt and SequenceLength read it,
** SplitToSequence fills it with Split's pieces and ConcatFromSequence
** joins it with Concat (Unsqueeze first for new_axis). Nothing of a
** sequence reaches the graph but those ordinary ops, so training, the
** backends and executables need nothing new. A sequence that would have
** to exist at run time - a position computed by the model, a sequence
** as a graph input or output, or read by any other op - is refused,
** naming the value.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/graph.h"
#include "popc/tensor.h"
#include "onnx/onnx_priv.h"

typedef struct seq {
    char *name;
    int *ids;                  /* values of the elements, in order */
    int n, cap;
} seq;

struct popco_seqs {
    seq *v;
    int n, cap;
};

static const char *const seq_ops[] = {
    "SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceErase",
    "SequenceAt",    "SequenceLength",    "SplitToSequence",
    "ConcatFromSequence"};

int popco_is_sequence_op(const char *op)
{
    for (size_t i = 0; i < sizeof seq_ops / sizeof *seq_ops; i++)
        if (strcmp(op, seq_ops[i]) == 0)
            return 1;
    return 0;
}

void popco_seqs_free(popco_seqs *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++) {
        free(s->v[i].name);
        free(s->v[i].ids);
    }
    free(s->v);
    free(s);
}

static seq *find(const popco_importer *im, const char *name)
{
    for (int i = 0; im->seqs && name && i < im->seqs->n; i++)
        if (strcmp(im->seqs->v[i].name, name) == 0)
            return &im->seqs->v[i];
    return NULL;
}

int popco_is_sequence(const popco_importer *im, const char *name)
{
    return find(im, name) != NULL;
}

static popc_status oom(const popco_importer *im)
{
    return popc_set_error(POPC_ENOMEM, "%s: out of memory", im->file);
}

static int grow(seq *s, int need)
{
    int cap = s->cap ? s->cap : 4;
    int *ids;

    if (need <= s->cap)
        return 1;
    while (cap < need)
        cap *= 2;
    if (!(ids = realloc(s->ids, sizeof *ids * (size_t)cap)))
        return 0;
    s->ids = ids;
    s->cap = cap;
    return 1;
}

/* A new, empty sequence called name (a node's output). */
static popc_status define(popco_importer *im, const char *name, seq **out)
{
    popco_seqs *t = im->seqs;

    if (!name || !*name)
        return popc_set_error(POPC_EIO, "%s: a sequence op has no output "
                              "name", im->file);
    if (find(im, name) || popc_graph_find_value(im->g, name) >= 0)
        return popc_set_error(POPC_EIO, "%s: value '%s' is defined twice",
                              im->file, name);
    if (!t && !(t = im->seqs = calloc(1, sizeof *t)))
        return oom(im);
    if (t->n == t->cap) {
        int cap = t->cap ? t->cap * 2 : 8;
        seq *v = realloc(t->v, sizeof *v * (size_t)cap);

        if (!v)
            return oom(im);
        t->v = v;
        t->cap = cap;
    }
    memset(&t->v[t->n], 0, sizeof *t->v);
    if (!(t->v[t->n].name = strdup(name)))
        return oom(im);
    *out = &t->v[t->n++];
    return POPC_OK;
}

static popc_status not_a_sequence(const popco_importer *im,
                                  const char *where, const char *in)
{
    return popc_set_error(POPC_EUNSUPPORTED, "%s: %s reads '%s' as a "
                          "sequence, but no sequence op of this graph made "
                          "it (sequences as graph or subgraph inputs are "
                          "not supported)", im->file, where, in ? in : "");
}

/* A copy of the sequence an input names. */
static popc_status copy_of(popco_importer *im, const char *in,
                           const char *where, const char *out, seq **res)
{
    seq *src = find(im, in), *dst;
    popc_status st;

    if (!src)
        return not_a_sequence(im, where, in);
    if ((st = define(im, out, &dst)) != POPC_OK)
        return st;
    src = find(im, in); /* define may have moved the table */
    if (!grow(dst, src->n + 1))
        return oom(im);
    if (src->n)
        memcpy(dst->ids, src->ids, sizeof *src->ids * (size_t)src->n);
    dst->n = src->n;
    *res = dst;
    return POPC_OK;
}

/* The integer a position or split input holds: known at import. */
static popc_status known_ints(popco_importer *im, const char *in,
                              const char *where, const char *what,
                              int64_t *v, int max, int *n, int *rank)
{
    int id = popc_graph_find_value(im->g, in);
    const popc_tensor *t = NULL;
    popc_dtype dt;
    int64_t count;

    if (id >= 0 && popc_graph_value_kind(im->g, id) != POPC_VALUE_INPUT)
        t = popc_graph_value_tensor(im->g, id);
    if (!t)
        return popc_set_error(POPC_EUNSUPPORTED, "%s: %s: the %s '%s' is "
                              "not known at import; popc resolves sequences "
                              "when the model is imported, so it must be "
                              "an initializer, a constant or a frozen "
                              "input", im->file, where, what, in);
    dt = popc_tensor_dtype(t);
    count = popc_tensor_numel(t);
    if ((dt != POPC_DTYPE_I64 && dt != POPC_DTYPE_I32) || count > max)
        return popc_set_error(POPC_EINVAL, "%s: %s: the %s '%s' must be "
                              "int32 or int64 with at most %d values",
                              im->file, where, what, in, max);
    for (int64_t i = 0; i < count; i++)
        v[i] = dt == POPC_DTYPE_I64
                   ? ((const int64_t *)popc_tensor_cdata(t))[i]
                   : ((const int32_t *)popc_tensor_cdata(t))[i];
    *n = (int)count;
    *rank = popc_tensor_rank(t);
    return POPC_OK;
}

/* A position of a sequence of n elements, in [-n, n + extra). */
static popc_status position(popco_importer *im, const char *in,
                            const char *where, int n, int extra, int *pos)
{
    int64_t p;
    int got, rank;
    popc_status st;

    if ((st = known_ints(im, in, where, "position", &p, 1, &got, &rank)) !=
        POPC_OK)
        return st;
    if (got != 1 || p < -(int64_t)n || p >= (int64_t)n + extra)
        return popc_set_error(POPC_EINVAL, "%s: %s: position %lld is "
                              "outside the sequence of %d element%s",
                              im->file, where, got ? (long long)p : 0LL, n,
                              n == 1 ? "" : "s");
    *pos = (int)(p < 0 ? p + n : p);
    return POPC_OK;
}

static popc_status value_of(popco_importer *im, const char *in,
                            const char *where, int *id)
{
    if (find(im, in))
        return popc_set_error(POPC_EUNSUPPORTED, "%s: %s: sequences of "
                              "sequences are not supported ('%s')", im->file,
                              where, in);
    if (!in || (*id = popc_graph_find_value(im->g, in)) < 0)
        return popc_set_error(POPC_EIO, "%s: %s reads '%s', which no graph "
                              "input, initializer or earlier node defines",
                              im->file, where, in ? in : "");
    return POPC_OK;
}

static popc_status int64_constant(popco_importer *im, const int64_t *v,
                                  int n, int rank, int *id)
{
    int64_t dim = n;
    popc_tensor *t = NULL;
    popc_status st;

    if ((st = popc_tensor_new(POPC_DTYPE_I64, &dim, rank, &t)) != POPC_OK)
        return st;
    if (n)
        memcpy(popc_tensor_data(t), v, sizeof *v * (size_t)n);
    st = popco_add_constant(im, t, id);
    popc_tensor_free(t);
    return st;
}

static popc_status add(popco_importer *im, const char *op, const int *in,
                       int n_in, int *out, int n_out, const popc_attr *a,
                       int n_a)
{
    return popc_graph_add_node(im->g, NULL, op, 0, in, n_in, out, n_out, a,
                               n_a, NULL, NULL);
}

static const char *input(const Onnx__NodeProto *np, size_t i)
{
    return i < np->n_input && np->input[i] && *np->input[i] ? np->input[i]
                                                             : NULL;
}

/* ---- the ops ------------------------------------------------------------ */

static popc_status concat_from(popco_importer *im, const Onnx__NodeProto *np,
                               const char *where, int *out)
{
    const seq *s = find(im, input(np, 0));
    int64_t axis = popco_node_attr_int(np, "axis", 0);
    int new_axis = (int)popco_node_attr_int(np, "new_axis", 0);
    int rank, parts[64];
    popc_attr a = popc_attr_make_int("axis", 0);
    popc_status st;

    if (!s)
        return not_a_sequence(im, where, input(np, 0));
    if (s->n < 1 || s->n > 64)
        return popc_set_error(POPC_EINVAL, "%s: %s: the sequence has %d "
                              "elements; ConcatFromSequence joins 1 to 64",
                              im->file, where, s->n);
    rank = popc_graph_value_info(im->g, s->ids[0]).rank + (new_axis != 0);
    if (axis < -rank || axis >= rank)
        return popc_set_error(POPC_EINVAL, "%s: %s: axis %lld is outside "
                              "rank %d", im->file, where, (long long)axis,
                              rank);
    if (axis < 0)
        axis += rank;
    for (int i = 0; i < s->n; i++) {
        parts[i] = s->ids[i];
        if (new_axis) { /* stacking: each element gains the axis */
            int in[2] = {s->ids[i], -1};

            if ((st = int64_constant(im, &axis, 1, 1, &in[1])) != POPC_OK ||
                (st = add(im, "Unsqueeze", in, 2, &parts[i], 1, NULL, 0)) !=
                    POPC_OK)
                return st;
        }
    }
    a.i = axis;
    return add(im, "Concat", parts, s->n, out, 1, &a, 1);
}

static popc_status split_to(popco_importer *im, const Onnx__NodeProto *np,
                            const char *where, seq *s)
{
    int64_t axis = popco_node_attr_int(np, "axis", 0), sizes[64], split[64];
    int keep = (int)popco_node_attr_int(np, "keepdims", 1);
    int x, n = 0, got = 0, in[2];
    int split_rank = 1;
    popc_view v;
    popc_attr a = popc_attr_make_int("axis", 0);
    popc_status st;

    if ((st = value_of(im, input(np, 0), where, &x)) != POPC_OK)
        return st;
    v = popc_graph_value_info(im->g, x);
    if (axis < -v.rank || axis >= v.rank)
        return popc_set_error(POPC_EINVAL, "%s: %s: axis %lld is outside "
                              "rank %d", im->file, where, (long long)axis,
                              v.rank);
    if (axis < 0)
        axis += v.rank;
    if (input(np, 1)) {
        if ((st = known_ints(im, np->input[1], where, "split", split, 64,
                             &got, &split_rank)) != POPC_OK)
            return st;
        keep = 1; /* ONNX ignores keepdims when split is given */
    }
    if (input(np, 1) && split_rank == 0) {
        /* a scalar: pieces of that size, the last one smaller */
        if (split[0] < 1)
            return popc_set_error(POPC_EINVAL, "%s: %s: split %lld; give "
                                  "a positive size", im->file, where,
                                  (long long)split[0]);
        int64_t left = v.dims[axis];

        for (; left > 0 && n < 64; n++) {
            sizes[n] = left < split[0] ? left : split[0];
            left -= sizes[n];
        }
        if (left > 0)
            n = 65; /* more pieces than Split makes: refused below */
    } else if (input(np, 1)) {
        int64_t total = 0;

        for (n = 0; n < got; n++) {
            sizes[n] = split[n];
            total += split[n] < 0 ? -1 : split[n];
        }
        if (total != v.dims[axis])
            return popc_set_error(POPC_EINVAL, "%s: %s: the split sizes add "
                                  "up to %lld, but axis %lld has %lld",
                                  im->file, where, (long long)total,
                                  (long long)axis, (long long)v.dims[axis]);
    } else {
        for (n = 0; n < v.dims[axis] && n < 64; n++)
            sizes[n] = 1;
    }
    if (n < 1 || n > 64 || (!input(np, 1) && v.dims[axis] > 64))
        return popc_set_error(POPC_EUNSUPPORTED, "%s: %s makes %s%lld "
                              "pieces; popc splits into 1 to 64", im->file,
                              where, n > 64 ? "over " : "",
                              (long long)(input(np, 1) || n > 64
                                              ? (n > 64 ? 64 : n)
                                              : v.dims[axis]));
    if (!grow(s, n))
        return oom(im);
    in[0] = x;
    a.i = axis;
    if ((st = int64_constant(im, sizes, n, 1, &in[1])) != POPC_OK ||
        (st = add(im, "Split", in, 2, s->ids, n, &a, 1)) != POPC_OK)
        return st;
    s->n = n;
    for (int i = 0; !keep && i < n; i++) {
        int sq[2] = {s->ids[i], -1};

        if ((st = int64_constant(im, &axis, 1, 1, &sq[1])) != POPC_OK ||
            (st = add(im, "Squeeze", sq, 2, &s->ids[i], 1, NULL, 0)) !=
                POPC_OK)
            return st;
    }
    return POPC_OK;
}

/* A tensor result named as the node's output. */
static popc_status name_tensor(popco_importer *im, const Onnx__NodeProto *np,
                               int id)
{
    const char *name = np->n_output ? np->output[0] : NULL;

    if (!name || !*name)
        return POPC_OK;
    return popc_graph_set_value_name(im->g, id, name);
}

popc_status popco_sequence_node(popco_importer *im,
                                const Onnx__NodeProto *np, const char *where)
{
    const char *op = np->op_type, *out = np->n_output ? np->output[0] : NULL;
    seq *s = NULL;
    int id, pos;
    popc_status st;

    if (strcmp(op, "SequenceEmpty") == 0)
        return define(im, out, &s);
    if (strcmp(op, "SequenceConstruct") == 0) {
        if ((st = define(im, out, &s)) != POPC_OK)
            return st;
        if (!grow(s, (int)np->n_input))
            return oom(im);
        for (size_t i = 0; i < np->n_input; i++) {
            if ((st = value_of(im, np->input[i], where, &id)) != POPC_OK)
                return st;
            s->ids[s->n++] = id;
        }
        return POPC_OK;
    }
    if (strcmp(op, "SequenceInsert") == 0) {
        if ((st = copy_of(im, input(np, 0), where, out, &s)) != POPC_OK ||
            (st = value_of(im, input(np, 1), where, &id)) != POPC_OK)
            return st;
        pos = s->n;
        if (input(np, 2) && (st = position(im, np->input[2], where, s->n, 1,
                                           &pos)) != POPC_OK)
            return st;
        memmove(s->ids + pos + 1, s->ids + pos,
                sizeof *s->ids * (size_t)(s->n - pos));
        s->ids[pos] = id;
        s->n++;
        return POPC_OK;
    }
    if (strcmp(op, "SequenceErase") == 0) {
        if ((st = copy_of(im, input(np, 0), where, out, &s)) != POPC_OK)
            return st;
        if (!s->n)
            return popc_set_error(POPC_EINVAL, "%s: %s erases from an empty "
                                  "sequence", im->file, where);
        pos = s->n - 1;
        if (input(np, 1) && (st = position(im, np->input[1], where, s->n, 0,
                                           &pos)) != POPC_OK)
            return st;
        memmove(s->ids + pos, s->ids + pos + 1,
                sizeof *s->ids * (size_t)(s->n - pos - 1));
        s->n--;
        return POPC_OK;
    }
    if (strcmp(op, "SplitToSequence") == 0)
        return (st = define(im, out, &s)) != POPC_OK ? st
                                                     : split_to(im, np, where,
                                                                s);
    if (strcmp(op, "SequenceAt") == 0) {
        const seq *src = find(im, input(np, 0));

        if (!src)
            return not_a_sequence(im, where, input(np, 0));
        if ((st = position(im, input(np, 1) ? np->input[1] : "", where,
                           src->n, 0, &pos)) != POPC_OK)
            return st;
        /* an Identity, so the element keeps its own name too */
        if ((st = add(im, "Identity", &src->ids[pos], 1, &id, 1, NULL, 0)) !=
            POPC_OK)
            return st;
        return name_tensor(im, np, id);
    }
    if (strcmp(op, "SequenceLength") == 0) {
        const seq *src = find(im, input(np, 0));
        int64_t len;

        if (!src)
            return not_a_sequence(im, where, input(np, 0));
        len = src->n;
        if ((st = int64_constant(im, &len, 1, 0, &id)) != POPC_OK)
            return st;
        return name_tensor(im, np, id);
    }
    /* ConcatFromSequence */
    if ((st = concat_from(im, np, where, &id)) != POPC_OK)
        return st;
    return name_tensor(im, np, id);
}
