/* cpu.c - the reference backend: runs every node's reference kernel whole,
** one after the other, on the calling thread.
**
** It is the oracle the other backends are checked against, so it stays
** obviously correct: no splitting, no concurrency, no memory modelling.
** compile() only checks that the plan is runnable.
*/
#include "config.h"

#include <pthread.h>
#include <string.h>
#include <cblas.h>

#include "popc/plugin.h"
#include "backends/common/fpx.h"
#include "backends/common/services.h"

#define MAX_IO 64

static const popc_host *host;
static popc_plan_kernel_ctx_fn plan_kernel_ctx;

typedef struct cpu_exe {
    const popc_plan *plan;
} cpu_exe;

/* The reference is single-threaded, OpenBLAS included: its own threads
** would spin against ours and change the bits of every product. The
** previous thread count comes back when the last context closes. */
static pthread_mutex_t blas_mu = PTHREAD_MUTEX_INITIALIZER;
static int blas_users, blas_saved;

static popc_status cpu_open(const popc_backend_config *cfg, void **ctx)
{
    (void)cfg;
    /* Nothing to model; a non-NULL context keeps open/close symmetric. */
    *ctx = host->alloc(1);
    if (!*ctx)
        return host->set_error(POPC_ENOMEM, "cpu backend: out of memory");
    pthread_mutex_lock(&blas_mu);
    if (blas_users++ == 0) {
        blas_saved = openblas_get_num_threads();
        openblas_set_num_threads(1);
    }
    pthread_mutex_unlock(&blas_mu);
    return POPC_OK;
}

static void cpu_close(void *ctx)
{
    host->free(ctx);
    pthread_mutex_lock(&blas_mu);
    if (--blas_users == 0 && blas_saved > 1)
        openblas_set_num_threads(blas_saved);
    pthread_mutex_unlock(&blas_mu);
}

static popc_status check_node(const popc_plan *plan, int k)
{
    const popc_plan_node *n = popc_plan_node_at(plan, k);
    const char *name = n->name ? n->name : "(unnamed)";

    if (!n->op || !n->op->forward)
        return host->set_error(POPC_EBACKEND, "cpu backend: node %d '%s' "
                               "has no kernel", k, name);
    if (n->n_inputs > MAX_IO || n->n_outputs > MAX_IO)
        return host->set_error(POPC_EBACKEND, "cpu backend: node '%s' has "
                               "%d inputs and %d outputs; at most %d each "
                               "are supported", name, n->n_inputs,
                               n->n_outputs, MAX_IO);
    for (int j = 0; j < n->n_inputs + n->n_outputs; j++) {
        int s = j < n->n_inputs ? n->inputs[j] : n->outputs[j - n->n_inputs];
        if (s < -1 || s >= plan->n_slots || (s < 0 && j >= n->n_inputs))
            return host->set_error(POPC_EBACKEND, "cpu backend: node '%s' "
                                   "refers to slot %d of %d", name, s,
                                   plan->n_slots);
        if (s >= 0 &&
            popc_plan_slot_at(plan, s)->info.dtype == POPC_DTYPE_UNDEFINED)
            return host->set_error(POPC_EBACKEND, "cpu backend: node '%s': "
                                   "slot '%s' has no type", name,
                                   popc_plan_slot_at(plan, s)->name);
    }
    return POPC_OK;
}

static popc_status cpu_compile(void *ctx, const popc_plan *plan, void **exe)
{
    cpu_exe *e;
    popc_status st;

    (void)ctx;
    *exe = NULL;
    for (int k = 0; k < plan->n_nodes; k++)
        if ((st = check_node(plan, k)) != POPC_OK)
            return st;
    if (!(e = host->alloc(sizeof *e)))
        return host->set_error(POPC_ENOMEM, "cpu backend: out of memory");
    e->plan = plan;
    *exe = e;
    return POPC_OK;
}

static void cpu_exe_free(void *ctx, void *exe)
{
    (void)ctx;
    host->free(exe);
}

static popc_status cpu_run_nodes(void *ctx, void *exe,
                                 const popc_frame *frame, int first, int last)
{
    const popc_plan *plan = ((const cpu_exe *)exe)->plan;
    popc_view in[MAX_IO], out[MAX_IO];

    (void)ctx;
    for (int k = first; k < last; k++) {
        const popc_plan_node *n = popc_plan_node_at(plan, k);
        popc_kernel_ctx kc = {.size = sizeof kc};
        popc_status st;

        plan_kernel_ctx(host, plan, k, frame, in, out, &kc);
        if (kc.flags & POPC_KERNEL_FP_EXCEPTIONS)
            fpx_begin();
        if ((st = n->op->forward(&kc)) != POPC_OK)
            return st;
        if ((kc.flags & POPC_KERNEL_FP_EXCEPTIONS) &&
            (st = fpx_check(host, n->name, n->op->name)) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

static const popc_backend_def cpu_backend = {
    .size = sizeof(popc_backend_def),
    .name = "cpu",
    .caps = POPC_BACKEND_CAN_RUN,
    .score = 10, /* the reference: runs anything, models no IPU */
    .open = cpu_open,
    .close = cpu_close,
    .compile = cpu_compile,
    .exe_free = cpu_exe_free,
    .run_nodes = cpu_run_nodes,
    .parallel = NULL,
    .cycles = NULL,
};

static popc_status cpu_init(const popc_host *h, popc_registrar *reg)
{
    popc_status st;

    host = h;
    if ((st = backend_service(h, "cpu backend", POPC_SERVICE_PLAN_KERNEL_CTX,
                              &plan_kernel_ctx, sizeof plan_kernel_ctx)) !=
        POPC_OK)
        return st;
    return h->register_backend(reg, &cpu_backend);
}

POPC_PLUGIN_DEFINE(cpu, "0.1.0", "reference backend: single-threaded "
                   "interpreter, the oracle for other backends", "MIT",
                   cpu_init, NULL)
