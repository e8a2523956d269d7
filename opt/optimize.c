/* optimize.c - the pass driver: runs the passes of a level in order,
** prunes what each one left dead, and is the layer's hook into a model's
** compile (core/layer/hooks.h). */
#include "config.h"

#include <string.h>

#include "opt/opt_hooks.h"
#include "opt/opt_priv.h"
#include "popc/log.h"

static const opt_pass passes[] = {
    {"constant folding", 1, 0, opt_fold_constants},
    {"Identity and Dropout removal", 1, 0, opt_drop_identities},
    {"BatchNormalization into Conv and Gemm", 1, 1, opt_fold_batchnorm},
    {"transposes and reshapes", 1, 0, opt_cancel_transposes},
    {"GELU recognition", 2, 0, opt_recognise_gelu},
    {"LayerNorm recognition", 2, 0, opt_recognise_layernorm},
    {"attention recognition", 2, 1, opt_recognise_attention},
    {"MatMul and bias Add into Gemm (training)", 2, 0, opt_linear_to_gemm},
    {"Conv, Gemm and MatMul fusion", 2, 1, opt_fuse_contractions},
    {"NCHWc blocked layouts", 2, 1, opt_block_layout},
    /* folding again: a BatchNorm folded into a constant weight */
    {"constant folding", 1, 0, opt_fold_constants},
};
#define N_PASSES ((int)(sizeof passes / sizeof passes[0]))

static popc_status run_pass(opt_ctx *c, const opt_pass *p, int *total)
{
    int made = 0, removed = 0;
    popc_status st;

    if ((st = opt_scan(c)) != POPC_OK || (st = p->run(c, &made)) != POPC_OK)
        return st;
    if (made == 0)
        return POPC_OK;
    if ((st = popc_graph_prune(c->g, &removed)) != POPC_OK)
        return st;
    popc_log(POPC_LOG_DEBUG, "graph optimization of '%s': %s made %d "
             "rewrites, %d nodes left the graph", popc_graph_name(c->g),
             p->name, made, removed);
    *total += made;
    return POPC_OK;
}

popc_status popc_graph_optimize(popc_graph *g, const popc_optimize_options *o,
                                int *rewrites)
{
    popc_optimize_options def = {.size = sizeof def, .level = 2};
    opt_ctx c;
    int total = 0;
    popc_status st = POPC_OK;

    if (rewrites)
        *rewrites = 0;
    if (!o)
        o = &def;
    if (!g || o->size < sizeof *o || o->level < 0 ||
        o->level > POPC_OPT_LEVEL_MAX || (o->n_keep > 0 && !o->keep))
        return popc_set_error(POPC_EINVAL, "popc_graph_optimize: %s",
                              !g ? "no graph"
                              : o->size < sizeof *o
                                  ? "options too small (set .size)"
                                  : o->n_keep > 0 && !o->keep
                                      ? "n_keep without keep"
                                      : "level must be 0, 1 or 2");
    memset(&c, 0, sizeof c);
    c.g = g;
    c.level = o->level;
    c.training = o->training;
    c.keep = o->keep;
    c.n_keep = o->n_keep;
    if ((st = popc_registry_global(&c.reg)) != POPC_OK)
        return st;
    for (int i = 0; i < N_PASSES && st == POPC_OK; i++)
        if (passes[i].level <= o->level &&
            !(passes[i].inference_only && o->training))
            st = run_pass(&c, &passes[i], &total);
    opt_ctx_free(&c);
    if (st == POPC_OK && total > 0)
        popc_log(POPC_LOG_INFO, "graph optimization of '%s' at level %d: %d "
                 "rewrites, %d nodes", popc_graph_name(g), o->level, total,
                 popc_graph_n_nodes(g));
    if (rewrites)
        *rewrites = total;
    return st;
}

static popc_status rewrite_graph(popc_graph *g, int level, int training,
                                 const char *const *keep, int n_keep)
{
    popc_optimize_options o = {.size = sizeof o, .level = level,
                               .training = training, .keep = keep,
                               .n_keep = n_keep};

    return popc_graph_optimize(g, &o, NULL);
}

const popci_model_hooks popci_opt_hooks = {
    .layer = "opt",
    .rewrite_graph = rewrite_graph,
    .choose_kernel = popci_opt_choose_kernel,
};
