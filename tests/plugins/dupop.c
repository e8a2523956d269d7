/* dupop.c - registers ai.onnx::Twice@1 (which 'good' also registers), an op
** of its own, and that op a second time: duplicates are skipped, the rest
** is kept. */
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

static const popc_op_def ops[] = {
    {.size = sizeof(popc_op_def), .name = "Twice", .since_version = 1,
     .infer = dummy_infer, .forward = dummy_forward, .doc = "dupop"},
    {.size = sizeof(popc_op_def), .name = "DupOnly", .since_version = 1,
     .infer = dummy_infer, .forward = dummy_forward, .doc = "dupop"},
    {.size = sizeof(popc_op_def), .name = "DupOnly", .since_version = 1,
     .infer = dummy_infer, .forward = dummy_forward, .doc = "dupop again"},
};

static popc_status dupop_init(const popc_host *h, popc_registrar *reg)
{
    popc_status st;

    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if ((st = h->register_op(reg, &ops[i])) != POPC_OK)
            return st;
    return POPC_OK;
}

POPC_PLUGIN_DEFINE(dupop, "0.0.1", "duplicates an op", "MIT", dupop_init,
                   NULL)
