/* abi2.h - the adapter that keeps plugins built against popc 0.2 and
** 0.3 (plugin ABI 2) loading: their op and optimizer definitions are
** wrapped, their contexts converted. ABI 2 backends and collectives are
** refused with a message that says to rebuild them. The core calls it
** through popci_compat_abi2 (core/layer/abi_compat.h), which
** lib/layers.c names.
*/
#ifndef POPC_COMPAT_ABI2_H
#define POPC_COMPAT_ABI2_H

#include "core/layer/abi_compat.h"

#define POPCI_ABI2_MAJOR 2u

/* POPC_OK when an ABI 2 plugin may register `kind` (ops, optimizers);
** otherwise POPC_EABI with a message naming path and the fix. */
popc_status popci_abi2_accepts(popci_kind kind, const char *path);

/* Turns *def, an ABI 2 definition copied into its entry, into one of
** this ABI whose functions convert the contexts and call the plugin's
** own, kept in *origin. Fails only with POPC_ENOMEM (*def unchanged). */
popc_status popci_abi2_adapt(popci_kind kind, void *def, const void **origin);

/* Frees what popci_abi2_adapt kept (NULL: nothing). */
void popci_abi2_forget(const void *origin);

/* Makes h (a copy of the host table) the one ABI 2 plugins get: it says
** ABI 2, and its gradient-building functions take ABI 2 grad contexts.
** h must live as long as the process. */
void popci_abi2_host_patch(popc_host *h);

/* The table lib/layers.c hands the core as popci_layer_abi_compat. */
extern const popci_abi_compat popci_compat_abi2;

#endif /* POPC_COMPAT_ABI2_H */
