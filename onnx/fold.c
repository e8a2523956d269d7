/* fold.c - constant folding at import.
**
** PyTorch exports compute shapes at run time (Shape -> Gather -> Unsqueeze
** -> Concat -> Reshape), where PopTorch fixes every shape when it traces.
** Folding restores that: Shape and Size of a value whose shape is known
** become constants, and a node whose inputs are all constants is computed
** once, on the ops' reference kernels (popc_graph_eval of a one-node
** graph), unless its op is random, has side effects or runs on the host.
*/
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "onnx/onnx_priv.h"

popc_status popco_add_constant(popco_importer *im, popc_tensor *t, int *id)
{
    return popc_graph_add_constant(im->g, NULL, t, id);
}

static int known_shape(const popc_view *v)
{
    if (v->dtype == POPC_DTYPE_UNDEFINED)
        return 0;
    for (int d = 0; d < v->rank; d++)
        if (v->dims[d] < 0)
            return 0;
    return 1;
}

/* Shape-15's start/end: clamped, negative from the back. */
static int64_t clamp_axis(int64_t a, int rank)
{
    if (a < 0)
        a += rank;
    return a < 0 ? 0 : a > rank ? rank : a;
}

static popc_status fold_shape(popco_importer *im, const popco_node *n,
                              int *out, int *folded)
{
    popc_view x;
    popc_tensor *t = NULL;
    popc_attrs a = POPC_ATTRS(n->attrs.n, n->attrs.items);
    int64_t dims[1], numel = 1, start, end;
    popc_status st;

    if (n->n_inputs < 1 || n->inputs[0] < 0)
        return POPC_OK;
    x = popc_graph_value_info(im->g, n->inputs[0]);
    if (!known_shape(&x))
        return POPC_OK;
    for (int d = 0; d < x.rank; d++)
        numel *= x.dims[d];
    if (strcmp(n->op, "Size") == 0) {
        if ((st = popc_tensor_new(POPC_DTYPE_I64, NULL, 0, &t)) != POPC_OK)
            return st;
        *(int64_t *)popc_tensor_data(t) = numel;
    } else {
        start = clamp_axis(popc_attr_int(&a, "start", 0), x.rank);
        end = clamp_axis(popc_attr_int(&a, "end", x.rank), x.rank);
        dims[0] = end > start ? end - start : 0;
        if ((st = popc_tensor_new(POPC_DTYPE_I64, dims, 1, &t)) != POPC_OK)
            return st;
        for (int64_t d = 0; d < dims[0]; d++)
            ((int64_t *)popc_tensor_data(t))[d] = x.dims[start + d];
    }
    st = popco_add_constant(im, t, out);
    popc_tensor_free(t);
    if (st == POPC_OK)
        *folded = 1;
    return st;
}

/* Results above this stay nodes: a file must not make the importer
** allocate without bound (a ConstantOfShape of a huge shape). */
#define MAX_FOLD_BYTES ((size_t)64 << 20)

static popc_status eval_node(popco_importer *im, const popco_node *n,
                             int n_outputs, int *outputs, int *folded)
{
    popc_graph *tg = NULL;
    int ins[64], outs[64];
    popc_tensor *res[64] = {0};
    popc_status st;

    if ((st = popc_graph_new("fold", &tg)) != POPC_OK)
        return st;
    for (int i = 0; i < n->n_inputs; i++) {
        ins[i] = -1;
        if (n->inputs[i] >= 0 &&
            (st = popc_graph_add_constant(
                 tg, NULL, popc_graph_value_tensor(im->g, n->inputs[i]),
                 &ins[i])) != POPC_OK)
            goto done;
    }
    if ((st = popc_graph_add_node(tg, n->domain, n->op, n->version, ins,
                                  n->n_inputs, outs, n_outputs,
                                  n->attrs.items, n->attrs.n, n->name,
                                  NULL)) != POPC_OK)
        goto done;
    for (int i = 0; i < n_outputs; i++) {
        popc_view v = popc_graph_value_info(tg, outs[i]);

        if (v.dtype == POPC_DTYPE_UNDEFINED ||
            popc_view_numel(&v) > (int64_t)(MAX_FOLD_BYTES / 8))
            goto done; /* not folded: the node stays */
    }
    if ((st = popc_graph_eval(tg, NULL, 0, outs, n_outputs, res, 0, 0)) !=
        POPC_OK)
        goto done;
    *folded = 1;
    for (int i = 0; i < n_outputs && st == POPC_OK; i++)
        st = popco_add_constant(im, res[i], &outputs[i]);
done:
    for (int i = 0; i < n_outputs; i++)
        popc_tensor_free(res[i]);
    popc_graph_free(tg);
    return st;
}

popc_status popco_try_fold(popco_importer *im, const popco_node *n,
                           const popc_op_def *def, int n_outputs,
                           int *outputs, int *folded)
{
    popc_status st;

    *folded = 0;
    if (strcmp(n->domain, POPC_DOMAIN_ONNX) == 0 &&
        (strcmp(n->op, "Shape") == 0 || strcmp(n->op, "Size") == 0) &&
        n_outputs == 1) {
        if ((st = fold_shape(im, n, outputs, folded)) != POPC_OK || *folded)
            return st;
    }
    if (!def)
        return POPC_OK;
    if (def->flags & (POPC_OP_RANDOM | POPC_OP_NOFOLD | POPC_OP_HOST |
                      POPC_OP_LOSS | POPC_OP_FOREIGN) ||
        !def->forward || n->n_inputs > 64 || n_outputs > 64)
        return POPC_OK;
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] >= 0 &&
            popc_graph_value_kind(im->g, n->inputs[i]) != POPC_VALUE_CONSTANT)
            return POPC_OK;
    return eval_node(im, n, n_outputs, outputs, folded);
}
