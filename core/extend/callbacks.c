/* callbacks.c - host callbacks of a model: the functions CPU ops
** (poptorch.CPU, op popc::HostOp) call by ID while a graph runs.
**
** The registry's first member is the popci_callback_impl that host.c's
** host_call forwards to, so kernels reach it through kc->user without
** knowing the model. Calls are serialised by a mutex: backends may run
** replicas on several threads, and a callback need not be thread-safe.
** The time spent inside callbacks is summed for the model's latency
** figures (the device waits for the host meanwhile).
*/
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc_priv.h"
#include "core/extend/callbacks_priv.h"
#include "core/host_priv.h"
#include "core/runtime/model_priv.h"

typedef struct entry {
    char *id;
    popc_callback_fn fn;
    void *user;
} entry;

struct popci_callbacks {
    popci_callback_impl impl;   /* first: kc->user points here */
    pthread_mutex_t lock;
    entry *items;
    int n, cap;
    double seconds;             /* inside callbacks since the last take */
};

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const entry *find(const popci_callbacks *cb, const char *id)
{
    for (int i = 0; cb && i < cb->n; i++)
        if (strcmp(cb->items[i].id, id) == 0)
            return &cb->items[i];
    return NULL;
}

static popc_status missing(const char *id)
{
    return popc_set_error(POPC_ENOTFOUND, "CPU op '%s': no callback is "
                          "registered under this ID with the model running "
                          "it; call popc_model_register_callback(model, "
                          "\"%s\", fn, user) before running", id, id);
}

static popc_status call(void *self, const char *id, const popc_view *in,
                        int n_in, const popc_view *out, int n_out)
{
    popci_callbacks *cb = self;
    const entry *e;
    double t0;
    popc_status st;

    if (!id)
        return popc_set_error(POPC_EINVAL, "CPU op: the node has no ID");
    pthread_mutex_lock(&cb->lock);
    if (!(e = find(cb, id))) {
        pthread_mutex_unlock(&cb->lock);
        return missing(id);
    }
    /* an empty message after a failure means the callback gave none */
    popc_set_error(POPC_OK, "%s", "");
    t0 = now();
    st = e->fn(e->user, in, n_in, out, n_out);
    cb->seconds += now() - t0;
    pthread_mutex_unlock(&cb->lock);
    if (st == POPC_OK)
        return POPC_OK;
    if (!popc_last_error()[0])
        return popc_set_error(POPC_ECALLBACK, "CPU op '%s': the callback "
                              "failed with %s and gave no message", id,
                              popc_status_name(st));
    return popc_set_error(POPC_ECALLBACK, "CPU op '%s': the callback "
                          "failed: %s", id, popc_last_error());
}

static popc_status call_unregistered(void *self, const char *id,
                                     const popc_view *in, int n_in,
                                     const popc_view *out, int n_out)
{
    (void)self;
    (void)in;
    (void)n_in;
    (void)out;
    (void)n_out;
    return missing(id ? id : "(null)");
}

/* Shared by every model without callbacks; never written. */
static popci_callback_impl no_callbacks = {call_unregistered};

popc_status popci_callbacks_new(popci_callbacks **out)
{
    popci_callbacks *cb;

    *out = NULL;
    if (!(cb = popci_calloc(1, sizeof *cb)))
        return popc_set_error(POPC_ENOMEM, "callbacks: out of memory");
    if (pthread_mutex_init(&cb->lock, NULL) != 0) {
        free(cb);
        return popc_set_error(POPC_ENOMEM, "callbacks: cannot create a "
                              "mutex");
    }
    cb->impl.call = call;
    *out = cb;
    return POPC_OK;
}

void popci_callbacks_free(popci_callbacks *cb)
{
    if (!cb)
        return;
    for (int i = 0; i < cb->n; i++)
        free(cb->items[i].id);
    free(cb->items);
    pthread_mutex_destroy(&cb->lock);
    free(cb);
}

static int ascii_printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            return 0;
    return 1;
}

popc_status popci_callbacks_add(popci_callbacks *cb, const char *id,
                                popc_callback_fn fn, void *user)
{
    const entry *have;
    entry *grown;
    char *copy;

    if (!cb || !id || !fn)
        return popc_set_error(POPC_EINVAL, "popc_model_register_callback: "
                              "%s is NULL", !cb ? "model" : !id ? "id" : "fn");
    if (!id[0] || !ascii_printable(id))
        return popc_set_error(POPC_EINVAL, "popc_model_register_callback: "
                              "the ID must be a non-empty printable ASCII "
                              "string");
    pthread_mutex_lock(&cb->lock);
    if ((have = find(cb, id)) != NULL) {
        int same = have->fn == fn && have->user == user;

        pthread_mutex_unlock(&cb->lock);
        if (same)
            return POPC_OK;
        return popc_set_error(POPC_EEXIST, "popc_model_register_callback: "
                              "a different callback is already registered "
                              "under '%s'; the first registration of an ID "
                              "wins, so it stays; use another ID", id);
    }
    if (cb->n == cb->cap) {
        int cap = cb->cap ? 2 * cb->cap : 8;

        if (!(grown = popci_realloc(cb->items, (size_t)cap * sizeof *grown))) {
            pthread_mutex_unlock(&cb->lock);
            return popc_set_error(POPC_ENOMEM, "callbacks: out of memory");
        }
        cb->items = grown;
        cb->cap = cap;
    }
    if (!(copy = popci_strdup(id))) {
        pthread_mutex_unlock(&cb->lock);
        return popc_set_error(POPC_ENOMEM, "callbacks: out of memory");
    }
    cb->items[cb->n++] = (entry){copy, fn, user};
    pthread_mutex_unlock(&cb->lock);
    return POPC_OK;
}

void *popci_callbacks_user(popci_callbacks *cb)
{
    return cb ? (void *)&cb->impl : (void *)&no_callbacks;
}

double popci_callbacks_take_seconds(popci_callbacks *cb)
{
    double s;

    if (!cb)
        return 0.0;
    pthread_mutex_lock(&cb->lock);
    s = cb->seconds;
    cb->seconds = 0.0;
    pthread_mutex_unlock(&cb->lock);
    return s;
}

/* ---- public API -------------------------------------------------------------- */

popc_status popc_model_register_callback(popc_model *m, const char *id,
                                         popc_callback_fn fn, void *user)
{
    popc_status st;

    if (!m)
        return popc_set_error(POPC_EINVAL, "popc_model_register_callback: "
                              "model is NULL");
    if (!m->callbacks &&
        (st = popci_callbacks_new(&m->callbacks)) != POPC_OK)
        return st;
    return popci_callbacks_add(m->callbacks, id, fn, user);
}
