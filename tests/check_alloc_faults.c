/* check_alloc_faults.c - running out of memory anywhere gives a clean
** error, and what was built before stays usable.
**
** As SQLite's OOM tests do: a scenario (build a graph, compile, train
** with Adam, read weights, save an executable and load it back, run it)
** is split into stages; for every n, the nth allocation libpopc or a
** plugin makes fails (popc_fault_fail_alloc). The stage that meets it
** must return an error with a message (no crash; LeakSanitizer checks
** nothing leaks in the sanitizer build); then, with the fault off, that
** stage is retried on the same objects and the scenario goes on to the
** end. Its results (losses, trained weights, outputs of the reloaded
** executable) must be bitwise those of a run without faults: a failed
** compile, run or save leaves nothing half-done behind. n grows until the
** scenario makes fewer than n allocations.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <check.h>

#include "popc/fault.h"
#include "popc/layers.h"
#include "popc/popc.h"
#include "popc/run.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

#define BATCH 4
#define STEPS 2
#define N_PARAMS 4

static const char *const params[N_PARAMS] = {"fc1.weight", "fc1.bias",
                                             "fc2.weight", "fc2.bias"};

/* Everything a scenario builds; a stage that fails leaves the members it
** did not finish NULL (or as they were). */
typedef struct scene {
    const char *dir;
    const char *backend;
    popc_graph *g;
    popc_options *o;
    popc_optimizer *opt;
    popc_model *m;
    popc_model *loaded;
    popc_tensor *x, *y;
    popc_tensor *loss[STEPS];
    popc_tensor *weights[N_PARAMS];
    popc_tensor *out;
    int step;
} scene;

typedef popc_status (*stage)(scene *s);

static char path_buf[512];

static const char *in_dir(const scene *s, const char *name)
{
    snprintf(path_buf, sizeof path_buf, "%s/%s", s->dir, name);
    return path_buf;
}

/* ---- stages -------------------------------------------------------------- */

static popc_status build_graph(scene *s)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int64_t xd[2] = {BATCH, 4}, yd[2] = {BATCH, 3};
    int x, y, h, a, o, loss;
    popc_status st;

    if ((st = popc_graph_new("mlp", &g)) ||
        (st = popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x)) ||
        (st = popc_graph_add_input(g, "y", POPC_DTYPE_F32, yd, 2, &y)) ||
        (st = popc_layers_new(g, 7, &L)) ||
        (st = popc_nn_linear(L, "fc1", x, 4, 8, 1, &h)) ||
        (st = popc_nn_activation(L, "Relu", h, 0.0, &a)) ||
        (st = popc_nn_linear(L, "fc2", a, 8, 3, 1, &o)) ||
        (st = popc_nn_mse_loss(L, o, y, "mean", &loss)) ||
        (st = popc_graph_add_output(g, loss))) {
        popc_layers_free(L);
        popc_graph_free(g);
        return st;
    }
    popc_layers_free(L);
    s->g = g;
    return POPC_OK;
}

static popc_status make_options(scene *s)
{
    popc_options *o = NULL;
    popc_status st;

    if ((st = popc_options_new(&o)) ||
        (st = popc_options_set(o, "backend", s->backend)) ||
        (st = popc_options_set_int(o, "deviceIterations", 1))) {
        popc_options_free(o);
        return st;
    }
    s->o = o;
    return POPC_OK;
}

static popc_status make_optimizer(scene *s)
{
    popc_optimizer *opt = NULL;
    popc_status st;

    if ((st = popc_optimizer_new("adam", &opt)) ||
        (st = popc_optimizer_set(opt, "lr", 0.01))) {
        popc_optimizer_free(opt);
        return st;
    }
    s->opt = opt;
    return POPC_OK;
}

static popc_status make_model(scene *s)
{
    return popc_model_new_training(s->g, s->o, s->opt, &s->m);
}

static popc_status make_inputs(scene *s)
{
    int64_t xd[2] = {BATCH, 4}, yd[2] = {BATCH, 3};
    popc_status st;

    if (!s->x && (st = popc_tensor_new(POPC_DTYPE_F32, xd, 2, &s->x)))
        return st;
    if (!s->y && (st = popc_tensor_new(POPC_DTYPE_F32, yd, 2, &s->y)))
        return st;
    for (int i = 0; i < BATCH * 4; i++)
        ((float *)popc_tensor_data(s->x))[i] = (float)((i * 5) % 7) / 7.0f;
    for (int i = 0; i < BATCH * 3; i++)
        ((float *)popc_tensor_data(s->y))[i] = (float)(i % 3) - 1.0f;
    return POPC_OK;
}

static popc_status compile(scene *s)
{
    popc_tensor *in[2] = {s->x, s->y};

    return popc_model_compile(s->m, in, 2);
}

static popc_status train_steps(scene *s)
{
    popc_tensor *in[2] = {s->x, s->y};

    for (; s->step < STEPS; s->step++) {
        popc_status st = popc_model_run(s->m, in, 2, &s->loss[s->step], 1);

        if (st != POPC_OK)
            return st;
    }
    return POPC_OK;
}

static popc_status read_weights(scene *s)
{
    for (int i = 0; i < N_PARAMS; i++) {
        const popc_tensor *w = NULL;
        popc_status st;

        if (s->weights[i])
            continue;
        if ((st = popc_model_get_weight(s->m, params[i], &w)) ||
            (st = popc_tensor_clone(w, &s->weights[i])))
            return st;
    }
    return POPC_OK;
}

static popc_status save_weights(scene *s)
{
    return popc_weights_save(s->m, in_dir(s, "weights"));
}

static popc_status load_weights(scene *s)
{
    return popc_weights_load(s->m, in_dir(s, "weights"));
}

static popc_status save_executable(scene *s)
{
    return popc_model_save(s->m, in_dir(s, "m.popc"));
}

static popc_status load_executable(scene *s)
{
    return popc_load(in_dir(s, "m.popc"), NULL, &s->loaded);
}

static popc_status run_loaded(scene *s)
{
    popc_tensor *in[2] = {s->x, s->y};

    return popc_model_run(s->loaded, in, 2, &s->out, 1);
}

static const stage stages[] = {
    build_graph, make_options, make_optimizer, make_model, make_inputs,
    compile, train_steps, read_weights, save_weights, load_weights,
    save_executable, load_executable, run_loaded,
};
static const char *const stage_names[] = {
    "build_graph", "make_options", "make_optimizer", "make_model",
    "make_inputs", "compile", "train_steps", "read_weights", "save_weights",
    "load_weights", "save_executable", "load_executable", "run_loaded",
};
#define N_STAGES ((int)(sizeof stages / sizeof *stages))

static void scene_free(scene *s)
{
    popc_model_free(s->loaded);
    popc_model_free(s->m);
    popc_optimizer_free(s->opt);
    popc_options_free(s->o);
    popc_graph_free(s->g);
    popc_tensor_free(s->x);
    popc_tensor_free(s->y);
    popc_tensor_free(s->out);
    for (int i = 0; i < STEPS; i++)
        popc_tensor_free(s->loss[i]);
    for (int i = 0; i < N_PARAMS; i++)
        popc_tensor_free(s->weights[i]);
    memset(s, 0, sizeof *s);
}

/* ---- the test ------------------------------------------------------------ */

static char dir[256];

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s/popc-oom-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[512];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void run_all(scene *s, int from)
{
    for (int k = from; k < N_STAGES; k++)
        ck_assert_msg(stages[k](s) == POPC_OK, "%s (retried): %s",
                      stage_names[k], popc_last_error());
}

static void same(const popc_tensor *a, const popc_tensor *b, long n,
                 const char *what)
{
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_msg(popc_tensor_equal(a, b),
                  "after the failure of allocation %ld: %s differs from the "
                  "run without faults",
                  n, what);
}

/* cpu, then ipumodel (worker threads allocate too) */
static const char *const backends[] = {"cpu", "ipumodel"};

START_TEST(every_allocation_can_fail)
{
    scene ref = {.dir = dir, .backend = backends[_i]}, s;
    long n, failures = 0, recovered_ok = 0;

    run_all(&ref, 0); /* also loads the plugins, once per process */
    for (n = 1;; n++) {
        int failed = -1, fired;
        popc_status st = POPC_OK;

        memset(&s, 0, sizeof s);
        s.dir = dir;
        s.backend = ref.backend;
        popc_fault_fail_alloc(n, 0);
        for (int k = 0; k < N_STAGES && failed < 0; k++)
            if ((st = stages[k](&s)) != POPC_OK)
                failed = k;
        fired = popc_fault_alloc_fired();
        popc_fault_fail_alloc(0, 0);
        if (failed >= 0) {
            ck_assert_msg(fired, "%s failed without an injected fault: %s",
                          stage_names[failed], popc_last_error());
            ck_assert_msg(popc_last_error()[0] != '\0',
                          "allocation %ld: %s failed with no message", n,
                          stage_names[failed]);
            failures++;
            run_all(&s, failed);
        } else if (fired) {
            recovered_ok++; /* popc worked around the failed allocation */
        }
        for (int i = 0; i < STEPS; i++)
            same(s.loss[i], ref.loss[i], n, "a training loss");
        for (int i = 0; i < N_PARAMS; i++)
            same(s.weights[i], ref.weights[i], n, params[i]);
        same(s.out, ref.out, n, "the reloaded executable's output");
        scene_free(&s);
        if (!fired)
            break;
    }
    printf("%s: allocation failures tried: %ld (%ld gave an error, %ld "
           "were worked around)\n",
           ref.backend, n - 1, failures, recovered_ok);
    ck_assert_int_gt(n, 100);
    scene_free(&ref);
}
END_TEST

static Suite *alloc_faults_suite(void)
{
    Suite *s = suite_create("alloc_faults");
    TCase *tc = tcase_create("alloc_faults");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, every_allocation_can_fail, 0, 2);
    tcase_set_timeout(tc, 1200);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(alloc_faults_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
