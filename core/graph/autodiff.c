/* autodiff.c - reverse-mode differentiation of a graph, in the graph.
**
** The backward pass is built from the ops' own gradient builders, as PopART
** does: walking the nodes between the wrt values and the loss in reverse
** topological order, each node that receives a gradient on an output and
** has an input depending on a wrt value gets its op's grad() called; what
** it adds lands in the same graph, shape-inferred at once, named
** "<forward node>/grad/<Op>" and carrying the forward node's annotations
** (so pipelining places it with its forward node). Several gradients
** reaching one value are added by one ai.onnx Sum (a chain of Add when no
** Sum is registered).
**
** The pass is all-or-nothing: on failure every node and value it added is
** removed again. On success, nodes that compute gradients nobody asked for
** (an op's builder gives all its inputs' gradients) are removed too.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"
#include "core/host_priv.h"
#include "core/registry_priv.h"

typedef struct contrib {
    int value;        /* gradient value id */
    int next;         /* index in the pool, -1 ends */
} contrib;

typedef struct ad {
    popci_grad_impl base;   /* first member: host.c reads it from impl */
    popc_graph *g;
    int nv0, nn0;           /* graph size before the pass */
    int fwd;                /* node being differentiated, or -1 */
    unsigned char *depends; /* value depends on a wrt value (< nv0) */
    int *head;              /* per value < nv0: list of contributions */
    int *count;
    contrib *pool;
    int n_pool, cap_pool;
    const popc_op_def *sum; /* POPC_ROLE_SUM's op, or NULL */
} ad;

/* ---- the grad-context callbacks (popc_host grad_* entries) ------------------ */

/* A backward node carries its forward node's annotations (ipu, stage,
** phase, block, scope), but is never a recomputation checkpoint. node -1:
** none. */
static void fwd_annot(const ad *a, int node, popci_annot *out)
{
    static const popci_annot none = {.ipu = -1, .stage = -1, .phase = -1,
                                     .recompute = -1};

    *out = node >= 0 ? a->g->nodes[node].annot : none;
    out->recompute = -1;
}

static popc_status add_named_node(ad *a, int fwd, const char *domain,
                                  const char *op, const int *inputs,
                                  int n_inputs, int *outputs, int n_outputs,
                                  const popc_attr *attrs, int n_attrs,
                                  const char *base_name)
{
    popci_annot an;
    size_t len = strlen(base_name) + strlen(op) + 8;
    char *name = popci_malloc(len);
    popc_status st;

    if (!name)
        return popc_set_error(POPC_ENOMEM, "autodiff: out of memory");
    snprintf(name, len, "%s/grad/%s", base_name, op);
    fwd_annot(a, fwd, &an);
    st = popci_graph_add_node_ex(a->g, domain, op, 0, inputs, n_inputs,
                                 outputs, n_outputs, attrs, n_attrs, name,
                                 &an, 1, 1, NULL);
    free(name);
    return st;
}

/* Forward node fwd's POPC_ATTR_FLOAT16 mark (0: none): a float16
** operation run in float32, or a cast around one; its backward nodes are
** the same. */
static int64_t float16_mark(const ad *a, int fwd)
{
    const popci_node *n;

    if (fwd < 0)
        return 0;
    n = &a->g->nodes[fwd];
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, POPC_ATTR_FLOAT16) == 0)
            return n->attrs[i].i;
    return 0;
}

static popc_status cb_add_node(popc_grad_ctx *gc, const char *domain,
                               const char *op, const int *inputs,
                               int n_inputs, int *outputs, int n_outputs,
                               const popc_attr *attrs, int n_attrs)
{
    ad *a = gc->impl;
    popc_attr *marked = NULL;
    popc_status st;

    if (!op)
        return popc_set_error(POPC_EINVAL, "gradient of node '%s': "
                              "grad_add_node without an op", gc->node_name);
    if (float16_mark(a, a->fwd)) {
        popc_attrs have = POPC_ATTRS(n_attrs, attrs);

        if (!popc_attrs_find(&have, POPC_ATTR_FLOAT16)) {
            if (!(marked = popci_malloc(sizeof *marked *
                                        (size_t)(n_attrs + 1))))
                return popc_set_error(POPC_ENOMEM, "autodiff: out of "
                                      "memory");
            if (n_attrs)
                memcpy(marked, attrs, sizeof *marked * (size_t)n_attrs);
            marked[n_attrs++] = (popc_attr){.name = POPC_ATTR_FLOAT16,
                                            .type = POPC_ATTR_INT,
                                            .i = float16_mark(a, a->fwd)};
            attrs = marked;
        }
    }
    st = add_named_node(a, a->fwd, domain, op, inputs, n_inputs, outputs,
                        n_outputs, attrs, n_attrs, gc->node_name);
    free(marked);
    if (st != POPC_OK && !strstr(popc_last_error(), gc->node_name))
        st = popc_set_error(st, "gradient of node '%s': %s", gc->node_name,
                            popc_last_error());
    return st;
}

static popc_status cb_constant(popc_grad_ctx *gc, const popc_view *value,
                               int *out)
{
    ad *a = gc->impl;
    size_t len = strlen(gc->node_name) + 16;
    char *name = popci_malloc(len);
    popc_status st;

    if (!name)
        return popc_set_error(POPC_ENOMEM, "autodiff: out of memory");
    snprintf(name, len, "%s/grad/const", gc->node_name);
    st = popci_graph_add_constant_view(a->g, name, value, out);
    free(name);
    return st;
}

static popc_status cb_value_info(popc_grad_ctx *gc, int value,
                                 popc_view *info)
{
    ad *a = gc->impl;

    if (!info || value < 0 || value >= a->g->n_values)
        return popc_set_error(POPC_EINVAL, "gradient of node '%s': "
                              "value_info of unknown value id %d",
                              gc->node_name, value);
    *info = popc_graph_value_info(a->g, value);
    return POPC_OK;
}

/* ---- gradient accumulation ------------------------------------------------------ */

static popc_status push_contrib(ad *a, int v, int grad)
{
    if (a->n_pool == a->cap_pool) {
        int cap = a->cap_pool ? a->cap_pool * 2 : 64;
        contrib *p = popci_realloc(a->pool, (size_t)cap * sizeof *p);
        if (!p)
            return popc_set_error(POPC_ENOMEM, "autodiff: out of memory");
        a->pool = p;
        a->cap_pool = cap;
    }
    a->pool[a->n_pool].value = grad;
    a->pool[a->n_pool].next = a->head[v];
    a->head[v] = a->n_pool++;
    a->count[v]++;
    return POPC_OK;
}

/* The one gradient value of v (summing its contributions once), or -1.
** The sum goes with v's producer; for a weight or input, with the node
** that made its first gradient contribution. */
static popc_status finalize(ad *a, int v, int *grad)
{
    popc_graph *g = a->g;
    const char *base;
    int *ids = NULL, k = 0, sum = -1, owner;
    popc_status st = POPC_OK;

    *grad = -1;
    if (!a->count[v])
        return POPC_OK;
    if (a->count[v] == 1) {
        *grad = a->pool[a->head[v]].value;
        return POPC_OK;
    }
    if (!(ids = popci_malloc((size_t)a->count[v] * sizeof *ids)))
        return popc_set_error(POPC_ENOMEM, "autodiff: out of memory");
    /* the list is newest first: restore the order contributions came in */
    k = a->count[v];
    for (int i = a->head[v]; i >= 0; i = a->pool[i].next)
        ids[--k] = a->pool[i].value;
    owner = g->values[v].producer;
    if (owner < 0)
        owner = g->values[ids[0]].producer;
    base = g->values[v].producer >= 0 ? g->nodes[g->values[v].producer].name
                                      : g->values[v].name;
    if (a->sum) {
        st = add_named_node(a, owner, a->sum->domain, a->sum->name, ids,
                            a->count[v], &sum, 1, NULL, 0, base);
    } else {
        const popc_op_def *add = NULL;

        sum = ids[0];
        st = popci_role_op(POPC_ROLE_ADD, "autodiff (summing gradients)",
                           &add);
        for (int i = 1; i < a->count[v] && st == POPC_OK; i++) {
            int pair[2] = {sum, ids[i]};
            st = add_named_node(a, owner, add->domain, add->name, pair, 2,
                                &sum, 1, NULL, 0, base);
        }
    }
    free(ids);
    if (st != POPC_OK)
        return popc_set_error(st, "summing the gradients of '%s': %s",
                              g->values[v].name, popc_last_error());
    a->head[v] = -1;
    a->count[v] = 0;
    if ((st = push_contrib(a, v, sum)) != POPC_OK)
        return st;
    *grad = sum;
    return POPC_OK;
}

/* ---- the pass ------------------------------------------------------------------ */

static popc_status seed_constant(ad *a, int loss, double seed, int *id)
{
    const popci_value *l = &a->g->values[loss];
    popc_view v = l->info;
    int64_t n = popc_view_numel(&v);
    size_t len = strlen(l->name) + 16;
    char *name;
    popc_status st;

    if (l->info.dtype != POPC_DTYPE_F32 && l->info.dtype != POPC_DTYPE_F16)
        return popc_set_error(POPC_EINVAL, "popc_graph_gradients: loss '%s' "
                              "is %s; a loss must be float32 or float16",
                              l->name, popc_dtype_name(l->info.dtype));
    if (!(v.data = popci_malloc((size_t)n * 4 + 4)))
        return popc_set_error(POPC_ENOMEM, "autodiff: out of memory");
    for (int64_t i = 0; i < n; i++) {
        if (v.dtype == POPC_DTYPE_F32)
            ((float *)v.data)[i] = (float)seed;
        else
            ((uint16_t *)v.data)[i] = popc_f32_to_f16((float)seed);
    }
    if (!(name = popci_malloc(len))) {
        free(v.data);
        return popc_set_error(POPC_ENOMEM, "autodiff: out of memory");
    }
    snprintf(name, len, "%s/grad/seed", l->name);
    st = popci_graph_add_constant_view(a->g, name, &v, id);
    free(name);
    free(v.data);
    return st;
}

static popc_status no_grad_error(const popc_graph *g, int n,
                                 const popc_op_def *def)
{
    const popci_node *x = &g->nodes[n];

    if (!def)
        return popc_set_error(POPC_ECOMPILE, "Unsupported ops found in graph: "
                              "%s::%s (node '%s'); load the plugin that "
                              "provides it (POPC_PLUGIN_PATH) before "
                              "training", x->domain, x->op, x->name);
    return popc_set_error(POPC_ECOMPILE, "node '%s' (%s::%s) has no gradient; "
                          "training needs one through every op between the "
                          "weights and the loss: register a grad() for the "
                          "op, or keep it off that path (make its inputs "
                          "non-trainable constants)", x->name, x->domain,
                          x->op);
}

static popc_status check_grad_shape(const popc_graph *g, int n, int i,
                                    int grad)
{
    const popci_node *x = &g->nodes[n];
    const popc_view *want = &g->values[x->inputs[i]].info;
    const popc_view *got;
    char a[128], b[128];

    if (grad >= g->n_values)
        return popc_set_error(POPC_EPLUGIN, "gradient of node '%s' (%s::%s): "
                              "input %d's gradient is value %d, which does "
                              "not exist; the op's grad() is broken",
                              x->name, x->domain, x->op, i, grad);
    got = &g->values[grad].info;
    if (want->dtype == POPC_DTYPE_UNDEFINED ||
        got->dtype == POPC_DTYPE_UNDEFINED || popci_view_same(want, got))
        return POPC_OK;
    popc_view_describe(want, a, sizeof a);
    popc_view_describe(got, b, sizeof b);
    return popc_set_error(POPC_EPLUGIN, "gradient of node '%s' (%s::%s): "
                          "input %d ('%s') is %s but its gradient is %s; the "
                          "op's grad() must reduce broadcast dimensions",
                          x->name, x->domain, x->op, i,
                          g->values[x->inputs[i]].name, a, b);
}

static popc_status diff_node(ad *a, int n)
{
    popc_graph *g = a->g;
    const popc_op_def *def = popci_graph_node_def(g, n);
    popci_node x = g->nodes[n]; /* shallow copy: g->nodes may move */
    popc_attrs av = POPC_ATTRS(x.n_attrs, x.attrs);
    popc_view *in_info = NULL, *out_info = NULL;
    int *out_grads = NULL, *in_grads = NULL, ready;
    popc_grad_ctx gc;
    popc_status st = POPC_OK;

    if (!def || !def->grad)
        return no_grad_error(g, n, def);
    in_info = popci_calloc((size_t)x.n_inputs + 1, sizeof *in_info);
    out_info = popci_calloc((size_t)x.n_outputs + 1, sizeof *out_info);
    out_grads = popci_malloc(((size_t)x.n_outputs + 1) * sizeof *out_grads);
    in_grads = popci_malloc(((size_t)x.n_inputs + 1) * sizeof *in_grads);
    if (!in_info || !out_info || !out_grads || !in_grads) {
        st = popc_set_error(POPC_ENOMEM, "autodiff: out of memory");
        goto done;
    }
    for (int j = 0; j < x.n_outputs; j++)
        if ((st = finalize(a, x.outputs[j], &out_grads[j])) != POPC_OK)
            goto done;
    popci_graph_input_views(g, x.inputs, x.n_inputs, in_info, &ready);
    popci_graph_input_views(g, x.outputs, x.n_outputs, out_info, &ready);
    for (int i = 0; i < x.n_inputs; i++)
        in_grads[i] = -1;
    memset(&gc, 0, sizeof gc);
    gc.size = sizeof gc;
    gc.op = def;
    gc.host = popci_host();
    gc.impl = a;
    gc.node_name = x.name;
    gc.n_inputs = x.n_inputs;
    gc.inputs = x.inputs;
    gc.input_info = in_info;
    gc.n_outputs = x.n_outputs;
    gc.outputs = x.outputs;
    gc.output_info = out_info;
    gc.output_grads = out_grads;
    gc.attrs = &av;
    gc.input_grads = in_grads;
    a->fwd = n;
    st = def->grad(&gc);
    a->fwd = -1;
    if (st != POPC_OK) {
        if (!strstr(popc_last_error(), x.name))
            st = popc_set_error(st, "gradient of node '%s' (%s::%s): %s",
                                x.name, x.domain, x.op, popc_last_error());
        goto done;
    }
    for (int i = 0; i < x.n_inputs; i++) {
        int v = x.inputs[i];

        if (v < 0 || v >= a->nv0 || in_grads[i] < 0 || !a->depends[v])
            continue;
        if ((st = check_grad_shape(g, n, i, in_grads[i])) != POPC_OK ||
            (st = push_contrib(a, v, in_grads[i])) != POPC_OK)
            goto done;
    }
done:
    free(in_info);
    free(out_info);
    free(out_grads);
    free(in_grads);
    return st;
}

/* Remove the pass's nodes and values that no requested gradient needs (all
** of them when grads is NULL: rollback). */
static popc_status prune(ad *a, int *grads, int n_wrt)
{
    popc_graph *g = a->g;
    int nn = g->n_nodes - a->nn0, nv = g->n_values - a->nv0;
    unsigned char *keep_node = popci_calloc((size_t)nn + 1, 1);
    unsigned char *keep_value = popci_calloc((size_t)nv + 1, 1);
    int *remap = popci_malloc(((size_t)nv + 1) * sizeof *remap);
    popc_status st;

    if (!keep_node || !keep_value || !remap) {
        st = popc_set_error(POPC_ENOMEM, "autodiff: out of memory");
        goto done;
    }
    for (int i = 0; grads && i < n_wrt; i++)
        if (grads[i] >= a->nv0)
            keep_value[grads[i] - a->nv0] = 1;
    /* new nodes were appended in dependency order */
    for (int n = g->n_nodes - 1; grads && n >= a->nn0; n--) {
        const popci_node *x = &g->nodes[n];
        int live = 0;

        for (int j = 0; j < x->n_outputs && !live; j++)
            live = keep_value[x->outputs[j] - a->nv0];
        if (!live)
            continue;
        keep_node[n - a->nn0] = 1;
        for (int j = 0; j < x->n_outputs; j++)
            keep_value[x->outputs[j] - a->nv0] = 1;
        for (int i = 0; i < x->n_inputs; i++)
            if (x->inputs[i] >= a->nv0)
                keep_value[x->inputs[i] - a->nv0] = 1;
    }
    if ((st = popci_graph_compact_tail(g, a->nn0, keep_node, a->nv0,
                                       keep_value, remap)) != POPC_OK)
        goto done;
    for (int i = 0; grads && i < n_wrt; i++)
        if (grads[i] >= a->nv0)
            grads[i] = remap[grads[i] - a->nv0];
done:
    free(keep_node);
    free(keep_value);
    free(remap);
    return st;
}

static void mark_depends(ad *a, const int *order, const int *wrt, int n_wrt)
{
    popc_graph *g = a->g;

    for (int i = 0; i < n_wrt; i++)
        a->depends[wrt[i]] = 1;
    for (int k = 0; k < a->nn0; k++) {
        const popci_node *x = &g->nodes[order[k]];
        int dep = 0;

        for (int i = 0; i < x->n_inputs && !dep; i++)
            dep = x->inputs[i] >= 0 && x->inputs[i] < a->nv0 &&
                  a->depends[x->inputs[i]];
        for (int j = 0; dep && j < x->n_outputs; j++)
            a->depends[x->outputs[j]] = 1;
    }
}

static popc_status check_args(const popc_graph *g, int loss, const int *wrt,
                              int n_wrt, const int *grads)
{
    if (!g || n_wrt < 0 || (n_wrt && (!wrt || !grads)))
        return popc_set_error(POPC_EINVAL, "popc_graph_gradients: graph, wrt "
                              "or grads is NULL");
    if (loss < 0 || loss >= g->n_values)
        return popc_set_error(POPC_EINVAL, "popc_graph_gradients: loss value "
                              "id %d does not exist", loss);
    if (g->values[loss].info.dtype == POPC_DTYPE_UNDEFINED)
        return popc_set_error(POPC_ECOMPILE, "popc_graph_gradients: loss "
                              "'%s' has no known shape yet; run "
                              "popc_graph_verify first and fix what it "
                              "reports", g->values[loss].name);
    for (int i = 0; i < n_wrt; i++)
        if (wrt[i] < 0 || wrt[i] >= g->n_values)
            return popc_set_error(POPC_EINVAL, "popc_graph_gradients: wrt[%d] "
                                  "= %d is not a value of graph '%s'", i,
                                  wrt[i], g->name);
    return POPC_OK;
}

popc_status popc_graph_gradients(popc_graph *g, int loss, const int *wrt,
                                 int n_wrt, double seed, int *grads)
{
    ad a;
    int *order = NULL, seed_id;
    popc_registry *reg = NULL;
    popc_status st;

    if ((st = check_args(g, loss, wrt, n_wrt, grads)) != POPC_OK)
        return st;
    for (int i = 0; i < n_wrt; i++)
        grads[i] = -1;
    memset(&a, 0, sizeof a);
    a.base.add_node = cb_add_node;
    a.base.constant = cb_constant;
    a.base.value_info = cb_value_info;
    a.g = g;
    a.nv0 = g->n_values;
    a.nn0 = g->n_nodes;
    a.fwd = -1;
    if (popc_registry_global(&reg) == POPC_OK && reg)
        a.sum = popc_registry_find_role(reg, POPC_ROLE_SUM);
    order = popci_malloc(((size_t)a.nn0 + 1) * sizeof *order);
    a.depends = popci_calloc((size_t)a.nv0 + 1, 1);
    a.head = popci_malloc(((size_t)a.nv0 + 1) * sizeof *a.head);
    a.count = popci_calloc((size_t)a.nv0 + 1, sizeof *a.count);
    if (!order || !a.depends || !a.head || !a.count) {
        st = popc_set_error(POPC_ENOMEM, "autodiff: out of memory");
        goto done;
    }
    for (int v = 0; v < a.nv0; v++)
        a.head[v] = -1;
    if ((st = popci_graph_topo(g, order)) != POPC_OK)
        goto done;
    mark_depends(&a, order, wrt, n_wrt);
    if (!a.depends[loss])
        goto done; /* nothing to differentiate: every gradient is -1 */
    if ((st = seed_constant(&a, loss, seed, &seed_id)) != POPC_OK ||
        (st = push_contrib(&a, loss, seed_id)) != POPC_OK)
        goto fail;
    for (int k = a.nn0 - 1; k >= 0; k--) {
        int n = order[k], flows = 0, needs = 0;
        const popci_node *x = &g->nodes[n];

        for (int j = 0; j < x->n_outputs && !flows; j++)
            flows = a.count[x->outputs[j]] > 0;
        for (int i = 0; i < x->n_inputs && !needs; i++)
            needs = x->inputs[i] >= 0 && x->inputs[i] < a.nv0 &&
                    a.depends[x->inputs[i]];
        if (flows && needs && (st = diff_node(&a, n)) != POPC_OK)
            goto fail;
    }
    for (int i = 0; i < n_wrt; i++)
        if ((st = finalize(&a, wrt[i], &grads[i])) != POPC_OK)
            goto fail;
    st = prune(&a, grads, n_wrt);
    goto done;
fail:
    {
        /* keep the caller's message, not prune's */
        char why[2048];
        snprintf(why, sizeof why, "%s", popc_last_error());
        for (int i = 0; i < n_wrt; i++)
            grads[i] = -1;
        if (prune(&a, NULL, n_wrt) == POPC_OK)
            popc_set_error(st, "%s", why);
        else
            st = POPC_ENOMEM;
    }
done:
    free(order);
    free(a.depends);
    free(a.head);
    free(a.count);
    free(a.pool);
    return st;
}
