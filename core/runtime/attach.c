/* attach.c - detaching a compiled model from its device and attaching it
** again (PopTorch's detachFromDevice / attachToDevice, semantics §5).
**
** popc's devices are backends in this process, so "attached" is the state
** in which the device copy of the weights is the one in use; detaching
** hands the device back after saving what only the device had.
*/
#include "config.h"

#include "popc/model.h"
#include "core/runtime/model_priv.h"
#include "core/options/options_priv.h"

static int offline(const popc_model *m)
{
    return popci_opt_int(m->opts, POPCI_O_connectionType) ==
           POPC_CONNECTION_NEVER;
}

popc_status popc_model_detach_from_device(popc_model *m)
{
    popc_status st;

    if ((st = popci_model_require_compiled(m)) != POPC_OK)
        return st;
    if (m->detached || offline(m))
        return popc_set_error(POPC_ESTATE, "Device is not attached");
    /* Training changed weights and optimizer state on the device only. */
    if (m->training && (st = popci_model_sync_host(m)) != POPC_OK)
        return st;
    m->detached = 1;
    return POPC_OK;
}

popc_status popc_model_attach_to_device(popc_model *m)
{
    popc_status st;

    if ((st = popci_model_require_compiled(m)) != POPC_OK)
        return st;
    if (offline(m))
        return popc_set_error(POPC_ESTATE, "Trying to attach to an offline "
                              "device (ConnectionType.Never)");
    if (!m->detached)
        return popc_set_error(POPC_ESTATE, "Device is already attached");
    popci_model_push_weights(m);
    m->host_dirty = 0;
    m->detached = 0;
    return POPC_OK;
}

int popc_model_is_attached(const popc_model *m)
{
    return m && m->exec && !m->detached && !offline(m);
}
