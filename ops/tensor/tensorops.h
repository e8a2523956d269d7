/* tensorops.h - internals of the tensor plugin (shape ops, data movement,
** reductions). The per-file op tables are hidden symbols of this module.
*/
#ifndef POPC_OPS_TENSOROPS_H
#define POPC_OPS_TENSOROPS_H

#include <stdint.h>
#include <string.h>

#include "ops/math/oputil.h"

/* This part's share of out's bytes copied from the same bytes of in (the
** two have the same element count and dtype). */
void top_copy_share(const popc_kernel_ctx *kc, const popc_view *in,
                    const popc_view *out);

/* Forward of the pure reshapes (Reshape, Flatten, Squeeze, Unsqueeze). */
popc_status top_copy_forward(const popc_kernel_ctx *kc);

/* Copy in broadcast to out's shape over this part's share (Expand). */
void top_broadcast_copy(const popc_kernel_ctx *kc, const popc_view *in,
                        const popc_view *out);

/* ---- reductions --------------------------------------------------------- */

/* An input seen as alternating kept and reduced dims: size-1 dims dropped,
** neighbours of the same kind merged. */
typedef struct top_reduce_geom {
    int n_keep, n_red;
    int64_t keep_dims[POPC_MAX_RANK], keep_stride[POPC_MAX_RANK];
    int64_t red_dims[POPC_MAX_RANK], red_stride[POPC_MAX_RANK];
    int inner_reduced;          /* the innermost input dim is reduced */
    int64_t n_out, n_red_elems;
} top_reduce_geom;

void top_reduce_geom_init(top_reduce_geom *g, const popc_view *in,
                          const uint8_t *reduce);

/* Resolved reduction axes: reduce[d] for d < in->rank, and the output
** shape (keepdims or not). *noop when the op is the identity
** (noop_with_empty_axes with no axes). */
typedef struct top_reduce_spec {
    uint8_t reduce[POPC_MAX_RANK];
    int keepdims, noop;
    int64_t count;              /* elements reduced into each output */
} top_reduce_spec;

/* axes: explicit list (n >= 0) or n < 0 for "not given". */
popc_status top_reduce_spec_init(const popc_host *h, const char *op,
                                 const char *node, const popc_view *in,
                                 const int64_t *axes, int n, int keepdims,
                                 int noop_with_empty, top_reduce_spec *spec,
                                 popc_view *out);

/* Op tables of each file. */
extern const popc_op_def top_shape_ops[];
extern const int top_shape_count;
extern const popc_op_def top_move_ops[];
extern const int top_move_count;
extern const popc_op_def top_slice_ops[];
extern const int top_slice_count;
extern const popc_op_def top_reduce_ops[];
extern const int top_reduce_count;

#endif /* POPC_OPS_TENSOROPS_H */
