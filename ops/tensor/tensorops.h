/* tensorops.h - internals of the tensor plugin (shape ops, data movement,
** reductions). The per-file op tables are hidden symbols of this module.
*/
#ifndef POPC_OPS_TENSOROPS_H
#define POPC_OPS_TENSOROPS_H

#include <stdint.h>
#include <string.h>

#include "ops/util/oputil.h"

/* This part's share of out's bytes copied from the same bytes of in (the
** two have the same element count and dtype). */
void top_copy_share(const popc_kernel_ctx *kc, const popc_view *in,
                    const popc_view *out);

/* The grad() of a reduction (ReduceMax and those of reduce_wide.c, by
** ONNX name): popc::ReduceMaxGrad with "of" = the op. */
popc_status top_reduce_grad(popc_grad_ctx *gc, const char *of);

/* Gradient builders of grads.c, one per op. */
popc_status top_tile_grad(popc_grad_ctx *gc);
popc_status top_pad_grad(popc_grad_ctx *gc);
popc_status top_depth_to_space_grad(popc_grad_ctx *gc);
popc_status top_space_to_depth_grad(popc_grad_ctx *gc);
popc_status top_cumsum_grad(popc_grad_ctx *gc);
popc_status top_reverse_sequence_grad(popc_grad_ctx *gc);
popc_status top_trilu_grad(popc_grad_ctx *gc);
popc_status top_gather_elements_grad(popc_grad_ctx *gc);
popc_status top_gather_nd_grad(popc_grad_ctx *gc);
popc_status top_scatter_elements_grad(popc_grad_ctx *gc);
popc_status top_scatter_grad(popc_grad_ctx *gc);
popc_status top_scatter_nd_grad(popc_grad_ctx *gc);
popc_status top_compress_grad(popc_grad_ctx *gc);
popc_status top_topk_grad(popc_grad_ctx *gc);
popc_status top_hardmax_grad(popc_grad_ctx *gc);

popc_status top_einsum_grad(popc_grad_ctx *gc);
popc_status top_det_grad(popc_grad_ctx *gc);
popc_status top_dft_grad(popc_grad_ctx *gc);
/* DFT's axis and transform length (linalg.c). */
popc_status top_dft_geom(const char *node,
                         const popc_view *in, int n_in, const popc_attrs *a,
                         int *axis, int64_t *len);

/* Determinant of the m x m matrix a (row-major; destroyed) by LU with
** partial pivoting. */
double top_lu_det(double *a, int64_t m);

/* Op tables of each file. */
extern const popc_op_def top_shape_ops[];
extern const int top_shape_count;
extern const popc_op_def top_move_ops[];
extern const int top_move_count;
extern const popc_op_def top_slice_ops[];
extern const int top_slice_count;
extern const popc_op_def top_reduce_ops[];
extern const int top_reduce_count;
extern const popc_op_def top_reduce_wide_ops[];
extern const int top_reduce_wide_count;
extern const popc_op_def top_generate_ops[];
extern const int top_generate_count;
extern const popc_op_def top_index_ops[];
extern const int top_index_count;
extern const popc_op_def top_arrange_ops[];
extern const int top_arrange_count;
extern const popc_op_def top_linalg_ops[];
extern const int top_linalg_count;
extern const popc_op_def top_linalg_grad_ops[];
extern const int top_linalg_grad_count;

#endif /* POPC_OPS_TENSOROPS_H */
