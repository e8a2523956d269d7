/* registry.c - the tables of ops, optimizers, backends and collectives,
** the staging registrar handed to plugin init(), lookups and plugin
** records.
**
** A plugin's registrations are staged in its popc_registrar and committed
** only when init() returns POPC_OK, so a failing plugin leaves nothing
** behind that points into a module about to be closed. Commit cannot fail
** half-way: all memory is reserved before the first entry is linked in.
** The first registration of a name wins; a later one is skipped and
** reported as POPC_EEXIST.
**
** Every kind of definition goes through the same staging, commit and
** look-up code; what differs between kinds is one row of `kinds` below.
*/
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/log.h"
#include "popc/registry.h"
#include "core/layer/abi_compat.h"
#include "core/alloc_priv.h"
#include "core/host_priv.h"
#include "core/registry_priv.h"

#define DEFAULT_DOMAIN "ai.onnx"

typedef struct staged_defs {
    popci_def *defs;
    int n, cap;
} staged_defs;

struct popc_registrar {
    int open;                 /* only inside init() */
    const char *plugin;       /* for messages */
    const char *path;
    unsigned abi;             /* the plugin's ABI major (an older one is
                              ** adapted: core/layer/abi_compat.h) */
    popc_status error;        /* first refused registration */
    char message[512];
    staged_defs staged[POPCI_KIND_COUNT];
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

/* ---- what differs between kinds ------------------------------------------ */

static popc_status check_op(const popci_def *u, const char *who)
{
    const popc_op_def *d = &u->op;

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

static popc_status check_optim(const popci_def *u, const char *who)
{
    const popc_optim_def *d = &u->optim;

    if (!d->name || !*d->name)
        return popc_set_error(POPC_EINVAL, "%s: optimizer definition without "
                              "a name", who);
    if (!d->n_state || !d->step || (d->n_hypers > 0 && !d->hypers) ||
        d->n_hypers < 0)
        return popc_set_error(POPC_EINVAL, "%s: optimizer '%s' needs n_state, "
                              "step, and hypers for its %d hyperparameters",
                              who, d->name, d->n_hypers);
    if (d->n_hypers > 0 &&
        POPC_HAS_FIELD(popc_optim_def, d->size, hyper_size) &&
        d->hyper_size < sizeof(popc_hyper_def))
        return popc_set_error(POPC_EINVAL, "%s: optimizer '%s' has "
                              "hyper_size %u; set .hyper_size = "
                              "sizeof(popc_hyper_def)", who, d->name,
                              (unsigned)d->hyper_size);
    return POPC_OK;
}

static popc_status check_backend(const popci_def *u, const char *who)
{
    const popc_backend_def *d = &u->backend;

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

static popc_status check_collectives(const popci_def *u, const char *who)
{
    const popc_collectives_def *d = &u->colls;

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

static popc_status check_kernel(const popci_def *u, const char *who)
{
    const popc_kernel_def *d = &u->kernel;

    if (!d->name || !*d->name || !d->provider || !*d->provider || !d->op ||
        !*d->op || !d->supports || !d->score || !d->forward)
        return popc_set_error(POPC_EINVAL, "%s: kernel '%s' needs name, "
                              "provider, op, supports, score and forward",
                              who, d->name ? d->name : "?");
    return POPC_OK;
}

/* Ops are one entry per (domain, name, since_version); the other kinds one
** per name. */
static int same_op(const popci_def *a, const popci_def *b)
{
    return a->op.since_version == b->op.since_version &&
           strcmp(a->op.name, b->op.name) == 0 &&
           strcmp(a->op.domain, b->op.domain) == 0;
}

static int same_optim(const popci_def *a, const popci_def *b)
{
    return strcmp(a->optim.name, b->optim.name) == 0;
}

static int same_backend(const popci_def *a, const popci_def *b)
{
    return strcmp(a->backend.name, b->backend.name) == 0;
}

static int same_colls(const popci_def *a, const popci_def *b)
{
    return strcmp(a->colls.name, b->colls.name) == 0;
}

/* Kernels are one entry per (provider, name, domain, op). */
static int same_kernel(const popci_def *a, const popci_def *b)
{
    return strcmp(a->kernel.provider, b->kernel.provider) == 0 &&
           strcmp(a->kernel.name, b->kernel.name) == 0 &&
           strcmp(a->kernel.domain, b->kernel.domain) == 0 &&
           strcmp(a->kernel.op, b->kernel.op) == 0;
}

/* What messages call a definition ("op ai.onnx::Relu@14", "optimizer
** 'sgd'"), and the item name `popc plugins` lists. */
static char *describe_op(const popci_def *d)
{
    return format_item("op %s::%s@%d", d->op.domain, d->op.name,
                       d->op.since_version);
}

static char *item_op(const popci_def *d)
{
    return format_item("%s::%s@%d", d->op.domain, d->op.name,
                       d->op.since_version);
}

static char *describe_optim(const popci_def *d)
{
    return format_item("optimizer '%s'", d->optim.name);
}

static char *item_optim(const popci_def *d)
{
    return format_item("optim:%s", d->optim.name);
}

static char *describe_backend(const popci_def *d)
{
    return format_item("backend '%s'", d->backend.name);
}

static char *item_backend(const popci_def *d)
{
    return format_item("backend:%s", d->backend.name);
}

static char *describe_colls(const popci_def *d)
{
    return format_item("collectives '%s'", d->colls.name);
}

static char *item_colls(const popci_def *d)
{
    return format_item("collectives:%s", d->colls.name);
}

static char *describe_kernel(const popci_def *d)
{
    return format_item("kernel %s:%s of %s::%s", d->kernel.provider,
                       d->kernel.name, d->kernel.domain, d->kernel.op);
}

static char *item_kernel(const popci_def *d)
{
    return format_item("%s:%s (%s::%s)", d->kernel.provider, d->kernel.name,
                       d->kernel.domain, d->kernel.op);
}

static void normalize_op(popci_def *d)
{
    d->op.domain = op_domain(d->op.domain);
}

static void normalize_kernel(popci_def *d)
{
    d->kernel.domain = op_domain(d->kernel.domain);
}

typedef struct kind_desc {
    const char *call;         /* the host member: "register_op" */
    const char *type;         /* "popc_op_def" */
    const char *verb;         /* "is" / "are" already registered */
    size_t min_size;          /* the smallest size this ABI reads */
    size_t core_size;         /* sizeof the definition here */
    popc_status (*check)(const popci_def *d, const char *who);
    void (*normalize)(popci_def *d);  /* (optional) after the copy */
    int (*same)(const popci_def *a, const popci_def *b);
    char *(*describe)(const popci_def *d);
    char *(*item)(const popci_def *d);
} kind_desc;

#define MIN_SIZE(T, m) (offsetof(T, m) + sizeof(((T *)0)->m))

static const kind_desc kinds[POPCI_KIND_COUNT] = {
    [POPCI_KIND_OP] = {"register_op", "popc_op_def", "is",
                       MIN_SIZE(popc_op_def, forward), sizeof(popc_op_def),
                       check_op, normalize_op, same_op, describe_op,
                       item_op},
    [POPCI_KIND_OPTIM] = {"register_optimizer", "popc_optim_def", "is",
                          MIN_SIZE(popc_optim_def, step),
                          sizeof(popc_optim_def), check_optim, NULL,
                          same_optim, describe_optim, item_optim},
    [POPCI_KIND_BACKEND] = {"register_backend", "popc_backend_def", "is",
                            MIN_SIZE(popc_backend_def, run_nodes),
                            sizeof(popc_backend_def), check_backend, NULL,
                            same_backend, describe_backend, item_backend},
    [POPCI_KIND_COLLS] = {"register_collectives", "popc_collectives_def",
                          "are", MIN_SIZE(popc_collectives_def, abort),
                          sizeof(popc_collectives_def), check_collectives,
                          NULL, same_colls, describe_colls, item_colls},
    [POPCI_KIND_KERNEL] = {POPC_SERVICE_REGISTER_KERNEL, "popc_kernel_def",
                           "is", MIN_SIZE(popc_kernel_def, forward),
                           sizeof(popc_kernel_def), check_kernel,
                           normalize_kernel, same_kernel, describe_kernel,
                           item_kernel},
};

/* ---- validation ---------------------------------------------------------- */

static popc_status check_def(popci_kind kind, const void *d, const char *who)
{
    const kind_desc *k = &kinds[kind];
    popci_def u;
    uint32_t size;

    if (!d)
        return popc_set_error(POPC_EINVAL, "%s: %s(NULL)", who, k->call);
    memcpy(&size, d, sizeof size);
    if (size < k->min_size)
        return popc_set_error(POPC_EINVAL, "%s: %s.size is %u, too small for "
                              "this ABI; set .size = sizeof(%s)", who, k->type,
                              (unsigned)size, k->type);
    memset(&u, 0, sizeof u);
    memcpy(&u, d, size < k->core_size ? size : k->core_size);
    return k->check(&u, who);
}

/* Copies a definition at the core's own size: a smaller (older) one is
** zero-extended and keeps its size so POPC_HAS_FIELD still tells. */
static void copy_def(popci_kind kind, popci_def *dst, const void *src)
{
    size_t core = kinds[kind].core_size;
    uint32_t size;

    memcpy(&size, src, sizeof size);
    if (size > core)
        size = (uint32_t)core;
    memset(dst, 0, sizeof *dst);
    memcpy(dst, src, size);
    dst->size = size;
    if (kinds[kind].normalize)
        kinds[kind].normalize(dst);
}

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

static popc_status stage(popc_registrar *g, popci_kind kind, const void *d)
{
    staged_defs *s;
    popc_status st;

    if (!g || !g->open)
        return closed();
    if ((st = check_def(kind, d, g->path)) != POPC_OK)
        return refuse(g, st);
    if (g->abi != POPC_PLUGIN_ABI_MAJOR &&
        (st = popci_layer_abi_compat->accepts(kind, g->path)) != POPC_OK)
        return refuse(g, st);
    s = &g->staged[kind];
    if (reserve(&s->defs, &s->cap, s->n + 1, sizeof *s->defs))
        return refuse(g, popc_set_error(POPC_ENOMEM, "%s: out of memory",
                                        g->path));
    copy_def(kind, &s->defs[s->n++], d);
    return POPC_OK;
}

/* The host members, one per kind: their types are the plugin ABI. */
static popc_status stage_op(popc_registrar *g, const popc_op_def *d)
{
    return stage(g, POPCI_KIND_OP, d);
}

static popc_status stage_optim(popc_registrar *g, const popc_optim_def *d)
{
    return stage(g, POPCI_KIND_OPTIM, d);
}

static popc_status stage_backend(popc_registrar *g, const popc_backend_def *d)
{
    return stage(g, POPCI_KIND_BACKEND, d);
}

static popc_status stage_collectives(popc_registrar *g,
                                     const popc_collectives_def *d)
{
    return stage(g, POPCI_KIND_COLLS, d);
}

popc_status popci_registry_stage_kernel(popc_registrar *g,
                                        const popc_kernel_def *d)
{
    return stage(g, POPCI_KIND_KERNEL, d);
}

static popc_host plugin_host;
static popc_host compat_host;  /* what plugins of an older ABI get */
static pthread_once_t plugin_host_once = PTHREAD_ONCE_INIT;

static void make_plugin_host(void)
{
    plugin_host = *popci_host();
    plugin_host.register_op = stage_op;
    plugin_host.register_optimizer = stage_optim;
    plugin_host.register_backend = stage_backend;
    plugin_host.register_collectives = stage_collectives;
    compat_host = plugin_host;
    if (popci_layer_abi_compat)
        popci_layer_abi_compat->host_patch(&compat_host);
}

static void staged_clear(popc_registrar *g)
{
    for (int k = 0; k < POPCI_KIND_COUNT; k++) {
        free(g->staged[k].defs);
        memset(&g->staged[k], 0, sizeof g->staged[k]);
    }
}

static void registrar_free(popc_registrar *g)
{
    if (!g)
        return;
    staged_clear(g);
    free(g);
}

/* Free what the adapter of an older ABI kept for e. */
static void forget(popci_entry *e)
{
    if (e && e->origin) {
        popci_layer_abi_compat->forget(e->origin);
        e->origin = NULL;
    }
}

const void *popci_registry_origin(const void *def)
{
    return popci_entry_of(def)->origin;
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
    for (int k = 0; k < POPCI_KIND_COUNT; k++) {
        for (int i = 0; i < r->tables[k].n; i++) {
            forget(r->tables[k].entries[i]);
            free(r->tables[k].entries[i]);
        }
        free(r->tables[k].entries);
    }
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

static int find_same(const popc_registry *r, popci_kind kind,
                     const popci_def *d)
{
    const popci_table *t = &r->tables[kind];

    for (int i = 0; i < t->n; i++)
        if (kinds[kind].same(&t->entries[i]->def, d))
            return i;
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

/* Sets the error for d of `kind` found already registered at index have
** (d->what "is already registered by" its owner). */
static popc_status already(const popc_registry *r, popci_kind kind, int have,
                           const popci_def *d, const char *who,
                           const char *pending, const char *tail)
{
    char *what = kinds[kind].describe(d);
    popc_status st = popc_set_error(
        POPC_EEXIST, "%s: %s %s already registered by %s%s", who,
        what ? what : "definition", kinds[kind].verb,
        owner_name(r, r->tables[kind].entries[have]->plugin, pending), tail);

    free(what);
    return st;
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
    int total = 0, n_entries = 0, n_items = 0;
    popci_entry **entries = NULL;
    popc_status st = POPC_OK;

    for (int k = 0; k < POPCI_KIND_COUNT; k++) {
        total += g->staged[k].n;
        if (reserve(&r->tables[k].entries, &r->tables[k].cap,
                    r->tables[k].n + g->staged[k].n,
                    sizeof *r->tables[k].entries))
            goto nomem;
    }
    if (reserve(&r->plugins, &r->cap_plugins, r->n_plugins + 1,
                sizeof *r->plugins))
        goto nomem;
    if (!(p->items = popci_calloc((size_t)total + 1, sizeof *p->items)) ||
        !(entries = popci_calloc((size_t)total + 1, sizeof *entries)))
        goto nomem;
    for (int i = 0; i < total; i++)
        if (!(entries[n_entries++] = popci_malloc(sizeof **entries)))
            goto nomem;
    /* Adapting an older ABI's definitions allocates too: before linking. */
    n_entries = 0;
    for (int k = 0; k < POPCI_KIND_COUNT; k++)
        for (int i = 0; i < g->staged[k].n; i++) {
            popci_entry *e = entries[n_entries++];

            e->def = g->staged[k].defs[i];
            e->plugin = idx;
            e->origin = NULL;
            if (g->abi != POPC_PLUGIN_ABI_MAJOR &&
                popci_layer_abi_compat->adapt((popci_kind)k, &e->def,
                                              &e->origin) != POPC_OK)
                goto nomem_adapted;
        }

    /* Nothing below fails except item names (then the item is "?"). */
    n_entries = 0;
    for (int k = 0; k < POPCI_KIND_COUNT; k++)
        for (int i = 0; i < g->staged[k].n; i++) {
            popci_entry *e = entries[n_entries];
            int have = find_same(r, (popci_kind)k, &e->def);

            entries[n_entries++] = NULL;
            if (have >= 0) {
                already(r, (popci_kind)k, have, &e->def, g->path, g->path,
                        "; keeping the first");
                duplicate(r, &st, first, first_size);
                forget(e);
                free(e);
                continue;
            }
            r->tables[k].entries[r->tables[k].n++] = e;
            p->items[n_items++] = kinds[k].item(&e->def);
            p->n_items_of[k]++;
        }
    for (int i = 0; i < popci_plugin_n_items(p); i++)
        if (!p->items[i])
            p->items[i] = dup_str("?");
    r->plugins[r->n_plugins++] = p;
    free(entries);
    return st;
nomem_adapted:
    for (int i = 0; i < n_entries; i++)
        forget(entries[i]);
    n_entries = total;
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
    g->abi = info->abi_version;
    g->open = 1;
    st = info->init(g->abi == POPC_PLUGIN_ABI_MAJOR ? &plugin_host
                                                    : &compat_host,
                    g);
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
    staged_clear(g);
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

int popci_registry_def_plugin(const popc_registry *r, popci_kind kind,
                              const void *def)
{
    int plugin = -1;

    read_lock(r);
    for (int i = 0; def && i < r->tables[kind].n; i++)
        if (&r->tables[kind].entries[i]->def == def)
            plugin = r->tables[kind].entries[i]->plugin;
    unlock(r);
    return plugin;
}

popc_status popc_registry_add_op(popc_registry *r, const popc_op_def *def)
{
    popci_table *t;
    popci_entry *e;
    popci_def d;
    popc_status st;
    int have;

    if (!r)
        return popc_set_error(POPC_EINVAL, "popc_registry_add_op: registry "
                              "is NULL");
    if ((st = check_def(POPCI_KIND_OP, def, "popc_registry_add_op")) !=
        POPC_OK)
        return st;
    copy_def(POPCI_KIND_OP, &d, def);
    t = &r->tables[POPCI_KIND_OP];
    write_lock(r);
    if ((have = find_same(r, POPCI_KIND_OP, &d)) >= 0) {
        st = already(r, POPCI_KIND_OP, have, &d, "popc_registry_add_op",
                     NULL, "");
        goto out;
    }
    if (reserve(&t->entries, &t->cap, t->n + 1, sizeof *t->entries) ||
        !(e = popci_malloc(sizeof *e))) {
        st = popc_set_error(POPC_ENOMEM, "popc_registry_add_op: out of "
                            "memory");
        goto out;
    }
    e->def = d;
    e->plugin = -1;
    e->origin = NULL;
    t->entries[t->n++] = e;
out:
    unlock(r);
    return st;
}

/* ---- lookups ------------------------------------------------------------- */

/* The definition of `kind` named name (any kind but ops), or NULL. */
static const popci_def *find_named(const popc_registry *r, popci_kind kind,
                                   const char *name)
{
    const popci_def *d = NULL;
    popci_def key;

    if (!r || !name)
        return NULL;
    memset(&key, 0, sizeof key);
    /* every named kind keeps its name right after its size */
    key.optim.name = name;
    _Static_assert(offsetof(popc_optim_def, name) ==
                           offsetof(popc_backend_def, name) &&
                       offsetof(popc_optim_def, name) ==
                           offsetof(popc_collectives_def, name),
                   "named definitions keep the name at one offset");
    read_lock(r);
    for (int i = find_same(r, kind, &key); !d && i >= 0; i = -1)
        d = &r->tables[kind].entries[i]->def;
    unlock(r);
    return d;
}

/* Entry i of `kind`'s table (NULL when out of range). */
static const popci_def *def_at(const popc_registry *r, popci_kind kind,
                               int i)
{
    const popci_def *d = NULL;

    if (!r)
        return NULL;
    read_lock(r);
    if (i >= 0 && i < r->tables[kind].n)
        d = &r->tables[kind].entries[i]->def;
    unlock(r);
    return d;
}

static int def_count(const popc_registry *r, popci_kind kind)
{
    int n;

    if (!r)
        return 0;
    read_lock(r);
    n = r->tables[kind].n;
    unlock(r);
    return n;
}

const popc_op_def *popc_registry_find_op(const popc_registry *r,
                                         const char *domain, const char *name,
                                         int version)
{
    const popci_table *t;
    const popc_op_def *best = NULL;

    if (!r || !name)
        return NULL;
    domain = op_domain(domain);
    t = &r->tables[POPCI_KIND_OP];
    read_lock(r);
    for (int i = 0; i < t->n; i++) {
        const popc_op_def *d = &t->entries[i]->def.op;
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
    const popci_table *t;
    const popc_op_def *best = NULL;

    if (!r || role <= POPC_ROLE_NONE || role >= POPC_ROLE_COUNT)
        return NULL;
    t = &r->tables[POPCI_KIND_OP];
    read_lock(r);
    for (int i = 0; i < t->n; i++) {
        const popc_op_def *d = &t->entries[i]->def.op;
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
    const popci_def *d = find_named(r, POPCI_KIND_OPTIM, name);

    return d ? &d->optim : NULL;
}

const popc_backend_def *popc_registry_find_backend(const popc_registry *r,
                                                   const char *name)
{
    const popci_def *d = find_named(r, POPCI_KIND_BACKEND, name);

    return d ? &d->backend : NULL;
}

void popci_registry_backend_names(const popc_registry *r, char *buf,
                                  size_t size)
{
    const popci_table *t = &r->tables[POPCI_KIND_BACKEND];
    size_t off = 0;

    buf[0] = '\0';
    read_lock(r);
    for (int i = 0; i < t->n && off + 1 < size; i++)
        off += (size_t)snprintf(buf + off, size - off, "%s'%s'",
                                i ? ", " : "", t->entries[i]->def.backend.name);
    unlock(r);
    if (!buf[0])
        snprintf(buf, size, "none");
}

const popc_backend_def *popc_registry_best_backend(const popc_registry *r,
                                                   unsigned need,
                                                   unsigned refuse)
{
    const popci_table *t;
    const popc_backend_def *best = NULL;

    if (!r)
        return NULL;
    t = &r->tables[POPCI_KIND_BACKEND];
    read_lock(r);
    for (int i = 0; i < t->n; i++) {
        const popc_backend_def *d = &t->entries[i]->def.backend;

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
    const popci_def *d = find_named(r, POPCI_KIND_COLLS, name);

    return d ? &d->colls : NULL;
}

int popc_registry_collectives_count(const popc_registry *r)
{
    return def_count(r, POPCI_KIND_COLLS);
}

const popc_collectives_def *popc_registry_collectives_at(
    const popc_registry *r, int i)
{
    const popci_def *d = def_at(r, POPCI_KIND_COLLS, i);

    return d ? &d->colls : NULL;
}

const popc_host *popc_registry_host(void)
{
    return popci_host();
}

int popc_registry_op_count(const popc_registry *r)
{
    return def_count(r, POPCI_KIND_OP);
}

const popc_op_def *popc_registry_op_at(const popc_registry *r, int i)
{
    const popci_def *d = def_at(r, POPCI_KIND_OP, i);

    return d ? &d->op : NULL;
}

int popc_registry_kernel_count(const popc_registry *r)
{
    return def_count(r, POPCI_KIND_KERNEL);
}

const popc_kernel_def *popc_registry_kernel_at(const popc_registry *r, int i)
{
    const popci_def *d = def_at(r, POPCI_KIND_KERNEL, i);

    return d ? &d->kernel : NULL;
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
        rec.n_ops = r->plugins[i]->n_items_of[POPCI_KIND_OP];
        rec.n_optimizers = r->plugins[i]->n_items_of[POPCI_KIND_OPTIM];
        rec.n_backends = r->plugins[i]->n_items_of[POPCI_KIND_BACKEND];
        rec.n_collectives = r->plugins[i]->n_items_of[POPCI_KIND_COLLS];
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
