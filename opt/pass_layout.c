/* pass_layout.c - blocked (NCHWc) layouts for convolutions and their
** neighbours, chosen once at compile. Convolutions (Conv and
** popc::FusedConv with constant weights, group 1 or depthwise) start
** regions; pools, Relu, Clip, LeakyRelu and same-shape Adds that read
** blocked values join them. Every node of a region becomes its blocked
** form (popc::BlockedConv, popc::BlockedPool, or the same elementwise op,
** which does not care about the layout), weights are blocked once as new
** constants, and popc::ToBlocked / popc::FromBlocked are added only where
** a region reads an NCHW value or an NCHW reader (or a graph output, an
** anchor) reads a blocked one. The FromBlocked takes the replaced
** value's name, so outputs keep theirs; an anchored value keeps its NCHW
** producer (the region ends before it and starts again after).
**
** The block is 16 channels where the CPU has AVX-512, else 8; the
** environment variable POPC_NCHWC_BLOCK forces one (8 or 16), or turns
** the pass off (0). A
** convolution with fewer input channels than half a block (an RGB stem)
** stays NCHW: its padded lanes would multiply mostly zeros.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opt/opt_priv.h"
#include "popc/log.h"

typedef struct layout {
    opt_ctx *c;
    int64_t blk;                /* lanes per block */
    int *order;                 /* nodes in topological order */
    unsigned char *mark;        /* node becomes blocked */
    unsigned char *nchw_use;    /* value read in NCHW after the rewrite */
    int *bval;                  /* value -> its blocked twin, or -1 */
    int64_t *chans;             /* value -> its channels (blocked twins) */
} layout;

int64_t opt_layout_block(void)
{
    const char *s = getenv("POPC_NCHWC_BLOCK");
    const char *isa = getenv("POPC_NCHWC_ISA");

    /* the kernels read it at run time (ops/nn/blocked_kern.c), where no
    ** log reaches the user: say here that another value does nothing */
    if (isa && *isa && strcmp(isa, "generic") != 0)
        popc_log(POPC_LOG_WARN, "POPC_NCHWC_ISA=%s ignored: the only value "
                 "is generic (the plain C kernels); unset it for the "
                 "CPU's own", isa);

    if (s && (strcmp(s, "0") == 0 || strcmp(s, "8") == 0 ||
              strcmp(s, "16") == 0))
        return atoi(s);
    if (s && *s)
        popc_log(POPC_LOG_WARN, "POPC_NCHWC_BLOCK=%s ignored: use 8 or 16, "
                 "or 0 for no blocked layouts", s);
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return 16;
#endif
    return 8;
}

static int blocked_value(const layout *L, int v)
{
    int p = v >= 0 ? opt_producer(L->c, v) : -1;

    return p >= 0 && L->mark[p];
}

/* Only the attributes listed: a node with one of popc's marks or an
** attribute this pass does not know keeps its layout. */
static int only_attrs(const opt_ctx *c, int n, const char *const *known,
                      int n_known)
{
    popc_attrs at = popc_graph_node_attrs(c->g, n);

    for (int a = 0; a < at.n; a++) {
        int ok = 0;

        for (int k = 0; k < n_known; k++)
            ok |= strcmp(at.items[a].name, known[k]) == 0;
        if (!ok)
            return 0;
    }
    return 1;
}

static int is_4d_f32(const opt_ctx *c, int v)
{
    popc_view x = popc_graph_value_info(c->g, v);

    if (x.dtype != POPC_DTYPE_F32 || x.rank != 4)
        return 0;
    for (int d = 0; d < 4; d++)
        if (x.dims[d] <= 0)
            return 0;
    return 1;
}

/* Output planes up to this many pixels take blocked group-1
** convolutions: on larger ones the NCHW path's Winograd F(2x2, 3x3) does
** fewer flops than the direct blocked kernel (ResNet-18 at batch 1, one
** core: 64 channels at 56x56 take 1.6 ms in NCHW and 2.5 ms blocked; 256
** at 14x14 3.2 and 2.4; bench/README.md). Depthwise convolutions are
** blocked at every size. */
#define BLOCK_MAX_PLANE 256

static int small_plane(const opt_ctx *c, int n)
{
    popc_view y = popc_graph_value_info(c->g, opt_output(c, n, 0));

    return y.dims[2] * y.dims[3] <= BLOCK_MAX_PLANE;
}

static int conv_fits(const layout *L, int n)
{
    static const char *const known[] = {
        "auto_pad", "dilations", "group", "kernel_shape", "pads", "strides",
        "activation", "activation_params", "fused"};
    const opt_ctx *c = L->c;
    int fused = opt_is_in(c, n, "popc", "FusedConv");
    int x = opt_input(c, n, 0), w = opt_input(c, n, 1);
    int b = opt_input(c, n, 2);
    const popc_tensor *wt;
    popc_view xv, wv;
    popc_attrs at = popc_graph_node_attrs(c->g, n);
    int64_t G = popc_attr_int(&at, "group", 1);

    if (!fused && !opt_is(c, n, "Conv"))
        return 0;
    if (!only_attrs(c, n, known, fused ? 9 : 6) || !is_4d_f32(c, x) ||
        !(wt = opt_constant(c, w)) || (b >= 0 && !opt_constant(c, b)) ||
        !is_4d_f32(c, opt_output(c, n, 0)))
        return 0;
    xv = popc_graph_value_info(c->g, x);
    wv = popc_tensor_view((popc_tensor *)wt);
    if (wv.dtype != POPC_DTYPE_F32 || wv.rank != 4)
        return 0;
    if (G != 1 && !(G == xv.dims[1] && G == wv.dims[0] && wv.dims[1] == 1))
        return 0;
    /* on a large plane a 3x3 keeps NCHW's Winograd, and a 1x1 joins a
    ** region but starts none */
    if (G == 1 && !small_plane(c, n) &&
        !(wv.dims[2] * wv.dims[3] == 1 && blocked_value(L, x)))
        return 0;
    return 2 * xv.dims[1] >= L->blk;
}

/* Pools and elementwise neighbours join a region that feeds them. */
static int neighbour_fits(const layout *L, int n)
{
    static const char *const pool_attrs[] = {
        "auto_pad", "ceil_mode", "count_include_pad", "dilations",
        "kernel_shape", "pads", "strides", "storage_order"};
    static const char *const unary[] = {"Relu", "Clip", "LeakyRelu"};
    const opt_ctx *c = L->c;
    int x = opt_input(c, n, 0);
    popc_attrs at = popc_graph_node_attrs(c->g, n);

    if (!blocked_value(L, x) || !is_4d_f32(c, x))
        return 0;
    if (opt_is(c, n, "MaxPool") || opt_is(c, n, "AveragePool"))
        return popc_graph_node_n_outputs(c->g, n) == 1 &&
               popc_attr_int(&at, "storage_order", 0) == 0 &&
               only_attrs(c, n, pool_attrs, 8);
    if (opt_is(c, n, "GlobalAveragePool"))
        return at.n == 0;
    for (size_t i = 0; i < sizeof unary / sizeof *unary; i++)
        if (opt_is(c, n, unary[i])) {
            /* Clip's bounds are scalars: they broadcast over any layout */
            for (int k = 1; k < popc_graph_node_n_inputs(c->g, n); k++) {
                int v = opt_input(c, n, k);
                float s;

                if (v >= 0 && !opt_scalar(c, v, &s))
                    return 0;
            }
            return only_attrs(c, n, (const char *const[]){"alpha", "min",
                                                          "max"}, 3);
        }
    if (opt_is(c, n, "Add") && at.n == 0) {
        int y = opt_input(c, n, 1);
        popc_view a = popc_graph_value_info(c->g, x);
        popc_view b = popc_graph_value_info(c->g, y);

        return blocked_value(L, y) && opt_same_shape(&a, &b);
    }
    return 0;
}

/* The blocked twin of NCHW value v, made by a ToBlocked the first time a
** region reads v. */
static popc_status twin(layout *L, int v, int anchor, int *out)
{
    opt_ctx *c = L->c;
    popc_attr a = popc_attr_make_int("block", L->blk);
    popc_node_desc d = {.size = sizeof d, .domain = "popc",
                        .op = "ToBlocked", .inputs = &v, .n_inputs = 1,
                        .n_outputs = 1, .attrs = &a, .n_attrs = 1};
    popc_status st;

    if (L->bval[v] >= 0) {
        *out = L->bval[v];
        return POPC_OK;
    }
    if ((st = opt_add_beside(c, anchor, popc_graph_value_name(c->g, v),
                             "ToBlocked", &d, out, NULL)) != POPC_OK)
        return st;
    L->bval[v] = *out;
    return POPC_OK;
}

/* W [M, C/G, kh, kw] as BlockedConv takes it (ops/nn/blocked_conv.c),
** zero in the padded lanes. */
static popc_status block_weight(layout *L, int w, int depthwise, int *out)
{
    const popc_tensor *t = opt_constant(L->c, w);
    popc_view v = popc_tensor_view((popc_tensor *)t);
    const float *src = v.data;
    int64_t c = L->blk, M = v.dims[0], Ci = v.dims[1], kh = v.dims[2];
    int64_t kw = v.dims[3], Mb = (M + c - 1) / c, Cb = (Ci + c - 1) / c;
    int64_t d[6];
    char name[512];
    float *dst;
    popc_status st;

    snprintf(name, sizeof name, "%s/blocked%lld",
             popc_graph_value_name(L->c->g, w), (long long)c);
    if (depthwise) {
        d[0] = Mb, d[1] = kh, d[2] = kw, d[3] = c;
        if ((st = opt_add_constant(L->c, name, d, 4, NULL, out, &dst)) !=
            POPC_OK)
            return st;
        for (int64_t m = 0; m < M; m++)
            for (int64_t k = 0; k < kh * kw; k++)
                dst[((m / c) * kh * kw + k) * c + m % c] = src[m * kh * kw + k];
        return POPC_OK;
    }
    d[0] = Mb, d[1] = Cb, d[2] = kh, d[3] = kw, d[4] = c, d[5] = c;
    if ((st = opt_add_constant(L->c, name, d, 6, NULL, out, &dst)) != POPC_OK)
        return st;
    /* src in order; what one output block writes stays in cache */
    for (int64_t m = 0; m < M; m++)
        for (int64_t i = 0; i < Ci; i++) {
            float *to = dst + ((m / c) * Cb + i / c) * kh * kw * c * c +
                        (i % c) * c + m % c;

            for (int64_t k = 0; k < kh * kw; k++)
                to[k * c * c] = *src++;
        }
    return POPC_OK;
}

static popc_status block_bias(layout *L, int b, int64_t M, int *out)
{
    const popc_tensor *t = opt_constant(L->c, b);
    popc_view v = popc_tensor_view((popc_tensor *)t);
    int64_t d = (M + L->blk - 1) / L->blk * L->blk;
    char name[512];
    float *dst;
    popc_status st;

    snprintf(name, sizeof name, "%s/blocked%lld",
             popc_graph_value_name(L->c->g, b), (long long)L->blk);
    if ((st = opt_add_constant(L->c, name, &d, 1, NULL, out, &dst)) !=
        POPC_OK)
        return st;
    memcpy(dst, v.data, (size_t)M * sizeof(float));
    return POPC_OK;
}

/* Add node n's blocked form reading ins; its output is the twin of n's. */
static popc_status emit(layout *L, int n, const char *domain, const char *op,
                        const int *ins, int n_ins, const popc_attr *a,
                        int na)
{
    opt_ctx *c = L->c;
    int y = opt_output(c, n, 0), out;
    popc_node_desc d = {.size = sizeof d, .domain = domain, .op = op,
                        .version = popc_graph_node_version(c->g, n),
                        .inputs = ins, .n_inputs = n_ins, .n_outputs = 1,
                        .attrs = a, .n_attrs = na};
    popc_status st;

    if (strcmp(domain, "popc") == 0)
        d.version = 0;
    if ((st = opt_add_beside(c, n, popc_graph_node_name(c->g, n), "Blocked",
                             &d, &out, NULL)) != POPC_OK)
        return st;
    L->bval[y] = out;
    L->chans[y] = popc_graph_value_info(c->g, y).dims[1];
    return POPC_OK;
}

static popc_status emit_conv(layout *L, int n)
{
    opt_ctx *c = L->c;
    popc_attrs at = popc_graph_node_attrs(c->g, n);
    popc_view xv = popc_graph_value_info(c->g, opt_input(c, n, 0));
    popc_view yv = popc_graph_value_info(c->g, opt_output(c, n, 0));
    int64_t ch[2] = {xv.dims[1], yv.dims[1]};
    int dw = popc_attr_int(&at, "group", 1) != 1;
    int b = opt_input(c, n, 2), z = opt_input(c, n, 3);
    int ins[4] = {-1, -1, -1, -1};
    popc_attr a[16];
    int na = 0;
    popc_status st;

    if ((st = twin(L, opt_input(c, n, 0), n, &ins[0])) != POPC_OK ||
        (st = block_weight(L, opt_input(c, n, 1), dw, &ins[1])) != POPC_OK ||
        (b >= 0 && (st = block_bias(L, b, ch[1], &ins[2])) != POPC_OK) ||
        (z >= 0 && (st = twin(L, z, n, &ins[3])) != POPC_OK))
        return st;
    for (int i = 0; i < at.n && na < 14; i++)
        a[na++] = at.items[i];
    if (!popc_attrs_find(&at, "fused"))
        a[na++] = popc_attr_make_string("fused", popc_graph_node_name(c->g,
                                                                      n));
    a[na++] = popc_attr_make_ints("channels", ch, 2);
    return emit(L, n, "popc", "BlockedConv", ins, 4, a, na);
}

static popc_status emit_neighbour(layout *L, int n)
{
    opt_ctx *c = L->c;
    popc_attrs at = popc_graph_node_attrs(c->g, n);
    int k = popc_graph_node_n_inputs(c->g, n), ins[3];
    popc_attr a[10];
    int na = 0;
    const char *mode = opt_is(c, n, "MaxPool")             ? "max"
                       : opt_is(c, n, "AveragePool")       ? "average"
                       : opt_is(c, n, "GlobalAveragePool") ? "global_average"
                                                           : NULL;
    popc_status st;

    for (int i = 0; i < k && i < 3; i++) {
        int v = opt_input(c, n, i);

        ins[i] = v;
        /* Add's operands and the activation's input; Clip's bounds stay */
        if (v >= 0 && (i == 0 || opt_is(c, n, "Add")) &&
            (st = twin(L, v, n, &ins[i])) != POPC_OK)
            return st;
    }
    if (!mode)
        return emit(L, n, "ai.onnx", popc_graph_node_op(c->g, n), ins,
                    k < 3 ? k : 3, at.items, at.n);
    for (int i = 0; i < at.n && na < 9; i++)
        a[na++] = at.items[i];
    a[na++] = popc_attr_make_string("mode", mode);
    return emit(L, n, "popc", "BlockedPool", ins, 1, a, na);
}

/* Where an NCHW reader, a graph output or an anchor reads a value of the
** region: a FromBlocked of its twin takes its place and name. */
static popc_status close_region(layout *L, int n)
{
    opt_ctx *c = L->c;
    int y = opt_output(c, n, 0);
    popc_attr a = popc_attr_make_int("channels", L->chans[y]);
    popc_node_desc d = {.size = sizeof d, .domain = "popc",
                        .op = "FromBlocked", .inputs = &L->bval[y],
                        .n_inputs = 1, .n_outputs = 1, .attrs = &a,
                        .n_attrs = 1};

    if (!L->nchw_use[y] && !opt_exported(c, y))
        return POPC_OK;
    return opt_replace(c, n, n, &d, NULL);
}

/* A kept value (an anchor) that is no graph output lives only while an
** NCHW node reads it, so its producer keeps the NCHW layout. */
static int anchored(const opt_ctx *c, int n)
{
    int y = opt_output(c, n, 0);

    for (int i = 0; i < popc_graph_n_outputs(c->g); i++)
        if (popc_graph_output(c->g, i) == y)
            return 0;
    return opt_exported(c, y);
}

static popc_status run(layout *L, int *rewrites)
{
    opt_ctx *c = L->c;
    int nn = c->n_nodes;
    popc_status st;

    if ((st = popc_graph_topo_order(c->g, L->order)) != POPC_OK)
        return st;
    for (int i = 0; i < nn; i++) {
        int n = L->order[i];

        L->mark[n] = !anchored(c, n) &&
                     (conv_fits(L, n) || neighbour_fits(L, n));
    }
    for (int n = 0; n < nn; n++)
        for (int i = 0; !L->mark[n] && i < popc_graph_node_n_inputs(c->g, n);
             i++) {
            int v = opt_input(c, n, i);

            if (v >= 0)
                L->nchw_use[v] = 1;
        }
    for (int i = 0; i < nn; i++) {
        int n = L->order[i];

        if (!L->mark[n])
            continue;
        st = opt_is(c, n, "Conv") || opt_is_in(c, n, "popc", "FusedConv")
                 ? emit_conv(L, n)
                 : emit_neighbour(L, n);
        if (st != POPC_OK)
            return st;
        c->taken[n] = 1;
        (*rewrites)++;
    }
    for (int n = 0; n < nn; n++)
        if (L->mark[n] && (st = close_region(L, n)) != POPC_OK)
            return st;
    return POPC_OK;
}

popc_status opt_block_layout(opt_ctx *c, int *rewrites)
{
    layout L = {.c = c, .blk = opt_layout_block()};
    int nv = popc_graph_n_values(c->g);
    popc_status st = POPC_ENOMEM;

    if (L.blk == 0 || !opt_has_op(c, "popc", "BlockedConv") ||
        !opt_has_op(c, "popc", "ToBlocked"))
        return POPC_OK;
    /* indexed by the values of the graph as it was: the pass reads no
    ** value it adds */
    L.order = calloc((size_t)c->n_nodes + 1, sizeof *L.order);
    L.mark = calloc((size_t)c->n_nodes + 1, 1);
    L.nchw_use = calloc((size_t)nv + 1, 1);
    L.bval = malloc(((size_t)nv + 1) * sizeof *L.bval);
    L.chans = calloc((size_t)nv + 1, sizeof *L.chans);
    if (L.order && L.mark && L.nchw_use && L.bval && L.chans) {
        for (int v = 0; v < nv; v++)
            L.bval[v] = -1;
        st = run(&L, rewrites);
    } else {
        popc_set_error(POPC_ENOMEM, "graph optimization: out of memory");
    }
    free(L.order);
    free(L.mark);
    free(L.nchw_use);
    free(L.bval);
    free(L.chans);
    return st;
}
