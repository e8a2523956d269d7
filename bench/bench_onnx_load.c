/* bench_onnx_load.c - how long importing a large ONNX model takes and how
** much memory it needs, relative to the size of its weights.
**
** Usage: bench_onnx_load [MB] [DIR]  (default 100 MB in /tmp)
** Writes DIR/bench_load.onnx (one Gemm with an MB-sized weight, exported by
** popc itself), then in a fresh child process imports it and reports the
** wall time and the growth of the peak resident set (getrusage), as a
** multiple of the weight bytes.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "popc/onnx.h"
#include "popc/popc.h"

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long peak_kb(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static int write_model(const char *path, int64_t side)
{
    popc_graph *g = NULL;
    popc_tensor *w = NULL;
    int64_t xd[2] = {1, side}, wd[2] = {side, side};
    int x, wv, y;
    popc_attr tb = {.name = "transB", .type = POPC_ATTR_INT, .i = 1};

    if (popc_graph_new("big", &g) != POPC_OK ||
        popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x) != POPC_OK ||
        popc_tensor_new(POPC_DTYPE_F32, wd, 2, &w) != POPC_OK)
        return -1;
    for (int64_t i = 0; i < side * side; i++)
        ((float *)popc_tensor_data(w))[i] = (float)(i % 97) * 0.01f;
    if (popc_graph_add_initializer(g, "w", w, 1, &wv) != POPC_OK ||
        popc_graph_add_node(g, NULL, "Gemm", 13, (int[]){x, wv}, 2, &y, 1,
                            &tb, 1, "gemm", NULL) != POPC_OK ||
        popc_graph_add_output(g, y) != POPC_OK ||
        popc_onnx_export_graph(g, path) != POPC_OK) {
        fprintf(stderr, "bench_onnx_load: %s\n", popc_last_error());
        return -1;
    }
    popc_tensor_free(w);
    popc_graph_free(g);
    return 0;
}

int main(int argc, char **argv)
{
    double mb = argc > 1 ? atof(argv[1]) : 100.0;
    const char *dir = argc > 2 ? argv[2] : "/tmp";
    int64_t side = 1;
    char path[4096];
    pid_t pid;
    int status;

    while ((double)(side + 1) * (double)(side + 1) * 4.0 <= mb * 1e6)
        side++;
    snprintf(path, sizeof path, "%s/bench_load.onnx", dir);
    if ((pid = fork()) == 0)
        _exit(write_model(path, side) ? 1 : 0);
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status))
        return 1;
    if ((pid = fork()) == 0) {
        popc_graph *g = NULL;
        popc_registry *reg;
        long before;
        double t0;
        double bytes = (double)side * (double)side * 4.0;

        /* plugins load before the measurement */
        if (popc_registry_global(&reg) != POPC_OK)
            _exit(1);
        before = peak_kb();
        t0 = now();
        if (popc_onnx_import_file(path, NULL, &g) != POPC_OK) {
            fprintf(stderr, "bench_onnx_load: %s\n", popc_last_error());
            _exit(1);
        }
        printf("import of %.0f MB of weights: %.3f s, peak memory +%.0f MB "
               "(%.2fx the weights)\n", bytes / 1e6, now() - t0,
               (double)(peak_kb() - before) / 1024.0 * 1.048576,
               (double)(peak_kb() - before) * 1024.0 / bytes);
        popc_graph_free(g);
        fflush(stdout);
        _exit(0);
    }
    waitpid(pid, &status, 0);
    unlink(path);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
