/* custom_op.c - graph builders for plugin ops: poptorch.custom_op with
** PopTorch's attribute rules, CPU ops (popc::HostOp) and foreign C calls
** (popc::ForeignCall).
**
** Every builder checks its arguments and resolves the op in the registry
** before it touches the graph, so a failing call leaves the graph as it
** was. The ops themselves live in plugins (ops/host, ops/ffi, third-party
** modules); this layer only knows their names and attributes, and adds
** their nodes through the core's layer interface (core/layer/graph.h).
*/
#include "config.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/custom.h"
#include "popc/registry.h"
#include "core/layer/alloc.h"
#include "core/layer/graph.h"

#define VALUES_TEXT                                                         \
    "Attribute values must be floats, ints, strings or a list/tuple of "   \
    "float, ints of strings."
#define SAME_TEXT "The types in a list/tuple attribute must all be the same."
#define KEYS_TEXT "All attribute keys must be strings."

/* ---- attributes ----------------------------------------------------------- */

/* popc_attr array with the list storage it points to. */
typedef struct attr_set {
    popc_attr *a;
    int n;
    void **mem;
    int n_mem;
} attr_set;

static void attr_set_free(attr_set *s)
{
    for (int i = 0; i < s->n_mem; i++)
        free(s->mem[i]);
    free(s->mem);
    free(s->a);
    memset(s, 0, sizeof *s);
}

/* n bytes owned by s; NULL on failure (s keeps nothing). */
static void *attr_alloc(attr_set *s, size_t n)
{
    void *p = popci_calloc(1, n ? n : 1);

    if (!p)
        return NULL;
    s->mem[s->n_mem++] = p;
    return p;
}

static int is_ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s > 0x7f)
            return 0;
    return 1;
}

/* PopART keeps float attributes as float32. */
static popc_status float_value(double v, double *out)
{
    if (v < -FLT_MAX)
        return popc_set_error(POPC_EINVAL, "%g is too low for a Popart float "
                              "attribute.", v);
    if (v > FLT_MAX)
        return popc_set_error(POPC_EINVAL, "%g is too high for a Popart "
                              "float attribute.", v);
    *out = (double)(float)v;
    return POPC_OK;
}

static popc_status string_value(const char *s)
{
    if (!s)
        return popc_set_error(POPC_EINVAL, VALUES_TEXT " (a string value is "
                              "NULL)");
    if (!is_ascii(s))
        return popc_set_error(POPC_EINVAL, "%s contains non-ASCII "
                              "characters.", s);
    return POPC_OK;
}

/* A list given as items (POPC_CUSTOM_LIST) or as a typed array, into x. */
static popc_status list_value(attr_set *s, const popc_custom_value *v,
                              popc_attr *x)
{
    popc_custom_type t = v->type;
    int n = v->n;
    popc_status st;

    if (n < 0 || (n > 0 && ((t == POPC_CUSTOM_LIST && !v->items) ||
                            (t == POPC_CUSTOM_FLOATS && !v->floats) ||
                            (t == POPC_CUSTOM_INTS && !v->ints) ||
                            (t == POPC_CUSTOM_STRINGS && !v->strings))))
        return popc_set_error(POPC_EINVAL, VALUES_TEXT " (a list has %d "
                              "elements and %s)", n,
                              n < 0 ? "a negative length" : "no array");
    if (t == POPC_CUSTOM_LIST) {
        /* the element type of an empty list is unknown */
        if (n == 0)
            return popc_set_error(POPC_EINVAL, VALUES_TEXT " (an empty list "
                                  "has no element type: give an empty "
                                  "POPC_CUSTOM_FLOATS, INTS or STRINGS)");
        t = v->items[0].type;
        if (t != POPC_CUSTOM_FLOAT && t != POPC_CUSTOM_INT &&
            t != POPC_CUSTOM_STRING)
            return popc_set_error(POPC_EINVAL, VALUES_TEXT " (list element "
                                  "0 is not a float, int or string)");
        for (int i = 1; i < n; i++)
            if (v->items[i].type != t)
                return popc_set_error(POPC_EINVAL, SAME_TEXT " (element %d "
                                      "differs from element 0)", i);
        t = t == POPC_CUSTOM_FLOAT ? POPC_CUSTOM_FLOATS
            : t == POPC_CUSTOM_INT ? POPC_CUSTOM_INTS
                                   : POPC_CUSTOM_STRINGS;
    }
    x->n = n;
    if (t == POPC_CUSTOM_FLOATS) {
        double *f = attr_alloc(s, sizeof *f * (size_t)n);
        if (!f)
            return popc_set_error(POPC_ENOMEM, "custom_op: out of memory");
        for (int i = 0; i < n; i++)
            if ((st = float_value(v->type == POPC_CUSTOM_LIST
                                      ? v->items[i].f : v->floats[i],
                                  &f[i])) != POPC_OK)
                return st;
        x->type = POPC_ATTR_FLOATS;
        x->floats = f;
    } else if (t == POPC_CUSTOM_INTS) {
        int64_t *k = attr_alloc(s, sizeof *k * (size_t)n);
        if (!k)
            return popc_set_error(POPC_ENOMEM, "custom_op: out of memory");
        for (int i = 0; i < n; i++)
            k[i] = v->type == POPC_CUSTOM_LIST ? v->items[i].i : v->ints[i];
        x->type = POPC_ATTR_INTS;
        x->ints = k;
    } else {
        const char **str = attr_alloc(s, sizeof *str * (size_t)n);
        if (!str)
            return popc_set_error(POPC_ENOMEM, "custom_op: out of memory");
        for (int i = 0; i < n; i++) {
            str[i] = v->type == POPC_CUSTOM_LIST ? v->items[i].s
                                                 : v->strings[i];
            if ((st = string_value(str[i])) != POPC_OK)
                return st;
        }
        x->type = POPC_ATTR_STRINGS;
        x->strings = str;
    }
    return POPC_OK;
}

static popc_status convert_one(attr_set *s, const popc_custom_attr *c,
                               popc_attr *x)
{
    popc_status st;

    memset(x, 0, sizeof *x);
    x->name = c->key;
    switch (c->value.type) {
    case POPC_CUSTOM_FLOAT:
        x->type = POPC_ATTR_FLOAT;
        return float_value(c->value.f, &x->f);
    case POPC_CUSTOM_INT:
        x->type = POPC_ATTR_INT;
        x->i = c->value.i;
        return POPC_OK;
    case POPC_CUSTOM_STRING:
        if ((st = string_value(c->value.s)) != POPC_OK)
            return st;
        x->type = POPC_ATTR_STRING;
        x->s = c->value.s;
        return POPC_OK;
    case POPC_CUSTOM_LIST:
    case POPC_CUSTOM_FLOATS:
    case POPC_CUSTOM_INTS:
    case POPC_CUSTOM_STRINGS:
        return list_value(s, &c->value, x);
    default:
        return popc_set_error(POPC_EINVAL, VALUES_TEXT " (type code %d)",
                              (int)c->value.type);
    }
}

/* PopTorch's checks (poptorch.custom_op's) on every attribute, then the
** graph's representation. Strings are borrowed from attrs: the graph
** copies them when the node is added. */
static popc_status convert_attrs(const char *domain, const char *name,
                                 const popc_custom_attr *attrs, int n,
                                 attr_set *s)
{
    popc_status st;

    memset(s, 0, sizeof *s);
    if (n < 0 || (n > 0 && !attrs))
        return popc_set_error(POPC_EINVAL, "custom op %s::%s: %d attributes "
                              "but %s", domain, name, n,
                              n < 0 ? "a negative count" : "attrs is NULL");
    if (n == 0)
        return POPC_OK;
    if (!(s->a = popci_calloc((size_t)n, sizeof *s->a)) ||
        !(s->mem = popci_calloc((size_t)n, sizeof *s->mem))) {
        attr_set_free(s);
        return popc_set_error(POPC_ENOMEM, "custom_op: out of memory");
    }
    for (int i = 0; i < n; i++) {
        const char *key = attrs[i].key;

        if (!key) {
            st = popc_set_error(POPC_EINVAL, KEYS_TEXT " (custom op %s::%s: "
                                "attribute %d has a NULL key)", domain, name,
                                i);
            goto fail;
        }
        if (!is_ascii(key)) {
            st = popc_set_error(POPC_EINVAL, "%s contains non-ASCII "
                                "characters.", key);
            goto fail;
        }
        if (!key[0]) {
            st = popc_set_error(POPC_EINVAL, "custom op %s::%s: attribute %d "
                                "has an empty key", domain, name, i);
            goto fail;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(attrs[j].key, key) == 0) {
                st = popc_set_error(POPC_EINVAL, "custom op %s::%s: "
                                    "attribute '%s' is given twice", domain,
                                    name, key);
                goto fail;
            }
        if ((st = convert_one(s, &attrs[i], &s->a[i])) != POPC_OK) {
            /* PopTorch's text first, then where */
            st = popc_set_error(st, "%s (custom op %s::%s, attribute '%s')",
                                popc_last_error(), domain, name, key);
            goto fail;
        }
        s->n++;
    }
    return POPC_OK;
fail:
    attr_set_free(s);
    return st;
}

/* ---- helpers ------------------------------------------------------------------ */

static popc_status check_inputs(const popc_graph *g, const char *who,
                                const int *inputs, int n)
{
    if (n < 0 || (n > 0 && !inputs))
        return popc_set_error(POPC_EINVAL, "%s: %d inputs but %s", who, n,
                              n < 0 ? "a negative count" : "inputs is NULL");
    for (int i = 0; i < n; i++)
        if (inputs[i] < -1 || inputs[i] >= popc_graph_n_values(g))
            return popc_set_error(POPC_EINVAL, "%s: input %d is value id %d, "
                                  "which graph '%s' does not have", who, i,
                                  inputs[i], popc_graph_name(g));
    return POPC_OK;
}

static popc_status not_loaded(popc_registry *reg, const char *domain,
                              const char *op, int version, const char *how)
{
    char loaded[512] = "";
    size_t len = 0;

    for (int i = 0; i < popc_registry_op_count(reg); i++) {
        const popc_op_def *d = popc_registry_op_at(reg, i);

        if (d && strcmp(d->domain, domain) == 0 && strcmp(d->name, op) == 0 &&
            len < sizeof loaded)
            len += (size_t)snprintf(loaded + len, sizeof loaded - len,
                                    "%s%d", len ? ", " : "",
                                    d->since_version);
    }
    return popc_set_error(POPC_ENOTFOUND,
                          "op %s::%s version %d is not registered: %s%s%s. "
                          "%s: put the directory of the plugin that "
                          "provides it in POPC_PLUGIN_PATH (or call "
                          "popc_registry_load_path()); `popc plugins` "
                          "lists what is loaded%s%s",
                          domain, op, version,
                          loaded[0] ? "the loaded plugins provide only "
                                      "versions "
                                    : "no loaded plugin provides it",
                          loaded, loaded[0] ? " (a version <= the one asked "
                                              "for is used)" : "",
                          how, *popc_registry_problems(reg)
                                   ? "; refused plugins: " : "",
                          popc_registry_problems(reg));
}

static popc_status find_def(const char *domain, const char *op, int version,
                            const char *how, const popc_op_def **out)
{
    popc_registry *reg = NULL;
    popc_status st;

    *out = NULL;
    if ((st = popc_registry_global(&reg)) != POPC_OK)
        return st;
    if (!(*out = popc_registry_find_op(reg, domain, op, version)))
        return not_loaded(reg, domain, op, version, how);
    return POPC_OK;
}

static int view_ok(const popc_view *v)
{
    if (!popc_dtype_size(v->dtype) || v->rank < 0 || v->rank > POPC_MAX_RANK)
        return 0;
    for (int d = 0; d < v->rank; d++)
        if (v->dims[d] < 0)
            return 0;
    return 1;
}

/* ---- poptorch.custom_op ---------------------------------------------------- */

/* What the op infers, against the examples (when the inputs are known). */
static popc_status check_examples(const popc_graph *g, const popc_op_def *def,
                                  const int *inputs, int n_inputs,
                                  const popc_view *ex, int n_outputs,
                                  const attr_set *as)
{
    popc_view *in = popci_calloc((size_t)n_inputs + 1, sizeof *in);
    popc_view *outs = popci_calloc((size_t)n_outputs + 1, sizeof *outs);
    popc_attrs av = POPC_ATTRS(as->n, as->a);
    char who[300], a[128], b[128];
    int ready = 0;
    popc_status st = POPC_OK;

    if (!in || !outs) {
        st = popc_set_error(POPC_ENOMEM, "custom_op: out of memory");
        goto done;
    }
    snprintf(who, sizeof who, "%s::%s", def->domain, def->name);
    popci_graph_input_views(g, inputs, n_inputs, in, &ready);
    if (!ready || n_inputs < def->min_inputs ||
        (def->max_inputs >= 0 && n_inputs > def->max_inputs) ||
        n_outputs < def->min_outputs ||
        (def->max_outputs >= 0 && n_outputs > def->max_outputs))
        goto done; /* the graph reports arity; unknown shapes wait */
    /* an op that refuses its inputs is reported by the graph, which
    ** names the node */
    if (popci_infer_run(def, who, in, n_inputs, outs, n_outputs, &av, 0) !=
        POPC_OK)
        goto done;
    for (int j = 0; j < n_outputs; j++) {
        popc_view want = ex[j];

        if (want.dtype == POPC_DTYPE_UNDEFINED)
            continue;
        want.data = NULL;
        if (view_ok(&want) && popci_view_same(&want, &outs[j]))
            continue;
        st = popc_set_error(POPC_EINVAL, "custom op %s: output %d is %s by "
                            "the op's shape inference but example_outputs[%d]"
                            " is %s; make the example match what the op "
                            "returns (or fix the plugin's infer())", who, j,
                            popc_view_describe(&outs[j], a, sizeof a), j,
                            popc_view_describe(&want, b, sizeof b));
        goto done;
    }
done:
    free(in);
    free(outs);
    return st;
}

popc_status popc_custom_op(popc_graph *g, const int *inputs, int n_inputs,
                           const char *name, const char *domain,
                           int domain_version,
                           const popc_view *example_outputs, int n_outputs,
                           const popc_custom_attr *attrs, int n_attrs,
                           int *outputs)
{
    const popc_op_def *def;
    attr_set as;
    popc_status st;

    for (int i = 0; outputs && i < n_outputs; i++)
        outputs[i] = -1;
    if (!g || !name || !name[0] || !domain || !domain[0])
        return popc_set_error(POPC_EINVAL, "popc_custom_op: %s is NULL or "
                              "empty", !g ? "graph" : !name || !name[0]
                                                          ? "name"
                                                          : "domain");
    if (domain_version < 1)
        return popc_set_error(POPC_EINVAL, "custom op %s::%s: domain_version "
                              "%d; versions start at 1", domain, name,
                              domain_version);
    if (n_outputs < 0 || (n_outputs > 0 && !outputs))
        return popc_set_error(POPC_EINVAL, "custom op %s::%s: %d outputs but "
                              "%s", domain, name, n_outputs,
                              n_outputs < 0 ? "a negative count"
                                            : "outputs is NULL");
    if ((st = check_inputs(g, "popc_custom_op", inputs, n_inputs)) != POPC_OK)
        return st;
    if ((st = convert_attrs(domain, name, attrs, n_attrs, &as)) != POPC_OK)
        return st;
    if ((st = find_def(domain, name, domain_version, "Custom ops come from "
                       "op plugins", &def)) != POPC_OK)
        goto done;
    if (example_outputs &&
        (st = check_examples(g, def, inputs, n_inputs, example_outputs,
                             n_outputs, &as)) != POPC_OK)
        goto done;
    st = popc_graph_add_node(g, domain, name, domain_version, inputs,
                             n_inputs, outputs, n_outputs, as.a, as.n, NULL,
                             NULL);
done:
    attr_set_free(&as);
    return st;
}

/* ---- CPU ops ------------------------------------------------------------------ */

popc_status popc_cpu_op(popc_graph *g, const char *id, const int *inputs,
                        int n, const popc_view *output_infos, int n_out,
                        int *outputs)
{
    const popc_op_def *def;
    int64_t *dtypes = NULL, *shapes = NULL, batch = -1;
    int n_shape = 0;
    popc_attr at[4];
    popc_status st;

    for (int i = 0; outputs && i < n_out; i++)
        outputs[i] = -1;
    if (!g || !id || !id[0])
        return popc_set_error(POPC_EINVAL, "popc_cpu_op: %s is NULL or empty",
                              !g ? "graph" : "id");
    for (const char *p = id; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            return popc_set_error(POPC_EINVAL, "popc_cpu_op: the ID must be "
                                  "printable ASCII");
    if (n_out < 0 || (n_out > 0 && (!output_infos || !outputs)))
        return popc_set_error(POPC_EINVAL, "CPU op '%s': %d outputs but %s",
                              id, n_out, n_out < 0 ? "a negative count"
                                         : !output_infos ? "output_infos is "
                                                           "NULL"
                                                         : "outputs is NULL");
    if ((st = check_inputs(g, "popc_cpu_op", inputs, n)) != POPC_OK)
        return st;
    for (int j = 0; j < n_out; j++)
        if (!view_ok(&output_infos[j]))
            return popc_set_error(POPC_EINVAL, "CPU op '%s': output %d needs "
                                  "a dtype and a shape (rank 0..%d, dims >= "
                                  "0); got dtype %d rank %d", id, j,
                                  POPC_MAX_RANK,
                                  (int)output_infos[j].dtype,
                                  output_infos[j].rank);
    if ((st = popci_role_op(POPC_ROLE_HOST_CALL, "popc_cpu_op", &def)) !=
        POPC_OK)
        return st;
    dtypes = popci_malloc(sizeof *dtypes * ((size_t)n_out + 1));
    shapes = popci_malloc(sizeof *shapes * ((size_t)n_out * (POPC_MAX_RANK + 1) +
                                      1));
    if (!dtypes || !shapes) {
        st = popc_set_error(POPC_ENOMEM, "popc_cpu_op: out of memory");
        goto done;
    }
    for (int j = 0; j < n_out; j++) {
        dtypes[j] = output_infos[j].dtype;
        shapes[n_shape++] = output_infos[j].rank;
        for (int d = 0; d < output_infos[j].rank; d++)
            shapes[n_shape++] = output_infos[j].dims[d];
    }
    if (n > 0 && inputs[0] >= 0) {
        popc_view v = popc_graph_value_info(g, inputs[0]);
        if (v.dtype != POPC_DTYPE_UNDEFINED && v.rank > 0)
            batch = v.dims[0];
    }
    memset(at, 0, sizeof at);
    at[0] = (popc_attr){.name = "id", .type = POPC_ATTR_STRING, .s = id};
    at[1] = (popc_attr){.name = "output_dtypes", .type = POPC_ATTR_INTS,
                        .n = n_out, .ints = dtypes};
    at[2] = (popc_attr){.name = "output_shapes", .type = POPC_ATTR_INTS,
                        .n = n_shape, .ints = shapes};
    at[3] = (popc_attr){.name = "batch", .type = POPC_ATTR_INT, .i = batch};
    st = popci_graph_add_named(g, def->domain, def->name,
                               def->since_version, id, inputs, n, outputs,
                               n_out, at, 4);
done:
    free(dtypes);
    free(shapes);
    return st;
}

/* ---- foreign C functions -------------------------------------------------------- */

popc_status popc_foreign_op(popc_graph *g, const char *library,
                            const char *symbol, const char *signature,
                            const int *inputs, int n_inputs,
                            const char *const *output_shapes, int n_outputs,
                            int *outputs)
{
    const popc_op_def *def;
    popc_attr at[4];
    int n_at = 3;
    popc_status st;

    for (int i = 0; outputs && i < n_outputs; i++)
        outputs[i] = -1;
    if (!g || !library || !library[0] || !symbol || !symbol[0] ||
        !signature || !signature[0])
        return popc_set_error(POPC_EINVAL, "popc_foreign_op: %s is NULL or "
                              "empty", !g ? "graph" : !library || !library[0]
                                                 ? "library"
                                             : !symbol || !symbol[0]
                                                 ? "symbol"
                                                 : "signature");
    if (library[0] != '/' && strchr(library, '/'))
        return popc_set_error(POPC_EINVAL, "foreign op '%s': library '%s' is "
                              "a relative path; give an absolute path or a "
                              "bare soname (\"libm.so.6\") that the dynamic "
                              "linker finds (libraries are never loaded "
                              "relative to the current directory)", symbol,
                              library);
    if (n_outputs < 0 || (n_outputs > 0 && !outputs))
        return popc_set_error(POPC_EINVAL, "foreign op '%s': %d outputs but "
                              "%s", symbol, n_outputs,
                              n_outputs < 0 ? "a negative count"
                                            : "outputs is NULL");
    for (int j = 0; output_shapes && j < n_outputs; j++)
        if (!output_shapes[j])
            return popc_set_error(POPC_EINVAL, "foreign op '%s': "
                                  "output_shapes[%d] is NULL", symbol, j);
    if ((st = check_inputs(g, "popc_foreign_op", inputs, n_inputs)) !=
        POPC_OK)
        return st;
    if ((st = popci_role_op(POPC_ROLE_FOREIGN_CALL, "popc_foreign_op",
                            &def)) != POPC_OK)
        return st;
    memset(at, 0, sizeof at);
    at[0] = (popc_attr){.name = "library", .type = POPC_ATTR_STRING,
                        .s = library};
    at[1] = (popc_attr){.name = "symbol", .type = POPC_ATTR_STRING,
                        .s = symbol};
    at[2] = (popc_attr){.name = "signature", .type = POPC_ATTR_STRING,
                        .s = signature};
    if (output_shapes)
        at[n_at++] = (popc_attr){.name = "output_shapes",
                                 .type = POPC_ATTR_STRINGS, .n = n_outputs,
                                 .strings = output_shapes};
    return popci_graph_add_named(g, def->domain, def->name,
                                 def->since_version, symbol, inputs,
                                 n_inputs, outputs, n_outputs, at, n_at);
}
