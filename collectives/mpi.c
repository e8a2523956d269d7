/* mpi.c - collectives over Open MPI, for ranks launched by mpirun (or
** `popc launch`, which runs mpirun).
**
** Every wait is a nonblocking MPI call polled against a deadline, so a
** rank that stopped answering turns into an error naming it after
** collectivesTimeout seconds instead of a hang; a rank that died is
** reported by mpirun, which stops the others. Polling backs off to short
** sleeps: ranks are often oversubscribed (more ranks than cores), and a
** spinning waiter would steal the core its peer needs.
**
** The module promotes libmpi to global symbol visibility before MPI_Init,
** because Open MPI's own components (dlopened by libmpi) resolve symbols
** of libmpi, which popc's loader opened with local visibility.
*/
#include "config.h"

#include <dlfcn.h>
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "popc/collectives.h"
#include "popc/plugin.h"

static const popc_host *host;

typedef struct mpi_ctx {
    MPI_Comm comm;
    int rank, size;
    int we_initialised;        /* MPI_Init was ours: MPI_Finalize is too */
} mpi_ctx;

static mpi_ctx *open_ctx;      /* the one joined group, for exit */

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static popc_status mpi_error(int rc, const char *call)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "error %d", rc);
    return host->set_error(POPC_EDISTRIBUTED, "%s failed: %s", call, text);
}

/* Poll req until done or the deadline; peer < 0: unknown (a collective). */
static popc_status wait_for(MPI_Request *req, double timeout, int peer,
                            const char *call)
{
    double t0 = now();
    long polls = 0;

    for (;;) {
        int done = 0, rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);

        if (rc != MPI_SUCCESS)
            return mpi_error(rc, call);
        if (done)
            return POPC_OK;
        if (timeout > 0 && now() - t0 > timeout) {
            if (peer >= 0)
                return host->set_error(
                    POPC_EDISTRIBUTED, "%s: rank %d did not answer within "
                    "%g s (collectivesTimeout): it stopped, hung or is far "
                    "slower than this rank", call, peer, timeout);
            return host->set_error(
                POPC_EDISTRIBUTED, "%s: some rank did not take part within "
                "%g s (collectivesTimeout): it stopped, hung or is far "
                "slower than this rank", call, timeout);
        }
        /* spin briefly for fast replies, then sleep up to 1 ms */
        if (++polls > 2000) {
            long ns = polls > 20000 ? 1000000L : 50000L;
            struct timespec ts = {0, ns};
            nanosleep(&ts, NULL);
        }
    }
}

static int promote_libmpi(void)
{
    Dl_info info;

    /* keeps libmpi loaded and makes its symbols global; the handle is
    ** deliberately never closed */
    if (dladdr((void *)&MPI_Init_thread, &info) && info.dli_fname &&
        dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD))
        return 0;
    return -1;
}

static int mpi_probe(void)
{
    /* inside an Open MPI (or PMIx) launch */
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK"))
        return 10;
    return 0;
}

static void finalize_at_exit(void)
{
    mpi_ctx *c = open_ctx;
    int finalized = 0;

    open_ctx = NULL;
    if (!c)
        return;
    MPI_Comm_free(&c->comm);
    if (c->we_initialised && MPI_Finalized(&finalized) == MPI_SUCCESS &&
        !finalized)
        MPI_Finalize();
    free(c);
}

static popc_status mpi_open(void **out, int *rank, int *n_ranks)
{
    mpi_ctx *c;
    int inited = 0, provided = 0, rc;

    *out = NULL;
    if (open_ctx)
        return host->set_error(POPC_ESTATE, "MPI collectives: this process "
                               "already joined its group");
    if (!(c = calloc(1, sizeof *c)))
        return host->set_error(POPC_ENOMEM, "MPI collectives: out of memory");
    if (promote_libmpi() != 0)
        host->log_msg(POPC_LOG_WARN, "MPI collectives: could not make "
                      "libmpi's symbols global (%s); MPI_Init may fail to "
                      "load Open MPI components", dlerror());
    MPI_Initialized(&inited);
    if (!inited) {
        /* popc calls MPI from one thread at a time */
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
        if (rc != MPI_SUCCESS) {
            free(c);
            return mpi_error(rc, "MPI_Init_thread");
        }
        c->we_initialised = 1;
    }
    if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &c->comm)) != MPI_SUCCESS) {
        free(c);
        return mpi_error(rc, "MPI_Comm_dup");
    }
    /* errors come back as codes: popc reports them, then aborts */
    MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(c->comm, &c->rank);
    MPI_Comm_size(c->comm, &c->size);
    open_ctx = c;
    atexit(finalize_at_exit);
    *rank = c->rank;
    *n_ranks = c->size;
    *out = c;
    return POPC_OK;
}

static void mpi_close(void *ctx)
{
    if (ctx && ctx == open_ctx)
        finalize_at_exit();
}

/* MPI counts are ints: big buffers go in pieces of at most 1 GiB. */
#define PIECE ((size_t)1 << 30)

/* One point-to-point transfer; a zero-byte message still pairs a send
** with its receive. */
static popc_status p2p(mpi_ctx *c, int sending, int peer, void *buf,
                       size_t bytes, double timeout)
{
    popc_status st = POPC_OK;
    size_t at = 0;

    do {
        size_t n = bytes - at < PIECE ? bytes - at : PIECE;
        MPI_Request req;
        int rc = sending ? MPI_Isend((char *)buf + at, (int)n, MPI_BYTE,
                                     peer, 0, c->comm, &req)
                         : MPI_Irecv((char *)buf + at, (int)n, MPI_BYTE,
                                     peer, 0, c->comm, &req);

        st = rc == MPI_SUCCESS
                 ? wait_for(&req, timeout, peer,
                            sending ? "MPI send" : "MPI receive")
                 : mpi_error(rc, sending ? "MPI_Isend" : "MPI_Irecv");
        at += n;
    } while (st == POPC_OK && at < bytes);
    return st;
}

static popc_status mpi_send(void *ctx, int to, const void *buf, size_t bytes,
                            double timeout)
{
    /* MPI_Isend does not write the buffer */
    return p2p(ctx, 1, to, (void *)(uintptr_t)buf, bytes, timeout);
}

static popc_status mpi_recv(void *ctx, int from, void *buf, size_t bytes,
                            double timeout)
{
    return p2p(ctx, 0, from, buf, bytes, timeout);
}

static popc_status mpi_bcast(void *ctx, int root, void *buf, size_t bytes,
                             double timeout)
{
    mpi_ctx *c = ctx;
    popc_status st = POPC_OK;

    for (size_t at = 0; st == POPC_OK && at < bytes;) {
        size_t n = bytes - at < PIECE ? bytes - at : PIECE;
        MPI_Request req;
        int rc = MPI_Ibcast((char *)buf + at, (int)n, MPI_BYTE, root,
                            c->comm, &req);

        st = rc == MPI_SUCCESS
                 ? wait_for(&req, timeout, c->rank == root ? -1 : root,
                            "MPI broadcast")
                 : mpi_error(rc, "MPI_Ibcast");
        at += n;
    }
    return st;
}

static popc_status mpi_allgather(void *ctx, const void *mine, void *all,
                                 size_t bytes, double timeout)
{
    mpi_ctx *c = ctx;
    MPI_Request req;
    int rc;

    if (bytes > (size_t)INT_MAX)
        return host->set_error(POPC_EINVAL, "MPI allgather: %zu bytes per "
                               "rank is more than MPI can count", bytes);
    rc = MPI_Iallgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes,
                        MPI_BYTE, c->comm, &req);
    if (rc != MPI_SUCCESS)
        return mpi_error(rc, "MPI_Iallgather");
    return wait_for(&req, timeout, -1, "MPI allgather");
}

static void mpi_abort(void *ctx, int code)
{
    (void)ctx;
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    _Exit(code); /* MPI_Abort does not return; be sure */
}

static const popc_collectives_def mpi_def = {
    .size = sizeof(popc_collectives_def),
    .name = "mpi",
    .description = "Open MPI: point-to-point and collectives polled against "
                   "collectivesTimeout",
    .probe = mpi_probe,
    .open = mpi_open,
    .close = mpi_close,
    .send = mpi_send,
    .recv = mpi_recv,
    .bcast = mpi_bcast,
    .allgather = mpi_allgather,
    .abort = mpi_abort,
};

static popc_status init(const popc_host *h, popc_registrar *reg)
{
    host = h;
    if (!POPC_HAS_FIELD(popc_host, h->size, register_collectives))
        return h->set_error(POPC_EABI, "mpi: this popc is too old for "
                            "collectives plugins (it needs 0.3.0)");
    return h->register_collectives(reg, &mpi_def);
}

POPC_PLUGIN_DEFINE(mpi, "0.3.0", "Open MPI collectives for distributed runs",
                   "MIT", init, NULL)
