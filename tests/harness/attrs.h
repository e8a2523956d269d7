/* attrs.h - one-line constructors of popc_attr for tests that call ops
** directly (the views are borrowed: keep the arrays alive). */
#ifndef POPC_TEST_ATTRS_H
#define POPC_TEST_ATTRS_H

#include <stdint.h>

#include "popc/plugin.h"

/* Short names for popc/attrs.h's constructors. */
static inline popc_attr ai(const char *name, int64_t v)
{
    return popc_attr_make_int(name, v);
}

static inline popc_attr af(const char *name, double v)
{
    return popc_attr_make_float(name, v);
}

static inline popc_attr as(const char *name, const char *s)
{
    return popc_attr_make_string(name, s);
}

static inline popc_attr aints(const char *name, const int64_t *v, int n)
{
    return popc_attr_make_ints(name, v, n);
}

static inline popc_attr agraph(const char *name, struct popc_graph *g)
{
    return (popc_attr){.name = name, .type = POPC_ATTR_GRAPH, .graph = g};
}

#endif /* POPC_TEST_ATTRS_H */
