/* import_attrs.c - ONNX AttributeProto -> popc_attr lists that own their
** strings, lists, tensors and subgraphs until the node is added (the graph
** copies them). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_priv.h"

static int grow(void **arr, int *cap, int need, size_t elem)
{
    void *p;
    int c;

    if (need <= *cap)
        return 0;
    c = *cap ? *cap * 2 : 8;
    while (c < need)
        c *= 2;
    if (!(p = realloc(*arr, (size_t)c * elem)))
        return -1;
    *arr = p;
    *cap = c;
    return 0;
}

void popco_attrs_free(popco_attrs *a)
{
    for (int i = 0; i < a->n_owned; i++)
        free(a->owned[i]);
    for (int i = 0; i < a->n_tensors; i++)
        popc_tensor_free(a->tensors[i]);
    for (int i = 0; i < a->n_graphs; i++)
        popc_graph_free(a->graphs[i]);
    free(a->items);
    free(a->owned);
    free(a->tensors);
    free(a->graphs);
    memset(a, 0, sizeof *a);
}

/* Keep p (malloc'd) until the list is freed; NULL p is an allocation
** failure. */
static void *own(popco_attrs *a, void *p)
{
    if (!p)
        return NULL;
    if (grow((void **)&a->owned, &a->cap_owned, a->n_owned + 1,
             sizeof *a->owned) != 0) {
        free(p);
        return NULL;
    }
    a->owned[a->n_owned++] = p;
    return p;
}

static popc_attr *append(popco_attrs *a, const char *name,
                         popc_attr_type type)
{
    popc_attr *x;
    char *copy;

    if (grow((void **)&a->items, &a->cap, a->n + 1, sizeof *a->items) != 0 ||
        !(copy = own(a, strdup(name))))
        return NULL;
    x = &a->items[a->n++];
    memset(x, 0, sizeof *x);
    x->name = copy;
    x->type = type;
    return x;
}

static popc_status oom(const char *where)
{
    return popc_set_error(POPC_ENOMEM, "%s: out of memory", where);
}

const Onnx__AttributeProto *popco_node_attr(const Onnx__NodeProto *np,
                                            const char *name)
{
    for (size_t i = 0; i < np->n_attribute; i++)
        if (np->attribute[i]->name &&
            strcmp(np->attribute[i]->name, name) == 0)
            return np->attribute[i];
    return NULL;
}

int64_t popco_node_attr_int(const Onnx__NodeProto *np, const char *name,
                            int64_t def)
{
    const Onnx__AttributeProto *ap = popco_node_attr(np, name);

    return ap ? ap->i : def;
}

popc_status popco_attrs_add_int(popco_attrs *a, const char *name, int64_t v)
{
    popc_attr *x = append(a, name, POPC_ATTR_INT);

    if (!x)
        return oom(name);
    x->i = v;
    return POPC_OK;
}

popc_status popco_attrs_add_string(popco_attrs *a, const char *name,
                                   const char *v)
{
    popc_attr *x = append(a, name, POPC_ATTR_STRING);

    if (!x || !(x->s = own(a, strdup(v))))
        return oom(name);
    return POPC_OK;
}

popc_status popco_attrs_add_float(popco_attrs *a, const char *name, double v)
{
    popc_attr *x = append(a, name, POPC_ATTR_FLOAT);

    if (!x)
        return oom(name);
    x->f = v;
    return POPC_OK;
}

popc_status popco_attrs_add_ints(popco_attrs *a, const char *name,
                                 const int64_t *v, int64_t n)
{
    popc_attr *x = append(a, name, POPC_ATTR_INTS);
    int64_t *copy;

    if (!x || !(copy = own(a, malloc(((size_t)n + 1) * sizeof *copy))))
        return oom(name);
    if (n)
        memcpy(copy, v, (size_t)n * sizeof *copy);
    x->ints = copy;
    x->n = n;
    return POPC_OK;
}

popc_status popco_attrs_add_graph(popco_attrs *a, const char *name,
                                  popc_graph *g)
{
    popc_attr *x;

    if (grow((void **)&a->graphs, &a->cap_graphs, a->n_graphs + 1,
             sizeof *a->graphs) != 0) {
        popc_graph_free(g);
        return oom(name);
    }
    a->graphs[a->n_graphs++] = g;
    if (!(x = append(a, name, POPC_ATTR_GRAPH)))
        return oom(name);
    x->graph = g;
    return POPC_OK;
}

popc_attr *popco_attrs_find(popco_attrs *a, const char *name)
{
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->items[i].name, name) == 0)
            return &a->items[i];
    return NULL;
}

void popco_attrs_remove(popco_attrs *a, const char *name)
{
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->items[i].name, name) == 0) {
            memmove(&a->items[i], &a->items[i + 1],
                    (size_t)(a->n - i - 1) * sizeof *a->items);
            a->n--;
            return;
        }
}

static popc_status add_tensor(popco_attrs *a, popc_attr *x,
                              const Onnx__TensorProto *tp,
                              const popco_tensor_src *src, const char *what)
{
    popc_tensor *t = NULL;
    popc_view *v;
    popc_status st;

    if ((st = popco_tensor_from_proto(tp, src, what, &t)) != POPC_OK)
        return st;
    if (grow((void **)&a->tensors, &a->cap_tensors, a->n_tensors + 1,
             sizeof *a->tensors) != 0) {
        popc_tensor_free(t);
        return oom(what);
    }
    a->tensors[a->n_tensors++] = t;
    if (!(v = own(a, malloc(sizeof *v))))
        return oom(what);
    *v = popc_tensor_view(t);
    x->tensor = v;
    return POPC_OK;
}

/* A protobuf bytes field as a NUL-terminated string. */
static char *bytes_str(popco_attrs *a, const ProtobufCBinaryData *b)
{
    char *s = own(a, malloc(b->len + 1));

    if (s) {
        if (b->len)
            memcpy(s, b->data, b->len);
        s[b->len] = '\0';
    }
    return s;
}

popc_status popco_attrs_add_proto(popco_attrs *a,
                                  const Onnx__AttributeProto *ap,
                                  const popco_tensor_src *src,
                                  const char *where)
{
    char what[512];
    popc_attr *x;
    int type = ap->has_type ? (int)ap->type : 0;

    if (!ap->name || !*ap->name)
        return popc_set_error(POPC_EIO, "%s: %s has an attribute without a "
                              "name", src->file, where);
    snprintf(what, sizeof what, "%s, attribute '%s'", where, ap->name);
    if (ap->ref_attr_name && *ap->ref_attr_name)
        return popc_set_error(POPC_EUNSUPPORTED, "%s: %s refers to a "
                              "function attribute; functions are not "
                              "supported yet", src->file, what);
    /* IR version 1 files may leave out the type: infer it */
    if (type == 0) {
        if (ap->has_f) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        else if (ap->has_i) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        else if (ap->has_s) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        else if (ap->t) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
        else if (ap->n_floats) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
        else if (ap->n_ints) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        else if (ap->n_strings) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    }
    switch (type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        return popco_attrs_add_float(a, ap->name, ap->f);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        return popco_attrs_add_int(a, ap->name, ap->i);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        if (!(x = append(a, ap->name, POPC_ATTR_STRING)) ||
            !(x->s = bytes_str(a, &ap->s)))
            return oom(what);
        return POPC_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
        if (!ap->t)
            return popc_set_error(POPC_EIO, "%s: %s: tensor attribute "
                                  "without a tensor", src->file, what);
        if (!(x = append(a, ap->name, POPC_ATTR_TENSOR)))
            return oom(what);
        return add_tensor(a, x, ap->t, src, what);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
        double *f;

        if (!(x = append(a, ap->name, POPC_ATTR_FLOATS)) ||
            !(f = own(a, malloc((ap->n_floats + 1) * sizeof *f))))
            return oom(what);
        for (size_t i = 0; i < ap->n_floats; i++)
            f[i] = ap->floats[i];
        x->floats = f;
        x->n = (int64_t)ap->n_floats;
        return POPC_OK;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        return popco_attrs_add_ints(a, ap->name, ap->ints,
                                    (int64_t)ap->n_ints);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {
        const char **s;

        if (!(x = append(a, ap->name, POPC_ATTR_STRINGS)) ||
            !(s = own(a, malloc((ap->n_strings + 1) * sizeof *s))))
            return oom(what);
        for (size_t i = 0; i < ap->n_strings; i++)
            if (!(s[i] = bytes_str(a, &ap->strings[i])))
                return oom(what);
        x->strings = s;
        x->n = (int64_t)ap->n_strings;
        return POPC_OK;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
        return popc_set_error(POPC_EINTERNAL, "%s: %s: graph attributes are "
                              "converted by the importer", src->file, what);
    default:
        return popc_set_error(POPC_EUNSUPPORTED, "%s: %s has attribute type "
                              "%d (sparse tensors, type protos and lists of "
                              "tensors or graphs are not supported yet)",
                              src->file, what, type);
    }
}
