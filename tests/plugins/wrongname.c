/* wrongname.c - the module file is wrongname.so but the plugin calls
** itself 'rightname'. The entry keeps the file's _LTX_ prefix (as a plugin
** renamed by hand would not), so the loader reaches the name check. */
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
    .size = sizeof(popc_op_def), .name = "WrongNameOp", .since_version = 1,
    .infer = dummy_infer, .forward = dummy_forward};

static popc_status wrongname_init(const popc_host *h, popc_registrar *reg)
{
    return h->register_op(reg, &op);
}

static const popc_plugin_info info = {
    POPC_PLUGIN_ABI_MAJOR, sizeof(popc_plugin_info), "rightname", "0.0.1",
    "name does not match the file", "MIT", wrongname_init, NULL,
    POPC_PLUGIN_ABI_MINOR};

POPC_PLUGIN_EXPORT const popc_plugin_info *
wrongname_LTX_popc_plugin_entry(void);
const popc_plugin_info *wrongname_LTX_popc_plugin_entry(void)
{
    return &info;
}
