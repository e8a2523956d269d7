/* op_harness.h - run one registered op's kernel directly, for op tests.
**
** The harness loads the build tree's plugins (POPC_PLUGIN_PATH, set by
** tests/local.mk) into the global registry, runs the op's infer(), then its
** forward() once whole and once split in three parts (as a worker pool
** would), and fails if the two disagree bitwise.
*/
#ifndef POPC_OP_HARNESS_H
#define POPC_OP_HARNESS_H

#include "popc/popc.h"

/* out[0..n_out) receive new tensors. training selects training kernels. */
popc_status harness_run_op(const char *domain, const char *op,
                           popc_tensor *const *in, int n_in,
                           const popc_attr *attrs, int n_attrs,
                           popc_tensor **out, int n_out, int training);

/* A float32 tensor from a literal array. */
popc_tensor *harness_f32(const int64_t *dims, int rank, const float *data);

/* Load tests/ref/<name>.npy (POPC_TEST_REF). NULL with a message on
** failure. */
popc_tensor *harness_ref(const char *name);

/* Largest |a - b| over float32 tensors of equal shape; 1e30 on mismatch. */
double harness_max_diff(const popc_tensor *a, const popc_tensor *b);

#endif /* POPC_OP_HARNESS_H */
