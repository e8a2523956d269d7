/* nn_priv.h - what the files of the nn plugin share: their registration
** functions, the GEMM tiling that keeps split and whole runs bitwise equal,
** and the window geometry of Conv and the pools.
**
** All symbols are module-internal (hidden; only the plugin entry is
** exported).
*/
#ifndef POPC_OPS_NN_PRIV_H
#define POPC_OPS_NN_PRIV_H

#include <stdint.h>

#include "popc/plugin.h"

/* Each registers its op definitions; a failure leaves nothing committed
** (the registrar stages everything until init() returns). */
popc_status nn_register_matmul(const popc_host *h, popc_registrar *r);
popc_status nn_register_conv(const popc_host *h, popc_registrar *r);
popc_status nn_register_pool(const popc_host *h, popc_registrar *r);
popc_status nn_register_norm(const popc_host *h, popc_registrar *r);
popc_status nn_register_softmax(const popc_host *h, popc_registrar *r);

/* ---- GEMM tiles ------------------------------------------------------------
** OpenBLAS gives bitwise different results for the same element when the
** call's M or N differ (edge kernels), so a split part must not simply take
** "its rows". Instead each output matrix is cut into a fixed set of tiles
** that depends only on the shape; the whole run and every split run issue
** exactly the same sgemm calls, one per tile, and parts take whole tiles. */
typedef struct nn_tiles {
    int by_cols; /* tiles are column blocks of C (else row blocks) */
    int64_t blk; /* rows or columns per tile (last may be short) */
    int64_t n;   /* tiles per matrix */
} nn_tiles;

enum { NN_TILE_AUTO = -1, NN_TILE_ROWS = 0, NN_TILE_COLS = 1 };

/* Tiling of `batch` products of M x K by K x N, aiming at about `target`
** units (tiles x batch) with tiles no smaller than `min_blk`; `cut` forces
** row or column tiles (NN_TILE_AUTO: cut the larger of M and N). */
void nn_tiles_plan(int64_t batch, int64_t M, int64_t N, int64_t K,
                   int64_t target, int64_t min_blk, int cut, nn_tiles *t);

/* C[tile] = alpha * op(A) op(B) + beta * C[tile] for tile t (row-major,
** cblas conventions; lda/ldb/ldc as for the whole product). */
void nn_sgemm_tile(const nn_tiles *t, int64_t tile, int trans_a, int trans_b,
                   int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                   int64_t lda, const float *B, int64_t ldb, float beta,
                   float *C, int64_t ldc);

/* ---- window geometry (Conv, pools) --------------------------------------- */

/* Spatial rank 1 is handled as 2-D with height 1. */
typedef struct nn_window {
    int sp;                 /* spatial rank of the op: 1 or 2 */
    int64_t H, W;           /* input spatial size */
    int64_t kh, kw;         /* kernel */
    int64_t sh, sw;         /* strides */
    int64_t dh, dw;         /* dilations */
    int64_t pt, pl, pb, pr; /* pads: top, left, bottom, right */
    int64_t OH, OW;         /* output spatial size */
} nn_window;

/* Reads kernel_shape (or takes kernel from kdims when kdims != NULL),
** strides, pads, dilations, auto_pad and (if ceil_ok) ceil_mode for an
** input of spatial dims in[0..sp), and computes the output size. Errors
** name op and node: bad pads (count, negative, not smaller than the
** dilated kernel for pools), a kernel that does not fit, bad auto_pad. */
popc_status nn_window_parse(const char *op, const char *node,
                            const popc_attrs *attrs, int sp, const int64_t *in,
                            const int64_t *kdims, int ceil_ok, int is_pool,
                            nn_window *w);

/* The window's attributes in the form nn_window_parse reads back, for the
** nodes a grad builder adds (explicit pads, auto_pad NOTSET). Fills up to
** 5 attributes (kernel_shape, strides, pads, dilations, ceil_mode) using
** the arrays in store; returns how many. */
typedef struct nn_window_attrs {
    int64_t k[2], s[2], p[4], d[2];
    popc_attr a[5];
} nn_window_attrs;
int nn_window_attrs_make(const nn_window *w, int ceil_mode,
                         nn_window_attrs *store);

#endif /* POPC_OPS_NN_PRIV_H */
