/* compile_key.c - what identifies a compile: the key the executable
** cache files entries under and the ranks of a distributed run compare
** before training together.
**
** A layer above the core (encode/): it reads the model through
** core/layer/model.h, its optimizer's stored form through
** core/layer/optimizer.h and the plugins that registered what it uses
** through core/layer/registry.h.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "popc/optimizer.h"
#include "popc/plugin.h"
#include "popc/registry.h"
#include "popc/version.h"
#include "core/layer/alloc.h"
#include "core/layer/graph.h"
#include "core/layer/model.h"
#include "core/layer/optimizer.h"
#include "core/layer/registry.h"
#include "encode/bytes.h"
#include "encode/compile_key.h"

/* ---- the key ------------------------------------------------------------------- */

static uint64_t mix_u64(uint64_t h, uint64_t v)
{
    unsigned char b[8];

    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    return popci_fnv1a(h, b, 8);
}

static uint64_t mix_str(uint64_t h, const char *s)
{
    s = s ? s : "";
    return popci_fnv1a(h, s, strlen(s) + 1);
}

static uint64_t mix_f64(uint64_t h, double v)
{
    uint64_t bits;

    memcpy(&bits, &v, sizeof bits);
    return mix_u64(h, bits);
}

/* Plugins whose ops, optimizer or backend the compile uses: name and
** version of each, in load order. */
static uint64_t mix_plugins(uint64_t h, const popc_model *m)
{
    const popc_backend_def *backend;
    const popc_optimizer *o = popci_model_optimizer(m);
    const popc_graph *g = popci_model_host_graph(m);
    popc_registry *reg;
    unsigned char *used;
    int stand_in, owner, n_plugins;

    if (popc_registry_global(&reg) != POPC_OK ||
        !(used = popci_calloc(
              (size_t)(n_plugins = popc_registry_plugin_count(reg)) + 1, 1)))
        return mix_str(h, "?");
    backend = popci_backend_for(popci_model_options(m), reg, &stand_in);
    for (int k = 0; k < popc_graph_n_nodes(g); k++) {
        const popc_op_def *def = popci_graph_node_def_c(g, k);
        if ((owner = popci_registry_def_plugin(reg, POPCI_KIND_OP, def)) >= 0 &&
            owner < n_plugins)
            used[owner] = 1;
    }
    if (o &&
        (owner = popci_registry_def_plugin(reg, POPCI_KIND_OPTIM,
                                           popci_optimizer_def(o))) >= 0 &&
        owner < n_plugins)
        used[owner] = 1;
    if ((owner = popci_registry_def_plugin(reg, POPCI_KIND_BACKEND,
                                           backend)) >= 0 &&
        owner < n_plugins)
        used[owner] = 1;
    for (int i = 0; i < n_plugins; i++)
        if (used[i]) {
            popc_plugin_record p = popc_registry_plugin_at(reg, i);
            h = mix_str(h, p.name);
            h = mix_str(h, p.version);
        }
    free(used);
    return h;
}

/* Hyper h in group g as the optimizer applies it: the group's own value
** of a per-group hyper-parameter, else the default group's. */
static double hyper_value(const popc_optimizer *o, int g, int h)
{
    int own;
    double v = popci_optimizer_group_value(o, g, h, &own);

    if (g > 0 && (popci_optimizer_def(o)->hypers[h].flags & POPC_HYPER_GROUP) &&
        own)
        return v;
    return popci_optimizer_group_value(o, 0, h, &own);
}

/* PopTorch's (PopART's) cache hash covers the IR, the input shapes, the
** options, the optimizer's type, constant values and variable flags (not
** variable values) and the versions; popc hashes the same, with the
** graph serialized without weight values and with each constant as a
** digest of its bytes (a model's constants can be its whole size). */
popc_status popci_compile_key(const popc_model *m, popc_tensor *const *inputs,
                              int n, uint64_t *key)
{
    uint64_t h = POPCI_FNV_INIT;
    popci_wbuf w = {0};
    const popc_optimizer *o = popci_model_optimizer(m);
    popc_status st;

    if ((st = popci_graph_write(popci_model_host_graph(m),
                                POPCI_SER_NO_WEIGHTS | POPCI_SER_DIGEST,
                                &w)) != POPC_OK) {
        popci_wbuf_free(&w);
        return st;
    }
    h = mix_str(h, POPC_VERSION_STRING);
    h = mix_u64(h, POPCI_ENCODING_FORMAT);
    h = popci_fnv1a(h, w.buf, w.len);
    popci_wbuf_free(&w);
    h = mix_u64(h, (uint64_t)popci_model_training(m));
    h = mix_u64(h, (uint64_t)n);
    for (int i = 0; i < n; i++) {
        popc_view v = popc_tensor_view(inputs[i]);
        h = mix_u64(h, (uint64_t)v.dtype);
        h = mix_u64(h, (uint64_t)v.rank);
        for (int d = 0; d < v.rank; d++)
            h = mix_u64(h, (uint64_t)v.dims[d]);
    }
    h = mix_u64(h, popc_options_hash(popci_model_options(m)));
    if (o) {
        h = mix_str(h, popci_optimizer_def(o)->name);
        for (int g = 0; g < popci_optimizer_group_count(o); g++) {
            for (int i = 0; i < popci_optimizer_n_prefixes(o, g); i++)
                h = mix_str(h, popci_optimizer_prefix(o, g, i));
            for (int k = 0; k < popci_optimizer_n_hypers(o); k++) {
                h = mix_u64(h, (uint64_t)popci_optimizer_is_variable(o, k));
                if (!popci_optimizer_is_variable(o, k))
                    h = mix_f64(h, hyper_value(o, g, k));
            }
        }
    }
    *key = mix_plugins(h, m);
    return POPC_OK;
}
