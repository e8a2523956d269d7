/* kernel.h - kernels: other implementations of an op's forward, chosen per
** node at compile (since 0.4.0; docs/kernels.md).
**
** A provider (a plugin: "nn" for popc's own) registers kernels for an op
** it may not define itself. At compile, for each node, the candidates are
** the op's own forward (the reference, the oracle) and every kernel of the
** node's (domain, op) whose supports() takes the node as compiled (final
** shapes, attributes, training or not); the highest score wins, the
** reference scoring 1. The choice is made once and kept in the plan; the
** option kernelSelection=reference keeps every node on its reference.
** Register from init() with the host service POPC_SERVICE_REGISTER_KERNEL.
*/
#ifndef POPC_KERNEL_H
#define POPC_KERNEL_H

#include "popc/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct popc_kernel_def {
    uint32_t size;            /* sizeof(popc_kernel_def) */
    const char *name;         /* "winograd_f2": unique within the provider */
    const char *provider;     /* "nn" */
    const char *domain;       /* the op's: "ai.onnx" (NULL reads so) */
    const char *op;           /* "Conv" */
    /* Whether the kernel computes this node: ic is the node's infer
    ** context at compile (inputs and outputs as inferred, attributes,
    ** ic->training). Required. */
    int (*supports)(const popc_infer_ctx *ic);
    /* The kernel's estimated speed-up over the op's own forward on this
    ** node (> 1: faster), from a deterministic model, never timed at
    ** compile. Called only when supports() took the node. Required. */
    double (*score)(const popc_infer_ctx *ic);
    /* Runs the node as the op's forward would: same outputs, within the
    ** provider's documented tolerance. Honours part/n_parts when flags
    ** has POPC_OP_SPLIT (else it runs whole). Required. */
    popc_status (*forward)(const popc_kernel_ctx *kc);
    /* (optional) Per-node state (kc->state), freed with release(); NULL:
    ** the kernel gets the op's own prepare() state. */
    popc_status (*prepare)(const popc_infer_ctx *ic, void **state);
    void (*release)(void *state);
    unsigned flags;           /* POPC_OP_SPLIT or 0 */
} popc_kernel_def;

/* Registers a kernel from a plugin's init(); staged and committed with
** the plugin's other definitions. */
#define POPC_SERVICE_REGISTER_KERNEL "popc_register_kernel"
typedef popc_status (*popc_register_kernel_fn)(popc_registrar *r,
                                               const popc_kernel_def *def);

#ifdef __cplusplus
}
#endif
#endif /* POPC_KERNEL_H */
