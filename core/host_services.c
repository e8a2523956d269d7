/* host_services.c - the services plugins find by name (popc/services.h). */
#include "config.h"

#include <string.h>

#include "popc/kernel.h"
#include "popc/services.h"
#include "popc/tensor.h"
#include "core/host_priv.h"
#include "core/op_errors.h"
#include "core/registry_priv.h"
#include "core/tensor_priv.h"
#include "core/graph/half_simd.h"

typedef struct host_service {
    const char *name;
    void *fn;
} host_service;

/* An entry whose function must have the service's type: the conditional
** makes the compiler compare them. */
#define SERVICE(name, type, fn) {name, (void *)(1 ? (fn) : (type)0)}

/* Sorted by nothing: the table is short and looked up once per plugin. */
static const host_service services[] = {
    SERVICE(POPC_SERVICE_F32_TO_F16, popc_f32_to_f16_fn, popc_f32_to_f16),
    SERVICE(POPC_SERVICE_F16_TO_F32, popc_f16_to_f32_fn, popc_f16_to_f32),
    SERVICE(POPC_SERVICE_F32_TO_F16_N, popc_f32_to_f16_n_fn, popci_f32_to_f16_n),
    SERVICE(POPC_SERVICE_F16_TO_F32_N, popc_f16_to_f32_n_fn, popci_f16_to_f32_n),
    SERVICE(POPC_SERVICE_F32_TO_F16_STOCHASTIC_N, popc_f32_to_f16_stochastic_n_fn, popci_f32_to_f16_stochastic_n),
    SERVICE(POPC_SERVICE_HAVE_F16C, popc_have_f16c_fn, popci_have_f16c),
    SERVICE(POPC_SERVICE_DIMS_FORMAT, popc_dims_format_fn, popci_dims_str),
    SERVICE(POPC_SERVICE_OP_ERROR, popc_op_error_fn, popci_op_error),
    SERVICE(POPC_SERVICE_OP_DTYPE_ERROR, popc_op_dtype_error_fn, popci_op_dtype_error),
    SERVICE(POPC_SERVICE_PLAN_KERNEL_CTX, popc_plan_kernel_ctx_fn, popci_plan_kernel_ctx),
    SERVICE(POPC_SERVICE_NODE_SEED, popc_node_seed_fn, popci_node_seed),
    SERVICE(POPC_SERVICE_REGISTER_KERNEL, popc_register_kernel_fn, popci_registry_stage_kernel),
    {NULL, NULL},
};

void *popci_host_get_proc(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; services[i].name; i++)
        if (strcmp(services[i].name, name) == 0)
            return services[i].fn;
    return NULL;
}
