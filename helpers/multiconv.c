/* multiconv.c - poptorch.MultiConv: the convolutions added to a graph
** between popc_multiconv_begin and popc_multiconv_end become one group,
** planned together by the IPU model (backends/common/multiconv.c). The
** settings are attributes and annotations of the Conv nodes (popc/attrs.h);
** results are those of the separate convolutions, except where a
** per-convolution partials type changes the rounding of a float16 model.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "popc/helpers.h"

#define DEFAULT_BACK_OFF 0.1
#define DEFAULT_RESERVED 50

struct popc_multiconv {
    popc_graph *g;
    int first_node;            /* nodes from here on are in the scope */
};

void popc_multiconv_options_init(popc_multiconv_options *o)
{
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->partials_type = POPC_DTYPE_UNDEFINED;
    o->conv_dithering = -1;
    o->plan_type = POPC_MULTICONV_PLAN_PARALLEL;
    o->cycle_back_off = DEFAULT_BACK_OFF;
    o->per_conv_reserved_tiles = DEFAULT_RESERVED;
}

popc_status popc_multiconv_begin(popc_graph *g, popc_multiconv **out)
{
    popc_multiconv *mc;

    if (!out)
        return popc_set_error(POPC_EINVAL, "MultiConv: out must not be NULL");
    *out = NULL;
    if (!g)
        return popc_set_error(POPC_EINVAL, "MultiConv: graph must not be "
                              "NULL");
    if (!(mc = calloc(1, sizeof *mc)))
        return popc_set_error(POPC_ENOMEM, "MultiConv: out of memory");
    mc->g = g;
    mc->first_node = popc_graph_n_nodes(g);
    *out = mc;
    return POPC_OK;
}

static int is_conv(const popc_graph *g, int node)
{
    const char *domain = popc_graph_node_domain(g, node);

    return strcmp(popc_graph_node_op(g, node), "Conv") == 0 &&
           (!domain || !domain[0] || strcmp(domain, "ai.onnx") == 0);
}

static popc_status check_options(const popc_multiconv_options *o, int n)
{
    if (o->size < sizeof *o)
        return popc_set_error(POPC_EINVAL, "MultiConv: options.size is %u; "
                              "fill the options with "
                              "popc_multiconv_options_init",
                              (unsigned)o->size);
    if (o->n_convs != 0 && o->n_convs != n)
        return popc_set_error(POPC_EINVAL, "MultiConv: the per-convolution "
                              "lists have %d entries but the scope holds %d "
                              "convolutions; give one entry per convolution",
                              o->n_convs, n);
    if (o->plan_type != POPC_MULTICONV_PLAN_PARALLEL &&
        o->plan_type != POPC_MULTICONV_PLAN_SERIAL)
        return popc_set_error(POPC_EINVAL, "MultiConv: planType %d is not a "
                              "MultiConvPlanType; use "
                              "POPC_MULTICONV_PLAN_PARALLEL or _SERIAL",
                              (int)o->plan_type);
    if (!(o->cycle_back_off >= 0.0 && o->cycle_back_off <= 1.0))
        return popc_set_error(POPC_EINVAL, "MultiConv: cycleBackOff %g is "
                              "outside [0, 1]", o->cycle_back_off);
    if (o->per_conv_reserved_tiles < 0)
        return popc_set_error(POPC_EINVAL, "MultiConv: perConvReservedTiles "
                              "%lld is negative",
                              (long long)o->per_conv_reserved_tiles);
    return POPC_OK;
}

/* The i-th convolution's value of a setting given once or per convolution. */
static double proportion_of(const popc_multiconv_options *o, int i)
{
    return o->available_memory_proportions ? o->available_memory_proportions[i]
                                           : o->available_memory_proportion;
}

static popc_dtype partials_of(const popc_multiconv_options *o, int i)
{
    return o->partials_types ? o->partials_types[i] : o->partials_type;
}

static int dithering_of(const popc_multiconv_options *o, int i)
{
    return o->conv_dithering_list ? o->conv_dithering_list[i]
                                  : o->conv_dithering;
}

static popc_status check_conv(const popc_multiconv_options *o, int i,
                              const char *name)
{
    double amp = proportion_of(o, i);
    popc_dtype pt = partials_of(o, i);
    int d = dithering_of(o, i);

    if (amp != 0.0 && !(amp > 0.0 && amp < 1.0))
        return popc_set_error(POPC_EINVAL, "MultiConv: available memory "
                              "proportion %g for convolution '%s' is outside "
                              "(0, 1)", amp, name);
    if (pt != POPC_DTYPE_UNDEFINED && pt != POPC_DTYPE_F32 &&
        pt != POPC_DTYPE_F16)
        return popc_set_error(POPC_EINVAL, "MultiConv: partials type %s for "
                              "convolution '%s'; use POPC_DTYPE_F32 or "
                              "POPC_DTYPE_F16", popc_dtype_name(pt), name);
    if (d < -1 || d > 1)
        return popc_set_error(POPC_EINVAL, "MultiConv: dithering %d for "
                              "convolution '%s'; use 0, 1 or -1 (the "
                              "option's)", d, name);
    return POPC_OK;
}

/* One more than the largest group id in g. */
static int64_t next_group(const popc_graph *g)
{
    int64_t id = 0;

    for (int k = 0; k < popc_graph_n_nodes(g); k++) {
        popc_attrs a = popc_graph_node_attrs(g, k);
        int64_t v = popc_attr_int(&a, POPC_ATTR_MULTICONV, 0);

        if (v > id)
            id = v;
    }
    return id + 1;
}

static popc_status set_int(popc_graph *g, int node, const char *name,
                           int64_t v)
{
    popc_attr a = {.name = name, .type = POPC_ATTR_INT, .i = v};

    return popc_graph_set_node_attr(g, node, &a);
}

static popc_status mark_conv(popc_graph *g, int node, int i, int64_t group,
                             const popc_multiconv_options *o)
{
    popc_attr f = {.name = POPC_ATTR_MULTICONV_BACKOFF,
                   .type = POPC_ATTR_FLOAT, .f = o->cycle_back_off};
    popc_attr s = {.name = POPC_ATTR_PARTIALS_TYPE, .type = POPC_ATTR_STRING};
    popc_status st;

    if ((st = set_int(g, node, POPC_ATTR_MULTICONV, group)) != POPC_OK ||
        (st = set_int(g, node, POPC_ATTR_MULTICONV_PLAN, o->plan_type)) !=
            POPC_OK ||
        (st = set_int(g, node, POPC_ATTR_MULTICONV_RESERVED,
                      o->per_conv_reserved_tiles)) != POPC_OK ||
        (st = popc_graph_set_node_attr(g, node, &f)) != POPC_OK)
        return st;
    if (dithering_of(o, i) >= 0 &&
        (st = set_int(g, node, POPC_ATTR_CONV_DITHERING,
                      dithering_of(o, i))) != POPC_OK)
        return st;
    if (partials_of(o, i) != POPC_DTYPE_UNDEFINED) {
        s.s = partials_of(o, i) == POPC_DTYPE_F16 ? "half" : "float";
        if ((st = popc_graph_set_node_attr(g, node, &s)) != POPC_OK)
            return st;
    }
    if (proportion_of(o, i) != 0.0) {
        popc_annotations an = popc_graph_node_annotations(g, node);

        an.available_memory = proportion_of(o, i);
        if ((st = popc_graph_set_node_annotations(g, node, &an)) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

popc_status popc_multiconv_end(popc_multiconv *mc,
                               const popc_multiconv_options *opts)
{
    popc_multiconv_options defaults;
    const popc_multiconv_options *o = opts;
    popc_graph *g;
    int *convs = NULL, n = 0, total;
    int64_t group;
    popc_status st = POPC_OK;

    if (!mc)
        return popc_set_error(POPC_EINVAL, "MultiConv: end without begin");
    g = mc->g;
    if (!o) {
        popc_multiconv_options_init(&defaults);
        o = &defaults;
    }
    total = popc_graph_n_nodes(g);
    if (!(convs =
              malloc(sizeof *convs * (size_t)(total - mc->first_node + 1))))
        st = popc_set_error(POPC_ENOMEM, "MultiConv: out of memory");
    for (int k = mc->first_node; st == POPC_OK && k < total; k++) {
        popc_attrs a;

        if (!is_conv(g, k))
            continue;
        a = popc_graph_node_attrs(g, k);
        if (popc_attr_int(&a, POPC_ATTR_MULTICONV, 0) > 0)
            st = popc_set_error(POPC_EINVAL, "MultiConv: convolution '%s' "
                                "already belongs to a MultiConv; the scopes "
                                "do not nest", popc_graph_node_name(g, k));
        convs[n++] = k;
    }
    if (st == POPC_OK && n == 0)
        st = popc_set_error(POPC_EINVAL, "MultiConv: no convolution (ONNX "
                            "Conv) was added to graph '%s' between begin and "
                            "end", popc_graph_name(g));
    if (st == POPC_OK)
        st = check_options(o, n);
    for (int i = 0; st == POPC_OK && i < n; i++)
        st = check_conv(o, i, popc_graph_node_name(g, convs[i]));
    group = next_group(g);
    for (int i = 0; st == POPC_OK && i < n; i++)
        st = mark_conv(g, convs[i], i, group, o);
    free(convs);
    free(mc);
    return st;
}
