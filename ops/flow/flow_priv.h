/* flow_priv.h - what the control-flow ops (If, Loop, Scan) share: the
** plugin's host table, access to their subgraph attributes and captured
** inputs, and buffers for values that live across iterations.
** Module-internal (hidden symbols).
*/
#ifndef POPC_OPS_FLOW_PRIV_H
#define POPC_OPS_FLOW_PRIV_H

#include <stdint.h>

#include "popc/limits.h"
#include "popc/plugin.h"

extern const popc_host *flow_host;

/* Most inputs or outputs a body may have here. */
#define FLOW_MAX_IO 256

/* A body's signature: dtype and shape of its inputs and outputs. */
typedef struct flow_sig {
    const struct popc_graph *g;
    int n_in, n_out;
    popc_view in[FLOW_MAX_IO], out[FLOW_MAX_IO];
} flow_sig;

/* The subgraph attribute `name` of a node and its signature; POPC_EINVAL
** naming op and node when it is missing or too large. */
popc_status flow_body(const char *op, const char *node,
                      const popc_attrs *attrs, const char *name,
                      flow_sig *sig);

/* How many trailing inputs are captured outer values (`__captures`);
** POPC_EINVAL when it exceeds n_inputs - first. */
popc_status flow_captures(const char *op, const char *node,
                          const popc_attrs *attrs, int n_inputs, int first,
                          int *n_captures);

/* POPC_EINVAL unless a and b have the same dtype and shape: "<op>
** '<node>': <what> is <a> <where_a> but <b> <where_b>" */
popc_status flow_same(const char *op, const char *node, const char *what,
                      const popc_view *a, const char *where_a,
                      const popc_view *b, const char *where_b);

/* n buffers shaped like views[i] (data set; zeroed). Free with
** flow_free_views. */
popc_status flow_alloc_views(const char *op, const char *node,
                             const popc_view *like, int n, popc_view *out);
void flow_free_views(popc_view *v, int n);

/* grad.c: the gradients of outputs [first, first + n) into out, the given
** ones or zeros for those nobody differentiates (Call uses it too). */
popc_status flow_given_or_zeros(popc_grad_ctx *gc, int first, int n,
                                int *out);
/* grad.c: the gradients of If, Loop and Scan. */
popc_status flow_if_grad(popc_grad_ctx *gc);
popc_status flow_loop_grad(popc_grad_ctx *gc);
popc_status flow_scan_grad(popc_grad_ctx *gc);

popc_status flow_register_if(const popc_host *h, popc_registrar *r);
popc_status flow_register_loop(const popc_host *h, popc_registrar *r);
popc_status flow_register_scan(const popc_host *h, popc_registrar *r);
popc_status flow_register_call(const popc_host *h, popc_registrar *r);

/* cost.c: one run of subgraph attribute `name` scaled by `times` (flops
** and bytes; the temporaries of one run); and the work of Call, Loop and
** If from their bodies. */
popc_status flow_body_cost(const popc_infer_ctx *ic, const char *name,
                           double times, popc_cost *c);
popc_status flow_call_cost(const popc_infer_ctx *ic, popc_cost *c);
popc_status flow_loop_cost(const popc_infer_ctx *ic, popc_cost *c);
popc_status flow_if_cost(const popc_infer_ctx *ic, popc_cost *c);

#endif /* POPC_OPS_FLOW_PRIV_H */
