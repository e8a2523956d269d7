/* check_profile.c - popc/profile.h and enableProfiling: PopTorch's texts
** for cycleCount and compilationTime, cycle estimates (positive, growing
** with the batch and the device iterations, logged at DEBUG), latencies
** and performance counters (ordered, consistent with each other and with
** the run's wall time), the compile progress (log lines off a terminal, a
** bar on a pseudo-terminal), and the profile.json / profile.html files
** (valid JSON with the expected keys, atomically replaced, the core's
** figures on a backend without a report, a clear error for a directory
** that cannot be made).
*/
#include "config.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/minijson.h"
#include "tests/profile_files.h"
#include "tests/profile_model.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

#define FAILS(call, status, text)                                          \
    do {                                                                   \
        popc_status st_ = (call);                                          \
        ck_assert_msg(st_ == (status), "got %s: %s", popc_status_name(st_), \
                      popc_last_error());                                  \
        ck_assert_str_eq(popc_last_error(), (text));                       \
    } while (0)

#define B 8

typedef struct setup {
    const char *backend;
    int64_t batch, di, ga, r;
    int two_ipus, training, log_cycles, progress;
    const char *profile;
    const char *model_name;    /* NULL: PopTorch's default */
    const char *log_dir;       /* NULL: not set */
} setup;

static popc_options *make_options(const setup *s)
{
    popc_options *o = NULL;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", s->backend ? s->backend : "ipumodel"));
    OK(popc_options_set_int(o, "threads", 2));
    OK(popc_options_set_int(o, "deviceIterations", s->di ? s->di : 1));
    OK(popc_options_set_int(o, "replicationFactor", s->r ? s->r : 1));
    if (s->ga > 1)
        OK(popc_options_set_int(o, "Training.gradientAccumulation", s->ga));
    OK(popc_options_set(o, "logCycleCount", s->log_cycles ? "true"
                                                           : "false"));
    if (!s->progress)
        OK(popc_options_set(o, "showCompilationProgressBar", "false"));
    if (s->profile)
        OK(popc_options_set(o, "enableProfiling", s->profile));
    if (s->model_name)
        OK(popc_options_set(o, "modelName", s->model_name));
    if (s->log_dir)
        OK(popc_options_set(o, "logDir", s->log_dir));
    return o;
}

/* A model of setup s and its inputs (the combined batch). */
static popc_model *make_model(const setup *s, popc_tensor **in, int *n_in)
{
    int64_t batch = s->batch ? s->batch : B;
    int64_t rows = batch * (s->di ? s->di : 1) * (s->ga ? s->ga : 1) *
                   (s->r ? s->r : 1);
    popc_options *o = make_options(s);
    popc_graph *g = profile_mlp(batch, 64, s->two_ipus, s->training);
    popc_model *m = NULL;

    ck_assert_msg(g != NULL, "%s", popc_last_error());
    if (s->training)
        OK(popc_model_new_training(g, o, NULL, &m));
    else
        OK(popc_model_new_inference(g, o, &m));
    *n_in = profile_inputs(rows, s->training, in);
    ck_assert_int_gt(*n_in, 0);
    popc_graph_free(g);
    popc_options_free(o);
    return m;
}

static void run(popc_model *m, popc_tensor **in, int n_in)
{
    popc_tensor *out = NULL;

    OK(popc_model_run(m, in, n_in, &out, 1));
    popc_tensor_free(out);
}

static void free_inputs(popc_tensor **in, int n)
{
    for (int i = 0; i < n; i++)
        popc_tensor_free(in[i]);
}

/* ---- cycle counts -------------------------------------------------------- */

START_TEST(cycle_count_texts)
{
    setup s = {.log_cycles = 0};
    popc_tensor *in[2];
    int n;
    popc_model *m = make_model(&s, in, &n);
    double cycles = -1.0;

    FAILS(popc_model_cycle_count(m, &cycles), POPC_ECONFIG,
          "Cycle count logging is disabled. Please set option "
          "logCycleCount to True to enable.");
    run(m, in, n);
    FAILS(popc_model_cycle_count(m, &cycles), POPC_ECONFIG,
          "Cycle count logging is disabled. Please set option "
          "logCycleCount to True to enable.");
    ck_assert(cycles == 0.0);
    popc_model_free(m);
    free_inputs(in, n);

    s.log_cycles = 1;
    m = make_model(&s, in, &n);
    FAILS(popc_model_cycle_count(m, &cycles), POPC_ESTATE,
          "Please run the model at least once before obtaining cycle "
          "count.");
    OK(popc_model_compile(m, in, n));
    FAILS(popc_model_cycle_count(m, &cycles), POPC_ESTATE,
          "Please run the model at least once before obtaining cycle "
          "count.");
    run(m, in, n);
    OK(popc_model_cycle_count(m, &cycles));
    ck_assert(cycles > 0.0);
    /* a new compile starts counting again */
    OK(popc_model_destroy(m));
    FAILS(popc_model_cycle_count(m, &cycles), POPC_ESTATE,
          "Please run the model at least once before obtaining cycle "
          "count.");
    popc_model_free(m);
    free_inputs(in, n);
}
END_TEST

START_TEST(cycle_count_needs_a_cycle_model)
{
    setup s = {.backend = "cpu", .log_cycles = 1};
    popc_tensor *in[2];
    int n;
    popc_model *m = make_model(&s, in, &n);
    double cycles;

    run(m, in, n);
    ck_assert_int_eq(popc_model_cycle_count(m, &cycles), POPC_EUNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "cpu backend"));
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "ipumodel"));
    popc_model_free(m);
    free_inputs(in, n);
}
END_TEST

static double cycles_of(setup s)
{
    popc_tensor *in[2];
    int n;
    popc_model *m;
    double cycles = 0.0;

    s.log_cycles = 1;
    m = make_model(&s, in, &n);
    run(m, in, n);
    OK(popc_model_cycle_count(m, &cycles));
    popc_model_free(m);
    free_inputs(in, n);
    return cycles;
}

START_TEST(cycles_grow_with_the_batch)
{
    double small = cycles_of((setup){.batch = 8});
    double big = cycles_of((setup){.batch = 64});
    double di4 = cycles_of((setup){.batch = 8, .di = 4});
    double train = cycles_of((setup){.batch = 8, .training = 1});

    ck_assert_msg(small > 0.0 && big > 2.0 * small, "batch 8: %g, 64: %g",
                  small, big);
    /* one IPU: device iterations run one after the other */
    ck_assert_msg(fabs(di4 - 4.0 * small) <= 1e-9 * di4,
                  "DI 4: %g, DI 1: %g", di4, small);
    /* the backward pass costs cycles too */
    ck_assert_msg(train > small, "training %g, inference %g", train, small);
}
END_TEST

/* With a pipeline the stages overlap: a run takes less than the stages
** one after the other, and more than the slowest stage alone. */
START_TEST(pipeline_cycles_overlap)
{
    double two = cycles_of((setup){.batch = 8, .two_ipus = 1, .di = 2});
    double many = cycles_of((setup){.batch = 8, .two_ipus = 1, .di = 16});

    /* stage cycles a and b: 2 micro-batches take a + b + max(a, b),
    ** 16 take a + b + 15 max(a, b), not 16 (a + b) */
    ck_assert(two > 0.0);
    ck_assert_msg(many < 8.0 * two && many > 4.0 * two, "DI 16: %g, DI 2: "
                  "%g", many, two);
}
END_TEST

typedef struct captured {
    char text[8192];
    int lines;
} captured;

static void capture(int level, const char *msg, void *user)
{
    captured *c = user;
    size_t n = strlen(c->text);

    (void)level;
    snprintf(c->text + n, sizeof c->text - n, "%s\n", msg);
    c->lines++;
}

START_TEST(cycles_logged_at_debug_after_each_run)
{
    setup s = {.log_cycles = 1};
    popc_tensor *in[2];
    int n, seen = 0;
    popc_model *m = make_model(&s, in, &n);
    captured c = {{0}, 0};
    char want[128];
    double cycles;

    OK(popc_model_compile(m, in, n));
    popc_log_set_level(POPC_LOG_DEBUG);
    popc_log_set_callback(capture, &c);
    run(m, in, n);
    run(m, in, n);
    popc_log_set_callback(NULL, NULL);
    popc_log_set_level(POPC_LOG_WARN);
    OK(popc_model_cycle_count(m, &cycles));
    snprintf(want, sizeof want, "Total number of IPU cycles: %.0f ", cycles);
    for (const char *p = c.text; (p = strstr(p, want)) != NULL; p++)
        seen++;
    ck_assert_msg(seen == 2, "%d lines with '%s' in:\n%s", seen, want,
                  c.text);
    popc_model_free(m);
    free_inputs(in, n);
}
END_TEST

/* ---- compilation time ---------------------------------------------------- */

START_TEST(compilation_time_texts)
{
    setup s = {.progress = 1};
    popc_tensor *in[2];
    int n;
    popc_model *m = make_model(&s, in, &n);
    double t = -1.0;

    FAILS(popc_model_get_compilation_time(m, &t), POPC_ESTATE,
          "Please compile the model before obtaining compilation time.");
    OK(popc_model_compile(m, in, n));
    OK(popc_model_get_compilation_time(m, &t));
    ck_assert(t > 0.0);
    ck_assert(t == popc_model_compilation_time(m));
    OK(popc_model_destroy(m));
    FAILS(popc_model_get_compilation_time(m, &t), POPC_ESTATE,
          "Please compile the model before obtaining compilation time.");
    popc_model_free(m);
    free_inputs(in, n);

    s.progress = 0;
    m = make_model(&s, in, &n);
    OK(popc_model_compile(m, in, n));
    FAILS(popc_model_get_compilation_time(m, &t), POPC_ECONFIG,
          "Please set showCompilationProgressBar option to obtain "
          "compilation time.");
    ck_assert(t == 0.0);
    ck_assert(popc_model_compilation_time(m) > 0.0);
    popc_model_free(m);
    free_inputs(in, n);
}
END_TEST

/* ---- latencies and counters ---------------------------------------------- */

static void check_latency(const popc_latency *l, int positive)
{
    ck_assert(l->min <= l->mean + 1e-15 && l->mean <= l->max + 1e-15);
    ck_assert(positive ? l->min > 0.0 : l->min >= 0.0);
}

static void check_counters(popc_model *m, int64_t iterations, int replicas)
{
    popc_perf_counters pc;
    popc_latency tot, host, comp, back;
    double sum_total = 0.0, sum_host = 0.0, sum_comp = 0.0, sum_back = 0.0;
    double wall;

    OK(popc_model_get_perf_counters(m, &pc));
    ck_assert_int_eq(pc.n_iterations, iterations);
    ck_assert_int_eq(pc.replicas, replicas);
    ck_assert_int_eq(pc.micro_batches * replicas, iterations);
    popc_model_latency(m, NULL, NULL, &wall);
    for (int64_t i = 0; i < pc.n_iterations; i++) {
        ck_assert(pc.times[POPC_PERF_INPUT][i] >= 0.0);
        for (int ev = 1; ev < POPC_PERF_EVENTS; ev++)
            ck_assert_msg(pc.times[ev][i] >= pc.times[ev - 1][i],
                          "iteration %lld: %s %g before %s %g",
                          (long long)i, popc_perf_event_name(ev),
                          pc.times[ev][i], popc_perf_event_name(ev - 1),
                          pc.times[ev - 1][i]);
        /* every iteration happens within the run */
        ck_assert(pc.times[POPC_PERF_OUTPUT_COMPLETE][i] <= wall);
        sum_total += pc.times[POPC_PERF_OUTPUT_COMPLETE][i] -
                     pc.times[POPC_PERF_INPUT][i];
        sum_host += pc.times[POPC_PERF_INPUT_COMPLETE][i] -
                    pc.times[POPC_PERF_INPUT][i];
        sum_comp += pc.times[POPC_PERF_OUTPUT][i] -
                    pc.times[POPC_PERF_INPUT_COMPLETE][i];
        sum_back += pc.times[POPC_PERF_OUTPUT_COMPLETE][i] -
                    pc.times[POPC_PERF_OUTPUT][i];
    }
    OK(popc_model_get_latency(m, &tot));
    OK(popc_model_get_host_ipu_latency(m, &host));
    OK(popc_model_get_compute_latency(m, &comp));
    OK(popc_model_get_ipu_host_latency(m, &back));
    check_latency(&tot, 1);
    check_latency(&comp, 1);
    check_latency(&host, 0);
    check_latency(&back, 0);
    /* the means are those of the counters, and the parts add up */
    ck_assert(fabs(tot.mean - sum_total / (double)iterations) < 1e-9);
    ck_assert(fabs(host.mean - sum_host / (double)iterations) < 1e-9);
    ck_assert(fabs(comp.mean - sum_comp / (double)iterations) < 1e-9);
    ck_assert(fabs(back.mean - sum_back / (double)iterations) < 1e-9);
    ck_assert(host.mean + comp.mean <= tot.mean + 1e-12);
    ck_assert(host.min + comp.min <= tot.min + 1e-12);
    ck_assert(tot.max <= wall);
}

START_TEST(latencies_before_a_run)
{
    setup s = {0};
    popc_tensor *in[2];
    int n;
    popc_model *m = make_model(&s, in, &n);
    popc_latency l = {1, 1, 1};
    popc_perf_counters pc;

    FAILS(popc_model_get_latency(m, &l), POPC_ESTATE,
          "Please run the model at least once before obtaining latency.");
    ck_assert(l.min == 0.0 && l.max == 0.0 && l.mean == 0.0);
    OK(popc_model_compile(m, in, n));
    FAILS(popc_model_get_compute_latency(m, &l), POPC_ESTATE,
          "Please run the model at least once before obtaining latency.");
    FAILS(popc_model_get_perf_counters(m, &pc), POPC_ESTATE,
          "Please run the model at least once before obtaining "
          "performance counters.");
    ck_assert_int_eq(popc_model_get_latency(NULL, &l), POPC_EINVAL);
    ck_assert_int_eq(popc_model_get_latency(m, NULL), POPC_EINVAL);
    ck_assert_str_eq(popc_perf_event_name(POPC_PERF_INPUT), "input");
    ck_assert_str_eq(popc_perf_event_name(POPC_PERF_OUTPUT_COMPLETE),
                     "output_complete");
    ck_assert_ptr_null(popc_perf_event_name(POPC_PERF_EVENTS));
    popc_model_free(m);
    free_inputs(in, n);
}
END_TEST

START_TEST(inference_latencies_and_counters)
{
    setup s = {.di = 4, .r = 2};
    popc_tensor *in[2];
    int n;
    popc_model *m = make_model(&s, in, &n);
    double host, compute, total;

    run(m, in, n);
    check_counters(m, 4 * 2, 2);
    run(m, in, n);
    check_counters(m, 4 * 2, 2);
    popc_model_latency(m, &host, &compute, &total);
    ck_assert(total > 0.0 && host + compute <= total + 1e-12);
    popc_model_free(m);
    free_inputs(in, n);
}
END_TEST

START_TEST(pipelined_training_counters)
{
    setup s = {.training = 1, .two_ipus = 1, .di = 2, .ga = 4, .r = 2};
    popc_tensor *in[2];
    int n;
    popc_model *m = make_model(&s, in, &n);

    run(m, in, n);
    check_counters(m, 2 * 4 * 2, 2);
    popc_model_free(m);
    free_inputs(in, n);
}
END_TEST

/* ---- compile progress ---------------------------------------------------- */

/* Compile m with stderr on /dev/null, which is never a terminal, so the
** progress takes the log-line form whatever stderr the test runs with. */
static void compile_off_a_terminal(popc_model *m, popc_tensor **in, int n)
{
    int null = open("/dev/null", O_WRONLY), saved;

    ck_assert_int_ge(null, 0);
    fflush(stderr);
    saved = dup(STDERR_FILENO);
    ck_assert_int_ge(saved, 0);
    dup2(null, STDERR_FILENO);
    close(null);
    OK(popc_model_compile(m, in, n));
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
}

START_TEST(progress_lines_off_a_terminal)
{
    setup s = {.progress = 1, .training = 1};
    popc_tensor *in[2];
    int n;
    popc_model *m = make_model(&s, in, &n);
    captured c = {{0}, 0};

    popc_log_set_level(POPC_LOG_INFO);
    popc_log_set_callback(capture, &c);
    compile_off_a_terminal(m, in, n);
    popc_log_set_callback(NULL, NULL);
    popc_log_set_level(POPC_LOG_WARN);
    popc_model_free(m);
    free_inputs(in, n);
    ck_assert_ptr_nonnull(strstr(c.text, "Compiling 'mlp_train': [1/3] "
                                         "verify"));
    ck_assert_ptr_nonnull(strstr(c.text, "Compiling 'mlp_train': [2/3] "
                                         "autodiff and plan"));
    ck_assert_ptr_nonnull(strstr(c.text, "Compiling 'mlp_train': [3/3] "
                                         "backend compile"));
    ck_assert_ptr_nonnull(strstr(c.text, "Compiling 'mlp_train': done in "));

    /* off: nothing */
    s.progress = 0;
    m = make_model(&s, in, &n);
    memset(&c, 0, sizeof c);
    popc_log_set_level(POPC_LOG_INFO);
    popc_log_set_callback(capture, &c);
    compile_off_a_terminal(m, in, n);
    popc_log_set_callback(NULL, NULL);
    popc_log_set_level(POPC_LOG_WARN);
    ck_assert_ptr_null(strstr(c.text, "Compiling '"));
    popc_model_free(m);
    free_inputs(in, n);
}
END_TEST

/* stderr on a pseudo-terminal: the bar is redrawn in place and ends at
** 100% on its own line. */
START_TEST(progress_bar_on_a_terminal)
{
    setup s = {.progress = 1};
    popc_tensor *in[2];
    int n, master, slave, saved;
    popc_model *m = make_model(&s, in, &n);
    char buf[4096];
    size_t len = 0;
    ssize_t got;

    master = posix_openpt(O_RDWR | O_NOCTTY);
    ck_assert_int_ge(master, 0);
    ck_assert_int_eq(grantpt(master), 0);
    ck_assert_int_eq(unlockpt(master), 0);
    slave = open(ptsname(master), O_RDWR | O_NOCTTY);
    ck_assert_int_ge(slave, 0);
    fflush(stderr);
    saved = dup(STDERR_FILENO);
    dup2(slave, STDERR_FILENO);
    setenv("TERM", "xterm", 1);
    OK(popc_model_compile(m, in, n));
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(slave);
    /* everything is written by now: read what the terminal holds */
    fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
    while (len < sizeof buf - 1 &&
           (got = read(master, buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)got;
    buf[len] = '\0';
    close(master);
    ck_assert_ptr_nonnull(strstr(buf, "\r\033[Kpopc: compiling 'mlp' ["));
    ck_assert_ptr_nonnull(strstr(buf, "verify"));
    ck_assert_ptr_nonnull(strstr(buf, "backend compile"));
    ck_assert_ptr_nonnull(strstr(buf, "100% done"));
    popc_model_free(m);
    free_inputs(in, n);
}
END_TEST

/* ---- enableProfiling ----------------------------------------------------- */

/* Only the profile's files (and the backend's own report.json, which a
** backend may write): no temporary left behind. */
static void check_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' &&
                                                      !e->d_name[2])))
            continue;
        ck_assert_msg(strcmp(e->d_name, "profile.json") == 0 ||
                      strcmp(e->d_name, "profile.html") == 0 ||
                      strcmp(e->d_name, "report.json") == 0,
                      "unexpected file '%s' in the profile directory",
                      e->d_name);
        n += strcmp(e->d_name, "report.json") != 0;
    }
    closedir(d);
    ck_assert_int_eq(n, 2);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static int keys_in(const mj_value *o, const char *const *keys)
{
    for (int k = 0; keys[k]; k++)
        if (!mj_get(o, keys[k]))
            return k;
    return -1;
}

START_TEST(profile_files_after_compile_and_runs)
{
    char *dir = pf_temp_dir(), *sub = pf_sub_dir(dir, "training");
    setup s = {.training = 1, .two_ipus = 1, .di = 2, .ga = 4, .r = 2,
               .profile = dir, .log_cycles = 1};
    static const char *const top[] = {
        "format", "version", "model", "compile", "backend_report", "device",
        "memory", "ops", "stages", "micro_batch_cycles", "run_cycles",
        "phases", "runs", "iterations", "perf_counters", "timeline", NULL};
    static const char *const tile_keys[] = {
        "tile", "weights", "gradients", "state", "activations",
        "temporaries", "total", NULL};
    popc_tensor *in[2];
    int n;
    popc_model *m = make_model(&s, in, &n);
    const mj_value *x, *ev;
    mj_value *v;
    double cycles;
    size_t len;
    char *html;
    int phases;

    OK(popc_model_compile(m, in, n));
    v = pf_read_profile(sub);
    ck_assert_str_eq(mj_str(v, "format"), "popc-profile");
    ck_assert_int_eq(keys_in(v, top), -1);
    ck_assert_int_eq((int)mj_num(mj_get(v, "runs"), "count", -1), 0);
    ck_assert_int_eq(mj_get(mj_get(v, "timeline"), "events")->n, 0);
    ck_assert(mj_num(mj_get(v, "compile"), "seconds", 0) > 0.0);
    mj_free(v);
    check_files(sub);

    run(m, in, n);
    run(m, in, n);
    v = pf_read_profile(sub);
    ck_assert_int_eq(keys_in(v, top), -1);
    x = mj_get(v, "model");
    ck_assert_str_eq(mj_str(x, "name"), "mlp_train");
    ck_assert_str_eq(mj_str(x, "backend"), "ipumodel");
    ck_assert_int_eq((int)mj_num(x, "ipus_per_replica", 0), 2);
    ck_assert_int_eq((int)mj_num(x, "micro_batches", 0), 8);
    phases = (int)mj_num(x, "phases", 0);
    ck_assert_int_ge(phases, 2);
    ck_assert(mj_num(v, "backend_report", 0) == 1.0);
    /* per-IPU, per-tile memory from the backend's tile map */
    x = mj_get(v, "memory");
    ck_assert_int_eq(mj_get(x, "ipus")->n, 2);
    ev = mj_get(mj_at(mj_get(x, "ipus"), 1), "tiles");
    ck_assert_int_eq(ev->n, (int)mj_num(mj_get(v, "device"),
                                        "tiles_per_ipu", -1));
    ck_assert_int_eq(keys_in(mj_at(ev, 0), tile_keys), -1);
    ck_assert(mj_num(mj_get(x, "totals"), "weights", 0) > 0.0);
    ck_assert(mj_num(mj_get(x, "totals"), "state", -1) >= 0.0);
    /* per-op and per-stage cycles */
    x = mj_get(v, "ops");
    ck_assert_int_gt(x->n, 4);
    ck_assert(mj_num(mj_at(x, 0), "cycles", 0) > 0.0);
    ck_assert_ptr_nonnull(mj_str(mj_at(x, 0), "name"));
    ck_assert_int_eq(mj_get(v, "stages")->n, 2);
    ck_assert_int_eq(mj_get(v, "phases")->n, phases);
    OK(popc_model_cycle_count(m, &cycles));
    ck_assert(fabs(mj_num(v, "run_cycles", 0) - cycles) <= 1e-6 * cycles);
    /* runs, latencies, counters and the pipeline timeline of run 1 */
    x = mj_get(v, "runs");
    ck_assert_int_eq((int)mj_num(x, "count", 0), 2);
    ck_assert_int_eq(mj_get(x, "latencies")->n, 2);
    ck_assert(mj_num(mj_at(mj_get(x, "latencies"), 1), "total", 0) > 0.0);
    x = mj_get(v, "iterations");
    ck_assert_int_eq((int)mj_num(x, "count", 0), 2 * 4 * 2);
    ck_assert(mj_num(mj_get(x, "latency"), "mean", 0) > 0.0);
    x = mj_get(v, "perf_counters");
    ck_assert_int_eq(mj_get(x, "output_complete")->n, 2 * 4 * 2);
    x = mj_get(v, "timeline");
    ck_assert_int_eq((int)mj_num(x, "run", -1), 1);
    ev = mj_get(x, "events");
    ck_assert_int_eq(ev->n, 2 * 4 * 2 * phases);
    for (int i = 0; i < ev->n; i++) {
        const mj_value *e = mj_at(ev, i);
        ck_assert(mj_num(e, "start", -1) >= 0.0);
        ck_assert(mj_num(e, "start", 0) <= mj_num(e, "compute_start", -1));
        ck_assert(mj_num(e, "compute_start", 0) <=
                  mj_num(e, "compute_end", -1));
        ck_assert(mj_num(e, "compute_end", 0) <= mj_num(e, "end", -1));
        ck_assert(mj_num(e, "end", 0) <= mj_num(x, "duration", -1));
        ck_assert_int_lt((int)mj_num(e, "phase", -1), phases);
        ck_assert_int_lt((int)mj_num(e, "micro_batch", -1), 8);
    }
    /* a pipeline: micro-batch 1 enters phase 0 before micro-batch 0
    ** leaves the last phase (same replica: events are in mb, r, p order) */
    ck_assert(mj_num(mj_at(ev, 2 * phases), "start", 0) <
              mj_num(mj_at(ev, phases - 1), "end", 0));
    ck_assert_int_eq(mj_get(x, "steps")->n, 2);
    mj_free(v);
    check_files(sub);

    html = pf_slurp(sub, "profile.html", &len);
    ck_assert_ptr_nonnull(strstr(html, "<!DOCTYPE html>"));
    ck_assert_ptr_nonnull(strstr(html, "id=\"popc-data\""));
    ck_assert_ptr_nonnull(strstr(html, "\"format\": \"popc-profile\""));
    /* nothing loaded from elsewhere: the only URL is the SVG namespace */
    ck_assert_ptr_null(strstr(html, "src="));
    ck_assert_int_eq(count(html, "http"), 1);
    ck_assert_int_eq(count(html, "http://www.w3.org/2000/svg"), 1);
    free(html);
    popc_model_free(m);
    free_inputs(in, n);
    pf_remove_dir(dir);
    free(dir);
    free(sub);
}
END_TEST

/* A '<' in a name cannot end the page's data early. */
START_TEST(profile_page_escapes_the_data)
{
    char *dir = pf_temp_dir(), *sub = pf_sub_dir(dir, "inference");
    setup s = {.backend = "cpu", .profile = dir};
    popc_tensor *in[2];
    int n;
    popc_graph *g = NULL;
    popc_options *o = make_options(&s);
    popc_model *m = NULL;
    int64_t xd[2] = {B, 784};
    int x, y;
    size_t len;
    char *html, *data, *end;

    OK(popc_graph_new("</script><b>x", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_node(g, NULL, "Relu", 0, &x, 1, &y, 1, NULL, 0,
                           "relu</script>", NULL));
    OK(popc_graph_add_output(g, y));
    OK(popc_model_new_inference(g, o, &m));
    n = profile_inputs(B, 0, in);
    run(m, in, n);
    html = pf_slurp(sub, "profile.html", &len);
    data = strstr(html, "id=\"popc-data\">");
    ck_assert_ptr_nonnull(data);
    end = strstr(data, "</script>");
    ck_assert_ptr_nonnull(end);
    ck_assert_ptr_nonnull(strstr(data, "\\u003c/script>\\u003cb>x"));
    ck_assert(strstr(data, "relu\\u003c/script>") < end);
    free(html);
    popc_model_free(m);
    popc_graph_free(g);
    popc_options_free(o);
    free_inputs(in, n);
    pf_remove_dir(dir);
    free(dir);
    free(sub);
}
END_TEST

/* The cpu backend has no report: the core's per-IPU figures stand in.
** The directory is made with its parents. */
START_TEST(profile_without_a_backend_report)
{
    char *top = pf_temp_dir(), mid[600], dir[640], *sub;
    setup s = {.backend = "cpu", .training = 1, .profile = dir};
    popc_tensor *in[2];
    int n;
    popc_model *m;
    const mj_value *x;
    mj_value *v;

    snprintf(mid, sizeof mid, "%s/nested", top);
    snprintf(dir, sizeof dir, "%s/deeper/", mid);
    sub = pf_sub_dir(dir, "training");
    m = make_model(&s, in, &n);
    run(m, in, n);
    check_files(sub);
    v = pf_read_profile(sub);
    ck_assert(mj_num(v, "backend_report", 1) == 0.0);
    x = mj_get(v, "memory");
    ck_assert_str_eq(mj_str(x, "source"), "plan");
    ck_assert_int_eq(mj_get(x, "ipus")->n, 1);
    ck_assert(mj_num(mj_at(mj_get(x, "ipus"), 0), "weights", 0) > 0.0);
    ck_assert(mj_num(mj_at(mj_get(x, "ipus"), 0), "state", -1) >= 0.0);
    ck_assert(mj_num(mj_at(mj_get(x, "ipus"), 0), "activations", 0) > 0.0);
    x = mj_get(v, "ops");
    ck_assert_int_gt(x->n, 4);
    ck_assert(mj_num(mj_at(x, 0), "flops", 0) > 0.0);
    ck_assert(mj_num(mj_at(x, 0), "cycles", -1) == 0.0);
    ck_assert(mj_num(v, "run_cycles", -1) == 0.0);
    ck_assert_int_eq(mj_get(mj_get(v, "timeline"), "events")->n, 1);
    ck_assert_int_eq(mj_get(mj_get(v, "timeline"), "steps")->n, 1);
    mj_free(v);
    popc_model_free(m);
    free_inputs(in, n);
    pf_remove_dir(top);
    free(top);
    free(sub);
}
END_TEST

/* modelName names the subdirectory of the report directory; by default a
** training and an inference model write "training" and "inference", so
** that both profile into one directory without overwriting each other. */
START_TEST(model_name_is_the_profile_subdirectory)
{
    char *dir = pf_temp_dir(), *mine = pf_sub_dir(dir, "mine"),
         *train = pf_sub_dir(dir, "training"), *infer = pf_sub_dir(dir, "inference");
    setup named = {.backend = "cpu", .training = 1, .profile = dir,
                   .model_name = "mine"};
    setup plain = {.backend = "cpu", .profile = dir};
    popc_tensor *in[2], *in2[2];
    int n, n2;
    popc_model *m = make_model(&named, in, &n), *m2;
    mj_value *v;

    run(m, in, n);
    check_files(mine);
    v = pf_read_profile(mine);
    ck_assert_str_eq(mj_str(mj_get(v, "model"), "model_name"), "mine");
    mj_free(v);
    ck_assert_int_ne(access(train, F_OK), 0);
    m2 = make_model(&plain, in2, &n2);
    run(m2, in2, n2);
    check_files(infer);
    v = pf_read_profile(infer);
    ck_assert_str_eq(mj_str(mj_get(v, "model"), "model_name"), "inference");
    mj_free(v);
    check_files(mine);
    popc_model_free(m);
    popc_model_free(m2);
    free_inputs(in, n);
    free_inputs(in2, n2);
    pf_remove_dir(dir);
    free(dir);
    free(mine);
    free(train);
    free(infer);
}
END_TEST

/* ---- logDir and the log of a model --------------------------------------- */

static char compile_line[4096];
static int compile_level = -1;

static void capture_compile(int level, const char *msg, void *user)
{
    (void)user;
    if (strstr(msg, "compile() ignored")) {
        snprintf(compile_line, sizeof compile_line, "%s", msg);
        compile_level = level;
    }
}

/* PopTorch logs a second compile() as a warning. */
START_TEST(second_compile_warns)
{
    setup s = {.backend = "cpu"};
    popc_tensor *in[2];
    int n;
    popc_model *m = make_model(&s, in, &n);

    popc_log_set_callback(capture_compile, NULL);
    OK(popc_model_compile(m, in, n));
    ck_assert_int_eq(compile_level, -1);
    OK(popc_model_compile(m, in, n));
    popc_log_set_callback(NULL, NULL);
    ck_assert_int_eq(compile_level, POPC_LOG_WARN);
    ck_assert_str_eq(compile_line, "Call to compile() ignored: the executable "
                               "is already compiled");
    popc_model_free(m);
    free_inputs(in, n);
}
END_TEST

/* logDir: the model's lines go to LOGDIR/NAME.log as well (the directory
** is made); a model without logDir writes no file; a directory that
** cannot be made fails the model's creation, naming logDir. */
START_TEST(log_dir_holds_the_model_log)
{
    char *dir = pf_temp_dir(), *logs = pf_sub_dir(dir, "logs"),
         *file = pf_sub_dir(logs, "mine.log"), *bad = pf_sub_dir(file, "x"),
         *other = pf_sub_dir(logs, "other.log");
    setup s = {.backend = "cpu", .training = 1, .model_name = "mine",
               .log_dir = logs};
    setup plain = {.backend = "cpu", .training = 1, .model_name = "other"};
    popc_tensor *in[2], *in2[2];
    int n, n2;
    popc_model *m, *m2;
    popc_options *o;
    popc_graph *g;
    size_t len;
    char *text;

    popc_log_set_level(POPC_LOG_INFO);
    m = make_model(&s, in, &n);
    OK(popc_model_compile(m, in, n));
    OK(popc_model_compile(m, in, n));
    m2 = make_model(&plain, in2, &n2);
    OK(popc_model_compile(m2, in2, n2));
    popc_log_set_level(POPC_LOG_WARN);
    text = pf_slurp(logs, "mine.log", &len);
    ck_assert_msg(strstr(text, "[popc INFO] compiled 'mlp_train' for "
                               "training on backend cpu"), "%s", text);
    ck_assert_msg(strstr(text, "[popc WARN] Call to compile() ignored"),
                  "%s", text);
    /* only this model's lines */
    ck_assert_int_eq(count(text, "compiled '"), 1);
    free(text);
    popc_model_free(m);
    popc_model_free(m2);
    /* logs/ holds mine.log alone: the model without logDir wrote nothing */
    ck_assert_int_ne(access(other, F_OK), 0);
    s.log_dir = bad;
    o = make_options(&s);
    g = profile_mlp(B, 64, 0, 1);
    ck_assert_int_eq(popc_model_new_training(g, o, NULL, &m), POPC_EIO);
    ck_assert_msg(strstr(popc_last_error(), "logDir: cannot create the "
                                            "directory"),
                  "%s", popc_last_error());
    popc_graph_free(g);
    popc_options_free(o);
    free_inputs(in, n);
    free_inputs(in2, n2);
    pf_remove_dir(dir);
    free(dir);
    free(logs);
    free(file);
    free(bad);
    free(other);
}
END_TEST

START_TEST(profile_directory_that_cannot_be_made)
{
    char *dir = pf_temp_dir(), file[512], bad[600];
    setup s = {.backend = "cpu", .profile = bad};
    popc_tensor *in[2];
    int n;
    popc_model *m;
    popc_tensor *out = NULL;
    FILE *f;

    /* a regular file where the directory's parent should be */
    snprintf(file, sizeof file, "%s/file", dir);
    snprintf(bad, sizeof bad, "%s/profile", file);
    f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    m = make_model(&s, in, &n);
    ck_assert_int_eq(popc_model_run(m, in, n, &out, 1), POPC_EIO);
    ck_assert_ptr_null(out);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "enableProfiling"));
    ck_assert_ptr_nonnull(strstr(popc_last_error(), bad));
    ck_assert(!popc_model_is_compiled(m));
    popc_model_free(m);
    free_inputs(in, n);
    pf_remove_dir(dir);
    free(dir);
}
END_TEST

static Suite *profile_suite(void)
{
    Suite *s = suite_create("profile");
    TCase *tc = tcase_create("cycles");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, cycle_count_texts);
    tcase_add_test(tc, cycle_count_needs_a_cycle_model);
    tcase_add_test(tc, cycles_grow_with_the_batch);
    tcase_add_test(tc, pipeline_cycles_overlap);
    tcase_add_test(tc, cycles_logged_at_debug_after_each_run);
    suite_add_tcase(s, tc);

    tc = tcase_create("latency");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, compilation_time_texts);
    tcase_add_test(tc, latencies_before_a_run);
    tcase_add_test(tc, inference_latencies_and_counters);
    tcase_add_test(tc, pipelined_training_counters);
    tcase_add_test(tc, progress_lines_off_a_terminal);
    tcase_add_test(tc, progress_bar_on_a_terminal);
    suite_add_tcase(s, tc);

    tc = tcase_create("files");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, profile_files_after_compile_and_runs);
    tcase_add_test(tc, profile_page_escapes_the_data);
    tcase_add_test(tc, profile_without_a_backend_report);
    tcase_add_test(tc, profile_directory_that_cannot_be_made);
    tcase_add_test(tc, model_name_is_the_profile_subdirectory);
    tcase_add_test(tc, second_compile_warns);
    tcase_add_test(tc, log_dir_holds_the_model_log);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(profile_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
