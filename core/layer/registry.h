/* layer/registry.h - which plugin registered a definition, for the layer
** that records the plugins a compiled model depends on (exe/: an
** executable names them with their versions, checked when it is loaded).
** The registry itself is core/registry_priv.h.
*/
#ifndef POPC_LAYER_REGISTRY_H
#define POPC_LAYER_REGISTRY_H

#include "popc/registry.h"

/* The kinds of definition a plugin registers. The registry keeps one
** table per kind; registry.c describes each kind once (its checks,
** duplicate rule, messages), so adding a kind adds a row there. */
typedef enum popci_kind {
    POPCI_KIND_OP,
    POPCI_KIND_OPTIM,
    POPCI_KIND_BACKEND,
    POPCI_KIND_COLLS,
    POPCI_KIND_KERNEL,
    POPCI_KIND_COUNT
} popci_kind;

/* The index of the plugin that registered def (a pointer a lookup of
** that kind handed out; the index popc_registry_plugin_at takes), or -1:
** none, or popc_registry_add_op. Caller holds no lock. */
int popci_registry_def_plugin(const popc_registry *r, popci_kind kind,
                              const void *def);

#endif /* POPC_LAYER_REGISTRY_H */
