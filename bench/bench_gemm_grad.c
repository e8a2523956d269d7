/* bench_gemm_grad.c - a Gemm's weight and bias gradients as one
** popc::GemmGradWeightBias node against the Gemm, popc::SumToShape and Mul
** the gradient emitted before, on the ipumodel backend.
**
**   bench_gemm_grad THREADS [RUNS]
**
** For each shape (rows M of X and dY, K features in, N out; the Linear
** layers of bench_models.sh's transformer and of the Fashion-MNIST MLP)
** both graphs run RUNS times, interleaved, after a warm-up run; printed:
**   M K N fused_ms unfused_ms speed fused_cpu_ms unfused_cpu_ms cpu_speed
** (medians of wall and process CPU time per run).
** Plugins come from POPC_PLUGIN_PATH.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "popc/popc.h"

#define MAX_RUNS 200

static double now(clockid_t clock)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* dW, dB of X [M, K] and dY [M, N]: fused, or as Gemm(transA) +
** SumToShape + Mul(beta). */
static popc_status build(int fused, int64_t M, int64_t K, int64_t N,
                         popc_graph **out)
{
    int64_t xd[2] = {M, K}, yd[2] = {M, N}, one = 1;
    float beta = 1.0f;
    popc_attr ta = popc_attr_make_int("transA", 1);
    popc_attr shape = popc_attr_make_ints("shape", &N, 1);
    popc_graph *g = NULL;
    popc_tensor *bt = NULL;
    int in[2], o[2], s, bc;
    popc_status st;

    if ((st = popc_graph_new("gemm_grad", &g)) != POPC_OK ||
        (st = popc_graph_add_input(g, "X", POPC_DTYPE_F32, xd, 2, &in[0])) !=
            POPC_OK ||
        (st = popc_graph_add_input(g, "dY", POPC_DTYPE_F32, yd, 2, &in[1])) !=
            POPC_OK)
        goto fail;
    if (fused) {
        st = popc_graph_add_node(g, "popc", "GemmGradWeightBias", 0, in, 2, o,
                                 2, NULL, 0, "dWdB", NULL);
    } else if ((st = popc_graph_add_node(g, NULL, "Gemm", 0, in, 2, &o[0], 1,
                                         &ta, 1, "dW", NULL)) == POPC_OK &&
               (st = popc_graph_add_node(g, "popc", "SumToShape", 0, &in[1],
                                         1, &s, 1, &shape, 1, "sum", NULL)) ==
                   POPC_OK &&
               (st = popc_tensor_from_data(POPC_DTYPE_F32, &one, 1, &beta,
                                           &bt)) == POPC_OK &&
               (st = popc_graph_add_constant(g, "beta", bt, &bc)) ==
                   POPC_OK) {
        in[0] = s;
        in[1] = bc;
        st = popc_graph_add_node(g, NULL, "Mul", 0, in, 2, &o[1], 1, NULL, 0,
                                 "dB", NULL);
    }
    popc_tensor_free(bt);
    if (st != POPC_OK || (st = popc_graph_add_output(g, o[0])) != POPC_OK ||
        (st = popc_graph_add_output(g, o[1])) != POPC_OK)
        goto fail;
    *out = g;
    return POPC_OK;
fail:
    popc_graph_free(g);
    return st;
}

static popc_tensor *filled(int64_t r, int64_t c, float seed)
{
    int64_t d[2] = {r, c};
    popc_tensor *t = NULL;
    float *p;

    if (popc_tensor_new(POPC_DTYPE_F32, d, 2, &t) != POPC_OK)
        return NULL;
    p = popc_tensor_data(t);
    for (int64_t i = 0; i < r * c; i++)
        p[i] = (float)((i * 37 + (int64_t)(seed * 11)) % 101) / 101.0f - 0.5f;
    return t;
}

static int run_once(popc_model *m, popc_tensor *const *in, double *wall,
                    double *cpu)
{
    popc_tensor *out[2] = {NULL, NULL};
    double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
    popc_status st = popc_model_run(m, in, 2, out, 2);

    *wall = now(CLOCK_MONOTONIC) - w0;
    *cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
    popc_tensor_free(out[0]);
    popc_tensor_free(out[1]);
    return st == POPC_OK;
}

int main(int argc, char **argv)
{
    static const int64_t shapes[][3] = {
        {2048, 256, 256},  {2048, 256, 1024}, {2048, 1024, 256},
        {64, 784, 512},    {64, 512, 512},    {64, 512, 10},
        {2048, 2048, 2048},
    };
    int threads, runs = 20, rc = 0;

    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: bench_gemm_grad THREADS [RUNS]\n");
        return 2;
    }
    threads = atoi(argv[1]);
    if (argc == 3)
        runs = atoi(argv[2]);
    if (threads < 0 || runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "bench_gemm_grad: THREADS >= 0, RUNS 1..%d\n",
                MAX_RUNS);
        return 2;
    }
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t M = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
        popc_tensor *in[2] = {filled(M, K, 1), filled(M, N, 2)};
        popc_model *m[2] = {NULL, NULL};
        static double wall[2][MAX_RUNS], cpu[2][MAX_RUNS];
        double w, c;
        int ok = in[0] && in[1];

        for (int f = 0; ok && f < 2; f++) {
            popc_graph *g = NULL;
            popc_options *o = NULL;

            ok = build(f == 0, M, K, N, &g) == POPC_OK &&
                 popc_options_new(&o) == POPC_OK &&
                 popc_options_set(o, "backend", "ipumodel") == POPC_OK &&
                 popc_options_set_int(o, "threads", threads) == POPC_OK &&
                 popc_model_new_inference(g, o, &m[f]) == POPC_OK &&
                 run_once(m[f], in, &w, &c); /* compile and warm up */
            popc_options_free(o);
            popc_graph_free(g);
        }
        for (int r = 0; ok && r < runs; r++)
            for (int k = 0; ok && k < 2; k++) {
                int f = (r + k) % 2; /* alternate which runs first */

                ok = run_once(m[f], in, &wall[f][r], &cpu[f][r]);
            }
        if (!ok) {
            fprintf(stderr, "bench_gemm_grad: %s\n", popc_last_error());
            rc = 1;
        } else {
            double wf = median(wall[0], runs) * 1e3;
            double wu = median(wall[1], runs) * 1e3;
            double cf = median(cpu[0], runs) * 1e3;
            double cu = median(cpu[1], runs) * 1e3;

            printf("%lld %lld %lld %.3f %.3f %.2fx %.3f %.3f %.2fx\n",
                   (long long)M, (long long)K, (long long)N, wf, wu, wu / wf,
                   cf, cu, cu / cf);
        }
        popc_model_free(m[0]);
        popc_model_free(m[1]);
        popc_tensor_free(in[0]);
        popc_tensor_free(in[1]);
        if (rc)
            break;
    }
    return rc;
}
