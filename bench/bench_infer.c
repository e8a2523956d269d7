/* bench_infer.c - inference latency of an ONNX model through the C API, as
** a user deploying it would measure: import, popc_model_new_inference,
** compile, one warm-up run, then the median of RUNS runs.
**
** Usage: bench_infer MODEL.onnx INPUT.npy [RUNS [KEY=VALUE...]]
** INPUT.npy holds the batch (its first dimension is the batch size); each
** KEY=VALUE is a popc option (e.g. optimizationLevel=0, backend=cpu).
** Prints one JSON line: compile_ms, median_ms, min_ms, max_ms, cpu_ms
** (the process's CPU time per run, all threads), and the
** output's checksum; BENCH_INFER_SAVE=FILE.npy saves the output (to
** compare two settings).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "popc/onnx.h"
#include "popc/popc.h"

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* CPU seconds of the process so far: on a busy machine a steadier figure
** than wall time for one thread's work. */
static double cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static int fail(const char *what)
{
    fprintf(stderr, "bench_infer: %s: %s\n", what, popc_last_error());
    return 1;
}

static int set_options(popc_options *o, char **kv, int n)
{
    for (int i = 0; i < n; i++) {
        char *eq = strchr(kv[i], '=');

        if (!eq) {
            fprintf(stderr, "bench_infer: '%s' is not KEY=VALUE\n", kv[i]);
            return 1;
        }
        *eq = '\0';
        if (popc_options_set(o, kv[i], eq + 1) != POPC_OK)
            return fail(kv[i]);
    }
    return 0;
}

int main(int argc, char **argv)
{
    popc_graph *g = NULL;
    popc_options *o = NULL;
    popc_model *m = NULL;
    popc_tensor *x = NULL, *y = NULL;
    int runs = argc > 3 ? atoi(argv[3]) : 20;
    double *ms, t0, compile_ms, sum = 0, cpu0 = 0.0;
    int rc = 1;

    if (argc < 3 || runs < 1) {
        fprintf(stderr, "usage: bench_infer MODEL.onnx INPUT.npy [RUNS "
                        "[KEY=VALUE...]]\n");
        return 2;
    }
    if (!(ms = calloc((size_t)runs, sizeof *ms)))
        return 1;
    if (popc_npy_load(argv[2], &x) != POPC_OK) {
        rc = fail(argv[2]);
        goto out;
    }
    popc_onnx_import_options io;
    popc_onnx_import_options_init(&io);
    const char *in_name = "input";
    popc_view shape = popc_tensor_view(x);
    io.n_shapes = 1;
    io.shape_names = &in_name;
    io.shapes = &shape;
    if (popc_onnx_import_file(argv[1], &io, &g) != POPC_OK) {
        rc = fail(argv[1]);
        goto out;
    }
    if (popc_options_new(&o) != POPC_OK ||
        set_options(o, argv + 4, argc > 4 ? argc - 4 : 0) != 0 ||
        popc_model_new_inference(g, o, &m) != POPC_OK) {
        rc = fail("model");
        goto out;
    }
    t0 = now_ms();
    if (popc_model_compile(m, &x, 1) != POPC_OK) {
        rc = fail("compile");
        goto out;
    }
    compile_ms = now_ms() - t0;
    for (int i = -1; i < runs; i++) {
        popc_tensor_free(y);
        y = NULL;
        t0 = now_ms();
        if (popc_model_run(m, &x, 1, &y, 1) != POPC_OK) {
            rc = fail("run");
            goto out;
        }
        if (i >= 0)
            ms[i] = now_ms() - t0;
        else
            cpu0 = cpu_s();
    }
    popc_view v = popc_tensor_view(y);
    int64_t count = 1;
    for (int d = 0; d < v.rank; d++)
        count *= v.dims[d];
    for (int64_t i = 0; i < count; i++)
        sum += ((const float *)v.data)[i];
    /* BENCH_INFER_SAVE=FILE.npy keeps the output, to compare settings */
    if (getenv("BENCH_INFER_SAVE") &&
        popc_npy_save(getenv("BENCH_INFER_SAVE"), y) != POPC_OK) {
        rc = fail(getenv("BENCH_INFER_SAVE"));
        goto out;
    }
    qsort(ms, (size_t)runs, sizeof *ms, by_value);
    printf("{\"framework\": \"popc\", \"compile_ms\": %.2f, "
           "\"median_ms\": %.3f, \"min_ms\": %.3f, \"max_ms\": %.3f, "
           "\"cpu_ms\": %.3f, \"checksum\": %.6g}\n",
           compile_ms, ms[runs / 2], ms[0], ms[runs - 1],
           1e3 * (cpu_s() - cpu0) / runs, sum);
    rc = 0;
out:
    popc_tensor_free(y);
    popc_tensor_free(x);
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
    free(ms);
    return rc;
}
