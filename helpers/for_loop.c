/* for_loop.c - poptorch.for_loop as an ONNX Loop node.
**
** ONNX's Loop body reads (iteration, condition, carried values, captured
** values) and returns (condition, carried values); PopTorch's body reads
** and returns the carried values only. The helper builds the ONNX body
** around a copy of the user's: the iteration number is unused, the
** condition passes through, and the user's weights become captured values
** of the enclosing graph, so that one copy of each is trained and shared
** by all iterations.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/helpers.h"
#include "helpers/helpers_priv.h"

static popc_status check_body(const popc_graph *g, const popc_graph *body,
                              const int *inputs, int n)
{
    if (popc_graph_n_inputs(body) != n || popc_graph_n_outputs(body) != n)
        return popc_set_error(POPC_EINVAL, "for_loop: the body '%s' reads "
                              "%d values and returns %d; it must read and "
                              "return one value per loop input (%d)",
                              popc_graph_name(body), popc_graph_n_inputs(body),
                              popc_graph_n_outputs(body), n);
    for (int i = 0; i < n; i++) {
        popc_view outer = popc_graph_value_info(g, inputs[i]);
        popc_view in = popc_graph_value_info(body, popc_graph_input(body, i));
        popc_view out = popc_graph_value_info(body,
                                              popc_graph_output(body, i));
        char a[128], b[128];

        if (!helpers_same_type(&outer, &in))
            return popc_set_error(POPC_EINVAL, "for_loop: input %d is %s but "
                                  "the body reads %s there", i,
                                  popc_view_describe(&outer, a, sizeof a),
                                  popc_view_describe(&in, b, sizeof b));
        if (!helpers_same_type(&in, &out))
            return popc_set_error(POPC_EINVAL, "for_loop: the body returns %s "
                                  "as value %d, which it reads as %s: each "
                                  "iteration must return what the next "
                                  "reads", popc_view_describe(&out, a,
                                                              sizeof a),
                                  i, popc_view_describe(&in, b, sizeof b));
    }
    return POPC_OK;
}

/* The ONNX body: (iter, cond, carried..., weights...) -> (cond, carried). */
static popc_status onnx_body(const popc_graph *body, int n, int n_w,
                             const int *w_values, popc_graph **out)
{
    int64_t none[1] = {0};
    popc_graph *b = NULL;
    int *bind = NULL, *res = NULL, iter, cond, cond_out;
    popc_status st;

    *out = NULL;
    bind = calloc((size_t)(n + n_w) + 1, sizeof *bind);
    res = calloc((size_t)n + 1, sizeof *res);
    if (!bind || !res) {
        st = popc_set_error(POPC_ENOMEM, "for_loop: out of memory");
        goto done;
    }
    if ((st = popc_graph_new("for_loop_body", &b)) != POPC_OK ||
        (st = popc_graph_add_input(b, "iteration", POPC_DTYPE_I64, none, 0,
                                   &iter)) != POPC_OK ||
        (st = popc_graph_add_input(b, "condition", POPC_DTYPE_BOOL, none, 0,
                                   &cond)) != POPC_OK)
        goto done;
    for (int i = 0; i < n + n_w; i++) {
        int v = i < n ? popc_graph_input(body, i) : w_values[i - n];
        popc_view info = popc_graph_value_info(body, v);

        if ((st = popc_graph_add_input(b, popc_graph_value_name(body, v),
                                       info.dtype, info.dims, info.rank,
                                       &bind[i])) != POPC_OK)
            goto done;
    }
    if ((st = helpers_copy_nodes(b, body, bind, n, w_values, n_w, res)) !=
            POPC_OK ||
        (st = popc_graph_add_node(b, NULL, "Identity", 0, &cond, 1,
                                  &cond_out, 1, NULL, 0, "condition_out",
                                  NULL)) != POPC_OK ||
        (st = popc_graph_add_output(b, cond_out)) != POPC_OK)
        goto done;
    for (int i = 0; i < n; i++)
        if ((st = popc_graph_add_output(b, res[i])) != POPC_OK)
            goto done;
    *out = b;
    b = NULL;
done:
    popc_graph_free(b);
    free(bind);
    free(res);
    return st;
}

popc_status popc_for_loop(popc_graph *g, const char *name, int64_t count,
                          const popc_graph *body, const int *inputs,
                          int n_inputs, int *outputs)
{
    int n_w = 0, *w_body = NULL, *node_in = NULL, trips;
    popc_graph *b = NULL;
    popc_tensor *m = NULL;
    popc_attr attrs[2];
    char node[256], made[128];
    popc_status st;

    if (!g || !body || n_inputs < 1 || !inputs || !outputs)
        return popc_set_error(POPC_EINVAL, "for_loop: needs a graph, a body "
                              "and at least one loop input and output "
                              "array");
    if (count < 0)
        return popc_set_error(POPC_EINVAL, "for_loop: count is %lld; give "
                              "0 or more iterations", (long long)count);
    if (!name || !*name) { /* one per loop: two loops must not clash */
        helpers_free_name(g, "for_loop", -1, made, sizeof made);
        name = made;
    }
    if ((st = check_body(g, body, inputs, n_inputs)) != POPC_OK)
        return st;
    /* the body's weights, lifted into g */
    w_body = calloc((size_t)popc_graph_n_values(body) + 1, sizeof *w_body);
    node_in = calloc((size_t)(2 + n_inputs + popc_graph_n_values(body)) + 1,
                     sizeof *node_in);
    if (!w_body || !node_in) {
        st = popc_set_error(POPC_ENOMEM, "for_loop: out of memory");
        goto done;
    }
    for (int v = 0; v < popc_graph_n_values(body); v++)
        if (popc_graph_value_kind(body, v) == POPC_VALUE_INITIALIZER)
            w_body[n_w++] = v;
    for (int i = 0; i < n_w; i++) {
        char wname[512];

        snprintf(wname, sizeof wname, "%s/%s", name,
                 popc_graph_value_name(body, w_body[i]));
        if ((st = popc_graph_add_initializer(
                 g, wname, popc_graph_value_tensor(body, w_body[i]),
                 popc_graph_value_trainable(body, w_body[i]),
                 &node_in[2 + n_inputs + i])) != POPC_OK)
            goto done;
    }
    if ((st = onnx_body(body, n_inputs, n_w, w_body, &b)) != POPC_OK)
        goto done;
    if ((st = popc_tensor_new(POPC_DTYPE_I64, NULL, 0, &m)) != POPC_OK)
        goto done;
    *(int64_t *)popc_tensor_data(m) = count;
    snprintf(node, sizeof node, "%s/trips", name);
    if ((st = popc_graph_add_constant(g, node, m, &trips)) != POPC_OK)
        goto done;
    node_in[0] = trips;
    node_in[1] = -1; /* no condition: count iterations */
    memcpy(node_in + 2, inputs, sizeof(int) * (size_t)n_inputs);
    attrs[0] = (popc_attr){.name = "body", .type = POPC_ATTR_GRAPH,
                           .graph = b};
    attrs[1] = (popc_attr){.name = "__captures", .type = POPC_ATTR_INT,
                           .i = n_w};
    st = popc_graph_add_node(g, NULL, "Loop", 0, node_in, 2 + n_inputs + n_w,
                             outputs, n_inputs, attrs, 2, name, NULL);
done:
    popc_tensor_free(m);
    popc_graph_free(b);
    free(w_body);
    free(node_in);
    return st;
}
