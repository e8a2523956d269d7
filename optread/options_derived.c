/* options_derived.c - what a program reads off a set of options beyond
** one value (popc/options.h): the output mode a model of either kind will
** use, and one IPU's setAvailableMemoryProportion. Built on the public
** getters; the core resolves both for itself when it compiles.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/options.h"

popc_output_mode popc_options_output_mode(const popc_options *o,
                                          int training)
{
    int64_t m = popc_options_get_int(o, "outputMode");

    if (m == POPC_OUTPUT_DEFAULT)
        return training ? POPC_OUTPUT_FINAL : POPC_OUTPUT_ALL;
    return (popc_output_mode)m;
}

/* Poplar's default availableMemoryProportion. */
#define DEFAULT_AVAILABLE_MEMORY 0.6

double popc_options_get_available_memory(const popc_options *o, int ipu)
{
    const char *s = popc_options_get_string(o, "setAvailableMemoryProportion");
    char key[32];
    size_t kl;

    if (!s || ipu < 0)
        return DEFAULT_AVAILABLE_MEMORY;
    kl = (size_t)snprintf(key, sizeof key, "IPU%d=", ipu);
    /* canonical form "IPU0=0.5,IPU1=0.3" (hook_amp) */
    for (const char *p = s; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1
                                                        : NULL)
        if (strncmp(p, key, kl) == 0)
            return strtod(p + kl, NULL);
    return DEFAULT_AVAILABLE_MEMORY;
}
