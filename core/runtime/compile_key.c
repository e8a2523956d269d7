/* compile_key.c - what identifies a compile: the key the executable
** cache files entries under and the ranks of a distributed run compare
** before training together.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "popc/optimizer.h"
#include "popc/registry.h"
#include "popc/version.h"
#include "core/alloc_priv.h"
#include "core/graph/bytes_priv.h"
#include "core/graph/graph_priv.h"
#include "core/optimizer/optimizer_priv.h"
#include "core/options/options_priv.h"
#include "core/registry_priv.h"
#include "core/runtime/model_priv.h"

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
    popc_registry *reg;
    unsigned char *used;
    int stand_in, owner;

    if (popc_registry_global(&reg) != POPC_OK ||
        !(used = popci_calloc((size_t)reg->n_plugins + 1, 1)))
        return mix_str(h, "?");
    backend = popci_backend_for(m->opts, reg, &stand_in);
    for (int k = 0; k < popc_graph_n_nodes(m->graph); k++) {
        const popc_op_def *def = popci_graph_node_def_c(m->graph, k);
        if ((owner = popci_registry_def_plugin(reg, POPCI_KIND_OP, def)) >= 0)
            used[owner] = 1;
    }
    if (m->optimizer &&
        (owner = popci_registry_def_plugin(
             reg, POPCI_KIND_OPTIM, popci_optimizer_def(m->optimizer))) >= 0)
        used[owner] = 1;
    if ((owner = popci_registry_def_plugin(reg, POPCI_KIND_BACKEND,
                                           backend)) >= 0)
        used[owner] = 1;
    for (int i = 0; i < reg->n_plugins; i++)
        if (used[i]) {
            h = mix_str(h, reg->plugins[i]->name);
            h = mix_str(h, reg->plugins[i]->version);
        }
    free(used);
    return h;
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
    const popc_optimizer *o = m->optimizer;
    popc_status st;

    if ((st = popci_graph_write(m->graph,
                                POPCI_SER_NO_WEIGHTS | POPCI_SER_DIGEST,
                                &w)) !=
        POPC_OK) {
        popci_wbuf_free(&w);
        return st;
    }
    h = mix_str(h, POPC_VERSION_STRING);
    h = mix_u64(h, POPCI_ENCODING_FORMAT);
    h = popci_fnv1a(h, w.buf, w.len);
    popci_wbuf_free(&w);
    h = mix_u64(h, (uint64_t)m->training);
    h = mix_u64(h, (uint64_t)n);
    for (int i = 0; i < n; i++) {
        popc_view v = popc_tensor_view(inputs[i]);
        h = mix_u64(h, (uint64_t)v.dtype);
        h = mix_u64(h, (uint64_t)v.rank);
        for (int d = 0; d < v.rank; d++)
            h = mix_u64(h, (uint64_t)v.dims[d]);
    }
    h = mix_u64(h, popc_options_hash(m->opts));
    if (o) {
        h = mix_str(h, o->def->name);
        for (int g = 0; g < o->n_groups; g++) {
            for (int i = 0; i < o->groups[g].n_prefix; i++)
                h = mix_str(h, o->groups[g].prefix[i]);
            for (int k = 0; k < o->n_hypers; k++) {
                h = mix_u64(h, o->variable[k]);
                if (!o->variable[k])
                    h = mix_f64(h, popci_optim_value(o, g, k));
            }
        }
    }
    *key = mix_plugins(h, m);
    return POPC_OK;
}
