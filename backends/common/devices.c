/* devices.c - useIpuId on the IPU model: the device list of a POD16 (see
** tilemap.h). gc-info numbers the devices of a system by size: first the
** single IPUs, then the pairs, then the groups of 4, 8 and 16, each group
** of one size covering the IPUs in order.
*/
#include "config.h"

#include "backends/common/tilemap.h"

/* IPUs in the modelled system. */
#define POD_IPUS 16

/* First id of the devices of `size` IPUs. */
static int first_id(int size)
{
    int id = 0;

    for (int s = 1; s < size; s *= 2)
        id += POD_IPUS / s;
    return id;
}

popc_status ipum_device_pick(ipum_device *dev, int needed, const char *who)
{
    int size = 1, id = dev->ipu_id;

    if (id < 0)
        return POPC_OK;
    while (size <= POD_IPUS && id >= first_id(size) + POD_IPUS / size)
        size *= 2;
    if (size > POD_IPUS)
        return ipum_host->set_error(
            POPC_ECONFIG, "useIpuId(%d): the %s backend has no device %d; "
            "its device list is a POD16's as gc-info numbers it: ids 0-15 "
            "are single IPUs, 16-23 pairs, 24-27 groups of 4, 28-29 groups "
            "of 8 and 30 all 16 IPUs",
            id, who, id);
    if (size != needed) {
        if (needed > POD_IPUS)
            return ipum_host->set_error(
                POPC_ECONFIG, "useIpuId(%d): the model reserves %d IPUs but "
                "the %s backend's largest device (id 30) has %d; drop "
                "useIpuId",
                id, needed, who, POD_IPUS);
        return ipum_host->set_error(
            POPC_ECONFIG, "useIpuId(%d): device %d has %d IPU%s but the model "
            "reserves %d (IPUs per replica x replicas, rounded up to a power "
            "of 2); use a device of %d IPUs: ids %d to %d",
            id, id, size, size == 1 ? "" : "s", needed, needed,
            first_id(needed), first_id(needed) + POD_IPUS / needed - 1);
    }
    dev->ipus = size;
    dev->first_ipu = (id - first_id(size)) * size;
    return POPC_OK;
}
