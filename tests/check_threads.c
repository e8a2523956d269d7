/* check_threads.c - several models driven from several threads of one
** process at once.
**
** Each thread builds its own graph, then trains a model (Adam) and runs an
** inference model sharing its weights, on the cpu or the ipumodel
** backend, while the others do the same. The losses and outputs must be
** bitwise those of the same work done alone beforehand. CI also runs this
** test in a ThreadSanitizer build (.ci/run), which reports any data race
** in the registry, the options, the error and log state, or the backends.
*/
#include "config.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/layers.h"
#include "popc/popc.h"
#include "tests/harness/dir_check.h"
#include "popc/run.h"

#define THREADS 4
#define STEPS 3
#define BATCH 4

/* What one thread computes. */
typedef struct work {
    const char *backend;
    uint64_t seed;
    popc_status st;
    char error[512];
    popc_tensor *loss[STEPS];
    popc_tensor *out;
} work;

static popc_status build(uint64_t seed, int training, popc_graph **out)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int64_t xd[2] = {BATCH, 6}, yd[2] = {BATCH, 2};
    int x, y, h, o, loss;
    popc_status st;

    if ((st = popc_graph_new("mlp", &g)) ||
        (st = popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x)) ||
        (training &&
         (st = popc_graph_add_input(g, "y", POPC_DTYPE_F32, yd, 2, &y))) ||
        (st = popc_layers_new(g, seed, &L)) ||
        (st = popc_nn_linear(L, "fc1", x, 6, 12, 1, &h)) ||
        (st = popc_nn_activation(L, "Tanh", h, 0.0, &h)) ||
        (st = popc_nn_linear(L, "fc2", h, 12, 2, 1, &o)) ||
        (training && (st = popc_nn_mse_loss(L, o, y, "mean", &loss))) ||
        (st = popc_graph_add_output(g, training ? loss : o))) {
        popc_layers_free(L);
        popc_graph_free(g);
        return st;
    }
    popc_layers_free(L);
    *out = g;
    return POPC_OK;
}

static popc_status fill(popc_tensor **t, int cols, uint64_t seed)
{
    int64_t d[2] = {BATCH, cols};
    popc_status st = popc_tensor_new(POPC_DTYPE_F32, d, 2, t);

    for (int i = 0; st == POPC_OK && i < BATCH * cols; i++)
        ((float *)popc_tensor_data(*t))[i] =
            (float)((i * 7 + (int)seed) % 13) / 13.0f - 0.5f;
    return st;
}

static popc_status do_work(work *w)
{
    popc_graph *gt = NULL, *gi = NULL;
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *train = NULL, *infer = NULL;
    popc_tensor *x = NULL, *y = NULL;
    popc_status st;

    if ((st = build(w->seed, 1, &gt)) || (st = build(w->seed, 0, &gi)) ||
        (st = popc_options_new(&o)) ||
        (st = popc_options_set(o, "backend", w->backend)) ||
        (st = popc_optimizer_new("adam", &opt)) ||
        (st = popc_optimizer_set(opt, "lr", 0.05)) ||
        (st = popc_model_new_training(gt, o, opt, &train)) ||
        (st = popc_model_new_inference(gi, o, &infer)) ||
        (st = popc_model_share_weights(infer, train)) ||
        (st = fill(&x, 6, w->seed)) || (st = fill(&y, 2, w->seed + 1)))
        goto done;
    for (int s = 0; s < STEPS; s++) {
        popc_tensor *in[2] = {x, y};

        if ((st = popc_model_run(train, in, 2, &w->loss[s], 1)))
            goto done;
    }
    st = popc_model_run(infer, &x, 1, &w->out, 1);
done:
    if (st != POPC_OK)
        snprintf(w->error, sizeof w->error, "%s", popc_last_error());
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_model_free(infer);
    popc_model_free(train);
    popc_optimizer_free(opt);
    popc_options_free(o);
    popc_graph_free(gi);
    popc_graph_free(gt);
    return st;
}

static void *thread_main(void *arg)
{
    work *w = arg;

    w->st = do_work(w);
    return NULL;
}

static void work_free(work *w)
{
    for (int s = 0; s < STEPS; s++)
        popc_tensor_free(w->loss[s]);
    popc_tensor_free(w->out);
    memset(w, 0, sizeof *w);
}

static const char *backend_of(int i)
{
    return i % 2 ? "ipumodel" : "cpu";
}

START_TEST(models_in_parallel_threads)
{
    work alone[THREADS], together[THREADS];
    pthread_t tid[THREADS];

    for (int i = 0; i < THREADS; i++) {
        memset(&alone[i], 0, sizeof alone[i]);
        alone[i].backend = backend_of(i);
        alone[i].seed = 11 + (uint64_t)i / 2;
        ck_assert_msg(do_work(&alone[i]) == POPC_OK, "%s: %s",
                      alone[i].backend, popc_last_error());
    }
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < THREADS; i++) {
            memset(&together[i], 0, sizeof together[i]);
            together[i].backend = alone[i].backend;
            together[i].seed = alone[i].seed;
            ck_assert_int_eq(pthread_create(&tid[i], NULL, thread_main,
                                            &together[i]),
                             0);
        }
        for (int i = 0; i < THREADS; i++)
            ck_assert_int_eq(pthread_join(tid[i], NULL), 0);
        for (int i = 0; i < THREADS; i++) {
            ck_assert_msg(together[i].st == POPC_OK, "thread %d (%s): %s",
                          i, together[i].backend, together[i].error);
            for (int s = 0; s < STEPS; s++)
                ck_assert_msg(popc_tensor_equal(together[i].loss[s],
                                                alone[i].loss[s]),
                              "thread %d (%s): loss of step %d differs from "
                              "the run alone",
                              i, together[i].backend, s);
            ck_assert_msg(popc_tensor_equal(together[i].out, alone[i].out),
                          "thread %d (%s): inference output differs", i,
                          together[i].backend);
            work_free(&together[i]);
        }
    }
    /* the same seed on cpu and ipumodel trains the same numbers */
    for (int i = 0; i + 1 < THREADS; i += 2)
        ck_assert(popc_tensor_max_abs_diff(alone[i].out, alone[i + 1].out) <
                  1e-5);
    for (int i = 0; i < THREADS; i++)
        work_free(&alone[i]);
}
END_TEST

/* Errors are per thread: a failure in one thread never shows up as
** another thread's popc_last_error. */
static void *bad_option(void *arg)
{
    popc_options *o = NULL;
    int *ok = arg;

    *ok = 1;
    for (int i = 0; i < 200 && *ok; i++) {
        if (popc_options_new(&o) != POPC_OK) {
            *ok = 0;
            break;
        }
        *ok = popc_options_set(o, "noSuchOption", "1") != POPC_OK &&
              strstr(popc_last_error(), "noSuchOption") != NULL;
        popc_options_free(o);
    }
    return NULL;
}

static void *good_option(void *arg)
{
    popc_options *o = NULL;
    int *ok = arg;

    *ok = 1;
    for (int i = 0; i < 200 && *ok; i++) {
        if (popc_options_new(&o) != POPC_OK) {
            *ok = 0;
            break;
        }
        *ok = popc_options_set_int(o, "fooBarBaz", 1) != POPC_OK &&
              strstr(popc_last_error(), "fooBarBaz") != NULL;
        popc_options_free(o);
    }
    return NULL;
}

/* Look-ups while another thread loads the plugins, again and again, into
** a fresh registry: no torn read (ThreadSanitizer checks the locking). */
typedef struct lookup_arg {
    popc_registry *r;
    int *stop;
    long found;                /* this thread's own count */
} lookup_arg;

static void *look_up(void *p)
{
    lookup_arg *a = p;

    while (!__atomic_load_n(a->stop, __ATOMIC_ACQUIRE)) {
        int n = popc_registry_op_count(a->r);

        a->found += popc_registry_find_op(a->r, NULL, "Relu", 0) != NULL;
        a->found += popc_registry_find_backend(a->r, "cpu") != NULL;
        a->found += popc_registry_find_optimizer(a->r, "sgd") != NULL;
        if (n > 0)
            a->found += popc_registry_op_at(a->r, n - 1) != NULL;
        for (int i = 0; i < popc_registry_plugin_count(a->r); i++)
            a->found += popc_registry_plugin_at(a->r, i).name != NULL;
        (void)popc_registry_problems(a->r);
    }
    return NULL;
}

START_TEST(lookups_while_loading)
{
    const char *path = getenv("POPC_PLUGIN_PATH");

    ck_assert_msg(path != NULL, "POPC_PLUGIN_PATH is not set");
    for (int round = 0; round < 3; round++) {
        popc_registry *r = NULL;
        int stop = 0;
        lookup_arg a[2];
        pthread_t t[2];
        char dirs[4096], *save = NULL;

        ck_assert_int_eq(popc_registry_new(&r), POPC_OK);
        for (int i = 0; i < 2; i++) {
            a[i] = (lookup_arg){r, &stop, 0};
            ck_assert_int_eq(pthread_create(&t[i], NULL, look_up, &a[i]),
                             0);
        }
        snprintf(dirs, sizeof dirs, "%s", path);
        for (char *d = strtok_r(dirs, ":", &save); d;
             d = strtok_r(NULL, ":", &save))
            ck_assert_msg(popc_registry_load_path(r, d) == POPC_OK, "%s",
                          popc_last_error());
        __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        ck_assert_ptr_nonnull(popc_registry_find_op(r, NULL, "Relu", 0));
        popc_registry_free(r);
    }
}
END_TEST

START_TEST(errors_are_per_thread)
{
    pthread_t a, b;
    int ok_a = 0, ok_b = 0;

    ck_assert_int_eq(pthread_create(&a, NULL, bad_option, &ok_a), 0);
    ck_assert_int_eq(pthread_create(&b, NULL, good_option, &ok_b), 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    ck_assert_msg(ok_a && ok_b, "an error message crossed threads");
}
END_TEST

/* Two threads saving different models into the same weights directory:
** each save builds its own temporary directory, so both succeed and the
** directory always holds one model's complete set, never a mix, with no
** temporary left next to it. */
#define SAVES 5

typedef struct saver {
    popc_model *m;
    const char *dir;
    popc_status st[SAVES];
    char error[512];
} saver;

static void *save_weights(void *p)
{
    saver *s = p;

    for (int i = 0; i < SAVES; i++)
        if ((s->st[i] = popc_weights_save(s->m, s->dir)) != POPC_OK &&
            !s->error[0])
            snprintf(s->error, sizeof s->error, "%s", popc_last_error());
    return NULL;
}

static popc_model *inference_model(uint64_t seed)
{
    popc_graph *g = NULL;
    popc_options *o = NULL;
    popc_model *m = NULL;

    ck_assert_int_eq(build(seed, 0, &g), POPC_OK);
    ck_assert_int_eq(popc_options_new(&o), POPC_OK);
    ck_assert_int_eq(popc_options_set(o, "backend", "cpu"), POPC_OK);
    ck_assert_msg(popc_model_new_inference(g, o, &m) == POPC_OK, "%s",
                  popc_last_error());
    popc_options_free(o);
    popc_graph_free(g);
    return m;
}

/* The bytes of path (at most size); -1 when it cannot be read. */
static long read_all(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "rb");
    long n;

    if (!f)
        return -1;
    n = (long)fread(buf, 1, size, f);
    fclose(f);
    return n;
}

/* Whether every file of dir is byte-equal to the file of that name in ref
** and both hold the same number of files. */
static int same_files(const char *dir, const char *ref)
{
    static char a[1 << 16], b[1 << 16];
    char pa[1024], pb[1024];
    DIR *d = opendir(dir);
    struct dirent *e;
    int n_dir = 0, n_ref = 0, same = d != NULL;

    while (same && (e = readdir(d))) {
        long la, lb;

        if (e->d_name[0] == '.')
            continue;
        n_dir++;
        snprintf(pa, sizeof pa, "%s/%s", dir, e->d_name);
        snprintf(pb, sizeof pb, "%s/%s", ref, e->d_name);
        la = read_all(pa, a, sizeof a);
        lb = read_all(pb, b, sizeof b);
        same = la >= 0 && la == lb && memcmp(a, b, (size_t)la) == 0;
    }
    if (d)
        closedir(d);
    if (!(d = opendir(ref)))
        return 0;
    while ((e = readdir(d)))
        n_ref += e->d_name[0] != '.';
    closedir(d);
    return same && n_dir == n_ref;
}

START_TEST(weights_saved_to_one_dir_from_two_threads)
{
    char top[256], dir[320], ref[2][320], cmd[400];
    popc_model *m[2] = {inference_model(3), inference_model(4)};

    snprintf(top, sizeof top, "%s/popc-threads-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(top));
    snprintf(dir, sizeof dir, "%s/w", top);
    for (int i = 0; i < 2; i++) {
        snprintf(ref[i], sizeof ref[i], "%s/ref%d", top, i);
        ck_assert_msg(popc_weights_save(m[i], ref[i]) == POPC_OK, "%s",
                      popc_last_error());
    }
    ck_assert(!same_files(ref[0], ref[1]));
    for (int round = 0; round < 20; round++) {
        saver s[2];
        pthread_t t[2];

        for (int i = 0; i < 2; i++) {
            memset(&s[i], 0, sizeof s[i]);
            s[i].m = m[i];
            s[i].dir = dir;
            ck_assert_int_eq(pthread_create(&t[i], NULL, save_weights,
                                            &s[i]),
                             0);
        }
        for (int i = 0; i < 2; i++)
            ck_assert_int_eq(pthread_join(t[i], NULL), 0);
        for (int i = 0; i < 2; i++)
            for (int k = 0; k < SAVES; k++)
                ck_assert_msg(s[i].st[k] == POPC_OK,
                              "round %d, thread %d, save %d: %s", round, i,
                              k, s[i].error);
        ck_assert_msg(same_files(dir, ref[0]) || same_files(dir, ref[1]),
                      "round %d: %s holds neither model's weights", round,
                      dir);
        ck_assert_int_eq(dir_temporaries(top), 0);
    }
    for (int i = 0; i < 2; i++)
        popc_model_free(m[i]);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *threads_suite(void)
{
    Suite *s = suite_create("threads");
    TCase *tc = tcase_create("threads");

    tcase_add_test(tc, models_in_parallel_threads);
    tcase_add_test(tc, errors_are_per_thread);
    tcase_add_test(tc, lookups_while_loading);
    tcase_add_test(tc, weights_saved_to_one_dir_from_two_threads);
    tcase_set_timeout(tc, 600);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(threads_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
