/* bench_graph_build.c - the cost of adding nodes to a graph, where every
** node records the call stack that added it (popc_graph_node_source), and
** of looking one location up.
**
** Usage: bench_graph_build [NODES]  (default 100000)
** Builds a chain of NODES Relu nodes on one input and prints nanoseconds
** per added node and per source look-up.
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

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100000, x, lookups;
    int64_t dims[2] = {1, 4};
    popc_graph *g = NULL;
    double t0, t1, t2;
    char where[256];
    size_t total = 0;

    if (n < 1 || popc_graph_new("chain", &g) != POPC_OK ||
        popc_graph_add_input(g, "x", POPC_DTYPE_F32, dims, 2, &x) != POPC_OK) {
        fprintf(stderr, "bench_graph_build: %s\n", popc_last_error());
        return 1;
    }
    t0 = now();
    for (int i = 0; i < n; i++) {
        int y;

        if (popc_graph_add_node(g, NULL, "Relu", 0, &x, 1, &y, 1, NULL, 0,
                                NULL, NULL) != POPC_OK) {
            fprintf(stderr, "bench_graph_build: %s\n", popc_last_error());
            popc_graph_free(g);
            return 1;
        }
        x = y;
    }
    t1 = now();
    lookups = n < 10000 ? n : 10000;
    for (int i = 0; i < lookups; i++)
        total += popc_graph_node_source(g, i, NULL, where, sizeof where);
    t2 = now();
    printf("nodes %d: %.0f ns per add_node, %.0f ns per source look-up "
           "(%zu bytes)\n",
           n, 1e9 * (t1 - t0) / n, 1e9 * (t2 - t1) / lookups, total);
    popc_graph_free(g);
    return 0;
}
