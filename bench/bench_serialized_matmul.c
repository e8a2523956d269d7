/* bench_serialized_matmul.c - the host cost of serializedMatMul
** (popc/helpers.h): y = x @ w, x [M, K], w [K, N], plain and in each mode
** with a factor, on one backend.
**
** Usage: bench_serialized_matmul [BACKEND [M K N FACTOR [RUNS]]]
**        (default ipumodel 512 1024 1024 4 20)
** Prints the median milliseconds per run of each and its ratio to the
** plain MatMul. Input and output channel splits run the plain kernel (the
** split changes only the device model); the reducing split adds FACTOR
** partial products, which is what this measures.
*/
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "popc/popc.h"

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Median ms per run, or a negative value on failure. */
static double time_mode(const char *backend, int64_t M, int64_t K, int64_t N,
                        popc_matmul_serialization mode, int64_t factor,
                        int runs)
{
    int64_t xd[2] = {M, K}, wd[2] = {K, N};
    popc_graph *g = NULL;
    popc_options *o = NULL;
    popc_model *m = NULL;
    popc_tensor *x = NULL, *w = NULL, *y = NULL;
    double *t = calloc((size_t)runs, sizeof *t), median = -1.0;
    int xv, wv, yv;

    if (!t || popc_graph_new("mm", &g) || popc_tensor_new(POPC_DTYPE_F32, wd,
                                                          2, &w) ||
        popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &xv) ||
        popc_graph_add_initializer(g, "w", w, 0, &wv) ||
        popc_serialized_matmul(g, xv, wv, mode, factor, 0, &yv) ||
        popc_graph_add_output(g, yv) || popc_options_new(&o) ||
        popc_options_set(o, "backend", backend) ||
        popc_model_new_inference(g, o, &m) ||
        popc_tensor_new(POPC_DTYPE_F32, xd, 2, &x))
        goto done;
    for (int i = 0; i < 2; i++) { /* compile and warm up */
        popc_tensor_free(y);
        y = NULL;
        if (popc_model_run(m, &x, 1, &y, 1))
            goto done;
    }
    for (int i = 0; i < runs; i++) {
        double t0 = now();

        popc_tensor_free(y);
        y = NULL;
        if (popc_model_run(m, &x, 1, &y, 1))
            goto done;
        t[i] = 1e3 * (now() - t0);
    }
    qsort(t, (size_t)runs, sizeof *t, by_value);
    median = t[runs / 2];
done:
    if (median < 0)
        fprintf(stderr, "bench_serialized_matmul: %s\n", popc_last_error());
    free(t);
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_tensor_free(w);
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
    return median;
}

int main(int argc, char **argv)
{
    static const char *const names[4] = {"plain", "input_channels",
                                         "reducing_dim", "output_channels"};
    const char *backend = argc > 1 ? argv[1] : "ipumodel";
    int64_t M = argc > 5 ? atoll(argv[2]) : 512;
    int64_t K = argc > 5 ? atoll(argv[3]) : 1024;
    int64_t N = argc > 5 ? atoll(argv[4]) : 1024;
    int64_t f = argc > 5 ? atoll(argv[5]) : 4;
    int runs = argc > 6 ? atoi(argv[6]) : 20;
    double plain = 0.0;

    if (M < 1 || K < 1 || N < 1 || f < 1 || runs < 1) {
        fprintf(stderr, "usage: bench_serialized_matmul [BACKEND [M K N "
                        "FACTOR [RUNS]]]\n");
        return 2;
    }
    printf("%s: [%lld, %lld] x [%lld, %lld], factor %lld, median of %d\n",
           backend, (long long)M, (long long)K, (long long)K, (long long)N,
           (long long)f, runs);
    for (int mode = 0; mode < 4; mode++) {
        double ms = time_mode(backend, M, K, N,
                              (popc_matmul_serialization)mode, f, runs);

        if (ms < 0)
            return 1;
        if (mode == 0)
            plain = ms;
        printf("  %-16s %8.3f ms  %.2fx plain\n", names[mode], ms,
               ms / plain);
    }
    return 0;
}
