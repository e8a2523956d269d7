/* abi2.c - plugins built against popc 0.2 or 0.3 (plugin ABI 2) in this
** ABI: the layouts they were built with, and adapters between them.
**
** ABI 2's definitions have this ABI's layout (popc_op_def is unchanged,
** popc_optim_def only grew), but its contexts lack the leading size and
** the trailing definition pointer. An adapted definition's functions are
** the converters below; the definition pointer of the context leads them
** to the entry, whose origin holds the plugin's own functions.
**
** A layer above the core (compat/): the loader and registry reach it
** through core/layer/abi_compat.h (popci_layer_abi_compat, lib/layers.c).
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/layer/alloc.h"
#include "compat/abi2.h"

/* ---- ABI 2's contexts, as 0.3.0's plugin.h declared them --------------- */

typedef struct abi2_infer_ctx {
    const popc_host *host;
    const char *node_name;
    int n_inputs;
    const popc_view *inputs;
    int n_outputs;
    popc_view *outputs;
    const popc_attrs *attrs;
    int training;
} abi2_infer_ctx;

typedef struct abi2_kernel_ctx {
    const popc_host *host;
    const char *node_name;
    int n_inputs;
    const popc_view *inputs;
    int n_outputs;
    const popc_view *outputs;
    const popc_attrs *attrs;
    int part, n_parts;
    int training;
    uint64_t seed;
    void *state;
    void *user;
    unsigned flags;
} abi2_kernel_ctx;

typedef struct abi2_grad_ctx {
    const popc_host *host;
    void *impl;
    const char *node_name;
    int n_inputs;
    const int *inputs;
    const popc_view *input_info;
    int n_outputs;
    const int *outputs;
    const popc_view *output_info;
    const int *output_grads;
    const popc_attrs *attrs;
    int *input_grads;
} abi2_grad_ctx;

typedef struct abi2_step_ctx {
    const popc_host *host;
    const char *weight_name;
    const double *hypers;
    int64_t step;
    int64_t n;
    float *weight;
    const float *grad;
    float *const *state;
} abi2_step_ctx;

/* The plugin's own functions of an adapted definition (entry origin). */
typedef struct abi2_op_fns {
    popc_status (*infer)(abi2_infer_ctx *ic);
    popc_status (*forward)(const abi2_kernel_ctx *kc);
    popc_status (*grad)(abi2_grad_ctx *gc);
    popc_status (*cost)(const abi2_infer_ctx *ic, popc_cost *cost);
    popc_status (*prepare)(const abi2_infer_ctx *ic, void **state);
} abi2_op_fns;

typedef struct abi2_optim_fns {
    popc_status (*step)(const abi2_step_ctx *c);
} abi2_optim_fns;

/* An ABI 2 grad context and the one it stands for, so that the host's
** gradient functions find the real context again. */
typedef struct abi2_grad {
    abi2_grad_ctx old;
    popc_grad_ctx *cur;
} abi2_grad;

static popc_host next_host;          /* the host's own grad functions */
static const popc_host *abi2_host;   /* the table ABI 2 plugins hold */

/* ---- the op adapter ------------------------------------------------------ */

/* The plugin functions behind an adapted op; NULL (and an error) when a
** context comes without the definition it calls, which the core always
** sets. */
static const abi2_op_fns *op_fns(uint32_t size, size_t op_end,
                                 const popc_op_def *op, const char *node)
{
    if (size < op_end || !op || !popci_registry_origin(op)) {
        popc_set_error(POPC_EPLUGIN, "node '%s': an ABI 2 op was called "
                       "without its definition in the context; this is a "
                       "bug in popc", node ? node : "?");
        return NULL;
    }
    return popci_registry_origin(op);
}

#define OP_FNS(ctx) \
    op_fns((ctx)->size, offsetof(__typeof__(*(ctx)), op) + sizeof(void *), \
           (ctx)->op, (ctx)->node_name)

static abi2_infer_ctx infer_ctx2(const popc_infer_ctx *ic)
{
    return (abi2_infer_ctx){ic->host,     ic->node_name, ic->n_inputs,
                            ic->inputs,   ic->n_outputs, ic->outputs,
                            ic->attrs,    ic->training};
}

static popc_status infer2(popc_infer_ctx *ic)
{
    const abi2_op_fns *f = OP_FNS(ic);
    abi2_infer_ctx old;

    if (!f)
        return POPC_EPLUGIN;
    old = infer_ctx2(ic);
    return f->infer(&old);
}

static popc_status cost2(const popc_infer_ctx *ic, popc_cost *cost)
{
    const abi2_op_fns *f = OP_FNS(ic);
    abi2_infer_ctx old;

    if (!f)
        return POPC_EPLUGIN;
    old = infer_ctx2(ic);
    return f->cost(&old, cost);
}

static popc_status prepare2(const popc_infer_ctx *ic, void **state)
{
    const abi2_op_fns *f = OP_FNS(ic);
    abi2_infer_ctx old;

    if (!f)
        return POPC_EPLUGIN;
    old = infer_ctx2(ic);
    return f->prepare(&old, state);
}

static popc_status forward2(const popc_kernel_ctx *kc)
{
    const abi2_op_fns *f = OP_FNS(kc);
    abi2_kernel_ctx old;

    if (!f)
        return POPC_EPLUGIN;
    /* kc->host stays: a backend may hand kernels its own table */
    old = (abi2_kernel_ctx){kc->host,  kc->node_name, kc->n_inputs,
                            kc->inputs, kc->n_outputs, kc->outputs,
                            kc->attrs, kc->part,      kc->n_parts,
                            kc->training, kc->seed,   kc->state,
                            kc->user,  kc->flags};
    return f->forward(&old);
}

static popc_status grad2(popc_grad_ctx *gc)
{
    const abi2_op_fns *f = OP_FNS(gc);
    abi2_grad w;

    if (!f)
        return POPC_EPLUGIN;
    w.old = (abi2_grad_ctx){abi2_host,       gc->impl,
                            gc->node_name,   gc->n_inputs,
                            gc->inputs,      gc->input_info,
                            gc->n_outputs,   gc->outputs,
                            gc->output_info, gc->output_grads,
                            gc->attrs,       gc->input_grads};
    w.cur = gc;
    return f->grad(&w.old);
}

/* ---- the optimizer adapter ----------------------------------------------- */

static popc_status step2(const popc_optim_step_ctx *c)
{
    const abi2_optim_fns *f;
    abi2_step_ctx old;

    if (c->size < offsetof(popc_optim_step_ctx, optim) + sizeof c->optim ||
        !c->optim || !(f = popci_registry_origin(c->optim)))
        return popc_set_error(POPC_EPLUGIN, "weight '%s': an ABI 2 "
                              "optimizer was called without its definition "
                              "in the context; this is a bug in popc",
                              c->weight_name ? c->weight_name : "?");
    old = (abi2_step_ctx){c->host,   c->weight_name, c->hypers, c->step,
                          c->n,      c->weight,      c->grad,   c->state};
    return f->step(&old);
}

/* ---- the host table ABI 2 plugins get ------------------------------------ */

static popc_grad_ctx *current(popc_grad_ctx *gc)
{
    /* what an ABI 2 plugin passes is the abi2_grad grad2 made */
    return ((abi2_grad *)(void *)gc)->cur;
}

static popc_status grad_add_node2(popc_grad_ctx *gc, const char *domain,
                                  const char *op, const int *inputs,
                                  int n_inputs, int *outputs, int n_outputs,
                                  const popc_attr *attrs, int n_attrs)
{
    return next_host.grad_add_node(current(gc), domain, op, inputs, n_inputs,
                                   outputs, n_outputs, attrs, n_attrs);
}

static popc_status grad_constant2(popc_grad_ctx *gc, const popc_view *value,
                                  int *out)
{
    return next_host.grad_constant(current(gc), value, out);
}

static popc_status value_info2(popc_grad_ctx *gc, int value,
                               popc_view *info)
{
    return next_host.value_info(current(gc), value, info);
}

static popc_status grad_inline2(popc_grad_ctx *gc, const struct popc_graph *g,
                                const int *inputs, int n_inputs,
                                int *outputs, int n_outputs)
{
    return next_host.grad_inline(current(gc), g, inputs, n_inputs, outputs,
                                 n_outputs);
}

void popci_abi2_host_patch(popc_host *h)
{
    next_host = *h;
    abi2_host = h;
    h->abi_version = POPCI_ABI2_MAJOR;
    h->grad_add_node = grad_add_node2;
    h->grad_constant = grad_constant2;
    h->value_info = value_info2;
    h->grad_inline = next_host.grad_inline ? grad_inline2 : NULL;
}

/* ---- adapting definitions ------------------------------------------------ */

popc_status popci_abi2_accepts(popci_kind kind, const char *path)
{
    if (kind == POPCI_KIND_OP || kind == POPCI_KIND_OPTIM)
        return POPC_OK;
    return popc_set_error(POPC_EABI, "%s: a %s plugin built for plugin ABI "
                          "2 (popc 0.2 or 0.3) cannot load in this popc "
                          "(ABI %u.%u): only ABI 2 op and optimizer plugins "
                          "are adapted; rebuild it against popc 0.4",
                          path,
                          kind == POPCI_KIND_BACKEND ? "backend"
                                                     : "collectives",
                          (unsigned)POPC_PLUGIN_ABI_MAJOR,
                          (unsigned)POPC_PLUGIN_ABI_MINOR);
}

/* Function pointers of the entry were the plugin's ABI 2 functions, stored
** under this ABI's types: converted back, as C allows between function
** pointer types, before they are called. */
popc_status popci_abi2_adapt(popci_kind kind, void *def, const void **origin)
{
    if (kind == POPCI_KIND_OP) {
        popc_op_def *d = def;
        abi2_op_fns *f = popci_malloc(sizeof *f);

        if (!f)
            return POPC_ENOMEM;
        f->infer = (popc_status(*)(abi2_infer_ctx *))d->infer;
        f->forward = (popc_status(*)(const abi2_kernel_ctx *))d->forward;
        f->grad = (popc_status(*)(abi2_grad_ctx *))d->grad;
        f->cost = (popc_status(*)(const abi2_infer_ctx *, popc_cost *))d->cost;
        f->prepare =
            (popc_status(*)(const abi2_infer_ctx *, void **))d->prepare;
        d->infer = infer2;
        d->forward = forward2;
        d->grad = f->grad ? grad2 : NULL;
        d->cost = f->cost ? cost2 : NULL;
        d->prepare = f->prepare ? prepare2 : NULL;
        *origin = f;
    } else if (kind == POPCI_KIND_OPTIM) {
        popc_optim_def *d = def;
        abi2_optim_fns *f = popci_malloc(sizeof *f);

        if (!f)
            return POPC_ENOMEM;
        f->step = (popc_status(*)(const abi2_step_ctx *))d->step;
        d->step = step2;
        /* ABI 2's popc_hyper_def is this ABI's; every later member of the
        ** definition is zero, its "absent" */
        d->hyper_size = sizeof(popc_hyper_def);
        d->size = sizeof *d;
        *origin = f;
    }
    return POPC_OK;
}

void popci_abi2_forget(const void *origin)
{
    free((void *)origin);
}

const popci_abi_compat popci_compat_abi2 = {
    POPCI_ABI2_MAJOR,
    popci_abi2_accepts,
    popci_abi2_adapt,
    popci_abi2_forget,
    popci_abi2_host_patch,
};
