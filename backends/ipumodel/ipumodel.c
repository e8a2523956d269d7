/* ipumodel.c - the threaded IPU model backend: maps the plan onto the
** tiles of Mk1/Mk2 IPUs (failing like Poplar when a tile overflows), runs
** nodes bulk-synchronously on a persistent worker pool, runs replicas and
** pipeline stages concurrently, and estimates cycles.
**
** Bitwise agreement with the cpu backend: every node gets the same
** inputs, attributes and seed (the host's POPC_SERVICE_PLAN_KERNEL_CTX)
** as on cpu; split kernels
** write disjoint shares and promise the whole-run result for any part
** count (POPC_OP_SPLIT), and concurrent tasks are independent (the core
** orders every reduction). OpenBLAS is set to one thread while a context
** is open, because each worker calls it on its own share; the previous
** setting is restored when the last context closes.
**
** Host ops (POPC_OP_HOST, user callbacks) run one at a time across
** concurrent replicas: a callback need not be thread-safe.
*/
#include "config.h"

#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "backends/common/fpx.h"
#include "backends/common/services.h"
#include "backends/common/tilemap.h"
#include "backends/ipumodel/calibrate.h"
#include "backends/ipumodel/pool.h"

#define MAX_IO 64
#define WHO "ipumodel"
/* Parts per worker at most: smaller parts even out the load when a worker
** is slow or descheduled (parts are taken, not assigned). */
#define PARTS_PER_WORKER 4

typedef struct ctx {
    ipum_device dev;
    ipum_pool *pool;
    int threads;
    pthread_mutex_t host_ops;
    atomic_llong parallel_calls;
} ctx;

typedef struct exe {
    const popc_plan *plan;     /* borrowed from the core */
    ipum_map *map;
    int *parts;                /* per node, with the whole pool free */
    atomic_llong nodes_run, split_runs;
} exe;

typedef struct split_arg {
    const popc_kernel_ctx *kc;
    popc_status (*forward)(const popc_kernel_ctx *kc);
    int n_parts;
    const char *op;            /* for floating-point exception errors */
} split_arg;

static const popc_host *kernel_host;
static popc_plan_kernel_ctx_fn plan_kernel_ctx;

/* OpenBLAS threads, shared by every open context. */
static pthread_mutex_t blas_mu = PTHREAD_MUTEX_INITIALIZER;
static int blas_users, blas_saved;

static void blas_acquire(void)
{
    pthread_mutex_lock(&blas_mu);
    if (blas_users++ == 0) {
        blas_saved = openblas_get_num_threads();
        openblas_set_num_threads(1);
    }
    pthread_mutex_unlock(&blas_mu);
}

static void blas_release(void)
{
    pthread_mutex_lock(&blas_mu);
    if (--blas_users == 0 && blas_saved > 1)
        openblas_set_num_threads(blas_saved);
    pthread_mutex_unlock(&blas_mu);
}

/* ---- open / close ------------------------------------------------------- */

static void ipm_close(void *vctx)
{
    ctx *c = vctx;

    if (!c)
        return;
    if (c->pool) {
        ipum_pool_free(c->pool);
        blas_release();
    }
    pthread_mutex_destroy(&c->host_ops);
    ipum_host->free(c);
}

static popc_status ipm_open(const popc_backend_config *cfg, void **out)
{
    uint32_t size = cfg ? cfg->size : 0;
    ctx *c;
    popc_status st;

    *out = NULL;
    if (!(c = ipum_host->alloc(sizeof *c)))
        return ipum_host->set_error(POPC_ENOMEM, WHO " backend: out of "
                                    "memory");
    pthread_mutex_init(&c->host_ops, NULL);
    atomic_init(&c->parallel_calls, 0);
    if ((st = ipum_device_init(cfg, WHO, &c->dev)) != POPC_OK)
        goto fail;
    if (POPC_HAS_FIELD(popc_backend_config, size, threads))
        c->threads = cfg->threads;
    if (c->threads < 0) {
        st = ipum_host->set_error(POPC_ECONFIG, WHO " backend: threads "
                                  "must be 0 (one per core) or more, got "
                                  "%d", c->threads);
        goto fail;
    }
    if (c->threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        c->threads = n > 0 ? (int)n : 1;
    }
    if ((st = ipum_pool_new(c->threads, &c->pool)) != POPC_OK)
        goto fail;
    blas_acquire();
    *out = c;
    return POPC_OK;
fail:
    ipm_close(c);
    return st;
}

/* ---- compile ------------------------------------------------------------ */

/* Slot references are checked by the tile map. */
static popc_status check_node(const popc_plan *plan, int k)
{
    const popc_plan_node *n = popc_plan_node_at(plan, k);
    const char *name = n->name ? n->name : "(unnamed)";

    if (!n->op || !n->op->forward)
        return ipum_host->set_error(POPC_EBACKEND, WHO " backend: node %d "
                                    "'%s' has no kernel", k, name);
    if (n->n_inputs > MAX_IO || n->n_outputs > MAX_IO)
        return ipum_host->set_error(POPC_EBACKEND, WHO " backend: node '%s' "
                                    "has %d inputs and %d outputs; at most "
                                    "%d each are supported", name,
                                    n->n_inputs, n->n_outputs, MAX_IO);
    return POPC_OK;
}

static void ipm_exe_free(void *vctx, void *vexe);

static popc_status ipm_compile(void *vctx, const popc_plan *plan,
                               void **out)
{
    ctx *c = vctx;
    exe *e;
    popc_status st;

    *out = NULL;
    for (int k = 0; k < plan->n_nodes; k++)
        if ((st = check_node(plan, k)) != POPC_OK)
            return st;
    if (!(e = ipum_host->alloc(sizeof *e)) ||
        !(e->parts = ipum_host->alloc(sizeof(int) *
                                      (size_t)(plan->n_nodes + 1)))) {
        ipum_host->free(e);
        return ipum_host->set_error(POPC_ENOMEM, WHO " backend: out of "
                                    "memory");
    }
    e->plan = plan;
    atomic_init(&e->nodes_run, 0);
    atomic_init(&e->split_runs, 0);
    if ((st = ipum_map_build(&c->dev, plan, WHO, &e->map)) != POPC_OK)
        goto fail;
    for (int k = 0; k < plan->n_nodes; k++)
        e->parts[k] = ipum_cost_parts(e->map, k, c->threads * PARTS_PER_WORKER,
                                      ipum_host_gemm_rate());
    *out = e;
    return POPC_OK;
fail:
    ipm_exe_free(c, e);
    return st;
}

static void write_stats(ctx *c, exe *e, ipum_run_stats *s)
{
    s->threads = c->threads;
    s->nodes_run = atomic_load(&e->nodes_run);
    s->split_runs = atomic_load(&e->split_runs);
    s->parallel_calls = atomic_load(&c->parallel_calls);
}

static void ipm_exe_free(void *vctx, void *vexe)
{
    ctx *c = vctx;
    exe *e = vexe;

    if (!e)
        return;
    if (c)
        ipum_host->log_msg(POPC_LOG_DEBUG, WHO ": %lld nodes run, %lld split "
                           "over workers, %lld parallel calls, %d threads",
                           (long long)atomic_load(&e->nodes_run),
                           (long long)atomic_load(&e->split_runs),
                           (long long)atomic_load(&c->parallel_calls),
                           c->threads);
    ipum_map_free(e->map);
    ipum_host->free(e->parts);
    ipum_host->free(e);
}

/* ---- run ---------------------------------------------------------------- */

static popc_status run_part(void *arg, int part)
{
    const split_arg *a = arg;
    popc_kernel_ctx kc = *a->kc;

    popc_status st;

    kc.part = part;
    kc.n_parts = a->n_parts;
    if (!(kc.flags & POPC_KERNEL_FP_EXCEPTIONS))
        return a->forward(&kc);
    fpx_begin(); /* each worker thread has its own flags */
    if ((st = a->forward(&kc)) != POPC_OK)
        return st;
    return fpx_check(ipum_host, kc.node_name, a->op);
}

static popc_status ipm_run_nodes(void *vctx, void *vexe,
                                 const popc_frame *frame, int first, int last)
{
    ctx *c = vctx;
    exe *e = vexe;
    const popc_plan *plan = e->plan;
    int workers = ipum_pool_width(c->pool);
    int max_parts = workers > 1 ? workers * PARTS_PER_WORKER : 1;
    popc_view in[MAX_IO], out[MAX_IO];

    for (int k = first; k < last; k++) {
        const popc_plan_node *n = popc_plan_node_at(plan, k);
        int parts = e->parts[k] < max_parts ? e->parts[k] : max_parts;
        popc_kernel_ctx kc = {.size = sizeof kc};
        popc_status st;

        plan_kernel_ctx(kernel_host, plan, k, frame, in, out, &kc);
        if (n->op->flags & POPC_OP_HOST) {
            pthread_mutex_lock(&c->host_ops);
            st = n->op->forward(&kc);
            pthread_mutex_unlock(&c->host_ops);
        } else {
            split_arg a = {&kc, n->op->forward, parts, n->op->name};
            st = parts > 1 ? ipum_pool_split(c->pool, parts, run_part, &a)
                           : run_part(&a, 0);
            if (parts > 1)
                atomic_fetch_add_explicit(&e->split_runs, 1,
                                          memory_order_relaxed);
        }
        if (st != POPC_OK)
            return st;
    }
    atomic_fetch_add_explicit(&e->nodes_run, last - first,
                              memory_order_relaxed);
    return POPC_OK;
}

static popc_status ipm_parallel(void *vctx, int n,
                                popc_status (*fn)(void *arg, int i),
                                void *arg)
{
    ctx *c = vctx;

    atomic_fetch_add_explicit(&c->parallel_calls, 1, memory_order_relaxed);
    return ipum_pool_parallel(c->pool, n, fn, arg);
}

static double ipm_cycles(void *vctx, void *vexe, int first, int last)
{
    (void)vctx;
    return ipum_cost_cycles(((exe *)vexe)->map, first, last);
}

static popc_status ipm_report_to(void *vctx, void *vexe,
                                 popc_report_sink write, void *user)
{
    ipum_run_stats s;

    write_stats(vctx, vexe, &s);
    return ipum_report_to(((exe *)vexe)->map, WHO, &s, write, user);
}

static const popc_backend_def ipumodel_backend = {
    .size = sizeof(popc_backend_def),
    .name = "ipumodel",
    .caps = POPC_BACKEND_CAN_RUN | POPC_BACKEND_CONCURRENT |
            POPC_BACKEND_MODELS_IPUS | POPC_BACKEND_STOCHASTIC_ROUNDING,
    .score = 20, /* runs and models IPUs: the best stand-in */
    .open = ipm_open,
    .close = ipm_close,
    .compile = ipm_compile,
    .exe_free = ipm_exe_free,
    .run_nodes = ipm_run_nodes,
    .parallel = ipm_parallel,
    .cycles = ipm_cycles,
    .report_to = ipm_report_to,
};

static popc_status ipumodel_init(const popc_host *h, popc_registrar *reg)
{
    popc_status st;

    ipum_host = h;
    kernel_host = ipum_pool_setup(h);
    if ((st = backend_service(h, WHO, POPC_SERVICE_PLAN_KERNEL_CTX,
                              &plan_kernel_ctx, sizeof plan_kernel_ctx)) !=
        POPC_OK)
        return st;
    return h->register_backend(reg, &ipumodel_backend);
}

POPC_PLUGIN_DEFINE(ipumodel, "0.1.0", "threaded IPU model: Mk1/Mk2 tiles "
                   "and memory, bulk-synchronous worker pool, concurrent "
                   "replicas and stages, cycle estimates", "MIT",
                   ipumodel_init, NULL)
