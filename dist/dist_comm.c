/* dist_comm.c - the process-wide communicator of a distributed run, and
** the built-in single-process collectives.
**
** popc names no collectives plugin: with `collectives = auto` it asks
** every loaded one how well it fits this process (probe) and takes the
** best. A process joins one group for its lifetime, so the communicator
** is opened once and every later model must agree with it.
*/
#include "config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/distributed.h"
#include "popc/log.h"
#include "popc/registry.h"
#include "dist/dist_priv.h"

struct popci_comm {
    const popc_collectives_def *def;
    void *ctx;
    int rank, size;
    double timeout;
};

static pthread_mutex_t comm_lock = PTHREAD_MUTEX_INITIALIZER;
static popci_comm process_comm; /* def != NULL once joined */

/* ---- the built-in single-process collectives ----------------------------- */

static int local_probe(void)
{
    return 1;
}

static popc_status local_open(void **ctx, int *rank, int *n_ranks)
{
    *ctx = NULL;
    *rank = 0;
    *n_ranks = 1;
    return POPC_OK;
}

static void local_close(void *ctx)
{
    (void)ctx;
}

static popc_status no_peer(int peer)
{
    return popc_set_error(POPC_EINTERNAL, "single-process collectives: "
                          "there is no rank %d", peer);
}

static popc_status local_send(void *ctx, int to, const void *buf,
                              size_t bytes, double timeout)
{
    (void)ctx, (void)buf, (void)bytes, (void)timeout;
    return no_peer(to);
}

static popc_status local_recv(void *ctx, int from, void *buf, size_t bytes,
                              double timeout)
{
    (void)ctx, (void)buf, (void)bytes, (void)timeout;
    return no_peer(from);
}

static popc_status local_bcast(void *ctx, int root, void *buf, size_t bytes,
                               double timeout)
{
    (void)ctx, (void)buf, (void)bytes, (void)timeout;
    return root == 0 ? POPC_OK : no_peer(root);
}

static popc_status local_allgather(void *ctx, const void *mine, void *all,
                                   size_t bytes, double timeout)
{
    (void)ctx, (void)timeout;
    memmove(all, mine, bytes);
    return POPC_OK;
}

static void local_abort(void *ctx, int code)
{
    (void)ctx;
    exit(code);
}

static const popc_collectives_def local_def = {
    sizeof(popc_collectives_def), "single-process",
    "one process: every collective is a copy", local_probe, local_open,
    local_close, local_send, local_recv, local_bcast, local_allgather,
    local_abort};

static popci_comm local_comm = {&local_def, NULL, 0, 1, 0.0};

/* ---- choosing and joining ------------------------------------------------ */

static popc_status choose(const char *want, const popc_collectives_def **out)
{
    popc_registry *reg;
    int best = 0, n;
    popc_status st;

    *out = NULL;
    if ((st = popc_registry_global(&reg)) != POPC_OK)
        return st;
    n = popc_registry_collectives_count(reg);
    if (want && strcmp(want, "auto") != 0) {
        if (!(*out = popc_registry_find_collectives(reg, want)))
            return popc_set_error(POPC_ENOTFOUND, "collectives = %s: no "
                                  "loaded plugin provides these collectives "
                                  "(%d loaded; see `popc plugins`); use auto "
                                  "or the name of a loaded one", want, n);
        return POPC_OK;
    }
    for (int i = 0; i < n; i++) {
        const popc_collectives_def *d = popc_registry_collectives_at(reg, i);
        int score = d->probe();

        if (score > best) {
            best = score;
            *out = d;
        }
    }
    if (!*out)
        return popc_set_error(
            POPC_EUNSUPPORTED, "Distributed.numProcesses > 1 needs a "
            "collectives plugin that fits this process, and %s; launch the "
            "processes with mpirun (or `popc launch -n N`) from a popc built "
            "with MPI (Debian package libopenmpi-dev; configure --with-mpi)",
            n ? "none of the loaded ones does (is this process running "
                "under mpirun?)"
              : "none is loaded (this popc was built without MPI, or "
                "POPC_PLUGIN_PATH misses its collectives/ directory)");
    return POPC_OK;
}

/* Join the group, or check an earlier join, against the options. */
static popc_status join(const popc_options *o, int64_t np, int64_t pid)
{
    const popc_collectives_def *d;
    int rank = 0, size = 1;
    popc_status st;

    if (!process_comm.def) {
        if ((st = choose(popc_options_get_string(o, "collectives"), &d)) !=
            POPC_OK)
            return st;
        if ((st = d->open(&process_comm.ctx, &rank, &size)) != POPC_OK)
            return popc_set_error(st, "collectives '%s': joining the "
                                  "process group failed: %s", d->name,
                                  popc_last_error());
        process_comm.def = d;
        process_comm.rank = rank;
        process_comm.size = size;
        popci_log_set_rank(size > 1 ? rank : -1);
        popc_log(POPC_LOG_INFO, "distributed: rank %d of %d (collectives "
                 "'%s')", rank, size, d->name);
    }
    if (process_comm.size != np)
        return popc_set_error(POPC_ECONFIG, "Distributed.numProcesses is "
                              "%" PRId64 " but the launcher started %d "
                              "processes (collectives '%s'); leave "
                              "Distributed unset under mpirun, or launch "
                              "%" PRId64 " processes", np, process_comm.size,
                              process_comm.def->name, np);
    if (process_comm.rank != pid)
        return popc_set_error(POPC_ECONFIG, "Distributed.processId is "
                              "%" PRId64 " but this process is rank %d of "
                              "the launcher (collectives '%s'); leave "
                              "Distributed unset under mpirun so that both "
                              "agree", pid, process_comm.rank,
                              process_comm.def->name);
    return POPC_OK;
}

popc_status popci_comm_open(const popc_options *o, popci_comm **out)
{
    int64_t np = popc_options_get_int(o, "Distributed.numProcesses");
    int64_t pid = popc_options_get_int(o, "Distributed.processId");
    popc_status st;

    *out = NULL;
    if (np <= 1) {
        *out = &local_comm;
        return POPC_OK;
    }
    pthread_mutex_lock(&comm_lock);
    st = join(o, np, pid);
    if (st == POPC_OK) {
        /* the timeout is per run: the latest model's options */
        process_comm.timeout =
            (double)popc_options_get_int(o, "collectivesTimeout");
        *out = &process_comm;
    }
    pthread_mutex_unlock(&comm_lock);
    return st;
}

int popci_comm_rank(const popci_comm *c)
{
    return c->rank;
}

int popci_comm_size(const popci_comm *c)
{
    return c->size;
}

/* ---- calls with context -------------------------------------------------- */

static popc_status context(popci_comm *c, popc_status st, const char *what)
{
    if (st == POPC_OK)
        return st;
    /* the rank itself is in every log and CLI line of a distributed run */
    return popc_set_error(POPC_EDISTRIBUTED, "distributed run of %d ranks, "
                          "%s: %s", c->size, what, popc_last_error());
}

popc_status popci_comm_send(popci_comm *c, int to, const void *buf,
                            size_t bytes, const char *what)
{
    return context(c, c->def->send(c->ctx, to, buf, bytes, c->timeout),
                   what);
}

popc_status popci_comm_recv(popci_comm *c, int from, void *buf, size_t bytes,
                            const char *what)
{
    return context(c, c->def->recv(c->ctx, from, buf, bytes, c->timeout),
                   what);
}

popc_status popci_comm_bcast(popci_comm *c, int root, void *buf,
                             size_t bytes, const char *what)
{
    return context(c, c->def->bcast(c->ctx, root, buf, bytes, c->timeout),
                   what);
}

popc_status popci_comm_allgather(popci_comm *c, const void *mine, void *all,
                                 size_t bytes, const char *what)
{
    return context(c, c->def->allgather(c->ctx, mine, all, bytes,
                                        c->timeout),
                   what);
}

popc_status popci_comm_agree(popci_comm *c, uint64_t value, const char *what,
                             const char *fix)
{
    uint64_t *all = calloc((size_t)c->size, sizeof *all);
    popc_status st;

    if (!all)
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", what);
    st = popci_comm_allgather(c, &value, all, sizeof value, what);
    for (int r = 1; st == POPC_OK && r < c->size; r++)
        if (all[r] != all[0])
            st = popc_set_error(POPC_EDISTRIBUTED, "%s differs on rank %d "
                                "from rank 0's (%016" PRIx64 " against "
                                "%016" PRIx64 "); %s", what, r, all[r],
                                all[0], fix);
    free(all);
    return st;
}

/* ---- popc/distributed.h -------------------------------------------------- */

int popc_distributed_rank(void)
{
    int r;

    pthread_mutex_lock(&comm_lock);
    r = process_comm.def ? process_comm.rank : 0;
    pthread_mutex_unlock(&comm_lock);
    return r;
}

int popc_distributed_size(void)
{
    int n;

    pthread_mutex_lock(&comm_lock);
    n = process_comm.def ? process_comm.size : 1;
    pthread_mutex_unlock(&comm_lock);
    return n;
}

void popc_distributed_abort(int exit_code)
{
    /* no lock: a failing thread must be able to stop the run even while
    ** another one is inside a collective */
    if (process_comm.def)
        process_comm.def->abort(process_comm.ctx, exit_code);
}

void popc_distributed_finalize(void)
{
    pthread_mutex_lock(&comm_lock);
    if (process_comm.def) {
        process_comm.def->close(process_comm.ctx);
        memset(&process_comm, 0, sizeof process_comm);
    }
    pthread_mutex_unlock(&comm_lock);
}
