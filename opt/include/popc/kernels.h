/* popc/kernels.h - which kernel each node of a compiled model runs.
**
** At compile every node gets its op's own forward (the reference) or a
** registered kernel of another provider (popc/kernel.h) that supports the
** node and scores higher; the option kernelSelection=reference keeps the
** reference everywhere. docs/kernels.md explains providers, scores and
** the tolerance kernels keep. Since 0.4.0; conventions (ownership, status
** codes, threads): popc/status.h.
*/
#ifndef POPC_KERNELS_H
#define POPC_KERNELS_H

#include "popc/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One node of a compiled plan; strings borrowed from the model's
** executable (valid until it is compiled again or freed). */
typedef struct popc_node_kernel {
    const char *node;          /* node name */
    const char *domain, *op;   /* its op */
    const char *provider;      /* the kernel's provider, "nn"; NULL: the
                                  op's own forward */
    const char *kernel;        /* the kernel's name; NULL: as provider */
} popc_node_kernel;

/* Node k (0 .. the plan's node count - 1, in execution order) of m's
** compiled plan in *out. POPC_OK, POPC_EINVAL (m or out NULL), POPC_ESTATE
** (m not compiled), POPC_ENOTFOUND (k past the last node: the count).
** Since 0.4.0. Not thread-safe on one model. */
POPC_API POPC_NODISCARD popc_status popc_model_node_kernel(
    const popc_model *m, int k, popc_node_kernel *out);

#ifdef __cplusplus
}
#endif

#endif /* POPC_KERNELS_H */
