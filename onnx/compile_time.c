/* compile_time.c - which graph inputs an ONNX model needs at compile
** time: those feeding operands popc fixes when it compiles (a Reshape's
** shape, a Slice's starts), as PopTorch's tracing makes them constants.
** The importer freezes candidates by it
** (popc_onnx_import_file_candidates) and popc_onnx_compile_time_inputs
** lists it.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_priv.h"

static int is_onnx_domain(const char *d)
{
    return !d || !*d || strcmp(d, "ai.onnx") == 0;
}

/* (op, input index) whose value popc needs at compile time: shapes, axes,
** counts, as PopTorch's tracing makes them constants. */
static const struct {
    const char *op;
    unsigned inputs; /* bit i: input i */
} compile_time[] = {
    {"Reshape", 1u << 1}, {"Expand", 1u << 1}, {"Tile", 1u << 1},
    {"Slice", 0x1eu}, {"Range", 0x7u}, {"ConstantOfShape", 1u << 0},
    {"OneHot", 1u << 1}, {"TopK", 1u << 1}, {"Resize", 0xeu},
    {"Upsample", 1u << 1}, {"Pad", 0x6u}, {"Squeeze", 1u << 1},
    {"Unsqueeze", 1u << 1}, {"ReduceSum", 1u << 1}, {"Split", 1u << 1},
    {"CumSum", 1u << 1}, {"Trilu", 1u << 1}, {"Loop", 0x3u},
    {"Dropout", 0x6u}, {"Clip", 0x6u}, {"NonMaxSuppression", 0x1cu},
    {"ReduceMean", 1u << 1}, {"ReduceMax", 1u << 1}, {"ReduceMin", 1u << 1},
    {"ReduceProd", 1u << 1}, {"ReduceL1", 1u << 1}, {"ReduceL2", 1u << 1},
    {"ReduceLogSum", 1u << 1}, {"ReduceLogSumExp", 1u << 1},
    {"ReduceSumSquare", 1u << 1}, {"Compress", 1u << 1},
    {"MaxUnpool", 1u << 2}, {"STFT", 0x4u}, {"DFT", 0x2u},
    {"HannWindow", 0x1u}, {"HammingWindow", 0x1u}, {"BlackmanWindow", 0x1u},
    {"MelWeightMatrix", 0x1fu}, {"SequenceAt", 1u << 1},
    {"SequenceInsert", 1u << 2}, {"SequenceErase", 1u << 1},
    {"SplitToSequence", 1u << 1},
};

static unsigned compile_time_mask(const char *op)
{
    for (size_t i = 0; i < sizeof compile_time / sizeof compile_time[0]; i++)
        if (strcmp(compile_time[i].op, op) == 0)
            return compile_time[i].inputs;
    return 0;
}

/* A small set of value names (borrowed from the model). */
typedef struct needset {
    const char **names;
    size_t n, cap;
} needset;

static int need_has(const needset *s, const char *name)
{
    for (size_t i = 0; name && i < s->n; i++)
        if (strcmp(s->names[i], name) == 0)
            return 1;
    return 0;
}

static void need_add(needset *s, const char *name)
{
    if (need_has(s, name))
        return;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        const char **g = realloc(s->names, cap * sizeof *g);

        if (!g)
            return;
        s->names = g;
        s->cap = cap;
    }
    s->names[s->n++] = name;
}

static void need_free(needset *s)
{
    free(s->names);
}

void popc_onnx_free_names(char **names, int n)
{
    for (int i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

popc_status popco_compile_time_names(const Onnx__GraphProto *gp,
                                     const char *file, char ***names, int *n)
{
    needset need = {0};
    char **list;
    int count = 0;

    *names = NULL;
    *n = 0;
    if (!(list = calloc(gp->n_input + 1, sizeof *list)))
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", file);
    /* Needed values, from the operands themselves back through the nodes
    ** that compute them: an input feeding a Reshape's shape through a Cast
    ** is needed as much as one feeding it directly. */
    for (size_t k = 0; k < gp->n_node; k++) {
        const Onnx__NodeProto *np = gp->node[k];
        unsigned mask = is_onnx_domain(np->domain) && np->op_type
                            ? compile_time_mask(np->op_type)
                            : 0;

        for (size_t j = 0; j < np->n_input && j < 32; j++)
            if ((mask >> j & 1u) && np->input[j] && *np->input[j])
                need_add(&need, np->input[j]);
    }
    for (size_t k = gp->n_node; k-- > 0;) {
        const Onnx__NodeProto *np = gp->node[k];
        int feeds = 0;

        for (size_t j = 0; j < np->n_output; j++)
            feeds |= need_has(&need, np->output[j]);
        for (size_t j = 0; feeds && j < np->n_input; j++)
            if (np->input[j] && *np->input[j])
                need_add(&need, np->input[j]);
    }
    for (size_t i = 0; i < gp->n_input; i++) {
        const char *in = gp->input[i]->name;

        if (!in || !need_has(&need, in))
            continue;
        if (!(list[count++] = strdup(in))) {
            need_free(&need);
            popc_onnx_free_names(list, count);
            return popc_set_error(POPC_ENOMEM, "%s: out of memory", file);
        }
    }
    need_free(&need);
    *names = list;
    *n = count;
    return POPC_OK;
}

popc_status popc_onnx_compile_time_inputs(const char *path, char ***names,
                                          int *n)
{
    popco_map m;
    Onnx__ModelProto *mp = NULL;
    popco_raw_ref *refs = NULL;
    popc_status st;

    if (!names || !n || !path)
        return popc_set_error(POPC_EINVAL, "popc_onnx_compile_time_inputs: "
                              "NULL argument");
    *names = NULL;
    *n = 0;
    if ((st = popco_map_file(path, &m)) != POPC_OK)
        return st;
    /* lean: the initializers' bytes are never read here, so they are not
    ** copied out of the mapping either */
    st = popco_unpack_model_lean(m.data ? m.data : "", m.size, path, &mp,
                                 &refs);
    if (st == POPC_OK)
        st = popco_compile_time_names(mp->graph, path, names, n);
    if (mp) {
        popco_lean_forget(mp, refs);
        onnx__model_proto__free_unpacked(mp, NULL);
    }
    popco_unmap(&m);
    return st;
}
