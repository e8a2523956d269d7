/* cmd_train.c - `popc train RUN.ini`: train with a progress display,
** evaluate every epoch, write weights and the model INI; checkpoints,
** --resume and clean stops on SIGINT/SIGTERM.
**
** On a terminal the progress is one line redrawn at most ten times a
** second; otherwise (a log file, CI) plain lines every log_every steps.
** Progress goes to stderr, the final summary to stdout.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "popc/run.h"
#include "tools/cli.h"

static const char usage[] =
    "Usage: popc train RUN.ini [OPTIONS]\n"
    "\n"
    "Train the model described by RUN.ini ([model], [layer NAME], [data],\n"
    "[optimizer], [train], [options]; see docs/ini-format.md). Shows the\n"
    "progress, evaluates test accuracy after every epoch, and writes the\n"
    "weights ([train] weights, a directory of .npy files) and a model INI\n"
    "for popc infer ([train] model).\n"
    "\n"
    "Options:\n"
    "  --set SECTION.KEY=VALUE  override a setting of the run file; may be\n"
    "                           repeated (options.deviceIterations=4,\n"
    "                           data.batch_size=32,\n"
    "                           layer.fc1.out_features=256)\n"
    "  --checkpoint-every N     write a checkpoint every N steps ([train]\n"
    "                           checkpoint; default RUN.ckpt)\n"
    "  --resume                 continue from the checkpoint; the result is\n"
    "                           the same as an uninterrupted run\n"
    "  --json FILE              write the results as JSON (status, steps,\n"
    "                           final loss, accuracy, \"losses\": the loss of\n"
    "                           every step, \"epoch_results\")\n"
    "  --quiet                  no progress, only the summary\n"
    "  --allow-foreign          let the file load the shared libraries and\n"
    "                           call the symbols it names (foreign layers);\n"
    "                           only for files you trust\n"
    "  -h, --help               show this help\n"
    "\n"
    "SIGINT or SIGTERM stops after the current step and writes a checkpoint\n"
    "when checkpoints are on (exit status 128+signal); a second signal\n"
    "aborts at once.\n";

typedef struct epoch_rec {
    double loss;
    double accuracy;
    double seconds;
} epoch_rec;

typedef struct display {
    int tty;
    int quiet;
    int64_t log_every;          /* 0: a tenth of an epoch */
    double last_draw;
    double epoch_start;
    int bar_shown;
    epoch_rec *epochs;
    int n_epochs, cap_epochs;
    double *losses;             /* of every step this process trained */
    int64_t n_losses, cap_losses;
    int64_t checkpoints;
    int oom;
} display;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *hms(double s, char *buf, size_t size)
{
    long t = s < 0 ? 0 : (long)(s + 0.5);

    if (s < 0)
        snprintf(buf, size, "--:--");
    else if (t >= 3600)
        snprintf(buf, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, size, "%ld:%02ld", t / 60, t % 60);
    return buf;
}

static void draw_bar(display *d, const popc_train_progress *p)
{
    char bar[25], eta[32];
    int fill = p->steps_per_epoch
                   ? (int)(24 * p->step / p->steps_per_epoch)
                   : 0;

    for (int i = 0; i < 24; i++)
        bar[i] = i < fill ? '#' : '-';
    bar[24] = '\0';
    fprintf(stderr,
            "\r\033[Kepoch %lld/%lld [%s] %lld/%lld  loss %.4f  %.0f "
            "samples/s  ETA %s",
            (long long)p->epoch + 1, (long long)p->epochs, bar,
            (long long)p->step, (long long)p->steps_per_epoch, p->loss,
            p->samples_per_second, hms(p->eta, eta, sizeof eta));
    fflush(stderr);
    d->bar_shown = 1;
}

static void clear_bar(display *d)
{
    if (d->bar_shown) {
        fputs("\r\033[K", stderr);
        d->bar_shown = 0;
    }
}

static void record_epoch(display *d, const popc_train_progress *p,
                         double seconds)
{
    if (d->n_epochs == d->cap_epochs) {
        int cap = d->cap_epochs ? 2 * d->cap_epochs : 16;
        epoch_rec *e = realloc(d->epochs, (size_t)cap * sizeof *e);

        if (!e) {
            d->oom = 1;
            return;
        }
        d->epochs = e;
        d->cap_epochs = cap;
    }
    d->epochs[d->n_epochs].loss = p->epoch_loss;
    d->epochs[d->n_epochs].accuracy = p->test_accuracy;
    d->epochs[d->n_epochs].seconds = seconds;
    d->n_epochs++;
}

static void record_loss(display *d, double loss)
{
    if (d->n_losses == d->cap_losses) {
        int64_t cap = d->cap_losses ? 2 * d->cap_losses : 1024;
        double *l = realloc(d->losses, (size_t)cap * sizeof *l);

        if (!l) {
            d->oom = 1;
            return;
        }
        d->losses = l;
        d->cap_losses = cap;
    }
    d->losses[d->n_losses++] = loss;
}

static void on_progress(const popc_train_progress *p, void *user)
{
    display *d = user;
    double t = now(), seconds;
    char eta[32];
    int64_t every;

    if (d->epoch_start == 0)
        d->epoch_start = t;
    switch (p->event) {
    case POPC_TRAIN_STEP:
        record_loss(d, p->loss);
        if (d->quiet)
            break;
        if (d->tty) {
            if (t - d->last_draw >= 0.1 || p->step == p->steps_per_epoch) {
                draw_bar(d, p);
                d->last_draw = t;
            }
            break;
        }
        every = d->log_every ? d->log_every
                             : (p->steps_per_epoch + 9) / 10;
        if (every < 1)
            every = 1;
        if (p->step % every == 0 || p->step == p->steps_per_epoch)
            fprintf(stderr,
                    "train: epoch %lld/%lld step %lld/%lld loss %.4f "
                    "%.0f samples/s ETA %s\n",
                    (long long)p->epoch + 1, (long long)p->epochs,
                    (long long)p->step, (long long)p->steps_per_epoch,
                    p->loss, p->samples_per_second,
                    hms(p->eta, eta, sizeof eta));
        break;
    case POPC_TRAIN_EPOCH_END:
        seconds = t - d->epoch_start;
        d->epoch_start = t;
        record_epoch(d, p, seconds);
        if (d->quiet)
            break;
        clear_bar(d);
        fprintf(stderr, "epoch %lld/%lld: loss %.4f", (long long)p->epoch + 1,
                (long long)p->epochs, p->epoch_loss);
        if (p->test_accuracy >= 0)
            fprintf(stderr, ", test accuracy %.2f%%", 100 * p->test_accuracy);
        fprintf(stderr, " (%.1f s, %.0f samples/s)\n", seconds,
                p->samples_per_second);
        break;
    case POPC_TRAIN_CHECKPOINT:
        d->checkpoints++;
        break;
    }
}

static int write_json(const char *path, const char *ini, int rc,
                       const char *error, const popc_train_result *res,
                       const display *d)
{
    json j = {0};

    json_begin(&j, '{');
    json_key(&j, "command");
    json_str(&j, "train");
    json_key(&j, "run");
    json_str(&j, ini);
    json_key(&j, "status");
    json_str(&j, rc == EXIT_OK ? "ok" : rc >= 128 ? "interrupted" : "error");
    json_key(&j, "exit_code");
    json_int(&j, rc);
    json_key(&j, "error");
    json_str(&j, error);
    if (res) {
        json_key(&j, "epochs");
        json_int(&j, res->epochs);
        json_key(&j, "steps");
        json_int(&j, res->steps);
        json_key(&j, "resumed_step");
        json_int(&j, res->resumed_step);
        json_key(&j, "final_loss");
        json_num(&j, res->final_loss);
        json_key(&j, "test_accuracy");
        if (res->test_accuracy >= 0)
            json_num(&j, res->test_accuracy);
        else
            json_str(&j, NULL);
        json_key(&j, "seconds");
        json_num(&j, res->seconds);
        json_key(&j, "samples_per_second");
        json_num(&j, res->samples_per_second);
        json_key(&j, "ranks");
        json_int(&j, res->ranks);
        json_key(&j, "collective_seconds");
        json_num(&j, res->collective_seconds);
        json_key(&j, "weights");
        json_str(&j, rc == EXIT_OK ? res->weights : NULL);
        json_key(&j, "model");
        json_str(&j, rc == EXIT_OK ? res->model_ini : NULL);
        json_key(&j, "checkpoint");
        json_str(&j, res->checkpoint);
        json_key(&j, "checkpoints_written");
        json_int(&j, d->checkpoints);
        /* one loss per step this process trained, from step
        ** resumed_step + 1 on, for plotting training curves */
        json_key(&j, "losses");
        json_begin(&j, '[');
        for (int64_t i = 0; i < d->n_losses; i++)
            json_num(&j, d->losses[i]);
        json_end(&j, ']');
        json_key(&j, "epoch_results");
        json_begin(&j, '[');
        for (int i = 0; i < d->n_epochs; i++) {
            json_begin(&j, '{');
            json_key(&j, "loss");
            json_num(&j, d->epochs[i].loss);
            json_key(&j, "test_accuracy");
            if (d->epochs[i].accuracy >= 0)
                json_num(&j, d->epochs[i].accuracy);
            else
                json_str(&j, NULL);
            json_key(&j, "seconds");
            json_num(&j, d->epochs[i].seconds);
            json_end(&j, '}');
        }
        json_end(&j, ']');
    }
    json_end(&j, '}');
    return json_write(&j, path);
}

int cmd_train(int argc, char **argv)
{
    popc_run *r = NULL;
    popc_train_hooks hooks;
    popc_train_result res;
    display d;
    cli_args a;
    char error[2048] = "";
    const char *every;
    int rc;
    popc_status st;

    time_t started = time(NULL);

    memset(&d, 0, sizeof d);
    memset(&res, 0, sizeof res);
    if ((rc = cli_parse(argc, argv,
                        ARG_INI | ARG_SET | ARG_JSON | ARG_CHECKPOINT |
                            ARG_QUIET | ARG_FOREIGN,
                        usage, &a)) != 0) {
        free(a.sets);
        return rc < 0 ? EXIT_OK : rc;
    }
    if ((st = popc_run_load(a.ini, a.sets, a.n_sets, &r)) != POPC_OK) {
        snprintf(error, sizeof error, "%s", popc_last_error());
        rc = cli_fail_load(st);
        if (a.json)
            write_json(a.json, a.ini, rc, error, NULL, &d);
        free(a.sets);
        return rc;
    }
    d.tty = isatty(STDERR_FILENO);
    d.quiet = a.quiet;
    if ((every = popc_run_value(r, "train", "log_every")))
        d.log_every = atoll(every);
    memset(&hooks, 0, sizeof hooks);
    hooks.progress = on_progress;
    hooks.user = &d;
    hooks.stop = &cli_stop;
    hooks.checkpoint_every = a.checkpoint_every;
    hooks.resume = a.resume;
    cli_catch_signals();
    st = popc_run_train(r, &hooks, &res);
    clear_bar(&d);
    if (st != POPC_OK) {
        snprintf(error, sizeof error, "%s", popc_last_error());
        rc = cli_fail(st);
        /* the other ranks would wait for this one until their timeout */
        if (popc_distributed_size() > 1) {
            cli_error("stopping every rank of the run");
            popc_distributed_abort(rc);
        }
    } else if (popc_distributed_rank() != 0) {
        rc = EXIT_OK; /* rank 0 reports and writes */
    } else {
        rc = EXIT_OK;
        if (res.resumed_step)
            printf("resumed from step %lld of %s\n",
                   (long long)res.resumed_step, res.checkpoint);
        if (res.resumed_step && res.resumed_step == res.steps)
            printf("the checkpoint is at the end of the run (%lld epoch%s, "
                   "%lld steps): nothing left to train",
                   (long long)res.epochs, res.epochs == 1 ? "" : "s",
                   (long long)res.steps);
        else
            printf("trained %lld epoch%s (%lld steps) in %.1f s, %.0f "
                   "samples/s; final loss %.4f",
                   (long long)res.epochs, res.epochs == 1 ? "" : "s",
                   (long long)res.steps, res.seconds,
                   res.samples_per_second, res.final_loss);
        if (res.test_accuracy >= 0)
            printf(", test accuracy %.2f%%", 100 * res.test_accuracy);
        printf("\nweights: %s\nmodel:   %s\n", res.weights, res.model_ini);
        if (res.ranks > 1)
            printf("ranks: %d, all holding identical weights (checksum "
                   "%016llx); samples/s counts every rank\n", res.ranks,
                   (unsigned long long)res.checksum);
        if (res.checkpoint)
            printf("checkpoint: %s\n", res.checkpoint);
        cli_print_profiles(popc_run_options(r), started);
    }
    if (a.json && popc_distributed_rank() == 0 &&
        write_json(a.json, a.ini, rc, rc ? error : NULL, &res, &d) !=
            EXIT_OK && rc == EXIT_OK)
        rc = EXIT_RUNTIME;
    if (d.oom && rc == EXIT_OK)
        cli_error("out of memory recording the epoch results");
    free(d.epochs);
    free(d.losses);
    free(a.sets);
    popc_run_free(r);
    popc_distributed_finalize();
    return rc;
}
