/* hardware.c - poptorch.ipuHardwareIsAvailable and ipuHardwareVersion.
**
** popc drives no IPU hardware: its backends model IPUs (ipumodel) or
** compile for them (offline). The answers say so, as PopTorch's do on a
** machine without IPUs: not available, and asking for the version raises.
*/
#include "config.h"

#include "popc/helpers.h"

int popc_ipu_hardware_is_available(int num_ipus)
{
    (void)num_ipus;
    return 0;
}

popc_status popc_ipu_hardware_version(int *version)
{
    if (version)
        *version = -1;
    return popc_set_error(POPC_ENOTFOUND, "No IPU hardware is available: "
                          "popc's backends model IPUs (ipumodel) or compile "
                          "for them (offline, Options useOfflineIpuTarget) "
                          "without driving any; use ipuVersion to choose the "
                          "IPU version to model");
}
