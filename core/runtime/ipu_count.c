/* ipu_count.c - PopTorch's IPU count rule: a process reserves a power of
** 2 of IPUs, at most 64. n = IPUs per replica x replicas; above 64 is an
** error; a count that is not a power of 2 is an error unless
** autoRoundNumIPUs, which warns and reserves the next power of 2.
**
** The rule applies on backends that model IPU hardware
** (POPC_BACKEND_MODELS_IPUS: ipumodel, offline), not on the cpu
** reference. The options that describe the device itself (useIpuId,
** syncPattern, Training.setConvolutionDithering) are refused on the
** others, which would ignore them.
*/
#include "config.h"

#include "popc/log.h"
#include "core/runtime/model_priv.h"
#include "core/options/options_priv.h"

#define MAX_IPUS_PER_PROCESS 64

popc_status popci_ipu_count(const popc_options *o, const popc_backend_def *be,
                            int ipus_per_replica, int64_t replicas,
                            int64_t *reserved)
{
    int64_t n = (int64_t)ipus_per_replica * replicas, p = 1;

    *reserved = n;
    if (!(be->caps & POPC_BACKEND_MODELS_IPUS))
        return POPC_OK;
    if (n > MAX_IPUS_PER_PROCESS)
        return popc_set_error(POPC_EINVAL, "Too many IPUs requested (%lld). "
                              "Experiments that need more than 64 IPUs "
                              "require distributed execution.", (long long)n);
    while (p < n)
        p *= 2;
    if (p == n)
        return POPC_OK;
    if (!popci_opt_bool(o, POPCI_O_autoRoundNumIPUs))
        return popc_set_error(POPC_EINVAL, "The model specifies the use of "
                              "%lld IPUs, however PopTorch must reserve a "
                              "minimum of %lld in order to allow the model "
                              "to run, because PopTorch must reserve a power "
                              "of 2 or maximum of 64 IPUs per process. Please "
                              "reconfigure your model to use a different "
                              "number of IPUs or set poptorch.Options()."
                              "autoRoundNumIPUs(True).", (long long)n,
                              (long long)p);
    popc_log(POPC_LOG_WARN, "The model specifies the use of %lld IPUs; "
             "autoRoundNumIPUs: reserving %lld (a power of 2), %lld of them "
             "idle", (long long)n, (long long)p, (long long)(p - n));
    *reserved = p;
    return POPC_OK;
}

int popci_use_ipu_id(const popc_options *o)
{
    if (!popci_opt_is_set(o, POPCI_O_useIpuId) ||
        popci_opt_is_none(o, POPCI_O_useIpuId))
        return -1;
    return (int)popci_opt_int(o, POPCI_O_useIpuId);
}

popc_status popci_ipu_device_options(const popc_options *o,
                                     const popc_backend_def *be)
{
    const char *name = NULL;

    if (be->caps & POPC_BACKEND_MODELS_IPUS)
        return POPC_OK;
    if (popci_use_ipu_id(o) >= 0)
        name = "useIpuId";
    else if (popci_opt_int(o, POPCI_O_syncPattern) != POPC_SYNC_FULL)
        name = "syncPattern";
    else if (popci_opt_bool(o, POPCI_O_Training_setConvolutionDithering))
        name = "Training.setConvolutionDithering";
    if (!name)
        return POPC_OK;
    return popc_set_error(POPC_ECONFIG, "%s: the %s backend models no "
                          "IPU device (device ids, synchronisation, tile "
                          "layout); use the ipumodel or offline backend, or "
                          "leave %s at its default", name, be->name, name);
}
