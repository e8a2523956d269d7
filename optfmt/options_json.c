/* options_json.c - options as a JSON object, PopTorch's
** POPTORCH_DEFAULT_OPTIONS form: {"deviceIterations": 2,
** "connectionType": "ConnectionType.OnDemand",
** "outputMode": ["OutputMode.EveryN", 2]}.
**
** Each key is a method name as in loadFromFile; a list value is splatted
** as positional arguments, anything else is the one argument; a string
** "Enum.Member" given to an enum option is that member. The JSON parser
** is a small recursive one (objects, arrays, strings with the usual
** escapes, numbers, true, false, null): enough for option objects, not a
** general JSON library. Values are applied to a copy that replaces the
** options only when every entry succeeded.
*/
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/options.h"
#include "core/layer/alloc.h"
#include "optfmt/optfmt_priv.h"

#define MAX_DEPTH 16

typedef struct jparser {
    const char *start, *p;
    char err[200];
    int depth;
} jparser;

static int jerr(jparser *js, const char *what)
{
    if (!js->err[0])
        snprintf(js->err, sizeof js->err, "invalid JSON at offset %d: %s",
                 (int)(js->p - js->start), what);
    return 0;
}

static void jspace(jparser *js)
{
    while (*js->p == ' ' || *js->p == '\t' || *js->p == '\n' ||
           *js->p == '\r')
        js->p++;
}

static int jvalue(jparser *js, popci_val *v);

static int put_utf8(char *s, size_t *n, unsigned cp)
{
    if (cp < 0x80) {
        s[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        s[(*n)++] = (char)(0xC0 | (cp >> 6));
        s[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        s[(*n)++] = (char)(0xE0 | (cp >> 12));
        s[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        s[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
    return 1;
}

static int jstring(jparser *js, char **out)
{
    /* the decoded text is never longer than the escaped one */
    const char *b = ++js->p;
    size_t n = 0;
    char *s;

    while (*js->p && *js->p != '"')
        js->p += *js->p == '\\' && js->p[1] ? 2 : 1;
    if (*js->p != '"')
        return jerr(js, "unterminated string");
    if (!(s = popci_malloc((size_t)(js->p - b) + 1)))
        return jerr(js, "out of memory");
    for (const char *q = b; q < js->p; q++) {
        if (*q != '\\') {
            if ((unsigned char)*q < 0x20) {
                free(s);
                return jerr(js, "control character in a string");
            }
            s[n++] = *q;
            continue;
        }
        switch (*++q) {
        case '"': case '\\': case '/': s[n++] = *q; break;
        case 'b': s[n++] = '\b'; break;
        case 'f': s[n++] = '\f'; break;
        case 'n': s[n++] = '\n'; break;
        case 'r': s[n++] = '\r'; break;
        case 't': s[n++] = '\t'; break;
        case 'u': {
            unsigned cp = 0;

            for (int k = 1; k <= 4; k++) {
                int c = q[k];
                if (!isxdigit(c)) {
                    free(s);
                    return jerr(js, "bad \\u escape");
                }
                cp = cp * 16 + (unsigned)(isdigit(c) ? c - '0'
                                                     : (c | 32) - 'a' + 10);
            }
            /* \u0000 and surrogates have no place in option values */
            if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) {
                free(s);
                return jerr(js, "unsupported \\u escape");
            }
            put_utf8(s, &n, cp);
            q += 4;
            break;
        }
        default:
            free(s);
            return jerr(js, "bad escape in a string");
        }
    }
    s[n] = '\0';
    js->p++;
    *out = s;
    return 1;
}

static int jnumber(jparser *js, popci_val *v)
{
    const char *b = js->p;
    char *end;
    int is_float = 0;

    if (*js->p == '-')
        js->p++;
    if (!isdigit((unsigned char)*js->p))
        return jerr(js, "expected a value");
    while (isdigit((unsigned char)*js->p))
        js->p++;
    if (*js->p == '.' || *js->p == 'e' || *js->p == 'E')
        is_float = 1;
    errno = 0;
    if (is_float) {
        v->kind = POPCI_V_FLOAT;
        v->f = strtod(b, &end);
    } else {
        v->kind = POPCI_V_INT;
        v->i = strtoll(b, &end, 10);
    }
    if (errno)
        return jerr(js, "number out of range");
    js->p = end;
    return 1;
}

static int jlist(jparser *js, popci_val *v, int object)
{
    char close = object ? '}' : ']';

    js->p++;
    v->kind = object ? POPCI_V_DICT : POPCI_V_LIST;
    jspace(js);
    if (*js->p == close) {
        js->p++;
        return 1;
    }
    for (;;) {
        int per = object ? 2 : 1;
        popci_val *items = popci_realloc(v->items, (size_t)(v->n + per) *
                                                 sizeof *items);

        if (!items)
            return jerr(js, "out of memory");
        v->items = items;
        memset(&items[v->n], 0, (size_t)per * sizeof *items);
        v->n += per;
        jspace(js);
        if (object) {
            if (*js->p != '"')
                return jerr(js, "expected a string key");
            items[v->n - 2].kind = POPCI_V_STR;
            if (!jstring(js, &items[v->n - 2].s))
                return 0;
            jspace(js);
            if (*js->p != ':')
                return jerr(js, "expected ':' after a key");
            js->p++;
        }
        if (!jvalue(js, &items[v->n - 1]))
            return 0;
        jspace(js);
        if (*js->p == ',') {
            js->p++;
            continue;
        }
        if (*js->p == close) {
            js->p++;
            return 1;
        }
        return jerr(js, object ? "expected ',' or '}'" : "expected ',' or "
                                                         "']'");
    }
}

static int jvalue(jparser *js, popci_val *v)
{
    int ok;

    jspace(js);
    if (++js->depth > MAX_DEPTH)
        return jerr(js, "nested too deeply");
    if (*js->p == '{' || *js->p == '[') {
        ok = jlist(js, v, *js->p == '{');
    } else if (*js->p == '"') {
        v->kind = POPCI_V_STR;
        ok = jstring(js, &v->s);
    } else if (strncmp(js->p, "true", 4) == 0) {
        v->kind = POPCI_V_BOOL, v->i = 1, js->p += 4, ok = 1;
    } else if (strncmp(js->p, "false", 5) == 0) {
        v->kind = POPCI_V_BOOL, v->i = 0, js->p += 5, ok = 1;
    } else if (strncmp(js->p, "null", 4) == 0) {
        v->kind = POPCI_V_NONE, js->p += 4, ok = 1;
    } else {
        ok = jnumber(js, v);
    }
    js->depth--;
    return ok;
}

popc_status popci_options_apply_json(popc_options *o, const char *what,
                                     const char *json)
{
    jparser js = {json, json, "", 0};
    popci_val root = {0};
    popc_options *work = NULL;
    popc_status st = POPC_OK;

    if (!jvalue(&js, &root)) {
        st = popc_set_error(POPC_ECONFIG, "%s: %s", what, js.err);
        goto done;
    }
    jspace(&js);
    if (*js.p) {
        jerr(&js, "text after the object");
        st = popc_set_error(POPC_ECONFIG, "%s: %s", what, js.err);
        goto done;
    }
    if (root.kind != POPCI_V_DICT) {
        st = popc_set_error(POPC_ECONFIG, "%s: expected a JSON object of "
                            "\"option\": value, e.g. {\"deviceIterations\": "
                            "2}", what);
        goto done;
    }
    if ((st = popc_options_clone(o, &work)) != POPC_OK)
        goto done;
    for (int i = 0; i + 1 < root.n; i += 2) {
        const popci_val *k = &root.items[i], *v = &root.items[i + 1];
        const char *kind = NULL;

        if (v->kind == POPCI_V_LIST)
            st = popci_options_call(work, "", k->s, v->items, v->n, &kind,
                                    NULL);
        else
            st = popci_options_call(work, "", k->s, v, 1, &kind, NULL);
        if (st != POPC_OK) {
            st = popc_set_error(st, "%s: \"%s\": %s", what, k->s,
                                popc_last_error());
            goto done;
        }
    }
    popci_options_move(o, work);
done:
    popc_options_free(work);
    popci_val_clear(&root);
    return st;
}

popc_status popc_options_load_json(popc_options *o, const char *json)
{
    if (!o || !json)
        return popc_set_error(POPC_EINVAL, "popc_options_load_json: NULL "
                              "options or text");
    if (popc_options_frozen(o))
        return popc_set_error(POPC_ESTATE, "Can't modify frozen Options: "
                              "load into a copy from popc_options_clone");
    return popci_options_apply_json(o, "options JSON", json);
}
