/* check_write_faults.c - a write that fails part-way leaves the previous
** file intact and says why.
**
** Three faults: the kernel's file-size limit (RLIMIT_FSIZE, with SIGXFSZ
** ignored: every write past an offset fails with EFBIG), and popc's write
** fault switch (popc/fault.h) making the disk "full" (ENOSPC) or broken
** (EIO) past an offset, or making the final fsync fail. For each kind of
** file popc writes (a .npy file, a weights directory, an exported
** executable, a training checkpoint), the offset is moved over the whole
** length of the new file; at every step the write must fail with POPC_EIO
** naming the path and the cause, the old file (or directory) must be
** byte-identical, and no temporary file may remain.
*/
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <check.h>

#include "popc/fault.h"
#include "popc/popc.h"
#include "tests/harness/dir_check.h"
#include "popc/run.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())
#define STEPS 24 /* limits tried per file, spread over its length */

static char dir[256];

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s/popc-wfault-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    signal(SIGXFSZ, SIG_IGN);
}

static void teardown(void)
{
    char cmd[512];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *path_in(const char *name)
{
    static char p[4][512];
    static int k;

    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

/* The whole file into a malloc'd buffer; *len its size. */
static char *slurp(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;

    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    rewind(f);
    buf = malloc((size_t)*len + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_int_eq(fread(buf, 1, (size_t)*len, f), (size_t)*len);
    fclose(f);
    return buf;
}

static int count_entries(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    int n = 0;

    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* The fault a write meets: err 0 is the file-size limit (EFBIG); ENOSPC
** and EIO come from popc_fault_fail_writes, at an offset or (limit -1) at
** the fsync. */
typedef struct fault {
    int err;
    long limit;
} fault;

static const int errs[] = {0, ENOSPC, EIO};
#define N_ERRS 3

/* Run write() in a child process under the fault, so that only popc's
** writes meet it (Check's own result file must not). The child exits 0
** when the write failed with POPC_EIO naming path and the cause, 1 when
** it failed otherwise, 2 when it succeeded. */
typedef popc_status (*writer)(void *arg);

static void faulty_write(fault f, writer write, void *arg, const char *path)
{
    pid_t pid = fork();
    int status = 0;

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* no Check calls in the child: they write to Check's channel */
        struct rlimit rl;
        popc_status st;

        if (f.err) {
            popc_fault_fail_writes(f.err, f.limit);
        } else {
            if (getrlimit(RLIMIT_FSIZE, &rl) != 0)
                _exit(3);
            rl.rlim_cur = (rlim_t)f.limit;
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
                _exit(3);
        }
        st = write(arg);
        if (st == POPC_OK)
            _exit(2);
        if (st != POPC_EIO || !strstr(popc_last_error(), path) ||
            !strstr(popc_last_error(), strerror(f.err ? f.err : EFBIG))) {
            fprintf(stderr, "%s at %ld: %s: %s\n", strerror(f.err), f.limit,
                    popc_status_name(st), popc_last_error());
            _exit(1);
        }
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "%s at %ld: the write %s", strerror(f.err ? f.err : EFBIG),
                  f.limit,
                  WIFEXITED(status) && WEXITSTATUS(status) == 2
                      ? "succeeded"
                      : "failed without POPC_EIO naming the file and cause");
}

/* The faults tried for a file of len bytes: each error at STEPS offsets
** over the length, and ENOSPC and EIO at the fsync. */
static int n_faults(void)
{
    return N_ERRS * STEPS + 2;
}

static fault fault_at(int i, long len)
{
    fault f;

    if (i >= N_ERRS * STEPS) {
        f.err = i == N_ERRS * STEPS ? ENOSPC : EIO;
        f.limit = -1;
    } else {
        f.err = errs[i / STEPS];
        f.limit = len * (i % STEPS) / STEPS;
    }
    return f;
}

struct npy_job {
    const char *path;
    popc_tensor *t;
};

static popc_status npy_write(void *arg)
{
    struct npy_job *j = arg;

    return popc_npy_save(j->path, j->t);
}

struct model_job {
    popc_model *m;
    const char *path;
};

static popc_status weights_write(void *arg)
{
    struct model_job *j = arg;

    return popc_weights_save(j->m, j->path);
}

static popc_status exe_write(void *arg)
{
    struct model_job *j = arg;

    return popc_model_save(j->m, j->path);
}

/* ---- .npy ---------------------------------------------------------------- */

static popc_tensor *filled(int64_t n, float base)
{
    popc_tensor *t = NULL;
    int64_t d[1] = {n};

    OK(popc_tensor_new(POPC_DTYPE_F32, d, 1, &t));
    for (int64_t i = 0; i < n; i++)
        ((float *)popc_tensor_data(t))[i] = base + (float)i;
    return t;
}

START_TEST(npy_write_failures_keep_the_old_file)
{
    const char *path = path_in("a.npy");
    popc_tensor *old = filled(100, 1.0f), *neu = filled(3000, -5.0f);
    long old_len, new_len = 128 + 3000 * 4, len;
    char *before, *after;

    OK(popc_npy_save(path, old));
    before = slurp(path, &old_len);
    for (int i = 0; i < n_faults(); i++) {
        fault f = fault_at(i, new_len);
        struct npy_job job = {path, neu};

        faulty_write(f, npy_write, &job, path);
        after = slurp(path, &len);
        ck_assert_msg(len == old_len && memcmp(before, after, (size_t)len) ==
                      0, "fault %d: the old file changed", i);
        free(after);
        ck_assert_int_eq(count_entries(dir), 1);
    }
    OK(popc_npy_save(path, neu));
    free(before);
    popc_tensor_free(old);
    popc_tensor_free(neu);
}
END_TEST

/* ---- a model's weights and executable ------------------------------------ */

static popc_model *compiled_mlp(uint64_t seed, const char *backend)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    popc_options *o = NULL;
    popc_model *m = NULL;
    popc_tensor *x = NULL, *y = NULL;
    int64_t xd[2] = {2, 64};
    int in, h;

    OK(popc_graph_new("mlp", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &in));
    OK(popc_layers_new(g, seed, &L));
    OK(popc_nn_linear(L, "fc1", in, 64, 32, 1, &h));
    OK(popc_nn_activation(L, "Relu", h, 0.0, &h));
    OK(popc_nn_linear(L, "fc2", h, 32, 4, 1, &h));
    OK(popc_graph_add_output(g, h));
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    OK(popc_model_new_inference(g, o, &m));
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_model_run(m, &x, 1, &y, 1));
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_layers_free(L);
    popc_options_free(o);
    popc_graph_free(g);
    return m;
}

/* Every file of a weights directory, concatenated in name order. */
static char *dir_bytes(const char *path, long *len)
{
    struct dirent **names = NULL;
    int n = scandir(path, &names, NULL, alphasort);
    char *all = NULL, file[1024];
    long total = 0;

    ck_assert_int_ge(n, 0);
    for (int i = 0; i < n; i++) {
        long flen;
        char *b;

        if (names[i]->d_name[0] != '.') {
            snprintf(file, sizeof file, "%s/%s", path, names[i]->d_name);
            b = slurp(file, &flen);
            all = realloc(all, (size_t)(total + flen + 256));
            ck_assert_ptr_nonnull(all);
            total += snprintf(all + total, 256, "%s:", names[i]->d_name);
            memcpy(all + total, b, (size_t)flen);
            total += flen;
            free(b);
        }
        free(names[i]);
    }
    free(names);
    *len = total;
    return all;
}

START_TEST(weights_write_failures_keep_the_old_directory)
{
    const char *wdir = path_in("weights");
    popc_model *a = compiled_mlp(1, "cpu"), *b = compiled_mlp(2, "cpu");
    long old_len, len;
    char *before, *after;

    OK(popc_weights_save(a, wdir));
    before = dir_bytes(wdir, &old_len);
    /* the largest file, fc1.weight, is 64*32 floats */
    for (int i = 0; i < n_faults(); i++) {
        fault f = fault_at(i, 128 + 64 * 32 * 4);
        struct model_job job = {b, wdir};

        faulty_write(f, weights_write, &job, wdir);
        after = dir_bytes(wdir, &len);
        ck_assert_msg(len == old_len && memcmp(before, after, (size_t)len) ==
                      0, "fault %d: the old weights changed", i);
        free(after);
        ck_assert_int_eq(count_entries(dir), 1);
    }
    OK(popc_weights_save(b, wdir));
    free(before);
    popc_model_free(a);
    popc_model_free(b);
}
END_TEST

START_TEST(executable_write_failures_keep_the_old_file)
{
    const char *path = path_in("m.popc");
    popc_model *a = compiled_mlp(1, "cpu"), *b = compiled_mlp(2, "cpu");
    long old_len, len;
    char *before, *after;

    OK(popc_model_save(a, path));
    before = slurp(path, &old_len);
    for (int i = 0; i < n_faults(); i++) {
        fault f = fault_at(i, old_len);
        struct model_job job = {b, path};

        faulty_write(f, exe_write, &job, path);
        after = slurp(path, &len);
        ck_assert_msg(len == old_len && memcmp(before, after, (size_t)len) ==
                      0, "fault %d: the old executable changed", i);
        free(after);
        ck_assert_int_eq(count_entries(dir), 1);
    }
    OK(popc_model_save(b, path));
    free(before);
    popc_model_free(a);
    popc_model_free(b);
}
END_TEST

/* ---- a training checkpoint ------------------------------------------------ */

/* A run file training an 8 -> 16 -> 3 MLP on 32 samples written as .npy,
** checkpointing every step into dir/ck.ckpt. */
static const char *checkpoint_run(void)
{
    popc_tensor *x = NULL, *y = NULL;
    int64_t xd[2] = {32, 8}, yd[1] = {32};
    FILE *f;

    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_tensor_new(POPC_DTYPE_I32, yd, 1, &y));
    for (int i = 0; i < 32 * 8; i++)
        ((float *)popc_tensor_data(x))[i] = (float)((i * 7) % 11) / 11.0f;
    for (int i = 0; i < 32; i++)
        ((int32_t *)popc_tensor_data(y))[i] = i % 3;
    OK(popc_npy_save(path_in("x.npy"), x));
    OK(popc_npy_save(path_in("y.npy"), y));
    popc_tensor_free(x);
    popc_tensor_free(y);
    ck_assert_ptr_nonnull(f = fopen(path_in("run.ini"), "w"));
    fprintf(f,
            "[options]\nbackend = cpu\n"
            "[model]\ninput = 8\nclasses = 3\nlayers = fc1, relu, fc2\n"
            "[layer fc1]\ntype = linear\nout_features = 16\n"
            "[layer fc2]\ntype = linear\nout_features = 3\n"
            "[data]\ntrain = x.npy\ntrain_labels = y.npy\nbatch_size = 4\n"
            "[optimizer]\nname = adam\n"
            "[train]\nepochs = 1\nevaluate = false\ncheckpoint = %s\n"
            "checkpoint_every = 1\nweights = %s\nmodel = %s\n",
            path_in("ck.ckpt"), path_in("w"), path_in("m.ini"));
    fclose(f);
    return path_in("run.ini");
}

static popc_status train_with_checkpoints(void *arg)
{
    const char *const sets[] = {"train.epochs=2"};
    popc_train_hooks h = {0};
    popc_train_result res;
    popc_run *r = NULL;
    popc_status st;

    popc_log_set_level(POPC_LOG_OFF);
    h.resume = 1;
    if ((st = popc_run_load(arg, sets, 1, &r)) == POPC_OK)
        st = popc_run_train(r, &h, &res);
    popc_run_free(r);
    return st;
}

/* Every file of a checkpoint (state.ini, weights/, optimizer/). */
static char *checkpoint_bytes(const char *ck, long *len)
{
    char sub[700], *parts[3], *all;
    long n[3];
    FILE *f;

    snprintf(sub, sizeof sub, "%s/weights", ck);
    parts[0] = dir_bytes(sub, &n[0]);
    snprintf(sub, sizeof sub, "%s/optimizer", ck);
    parts[1] = dir_bytes(sub, &n[1]);
    snprintf(sub, sizeof sub, "%s/state.ini", ck);
    ck_assert_ptr_nonnull(f = fopen(sub, "rb"));
    fclose(f);
    parts[2] = slurp(sub, &n[2]);
    *len = n[0] + n[1] + n[2];
    ck_assert_ptr_nonnull(all = malloc((size_t)*len + 1));
    memcpy(all, parts[0], (size_t)n[0]);
    memcpy(all + n[0], parts[1], (size_t)n[1]);
    memcpy(all + n[0] + n[1], parts[2], (size_t)n[2]);
    for (int i = 0; i < 3; i++)
        free(parts[i]);
    return all;
}

START_TEST(checkpoint_write_failures_keep_the_old_checkpoint)
{
    const char *run = checkpoint_run();
    char ck[600], *before, *after;
    long old_len, len;
    int64_t step = -1;
    popc_run *r = NULL;
    popc_graph *g = NULL;
    popc_model *m = NULL;
    popc_train_result res;

    snprintf(ck, sizeof ck, "%s", path_in("ck.ckpt"));
    OK(popc_run_load(run, NULL, 0, &r));
    OK(popc_run_train(r, NULL, &res));
    before = checkpoint_bytes(ck, &old_len);
    /* the smallest file a checkpoint writes, fc2.bias (3 floats), is over
    ** 128 bytes: every limit below fails its first file */
    for (int i = 0; i < n_faults(); i++) {
        fault f = fault_at(i, 128);

        faulty_write(f, train_with_checkpoints, (void *)run, ck);
        after = checkpoint_bytes(ck, &len);
        ck_assert_msg(len == old_len && memcmp(before, after, (size_t)len) ==
                      0, "fault %d: the old checkpoint changed", i);
        free(after);
        ck_assert_msg(dir_temporaries(dir) == 0, "fault %d: a temporary was left", i);
    }
    /* and it still loads: the step it was written after */
    OK(popc_run_build_graph(r, 1, popc_run_batch_size(r), &g));
    OK(popc_model_new_training(g, popc_run_options(r), popc_run_optimizer(r),
                               &m));
    OK(popc_checkpoint_load(m, ck, &step));
    ck_assert_int_eq(step, 8);
    popc_model_free(m);
    popc_graph_free(g);
    popc_run_free(r);
    free(before);
}
END_TEST

/* The file's data and the rename both reach the disk: a write makes two
** successful fsync calls (the temporary file, then the directory that now
** holds the new name), also for a path without a directory part. With a
** sync fault armed the file's real fsync still runs first, and the write
** fails with the old file kept. */
START_TEST(a_write_syncs_the_file_and_its_directory)
{
    const char *path = path_in("synced.bin");
    char cwd[512];
    long n, len;
    char *got;

    n = popc_fault_sync_count();
    OK(popc_write_file_atomic(path, "abc", 3));
    ck_assert_int_eq(popc_fault_sync_count() - n, 2);

    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir(dir), 0);
    n = popc_fault_sync_count();
    OK(popc_write_file_atomic("relative.bin", "de", 2));
    ck_assert_int_eq(popc_fault_sync_count() - n, 2);
    ck_assert_int_eq(chdir(cwd), 0);

    n = popc_fault_sync_count();
    popc_fault_fail_writes(EIO, -1);
    ck_assert_int_eq(popc_write_file_atomic(path, "xyz!", 4), POPC_EIO);
    popc_fault_fail_writes(0, 0);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), path));
    ck_assert_int_eq(popc_fault_sync_count() - n, 1);
    got = slurp(path, &len);
    ck_assert_int_eq(len, 3);
    ck_assert(memcmp(got, "abc", 3) == 0);
    free(got);
    ck_assert_int_eq(count_entries(dir), 2);
}
END_TEST

static Suite *write_faults_suite(void)
{
    Suite *s = suite_create("write_faults");
    TCase *tc = tcase_create("write_faults");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, npy_write_failures_keep_the_old_file);
    tcase_add_test(tc, weights_write_failures_keep_the_old_directory);
    tcase_add_test(tc, executable_write_failures_keep_the_old_file);
    tcase_add_test(tc, checkpoint_write_failures_keep_the_old_checkpoint);
    tcase_add_test(tc, a_write_syncs_the_file_and_its_directory);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(write_faults_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
