/* optimizer_priv.h - the representation of a popc_optimizer, shared by
** optimizer.c and optimizer_run.c only. What the runtime and the layers
** may ask of an optimizer is core/layer/optimizer.h.
*/
#ifndef POPC_OPTIMIZER_PRIV_H
#define POPC_OPTIMIZER_PRIV_H

#include <stdint.h>

#include "popc/optimizer.h"
#include "popc/plugin.h"
#include "core/layer/optimizer.h"

/* ---- representation, shared by optimizer.c and optimizer_run.c only ----- */

typedef struct popci_optim_group {
    char **prefix;             /* owned; weights whose name starts with one */
    int n_prefix;
    double *values;            /* n_hypers */
    unsigned char *own;        /* value set on this group (else group 0's) */
} popci_optim_group;

struct popc_optimizer {
    const popc_optim_def *def; /* borrowed from the registry */
    int n_hypers;
    unsigned char *variable;   /* n_hypers; never set for FIXED ones */
    popci_optim_group *groups; /* groups[0] is the default group */
    int n_groups, cap_groups;
};

static inline unsigned popci_optim_flags(const popc_optimizer *o, int h)
{
    return o->def->hypers[h].flags;
}

/* Value of hyper h in group g: the group's own per-group value, else the
** default group's. */
static inline double popci_optim_value(const popc_optimizer *o, int g, int h)
{
    if (g > 0 && (popci_optim_flags(o, h) & POPC_HYPER_GROUP) &&
        o->groups[g].own[h])
        return o->groups[g].values[h];
    return o->groups[0].values[h];
}

static inline void popci_optim_values(const popc_optimizer *o, int g,
                                      double *out)
{
    for (int h = 0; h < o->n_hypers; h++)
        out[h] = popci_optim_value(o, g, h);
}

#endif /* POPC_OPTIMIZER_PRIV_H */
