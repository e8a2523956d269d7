/* plan.c - compile a graph into a plan: gradients, schedule, slots,
** liveness, memory plan and per-node preparation.
**
** The plan works on its own clone of the graph, re-shaped to one
** micro-batch, so the model's graph (the host copy of the weights) is
** never touched by compilation.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/log.h"
#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"
#include "core/host_priv.h"
#include "core/runtime/plan_priv.h"
#include "core/layer/strategy.h"

#define ALIGN_UP(n) (((n) + POPC_TENSOR_ALIGN - 1) / POPC_TENSOR_ALIGN * \
                     POPC_TENSOR_ALIGN)

/* ---- helpers ------------------------------------------------------------- */

static popc_status oom(const char *what)
{
    return popc_set_error(POPC_ENOMEM, "compile: out of memory (%s)", what);
}

size_t popci_plan_slot_bytes(const popci_plan *p, int slot)
{
    return popc_view_nbytes(&p->slots[slot].info);
}

int popci_plan_find_weight(const popci_plan *p, const char *name)
{
    for (int i = 0; p && name && i < p->n_weights; i++)
        if (strcmp(p->weights[i].name, name) == 0)
            return i;
    return -1;
}

/* ---- input shapes and gradients ------------------------------------------ */

/* Give every graph input the micro-batch shape of the data it will get,
** then re-run shape inference over the whole graph in topological order
** (PopTorch traces the model with the first micro-batch). */
static popc_status set_input_shapes(popci_plan *p, const popci_plan_config *c)
{
    popc_graph *g = p->graph;
    int n = popc_graph_n_inputs(g), nn = popc_graph_n_nodes(g);
    int *order = NULL;
    popc_view outs[64];
    popc_status st = POPC_OK;

    if (c->n_inputs != n)
        return popc_set_error(POPC_EINVAL, "compile: the graph '%s' has %d "
                              "inputs but %d tensors were given",
                              popc_graph_name(g), n, c->n_inputs);
    for (int i = 0; i < n; i++) {
        popci_value *v = &g->values[popc_graph_input(g, i)];
        v->info = c->inputs[i];
        v->info.data = NULL;
    }
    if (!(order = popci_malloc(sizeof *order * (size_t)(nn + 1))))
        return oom("shape inference");
    if ((st = popci_graph_topo(g, order)) != POPC_OK)
        goto done;
    for (int k = 0; k < nn; k++) {
        popci_node *node = &g->nodes[order[k]];
        int ran = 0;

        if (node->n_outputs > 64) {
            st = popc_set_error(POPC_ECOMPILE, "compile: node '%s' has %d "
                                "outputs; at most 64 are supported",
                                node->name, node->n_outputs);
            goto done;
        }
        if ((st = popci_graph_infer_node(g, order[k], c->training, outs,
                                         &ran)) != POPC_OK)
            goto done;
        for (int j = 0; ran && j < node->n_outputs; j++)
            if (node->outputs[j] >= 0) {
                g->values[node->outputs[j]].info = outs[j];
                g->values[node->outputs[j]].info.data = NULL;
            }
    }
done:
    free(order);
    return st;
}

/* The constant autodiff seeds the loss gradient with ("<loss>/grad/seed",
** filled with the loss scaling), among the values it added; -1 if absent.
** Rewriting it lets a variable loss scaling change without recompiling. */
static int find_seed(const popc_graph *g, int loss, int first_new)
{
    const char *ln = popc_graph_value_name(g, loss);
    size_t n = strlen(ln);

    for (int v = first_new; v < popc_graph_n_values(g); v++) {
        const char *name = popc_graph_value_name(g, v);
        if (popc_graph_value_kind(g, v) == POPC_VALUE_CONSTANT &&
            strncmp(name, ln, n) == 0 && strcmp(name + n, "/grad/seed") == 0)
            return v;
    }
    return -1;
}

/* Differentiate the final loss w.r.t. every trainable initializer. */
static popc_status build_gradients(popci_plan *p, int *loss, int **wrt_out,
                                   int **grads_out, int *n_wrt_out)
{
    popc_graph *g = p->graph;
    int nv = popc_graph_n_values(g), n = 0;
    int *wrt = NULL, *grads = NULL;
    popc_status st;

    *wrt_out = *grads_out = NULL;
    *n_wrt_out = 0;
    if ((st = popci_graph_final_loss(g, loss)) != POPC_OK)
        return st;
    wrt = popci_malloc(sizeof *wrt * (size_t)(nv + 1));
    grads = popci_malloc(sizeof *grads * (size_t)(nv + 1));
    if (!wrt || !grads) {
        st = oom("gradients");
        goto fail;
    }
    for (int v = 0; v < nv; v++)
        if (popc_graph_value_kind(g, v) == POPC_VALUE_INITIALIZER &&
            popc_graph_value_trainable(g, v))
            wrt[n++] = v;
    if (n > 0 && (st = popc_graph_gradients(g, *loss, wrt, n,
                                            p->loss_scaling, grads)) !=
                     POPC_OK)
        goto fail;
    p->seed_value = find_seed(g, *loss, nv);
    *wrt_out = wrt;
    *grads_out = grads;
    *n_wrt_out = n;
    return POPC_OK;
fail:
    free(wrt);
    free(grads);
    return st;
}

/* An earlier compile's graph (executable cache, popc_load; helper "exe"):
** shapes, verification and gradients are already done. */
static popc_status take_compiled(popci_plan *p, popci_plan_compiled *c,
                                 int *n_fwd, int *loss, int **wrt_out,
                                 int **grads_out, int *n_wrt_out)
{
    int n = p->pub.training ? c->n_wrt : 0;

    *wrt_out = popci_malloc(sizeof **wrt_out * (size_t)(n + 1));
    *grads_out = popci_malloc(sizeof **grads_out * (size_t)(n + 1));
    if (!*wrt_out || !*grads_out)
        return oom("gradients");
    if (n) {
        memcpy(*wrt_out, c->wrt, sizeof **wrt_out * (size_t)n);
        memcpy(*grads_out, c->grads, sizeof **grads_out * (size_t)n);
    }
    p->graph = c->graph;
    c->graph = NULL;
    *n_fwd = c->n_forward;
    *loss = p->pub.training ? c->loss : -1;
    p->seed_value = p->pub.training ? c->seed : -1;
    *n_wrt_out = n;
    return POPC_OK;
}

/* ---- schedule ------------------------------------------------------------ */

/* Nodes to run: those a kept value depends on, plus nodes with side
** effects. Forward nodes (ids below n_fwd) first, then backward ones, each
** in topological order. */
static popc_status schedule(popci_plan *p, int n_fwd, const char *keep,
                            int **order_out, int *n_out, int *n_forward)
{
    popc_graph *g = p->graph;
    int nn = popc_graph_n_nodes(g), nv = popc_graph_n_values(g);
    int *topo = popci_malloc(sizeof *topo * (size_t)(nn + 1));
    int *order = popci_malloc(sizeof *order * (size_t)(nn + 1));
    char *need = popci_calloc((size_t)nv + 1, 1);
    char *run = popci_calloc((size_t)nn + 1, 1);
    popc_status st = POPC_OK;
    int k = 0;

    *order_out = NULL;
    if (!topo || !order || !need || !run) {
        st = oom("schedule");
        goto done;
    }
    if ((st = popc_graph_topo_order(g, topo)) != POPC_OK)
        goto done;
    memcpy(need, keep, (size_t)nv);
    for (int i = nn - 1; i >= 0; i--) {
        int id = topo[i], nout = popc_graph_node_n_outputs(g, id);
        const popc_op_def *def = popci_graph_node_def(g, id);
        int used = def && (def->flags & (POPC_OP_NOFOLD | POPC_OP_HOST));

        for (int j = 0; j < nout && !used; j++) {
            int v = popc_graph_node_output(g, id, j);
            used = v >= 0 && need[v];
        }
        if (!used)
            continue;
        run[id] = 1;
        for (int j = 0; j < popc_graph_node_n_inputs(g, id); j++) {
            int v = popc_graph_node_input(g, id, j);
            if (v >= 0)
                need[v] = 1;
        }
    }
    for (int i = 0; i < nn; i++)
        if (run[topo[i]] && topo[i] < n_fwd)
            order[k++] = topo[i];
    *n_forward = k;
    for (int i = 0; i < nn; i++)
        if (run[topo[i]] && topo[i] >= n_fwd)
            order[k++] = topo[i];
    *order_out = order;
    order = NULL;
    *n_out = k;
done:
    free(topo);
    free(order);
    free(need);
    free(run);
    return st;
}

/* ---- slots --------------------------------------------------------------- */

static int add_slot(popci_plan *p, int *cap, const char *name,
                    popc_slot_kind kind, popc_view info)
{
    if (p->pub.n_slots == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        popc_plan_slot *ns = popci_realloc(p->slots, sizeof *ns * (size_t)nc);
        if (!ns)
            return -1;
        p->slots = ns;
        *cap = nc;
    }
    p->slots[p->pub.n_slots] = (popc_plan_slot){
        .name = name, .kind = kind, .info = info, .ipu = 0,
        .first_use = 0, .last_use = 0};
    return p->pub.n_slots++;
}

static int value_slot(popci_plan *p, int *cap, int v)
{
    popc_graph *g = p->graph;
    popc_view info;
    popc_slot_kind kind;

    if (v < 0)
        return -1;
    if (p->value_slot[v] >= 0)
        return p->value_slot[v];
    info = popc_graph_value_info(g, v);
    switch (popc_graph_value_kind(g, v)) {
    case POPC_VALUE_INPUT: kind = POPC_SLOT_INPUT; info.data = NULL; break;
    case POPC_VALUE_INITIALIZER: kind = POPC_SLOT_WEIGHT; info.data = NULL;
        break;
    case POPC_VALUE_CONSTANT: kind = POPC_SLOT_CONST; break;
    default: kind = POPC_SLOT_ACT; info.data = NULL; break;
    }
    p->value_slot[v] = add_slot(p, cap, popc_graph_value_name(g, v), kind,
                                info);
    return p->value_slot[v];
}

static char *join_name(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = popci_malloc(n);

    if (s)
        snprintf(s, n, "%s/%s", a, b);
    return s;
}

static popc_status keep_name(popci_plan *p, char *s)
{
    char **nn;
    size_t n = 0;

    while (p->slot_names && p->slot_names[n])
        n++;
    nn = popci_realloc(p->slot_names, sizeof *nn * (n + 2));
    if (!nn) {
        free(s);
        return oom("slot names");
    }
    nn[n] = s;
    nn[n + 1] = NULL;
    p->slot_names = nn;
    return POPC_OK;
}

/* Weights first (every initializer, in value order), then inputs, then
** what the schedule touches. */
static popc_status make_slots(popci_plan *p, const int *order, int n_order,
                              const int *wrt, const int *grads, int n_wrt,
                              int *cap)
{
    popc_graph *g = p->graph;
    int nw = 0;
    popc_status st;

    for (int v = 0; v < p->n_values; v++)
        if (popc_graph_value_kind(g, v) == POPC_VALUE_INITIALIZER)
            nw++;
    p->weights = popci_calloc((size_t)nw + 1, sizeof *p->weights);
    p->input_slots = popci_calloc((size_t)p->n_inputs + 1, sizeof(int));
    p->output_slots = popci_calloc((size_t)p->n_outputs + 1, sizeof(int));
    if (!p->weights || !p->input_slots || !p->output_slots)
        return oom("slots");
    for (int v = 0; v < p->n_values; v++) {
        popci_plan_weight *w;

        if (popc_graph_value_kind(g, v) != POPC_VALUE_INITIALIZER)
            continue;
        w = &p->weights[p->n_weights++];
        *w = (popci_plan_weight){.name = popc_graph_value_name(g, v),
                                 .value = v, .slot = value_slot(p, cap, v),
                                 .trainable = popc_graph_value_trainable(g,
                                                                         v),
                                 .grad_slot = -1, .accum_slot = -1,
                                 .update_slot = -1};
        if (w->slot < 0)
            return oom("slots");
    }
    for (int i = 0; i < p->n_inputs; i++)
        if ((p->input_slots[i] = value_slot(p, cap,
                                            popc_graph_input(g, i))) < 0)
            return oom("slots");
    for (int k = 0; k < n_order; k++) {
        int id = order[k];
        for (int j = 0; j < popc_graph_node_n_inputs(g, id); j++) {
            int v = popc_graph_node_input(g, id, j);
            if (v >= 0 && value_slot(p, cap, v) < 0)
                return oom("slots");
        }
        for (int j = 0; j < popc_graph_node_n_outputs(g, id); j++)
            if (value_slot(p, cap, popc_graph_node_output(g, id, j)) < 0)
                return oom("slots");
    }
    for (int i = 0; i < p->n_outputs; i++)
        if ((p->output_slots[i] = value_slot(p, cap,
                                             popc_graph_output(g, i))) < 0)
            return oom("slots");
    /* Gradient accumulators: one GRAD slot per weight the loss reaches. */
    for (int i = 0; i < n_wrt; i++) {
        int w = -1;
        char *name;

        if (grads[i] < 0)
            continue;
        for (int j = 0; j < p->n_weights; j++)
            if (p->weights[j].value == wrt[i])
                w = j;
        if (w < 0)
            continue;
        p->weights[w].grad_slot = value_slot(p, cap, grads[i]);
        if (!(name = join_name(p->weights[w].name, "accum")))
            return oom("slot names");
        if ((st = keep_name(p, name)) != POPC_OK)
            return st;
        p->weights[w].accum_slot = add_slot(
            p, cap, name, POPC_SLOT_GRAD,
            p->slots[p->weights[w].slot].info);
        if (p->weights[w].grad_slot < 0 || p->weights[w].accum_slot < 0)
            return oom("slots");
        p->slots[p->weights[w].accum_slot].info.dtype = POPC_DTYPE_F32;
        p->n_trainable++;
    }
    if (p->pub.training) {
        for (int i = 0; i < g->n_updates; i++) {
            int wv = g->updates[i].weight, uv = g->updates[i].value, w = -1;
            for (int j = 0; j < p->n_weights; j++)
                if (p->weights[j].value == wv)
                    w = j;
            if (w < 0)
                continue;
            if ((p->weights[w].update_slot = value_slot(p, cap, uv)) < 0)
                return oom("slots");
        }
    }
    for (int s = 0; s < p->pub.n_slots; s++)
        if (p->slots[s].info.dtype == POPC_DTYPE_UNDEFINED)
            return popc_set_error(POPC_ECOMPILE, "compile: the type and shape "
                                  "of '%s' are unknown after shape "
                                  "inference; check the node producing it",
                                  p->slots[s].name);
    return POPC_OK;
}

/* ---- nodes --------------------------------------------------------------- */

static void fill_views(const popci_plan *p, const int *slots, int n,
                       popc_view *views)
{
    for (int i = 0; i < n; i++) {
        if (slots[i] < 0) {
            memset(&views[i], 0, sizeof views[i]);
            continue;
        }
        views[i] = p->slots[slots[i]].info;
        if (p->slots[slots[i]].kind == POPC_SLOT_WEIGHT) {
            popc_tensor *t = popc_graph_value_tensor(
                p->graph, popc_graph_find_value(p->graph,
                                                p->slots[slots[i]].name));
            views[i].data = t ? popc_tensor_data(t) : NULL;
        }
    }
}

static void default_cost(const popc_view *in, int n_in, const popc_view *out,
                         int n_out, popc_cost *c)
{
    c->flops = 0;
    c->bytes = 0;
    c->temp_bytes = 0;
    for (int i = 0; i < n_out; i++) {
        c->flops += (double)popc_view_numel(&out[i]);
        c->bytes += (double)popc_view_nbytes(&out[i]);
    }
    for (int i = 0; i < n_in; i++)
        if (in[i].dtype != POPC_DTYPE_UNDEFINED)
            c->bytes += (double)popc_view_nbytes(&in[i]);
}

/* Stage of a node: its annotation; else, forward, its IPU (AutoStage
** SameAsIpu); backward, the latest stage among the forward values it
** reads, so a stage's backward runs where its activations live. */
static void place_node(popci_plan *p, popc_plan_node *pn, int id,
                       int forward, int *value_stage, int *value_ipu)
{
    popc_graph *g = p->graph;
    popc_annotations a = popc_graph_node_annotations(g, id);
    int st = -1, ipu = -1;

    if (forward) {
        ipu = a.ipu >= 0 ? a.ipu : 0;
        st = a.stage >= 0 ? a.stage : ipu;
    } else {
        for (int j = 0; j < popc_graph_node_n_inputs(g, id); j++) {
            int v = popc_graph_node_input(g, id, j);
            if (v >= 0 && value_stage[v] >= 0 && value_stage[v] > st) {
                st = value_stage[v];
                ipu = value_ipu[v];
            }
        }
        if (a.ipu >= 0)
            ipu = a.ipu;
        if (a.stage >= 0)
            st = a.stage;
        if (st < 0)
            st = 0;
        if (ipu < 0)
            ipu = 0;
    }
    pn->ipu = ipu;
    pn->stage = st;
    pn->phase = a.phase >= 0 ? a.phase : 0;
    pn->recompute = a.recompute > 0;
    pn->available_memory = a.available_memory;
    if (forward)
        for (int j = 0; j < popc_graph_node_n_outputs(g, id); j++) {
            int v = popc_graph_node_output(g, id, j);
            if (v >= 0) {
                value_stage[v] = st;
                value_ipu[v] = ipu;
            }
        }
}

static popc_status build_nodes(popci_plan *p, const popci_plan_config *cfg,
                               const int *order, int n_order, int n_forward)
{
    popc_graph *g = p->graph;
    int n_io = 0, pos = 0, max_ipu = 0, max_stage = 0;
    int *value_stage = popci_malloc(sizeof(int) * (size_t)(p->n_values + 1));
    int *value_ipu = popci_malloc(sizeof(int) * (size_t)(p->n_values + 1));
    popc_view in[64], out[64];
    popc_status st = POPC_OK;

    for (int k = 0; k < n_order; k++)
        n_io += popc_graph_node_n_inputs(g, order[k]) +
                popc_graph_node_n_outputs(g, order[k]);
    p->nodes = popci_calloc((size_t)n_order + 1, sizeof *p->nodes);
    p->node_attrs = popci_calloc((size_t)n_order + 1, sizeof *p->node_attrs);
    p->node_io = popci_malloc(sizeof(int) * (size_t)(n_io + 1));
    p->derived = popci_calloc((size_t)n_order + 1, sizeof *p->derived);
    p->node_kernel = popci_calloc((size_t)n_order + 1, sizeof *p->node_kernel);
    if (!p->nodes || !p->node_attrs || !p->node_io || !value_stage ||
        !value_ipu || !p->derived || !p->node_kernel) {
        st = oom("nodes");
        goto done;
    }
    for (int v = 0; v < p->n_values; v++)
        value_stage[v] = value_ipu[v] = -1;
    p->pub.n_nodes = n_order;
    p->pub.n_forward = n_forward;
    for (int k = 0; k < n_order; k++) {
        int id = order[k];
        popc_plan_node *pn = &p->nodes[k];
        int *io = p->node_io + pos;
        popc_infer_ctx ic;

        pn->n_inputs = popc_graph_node_n_inputs(g, id);
        pn->n_outputs = popc_graph_node_n_outputs(g, id);
        pn->name = popc_graph_node_name(g, id);
        if (pn->n_inputs > 64 || pn->n_outputs > 64) {
            st = popc_set_error(POPC_ECOMPILE, "compile: node '%s' has %d "
                                "inputs and %d outputs; at most 64 each are "
                                "supported", pn->name, pn->n_inputs,
                                pn->n_outputs);
            goto done;
        }
        for (int j = 0; j < pn->n_inputs; j++) {
            int v = popc_graph_node_input(g, id, j);
            io[j] = v >= 0 ? p->value_slot[v] : -1;
        }
        for (int j = 0; j < pn->n_outputs; j++)
            io[pn->n_inputs + j] =
                p->value_slot[popc_graph_node_output(g, id, j)];
        pn->inputs = io;
        pn->outputs = io + pn->n_inputs;
        pos += pn->n_inputs + pn->n_outputs;
        p->node_attrs[k] = popc_graph_node_attrs(g, id);
        pn->attrs = &p->node_attrs[k];
        if (!(pn->op = popci_graph_node_def(g, id)) || !pn->op->forward) {
            st = popc_set_error(POPC_ECOMPILE, "compile: node '%s' uses op "
                                "%s::%s, which no loaded plugin implements; "
                                "check POPC_PLUGIN_PATH", pn->name,
                                popc_graph_node_domain(g, id),
                                popc_graph_node_op(g, id));
            goto done;
        }
        place_node(p, pn, id, k < n_forward, value_stage, value_ipu);
        if (pn->ipu > max_ipu)
            max_ipu = pn->ipu;
        if (pn->stage > max_stage)
            max_stage = pn->stage;
        fill_views(p, pn->inputs, pn->n_inputs, in);
        fill_views(p, pn->outputs, pn->n_outputs, out);
        ic = (popc_infer_ctx){.size = sizeof ic, .host = popci_host(),
                              .node_name = pn->name,
                              .n_inputs = pn->n_inputs, .inputs = in,
                              .n_outputs = pn->n_outputs, .outputs = out,
                              .attrs = pn->attrs,
                              .training = p->pub.training, .op = pn->op};
        if (cfg->choose &&
            (st = cfg->choose(&ic, cfg->kernel_selection, &p->derived[k],
                              &p->node_kernel[k])) != POPC_OK)
            goto done;
        if (p->node_kernel[k])
            pn->op = ic.op = &p->derived[k];
        if (pn->op->cost) {
            if ((st = pn->op->cost(&ic, &pn->cost)) != POPC_OK)
                goto done;
        } else {
            default_cost(in, pn->n_inputs, out, pn->n_outputs, &pn->cost);
        }
        if (pn->op->prepare &&
            (st = pn->op->prepare(&ic, &pn->state)) != POPC_OK)
            goto done;
    }
    p->pub.n_ipus = max_ipu + 1;
    p->pub.n_stages = max_stage + 1;
done:
    free(value_stage);
    free(value_ipu);
    return st;
}

/* ---- liveness and memory plan -------------------------------------------- */

/* Live ranges, and the IPU of every slot: where its producer runs, or
** for inputs, weights and constants, where it is first read. */
static popc_status liveness(popci_plan *p, const char *keep_to_end)
{
    int n = p->pub.n_nodes;
    char *placed = popci_calloc((size_t)p->pub.n_slots + 1, 1);

    if (!placed)
        return oom("liveness");
    for (int s = 0; s < p->pub.n_slots; s++) {
        popc_plan_slot *sl = &p->slots[s];
        int act = sl->kind == POPC_SLOT_ACT;
        sl->first_use = act ? -1 : 0;
        sl->last_use = act ? -1 : n;
        sl->ipu = 0;
    }
    for (int k = 0; k < n; k++) {
        const popc_plan_node *pn = &p->nodes[k];
        for (int j = 0; j < pn->n_outputs; j++) {
            popc_plan_slot *sl = &p->slots[pn->outputs[j]];
            sl->first_use = k;
            sl->last_use = k;
            sl->ipu = pn->ipu;
            placed[pn->outputs[j]] = 1;
        }
        for (int j = 0; j < pn->n_inputs; j++) {
            int s = pn->inputs[j];
            if (s < 0)
                continue;
            if (p->slots[s].kind == POPC_SLOT_ACT)
                p->slots[s].last_use = k;
            if (!placed[s]) {
                p->slots[s].ipu = pn->ipu;
                placed[s] = 1;
            }
        }
    }
    for (int s = 0; s < p->pub.n_slots; s++)
        if (keep_to_end[s] && p->slots[s].kind == POPC_SLOT_ACT)
            p->slots[s].last_use = n;
    for (int w = 0; w < p->n_weights; w++)
        if (p->weights[w].accum_slot >= 0)
            p->slots[p->weights[w].accum_slot].ipu =
                p->slots[p->weights[w].slot].ipu;
    free(placed);
    return POPC_OK;
}

/* The memory plan of an earlier compile of the same graph (helper "exe"):
** the same slots get the same offsets, so only checked, not planned. */
static popc_status reuse_memory(popci_plan *p, const popci_plan_compiled *c)
{
    int ns = p->pub.n_slots;

    if (!c->arena_offset || c->n_slots != ns)
        return popci_plan_memory(p);
    for (int s = 0; s < ns; s++) {
        int64_t off = c->arena_offset[s];
        size_t end = (size_t)off + ALIGN_UP(popci_plan_slot_bytes(p, s));
        int ok = p->slots[s].kind == POPC_SLOT_ACT
                     ? off >= 0 && end <= c->arena_bytes
                     : off == -1;
        if (!ok)
            return popci_plan_memory(p);
    }
    if (!(p->arena_offset = popci_malloc(sizeof(int64_t) * (size_t)(ns + 1))))
        return oom("memory plan");
    memcpy(p->arena_offset, c->arena_offset, sizeof(int64_t) * (size_t)ns);
    p->arena_bytes = c->arena_bytes;
    p->persistent_bytes = 0;
    for (int s = 0; s < ns; s++)
        if (p->slots[s].kind != POPC_SLOT_ACT &&
            p->slots[s].kind != POPC_SLOT_INPUT)
            p->persistent_bytes += popci_plan_slot_bytes(p, s);
    return POPC_OK;
}

/* ---- public (core-internal) API ------------------------------------------ */

void popci_plan_free(popci_plan *p)
{
    if (!p)
        return;
    for (int k = 0; p->nodes && k < p->pub.n_nodes; k++)
        if (p->nodes[k].state && p->nodes[k].op && p->nodes[k].op->release)
            p->nodes[k].op->release(p->nodes[k].state);
    for (size_t i = 0; p->slot_names && p->slot_names[i]; i++)
        free(p->slot_names[i]);
    free(p->slot_names);
    free(p->slots);
    free(p->nodes);
    free(p->node_io);
    free(p->node_attrs);
    free(p->derived);
    free(p->node_kernel);
    free(p->value_slot);
    free(p->input_slots);
    free(p->output_slots);
    free(p->anchor_slots);
    free(p->weights);
    free(p->arena_offset);
    free(p->offchip_from);
    free(p->offchip_to);
    free(p->store_dtype);
    free(p->slot_location);
    popc_graph_free(p->graph);
    free(p);
}

size_t popci_plan_slot_device_bytes(const popci_plan *p, int slot)
{
    if (!p->store_dtype)
        return popci_plan_slot_bytes(p, slot);
    return (size_t)popc_view_numel(&p->slots[slot].info) *
           popc_dtype_size(p->store_dtype[slot]);
}

popc_status popci_plan_store_half(popci_plan *p, int slot)
{
    return popci_plan_store_as(p, slot, POPC_DTYPE_F16);
}

popc_status popci_plan_store_marked(popci_plan *p)
{
    for (int k = 0; k < p->pub.n_nodes; k++) {
        const popc_plan_node *n = &p->pub.nodes[k];
        int64_t mark = popc_attr_int(n->attrs, POPC_ATTR_FLOAT16, 0);
        popc_status st;

        if (mark != POPC_FLOAT16_OP && mark != POPC_FLOAT16_CAST)
            continue;
        for (int j = 0; j < n->n_outputs; j++) {
            int s = n->outputs[j];

            /* a cast an IPU would not need is an alias, whichever way it
            ** converts; an op's float32 result is float16 on an IPU */
            if (s < 0 || p->slots[s].kind != POPC_SLOT_ACT ||
                (mark == POPC_FLOAT16_OP &&
                 p->slots[s].info.dtype != POPC_DTYPE_F32))
                continue;
            if ((st = popci_plan_store_as(p, s, mark == POPC_FLOAT16_CAST
                                                    ? POPC_DTYPE_UNDEFINED
                                                    : POPC_DTYPE_F16)) !=
                POPC_OK)
                return st;
        }
    }
    return POPC_OK;
}

popc_status popci_plan_store_as(popci_plan *p, int slot, popc_dtype dt)
{
    size_t before;

    if (!p->store_dtype) {
        if (!(p->store_dtype = popci_calloc((size_t)p->pub.n_slots + 1,
                                            sizeof *p->store_dtype)))
            return oom("store dtypes");
        for (int s = 0; s < p->pub.n_slots; s++)
            p->store_dtype[s] = p->slots[s].info.dtype;
        p->pub.store_dtype = p->store_dtype;
    }
    before = popci_plan_slot_device_bytes(p, slot);
    p->store_dtype[slot] = dt;
    if (p->slots[slot].kind != POPC_SLOT_ACT &&
        p->slots[slot].kind != POPC_SLOT_INPUT)
        p->persistent_bytes -= before - popci_plan_slot_device_bytes(p, slot);
    return POPC_OK;
}

popc_status popci_plan_add_state(popci_plan *p, int w, int n,
                                 const char *const *names)
{
    int cap = p->pub.n_slots;
    popc_status st;

    p->weights[w].first_state = p->pub.n_slots;
    p->weights[w].n_state = 0;
    for (int i = 0; i < n; i++) {
        char *name = join_name(p->weights[w].name, names[i]);
        int64_t *off;
        int s;

        if (!name)
            return oom("state slots");
        if ((st = keep_name(p, name)) != POPC_OK)
            return st;
        s = add_slot(p, &cap, name, POPC_SLOT_STATE,
                     p->slots[p->weights[w].slot].info);
        if (s < 0 || !(off = popci_realloc(p->arena_offset,
                                     sizeof *off * (size_t)(s + 1))))
            return oom("state slots");
        p->arena_offset = off;
        p->arena_offset[s] = -1;
        if ((st = popci_layer_strategy->offchip_add_slot(p, s)) != POPC_OK)
            return st;
        p->slots[s].info.dtype = POPC_DTYPE_F32;
        p->slots[s].first_use = 0;
        p->slots[s].last_use = p->pub.n_nodes;
        p->slots[s].ipu = p->slots[p->weights[w].slot].ipu;
        p->persistent_bytes += popci_plan_slot_bytes(p, s);
        p->weights[w].n_state++;
    }
    p->pub.slots = p->slots;
    return POPC_OK;
}

/* anchorTensor: the named values are kept like outputs. */
static popc_status keep_anchors(popci_plan *p, const popci_plan_config *cfg,
                                char *keep)
{
    if (cfg->n_anchors <= 0)
        return POPC_OK;
    if (!(p->anchor_slots = popci_calloc((size_t)cfg->n_anchors,
                                         sizeof *p->anchor_slots)))
        return oom("anchors");
    p->n_anchors = cfg->n_anchors;
    for (int i = 0; i < cfg->n_anchors; i++) {
        int v = popc_graph_find_value(p->graph, cfg->anchors[i]);

        if (v < 0)
            return popc_set_error(POPC_ENOTFOUND, "anchorTensor: the graph "
                                  "'%s' has no tensor named '%s'; anchor a "
                                  "value of the compiled graph (gradients "
                                  "included)", popc_graph_name(p->graph),
                                  cfg->anchors[i]);
        keep[v] = 1;
    }
    return POPC_OK;
}

popc_status popci_plan_new(const popc_graph *g, const popci_plan_config *cfg,
                           popci_plan **out)
{
    popci_plan *p = NULL;
    int *wrt = NULL, *grads = NULL, *order = NULL, n_wrt = 0;
    int n_fwd = 0, n_order = 0, n_forward = 0, loss = -1, cap = 0;
    char *keep = NULL, *keep_slot = NULL;
    popc_status st;

    *out = NULL;
    if (!(p = popci_calloc(1, sizeof *p)))
        return oom("plan");
    p->pub.size = sizeof p->pub;
    p->pub.slot_size = sizeof(popc_plan_slot);
    p->pub.node_size = sizeof(popc_plan_node);
    p->pub.training = cfg->training;
    p->pub.replicas = cfg->replicas > 0 ? cfg->replicas : 1;
    p->loss_scaling = cfg->training ? cfg->loss_scaling : 1.0;
    p->loss_slot = -1;
    p->seed_slot = -1;
    p->seed_value = -1;
    p->strategy = cfg->strategy;
    /* also here: a compiled graph taken from an executable skips verify */
    if ((st = popci_graph_check_foreign(g)) != POPC_OK)
        goto fail;
    if (cfg->compiled) {
        if ((st = take_compiled(p, cfg->compiled, &n_fwd, &loss, &wrt,
                                &grads, &n_wrt)) != POPC_OK)
            goto fail;
    } else {
        /* the weights' data are shared with g: the device has its own copy */
        if ((st = popci_graph_clone_sharing(g, &p->graph)) != POPC_OK)
            goto fail;
        if ((st = set_input_shapes(p, cfg)) != POPC_OK)
            goto fail;
        if ((st = popc_graph_verify(p->graph, cfg->training)) != POPC_OK)
            goto fail;
        if ((st = popci_layer_strategy->resolve(p->graph, &p->strategy)) !=
            POPC_OK)
            goto fail;
        /* after the stages are resolved: a rewritten node takes its
        ** first node's resolved stage, IPU and phase, and the numbering
        ** of automatic stages never sees the new node ids */
        if (cfg->rewrite && cfg->opt_level > 0 &&
            ((st = cfg->rewrite(p->graph, cfg->opt_level, cfg->training,
                                cfg->anchors, cfg->n_anchors)) != POPC_OK ||
             (st = popc_graph_verify(p->graph, cfg->training)) != POPC_OK))
            goto fail;
        n_fwd = popc_graph_n_nodes(p->graph);
        if (cfg->training &&
            (st = build_gradients(p, &loss, &wrt, &grads, &n_wrt)) !=
                POPC_OK)
            goto fail;
        if (cfg->training &&
            (st = popc_graph_verify(p->graph, cfg->training)) != POPC_OK)
            goto fail;
        if (cfg->training &&
            (st = popci_layer_strategy->recompute(p->graph, n_fwd)) !=
                POPC_OK)
            goto fail;
    }
    p->n_graph_forward = n_fwd;
    p->n_recomputed =
        popci_layer_strategy->recompute_count(p->graph, n_fwd);

    p->n_values = popc_graph_n_values(p->graph);
    p->n_inputs = popc_graph_n_inputs(p->graph);
    p->n_outputs = popc_graph_n_outputs(p->graph);
    keep = popci_calloc((size_t)p->n_values + 1, 1);
    p->value_slot = popci_malloc(sizeof(int) * (size_t)(p->n_values + 1));
    if (!keep || !p->value_slot) {
        st = oom("plan");
        goto fail;
    }
    for (int v = 0; v < p->n_values; v++)
        p->value_slot[v] = -1;
    for (int i = 0; i < p->n_outputs; i++)
        keep[popc_graph_output(p->graph, i)] = 1;
    if ((st = keep_anchors(p, cfg, keep)) != POPC_OK)
        goto fail;
    for (int i = 0; i < n_wrt; i++)
        if (grads[i] >= 0)
            keep[grads[i]] = 1;
    if (cfg->training) {
        for (int i = 0; i < p->graph->n_updates; i++)
            keep[p->graph->updates[i].value] = 1;
    }
    if ((st = schedule(p, n_fwd, keep, &order, &n_order, &n_forward)) !=
        POPC_OK ||
        (st = popci_layer_strategy->order(p->graph, &p->strategy, order,
                                          n_forward, n_order)) != POPC_OK)
        goto fail;
    if ((st = make_slots(p, order, n_order, wrt, grads, n_wrt, &cap)) !=
        POPC_OK)
        goto fail;
    p->pub.slots = p->slots;
    for (int i = 0; i < p->n_anchors; i++) {
        p->anchor_slots[i] =
            p->value_slot[popc_graph_find_value(p->graph, cfg->anchors[i])];
        if (p->anchor_slots[i] < 0) {
            st = popc_set_error(POPC_EINVAL, "anchorTensor: '%s' is not "
                                "computed or stored by the compiled graph",
                                cfg->anchors[i]);
            goto fail;
        }
    }
    if (loss >= 0)
        p->loss_slot = p->value_slot[loss];
    if (p->seed_value >= 0)
        p->seed_slot = p->value_slot[p->seed_value];
    if ((st = build_nodes(p, cfg, order, n_order, n_forward)) != POPC_OK)
        goto fail;
    p->pub.nodes = p->nodes;
    p->pub.node_kernel = (const popc_kernel_def *const *)p->node_kernel;
    if (!(keep_slot = popci_calloc((size_t)p->pub.n_slots + 1, 1))) {
        st = oom("plan");
        goto fail;
    }
    for (int v = 0; v < p->n_values; v++)
        if (keep[v] && p->value_slot[v] >= 0)
            keep_slot[p->value_slot[v]] = 1;
    if ((st = liveness(p, keep_slot)) != POPC_OK ||
        (st = cfg->compiled ? reuse_memory(p, cfg->compiled)
                            : popci_plan_memory(p)) != POPC_OK ||
        (st = popci_layer_strategy->offchip_plan(p)) != POPC_OK)
        goto fail;
    popc_log(POPC_LOG_DEBUG, "compile '%s': %d nodes (%d forward), %d slots, "
             "%d trainable weights, activations %zu bytes per frame, "
             "persistent %zu bytes; stored for the backward pass %zu bytes "
             "(%d nodes recomputed), off chip %zu bytes",
             popc_graph_name(p->graph), p->pub.n_nodes, p->pub.n_forward,
             p->pub.n_slots, p->n_trainable, p->arena_bytes,
             p->persistent_bytes, p->stored_bytes, p->n_recomputed,
             p->offchip_bytes);
    free(wrt);
    free(grads);
    free(order);
    free(keep);
    free(keep_slot);
    *out = p;
    return POPC_OK;
fail:
    free(wrt);
    free(grads);
    free(order);
    free(keep);
    free(keep_slot);
    popci_plan_free(p);
    return st;
}
