/* winograd4.h - Winograd F(4x4, 3x3) for 3x3, stride-1 convolutions
** (winograd4.c: the transforms and GEMMs of one image; winograd4_run.c:
** the entries Conv, ConvGradInput and ConvGradWeight call, and the shape
** predicate that chooses it). Module-internal symbols of the nn plugin.
*/
#ifndef POPC_OPS_NN_WINOGRAD4_H
#define POPC_OPS_NN_WINOGRAD4_H

#include <stdint.h>

#include "ops/nn/conv_priv.h"

/* A 3x3, stride-1, undilated convolution of one image: x [C, H, W] to
** y [M, OH, OW] with top/left padding pt, pl (bottom and right padding
** follow from OH, OW); outputs in 4x4 tiles, TH x TW of them, taken in
** blocks of rows x cols tiles. */
typedef struct nn_wino4 {
    int64_t C, M, H, W, OH, OW, pt, pl;
    int64_t TH, TW;
    int64_t rows, cols;
} nn_wino4;

void nn_wino4_plan(int64_t C, int64_t M, int64_t H, int64_t W, int64_t OH,
                   int64_t OW, int64_t pt, int64_t pl, nn_wino4 *g);
/* Tile blocks of an image (from the shape alone). */
int64_t nn_wino4_blocks(const nn_wino4 *g);

/* Forward: the scratch (nn_wino4_scratch floats) holds the transformed
** weights first (nn_wino4_weights; w is Conv's [M, C, 3, 3], or with
** transposed [C, M, 3, 3] turned by 180 degrees: ConvGradInput's form);
** then nn_wino4_image_part writes blocks [b0, b1) of output channels
** [m0, m1) of one image, adds bias (M values or NULL) and applies epi
** (NULL: none) to what it wrote. */
int64_t nn_wino4_scratch(const nn_wino4 *g);
void nn_wino4_weights(const nn_wino4 *g, const float *w, int transposed,
                      float *scratch);
void nn_wino4_image_part(const nn_wino4 *g, const float *x,
                         const float *bias, float *y, float *scratch,
                         int64_t b0, int64_t b1, int64_t m0, int64_t m1,
                         const nn_epilogue *epi);

/* Weight gradient F(3x3, 4x4): dW [M, C, 3, 3] summed over images: begin,
** nn_wino4_grad_image per image (x [C, H, W], dy [M, OH, OW]) in a fixed
** order, then finish. db8 (8 doubles per output channel, opu_sum8's
** accumulators) or NULL: dY's sums for dB, taken from the rows the
** transform reads anyway. The scratch holds nn_wino4_grad_scratch floats. */
int64_t nn_wino4_grad_scratch(const nn_wino4 *g);
void nn_wino4_grad_begin(const nn_wino4 *g, float *scratch);
void nn_wino4_grad_image(const nn_wino4 *g, const float *x, const float *dy,
                         float *scratch, double *db8);
void nn_wino4_grad_finish(const nn_wino4 *g, const float *scratch,
                          float *dw);

/* The entries (winograd4_run.c), split over kc's parts like every Conv
** path, and whether F(4x4) takes a convolution (winograd4_fits.c) of cin
** channels in and cout out (ConvGradInput: its transposed form's) for
** `use`. nn_wino4_grad_weight needs p->S > 0 image chunks and writes S
** partial sums of dW ([S, M, Cg, 3, 3]) and of dB ([S, M], db NULL:
** none). */
typedef enum nn_wino4_use {
    NN_WINO4_FORWARD,
    NN_WINO4_GRAD_INPUT,
    NN_WINO4_GRAD_WEIGHT
} nn_wino4_use;

int nn_wino4_fits(const conv_p *p, int64_t cin, int64_t cout,
                  nn_wino4_use use);
popc_status nn_wino4_forward(const popc_kernel_ctx *kc, const conv_p *p,
                             const float *x, const float *wt,
                             const float *bias, float *y);
popc_status nn_wino4_grad_input(const popc_kernel_ctx *kc, const conv_p *p,
                                const float *dy, const float *wt,
                                float *dx);
popc_status nn_wino4_grad_weight(const popc_kernel_ctx *kc, const conv_p *p,
                                 const float *x, const float *dy, float *dw,
                                 float *db);

#endif /* POPC_OPS_NN_WINOGRAD4_H */
