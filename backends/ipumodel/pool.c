/* pool.c - persistent workers, groups, the split barrier and nested
** parallel tasks (contract in pool.h).
**
** A group hands out one job at a time; the generation word says which and
** of what kind (low bits). Jobs for every member (a parallel call's
** roles, leaving the group): the leader stores the job, bumps the
** generation and does member 0's share; each member does its share when it
** sees the generation and counts down `pending`; the leader returns at
** zero. Split jobs are claimed instead: the parts are taken one at a time
** from one 64-bit word holding (job sequence, part count, next part), by
** the leader and by whichever members are awake, and the leader returns
** when `parts_done` reaches the count. A member that is descheduled or
** asleep therefore never holds up a split; it finds the parts taken and
** waits for the next job. Whatever a member reads about a split job it
** reads after claiming a part, when the job cannot change under it.
**
** Waiting spins for some tens of microseconds (a BSP step is short) and
** then blocks on the group's condition variables. Sleepers and a sleeping
** leader announce themselves with sequentially consistent atomics before
** re-checking, so a wake-up is never lost and nobody takes the mutex when
** nobody sleeps.
**
** A subgroup made by ipum_pool_parallel lives in the parallel call's job
** and is freed only after the parent group's barrier, which every member
** reaches after its last access to the subgroup.
*/
#include "config.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ipumodel/pool.h"

#define SPIN 2000
#define MSG_SIZE 2048

/* Generation word: sequence << 1 | kind. */
#define KIND_ALL 0u
#define KIND_SPLIT 1u

/* Claim word of split jobs: sequence (24 bits), parts (20), next (20). */
#define FIELD 20
#define FIELD_MASK ((1ull << FIELD) - 1)
#define MAX_PARTS ((int)FIELD_MASK)

typedef struct group group;
typedef void (*job_fn)(group *g, void *arg, int member);

typedef struct failure failure;

struct group {
    ipum_pool *pool;
    int n;                     /* members; member 0 is the leader */
    atomic_uint gen;
    atomic_int pending;        /* members still on an all-member job */
    atomic_int sleepers;
    atomic_int leader_asleep;
    job_fn job;                /* all-member job; NULL: leave the group */
    void *arg;
    atomic_uint_least64_t claim; /* split job: sequence, parts, next */
    atomic_int parts_done;
    ipum_task_fn split_fn;
    void *split_arg;
    failure *split_fail;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
};

struct ipum_pool {
    int threads;
    int started;               /* helper threads running */
    pthread_t *tids;
    group root;
};

typedef struct helper_arg {
    ipum_pool *pool;
    int member;
} helper_arg;

/* Where the first failure of a split or parallel call is kept. */
struct failure {
    pthread_mutex_t mu;
    atomic_int index;          /* lowest failing index; INT_MAX: none */
    popc_status st;
    char msg[MSG_SIZE];
};

static const popc_host *host;
static popc_host kernel_host;

/* Per-thread state lives in pthread keys, not _Thread_local: dynamic TLS
** in a dlopen'ed module trips LeakSanitizer's thread scan (it crashes on the
** module's DTV entry), and the keys cost nothing measurable here.
** current: the group the calling thread leads (NULL: the root of any pool).
** sink: where set_error on this thread also copies the message, or NULL. */
static pthread_key_t current_key, sink_key;
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;

static void make_keys(void)
{
    pthread_key_create(&current_key, NULL);
    pthread_key_create(&sink_key, NULL);
}

static group *get_current(void)
{
    return pthread_getspecific(current_key);
}

static void set_current(group *g)
{
    pthread_setspecific(current_key, g);
}

static char *get_sink(void)
{
    return pthread_getspecific(sink_key);
}

static void set_sink(char *s)
{
    pthread_setspecific(sink_key, s);
}

/* ---- error transport ---------------------------------------------------- */

static popc_status kernel_set_error(popc_status st, const char *fmt, ...)
{
    char msg[MSG_SIZE];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char *sink = get_sink();

    if (sink)
        memcpy(sink, msg, sizeof msg);
    return host->set_error(st, "%s", msg);
}

const popc_host *ipum_pool_setup(const popc_host *h)
{
    size_t n = h->size < sizeof kernel_host ? h->size : sizeof kernel_host;

    pthread_once(&keys_once, make_keys);
    host = h;
    memset(&kernel_host, 0, sizeof kernel_host);
    memcpy(&kernel_host, h, n);
    kernel_host.size = (uint32_t)n;
    kernel_host.set_error = kernel_set_error;
    return &kernel_host;
}

/* The reason of the failure just returned on this thread. */
static void failure_message(const char *captured, char *out)
{
    const char *m = NULL;

    if (POPC_HAS_FIELD(popc_host, host->size, last_error) &&
        host->last_error)
        m = host->last_error();
    if (!m || !*m)
        m = captured;
    if (!m || !*m)
        m = "a worker thread failed without a message";
    snprintf(out, MSG_SIZE, "%s", m);
}

static void failure_init(failure *f)
{
    pthread_mutex_init(&f->mu, NULL);
    atomic_init(&f->index, INT_MAX);
    f->st = POPC_OK;
    f->msg[0] = '\0';
}

/* Run fn(arg, i) with this thread's messages captured; keep the failure
** if it has the lowest index so far. */
static void run_one(failure *f, ipum_task_fn fn, void *arg, int i)
{
    char captured[MSG_SIZE], msg[MSG_SIZE];
    char *saved = get_sink();
    popc_status st;

    captured[0] = '\0';
    set_sink(captured);
    st = fn(arg, i);
    set_sink(saved);
    if (st == POPC_OK)
        return;
    failure_message(captured, msg);
    pthread_mutex_lock(&f->mu);
    if (i < atomic_load(&f->index)) {
        atomic_store(&f->index, i);
        f->st = st;
        memcpy(f->msg, msg, sizeof msg);
    }
    pthread_mutex_unlock(&f->mu);
}

/* The failure becomes the calling thread's error. */
static popc_status failure_end(failure *f)
{
    popc_status st = f->st;

    pthread_mutex_destroy(&f->mu);
    if (st == POPC_OK)
        return POPC_OK;
    return kernel_host.set_error(st, "%s", f->msg);
}

/* ---- groups ------------------------------------------------------------- */

/* One step of a spin-wait. Every 64th step gives the core away, so that
** on a machine with more runnable threads than cores the thread being
** waited for gets to run. */
static inline void relax(int i)
{
    if ((i & 63) == 63) {
        sched_yield();
        return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void group_init(group *g, ipum_pool *p, int n)
{
    g->pool = p;
    g->n = n;
    atomic_init(&g->gen, 0);
    atomic_init(&g->pending, 0);
    atomic_init(&g->sleepers, 0);
    atomic_init(&g->leader_asleep, 0);
    atomic_init(&g->claim, 0);
    atomic_init(&g->parts_done, 0);
    g->job = NULL;
    g->arg = NULL;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->go, NULL);
    pthread_cond_init(&g->done, NULL);
}

static void group_destroy(group *g)
{
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->go);
    pthread_cond_destroy(&g->done);
}

static unsigned wait_go(group *g, unsigned seen)
{
    unsigned v;

    for (int i = 0; i < SPIN; i++) {
        if ((v = atomic_load(&g->gen)) != seen)
            return v;
        relax(i);
    }
    pthread_mutex_lock(&g->mu);
    atomic_fetch_add(&g->sleepers, 1);
    while ((v = atomic_load(&g->gen)) == seen)
        pthread_cond_wait(&g->go, &g->mu);
    atomic_fetch_sub(&g->sleepers, 1);
    pthread_mutex_unlock(&g->mu);
    return v;
}

/* Leader: wait until *count reaches target. */
static void wait_count(group *g, atomic_int *count, int target)
{
    for (int i = 0; i < SPIN; i++) {
        if (atomic_load(count) == target)
            return;
        relax(i);
    }
    pthread_mutex_lock(&g->mu);
    atomic_store(&g->leader_asleep, 1);
    while (atomic_load(count) != target)
        pthread_cond_wait(&g->done, &g->mu);
    atomic_store(&g->leader_asleep, 0);
    pthread_mutex_unlock(&g->mu);
}

static void wake_leader(group *g)
{
    if (atomic_load(&g->leader_asleep)) {
        pthread_mutex_lock(&g->mu);
        pthread_cond_signal(&g->done);
        pthread_mutex_unlock(&g->mu);
    }
}

static void finish(group *g)
{
    if (atomic_fetch_sub(&g->pending, 1) == 1)
        wake_leader(g);
}

static void publish(group *g, unsigned kind)
{
    unsigned seq = (atomic_load(&g->gen) >> 1) + 1;

    atomic_store(&g->gen, seq << 1 | kind);
    if (atomic_load(&g->sleepers) > 0) {
        pthread_mutex_lock(&g->mu);
        pthread_cond_broadcast(&g->go);
        pthread_mutex_unlock(&g->mu);
    }
}

static void run_one(failure *f, ipum_task_fn fn, void *arg, int i);

/* Take parts of the current split job until none is left. */
static void take_parts(group *g)
{
    for (;;) {
        uint_least64_t c = atomic_load(&g->claim);
        int n = (int)(c >> FIELD & FIELD_MASK), next = (int)(c & FIELD_MASK);

        if (next >= n)
            return;
        if (!atomic_compare_exchange_weak(&g->claim, &c, c + 1))
            continue;
        run_one(g->split_fail, g->split_fn, g->split_arg, next);
        if (atomic_fetch_add(&g->parts_done, 1) + 1 == n)
            wake_leader(g);
    }
}

/* A member's life in g: help with split jobs and run each all-member job
** until told to leave. All-member jobs wait for every member, so their
** fields hold still until this member has finished. */
static void serve(group *g, int member)
{
    unsigned seen = 0;

    for (;;) {
        job_fn job;
        void *arg;

        seen = wait_go(g, seen);
        if ((seen & 1u) == KIND_SPLIT) {
            take_parts(g);
            continue;
        }
        job = g->job;
        arg = g->arg;
        if (job)
            job(g, arg, member);
        finish(g);
        if (!job)
            return;
    }
}

/* Leader: every member runs job(g, arg, member); job NULL dissolves g. */
static void run_job(group *g, job_fn job, void *arg)
{
    if (g->n > 1) {
        g->job = job;
        g->arg = arg;
        atomic_store(&g->pending, g->n - 1);
        publish(g, KIND_ALL);
    }
    if (job)
        job(g, arg, 0);
    if (g->n > 1)
        wait_count(g, &g->pending, 0);
}

static group *group_of(const ipum_pool *p)
{
    group *g = get_current();

    return g && g->pool == p ? g : (group *)&p->root;
}

/* ---- the pool ----------------------------------------------------------- */

static void *helper_main(void *arg)
{
    helper_arg a = *(helper_arg *)arg;

    host->free(arg);
    serve(&a.pool->root, a.member);
    return NULL;
}

void ipum_pool_free(ipum_pool *p)
{
    if (!p)
        return;
    if (p->started > 0) {
        p->root.n = p->started + 1;
        run_job(&p->root, NULL, NULL);
        for (int i = 0; i < p->started; i++)
            pthread_join(p->tids[i], NULL);
    }
    group_destroy(&p->root);
    host->free(p->tids);
    host->free(p);
}

popc_status ipum_pool_new(int threads, ipum_pool **out)
{
    ipum_pool *p;
    sigset_t all, old;
    int err = 0;

    *out = NULL;
    if (threads < 1)
        threads = 1;
    if (!(p = popc_host_calloc(host, 1, sizeof *p)) ||
        !(p->tids = popc_host_calloc(host, (size_t)threads,
                                     sizeof *p->tids))) {
        host->free(p);
        return host->set_error(POPC_ENOMEM, "ipumodel backend: out of "
                               "memory for %d workers", threads);
    }
    p->threads = threads;
    group_init(&p->root, p, threads);
    /* Helpers take no signals: they stay with the application's threads. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (int i = 1; i < threads && !err; i++) {
        helper_arg *a = popc_host_calloc(host, 1, sizeof *a);

        if (!a) {
            err = -1;
            break;
        }
        *a = (helper_arg){p, i};
        if ((err = pthread_create(&p->tids[i - 1], NULL, helper_main, a))) {
            host->free(a);
            break;
        }
        p->started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
        int started = p->started;

        ipum_pool_free(p);
        return host->set_error(err < 0 ? POPC_ENOMEM : POPC_EBACKEND,
                               "ipumodel backend: cannot start worker "
                               "thread %d of %d: %s; use fewer threads "
                               "(option threads or POPC_THREADS)",
                               started + 2, threads,
                               err < 0 ? "out of memory" : strerror(err));
    }
    *out = p;
    return POPC_OK;
}

int ipum_pool_threads(const ipum_pool *p)
{
    return p->threads;
}

int ipum_pool_width(const ipum_pool *p)
{
    return group_of(p)->n;
}

/* ---- split -------------------------------------------------------------- */

popc_status ipum_pool_split(ipum_pool *p, int n, ipum_task_fn fn, void *arg)
{
    group *g = group_of(p);
    failure fail;
    uint_least64_t seq;

    failure_init(&fail);
    if (g->n == 1 || n <= 1 || n > MAX_PARTS) {
        for (int i = 0; i < n; i++)
            run_one(&fail, fn, arg, i);
        return failure_end(&fail);
    }
    g->split_fn = fn;
    g->split_arg = arg;
    g->split_fail = &fail;
    atomic_store(&g->parts_done, 0);
    seq = ((atomic_load(&g->claim) >> (2 * FIELD)) + 1) & 0xFFFFFFu;
    atomic_store(&g->claim, seq << (2 * FIELD) | (uint_least64_t)n << FIELD);
    publish(g, KIND_SPLIT);
    take_parts(g);
    wait_count(g, &g->parts_done, n);
    return failure_end(&fail);
}

/* ---- parallel ----------------------------------------------------------- */

typedef struct par_job {
    ipum_task_fn fn;
    void *arg;
    int n;                     /* tasks */
    int k;                     /* subgroups */
    group *subs;
    int *first;                /* member where subgroup j starts; k + 1 */
    atomic_int next;           /* next task to take */
    failure fail;
} par_job;

/* Take tasks until none is left, as the leader of sub. */
static void lead_tasks(par_job *j, group *sub)
{
    group *saved = get_current();

    set_current(sub);
    for (;;) {
        int i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n || i > atomic_load(&j->fail.index))
            break;
        run_one(&j->fail, j->fn, j->arg, i);
    }
    run_job(sub, NULL, NULL);
    set_current(saved);
}

static void par_member(group *g, void *arg, int member)
{
    par_job *j = arg;
    int s = 0;

    (void)g;
    while (member >= j->first[s + 1])
        s++;
    if (member == j->first[s])
        lead_tasks(j, &j->subs[s]);
    else
        serve(&j->subs[s], member - j->first[s]);
}

popc_status ipum_pool_parallel(ipum_pool *p, int n, ipum_task_fn fn,
                               void *arg)
{
    group *g = group_of(p);
    par_job j;
    popc_status st;

    if (n <= 0)
        return POPC_OK;
    memset(&j, 0, sizeof j);
    j.fn = fn;
    j.arg = arg;
    j.n = n;
    j.k = n < g->n ? n : g->n;
    atomic_init(&j.next, 0);
    failure_init(&j.fail);
    if (j.k <= 1) {
        /* One worker: the tasks in order, stopping at the first failure. */
        for (int i = 0; i < n && j.fail.st == POPC_OK; i++)
            run_one(&j.fail, fn, arg, i);
        return failure_end(&j.fail);
    }
    j.subs = popc_host_calloc(host, (size_t)j.k, sizeof *j.subs);
    j.first = popc_host_calloc(host, (size_t)j.k + 1, sizeof *j.first);
    if (!j.subs || !j.first) {
        host->free(j.subs);
        host->free(j.first);
        failure_end(&j.fail);
        return host->set_error(POPC_ENOMEM, "ipumodel backend: out of "
                               "memory for %d parallel tasks", n);
    }
    for (int s = 0; s < j.k; s++) {
        int width = g->n / j.k + (s < g->n % j.k);
        j.first[s + 1] = j.first[s] + width;
        group_init(&j.subs[s], p, width);
    }
    run_job(g, par_member, &j);
    for (int s = 0; s < j.k; s++)
        group_destroy(&j.subs[s]);
    host->free(j.subs);
    host->free(j.first);
    st = failure_end(&j.fail);
    return st;
}
