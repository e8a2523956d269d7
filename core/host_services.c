/* host_services.c - the services plugins find by name (popc/services.h). */
#include "config.h"

#include <string.h>

#include "popc/services.h"
#include "core/host_priv.h"

typedef struct host_service {
    const char *name;
    void *fn;
} host_service;

/* Sorted by nothing: the table is short and looked up once per plugin. */
static const host_service services[] = {
    {POPC_SERVICE_PLAN_KERNEL_CTX, (void *)popci_plan_kernel_ctx},
    {POPC_SERVICE_NODE_SEED, (void *)popci_node_seed},
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
