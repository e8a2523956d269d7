/* bench_conv_dnnl.c - oneDNN's convolution primitive against popc's own
** convolution kernels, on the convolution shapes of ResNet-18 and
** MobileNetV2 at 224x224 (float32, inference), to decide whether oneDNN is
** worth a kernel-provider plugin (bench/README.md, "oneDNN against popc's
** convolution kernels").
**
** Usage: bench_conv_dnnl [--model resnet18|mobilenetv2|all] [--batch N]...
**                        [--threads N]... [--rounds R] [--reps K]
**                        [--layer NAME]
** Defaults: all models, batches 1 and 16, threads 1 and 2, 5 rounds of 3
** timed calls. Per layer shape it times five variants, interleaved (each
** round runs every variant, starting from a different one, with one
** untimed call first so a variant never pays for the previous one's
** threads winding down):
**   blk     oneDNN with the layouts it prefers (format_tag any: blocked
**           nChw16c / OIhw16i16o on AVX-512); weights reordered once,
**           outside the timing; the primitive only, as inside a blocked
**           region of a graph
**   blk+io  the same with the NCHW -> blocked reorder of the input and the
**           blocked -> NCHW reorder of the output, as for one node in an
**           NCHW graph
**   nchw    oneDNN on plain NCHW / OIHW tensors
**   wino    oneDNN's Winograd convolution (algorithm convolution_winograd)
**           with its preferred layouts, where it has one (3x3 stride 1 on
**           AVX-512), the primitive only; "-" elsewhere
**   conv    popc: a one-node graph (Conv with constant weights and bias)
**           as an inference model, backend=ipumodel, threads=N,
**           optimizationLevel=0, timing popc_model_run
**   fixed   popc: the fixed cost of one popc_model_run: a model of the
**           same kind whose graph output is its input, of the
**           convolution's output shape. popc_model_run reads the inputs
**           where they are and allocates and copies out the outputs, so
**           this is the conv run's bookkeeping and output copy without a
**           kernel (an Identity node would add a copy kernel, and one of
**           the input's shape would copy out the wrong size).
**           conv - fixed is popc's kernel, as it runs inside a whole model
** Prints a markdown table: per shape the median wall time of a call and
** the median process CPU time per call (getrusage, all threads: steadier
** than wall time on a shared machine), the largest difference between
** oneDNN's and popc's outputs relative to the output's largest magnitude,
** oneDNN's implementation; then per model the totals, weighted by how
** many times each shape occurs in the model.
*/
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "popc/popc.h"

#if DNNL_CPU_RUNTIME != DNNL_RUNTIME_OMP
#error "bench_conv_dnnl sets oneDNN's threads with OpenMP: oneDNN must use the OpenMP runtime"
#endif

/* One convolution shape of a model: square input hw x hw, square kernel,
** symmetric padding; count is how many times the model runs it. */
typedef struct conv_shape {
    const char *model, *name;
    int cin, cout, k, stride, pad, hw, groups, count;
} conv_shape;

/* torchvision's resnet18: 20 convolutions */
#define RN(name, ci, co, k, s, p, hw, n) \
    {"resnet18", name, ci, co, k, s, p, hw, 1, n}
/* torchvision's mobilenet_v2: 52 convolutions; dw = depthwise 3x3 */
#define MB(name, ci, co, k, s, hw, n) \
    {"mobilenetv2", name, ci, co, k, s, k / 2, hw, 1, n}
#define DW(name, c, s, hw, n) {"mobilenetv2", name, c, c, 3, s, 1, hw, c, n}

static const conv_shape shapes[] = {
    RN("conv1 7x7/2 3-64 @224", 3, 64, 7, 2, 3, 224, 1),
    RN("l1 3x3 64-64 @56", 64, 64, 3, 1, 1, 56, 4),
    RN("l2 3x3/2 64-128 @56", 64, 128, 3, 2, 1, 56, 1),
    RN("l2 3x3 128-128 @28", 128, 128, 3, 1, 1, 28, 3),
    RN("l2 ds 1x1/2 64-128 @56", 64, 128, 1, 2, 0, 56, 1),
    RN("l3 3x3/2 128-256 @28", 128, 256, 3, 2, 1, 28, 1),
    RN("l3 3x3 256-256 @14", 256, 256, 3, 1, 1, 14, 3),
    RN("l3 ds 1x1/2 128-256 @28", 128, 256, 1, 2, 0, 28, 1),
    RN("l4 3x3/2 256-512 @14", 256, 512, 3, 2, 1, 14, 1),
    RN("l4 3x3 512-512 @7", 512, 512, 3, 1, 1, 7, 3),
    RN("l4 ds 1x1/2 256-512 @14", 256, 512, 1, 2, 0, 14, 1),

    MB("stem 3x3/2 3-32 @224", 3, 32, 3, 2, 224, 1),
    DW("dw 32 @112", 32, 1, 112, 1),
    MB("pw 32-16 @112", 32, 16, 1, 1, 112, 1),
    MB("pw 16-96 @112", 16, 96, 1, 1, 112, 1),
    DW("dw/2 96 @112", 96, 2, 112, 1),
    MB("pw 96-24 @56", 96, 24, 1, 1, 56, 1),
    MB("pw 24-144 @56", 24, 144, 1, 1, 56, 2),
    DW("dw 144 @56", 144, 1, 56, 1),
    MB("pw 144-24 @56", 144, 24, 1, 1, 56, 1),
    DW("dw/2 144 @56", 144, 2, 56, 1),
    MB("pw 144-32 @28", 144, 32, 1, 1, 28, 1),
    MB("pw 32-192 @28", 32, 192, 1, 1, 28, 3),
    DW("dw 192 @28", 192, 1, 28, 2),
    MB("pw 192-32 @28", 192, 32, 1, 1, 28, 2),
    DW("dw/2 192 @28", 192, 2, 28, 1),
    MB("pw 192-64 @14", 192, 64, 1, 1, 14, 1),
    MB("pw 64-384 @14", 64, 384, 1, 1, 14, 4),
    DW("dw 384 @14", 384, 1, 14, 4),
    MB("pw 384-64 @14", 384, 64, 1, 1, 14, 3),
    MB("pw 384-96 @14", 384, 96, 1, 1, 14, 1),
    MB("pw 96-576 @14", 96, 576, 1, 1, 14, 3),
    DW("dw 576 @14", 576, 1, 14, 2),
    MB("pw 576-96 @14", 576, 96, 1, 1, 14, 2),
    DW("dw/2 576 @14", 576, 2, 14, 1),
    MB("pw 576-160 @7", 576, 160, 1, 1, 7, 1),
    MB("pw 160-960 @7", 160, 960, 1, 1, 7, 3),
    DW("dw 960 @7", 960, 1, 7, 3),
    MB("pw 960-160 @7", 960, 160, 1, 1, 7, 2),
    MB("pw 960-320 @7", 960, 320, 1, 1, 7, 1),
    MB("pw 320-1280 @7", 320, 1280, 1, 1, 7, 1),
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

enum {
    V_BLK, V_BLK_IO, V_NCHW, V_WINO, V_CONV, V_FIXED, N_VARIANTS
};

/* ---- timing ---------------------------------------------------------- */

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* CPU time of the process so far, all threads, in ms */
static double cpu_ms(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return 1e3 * ((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec) +
           1e-3 * ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- oneDNN ---------------------------------------------------------- */

#define DNNL_TRY(call)                                                   \
    do {                                                                 \
        dnnl_status_t s_ = (call);                                       \
        if (s_ != dnnl_success) {                                        \
            fprintf(stderr, "bench_conv_dnnl: %s: %s\n", #call,          \
                    dnnl_status2str(s_));                                \
            goto out;                                                    \
        }                                                                \
    } while (0)

/* The oneDNN side of one shape: a convolution with preferred layouts and
** its two reorders, and one on plain layouts. The user's tensors (x, w,
** b) are borrowed; every other buffer belongs to oneDNN's memories. */
typedef struct onednn_side {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_t conv_blk, conv_nchw, conv_wino, to_blk, from_blk;
    dnnl_memory_t x, w, b, y_nchw, y_io; /* plain */
    dnnl_memory_t x_blk, w_blk, y_blk;   /* oneDNN's layouts */
    dnnl_memory_t x_wino, w_wino, y_wino; /* NULL without Winograd */
    char impl[96], impl_nchw[96];
} onednn_side;

static void onednn_free(onednn_side *d)
{
    dnnl_primitive_t p[] = {d->conv_blk, d->conv_nchw, d->conv_wino,
                            d->to_blk, d->from_blk};
    dnnl_memory_t m[] = {d->x, d->w, d->b, d->y_nchw, d->y_io,
                         d->x_blk, d->w_blk, d->y_blk,
                         d->x_wino, d->w_wino, d->y_wino};

    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        if (p[i])
            dnnl_primitive_destroy(p[i]);
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (m[i])
            dnnl_memory_destroy(m[i]);
    if (d->stream)
        dnnl_stream_destroy(d->stream);
    if (d->engine)
        dnnl_engine_destroy(d->engine);
    memset(d, 0, sizeof *d);
}

static int reorder(onednn_side *d, dnnl_memory_t from, dnnl_memory_t to,
                   dnnl_primitive_t *keep)
{
    const dnnl_memory_desc_t *fm, *tm;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t p = NULL;
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    int rc = 1;

    DNNL_TRY(dnnl_memory_get_memory_desc(from, &fm));
    DNNL_TRY(dnnl_memory_get_memory_desc(to, &tm));
    DNNL_TRY(dnnl_reorder_primitive_desc_create(&pd, fm, d->engine, tm,
                                                d->engine, NULL));
    DNNL_TRY(dnnl_primitive_create(&p, pd));
    if (keep) {
        *keep = p;
        p = NULL;
    } else {
        DNNL_TRY(dnnl_primitive_execute(p, d->stream, 2, args));
        DNNL_TRY(dnnl_stream_wait(d->stream));
    }
    rc = 0;
out:
    if (p)
        dnnl_primitive_destroy(p);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* A forward-inference convolution primitive of s at batch n by alg, with
** the layout of x, w and y given by tag (dnnl_format_tag_any: oneDNN's
** choice). *pd is the caller's. 0, 1 on error, 2 when oneDNN has no
** implementation of alg for s (*pd NULL). */
static int conv_pd(onednn_side *d, const conv_shape *s, int n,
                   dnnl_alg_kind_t alg, dnnl_format_tag_t tag,
                   dnnl_primitive_desc_t *pd)
{
    int ho = (s->hw + 2 * s->pad - s->k) / s->stride + 1;
    int g = s->groups;
    dnnl_dims_t xd = {n, s->cin, s->hw, s->hw}, yd = {n, s->cout, ho, ho};
    dnnl_dims_t wd = {g, s->cout / g, s->cin / g, s->k, s->k};
    dnnl_dims_t bd = {s->cout};
    dnnl_dims_t st = {s->stride, s->stride}, pad = {s->pad, s->pad};
    dnnl_memory_desc_t xm, wm, bm, ym;
    dnnl_convolution_desc_t cd;
    dnnl_status_t created;
    dnnl_format_tag_t wtag =
        tag == dnnl_format_tag_any ? tag : g > 1 ? dnnl_goihw : dnnl_oihw;

    DNNL_TRY(dnnl_memory_desc_init_by_tag(&xm, 4, xd, dnnl_f32, tag));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&ym, 4, yd, dnnl_f32, tag));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&wm, g > 1 ? 5 : 4,
                                          g > 1 ? wd : wd + 1, dnnl_f32,
                                          wtag));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&bm, 1, bd, dnnl_f32, dnnl_x));
    DNNL_TRY(dnnl_convolution_forward_desc_init(
        &cd, dnnl_forward_inference, alg, &xm, &wm, &bm, &ym, st, pad, pad));
    created = dnnl_primitive_desc_create(pd, &cd, NULL, d->engine, NULL);
    if (created == dnnl_unimplemented && alg == dnnl_convolution_winograd) {
        *pd = NULL;
        return 2;
    }
    DNNL_TRY(created);
    return 0;
out:
    return 1;
}

static void impl_name(dnnl_primitive_desc_t pd, char *buf, size_t size)
{
    const char *s = NULL;

    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s) !=
            dnnl_success || !s)
        s = "?";
    snprintf(buf, size, "%s", s);
}

static int onednn_new(onednn_side *d, const conv_shape *s, int n,
                         float *x, float *w, float *b)
{
    dnnl_primitive_desc_t pb = NULL, pn = NULL, pw = NULL;
    int rc = 1, wino;

    memset(d, 0, sizeof *d);
    DNNL_TRY(dnnl_engine_create(&d->engine, dnnl_cpu, 0));
    DNNL_TRY(dnnl_stream_create(&d->stream, d->engine,
                                dnnl_stream_default_flags));
    /* convolution_direct: the algorithm PyTorch and ONNX Runtime ask for */
    if (conv_pd(d, s, n, dnnl_convolution_direct, dnnl_format_tag_any,
                &pb) ||
        conv_pd(d, s, n, dnnl_convolution_direct, dnnl_nchw, &pn) ||
        (wino = conv_pd(d, s, n, dnnl_convolution_winograd,
                        dnnl_format_tag_any, &pw)) == 1)
        goto out;
    impl_name(pb, d->impl, sizeof d->impl);
    impl_name(pn, d->impl_nchw, sizeof d->impl_nchw);
    DNNL_TRY(dnnl_primitive_create(&d->conv_blk, pb));
    DNNL_TRY(dnnl_primitive_create(&d->conv_nchw, pn));
    /* the plain primitive's descriptors are the user's layouts */
    DNNL_TRY(dnnl_memory_create(
        &d->x, dnnl_primitive_desc_query_md(pn, dnnl_query_src_md, 0),
        d->engine, x));
    DNNL_TRY(dnnl_memory_create(
        &d->w, dnnl_primitive_desc_query_md(pn, dnnl_query_weights_md, 0),
        d->engine, w));
    DNNL_TRY(dnnl_memory_create(
        &d->b, dnnl_primitive_desc_query_md(pn, dnnl_query_weights_md, 1),
        d->engine, b));
    DNNL_TRY(dnnl_memory_create(
        &d->y_nchw, dnnl_primitive_desc_query_md(pn, dnnl_query_dst_md, 0),
        d->engine, DNNL_MEMORY_ALLOCATE));
    DNNL_TRY(dnnl_memory_create(
        &d->y_io, dnnl_primitive_desc_query_md(pn, dnnl_query_dst_md, 0),
        d->engine, DNNL_MEMORY_ALLOCATE));
    DNNL_TRY(dnnl_memory_create(
        &d->x_blk, dnnl_primitive_desc_query_md(pb, dnnl_query_src_md, 0),
        d->engine, DNNL_MEMORY_ALLOCATE));
    DNNL_TRY(dnnl_memory_create(
        &d->w_blk, dnnl_primitive_desc_query_md(pb, dnnl_query_weights_md, 0),
        d->engine, DNNL_MEMORY_ALLOCATE));
    DNNL_TRY(dnnl_memory_create(
        &d->y_blk, dnnl_primitive_desc_query_md(pb, dnnl_query_dst_md, 0),
        d->engine, DNNL_MEMORY_ALLOCATE));
    /* weights once, as a compiler would at compile; the input once so the
    ** blocked-only variant convolves the same data */
    if (reorder(d, d->w, d->w_blk, NULL) || reorder(d, d->x, d->x_blk, NULL) ||
        reorder(d, d->x, d->x_blk, &d->to_blk) ||
        reorder(d, d->y_blk, d->y_io, &d->from_blk))
        goto out;
    if (wino == 0) {
        DNNL_TRY(dnnl_primitive_create(&d->conv_wino, pw));
        DNNL_TRY(dnnl_memory_create(
            &d->x_wino, dnnl_primitive_desc_query_md(pw, dnnl_query_src_md, 0),
            d->engine, DNNL_MEMORY_ALLOCATE));
        DNNL_TRY(dnnl_memory_create(
            &d->w_wino,
            dnnl_primitive_desc_query_md(pw, dnnl_query_weights_md, 0),
            d->engine, DNNL_MEMORY_ALLOCATE));
        DNNL_TRY(dnnl_memory_create(
            &d->y_wino, dnnl_primitive_desc_query_md(pw, dnnl_query_dst_md, 0),
            d->engine, DNNL_MEMORY_ALLOCATE));
        if (reorder(d, d->w, d->w_wino, NULL) ||
            reorder(d, d->x, d->x_wino, NULL))
            goto out;
    }
    rc = 0;
out:
    if (pw)
        dnnl_primitive_desc_destroy(pw);
    if (pb)
        dnnl_primitive_desc_destroy(pb);
    if (pn)
        dnnl_primitive_desc_destroy(pn);
    return rc;
}

static int onednn_conv_run(onednn_side *d, dnnl_primitive_t p, dnnl_memory_t x,
                         dnnl_memory_t w, dnnl_memory_t y)
{
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, x},
                               {DNNL_ARG_WEIGHTS, w},
                               {DNNL_ARG_BIAS, d->b},
                               {DNNL_ARG_DST, y}};

    DNNL_TRY(dnnl_primitive_execute(p, d->stream, 4, args));
    DNNL_TRY(dnnl_stream_wait(d->stream));
    return 0;
out:
    return 1;
}

static int onednn_run(onednn_side *d, int variant)
{
    dnnl_exec_arg_t in[2] = {{DNNL_ARG_FROM, d->x}, {DNNL_ARG_TO, d->x_blk}};
    dnnl_exec_arg_t outa[2] = {{DNNL_ARG_FROM, d->y_blk},
                               {DNNL_ARG_TO, d->y_io}};

    switch (variant) {
    case V_BLK:
        return onednn_conv_run(d, d->conv_blk, d->x_blk, d->w_blk, d->y_blk);
    case V_NCHW:
        return onednn_conv_run(d, d->conv_nchw, d->x, d->w, d->y_nchw);
    case V_WINO:
        return onednn_conv_run(d, d->conv_wino, d->x_wino, d->w_wino,
                               d->y_wino);
    default:
        DNNL_TRY(dnnl_primitive_execute(d->to_blk, d->stream, 2, in));
        if (onednn_conv_run(d, d->conv_blk, d->x_blk, d->w_blk, d->y_blk))
            return 1;
        DNNL_TRY(dnnl_primitive_execute(d->from_blk, d->stream, 2, outa));
        DNNL_TRY(dnnl_stream_wait(d->stream));
        return 0;
    }
out:
    return 1;
}

static const float *onednn_output(dnnl_memory_t m)
{
    void *p = NULL;

    return dnnl_memory_get_data_handle(m, &p) == dnnl_success ? p : NULL;
}

/* ---- popc ------------------------------------------------------------ */

static int model_fail(const char *what)
{
    fprintf(stderr, "bench_conv_dnnl: %s: %s\n", what, popc_last_error());
    return 1;
}

/* An inference model of one Conv (constant w and b) of s on input x, or
** (io set) of no node, the input being the output; compiled with
** backend=ipumodel, threads, optimizationLevel=0. */
static int model_new(const conv_shape *s, popc_tensor *x, float *w,
                         float *b, int threads, int io, popc_model **out)
{
    int64_t wdims[4] = {s->cout, s->cin / s->groups, s->k, s->k};
    int64_t bdims[1] = {s->cout};
    int64_t kern[2] = {s->k, s->k}, str[2] = {s->stride, s->stride};
    int64_t pads[4] = {s->pad, s->pad, s->pad, s->pad}, dil[2] = {1, 1};
    popc_attr attrs[5] = {popc_attr_make_ints("kernel_shape", kern, 2),
                          popc_attr_make_ints("strides", str, 2),
                          popc_attr_make_ints("pads", pads, 4),
                          popc_attr_make_ints("dilations", dil, 2),
                          popc_attr_make_int("group", s->groups)};
    popc_graph *g = NULL;
    popc_options *o = NULL;
    popc_tensor *wt = NULL, *bt = NULL;
    popc_view xv = popc_tensor_view(x);
    int in[3], y = -1, rc = 1;

    *out = NULL;
    if (popc_graph_new(io ? "io" : "conv", &g) != POPC_OK ||
        popc_graph_add_input(g, "x", POPC_DTYPE_F32, xv.dims, xv.rank,
                             &in[0]) != POPC_OK)
        goto fail;
    if (io)
        y = in[0];
    else if (popc_tensor_from_data(POPC_DTYPE_F32, wdims, 4, w, &wt) !=
                   POPC_OK ||
               popc_tensor_from_data(POPC_DTYPE_F32, bdims, 1, b, &bt) !=
                   POPC_OK ||
               popc_graph_add_constant(g, "w", wt, &in[1]) != POPC_OK ||
               popc_graph_add_constant(g, "b", bt, &in[2]) != POPC_OK ||
               popc_graph_add_node(g, NULL, "Conv", 0, in, 3, &y, 1, attrs,
                                   5, NULL, NULL) != POPC_OK)
        goto fail;
    if (popc_graph_add_output(g, y) != POPC_OK ||
        popc_options_new(&o) != POPC_OK ||
        popc_options_set(o, "backend", "ipumodel") != POPC_OK ||
        popc_options_set_int(o, "threads", threads) != POPC_OK ||
        popc_options_set_int(o, "optimizationLevel", 0) != POPC_OK ||
        popc_model_new_inference(g, o, out) != POPC_OK ||
        popc_model_compile(*out, &x, 1) != POPC_OK)
        goto fail;
    rc = 0;
    goto done;
fail:
    rc = model_fail(s->name);
    popc_model_free(*out);
    *out = NULL;
done:
    popc_tensor_unref(wt);
    popc_tensor_unref(bt);
    popc_options_free(o);
    popc_graph_free(g);
    return rc;
}

static int model_run_once(popc_model *m, popc_tensor *x, popc_tensor **keep)
{
    popc_tensor *y = NULL;

    if (popc_model_run(m, &x, 1, &y, 1) != POPC_OK)
        return model_fail("popc_model_run");
    if (keep) {
        popc_tensor_unref(*keep);
        *keep = y;
    } else
        popc_tensor_unref(y);
    return 0;
}

/* ---- one shape ------------------------------------------------------- */

typedef struct result {
    double wall[N_VARIANTS], cpu[N_VARIANTS]; /* ms per call, medians */
    double diff; /* largest of oneDNN's against popc, relative to max |y| */
    char impl[96], impl_nchw[96];
} result;

/* float32 sums of up to 4608 products, in different orders and by
** Winograd transforms: well under this, relative to the output's scale */
#define MAX_REL_DIFF 1e-4

typedef struct settings {
    int rounds, reps;
} settings;

/* max |a - b| / max |b| over n elements */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, scale = 0;

    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - (double)b[i]));
        scale = fmax(scale, fabs((double)b[i]));
    }
    return scale > 0 ? d / scale : d;
}

static void fill(float *v, size_t n, float scale, unsigned *seed)
{
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1103515245u + 12345u;
        v[i] = scale * ((float)(*seed >> 8 & 0xffff) / 32768.0f - 1.0f);
    }
}

typedef struct sides {
    onednn_side d;
    popc_model *conv, *io;
    popc_tensor *x, *y0; /* y0: zeros of the output's shape */
} sides;

static int run_variant(sides *s, int v)
{
    if (v == V_CONV)
        return model_run_once(s->conv, s->x, NULL);
    if (v == V_FIXED)
        return model_run_once(s->io, s->y0, NULL);
    return onednn_run(&s->d, v);
}

static int available(const sides *s, int v)
{
    return v != V_WINO || s->d.conv_wino;
}

/* Lets oneDNN's OpenMP workers stop spinning (libgomp spins for a while
** after a parallel region before it sleeps), so that the next variant
** neither shares the cores with them nor is charged their CPU time. */
static void settle(int threads)
{
    struct timespec ts = {0, 20 * 1000 * 1000};

    if (threads > 1)
        nanosleep(&ts, NULL);
}

static int time_variants(sides *s, int threads, const settings *st,
                         result *r)
{
    int n = st->rounds * st->reps;
    double *wall = calloc((size_t)(N_VARIANTS * n), sizeof *wall);
    double *cpu = calloc((size_t)(N_VARIANTS * st->rounds), sizeof *cpu);
    int rc = 1;

    if (!wall || !cpu)
        goto out;
    for (int round = 0; round < st->rounds; round++)
        for (int j = 0; j < N_VARIANTS; j++) {
            int v = (round + j) % N_VARIANTS;
            double c0;

            if (!available(s, v))
                continue;
            settle(threads);
            if (run_variant(s, v))
                goto out;
            c0 = cpu_ms();
            for (int k = 0; k < st->reps; k++) {
                double t0 = now_ms();

                if (run_variant(s, v))
                    goto out;
                wall[v * n + round * st->reps + k] = now_ms() - t0;
            }
            cpu[v * st->rounds + round] = (cpu_ms() - c0) / st->reps;
        }
    for (int v = 0; v < N_VARIANTS; v++) {
        r->wall[v] = available(s, v) ? median(wall + v * n, n) : NAN;
        r->cpu[v] =
            available(s, v) ? median(cpu + v * st->rounds, st->rounds) : NAN;
    }
    rc = 0;
out:
    free(wall);
    free(cpu);
    return rc;
}

static int bench_shape(const conv_shape *s, int batch, int threads,
                       const settings *st, result *r)
{
    int ho = (s->hw + 2 * s->pad - s->k) / s->stride + 1;
    size_t nx = (size_t)batch * s->cin * s->hw * s->hw;
    size_t nw = (size_t)s->cout * (s->cin / s->groups) * s->k * s->k;
    size_t ny = (size_t)batch * s->cout * ho * ho;
    int64_t xdims[4] = {batch, s->cin, s->hw, s->hw};
    int64_t ydims[4] = {batch, s->cout, ho, ho};
    float *w = malloc(nw * sizeof *w), *b = malloc(s->cout * sizeof *b);
    popc_tensor *y = NULL;
    sides sd = {0};
    unsigned seed = 25u;
    int rc = 1;

    memset(r, 0, sizeof *r);
    if (!w || !b ||
        popc_tensor_new(POPC_DTYPE_F32, xdims, 4, &sd.x) != POPC_OK ||
        popc_tensor_new(POPC_DTYPE_F32, ydims, 4, &sd.y0) != POPC_OK)
        goto out;
    fill(popc_tensor_data(sd.x), nx, 1.0f, &seed);
    fill(w, nw, 1.0f / sqrtf((float)(nw / s->cout)), &seed);
    fill(b, (size_t)s->cout, 0.1f, &seed);
    omp_set_num_threads(threads);
    if (onednn_new(&sd.d, s, batch, popc_tensor_data(sd.x), w, b) ||
        model_new(s, sd.x, w, b, threads, 0, &sd.conv) ||
        model_new(s, sd.y0, w, b, threads, 1, &sd.io) ||
        time_variants(&sd, threads, st, r))
        goto out;
    /* every oneDNN output, in NCHW, against popc's */
    if (model_run_once(sd.conv, sd.x, &y) ||
        (size_t)popc_tensor_numel(y) != ny)
        goto out;
    if (sd.d.conv_wino) {
        if (onednn_run(&sd.d, V_WINO) ||
            reorder(&sd.d, sd.d.y_wino, sd.d.y_io, NULL))
            goto out;
        r->diff = rel_diff(onednn_output(sd.d.y_io), popc_tensor_data(y), ny);
    }
    if (onednn_run(&sd.d, V_BLK_IO) || onednn_run(&sd.d, V_NCHW))
        goto out;
    r->diff = fmax(r->diff, rel_diff(onednn_output(sd.d.y_io),
                                     popc_tensor_data(y), ny));
    r->diff = fmax(r->diff, rel_diff(onednn_output(sd.d.y_nchw),
                                     popc_tensor_data(y), ny));
    if (!(r->diff <= MAX_REL_DIFF)) {
        fprintf(stderr, "bench_conv_dnnl: %s: oneDNN and popc differ by "
                        "%.2g of the output's scale (more than %g): not the "
                        "same convolution\n",
                s->name, r->diff, MAX_REL_DIFF);
        goto out;
    }
    snprintf(r->impl, sizeof r->impl, "%s", sd.d.impl);
    snprintf(r->impl_nchw, sizeof r->impl_nchw, "%s", sd.d.impl_nchw);
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "bench_conv_dnnl: %s at batch %d, %d threads "
                        "failed\n", s->name, batch, threads);
    popc_tensor_unref(y);
    popc_model_free(sd.conv);
    popc_model_free(sd.io);
    popc_tensor_unref(sd.y0);
    onednn_free(&sd.d);
    popc_tensor_unref(sd.x);
    free(w);
    free(b);
    return rc;
}

/* ---- report ---------------------------------------------------------- */

/* popc's kernel: the one-node run less the fixed cost of a run */
static double net(const double *v)
{
    return fmax(v[V_CONV] - v[V_FIXED], 0.0);
}

/* oneDNN at its best on this shape: direct or Winograd, blocked layouts */
static double best(const double *v)
{
    return isnan(v[V_WINO]) ? v[V_BLK] : fmin(v[V_BLK], v[V_WINO]);
}

static void print_header(void)
{
    printf("| model | layer | n | batch | thr | oneDNN blk | blk+io | nchw "
           "| wino | oneDNN best | popc conv | popc fixed | popc net "
           "| oneDNN best / popc net | rel diff | oneDNN impl (blk / nchw) "
           "|\n");
    printf("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:"
           "|---|\n");
}

static void print_pair(double wall, double cpu, const char *fmt)
{
    if (isnan(wall))
        printf(" - |");
    else {
        putchar(' ');
        printf(fmt, wall);
        printf(" / ");
        printf(fmt, cpu);
        printf(" |");
    }
}

/* The time cells of one row: oneDNN's variants, its best, popc's, and
** the speed of popc's kernel relative to oneDNN's best (above 1: popc
** faster) */
static void print_times(const double *wall, const double *cpu,
                        const char *fmt)
{
    for (int v = V_BLK; v <= V_WINO; v++)
        print_pair(wall[v], cpu[v], fmt);
    print_pair(best(wall), best(cpu), fmt);
    print_pair(wall[V_CONV], cpu[V_CONV], fmt);
    print_pair(wall[V_FIXED], cpu[V_FIXED], fmt);
    print_pair(net(wall), net(cpu), fmt);
    printf(" %.2fx / %.2fx |", best(wall) / net(wall),
           best(cpu) / net(cpu));
}

static void print_row(const conv_shape *s, int batch, int threads,
                      const result *r)
{
    printf("| %s | %s | %d | %d | %d |", s->model, s->name, s->count, batch,
           threads);
    print_times(r->wall, r->cpu, "%.3f");
    printf(" %.1e | %s / %s |\n", r->diff, r->impl, r->impl_nchw);
    fflush(stdout);
}

/* Sums over a model's layers, each weighted by its count; the Winograd
** column holds no sum (oneDNN has it for some shapes only): the best
** column sums the faster of direct and Winograd per layer */
typedef struct total {
    double wall[N_VARIANTS], cpu[N_VARIANTS], best_wall, best_cpu;
} total;

static void add_total(total *t, const conv_shape *s, const result *r)
{
    for (int v = 0; v < N_VARIANTS; v++) {
        t->wall[v] += v == V_WINO ? 0 : s->count * r->wall[v];
        t->cpu[v] += v == V_WINO ? 0 : s->count * r->cpu[v];
    }
    t->best_wall += s->count * best(r->wall);
    t->best_cpu += s->count * best(r->cpu);
}

static void print_total(const char *model, int batch, int threads,
                        const total *t)
{
    double wall[N_VARIANTS], cpu[N_VARIANTS];

    /* the best column as Winograd's, so that best() picks it up */
    memcpy(wall, t->wall, sizeof wall);
    memcpy(cpu, t->cpu, sizeof cpu);
    wall[V_WINO] = fmin(t->best_wall, t->wall[V_BLK]);
    cpu[V_WINO] = fmin(t->best_cpu, t->cpu[V_BLK]);
    printf("| %s | **total** | | %d | %d |", model, batch, threads);
    for (int v = V_BLK; v < V_WINO; v++)
        print_pair(t->wall[v], t->cpu[v], "%.2f");
    printf(" |");
    print_pair(best(wall), best(cpu), "%.2f");
    print_pair(wall[V_CONV], cpu[V_CONV], "%.2f");
    print_pair(wall[V_FIXED], cpu[V_FIXED], "%.2f");
    print_pair(net(wall), net(cpu), "%.2f");
    printf(" %.2fx / %.2fx | | |\n", best(wall) / net(wall),
           best(cpu) / net(cpu));
    fflush(stdout);
}

/* ---- main ------------------------------------------------------------ */

typedef struct args {
    const char *model, *layer;
    int batches[8], n_batches, threads[8], n_threads;
    settings st;
} args;

static int parse_args(int argc, char **argv, args *a)
{
    *a = (args){.model = "all", .st = {5, 3}};
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (!v)
            return 0;
        i++;
        if (strcmp(k, "--model") == 0)
            a->model = v;
        else if (strcmp(k, "--layer") == 0)
            a->layer = v;
        else if (strcmp(k, "--batch") == 0 && a->n_batches < 8)
            a->batches[a->n_batches++] = atoi(v);
        else if (strcmp(k, "--threads") == 0 && a->n_threads < 8)
            a->threads[a->n_threads++] = atoi(v);
        else if (strcmp(k, "--rounds") == 0)
            a->st.rounds = atoi(v);
        else if (strcmp(k, "--reps") == 0)
            a->st.reps = atoi(v);
        else
            return 0;
    }
    if (!a->n_batches) {
        a->batches[a->n_batches++] = 1;
        a->batches[a->n_batches++] = 16;
    }
    if (!a->n_threads) {
        a->threads[a->n_threads++] = 1;
        a->threads[a->n_threads++] = 2;
    }
    for (int i = 0; i < a->n_batches; i++)
        if (a->batches[i] < 1)
            return 0;
    for (int i = 0; i < a->n_threads; i++)
        if (a->threads[i] < 1)
            return 0;
    return a->st.rounds >= 1 && a->st.reps >= 1;
}

static int wanted(const args *a, const conv_shape *s)
{
    return (strcmp(a->model, "all") == 0 ||
            strcmp(a->model, s->model) == 0) &&
           (!a->layer || strcmp(a->layer, s->name) == 0);
}

int main(int argc, char **argv)
{
    const dnnl_version_t *ver = dnnl_version();
    const char *models[] = {"resnet18", "mobilenetv2"};
    args a;
    int found = 0;

    if (!parse_args(argc, argv, &a)) {
        fprintf(stderr,
                "usage: bench_conv_dnnl [--model resnet18|mobilenetv2|all] "
                "[--batch N]... [--threads N]... [--rounds R >= 1] "
                "[--reps K >= 1] [--layer NAME]\n");
        return 2;
    }
    for (int i = 0; i < N_SHAPES; i++)
        found += wanted(&a, &shapes[i]);
    if (!found) {
        fprintf(stderr, "bench_conv_dnnl: no shape matches --model %s%s%s; "
                        "the layer names are those of the table in "
                        "bench_conv_dnnl.c\n",
                a.model, a.layer ? " --layer " : "", a.layer ? a.layer : "");
        return 2;
    }
    printf("oneDNN %d.%d.%d (%s), popc %s; %d rounds x %d calls per "
           "variant; cells: median wall ms / median CPU ms per call\n\n",
           ver->major, ver->minor, ver->patch, ver->hash, popc_version(),
           a.st.rounds, a.st.reps);
    print_header();
    for (int mi = 0; mi < 2; mi++)
        for (int bi = 0; bi < a.n_batches; bi++)
            for (int ti = 0; ti < a.n_threads; ti++) {
                total t;
                int rows = 0;

                memset(&t, 0, sizeof t);

                for (int i = 0; i < N_SHAPES; i++) {
                    result r;

                    if (strcmp(shapes[i].model, models[mi]) != 0 ||
                        !wanted(&a, &shapes[i]))
                        continue;
                    if (bench_shape(&shapes[i], a.batches[bi],
                                    a.threads[ti], &a.st, &r))
                        return 1;
                    print_row(&shapes[i], a.batches[bi], a.threads[ti], &r);
                    add_total(&t, &shapes[i], &r);
                    rows++;
                }
                if (rows)
                    print_total(models[mi], a.batches[bi], a.threads[ti],
                                &t);
            }
    return 0;
}
