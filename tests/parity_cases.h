/* parity_cases.h - the graphs tests/check_backend_parity.c runs on the cpu
** and ipumodel backends (tests/parity_cases.c): one builder per op family
** case, the op tables the loop tests walk, and the helpers the generic
** case shares.
*/
#ifndef POPC_TESTS_PARITY_CASES_H
#define POPC_TESTS_PARITY_CASES_H

#include <stdint.h>

#include "popc/popc.h"
#include "popc/layers.h"

#define PC_B 4       /* micro-batch of the op cases */
#define PC_MAX_IN 8  /* graph inputs per case */

/* A graph being built, and how to fill its inputs. */
typedef struct bld {
    popc_graph *g;
    popc_layers *L;
    int n_in;
    /* floats: uniform in [lo, hi); integers in [0, hi) */
    double lo[PC_MAX_IN], hi[PC_MAX_IN];
    int coarse[PC_MAX_IN];     /* floats: multiples of 0.5 (ties) */
    int loss;                  /* training: the loss value; -1 */
    int pipelined;             /* nodes on two IPUs */
} bld;

typedef struct pcase {
    const char *name;
    void (*build)(bld *b);
    int training;
} pcase;

#define PC_N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* A 64-bit mix (splitmix) and a uniform draw in [0, 1) keyed by (key, i). */
uint64_t pc_mix(uint64_t z);
double pc_uniform(uint64_t key, int64_t i);

/* A float input [PC_B, 64, 64] drawn from [lo, hi). */
int pc_in3(bld *b, double lo, double hi);
/* Add a node with n_out outputs; 0 (message in popc_last_error) when the
** graph refuses it. */
int pc_nodes_n(bld *b, const char *domain, const char *op, const int *in,
               int n_in, const popc_attr *attrs, int n_attrs, int *out,
               int n_out);
void pc_output(bld *b, int v);

/* Loop tests: pc_case_arg picks the op of the table the builder uses. */
extern const char *const pc_binary_ops[5];
extern const char *const pc_unary_ops[10];
extern const char *const pc_compare_ops[5];
extern int pc_case_arg;
void pc_b_binary(bld *b);
void pc_b_unary(bld *b);
void pc_b_compare(bld *b);

/* The MLP of examples/ (784-256-10, Dropout), on one IPU or on two. */
void pc_b_mlp(bld *b);
void pc_b_mlp_pipe(bld *b);

/* Every other case: one or a few op families each, and the CNN. */
extern const pcase pc_cases[55];

#endif /* POPC_TESTS_PARITY_CASES_H */
