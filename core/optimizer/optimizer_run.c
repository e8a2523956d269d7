/* optimizer_run.c - what the runtime does with a popc_optimizer: resolve
** a weight's hyper-parameters, size and initialise its optimizer state,
** apply the plugin's step, clip gradients by their global norm, and decide
** whether a new optimizer may replace the compiled one (PopART's
** validReplacement rules and texts).
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/optimizer.h"
#include "popc/registry.h"
#include "core/optimizer/optimizer_priv.h"

/* ---- values and state --------------------------------------------------- */

popc_status popci_optimizer_hypers(const popc_optimizer *o, int g,
                                   double *values)
{
    if (!o || !values || g < 0 || g >= o->n_groups)
        return popc_set_error(POPC_EINVAL,
                              "optimizer %s: no parameter group %d",
                              o ? o->def->name : "(null)", g);
    popci_optim_values(o, g, values);
    for (int h = 0; h < o->n_hypers; h++) {
        const char *name = popc_optim_hyper_at(o->def, h)->name;

        if (isnan(values[h]))
            return popc_set_error(POPC_EINVAL,
                                  "Optimizer %s: '%s' has no default and was "
                                  "never set; set it with "
                                  "popc_optimizer_set(o, \"%s\", value) or "
                                  "'%s = value' in the INI optimizer section",
                                  o->def->name, name, name, name);
    }
    return o->def->validate ? o->def->validate(values) : POPC_OK;
}

static double global_value(const popc_optimizer *o, const char *name,
                           double absent)
{
    int h = o ? popci_optimizer_hyper_index(o, name) : -1;

    return h < 0 ? absent : o->groups[0].values[h];
}

double popci_optimizer_loss_scaling(const popc_optimizer *o)
{
    return global_value(o, "loss_scaling", 1.0);
}

double popci_optimizer_max_grad_norm(const popc_optimizer *o)
{
    return global_value(o, "max_grad_norm", INFINITY);
}

/* Group g's values with every variable hyper-parameter set to NaN. */
static void probe_values(const popc_optimizer *o, int g, double *vals)
{
    popci_optim_values(o, g, vals);
    for (int h = 0; h < o->n_hypers; h++)
        if (o->variable[h])
            vals[h] = NAN;
}

int popci_optimizer_n_state(const popc_optimizer *o, int g)
{
    double vals[POPCI_OPTIM_MAX_HYPERS];
    int now, later;

    if (!o || g < 0 || g >= o->n_groups)
        return 0;
    popci_optim_values(o, g, vals);
    now = o->def->n_state(vals);
    probe_values(o, g, vals);
    later = o->def->n_state(vals);
    now = now > later ? now : later;
    return now > 0 ? now : 0;
}

const char *popci_optimizer_state_name(const popc_optimizer *o, int g,
                                       int index)
{
    double vals[POPCI_OPTIM_MAX_HYPERS];

    if (!o || !o->def->state_name || index < 0 ||
        index >= popci_optimizer_n_state(o, g))
        return NULL;
    probe_values(o, g, vals);
    return o->def->state_name(vals, index);
}

popc_dtype popci_optimizer_state_dtype(const popc_optimizer *o, int g,
                                      int index)
{
    double vals[POPCI_OPTIM_MAX_HYPERS];

    if (!o || !POPC_HAS_FIELD(popc_optim_def, o->def->size, state_dtype) ||
        !o->def->state_dtype || index < 0 ||
        index >= popci_optimizer_n_state(o, g))
        return POPC_DTYPE_F32;
    popci_optim_values(o, g, vals);
    return o->def->state_dtype(vals, index);
}

popc_dtype popci_optimizer_accum_dtype(const popc_optimizer *o)
{
    double vals[POPCI_OPTIM_MAX_HYPERS];

    if (!o || !POPC_HAS_FIELD(popc_optim_def, o->def->size, accum_dtype) ||
        !o->def->accum_dtype || o->n_groups < 1)
        return POPC_DTYPE_F32;
    /* accumulation types are fixed attributes: one value for all groups */
    popci_optim_values(o, 0, vals);
    return o->def->accum_dtype(vals);
}

void popci_optimizer_init_state(const popc_optimizer *o, int g,
                                float *const *state, int64_t n)
{
    double vals[POPCI_OPTIM_MAX_HYPERS];
    int k = popci_optimizer_n_state(o, g);

    for (int i = 0; i < k; i++)
        if (state[i] && n > 0)
            memset(state[i], 0, (size_t)n * sizeof(float));
    if (k == 0 || !o->def->init_state)
        return;
    popci_optim_values(o, g, vals);
    o->def->init_state(vals, state, n);
}

popc_status popci_optimizer_apply(const popc_optimizer *o,
                                  const char *weight_name, int64_t step,
                                  float *w, const float *grad,
                                  float *const *state, int64_t n)
{
    double vals[POPCI_OPTIM_MAX_HYPERS];
    popc_optim_step_ctx c;
    popc_status st;
    int g;

    if (!o || !w || !grad || n < 0)
        return popc_set_error(POPC_EINVAL,
                              "optimizer step for '%s': missing weight or "
                              "gradient", weight_name ? weight_name : "?");
    g = popci_optimizer_group_of(o, weight_name);
    if ((st = popci_optimizer_hypers(o, g, vals)) != POPC_OK)
        return st;
    memset(&c, 0, sizeof c);
    c.size = sizeof c;
    c.optim = o->def;
    c.host = popc_registry_host();
    c.weight_name = weight_name;
    c.hypers = vals;
    c.step = step;
    c.n = n;
    c.weight = w;
    c.grad = grad;
    c.state = state;
    return o->def->step(&c);
}

/* ---- replacement (popc_model_set_optimizer) ----------------------------- */

/* PopART's plural names in "Problem with ..." messages. */
static const char *what_of(const char *hyper)
{
    static const char *const names[][2] = {
        {"lr", "learning rates"},
        {"weight_decay", "weight decays"},
        {"momentum", "momentums"},
        {"dampening", "dampenings"},
        {"velocity_scaling", "velocity scalings"},
        {"nesterov", "nesterov"},
        {"loss_scaling", "loss scaling"},
        {"beta1", "beta1s"},
        {"beta2", "beta2s"},
        {"eps", "eps"},
        {"max_weight_norm", "mwn"},
        {"alpha", "alphas"},
    };

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i][0], hyper) == 0)
            return names[i][1];
    return hyper;
}

static popc_status check_groups(const popc_optimizer *a,
                                const popc_optimizer *b)
{
    if (a->n_groups != b->n_groups)
        return popc_set_error(POPC_EINVAL,
                              "Can not replace optimizer %s: the model was "
                              "compiled with %d parameter group(s) and the "
                              "new optimizer has %d; parameter groups are "
                              "fixed when the model is compiled",
                              a->def->name, a->n_groups, b->n_groups);
    for (int g = 1; g < a->n_groups; g++) {
        int same = a->groups[g].n_prefix == b->groups[g].n_prefix;

        for (int i = 0; same && i < a->groups[g].n_prefix; i++)
            same = strcmp(a->groups[g].prefix[i], b->groups[g].prefix[i]) ==
                   0;
        if (!same)
            return popc_set_error(POPC_EINVAL,
                                  "Can not replace optimizer %s: parameter "
                                  "group %d matches other weight names than "
                                  "in the compiled optimizer; parameter "
                                  "groups are fixed when the model is "
                                  "compiled",
                                  a->def->name, g);
    }
    return POPC_OK;
}

/* A streamable hyper-parameter: same constness, equal constant values. */
static popc_status check_streamed(const popc_optimizer *a,
                                  const popc_optimizer *b, int h)
{
    const char *name = popc_optim_hyper_at(a->def, h)->name;

    if (a->variable[h] != b->variable[h])
        return popc_set_error(POPC_EINVAL,
                              "Problem with %s. Can not replace a constant "
                              "value with a non constant value. ('%s' is %s "
                              "in the compiled optimizer and %s in the new "
                              "one; use popc_optimizer_mark_variable or "
                              "popc_optimizer_mark_constant so they agree)",
                              what_of(name), name,
                              a->variable[h] ? "variable" : "constant",
                              b->variable[h] ? "variable" : "constant");
    if (a->variable[h])
        return POPC_OK;
    for (int g = 0; g < a->n_groups; g++) {
        double va = popci_optim_value(a, g, h);
        double vb = popci_optim_value(b, g, h);

        if (va != vb && !(isnan(va) && isnan(vb)))
            return popc_set_error(POPC_EINVAL,
                                  "Problem with %s. Values are constant but "
                                  "do not match. (group %d: compiled with "
                                  "%s = %g, new value %g; to change it "
                                  "without recompiling, mark it variable "
                                  "with popc_optimizer_mark_variable(o, "
                                  "\"%s\") before compiling)",
                                  what_of(name), g, name, va, vb, name);
    }
    return POPC_OK;
}

static popc_status check_fixed(const popc_optimizer *a,
                               const popc_optimizer *b, int h)
{
    const char *name = popc_optim_hyper_at(a->def, h)->name;

    for (int g = 0; g < a->n_groups; g++) {
        double va = popci_optim_value(a, g, h);
        double vb = popci_optim_value(b, g, h);

        if (va != vb)
            return popc_set_error(POPC_EINVAL,
                                  "Problem with %s. The value is fixed when "
                                  "the model is compiled and does not match "
                                  "(group %d: compiled with %g, new value "
                                  "%g); compile the model again to change "
                                  "it", name, g, va, vb);
    }
    return POPC_OK;
}

popc_status popci_optimizer_check_replacement(const popc_optimizer *compiled,
                                              const popc_optimizer *next)
{
    double ma, mb;
    popc_status st;
    int ls;

    if (!compiled || !next)
        return popc_set_error(POPC_EINVAL,
                              "optimizer replacement: NULL optimizer");
    ma = popci_optimizer_max_grad_norm(compiled);
    mb = popci_optimizer_max_grad_norm(next);
    if (ma != mb)
        return popc_set_error(POPC_EINVAL,
                              "Clip norm settings do not match. (the model "
                              "was compiled with max_grad_norm %g, the new "
                              "optimizer has %g; clipping is fixed when the "
                              "model is compiled)", ma, mb);
    if (compiled->def != next->def &&
        strcmp(compiled->def->name, next->def->name) != 0)
        return popc_set_error(POPC_EINVAL,
                              "Can not replace optimizer of type %s with new "
                              "optimizer of type %s",
                              compiled->def->name, next->def->name);
    if (compiled->n_hypers != next->n_hypers)
        return popc_set_error(POPC_EINVAL,
                              "Can not replace optimizer %s: its plugin "
                              "changed since the model was compiled",
                              compiled->def->name);
    if ((st = check_groups(compiled, next)) != POPC_OK)
        return st;
    /* loss scaling first, then definition order, as PopART checks. */
    ls = popci_optimizer_hyper_index(compiled, "loss_scaling");
    if (ls >= 0 && (st = check_streamed(compiled, next, ls)) != POPC_OK)
        return st;
    for (int h = 0; h < compiled->n_hypers; h++) {
        if (h == ls)
            continue;
        if (popci_optim_flags(compiled, h) & POPC_HYPER_FIXED)
            st = check_fixed(compiled, next, h);
        else
            st = check_streamed(compiled, next, h);
        if (st != POPC_OK)
            return st;
    }
    for (int g = 0; g < compiled->n_groups; g++) {
        int na = popci_optimizer_n_state(compiled, g);
        int nb = popci_optimizer_n_state(next, g);

        if (na != nb)
            return popc_set_error(POPC_EINVAL,
                                  "Can not replace optimizer %s: this does "
                                  "not require a velocity tensor, but other "
                                  "does. (group %d: the compiled optimizer "
                                  "keeps %d state tensor(s) per weight, the "
                                  "new one needs %d; compile the model again, "
                                  "or mark momentum variable before "
                                  "compiling)",
                                  compiled->def->name, g, na, nb);
    }
    return POPC_OK;
}

/* ---- clipping ----------------------------------------------------------- */

double popci_clip_by_global_norm(float *const *grads, const int64_t *n,
                                 int n_tensors, double max_norm)
{
    double acc[8] = {0}, sum = 0.0, norm;
    float k;

    for (int t = 0; t < n_tensors; t++) {
        const float *g = grads[t];
        int64_t i = 0;

        /* Eight independent partial sums: vectorizable without
        ** reassociating a single accumulator. */
        for (; i + 8 <= n[t]; i += 8)
            for (int j = 0; j < 8; j++)
                acc[j] += (double)g[i + j] * g[i + j];
        for (; i < n[t]; i++)
            acc[0] += (double)g[i] * g[i];
    }
    for (int j = 0; j < 8; j++)
        sum += acc[j];
    norm = sqrt(sum);
    if (isinf(max_norm) || !(norm > max_norm))
        return norm;
    k = (float)(max_norm / norm);
    for (int t = 0; t < n_tensors; t++) {
        float *g = grads[t];

        for (int64_t i = 0; i < n[t]; i++)
            g[i] *= k;
    }
    return norm;
}
