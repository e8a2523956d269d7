/* leaky_relu.c - an out-of-tree op plugin for popc: com.acme::LeakyRelu,
** PopTorch's custom-op example, with its gradient.
**
**   com.acme::LeakyRelu      (x) -> y,  y = x < 0 ? alpha * x : x
**   com.acme::LeakyReluGrad  (dy, x) -> dx,  dx = dy * (x < 0 ? alpha : 1)
**
** Attribute alpha (float, default 0.01) on both. float32 and float16
** (computed in float32, rounded to nearest even). The kernels split their
** elements over the device's workers (POPC_OP_SPLIT).
**
** Built against the installed SDK only (see Makefile and docs/plugins.md):
** it includes <popc/plugin.h> and <popc/services.h>, never links libpopc,
** and calls the core through the host table it receives in init(). Its
** float16 conversion is the host's (the popc_f16_to_f32_n and
** popc_f32_to_f16_n services); on a host without them init() fails with a
** message naming the service, and the plugin is not loaded.
*/
#include <stdint.h>
#include <string.h>

#include <popc/plugin.h>
#include <popc/services.h>

#define DOMAIN "com.acme"

static const popc_host *host;

/* ---- float16 (IEEE binary16 stored as uint16_t) ------------------------- */

/* The host's conversion (popc/services.h), looked up once in init(): whole
** blocks per call, with the CPU's F16C instructions when it has them. */
static popc_f16_to_f32_n_fn to_f32_n;
static popc_f32_to_f16_n_fn to_f16_n;

/* Elements converted per service call; the block lives on the stack. */
#define BLOCK 256

/* ---- helpers ------------------------------------------------------------- */

static void share(int64_t n, int part, int n_parts, int64_t *lo, int64_t *hi)
{
    *lo = n * part / n_parts;
    *hi = n * (part + 1) / n_parts;
}

static int is_float(popc_dtype dt)
{
    return dt == POPC_DTYPE_F32 || dt == POPC_DTYPE_F16;
}

static int same_shape(const popc_view *a, const popc_view *b)
{
    return a->rank == b->rank &&
           memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank) == 0;
}

/* ---- LeakyRelu ------------------------------------------------------------- */

static popc_status lrelu_infer(popc_infer_ctx *ic)
{
    const popc_view *x = &ic->inputs[0];

    if (!is_float(x->dtype))
        return ic->host->set_error(POPC_EINVAL, "LeakyRelu '%s': input x is "
                                   "%s; com.acme::LeakyRelu takes float32 or "
                                   "float16", ic->node_name,
                                   popc_dtype_name(x->dtype));
    ic->outputs[0] = *x;
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

static popc_status lrelu_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0];
    float alpha = (float)popc_attr_float(kc->attrs, "alpha", 0.01);
    int64_t lo, hi;

    share(popc_view_numel(x), kc->part, kc->n_parts, &lo, &hi);
    if (x->dtype == POPC_DTYPE_F32) {
        const float *in = x->data;
        float *out = kc->outputs[0].data;

        for (int64_t i = lo; i < hi; i++)
            out[i] = in[i] < 0.0f ? alpha * in[i] : in[i];
    } else {
        const uint16_t *in = x->data;
        uint16_t *out = kc->outputs[0].data;
        float v[BLOCK];

        for (int64_t b = lo; b < hi; b += BLOCK) {
            int64_t n = hi - b < BLOCK ? hi - b : BLOCK;

            to_f32_n(v, in + b, n);
            for (int64_t i = 0; i < n; i++)
                v[i] = v[i] < 0.0f ? alpha * v[i] : v[i];
            to_f16_n(out + b, v, n);
        }
    }
    return POPC_OK;
}

static popc_status lrelu_grad(popc_grad_ctx *gc)
{
    int in[2];
    popc_attr alpha;

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    in[0] = gc->output_grads[0];
    in[1] = gc->inputs[0];
    memset(&alpha, 0, sizeof alpha);
    alpha.name = "alpha";
    alpha.type = POPC_ATTR_FLOAT;
    alpha.f = popc_attr_float(gc->attrs, "alpha", 0.01);
    return gc->host->grad_add_node(gc, DOMAIN, "LeakyReluGrad", in, 2,
                                   &gc->input_grads[0], 1, &alpha, 1);
}

/* ---- LeakyReluGrad ------------------------------------------------------------ */

static popc_status lrelu_grad_infer(popc_infer_ctx *ic)
{
    const popc_view *dy = &ic->inputs[0], *x = &ic->inputs[1];

    if (!is_float(x->dtype) || dy->dtype != x->dtype || !same_shape(dy, x))
        return ic->host->set_error(POPC_EINVAL, "LeakyReluGrad '%s': dy (%s) "
                                   "and x (%s) must be float32 or float16 of "
                                   "one dtype and shape", ic->node_name,
                                   popc_dtype_name(dy->dtype),
                                   popc_dtype_name(x->dtype));
    ic->outputs[0] = *x;
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

static popc_status lrelu_grad_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[1];
    float alpha = (float)popc_attr_float(kc->attrs, "alpha", 0.01);
    int64_t lo, hi;

    share(popc_view_numel(x), kc->part, kc->n_parts, &lo, &hi);
    if (x->dtype == POPC_DTYPE_F32) {
        const float *dy = kc->inputs[0].data, *xs = x->data;
        float *dx = kc->outputs[0].data;

        for (int64_t i = lo; i < hi; i++)
            dx[i] = xs[i] < 0.0f ? alpha * dy[i] : dy[i];
    } else {
        const uint16_t *dy = kc->inputs[0].data, *xs = x->data;
        uint16_t *dx = kc->outputs[0].data;
        float g[BLOCK], v[BLOCK];

        for (int64_t b = lo; b < hi; b += BLOCK) {
            int64_t n = hi - b < BLOCK ? hi - b : BLOCK;

            to_f32_n(g, dy + b, n);
            to_f32_n(v, xs + b, n);
            for (int64_t i = 0; i < n; i++)
                g[i] = v[i] < 0.0f ? alpha * g[i] : g[i];
            to_f16_n(dx + b, g, n);
        }
    }
    return POPC_OK;
}

/* ---- registration -------------------------------------------------------------- */

static const popc_op_def acme_ops[] = {
    {
        .size = sizeof(popc_op_def),
        .domain = DOMAIN,
        .name = "LeakyRelu",
        .since_version = 1,
        .min_inputs = 1, .max_inputs = 1,
        .min_outputs = 1, .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = lrelu_infer,
        .forward = lrelu_forward,
        .grad = lrelu_grad,
        .doc = "y = x < 0 ? alpha * x : x (attribute alpha, default 0.01)",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = DOMAIN,
        .name = "LeakyReluGrad",
        .since_version = 1,
        .min_inputs = 2, .max_inputs = 2,
        .min_outputs = 1, .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = lrelu_grad_infer,
        .forward = lrelu_grad_forward,
        .doc = "dx = dy * (x < 0 ? alpha : 1), the gradient of LeakyRelu",
    },
};

/* A service by name, or NULL on a host older than services (before
** 0.4.0) or than this one. */
static void *service(const popc_host *h, const char *name)
{
    if (!POPC_HAS_FIELD(popc_host, h->size, get_proc) || !h->get_proc)
        return NULL;
    return h->get_proc(name);
}

static popc_status acme_init(const popc_host *h, popc_registrar *reg)
{
    popc_status st;

    host = h;
    to_f32_n = (popc_f16_to_f32_n_fn)service(h, POPC_SERVICE_F16_TO_F32_N);
    to_f16_n = (popc_f32_to_f16_n_fn)service(h, POPC_SERVICE_F32_TO_F16_N);
    if (!to_f32_n || !to_f16_n)
        return h->set_error(POPC_EUNSUPPORTED, "leaky_relu: the host has no "
                            "service '%s'; load this plugin into libpopc "
                            "0.4.0 or later",
                            !to_f32_n ? POPC_SERVICE_F16_TO_F32_N
                                      : POPC_SERVICE_F32_TO_F16_N);
    for (size_t i = 0; i < sizeof acme_ops / sizeof acme_ops[0]; i++)
        if ((st = h->register_op(reg, &acme_ops[i])) != POPC_OK)
            return st;
    return POPC_OK;
}

/* The first argument must be the file's basename: leaky_relu.so. */
POPC_PLUGIN_DEFINE(leaky_relu, "1.0.0", "com.acme::LeakyRelu custom op "
                   "with its gradient", "MIT", acme_init, NULL)
