/* conv_kernels.c - the "nn" provider's kernels for Conv and FusedConv
** (popc/kernel.h, docs/kernels.md): depthwise direct loops, Winograd
** F(2x2, 3x3), batched planes and row tiles. The op's own forward, im2col
** + sgemm in column tiles, stays the reference.
**
** supports() is each path's capability (its *_fits predicate: shapes it
** computes, and the shapes where it was measured to pay, such as
** Winograd's tile and channel minimums). score() is the path's estimated
** speed-up over the reference: the ratio of two times from one flop/byte
** model of this machine (model_ns below). Both depend on the node's shapes
** and training mode only, so a compile always makes the same choice.
*/
#include "config.h"

#include "popc/kernel.h"
#include "ops/nn/conv_priv.h"
#include "ops/util/oputil.h"

/* The time model, calibrated on the development machine (2 cores, AVX2,
** OpenBLAS): sgemm reaches PEAK flops/ns per core on large products and
** loses efficiency on narrow ones, as d / (d + HALF) in its column and
** depth dimensions; copies (im2col, tile transforms, weight packing) move
** BW bytes/ns per core; the depthwise loops run at DW_RATE flops/ns per
** core. Work cut into u units runs on min(u, WORKERS) cores. */
#define PEAK 30.0
#define HALF_N 24.0
#define HALF_K 16.0
#define BW 8.0
#define DW_RATE 4.0
#define WORKERS 2.0

static double par(double units)
{
    return units < 1.0 ? 1.0 : units < WORKERS ? units : WORKERS;
}

static double gemm_ns(double flops, double n, double k)
{
    double eff = n / (n + HALF_N) * k / (k + HALF_K);

    return flops / (PEAK * (eff > 1e-6 ? eff : 1e-6));
}

static double flops_of(const conv_p *p)
{
    return 2.0 * (double)p->N * (double)p->M * (double)p->P * (double)p->Kc;
}

/* Writing the im2col of every (image, group) and reading it back. */
static double im2col_ns(const conv_p *p)
{
    return p->direct ? 0.0
                     : 8.0 * (double)p->N * (double)p->G * (double)p->Kc *
                           (double)p->P / BW;
}

/* Packing a group's weights for one GEMM. */
static double pack_ns(const conv_p *p)
{
    return 4.0 * (double)p->Mg * (double)p->Kc / BW;
}

/* The reference: column tiles, each building its own im2col columns and
** packing the group's weights again. */
static double ref_ns(const conv_p *p)
{
    nn_tiles t;
    double units;

    nn_tiles_plan(p->N * p->G, p->Mg, p->P, p->Kc, NN_CONV_UNITS, 64,
                  NN_TILE_COLS, &t);
    units = (double)(p->N * p->G * t.n);
    return (gemm_ns(flops_of(p), (double)t.blk, (double)p->Kc) +
            im2col_ns(p) + units * pack_ns(p)) /
           par(units);
}

/* Row tiles: each part builds the whole plane's im2col and packs each
** weight row once. */
static double rows_ns(const conv_p *p)
{
    nn_tiles t;
    double units, ng = (double)(p->N * p->G);

    nn_tiles_plan(p->N * p->G, p->Mg, p->P, p->Kc, NN_CONV_UNITS, 16,
                  NN_TILE_ROWS, &t);
    units = ng * (double)t.n;
    return (gemm_ns(flops_of(p), (double)p->P, (double)p->Kc) +
            ng * pack_ns(p)) /
               par(units) +
           im2col_ns(p) * par(units) / par(ng);
}

/* The planes of several images side by side in each GEMM. */
static double batched_ns(const conv_p *p)
{
    double ib = (double)nn_cb_images(p), gemms = (double)p->N / ib;

    return (gemm_ns(flops_of(p), ib * (double)p->P, (double)p->Kc) +
            im2col_ns(p) + gemms * pack_ns(p)) /
           par(gemms * NN_CONV_UNITS);
}

static double dw_ns(const conv_p *p)
{
    double planes = (double)(p->N * p->G);

    return (2.0 * planes * (double)p->P * (double)p->KK / DW_RATE +
            4.0 * planes * (double)(p->HW + p->P) / BW) /
           par(planes);
}

/* 16 GEMMs of Mg x tiles x Cg per (image, group), the transforms of the
** input and output tiles, and the weights' transform, which every part
** makes once (in parallel). */
static double wino_ns(const conv_p *p)
{
    double T = (double)((p->w.OH + 1) / 2) * (double)((p->w.OW + 1) / 2);
    double units = (double)(p->N * p->G);
    double wt = 128.0 * (double)p->Mg * (double)p->Cg / BW;

    return (gemm_ns(32.0 * units * (double)p->Mg * (double)p->Cg * T, T,
                    (double)p->Cg) +
            64.0 * units * T * (double)(p->Cg + p->Mg) / BW) /
               WORKERS +
           wt;
}

static double path_ns(const conv_p *p, int path)
{
    switch (path) {
    case NN_PATH_DW:
        return dw_ns(p);
    case NN_PATH_WINO:
        return wino_ns(p);
    case NN_PATH_BATCHED:
        return batched_ns(p);
    case NN_PATH_ROWS:
        return rows_ns(p);
    default:
        return ref_ns(p);
    }
}

static int path_fits(const conv_p *p, int path)
{
    switch (path) {
    case NN_PATH_DW:
        return nn_dw_fits(p);
    case NN_PATH_WINO:
        return nn_wino_fits(p, p->Cg, p->Mg, 0);
    case NN_PATH_BATCHED:
        return nn_cb_fits(p);
    case NN_PATH_ROWS:
        return nn_rows_fits(p);
    default:
        return 0;
    }
}

static int node_geom(const popc_infer_ctx *ic, int fused, conv_p *p)
{
    return fused ? nn_fconv_node(ic, p) : nn_conv_node(ic, p);
}

static double path_score(const popc_infer_ctx *ic, int fused, int path)
{
    conv_p p;
    double t;

    if (!node_geom(ic, fused, &p))
        return 0.0;
    t = path_ns(&p, path);
    return t > 0.0 ? ref_ns(&p) / t : 0.0;
}

static int path_supports(const popc_infer_ctx *ic, int fused, int path)
{
    conv_p p;

    return node_geom(ic, fused, &p) && path_fits(&p, path);
}

/* A kernel's supports, score and forward for one path of one op. */
#define PATH_FNS(NAME, FUSED, PATH, RUN)                                      \
    static int NAME##_supports(const popc_infer_ctx *ic)                      \
    {                                                                         \
        return path_supports(ic, FUSED, PATH);                                \
    }                                                                         \
    static double NAME##_score(const popc_infer_ctx *ic)                      \
    {                                                                         \
        return path_score(ic, FUSED, PATH);                                   \
    }                                                                         \
    static popc_status NAME##_forward(const popc_kernel_ctx *kc)              \
    {                                                                         \
        return RUN(kc, PATH);                                                 \
    }

PATH_FNS(dw, 0, NN_PATH_DW, nn_conv_run)
PATH_FNS(wino, 0, NN_PATH_WINO, nn_conv_run)
PATH_FNS(batched, 0, NN_PATH_BATCHED, nn_conv_run)
PATH_FNS(rows, 0, NN_PATH_ROWS, nn_conv_run)
PATH_FNS(fdw, 1, NN_PATH_DW, nn_fconv_run)
PATH_FNS(fwino, 1, NN_PATH_WINO, nn_fconv_run)
PATH_FNS(fbatched, 1, NN_PATH_BATCHED, nn_fconv_run)
PATH_FNS(frows, 1, NN_PATH_ROWS, nn_fconv_run)

#define KERNEL(NAME, DOMAIN, OP, FN)                                          \
    {.size = sizeof(popc_kernel_def), .name = NAME, .provider = "nn",        \
     .domain = DOMAIN, .op = OP, .supports = FN##_supports,                   \
     .score = FN##_score, .forward = FN##_forward, .flags = POPC_OP_SPLIT}

/* The provider's table: adding a kernel adds a row (docs/kernels.md says
** what each does). */
static const popc_kernel_def kernels[] = {
    KERNEL("depthwise", "ai.onnx", "Conv", dw),
    KERNEL("winograd_f2", "ai.onnx", "Conv", wino),
    KERNEL("batched_planes", "ai.onnx", "Conv", batched),
    KERNEL("im2col_rows", "ai.onnx", "Conv", rows),
    KERNEL("depthwise", "popc", "FusedConv", fdw),
    KERNEL("winograd_f2", "popc", "FusedConv", fwino),
    KERNEL("batched_planes", "popc", "FusedConv", fbatched),
    KERNEL("im2col_rows", "popc", "FusedConv", frows),
};

popc_status nn_register_conv_kernels(const popc_host *h, popc_registrar *r)
{
    popc_register_kernel_fn reg = NULL;
    popc_status st;

    if (POPC_HAS_FIELD(popc_host, h->size, get_proc) && h->get_proc)
        reg = (popc_register_kernel_fn)h->get_proc(
            POPC_SERVICE_REGISTER_KERNEL);
    if (!reg) /* an older host: the references run every node */
        return POPC_OK;
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        if ((st = reg(r, &kernels[i])) != POPC_OK)
            return st;
    return POPC_OK;
}
