/* offline.c - the compile-only target (PopTorch's useOfflineIpuTarget,
** ConnectionType.Never): the plan is mapped onto IPU version 1, 2 or 21
** with the same tile mapping, memory checks and cycle estimates as the
** ipumodel backend (backends/common), but nothing ever runs.
**
** The core refuses a run on an offline model before it reaches a backend
** (semantics §5); run_nodes gives PopTorch's text as well, so a caller
** driving the backend directly gets the same answer.
*/
#include "config.h"


#include "backends/common/tilemap.h"

#define WHO "offline"

typedef struct ctx {
    ipum_device dev;
} ctx;

static void off_close(void *vctx)
{
    ctx *c = vctx;

    ipum_host->free(c);
}

static popc_status off_open(const popc_backend_config *cfg, void **out)
{
    uint32_t size = cfg ? cfg->size : 0;
    ctx *c;
    popc_status st;

    *out = NULL;
    if (POPC_HAS_FIELD(popc_backend_config, size, log_cycles) &&
        cfg->log_cycles)
        return ipum_host->set_error(POPC_ECONFIG, "Cycle count logging is "
                                    "only supported on actual IPU hardware. "
                                    "(the offline backend never runs; use "
                                    "the ipumodel backend for cycle "
                                    "estimates)");
    if (!(c = ipum_host->alloc(sizeof *c)))
        return ipum_host->set_error(POPC_ENOMEM, WHO " backend: out of "
                                    "memory");
    if ((st = ipum_device_init(cfg, WHO, &c->dev)) != POPC_OK) {
        off_close(c);
        return st;
    }
    *out = c;
    return POPC_OK;
}

static popc_status off_compile(void *vctx, const popc_plan *plan,
                               void **out)
{
    ctx *c = vctx;
    ipum_map *m = NULL;
    popc_status st;

    *out = NULL;
    for (int k = 0; k < plan->n_nodes; k++)
        if (!popc_plan_node_at(plan, k)->op)
            return ipum_host->set_error(POPC_EBACKEND, WHO " backend: node "
                                        "%d '%s' has no op definition", k,
                                        popc_plan_node_at(plan, k)->name ?
                                            popc_plan_node_at(plan, k)->name :
                                            "(unnamed)");
    if ((st = ipum_map_build(&c->dev, plan, WHO, &m)) != POPC_OK)
        return st;
    *out = m;
    return POPC_OK;
}

static void off_exe_free(void *vctx, void *exe)
{
    (void)vctx;
    ipum_map_free(exe);
}

static popc_status off_run_nodes(void *vctx, void *exe,
                                 const popc_frame *frame, int first, int last)
{
    (void)vctx;
    (void)exe;
    (void)frame;
    (void)first;
    (void)last;
    return ipum_host->set_error(POPC_EBACKEND, "Trying to run a model on an "
                                "offline device (ConnectionType.Never): use "
                                "model.compile(inputs) instead of "
                                "model(inputs)");
}

static double off_cycles(void *vctx, void *exe, int first, int last)
{
    (void)vctx;
    return ipum_cost_cycles(exe, first, last);
}

static popc_status off_report_to(void *vctx, void *exe,
                                 popc_report_sink write, void *user)
{
    (void)vctx;
    return ipum_report_to(exe, WHO, NULL, write, user);
}

static const popc_backend_def offline_backend = {
    .size = sizeof(popc_backend_def),
    .name = "offline",
    .caps = POPC_BACKEND_MODELS_IPUS | POPC_BACKEND_STOCHASTIC_ROUNDING,
    .score = 10, /* compiles for IPUs without running */
    .open = off_open,
    .close = off_close,
    .compile = off_compile,
    .exe_free = off_exe_free,
    .run_nodes = off_run_nodes,
    .parallel = NULL,
    .cycles = off_cycles,
    .report_to = off_report_to,
};

static popc_status offline_init(const popc_host *h, popc_registrar *reg)
{
    ipum_host = h;
    return h->register_backend(reg, &offline_backend);
}

POPC_PLUGIN_DEFINE(offline, "0.1.0", "compile-only IPU target (version 1, "
                   "2 or 21): tile mapping and memory checks, never runs",
                   "MIT", offline_init, NULL)
