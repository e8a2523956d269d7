/* abi2_priv.h - the adapter that keeps plugins built against popc 0.2 and
** 0.3 (plugin ABI 2) loading: their op and optimizer definitions are
** wrapped, their contexts converted. ABI 2 backends and collectives are
** refused with a message that says to rebuild them.
*/
#ifndef POPC_ABI2_PRIV_H
#define POPC_ABI2_PRIV_H

#include "core/registry_priv.h"

#define POPCI_ABI2_MAJOR 2u

/* POPC_OK when an ABI 2 plugin may register `kind` (ops, optimizers);
** otherwise POPC_EABI with a message naming path and the fix. */
popc_status popci_abi2_accepts(popci_kind kind, const char *path);

/* Turns e, an ABI 2 definition copied into its entry, into one of this
** ABI whose functions convert the contexts and call the plugin's own,
** kept in e->origin. Fails only with POPC_ENOMEM (e unchanged). */
popc_status popci_abi2_adapt(popci_kind kind, popci_entry *e);

/* Frees what popci_abi2_adapt kept for e; a no-op for other entries. */
void popci_abi2_forget(popci_entry *e);

/* Makes h (a copy of the host table) the one ABI 2 plugins get: it says
** ABI 2, and its gradient-building functions take ABI 2 grad contexts.
** h must live as long as the process. */
void popci_abi2_host_patch(popc_host *h);

#endif /* POPC_ABI2_PRIV_H */
