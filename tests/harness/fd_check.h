/* fd_check.h - check an op's gradient builder against finite differences.
**
** The checker builds a graph: the op with the given inputs (those in wrt
** become graph inputs, the others constants, NULL entries absent optional
** inputs), then for each float32 output k the loss
**     L_k = IdentityLoss(sum)(Mul(out_k, W_k))
** with W_k fixed pseudo-random weights, so a gradient that is permuted or
** summed wrongly shows. d(sum_k L_k)/d(input) from popc_graph_gradients,
** evaluated with popc_graph_eval, is compared with central differences
** (L(x + h) - L(x - h)) / 2h per element, where L is accumulated in double
** on the host from the op's float32 outputs and h = 3e-3 * max(1, |x|).
** An element passes when |autodiff - numeric| <= tol * max(1, |autodiff|,
** |numeric|); tol 1e-3 suits smooth float32 ops on inputs of order 1 kept
** a few h away from kinks (Relu at 0, ties of Max).
**
** Needs ai.onnx Mul and popc IdentityLoss with gradients in the global
** registry (loaded from POPC_PLUGIN_PATH). Everything runs in training mode
** with a fixed seed, so random ops draw the same numbers each evaluation.
*/
#ifndef POPC_FD_CHECK_H
#define POPC_FD_CHECK_H

#include <stddef.h>
#include "popc/popc.h"

/* POPC_OK when every element matches. Otherwise why (if not NULL) gets a
** one-line reason, also left in popc_last_error(): POPC_EINTERNAL for a
** gradient mismatch (naming the input, element and both values),
** POPC_ENOTFOUND when the op (or Mul / IdentityLoss) is not registered,
** POPC_EUNSUPPORTED when the op has no gradient, POPC_EINVAL for a bad
** call (a wrt input that is not float32), or the status of the failing
** graph call. The op node gets max(1, min_outputs) outputs. */
popc_status fd_check_op(const char *domain, const char *op,
                        popc_tensor *const *inputs, int n_in, const int *wrt,
                        int n_wrt, const popc_attr *attrs, int n_attrs,
                        double tol, char *why, size_t why_size);

/* As fd_check_op with the number of op outputs (0: as above) and the mode
** (training 0: inference kernels, e.g. BatchNormalization with running
** statistics). */
popc_status fd_check_op_ex(const char *domain, const char *op,
                           popc_tensor *const *inputs, int n_in,
                           const int *wrt, int n_wrt, const popc_attr *attrs,
                           int n_attrs, int n_outputs, int training,
                           double tol, char *why, size_t why_size);

#endif /* POPC_FD_CHECK_H */
