/* limits.c - the limits on what a file may make popc do (popc/limits.h).
** The environment is read on every call, not cached, so a test or a
** program that sets a variable before reading a file sees it applied. */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "popc/limits.h"

static const struct {
    const char *env;
    int64_t def;
} table[POPC_LIMIT_COUNT] = {
    [POPC_LIMIT_NESTING] = {"POPC_MAX_NESTING", 32},
    [POPC_LIMIT_MESSAGE_DEPTH] = {"POPC_MAX_MESSAGE_DEPTH", 128},
    [POPC_LIMIT_MESSAGES] = {"POPC_MAX_MESSAGES", (int64_t)1 << 24},
    [POPC_LIMIT_NODES] = {"POPC_MAX_NODES", 1000000},
    [POPC_LIMIT_INITIALIZER_BYTES] = {"POPC_MAX_INITIALIZER_BYTES",
                                      (int64_t)32 << 30},
    [POPC_LIMIT_ATTRIBUTE_ELEMENTS] = {"POPC_MAX_ATTRIBUTE_ELEMENTS",
                                       (int64_t)1 << 24},
    [POPC_LIMIT_STRING_BYTES] = {"POPC_MAX_STRING_BYTES", (int64_t)1 << 20},
    [POPC_LIMIT_LOOP_TRIPS] = {"POPC_MAX_LOOP_TRIPS", (int64_t)1 << 20},
    [POPC_LIMIT_UNROLLED_STEPS] = {"POPC_MAX_UNROLLED_STEPS", 4096},
};

static atomic_llong set_value[POPC_LIMIT_COUNT];

static int known(popc_limit which)
{
    return (int)which >= 0 && which < POPC_LIMIT_COUNT;
}

/* The environment's value of a limit: 1 and *v when it holds a positive
** integer, 0 when unset, -1 when it holds anything else (the default
** applies then, the safe side, and the limit's error says so). */
static int env_value(popc_limit which, int64_t *v)
{
    const char *s = getenv(table[which].env);
    char *end;
    long long x;

    if (!s || !*s)
        return 0;
    errno = 0;
    x = strtoll(s, &end, 10);
    if (*end || errno || x <= 0)
        return -1;
    *v = x;
    return 1;
}

int64_t popc_limit_get(popc_limit which)
{
    int64_t v;

    if (!known(which))
        return -1;
    if ((v = atomic_load(&set_value[which])) > 0)
        return v;
    return env_value(which, &v) > 0 ? v : table[which].def;
}

popc_status popc_limit_set(popc_limit which, int64_t value)
{
    if (!known(which))
        return popc_set_error(POPC_EINVAL, "popc_limit_set: unknown limit "
                              "%d", (int)which);
    if (value < 0)
        return popc_set_error(POPC_EINVAL, "popc_limit_set: %s cannot be "
                              "negative (%lld); 0 restores the default",
                              table[which].env, (long long)value);
    atomic_store(&set_value[which], value);
    return POPC_OK;
}

const char *popc_limit_env(popc_limit which)
{
    return known(which) ? table[which].env : NULL;
}

int64_t popc_limit_default(popc_limit which)
{
    return known(which) ? table[which].def : -1;
}

popc_status popc_limit_error(popc_limit which, const char *file,
                             const char *what, int64_t found)
{
    const char *env = popc_limit_env(which);
    char count[32] = "", bad[160] = "";
    int64_t v;

    if (!env)
        return popc_set_error(POPC_EINVAL, "popc_limit_error: unknown "
                              "limit %d", (int)which);
    if (found >= 0)
        snprintf(count, sizeof count, " %lld,", (long long)found);
    if (atomic_load(&set_value[which]) <= 0 && env_value(which, &v) < 0)
        snprintf(bad, sizeof bad, "; %s='%.40s' is not a positive integer, "
                 "so the default applies", env, getenv(env));
    return popc_set_error(POPC_EUNSUPPORTED, "%s: %s:%s over popc's limit "
                          "of %lld (%s)%s; if the file is trusted, raise the "
                          "limit (%s=N in the environment, or "
                          "popc_limit_set)",
                          file ? file : "<memory>", what, count,
                          (long long)popc_limit_get(which), env, bad, env);
}
