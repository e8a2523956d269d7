/* dataloader_async.c - worker threads filling a ring buffer of batches
** (PopTorch's AsynchronousDataAccessor, with threads instead of a worker
** process).
**
** The ring holds buffer_size slots. Slots are scheduled in order from the
** sampler, so the ring always holds consecutive batches starting at
** `head`; a slot is FILLING while workers copy rows into it (in jobs of
** `chunk` rows, so several workers can share one batch) and READY when
** complete. An end of epoch is a READY slot with no rows. The consumer
** takes the head slot once READY and keeps it (its tensors are what the
** caller borrows) until the next call releases it.
**
** One mutex guards the ring and the sampler; rows are copied outside it.
** Shutdown sets `stop` and joins every worker; a seek first waits until no
** copy is in progress, then drops every slot.
*/
#include "config.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/data.h"
#include "core/layer/alloc.h"
#include "data/data_priv.h"

typedef enum { SLOT_FREE, SLOT_FILLING, SLOT_READY } slot_state;

typedef struct slot {
    slot_state state;
    int64_t *idx;             /* rows of the batch */
    int64_t n;                /* samples; 0: end-of-epoch marker */
    int64_t rows;             /* rows filled (n, or more with pad_last) */
    int64_t epoch, index;
    uint64_t rng;
    int64_t chunks, claimed, done;
    popc_tensor *features, *labels;
} slot;

struct popci_async {
    const popc_dataset *ds;
    popci_sampler *sampler;
    int64_t chunk;
    int load_indefinitely;
    int pad_last;
    pthread_mutex_t mu;
    pthread_cond_t work;      /* workers: a job or a free slot may exist */
    pthread_cond_t ready;     /* consumer: head ready, error, or idle */
    slot *slots;
    int n_slots;
    int head;                 /* oldest scheduled slot */
    int count;                /* scheduled slots from head */
    int held;                 /* the consumer holds the head slot */
    int started;              /* scheduling allowed */
    int paused;               /* end of epoch scheduled, !load_indefinitely */
    int resume_next;          /* unpause on the consumer's next call */
    int draining;             /* a seek waits for the copies to finish */
    int stop;
    int busy;                 /* copies in progress outside the lock */
    popc_status err;          /* first worker failure, sticky until seek */
    char errmsg[1024];
    int n_threads;
    pthread_t *threads;
};

static void record_error(popci_async *a, popc_status st)
{
    if (a->err != POPC_OK)
        return;
    a->err = st;
    snprintf(a->errmsg, sizeof a->errmsg, "%s", popc_last_error());
    pthread_cond_broadcast(&a->ready);
}

/* Put the sampler's next batch in the slot after the scheduled ones. */
static void schedule(popci_async *a)
{
    slot *s = &a->slots[(a->head + a->count) % a->n_slots];
    popc_status st;

    st = popci_sampler_next(a->sampler, s->idx, &s->n, &s->epoch, &s->index,
                            &s->rng);
    if (st == POPC_OK && s->n > 0) {
        s->rows = popci_batch_rows(s->idx, s->n, a->sampler->batch,
                                   a->pad_last);
        st = popci_batch_alloc(a->ds, s->rows, &s->features, &s->labels);
    }
    if (st != POPC_OK) {
        record_error(a, st);
        return;
    }
    a->count++;
    if (s->n == 0) {
        s->state = SLOT_READY;
        if (!a->load_indefinitely)
            a->paused = 1;
        pthread_cond_broadcast(&a->ready);
        return;
    }
    s->chunks = (s->rows + a->chunk - 1) / a->chunk;
    s->claimed = 0;
    s->done = 0;
    s->state = SLOT_FILLING;
    pthread_cond_broadcast(&a->work);
}

static slot *find_job(popci_async *a)
{
    for (int k = 0; k < a->count; k++) {
        slot *s = &a->slots[(a->head + k) % a->n_slots];

        if (s->state == SLOT_FILLING && s->claimed < s->chunks)
            return s;
    }
    return NULL;
}

static void *worker_main(void *arg)
{
    popci_async *a = arg;

    pthread_mutex_lock(&a->mu);
    while (!a->stop) {
        slot *s;

        if (a->draining || a->err != POPC_OK) {
            pthread_cond_wait(&a->work, &a->mu);
            continue;
        }
        if ((s = find_job(a))) {
            int64_t first = s->claimed++ * a->chunk;
            int64_t last =
                first + a->chunk < s->rows ? first + a->chunk : s->rows;
            popc_status st;

            a->busy++;
            pthread_mutex_unlock(&a->mu);
            st = popci_batch_fill(a->ds, s->idx, first, last, s->features,
                                  s->labels);
            pthread_mutex_lock(&a->mu);
            a->busy--;
            if (st != POPC_OK)
                record_error(a, st);
            if (++s->done == s->chunks)
                s->state = SLOT_READY;
            pthread_cond_broadcast(&a->ready);
            continue;
        }
        if (a->started && !a->paused && a->count < a->n_slots) {
            schedule(a);
            continue;
        }
        pthread_cond_wait(&a->work, &a->mu);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

static void stop_workers(popci_async *a)
{
    pthread_mutex_lock(&a->mu);
    a->stop = 1;
    pthread_cond_broadcast(&a->work);
    pthread_mutex_unlock(&a->mu);
    for (int i = 0; i < a->n_threads; i++)
        pthread_join(a->threads[i], NULL);
    a->n_threads = 0;
}

void popci_async_free(popci_async *a)
{
    if (!a)
        return;
    stop_workers(a);
    for (int i = 0; a->slots && i < a->n_slots; i++) {
        free(a->slots[i].idx);
        popc_tensor_free(a->slots[i].features);
        popc_tensor_free(a->slots[i].labels);
    }
    free(a->slots);
    free(a->threads);
    pthread_cond_destroy(&a->work);
    pthread_cond_destroy(&a->ready);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

popc_status popci_async_new(const popc_dataset *ds, popci_sampler *sampler,
                            int workers, int buffer_size, int64_t chunk,
                            int load_indefinitely, int early_preload,
                            int pad_last, popci_async **out)
{
    popci_async *a;
    sigset_t all, old;
    int rc = 0;

    *out = NULL;
    if (!(a = popci_calloc(1, sizeof *a)))
        return popc_set_error(POPC_ENOMEM, "data loader: out of memory");
    a->ds = ds;
    a->sampler = sampler;
    a->chunk = chunk;
    a->load_indefinitely = load_indefinitely;
    a->pad_last = pad_last;
    a->started = early_preload;
    a->n_slots = buffer_size;
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->work, NULL);
    pthread_cond_init(&a->ready, NULL);
    a->slots = popci_calloc((size_t)buffer_size, sizeof *a->slots);
    a->threads = popci_calloc((size_t)workers, sizeof *a->threads);
    if (!a->slots || !a->threads)
        goto nomem;
    for (int i = 0; i < buffer_size; i++)
        if (!(a->slots[i].idx =
                  popci_malloc((size_t)sampler->batch * sizeof(int64_t))))
            goto nomem;
    /* signals belong to the application's threads, never to the workers */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (int i = 0; i < workers && rc == 0; i++)
        if ((rc = pthread_create(&a->threads[i], NULL, worker_main, a)) == 0)
            a->n_threads++;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        int failed = a->n_threads + 1;

        popci_async_free(a);
        return popc_set_error(POPC_EINTERNAL,
                              "data loader: cannot start worker thread %d "
                              "of %d (%s); use fewer workers",
                              failed, workers, strerror(rc));
    }
    *out = a;
    return POPC_OK;
nomem:
    popci_async_free(a);
    return popc_set_error(POPC_ENOMEM, "data loader: out of memory for the "
                                       "ring buffer");
}

/* Caller holds the lock. */
static void release_head(popci_async *a)
{
    a->slots[a->head].state = SLOT_FREE;
    a->head = (a->head + 1) % a->n_slots;
    a->count--;
    pthread_cond_broadcast(&a->work);
}

popc_status popci_async_next(popci_async *a, popc_batch *batch,
                             popc_data_position *pos)
{
    slot *s;

    pthread_mutex_lock(&a->mu);
    if (a->held) {
        a->held = 0;
        release_head(a);
    }
    if (!a->started || a->resume_next) {
        a->started = 1;
        a->paused = 0;
        a->resume_next = 0;
        pthread_cond_broadcast(&a->work);
    }
    while (a->err == POPC_OK &&
           !(a->count > 0 && a->slots[a->head].state == SLOT_READY))
        pthread_cond_wait(&a->ready, &a->mu);
    if (a->err != POPC_OK) {
        popc_status st = a->err;

        pthread_mutex_unlock(&a->mu);
        return popc_set_error(st, "%s", a->errmsg);
    }
    s = &a->slots[a->head];
    batch->n = s->n;
    batch->epoch = s->epoch;
    batch->index = s->index;
    if (s->n == 0) {
        pos->epoch = s->epoch + 1;
        pos->batch = 0;
        pos->rng = popci_data_next_epoch_rng(s->rng);
        release_head(a);
        a->resume_next = !a->load_indefinitely;
    } else {
        batch->features = s->features;
        batch->labels = s->labels;
        pos->epoch = s->epoch;
        pos->batch = s->index + 1;
        pos->rng = s->rng;
        a->held = 1;
    }
    pthread_mutex_unlock(&a->mu);
    return POPC_OK;
}

popc_status popci_async_seek(popci_async *a, const popc_data_position *pos)
{
    /* n_batches never changes: checking first keeps a refused seek from
    ** dropping the prepared batches */
    if (pos->epoch < 0 || pos->batch < 0 ||
        pos->batch > a->sampler->n_batches)
        return popci_sampler_seek(a->sampler, pos);
    pthread_mutex_lock(&a->mu);
    a->draining = 1;
    while (a->busy > 0)
        pthread_cond_wait(&a->ready, &a->mu);
    for (int i = 0; i < a->n_slots; i++)
        a->slots[i].state = SLOT_FREE;
    a->head = 0;
    a->count = 0;
    a->held = 0;
    a->paused = 0;
    a->resume_next = 0;
    a->err = POPC_OK;
    (void)popci_sampler_seek(a->sampler, pos);
    a->draining = 0;
    pthread_cond_broadcast(&a->work);
    pthread_mutex_unlock(&a->mu);
    return POPC_OK;
}
