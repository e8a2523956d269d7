/* host.c - the host table handed to every plugin's init(). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/log.h"
#include "popc/tensor.h"
#include "core/alloc_priv.h"
#include "core/host_priv.h"

void *popci_alloc_unfilled(size_t n)
{
    size_t rounded = (n + POPC_TENSOR_ALIGN - 1) / POPC_TENSOR_ALIGN *
                     POPC_TENSOR_ALIGN;

    if (rounded < n || popci_alloc_should_fail())
        return NULL;
    if (rounded == 0)
        rounded = POPC_TENSOR_ALIGN;
    return aligned_alloc(POPC_TENSOR_ALIGN, rounded);
}

void *popci_alloc(size_t n)
{
    size_t rounded = (n + POPC_TENSOR_ALIGN - 1) / POPC_TENSOR_ALIGN *
                     POPC_TENSOR_ALIGN;
    void *p = popci_alloc_unfilled(n);

    /* the rounding too: SIMD loops may read a vector past the end */
    if (p)
        memset(p, 0, rounded ? rounded : POPC_TENSOR_ALIGN);
    return p;
}

void popci_free(void *p)
{
    free(p);
}

static void host_log(int level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    popc_log(level, "%s", msg);
}

static popc_status host_set_error(popc_status st, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return popc_set_error(st, "%s", msg);
}

static popc_status grad_add_node(popc_grad_ctx *gc, const char *domain,
                                 const char *op, const int *inputs,
                                 int n_inputs, int *outputs, int n_outputs,
                                 const popc_attr *attrs, int n_attrs)
{
    const popci_grad_impl *impl = gc ? gc->impl : NULL;

    if (!impl)
        return popc_set_error(POPC_ESTATE,
                              "grad_add_node: called outside autodiff");
    return impl->add_node(gc, domain, op, inputs, n_inputs, outputs,
                          n_outputs, attrs, n_attrs);
}

static popc_status grad_constant(popc_grad_ctx *gc, const popc_view *value,
                                 int *out)
{
    const popci_grad_impl *impl = gc ? gc->impl : NULL;

    if (!impl)
        return popc_set_error(POPC_ESTATE,
                              "grad_constant: called outside autodiff");
    return impl->constant(gc, value, out);
}

static popc_status value_info(popc_grad_ctx *gc, int value, popc_view *info)
{
    const popci_grad_impl *impl = gc ? gc->impl : NULL;

    if (!impl)
        return popc_set_error(POPC_ESTATE,
                              "value_info: called outside autodiff");
    return impl->value_info(gc, value, info);
}

static popc_status host_call(void *user, const char *id,
                             const popc_view *inputs, int n_inputs,
                             const popc_view *outputs, int n_outputs)
{
    const popci_callback_impl *impl = user;

    if (!impl)
        return popc_set_error(POPC_ENOTFOUND,
                              "host callback '%s': no callbacks are registered "
                              "with this model; register one before compiling",
                              id ? id : "(null)");
    return impl->call(user, id, inputs, n_inputs, outputs, n_outputs);
}

static popc_status no_register(popc_registrar *r, const void *def)
{
    (void)r;
    (void)def;
    return popc_set_error(POPC_ESTATE,
                          "register_*: only valid inside a plugin's init()");
}

static popc_status no_register_op(popc_registrar *r, const popc_op_def *d)
{
    return no_register(r, d);
}

static popc_status no_register_optim(popc_registrar *r,
                                     const popc_optim_def *d)
{
    return no_register(r, d);
}

static popc_status no_register_backend(popc_registrar *r,
                                       const popc_backend_def *d)
{
    return no_register(r, d);
}

/* The registrar functions are filled by the registry when it builds the
** table it hands to init(); this base copy has safe refusals. */
static const popc_host base_host = {
    .abi_version = POPC_PLUGIN_ABI_VERSION,
    .size = sizeof(popc_host),
    .register_op = no_register_op,
    .register_optimizer = no_register_optim,
    .register_backend = no_register_backend,
    .set_error = host_set_error,
    .log_msg = host_log,
    .alloc = popci_alloc,
    .free = popci_free,
    .grad_add_node = grad_add_node,
    .grad_constant = grad_constant,
    .value_info = value_info,
    .host_call = host_call,
    .last_error = popc_last_error,
    .graph_signature = popci_graph_signature,
    .graph_run = popci_graph_run,
    .graph_gradient = popci_graph_gradient,
    .graph_free = popci_graph_release,
    .grad_inline = popci_grad_inline,
    .graph_cost = popci_graph_cost,
    .get_proc = popci_host_get_proc,
};

const popc_host *popci_host(void)
{
    return &base_host;
}
