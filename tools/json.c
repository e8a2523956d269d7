/* json.c - a small JSON writer for `popc --json`: values are appended to
** an in-memory document, which is written to a temporary file and renamed
** into place so a reader never sees half a document.
*/
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cli.h"

static void raw(json *j, const char *s, size_t n)
{
    if (j->failed)
        return;
    if (j->len + n + 1 > j->cap) {
        size_t cap = (j->cap + n + 1) * 2;
        char *p = realloc(j->buf, cap);

        if (!p) {
            j->failed = 1;
            return;
        }
        j->buf = p;
        j->cap = cap;
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = '\0';
}

static void rawf(json *j, const char *fmt, ...) POPC_PRINTF(2, 3);
static void rawf(json *j, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        raw(j, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A comma before every value but the first of an object or array. */
static void sep(json *j)
{
    if (j->need_comma)
        raw(j, ", ", 2);
    j->need_comma = 1;
}

void json_begin(json *j, char open)
{
    sep(j);
    raw(j, &open, 1);
    j->need_comma = 0;
}

void json_end(json *j, char close)
{
    raw(j, &close, 1);
    j->need_comma = 1;
}

void json_key(json *j, const char *key)
{
    json_str(j, key);
    raw(j, ": ", 2);
    j->need_comma = 0;
}

void json_str(json *j, const char *s)
{
    sep(j);
    if (!s) {
        raw(j, "null", 4);
        return;
    }
    raw(j, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            char e[2] = {'\\', (char)*p};

            raw(j, e, 2);
        } else if (*p == '\n') {
            raw(j, "\\n", 2);
        } else if (*p == '\t') {
            raw(j, "\\t", 2);
        } else if (*p < 0x20) {
            rawf(j, "\\u%04x", *p);
        } else {
            raw(j, (const char *)p, 1);
        }
    }
    raw(j, "\"", 1);
}

void json_num(json *j, double v)
{
    sep(j);
    if (!isfinite(v))
        raw(j, "null", 4);
    else
        rawf(j, "%.17g", v);
}

void json_int(json *j, long long v)
{
    sep(j);
    rawf(j, "%lld", v);
}

void json_bool(json *j, int v)
{
    sep(j);
    raw(j, v ? "true" : "false", v ? 4 : 5);
}

int json_write(json *j, const char *path)
{
    int rc = EXIT_RUNTIME;

    raw(j, "\n", 1);
    if (j->failed)
        cli_error("%s: out of memory", path);
    else if (popc_write_file_atomic(path, j->buf, j->len) != POPC_OK)
        cli_error("%s", popc_last_error());
    else
        rc = EXIT_OK;
    free(j->buf);
    memset(j, 0, sizeof *j);
    return rc;
}
