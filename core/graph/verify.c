/* verify.c - check a graph before compiling it, and finish its inference.
**
** Everything wrong is reported at once (PopTorch users complained about
** finding one unsupported op per compile): unknown ops grouped by type with
** the nodes using them, then dangling inputs, arity, cycles, inference
** errors and shape/dtype mismatches, one per line. Inference runs again on
** every node in topological order; outputs still unknown (their op was not
** loaded when the node was added, or they depended on a forward reference)
** are filled in here.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"

/* Each category keeps its first few lines; the rest are counted. */
#define MAX_LINES 12

typedef struct report {
    popci_sb sb;
    int lines, dropped;
} report;

static void add_line(report *r, const char *fmt, ...) POPC_PRINTF(2, 3);

static void add_line(report *r, const char *fmt, ...)
{
    va_list ap;

    if (r->lines >= MAX_LINES) {
        r->dropped++;
        return;
    }
    if (r->sb.len)
        popci_sb_printf(&r->sb, "\n");
    va_start(ap, fmt);
    popci_sb_vprintf(&r->sb, fmt, ap);
    va_end(ap);
    r->lines++;
}

static int same_op(const popci_node *x, const popci_node *y)
{
    return strcmp(x->domain, y->domain) == 0 && strcmp(x->op, y->op) == 0 &&
           x->version == y->version;
}

/* "ai.onnx::Foo (node 'a'), popc::Bar (nodes 'b', 'c')": one entry per op
** type, in order of first use. */
static void unknown_ops(popc_graph *g, popci_sb *sb, int *n_unknown)
{
    unsigned char *done = popci_calloc((size_t)g->n_nodes + 1, 1);

    *n_unknown = 0;
    if (!done) {
        sb->oom = 1;
        return;
    }
    for (int n = 0; n < g->n_nodes; n++) {
        const popci_node *x = &g->nodes[n];
        int count = 0, shown = 0;

        if (done[n] || popci_graph_node_def(g, n))
            continue;
        for (int m = n; m < g->n_nodes; m++)
            count += !g->nodes[m].def && same_op(x, &g->nodes[m]);
        popci_sb_printf(sb, "%s%s::%s (node%s ", *n_unknown ? ", " : "",
                        x->domain, x->op, count > 1 ? "s" : "");
        for (int m = n; m < g->n_nodes; m++) {
            if (g->nodes[m].def || !same_op(x, &g->nodes[m]))
                continue;
            done[m] = 1;
            if (shown < 5)
                popci_sb_printf(sb, "%s'%s'", shown ? ", " : "",
                                g->nodes[m].name);
            shown++;
        }
        if (shown > 5)
            popci_sb_printf(sb, " and %d more", shown - 5);
        popci_sb_printf(sb, ")");
        *n_unknown += shown;
    }
    free(done);
}

static void check_structure(popc_graph *g, report *r)
{
    for (int n = 0; n < g->n_nodes; n++) {
        const popci_node *x = &g->nodes[n];
        const popc_op_def *def = x->def;

        for (int i = 0; i < x->n_inputs; i++)
            if (x->inputs[i] >= g->n_values)
                add_line(r, "node '%s' (%s::%s): input %d refers to value %d, "
                         "which does not exist (the graph has %d values); "
                         "connect it to a value that is added to the graph",
                         x->name, x->domain, x->op, i, x->inputs[i],
                         g->n_values);
        if (!def)
            continue;
        if (x->n_inputs < def->min_inputs ||
            (def->max_inputs >= 0 && x->n_inputs > def->max_inputs))
            add_line(r, "node '%s' (%s::%s): %d inputs given, the op takes "
                     "%d to %d", x->name, x->domain, x->op, x->n_inputs,
                     def->min_inputs, def->max_inputs);
        if (x->n_outputs < def->min_outputs ||
            (def->max_outputs >= 0 && x->n_outputs > def->max_outputs))
            add_line(r, "node '%s' (%s::%s): %d outputs, the op has %d to %d",
                     x->name, x->domain, x->op, x->n_outputs,
                     def->min_outputs, def->max_outputs);
        for (int i = 0; i < x->n_inputs; i++)
            if (x->inputs[i] < 0 && i < def->min_inputs)
                add_line(r, "node '%s' (%s::%s): input %d is required but "
                         "absent", x->name, x->domain, x->op, i);
    }
}

static void reinfer(popc_graph *g, const int *order, int training, report *r)
{
    popc_view *outs = NULL;
    int cap = 0;

    for (int k = 0; k < g->n_nodes; k++) {
        int n = order[k], ran;
        const popci_node *x = &g->nodes[n];
        popc_status st;

        if (x->n_outputs > cap) {
            popc_view *p = popci_realloc(outs, (size_t)x->n_outputs * sizeof *p);
            if (!p) {
                add_line(r, "out of memory while inferring shapes");
                break;
            }
            outs = p;
            cap = x->n_outputs;
        }
        st = popci_graph_infer_node(g, n, training, outs, &ran);
        x = &g->nodes[n];
        if (st != POPC_OK) {
            const char *why = popc_last_error();
            /* the op's message normally names the node already */
            if (strstr(why, x->name))
                add_line(r, "%s", why);
            else
                add_line(r, "node '%s' (%s::%s): %s", x->name, x->domain,
                         x->op, why);
            continue;
        }
        if (!ran)
            continue;
        for (int j = 0; j < x->n_outputs; j++) {
            popc_view *have = &g->values[x->outputs[j]].info;
            char a[128], b[128];

            if (have->dtype == POPC_DTYPE_UNDEFINED) {
                *have = outs[j];
                continue;
            }
            if (popci_view_same(have, &outs[j]))
                continue;
            popc_view_describe(have, a, sizeof a);
            popc_view_describe(&outs[j], b, sizeof b);
            add_line(r, "node '%s' (%s::%s): output %d ('%s') was recorded as "
                     "%s but its inputs now give %s; a weight or input "
                     "changed shape after the node was added", x->name,
                     x->domain, x->op, j, g->values[x->outputs[j]].name, a,
                     b);
        }
    }
    free(outs);
}

static void check_updates(const popc_graph *g, report *r)
{
    for (int i = 0; i < g->n_updates; i++) {
        const popci_value *w = &g->values[g->updates[i].weight];
        const popci_value *v = &g->values[g->updates[i].value];
        char a[128], b[128];

        if (v->info.dtype == POPC_DTYPE_UNDEFINED ||
            popci_view_same(&w->info, &v->info))
            continue;
        popc_view_describe(&w->info, a, sizeof a);
        popc_view_describe(&v->info, b, sizeof b);
        add_line(r, "update of '%s' (%s) from '%s' (%s): dtype and shape "
                 "must match", w->name, a, v->name, b);
    }
}

popc_status popc_graph_verify(popc_graph *g, int training)
{
    report r;
    popci_sb unk = {0};
    int *order = NULL, n_unknown = 0, cyclic = 0;
    popc_status st;
    char *text;

    if (!g)
        return popc_set_error(POPC_EINVAL, "popc_graph_verify: graph is "
                              "NULL");
    memset(&r, 0, sizeof r);
    unknown_ops(g, &unk, &n_unknown);
    check_structure(g, &r);
    if (!(order = popci_malloc(((size_t)g->n_nodes + 1) * sizeof *order))) {
        popci_sb_free(&unk);
        popci_sb_free(&r.sb);
        return popc_set_error(POPC_ENOMEM, "popc_graph_verify: out of "
                              "memory");
    }
    if ((st = popci_graph_topo(g, order)) != POPC_OK) {
        if (st != POPC_ECOMPILE) {
            free(order);
            popci_sb_free(&unk);
            popci_sb_free(&r.sb);
            return st;
        }
        add_line(&r, "%s", popc_last_error());
        cyclic = 1;
    }
    if (!cyclic)
        reinfer(g, order, training, &r);
    free(order);
    check_updates(g, &r);
    if (r.dropped)
        add_line(&r, "(and %d more problems)", r.dropped);

    if (!n_unknown && !r.lines && !unk.oom && !r.sb.oom) {
        popci_sb_free(&unk);
        popci_sb_free(&r.sb);
        if ((st = popci_graph_check_foreign(g)) != POPC_OK)
            return st;
        if (training) {
            int loss;
            return popci_graph_final_loss(g, &loss);
        }
        return POPC_OK;
    }
    if (n_unknown) {
        text = popci_sb_take(&r.sb);
        st = popc_set_error(POPC_ECOMPILE, "Unsupported ops found in graph: "
                            "%s. Load a plugin that provides them: put its "
                            "directory in POPC_PLUGIN_PATH or call "
                            "popc_registry_load_path() (`popc plugins` lists "
                            "what is loaded)%s%s", unk.buf ? unk.buf : "",
                            text && text[0] ? "\n" : "", text ? text : "");
    } else {
        text = popci_sb_take(&r.sb);
        st = popc_set_error(POPC_ECOMPILE, "graph '%s' failed verification:"
                            "\n%s", g->name,
                            text ? text : "(out of memory)");
    }
    free(text);
    popci_sb_free(&unk);
    return st;
}
