/* version.c - popc_version (popc/version.h): the library's own version, as
** configure.ac states it. */
#include "config.h"

#include "popc/version.h"

/* The headers and the library must agree when the library is built. */
_Static_assert(sizeof PACKAGE_VERSION == sizeof POPC_VERSION_STRING,
               "configure.ac's version and POPC_VERSION_STRING differ");

const char *popc_version(void)
{
    return PACKAGE_VERSION;
}
