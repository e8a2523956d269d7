/* pass_transpose.c - data movement that cancels or chains:
**   Transpose(Transpose(x, p), q)  ->  x when the permutations compose to
**                                      the identity, else one Transpose;
**   a chain of Reshape, Flatten, Squeeze and Unsqueeze -> one Reshape to
**                                      the last shape, or x itself when
**                                      that is x's shape.
** Shapes are static at compile, so every shape here is known.
*/
#include "config.h"

#include "opt/opt_priv.h"

static int is_reshaping(const opt_ctx *c, int n)
{
    return opt_is(c, n, "Reshape") || opt_is(c, n, "Flatten") ||
           opt_is(c, n, "Squeeze") || opt_is(c, n, "Unsqueeze");
}

static int perm_of(const opt_ctx *c, int n, int rank, int64_t *p)
{
    popc_attrs at = popc_graph_node_attrs(c->g, n);
    int64_t k = popc_attr_ints(&at, "perm", p, POPC_MAX_RANK);

    if (k < 0) { /* default: reverse the dims */
        for (int i = 0; i < rank; i++)
            p[i] = rank - 1 - i;
        return 1;
    }
    return k == rank;
}

static popc_status chain_transposes(opt_ctx *c, int outer, int *done)
{
    int y = opt_input(c, outer, 0), inner = opt_producer(c, y), x;
    int64_t p[POPC_MAX_RANK], q[POPC_MAX_RANK], r[POPC_MAX_RANK];
    popc_view xv;
    int ident = 1;

    if (inner < 0 || !opt_is(c, inner, "Transpose") ||
        opt_sole_reader(c, y) != outer || !opt_same_place(c, inner, outer))
        return POPC_OK;
    x = opt_input(c, inner, 0);
    xv = popc_graph_value_info(c->g, x);
    if (!perm_of(c, inner, xv.rank, p) || !perm_of(c, outer, xv.rank, q))
        return POPC_OK;
    for (int i = 0; i < xv.rank; i++) {
        if (q[i] < 0 || q[i] >= xv.rank)
            return POPC_OK;
        r[i] = p[q[i]];
        ident &= r[i] == i;
    }
    if (ident && opt_exported(c, opt_output(c, outer, 0)))
        return POPC_OK;
    c->taken[inner] = c->taken[outer] = 1;
    *done = 1;
    if (ident)
        return popc_graph_replace_uses(c->g, opt_output(c, outer, 0), x);
    popc_attr a = popc_attr_make_ints("perm", r, xv.rank);
    popc_node_desc d = {.size = sizeof d, .op = "Transpose",
                        .inputs = &x, .n_inputs = 1, .n_outputs = 1,
                        .attrs = &a, .n_attrs = 1};
    return opt_replace(c, inner, outer, &d, NULL);
}

/* The first node of outer's chain of reshaping nodes, each read only by
** the next. */
static int chain_start(const opt_ctx *c, int outer)
{
    int start = outer;

    for (;;) {
        int v = opt_input(c, start, 0), p = opt_producer(c, v);

        if (p < 0 || !is_reshaping(c, p) || opt_sole_reader(c, v) != start ||
            !opt_same_place(c, p, outer))
            return start;
        start = p;
    }
}

static popc_status chain_reshapes(opt_ctx *c, int outer, int *done)
{
    int start = chain_start(c, outer), x = opt_input(c, start, 0), shape;
    int out = opt_output(c, outer, 0);
    popc_view xv = popc_graph_value_info(c->g, x);
    popc_view yv = popc_graph_value_info(c->g, out);
    int64_t rank = yv.rank;
    popc_status st;

    if (xv.dtype == POPC_DTYPE_UNDEFINED || yv.dtype != xv.dtype)
        return POPC_OK;
    if (opt_same_shape(&xv, &yv) && !opt_exported(c, out)) {
        for (int n = outer;; n = opt_producer(c, opt_input(c, n, 0))) {
            c->taken[n] = 1;
            if (n == start)
                break;
        }
        *done = 1;
        return popc_graph_replace_uses(c->g, out, x);
    }
    if (start == outer || opt_same_shape(&xv, &yv))
        return POPC_OK; /* one node, or an output that must stay */
    {
        popc_tensor *t = NULL;
        int64_t *dims;

        if ((st = popc_tensor_new(POPC_DTYPE_I64, &rank, 1, &t)) != POPC_OK)
            return st;
        dims = popc_tensor_data(t);
        for (int i = 0; i < yv.rank; i++)
            dims[i] = yv.dims[i];
        st = popc_graph_add_constant(c->g, NULL, t, &shape);
        popc_tensor_free(t);
        if (st != POPC_OK)
            return st;
    }
    int ins[2] = {x, shape};
    popc_node_desc d = {.size = sizeof d, .op = "Reshape", .inputs = ins,
                        .n_inputs = 2, .n_outputs = 1};
    if ((st = opt_replace(c, start, outer, &d, NULL)) != POPC_OK)
        return st;
    for (int n = outer;; n = popc_graph_value_producer(
                             c->g, opt_input(c, n, 0))) {
        c->taken[n] = 1;
        if (n == start)
            break;
    }
    *done = 1;
    return POPC_OK;
}

popc_status opt_cancel_transposes(opt_ctx *c, int *rewrites)
{
    popc_status st;

    /* from the end: the outermost node of a chain is met first */
    for (int n = c->n_nodes - 1; n >= 0; n--) {
        int done = 0;

        if (opt_is(c, n, "Transpose"))
            st = chain_transposes(c, n, &done);
        else if (is_reshaping(c, n))
            st = chain_reshapes(c, n, &done);
        else
            continue;
        if (st != POPC_OK)
            return st;
        *rewrites += done;
    }
    return POPC_OK;
}
