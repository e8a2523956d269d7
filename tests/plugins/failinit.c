/* failinit.c - registers an op and an optimizer, then fails: nothing may
** stay registered. */
#include "popc/plugin.h"

static popc_status dummy_infer(popc_infer_ctx *ic)
{
    (void)ic;
    return POPC_OK;
}

static popc_status dummy_forward(const popc_kernel_ctx *kc)
{
    (void)kc;
    return POPC_OK;
}

static int n_state(const double *hypers)
{
    (void)hypers;
    return 0;
}

static popc_status step(const popc_optim_step_ctx *c)
{
    (void)c;
    return POPC_OK;
}

static const popc_op_def op = {
    .size = sizeof(popc_op_def), .name = "FailOp", .since_version = 1,
    .infer = dummy_infer, .forward = dummy_forward};

static const popc_optim_def optim = {
    .size = sizeof(popc_optim_def),
    .hyper_size = sizeof(popc_hyper_def), .name = "fail_sgd", .n_state = n_state,
    .step = step};

static popc_status failinit_init(const popc_host *h, popc_registrar *reg)
{
    popc_status st;

    if ((st = h->register_op(reg, &op)) != POPC_OK)
        return st;
    if ((st = h->register_optimizer(reg, &optim)) != POPC_OK)
        return st;
    return h->set_error(POPC_EINVAL, "failinit: deliberate failure after "
                        "registering");
}

POPC_PLUGIN_DEFINE(failinit, "0.0.1", "init fails", "MIT", failinit_init,
                   NULL)
