/* plugin_abi.c - the plugin ABI as functions, so that abidw records it.
**
** The plugin ABI is a set of structs in popc/plugin.h, popc/services.h,
** popc/attrs.h, popc/types.h and popc/collectives.h that no library
** exports. scripts/abi-check compiles this file into a throwaway shared
** object whose one exported function per struct takes it, so that
** abidw writes every struct (and what it reaches) into abi/plugin.abi,
** and abidiff can compare them with the baseline. Add a struct here when
** the plugin ABI gains one.
*/
#include "popc/collectives.h"
#include "popc/kernel.h"
#include "popc/plugin.h"
#include "popc/services.h"

#define TAKE(T) \
    __attribute__((visibility("default"))) void popc_abi_##T(const T *p); \
    void popc_abi_##T(const T *p) { (void)p; }

TAKE(popc_plugin_info)
TAKE(popc_host)
TAKE(popc_op_def)
TAKE(popc_optim_def)
TAKE(popc_hyper_def)
TAKE(popc_backend_def)
TAKE(popc_backend_config)
TAKE(popc_collectives_def)
TAKE(popc_kernel_def)
TAKE(popc_infer_ctx)
TAKE(popc_kernel_ctx)
TAKE(popc_grad_ctx)
TAKE(popc_optim_step_ctx)
TAKE(popc_plan)
TAKE(popc_plan_slot)
TAKE(popc_plan_node)
TAKE(popc_frame)
TAKE(popc_cost)
TAKE(popc_view)
TAKE(popc_attr)
TAKE(popc_attrs)
TAKE(popc_plan_kernel_ctx_fn)
TAKE(popc_node_seed_fn)
TAKE(popc_get_proc_fn)
