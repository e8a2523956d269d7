/* optimizer.c - optimizer descriptions: hyper-parameter values per group,
** constant/variable flags and their validation (popc/optimizer.h).
**
** Group 0 is the default group and holds every hyper-parameter. A later
** group stores only the per-group values set on it (own[h]); the others
** follow group 0, also when group 0 changes afterwards (PopART's default
** value plus specific values). Variable flags are per hyper-parameter, not
** per group, as PopTorch's variable_attrs. The core knows hyper-parameters
** only by the names the plugin declares; "loss_scaling" and
** "max_grad_norm" are the two it reads itself. What the runtime does with
** an optimizer is in optimizer_run.c.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/optimizer.h"
#include "popc/registry.h"
#include "core/alloc_priv.h"
#include "core/layer/suggest.h"
#include "core/optimizer/optimizer_priv.h"

/* ---- internal helpers --------------------------------------------------- */

/* "['lr', 'momentum', ...]" as PopTorch prints the allowed names. */
static const char *name_list(const popc_optimizer *o, int skip_fixed,
                             char *buf, size_t size)
{
    size_t len = 0;
    int first = 1;

    len += (size_t)snprintf(buf, size, "[");
    for (int h = 0; h < o->n_hypers && len < size; h++) {
        if (skip_fixed && (popci_optim_flags(o, h) & POPC_HYPER_FIXED))
            continue;
        len += (size_t)snprintf(buf + len, size - len, "%s'%s'",
                                first ? "" : ", ",
                                popc_optim_hyper_at(o->def, h)->name);
        first = 0;
    }
    if (len < size)
        snprintf(buf + len, size - len, "]");
    return buf;
}

static popc_status unknown(const popc_optimizer *o, const char *name,
                           int skip_fixed)
{
    char list[1024];
    int h = popci_optimizer_hyper_index(o, name);

    name_list(o, skip_fixed, list, sizeof list);
    if (h >= 0)
        return popc_set_error(POPC_ENOTFOUND,
                              "Unknown attribute %s, allowed values: %s "
                              "(optimizer %s: '%s' is fixed when the model is "
                              "compiled and cannot be variable)",
                              name, list, o->def->name, name);
    {
        const char *names[POPCI_OPTIM_MAX_HYPERS];
        const char *close;
        int n = 0;

        for (int k = 0; k < o->n_hypers && n < POPCI_OPTIM_MAX_HYPERS; k++)
            if (!skip_fixed || !(popci_optim_flags(o, k) & POPC_HYPER_FIXED))
                names[n++] = popc_optim_hyper_at(o->def, k)->name;
        close = name ? popci_closest_name(name, names, n) : NULL;
        return popc_set_error(POPC_ENOTFOUND,
                              "Unknown attribute %s, allowed values: %s "
                              "(optimizer %s)%s%s%s",
                              name ? name : "(null)", list, o->def->name,
                              close ? "; did you mean '" : "",
                              close ? close : "", close ? "'?" : "");
    }
}

/* Checks that need no knowledge of the optimizer. */
static popc_status check_value(const popc_optimizer *o, int h, double v)
{
    const popc_hyper_def *d = popc_optim_hyper_at(o->def, h);

    if (isnan(v)) {
        if (strcmp(d->name, "max_grad_norm") == 0)
            return popc_set_error(POPC_EINVAL,
                                  "Maximum norm of gradients cannot be NaN "
                                  "(optimizer %s; use INFINITY to disable "
                                  "clipping)", o->def->name);
        return popc_set_error(POPC_EINVAL,
                              "Optimizer %s: attribute '%s' cannot be NaN",
                              o->def->name, d->name);
    }
    if (strcmp(d->name, "loss_scaling") == 0) {
        if (v == 0.0)
            return popc_set_error(POPC_EINVAL,
                                  "Loss scaling cannot be 0 (optimizer %s; "
                                  "1.0 disables loss scaling)",
                                  o->def->name);
        if (isinf(v))
            return popc_set_error(POPC_EINVAL,
                                  "Optimizer %s: loss scaling must be finite",
                                  o->def->name);
    }
    if (strcmp(d->name, "max_grad_norm") == 0 && !(v > 0.0))
        return popc_set_error(POPC_EINVAL,
                              "Optimizer %s: Maximum norm of gradients must "
                              "be > 0 (got %g; use INFINITY to disable "
                              "clipping)", o->def->name, v);
    if ((d->flags & POPC_HYPER_BOOL) && v != 0.0 && v != 1.0)
        return popc_set_error(POPC_EINVAL,
                              "Optimizer %s: attribute '%s' is a boolean; "
                              "use 0 or 1 (got %g)",
                              o->def->name, d->name, v);
    return POPC_OK;
}

/* Runs the plugin's validate() on every group as it would be after setting
** hyper h of group g to v. */
static popc_status check_change(const popc_optimizer *o, int g, int h,
                                double v)
{
    double vals[POPCI_OPTIM_MAX_HYPERS];

    if (!o->def->validate)
        return POPC_OK;
    for (int k = 0; k < o->n_groups; k++) {
        popc_status st;

        int inherits = k > 0 && g == 0 &&
                       !((popci_optim_flags(o, h) & POPC_HYPER_GROUP) &&
                         o->groups[k].own[h]);

        if (k != g && !inherits)
            continue;
        popci_optim_values(o, k, vals);
        vals[h] = v;
        if ((st = o->def->validate(vals)) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

static void group_clear(popci_optim_group *gr)
{
    for (int i = 0; i < gr->n_prefix; i++)
        free(gr->prefix[i]);
    free(gr->prefix);
    free(gr->values);
    free(gr->own);
    memset(gr, 0, sizeof *gr);
}

static int group_alloc(popci_optim_group *gr, int n_hypers)
{
    size_t n = n_hypers > 0 ? (size_t)n_hypers : 1;

    gr->values = popci_calloc(n, sizeof *gr->values);
    gr->own = popci_calloc(n, sizeof *gr->own);
    return gr->values && gr->own;
}

static popc_status grow_groups(popc_optimizer *o)
{
    popci_optim_group *g;
    int cap;

    if (o->n_groups < o->cap_groups)
        return POPC_OK;
    cap = o->cap_groups ? 2 * o->cap_groups : 4;
    if (!(g = popci_realloc(o->groups, (size_t)cap * sizeof *g)))
        return popc_set_error(POPC_ENOMEM, "optimizer: out of memory");
    o->groups = g;
    o->cap_groups = cap;
    return POPC_OK;
}

/* Whether prefix p already belongs to a group (its index in *owner). */
static int prefix_taken(const popc_optimizer *o, const char *p, int *owner)
{
    for (int g = 1; g < o->n_groups; g++)
        for (int i = 0; i < o->groups[g].n_prefix; i++)
            if (strcmp(o->groups[g].prefix[i], p) == 0) {
                *owner = g;
                return 1;
            }
    return 0;
}

/* ---- public API --------------------------------------------------------- */

popc_status popci_optimizer_new_def(const popc_optim_def *def,
                                    popc_optimizer **out)
{
    popc_optimizer *o = NULL;
    popc_status st;

    *out = NULL;
    if (!def || !def->name || !def->step || !def->n_state ||
        def->n_hypers < 0 || (def->n_hypers > 0 && !def->hypers))
        return popc_set_error(POPC_EINVAL,
                              "optimizer: incomplete definition '%s'",
                              def && def->name ? def->name : "(null)");
    if (def->n_hypers > 0 &&
        (!POPC_HAS_FIELD(popc_optim_def, def->size, hyper_size) ||
         def->hyper_size < sizeof(popc_hyper_def)))
        return popc_set_error(POPC_EINVAL, "optimizer %s: hyper_size is %u; "
                              "set .hyper_size = sizeof(popc_hyper_def)",
                              def->name,
                              POPC_HAS_FIELD(popc_optim_def, def->size,
                                             hyper_size)
                                  ? (unsigned)def->hyper_size
                                  : 0u);
    if (def->n_hypers > POPCI_OPTIM_MAX_HYPERS)
        return popc_set_error(POPC_EINVAL,
                              "optimizer %s: %d hyper-parameters, at most %d "
                              "are supported", def->name, def->n_hypers,
                              POPCI_OPTIM_MAX_HYPERS);
    for (int h = 0; h < def->n_hypers; h++) {
        const char *name = popc_optim_hyper_at(def, h)->name;

        if (!name || !*name)
            return popc_set_error(POPC_EINVAL,
                                  "optimizer %s: hyper-parameter %d has no "
                                  "name", def->name, h);
        for (int k = 0; k < h; k++)
            if (strcmp(popc_optim_hyper_at(def, k)->name, name) == 0)
                return popc_set_error(POPC_EINVAL,
                                      "optimizer %s: hyper-parameter '%s' "
                                      "is declared twice", def->name, name);
    }
    if (!(o = popci_calloc(1, sizeof *o)))
        return popc_set_error(POPC_ENOMEM, "optimizer %s: out of memory",
                              def->name);
    o->def = def;
    o->n_hypers = def->n_hypers;
    if ((st = grow_groups(o)) != POPC_OK)
        goto fail;
    memset(&o->groups[0], 0, sizeof o->groups[0]);
    o->n_groups = 1;
    o->variable = popci_calloc((size_t)(o->n_hypers > 0 ? o->n_hypers : 1), 1);
    if (!o->variable || !group_alloc(&o->groups[0], o->n_hypers)) {
        st = popc_set_error(POPC_ENOMEM, "optimizer %s: out of memory",
                            def->name);
        goto fail;
    }
    for (int h = 0; h < o->n_hypers; h++)
        o->groups[0].values[h] = popc_optim_hyper_at(def, h)->def;
    *out = o;
    return POPC_OK;
fail:
    popc_optimizer_free(o);
    return st;
}

popc_status popc_optimizer_new(const char *name, popc_optimizer **out)
{
    popc_registry *reg = NULL;
    const popc_optim_def *def;
    char list[512] = "";
    size_t len = 0;
    popc_status st;

    *out = NULL;
    if (!name || !*name)
        return popc_set_error(POPC_EINVAL,
                              "popc_optimizer_new: no optimizer name given "
                              "(e.g. \"sgd\", \"adam\")");
    if ((st = popc_registry_global(&reg)) != POPC_OK)
        return st;
    if ((def = popc_registry_find_optimizer(reg, name)))
        return popci_optimizer_new_def(def, out);
    for (int i = 0; i < popc_registry_plugin_count(reg); i++) {
        popc_plugin_record rec = popc_registry_plugin_at(reg, i);
        int n = rec.n_ops + rec.n_optimizers + rec.n_backends +
                rec.n_collectives;

        for (int j = 0; j < n && len < sizeof list; j++) {
            const char *item = popc_registry_plugin_item(reg, i, j);

            if (item && strncmp(item, "optim:", 6) == 0)
                len += (size_t)snprintf(list + len, sizeof list - len,
                                        "%s%s", len ? ", " : "", item + 6);
        }
    }
    return popc_set_error(POPC_ENOTFOUND,
                          "Unknown optimizer '%s' (loaded optimizers: %s); "
                          "check the name or add the directory of its plugin "
                          "to POPC_PLUGIN_PATH",
                          name, len ? list : "none");
}

void popc_optimizer_free(popc_optimizer *o)
{
    if (!o)
        return;
    for (int g = 0; g < o->n_groups; g++)
        group_clear(&o->groups[g]);
    free(o->groups);
    free(o->variable);
    free(o);
}

popc_status popc_optimizer_clone(const popc_optimizer *o,
                                 popc_optimizer **out)
{
    popc_optimizer *c = NULL;
    popc_status st;

    *out = NULL;
    if (!o)
        return popc_set_error(POPC_EINVAL, "popc_optimizer_clone: NULL");
    if ((st = popci_optimizer_new_def(o->def, &c)) != POPC_OK)
        return st;
    memcpy(c->variable, o->variable, (size_t)o->n_hypers);
    memcpy(c->groups[0].values, o->groups[0].values,
           (size_t)o->n_hypers * sizeof(double));
    for (int g = 1; g < o->n_groups; g++) {
        const popci_optim_group *src = &o->groups[g];
        popci_optim_group *dst;

        if ((st = grow_groups(c)) != POPC_OK)
            goto fail;
        dst = &c->groups[c->n_groups++];
        memset(dst, 0, sizeof *dst);
        if (!group_alloc(dst, o->n_hypers) ||
            !(dst->prefix = popci_calloc((size_t)src->n_prefix,
                                   sizeof *dst->prefix)))
            goto nomem;
        for (; dst->n_prefix < src->n_prefix; dst->n_prefix++)
            if (!(dst->prefix[dst->n_prefix] =
                      popci_strdup(src->prefix[dst->n_prefix])))
                goto nomem;
        memcpy(dst->values, src->values,
               (size_t)o->n_hypers * sizeof(double));
        memcpy(dst->own, src->own, (size_t)o->n_hypers);
    }
    *out = c;
    return POPC_OK;
nomem:
    st = popc_set_error(POPC_ENOMEM, "popc_optimizer_clone: out of memory");
fail:
    popc_optimizer_free(c);
    return st;
}

const char *popc_optimizer_name(const popc_optimizer *o)
{
    return o ? o->def->name : "";
}

popc_status popc_optimizer_set(popc_optimizer *o, const char *name,
                               double value)
{
    popc_status st;
    int h;

    if (!o)
        return popc_set_error(POPC_EINVAL, "popc_optimizer_set: NULL");
    if ((h = popci_optimizer_hyper_index(o, name)) < 0)
        return unknown(o, name, 0);
    if ((st = check_value(o, h, value)) != POPC_OK ||
        (st = check_change(o, 0, h, value)) != POPC_OK)
        return st;
    o->groups[0].values[h] = value;
    if (!(popci_optim_flags(o, h) & POPC_HYPER_FIXED))
        o->variable[h] = 1;
    return POPC_OK;
}

popc_status popc_optimizer_add_group(popc_optimizer *o, const char *prefixes,
                                     int *group_out)
{
    popci_optim_group gr = {0};
    const char *p;
    popc_status st;

    if (group_out)
        *group_out = -1;
    if (!o || !prefixes || !group_out)
        return popc_set_error(POPC_EINVAL,
                              "popc_optimizer_add_group: NULL argument");
    if (!group_alloc(&gr, o->n_hypers))
        goto nomem;
    for (p = prefixes;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char **grown;
        char *item;
        int owner;

        while (len && (*p == ' ' || *p == '\t'))
            p++, len--;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (!len) {
            st = popc_set_error(POPC_EINVAL,
                                "Optimizer %s: parameter group \"%s\" has an "
                                "empty weight-name prefix; give prefixes "
                                "separated by commas, e.g. \"fc1.,fc2.\"",
                                o->def->name, prefixes);
            goto fail;
        }
        if (!(item = popci_strndup(p, len)))
            goto nomem;
        if (!(grown = popci_realloc(gr.prefix, (size_t)(gr.n_prefix + 1) *
                                             sizeof *grown))) {
            free(item);
            goto nomem;
        }
        gr.prefix = grown;
        gr.prefix[gr.n_prefix++] = item;
        if (prefix_taken(o, item, &owner)) {
            st = popc_set_error(POPC_EINVAL,
                                "Optimizer %s: weight-name prefix '%s' "
                                "already belongs to parameter group %d; a "
                                "weight can be in one group only",
                                o->def->name, item, owner);
            goto fail;
        }
        if (!end)
            break;
        p = end + 1;
    }
    if ((st = grow_groups(o)) != POPC_OK)
        goto fail;
    o->groups[o->n_groups] = gr;
    *group_out = o->n_groups++;
    return POPC_OK;
nomem:
    st = popc_set_error(POPC_ENOMEM,
                        "popc_optimizer_add_group: out of memory");
fail:
    group_clear(&gr);
    return st;
}

popc_status popc_optimizer_set_group(popc_optimizer *o, int g,
                                     const char *name, double value)
{
    popc_status st;
    int h;

    if (!o)
        return popc_set_error(POPC_EINVAL, "popc_optimizer_set_group: NULL");
    if (g < 0 || g >= o->n_groups)
        return popc_set_error(POPC_EINVAL,
                              "Optimizer %s: no parameter group %d (it has "
                              "groups 0..%d; add one with "
                              "popc_optimizer_add_group)",
                              o->def->name, g, o->n_groups - 1);
    if ((h = popci_optimizer_hyper_index(o, name)) < 0)
        return unknown(o, name, 0);
    if (g > 0 && !(popci_optim_flags(o, h) & POPC_HYPER_GROUP))
        return popc_set_error(POPC_EINVAL,
                              "Optimizer %s: attribute '%s' is global (the "
                              "same for every parameter group); set it with "
                              "popc_optimizer_set",
                              o->def->name, name);
    if ((st = check_value(o, h, value)) != POPC_OK ||
        (st = check_change(o, g, h, value)) != POPC_OK)
        return st;
    o->groups[g].values[h] = value;
    o->groups[g].own[h] = 1;
    return POPC_OK;
}

popc_status popc_optimizer_mark_variable(popc_optimizer *o, const char *name)
{
    int h;

    if (!o)
        return popc_set_error(POPC_EINVAL,
                              "popc_optimizer_mark_variable: NULL");
    h = popci_optimizer_hyper_index(o, name);
    if (h < 0 || (popci_optim_flags(o, h) & POPC_HYPER_FIXED))
        return unknown(o, name, 1);
    o->variable[h] = 1;
    return POPC_OK;
}

popc_status popc_optimizer_mark_constant(popc_optimizer *o, const char *name)
{
    int h;

    if (!o)
        return popc_set_error(POPC_EINVAL,
                              "popc_optimizer_mark_constant: NULL");
    h = popci_optimizer_hyper_index(o, name);
    if (h < 0 || (popci_optim_flags(o, h) & POPC_HYPER_FIXED))
        return unknown(o, name, 1);
    o->variable[h] = 0;
    return POPC_OK;
}

double popc_optimizer_get(const popc_optimizer *o, int g, const char *name)
{
    int h;

    if (!o || g < 0 || g >= o->n_groups ||
        (h = popci_optimizer_hyper_index(o, name)) < 0)
        return NAN;
    return popci_optim_value(o, g, h);
}

int popc_optimizer_is_variable(const popc_optimizer *o, const char *name)
{
    int h;

    if (!o || (h = popci_optimizer_hyper_index(o, name)) < 0)
        return 0;
    return o->variable[h];
}

/* ---- accessors for the runtime ------------------------------------------ */

const popc_optim_def *popci_optimizer_def(const popc_optimizer *o)
{
    return o ? o->def : NULL;
}

int popci_optimizer_group_count(const popc_optimizer *o)
{
    return o ? o->n_groups : 0;
}

int popci_optimizer_group_of(const popc_optimizer *o, const char *weight_name)
{
    size_t best_len = 0;
    int best = 0;

    for (int g = 1; o && weight_name && g < o->n_groups; g++)
        for (int i = 0; i < o->groups[g].n_prefix; i++) {
            size_t len = strlen(o->groups[g].prefix[i]);

            if (len > best_len &&
                strncmp(weight_name, o->groups[g].prefix[i], len) == 0) {
                best = g;
                best_len = len;
            }
        }
    return best;
}

int popci_optimizer_hyper_index(const popc_optimizer *o, const char *name)
{
    for (int h = 0; o && name && h < o->n_hypers; h++)
        if (strcmp(popc_optim_hyper_at(o->def, h)->name, name) == 0)
            return h;
    return -1;
}
