/* host_priv.h - the host table given to plugins, and the hooks behind its
** graph-building and host-callback entries.
**
** The table's grad_* entries forward to the popci_grad_impl that the
** autodiff pass stores in popc_grad_ctx.impl, and host_call forwards to
** the popci_callback_impl a model stores in popc_kernel_ctx.user; so this
** file depends on neither.
*/
#ifndef POPC_HOST_PRIV_H
#define POPC_HOST_PRIV_H

#include "popc/plugin.h"

/* First member of whatever autodiff keeps in popc_grad_ctx.impl. */
typedef struct popci_grad_impl {
    popc_status (*add_node)(popc_grad_ctx *gc, const char *domain,
                            const char *op, const int *inputs, int n_inputs,
                            int *outputs, int n_outputs,
                            const popc_attr *attrs, int n_attrs);
    popc_status (*constant)(popc_grad_ctx *gc, const popc_view *value,
                            int *out);
    popc_status (*value_info)(popc_grad_ctx *gc, int value, popc_view *info);
} popci_grad_impl;

/* First member of whatever a model passes as popc_kernel_ctx.user. */
typedef struct popci_callback_impl {
    popc_status (*call)(void *self, const char *id, const popc_view *inputs,
                        int n_inputs, const popc_view *outputs,
                        int n_outputs);
} popci_callback_impl;

/* The one host table (static, lives forever). */
const popc_host *popci_host(void);

/* The kernel-call services (kernel_call.c; popc/services.h). */
void popci_plan_kernel_ctx(const popc_host *host, const popc_plan *plan,
                           int k, const popc_frame *frame, popc_view *in,
                           popc_view *out, popc_kernel_ctx *kc);
uint64_t popci_node_seed(uint64_t frame_seed, int node);

/* The host's get_proc (host_services.c): a service by name, or NULL. */
void *popci_host_get_proc(const char *name);

/* POPC_TENSOR_ALIGN-aligned, zero-filled; NULL on overflow or no memory. */
void *popci_alloc(size_t n);
/* popci_alloc without the zero fill, for memory the caller overwrites
** whole at once (a tensor made from data): the fill would be a second
** pass over every page. */
void *popci_alloc_unfilled(size_t n);
void popci_free(void *p);

/* The table's graph_signature and graph_run (subgraph.c). */
popc_status popci_graph_signature(const struct popc_graph *g, int *n_inputs,
                                  popc_view *inputs, int *n_outputs,
                                  popc_view *outputs, int cap);
popc_status popci_graph_run(const struct popc_graph *g,
                            const popc_view *inputs, int n_inputs,
                            const popc_view *outputs, int n_outputs,
                            int training, uint64_t seed);

/* The table's graph_cost (subgraph.c): the sum of the flops and bytes of
** g's nodes; temporaries: g's node outputs plus its largest node
** temporaries. Nodes with more inputs or outputs than this are refused. */
#define POPCI_COST_MAX_IO 64
popc_status popci_graph_cost(const struct popc_graph *g, popc_cost *cost);

/* The table's graph_gradient, graph_free and grad_inline
** (subgraph_grad.c). */
popc_status popci_graph_gradient(const struct popc_graph *g,
                                 struct popc_graph **out);
void popci_graph_release(struct popc_graph *g);
popc_status popci_grad_inline(popc_grad_ctx *gc, const struct popc_graph *g,
                              const int *inputs, int n_inputs, int *outputs,
                              int n_outputs);

#endif /* POPC_HOST_PRIV_H */
