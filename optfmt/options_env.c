/* options_env.c - the environment's options, applied to every new
** popc_options (popc_options_new calls this through
** popci_layer_options_env, which lib/options_env.c defines):
**  - POPC_THREADS changes the default of `threads` (not a user setting);
**  - OMPI_COMM_WORLD_SIZE and OMPI_COMM_WORLD_RANK set
**    Distributed.numProcesses and processId, as PopTorch's
**    Distributed.setEnvVarNames does in every new Options;
**  - POPC_CACHE_DIR sets enableExecutableCaching, as PopTorch's
**    POPTORCH_CACHE_DIR;
**  - POPC_DEFAULT_OPTIONS, a JSON object of method calls (options_json.c),
**    as PopTorch's POPTORCH_DEFAULT_OPTIONS.
** A bad value is an error naming the variable.
*/
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "popc/log.h"
#include "core/layer/options.h"
#include "optfmt/optfmt_priv.h"

/* "POPC_THREADS", "OMPI_COMM_WORLD_SIZE": a non-negative integer or an
** error naming the variable. */
static popc_status env_int(const char *var, int64_t min, int64_t max,
                           int *present, int64_t *out)
{
    const char *s = getenv(var);
    char *end;
    long long x;

    *present = 0;
    if (!s || !*s)
        return POPC_OK;
    errno = 0;
    x = strtoll(s, &end, 10);
    if (*end || errno || x < min || x > max)
        return popc_set_error(POPC_EINVAL, "environment variable %s: must be "
                              "an integer between %" PRId64 " and %" PRId64
                              " (got '%s')", var, min, max, s);
    *present = 1;
    *out = (int64_t)x;
    return POPC_OK;
}

popc_status popci_options_apply_environment(popc_options *o)
{
    const char *cache = getenv("POPC_CACHE_DIR");
    const char *json = getenv("POPC_DEFAULT_OPTIONS");
    int64_t n = 1, id = 0;
    int has_n, has_id;
    char buf[32];
    popc_status st;

    /* POPC_THREADS changes the default rather than setting the option. */
    if ((st = env_int("POPC_THREADS", 0, 4096, &has_n, &n)) != POPC_OK)
        return st;
    if (has_n)
        popci_options_set_start_int(o, POPCI_O_threads, n);
    /* PopTorch: Distributed.setEnvVarNames("OMPI_COMM_WORLD_SIZE",
    ** "OMPI_COMM_WORLD_RANK") in every new Options. */
    n = 1;
    if ((st = env_int("OMPI_COMM_WORLD_SIZE", 1, INT32_MAX, &has_n, &n)) ||
        (st = env_int("OMPI_COMM_WORLD_RANK", 0, INT32_MAX, &has_id, &id)))
        return st;
    if (has_n) {
        snprintf(buf, sizeof buf, "%" PRId64, n);
        if ((st = popci_options_commit_other(o, "Distributed.numProcesses",
                                             buf)) != POPC_OK)
            return popc_set_error(st, "environment variable "
                                  "OMPI_COMM_WORLD_SIZE: %s",
                                  popc_last_error());
    }
    if (has_id) {
        snprintf(buf, sizeof buf, "%" PRId64, id);
        if ((st = popci_options_commit_other(o, "Distributed.processId",
                                             buf)) != POPC_OK)
            return popc_set_error(st, "environment variable "
                                  "OMPI_COMM_WORLD_RANK: %s",
                                  popc_last_error());
    }
    if (cache && *cache) {
        popc_log(POPC_LOG_INFO, "POPC_CACHE_DIR is set: setting cache path "
                 "to %s", cache);
        if ((st = popci_options_commit_other(o, "enableExecutableCaching",
                                             cache)) != POPC_OK)
            return popc_set_error(st, "environment variable POPC_CACHE_DIR: "
                                  "%s", popc_last_error());
    }
    if (json && *json)
        return popci_options_apply_json(o, "POPC_DEFAULT_OPTIONS", json);
    return POPC_OK;
}
