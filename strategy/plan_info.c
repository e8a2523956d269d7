/* plan_info.c - the figures of a compiled model's plan (popc/plan_info.h):
** stages, phases, recomputation and activation memory.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "popc/plan_info.h"
#include "core/layer/alloc.h"
#include "core/layer/exec_report.h"
#include "core/layer/model.h"
#include "strategy/strategy_priv.h"

/* Distinct phases of a phased plan (0 otherwise). */
static int count_phases(const popci_plan *p)
{
    int max = -1, n = 0;
    unsigned char *seen;

    if (!popci_strategy_phased(&p->strategy))
        return 0;
    for (int k = 0; k < p->pub.n_nodes; k++)
        if (p->nodes[k].phase > max)
            max = p->nodes[k].phase;
    if (max < 0 || !(seen = popci_calloc((size_t)max + 1, 1)))
        return max + 1;
    for (int k = 0; k < p->pub.n_nodes; k++)
        if (p->nodes[k].phase >= 0)
            seen[p->nodes[k].phase] = 1;
    for (int i = 0; i <= max; i++)
        n += seen[i];
    free(seen);
    return n;
}

popc_status popc_model_get_plan_info(const popc_model *m,
                                     popc_plan_info *out)
{
    const popci_exec *e;
    const popci_plan *p;
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_model_get_plan_info: out "
                              "is NULL");
    memset(out, 0, sizeof *out);
    if ((st = popci_model_require_compiled(m)) != POPC_OK)
        return st;
    e = popci_model_executor_c(m);
    p = popci_exec_plan(e);
    out->n_ipus = p->pub.n_ipus;
    out->pipeline_stages = popci_plan_pipeline_stages(p);
    out->pipelined = popci_exec_n_phases(e) > 1;
    out->n_phases = count_phases(p);
    out->n_nodes = p->pub.n_nodes;
    out->n_forward = p->pub.n_forward;
    out->recomputed_nodes = p->n_recomputed;
    out->activation_bytes = (int64_t)p->arena_bytes;
    out->stored_bytes = (int64_t)p->stored_bytes;
    out->onchip_peak_bytes = (int64_t)p->onchip_peak;
    out->offchip_bytes = (int64_t)p->offchip_bytes;
    out->persistent_bytes = (int64_t)p->persistent_bytes;
    return POPC_OK;
}
