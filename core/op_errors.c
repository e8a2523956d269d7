/* op_errors.c - see op_errors.h. Every op names itself and its node the
** same way, so the text is made here once. */
#include "config.h"

#include <stdio.h>

#include "popc/status.h"
#include "core/op_errors.h"

popc_status popci_op_error(popc_status st, const char *op, const char *node,
                           const char *fmt, va_list ap)
{
    char msg[1536];

    vsnprintf(msg, sizeof msg, fmt ? fmt : "", ap);
    return popc_set_error(st, "%s '%s': %s", op ? op : "?",
                          node ? node : "?", msg);
}

popc_status popci_op_dtype_error(const char *op, const char *node,
                                 const char *what, popc_dtype got,
                                 const char *want)
{
    return popc_set_error(POPC_EINVAL, "%s '%s': %s must be %s, got %s; "
                          "cast it to %s first", op ? op : "?",
                          node ? node : "?", what, want,
                          popc_dtype_name(got), want);
}
