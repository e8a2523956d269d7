/* ref_check.h - compare op results with the torch references of
** tests/ref/nn/ (written by tests/ref/gen_ops_nn.py), for the nn, loss and
** popc op tests. Nothing here depends on Check: functions return a status
** or a verdict with a message, the tests assert.
*/
#ifndef POPC_REF_CHECK_H
#define POPC_REF_CHECK_H

#include <stddef.h>
#include "popc/popc.h"

/* tests/ref/nn/<case>_<what>.npy (owned), or NULL with a message on
** stderr. */
popc_tensor *rc_load(const char *case_name, const char *what);

/* 1 when got and want have the same shape and every float32 element
** satisfies |got - want| <= atol + rtol * |want| (NaNs must match);
** otherwise 0 and msg names the first bad element and both values. */
int rc_close(const popc_tensor *got, const popc_tensor *want, double rtol,
             double atol, char *msg, size_t size);

/* Gradients through the graph: the op on in[0..n_in) (in[i] NULL: absent
** optional input; inputs listed in wrt become graph inputs, the others
** constants), n_outputs outputs, loss L = IdentityLoss(sum)(Mul(out0, g))
** (g NULL: L = IdentityLoss(sum)(out0)). grads[j] receives dL/d in[wrt[j]]
** (owned; NULL when no gradient reaches it). */
popc_status rc_graph_grads(const char *domain, const char *op,
                           popc_tensor *const *in, int n_in, const int *wrt,
                           int n_wrt, const popc_attr *attrs, int n_attrs,
                           int n_outputs, popc_tensor *g, int training,
                           popc_tensor **grads);

/* Deterministic pseudo-random float32 tensor in [-1, 1) (owned). */
popc_tensor *rc_random(const int64_t *dims, int rank, uint64_t seed);

#endif /* POPC_REF_CHECK_H */
