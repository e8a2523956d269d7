/* fpx.h - Precision.enableFloatingPointExceptions for backends. A kernel
** runs between fpx_begin() and fpx_check() on the same thread (the
** floating-point status flags are per thread); an overflow, invalid
** operation or division by zero it raised becomes an error naming the
** node and its op, as an IPU traps them.
*/
#ifndef POPC_BACKENDS_FPX_H
#define POPC_BACKENDS_FPX_H

#include <fenv.h>

#include "popc/plugin.h"

#define FPX_TRAPPED (FE_OVERFLOW | FE_INVALID | FE_DIVBYZERO)

static inline void fpx_begin(void)
{
    feclearexcept(FE_ALL_EXCEPT);
}

static inline popc_status fpx_check(const popc_host *h, const char *node,
                                    const char *op)
{
    int e = fetestexcept(FPX_TRAPPED);

    if (!e)
        return POPC_OK;
    return h->set_error(POPC_EBACKEND, "floating-point exception in node "
                        "'%s' (%s): %s (Precision."
                        "enableFloatingPointExceptions is on)", node, op,
                        e & FE_INVALID     ? "invalid operation"
                        : e & FE_DIVBYZERO ? "division by zero"
                                           : "overflow");
}

#endif /* POPC_BACKENDS_FPX_H */
