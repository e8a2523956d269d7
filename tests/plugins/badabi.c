/* badabi.c - a plugin built for a future ABI (99): must be refused before
** its init runs. Written out by hand because POPC_PLUGIN_DEFINE always
** stamps the current ABI. */
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

static const popc_op_def op = {
    .size = sizeof(popc_op_def), .name = "BadAbiOp", .since_version = 1,
    .infer = dummy_infer, .forward = dummy_forward};

static popc_status badabi_init(const popc_host *h, popc_registrar *reg)
{
    return h->register_op(reg, &op);
}

static const popc_plugin_info info = {
    99u, sizeof(popc_plugin_info), "badabi", "0.0.1", "future ABI", "MIT",
    badabi_init, NULL, 0};

POPC_PLUGIN_EXPORT const popc_plugin_info *badabi_LTX_popc_plugin_entry(void);
const popc_plugin_info *badabi_LTX_popc_plugin_entry(void)
{
    return &info;
}
