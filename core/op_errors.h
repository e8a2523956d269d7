/* op_errors.h - the error-text services plugins find by name
** (popc/services.h states them; op_errors.c). */
#ifndef POPC_OP_ERRORS_H
#define POPC_OP_ERRORS_H

#include <stdarg.h>

#include "popc/status.h"
#include "popc/types.h"

popc_status popci_op_error(popc_status st, const char *op, const char *node,
                           const char *fmt, va_list ap);
popc_status popci_op_dtype_error(const char *op, const char *node,
                                 const char *what, popc_dtype got,
                                 const char *want);

#endif /* POPC_OP_ERRORS_H */
