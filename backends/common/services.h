/* services.h - the host services every backend needs (popc/services.h),
** looked up once in the plugin's init(). Header-only: plugins link
** nothing of each other.
*/
#ifndef POPC_BACKENDS_SERVICES_H
#define POPC_BACKENDS_SERVICES_H

#include <string.h>

#include "popc/plugin.h"

/* *fn (a function pointer of fn_size bytes) = service `name` of host h;
** a host without it fails init() with a message naming both. */
static inline popc_status backend_service(const popc_host *h,
                                          const char *plugin,
                                          const char *name, void *fn,
                                          size_t fn_size)
{
    void *p = POPC_HAS_FIELD(popc_host, h->size, get_proc) && h->get_proc
                  ? h->get_proc(name)
                  : NULL;

    if (!p)
        return h->set_error(POPC_EPLUGIN, "%s: this popc has no host "
                            "service '%s'; the plugin needs popc 0.4.0 or "
                            "later", plugin, name);
    /* ISO C has no object-to-function pointer conversion; copy the bits */
    memcpy(fn, &p, fn_size);
    return POPC_OK;
}

#endif /* POPC_BACKENDS_SERVICES_H */
