/* registry_priv.h - what registry.c (tables, staging, lookups) and loader.c
** (libltdl, scanning, ABI checks) share.
**
** Locking: a registry's own mutex serialises loading into it; loader.c's
** process-wide mutex serialises every lt_* call. Code that needs both takes
** the registry's first.
*/
#ifndef POPC_REGISTRY_PRIV_H
#define POPC_REGISTRY_PRIV_H

#include <pthread.h>
#include <stddef.h>

#include "popc/collectives.h"
#include "popc/kernel.h"
#include "popc/registry.h"
#include "core/layer/registry.h"

/* popci_kind and popci_registry_def_plugin are in core/layer/registry.h. */

/* A definition of any kind; each starts with its uint32_t size. */
typedef union popci_def {
    uint32_t size;
    popc_op_def op;
    popc_optim_def optim;
    popc_backend_def backend;
    popc_collectives_def colls;
    popc_kernel_def kernel;
} popci_def;

/* One loaded plugin module. Strings are owned copies; handle is an
** lt_dlhandle closed by popci_loader_close(). */
typedef struct popci_plugin {
    char *name, *version, *description, *path;
    void *handle;
    void (*fini)(void);
    int n_items_of[POPCI_KIND_COUNT];
    char **items;             /* popci_plugin_n_items names, by kind */
    popc_registrar *registrar;/* closed after init(); kept so a late
                              ** register_* call gets POPC_ESTATE */
} popci_plugin;

typedef struct popci_entry {
    popci_def def;            /* copied at the core's size */
    int plugin;               /* index into plugins, -1: popc_registry_add_op */
    /* For a definition adapted from an older ABI (abi2.c): the plugin's
    ** own definition, which the adapter calls. NULL otherwise. */
    const void *origin;
} popci_entry;

typedef struct popci_table {
    /* Entries are allocated one by one so the pointers that lookups hand
    ** out stay valid while the array grows. */
    popci_entry **entries;
    int n, cap;
} popci_table;

/* One version of the problems text. popc_registry_problems hands out
** text a reader may still use while another thread's load adds a
** problem, so a version is never changed nor freed before the registry:
** a new problem makes a new version. */
typedef struct popci_problems {
    struct popci_problems *prev;
    size_t len;
    char text[];              /* lines ending in '\n' */
} popci_problems;

/* The text stops growing here (each version is kept, so an unbounded
** text would cost memory quadratic in the problems); the log has all. */
#define POPCI_PROBLEMS_MAX 16384

static inline int popci_plugin_n_items(const popci_plugin *p)
{
    int n = 0;

    for (int k = 0; k < POPCI_KIND_COUNT; k++)
        n += p->n_items_of[k];
    return n;
}

struct popc_registry {
    /* Look-ups read-lock, loading plugins and adding ops write-lock: a
    ** look-up never sees an array being reallocated. Plugin init()
    ** runs outside the lock. */
    pthread_rwlock_t lock;
    /* One load (a directory scan, a file) at a time: the loader holds it
    ** across its look-ups and attaches. */
    pthread_mutex_t load_lock;
    int ltdl_ready;           /* this registry holds one lt_dlinit */
    popci_table tables[POPCI_KIND_COUNT];
    popci_plugin **plugins;
    int n_plugins, cap_plugins;
    popci_problems *problems; /* the newest version; NULL: none */
    int problems_full;        /* later problems are only logged */
};

/* ---- registry.c ----------------------------------------------------------- */

/* Runs info->init with a staging registrar and commits what it registered
** if it returns POPC_OK. On success the registry owns handle (closed by
** popc_registry_free). On failure nothing is registered and the caller
** closes handle. path names the module file in messages. Duplicates are
** skipped and reported as POPC_EEXIST after committing the rest. */
popc_status popci_registry_attach(popc_registry *r,
                                  const popc_plugin_info *info,
                                  const char *path, void *handle);

/* The entry holding def (a pointer a lookup handed out). */
static inline const popci_entry *popci_entry_of(const void *def)
{
    return (const popci_entry *)((const char *)def -
                                 offsetof(popci_entry, def));
}

/* Whether handle already belongs to one of r's plugins. */
int popci_registry_has_handle(const popc_registry *r, void *handle);

/* The names of r's backends, "'cpu', 'ipumodel'" ("none" when there is
** none), into buf (cut short to fit). For messages about an unknown one. */
void popci_registry_backend_names(const popc_registry *r, char *buf,
                                  size_t size);

/* The host service POPC_SERVICE_REGISTER_KERNEL (stages a kernel). */
popc_status popci_registry_stage_kernel(popc_registrar *g,
                                        const popc_kernel_def *d);

/* Appends popc_last_error() to the problems list and logs it at WARN. */
void popci_registry_problem(popc_registry *r);

/* The op playing `role` in the global registry (popc_registry_find_role)
** in *out, or POPC_ENOTFOUND with a message that names the role, what
** needed it (`why`) and the fix. */
popc_status popci_role_op(popc_op_role role, const char *why,
                          const popc_op_def **out);

/* ---- loader.c ------------------------------------------------------------- */

/* lt_dlinit / lt_dlexit, reference counted by libltdl, under the lock. */
popc_status popci_loader_init(void);
void popci_loader_exit(void);

/* lt_dlclose under the lock; NULL-safe. */
void popci_loader_close(void *handle);

/* Loads the modules the program linked in with libtool -dlopen (static
** builds); a no-op when there are none. Returns the first plugin error. */
popc_status popci_loader_load_preloaded(popc_registry *r);

#endif /* POPC_REGISTRY_PRIV_H */
