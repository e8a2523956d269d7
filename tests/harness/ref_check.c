/* ref_check.c - see ref_check.h. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/harness/op_harness.h"
#include "tests/harness/ref_check.h"

popc_tensor *rc_load(const char *case_name, const char *what)
{
    char name[256];

    snprintf(name, sizeof name, "nn/%s_%s", case_name, what);
    return harness_ref(name);
}

int rc_close(const popc_tensor *got, const popc_tensor *want, double rtol,
             double atol, char *msg, size_t size)
{
    const float *a, *b;
    char da[128], db[128];

    if (!got || !want) {
        snprintf(msg, size, "missing tensor (got %p, want %p)",
                 (const void *)got, (const void *)want);
        return 0;
    }
    popc_tensor_describe(got, da, sizeof da);
    popc_tensor_describe(want, db, sizeof db);
    if (strcmp(da, db) != 0 || popc_tensor_dtype(got) != POPC_DTYPE_F32) {
        snprintf(msg, size, "got %s, want %s", da, db);
        return 0;
    }
    a = popc_tensor_cdata(got);
    b = popc_tensor_cdata(want);
    for (int64_t i = 0; i < popc_tensor_numel(got); i++) {
        int ok = isnan(b[i]) ? isnan(a[i])
                             : fabs((double)a[i] - b[i]) <=
                                   atol + rtol * fabs((double)b[i]);
        if (!ok) {
            snprintf(msg, size, "%s element %lld: got %.9g, want %.9g", da,
                     (long long)i, (double)a[i], (double)b[i]);
            return 0;
        }
    }
    msg[0] = '\0';
    return 1;
}

popc_tensor *rc_random(const int64_t *dims, int rank, uint64_t seed)
{
    popc_tensor *t = NULL;
    uint64_t s = seed * 2654435761u + 12345u;
    float *p;

    if (popc_tensor_new(POPC_DTYPE_F32, dims, rank, &t) != POPC_OK)
        return NULL;
    p = popc_tensor_data(t);
    for (int64_t i = 0; i < popc_tensor_numel(t); i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (float)((double)(s >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
    }
    return t;
}

popc_status rc_graph_grads(const char *domain, const char *op,
                           popc_tensor *const *in, int n_in, const int *wrt,
                           int n_wrt, const popc_attr *attrs, int n_attrs,
                           int n_outputs, popc_tensor *g, int training,
                           popc_tensor **grads)
{
    popc_graph *graph = NULL;
    popc_tensor *feed[16];
    popc_attr red = {.name = "reduction", .type = POPC_ATTR_INT, .i = 0};
    int ids[16], outs[8], gids[16], vals[16], n_vals = 0, n_feed = 0;
    int loss, x, gc;
    popc_tensor *res[16] = {0};
    popc_status st;

    for (int j = 0; j < n_wrt; j++)
        grads[j] = NULL;
    if (n_in > 16 || n_wrt > 16 || n_outputs > 8 || n_outputs < 1)
        return popc_set_error(POPC_EINVAL, "rc_graph_grads: too many tensors");
    if ((st = popc_graph_new("ref_grads", &graph)) != POPC_OK)
        return st;
    for (int i = 0; i < n_in; i++) {
        char name[32];
        int w = -1;

        for (int j = 0; j < n_wrt; j++)
            if (wrt[j] == i)
                w = j;
        ids[i] = -1;
        st = POPC_OK;
        snprintf(name, sizeof name, "in%d", i);
        if (w >= 0) {
            popc_view v = popc_tensor_view(in[i]);
            st = popc_graph_add_input(graph, name, v.dtype, v.dims, v.rank,
                                      &ids[i]);
            feed[n_feed++] = in[i]; /* graph inputs in the order added */
        } else if (in[i]) {
            st = popc_graph_add_constant(graph, name, in[i], &ids[i]);
        }
        if (st != POPC_OK)
            goto done;
    }
    if ((st = popc_graph_add_node(graph, domain, op, 0, ids, n_in, outs,
                                  n_outputs, attrs, n_attrs, "op", NULL)) !=
        POPC_OK)
        goto done;
    x = outs[0];
    if (g) {
        int pair[2];

        if ((st = popc_graph_add_constant(graph, "g", g, &gc)) != POPC_OK)
            goto done;
        pair[0] = outs[0];
        pair[1] = gc;
        if ((st = popc_graph_add_node(graph, NULL, "Mul", 0, pair, 2, &x, 1,
                                      NULL, 0, "weighted", NULL)) != POPC_OK)
            goto done;
    }
    if ((st = popc_graph_add_node(graph, POPC_DOMAIN_POPC, "IdentityLoss", 0,
                                  &x, 1, &loss, 1, &red, 1, "loss", NULL)) !=
            POPC_OK ||
        (st = popc_graph_verify(graph, training)) != POPC_OK)
        goto done;
    {
        int wv[16];

        for (int j = 0; j < n_wrt; j++)
            wv[j] = ids[wrt[j]];
        if ((st = popc_graph_gradients(graph, loss, wv, n_wrt, 1.0, gids)) !=
            POPC_OK)
            goto done;
    }
    for (int j = 0; j < n_wrt; j++)
        if (gids[j] >= 0)
            vals[n_vals++] = gids[j];
    if ((st = popc_graph_eval(graph, feed, n_feed, vals, n_vals, res, training,
                              1)) != POPC_OK)
        goto done;
    for (int j = 0, k = 0; j < n_wrt; j++)
        if (gids[j] >= 0)
            grads[j] = res[k++];
done:
    popc_graph_free(graph);
    return st;
}
