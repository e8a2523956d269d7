/* graph_text.c - a graph as text (popc_graph_dump): its inputs and
** weights, every node with its inputs, outputs, attributes and
** annotations, its outputs and buffer updates. exe/ compares the listings
** of two graphs with it (exe_load.c).
**
** A layer above the core (encode/), reading the graph through the public
** queries and, for what they do not show (annotations, attributes),
** core/layer/graph_ids.h.
*/
#include "config.h"

#include <inttypes.h>

#include "popc/graph.h"
#include "core/layer/graph.h"
#include "core/layer/graph_ids.h"
#include "core/layer/strbuf.h"

static void dump_value_ref(popci_sb *sb, const popc_graph *g, int v)
{
    if (v < 0)
        popci_sb_printf(sb, "-");
    else if (v >= popc_graph_n_values(g))
        popci_sb_printf(sb, "%%<missing %d>", v);
    else
        popci_sb_printf(sb, "%%%s", popc_graph_value_name(g, v));
}

/* "transB=1 kernel_shape=[3, 3]": a node's attributes appended to sb. */
static void attrs_describe(popci_sb *sb, const popc_attr *a, int n)
{
    for (int i = 0; i < n; i++) {
        const popc_attr *x = &a[i];

        popci_sb_printf(sb, "%s%s=", i ? " " : "", x->name);
        switch (x->type) {
        case POPC_ATTR_INT:
            popci_sb_printf(sb, "%" PRId64, x->i);
            break;
        case POPC_ATTR_FLOAT:
            popci_sb_printf(sb, "%g", x->f);
            break;
        case POPC_ATTR_STRING:
            popci_sb_printf(sb, "\"%s\"", x->s);
            break;
        case POPC_ATTR_INTS:
        case POPC_ATTR_FLOATS:
        case POPC_ATTR_STRINGS:
            popci_sb_printf(sb, "[");
            for (int64_t k = 0; k < x->n; k++) {
                const char *sep = k ? ", " : "";
                if (x->type == POPC_ATTR_INTS)
                    popci_sb_printf(sb, "%s%" PRId64, sep, x->ints[k]);
                else if (x->type == POPC_ATTR_FLOATS)
                    popci_sb_printf(sb, "%s%g", sep, x->floats[k]);
                else
                    popci_sb_printf(sb, "%s\"%s\"", sep, x->strings[k]);
            }
            popci_sb_printf(sb, "]");
            break;
        case POPC_ATTR_TENSOR:
            popci_sb_view(sb, x->tensor);
            break;
        case POPC_ATTR_GRAPH:
            popci_sb_printf(sb, "graph '%s' (%d nodes)",
                            popc_graph_name(x->graph),
                            popc_graph_n_nodes(x->graph));
            break;
        }
    }
}

static void dump_annot(popci_sb *sb, const popci_annot_rec *a)
{
    int any = 0;

#define SEP() popci_sb_printf(sb, any++ ? ", " : "  [")
    if (a->block) {
        SEP();
        popci_sb_printf(sb, "block %s", a->block);
    }
    if (a->ipu >= 0) {
        SEP();
        popci_sb_printf(sb, "ipu %d", a->ipu);
    }
    if (a->stage >= 0) {
        SEP();
        popci_sb_printf(sb, "stage %d", a->stage);
    }
    if (a->phase >= 0) {
        SEP();
        popci_sb_printf(sb, "phase %d", a->phase);
    }
    if (a->recompute > 0) {
        SEP();
        popci_sb_printf(sb, "recompute");
    }
    if (a->available_memory > 0) {
        SEP();
        popci_sb_printf(sb, "available memory %g", a->available_memory);
    }
#undef SEP
    if (any)
        popci_sb_printf(sb, "]");
}

popc_status popc_graph_dump(const popc_graph *g, char **text)
{
    static const char *const kinds[] = {"?", "input", "init", "const",
                                        "value"};
    popci_sb sb = {0};
    popc_view out;

    if (!text)
        return popc_set_error(POPC_EINVAL, "popc_graph_dump: out is NULL");
    *text = NULL;
    if (!g)
        return popc_set_error(POPC_EINVAL, "popc_graph_dump: graph is NULL");
    popci_sb_printf(&sb, "graph '%s': %d inputs, %d outputs, %d nodes, %d "
                    "values\n", popc_graph_name(g), popc_graph_n_inputs(g),
                    popc_graph_n_outputs(g), popc_graph_n_nodes(g),
                    popc_graph_n_values(g));
    for (int v = 0; v < popc_graph_n_values(g); v++) {
        popci_value_rec r;
        const popci_value_rec *x = &r;

        popci_graph_value_rec(g, v, &r);
        if (x->kind == POPC_VALUE_NODE_OUTPUT)
            continue;
        popci_sb_printf(&sb, "  %-6s %%%s: ", kinds[x->kind], x->name);
        popci_sb_view(&sb, &x->info);
        if (x->kind == POPC_VALUE_INITIALIZER)
            popci_sb_printf(&sb, x->trainable ? " trainable" : " buffer");
        popci_sb_printf(&sb, "\n");
    }
    for (int n = 0; n < popc_graph_n_nodes(g); n++) {
        popci_node_rec r;
        const popci_node_rec *x = &r;

        popci_graph_node_rec(g, n, &r);
        popci_sb_printf(&sb, "  node %d '%s' %s::%s@%d (", n, x->name,
                        x->domain, x->op, x->version);
        for (int i = 0; i < x->n_inputs; i++) {
            if (i)
                popci_sb_printf(&sb, ", ");
            dump_value_ref(&sb, g, x->inputs[i]);
        }
        popci_sb_printf(&sb, ") -> (");
        for (int i = 0; i < x->n_outputs; i++) {
            popci_sb_printf(&sb, "%s", i ? ", " : "");
            dump_value_ref(&sb, g, x->outputs[i]);
            popci_sb_printf(&sb, " ");
            out = popc_graph_value_info(g, x->outputs[i]);
            popci_sb_view(&sb, &out);
        }
        popci_sb_printf(&sb, ")");
        if (x->n_attrs) {
            popci_sb_printf(&sb, " {");
            attrs_describe(&sb, x->attrs, x->n_attrs);
            popci_sb_printf(&sb, "}");
        }
        dump_annot(&sb, &x->annot);
        if (!popci_graph_node_def_c(g, n))
            popci_sb_printf(&sb, "  (unknown op)");
        popci_sb_printf(&sb, "\n");
    }
    for (int i = 0; i < popc_graph_n_outputs(g); i++) {
        popci_sb_printf(&sb, "  output ");
        dump_value_ref(&sb, g, popc_graph_output(g, i));
        popci_sb_printf(&sb, "\n");
    }
    for (int i = 0; i < popc_graph_n_updates(g); i++) {
        int weight = -1, value = -1;

        if (popc_graph_update(g, i, &weight, &value) != POPC_OK)
            break; /* i is in range: never */
        popci_sb_printf(&sb, "  update ");
        dump_value_ref(&sb, g, weight);
        popci_sb_printf(&sb, " <- ");
        dump_value_ref(&sb, g, value);
        popci_sb_printf(&sb, "\n");
    }
    if (!(*text = popci_sb_take(&sb)))
        return popc_set_error(POPC_ENOMEM, "popc_graph_dump: out of memory");
    return POPC_OK;
}
