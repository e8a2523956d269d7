/* cube.c - an out-of-tree op plugin for popc: com.acme::Cube, PopTorch's
** two-output custom-op example, with its gradient.
**
**   com.acme::Cube      (x, bias) -> (x^3 + bias, x^3)
**   com.acme::CubeGrad  (x, bias, dy, dz) -> (dx, dbias)
**                       dx = 3 x^2 (dy + dz), dbias = dy summed over the
**                       elements each bias element was added to
**
** float32. bias has x's shape, or the shape of x's trailing dimensions
** (bias [C] for x [N, C]), or one element. dy or dz may be absent (-1)
** when no gradient flows into that output. Kernels split their elements
** over the device's workers (POPC_OP_SPLIT).
**
** Built against the installed SDK only (see Makefile and docs/plugins.md).
*/
#include <stdint.h>
#include <string.h>

#include <popc/plugin.h>

#define DOMAIN "com.acme"

static const popc_host *host;

static void share(int64_t n, int part, int n_parts, int64_t *lo, int64_t *hi)
{
    *lo = n * part / n_parts;
    *hi = n * (part + 1) / n_parts;
}

static int present(const popc_view *v)
{
    return v->dtype != POPC_DTYPE_UNDEFINED;
}

/* bias fits x: one element, or equal to x's trailing dimensions. */
static popc_status check_bias(const popc_host *h, const char *op,
                              const char *node, const popc_view *x,
                              const popc_view *b)
{
    int fits = popc_view_numel(b) == 1;

    if (x->dtype != POPC_DTYPE_F32 || b->dtype != POPC_DTYPE_F32)
        return h->set_error(POPC_EINVAL, "%s '%s': x is %s and bias %s; "
                            "com.acme::Cube takes float32", op, node,
                            popc_dtype_name(x->dtype),
                            popc_dtype_name(b->dtype));
    if (!fits && b->rank <= x->rank)
        fits = memcmp(b->dims, x->dims + (x->rank - b->rank),
                      sizeof(int64_t) * (size_t)b->rank) == 0;
    if (!fits)
        return h->set_error(POPC_EINVAL, "%s '%s': bias (rank %d, %lld "
                            "elements) must have x's trailing dimensions or "
                            "one element", op, node, b->rank,
                            (long long)popc_view_numel(b));
    return POPC_OK;
}

/* ---- Cube ------------------------------------------------------------------ */

static popc_status cube_infer(popc_infer_ctx *ic)
{
    popc_status st;

    if ((st = check_bias(ic->host, "Cube", ic->node_name, &ic->inputs[0],
                         &ic->inputs[1])) != POPC_OK)
        return st;
    for (int j = 0; j < ic->n_outputs; j++) {
        ic->outputs[j] = ic->inputs[0];
        ic->outputs[j].data = NULL;
    }
    return POPC_OK;
}

static popc_status cube_forward(const popc_kernel_ctx *kc)
{
    const float *x = kc->inputs[0].data, *b = kc->inputs[1].data;
    float *y = kc->outputs[0].data, *z = kc->outputs[1].data;
    int64_t nb = popc_view_numel(&kc->inputs[1]), lo, hi;

    share(popc_view_numel(&kc->inputs[0]), kc->part, kc->n_parts, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        float c = x[i] * x[i] * x[i];
        z[i] = c;
        y[i] = c + b[i % nb];
    }
    return POPC_OK;
}

static popc_status cube_grad(popc_grad_ctx *gc)
{
    int in[4];

    if (gc->output_grads[0] < 0 && gc->output_grads[1] < 0)
        return POPC_OK;
    in[0] = gc->inputs[0];
    in[1] = gc->inputs[1];
    in[2] = gc->output_grads[0];
    in[3] = gc->output_grads[1];
    return gc->host->grad_add_node(gc, DOMAIN, "CubeGrad", in, 4,
                                   gc->input_grads, 2, NULL, 0);
}

/* ---- CubeGrad --------------------------------------------------------------- */

static popc_status cube_grad_infer(popc_infer_ctx *ic)
{
    const popc_view *x = &ic->inputs[0];
    popc_status st;

    if ((st = check_bias(ic->host, "CubeGrad", ic->node_name, x,
                         &ic->inputs[1])) != POPC_OK)
        return st;
    for (int k = 2; k < ic->n_inputs; k++) {
        const popc_view *g = &ic->inputs[k];

        if (present(g) &&
            (g->dtype != POPC_DTYPE_F32 ||
             popc_view_numel(g) != popc_view_numel(x)))
            return ic->host->set_error(POPC_EINVAL, "CubeGrad '%s': the "
                                       "gradient of output %d must be "
                                       "float32 shaped like x", ic->node_name,
                                       k - 2);
    }
    ic->outputs[0] = *x;
    ic->outputs[0].data = NULL;
    if (ic->n_outputs > 1) {
        ic->outputs[1] = ic->inputs[1];
        ic->outputs[1].data = NULL;
    }
    return POPC_OK;
}

static popc_status cube_grad_forward(const popc_kernel_ctx *kc)
{
    const popc_view *vdy = kc->n_inputs > 2 ? &kc->inputs[2] : NULL;
    const popc_view *vdz = kc->n_inputs > 3 ? &kc->inputs[3] : NULL;
    const float *x = kc->inputs[0].data;
    const float *dy = vdy && present(vdy) ? vdy->data : NULL;
    const float *dz = vdz && present(vdz) ? vdz->data : NULL;
    float *dx = kc->outputs[0].data;
    int64_t n = popc_view_numel(&kc->inputs[0]);
    int64_t nb = popc_view_numel(&kc->inputs[1]), lo, hi;

    share(n, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        float g = (dy ? dy[i] : 0.0f) + (dz ? dz[i] : 0.0f);
        dx[i] = 3.0f * x[i] * x[i] * g;
    }
    if (kc->n_outputs < 2)
        return POPC_OK;
    /* each part owns a range of bias elements */
    share(nb, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t j = lo; j < hi; j++) {
        float *db = kc->outputs[1].data;
        double s = 0.0;

        for (int64_t i = j; dy && i < n; i += nb)
            s += dy[i];
        db[j] = (float)s;
    }
    return POPC_OK;
}

/* ---- registration -------------------------------------------------------------- */

static const popc_op_def cube_ops[] = {
    {
        .size = sizeof(popc_op_def),
        .domain = DOMAIN,
        .name = "Cube",
        .since_version = 1,
        .min_inputs = 2, .max_inputs = 2,
        .min_outputs = 2, .max_outputs = 2,
        .flags = POPC_OP_SPLIT,
        .infer = cube_infer,
        .forward = cube_forward,
        .grad = cube_grad,
        .doc = "(x, bias) -> (x^3 + bias, x^3)",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = DOMAIN,
        .name = "CubeGrad",
        .since_version = 1,
        .min_inputs = 2, .max_inputs = 4,
        .min_outputs = 1, .max_outputs = 2,
        .flags = POPC_OP_SPLIT,
        .infer = cube_grad_infer,
        .forward = cube_grad_forward,
        .doc = "(x, bias, dy, dz) -> (dx, dbias), the gradient of Cube",
    },
};

static popc_status cube_init(const popc_host *h, popc_registrar *reg)
{
    popc_status st;

    host = h;
    for (size_t i = 0; i < sizeof cube_ops / sizeof cube_ops[0]; i++)
        if ((st = h->register_op(reg, &cube_ops[i])) != POPC_OK)
            return st;
    return POPC_OK;
}

/* The first argument must be the file's basename: cube.so. */
POPC_PLUGIN_DEFINE(cube, "1.0.0", "com.acme::Cube two-output custom op with "
                   "its gradient", "MIT", cube_init, NULL)
