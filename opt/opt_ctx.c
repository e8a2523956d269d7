/* opt_ctx.c - a sweep's view of the graph: who reads each value, and the
** helpers that patterns and rewrites share. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opt/opt_priv.h"

void opt_ctx_free(opt_ctx *c)
{
    free(c->uses);
    free(c->reader);
    free(c->taken);
    c->uses = c->reader = NULL;
    c->taken = NULL;
}

static void count_use(opt_ctx *c, int v, int node)
{
    if (v < 0 || v >= c->n_values)
        return;
    c->uses[v]++;
    c->reader[v] = node;
}

popc_status opt_scan(opt_ctx *c)
{
    popc_graph *g = c->g;

    opt_ctx_free(c);
    c->n_values = popc_graph_n_values(g);
    c->n_nodes = popc_graph_n_nodes(g);
    c->uses = calloc((size_t)c->n_values + 1, sizeof *c->uses);
    c->reader = malloc(sizeof *c->reader * (size_t)(c->n_values + 1));
    c->taken = calloc((size_t)c->n_nodes + 1, 1);
    if (!c->uses || !c->reader || !c->taken) {
        opt_ctx_free(c);
        return popc_set_error(POPC_ENOMEM, "graph optimization: out of "
                              "memory");
    }
    for (int v = 0; v < c->n_values; v++)
        c->reader[v] = -1;
    for (int n = 0; n < c->n_nodes; n++)
        for (int i = 0; i < popc_graph_node_n_inputs(g, n); i++)
            count_use(c, popc_graph_node_input(g, n, i), n);
    /* outputs, updates and kept values are read from outside: a second
    ** count with no reader node makes them never "sole" */
    for (int i = 0; i < popc_graph_n_outputs(g); i++)
        count_use(c, popc_graph_output(g, i), -1);
    for (int i = 0; i < popc_graph_n_updates(g); i++) {
        int w, v;

        if (popc_graph_update(g, i, &w, &v) == POPC_OK)
            count_use(c, v, -1);
    }
    for (int i = 0; i < c->n_keep; i++)
        count_use(c, popc_graph_find_value(g, c->keep[i]), -1);
    return POPC_OK;
}

/* popc's own marks ("__overlap_output", "__float16", MultiConv's...) ask
** for something of this very node: a pass leaves it alone. */
static int marked(const opt_ctx *c, int n)
{
    popc_attrs at = popc_graph_node_attrs(c->g, n);

    for (int a = 0; a < at.n; a++)
        if (strncmp(at.items[a].name, "__", 2) == 0)
            return 1;
    return 0;
}

int opt_is_in(const opt_ctx *c, int n, const char *domain, const char *op)
{
    const char *d;

    if (n < 0 || n >= c->n_nodes || c->taken[n] || marked(c, n))
        return 0;
    d = popc_graph_node_domain(c->g, n);
    if (!d || !*d)
        d = "ai.onnx";
    return strcmp(d, domain) == 0 &&
           strcmp(popc_graph_node_op(c->g, n), op) == 0;
}

int opt_is(const opt_ctx *c, int n, const char *op)
{
    return opt_is_in(c, n, "ai.onnx", op);
}

int opt_sole_reader(const opt_ctx *c, int v)
{
    if (v < 0 || v >= c->n_values || c->uses[v] != 1)
        return -1;
    return c->reader[v];
}

int opt_producer(const opt_ctx *c, int v)
{
    int n;

    if (v < 0 || v >= c->n_values)
        return -1;
    n = popc_graph_value_producer(c->g, v);
    return n >= 0 && n < c->n_nodes && !c->taken[n] ? n : -1;
}

const popc_tensor *opt_constant(const opt_ctx *c, int v)
{
    /* constants a fold of this sweep added count too */
    if (v < 0 || v >= popc_graph_n_values(c->g) ||
        popc_graph_value_kind(c->g, v) != POPC_VALUE_CONSTANT)
        return NULL;
    return popc_graph_value_tensor(c->g, v);
}

int opt_scalar(const opt_ctx *c, int v, float *out)
{
    const popc_tensor *t = opt_constant(c, v);
    popc_view tv;

    if (!t)
        return 0;
    tv = popc_tensor_view((popc_tensor *)t);
    if (tv.dtype != POPC_DTYPE_F32 || popc_view_numel(&tv) != 1)
        return 0;
    *out = *(const float *)tv.data;
    return 1;
}

int opt_input(const opt_ctx *c, int n, int i)
{
    return i < popc_graph_node_n_inputs(c->g, n)
               ? popc_graph_node_input(c->g, n, i) : -1;
}

int opt_output(const opt_ctx *c, int n, int i)
{
    return i < popc_graph_node_n_outputs(c->g, n)
               ? popc_graph_node_output(c->g, n, i) : -1;
}

int opt_same_shape(const popc_view *a, const popc_view *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank)
        return 0;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d] || a->dims[d] < 0)
            return 0;
    return 1;
}

int opt_has_op(const opt_ctx *c, const char *domain, const char *op)
{
    return c->reg && popc_registry_find_op(c->reg, domain, op, 0) != NULL;
}

static int same_string(const char *a, const char *b)
{
    return (!a || !*a) ? (!b || !*b) : (b && strcmp(a, b) == 0);
}

int opt_same_place(const opt_ctx *c, int a, int b)
{
    popc_annotations x = popc_graph_node_annotations(c->g, a);
    popc_annotations y = popc_graph_node_annotations(c->g, b);

    return x.ipu == y.ipu && x.stage == y.stage && x.phase == y.phase &&
           x.recompute == y.recompute && same_string(x.block, y.block);
}

popc_status opt_add_constant(opt_ctx *c, const char *base, const int64_t *dims,
                             int rank, const float *src, int *id, float **data)
{
    popc_tensor *t = NULL;
    char name[256];
    popc_status st;

    if ((st = popc_tensor_new(POPC_DTYPE_F32, dims, rank, &t)) != POPC_OK)
        return st;
    *data = popc_tensor_data(t);
    if (src)
        memcpy(*data, src, popc_tensor_nbytes(t));
    else
        memset(*data, 0, popc_tensor_nbytes(t));
    /* a free name: the base, else base_1, base_2, ... */
    snprintf(name, sizeof name, "%s", base);
    for (int k = 1; popc_graph_find_value(c->g, name) >= 0; k++)
        snprintf(name, sizeof name, "%s_%d", base, k);
    st = popc_graph_add_constant(c->g, name, t, id);
    popc_tensor_free(t); /* the graph holds its own reference */
    return st;
}

/* The old result's name goes to the new one, so outputs and anchors keep
** the names users know them by. */
static popc_status take_name(opt_ctx *c, int old, int out)
{
    const char *was = popc_graph_value_name(c->g, old);
    char *keep, spare[512];
    popc_status st;

    if (!was)
        return POPC_OK;
    if (!(keep = strdup(was)))
        return popc_set_error(POPC_ENOMEM, "graph optimization: out of "
                              "memory");
    snprintf(spare, sizeof spare, "%s/replaced", keep);
    for (int k = 1; popc_graph_find_value(c->g, spare) >= 0; k++)
        snprintf(spare, sizeof spare, "%s/replaced_%d", keep, k);
    if ((st = popc_graph_set_value_name(c->g, old, spare)) == POPC_OK)
        st = popc_graph_set_value_name(c->g, out, keep);
    free(keep);
    return st;
}

popc_status opt_add_beside(opt_ctx *c, int anchor, const char *base,
                           const char *suffix, const popc_node_desc *d,
                           int *out, int *node)
{
    popc_annotations an = popc_graph_node_annotations(c->g, anchor);
    popc_node_desc nd = *d;
    char name[512];
    int added;
    popc_status st = POPC_EEXIST;

    nd.name = name;
    for (int k = 0; st == POPC_EEXIST && k < 1000; k++) {
        if (k == 0)
            snprintf(name, sizeof name, "%s/%s", base, suffix);
        else
            snprintf(name, sizeof name, "%s/%s_%d", base, suffix, k);
        st = popc_graph_add(c->g, &nd, out, &added);
    }
    if (st != POPC_OK ||
        (st = popc_graph_set_node_annotations(c->g, added, &an)) != POPC_OK)
        return st;
    if (node)
        *node = added;
    return POPC_OK;
}

popc_status opt_replace(opt_ctx *c, int anchor, int last,
                        const popc_node_desc *d, int *out_value)
{
    int out, old = popc_graph_node_output(c->g, last, 0);
    popc_status st;

    if ((st = opt_add_beside(c, anchor, popc_graph_node_name(c->g, last),
                             d->op, d, &out, NULL)) != POPC_OK ||
        (st = popc_graph_replace_uses(c->g, old, out)) != POPC_OK ||
        (st = take_name(c, old, out)) != POPC_OK)
        return st;
    if (out_value)
        *out_value = out;
    return POPC_OK;
}

int opt_exported(const opt_ctx *c, int v)
{
    for (int i = 0; i < popc_graph_n_outputs(c->g); i++)
        if (popc_graph_output(c->g, i) == v)
            return 1;
    for (int i = 0; i < c->n_keep; i++)
        if (popc_graph_find_value(c->g, c->keep[i]) == v)
            return 1;
    return 0;
}

int opt_other_operand(const opt_ctx *c, int n, int v)
{
    int a = opt_input(c, n, 0), b = opt_input(c, n, 1);

    return a == v ? b : b == v ? a : -1;
}

int opt_reader_with(const opt_ctx *c, int v, const char *op, int skip)
{
    for (int n = 0; n < c->n_nodes; n++) {
        if (n == skip || !opt_is(c, n, op))
            continue;
        for (int i = 0; i < popc_graph_node_n_inputs(c->g, n); i++)
            if (popc_graph_node_input(c->g, n, i) == v)
                return n;
    }
    return -1;
}

popc_status opt_each(opt_ctx *c, const char *domain, const char *op,
                     popc_status (*try_at)(opt_ctx *c, int n, int *done),
                     int *rewrites)
{
    popc_status st;

    for (int n = 0; n < c->n_nodes; n++) {
        int done = 0;

        if (!opt_is_in(c, n, domain, op))
            continue;
        if ((st = try_at(c, n, &done)) != POPC_OK)
            return st;
        *rewrites += done;
    }
    return POPC_OK;
}
