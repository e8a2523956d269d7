/* graph_testops.c - see graph_testops.h. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/graph_testops.h"

int testops_echo_extra;

popc_tensor *testops_f32(const int64_t *dims, int rank, const float *data)
{
    popc_tensor *t = NULL;
    popc_status st = data ? popc_tensor_from_data(POPC_DTYPE_F32, dims, rank,
                                                  data, &t)
                          : popc_tensor_new(POPC_DTYPE_F32, dims, rank, &t);
    if (st != POPC_OK)
        abort();
    return t;
}

/* ---- infer ------------------------------------------------------------------ */

static popc_status same_shape(popc_infer_ctx *ic)
{
    for (int i = 0; i < ic->n_inputs; i++) {
        const popc_view *a = &ic->inputs[i], *b = &ic->inputs[0];
        int ok = a->dtype == POPC_DTYPE_F32 && a->rank == b->rank;
        for (int d = 0; ok && d < a->rank; d++)
            ok = a->dims[d] == b->dims[d];
        if (!ok)
            return ic->host->set_error(POPC_EINVAL, "node '%s': input %d does "
                                       "not match input 0 (float32, same "
                                       "shape)", ic->node_name, i);
    }
    for (int j = 0; j < ic->n_outputs; j++) {
        ic->outputs[j] = ic->inputs[0];
        ic->outputs[j].data = NULL;
    }
    return POPC_OK;
}

static popc_status scalar_out(popc_infer_ctx *ic)
{
    if (ic->inputs[0].dtype != POPC_DTYPE_F32)
        return ic->host->set_error(POPC_EINVAL, "node '%s': float32 only",
                                   ic->node_name);
    memset(&ic->outputs[0], 0, sizeof ic->outputs[0]);
    ic->outputs[0].dtype = POPC_DTYPE_F32;
    return POPC_OK;
}

static popc_status like_second(popc_infer_ctx *ic)
{
    ic->outputs[0] = ic->inputs[1];
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

static popc_status echo_infer(popc_infer_ctx *ic)
{
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    if (ic->outputs[0].rank > 0)
        ic->outputs[0].dims[0] += testops_echo_extra;
    return POPC_OK;
}

/* ---- kernels ---------------------------------------------------------------- */

#define IN(k, i) ((const float *)(k)->inputs[i].data)
#define OUT(k, j) ((float *)(k)->outputs[j].data)
#define N(k) popc_view_numel(&(k)->outputs[0])

static popc_status add_fwd(const popc_kernel_ctx *k)
{
    for (int64_t i = 0; i < N(k); i++)
        OUT(k, 0)[i] = IN(k, 0)[i] + IN(k, 1)[i];
    return POPC_OK;
}

static popc_status mul_fwd(const popc_kernel_ctx *k)
{
    for (int64_t i = 0; i < N(k); i++)
        OUT(k, 0)[i] = IN(k, 0)[i] * IN(k, 1)[i];
    return POPC_OK;
}

static popc_status square_fwd(const popc_kernel_ctx *k)
{
    for (int64_t i = 0; i < N(k); i++)
        OUT(k, 0)[i] = IN(k, 0)[i] * IN(k, 0)[i];
    return POPC_OK;
}

static popc_status scale_fwd(const popc_kernel_ctx *k)
{
    float a = (float)popc_attr_float(k->attrs, "alpha", 1.0);
    for (int64_t i = 0; i < N(k); i++)
        OUT(k, 0)[i] = a * IN(k, 0)[i];
    return POPC_OK;
}

static popc_status split2_fwd(const popc_kernel_ctx *k)
{
    for (int64_t i = 0; i < N(k); i++) {
        OUT(k, 0)[i] = IN(k, 0)[i];
        OUT(k, 1)[i] = 2.0f * IN(k, 0)[i];
    }
    return POPC_OK;
}

static popc_status copy_fwd(const popc_kernel_ctx *k)
{
    memcpy(OUT(k, 0), IN(k, 0),
           (size_t)popc_view_numel(&k->inputs[0]) * sizeof(float));
    return POPC_OK;
}

static popc_status echo_fwd(const popc_kernel_ctx *k)
{
    int64_t n = popc_view_numel(&k->inputs[0]);
    memcpy(OUT(k, 0), IN(k, 0),
           (size_t)(n < N(k) ? n : N(k)) * sizeof(float));
    return POPC_OK;
}

static popc_status sumloss_fwd(const popc_kernel_ctx *k)
{
    double s = 0;
    for (int64_t i = 0; i < popc_view_numel(&k->inputs[0]); i++)
        s += IN(k, 0)[i];
    OUT(k, 0)[0] = (float)s;
    return POPC_OK;
}

static popc_status fill_fwd(const popc_kernel_ctx *k)
{
    for (int64_t i = 0; i < N(k); i++)
        OUT(k, 0)[i] = IN(k, 0)[0];
    return POPC_OK;
}

/* splitmix64: the test's own stream from the kernel's seed */
static uint64_t mix(uint64_t s, int i)
{
    uint64_t z = s + 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static popc_status rand_fwd(const popc_kernel_ctx *k)
{
    uint64_t s = k->seed;
    for (int64_t i = 0; i < N(k); i++) {
        s = mix(s, (int)i);
        OUT(k, 0)[i] = (float)(s >> 40) / 16777216.0f;
    }
    return POPC_OK;
}

/* ---- gradients ------------------------------------------------------------- */

static popc_status add_node(popc_grad_ctx *gc, const char *op, int a, int b,
                            int *y)
{
    int in[2] = {a, b};
    return gc->host->grad_add_node(gc, "test", op, in, b < 0 ? 1 : 2, y, 1,
                                   NULL, 0);
}

static popc_status add_grad(popc_grad_ctx *gc)
{
    gc->input_grads[0] = gc->output_grads[0];
    gc->input_grads[1] = gc->output_grads[0];
    return POPC_OK;
}

static popc_status mul_grad(popc_grad_ctx *gc)
{
    popc_status st;
    int g = gc->output_grads[0];

    if ((st = add_node(gc, "Mul", g, gc->inputs[1], &gc->input_grads[0])))
        return st;
    return add_node(gc, "Mul", g, gc->inputs[0], &gc->input_grads[1]);
}

static popc_status square_grad(popc_grad_ctx *gc)
{
    popc_status st;
    int t;

    if ((st = add_node(gc, "Mul", gc->output_grads[0], gc->inputs[0], &t)))
        return st;
    return add_node(gc, "Add", t, t, &gc->input_grads[0]);
}

static popc_status scale_grad(popc_grad_ctx *gc)
{
    popc_attr a;
    int in = gc->output_grads[0];

    memset(&a, 0, sizeof a);
    a.name = "alpha";
    a.type = POPC_ATTR_FLOAT;
    a.f = popc_attr_float(gc->attrs, "alpha", 1.0);
    return gc->host->grad_add_node(gc, "test", "Scale", &in, 1,
                                   &gc->input_grads[0], 1, &a, 1);
}

static popc_status split2_grad(popc_grad_ctx *gc)
{
    int g1 = gc->output_grads[0], g2 = gc->output_grads[1], t;
    popc_status st;

    if (g2 < 0) {
        gc->input_grads[0] = g1;
        return POPC_OK;
    }
    if ((st = add_node(gc, "Add", g2, g2, &t)))
        return st;
    if (g1 < 0) {
        gc->input_grads[0] = t;
        return POPC_OK;
    }
    return add_node(gc, "Add", g1, t, &gc->input_grads[0]);
}

static popc_status sumloss_grad(popc_grad_ctx *gc)
{
    return add_node(gc, "Fill", gc->output_grads[0], gc->inputs[0],
                    &gc->input_grads[0]);
}

static popc_status badgrad_grad(popc_grad_ctx *gc)
{
    popc_attr a;
    int in = gc->output_grads[0];

    memset(&a, 0, sizeof a);
    a.name = "alpha";
    a.type = POPC_ATTR_FLOAT;
    a.f = 2.9; /* the forward scales by 3 */
    return gc->host->grad_add_node(gc, "test", "Scale", &in, 1,
                                   &gc->input_grads[0], 1, &a, 1);
}

static popc_status badgrad_fwd(const popc_kernel_ctx *k)
{
    for (int64_t i = 0; i < N(k); i++)
        OUT(k, 0)[i] = 3.0f * IN(k, 0)[i];
    return POPC_OK;
}

/* ---- stand-ins for plugin ops, registered only when absent ------------------- */

static popc_status sum_fwd(const popc_kernel_ctx *k)
{
    for (int64_t i = 0; i < N(k); i++) {
        float s = 0;
        for (int j = 0; j < k->n_inputs; j++)
            s += IN(k, j)[i];
        OUT(k, 0)[i] = s;
    }
    return POPC_OK;
}

static popc_status onnx_mul_grad(popc_grad_ctx *gc)
{
    int g = gc->output_grads[0], in[2];
    popc_status st;

    in[0] = g;
    in[1] = gc->inputs[1];
    if ((st = gc->host->grad_add_node(gc, NULL, "Mul", in, 2,
                                      &gc->input_grads[0], 1, NULL, 0)))
        return st;
    in[1] = gc->inputs[0];
    return gc->host->grad_add_node(gc, NULL, "Mul", in, 2,
                                   &gc->input_grads[1], 1, NULL, 0);
}

static popc_status idloss_infer(popc_infer_ctx *ic)
{
    if (popc_attr_int(ic->attrs, "reduction", 0) != 0)
        return ic->host->set_error(POPC_EUNSUPPORTED, "node '%s': the test "
                                   "IdentityLoss sums only", ic->node_name);
    return scalar_out(ic);
}

static const popc_op_def standins[] = {
    {.size = sizeof(popc_op_def), .domain = "ai.onnx", .name = "Sum",
     .since_version = 1, .min_inputs = 1, .max_inputs = -1,
     .min_outputs = 1, .max_outputs = 1, .infer = same_shape,
     .forward = sum_fwd},
    {.size = sizeof(popc_op_def), .domain = "ai.onnx", .name = "Mul",
     .since_version = 1, .min_inputs = 2, .max_inputs = 2,
     .min_outputs = 1, .max_outputs = 1, .infer = same_shape,
     .forward = mul_fwd, .grad = onnx_mul_grad},
    {.size = sizeof(popc_op_def), .domain = "popc", .name = "IdentityLoss",
     .since_version = 1, .min_inputs = 1, .max_inputs = 1,
     .min_outputs = 1, .max_outputs = 1, .flags = POPC_OP_LOSS,
     .infer = idloss_infer, .forward = sumloss_fwd, .grad = sumloss_grad},
};

/* ---- definitions ----------------------------------------------------------- */

#define DEF(NAME, MIN, MAX, NOUT, FLAGS, INFER, FWD, GRAD)                   \
    {.size = sizeof(popc_op_def), .domain = "test", .name = NAME,            \
     .since_version = 1, .min_inputs = MIN, .max_inputs = MAX,              \
     .min_outputs = NOUT, .max_outputs = NOUT, .flags = FLAGS,              \
     .infer = INFER, .forward = FWD, .grad = GRAD}

static const popc_op_def defs[] = {
    DEF("Add", 2, 2, 1, 0, same_shape, add_fwd, add_grad),
    DEF("Mul", 2, 2, 1, 0, same_shape, mul_fwd, mul_grad),
    DEF("Square", 1, 1, 1, 0, same_shape, square_fwd, square_grad),
    DEF("Scale", 1, 1, 1, 0, same_shape, scale_fwd, scale_grad),
    DEF("Split2", 1, 1, 2, 0, same_shape, split2_fwd, split2_grad),
    DEF("NoGrad", 1, 1, 1, 0, same_shape, copy_fwd, NULL),
    DEF("SumLoss", 1, 1, 1, POPC_OP_LOSS, scalar_out, sumloss_fwd,
        sumloss_grad),
    DEF("Fill", 2, 2, 1, 0, like_second, fill_fwd, NULL),
    DEF("Rand", 1, 1, 1, POPC_OP_RANDOM, same_shape, rand_fwd, NULL),
    DEF("Echo", 1, 1, 1, 0, echo_infer, echo_fwd, NULL),
    DEF("Pair", 2, 2, 1, 0, same_shape, add_fwd, add_grad),
    DEF("BadGrad", 1, 1, 1, 0, same_shape, badgrad_fwd, badgrad_grad),
};

int testops_is_standin(const popc_op_def *def)
{
    for (size_t i = 0; i < sizeof standins / sizeof standins[0]; i++)
        if (def->forward == standins[i].forward &&
            def->infer == standins[i].infer)
            return 1;
    return 0;
}

static const popc_op_def late_add =
    DEF("LateAdd", 2, 2, 1, 0, same_shape, add_fwd, add_grad);

const popc_op_def *testops_late_add(void)
{
    return &late_add;
}

popc_status testops_register(void)
{
    popc_registry *reg;
    popc_status st;

    if ((st = popc_registry_global(&reg)) != POPC_OK)
        return st;
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        if (popc_registry_find_op(reg, "test", defs[i].name, 0))
            continue;
        if ((st = popc_registry_add_op(reg, &defs[i])) != POPC_OK)
            return st;
    }
    for (size_t i = 0; i < sizeof standins / sizeof standins[0]; i++) {
        if (popc_registry_find_op(reg, standins[i].domain, standins[i].name,
                                  0))
            continue;
        if ((st = popc_registry_add_op(reg, &standins[i])) != POPC_OK)
            return st;
    }
    return POPC_OK;
}
