/* loader.c - finding and opening plugin modules with the system libltdl.
**
** libltdl keeps process-global state and is not known to be thread-safe,
** so every lt_* call here runs under one mutex (gphoto2 does the same).
** Modules are only ever opened by absolute path: no lt_dlsetsearchpath,
** no bare names (libltdl would search LD_LIBRARY_PATH and friends), and
** nothing relative to the current directory unless the application itself
** passed a relative path. Directory entries that are not modules (sources,
** objects, text) are skipped quietly; a module that cannot be opened, has
** the wrong ABI or whose init fails is reported and the scan goes on.
*/
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <ltdl.h>

#include "popc/log.h"
#include "popc/registry.h"
#include "core/alloc_priv.h"
#include "core/graph/graph_priv.h"
#include "core/layer/abi_compat.h"
#include "core/registry_priv.h"

#ifndef POPC_PLUGINDIR
#error "POPC_PLUGINDIR must be defined by the build (Makefile.am)"
#endif

static pthread_mutex_t lt_lock = PTHREAD_MUTEX_INITIALIZER;
static int lt_users; /* lt_dlinit calls we made that are not yet undone */

/* The first error of a scan, reported after the whole scan. */
typedef struct scan_result {
    popc_status first;
    char message[2048];
} scan_result;

static void note(scan_result *res, popc_status st)
{
    if (st != POPC_OK && res->first == POPC_OK) {
        res->first = st;
        snprintf(res->message, sizeof res->message, "%s", popc_last_error());
    }
}

static popc_status scan_status(const scan_result *res)
{
    if (res->first != POPC_OK)
        return popc_set_error(res->first, "%s", res->message);
    return POPC_OK;
}

/* ---- libltdl lifetime ---------------------------------------------------- */

popc_status popci_loader_init(void)
{
    popc_status st = POPC_OK;

    pthread_mutex_lock(&lt_lock);
    if (lt_dlinit() != 0) {
        const char *e = lt_dlerror();
        st = popc_set_error(POPC_EPLUGIN, "libltdl: lt_dlinit failed: %s",
                            e ? e : "unknown error");
    } else {
        lt_users++;
    }
    pthread_mutex_unlock(&lt_lock);
    return st;
}

void popci_loader_exit(void)
{
    pthread_mutex_lock(&lt_lock);
    if (lt_users > 0) {
        lt_dlexit();
        lt_users--;
    }
    pthread_mutex_unlock(&lt_lock);
}

void popci_loader_close(void *handle)
{
    if (!handle)
        return;
    pthread_mutex_lock(&lt_lock);
    lt_dlclose(handle);
    pthread_mutex_unlock(&lt_lock);
}

void popc_registry_use_preloaded(const void *symbols)
{
    if (!symbols)
        return;
    pthread_mutex_lock(&lt_lock);
    /* The default list is read at the first lt_dlinit; if libltdl is
    ** already up, add the list to the live chain as well. */
    lt_dlpreload_default(symbols);
    if (lt_users > 0)
        lt_dlpreload(symbols);
    pthread_mutex_unlock(&lt_lock);
}

/* ---- file names ---------------------------------------------------------- */

static int is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int has_ext(const char *path, const char *ext)
{
    size_t n = strlen(path), e = strlen(ext);
    return n > e && strcmp(path + n - e, ext) == 0;
}

/* The module name a file must carry: basename without .la/.so/.a. */
static void module_basename(const char *path, char *buf, size_t size)
{
    const char *base = strrchr(path, '/');
    static const char *const exts[] = {".la", ".so", ".a", ".dylib", ".dll"};
    size_t n;

    base = base ? base + 1 : path;
    n = strlen(base);
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++)
        if (has_ext(base, exts[i])) {
            n -= strlen(exts[i]);
            break;
        }
    if (n >= size)
        n = size - 1;
    memcpy(buf, base, n);
    buf[n] = '\0';
}

/* Whether stem.la or stem.so exists: only then is stem worth opening. */
static int module_file_exists(const char *stem)
{
    char buf[PATH_MAX];

    if (snprintf(buf, sizeof buf, "%s.la", stem) < (int)sizeof buf &&
        is_file(buf))
        return 1;
    if (snprintf(buf, sizeof buf, "%s.so", stem) < (int)sizeof buf &&
        is_file(buf))
        return 1;
    return 0;
}

/* path made absolute without touching the file system beyond getcwd. */
static popc_status absolute(const char *path, char *buf, size_t size)
{
    char cwd[PATH_MAX];

    if (path[0] == '/') {
        if (snprintf(buf, size, "%s", path) >= (int)size)
            goto toolong;
        return POPC_OK;
    }
    if (!getcwd(cwd, sizeof cwd))
        return popc_set_error(POPC_EIO, "%s: cannot resolve a relative path: "
                              "%s", path, strerror(errno));
    if (snprintf(buf, size, "%s/%s", cwd, path) >= (int)size)
        goto toolong;
    return POPC_OK;
toolong:
    return popc_set_error(POPC_EINVAL, "%s: path too long", path);
}

/* ---- one module ------------------------------------------------------------ */

typedef const popc_plugin_info *(*entry_fn)(void);

/* Checks an open handle and attaches it to r. explicit: the user named
** this file, so "no entry symbol" is an error instead of a quiet skip.
** Closes the handle unless r now owns it. */
static popc_status check_and_attach(popc_registry *r, lt_dlhandle h,
                                    const char *stem, int explicit,
                                    scan_result *res)
{
    const lt_dlinfo *li;
    char path[PATH_MAX], want[256];
    const popc_plugin_info *info;
    entry_fn entry;
    void *sym;
    popc_status st = POPC_OK;
    unsigned compat_major = popci_layer_abi_compat
                                ? popci_layer_abi_compat->major
                                : POPC_PLUGIN_ABI_MAJOR;

    pthread_mutex_lock(&lt_lock);
    li = lt_dlgetinfo(h);
    snprintf(path, sizeof path, "%s",
             li && li->filename ? li->filename : stem);
    sym = lt_dlsym(h, "popc_plugin_entry");
    pthread_mutex_unlock(&lt_lock);
    module_basename(stem, want, sizeof want);

    if (popci_registry_has_handle(r, h)) {
        popc_log(POPC_LOG_DEBUG, "%s: already loaded", path);
        goto close;
    }
    if (!sym) {
        if (explicit) {
            st = popc_set_error(POPC_EPLUGIN, "%s: not a popc plugin (no "
                                "popc_plugin_entry; define it with "
                                "POPC_PLUGIN_DEFINE(%s, ...))", path, want);
            goto report;
        }
        popc_log(POPC_LOG_DEBUG, "%s: no popc_plugin_entry, skipped", path);
        goto close;
    }
    /* ISO C has no object-to-function pointer conversion; copy the bits. */
    memcpy(&entry, &sym, sizeof entry);
    info = entry();
    if (!info) {
        st = popc_set_error(POPC_EPLUGIN, "%s: popc_plugin_entry returned "
                            "NULL", path);
        goto report;
    }
    /* Same major: any minor (every struct is read through its size).
    ** An older major (2: popc 0.2, 0.3): through the adapter libpopc links
    ** in (compat/, core/layer/abi_compat.h). */
    if (info->abi_version != POPC_PLUGIN_ABI_MAJOR &&
        info->abi_version != compat_major) {
        st = popc_set_error(POPC_EABI, "%s: plugin ABI %u, core ABI %u.%u "
                            "(loads ABI %u and %u plugins); rebuild the "
                            "plugin against this popc", path,
                            (unsigned)info->abi_version,
                            (unsigned)POPC_PLUGIN_ABI_MAJOR,
                            (unsigned)POPC_PLUGIN_ABI_MINOR,
                            compat_major,
                            (unsigned)POPC_PLUGIN_ABI_MAJOR);
        goto report;
    }
    if (!POPC_HAS_FIELD(popc_plugin_info, info->size, init)) {
        st = popc_set_error(POPC_EABI, "%s: plugin info is %u bytes, core "
                            "ABI %u needs at least %zu; rebuild the plugin "
                            "against this popc", path, (unsigned)info->size,
                            (unsigned)POPC_PLUGIN_ABI_MAJOR,
                            offsetof(popc_plugin_info, init) +
                                sizeof info->init);
        goto report;
    }
    if (!info->name || strcmp(info->name, want) != 0) {
        st = popc_set_error(POPC_EPLUGIN, "%s: plugin name '%s' does not "
                            "match the file name '%s'; the first argument of "
                            "POPC_PLUGIN_DEFINE must equal the module's "
                            "basename", path, info->name ? info->name : "",
                            want);
        goto report;
    }
    if (!info->init) {
        st = popc_set_error(POPC_EPLUGIN, "%s: plugin '%s' has no init "
                            "function", path, info->name);
        goto report;
    }
    /* attach records its own problems. */
    st = popci_registry_attach(r, info, path, h);
    note(res, st);
    if (popci_registry_has_handle(r, h))
        return st;
    goto close;
report:
    popci_registry_problem(r);
    note(res, st);
close:
    popci_loader_close(h);
    return st;
}

/* Opens stem (absolute; with or without extension) and attaches it. */
static void load_module(popc_registry *r, const char *stem, int explicit,
                        scan_result *res)
{
    lt_dlhandle h;
    char err[512];

    if (!explicit && !module_file_exists(stem))
        return; /* a source file, object or text: not ours to judge */
    popci_source_prepare();
    pthread_mutex_lock(&lt_lock);
    h = lt_dlopenext(stem);
    if (!h) {
        const char *e = lt_dlerror();
        snprintf(err, sizeof err, "%s", e ? e : "unknown error");
    }
    pthread_mutex_unlock(&lt_lock);
    if (!h) {
        popc_status st;
        if (explicit && !module_file_exists(stem) && !is_file(stem))
            st = popc_set_error(POPC_ENOTFOUND, "%s: no such plugin module "
                                "(looked for %s, %s.la and %s.so)", stem, stem,
                                stem, stem);
        else
            st = popc_set_error(POPC_EPLUGIN, "%s: cannot load plugin: %s",
                                stem, err);
        popci_registry_problem(r);
        note(res, st);
        return;
    }
    check_and_attach(r, h, stem, explicit, res);
}

/* ---- directories ------------------------------------------------------------ */

typedef struct name_list {
    char **names;
    int n, cap;
    int nomem;
} name_list;

static int collect(const char *filename, void *data)
{
    name_list *l = data;

    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 32;
        char **p = popci_realloc(l->names, (size_t)cap * sizeof *p);
        if (!p) {
            l->nomem = 1;
            return 1;
        }
        l->names = p;
        l->cap = cap;
    }
    if (!(l->names[l->n] = popci_strdup(filename))) {
        l->nomem = 1;
        return 1;
    }
    l->n++;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Loads every module of one directory (absolute), in name order so that
** "first registration wins" does not depend on readdir order. */
static void scan_dir(popc_registry *r, const char *dir, scan_result *res)
{
    name_list l = {NULL, 0, 0, 0};

    if (strchr(dir, ':')) {
        /* lt_dlforeachfile takes a colon-separated list. */
        popc_set_error(POPC_EINVAL, "%s: plugin directories cannot contain "
                       "':'", dir);
        popci_registry_problem(r);
        note(res, POPC_EINVAL);
        return;
    }
    popc_log(POPC_LOG_DEBUG, "scanning %s for plugins", dir);
    pthread_mutex_lock(&lt_lock);
    lt_dlforeachfile(dir, collect, &l);
    pthread_mutex_unlock(&lt_lock);
    if (l.nomem) {
        popc_set_error(POPC_ENOMEM, "%s: out of memory while scanning", dir);
        popci_registry_problem(r);
        note(res, POPC_ENOMEM);
    }
    if (l.n > 1)
        qsort(l.names, (size_t)l.n, sizeof *l.names, by_name);
    for (int i = 0; i < l.n; i++) {
        const char *base = strrchr(l.names[i], '/');
        if (!(base && base[1] == '.'))
            load_module(r, l.names[i], 0, res);
        free(l.names[i]);
    }
    free(l.names);
}

/* dir, then its ops/ optim/ backends/ collectives/ subdirectories when
** present. */
static void scan_tree(popc_registry *r, const char *dir, scan_result *res)
{
    static const char *const subdirs[] = {"ops", "optim", "backends",
                                          "collectives"};
    char sub[PATH_MAX];

    scan_dir(r, dir, res);
    for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++)
        if (snprintf(sub, sizeof sub, "%s/%s", dir, subdirs[i]) <
                (int)sizeof sub &&
            is_dir(sub))
            scan_dir(r, sub, res);
}

/* ---- preloaded modules (static builds) ------------------------------------ */

/* lt_dlpreload_open's callback takes no user data; the list is only used
** under lt_lock. */
static lt_dlhandle *pre_handles;
static int pre_n, pre_cap;

static int collect_preloaded(lt_dlhandle h)
{
    if (pre_n == pre_cap) {
        int cap = pre_cap ? pre_cap * 2 : 16;
        lt_dlhandle *p = popci_realloc(pre_handles, (size_t)cap * sizeof *p);
        if (!p) {
            lt_dlclose(h);
            return 1;
        }
        pre_handles = p;
        pre_cap = cap;
    }
    pre_handles[pre_n++] = h;
    return 0;
}

popc_status popci_loader_load_preloaded(popc_registry *r)
{
    scan_result res = {POPC_OK, ""};
    lt_dlhandle *hs = NULL;
    int n = 0;

    pthread_mutex_lock(&lt_lock);
    pre_n = 0;
    /* Fails harmlessly when the program preloaded nothing. */
    lt_dlpreload_open("@PROGRAM@", collect_preloaded);
    lt_dlerror();
    if (pre_n > 0 && (hs = popci_malloc((size_t)pre_n * sizeof *hs))) {
        memcpy(hs, pre_handles, (size_t)pre_n * sizeof *hs);
        n = pre_n;
    } else {
        for (int i = 0; i < pre_n; i++)
            lt_dlclose(pre_handles[i]);
    }
    free(pre_handles);
    pre_handles = NULL;
    pre_n = pre_cap = 0;
    pthread_mutex_unlock(&lt_lock);

    for (int i = 0; i < n; i++) {
        const lt_dlinfo *li;
        char stem[PATH_MAX];

        pthread_mutex_lock(&lt_lock);
        li = lt_dlgetinfo(hs[i]);
        snprintf(stem, sizeof stem, "%s",
                 li && li->filename ? li->filename
                 : li && li->name   ? li->name
                                    : "?");
        pthread_mutex_unlock(&lt_lock);
        check_and_attach(r, hs[i], stem, 0, &res);
    }
    free(hs);
    return scan_status(&res);
}

/* ---- public loading API ------------------------------------------------------ */

popc_status popc_registry_load_path(popc_registry *r, const char *dir)
{
    scan_result res = {POPC_OK, ""};
    char abs[PATH_MAX];
    popc_status st;

    if (!r || !dir || !*dir)
        return popc_set_error(POPC_EINVAL, "popc_registry_load_path: %s is "
                              "NULL or empty", r ? "dir" : "registry");
    if ((st = absolute(dir, abs, sizeof abs)) != POPC_OK)
        return st;
    if (!is_dir(abs))
        return popc_set_error(POPC_ENOTFOUND, "%s: plugin directory not "
                              "found", abs);
    pthread_mutex_lock(&r->load_lock);
    scan_tree(r, abs, &res);
    pthread_mutex_unlock(&r->load_lock);
    return scan_status(&res);
}

popc_status popc_registry_load_file(popc_registry *r, const char *path)
{
    scan_result res = {POPC_OK, ""};
    char abs[PATH_MAX];
    popc_status st;

    if (!r || !path || !*path)
        return popc_set_error(POPC_EINVAL, "popc_registry_load_file: %s is "
                              "NULL or empty", r ? "path" : "registry");
    if ((st = absolute(path, abs, sizeof abs)) != POPC_OK)
        return st;
    pthread_mutex_lock(&r->load_lock);
    load_module(r, abs, 1, &res);
    pthread_mutex_unlock(&r->load_lock);
    return scan_status(&res);
}

popc_status popc_registry_load_default(popc_registry *r)
{
    static const char *const subdirs[] = {"ops", "optim", "backends",
                                          "collectives"};
    scan_result res = {POPC_OK, ""};
    const char *env;
    char dir[PATH_MAX];

    if (!r)
        return popc_set_error(POPC_EINVAL, "popc_registry_load_default: "
                              "registry is NULL");
    pthread_mutex_lock(&r->load_lock);
    note(&res, popci_loader_load_preloaded(r));
    /* The environment comes before the install so that a build tree or a
    ** fixed plugin can stand in for an installed one (first name wins). */
    env = getenv("POPC_PLUGIN_PATH");
    while (env && *env) {
        const char *end = strchr(env, ':');
        size_t len = end ? (size_t)(end - env) : strlen(env);

        if (len == 0) {
            /* An empty entry would mean the current directory. */
        } else if (len >= sizeof dir) {
            note(&res, popc_set_error(POPC_EINVAL, "POPC_PLUGIN_PATH: entry "
                                      "too long"));
            popci_registry_problem(r);
        } else {
            memcpy(dir, env, len);
            dir[len] = '\0';
            if (dir[0] != '/') {
                note(&res, popc_set_error(POPC_EINVAL, "POPC_PLUGIN_PATH "
                                          "entry '%s' is not an absolute "
                                          "path; ignored (plugins are never "
                                          "loaded relative to the current "
                                          "directory)", dir));
                popci_registry_problem(r);
            } else if (!is_dir(dir)) {
                note(&res, popc_set_error(POPC_ENOTFOUND, "POPC_PLUGIN_PATH "
                                          "entry '%s' is not a directory; "
                                          "ignored", dir));
                popci_registry_problem(r);
            } else {
                scan_tree(r, dir, &res);
            }
        }
        env = end ? end + 1 : NULL;
    }
    for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++)
        if (snprintf(dir, sizeof dir, "%s/%s", POPC_PLUGINDIR, subdirs[i]) <
                (int)sizeof dir &&
            is_dir(dir))
            scan_dir(r, dir, &res);
    pthread_mutex_unlock(&r->load_lock);
    return scan_status(&res);
}
