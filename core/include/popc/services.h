/* services.h - host services that plugins find by name.
**
** New services reach plugins through host->get_proc(name) instead of new
** members of popc_host, so the host table never has to grow for them (the
** way ggml-backend's get_proc_address works). A plugin looks a service up
** once, in init(), keeps the pointer, and treats NULL as "this host is
** older than the service": it then fails init() with a message naming the
** service, or does without it.
**
** Each service has a name macro and a function type; the name is the
** contract and never changes meaning. A service whose behaviour must
** change gets a new name.
*/
#ifndef POPC_SERVICES_H
#define POPC_SERVICES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Looks a service up by name: NULL when the host has none of that name. */
typedef void *(*popc_get_proc_fn)(const char *name);

struct popc_host;
struct popc_plan;
struct popc_frame;
struct popc_view;
struct popc_kernel_ctx;

/* ---- kernel calls (backends; since 0.4.0) ------------------------------ */

/* The kernel call of the node at schedule position k of plan on frame:
** in[] and out[] (room for the node's inputs and outputs) receive the
** frame's views of its slots (an absent optional input: a zeroed view), and
** *kc (set kc->size = sizeof *kc first; the host fills that much) names
** them, with the plan's kernel flags, the node's seed, state and op, and
** part 0 of 1 (a backend that splits sets part and n_parts). Every backend
** builds its calls this way, so all agree with the core's reference. */
#define POPC_SERVICE_PLAN_KERNEL_CTX "popc_plan_kernel_ctx"
typedef void (*popc_plan_kernel_ctx_fn)(const struct popc_host *host,
                                        const struct popc_plan *plan, int k,
                                        const struct popc_frame *frame,
                                        struct popc_view *in,
                                        struct popc_view *out,
                                        struct popc_kernel_ctx *kc);

/* The kc->seed of the node at schedule position `node` of a frame with
** seed frame_seed: every backend uses it so random ops agree. */
#define POPC_SERVICE_NODE_SEED "popc_node_seed"
typedef uint64_t (*popc_node_seed_fn)(uint64_t frame_seed, int node);

#ifdef __cplusplus
}
#endif
#endif /* POPC_SERVICES_H */
