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

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "popc/status.h"
#include "popc/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Looks a service up by name: NULL when the host has none of that name. */
typedef void *(*popc_get_proc_fn)(const char *name);

/* ---- float16 (IEEE binary16 stored as uint16_t) --- since 0.4.0 ------- */

/* One value: round to nearest even, NaN and infinities kept; the exact
** widening. The same bits as popc_f32_to_f16 and popc_f16_to_f32. Loops
** convert blocks with the _n services instead of calling these per
** element. */
#define POPC_SERVICE_F32_TO_F16 "popc_f32_to_f16"
typedef uint16_t (*popc_f32_to_f16_fn)(float x);
#define POPC_SERVICE_F16_TO_F32 "popc_f16_to_f32"
typedef float (*popc_f16_to_f32_fn)(uint16_t h);

/* n values, with the CPU's F16C instructions when it has them (the same
** bits as one value at a time). dst and src do not overlap. */
#define POPC_SERVICE_F32_TO_F16_N "popc_f32_to_f16_n"
typedef void (*popc_f32_to_f16_n_fn)(uint16_t *dst, const float *src,
                                     int64_t n);
#define POPC_SERVICE_F16_TO_F32_N "popc_f16_to_f32_n"
typedef void (*popc_f16_to_f32_n_fn)(float *dst, const uint16_t *src,
                                     int64_t n);

/* n values rounded stochastically (popc_f16_stochastic in popc/tensor.h:
** the rounding error has mean 0). Value k draws its random number from
** seed and first + k alone, so a kernel split into parts writes the bits
** of one whole run, and a run repeats bitwise under the same seed. */
#define POPC_SERVICE_F32_TO_F16_STOCHASTIC_N "popc_f32_to_f16_stochastic_n"
typedef void (*popc_f32_to_f16_stochastic_n_fn)(uint16_t *dst,
                                                const float *src, int64_t n,
                                                uint64_t seed, int64_t first);

/* 1 when the CPU (and OS) run AVX and F16C, for plugins with F16C kernels
** of their own; asked once. */
#define POPC_SERVICE_HAVE_F16C "popc_have_f16c"
typedef int (*popc_have_f16c_fn)(void);

/* ---- error texts --- since 0.4.0 ---------------------------------------- */

/* dims as "[2, 3, 4]" ("[]" for rank 0) into buf, always terminated (cut
** short to fit size); returns buf. */
#define POPC_SERVICE_DIMS_FORMAT "popc_dims_format"
typedef char *(*popc_dims_format_fn)(const int64_t *dims, int rank,
                                     char *buf, size_t size);

/* Records "<op> '<node>': <message>" as the last error (popc_last_error)
** and returns st; node NULL reads "?". */
#define POPC_SERVICE_OP_ERROR "popc_op_error"
typedef popc_status (*popc_op_error_fn)(popc_status st, const char *op,
                                        const char *node, const char *fmt,
                                        va_list ap);

/* The dtype refusal: records "<op> '<node>': <what> must be <want>, got
** <dtype name of got>; cast it to <want> first" and returns POPC_EINVAL. */
#define POPC_SERVICE_OP_DTYPE_ERROR "popc_op_dtype_error"
typedef popc_status (*popc_op_dtype_error_fn)(const char *op,
                                              const char *node,
                                              const char *what,
                                              popc_dtype got,
                                              const char *want);

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
