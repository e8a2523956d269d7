/* nohypersize.c - an optimizer with hyper-parameters but no hyper_size:
** refused, because the core could not index its hypers. */
#include "popc/plugin.h"

static int n_state(const double *hypers)
{
    (void)hypers;
    return 0;
}

static const char *state_name(const double *hypers, int index)
{
    (void)hypers;
    (void)index;
    return "";
}

static popc_status step(const popc_optim_step_ctx *c)
{
    (void)c;
    return POPC_OK;
}

static const popc_hyper_def hypers[] = {{"lr", 0.01, 0}};

static const popc_optim_def optim = {
    .size = sizeof(popc_optim_def), .name = "nohypersize", .n_hypers = 1,
    .hypers = hypers, .n_state = n_state, .state_name = state_name,
    .step = step};

static popc_status nohypersize_init(const popc_host *h, popc_registrar *reg)
{
    return h->register_optimizer(reg, &optim);
}

POPC_PLUGIN_DEFINE(nohypersize, "0.0.1", "optimizer without hyper_size",
                   "MIT", nohypersize_init, NULL)
