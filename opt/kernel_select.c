/* kernel_select.c - the kernel of every node, chosen once at compile
** (popc/kernel.h, docs/kernels.md): the candidates are the op's own
** forward, which scores 1, and each registered kernel of the node's
** (domain, op) whose supports() takes the node; the highest score wins,
** the reference on a tie, then the first registered. The plan keeps the
** choice as a derived definition: the op with the kernel's functions, so
** backends run it as any op.
*/
#include "config.h"

#include <string.h>

#include "popc/kernels.h"
#include "popc/log.h"
#include "popc/registry.h"
#include "core/layer/exec.h"
#include "core/layer/model.h"
#include "core/layer/plan.h"
#include "opt/opt_hooks.h"

/* kernelSelection's numbers (core/options/options_table.c) */
enum { SELECT_SCORE = 0, SELECT_REFERENCE = 1 };

static int kernel_of_op(const popc_kernel_def *k, const popc_op_def *op)
{
    return strcmp(k->op, op->name) == 0 && strcmp(k->domain, op->domain) == 0;
}

popc_status popci_opt_choose_kernel(const popc_infer_ctx *ic, int selection,
                                    popc_op_def *derived,
                                    const popc_kernel_def **kernel)
{
    const popc_op_def *op = ic->op;
    const popc_kernel_def *best = NULL;
    double best_score = 1.0; /* the op's own forward */
    popc_registry *reg;
    popc_status st;
    int n;

    *kernel = NULL;
    if (selection == SELECT_REFERENCE || !op || !op->name)
        return POPC_OK;
    if ((st = popc_registry_global(&reg)) != POPC_OK)
        return st;
    n = popc_registry_kernel_count(reg);
    for (int i = 0; i < n; i++) {
        const popc_kernel_def *k = popc_registry_kernel_at(reg, i);
        double s;

        if (!k || !kernel_of_op(k, op) || !k->supports(ic))
            continue;
        s = k->score(ic);
        popc_log(POPC_LOG_TRACE, "kernel choice of '%s': %s:%s scores %.3f",
                 ic->node_name, k->provider, k->name, s);
        if (s > best_score) {
            best = k;
            best_score = s;
        }
    }
    if (!best)
        return POPC_OK;
    *derived = *op;
    derived->forward = best->forward;
    if (best->prepare) {
        derived->prepare = best->prepare;
        derived->release = best->release;
    }
    derived->flags = (op->flags & ~POPC_OP_SPLIT) |
                     (best->flags & POPC_OP_SPLIT);
    *kernel = best;
    popc_log(POPC_LOG_DEBUG, "node '%s' (%s::%s) runs kernel %s:%s (score "
             "%.3f)", ic->node_name, op->domain, op->name, best->provider,
             best->name, best_score);
    return POPC_OK;
}

popc_status popc_model_node_kernel(const popc_model *m, int k,
                                   popc_node_kernel *out)
{
    const popci_exec *e = m ? popci_model_executor_c(m) : NULL;
    const popci_plan *p = e ? popci_exec_plan(e) : NULL;
    const popc_kernel_def *kd;

    if (!out || !m)
        return popc_set_error(POPC_EINVAL, "popc_model_node_kernel: %s is "
                              "NULL", out ? "m" : "out");
    if (!p)
        return popc_set_error(POPC_ESTATE, "popc_model_node_kernel: the "
                              "model is not compiled; compile it first");
    if (k < 0 || k >= p->pub.n_nodes)
        return popc_set_error(POPC_ENOTFOUND, "popc_model_node_kernel: node "
                              "%d is outside the plan's %d nodes", k,
                              p->pub.n_nodes);
    kd = p->node_kernel ? p->node_kernel[k] : NULL;
    out->node = p->nodes[k].name;
    out->domain = p->nodes[k].op->domain;
    out->op = p->nodes[k].op->name;
    out->provider = kd ? kd->provider : NULL;
    out->kernel = kd ? kd->name : NULL;
    return POPC_OK;
}
