/* pass_linear.c - in a training graph, MatMul(A, W) by a 2-D weight
** followed by a bias Add (b of [N] or [1, N]), which is how
** torch.onnx.export writes a Linear layer on inputs of rank 3 or more,
** becomes a Gemm with the bias as C, over A's rows folded into one
** matrix:
**   Reshape(Gemm(Flatten(A, axis = rank - 1), W, b), Y's shape)
** (W read through a Transpose of its own becomes Gemm's transB).
** Gemm's gradient then takes dW and db from one read of dY
** (popc::GemmGradWeightBias, ops/nn/matmul_grad.c) where the MatMul and
** the Add gave a Gemm for dW and a separate popc::SumToShape over dY for
** db. Inference graphs are left to pass_fuse.c (popc::FusedMatMul).
*/
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "opt/opt_priv.h"
#include "popc/tensor.h"

/* A node of op named after `like`'s, placed where `like` is. */
static popc_status add_beside(opt_ctx *c, int like, const char *op,
                              const int *ins, int n_ins,
                              const popc_attr *a, int na, int *out)
{
    popc_node_desc d = {.size = sizeof d, .op = op, .inputs = ins,
                        .n_inputs = n_ins, .n_outputs = 1, .attrs = a,
                        .n_attrs = na};

    return opt_add_beside(c, like, popc_graph_node_name(c->g, like), op, &d,
                          out, NULL);
}

/* An int64 constant holding dims (Reshape's shape input). */
static popc_status shape_constant(opt_ctx *c, const int64_t *dims, int rank,
                                  int *id)
{
    int64_t n = rank;
    popc_tensor *t = NULL;
    popc_status st;

    if ((st = popc_tensor_new(POPC_DTYPE_I64, &n, 1, &t)) != POPC_OK)
        return st;
    memcpy(popc_tensor_data(t), dims, sizeof dims[0] * (size_t)rank);
    st = popc_graph_add_constant(c->g, NULL, t, id);
    popc_tensor_free(t); /* the graph holds its own reference */
    return st;
}

/* The bias operand of Add node n that reads MatMul result y of N
** columns, or -1. */
static int bias_of(const opt_ctx *c, int n, int y, int64_t N)
{
    int b = opt_other_operand(c, n, y);
    popc_view bv;

    if (b < 0 || b == y)
        return -1;
    bv = popc_graph_value_info(c->g, b);
    if (bv.dtype != POPC_DTYPE_F32 || bv.rank < 1 ||
        bv.dims[bv.rank - 1] != N ||
        (bv.rank != 1 && !(bv.rank == 2 && bv.dims[0] == 1)))
        return -1;
    return b;
}

/* MatMul n's weight: its input 1, or the matrix a Transpose that only n
** reads turns (popc_nn_linear's x @ W^T), taken by Gemm's transB
** instead (*tb = 1), which saves the Transpose and its gradient's. */
static int weight_of(opt_ctx *c, int n, int *tb)
{
    int w = opt_input(c, n, 1), t = opt_producer(c, w);
    int64_t perm[2], np;
    popc_attrs at;
    popc_view src;

    *tb = 0;
    if (t < 0 || !opt_is(c, t, "Transpose") || opt_sole_reader(c, w) != n ||
        !opt_same_place(c, t, n))
        return w;
    at = popc_graph_node_attrs(c->g, t);
    np = popc_attr_ints(&at, "perm", perm, 2);
    src = popc_graph_value_info(c->g, opt_input(c, t, 0));
    if (src.rank != 2 || at.n > 1 ||
        (np >= 0 && !(np == 2 && perm[0] == 1 && perm[1] == 0)))
        return w;
    c->taken[t] = 1;
    *tb = 1;
    return opt_input(c, t, 0);
}

static popc_status linear_at(opt_ctx *c, int n, int *done)
{
    int y = opt_output(c, n, 0), add = opt_sole_reader(c, y), b, a, a2, g;
    popc_view av = popc_graph_value_info(c->g, opt_input(c, n, 0));
    popc_view wv = popc_graph_value_info(c->g, opt_input(c, n, 1));
    popc_view yv = popc_graph_value_info(c->g, y);
    popc_attrs at = popc_graph_node_attrs(c->g, n);
    popc_attr flat;
    popc_status st;

    /* any attribute (serializedMatMul, a float16 mark) keeps the MatMul */
    if (at.n != 0 || av.dtype != POPC_DTYPE_F32 ||
        wv.dtype != POPC_DTYPE_F32 || av.rank < 2 || wv.rank != 2 ||
        popc_view_numel(&yv) == 0 || add < 0 || !opt_is(c, add, "Add") ||
        !opt_same_place(c, n, add) ||
        (b = bias_of(c, add, y, wv.dims[1])) < 0)
        return POPC_OK;
    a = opt_input(c, n, 0);
    a2 = a;
    flat = popc_attr_make_int("axis", av.rank - 1);
    if (av.rank > 2 &&
        (st = add_beside(c, n, "Flatten", &a, 1, &flat, 1, &a2)) != POPC_OK)
        return st;
    int tb, gin[3] = {a2, weight_of(c, n, &tb), b};
    popc_attr ta = popc_attr_make_int("transB", tb);
    popc_node_desc gd = {.size = sizeof gd, .op = "Gemm", .inputs = gin,
                         .n_inputs = 3, .n_outputs = 1, .attrs = &ta,
                         .n_attrs = tb};
    c->taken[n] = 1;
    c->taken[add] = 1;
    *done = 1;
    if (av.rank == 2)
        return opt_replace(c, n, add, &gd, NULL);
    if ((st = add_beside(c, n, "Gemm", gin, 3, &ta, tb, &g)) != POPC_OK)
        return st;
    int rin[2] = {g, -1};
    popc_node_desc rd = {.size = sizeof rd, .op = "Reshape", .inputs = rin,
                         .n_inputs = 2, .n_outputs = 1};
    if ((st = shape_constant(c, yv.dims, yv.rank, &rin[1])) != POPC_OK)
        return st;
    return opt_replace(c, n, add, &rd, NULL);
}

popc_status opt_linear_to_gemm(opt_ctx *c, int *rewrites)
{
    if (!c->training)
        return POPC_OK;
    return opt_each(c, "ai.onnx", "MatMul", linear_at, rewrites);
}
