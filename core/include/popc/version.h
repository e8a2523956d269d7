/* version.h - the version of popc's headers and of the running library.
** Since 0.3.0 (popc_version() itself since 0.1.0).
**
** The conventions of popc/status.h (ownership, status codes, threads)
** apply.
*/
#ifndef POPC_VERSION_H
#define POPC_VERSION_H

#include "popc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the headers; popc_version() gives the library's, which
** a program linked against an older or newer libpopc sees differ. */
#define POPC_VERSION_STRING "0.4.0"

/* The version of the libpopc the program runs with ("0.4.0"). Static
** storage, never NULL; thread-safe. Since 0.1.0. */
POPC_API const char *popc_version(void);

#ifdef __cplusplus
}
#endif
#endif /* POPC_VERSION_H */
