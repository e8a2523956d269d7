/* run_model.c - [model] and its [layer NAME] sections: validation at load
** time and the graph built with the layers.h builders.
**
** [model] layers lists the layers in order. A name refers to its
** [layer NAME] section; a layer type that takes no settings (relu,
** flatten, ...) may be listed by type without a section. Every section
** must be listed, and a layer with weights only once (its weights are
** named after it: fc1.weight).
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "popc/helpers.h"
#include "popc/layers.h"
#include "popc/precision.h"
#include "popc/registry.h"
#include "popc/run.h"
#include "core/layer/alloc.h"
#include "run/run_priv.h"
#include "run/run_custom_priv.h"

static const char *const model_keys[] = {
    "input",          "classes",       "loss",          "layers",
    "seed",           "onnx",          "output",        "labels",
    "half",           "input_overlap", "output_overlap", "remove_blocks",
    NULL};

/* [model] input_overlap / output_overlap, by popc_overlap_mode */
static const char *const overlap_modes[] = {
    "none", "accumulation_loop", "device_iteration_loop", NULL};
/* [layer] serialize, by popc_matmul_serialization */
static const char *const serialize_modes[] = {
    "none", "input_channels", "reducing_dim", "output_channels", NULL};

static popc_status parse_half(popc_run *r);

static const char *const k_linear[] = {"type",      "out_features",
                                       "bias",      "serialize",
                                       "serialize_factor",
                                       "keep_precision", NULL};
static const char *const k_conv[] = {"type",    "out_channels", "kernel",
                                     "stride",  "padding",      "dilation",
                                     "groups",  "bias",         NULL};
static const char *const k_pool[] = {"type", "kernel", "stride", "padding",
                                     NULL};
static const char *const k_bn[] = {"type", "eps", "momentum", NULL};
static const char *const k_ln[] = {"type", "eps", NULL};
static const char *const k_drop[] = {"type", "p", NULL};
static const char *const k_softmax[] = {"type", "dim", NULL};
static const char *const k_leaky[] = {"type", "negative_slope", NULL};
static const char *const k_none[] = {"type", NULL};
static const char *const k_loop[] = {"type", "count", "body", NULL};
/* every layer type also takes these (docs/semantics.md §6) */
static const char *const k_place[] = {"ipu", "block", "stage", "phase",
                                      "recompute", NULL};

/* ---- a layer's settings -------------------------------------------------- */

typedef struct lctx {
    popc_run *r;
    const char *section;
} lctx;

static popc_status lint(lctx *c, const char *key, int64_t def, int64_t min,
                        int64_t max, int64_t *out)
{
    return popci_config_get_int(popci_run_src(c->r, c->section, key),
                                c->section, key, def, min, max, out);
}

static popc_status lfloat(lctx *c, const char *key, double def, double min,
                          double max, double *out)
{
    return popci_config_get_float(popci_run_src(c->r, c->section, key),
                                  c->section, key, def, min, max, out);
}

static popc_status lbool(lctx *c, const char *key, int def, int *out)
{
    return popci_config_get_bool(popci_run_src(c->r, c->section, key),
                                 c->section, key, def, out);
}

static popc_status lrequire(lctx *c, const char *key)
{
    return popci_config_require(popci_run_src(c->r, c->section, key),
                                c->section, key);
}

/* Each reader below is the one place its keys' defaults are stated: an
** absent key, or the absent section of a type listed bare, reads as the
** default. */

/* ipu, stage, phase (-1: not given), recompute, block: every type's
** (docs/semantics.md §6) */
static popc_status parse_placement(lctx *c, popci_run_layer *L)
{
    int64_t ipu, stage, phase;
    popc_status st;

    if ((st = lint(c, "ipu", -1, 0, 63, &ipu)) ||
        (st = lint(c, "stage", -1, 0, 1 << 20, &stage)) ||
        (st = lint(c, "phase", -1, 0, 1 << 20, &phase)) ||
        (st = lbool(c, "recompute", 0, &L->recompute)) ||
        (st = popci_config_get_string(popci_run_src(c->r, c->section,
                                                    "block"),
                                      c->section, "block", NULL,
                                      &L->block)))
        return st;
    L->ipu = (int)ipu;
    L->stage = (int)stage;
    L->phase = (int)phase;
    return POPC_OK;
}

static popc_status parse_linear(lctx *c, popci_run_layer *L)
{
    popc_status st;
    const char *lone;
    char where[700];

    if ((st = lrequire(c, "out_features")) ||
        (st = lint(c, "out_features", 0, 1, 1 << 30, &L->out)) ||
        (st = lbool(c, "bias", 1, &L->bias)) ||
        (st = popci_config_get_enum(popci_run_src(c->r, c->section,
                                                  "serialize"),
                                    c->section, "serialize",
                                    serialize_modes, 0, &L->serialize)) ||
        (st = lint(c, "serialize_factor", 1, 1, 1 << 30,
                   &L->serialize_factor)) ||
        (st = lbool(c, "keep_precision", 0, &L->keep_precision)))
        return st;
    if (L->serialize)
        return POPC_OK;
    lone = popci_run_has(c->r, c->section, "serialize_factor")
               ? "serialize_factor"
           : popci_run_has(c->r, c->section, "keep_precision")
               ? "keep_precision"
               : NULL;
    if (!lone)
        return POPC_OK;
    return popc_set_error(
        POPC_ECONFIG, "%s: serialize_factor and keep_precision apply to a "
        "serialized layer; add serialize = input_channels, reducing_dim or "
        "output_channels",
        popci_run_where(c->r, c->section, lone, where, sizeof where));
}

static popc_status parse_conv(lctx *c, popci_run_layer *L)
{
    popc_status st;

    if ((st = lrequire(c, "out_channels")) ||
        (st = lint(c, "out_channels", 0, 1, 1 << 24, &L->out)) ||
        (st = lrequire(c, "kernel")) ||
        (st = lint(c, "kernel", 0, 1, 1 << 16, &L->kernel)) ||
        (st = lint(c, "stride", 1, 1, 1 << 16, &L->stride)) ||
        (st = lint(c, "padding", 0, 0, 1 << 16, &L->padding)) ||
        (st = lint(c, "dilation", 1, 1, 1 << 16, &L->dilation)) ||
        (st = lint(c, "groups", 1, 1, 1 << 24, &L->groups)))
        return st;
    return lbool(c, "bias", 1, &L->bias);
}

/* stride 0: the kernel size, as torch.nn's pooling layers default it */
static popc_status parse_pool(lctx *c, popci_run_layer *L)
{
    popc_status st;

    if ((st = lrequire(c, "kernel")) ||
        (st = lint(c, "kernel", 0, 1, 1 << 16, &L->kernel)) ||
        (st = lint(c, "stride", 0, 1, 1 << 16, &L->stride)))
        return st;
    return lint(c, "padding", 0, 0, 1 << 16, &L->padding);
}

static popc_status parse_batchnorm(lctx *c, popci_run_layer *L)
{
    popc_status st = lfloat(c, "eps", 1e-5, 1e-30, 1.0, &L->eps);

    return st ? st : lfloat(c, "momentum", 0.1, 0.0, 1.0, &L->momentum);
}

static popc_status parse_layernorm(lctx *c, popci_run_layer *L)
{
    return lfloat(c, "eps", 1e-5, 1e-30, 1.0, &L->eps);
}

static popc_status parse_dropout(lctx *c, popci_run_layer *L)
{
    return lfloat(c, "p", 0.5, 0.0, 0.999999, &L->p);
}

static popc_status parse_softmax(lctx *c, popci_run_layer *L)
{
    return lint(c, "dim", -1, -POPC_MAX_RANK, POPC_MAX_RANK - 1, &L->axis);
}

static popc_status parse_leaky_relu(lctx *c, popci_run_layer *L)
{
    return lfloat(c, "negative_slope", 0.01, -1e6, 1e6, &L->alpha);
}

static popc_status parse_custom(lctx *c, popci_run_layer *L)
{
    (void)L;
    return popci_run_parse_custom(c->r, c->section, 0);
}

static popc_status parse_foreign(lctx *c, popci_run_layer *L)
{
    (void)L;
    return popci_run_parse_custom(c->r, c->section, 1);
}

static popc_status parse_loop(lctx *c, popci_run_layer *L)
{
    popc_status st;

    if ((st = lrequire(c, "count")) ||
        (st = lint(c, "count", 0, 0, 1 << 20, &L->count)))
        return st;
    return lrequire(c, "body");
}

/* ---- the layer types ------------------------------------------------------ */

typedef struct layer_type {
    const char *name;
    run_layer_kind kind;
    const char *op;              /* RUN_ACTIVATION */
    const char *const *keys;
    int weights;                 /* has parameters: listed once */
    /* reads the type's own keys; NULL: it has none */
    popc_status (*settings)(lctx *c, popci_run_layer *L);
} layer_type;

static const layer_type types[] = {
    {"linear", RUN_LINEAR, NULL, k_linear, 1, parse_linear},
    {"conv2d", RUN_CONV2D, NULL, k_conv, 1, parse_conv},
    {"maxpool2d", RUN_MAXPOOL2D, NULL, k_pool, 0, parse_pool},
    {"avgpool2d", RUN_AVGPOOL2D, NULL, k_pool, 0, parse_pool},
    {"global_avgpool", RUN_GLOBAL_AVGPOOL, NULL, k_none, 0, NULL},
    {"batchnorm2d", RUN_BATCHNORM2D, NULL, k_bn, 1, parse_batchnorm},
    {"layernorm", RUN_LAYERNORM, NULL, k_ln, 1, parse_layernorm},
    {"flatten", RUN_FLATTEN, NULL, k_none, 0, NULL},
    {"dropout", RUN_DROPOUT, NULL, k_drop, 0, parse_dropout},
    {"softmax", RUN_SOFTMAX, NULL, k_softmax, 0, parse_softmax},
    {"log_softmax", RUN_LOG_SOFTMAX, NULL, k_softmax, 0, parse_softmax},
    {"relu", RUN_ACTIVATION, "Relu", k_none, 0, NULL},
    {"gelu", RUN_ACTIVATION, "Gelu", k_none, 0, NULL},
    {"sigmoid", RUN_ACTIVATION, "Sigmoid", k_none, 0, NULL},
    {"tanh", RUN_ACTIVATION, "Tanh", k_none, 0, NULL},
    {"leaky_relu", RUN_ACTIVATION, "LeakyRelu", k_leaky, 0,
     parse_leaky_relu},
    /* keys checked by run/run_custom.c */
    {"custom", RUN_CUSTOM, NULL, NULL, 0, parse_custom},
    {"foreign", RUN_FOREIGN, NULL, NULL, 0, parse_foreign},
    /* its body layers carry the weights */
    {"loop", RUN_LOOP, NULL, k_loop, 0, parse_loop},
};
#define N_TYPES ((int)(sizeof types / sizeof types[0]))

static const layer_type *find_type(const char *name)
{
    for (int i = 0; i < N_TYPES; i++)
        if (strcmp(types[i].name, name) == 0)
            return &types[i];
    return NULL;
}

/* The placement keys, then the type's own. */
static popc_status parse_settings(lctx *c, popci_run_layer *L,
                                  const layer_type *t)
{
    popc_status st = parse_placement(c, L);

    if (st == POPC_OK && t->settings)
        st = t->settings(c, L);
    return st;
}

static popc_status parse_layer(popc_run *r, const char *name,
                               popci_run_layer *L, const layer_type **tp)
{
    char section[300], where[700];
    const char *tname = NULL;
    const layer_type *t;
    lctx c = {r, section};
    popc_status st;

    memset(L, 0, sizeof *L);
    if (!(L->name = popci_strdup(name)))
        return popc_set_error(POPC_ENOMEM, "out of memory");
    snprintf(section, sizeof section, "layer %s", name);
    L->has_section = popci_config_has_section(r->file, section);
    for (int i = 0; i < r->n_sets; i++)
        L->has_section |= strcasecmp(r->sets[i].section, section) == 0;
    if (!L->has_section) {
        t = find_type(name);
        if (!t || t->keys != k_none) {
            char types_list[512] = "";

            for (int i = 0; i < N_TYPES; i++)
                if (types[i].keys == k_none) {
                    strcat(types_list, i ? ", " : "");
                    strcat(types_list, types[i].name);
                }
            return popc_set_error(
                POPC_ECONFIG,
                "%s: layer '%s' has no [layer %s] section; add one with "
                "type = ..., or list a layer type that needs no settings "
                "(%s)",
                popci_run_where(r, "model", "layers", where, sizeof where),
                name, name, types_list + (types_list[0] == ',' ? 2 : 0));
        }
        L->kind = t->kind;
        L->type = t->name;
        L->op = t->op;
        *tp = t;
        return parse_settings(&c, L, t);
    }
    if ((st = lrequire(&c, "type")) != POPC_OK)
        return st;
    if ((st = popci_config_get_string(popci_run_src(r, section, "type"),
                                      section, "type", NULL, &tname)))
        return st;
    if (!(t = find_type(tname))) {
        const char *names[N_TYPES + 1];
        const char *close;
        char list[512] = "";

        for (int i = 0; i < N_TYPES; i++) {
            names[i] = types[i].name;
            if (i)
                strcat(list, ", ");
            strcat(list, types[i].name);
        }
        names[N_TYPES] = NULL;
        close = popci_closest_name(tname, names, N_TYPES);
        return popc_set_error(POPC_ECONFIG,
                              "%s: unknown layer type '%s'%s%s%s (valid "
                              "types: %s)",
                              popci_run_where(r, section, "type", where,
                                              sizeof where),
                              tname, close ? "; did you mean '" : "",
                              close ? close : "", close ? "'?" : "", list);
    }
    if (t->keys) {
        const char *allowed[32];
        int n = 0;

        for (int i = 0; t->keys[i] && n < 24; i++)
            allowed[n++] = t->keys[i];
        for (int i = 0; k_place[i]; i++)
            allowed[n++] = k_place[i];
        allowed[n] = NULL;
        if ((st = popci_run_check_keys(r, section, allowed)) != POPC_OK)
            return st;
    }
    L->kind = t->kind;
    L->type = t->name;
    L->op = t->op;
    *tp = t;
    return parse_settings(&c, L, t);
}

/* Split "a, b c" into names (malloc'd array of malloc'd strings). */
static popc_status split_names(const char *text, char ***names, int *n)
{
    const char *p = text;
    int cap = 0;

    *names = NULL;
    *n = 0;
    while (*p) {
        const char *start;
        char **grown;

        while (*p == ',' || *p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        start = p;
        while (*p && *p != ',' && *p != ' ' && *p != '\t')
            p++;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            if (!(grown = popci_realloc(*names, (size_t)cap * sizeof *grown)))
                return popc_set_error(POPC_ENOMEM, "out of memory");
            *names = grown;
        }
        if (!((*names)[*n] = popci_strndup(start, (size_t)(p - start))))
            return popc_set_error(POPC_ENOMEM, "out of memory");
        (*n)++;
    }
    return POPC_OK;
}

/* [layer NAME] body = A, B, ... of a loop: its layers join the run's
** body_layers. A body layer keeps its weights in the loop (its own
** section, not listed in [model] layers or another loop), takes no
** placement keys and is no loop itself. */
static popc_status parse_loop_body(popc_run *r, popci_run_layer *loop,
                                   char *const *listed, int n_listed)
{
    char section[300], where[700], **names = NULL;
    const char *text = NULL;
    popci_run_layer *grown;
    int n = 0;
    popc_status st;

    snprintf(section, sizeof section, "layer %s", loop->name);
    popci_run_where(r, section, "body", where, sizeof where);
    if ((st = popci_config_get_string(popci_run_src(r, section, "body"),
                                      section, "body", NULL, &text)) ||
        (st = split_names(text, &names, &n)))
        goto done;
    if (n == 0) {
        st = popc_set_error(POPC_ECONFIG, "%s: a loop needs its body "
                            "layers, e.g. body = fc2, relu", where);
        goto done;
    }
    if (!(grown = popci_realloc(r->body_layers,
                                sizeof *grown *
                                    (size_t)(r->n_body_layers + n)))) {
        st = popc_set_error(POPC_ENOMEM, "out of memory");
        goto done;
    }
    r->body_layers = grown;
    loop->body_first = r->n_body_layers;
    for (int i = 0; i < n; i++) {
        popci_run_layer *B = &r->body_layers[r->n_body_layers];
        const layer_type *t = NULL;
        int clash = 0;

        st = parse_layer(r, names[i], B, &t);
        r->n_body_layers++;
        if (st != POPC_OK)
            goto done;
        for (int k = 0; k < n_listed && t->weights; k++)
            clash |= strcmp(listed[k], names[i]) == 0;
        for (int k = 0; k < r->n_body_layers - 1 && t->weights; k++)
            clash |= strcmp(r->body_layers[k].name, names[i]) == 0;
        if (clash || B->kind == RUN_LOOP || B->ipu >= 0 || B->stage >= 0 ||
            B->phase >= 0 || B->block || B->recompute) {
            st = popc_set_error(
                POPC_ECONFIG, "%s: body layer '%s' %s", where, names[i],
                clash ? "is used elsewhere too; a layer with weights "
                        "belongs to one place, so give each use its own "
                        "section"
                : B->kind == RUN_LOOP
                    ? "is a loop; loops inside a loop body are not "
                      "supported yet"
                    : "has placement keys (ipu, stage, phase, block, "
                      "recompute), which are not supported yet inside a "
                      "loop body; place the loop layer instead");
            goto done;
        }
    }
    loop->body_n = n;
done:
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return st;
}

/* Every [layer NAME] section, in the file or an override, is listed. */
static popc_status check_unlisted(popc_run *r)
{
    char where[700];

    for (int pass = 0; pass <= r->n_sets; pass++) {
        const popci_config *src = pass ? r->sets[pass - 1].cfg : r->file;

        for (int i = 0; i < popci_config_n_sections(src); i++) {
            const char *s = popci_config_section(src, i);
            int listed = 0;

            if (strncasecmp(s, "layer ", 6) != 0)
                continue;
            for (int k = 0; k < r->n_layers; k++)
                listed |= r->layers[k].has_section &&
                          strcmp(r->layers[k].name, s + 6) == 0;
            for (int k = 0; k < r->n_body_layers; k++)
                listed |= r->body_layers[k].has_section &&
                          strcmp(r->body_layers[k].name, s + 6) == 0;
            if (listed)
                continue;
            snprintf(where, sizeof where, "%s:%d", popci_config_path(src),
                     popci_config_section_line(src, s));
            return popc_set_error(POPC_ECONFIG,
                                  "%s: [%s] is not used: add '%s' to [model] "
                                  "layers or remove the section",
                                  where, s, s + 6);
        }
    }
    return POPC_OK;
}

/* One [nodes PREFIX] section ("*": every node). */
static popc_status parse_nodes_section(popc_run *r, const char *section,
                                       popc_run_annotation *a)
{
    static const char *const keys[] = {"ipu", "stage", "phase", "recompute",
                                       "available_memory_proportion", NULL};
    int64_t ipu, stage, phase;
    int recompute;
    double mem;
    popc_status st;

#define SRC(k) popci_run_src(r, section, k)
    if ((st = popci_run_check_keys(r, section, keys)) ||
        (st = popci_config_get_int(SRC("ipu"), section, "ipu", -1, 0, 63,
                                   &ipu)) ||
        (st = popci_config_get_int(SRC("stage"), section, "stage", -1, 0,
                                   1 << 20, &stage)) ||
        (st = popci_config_get_int(SRC("phase"), section, "phase", -1, 0,
                                   1 << 20, &phase)) ||
        (st = popci_config_get_bool(SRC("recompute"), section, "recompute", 0,
                                    &recompute)) ||
        (st = popci_config_get_float(SRC("available_memory_proportion"),
                                     section, "available_memory_proportion",
                                     0.0, 1e-9, 1.0, &mem)))
        return st;
#undef SRC
    a->prefix = strcmp(section + 6, "*") == 0 ? "" : section + 6;
    a->annot = (popc_annotations){.ipu = (int)ipu, .stage = (int)stage,
                                  .phase = (int)phase,
                                  .recompute = recompute ? 1 : -1,
                                  .available_memory = mem};
    return POPC_OK;
}

/* The [nodes PREFIX] sections, in file order (later ones win). */
static popc_status parse_nodes(popc_run *r)
{
    int n = 0;
    popc_status st;

    for (int i = 0; i < popci_config_n_sections(r->file); i++)
        n += strncasecmp(popci_config_section(r->file, i), "nodes ", 6) == 0;
    if (!n)
        return POPC_OK;
    if (!(r->annots = popci_calloc((size_t)n, sizeof *r->annots)))
        return popc_set_error(POPC_ENOMEM, "out of memory");
    for (int i = 0; i < popci_config_n_sections(r->file); i++) {
        const char *s = popci_config_section(r->file, i);

        if (strncasecmp(s, "nodes ", 6) != 0)
            continue;
        if ((st = parse_nodes_section(r, s, &r->annots[r->n_annots])))
            return st;
        r->n_annots++;
    }
    return POPC_OK;
}

/* [model] onnx = FILE (relative to the run file), output, labels. */
static popc_status parse_model_file(popc_run *r)
{
    const char *output = NULL, *labels = NULL;
    char where[700];
    popc_status st;

    if (popci_run_has(r, "model", "layers"))
        return popc_set_error(POPC_ECONFIG,
                              "%s: give either layers or onnx, not both",
                              popci_run_where(r, "model", "onnx", where,
                                              sizeof where));
    if ((st = popci_run_path(r, "model", "onnx", 1, NULL, &r->model_file)) ||
        (st = popci_config_get_string(popci_run_src(r, "model", "output"),
                                      "model", "output", NULL, &output)) ||
        (st = popci_config_get_string(popci_run_src(r, "model", "labels"),
                                      "model", "labels", "labels", &labels)))
        return st;
    if ((output && !(r->model_output = popci_strdup(output))) ||
        !(r->labels_name = popci_strdup(labels)))
        return popc_set_error(POPC_ENOMEM, "out of memory");
    if ((st = parse_nodes(r)) != POPC_OK)
        return st;
    return check_unlisted(r);
}

popc_status popci_run_parse_model(popc_run *r)
{
    static const char *const losses[] = {"cross_entropy", "nll", NULL};
    const char *text = NULL;
    char **names = NULL, where[700];
    int n = 0;
    int64_t seed = 0;
    popc_status st;

#define SRC(k) popci_run_src(r, "model", k)
    if ((st = popci_run_check_keys(r, "model", model_keys)) ||
        (st = popci_config_require(SRC("input"), "model", "input")) ||
        (st = popci_config_get_int_list(SRC("input"), "model", "input", 1,
                                        1 << 30, r->input, POPC_MAX_RANK - 1,
                                        &r->input_rank)) ||
        (st = popci_config_require(SRC("classes"), "model", "classes")) ||
        (st = popci_config_get_int(SRC("classes"), "model", "classes", 0, 2,
                                   1 << 24, &r->classes)) ||
        (st = popci_config_get_enum(SRC("loss"), "model", "loss", losses, 0,
                                    &r->loss)) ||
        (st = popci_config_get_int(SRC("seed"), "model", "seed", 0, 0,
                                   INT64_MAX, &seed)) ||
        (st = popci_config_get_enum(SRC("input_overlap"), "model",
                                    "input_overlap", overlap_modes, 0,
                                    &r->input_overlap)) ||
        (st = popci_config_get_enum(SRC("output_overlap"), "model",
                                    "output_overlap", overlap_modes, 0,
                                    &r->output_overlap)) ||
        (st = popci_config_get_bool(SRC("remove_blocks"), "model",
                                    "remove_blocks", 0,
                                    &r->remove_blocks)) ||
        (st = parse_half(r)))
        return st;
    r->model_seed = (uint64_t)seed;
    if (popci_run_has(r, "model", "onnx") && r->input_overlap)
        return popc_set_error(POPC_ECONFIG, "%s: overlapping the input of "
                              "an ONNX model ([model] onnx) is not supported "
                              "yet; use it with a model of layers",
                              popci_run_where(r, "model", "input_overlap",
                                              where, sizeof where));
    if (popci_run_has(r, "model", "onnx"))
        return parse_model_file(r);
    for (int i = 0; i < popci_config_n_sections(r->file); i++) {
        const char *s = popci_config_section(r->file, i);

        if (strncasecmp(s, "nodes ", 6) == 0) {
            snprintf(where, sizeof where, "%s:%d", r->path,
                     popci_config_section_line(r->file, s));
            return popc_set_error(POPC_ECONFIG,
                                  "%s: [%s] places the nodes of an ONNX "
                                  "model ([model] onnx); layers take ipu, "
                                  "stage, phase and recompute in their "
                                  "[layer NAME] section",
                                  where, s);
        }
    }
    if (popci_run_has(r, "model", "output") ||
        popci_run_has(r, "model", "labels"))
        return popc_set_error(POPC_ECONFIG,
                              "%s: output and labels name values of an "
                              "ONNX model ([model] onnx); a model of layers "
                              "has one output and its labels input",
                              popci_run_where(r, "model",
                                              popci_run_has(r, "model",
                                                            "output")
                                                  ? "output"
                                                  : "labels",
                                              where, sizeof where));
    if ((st = popci_config_require(SRC("layers"), "model", "layers")) ||
        (st = popci_config_get_string(SRC("layers"), "model", "layers", NULL,
                                      &text)))
        return st;
#undef SRC
    if (r->input_rank == 0)
        return popc_set_error(POPC_ECONFIG,
                              "%s: give the shape of one sample, e.g. "
                              "input = 784 or input = 1, 28, 28",
                              popci_run_where(r, "model", "input", where,
                                              sizeof where));
    if ((st = split_names(text, &names, &n)) != POPC_OK)
        goto done;
    if (n == 0) {
        st = popc_set_error(POPC_ECONFIG, "%s: no layers listed",
                            popci_run_where(r, "model", "layers", where,
                                            sizeof where));
        goto done;
    }
    if (!(r->layers = popci_calloc((size_t)n, sizeof *r->layers))) {
        st = popc_set_error(POPC_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        const layer_type *t = NULL;

        st = parse_layer(r, names[i], &r->layers[i], &t);
        r->n_layers++;
        if (st == POPC_OK && r->layers[i].kind == RUN_LOOP)
            st = parse_loop_body(r, &r->layers[i], names, n);
        if (st != POPC_OK)
            goto done;
        for (int k = 0; k < i && t->weights; k++)
            if (strcmp(names[k], names[i]) == 0) {
                st = popc_set_error(
                    POPC_ECONFIG,
                    "%s: layer '%s' is listed twice; a %s layer has its own "
                    "weights, so give each use its own section",
                    popci_run_where(r, "model", "layers", where,
                                    sizeof where),
                    names[i], t->name);
                goto done;
            }
    }
    st = check_unlisted(r);
done:
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return st;
}

/* ---- building ----------------------------------------------------------- */

static const char *shape_str(popc_view v, char *buf, size_t size)
{
    size_t off = (size_t)snprintf(buf, size, "[");

    for (int i = 0; i < v.rank && off < size; i++)
        off += (size_t)snprintf(buf + off, size - off, "%s%lld",
                                i ? ", " : "", (long long)v.dims[i]);
    if (off < size)
        snprintf(buf + off, size - off, "]");
    return buf;
}

static const char *layer_where(const popc_run *r, const popci_run_layer *L,
                               char *buf, size_t size)
{
    char section[300];

    if (!L->has_section) {
        char w[600];

        snprintf(buf, size, "%s (%s)",
                 popci_run_where(r, "model", "layers", w, sizeof w),
                 L->name);
        return buf;
    }
    snprintf(section, sizeof section, "layer %s", L->name);
    return popci_run_where(r, section, "type", buf, size);
}

/* [layer] serialize: the Gemm or MatMul of the linear layer giving y (a
** MatMul then Add for inputs of rank above 2, popc/layers.h). */
static popc_status serialize_linear(popc_graph *g, const popci_run_layer *L,
                                    int y)
{
    int node = popc_graph_value_producer(g, y);

    if (node >= 0 && strcmp(popc_graph_node_op(g, node), "Add") == 0)
        node = popc_graph_value_producer(g, popc_graph_node_input(g, node, 0));
    return popc_serialize_matmul_node(g, node,
                                      (popc_matmul_serialization)L->serialize,
                                      L->serialize_factor, L->keep_precision);
}

static popc_status add_layer(const popc_run *r, popc_graph *g,
                             popc_layers *B, const popci_run_layer *L, int x,
                             int *y);

/* A loop layer: its body layers built into a graph of their own, run
** count times on the device (popc_for_loop); their weights become
** "<loop>/<weight>" of g. */
static popc_status add_loop(const popc_run *r, popc_graph *g,
                            const popci_run_layer *L, int x, int *y)
{
    popc_view v = popc_graph_value_info(g, x);
    popc_graph *body = NULL;
    popc_layers *BB = NULL;
    int bv;
    popc_status st;

    if ((st = popc_graph_new(L->name, &body)) ||
        (st = popc_graph_add_input(body, "x", v.dtype, v.dims, v.rank,
                                   &bv)) ||
        (st = popc_layers_new(body, r->model_seed, &BB)))
        goto done;
    for (int i = 0; i < L->body_n; i++)
        if ((st = add_layer(r, body, BB, &r->body_layers[L->body_first + i],
                            bv, &bv)) != POPC_OK)
            goto done;
    if ((st = popc_graph_add_output(body, bv)) == POPC_OK)
        st = popc_for_loop(g, L->name, L->count, body, &x, 1, y);
done:
    popc_layers_free(BB);
    popc_graph_free(body);
    return st;
}

static popc_status add_layer(const popc_run *r, popc_graph *g,
                             popc_layers *B, const popci_run_layer *L, int x,
                             int *y)
{
    popc_view v = popc_graph_value_info(g, x);
    char where[700], shape[128];
    popc_status st;

    if ((L->kind == RUN_CONV2D || L->kind == RUN_MAXPOOL2D ||
         L->kind == RUN_AVGPOOL2D || L->kind == RUN_GLOBAL_AVGPOOL ||
         L->kind == RUN_BATCHNORM2D) &&
        v.rank != 4)
        return popc_set_error(POPC_ECONFIG,
                              "%s: a %s layer needs [batch, channels, "
                              "height, width] input but gets %s; give "
                              "[model] input as channels, height, width "
                              "(e.g. 1, 28, 28) and keep flatten after the "
                              "convolutions",
                              layer_where(r, L, where, sizeof where),
                              L->type, shape_str(v, shape, sizeof shape));
    switch (L->kind) {
    case RUN_LINEAR:
        st = popc_nn_linear(B, L->name, x, v.dims[v.rank - 1], L->out,
                            L->bias, y);
        if (st == POPC_OK && L->serialize)
            st = serialize_linear(g, L, *y);
        break;
    case RUN_CONV2D:
        st = popc_nn_conv2d(B, L->name, x, v.dims[1], L->out, L->kernel,
                            L->stride, L->padding, L->dilation, L->groups,
                            L->bias, y);
        break;
    case RUN_MAXPOOL2D:
        st = popc_nn_maxpool2d(B, x, L->kernel, L->stride, L->padding, y);
        break;
    case RUN_AVGPOOL2D:
        st = popc_nn_avgpool2d(B, x, L->kernel, L->stride, L->padding, y);
        break;
    case RUN_GLOBAL_AVGPOOL:
        st = popc_nn_global_avgpool(B, x, y);
        break;
    case RUN_BATCHNORM2D:
        st = popc_nn_batchnorm2d(B, L->name, x, v.dims[1], L->eps,
                                 L->momentum, y);
        break;
    case RUN_LAYERNORM:
        st = popc_nn_layernorm(B, L->name, x, v.dims[v.rank - 1], L->eps, y);
        break;
    case RUN_FLATTEN:
        st = popc_nn_flatten(B, x, 1, y);
        break;
    case RUN_DROPOUT:
        st = popc_nn_dropout(B, x, L->p, y);
        break;
    case RUN_SOFTMAX:
    case RUN_LOG_SOFTMAX:
        st = popc_nn_softmax(B, x, L->axis, L->kind == RUN_LOG_SOFTMAX, y);
        break;
    case RUN_CUSTOM:
    case RUN_FOREIGN: {
        char section[300];

        snprintf(section, sizeof section, "layer %s", L->name);
        st = popci_run_add_custom(r, g, section, L->kind == RUN_FOREIGN, x,
                                  y);
        break;
    }
    case RUN_LOOP:
        st = add_loop(r, g, L, x, y);
        break;
    default:
        st = popc_nn_activation(B, L->op, x, L->alpha, y);
        break;
    }
    if (st != POPC_OK)
        return popc_set_error(POPC_ECONFIG, "%s: input %s: %s",
                              layer_where(r, L, where, sizeof where),
                              shape_str(v, shape, sizeof shape),
                              popc_last_error());
    return POPC_OK;
}

/* The graph of [model] onnx and the value its loss reads, checked
** against [model] input. */
static popc_status read_model_file(const popc_run *r, int training,
                                   int64_t batch_size, const int64_t *dims,
                                   popc_graph **g, int *v)
{
    const popc_run_model_format *fmt;
    popc_view in;
    char where[700], shape[128], want[128];
    popc_view want_view = {.rank = r->input_rank + 1};
    popc_status st;

    if ((st = popci_run_need_format(r, "model", "onnx", &fmt)) != POPC_OK)
        return st;
    /* a setting the file does not fit (EINVAL) is the run's to fix */
    if ((st = fmt->read(r->model_file, batch_size, training,
                        r->model_output,
                        r->annots, r->n_annots, g, v)) != POPC_OK)
        return popc_set_error(st == POPC_EINVAL ? POPC_ECONFIG : st, "%s: %s",
                              popci_run_where(r, "model", "onnx", where,
                                              sizeof where),
                              popc_last_error());
    if (popc_graph_n_inputs(*g) != 1)
        return popc_set_error(POPC_ECONFIG,
                              "%s: the model has %d inputs; a run feeds one "
                              "(the data)",
                              popci_run_where(r, "model", "onnx", where,
                                              sizeof where),
                              popc_graph_n_inputs(*g));
    in = popc_graph_value_info(*g, popc_graph_input(*g, 0));
    memcpy(want_view.dims, dims, (size_t)want_view.rank * sizeof *dims);
    /* float32 features, or int32/int64 ones (token ids) unchanged */
    if ((in.dtype != POPC_DTYPE_F32 && in.dtype != POPC_DTYPE_I32 &&
         in.dtype != POPC_DTYPE_I64) ||
        in.rank != want_view.rank ||
        memcmp(in.dims, dims, (size_t)in.rank * sizeof *dims) != 0)
        return popc_set_error(POPC_ECONFIG,
                              "%s: the model's input '%s' is %s %s, but the "
                              "data gives %s %s (batch_size, then [model] "
                              "input)",
                              popci_run_where(r, "model", "input", where,
                                              sizeof where),
                              popc_graph_value_name(*g,
                                                    popc_graph_input(*g, 0)),
                              popc_dtype_name(in.dtype),
                              shape_str(in, shape, sizeof shape),
                              in.dtype == POPC_DTYPE_I32 ||
                                      in.dtype == POPC_DTYPE_I64
                                  ? popc_dtype_name(in.dtype)
                                  : "float32",
                              shape_str(want_view, want, sizeof want));
    return POPC_OK;
}

/* [model] half = true | false | PREFIX,...: model.half() of the whole
** model or of the weights named (popc/precision.h). */
static popc_status parse_half(popc_run *r)
{
    const char *text = NULL;
    popc_status st;

    if ((st = popci_config_get_string(popci_run_src(r, "model", "half"),
                                      "model", "half", NULL, &text)) !=
            POPC_OK ||
        !text || strcasecmp(text, "false") == 0)
        return st;
    r->half = 1;
    if (strcasecmp(text, "true") != 0 &&
        !(r->half_prefixes = popci_strdup(text)))
        return popc_set_error(POPC_ENOMEM, "out of memory");
    return POPC_OK;
}

/* model.half() with the run's Precision options. */
static popc_status make_half(const popc_run *r, popc_graph **g)
{
    popc_graph *h = NULL;
    popc_status st;

    if (!r->half)
        return POPC_OK;
    if ((st = popc_graph_to_half(*g, r->half_prefixes, r->opts, &h)) !=
        POPC_OK)
        return st;
    popc_graph_free(*g);
    *g = h;
    return POPC_OK;
}

popc_status popc_run_build_graph(const popc_run *r, int training,
                                 int64_t batch_size, popc_graph **out)
{
    popc_graph *g = NULL;
    popc_layers *B = NULL;
    popc_registry *reg = NULL;
    int64_t dims[POPC_MAX_RANK];
    int x, labels, v, loss;
    popc_annotations place = {NULL, NULL, -1, -1, -1, -1, 0.0};
    popc_view info;
    char where[700], shape[128];
    popc_status st;

    *out = NULL;
    if (batch_size < 1)
        return popc_set_error(POPC_EINVAL, "popc_run_build_graph: "
                                           "batch_size must be >= 1");
    /* shapes are inferred as layers are added: the ops must be loaded */
    if ((st = popc_registry_global(&reg)) != POPC_OK)
        return st;
    dims[0] = batch_size;
    memcpy(dims + 1, r->input, (size_t)r->input_rank * sizeof *dims);
    if (r->model_file) {
        if ((st = read_model_file(r, training, batch_size, dims, &g, &v)) ||
            (st = popc_layers_new(g, r->model_seed, &B)))
            goto fail;
        /* the loss goes where the output it reads is computed, as a
        ** PopTorch loss joins the last block */
        if (r->n_annots > 0 && popc_graph_value_producer(g, v) >= 0) {
            place = popc_graph_node_annotations(
                g, popc_graph_value_producer(g, v));
            place.recompute = -1;
            if ((st = popc_graph_set_annotations(g, &place)) != POPC_OK)
                goto fail;
        }
    } else if ((st = popc_graph_new(r->name, &g)) ||
               (st = popc_graph_set_origin(g, r->path)) ||
               (st = popc_graph_add_input(g, "x", POPC_DTYPE_F32, dims,
                                          r->input_rank + 1, &x)) ||
               (st = popc_layers_new(g, r->model_seed, &B)) ||
               (st = popc_set_overlap_for_input(
                    g, x, (popc_overlap_mode)r->input_overlap, &v))) {
        goto fail;
    }
    for (int i = 0; !r->model_file && i < r->n_layers; i++) {
        const popci_run_layer *L = &r->layers[i];

        /* placement keys hold for the layers that follow, as BeginBlock;
        ** recompute only for the layer that asks */
        if (L->ipu >= 0 || L->stage >= 0 || L->phase >= 0 || L->block ||
            L->recompute) {
            place = (popc_annotations){.block = L->block, .ipu = L->ipu,
                                       .stage = L->stage, .phase = L->phase,
                                       .recompute = L->recompute ? 1 : -1};
            if ((st = popc_graph_set_annotations(g, &place)) != POPC_OK)
                goto fail;
        }
        if ((st = add_layer(r, g, B, L, v, &v)) != POPC_OK)
            goto fail;
        if (L->recompute) {
            place.recompute = -1;
            if ((st = popc_graph_set_annotations(g, &place)) != POPC_OK)
                goto fail;
        }
    }
    info = popc_graph_value_info(g, v);
    if (info.rank != 2 || info.dims[0] != batch_size ||
        info.dims[1] != r->classes) {
        st = popc_set_error(POPC_ECONFIG,
                            "%s: the last layer gives %s but %lld classes "
                            "need [%lld, %lld]: make the last layer produce "
                            "%lld features (and flatten before it)",
                            popci_run_where(r, "model", "classes", where,
                                            sizeof where),
                            shape_str(info, shape, sizeof shape),
                            (long long)r->classes, (long long)batch_size,
                            (long long)r->classes, (long long)r->classes);
        goto fail;
    }
    if (training) {
        if ((st = popc_graph_add_input(g,
                                       r->labels_name ? r->labels_name
                                                      : "labels",
                                       POPC_DTYPE_I32, dims, 1, &labels)))
            goto fail;
        st = r->loss == 1
                 ? popc_nn_nll_loss(B, v, labels, "mean", &loss)
                 : popc_nn_cross_entropy(B, v, labels, "mean", &loss);
        if (st != POPC_OK) {
            st = popc_set_error(POPC_ECONFIG, "%s: %s",
                                popci_run_where(r, "model", "loss", where,
                                                sizeof where),
                                popc_last_error());
            goto fail;
        }
        v = loss;
    }
    if ((st = popc_set_overlap_for_output(
             g, v, (popc_overlap_mode)r->output_overlap, &v)) != POPC_OK ||
        (st = popc_graph_add_output(g, v)) != POPC_OK ||
        (r->remove_blocks && (st = popc_remove_blocks(g)) != POPC_OK) ||
        (st = make_half(r, &g)) != POPC_OK)
        goto fail;
    popc_layers_free(B);
    *out = g;
    return POPC_OK;
fail:
    popc_layers_free(B);
    popc_graph_free(g);
    return st;
}
