/* optimizer_stored.c - raw reads and writes of an optimizer's values,
** flags and group prefixes, so that an executable (exe/) saves it and
** loads it back exactly without knowing its representation
** (core/layer/optimizer.h). */
#include "config.h"

#include "core/optimizer/optimizer_priv.h"

int popci_optimizer_n_hypers(const popc_optimizer *o)
{
    return o->n_hypers;
}

int popci_optimizer_is_variable(const popc_optimizer *o, int h)
{
    return o->variable[h];
}

void popci_optimizer_set_variable(popc_optimizer *o, int h, int variable)
{
    o->variable[h] = (unsigned char)(variable != 0);
}

int popci_optimizer_n_prefixes(const popc_optimizer *o, int g)
{
    return o->groups[g].n_prefix;
}

const char *popci_optimizer_prefix(const popc_optimizer *o, int g, int i)
{
    return o->groups[g].prefix[i];
}

double popci_optimizer_group_value(const popc_optimizer *o, int g, int h,
                                   int *own)
{
    *own = g == 0 || o->groups[g].own[h];
    return o->groups[g].values[h];
}

void popci_optimizer_restore_value(popc_optimizer *o, int g, int h,
                                   double v, int own)
{
    o->groups[g].values[h] = v;
    if (g > 0)
        o->groups[g].own[h] = (unsigned char)(own != 0);
}
