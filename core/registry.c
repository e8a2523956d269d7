/* registry.c - the tables of ops, optimizers and backends, the staging
** registrar handed to plugin init(), lookups and plugin records.
**
** A plugin's registrations are staged in its popc_registrar and committed
** only when init() returns POPC_OK, so a failing plugin leaves nothing
** behind that points into a module about to be closed. Commit cannot fail
** half-way: all memory is reserved before the first entry is linked in.
** The first registration of a name wins; a later one is skipped and
** reported as POPC_EEXIST.
*/
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/log.h"
#include "popc/registry.h"
#include "core/alloc_priv.h"
#include "core/host_priv.h"
#include "core/registry_priv.h"

#define DEFAULT_DOMAIN "ai.onnx"

struct popc_registrar {
    int open;                 /* only inside init() */
    const char *plugin;       /* for messages */
    const char *path;
    popc_status error;        /* first refused registration */
    char message[512];
    popc_op_def *ops;
    int n_ops, cap_ops;
    popc_optim_def *optims;
    int n_optims, cap_optims;
    popc_backend_def *backends;
    int n_backends, cap_backends;
    popc_collectives_def *colls;
    int n_colls, cap_colls;
};

/* ---- small helpers ------------------------------------------------------- */

static char *dup_str(const char *s)
{
    size_t n = strlen(s ? s : "") + 1;
    char *d = popci_malloc(n);

    if (d)
        memcpy(d, s ? s : "", n);
    return d;
}

/* Grows *arr (elements of size esize) to hold at least need elements. */
static int reserve(void *arr, int *cap, int need, size_t esize)
{
    void **p = arr;
    int n = *cap ? *cap : 8;
    void *q;

    if (need <= *cap)
        return 0;
    while (n < need)
        n *= 2;
    if (!(q = popci_realloc(*p, (size_t)n * esize)))
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

static char *format_item(const char *fmt, ...) POPC_PRINTF(1, 2);

static char *format_item(const char *fmt, ...)
{
    va_list ap, ap2;
    int n;
    char *s;

    va_start(ap, fmt);
    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap);
    s = n >= 0 ? popci_malloc((size_t)n + 1) : NULL;
    if (s)
        vsnprintf(s, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    va_end(ap);
    return s;
}

static const char *op_domain(const char *domain)
{
    return domain && *domain ? domain : DEFAULT_DOMAIN;
}

/* ---- validation ---------------------------------------------------------- */

static popc_status check_op(const popc_op_def *d, const char *who)
{
    if (!d)
        return popc_set_error(POPC_EINVAL, "%s: register_op(NULL)", who);
    if (!POPC_HAS_FIELD(popc_op_def, d->size, forward))
        return popc_set_error(POPC_EINVAL, "%s: popc_op_def.size is %u, "
                              "too small for this ABI; set .size = "
                              "sizeof(popc_op_def)", who, (unsigned)d->size);
    if (!d->name || !*d->name)
        return popc_set_error(POPC_EINVAL, "%s: op definition without a "
                              "name", who);
    if (!d->infer || !d->forward)
        return popc_set_error(POPC_EINVAL, "%s: op %s::%s has no %s function;"
                              " infer and forward are required", who,
                              op_domain(d->domain), d->name,
                              d->infer ? "forward" : "infer");
    if (d->since_version < 1)
        return popc_set_error(POPC_EINVAL, "%s: op %s::%s has since_version "
                              "%d; set it to the opset version it implements "
                              "(1 for a new custom op)", who,
                              op_domain(d->domain), d->name, d->since_version);
    return POPC_OK;
}

static popc_status check_optim(const popc_optim_def *d, const char *who)
{
    if (!d)
        return popc_set_error(POPC_EINVAL, "%s: register_optimizer(NULL)",
                              who);
    if (!POPC_HAS_FIELD(popc_optim_def, d->size, step))
        return popc_set_error(POPC_EINVAL, "%s: popc_optim_def.size is %u, "
                              "too small for this ABI; set .size = "
                              "sizeof(popc_optim_def)", who,
                              (unsigned)d->size);
    if (!d->name || !*d->name)
        return popc_set_error(POPC_EINVAL, "%s: optimizer definition without "
                              "a name", who);
    if (!d->n_state || !d->step || (d->n_hypers > 0 && !d->hypers) ||
        d->n_hypers < 0)
        return popc_set_error(POPC_EINVAL, "%s: optimizer '%s' needs n_state, "
                              "step, and hypers for its %d hyperparameters",
                              who, d->name, d->n_hypers);
    return POPC_OK;
}

static popc_status check_backend(const popc_backend_def *d, const char *who)
{
    if (!d)
        return popc_set_error(POPC_EINVAL, "%s: register_backend(NULL)", who);
    if (!POPC_HAS_FIELD(popc_backend_def, d->size, run_nodes))
        return popc_set_error(POPC_EINVAL, "%s: popc_backend_def.size is %u, "
                              "too small for this ABI; set .size = "
                              "sizeof(popc_backend_def)", who,
                              (unsigned)d->size);
    if (!d->name || !*d->name)
        return popc_set_error(POPC_EINVAL, "%s: backend definition without a "
                              "name", who);
    if (!d->open || !d->close || !d->compile || !d->exe_free ||
        ((d->caps & POPC_BACKEND_CAN_RUN) && !d->run_nodes))
        return popc_set_error(POPC_EINVAL, "%s: backend '%s' needs open, "
                              "close, compile, exe_free (and run_nodes when "
                              "it has POPC_BACKEND_CAN_RUN)", who, d->name);
    return POPC_OK;
}

static popc_status check_collectives(const popc_collectives_def *d,
                                     const char *who)
{
    if (!d)
        return popc_set_error(POPC_EINVAL, "%s: register_collectives(NULL)",
                              who);
    if (!POPC_HAS_FIELD(popc_collectives_def, d->size, abort))
        return popc_set_error(POPC_EINVAL, "%s: popc_collectives_def.size is "
                              "%u, too small for this ABI; set .size = "
                              "sizeof(popc_collectives_def)", who,
                              (unsigned)d->size);
    if (!d->name || !*d->name)
        return popc_set_error(POPC_EINVAL, "%s: collectives definition "
                              "without a name", who);
    if (!d->probe || !d->open || !d->close || !d->send || !d->recv ||
        !d->bcast || !d->allgather || !d->abort)
        return popc_set_error(POPC_EINVAL, "%s: collectives '%s' need every "
                              "function of popc_collectives_def", who,
                              d->name);
    return POPC_OK;
}

/* Copies a definition at the core's own size: a smaller (older) one is
** zero-extended and keeps its size so POPC_HAS_FIELD still tells. */
#define COPY_DEF(dst, src)                                                   \
    do {                                                                     \
        uint32_t n_ = (src)->size < sizeof *(dst) ? (src)->size              \
                                                  : (uint32_t)sizeof *(dst); \
        memset((dst), 0, sizeof *(dst));                                     \
        memcpy((dst), (src), n_);                                            \
        (dst)->size = n_;                                                    \
    } while (0)

/* ---- the host table plugins get ------------------------------------------ */

static popc_status refuse(popc_registrar *g, popc_status st)
{
    /* Keep the reason: the plugin may call more host functions before
    ** init() returns and overwrite popc_last_error(). */
    if (g->error == POPC_OK) {
        g->error = st;
        snprintf(g->message, sizeof g->message, "%s", popc_last_error());
    }
    return st;
}

static popc_status closed(void)
{
    return popc_set_error(POPC_ESTATE, "register_*: only valid inside the "
                          "plugin's init(), with the registrar it was given");
}

static popc_status stage_op(popc_registrar *g, const popc_op_def *d)
{
    popc_status st;

    if (!g || !g->open)
        return closed();
    if ((st = check_op(d, g->path)) != POPC_OK)
        return refuse(g, st);
    if (reserve(&g->ops, &g->cap_ops, g->n_ops + 1, sizeof *g->ops))
        return refuse(g, popc_set_error(POPC_ENOMEM, "%s: out of memory",
                                        g->path));
    COPY_DEF(&g->ops[g->n_ops], d);
    g->ops[g->n_ops].domain = op_domain(d->domain);
    g->n_ops++;
    return POPC_OK;
}

static popc_status stage_optim(popc_registrar *g, const popc_optim_def *d)
{
    popc_status st;

    if (!g || !g->open)
        return closed();
    if ((st = check_optim(d, g->path)) != POPC_OK)
        return refuse(g, st);
    if (reserve(&g->optims, &g->cap_optims, g->n_optims + 1,
                sizeof *g->optims))
        return refuse(g, popc_set_error(POPC_ENOMEM, "%s: out of memory",
                                        g->path));
    COPY_DEF(&g->optims[g->n_optims], d);
    g->n_optims++;
    return POPC_OK;
}

static popc_status stage_backend(popc_registrar *g, const popc_backend_def *d)
{
    popc_status st;

    if (!g || !g->open)
        return closed();
    if ((st = check_backend(d, g->path)) != POPC_OK)
        return refuse(g, st);
    if (reserve(&g->backends, &g->cap_backends, g->n_backends + 1,
                sizeof *g->backends))
        return refuse(g, popc_set_error(POPC_ENOMEM, "%s: out of memory",
                                        g->path));
    COPY_DEF(&g->backends[g->n_backends], d);
    g->n_backends++;
    return POPC_OK;
}

static popc_status stage_collectives(popc_registrar *g,
                                     const popc_collectives_def *d)
{
    popc_status st;

    if (!g || !g->open)
        return closed();
    if ((st = check_collectives(d, g->path)) != POPC_OK)
        return refuse(g, st);
    if (reserve(&g->colls, &g->cap_colls, g->n_colls + 1, sizeof *g->colls))
        return refuse(g, popc_set_error(POPC_ENOMEM, "%s: out of memory",
                                        g->path));
    COPY_DEF(&g->colls[g->n_colls], d);
    g->n_colls++;
    return POPC_OK;
}

static popc_host plugin_host;
static pthread_once_t plugin_host_once = PTHREAD_ONCE_INIT;

static void make_plugin_host(void)
{
    plugin_host = *popci_host();
    plugin_host.register_op = stage_op;
    plugin_host.register_optimizer = stage_optim;
    plugin_host.register_backend = stage_backend;
    plugin_host.register_collectives = stage_collectives;
}

static void registrar_free(popc_registrar *g)
{
    if (!g)
        return;
    free(g->ops);
    free(g->optims);
    free(g->backends);
    free(g->colls);
    free(g);
}

/* ---- registry lifetime --------------------------------------------------- */

popc_status popc_registry_new(popc_registry **out)
{
    popc_registry *r;
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_registry_new: out is NULL");
    *out = NULL;
    if (!(r = popci_calloc(1, sizeof *r)))
        return popc_set_error(POPC_ENOMEM, "popc_registry_new: out of memory");
    pthread_rwlock_init(&r->lock, NULL);
    pthread_mutex_init(&r->load_lock, NULL);
    if ((st = popci_loader_init()) != POPC_OK)
        goto fail;
    r->ltdl_ready = 1;
    *out = r;
    return POPC_OK;
fail:
    popc_registry_free(r);
    return st;
}

static void plugin_free(popci_plugin *p)
{
    if (!p)
        return;
    for (int i = 0; i < popci_plugin_n_items(p); i++)
        free(p->items[i]);
    free(p->items);
    free(p->name);
    free(p->version);
    free(p->description);
    free(p->path);
    registrar_free(p->registrar);
    free(p);
}

void popc_registry_free(popc_registry *r)
{
    if (!r)
        return;
    /* Entries point into the modules: drop them before unloading. */
    for (int i = 0; i < r->n_ops; i++)
        free(r->ops[i]);
    for (int i = 0; i < r->n_optims; i++)
        free(r->optims[i]);
    for (int i = 0; i < r->n_backends; i++)
        free(r->backends[i]);
    for (int i = 0; i < r->n_colls; i++)
        free(r->colls[i]);
    free(r->ops);
    free(r->optims);
    free(r->backends);
    free(r->colls);
    for (int i = r->n_plugins - 1; i >= 0; i--) {
        popci_plugin *p = r->plugins[i];
        if (p->fini)
            p->fini();
        popci_loader_close(p->handle);
        plugin_free(p);
    }
    free(r->plugins);
    while (r->problems) {
        popci_problems *prev = r->problems->prev;

        free(r->problems);
        r->problems = prev;
    }
    if (r->ltdl_ready)
        popci_loader_exit();
    pthread_rwlock_destroy(&r->lock);
    pthread_mutex_destroy(&r->load_lock);
    free(r);
}

/* ---- problems ------------------------------------------------------------ */

/* The lock is logically mutable: look-ups on a const registry take it. */
static void read_lock(const popc_registry *r)
{
    pthread_rwlock_rdlock((pthread_rwlock_t *)&r->lock);
}

static void write_lock(popc_registry *r)
{
    pthread_rwlock_wrlock(&r->lock);
}

static void unlock(const popc_registry *r)
{
    pthread_rwlock_unlock((pthread_rwlock_t *)&r->lock);
}

/* Appends the last error to the problems (write lock held), in a new
** version: readers on other threads may hold the current one. */
static void add_problem(popc_registry *r)
{
    static const char full[] = "(further problems are only logged)";
    const char *msg = popc_last_error();
    size_t n = strlen(msg), len = r->problems ? r->problems->len : 0;
    int last = 0;
    popci_problems *p;

    popc_log(POPC_LOG_WARN, "%s", msg);
    if (r->problems_full)
        return;
    if (len + n + 1 + sizeof full > POPCI_PROBLEMS_MAX) {
        msg = full;
        n = sizeof full - 1;
        last = 1;
    }
    if (!(p = popci_malloc(sizeof *p + len + n + 2)))
        return; /* the log line above still tells */
    if (len)
        memcpy(p->text, r->problems->text, len);
    memcpy(p->text + len, msg, n);
    p->text[len + n] = '\n';
    p->text[len + n + 1] = '\0';
    p->len = len + n + 1;
    p->prev = r->problems;
    r->problems = p;
    r->problems_full = last;
}

void popci_registry_problem(popc_registry *r)
{
    write_lock(r);
    add_problem(r);
    unlock(r);
}

const char *popc_registry_problems(const popc_registry *r)
{
    const char *s;

    if (!r)
        return "";
    read_lock(r);
    s = r->problems ? r->problems->text : "";
    unlock(r);
    return s;
}

/* ---- commit -------------------------------------------------------------- */

static int find_op_exact(const popc_registry *r, const char *domain,
                         const char *name, int version)
{
    for (int i = 0; i < r->n_ops; i++) {
        const popc_op_def *d = &r->ops[i]->def;
        if (d->since_version == version && strcmp(d->name, name) == 0 &&
            strcmp(d->domain, domain) == 0)
            return i;
    }
    return -1;
}

/* Who registered an entry; plugin == r->n_plugins is the plugin being
** committed (not linked into r->plugins yet), whose path is pending. */
static const char *owner_name(const popc_registry *r, int plugin,
                              const char *pending)
{
    if (plugin < 0)
        return "popc_registry_add_op";
    return plugin < r->n_plugins ? r->plugins[plugin]->path : pending;
}

static int find_optim_index(const popc_registry *r, const char *name)
{
    for (int i = 0; i < r->n_optims; i++)
        if (strcmp(r->optims[i]->def.name, name) == 0)
            return i;
    return -1;
}

static int find_backend_index(const popc_registry *r, const char *name)
{
    for (int i = 0; i < r->n_backends; i++)
        if (strcmp(r->backends[i]->def.name, name) == 0)
            return i;
    return -1;
}

static int find_colls_index(const popc_registry *r, const char *name)
{
    for (int i = 0; i < r->n_colls; i++)
        if (strcmp(r->colls[i]->def.name, name) == 0)
            return i;
    return -1;
}

/* Records a skipped duplicate; keeps the first such message in first. */
static void duplicate(popc_registry *r, popc_status *st, char *first,
                      size_t size)
{
    add_problem(r);
    if (*st == POPC_OK) {
        *st = POPC_EEXIST;
        snprintf(first, size, "%s", popc_last_error());
    }
}

/* Links the staged definitions of g into r as plugin number idx. Every
** allocation happens before anything is linked, so on POPC_ENOMEM the
** registry is unchanged. */
static popc_status commit(popc_registry *r, popc_registrar *g,
                          popci_plugin *p, int idx, char *first,
                          size_t first_size)
{
    int total = g->n_ops + g->n_optims + g->n_backends + g->n_colls;
    void **entries = NULL;
    int n_entries = 0;
    popc_status st = POPC_OK;

    if (reserve(&r->ops, &r->cap_ops, r->n_ops + g->n_ops, sizeof *r->ops) ||
        reserve(&r->optims, &r->cap_optims, r->n_optims + g->n_optims,
                sizeof *r->optims) ||
        reserve(&r->backends, &r->cap_backends,
                r->n_backends + g->n_backends, sizeof *r->backends) ||
        reserve(&r->colls, &r->cap_colls, r->n_colls + g->n_colls,
                sizeof *r->colls) ||
        reserve(&r->plugins, &r->cap_plugins, r->n_plugins + 1,
                sizeof *r->plugins))
        goto nomem;
    if (!(p->items = popci_calloc((size_t)total + 1, sizeof *p->items)) ||
        !(entries = popci_calloc((size_t)total + 1, sizeof *entries)))
        goto nomem;
    for (int i = 0; i < g->n_ops; i++)
        if (!(entries[n_entries++] = popci_malloc(sizeof(popci_op_entry))))
            goto nomem;
    for (int i = 0; i < g->n_optims; i++)
        if (!(entries[n_entries++] = popci_malloc(sizeof(popci_optim_entry))))
            goto nomem;
    for (int i = 0; i < g->n_backends; i++)
        if (!(entries[n_entries++] =
                  popci_malloc(sizeof(popci_backend_entry))))
            goto nomem;
    for (int i = 0; i < g->n_colls; i++)
        if (!(entries[n_entries++] = popci_malloc(sizeof(popci_colls_entry))))
            goto nomem;

    /* Nothing below fails except item names (then the item is "?"). */
    n_entries = 0;
    for (int i = 0; i < g->n_ops; i++) {
        popci_op_entry *e = entries[n_entries];
        const popc_op_def *d = &g->ops[i];
        int have = find_op_exact(r, d->domain, d->name, d->since_version);

        entries[n_entries++] = NULL;
        if (have >= 0) {
            popc_set_error(POPC_EEXIST, "%s: op %s::%s@%d is already "
                           "registered by %s; keeping the first", g->path,
                           d->domain, d->name, d->since_version,
                           owner_name(r, r->ops[have]->plugin, g->path));
            duplicate(r, &st, first, first_size);
            free(e);
            continue;
        }
        e->def = *d;
        e->plugin = idx;
        r->ops[r->n_ops++] = e;
        p->items[p->n_ops++] = format_item("%s::%s@%d", d->domain, d->name,
                                           d->since_version);
    }
    for (int i = 0; i < g->n_optims; i++) {
        popci_optim_entry *e = entries[n_entries];
        const popc_optim_def *d = &g->optims[i];
        int have = find_optim_index(r, d->name);

        entries[n_entries++] = NULL;
        if (have >= 0) {
            popc_set_error(POPC_EEXIST, "%s: optimizer '%s' is already "
                           "registered by %s; keeping the first", g->path,
                           d->name,
                           owner_name(r, r->optims[have]->plugin, g->path));
            duplicate(r, &st, first, first_size);
            free(e);
            continue;
        }
        e->def = *d;
        e->plugin = idx;
        r->optims[r->n_optims++] = e;
        p->items[p->n_ops + p->n_optimizers++] =
            format_item("optim:%s", d->name);
    }
    for (int i = 0; i < g->n_backends; i++) {
        popci_backend_entry *e = entries[n_entries];
        const popc_backend_def *d = &g->backends[i];
        int have = find_backend_index(r, d->name);
        int k = p->n_ops + p->n_optimizers + p->n_backends;

        entries[n_entries++] = NULL;
        if (have >= 0) {
            popc_set_error(POPC_EEXIST, "%s: backend '%s' is already "
                           "registered by %s; keeping the first", g->path,
                           d->name,
                           owner_name(r, r->backends[have]->plugin, g->path));
            duplicate(r, &st, first, first_size);
            free(e);
            continue;
        }
        e->def = *d;
        e->plugin = idx;
        r->backends[r->n_backends++] = e;
        p->items[k] = format_item("backend:%s", d->name);
        p->n_backends++;
    }
    for (int i = 0; i < g->n_colls; i++) {
        popci_colls_entry *e = entries[n_entries];
        const popc_collectives_def *d = &g->colls[i];
        int have = find_colls_index(r, d->name);
        int k = popci_plugin_n_items(p);

        entries[n_entries++] = NULL;
        if (have >= 0) {
            popc_set_error(POPC_EEXIST, "%s: collectives '%s' are already "
                           "registered by %s; keeping the first", g->path,
                           d->name,
                           owner_name(r, r->colls[have]->plugin, g->path));
            duplicate(r, &st, first, first_size);
            free(e);
            continue;
        }
        e->def = *d;
        e->plugin = idx;
        r->colls[r->n_colls++] = e;
        p->items[k] = format_item("collectives:%s", d->name);
        p->n_collectives++;
    }
    for (int i = 0; i < popci_plugin_n_items(p); i++)
        if (!p->items[i])
            p->items[i] = dup_str("?");
    r->plugins[r->n_plugins++] = p;
    free(entries);
    return st;
nomem:
    for (int i = 0; entries && i < n_entries; i++)
        free(entries[i]);
    free(entries);
    return popc_set_error(POPC_ENOMEM, "%s: out of memory while "
                          "registering", g->path);
}

popc_status popci_registry_attach(popc_registry *r,
                                  const popc_plugin_info *info,
                                  const char *path, void *handle)
{
    popc_registrar *g = NULL;
    popci_plugin *p = NULL;
    char first[2048];
    popc_status st;

    read_lock(r);
    for (int i = 0; i < r->n_plugins; i++)
        if (strcmp(r->plugins[i]->name, info->name) == 0) {
            st = popc_set_error(POPC_EEXIST, "%s: plugin '%s' is already "
                                "loaded from %s; keeping the first", path,
                                info->name, r->plugins[i]->path);
            unlock(r);
            popci_registry_problem(r);
            return st;
        }
    unlock(r);
    pthread_once(&plugin_host_once, make_plugin_host);
    if (!(p = popci_calloc(1, sizeof *p)) ||
        !(g = popci_calloc(1, sizeof *g)) ||
        !(p->name = dup_str(info->name)) ||
        !(p->version = dup_str(info->version)) ||
        !(p->description = dup_str(info->description)) ||
        !(p->path = dup_str(path))) {
        st = popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
        goto fail;
    }
    g->plugin = p->name;
    g->path = p->path;
    g->open = 1;
    st = info->init(&plugin_host, g);
    g->open = 0;
    if (st != POPC_OK) {
        st = popc_set_error(POPC_EPLUGIN, "%s: plugin '%s' init failed (%s): "
                            "%s", path, info->name, popc_status_name(st),
                            popc_last_error());
        goto fail;
    }
    if (g->error != POPC_OK) {
        st = popc_set_error(POPC_EPLUGIN, "%s: plugin '%s' refused: %s", path,
                            info->name, g->message);
        goto fail;
    }
    p->handle = handle;
    if (POPC_HAS_FIELD(popc_plugin_info, info->size, fini))
        p->fini = info->fini;
    first[0] = '\0';
    write_lock(r);
    st = commit(r, g, p, r->n_plugins, first, sizeof first);
    unlock(r);
    if (st == POPC_ENOMEM) {
        p->handle = NULL;
        if (p->fini)
            p->fini();
        goto fail;
    }
    /* The staged copies were moved; keep the closed registrar so a plugin
    ** that kept its pointer gets POPC_ESTATE, not a dangling read. */
    free(g->ops);
    free(g->optims);
    free(g->backends);
    free(g->colls);
    g->ops = NULL;
    g->optims = NULL;
    g->backends = NULL;
    g->colls = NULL;
    g->n_ops = g->n_optims = g->n_backends = g->n_colls = 0;
    p->registrar = g;
    if (st != POPC_OK)
        popc_set_error(st, "%s", first);
    return st;
fail:
    popci_registry_problem(r);
    registrar_free(g);
    plugin_free(p);
    return st;
}

int popci_registry_has_handle(const popc_registry *r, void *handle)
{
    int found = 0;

    read_lock(r);
    for (int i = 0; i < r->n_plugins && !found; i++)
        found = r->plugins[i]->handle == handle;
    unlock(r);
    return found;
}

popc_status popc_registry_add_op(popc_registry *r, const popc_op_def *def)
{
    popci_op_entry *e;
    popc_status st;
    int have;

    if (!r)
        return popc_set_error(POPC_EINVAL, "popc_registry_add_op: registry "
                              "is NULL");
    if ((st = check_op(def, "popc_registry_add_op")) != POPC_OK)
        return st;
    write_lock(r);
    have = find_op_exact(r, op_domain(def->domain), def->name,
                         def->since_version);
    if (have >= 0) {
        st = popc_set_error(POPC_EEXIST, "popc_registry_add_op: op %s::%s@%d "
                            "is already registered by %s",
                            op_domain(def->domain), def->name,
                            def->since_version,
                            owner_name(r, r->ops[have]->plugin, NULL));
        goto out;
    }
    if (reserve(&r->ops, &r->cap_ops, r->n_ops + 1, sizeof *r->ops) ||
        !(e = popci_malloc(sizeof *e))) {
        st = popc_set_error(POPC_ENOMEM, "popc_registry_add_op: out of "
                            "memory");
        goto out;
    }
    COPY_DEF(&e->def, def);
    e->def.domain = op_domain(def->domain);
    e->plugin = -1;
    r->ops[r->n_ops++] = e;
out:
    unlock(r);
    return st;
}

/* ---- lookups ------------------------------------------------------------- */

const popc_op_def *popc_registry_find_op(const popc_registry *r,
                                         const char *domain, const char *name,
                                         int version)
{
    const popc_op_def *best = NULL;

    if (!r || !name)
        return NULL;
    domain = op_domain(domain);
    read_lock(r);
    for (int i = 0; i < r->n_ops; i++) {
        const popc_op_def *d = &r->ops[i]->def;
        if (strcmp(d->name, name) != 0 || strcmp(d->domain, domain) != 0)
            continue;
        if (version > 0 && d->since_version > version)
            continue;
        if (!best || d->since_version > best->since_version)
            best = d;
    }
    unlock(r);
    return best;
}

/* The first name registered with the role keeps it (a later plugin cannot
** take autodiff's sums away from the math ops by loading after them); of
** that name's versions, the newest. */
const popc_op_def *popc_registry_find_role(const popc_registry *r,
                                           popc_op_role role)
{
    const popc_op_def *best = NULL;

    if (!r || role <= POPC_ROLE_NONE || role >= POPC_ROLE_COUNT)
        return NULL;
    read_lock(r);
    for (int i = 0; i < r->n_ops; i++) {
        const popc_op_def *d = &r->ops[i]->def;
        if (d->role != (int)role)
            continue;
        if (!best || (strcmp(d->name, best->name) == 0 &&
                      strcmp(d->domain, best->domain) == 0 &&
                      d->since_version > best->since_version))
            best = d;
    }
    unlock(r);
    return best;
}

static const char *role_name(popc_op_role role)
{
    static const char *const names[POPC_ROLE_COUNT] = {
        "POPC_ROLE_NONE",       "POPC_ROLE_SUM",
        "POPC_ROLE_ADD",        "POPC_ROLE_MUL",
        "POPC_ROLE_REDUCE_SUM", "POPC_ROLE_CAST",
        "POPC_ROLE_IDENTITY",   "POPC_ROLE_CHECKPOINT",
        "POPC_ROLE_HOST_CALL",  "POPC_ROLE_FOREIGN_CALL"};

    return role >= 0 && role < POPC_ROLE_COUNT ? names[role] : "?";
}

popc_status popci_role_op(popc_op_role role, const char *why,
                          const popc_op_def **out)
{
    popc_registry *reg = NULL;
    popc_status st;

    *out = NULL;
    if ((st = popc_registry_global(&reg)) != POPC_OK)
        return st;
    if (!(*out = popc_registry_find_role(reg, role)))
        return popc_set_error(POPC_ENOTFOUND, "%s needs an op that declares "
                              "%s, and no loaded plugin has one: add the "
                              "folder of popc's op plugins to "
                              "POPC_PLUGIN_PATH (popc plugins lists what "
                              "is loaded)%s%s", why, role_name(role),
                              *popc_registry_problems(reg)
                                  ? "; refused plugins: " : "",
                              popc_registry_problems(reg));
    return POPC_OK;
}

const popc_optim_def *popc_registry_find_optimizer(const popc_registry *r,
                                                   const char *name)
{
    const popc_optim_def *d = NULL;

    if (!r || !name)
        return NULL;
    read_lock(r);
    for (int i = 0; !d && i < r->n_optims; i++)
        if (strcmp(r->optims[i]->def.name, name) == 0)
            d = &r->optims[i]->def;
    unlock(r);
    return d;
}

const popc_backend_def *popc_registry_find_backend(const popc_registry *r,
                                                   const char *name)
{
    const popc_backend_def *d = NULL;

    if (!r || !name)
        return NULL;
    read_lock(r);
    for (int i = 0; !d && i < r->n_backends; i++)
        if (strcmp(r->backends[i]->def.name, name) == 0)
            d = &r->backends[i]->def;
    unlock(r);
    return d;
}

void popci_registry_backend_names(const popc_registry *r, char *buf,
                                  size_t size)
{
    size_t off = 0;

    buf[0] = '\0';
    read_lock(r);
    for (int i = 0; i < r->n_backends && off + 1 < size; i++)
        off += (size_t)snprintf(buf + off, size - off, "%s'%s'",
                                i ? ", " : "", r->backends[i]->def.name);
    unlock(r);
    if (!buf[0])
        snprintf(buf, size, "none");
}

const popc_backend_def *popc_registry_best_backend(const popc_registry *r,
                                                   unsigned need,
                                                   unsigned refuse)
{
    const popc_backend_def *best = NULL;

    if (!r)
        return NULL;
    read_lock(r);
    for (int i = 0; i < r->n_backends; i++) {
        const popc_backend_def *d = &r->backends[i]->def;

        if (d->score > 0 && (d->caps & need) == need && !(d->caps & refuse) &&
            (!best || d->score > best->score))
            best = d;
    }
    unlock(r);
    return best;
}

const popc_collectives_def *popc_registry_find_collectives(
    const popc_registry *r, const char *name)
{
    const popc_collectives_def *d = NULL;

    if (!r || !name)
        return NULL;
    read_lock(r);
    if (find_colls_index(r, name) >= 0)
        d = &r->colls[find_colls_index(r, name)]->def;
    unlock(r);
    return d;
}

int popc_registry_collectives_count(const popc_registry *r)
{
    int n;

    if (!r)
        return 0;
    read_lock(r);
    n = r->n_colls;
    unlock(r);
    return n;
}

const popc_collectives_def *popc_registry_collectives_at(
    const popc_registry *r, int i)
{
    const popc_collectives_def *d = NULL;

    if (!r)
        return NULL;
    read_lock(r);
    if (i >= 0 && i < r->n_colls)
        d = &r->colls[i]->def;
    unlock(r);
    return d;
}

const popc_host *popc_registry_host(void)
{
    return popci_host();
}

int popc_registry_op_count(const popc_registry *r)
{
    int n;

    if (!r)
        return 0;
    read_lock(r);
    n = r->n_ops;
    unlock(r);
    return n;
}

const popc_op_def *popc_registry_op_at(const popc_registry *r, int i)
{
    const popc_op_def *d = NULL;

    if (!r)
        return NULL;
    read_lock(r);
    if (i >= 0 && i < r->n_ops)
        d = &r->ops[i]->def;
    unlock(r);
    return d;
}

int popc_registry_plugin_count(const popc_registry *r)
{
    int n;

    if (!r)
        return 0;
    read_lock(r);
    n = r->n_plugins;
    unlock(r);
    return n;
}

popc_plugin_record popc_registry_plugin_at(const popc_registry *r, int i)
{
    popc_plugin_record rec;

    memset(&rec, 0, sizeof rec);
    if (!r)
        return rec;
    read_lock(r);
    if (i >= 0 && i < r->n_plugins) {
        rec.name = r->plugins[i]->name;
        rec.version = r->plugins[i]->version;
        rec.description = r->plugins[i]->description;
        rec.path = r->plugins[i]->path;
        rec.n_ops = r->plugins[i]->n_ops;
        rec.n_optimizers = r->plugins[i]->n_optimizers;
        rec.n_backends = r->plugins[i]->n_backends;
        rec.n_collectives = r->plugins[i]->n_collectives;
    }
    unlock(r);
    return rec;
}

const char *popc_registry_plugin_item(const popc_registry *r, int i, int j)
{
    const char *item = NULL;

    if (!r)
        return NULL;
    read_lock(r);
    if (i >= 0 && i < r->n_plugins) {
        const popci_plugin *p = r->plugins[i];

        if (j >= 0 && j < popci_plugin_n_items(p))
            item = p->items[j];
    }
    unlock(r);
    return item;
}

/* ---- the process-wide registry ------------------------------------------- */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static popc_registry *global_registry;
static popc_status global_status;
static char global_error[512];

static void load_global(void)
{
    popc_status st = popc_registry_new(&global_registry);

    if (st != POPC_OK) {
        global_status = st;
        snprintf(global_error, sizeof global_error, "%s", popc_last_error());
        return;
    }
    /* Problems with single plugins are logged and kept, never fatal. */
    (void)!popc_registry_load_default(global_registry);
}

popc_status popc_registry_global(popc_registry **out)
{
    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_registry_global: out is "
                              "NULL");
    pthread_once(&global_once, load_global);
    *out = global_registry;
    if (global_status != POPC_OK)
        return popc_set_error(global_status, "%s", global_error);
    return POPC_OK;
}
