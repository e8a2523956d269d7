/* conv_priv.h - what Conv (conv.c) and its gradient ops (conv_grad.c)
** share: the convolution geometry, im2col/col2im, scratch buffers and the
** Winograd driver. Module-internal (hidden) symbols of the nn plugin.
*/
#ifndef POPC_OPS_NN_CONV_PRIV_H
#define POPC_OPS_NN_CONV_PRIV_H

#include <stdint.h>

#include "ops/nn/epilogue.h"
#include "ops/nn/nn_priv.h"

/* Units a convolution kernel aims to split into (several per worker). */
#define NN_CONV_UNITS 8
/* Fewest channels in and out for Winograd (see nn_wino_fits). */
#define NN_WINO_MIN_CHANNELS 8
/* Fewest 2x2 output tiles per image for Winograd: Winograd runs one image
** per GEMM set, and below 16 tiles (an 8x8 output) its 16 GEMMs are too
** thin and the weight transform (once per part) outweighs them; im2col's
** GEMMs win there (ResNet-18 at 64x64 trains 1.6x faster with 16 than
** with 1, and 1.4x faster than with 64). */
#define NN_WINO_MIN_TILES 16
/* Fewest tiles per image for Winograd on parts of one image (inference
** at batch 1): below, the weight transform every part makes outweighs
** the multiplies saved (ResNet-18 at 224x224: its first two stages). */
#define NN_WINO_SPLIT_MIN_TILES 150

typedef struct conv_p {
    nn_window w;
    int64_t N, C, M;       /* batch, input channels, output channels */
    int64_t G, Cg, Mg;     /* groups, channels per group in and out */
    int64_t HW, P, KK, Kc; /* input plane, output plane, kh*kw, Cg*kh*kw */
    int direct;            /* 1x1, stride 1, no pads: x is its own im2col */
    int64_t S;             /* ConvGradWeight image chunks; 0: whole batch */
    /* popc::FusedConv: residual and activation each path applies to what
    ** it has just written; NULL for a plain Conv */
    const nn_epilogue *epi;
    /* the model infers (kc->training is 0): Winograd may split one image
    ** by tile blocks and output channels (nn_wino_fits) */
    int inference;
    /* nn_conv_path: the kernel chosen at compile (conv_kernels.c) */
    int path;
} conv_p;

/* The paths of the 2-D forward of Conv and FusedConv. The reference, the
** op's own forward, is im2col + sgemm in column tiles; each other path is
** a kernel of the "nn" provider (conv_kernels.c), chosen per node at
** compile by its *_fits() capability and its score. */
typedef enum nn_conv_path {
    NN_PATH_REF = 0,
    NN_PATH_DW,       /* depthwise.c: direct loops */
    NN_PATH_WINO,     /* winograd.c: F(2x2, 3x3) */
    NN_PATH_BATCHED,  /* conv_batched.c: several images per GEMM */
    NN_PATH_ROWS,     /* conv.c: row tiles over a whole-plane im2col */
    NN_PATHS
} nn_conv_path;

/* Row tiles pay: few images, small planes, many channels (conv.c). */
int nn_rows_fits(const conv_p *p);

/* Conv's 2-D forward on geometry p by path p->path (refused when that
** path does not take p), with p->epi applied. */
popc_status nn_conv2d_forward(const popc_kernel_ctx *kc, const conv_p *p,
                              const float *x, const float *wt,
                              const float *bias, float *y);

/* A Conv (fused: popc::FusedConv) node at compile: its geometry when a
** kernel may take it (2-D or 1-D, float32 and float32 partials), else 0. */
int nn_conv_node(const popc_infer_ctx *ic, conv_p *p);
int nn_fconv_node(const popc_infer_ctx *ic, conv_p *p);
/* The forward of Conv (FusedConv) by kernel `path`. */
popc_status nn_conv_run(const popc_kernel_ctx *kc, int path);
popc_status nn_fconv_run(const popc_kernel_ctx *kc, int path);

/* Outputs o in [lo, hi) of n_out whose input o*s + off lies in [0, n). */
void nn_valid_span(int64_t off, int64_t s, int64_t n, int64_t n_out,
                   int64_t *lo, int64_t *hi);

/* Depthwise convolutions (depthwise.c): one input and one output channel
** per group, as MobileNet's. Direct kernels, no im2col: Conv's output,
** ConvGradInput's dX and ConvGradWeight's dW and dB (S partial sums when
** p->S > 0, else one). */
int nn_dw_fits(const conv_p *p);
popc_status nn_dw_forward(const popc_kernel_ctx *kc, const conv_p *p,
                          const float *x, const float *wt, const float *bias,
                          float *y);
popc_status nn_dw_grad_input(const popc_kernel_ctx *kc, const conv_p *p,
                             const float *dy, const float *wt, float *dx);
popc_status nn_dw_grad_weight(const popc_kernel_ctx *kc, const conv_p *p,
                              const float *x, const float *dy, float *dw,
                              float *db);

/* Geometry from X's dims, W's dims and the attributes; errors name op and
** node. */
popc_status nn_conv_geom(const char *op, const char *node,
                         const popc_attrs *attrs, const int64_t *xd, int xr,
                         const int64_t *wd, int wr, conv_p *p);

/* Conv's output dims ([N, M, OH, OW] or [N, M, OW]). */
void nn_conv_out_dims(const conv_p *p, int64_t *d, int *rank);

/* im2col of channels [c0, c1) of one group's input x ([Cg, H, W]) for
** output positions [p0, p1): col is [(c1-c0)*kh*kw, p1-p0] with rows ld
** apart (ld >= p1 - p0; larger when several images share the rows). */
void nn_im2col(const conv_p *p, const float *x, int64_t c0, int64_t c1,
               int64_t p0, int64_t p1, float *col, int64_t ld);

/* Adds col ([(c1-c0)*kh*kw, P], rows ld apart) back into channels
** [c0, c1) of one group's dx ([Cg, H, W]); col is scratch and may be
** changed. */
void nn_col2im_add(const conv_p *p, float *col, int64_t c0, int64_t c1,
                   float *dx, int64_t ld);

/* Small output planes (conv_batched.c): with one group and fewer than
** NN_BATCH_PLANE output positions, the GEMMs take the planes of several
** images side by side (NN_BATCH_COLS columns or more), instead of one
** image's few columns at a time. */
#define NN_BATCH_PLANE 64
#define NN_BATCH_COLS 64
int nn_cb_fits(const conv_p *p);
/* Images per GEMM (shape only). */
int64_t nn_cb_images(const conv_p *p);
popc_status nn_cb_forward(const popc_kernel_ctx *kc, const conv_p *p,
                          const float *x, const float *wt, const float *bias,
                          float *y);
popc_status nn_cb_grad_input(const popc_kernel_ctx *kc, const conv_p *p,
                             const float *dy, const float *wt, float *dx);

/* A zeroed buffer of floats from the host (NULL for none); NULL with *st
** set (message naming the node) when out of memory. Owned by the caller
** (kc->host->free). */
void *nn_conv_scratch(const popc_kernel_ctx *kc, int64_t floats,
                      popc_status *st);

/* Channel blocks for the gradient ops: blocks of cb channels out of Cg,
** about NN_CONV_UNITS / outer blocks each. */
int64_t nn_chan_block(int64_t Cg, int64_t outer);

/* Whether Winograd takes the convolution (cin channels in, cout out; grad:
** ConvGradInput's transposed form). */
int nn_wino_fits(const conv_p *p, int64_t cin, int64_t cout, int grad);

/* This part's Winograd units (group, image): x [N, G * xc, xp] to
** y [N, G * yc, yp] with geometry g and Conv's weights wt (transposed:
** ConvGradInput's form); bias: M values or NULL. */
popc_status nn_run_wino(const popc_kernel_ctx *kc, const conv_p *p,
                        const nn_wino *g, int transposed, const float *x,
                        int64_t xc, int64_t xp, const float *wt,
                        const float *bias, float *y, int64_t yc, int64_t yp);

#endif /* POPC_OPS_NN_CONV_PRIV_H */
