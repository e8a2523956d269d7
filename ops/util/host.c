/* host.c - see host.h. */
#include "config.h"

#include "ops/util/host.h"

opu_services opu_svc;

static popc_status missing(const popc_host *host, const char *plugin,
                           const char *name)
{
    return host->set_error(POPC_EUNSUPPORTED, "plugin '%s': the host has no "
                           "service '%s' (popc/services.h); load it into "
                           "the libpopc it was built with, or a later one",
                           plugin, name);
}

/* One service into its typed slot (written only when it changes: see
** host.h), or the init() failure naming it. */
#define LOOK_UP(slot, name)                                                 \
    do {                                                                    \
        __typeof__(opu_svc.slot) fn_ =                                      \
            (__typeof__(opu_svc.slot))host->get_proc(name);                 \
        if (!fn_)                                                           \
            return missing(host, plugin, name);                             \
        if (opu_svc.slot != fn_)                                            \
            opu_svc.slot = fn_;                                             \
    } while (0)

popc_status opu_init(const popc_host *host, const char *plugin)
{
    if (!POPC_HAS_FIELD(popc_host, host->size, get_proc) || !host->get_proc)
        return host->set_error(POPC_EUNSUPPORTED, "plugin '%s': the host "
                               "has no get_proc (libpopc before 0.4.0); "
                               "load it into libpopc 0.4.0 or later",
                               plugin);
    LOOK_UP(f2h, POPC_SERVICE_F32_TO_F16);
    LOOK_UP(h2f, POPC_SERVICE_F16_TO_F32);
    LOOK_UP(f2h_n, POPC_SERVICE_F32_TO_F16_N);
    LOOK_UP(h2f_n, POPC_SERVICE_F16_TO_F32_N);
    LOOK_UP(f2h_stochastic_n, POPC_SERVICE_F32_TO_F16_STOCHASTIC_N);
    LOOK_UP(have_f16c, POPC_SERVICE_HAVE_F16C);
    LOOK_UP(dims_format, POPC_SERVICE_DIMS_FORMAT);
    LOOK_UP(op_error, POPC_SERVICE_OP_ERROR);
    LOOK_UP(op_dtype_error, POPC_SERVICE_OP_DTYPE_ERROR);
    return POPC_OK;
}

popc_status opu_register_ops(const popc_host *host, popc_registrar *reg,
                             const popc_op_def *defs, int n)
{
    popc_status st;

    for (int i = 0; i < n; i++)
        if ((st = host->register_op(reg, &defs[i])) != POPC_OK)
            return st;
    return POPC_OK;
}
