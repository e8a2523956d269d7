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
popc_status nn_register_gemm_grad(const popc_host *h, popc_registrar *r);
popc_status nn_register_conv(const popc_host *h, popc_registrar *r);
popc_status nn_register_conv_grad(const popc_host *h, popc_registrar *r);
popc_status nn_register_pool(const popc_host *h, popc_registrar *r);
popc_status nn_register_nd(const popc_host *h, popc_registrar *r);
popc_status nn_register_norm_more(const popc_host *h, popc_registrar *r);
popc_status nn_register_resize(const popc_host *h, popc_registrar *r);
popc_status nn_register_recurrent(const popc_host *h, popc_registrar *r);
popc_status nn_register_grid_sample(const popc_host *h, popc_registrar *r);
/* spatial_nd.c: Conv and pools on 3-D inputs (direct loops). */
popc_status nn_nd_conv_infer(popc_infer_ctx *ic);
popc_status nn_nd_conv_forward(const popc_kernel_ctx *kc);
popc_status nn_nd_pool_infer(popc_infer_ctx *ic, const char *op);
popc_status nn_nd_pool_forward(const popc_kernel_ctx *kc, int is_max);
popc_status nn_nd_cost(const popc_infer_ctx *ic, popc_cost *c);
popc_status nn_register_norm(const popc_host *h, popc_registrar *r);
/* norm_more_grad.c: the gradient builders of norm_more.c's ops and the
** registration of their gradient ops. */
popc_status nn_register_norm_more_grad(const popc_host *h, popc_registrar *r);
popc_status nn_instance_norm_grad(popc_grad_ctx *gc);
popc_status nn_mvn_grad(popc_grad_ctx *gc);
popc_status nn_lrn_grad(popc_grad_ctx *gc);
popc_status nn_global_max_pool_grad(popc_grad_ctx *gc);
/* norm_more.c: MeanVarianceNormalization's groups (elements sharing the
** kept coordinates; red[d] marks the normalised axes, default 0, 2, 3)
** and the offset of element i of group g. */
int64_t nn_mvn_groups(const popc_view *x, const popc_attrs *attrs,
                      uint8_t *red);
int64_t nn_mvn_offset(const popc_view *x, const uint8_t *red, int64_t g,
                      int64_t i);
popc_status nn_register_softmax(const popc_host *h, popc_registrar *r);
popc_status nn_register_fused(const popc_host *h, popc_registrar *r);
popc_status nn_register_attention(const popc_host *h, popc_registrar *r);
popc_status nn_register_conv_kernels(const popc_host *h, popc_registrar *r);
/* Softmax of one contiguous row (softmax.c); y may be x. */
void nn_softmax_row(const float *x, float *y, int64_t n);

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

/* The rows [r0, r1) and columns [c0, c1) of an M x N product that tile
** `tile` covers. */
void nn_tile_bounds(const nn_tiles *t, int64_t tile, int64_t M, int64_t N,
                    int64_t *r0, int64_t *r1, int64_t *c0, int64_t *c1);

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

/* ---- max pooling (pool_max.c) -------------------------------------------- */

/* Output columns nn_pool_max_row handles at most. */
#define NN_POOL_ROW 128

/* Max (m[o]) and argmax (at[o], a plane offset or -1 when no tap is
** inside; at may be NULL) of output columns [o0, o1) of row oh of one
** plane xp; o1 - o0 <= NN_POOL_ROW. */
void nn_pool_max_row(const nn_window *w, const float *xp, int64_t oh,
                     int64_t o0, int64_t o1, float *m, int64_t *at);

/* dX (dp) of one plane of a 2x2, stride-2, undilated pool whose windows
** all lie inside the input, from X (xp) and dY (gp): every element is
** written once, the gradient at each window's argmax (as 0 + g, like a
** scatter into zeros) and zero elsewhere. */
void nn_pool_max_grad_2x2(const nn_window *w, const float *xp,
                          const float *gp, float *dp);

/* ---- Winograd F(2x2, 3x3) (winograd.c) -----------------------------------
** A 3x3, stride-1, undilated convolution of one image: x [C, H, W] to
** y [M, OH, OW] with top/left padding pt, pl (the bottom and right
** padding follow from OH, OW). The scratch (nn_wino_scratch floats) holds
** the transformed weights first: fill them with nn_wino_weights, then
** call nn_wino_image for every image with those weights. */
typedef struct nn_wino {
    int64_t C, M, H, W, OH, OW, pt, pl;
    int64_t TH, TW;         /* tiles of 2x2 outputs */
    int64_t rows, cols;     /* tile rows and columns per block */
} nn_wino;

void nn_wino_plan(int64_t C, int64_t M, int64_t H, int64_t W, int64_t OH,
                  int64_t OW, int64_t pt, int64_t pl, nn_wino *g);
int64_t nn_wino_scratch(const nn_wino *g);
/* w is Conv's weight [M, C, 3, 3]; transposed: w is [C, M, 3, 3] and the
** convolution is ConvGradInput's (kernels turned by 180 degrees). */
/* Winograd weight transforms (winograd.c, winograd4.c) take kernels in
** chunks: the 9 taps of kernels [i0, i0 + n) of the M x C of Conv's w
** ([M][C][3][3]) as 9 rows of n, or with transposed, of ConvGradInput's
** w ([C][M][3][3]) with each kernel turned by 180 degrees. */
#define NN_WINO_KERNEL_CHUNK 64
void nn_wino_taps(const float *w, int transposed, int64_t M, int64_t C,
                  int64_t i0, int64_t n, float k[9][NN_WINO_KERNEL_CHUNK]);
void nn_wino_weights(const nn_wino *g, const float *w, int transposed,
                     float *scratch);
/* bias: M values or NULL. */
void nn_wino_image(const nn_wino *g, const float *x, const float *bias,
                   float *y, float *scratch);
/* Tile blocks of an image (the blocks' grid depends on the shape only). */
int64_t nn_wino_blocks(const nn_wino *g);
/* Blocks [b0, b1) of an image, output channels [m0, m1) only, with epi
** (NULL: none) applied to what they wrote: a part of one image, so that
** several workers share an image at batch 1. */
struct nn_epilogue;
void nn_wino_image_part(const nn_wino *g, const float *x, const float *bias,
                        float *y, float *scratch, int64_t b0, int64_t b1,
                        int64_t m0, int64_t m1,
                        const struct nn_epilogue *epi);

/* The weight gradient of the same convolution, dW [M, C, 3, 3], summed
** over images: begin, then one nn_wino_grad_image per image (x [C, H, W],
** dy [M, OH, OW]) in a fixed order, then finish. The scratch holds
** nn_wino_grad_scratch floats, the sums first. */
int64_t nn_wino_grad_scratch(const nn_wino *g);
void nn_wino_grad_begin(const nn_wino *g, float *scratch);
void nn_wino_grad_image(const nn_wino *g, const float *x, const float *dy,
                        float *scratch);
void nn_wino_grad_finish(const nn_wino *g, const float *scratch, float *dw);

#endif /* POPC_OPS_NN_PRIV_H */
