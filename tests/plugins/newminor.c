/* newminor.c - a plugin of this ABI's major built by a later minor (more
** members at the ends of structs than this popc knows, an op flag bit it
** does not know): it loads, because every struct is read through its size
** and unknown flag bits are ignored. */
#include "popc/plugin.h"

static popc_status same_infer(popc_infer_ctx *ic)
{
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

static popc_status same_forward(const popc_kernel_ctx *kc)
{
    (void)kc;
    return POPC_OK;
}

/* a flag bit a later minor might define */
#define LATER_FLAG (1u << 30)

/* a later minor's popc_op_def: this one's, then a member this popc lacks */
typedef struct later_op_def {
    popc_op_def def;
    void *later_member;
} later_op_def;

static const later_op_def op = {
    {.size = sizeof(later_op_def), .domain = "test.minor",
     .name = "NewMinor", .since_version = 1, .min_inputs = 1,
     .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .flags = POPC_OP_SPLIT | LATER_FLAG, .infer = same_infer,
     .forward = same_forward},
    NULL};

static popc_status newminor_init(const popc_host *h, popc_registrar *reg)
{
    return h->register_op(reg, &op.def);
}

/* a later minor's popc_plugin_info: abi_minor beyond POPC_PLUGIN_ABI_MINOR */
static const popc_plugin_info info = {
    POPC_PLUGIN_ABI_MAJOR, sizeof(popc_plugin_info), "newminor", "0.0.1",
    "a later minor of this ABI", "MIT", newminor_init, NULL,
    POPC_PLUGIN_ABI_MINOR + 7};

POPC_PLUGIN_EXPORT const popc_plugin_info *newminor_LTX_popc_plugin_entry(void);
const popc_plugin_info *newminor_LTX_popc_plugin_entry(void)
{
    return &info;
}
