/* pass_fold.c - constant folding: a node whose inputs are all constants
** is computed once, at compile, on the ops' reference kernels
** (popc_graph_eval of a one-node graph), and its outputs become
** constants. Ops that are random, host-run, losses, never-folded or hold
** subgraphs stay, as do results too large to be worth keeping
** (FOLD_LIMIT). Weights are not constants, so nothing that reads one is
** folded: it stays updatable.
*/
#include "config.h"

#include <stdio.h>

#include "opt/opt_priv.h"

/* Largest result folded: a folded value lives as long as the model. */
#define FOLD_LIMIT ((int64_t)16 << 20)
#define MAX_IO 16

static int foldable(const opt_ctx *c, int n)
{
    const char *d = popc_graph_node_domain(c->g, n);
    const popc_op_def *def =
        popc_registry_find_op(c->reg, d && *d ? d : "ai.onnx",
                              popc_graph_node_op(c->g, n),
                              popc_graph_node_version(c->g, n));
    popc_attrs at = popc_graph_node_attrs(c->g, n);
    int ni = popc_graph_node_n_inputs(c->g, n);
    int no = popc_graph_node_n_outputs(c->g, n), any = 0;

    if (!def || c->taken[n] || ni > MAX_IO || no > MAX_IO || no == 0 ||
        (def->flags & (POPC_OP_RANDOM | POPC_OP_HOST | POPC_OP_LOSS |
                       POPC_OP_NOFOLD | POPC_OP_FOREIGN)))
        return 0;
    for (int a = 0; a < at.n; a++)
        if (at.items[a].type == POPC_ATTR_GRAPH)
            return 0;
    for (int i = 0; i < ni; i++) {
        int v = popc_graph_node_input(c->g, n, i);

        if (v < 0)
            continue;
        if (!opt_constant(c, v))
            return 0;
        any = 1;
    }
    for (int o = 0; o < no; o++) {
        popc_view v = popc_graph_value_info(c->g, opt_output(c, n, o));
        int64_t bytes = popc_view_numel(&v) * (int64_t)popc_dtype_size(
                                                  v.dtype);

        if (v.dtype == POPC_DTYPE_UNDEFINED || bytes > FOLD_LIMIT)
            return 0;
    }
    return any;
}

static popc_status fold_node(opt_ctx *c, int n)
{
    popc_graph *tg = NULL;
    int ni = popc_graph_node_n_inputs(c->g, n);
    int no = popc_graph_node_n_outputs(c->g, n);
    int ins[MAX_IO], outs[MAX_IO];
    popc_tensor *res[MAX_IO] = {0};
    popc_attrs at = popc_graph_node_attrs(c->g, n);
    popc_status st;

    if ((st = popc_graph_new("fold", &tg)) != POPC_OK)
        return st;
    for (int i = 0; i < ni; i++) {
        int v = popc_graph_node_input(c->g, n, i);

        ins[i] = -1;
        if (v >= 0 &&
            (st = popc_graph_add_constant(
                 tg, NULL, (popc_tensor *)opt_constant(c, v), &ins[i])) !=
                POPC_OK)
            goto out;
    }
    if ((st = popc_graph_add_node(tg, popc_graph_node_domain(c->g, n),
                                  popc_graph_node_op(c->g, n),
                                  popc_graph_node_version(c->g, n), ins, ni,
                                  outs, no, at.items, at.n,
                                  popc_graph_node_name(c->g, n), NULL)) !=
            POPC_OK ||
        (st = popc_graph_eval(tg, NULL, 0, outs, no, res, 0, 0)) != POPC_OK)
        goto out;
    for (int o = 0; o < no && st == POPC_OK; o++) {
        int old = opt_output(c, n, o), id;
        const char *name = popc_graph_value_name(c->g, old);
        char spare[600];

        if ((st = popc_graph_add_constant(c->g, NULL, res[o], &id)) !=
            POPC_OK)
            break;
        st = popc_graph_replace_uses(c->g, old, id);
        /* the constant takes the folded value's name (outputs keep
        ** theirs) */
        if (st == POPC_OK && name) {
            char keep[512];

            snprintf(keep, sizeof keep, "%s", name);
            snprintf(spare, sizeof spare, "%s/folded", keep);
            if ((st = popc_graph_set_value_name(c->g, old, spare)) ==
                POPC_OK)
                st = popc_graph_set_value_name(c->g, id, keep);
        }
    }
    c->taken[n] = 1;
out:
    for (int o = 0; o < no; o++)
        popc_tensor_free(res[o]);
    popc_graph_free(tg);
    return st;
}

popc_status opt_fold_constants(opt_ctx *c, int *rewrites)
{
    popc_status st;

    /* in id order, a node's constant inputs may come from a fold made
    ** earlier in this sweep: is opt_constant of the new value */
    for (int n = 0; n < c->n_nodes; n++) {
        if (!foldable(c, n))
            continue;
        if ((st = fold_node(c, n)) != POPC_OK)
            return st;
        ++*rewrites;
    }
    return POPC_OK;
}
