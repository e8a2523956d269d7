/* good.c - a well-formed test plugin: two versions of an op, an op in a
** vendor domain, an optimizer and a backend. */
#include "popc/plugin.h"

static const popc_host *host;
static int inits;

static popc_status twice_infer(popc_infer_ctx *ic)
{
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

static popc_status twice_forward(const popc_kernel_ctx *kc)
{
    const float *x = kc->inputs[0].data;
    float *y = kc->outputs[0].data;
    int64_t n = popc_view_numel(&kc->inputs[0]);

    for (int64_t i = 0; i < n; i++)
        y[i] = 2.0f * x[i];
    return POPC_OK;
}

static const popc_op_def ops[] = {
    {.size = sizeof(popc_op_def), .name = "Twice", .since_version = 1,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .infer = twice_infer, .forward = twice_forward, .doc = "good v1"},
    {.size = sizeof(popc_op_def), .domain = "ai.onnx", .name = "Twice",
     .since_version = 7, .min_inputs = 1, .max_inputs = 1, .min_outputs = 1,
     .max_outputs = 1, .infer = twice_infer, .forward = twice_forward,
     .doc = "good v7"},
    {.size = sizeof(popc_op_def), .domain = "test.vendor", .name = "Twice",
     .since_version = 1, .min_inputs = 1, .max_inputs = 1, .min_outputs = 1,
     .max_outputs = 1, .infer = twice_infer, .forward = twice_forward,
     .doc = "good vendor"},
};

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

static const popc_optim_def optim = {
    .size = sizeof(popc_optim_def),
    .hyper_size = sizeof(popc_hyper_def), .name = "test_sgd", .n_hypers = 1,
    .hypers = hypers, .n_state = n_state, .state_name = state_name,
    .step = sgd_step};

static popc_status be_open(const popc_backend_config *cfg, void **ctx)
{
    (void)cfg;
    *ctx = host->alloc(16);
    return *ctx ? POPC_OK : host->set_error(POPC_ENOMEM, "test_cpu: oom");
}

static void be_close(void *ctx)
{
    host->free(ctx);
}

static popc_status be_compile(void *ctx, const popc_plan *plan, void **exe)
{
    (void)ctx;
    (void)plan;
    *exe = NULL;
    return POPC_OK;
}

static void be_exe_free(void *ctx, void *exe)
{
    (void)ctx;
    (void)exe;
}

static popc_status be_run(void *ctx, void *exe, const popc_frame *frame,
                          int first, int last)
{
    (void)ctx;
    (void)exe;
    (void)frame;
    (void)first;
    (void)last;
    return POPC_OK;
}

static const popc_backend_def backend = {
    .size = sizeof(popc_backend_def), .name = "test_cpu",
    .caps = POPC_BACKEND_CAN_RUN, .open = be_open, .close = be_close,
    .compile = be_compile, .exe_free = be_exe_free, .run_nodes = be_run};

static popc_status good_init(const popc_host *h, popc_registrar *reg)
{
    popc_status st;

    host = h;
    inits++;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if ((st = h->register_op(reg, &ops[i])) != POPC_OK)
            return st;
    if ((st = h->register_optimizer(reg, &optim)) != POPC_OK)
        return st;
    return h->register_backend(reg, &backend);
}

static void good_fini(void)
{
    inits--;
}

POPC_PLUGIN_DEFINE(good, "1.2.3", "test plugin that registers one of each",
                   "MIT", good_init, good_fini)
