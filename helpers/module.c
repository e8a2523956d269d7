/* module.c - PopXL-style modules (popc/module.h): building, binding,
** calling as one outlined popc::Call body, autodiff and weight copies.
**
** A module's body graph reads its inputs and its variables as graph
** inputs, in declaration order: the body is a pure function, so a call
** passes the bound variables in as values of the parent graph and every
** call can share one body.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/model.h"
#include "popc/module.h"
#include "popc/random.h"
#include "popc/registry.h"
#include "popc/plugin.h"
#include "helpers/helpers_priv.h"

typedef struct slot {
    char *name;
    int variable;
    popc_variable_factory factory;
    popc_tensor *init;         /* POPC_INIT_TENSOR: a copy */
} slot;

struct popc_module {
    char *name;
    char *id;                  /* "<name>#<n>": one outlined body */
    popc_graph *graph;
    slot *slots;
    int n_slots, cap_slots;
    char **outputs;
    int n_outputs, cap_outputs;
};

struct popc_module_builder {
    popc_module *m;
};

struct popc_bound {
    const popc_module *m;
    int *values;               /* per slot: the parent's value (variables) */
};

static popc_status oom(const char *who)
{
    return popc_set_error(POPC_ENOMEM, "%s: out of memory", who);
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);

    if (d)
        memcpy(d, s, n);
    return d;
}

void popc_module_free(popc_module *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n_slots; i++) {
        free(m->slots[i].name);
        popc_tensor_free(m->slots[i].init);
    }
    for (int i = 0; i < m->n_outputs; i++)
        free(m->outputs[i]);
    free(m->slots);
    free(m->outputs);
    popc_graph_free(m->graph);
    free(m->name);
    free(m->id);
    free(m);
}

static popc_status module_alloc(const char *name, popc_module **out)
{
    static unsigned long counter;
    popc_module *m = calloc(1, sizeof *m);
    char id[300];
    popc_status st;

    *out = NULL;
    if (!m)
        return oom("module");
    snprintf(id, sizeof id, "%s#%lu", name,
             __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
    if (!(m->name = dup_str(name)) || !(m->id = dup_str(id))) {
        popc_module_free(m);
        return oom("module");
    }
    if ((st = popc_graph_new(name, &m->graph)) != POPC_OK) {
        popc_module_free(m);
        return st;
    }
    *out = m;
    return POPC_OK;
}

static int name_taken(const popc_module *m, const char *name)
{
    for (int i = 0; i < m->n_slots; i++)
        if (strcmp(m->slots[i].name, name) == 0)
            return 1;
    return 0;
}

static popc_status add_slot(popc_module *m, const char *name, int variable,
                            const popc_variable_factory *f, popc_dtype dt,
                            const int64_t *dims, int rank, int *value)
{
    slot *s;
    popc_status st;

    if (!name || !*name || !value)
        return popc_set_error(POPC_EINVAL, "module '%s': an input or "
                              "variable needs a name and a value pointer",
                              m->name);
    if (name_taken(m, name))
        return popc_set_error(POPC_EEXIST, "module '%s': '%s' is declared "
                              "twice", m->name, name);
    if (m->n_slots == m->cap_slots) {
        int cap = m->cap_slots ? 2 * m->cap_slots : 8;
        slot *p = realloc(m->slots, sizeof *p * (size_t)cap);

        if (!p)
            return oom("module");
        m->slots = p;
        m->cap_slots = cap;
    }
    if ((st = popc_graph_add_input(m->graph, name, dt, dims, rank, value)) !=
        POPC_OK)
        return st;
    s = &m->slots[m->n_slots];
    memset(s, 0, sizeof *s);
    if (!(s->name = dup_str(name)))
        return oom("module");
    s->variable = variable;
    if (f) {
        s->factory = *f;
        s->factory.tensor = NULL;
        if (f->kind == POPC_INIT_TENSOR &&
            (st = popc_tensor_clone(f->tensor, &s->init)) != POPC_OK) {
            free(s->name);
            return st;
        }
    }
    m->n_slots++;
    return POPC_OK;
}

popc_graph *popc_module_builder_graph(popc_module_builder *b)
{
    return b ? b->m->graph : NULL;
}

popc_status popc_module_add_input(popc_module_builder *b, const char *name,
                                  popc_dtype dt, const int64_t *dims,
                                  int rank, int *value)
{
    if (!b)
        return popc_set_error(POPC_EINVAL, "popc_module_add_input: builder "
                              "is NULL");
    return add_slot(b->m, name, 0, NULL, dt, dims, rank, value);
}

popc_status popc_module_add_variable(popc_module_builder *b,
                                     const char *name, popc_dtype dt,
                                     const int64_t *dims, int rank,
                                     const popc_variable_factory *factory,
                                     int *value)
{
    popc_view want = {.dtype = dt, .rank = rank};
    char a[128], c[128];

    if (!b || !factory)
        return popc_set_error(POPC_EINVAL, "popc_module_add_variable: "
                              "builder or factory is NULL");
    if (rank < 0 || rank > POPC_MAX_RANK || (rank > 0 && !dims))
        return popc_set_error(POPC_EINVAL, "module '%s': variable '%s': "
                              "rank %d%s; give 0..%d dims", b->m->name,
                              name ? name : "?", rank,
                              rank > 0 && !dims ? " but dims is NULL" : "",
                              POPC_MAX_RANK);
    if (dt != POPC_DTYPE_F32 && factory->kind != POPC_INIT_TENSOR)
        return popc_set_error(POPC_EUNSUPPORTED, "module '%s': variable "
                              "'%s': factories other than a tensor make "
                              "float32 values only", b->m->name,
                              name ? name : "?");
    if (factory->kind == POPC_INIT_TENSOR) {
        popc_view got;

        if (!factory->tensor)
            return popc_set_error(POPC_EINVAL, "module '%s': variable '%s': "
                                  "POPC_INIT_TENSOR without a tensor",
                                  b->m->name, name ? name : "?");
        got = popc_tensor_view((popc_tensor *)factory->tensor);
        if (rank > 0)
            memcpy(want.dims, dims, sizeof(int64_t) * (size_t)rank);
        if (!helpers_same_type(&got, &want))
            return popc_set_error(POPC_EINVAL, "module '%s': variable '%s' "
                                  "is %s but its tensor is %s", b->m->name,
                                  name ? name : "?",
                                  popc_view_describe(&want, a, sizeof a),
                                  popc_view_describe(&got, c, sizeof c));
    }
    return add_slot(b->m, name, 1, factory, dt, dims, rank, value);
}

popc_status popc_module_add_output(popc_module_builder *b, const char *name,
                                   int value)
{
    popc_module *m;
    popc_status st;

    if (!b || !name || !*name)
        return popc_set_error(POPC_EINVAL, "popc_module_add_output: needs a "
                              "builder and a name");
    m = b->m;
    for (int i = 0; i < m->n_outputs; i++)
        if (strcmp(m->outputs[i], name) == 0)
            return popc_set_error(POPC_EEXIST, "module '%s': output '%s' is "
                                  "declared twice", m->name, name);
    if (m->n_outputs == m->cap_outputs) {
        int cap = m->cap_outputs ? 2 * m->cap_outputs : 4;
        char **p = realloc(m->outputs, sizeof *p * (size_t)cap);

        if (!p)
            return oom("module");
        m->outputs = p;
        m->cap_outputs = cap;
    }
    if ((st = popc_graph_add_output(m->graph, value)) != POPC_OK)
        return st;
    if (!(m->outputs[m->n_outputs] = dup_str(name)))
        return oom("module");
    m->n_outputs++;
    return POPC_OK;
}

popc_status popc_module_new(const char *name, popc_module_build_fn build,
                            void *user, popc_module **out)
{
    popc_module_builder b;
    popc_module *m;
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_module_new: out is NULL");
    *out = NULL;
    if (!name || !*name || !build)
        return popc_set_error(POPC_EINVAL, "popc_module_new: give a name "
                              "and a build function");
    if ((st = module_alloc(name, &m)) != POPC_OK)
        return st;
    b.m = m;
    if ((st = build(&b, user)) != POPC_OK)
        goto fail;
    if (m->n_outputs == 0) {
        st = popc_set_error(POPC_EINVAL, "module '%s': the build function "
                            "declared no output (popc_module_add_output)",
                            name);
        goto fail;
    }
    for (int v = 0; v < popc_graph_n_values(m->graph); v++)
        if (popc_graph_value_kind(m->graph, v) == POPC_VALUE_INITIALIZER) {
            st = popc_set_error(POPC_EINVAL, "module '%s': '%s' is a weight "
                                "of the module's graph; declare it with "
                                "popc_module_add_variable so that bindings "
                                "own it", name,
                                popc_graph_value_name(m->graph, v));
            goto fail;
        }
    if ((st = popc_graph_verify(m->graph, 0)) != POPC_OK)
        goto fail;
    *out = m;
    return POPC_OK;
fail:
    popc_module_free(m);
    return st;
}

/* ---- queries ------------------------------------------------------------- */

const char *popc_module_name(const popc_module *m)
{
    return m ? m->name : NULL;
}

const popc_graph *popc_module_graph(const popc_module *m)
{
    return m ? m->graph : NULL;
}

int popc_module_n_slots(const popc_module *m)
{
    return m ? m->n_slots : 0;
}

const char *popc_module_slot(const popc_module *m, int k, int *is_variable)
{
    if (!m || k < 0 || k >= m->n_slots)
        return NULL;
    if (is_variable)
        *is_variable = m->slots[k].variable;
    return m->slots[k].name;
}

int popc_module_n_outputs(const popc_module *m)
{
    return m ? m->n_outputs : 0;
}

const char *popc_module_output_name(const popc_module *m, int i)
{
    return m && i >= 0 && i < m->n_outputs ? m->outputs[i] : NULL;
}

/* ---- binding ------------------------------------------------------------- */

static popc_status make_value(const slot *s, const popc_view *info,
                              uint64_t seed, popc_tensor **out)
{
    popc_rng rng; /* a stream per (seed, variable name) */
    popc_status st;
    float *p;

    if (s->factory.kind == POPC_INIT_TENSOR)
        return popc_tensor_clone(s->init, out);
    popc_rng_init(&rng, seed, popc_rng_stream(s->name));
    if ((st = popc_tensor_new(info->dtype, info->dims, info->rank, out)) !=
        POPC_OK)
        return st;
    p = popc_tensor_data(*out);
    for (int64_t i = 0; i < popc_view_numel(info); i++) {
        double v = 0.0;

        switch (s->factory.kind) {
        case POPC_INIT_ZEROS: v = 0.0; break;
        case POPC_INIT_ONES: v = 1.0; break;
        case POPC_INIT_CONSTANT: v = s->factory.a; break;
        case POPC_INIT_UNIFORM:
            v = s->factory.a + (s->factory.b - s->factory.a) *
                                   popc_rng_uniform_double(&rng);
            break;
        case POPC_INIT_NORMAL:
            v = s->factory.a + s->factory.b * popc_rng_normal(&rng);
            break;
        default: break;
        }
        p[i] = (float)v;
    }
    return POPC_OK;
}

void popc_bound_free(popc_bound *b)
{
    if (!b)
        return;
    free(b->values);
    free(b);
}

popc_status popc_module_bind(const popc_module *m, popc_graph *parent,
                             const char *prefix, uint64_t seed,
                             popc_bound **out)
{
    popc_bound *b;
    popc_status st = POPC_OK;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_module_bind: out is NULL");
    *out = NULL;
    if (!m || !parent || !prefix || !*prefix)
        return popc_set_error(POPC_EINVAL, "popc_module_bind: give a module, "
                              "a parent graph and a prefix");
    if (!(b = calloc(1, sizeof *b)) ||
        !(b->values = malloc(sizeof(int) * (size_t)(m->n_slots + 1)))) {
        popc_bound_free(b);
        return oom("popc_module_bind");
    }
    b->m = m;
    for (int k = 0; k < m->n_slots && st == POPC_OK; k++) {
        const slot *s = &m->slots[k];
        popc_view info = popc_graph_value_info(m->graph,
                                               popc_graph_input(m->graph, k));
        popc_tensor *t = NULL;
        char name[512];

        b->values[k] = -1;
        if (!s->variable)
            continue;
        snprintf(name, sizeof name, "%s/%s", prefix, s->name);
        if ((st = make_value(s, &info, seed, &t)) == POPC_OK)
            st = popc_graph_add_initializer(parent, name, t,
                                            !s->factory.frozen,
                                            &b->values[k]);
        popc_tensor_free(t);
    }
    if (st != POPC_OK) {
        popc_bound_free(b);
        return st;
    }
    *out = b;
    return POPC_OK;
}

int popc_bound_variable(const popc_bound *b, const char *name)
{
    for (int k = 0; b && name && k < b->m->n_slots; k++)
        if (b->m->slots[k].variable && strcmp(b->m->slots[k].name, name) == 0)
            return b->values[k];
    return -1;
}

/* ---- calling ------------------------------------------------------------- */

popc_status popc_module_call(popc_graph *parent, const popc_module *m,
                             const popc_bound *b, const int *inputs,
                             int n_inputs, int *outputs, int n_outputs)
{
    int want = 0, next = 0, *in;
    popc_attr attrs[3];
    popc_status st;

    if (!parent || !m || (n_inputs > 0 && !inputs) || !outputs)
        return popc_set_error(POPC_EINVAL, "popc_module_call: give a parent "
                              "graph, a module, inputs and outputs");
    if (b && b->m != m)
        return popc_set_error(POPC_EINVAL, "popc_module_call: the binding "
                              "belongs to module '%s', not '%s'",
                              b->m->name, m->name);
    for (int k = 0; k < m->n_slots; k++) {
        want += !m->slots[k].variable;
        if (m->slots[k].variable && !b)
            return popc_set_error(POPC_EINVAL, "module '%s' has variables "
                                  "('%s'): bind it (popc_module_bind) and "
                                  "pass the binding", m->name,
                                  m->slots[k].name);
    }
    if (n_inputs != want || n_outputs != m->n_outputs)
        return popc_set_error(POPC_EINVAL, "module '%s' reads %d inputs and "
                              "gives %d outputs; the call passes %d and "
                              "asks for %d", m->name, want, m->n_outputs,
                              n_inputs, n_outputs);
    if (!(in = malloc(sizeof(int) * (size_t)(m->n_slots + 1))))
        return oom("popc_module_call");
    for (int k = 0; k < m->n_slots; k++)
        in[k] = m->slots[k].variable ? b->values[k] : inputs[next++];
    attrs[0] = (popc_attr){.name = "body", .type = POPC_ATTR_GRAPH,
                           .graph = m->graph};
    attrs[1] = (popc_attr){.name = "__captures", .type = POPC_ATTR_INT,
                           .i = m->n_slots};
    attrs[2] = (popc_attr){.name = "__body_id", .type = POPC_ATTR_STRING,
                           .s = m->id};
    st = popc_graph_add_node(parent, POPC_DOMAIN_POPC, "Call", 1, in,
                             m->n_slots, outputs, n_outputs, attrs, 3, NULL,
                             NULL);
    free(in);
    return st;
}

/* ---- autodiff ------------------------------------------------------------ */

popc_status popc_module_autodiff(const popc_module *m, popc_module **grad)
{
    const popc_host *h = popc_registry_host();
    popc_module *g = NULL;
    char name[300];
    popc_status st;

    if (!grad)
        return popc_set_error(POPC_EINVAL, "popc_module_autodiff: grad is "
                              "NULL");
    *grad = NULL;
    if (!m)
        return popc_set_error(POPC_EINVAL, "popc_module_autodiff: module is "
                              "NULL");
    snprintf(name, sizeof name, "%s/grad", m->name);
    if ((st = module_alloc(name, &g)) != POPC_OK)
        return st;
    popc_graph_free(g->graph);
    g->graph = NULL;
    if ((st = h->graph_gradient(m->graph, &g->graph)) != POPC_OK)
        goto fail;
    g->slots = calloc((size_t)(m->n_slots + m->n_outputs) + 1,
                      sizeof *g->slots);
    g->outputs = calloc((size_t)m->n_slots + 1, sizeof *g->outputs);
    if (!g->slots || !g->outputs) {
        st = oom("popc_module_autodiff");
        goto fail;
    }
    g->cap_slots = m->n_slots + m->n_outputs;
    g->cap_outputs = m->n_slots;
    for (int k = 0; k < m->n_slots + m->n_outputs; k++) {
        char s[300];

        if (k < m->n_slots)
            snprintf(s, sizeof s, "%s", m->slots[k].name);
        else
            snprintf(s, sizeof s, "grad:%s", m->outputs[k - m->n_slots]);
        if (!(g->slots[k].name = dup_str(s))) {
            st = oom("popc_module_autodiff");
            goto fail;
        }
        g->n_slots++;
    }
    for (int k = 0; k < m->n_slots; k++) {
        char s[300];

        snprintf(s, sizeof s, "grad:%s", m->slots[k].name);
        if (!(g->outputs[k] = dup_str(s))) {
            st = oom("popc_module_autodiff");
            goto fail;
        }
        g->n_outputs++;
    }
    *grad = g;
    return POPC_OK;
fail:
    popc_module_free(g);
    return st;
}

/* ---- weights ------------------------------------------------------------- */

popc_status popc_model_copy_weights(struct popc_model *dst,
                                    struct popc_model *src,
                                    const char *prefix, int *copied)
{
    size_t plen = prefix ? strlen(prefix) : 0;
    int n = 0;
    popc_status st;

    if (copied)
        *copied = 0;
    if (!dst || !src)
        return popc_set_error(POPC_EINVAL, "popc_model_copy_weights: a model "
                              "is NULL");
    for (int i = 0; i < popc_model_n_tensors(src); i++) {
        const char *name = popc_model_tensor_name(src, i);
        const popc_tensor *w = NULL, *have = NULL;

        if (prefix && strncmp(name, prefix, plen) != 0)
            continue;
        if (popc_model_get_weight(dst, name, &have) != POPC_OK)
            return popc_set_error(POPC_ENOTFOUND, "popc_model_copy_weights: "
                                  "the destination model has no weight "
                                  "'%s'; copy with a prefix it shares",
                                  name);
        if ((st = popc_model_get_weight(src, name, &w)) != POPC_OK ||
            (st = popc_model_set_weight(dst, name, w)) != POPC_OK)
            return st;
        n++;
    }
    if (copied)
        *copied = n;
    return POPC_OK;
}
