/* replica_groups.c - replica grouping of a model's weights (PopTorch's
** replicaGrouping; popc/strategy.h): the groups' host copies and their
** way to and from the device.
**
** The model's graph keeps group 0's host value (so every other part of
** the model sees an ordinary weight); groups 1.. have host tensors here,
** in the distribution layer's data of the model (dist/dist_priv.h). The
** executor holds one device copy per group and reduces gradients within
** groups (core/runtime/train_step.c). Host and device copies move
** together with the graph's, through the layer's hooks (dist_hooks.c):
** popci_rgroups_pull after the weights are copied to the host,
** popci_rgroups_push after they are copied to the device.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "popc/strategy.h"
#include "core/layer/alloc.h"
#include "core/layer/model.h"
#include "dist/dist_priv.h"

typedef struct rgroup {
    char *name;
    int weight;                /* index in the model's weight list */
    popc_comm_group_type type;
    int shards;
    popc_variable_retrieval_mode mode;
    int n_groups;
    int orthogonal;
    popc_tensor **host;        /* [n_groups]; host[0] NULL: the graph's */
} rgroup;

struct popci_rgroups {
    int n;
    rgroup *g;
    popci_exec_grouping *exec; /* n entries, for popci_exec_config */
};

static popc_status oom(void)
{
    return popc_set_error(POPC_ENOMEM, "replica grouping: out of memory");
}

static void group_clear(rgroup *g)
{
    for (int i = 0; g->host && i < g->n_groups; i++)
        popc_tensor_free(g->host[i]);
    free(g->host);
    free(g->name);
    memset(g, 0, sizeof *g);
}

void popci_rgroups_free(popci_rgroups *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n; i++)
        group_clear(&r->g[i]);
    free(r->g);
    free(r->exec);
    free(r);
}

static int find_weight(const popc_model *m, const char *name)
{
    for (int i = 0; name && i < popci_model_n_weights(m); i++)
        if (strcmp(popci_model_weight_name(m, i), name) == 0)
            return i;
    return -1;
}

/* m's groups, NULL when none. */
static popci_rgroups *groups_of(const popc_model *m)
{
    const popci_dist_model *d =
        popci_model_layer_data_c(m, &popci_dist_hooks);

    return d ? d->groups : NULL;
}

static rgroup *find_in(popci_rgroups *r, int weight)
{
    for (int i = 0; r && i < r->n; i++)
        if (r->g[i].weight == weight)
            return &r->g[i];
    return NULL;
}

static rgroup *find_group(const popc_model *m, int weight)
{
    return find_in(groups_of(m), weight);
}

static popc_tensor *host_tensor(const popc_model *m, int weight)
{
    return popci_model_weight_host(m, weight);
}

static popc_status unknown(const popc_model *m, const char *name)
{
    return popc_set_error(POPC_ENOTFOUND, "replica grouping: model '%s' has "
                          "no weight or buffer named '%s'",
                          popci_model_graph_name(m), name ? name : "(null)");
}

/* ---- the device side ---------------------------------------------------- */

const popci_exec_grouping *popci_rgroups_exec(popci_rgroups *r, int *n)
{

    *n = r ? r->n : 0;
    if (!r)
        return NULL;
    for (int i = 0; i < r->n; i++)
        r->exec[i] = (popci_exec_grouping){r->g[i].name, r->g[i].n_groups,
                                           r->g[i].orthogonal};
    return r->exec;
}

void popci_rgroups_pull(popc_model *m, popci_rgroups *r)
{
    popci_exec *e = popci_model_executor(m);

    for (int i = 0; e && r && i < r->n; i++) {
        rgroup *g = &r->g[i];
        int pw = popci_model_weight_plan(m, g->weight);

        if (pw < 0 || popci_exec_n_groups(e, pw) != g->n_groups)
            continue;
        for (int k = 1; k < g->n_groups; k++)
            memcpy(popc_tensor_data(g->host[k]),
                   popci_exec_group_weight(e, pw, k),
                   popc_tensor_nbytes(g->host[k]));
    }
}

void popci_rgroups_push(popc_model *m, popci_rgroups *r)
{
    popci_exec *e = popci_model_executor(m);

    for (int i = 0; e && r && i < r->n; i++) {
        rgroup *g = &r->g[i];
        int pw = popci_model_weight_plan(m, g->weight);

        if (pw < 0 || popci_exec_n_groups(e, pw) != g->n_groups)
            continue;
        for (int k = 1; k < g->n_groups; k++)
            popci_exec_write_group_weight(e, pw, k,
                                          popc_tensor_cdata(g->host[k]));
    }
}

popc_status popci_rgroups_compiled(popc_model *m, popci_rgroups *r)
{
    popc_status st;

    for (int i = 0; r && i < r->n; i++) {
        rgroup *g = &r->g[i];
        if ((st = popci_model_state_set_groups(m, g->name, g->n_groups)) !=
            POPC_OK)
            return st;
    }
    popci_rgroups_push(m, r);
    return POPC_OK;
}

popc_status popci_rgroups_set_all(popc_model *m, popci_rgroups *r,
                                  int weight)
{
    rgroup *g = find_in(r, weight);
    const popc_tensor *t = host_tensor(m, weight);

    for (int k = 1; g && t && k < g->n_groups; k++)
        memcpy(popc_tensor_data(g->host[k]), popc_tensor_cdata(t),
               popc_tensor_nbytes(t));
    return POPC_OK;
}

/* ---- public API --------------------------------------------------------- */

static popc_status group_count(const popc_model *m, const char *name,
                               popc_comm_group_type type, int shards,
                               int *n_groups)
{
    int64_t r = popc_options_get_int(popci_model_options(m),
                                     "replicationFactor");

    switch (type) {
    case POPC_COMM_ALL:
        *n_groups = 1;
        return POPC_OK;
    case POPC_COMM_NO_GROUPING:
        *n_groups = (int)r;
        return POPC_OK;
    case POPC_COMM_CONSECUTIVE:
    case POPC_COMM_ORTHOGONAL:
        if (shards < 1 || r % shards != 0)
            return popc_set_error(POPC_EINVAL, "replicaGrouping of '%s': "
                                  "the group size (shards %d) must be a "
                                  "factor of replicationFactor (%lld)", name,
                                  shards, (long long)r);
        *n_groups = (int)(r / shards);
        return POPC_OK;
    default:
        return popc_set_error(POPC_EINVAL, "replicaGrouping of '%s': %d is "
                              "not a CommGroupType (All 0, Consecutive 1, "
                              "Orthogonal 2, NoGrouping 3)", name, (int)type);
    }
}

/* The group entry of weight w, created empty when missing. */
static popc_status group_entry(popc_model *m, int w, rgroup **out)
{
    popci_dist_model *d;
    popci_rgroups *r;
    rgroup *g;
    popci_exec_grouping *ex;
    popc_status st;

    *out = find_group(m, w);
    if (*out)
        return POPC_OK;
    if ((st = popci_dist_model_of(m, &d)) != POPC_OK)
        return st;
    if (!(r = d->groups)) {
        if (!(r = popci_calloc(1, sizeof *r)))
            return oom();
        d->groups = r;
    }
    g = popci_realloc(r->g, sizeof *g * (size_t)(r->n + 1));
    if (g)
        r->g = g;
    ex = popci_realloc(r->exec, sizeof *ex * (size_t)(r->n + 1));
    if (ex)
        r->exec = ex;
    if (!g || !ex)
        return oom();
    g = &r->g[r->n];
    memset(g, 0, sizeof *g);
    if (!(g->name = popci_strdup(popci_model_weight_name(m, w))))
        return oom();
    g->weight = w;
    r->n++;
    *out = g;
    return POPC_OK;
}

popc_status popc_model_set_replica_grouping(popc_model *m, const char *weight,
                                            popc_comm_group_type type,
                                            int shards,
                                            popc_variable_retrieval_mode mode)
{
    popc_tensor **host = NULL;
    int w, n_groups = 1;
    rgroup *g;
    popc_status st;

    if (!m)
        return popc_set_error(POPC_EINVAL, "popc_model_set_replica_grouping: "
                              "model is NULL");
    if ((w = find_weight(m, weight)) < 0)
        return unknown(m, weight);
    if (popc_model_is_compiled(m))
        return popc_set_error(POPC_ESTATE, "replicaGrouping of '%s': the "
                              "model is compiled; set replica groups before "
                              "the first run (or after popc_model_destroy)",
                              weight);
    if (mode != POPC_RETRIEVE_ONE_PER_GROUP &&
        mode != POPC_RETRIEVE_ALL_REPLICAS)
        return popc_set_error(POPC_EINVAL, "replicaGrouping of '%s': %d is "
                              "not a VariableRetrievalMode (OnePerGroup 0, "
                              "AllReplicas 2)", weight, (int)mode);
    if ((st = group_count(m, weight, type, shards, &n_groups)) != POPC_OK)
        return st;
    if (!(host = popci_calloc((size_t)n_groups + 1, sizeof *host)))
        return oom();
    for (int k = 1; k < n_groups; k++)
        if ((st = popc_tensor_clone(host_tensor(m, w), &host[k])) !=
            POPC_OK) {
            for (int j = 1; j < k; j++)
                popc_tensor_free(host[j]);
            free(host);
            return st;
        }
    if ((st = group_entry(m, w, &g)) != POPC_OK) {
        for (int k = 1; k < n_groups; k++)
            popc_tensor_free(host[k]);
        free(host);
        return st;
    }
    for (int k = 0; g->host && k < g->n_groups; k++)
        popc_tensor_free(g->host[k]);
    free(g->host);
    g->host = host;
    g->type = type;
    g->shards = shards;
    g->mode = mode;
    g->n_groups = n_groups;
    g->orthogonal = type == POPC_COMM_ORTHOGONAL;
    return POPC_OK;
}

int popc_model_n_replica_groups(const popc_model *m, const char *weight)
{
    int w;
    const rgroup *g;

    if (!m || (w = find_weight(m, weight)) < 0)
        return 0;
    g = find_group(m, w);
    return g ? g->n_groups : 1;
}

/* Weight w's group-g host tensor, after syncing from the device. */
static popc_status group_tensor(popc_model *m, const char *weight, int group,
                                int *w_out, popc_tensor **out)
{
    const rgroup *g;
    int w, n;
    popc_status st;

    *out = NULL;
    if (!m)
        return popc_set_error(POPC_EINVAL, "replica grouping: model is NULL");
    if ((w = find_weight(m, weight)) < 0)
        return unknown(m, weight);
    g = find_group(m, w);
    n = g ? g->n_groups : 1;
    if (group < 0 || group >= n)
        return popc_set_error(POPC_EINVAL, "weight '%s' has %d replica "
                              "group%s; group %d does not exist", weight, n,
                              n == 1 ? "" : "s", group);
    if ((st = popci_model_sync_host(m)) != POPC_OK)
        return st;
    *w_out = w;
    *out = group == 0 ? host_tensor(m, w) : g->host[group];
    return POPC_OK;
}

popc_status popc_model_set_group_weight(popc_model *m, const char *weight,
                                        int group, const popc_tensor *t)
{
    popc_tensor *dst;
    int w = -1;
    popc_status st;
    char a[128], b[128];

    if (!t)
        return popc_set_error(POPC_EINVAL, "popc_model_set_group_weight: "
                              "tensor is NULL");
    if ((st = group_tensor(m, weight, group, &w, &dst)) != POPC_OK)
        return st;
    if (popc_tensor_dtype(t) != popc_tensor_dtype(dst) ||
        popc_tensor_rank(t) != popc_tensor_rank(dst) ||
        memcmp(popc_tensor_dims(t), popc_tensor_dims(dst),
               sizeof(int64_t) * (size_t)popc_tensor_rank(t)) != 0)
        return popc_set_error(POPC_EINVAL, "weight '%s' group %d: expected "
                              "%s but got %s", weight, group,
                              popc_tensor_describe(dst, a, sizeof a),
                              popc_tensor_describe(t, b, sizeof b));
    memcpy(popc_tensor_data(dst), popc_tensor_cdata(t),
           popc_tensor_nbytes(t));
    popci_model_host_changed(m);
    return POPC_OK;
}

popc_status popc_model_get_group_weight(popc_model *m, const char *weight,
                                        int group, popc_tensor **out)
{
    popc_tensor *src;
    int w = -1;
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_model_get_group_weight: out "
                              "is NULL");
    *out = NULL;
    if ((st = group_tensor(m, weight, group, &w, &src)) != POPC_OK)
        return st;
    return popc_tensor_clone(src, out);
}

popc_status popc_model_get_grouped_weight(popc_model *m, const char *weight,
                                          popc_tensor **out)
{
    popc_tensor *g0 = NULL;
    const rgroup *g;
    int w = -1, all, n;
    int64_t dims[POPC_MAX_RANK];
    size_t item;
    popc_status st;

    if (!out)
        return popc_set_error(POPC_EINVAL, "popc_model_get_grouped_weight: "
                              "out is NULL");
    *out = NULL;
    if ((st = group_tensor(m, weight, 0, &w, &g0)) != POPC_OK)
        return st;
    g = find_group(m, w);
    if (popc_tensor_rank(g0) + 1 > POPC_MAX_RANK)
        return popc_set_error(POPC_EINVAL, "weight '%s' has rank %d: no room "
                              "for a group dimension", weight,
                              popc_tensor_rank(g0));
    all = g && g->mode == POPC_RETRIEVE_ALL_REPLICAS;
    n = all ? (int)popc_options_get_int(popci_model_options(m),
                                        "replicationFactor")
            : (g ? g->n_groups : 1);
    dims[0] = n;
    memcpy(dims + 1, popc_tensor_dims(g0),
           sizeof(int64_t) * (size_t)popc_tensor_rank(g0));
    if ((st = popc_tensor_new(popc_tensor_dtype(g0), dims,
                              popc_tensor_rank(g0) + 1, out)) != POPC_OK)
        return st;
    item = popc_tensor_nbytes(g0);
    for (int i = 0; i < n; i++) {
        int k = i;
        const popc_tensor *src;

        /* replica i holds its group's value */
        if (all && g)
            k = g->orthogonal ? i % g->n_groups
                              : i / (n / g->n_groups);
        src = k == 0 ? g0 : g->host[k];
        memcpy((char *)popc_tensor_data(*out) + item * (size_t)i,
               popc_tensor_cdata(src), item);
    }
    return POPC_OK;
}
