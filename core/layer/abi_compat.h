/* layer/abi_compat.h - the table by which a layer above the core keeps
** plugins of an older plugin ABI loading (compat/: ABI 2, popc 0.2 and
** 0.3). The loader accepts plugins of its major version; the registry
** gives them the host table it patched, asks it whether they may register
** a kind of definition, has it adapt each definition they register and
** lets it free what it kept. lib/layers.c defines popci_layer_abi_compat,
** as it defines the hooks of core/layer/hooks.h: a link-time table, so it
** holds in static builds too. The registry's side is core/registry.c.
*/
#ifndef POPC_LAYER_ABI_COMPAT_H
#define POPC_LAYER_ABI_COMPAT_H

#include "popc/plugin.h"
#include "core/layer/registry.h"

typedef struct popci_abi_compat {
    unsigned major;            /* the older ABI's major version */
    /* POPC_OK when its plugins may register `kind`; otherwise POPC_EABI
    ** with a message naming path and the fix. */
    popc_status (*accepts)(popci_kind kind, const char *path);
    /* Turn *def (a popc_op_def or popc_optim_def, as kind says), the
    ** plugin's definition copied at this ABI's size, into one of this ABI
    ** whose functions call the plugin's, kept in *origin. Fails only with
    ** POPC_ENOMEM (*def unchanged). */
    popc_status (*adapt)(popci_kind kind, void *def, const void **origin);
    /* Free what adapt kept (origin may be NULL). */
    void (*forget)(const void *origin);
    /* Make h (a copy of the host table, living as long as the process)
    ** the one its plugins get. */
    void (*host_patch)(popc_host *h);
} popci_abi_compat;

/* The adapter libpopc links in (lib/layers.c); NULL: none. */
extern const popci_abi_compat *const popci_layer_abi_compat;

/* What adapt kept for def, a definition the registry handed out (the
** definition pointer of a context); NULL for a definition of this ABI. */
const void *popci_registry_origin(const void *def);

#endif /* POPC_LAYER_ABI_COMPAT_H */
