/* abi2_backend.c - a backend plugin built against popc 0.3.0 (ABI 2): the
** loader refuses it with a message that says to rebuild it, because
** popc_backend_def and popc_backend_config changed layout in ABI 3. */
#include "popc/plugin.h"

static popc_status nop_open(const popc_backend_config *cfg, void **ctx)
{
    (void)cfg;
    *ctx = NULL;
    return POPC_OK;
}

static void nop_close(void *ctx)
{
    (void)ctx;
}

static popc_status nop_compile(void *ctx, const popc_plan *plan, void **exe)
{
    (void)ctx;
    (void)plan;
    *exe = NULL;
    return POPC_OK;
}

static void nop_exe_free(void *ctx, void *exe)
{
    (void)ctx;
    (void)exe;
}

static const popc_backend_def old_backend = {
    .size = sizeof(popc_backend_def), .name = "abi2_backend",
    .open = nop_open, .close = nop_close, .compile = nop_compile,
    .exe_free = nop_exe_free};

static popc_status abi2_backend_init(const popc_host *h, popc_registrar *reg)
{
    return h->register_backend(reg, &old_backend);
}

POPC_PLUGIN_DEFINE(abi2_backend, "0.3.0", "a backend built against popc "
                   "0.3.0", "MIT", abi2_backend_init, NULL)
