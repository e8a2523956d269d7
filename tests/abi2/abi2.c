/* abi2.c - an op and optimizer plugin as a third party built it against
** popc 0.3.0: compiled only against the frozen ABI 2 headers of
** tests/abi2/include (never this release's), then loaded by check_abi2.
**
** abi2.test::ScaleAdd(x, w) = x * w + state->c, elementwise, where c is the
** float attribute "c" that prepare() reads into per-node state (so forward
** is right only if prepare ran and its state arrived). grad() builds the
** backward nodes through the host; cost() fails when the attribute
** "fail_cost" is set, so a test can see that compile calls it.
** abi2_sgd: w -= lr * g, with an lr hyper-parameter.
*/
#include "popc/plugin.h"

static const popc_host *host;

typedef struct scale_state {
    float c;
} scale_state;

static popc_status scale_infer(popc_infer_ctx *ic)
{
    if (ic->inputs[0].dtype != POPC_DTYPE_F32 ||
        popc_view_numel(&ic->inputs[0]) != popc_view_numel(&ic->inputs[1]))
        return host->set_error(POPC_EINVAL, "ScaleAdd '%s': x and w must be "
                               "float32 of one size", ic->node_name);
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

static popc_status scale_prepare(const popc_infer_ctx *ic, void **state)
{
    scale_state *s = host->alloc(sizeof *s);

    if (!s)
        return host->set_error(POPC_ENOMEM, "ScaleAdd: out of memory");
    s->c = (float)popc_attr_float(ic->attrs, "c", 0.0);
    *state = s;
    return POPC_OK;
}

static void scale_release(void *state)
{
    host->free(state);
}

static popc_status scale_forward(const popc_kernel_ctx *kc)
{
    const scale_state *s = kc->state;
    const float *x = kc->inputs[0].data, *w = kc->inputs[1].data;
    float *y = kc->outputs[0].data;
    int64_t n = popc_view_numel(&kc->inputs[0]);

    if (!s)
        return host->set_error(POPC_ESTATE, "ScaleAdd '%s': no state from "
                               "prepare()", kc->node_name);
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] * w[i] + s->c;
    return POPC_OK;
}

/* dx = dy * w, dw = dy * x */
static popc_status scale_grad(popc_grad_ctx *gc)
{
    int dy = gc->output_grads[0];
    popc_status st;

    if (dy < 0)
        return POPC_OK;
    for (int i = 0; i < 2; i++) {
        int in[2] = {dy, gc->inputs[1 - i]};

        if ((st = gc->host->grad_add_node(gc, NULL, "Mul", in, 2,
                                          &gc->input_grads[i], 1, NULL,
                                          0)) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

static popc_status scale_cost(const popc_infer_ctx *ic, popc_cost *cost)
{
    if (popc_attr_int(ic->attrs, "fail_cost", 0))
        return host->set_error(POPC_EINVAL, "ScaleAdd '%s': cost() was "
                               "called (fail_cost)", ic->node_name);
    cost->flops = 2.0 * (double)popc_view_numel(&ic->outputs[0]);
    cost->bytes = 12.0 * (double)popc_view_numel(&ic->outputs[0]);
    cost->temp_bytes = 0;
    return POPC_OK;
}

static const popc_op_def scale_add = {
    .size = sizeof(popc_op_def), .domain = "abi2.test", .name = "ScaleAdd",
    .since_version = 1, .min_inputs = 2, .max_inputs = 2, .min_outputs = 1,
    .max_outputs = 1, .infer = scale_infer, .forward = scale_forward,
    .grad = scale_grad, .cost = scale_cost, .prepare = scale_prepare,
    .release = scale_release, .doc = "x * w + c, built against popc 0.3.0"};

static int n_state(const double *hypers)
{
    (void)hypers;
    return 0;
}

static const char *state_name(const double *hypers, int index)
{
    (void)hypers;
    (void)index;
    return "";
}

static popc_status sgd_step(const popc_optim_step_ctx *c)
{
    for (int64_t i = 0; i < c->n; i++)
        c->weight[i] -= (float)c->hypers[0] * c->grad[i];
    return POPC_OK;
}

static const popc_hyper_def hypers[] = {{"lr", 0.01, POPC_HYPER_GROUP}};

static const popc_optim_def abi2_sgd = {
    .size = sizeof(popc_optim_def), .name = "abi2_sgd", .n_hypers = 1,
    .hypers = hypers, .n_state = n_state, .state_name = state_name,
    .step = sgd_step};

static popc_status abi2_init(const popc_host *h, popc_registrar *reg)
{
    popc_status st;

    host = h;
    if (h->abi_version != 2)
        return h->set_error(POPC_EABI, "abi2: the host says ABI %u",
                            (unsigned)h->abi_version);
    if ((st = h->register_op(reg, &scale_add)) != POPC_OK)
        return st;
    return h->register_optimizer(reg, &abi2_sgd);
}

POPC_PLUGIN_DEFINE(abi2, "0.3.0", "an op and an optimizer built against "
                   "popc 0.3.0 (plugin ABI 2)", "MIT", abi2_init, NULL)
