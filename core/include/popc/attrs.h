/* attrs.h - typed node attributes (ONNX AttributeProto) and the inline
** readers ops use: what graphs and op plugins share. graph.h includes this,
** not the plugin ABI (plugin.h). Since 0.3.0 (before, part of plugin.h,
** which still includes it).
*/
#ifndef POPC_ATTRS_H
#define POPC_ATTRS_H

#include <stdint.h>
#include <string.h>
#include "popc/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum popc_attr_type {
    POPC_ATTR_INT = 1,
    POPC_ATTR_FLOAT,
    POPC_ATTR_STRING,
    POPC_ATTR_INTS,
    POPC_ATTR_FLOATS,
    POPC_ATTR_STRINGS,
    POPC_ATTR_TENSOR,
    POPC_ATTR_GRAPH           /* a subgraph (ONNX GraphProto attribute) */
} popc_attr_type;

struct popc_graph;

/* INT attributes of an Identity node that the core reads: the node passes
** a graph input (or a graph output) whose host copy overlaps compute,
** PopTorch's set_overlap_for_input / set_overlap_for_output. Values:
** POPC_OVERLAP_* (the op helpers build these nodes). Since 0.3.0. */
#define POPC_ATTR_OVERLAP_INPUT  "__overlap_input"
#define POPC_ATTR_OVERLAP_OUTPUT "__overlap_output"
#define POPC_OVERLAP_NONE 0
#define POPC_OVERLAP_ACCUMULATION_LOOP 1
#define POPC_OVERLAP_DEVICE_ITERATION_LOOP 2

/* Attributes of the convolutions of one poptorch.MultiConv (the op
** helpers set them; device models read them). Every member carries the
** group's id (INT >= 1; its backward convolutions form groups of their
** own per op) and the group's settings: plan (INT, POPC_MULTICONV_*),
** cycle back-off (FLOAT in [0, 1]) and reserved tiles per convolution
** (INT). Per convolution: POPC_ATTR_CONV_DITHERING (INT 0/1, overrides
** Training.setConvolutionDithering) and POPC_ATTR_PARTIALS_TYPE (STRING
** "float" or "half", overrides Precision.setPartialsType). Since 0.3.0. */
#define POPC_ATTR_MULTICONV "__multiconv"
#define POPC_ATTR_MULTICONV_PLAN "__multiconv_plan"
#define POPC_ATTR_MULTICONV_BACKOFF "__multiconv_cycle_back_off"
#define POPC_ATTR_MULTICONV_RESERVED "__multiconv_reserved_tiles"
#define POPC_ATTR_CONV_DITHERING "__conv_dithering"
#define POPC_ATTR_PARTIALS_TYPE "partials_type"
#define POPC_MULTICONV_PARALLEL 0
#define POPC_MULTICONV_SERIAL 1

/* One typed attribute (ONNX AttributeProto). Only the member for `type` is
** meaningful; lists use `n` and the matching pointer. */
typedef struct popc_attr {
    const char *name;
    popc_attr_type type;
    int64_t i;
    double f;
    const char *s;
    int64_t n;
    const int64_t *ints;
    const double *floats;
    const char *const *strings;
    const popc_view *tensor;
    /* POPC_ATTR_GRAPH: the subgraph. A node owns a deep copy (made by
    ** popc_graph_add_node); plugins only read it, through the host table.
    ** Values from the enclosing graph that the subgraph uses are passed
    ** explicitly: they are the node's last `__captures` inputs (an INT
    ** attribute, 0 when absent) and, in the same order, the last inputs of
    ** every subgraph attribute of the node. */
    const struct popc_graph *graph;
} popc_attr;

/* A node's attributes: n of them, item_size bytes apart, so that popc_attr
** can grow at its end. Plugins index items with popc_attrs_at, never with
** []. item_size 0 means sizeof(popc_attr) of the reader: lists built with
** designated initializers ({.n = n, .items = a}) need not set it. On LP64
** it fills what was padding, so the layout and size of 0.3.0 stay. */
typedef struct popc_attrs {
    int n;
    uint32_t item_size;
    const popc_attr *items;
} popc_attrs;

/* The list of n attributes at items, with this build's stride. */
#define POPC_ATTRS(N, ITEMS)                                             \
    ((popc_attrs){.n = (N), .item_size = (uint32_t)sizeof(popc_attr),    \
                  .items = (ITEMS)})

/* Attribute i of a. */
static inline const popc_attr *popc_attrs_at(const popc_attrs *a, int i)
{
    size_t stride = a->item_size ? a->item_size : sizeof(popc_attr);

    return (const popc_attr *)(const void *)((const char *)a->items +
                                             (size_t)i * stride);
}

/* Constructors: one attribute of each kind, every other member zero. The
** strings and arrays are borrowed (popc_graph_add_node copies them).
** Since 0.3.0. */
static inline popc_attr popc_attr_make_int(const char *name, int64_t v)
{
    popc_attr a;

    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = POPC_ATTR_INT;
    a.i = v;
    return a;
}

static inline popc_attr popc_attr_make_float(const char *name, double v)
{
    popc_attr a;

    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = POPC_ATTR_FLOAT;
    a.f = v;
    return a;
}

static inline popc_attr popc_attr_make_string(const char *name,
                                              const char *s)
{
    popc_attr a;

    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = POPC_ATTR_STRING;
    a.s = s;
    return a;
}

static inline popc_attr popc_attr_make_ints(const char *name,
                                            const int64_t *v, int64_t n)
{
    popc_attr a;

    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = POPC_ATTR_INTS;
    a.n = n;
    a.ints = v;
    return a;
}

static inline const popc_attr *popc_attrs_find(const popc_attrs *a,
                                               const char *name)
{
    for (int i = 0; a && i < a->n; i++)
        if (strcmp(popc_attrs_at(a, i)->name, name) == 0)
            return popc_attrs_at(a, i);
    return NULL;
}

static inline int64_t popc_attr_int(const popc_attrs *a, const char *name,
                                    int64_t def)
{
    const popc_attr *x = popc_attrs_find(a, name);
    if (!x)
        return def;
    if (x->type != POPC_ATTR_FLOAT)
        return x->i;
    /* a float from a file may be NaN or out of range: saturate, and let
    ** the op's own range check refuse it */
    if (x->f != x->f)
        return def;
    if (x->f >= 9223372036854775807.0)
        return INT64_MAX;
    if (x->f <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)x->f;
}

static inline double popc_attr_float(const popc_attrs *a, const char *name,
                                     double def)
{
    const popc_attr *x = popc_attrs_find(a, name);
    if (!x)
        return def;
    return x->type == POPC_ATTR_INT ? (double)x->i : x->f;
}

static inline const char *popc_attr_string(const popc_attrs *a,
                                           const char *name, const char *def)
{
    const popc_attr *x = popc_attrs_find(a, name);
    return x && x->type == POPC_ATTR_STRING ? x->s : def;
}

/* Number of ints in a list attribute, copied into out (up to cap); -1 when
** absent. */
static inline int64_t popc_attr_ints(const popc_attrs *a, const char *name,
                                     int64_t *out, int64_t cap)
{
    const popc_attr *x = popc_attrs_find(a, name);
    if (!x || x->type != POPC_ATTR_INTS)
        return -1;
    for (int64_t i = 0; i < x->n && i < cap; i++)
        out[i] = x->ints[i];
    return x->n;
}

#ifdef __cplusplus
}
#endif

#endif /* POPC_ATTRS_H */
