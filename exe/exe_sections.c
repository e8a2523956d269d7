/* exe_sections.c - what each section of an executable file holds: encoding
** a compiled model's options, plugins, graphs, inputs, optimizer, weights,
** optimizer state, run counter and plan summary, and decoding them back.
**
** Decoders read a section completely and check what they read (counts,
** dtypes, shapes) before building anything from it; the container has
** already checked every CRC (executable.c).
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/log.h"
#include "core/layer/alloc.h"
#include "exe/executable_priv.h"
#include "core/layer/exec_report.h"
#include "core/layer/graph.h"
#include "core/layer/model.h"
#include "core/layer/optimizer.h"
#include "core/layer/options.h"
#include "core/layer/registry.h"
#include "core/layer/strbuf.h"

/* ---- options ----------------------------------------------------------------- */

/* One "name=value" line; '\\' and newlines in values are escaped. */
static void w_option_line(popci_sb *sb, int set, const char *name,
                          const char *value)
{
    popci_sb_printf(sb, "%s%s=", set ? "" : "# ", name);
    for (const char *p = value; *p; p++) {
        if (*p == '\\')
            popci_sb_printf(sb, "\\\\");
        else if (*p == '\n')
            popci_sb_printf(sb, "\\n");
        else
            popci_sb_printf(sb, "%c", *p);
    }
    popci_sb_printf(sb, "\n");
}

static popc_status encode_opts(popc_model *m, popci_wbuf *w)
{
    const popc_options *o = popci_model_options(m);
    popci_sb sb = {0};
    char *text;

    /* Every option: the ones the user set as "name=value" (restored),
    ** the others as "# name=value" so `popc inspect` shows the whole
    ** configuration. */
    for (int i = 0; i < popc_options_count(); i++) {
        const char *name = popc_options_info(i)->name;
        char buf[4096];

        if (!popc_options_format(o, name, buf, sizeof buf))
            continue;
        w_option_line(&sb, popc_options_is_set(o, name), name, buf);
    }
    if (!(text = popci_sb_take(&sb)))
        return popc_set_error(POPC_ENOMEM, "save: out of memory");
    popci_w_str(w, text);
    free(text);
    return POPC_OK;
}

popc_status popci_exe_get_options(const popci_exe *x, popc_options **out)
{
    popci_rbuf r;
    popc_options *o = NULL;
    const char *text, *line;
    char *value = NULL;
    popc_status st;

    *out = NULL;
    popci_exe_section(x, POPCI_SEC_OPTS, &r);
    text = popci_r_str(&r);
    if (r.bad)
        return popci_exe_bad(x, POPCI_SEC_OPTS, &r);
    if ((st = popc_options_new(&o)) != POPC_OK)
        return st;
    for (line = text; *line;) {
        const char *end = strchr(line, '\n'), *eq;
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char name[256];
        size_t k = 0;

        eq = memchr(line, '=', len);
        if (line[0] != '#' && eq) {
            if ((size_t)(eq - line) >= sizeof name) {
                st = popc_set_error(POPC_EIO, "executable '%s': section "
                                    "'OPTS' has an over-long option name",
                                    popci_exe_path(x));
                goto fail;
            }
            memcpy(name, line, (size_t)(eq - line));
            name[eq - line] = '\0';
            free(value);
            if (!(value = popci_malloc(len + 1))) {
                st = popc_set_error(POPC_ENOMEM, "load: out of memory");
                goto fail;
            }
            for (const char *p = eq + 1; p < line + len; p++) {
                if (*p == '\\' && p + 1 < line + len) {
                    p++;
                    value[k++] = *p == 'n' ? '\n' : *p;
                } else {
                    value[k++] = *p;
                }
            }
            value[k] = '\0';
            if ((st = popc_options_set(o, name, value)) != POPC_OK) {
                st = popc_set_error(st, "executable '%s': option %s = %s "
                                    "cannot be restored: %s",
                                    popci_exe_path(x), name, value,
                                    popc_last_error());
                goto fail;
            }
        }
        line += len + (end ? 1 : 0);
    }
    free(value);
    *out = o;
    return POPC_OK;
fail:
    free(value);
    popc_options_free(o);
    return st;
}

/* ---- plugins ----------------------------------------------------------------- */

enum { USES_OPS = 1, USES_OPTIMIZER = 2, USES_BACKEND = 4 };

/* uses[] has n_plugins entries: a plugin another thread loads meanwhile
** is past them, and cannot own what this model was compiled with. */
static void mark_use(const popc_registry *reg, popci_kind kind,
                     const void *def, unsigned use, unsigned *uses,
                     int n_plugins)
{
    int plugin = popci_registry_def_plugin(reg, kind, def);

    if (plugin >= 0 && plugin < n_plugins)
        uses[plugin] |= use;
}

static popc_status encode_plug(popc_model *m, popci_wbuf *w)
{
    const popci_exec *e = popci_model_executor_c(m);
    const popci_plan *p = popci_exec_plan(e);
    const popc_backend_def *be = popci_exec_backend(e);
    const popc_optimizer *o = popci_model_optimizer(m);
    popc_registry *reg;
    int n_plugins;
    unsigned *uses;
    uint32_t n = 0;
    popc_status st;

    if ((st = popc_registry_global(&reg)) != POPC_OK)
        return st;
    n_plugins = popc_registry_plugin_count(reg);
    if (!(uses = popci_calloc((size_t)n_plugins + 1, sizeof *uses)))
        return popc_set_error(POPC_ENOMEM, "save: out of memory");
    /* the plan's graph: forward and backward ops */
    for (int k = 0; k < popc_graph_n_nodes(p->graph); k++)
        mark_use(reg, POPCI_KIND_OP, popci_graph_node_def_c(p->graph, k),
                 USES_OPS, uses, n_plugins);
    if (o)
        mark_use(reg, POPCI_KIND_OPTIM, popci_optimizer_def(o),
                 USES_OPTIMIZER, uses, n_plugins);
    mark_use(reg, POPCI_KIND_BACKEND, be, USES_BACKEND, uses, n_plugins);
    for (int i = 0; i < n_plugins; i++)
        n += uses[i] != 0;
    popci_w_u32(w, n);
    for (int i = 0; i < n_plugins; i++) {
        popc_plugin_record rec;

        if (!uses[i])
            continue;
        rec = popc_registry_plugin_at(reg, i);
        popci_w_str(w, rec.name);
        popci_w_str(w, rec.version);
        popci_w_u32(w, uses[i]);
    }
    free(uses);
    return POPC_OK;
}

/* ---- model, graphs, inputs --------------------------------------------------- */

static void encode_modl(popc_model *m, uint64_t key, double compile_time,
                        popci_wbuf *w)
{
    const popc_graph *g = popci_model_host_graph(m);

    popci_w_u32(w, (uint32_t)popci_model_training(m));
    popci_w_str(w, popc_graph_name(g));
    popci_w_u32(w, (uint32_t)popc_graph_n_nodes(g));
    popci_w_f64(w, compile_time);
    popci_w_u64(w, key);
    popci_w_u32(w, key ? POPCI_EXE_NO_WEIGHTS : 0);
}

popc_status popci_exe_read_modl(popci_rbuf *r, popci_exe_modl *m)
{
    memset(m, 0, sizeof *m);
    m->training = (int)popci_r_u32(r);
    m->graph_name = popci_r_str(r);
    m->n_forward = (int)popci_r_u32(r);
    m->compile_time = popci_r_f64(r);
    m->key = popci_r_u64(r);
    m->flags = popci_r_u32(r);
    if (!r->bad && (m->training > 1 || m->n_forward < 0 ||
                    (m->flags & ~POPCI_EXE_NO_WEIGHTS)))
        popci_r_fail(r, "the training flag or node count is out of range");
    return r->bad ? POPC_EIO : POPC_OK;
}

popc_status popci_exe_get_modl(const popci_exe *x, popci_exe_modl *m)
{
    popci_rbuf r;

    popci_exe_section(x, POPCI_SEC_MODL, &r);
    if (popci_exe_read_modl(&r, m) != POPC_OK)
        return popci_exe_bad(x, POPCI_SEC_MODL, &r);
    return POPC_OK;
}

/* The compiled graph and what the plan learnt building it: the final loss,
** the gradient seed and each trainable weight's gradient value. */
static popc_status encode_cgrf(popc_model *m, popci_wbuf *w)
{
    const popci_plan *p = popci_exec_plan(popci_model_executor_c(m));
    int loss = -1, n_wrt = 0, n_slots = 0;
    popc_status st;

    if (p->loss_slot >= 0)
        loss = popc_graph_find_value(p->graph, p->slots[p->loss_slot].name);
    for (int i = 0; i < p->n_weights; i++)
        n_wrt += p->weights[i].trainable != 0;
    popci_w_u32(w, (uint32_t)p->n_graph_forward);
    popci_w_i64(w, loss);
    popci_w_i64(w, p->seed_value);
    popci_w_u32(w, (uint32_t)n_wrt);
    for (int i = 0; i < p->n_weights; i++) {
        const popci_plan_weight *pw = &p->weights[i];
        int grad = -1;

        if (!pw->trainable)
            continue;
        if (pw->grad_slot >= 0)
            grad = popc_graph_find_value(p->graph,
                                         p->slots[pw->grad_slot].name);
        popci_w_i64(w, pw->value);
        popci_w_i64(w, grad);
    }
    if ((st = popci_graph_write(p->graph, POPCI_SER_NO_WEIGHTS, w)) !=
        POPC_OK)
        return st;
    /* the memory plan of the slots made before the optimizer state (which
    ** popci_plan_add_state appends last) */
    for (int s = 0; s < p->pub.n_slots; s++)
        n_slots += p->slots[s].kind != POPC_SLOT_STATE;
    popci_w_u32(w, (uint32_t)n_slots);
    for (int s = 0; s < n_slots; s++)
        popci_w_i64(w, p->arena_offset[s]);
    popci_w_u64(w, (uint64_t)p->arena_bytes);
    return POPC_OK;
}

static void encode_inpt(popc_model *m, popci_wbuf *w)
{
    const popc_graph *g = popci_model_host_graph(m);
    int n = popci_model_n_inputs(m);

    popci_w_u32(w, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        popc_view v = popci_model_input_sig(m, i);

        popci_w_str(w, popc_graph_value_name(g, popc_graph_input(g, i)));
        popci_w_u32(w, (uint32_t)v.dtype);
        popci_w_u32(w, (uint32_t)v.rank);
        for (int d = 0; d < v.rank; d++)
            popci_w_i64(w, v.dims[d]);
    }
}

popc_status popci_exe_get_inputs(const popci_exe *x, int *n,
                                 popc_view **views, const char ***names)
{
    popci_rbuf r;
    uint32_t cnt;

    *n = 0;
    *views = NULL;
    *names = NULL;
    popci_exe_section(x, POPCI_SEC_INPT, &r);
    cnt = popci_r_count(&r, 13);
    if (r.bad)
        return popci_exe_bad(x, POPCI_SEC_INPT, &r);
    *views = popci_calloc((size_t)cnt + 1, sizeof **views);
    *names = popci_calloc((size_t)cnt + 1, sizeof **names);
    if (!*views || !*names) {
        free(*views);
        free(*names);
        *views = NULL;
        *names = NULL;
        return popc_set_error(POPC_ENOMEM, "load: out of memory");
    }
    for (uint32_t i = 0; i < cnt && !r.bad; i++) {
        popc_view *v = &(*views)[i];
        uint32_t dt, rank;

        (*names)[i] = popci_r_str(&r);
        dt = popci_r_u32(&r);
        rank = popci_r_u32(&r);
        if (r.bad || dt == POPC_DTYPE_UNDEFINED || dt >= POPC_DTYPE_COUNT ||
            rank > POPC_MAX_RANK) {
            popci_r_fail(&r, "an input's dtype or rank is out of range");
            break;
        }
        v->dtype = (popc_dtype)dt;
        v->rank = (int)rank;
        for (uint32_t d = 0; d < rank; d++)
            if ((v->dims[d] = popci_r_i64(&r)) < 1)
                popci_r_fail(&r, "an input dimension is not positive");
    }
    if (r.bad) {
        free(*views);
        free(*names);
        *views = NULL;
        *names = NULL;
        return popci_exe_bad(x, POPCI_SEC_INPT, &r);
    }
    *n = (int)cnt;
    return POPC_OK;
}

popc_status popci_exe_get_graph(const popci_exe *x, popc_graph **out)
{
    popci_rbuf r;
    popc_graph *g = NULL;
    int n = 0;
    const char **names = NULL;
    popc_tensor **ts = NULL;
    popc_status st;

    *out = NULL;
    popci_exe_section(x, POPCI_SEC_GRPH, &r);
    if ((st = popci_graph_read(&r, &g)) != POPC_OK)
        return st == POPC_EIO ? popci_exe_bad(x, POPCI_SEC_GRPH, &r) : st;
    if ((st = popci_exe_get_tensors(x, POPCI_SEC_WGHT, &n, &names, &ts)) !=
        POPC_OK)
        goto fail;
    /* every weight or none (a cache entry) */
    if (n != 0) {
        int nw = 0;
        for (int v = 0; v < popc_graph_n_values(g); v++)
            nw += popc_graph_value_kind(g, v) == POPC_VALUE_INITIALIZER;
        if (n != nw) {
            st = popc_set_error(POPC_EIO, "executable '%s': section 'WGHT' "
                                "holds %d tensors but the graph has %d "
                                "weights and buffers", popci_exe_path(x), n,
                                nw);
            goto fail;
        }
    }
    for (int i = 0; i < n; i++) {
        int v = popc_graph_find_value(g, names[i]);
        if (v < 0 || popc_graph_value_kind(g, v) != POPC_VALUE_INITIALIZER) {
            st = popc_set_error(POPC_EIO, "executable '%s': weight '%s' of "
                                "section 'WGHT' is not an initializer of "
                                "its graph", popci_exe_path(x), names[i]);
            goto fail;
        }
        if ((st = popc_graph_set_initializer(g, v, ts[i])) != POPC_OK) {
            st = popc_set_error(POPC_EIO, "executable '%s': %s",
                                popci_exe_path(x), popc_last_error());
            goto fail;
        }
    }
    popci_exe_tensors_free(n, names, ts);
    *out = g;
    return POPC_OK;
fail:
    popci_exe_tensors_free(n, names, ts);
    popc_graph_free(g);
    return st;
}

/* ---- optimizer ---------------------------------------------------------------- */

static void encode_optm(popc_model *m, popci_wbuf *w)
{
    const popc_optimizer *o = popci_model_optimizer(m);
    const popc_optim_def *def;
    int n_hypers, n_groups;

    popci_w_u8(w, o != NULL);
    if (!o)
        return;
    def = popci_optimizer_def(o);
    n_hypers = popci_optimizer_n_hypers(o);
    n_groups = popci_optimizer_group_count(o);
    popci_w_str(w, def->name);
    popci_w_u32(w, (uint32_t)n_hypers);
    for (int h = 0; h < n_hypers; h++) {
        popci_w_str(w, popc_optim_hyper_at(def, h)->name);
        popci_w_u8(w, (unsigned)popci_optimizer_is_variable(o, h));
    }
    popci_w_u32(w, (uint32_t)n_groups);
    for (int g = 0; g < n_groups; g++) {
        int n_prefix = popci_optimizer_n_prefixes(o, g);
        popci_w_u32(w, (uint32_t)n_prefix);
        for (int i = 0; i < n_prefix; i++)
            popci_w_str(w, popci_optimizer_prefix(o, g, i));
        for (int h = 0; h < n_hypers; h++) {
            int own;
            double v = popci_optimizer_group_value(o, g, h, &own);
            popci_w_u8(w, (unsigned)own);
            popci_w_f64(w, v);
        }
    }
}

/* Hyper-parameter index in o of each stored one, by name. */
static popc_status map_hypers(const popci_exe *x, popc_optimizer *o,
                              popci_rbuf *r, uint32_t n, int *idx,
                              unsigned char *variable)
{
    for (uint32_t h = 0; h < n && !r->bad; h++) {
        const char *name = popci_r_str(r);
        variable[h] = (unsigned char)(popci_r_u8(r) != 0);
        if (r->bad)
            break;
        if ((idx[h] = popci_optimizer_hyper_index(o, name)) < 0)
            return popc_set_error(POPC_EUNSUPPORTED, "executable '%s': "
                                  "optimizer %s has no hyper-parameter '%s' "
                                  "in this popc", popci_exe_path(x),
                                  popci_optimizer_def(o)->name, name);
    }
    return POPC_OK;
}

popc_status popci_exe_get_optimizer(const popci_exe *x, popc_optimizer **out)
{
    popci_rbuf r;
    popc_optimizer *o = NULL;
    const char *name;
    uint32_t n_hypers, n_groups;
    int idx[POPCI_OPTIM_MAX_HYPERS];
    unsigned char variable[POPCI_OPTIM_MAX_HYPERS];
    popc_status st;

    *out = NULL;
    if (!popci_exe_section(x, POPCI_SEC_OPTM, &r) || !popci_r_u8(&r))
        return r.bad ? popci_exe_bad(x, POPCI_SEC_OPTM, &r) : POPC_OK;
    name = popci_r_str(&r);
    n_hypers = popci_r_count(&r, 6);
    if (!r.bad && n_hypers > POPCI_OPTIM_MAX_HYPERS)
        popci_r_fail(&r, "too many hyper-parameters");
    if (r.bad)
        return popci_exe_bad(x, POPCI_SEC_OPTM, &r);
    if ((st = popc_optimizer_new(name, &o)) != POPC_OK)
        return popc_set_error(st, "executable '%s': %s", popci_exe_path(x),
                              popc_last_error());
    if ((st = map_hypers(x, o, &r, n_hypers, idx, variable)) != POPC_OK)
        goto fail;
    for (uint32_t h = 0; h < n_hypers; h++)
        popci_optimizer_set_variable(o, idx[h], variable[h]);
    n_groups = popci_r_count(&r, 4);
    for (uint32_t g = 0; g < n_groups && !r.bad; g++) {
        uint32_t np = popci_r_count(&r, 5);
        popci_sb sb = {0};
        char *prefixes;
        int gi = 0;

        for (uint32_t i = 0; i < np && !r.bad; i++)
            popci_sb_printf(&sb, "%s%s", i ? "," : "", popci_r_str(&r));
        if (!(prefixes = popci_sb_take(&sb))) {
            st = popc_set_error(POPC_ENOMEM, "load: out of memory");
            goto fail;
        }
        if (!r.bad && g > 0 &&
            (st = popc_optimizer_add_group(o, prefixes, &gi)) != POPC_OK) {
            free(prefixes);
            goto fail;
        }
        free(prefixes);
        for (uint32_t h = 0; h < n_hypers && !r.bad; h++) {
            int own = popci_r_u8(&r) != 0;
            double v = popci_r_f64(&r);
            if (r.bad)
                break;
            popci_optimizer_restore_value(o, gi, idx[h], v, own);
        }
    }
    if (r.bad) {
        st = popci_exe_bad(x, POPCI_SEC_OPTM, &r);
        goto fail;
    }
    *out = o;
    return POPC_OK;
fail:
    popc_optimizer_free(o);
    return st;
}

/* ---- tensors ------------------------------------------------------------------ */

static popc_status encode_wght(popc_model *m, popci_wbuf *w)
{
    const popc_graph *g = popci_model_host_graph(m);
    int n = popci_model_n_weights(m);

    popci_w_u32(w, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        int v = popci_model_weight_value(m, i);

        popci_w_str(w, popc_graph_value_name(g, v));
        popci_w_tensor(w, popc_graph_value_tensor(g, v));
    }
    return POPC_OK;
}

static popc_status encode_osta(popc_model *m, popci_wbuf *w)
{
    int n = popci_model_training(m) ? popc_model_n_optimizer_states(m) : 0;
    popc_status st;

    popci_w_u32(w, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        const char *name = popc_model_optimizer_state_name(m, i);
        popc_tensor *t = NULL;

        if ((st = popc_model_get_optimizer_state(m, name, &t)) != POPC_OK)
            return st;
        popci_w_str(w, name);
        popci_w_tensor(w, t);
        popc_tensor_free(t);
    }
    return POPC_OK;
}

void popci_exe_tensors_free(int n, const char **names, popc_tensor **ts)
{
    for (int i = 0; ts && i < n; i++)
        popc_tensor_free(ts[i]);
    free(ts);
    free((void *)names);
}

popc_status popci_exe_get_tensors(const popci_exe *x, uint32_t tag, int *n,
                                  const char ***names, popc_tensor ***ts)
{
    popci_rbuf r;
    uint32_t cnt;
    popc_status st = POPC_OK;

    *n = 0;
    *names = NULL;
    *ts = NULL;
    if (!popci_exe_section(x, tag, &r))
        return POPC_OK;
    cnt = popci_r_count(&r, 22);
    if (r.bad)
        return popci_exe_bad(x, tag, &r);
    *names = popci_calloc((size_t)cnt + 1, sizeof **names);
    *ts = popci_calloc((size_t)cnt + 1, sizeof **ts);
    if (!*names || !*ts) {
        popci_exe_tensors_free(0, *names, *ts);
        *names = NULL;
        *ts = NULL;
        return popc_set_error(POPC_ENOMEM, "load: out of memory");
    }
    for (uint32_t i = 0; i < cnt && !r.bad && st == POPC_OK; i++) {
        (*names)[i] = popci_r_str(&r);
        (*ts)[i] = popci_r_tensor(&r, &st);
        *n = (int)i + 1;
    }
    if (r.bad || st != POPC_OK) {
        popci_exe_tensors_free(*n, *names, *ts);
        *n = 0;
        *names = NULL;
        *ts = NULL;
        return st != POPC_OK ? popc_set_error(st, "load: out of memory")
                             : popci_exe_bad(x, tag, &r);
    }
    return POPC_OK;
}

/* ---- run counter and plan summary ---------------------------------------------- */

static void encode_rngs(popc_model *m, popci_wbuf *w)
{
    const popc_options *o = popci_model_options(m);
    int set = !popci_opt_is_none(o, POPCI_O_randomSeed);

    popci_w_u64(w, popci_model_runs(m));
    popci_w_u8(w, (unsigned)set);
    popci_w_i64(w, set ? popci_opt_int(o, POPCI_O_randomSeed) : 0);
}

popc_status popci_exe_get_rngs(const popci_exe *x, popci_exe_rngs *g)
{
    popci_rbuf r;

    popci_exe_section(x, POPCI_SEC_RNGS, &r);
    g->runs = popci_r_u64(&r);
    g->seed_set = popci_r_u8(&r) != 0;
    g->seed = popci_r_i64(&r);
    return r.bad ? popci_exe_bad(x, POPCI_SEC_RNGS, &r) : POPC_OK;
}

/* Per IPU: bytes held for the whole run, and the peak of activations and
** streamed inputs over the schedule (one replica, one frame). */
static void memory_per_ipu(const popci_plan *p, int n_ipu, uint64_t *pers,
                           uint64_t *peak)
{
    int n = p->pub.n_nodes;

    for (int i = 0; i < n_ipu; i++)
        pers[i] = peak[i] = 0;
    for (int s = 0; s < p->pub.n_slots; s++) {
        const popc_plan_slot *sl = &p->slots[s];
        if (sl->kind != POPC_SLOT_ACT && sl->kind != POPC_SLOT_INPUT &&
            sl->ipu >= 0 && sl->ipu < n_ipu)
            pers[sl->ipu] += popci_plan_slot_bytes(p, s);
    }
    for (int k = 0; k <= n; k++) {
        uint64_t live[64] = {0};
        for (int s = 0; s < p->pub.n_slots; s++) {
            const popc_plan_slot *sl = &p->slots[s];
            if ((sl->kind == POPC_SLOT_ACT || sl->kind == POPC_SLOT_INPUT) &&
                sl->ipu >= 0 && sl->ipu < n_ipu && sl->first_use <= k &&
                sl->last_use >= k)
                live[sl->ipu] += popci_plan_slot_bytes(p, s);
        }
        for (int i = 0; i < n_ipu; i++)
            if (live[i] > peak[i])
                peak[i] = live[i];
    }
}

static void encode_bknd(popc_model *m, popci_wbuf *w)
{
    const popci_exec *e = popci_model_executor_c(m);
    const popci_plan *p = popci_exec_plan(e);
    int n_ipu = p->pub.n_ipus < 64 ? p->pub.n_ipus : 64;
    uint64_t pers[64], peak[64];

    memory_per_ipu(p, n_ipu, pers, peak);
    popci_w_str(w, popci_exec_backend(e)->name);
    popci_w_u32(w, (uint32_t)p->pub.n_ipus);
    popci_w_u32(w, (uint32_t)p->pub.replicas);
    popci_w_u32(w, (uint32_t)p->pub.n_stages);
    popci_w_u32(w, (uint32_t)popci_exec_n_phases(e));
    popci_w_u32(w, (uint32_t)p->pub.n_nodes);
    popci_w_u32(w, (uint32_t)p->pub.n_forward);
    popci_w_u32(w, (uint32_t)p->pub.n_slots);
    popci_w_u32(w, (uint32_t)popci_opt_int(popci_model_options(m),
                                            POPCI_O_ipuVersion));
    popci_w_u64(w, (uint64_t)p->arena_bytes);
    popci_w_u64(w, (uint64_t)p->persistent_bytes);
    popci_w_f64(w, popci_exec_cycles(e));
    popci_w_u32(w, (uint32_t)n_ipu);
    for (int i = 0; i < n_ipu; i++) {
        popci_w_u64(w, pers[i]);
        popci_w_u64(w, peak[i]);
    }
}

popc_status popci_exe_get_bknd(const popci_exe *x, popci_exe_bknd *b)
{
    popci_rbuf r;

    memset(b, 0, sizeof *b);
    popci_exe_section(x, POPCI_SEC_BKND, &r);
    b->backend = popci_r_str(&r);
    b->n_ipus = (int)popci_r_u32(&r);
    b->replicas = (int)popci_r_u32(&r);
    b->n_stages = (int)popci_r_u32(&r);
    b->n_phases = (int)popci_r_u32(&r);
    b->n_nodes = (int)popci_r_u32(&r);
    b->n_forward = (int)popci_r_u32(&r);
    b->n_slots = (int)popci_r_u32(&r);
    b->ipu_version = (int)popci_r_u32(&r);
    b->arena_bytes = popci_r_u64(&r);
    b->persistent_bytes = popci_r_u64(&r);
    b->cycles = popci_r_f64(&r);
    b->n_mem = (int)popci_r_u32(&r);
    if (!r.bad && (b->n_mem < 0 || b->n_mem > 64))
        popci_r_fail(&r, "the IPU count is out of range");
    for (int i = 0; i < b->n_mem && !r.bad; i++) {
        b->mem_persistent[i] = popci_r_u64(&r);
        b->mem_peak_acts[i] = popci_r_u64(&r);
    }
    return r.bad ? popci_exe_bad(x, POPCI_SEC_BKND, &r) : POPC_OK;
}

/* ---- dispatch ------------------------------------------------------------------- */

popc_status popci_exe_encode(popc_model *m, uint32_t tag, uint64_t key,
                             double compile_time, popci_wbuf *w)
{
    switch (tag) {
    case POPCI_SEC_OPTS: return encode_opts(m, w);
    case POPCI_SEC_PLUG: return encode_plug(m, w);
    case POPCI_SEC_MODL: encode_modl(m, key, compile_time, w); return POPC_OK;
    case POPCI_SEC_GRPH:
        return popci_graph_write(popci_model_host_graph(m), POPCI_SER_NO_WEIGHTS,
                                 w);
    case POPCI_SEC_CGRF: return encode_cgrf(m, w);
    case POPCI_SEC_INPT: encode_inpt(m, w); return POPC_OK;
    case POPCI_SEC_OPTM: encode_optm(m, w); return POPC_OK;
    case POPCI_SEC_WGHT:
        if (key) {
            popci_w_u32(w, 0);
            return POPC_OK;
        }
        return encode_wght(m, w);
    case POPCI_SEC_OSTA:
        if (key) {
            popci_w_u32(w, 0);
            return POPC_OK;
        }
        return encode_osta(m, w);
    case POPCI_SEC_RNGS: encode_rngs(m, w); return POPC_OK;
    case POPCI_SEC_BKND: encode_bknd(m, w); return POPC_OK;
    default: break;
    }
    return popc_set_error(POPC_EINTERNAL, "save: unknown section %08x",
                          (unsigned)tag);
}
