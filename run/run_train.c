/* run_train.c - the training and inference loops of INI runs.
**
** Training is a pure function of the run settings, the data position and
** the model state (weights, optimizer state): a checkpoint saves exactly
** the latter two, so continuing from it repeats the same steps bit for
** bit. Evaluation uses an inference model that shares the training
** model's weights, with options that have no gradient accumulation and
** return every batch (outputMode All).
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "popc/distributed.h"
#include "popc/log.h"
#include "popc/run.h"
#include "fileio/atomic_file.h"
#include "core/layer/options.h"
#include "run/run_priv.h"

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double mean_of(const popc_tensor *t)
{
    const float *p = popc_tensor_cdata(t);
    int64_t n = popc_tensor_numel(t);
    double sum = 0;

    for (int64_t i = 0; i < n; i++)
        sum += p[i];
    return n ? sum / (double)n : 0.0;
}

/* Count correct predictions among the first n rows of logits. */
static int64_t score(const popc_tensor *logits, const popc_tensor *labels,
                     int64_t n, int32_t *pred)
{
    const float *p = popc_tensor_cdata(logits);
    const int32_t *l = labels ? popc_tensor_cdata(labels) : NULL;
    int64_t classes = popc_tensor_dims(logits)[1], correct = 0;

    for (int64_t i = 0; i < n; i++) {
        const float *row = p + i * classes;
        int64_t best = 0;

        for (int64_t k = 1; k < classes; k++)
            if (row[k] > row[best])
                best = k;
        if (pred)
            pred[i] = (int32_t)best;
        if (l && l[i] == best)
            correct++;
    }
    return correct;
}

/* On the inference options made at load time; *input (may be NULL) the
** dtype of its data input. */
static popc_status inference_model(popc_run *r, popc_model **out,
                                   popc_dtype *input)
{
    popc_graph *g = NULL;
    popc_status st;

    *out = NULL;
    if ((st = popc_run_build_graph(r, 0, r->batch_size, &g)) != POPC_OK)
        return st;
    if (input)
        *input = popc_graph_value_info(g, popc_graph_input(g, 0)).dtype;
    st = popc_model_new_inference(g, r->infer_opts, out);
    popc_graph_free(g);
    return st;
}

/* Classify every sample of a loader's epoch. pred (may be NULL) receives
** one class per sample. */
static popc_status classify(popc_model *m, popc_dataloader *dl,
                            const volatile sig_atomic_t *stop, int32_t *pred,
                            int64_t *samples, int64_t *correct)
{
    popc_batch b;
    popc_status st;

    *samples = 0;
    *correct = 0;
    for (;;) {
        popc_tensor *logits = NULL;

        if ((st = popc_dataloader_next(dl, &b)) != POPC_OK)
            return st;
        if (b.n == 0)
            return POPC_OK;
        if (stop && *stop)
            return popc_set_error(POPC_EINTERRUPTED,
                                  "interrupted during inference after %lld "
                                  "samples",
                                  (long long)*samples);
        if ((st = popc_model_run(m, &b.features, 1, &logits, 1)) != POPC_OK)
            return st;
        *correct += score(logits, b.labels, b.n, pred ? pred + *samples
                                                      : NULL);
        *samples += b.n;
        popc_tensor_free(logits);
    }
}

/* ---- training ----------------------------------------------------------- */

typedef struct trainer {
    popc_run *r;
    const popc_train_hooks *hooks;
    popc_dataset *train_ds, *test_ds;
    popc_dataloader *train_dl, *test_dl;
    popc_model *model, *eval;
    int64_t ckpt_every;
    popci_checkpoint ck;        /* step and epoch bookkeeping */
    int64_t steps_here;         /* steps run by this process */
    double t0;
    double loss;
    int ckpt_lock;              /* flock on the checkpoint, or -1 */
    int lead;                   /* rank 0 (or not distributed): evaluates,
                                   reports and writes files */
    int r_ranks;                /* processes of the run */
} trainer;

static void report(trainer *t, popc_train_event ev, double acc,
                   const char *path)
{
    popc_train_progress p;
    int64_t len = popc_dataloader_len(t->train_dl);
    double elapsed = now() - t->t0, rate;

    if (!t->hooks || !t->hooks->progress || !t->lead)
        return;
    memset(&p, 0, sizeof p);
    p.event = ev;
    p.epoch = popc_dataloader_position(t->train_dl).epoch;
    if (ev == POPC_TRAIN_EPOCH_END)
        p.epoch--;
    p.epochs = t->r->epochs;
    p.step = t->ck.epoch_steps;
    p.steps_per_epoch = len;
    p.global_step = t->ck.step;
    p.total_steps = t->r->epochs * len;
    p.loss = t->loss;
    p.epoch_loss = t->ck.epoch_steps ? t->ck.epoch_loss_sum /
                                           (double)t->ck.epoch_steps
                                     : 0.0;
    rate = elapsed > 0 ? (double)t->steps_here / elapsed : 0.0;
    /* ranks step together: the run's rate is this rank's times the ranks */
    p.samples_per_second =
        rate * (double)popc_dataloader_combined_batch_size(t->train_dl) *
        (double)t->r_ranks;
    p.elapsed = elapsed;
    p.eta = rate > 0 ? (double)(p.total_steps - p.global_step) / rate : -1;
    p.test_accuracy = acc;
    p.path = path;
    t->hooks->progress(&p, t->hooks->user);
}

static popc_status checkpoint(trainer *t)
{
    popc_status st;

    if (!t->lead) /* every rank holds the same state: rank 0 writes it */
        return POPC_OK;
    t->ck.pos = popc_dataloader_position(t->train_dl);
    t->ck.fingerprint = popci_run_fingerprint(t->r);
    if ((st = popci_checkpoint_save(t->model, &t->ck, t->r->checkpoint)) !=
        POPC_OK)
        return st;
    report(t, POPC_TRAIN_CHECKPOINT, -1, t->r->checkpoint);
    return POPC_OK;
}

static popc_status resume(trainer *t, popc_train_result *res)
{
    popc_status st;

    st = popci_checkpoint_load(t->model, &t->ck, t->r->checkpoint);
    if (st == POPC_ENOTFOUND) {
        popc_log(POPC_LOG_WARN,
                 "%s: no checkpoint yet: training starts from the beginning",
                 t->r->checkpoint);
        memset(&t->ck, 0, sizeof t->ck);
        return POPC_OK;
    }
    if (st != POPC_OK)
        return st;
    if (t->ck.fingerprint != popci_run_fingerprint(t->r))
        return popc_set_error(POPC_ECONFIG,
                              "%s: the checkpoint was written by a run with "
                              "other settings (model, data, optimizer, "
                              "options or number of processes differ); "
                              "resume with the same run file, --set values "
                              "and process count, or remove the checkpoint "
                              "to start again",
                              t->r->checkpoint);
    if ((st = popc_dataloader_set_position(t->train_dl, &t->ck.pos)) !=
        POPC_OK)
        return popc_set_error(st, "%s: %s", t->r->checkpoint,
                              popc_last_error());
    res->resumed_step = t->ck.step;
    return POPC_OK;
}

static popc_status setup(trainer *t, popc_train_result *res)
{
    popc_graph *g = NULL;
    popc_dtype input;
    popc_status st;

    if (!t->r->train)
        return popc_set_error(POPC_ECONFIG,
                              "%s: training needs [data] train and "
                              "train_labels",
                              t->r->path);
    /* the graph first: its data input's dtype decides the batches' */
    if ((st = popc_run_build_graph(t->r, 1, t->r->batch_size, &g)) != POPC_OK)
        return st;
    input = popc_graph_value_info(g, popc_graph_input(g, 0)).dtype;
    if ((st = popc_run_load_dataset(t->r, POPC_SPLIT_TRAIN, &t->train_ds)) ||
        (st = popci_run_match_data(t->r, POPC_SPLIT_TRAIN, t->train_ds,
                                   input)) ||
        (st = popc_run_new_loader(t->r, POPC_SPLIT_TRAIN, t->train_ds,
                                  &t->train_dl)))
        goto fail;
    /* the compiled model runs whole combined batches only */
    if (popc_dataloader_samples_per_epoch(t->train_dl) %
        popc_dataloader_combined_batch_size(t->train_dl)) {
        char where[700];

        st = popc_set_error(
            POPC_ECONFIG,
            "%s = false: %lld training samples do not divide into combined "
            "batches of %lld, and the model cannot run the smaller last "
            "batch (its input shape is fixed at compile time); set "
            "drop_last = true or change batch_size or limit",
            popci_run_where(t->r, "data", "drop_last", where, sizeof where),
            (long long)popc_dataloader_samples_per_epoch(t->train_dl),
            (long long)popc_dataloader_combined_batch_size(t->train_dl));
        goto fail;
    }
    if (t->r->test && t->r->evaluate && t->lead) {
        if ((st = popc_run_load_dataset(t->r, POPC_SPLIT_TEST,
                                        &t->test_ds)) ||
            (st = popci_run_match_data(t->r, POPC_SPLIT_TEST, t->test_ds,
                                       input)) ||
            (st = popc_run_new_loader(t->r, POPC_SPLIT_TEST, t->test_ds,
                                      &t->test_dl)))
            goto fail;
        if (!popc_dataset_has_labels(t->test_ds)) {
            popc_dataloader_free(t->test_dl);
            t->test_dl = NULL;
        }
    }
    st = popc_model_new_training(g, t->r->opts, t->r->optimizer, &t->model);
    popc_graph_free(g);
    if (st != POPC_OK)
        return st;
    if (t->test_dl && ((st = inference_model(t->r, &t->eval, NULL)) ||
                       (st = popc_model_share_weights(t->eval, t->model))))
        return st;
    if (t->hooks && t->hooks->resume)
        return resume(t, res);
    return POPC_OK;
fail:
    popc_graph_free(g);
    return st;
}

static popc_status evaluate(trainer *t, double *acc)
{
    int64_t samples, correct;
    popc_status st;

    *acc = -1;
    if (!t->test_dl)
        return POPC_OK;
    if ((st = classify(t->eval, t->test_dl, NULL, NULL, &samples,
                       &correct)) != POPC_OK)
        return st;
    *acc = samples ? (double)correct / (double)samples : 0.0;
    return POPC_OK;
}

/* Stop between steps: checkpoint (when on) and report where. */
static popc_status interrupted(trainer *t)
{
    popc_status st;

    if (t->ckpt_every && (st = checkpoint(t)) != POPC_OK)
        return st;
    return popc_set_error(POPC_EINTERRUPTED, "interrupted after step %lld%s%s",
                          (long long)t->ck.step,
                          t->ckpt_every ? "; checkpoint written to "
                                        : " (no checkpoint: checkpoints are "
                                          "off)",
                          t->ckpt_every ? t->r->checkpoint : "");
}

/* [train] export_onnx: the inference graph with the trained weights. */
static popc_status export_onnx(trainer *t)
{
    const popc_run_model_format *fmt = NULL;
    popc_model *m = t->eval;
    char where[700];
    popc_status st;

    if ((st = popci_run_need_format(t->r, "train", "export_onnx", &fmt)))
        return st;
    if (!m && (st = inference_model(t->r, &m, NULL)) != POPC_OK)
        return st;
    /* the trained values, whether or not m has run since the last step */
    for (int i = 0; i < popc_model_n_tensors(t->model); i++) {
        const char *name = popc_model_tensor_name(t->model, i);
        const popc_tensor *w = NULL;

        if ((st = popc_model_get_weight(t->model, name, &w)) ||
            (st = popc_model_set_weight(m, name, w))) {
            if (m != t->eval)
                popc_model_free(m);
            return st;
        }
    }
    if ((st = fmt->write(m, t->r->export_onnx)) != POPC_OK)
        st = popc_set_error(st, "%s: %s",
                            popci_run_where(t->r, "train", "export_onnx",
                                            where, sizeof where),
                            popc_last_error());
    if (m != t->eval)
        popc_model_free(m);
    return st;
}

static popc_status train_loop(trainer *t, popc_train_result *res)
{
    const volatile sig_atomic_t *stop = t->hooks ? t->hooks->stop : NULL;
    popc_status st;

    while (popc_dataloader_position(t->train_dl).epoch < t->r->epochs) {
        popc_batch b;
        popc_tensor *inputs[2], *loss = NULL;

        if (stop && *stop)
            return interrupted(t);
        if ((st = popc_dataloader_next(t->train_dl, &b)) != POPC_OK)
            return st;
        if (b.n == 0) {
            double acc;

            if ((st = evaluate(t, &acc)) != POPC_OK)
                return st;
            res->test_accuracy = acc;
            res->epochs = b.epoch + 1;
            report(t, POPC_TRAIN_EPOCH_END, acc, NULL);
            t->ck.epoch_steps = 0;
            t->ck.epoch_loss_sum = 0;
            continue;
        }
        inputs[0] = b.features;
        inputs[1] = b.labels;
        if ((st = popc_model_run(t->model, inputs, 2, &loss, 1)) != POPC_OK)
            return st;
        t->loss = mean_of(loss);
        popc_tensor_free(loss);
        t->ck.step++;
        t->ck.epoch_steps++;
        t->ck.epoch_loss_sum += t->loss;
        t->steps_here++;
        res->steps = t->ck.step;
        res->final_loss = t->loss;
        report(t, POPC_TRAIN_STEP, -1, NULL);
        if (t->ckpt_every && t->ck.step % t->ckpt_every == 0 &&
            !(stop && *stop) && (st = checkpoint(t)) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

popc_status popc_run_train(popc_run *r, const popc_train_hooks *hooks,
                           popc_train_result *res)
{
    trainer t;
    const popc_run_model_format *fmt;
    popc_status st;

    memset(res, 0, sizeof *res);
    memset(&t, 0, sizeof t);
    res->test_accuracy = -1;
    t.r = r;
    t.hooks = hooks;
    t.ckpt_every = hooks && hooks->checkpoint_every > 0
                       ? hooks->checkpoint_every
                       : r->checkpoint_every;
    res->weights = r->weights_out;
    res->model_ini = r->model_out;
    res->checkpoint = t.ckpt_every ? r->checkpoint : NULL;
    t.ckpt_lock = -1;
    t.lead = popci_opt_int(r->opts, POPCI_O_Distributed_processId) == 0;
    res->ranks = (int)popci_opt_int(r->opts, POPCI_O_Distributed_numProcesses);
    t.r_ranks = res->ranks;
    /* refuse before training, not after it */
    if (r->export_onnx &&
        (st = popci_run_need_format(r, "train", "export_onnx", &fmt)) !=
            POPC_OK)
        goto done;
    /* two runs sharing a checkpoint would resume from each other's steps */
    if ((t.ckpt_every || (hooks && hooks->resume)) && r->checkpoint &&
        t.lead &&
        (st = popci_lock_path(r->checkpoint, "training checkpoint",
                              &t.ckpt_lock)) != POPC_OK)
        goto done;
    if ((st = setup(&t, res)) != POPC_OK)
        goto done;
    res->steps = t.ck.step;
    res->epochs = popc_dataloader_position(t.train_dl).epoch;
    t.t0 = now();
    if ((st = train_loop(&t, res)) != POPC_OK)
        goto done;
    res->seconds = now() - t.t0;
    res->samples_per_second =
        res->seconds > 0
            ? (double)t.steps_here *
                  (double)popc_dataloader_combined_batch_size(t.train_dl) *
                  (double)res->ranks / res->seconds
            : 0.0;
    res->collective_seconds = popc_model_collective_seconds(t.model, NULL);
    /* a run resumed at its end never compiled: nothing ran to compare */
    if (popc_model_is_compiled(t.model) &&
        (st = popc_model_check_ranks_agree(t.model, &res->checksum)) !=
            POPC_OK)
        goto done;
    if (!t.lead) /* rank 0 writes the outputs */
        goto done;
    if ((st = popc_weights_save(t.model, r->weights_out)) ||
        (st = popci_run_write_model_ini(r, r->model_out, r->weights_out,
                                        r->mean, r->std, r->n_norm)))
        goto done;
    if (r->export_onnx && (st = export_onnx(&t)) != POPC_OK)
        goto done;
    /* a finished run's checkpoint covers the whole run: resuming it is a
    ** no-op that rewrites the same outputs. Resumed at its end, the model
    ** never compiled, so its optimizer state is only held: the checkpoint
    ** it was loaded from is already the one this run would write. */
    if (t.ckpt_every && popc_model_is_compiled(t.model))
        st = checkpoint(&t);
    else if (t.ckpt_every) /* what a run killed while rewriting it left */
        popci_remove_stale_temps(r->checkpoint);
done:
    if (st != POPC_OK && t.t0 > 0) {
        res->seconds = now() - t.t0;
    }
    popc_model_free(t.eval);
    popc_model_free(t.model);
    popc_dataloader_free(t.test_dl);
    popc_dataloader_free(t.train_dl);
    popc_dataset_free(t.test_ds);
    popc_dataset_free(t.train_ds);
    popci_unlock_path(t.ckpt_lock);
    return st;
}

/* ---- inference ---------------------------------------------------------- */

popc_status popc_run_infer(popc_run *r, const volatile sig_atomic_t *stop,
                           popc_infer_result *res)
{
    popc_dataset *ds = NULL;
    popc_dataloader *dl = NULL;
    popc_model *m = NULL;
    popc_tensor *pred = NULL;
    popc_dtype input;
    int64_t n;
    double t0;
    popc_status st;

    memset(res, 0, sizeof *res);
    res->accuracy = -1;
    res->correct = -1;
    /* inference needs no collectives: under mpirun rank 0 classifies the
    ** whole split and writes the results, as when it evaluates */
    if (popci_opt_int(r->opts, POPCI_O_Distributed_processId) != 0) {
        popc_log(POPC_LOG_INFO, "%s: rank 0 classifies; nothing to do on "
                 "this rank", r->path);
        return POPC_OK;
    }
    if ((st = inference_model(r, &m, &input)) ||
        (st = popc_run_load_dataset(r, (popc_split)r->infer_split, &ds)) ||
        (st = popci_run_match_data(r, (popc_split)r->infer_split, ds,
                                   input)) ||
        (st = popc_run_new_loader(r, POPC_SPLIT_TEST, ds, &dl)))
        goto done;
    if (r->infer_weights)
        st = popc_weights_load(m, r->infer_weights);
    else
        popc_log(POPC_LOG_WARN,
                 "%s: no [infer] weights: classifying with freshly "
                 "initialised weights (chance-level accuracy)",
                 r->path);
    if (st != POPC_OK)
        goto done;
    n = popc_dataloader_samples_per_epoch(dl);
    if ((st = popc_tensor_new(POPC_DTYPE_I32, &n, 1, &pred)) != POPC_OK)
        goto done;
    t0 = now();
    if ((st = classify(m, dl, stop, popc_tensor_data(pred), &res->samples,
                       &res->correct)) != POPC_OK)
        goto done;
    res->seconds = now() - t0;
    res->samples_per_second =
        res->seconds > 0 ? (double)res->samples / res->seconds : 0.0;
    if (popc_dataset_has_labels(ds))
        res->accuracy = res->samples ? (double)res->correct /
                                           (double)res->samples
                                     : 0.0;
    else
        res->correct = -1;
    if (r->predictions) {
        if ((st = popc_npy_save(r->predictions, pred)) != POPC_OK)
            goto done;
        res->predictions = r->predictions;
    }
done:
    popc_tensor_free(pred);
    popc_model_free(m);
    popc_dataloader_free(dl);
    popc_dataset_free(ds);
    return st;
}
