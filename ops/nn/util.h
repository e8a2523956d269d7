/* util.h - helpers shared by the nn, loss and popc op plugins.
**
** util.c is compiled into each of those modules; its symbols are hidden
** (-fvisibility=hidden, and only the plugin entry is exported), so every
** module has its own copy and its own opsu_host, set by its init().
** Nothing here calls BLAS, so the loss and popc modules do not link it.
*/
#ifndef POPC_OPS_UTIL_H
#define POPC_OPS_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "popc/plugin.h"

/* The host table of the module this copy is linked into. */
extern const popc_host *opsu_host;

/* Room for any shape written by opsu_dims ("[a, b, ...]"). */
#define OPSU_DIMS_LEN 200

/* "[2, 3, 4]" (or "[]" for a scalar) into buf; returns buf. */
char *opsu_dims(const popc_view *v, char *buf);

/* Same, for a dims array. */
char *opsu_dims_n(const int64_t *dims, int rank, char *buf);

/* The share [lo, hi) of n units owned by part of n_parts. */
void opsu_range(int64_t n, int part, int n_parts, int64_t *lo, int64_t *hi);

/* 1 when views[i] exists (i < n) and has a dtype: optional inputs and
** outputs that are absent have dtype UNDEFINED. */
int opsu_present(const popc_view *views, int n, int i);

/* Output i can be written by a kernel (present and with data). */
int opsu_out_ready(const popc_kernel_ctx *kc, int i);

/* POPC_EINVAL unless input i is float32 ("<op> '<node>': <what> must be
** float32, got ..."). */
popc_status opsu_want_f32(const popc_infer_ctx *ic, const char *op, int i,
                          const char *what);

/* Copy dtype and shape of src into dst (data NULL). */
void opsu_set_like(popc_view *dst, const popc_view *src);
void opsu_set(popc_view *dst, popc_dtype dt, const int64_t *dims, int rank);

/* Normalises axis into [0, rank) (ONNX negative axes); POPC_EINVAL naming
** op, node and the bad value otherwise. */
popc_status opsu_axis(const char *op, const char *node, int64_t axis, int rank,
                      int *out);

/* Loss reductions, as torch.nn.functional spells them. */
enum { OPSU_RED_NONE = 0, OPSU_RED_SUM, OPSU_RED_MEAN };

/* Reads string attribute "reduction" (default "mean"); POPC_EINVAL for
** anything but "mean", "sum" or "none". */
popc_status opsu_reduction(const char *op, const char *node,
                           const popc_attrs *attrs, int *out);

/* Adds one node with one output in the gradient graph; *out its value. */
popc_status opsu_node1(popc_grad_ctx *gc, const char *domain, const char *op,
                       const int *inputs, int n_inputs, const popc_attr *attrs,
                       int n_attrs, int *out);

/* Constant int64 vector / float32 scalar in the gradient graph. */
popc_status opsu_const_i64(popc_grad_ctx *gc, const int64_t *v, int n,
                           int *out);
popc_status opsu_const_f32(popc_grad_ctx *gc, float v, int *out);

/* ai.onnx Reshape of value to dims (a constant shape input). */
popc_status opsu_reshape(popc_grad_ctx *gc, int value, const int64_t *dims,
                         int rank, int *out);

/* popc::SumToShape of value down to dims; returns value itself when its
** shape already equals dims. */
popc_status opsu_sum_to(popc_grad_ctx *gc, int value, const int64_t *dims,
                        int rank, int *out);

/* ai.onnx Mul of value by a float scalar; value itself when s == 1. */
popc_status opsu_scale(popc_grad_ctx *gc, int value, double s, int *out);

/* Refuses a gradient flowing into output j of a node whose grad builder
** cannot propagate it. */
popc_status opsu_no_grad_output(const popc_grad_ctx *gc, const char *op, int j,
                                const char *what);

/* Identity kernel share: copies input i to output i for every output,
** bytes split over the parts. */
void opsu_copy_share(const popc_kernel_ctx *kc);

#endif /* POPC_OPS_UTIL_H */
