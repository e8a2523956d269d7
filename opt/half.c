/* half.c - popc_graph_to_half (popc/precision.h): the model.half() copy
** of a graph.
**
** One pass in topological order. map[v] is v's value in the copy, in the
** copy's precision; f32[v] caches a float32 version of it (a Cast, or the
** op's own float32 result before its cast to float16). A node is first
** added with its mapped operands; an op that refuses float16 (its shape
** inference fails) is added again on float32 versions of its float16
** operands, and its float results are cast to float16 under their
** original names, the float32 results keeping "<name>/f32". Operands
** mixing float16 and float32 follow Precision.halfFloatCasting.
**
** A rewrite the core never runs itself (run/ and programs call it), built
** on the public graph API and core/layer/; the float16 conversions of
** tensors stay in the core (core/graph/half_simd.c).
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/precision.h"
#include "popc/tensor.h"
#include "core/layer/alloc.h"
#include "core/layer/graph.h"
#include "core/layer/options.h"

#define ONNX_FLOAT 1
#define ONNX_FLOAT16 10

/* Precision.halfFloatCasting's values (core/options/options_table.c). */
enum { DOWNCAST_TO_HALF = 0, UPCAST_TO_FLOAT = 1, CASTING_DEFAULT = 2 };

typedef struct half_ctx {
    const popc_graph *g;
    popc_graph *h;
    int *map, *f32, *f16;      /* f16: a float16 version of a float32 value */
    const char *prefixes;
    int keep_buffers;
    int upcast;                /* HalfUpcastToFloat */
} half_ctx;

static int is_f16(const popc_graph *h, int v)
{
    return v >= 0 && popc_graph_value_info(h, v).dtype == POPC_DTYPE_F16;
}

static int named(const char *prefixes, const char *name)
{
    if (!prefixes || !*prefixes)
        return 1;
    for (const char *p = prefixes; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);

        if (len && strncmp(name, p, len) == 0)
            return 1;
        p = end ? end + 1 : p + len;
    }
    return 0;
}

/* Cast v of the copy to onnx type `to`; the result named `name`. marked:
** a cast an IPU would not need (POPC_ATTR_FLOAT16), around ops popc runs
** in float32; the casts of the streamed inputs are real. */
static popc_status cast_node(half_ctx *c, int v, int to, const char *name,
                             const popc_annotations *an, int marked,
                             int *out)
{
    popc_attr a[2] = {{.name = "to", .type = POPC_ATTR_INT, .i = to},
                      {.name = POPC_ATTR_FLOAT16, .type = POPC_ATTR_INT,
                       .i = POPC_FLOAT16_CAST}};
    const popc_op_def *op;
    char node[512];
    int id;
    popc_status st;

    if ((st = popci_role_op(POPC_ROLE_CAST, "popc_graph_to_half", &op)) !=
        POPC_OK)
        return st;
    snprintf(node, sizeof node, "%s/cast%s", name,
             to == ONNX_FLOAT16 ? "16" : "32");
    if ((st = popc_graph_add_node(c->h, op->domain, op->name, 0, &v, 1, out,
                                  1, a, marked ? 2 : 1, node, &id)) !=
        POPC_OK)
        return st;
    if (an && (st = popc_graph_set_node_annotations(c->h, id, an)) != POPC_OK)
        return st;
    return POPC_OK;
}

static popc_status cast(half_ctx *c, int v, int to, const char *name,
                        const popc_annotations *an, int *out)
{
    return cast_node(c, v, to, name, an, 1, out);
}

/* Original value v cast to onnx type `to` (ONNX_FLOAT or ONNX_FLOAT16),
** made once and kept in cache[v]; named "<v>/f32" or "<v>/f16". */
static popc_status as_type(half_ctx *c, int v, int to, int *cache,
                           const popc_annotations *an, int *out)
{
    char name[512];
    popc_status st;

    if (cache[v] < 0) {
        snprintf(name, sizeof name, "%s/%s", popc_graph_value_name(c->g, v),
                 to == ONNX_FLOAT ? "f32" : "f16");
        if ((st = cast(c, c->map[v], to, name, an, &cache[v])) != POPC_OK ||
            (st = popc_graph_set_value_name(c->h, cache[v], name)) !=
                POPC_OK)
            return st;
    }
    *out = cache[v];
    return POPC_OK;
}

static popc_status as_f32(half_ctx *c, int v, const popc_annotations *an,
                          int *out)
{
    return as_type(c, v, ONNX_FLOAT, c->f32, an, out);
}

static popc_status as_f16(half_ctx *c, int v, const popc_annotations *an,
                          int *out)
{
    return as_type(c, v, ONNX_FLOAT16, c->f16, an, out);
}

static popc_status copy_inputs(half_ctx *c)
{
    for (int i = 0; i < popc_graph_n_inputs(c->g); i++) {
        int v = popc_graph_input(c->g, i), id, half;
        popc_view info = popc_graph_value_info(c->g, v);
        const char *name = popc_graph_value_name(c->g, v);
        char hname[512];
        popc_status st;

        if ((st = popc_graph_add_input(c->h, name, info.dtype, info.dims,
                                       info.rank, &id)) != POPC_OK)
            return st;
        c->map[v] = id;
        if (info.dtype != POPC_DTYPE_F32)
            continue;
        /* streamed as float32, cast on the device; ops read the half
        ** value, as in a half model fed half data */
        snprintf(hname, sizeof hname, "%s/f16", name);
        if ((st = cast_node(c, id, ONNX_FLOAT16, hname, NULL, 0, &half)) !=
            POPC_OK)
            return st;
        c->map[v] = half;
    }
    return POPC_OK;
}

static popc_status copy_stored(half_ctx *c)
{
    for (int v = 0; v < popc_graph_n_values(c->g); v++) {
        popc_value_kind k = popc_graph_value_kind(c->g, v);
        popc_tensor *t = popc_graph_value_tensor(c->g, v), *t16 = NULL;
        const char *name = popc_graph_value_name(c->g, v);
        int trainable = popc_graph_value_trainable(c->g, v), convert;
        popc_status st;

        if (k != POPC_VALUE_INITIALIZER && k != POPC_VALUE_CONSTANT)
            continue;
        convert = t && popc_tensor_dtype(t) == POPC_DTYPE_F32 &&
                  named(c->prefixes, name) &&
                  !(c->keep_buffers && k == POPC_VALUE_INITIALIZER &&
                    !trainable);
        if (convert &&
            (st = popc_tensor_cast(t, POPC_DTYPE_F16, &t16)) != POPC_OK)
            return st;
        st = k == POPC_VALUE_INITIALIZER
                 ? popc_graph_add_initializer(c->h, name, convert ? t16 : t,
                                              trainable, &c->map[v])
                 : popc_graph_add_constant(c->h, name, convert ? t16 : t,
                                           &c->map[v]);
        popc_tensor_free(t16);
        if (st != POPC_OK)
            return st;
    }
    return POPC_OK;
}

/* Node n again, on float32 operands, its float results cast to float16
** unless result_f32 (HalfUpcastToFloat on mixed operands). */
static popc_status wrap_f32(half_ctx *c, int n, int *in, int n_in, int *out,
                            int n_out, const popc_annotations *an,
                            int result_f32)
{
    const char *op = popc_graph_node_op(c->g, n);
    popc_attrs at = popc_graph_node_attrs(c->g, n);
    popc_attr *marked = NULL;
    int id;
    popc_status st;

    for (int j = 0; j < n_in; j++) {
        int v = popc_graph_node_input(c->g, n, j);
        if (v >= 0 && is_f16(c->h, in[j]) &&
            (st = as_f32(c, v, an, &in[j])) != POPC_OK)
            return st;
    }
    if (!result_f32) {
        /* a float16 operation computed in float32: the mark lets its
        ** kernels keep float16 partial sums (POPC_KERNEL_HALF_PARTIALS) */
        if (!(marked = popci_malloc(sizeof *marked * (size_t)(at.n + 1))))
            return popc_set_error(POPC_ENOMEM, "popc_graph_to_half: out of "
                                  "memory");
        if (at.n)
            memcpy(marked, at.items, sizeof *marked * (size_t)at.n);
        marked[at.n] = (popc_attr){.name = POPC_ATTR_FLOAT16,
                                   .type = POPC_ATTR_INT,
                                   .i = POPC_FLOAT16_OP};
        at.items = marked;
        at.n++;
    }
    st = popc_graph_add_node(c->h, popc_graph_node_domain(c->g, n), op,
                             popc_graph_node_version(c->g, n), in, n_in, out,
                             n_out, at.items, at.n,
                             popc_graph_node_name(c->g, n), &id);
    free(marked);
    if (st == POPC_OK)
        popci_source_copy(c->h, id, c->g, n);
    if (st != POPC_OK ||
        (st = popc_graph_set_node_annotations(c->h, id, an)) != POPC_OK)
        return popc_set_error(st, "popc_graph_to_half: node '%s' (%s) runs "
                              "in neither float16 nor float32: %s",
                              popc_graph_node_name(c->g, n), op,
                              popc_last_error());
    for (int j = 0; j < n_out; j++) {
        int v = popc_graph_node_output(c->g, n, j), half;
        const char *name = popc_graph_value_name(c->g, v);
        char raw[512];

        c->map[v] = out[j];
        if (result_f32 ||
            popc_graph_value_info(c->h, out[j]).dtype != POPC_DTYPE_F32)
            continue;
        snprintf(raw, sizeof raw, "%s/f32", name);
        if ((st = popc_graph_set_value_name(c->h, out[j], raw)) != POPC_OK ||
            (st = cast(c, out[j], ONNX_FLOAT16, name, an, &half)) !=
                POPC_OK ||
            (st = popc_graph_set_value_name(c->h, half, name)) != POPC_OK)
            return st;
        c->f32[v] = out[j];
        c->map[v] = half;
    }
    return POPC_OK;
}

static popc_status copy_node(half_ctx *c, int n)
{
    int n_in = popc_graph_node_n_inputs(c->g, n);
    int n_out = popc_graph_node_n_outputs(c->g, n);
    int in[64], out[64], any16 = 0, any32 = 0, id;
    popc_attrs at = popc_graph_node_attrs(c->g, n);
    popc_annotations an = popc_graph_node_annotations(c->g, n);
    popc_status st;

    if (n_in > 64 || n_out > 64)
        return popc_set_error(POPC_EUNSUPPORTED, "popc_graph_to_half: node "
                              "'%s' has more than 64 inputs or outputs",
                              popc_graph_node_name(c->g, n));
    for (int j = 0; j < n_in; j++) {
        int v = popc_graph_node_input(c->g, n, j);
        in[j] = v >= 0 ? c->map[v] : -1;
        any16 |= is_f16(c->h, in[j]);
        any32 |= in[j] >= 0 &&
                 popc_graph_value_info(c->h, in[j]).dtype == POPC_DTYPE_F32;
    }
    if (any16 && any32 && c->upcast)
        return wrap_f32(c, n, in, n_in, out, n_out, &an, 1);
    /* mixed operands: the float32 ones cast down (FloatDowncastToHalf) */
    for (int j = 0; any16 && any32 && j < n_in; j++) {
        int v = popc_graph_node_input(c->g, n, j);
        if (v >= 0 &&
            popc_graph_value_info(c->h, in[j]).dtype == POPC_DTYPE_F32 &&
            (st = as_f16(c, v, &an, &in[j])) != POPC_OK)
            return st;
    }
    st = popc_graph_add_node(c->h, popc_graph_node_domain(c->g, n),
                             popc_graph_node_op(c->g, n),
                             popc_graph_node_version(c->g, n), in, n_in, out,
                             n_out, at.items, at.n,
                             popc_graph_node_name(c->g, n), &id);
    if (st == POPC_OK) {
        for (int j = 0; j < n_out; j++)
            c->map[popc_graph_node_output(c->g, n, j)] = out[j];
        popci_source_copy(c->h, id, c->g, n);
        return popc_graph_set_node_annotations(c->h, id, &an);
    }
    if (!any16)
        return st;
    for (int j = 0; j < n_in; j++) { /* the original operands again */
        int v = popc_graph_node_input(c->g, n, j);
        in[j] = v >= 0 ? c->map[v] : -1;
    }
    return wrap_f32(c, n, in, n_in, out, n_out, &an, 0);
}

/* Outputs as float32 (the float32 version when one exists); updates in
** the buffer's dtype. */
static popc_status copy_ends(half_ctx *c)
{
    popc_status st;

    for (int i = 0; i < popc_graph_n_outputs(c->g); i++) {
        int v = popc_graph_output(c->g, i), o = c->map[v];

        if (is_f16(c->h, o) &&
            popc_graph_value_info(c->g, v).dtype == POPC_DTYPE_F32 &&
            (st = as_f32(c, v, NULL, &o)) != POPC_OK)
            return st;
        if ((st = popc_graph_add_output(c->h, o)) != POPC_OK)
            return st;
    }
    for (int i = 0; i < popc_graph_n_updates(c->g); i++) {
        int w, v, nv;

        if ((st = popc_graph_update(c->g, i, &w, &v)) != POPC_OK)
            return st;
        nv = c->map[v];
        if (!is_f16(c->h, c->map[w]) && is_f16(c->h, nv) &&
            (st = as_f32(c, v, NULL, &nv)) != POPC_OK)
            return st;
        if (is_f16(c->h, c->map[w]) && !is_f16(c->h, nv)) {
            char name[512];

            snprintf(name, sizeof name, "%s/f16",
                     popc_graph_value_name(c->g, v));
            if ((st = cast(c, nv, ONNX_FLOAT16, name, NULL, &nv)) != POPC_OK)
                return st;
        }
        if ((st = popc_graph_add_update(c->h, c->map[w], nv)) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

popc_status popc_graph_to_half(const popc_graph *g, const char *prefixes,
                               const popc_options *opts, popc_graph **out)
{
    half_ctx c = {g, NULL, NULL, NULL, NULL, prefixes, 1, 0};
    int nv = g ? popc_graph_n_values(g) : 0, nn = g ? popc_graph_n_nodes(g)
                                                     : 0;
    int *order = NULL;
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_graph_to_half: out is "
                              "NULL");
    *out = NULL;
    if (!g)
        return popc_set_error(POPC_EINVAL, "popc_graph_to_half: graph is "
                              "NULL");
    if (opts) {
        c.keep_buffers = popci_opt_bool(
            opts, POPCI_O_Precision_runningStatisticsAlwaysFloat);
        c.upcast = popci_opt_int(opts, POPCI_O_Precision_halfFloatCasting) ==
                   UPCAST_TO_FLOAT;
    }
    c.map = popci_malloc(sizeof(int) * (size_t)(nv + 1));
    c.f32 = popci_malloc(sizeof(int) * (size_t)(nv + 1));
    c.f16 = popci_malloc(sizeof(int) * (size_t)(nv + 1));
    order = popci_malloc(sizeof(int) * (size_t)(nn + 1));
    if (!c.map || !c.f32 || !c.f16 || !order) {
        st = popc_set_error(POPC_ENOMEM, "popc_graph_to_half: out of "
                            "memory");
        goto done;
    }
    for (int v = 0; v < nv; v++)
        c.map[v] = c.f32[v] = c.f16[v] = -1;
    if ((st = popc_graph_topo_order(g, order)) != POPC_OK ||
        (st = popc_graph_new(popc_graph_name(g), &c.h)) != POPC_OK ||
        /* a file's graph stays a file's graph: foreign code in it still
        ** needs the user's consent */
        (st = popc_graph_set_origin(c.h, popc_graph_origin(g))) != POPC_OK ||
        (st = copy_inputs(&c)) != POPC_OK ||
        (st = copy_stored(&c)) != POPC_OK)
        goto done;
    for (int k = 0; k < nn && st == POPC_OK; k++)
        st = copy_node(&c, order[k]);
    if (st == POPC_OK)
        st = copy_ends(&c);
done:
    free(c.map);
    free(c.f32);
    free(c.f16);
    free(order);
    if (st != POPC_OK) {
        popc_graph_free(c.h);
        return st;
    }
    *out = c.h;
    return POPC_OK;
}
