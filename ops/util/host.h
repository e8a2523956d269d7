/* host.h - what the op utility library keeps of its host: the services
** (popc/services.h) it looked up once, in opu_init().
**
** The library is linked into each op plugin as a convenience library with
** hidden symbols, so every plugin has its own opu_svc, set by its own
** init(). Kernels read it without a lock: opu_init writes a slot only
** when its value changes, and a later registry loading the same plugin
** finds the same functions, so it writes nothing.
*/
#ifndef POPC_OPS_UTIL_HOST_H
#define POPC_OPS_UTIL_HOST_H

#include "popc/plugin.h"
#include "popc/services.h"

typedef struct opu_services {
    popc_f32_to_f16_fn f2h;
    popc_f16_to_f32_fn h2f;
    popc_f32_to_f16_n_fn f2h_n;
    popc_f16_to_f32_n_fn h2f_n;
    popc_f32_to_f16_stochastic_n_fn f2h_stochastic_n;
    popc_have_f16c_fn have_f16c;
    popc_dims_format_fn dims_format;
    popc_op_error_fn op_error;
    popc_op_dtype_error_fn op_dtype_error;
} opu_services;

extern opu_services opu_svc;

/* Looks every service up through host. A host without one (older than
** this library) fails with POPC_EUNSUPPORTED naming the plugin and the
** missing service; the plugin's init() returns that status. */
popc_status opu_init(const popc_host *host, const char *plugin);

/* Registers defs[0..n) through host; the first failure's status. */
popc_status opu_register_ops(const popc_host *host, popc_registrar *reg,
                             const popc_op_def *defs, int n);

#endif /* POPC_OPS_UTIL_HOST_H */
