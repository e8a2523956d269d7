/* multiconv.c - poptorch.MultiConv on the IPU model (shared by the
** ipumodel and offline backends, like tilemap.c).
**
** The convolutions of one group (the same POPC_ATTR_MULTICONV id, op and
** IPU; popc/attrs.h) under the parallel plan run at the same time on
** disjoint runs of tiles, so the group costs its slowest member and pays
** one sync instead of one per convolution (Poplar's multi-convolution
** saves the per-tile overhead of running them one by one). The serial
** plan leaves them as independent convolutions.
**
** Tiles are planned as poplibs' parallel multi-convolution planner does,
** largest convolution (by flops) first. Each gets the tiles that remain
** minus perConvReservedTiles for every convolution still to plan, at most
** as many as it would use alone (tilemap.c's count). Of those it takes
** the fewest whose cycles stay within (1 + cycleBackOff) of its cycles on
** all of them, leaving the rest to the next. Tiles are handed out in
** order from tile 0. Per-convolution dithering moves a convolution's start
** tile, which a parallel plan fixes: it is refused there ("not supported
** yet") and honoured under the serial plan.
*/
#include "config.h"

#include <string.h>

#include "backends/common/tilemap.h"

#define DEFAULT_RESERVED 50
#define DEFAULT_BACK_OFF 0.1

static int64_t group_id(const popc_plan_node *pn)
{
    return popc_attr_int(pn->attrs, POPC_ATTR_MULTICONV, 0);
}

static int same_group(const popc_plan *p, int a, int b)
{
    const popc_plan_node *na = popc_plan_node_at(p, a);
    const popc_plan_node *nb = popc_plan_node_at(p, b);

    /* by name: nodes running different kernels (popc/kernel.h) of one op
    ** have different derived definitions */
    return group_id(na) == group_id(nb) &&
           strcmp(na->op->name, nb->op->name) == 0 &&
           strcmp(na->op->domain, nb->op->domain) == 0 && na->ipu == nb->ipu;
}

/* Whether node a is planned before node b: more flops first, then the
** earlier in the schedule. */
static int planned_before(const popc_plan *p, int a, int b)
{
    double fa = popc_plan_node_at(p, a)->cost.flops;
    double fb = popc_plan_node_at(p, b)->cost.flops;

    return fa != fb ? fa > fb : a < b;
}

/* Insertion sort: a group holds a few convolutions, and qsort would need
** the plan in a global, which concurrent compiles must not share. */
static void sort_members(const popc_plan *p, int *members, int n)
{
    for (int i = 1; i < n; i++) {
        int k = members[i], j = i;

        for (; j > 0 && planned_before(p, k, members[j - 1]); j--)
            members[j] = members[j - 1];
        members[j] = k;
    }
}

/* The fewest tiles in [1, cap] whose cycles stay within (1 + back_off)
** of node k's cycles on cap tiles. */
static int fewest_tiles(ipum_map *m, int k, int cap, double back_off)
{
    double best;

    ipum_node_size(m, k, cap);
    best = ipum_node_cycles(m, k);
    for (int t = 1; t < cap; t++) {
        ipum_node_size(m, k, t);
        if (ipum_node_cycles(m, k) <= (1.0 + back_off) * best)
            return t;
    }
    return cap;
}

static popc_status plan_group(ipum_map *m, int *members, int n,
                              const char *who)
{
    const popc_plan *p = m->plan;
    const popc_plan_node *lead = popc_plan_node_at(p, members[0]);
    int64_t reserved = popc_attr_int(lead->attrs, POPC_ATTR_MULTICONV_RESERVED,
                                     DEFAULT_RESERVED);
    double back_off = popc_attr_float(lead->attrs, POPC_ATTR_MULTICONV_BACKOFF,
                                      DEFAULT_BACK_OFF);
    int T = m->dev.tiles, remaining = T, cursor = 0, lead_k = members[0];

    if (reserved < 0 || reserved * n > T)
        return ipum_host->set_error(
            POPC_EINVAL,
            "MultiConv of '%s': %d "
            "convolutions x %lld reserved tiles do not "
            "fit the %d compute tiles of an IPU; "
            "lower perConvReservedTiles (%s backend)",
            lead->name, n, (long long)reserved, T, who);
    for (int i = 0; i < n; i++)
        if (popc_attr_int(popc_plan_node_at(p, members[i])->attrs,
                          POPC_ATTR_CONV_DITHERING, 0))
            return ipum_host->set_error(
                POPC_EUNSUPPORTED, "MultiConv of '%s': per-convolution "
                "dithering ('%s') with the parallel plan is not supported "
                "yet; use planType Serial, or no dithering", lead->name,
                popc_plan_node_at(p, members[i])->name);
    sort_members(p, members, n);
    for (int i = 0; i < n; i++) {
        int k = members[i], alone = m->nodes[k].n, t;
        int avail = remaining - (int)reserved * (n - 1 - i);
        int cap = alone < avail ? alone : avail;

        t = fewest_tiles(m, k, cap < 1 ? 1 : cap, back_off);
        ipum_node_size(m, k, t);
        m->nodes[k].first = cursor % T;
        m->nodes[k].group_lead = lead_k;
        cursor += t;
        remaining -= t;
    }
    return POPC_OK;
}

popc_status ipum_multiconv_place(ipum_map *m, const char *who)
{
    const popc_plan *p = m->plan;
    int *members = NULL;
    popc_status st = POPC_OK;

    for (int k = 0; k < p->n_nodes && st == POPC_OK; k++) {
        const popc_plan_node *pn = popc_plan_node_at(p, k);
        int n = 0, seen = 0;

        if (group_id(pn) <= 0 ||
            popc_attr_int(pn->attrs, POPC_ATTR_MULTICONV_PLAN,
                          POPC_MULTICONV_PARALLEL) != POPC_MULTICONV_PARALLEL)
            continue;
        for (int j = 0; j < k && !seen; j++)
            seen = same_group(p, j, k);
        if (seen)
            continue;
        if (!members &&
            !(members = popc_host_calloc(ipum_host, (size_t)p->n_nodes,
                                         sizeof *members)))
            return ipum_host->set_error(POPC_ENOMEM, "compile: out of memory "
                                        "(MultiConv)");
        for (int j = k; j < p->n_nodes; j++)
            if (same_group(p, j, k))
                members[n++] = j;
        if (n > 1)
            st = plan_group(m, members, n, who);
    }
    if (members)
        ipum_host->free(members);
    return st;
}
