/* blocked.h - NCHWc, the blocked layout of the nn plugin's popc::Blocked*
** ops: a tensor [N, C, H, W] is held as [N, ceil(C/c), H, W, c], the c
** channels of a block side by side (c = 16 on AVX-512, 8 on AVX2), so a
** kernel computes c channels of one pixel with one vector instruction and
** a depthwise or small-plane convolution pays no per-channel overhead.
** The last block is padded: its extra lanes read zero weights, so what a
** kernel leaves in them (finite) never reaches a real channel, and
** popc::FromBlocked drops them. The graph optimizer (opt/pass_layout.c)
** chooses the layout at compile and reorders only at region borders.
**
** Module-internal (hidden) symbols of the nn plugin.
*/
#ifndef POPC_OPS_NN_BLOCKED_H
#define POPC_OPS_NN_BLOCKED_H

#include <stdint.h>

#include "ops/nn/epilogue.h"
#include "ops/nn/nn_priv.h"

/* The geometry a blocked kernel runs on. A 1x1, stride 1, unpadded
** convolution is seen as one row of H*W pixels, so small planes still
** fill the kernel's register tile. */
typedef struct bk_geom {
    int64_t c;                  /* lanes per block: 8 or 16 */
    int64_t N, C, M;            /* batch, channels in and out (real) */
    int64_t Cb, Mb;             /* blocks in and out */
    int64_t H, W, OH, OW;
    int64_t kh, kw, sh, sw, dh, dw, pt, pl;
    int depthwise;              /* one channel per group, C == M */
} bk_geom;

/* The kernels of one block size on one instruction set
** (blocked_kern.h, instantiated in blocked_kern.c). Each computes the
** units [lo, hi) of its op (bk_*_units), so parts of a split node write
** disjoint outputs and every part computes an element the same way. */
typedef struct bk_kernels {
    const char *isa;
    int nob;                    /* output blocks a convolution unit takes */
    /* y = epi(conv(x, w) + bias); w pre-blocked (blocked_weights) */
    /* y = epi(conv(x, w) + bias), w blocked by the graph optimizer;
    ** -1 when out of memory for its padded rows */
    int (*conv)(const bk_geom *g, const float *x, const float *w,
                const float *bias, float *y, const nn_epilogue *e,
                int64_t lo, int64_t hi);
    /* pools: mode 0 max, 1 average (count_include_pad cip) */
    void (*pool)(const bk_geom *g, const nn_window *w, int mode, int cip,
                 const float *x, float *y, int64_t lo, int64_t hi);
    /* y[n, b, 0, 0, :] = mean of x[n, b, :, :, :] */
    void (*global_avg)(const bk_geom *g, const float *x, float *y,
                       int64_t lo, int64_t hi);
} bk_kernels;

/* The fastest kernels this CPU runs for blocks of c lanes (8 or 16);
** POPC_NCHWC_ISA=generic forces the plain C ones (tests). */
const bk_kernels *bk_kernels_for(int64_t c);

/* Pixels of an output row per convolution unit: rows (and a 1x1
** convolution's single row) split into segments so that both cores get
** work at batch 1. A pixel's sums do not depend on its tile. */
#define BK_SEG 96

/* Work units of each kernel, for the split. */
int64_t bk_conv_units(const bk_geom *g, const bk_kernels *k);
int64_t bk_pool_units(const bk_geom *g);

/* Blocks of c lanes holding C channels. */
static inline int64_t bk_blocks(int64_t C, int64_t c)
{
    return (C + c - 1) / c;
}

/* Registration of ToBlocked/FromBlocked (blocked.c), BlockedConv
** (blocked_conv.c) and BlockedPool (blocked_pool.c). */
popc_status nn_register_blocked(const popc_host *h, popc_registrar *r);
popc_status nn_register_blocked_conv(const popc_host *h, popc_registrar *r);
popc_status nn_register_blocked_pool(const popc_host *h, popc_registrar *r);

/* AveragePool's clipped window and torch's divisor (pool.c). */
void nn_avg_window(const nn_window *w, int cip, int64_t oh, int64_t ow,
                   int64_t *h0, int64_t *h1, int64_t *w0, int64_t *w1,
                   int64_t *div);

#endif /* POPC_OPS_NN_BLOCKED_H */
