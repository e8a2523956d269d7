/* error.c - status names and the per-thread error message.
**
** The message lives in a thread-local buffer so that worker threads and
** the caller never overwrite each other's reason.
*/
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "popc/status.h"

static _Thread_local char last_error[2048];

const char *popc_status_name(popc_status st)
{
    static const char *const names[] = {
        "POPC_OK", "POPC_ENOMEM", "POPC_EINVAL", "POPC_ENOTFOUND",
        "POPC_EEXIST", "POPC_EABI", "POPC_EPLUGIN", "POPC_ECONFIG",
        "POPC_EBACKEND", "POPC_ECALLBACK", "POPC_EIO", "POPC_ECOMPILE",
        "POPC_ESTATE", "POPC_EUNSUPPORTED", "POPC_EINTERRUPTED",
        "POPC_EINTERNAL", "POPC_EPERM", "POPC_EDISTRIBUTED"};

    if ((unsigned)st < sizeof names / sizeof names[0])
        return names[st];
    return "POPC_E?";
}

const char *popc_last_error(void)
{
    return last_error;
}

popc_status popc_set_error(popc_status st, const char *fmt, ...)
{
    /* Format into a scratch buffer first: callers may pass
    ** popc_last_error() itself as an argument to add context. */
    char tmp[sizeof last_error];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    memcpy(last_error, tmp, sizeof last_error);
    return st;
}
