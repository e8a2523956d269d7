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

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Looks a service up by name: NULL when the host has none of that name. */
typedef void *(*popc_get_proc_fn)(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* POPC_SERVICES_H */
