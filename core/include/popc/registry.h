/* registry.h - plugin loading and lookup of ops, optimizers, backends and
** collectives.
**
** The process has one default registry (popc_registry_global), loaded on
** first use from, in this order: modules linked into the program (static
** builds, see popc_registry_use_preloaded), each absolute directory of
** POPC_PLUGIN_PATH (colon separated; with its ops/ optim/ backends/
** collectives/ subdirectories), then the install's plugin directory
** ($(pkglibdir)/{ops,optim,backends,collectives}); the first plugin of a
** name wins, so the environment can stand in for an installed plugin.
** Directories added later with popc_registry_load_path come after.
** Nothing is ever loaded from the current directory implicitly. A broken,
** foreign or ABI-mismatched file is refused with a message naming it and
** the other plugins keep working; the first such error is kept in
** popc_registry_problems().
**
** Thread safety (since 0.3.0): every call on one registry may run while
** other threads load plugins into it or add ops. Look-ups take a read
** lock, loading and popc_registry_add_op a write lock (a plugin's init()
** runs outside it), so a look-up sees each plugin either not yet or
** completely. The definitions, names and popc_registry_problems texts
** handed out stay valid until popc_registry_free.
**
** The conventions of popc/status.h (ownership, status codes, threads)
** apply.
*/
#ifndef POPC_REGISTRY_H
#define POPC_REGISTRY_H

#include "popc/status.h"
#include "popc/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct popc_registry popc_registry; /* opaque */

/* An empty registry (no plugins loaded) in *out, owned by the caller. Free
** with popc_registry_free(), which unloads its modules in reverse load
** order. Since 0.1.0. Thread-safe. POPC_OK, POPC_EINVAL (out NULL),
** POPC_ENOMEM, POPC_EPLUGIN (libltdl cannot start). */
POPC_API POPC_NODISCARD popc_status popc_registry_new(popc_registry **out);
/* Unload r's modules (each plugin's fini first) and free r: every
** definition and name it handed out becomes invalid. Since 0.1.0. Not
** thread-safe: no other thread may use r during or after the call. Never
** free the registry of popc_registry_global. */
POPC_API void popc_registry_free(popc_registry *r); /* NULL-safe */

/* The process-wide registry, loaded from the default search path on first
** call (also loads preloaded modules of static builds). Borrowed; lives
** until exit (never free it). Problems with single plugins do not fail
** this call. Since 0.1.0. Thread-safe: the first call loads it once for
** all threads. POPC_OK, POPC_EINVAL (out NULL), or the code of
** popc_registry_new, returned by every later call too (*out NULL). */
POPC_API POPC_NODISCARD popc_status popc_registry_global(popc_registry **out);

/* Consent to foreign code named by files. A run file, an executable or an
** ONNX model can name a shared library and a symbol for popc to call (ops
** flagged POPC_OP_FOREIGN, such as popc::ForeignCall). popc compiles such
** nodes in graphs read from files (popc_graph_set_origin) only after the
** program or the user allowed it: `popc --allow-foreign`, or this call.
** Graphs the program builds itself are not affected. Off by default;
** process-wide; thread-safe (an atomic flag): other threads see a change
** at once. Since 0.2.0. */
POPC_API void popc_set_foreign_code_allowed(int allow);
/* Nonzero when foreign code named by files is allowed (see above).
** Since 0.2.0. Thread-safe (an atomic flag); process-wide. */
POPC_API int popc_foreign_code_allowed(void);

/* Load every plugin in dir (non-recursive; subdirectories ops/ optim/
** backends/ are scanned too), in file name order. Returns the first plugin
** error (POPC_EABI, POPC_EPLUGIN, POPC_EEXIST) after scanning everything,
** or POPC_ENOTFOUND when dir is not a directory; files that are not
** plugins are skipped quietly. A relative dir is taken from the current
** directory: this explicit call is the only way that ever happens.
** Since 0.1.0. Thread-safe: loads into one registry take turns, look-ups
** go on meanwhile. Also POPC_OK, POPC_EINVAL (r or dir NULL or empty,
** ':' in dir), POPC_EIO (no current directory), POPC_ENOMEM. */
POPC_API POPC_NODISCARD popc_status popc_registry_load_path(popc_registry *r,
    const char *dir);
/* Load one module file (path with or without extension .la/.so).
** POPC_ENOTFOUND when no such module exists, POPC_EPLUGIN when the file
** is not a popc plugin or cannot be loaded, POPC_EABI, POPC_EEXIST; also
** POPC_OK (a module already loaded into r is skipped), POPC_EINVAL (r or
** path NULL or empty), POPC_EIO (no current directory), POPC_ENOMEM.
** Since 0.1.0. Thread-safe, as popc_registry_load_path. */
POPC_API POPC_NODISCARD popc_status popc_registry_load_file(popc_registry *r,
    const char *path);
/* Load the default search path (preloaded modules, POPC_PLUGIN_PATH, then
** the install dir). Returns the first error; everything is scanned:
** POPC_OK, POPC_EINVAL (r NULL, or a relative POPC_PLUGIN_PATH entry,
** which is ignored), POPC_ENOTFOUND (an entry that is not a directory), or
** a plugin's (POPC_EABI, POPC_EPLUGIN, POPC_EEXIST, POPC_ENOMEM).
** Since 0.1.0. Thread-safe, as popc_registry_load_path. */
POPC_API POPC_NODISCARD popc_status popc_registry_load_default(
    popc_registry *r);

/* Static builds: modules linked in with libtool's -dlopen are found through
** the program's preload table. Call before the first registry is made:
**     #include <ltdl.h>
**     popc_registry_use_preloaded(lt_preloaded_symbols);
** (the program links $(LIBLTDL); calling LTDL_SET_PRELOADED_SYMBOLS()
** itself instead is equivalent). symbols is an lt_dlsymlist array, which
** must stay valid (it is static in the program). NULL is ignored.
** Since 0.1.0. Thread-safe (libltdl calls are serialised), but only loads
** of the default path that start afterwards see the modules. */
POPC_API void popc_registry_use_preloaded(const void *symbols);

/* Register definitions directly (used by tests and applications that embed
** ops without a module). The definition must outlive the registry.
** Since 0.1.0. Thread-safe (write lock). POPC_OK, POPC_EINVAL (r NULL or
** an incomplete definition), POPC_EEXIST (domain, name and version are
** registered), POPC_ENOMEM. */
POPC_API POPC_NODISCARD popc_status popc_registry_add_op(popc_registry *r,
    const popc_op_def *def);

/* Best definition of (domain, name) whose since_version <= version (0: the
** highest). NULL when absent. domain NULL means "ai.onnx". Borrowed,
** valid while r lives. Since 0.1.0. Thread-safe (read lock). */
POPC_API const popc_op_def *popc_registry_find_op(const popc_registry *r,
    const char *domain, const char *name, int version);
/* The op that plays `role` in the core's passes (popc_op_role): of the
** first name registered with the role, its newest version; NULL when no
** loaded op declares it or role is out of range. Borrowed: valid while r
** lives. Thread-safe (read lock). Since 0.3.0. */
POPC_API const popc_op_def *popc_registry_find_role(const popc_registry *r,
    popc_op_role role);
/* The optimizer definition named name; NULL when absent. Borrowed, valid
** while r lives. Since 0.1.0. Thread-safe (read lock). */
POPC_API const popc_optim_def *popc_registry_find_optimizer(
    const popc_registry *r, const char *name);
/* The backend definition named name; NULL when absent. Borrowed, valid
** while r lives. Since 0.1.0. Thread-safe (read lock). */
POPC_API const popc_backend_def *popc_registry_find_backend(
    const popc_registry *r, const char *name);
/* The loaded backend with the highest score (popc_backend_def.score > 0)
** whose capabilities include every POPC_BACKEND_* bit of `need` and none
** of `refuse`; the first registered wins a tie. NULL: none. How the core
** picks a stand-in without naming backends. Borrowed, valid while r
** lives. Thread-safe. Since 0.3.0. */
POPC_API const popc_backend_def *popc_registry_best_backend(
    const popc_registry *r, unsigned need, unsigned refuse);

/* Collectives (popc/collectives.h) by name; NULL when absent. Borrowed,
** valid while the registry lives. Since 0.3.0. Thread-safe (read lock). */
POPC_API const struct popc_collectives_def *popc_registry_find_collectives(
    const popc_registry *r, const char *name);
/* Number of collectives loaded into r (0 for NULL r). Since 0.3.0.
** Thread-safe; a load by another thread may add more. */
POPC_API int popc_registry_collectives_count(const popc_registry *r);
/* Collectives i in load order; NULL when out of range. Borrowed, valid
** while the registry lives. Since 0.3.0. Thread-safe (read lock). */
POPC_API const struct popc_collectives_def *popc_registry_collectives_at(
    const popc_registry *r, int i);

/* The core's host table (for embedding plugins in tests; its register_*
** functions refuse). Borrowed: static, never freed. Since 0.1.0.
** Thread-safe (the table never changes). */
POPC_API const popc_host *popc_registry_host(void);

/* Number of ops in r (0 for NULL r). Since 0.1.0. Thread-safe; a load by
** another thread may add more. */
POPC_API int popc_registry_op_count(const popc_registry *r);
/* Op i in registration order; NULL when out of range. Borrowed, valid
** while r lives. Since 0.1.0. Thread-safe (read lock). */
POPC_API const popc_op_def *popc_registry_op_at(const popc_registry *r, int i);

/* Number of kernels (popc/kernel.h) in r (0 for NULL r). Since 0.4.0.
** Thread-safe; a load by another thread may add more. */
POPC_API int popc_registry_kernel_count(const popc_registry *r);
/* Kernel i in registration order; NULL when out of range. Borrowed, valid
** while r lives. Since 0.4.0. Thread-safe (read lock). */
POPC_API const struct popc_kernel_def *popc_registry_kernel_at(
    const popc_registry *r, int i);

/* Loaded plugins, for `popc plugins`. */
typedef struct popc_plugin_record {
    const char *name;
    const char *version;
    const char *description;
    const char *path;
    int n_ops, n_optimizers, n_backends;
    int n_collectives;         /* since 0.3.0 */
} popc_plugin_record;
/* Number of plugins loaded into r (0 for NULL r). Since 0.1.0.
** Thread-safe; a load by another thread may add more. */
POPC_API int popc_registry_plugin_count(const popc_registry *r);
/* The record of plugin i in load order (all zero when out of range); its
** strings are borrowed, valid while r lives. Since 0.1.0. Thread-safe
** (read lock). */
POPC_API popc_plugin_record popc_registry_plugin_at(const popc_registry *r,
                                                    int i);
/* Names registered by plugin i, as "domain::Op@version", "optim:sgd",
** "backend:cpu", "collectives:mpi"; j < n_ops + n_optimizers + n_backends
** + n_collectives, then the plugin's kernels, "nn:winograd_f2
** (ai.onnx::Conv)" (since 0.4.0); NULL when out of range. Borrowed, valid while r lives.
** Since 0.1.0. Thread-safe (read lock). */
POPC_API const char *popc_registry_plugin_item(const popc_registry *r, int i,
                                               int j);

/* Messages of plugins refused while loading, one per line ("" if none).
** Borrowed: the text never changes and stays valid until
** popc_registry_free, even while other threads load into r; a later
** problem makes a new text (call again to see it) that starts with this
** one. The text holds up to 16 KiB of messages, then ends with
** "(further problems are only logged)"; the log (popc/log.h, WARN) has
** every one. Thread-safe (read lock). Since 0.1.0. */
POPC_API const char *popc_registry_problems(const popc_registry *r);

#ifdef __cplusplus
}
#endif
#endif /* POPC_REGISTRY_H */
