/* minijson.c - see minijson.h. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/minijson.h"

typedef struct parser {
    const char *s;
    size_t n, i;
    char *err;
    size_t errsize;
} parser;

static int fail(parser *p, const char *why)
{
    if (p->err && !p->err[0])
        snprintf(p->err, p->errsize, "offset %zu: %s", p->i, why);
    return -1;
}

static void skip_ws(parser *p)
{
    while (p->i < p->n && strchr(" \t\r\n", p->s[p->i]) && p->s[p->i])
        p->i++;
}

static int lit(parser *p, const char *word)
{
    size_t k = strlen(word);

    if (p->n - p->i < k || memcmp(p->s + p->i, word, k) != 0)
        return fail(p, "unexpected character");
    p->i += k;
    return 0;
}

static int hex4(parser *p, unsigned *out)
{
    *out = 0;
    for (int k = 0; k < 4; k++) {
        char c = p->i < p->n ? p->s[p->i++] : '\0';
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16u;
        if (d == 16u)
            return fail(p, "bad \\u escape");
        *out = *out * 16u + d;
    }
    return 0;
}

static int string(parser *p, char **out)
{
    size_t cap = 16, len = 0;
    char *b = malloc(cap);

    *out = NULL;
    if (!b)
        return fail(p, "out of memory");
    p->i++; /* '"' */
    for (;;) {
        char c;
        if (p->i >= p->n) {
            free(b);
            return fail(p, "unterminated string");
        }
        c = p->s[p->i++];
        if (c == '"')
            break;
        if ((unsigned char)c < 0x20) {
            free(b);
            return fail(p, "control character in a string");
        }
        if (c == '\\') {
            char e = p->i < p->n ? p->s[p->i++] : '\0';
            unsigned u;
            switch (e) {
            case '"': case '\\': case '/': c = e; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'u':
                if (hex4(p, &u) != 0) {
                    free(b);
                    return -1;
                }
                c = u < 0x80 ? (char)u : '?';
                break;
            default:
                free(b);
                return fail(p, "bad escape");
            }
        }
        if (len + 2 > cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                return fail(p, "out of memory");
            }
            b = nb;
        }
        b[len++] = c;
    }
    b[len] = '\0';
    *out = b;
    return 0;
}

static int number(parser *p, double *out)
{
    size_t start = p->i, digits;
    char buf[64];

    if (p->i < p->n && p->s[p->i] == '-')
        p->i++;
    if (p->i < p->n && p->s[p->i] == '0') {
        p->i++;
    } else {
        for (digits = p->i; p->i < p->n && p->s[p->i] >= '0' &&
                            p->s[p->i] <= '9'; p->i++)
            ;
        if (p->i == digits)
            return fail(p, "bad number");
    }
    if (p->i < p->n && p->s[p->i] == '.') {
        for (digits = ++p->i; p->i < p->n && p->s[p->i] >= '0' &&
                              p->s[p->i] <= '9'; p->i++)
            ;
        if (p->i == digits)
            return fail(p, "bad fraction");
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-'))
            p->i++;
        for (digits = p->i; p->i < p->n && p->s[p->i] >= '0' &&
                            p->s[p->i] <= '9'; p->i++)
            ;
        if (p->i == digits)
            return fail(p, "bad exponent");
    }
    if (p->i - start >= sizeof buf)
        return fail(p, "number too long");
    memcpy(buf, p->s + start, p->i - start);
    buf[p->i - start] = '\0';
    *out = strtod(buf, NULL);
    return 0;
}

static int value(parser *p, mj_value *v, int depth);

/* Append one item (and key) to an array or object. */
static mj_value *grow(parser *p, mj_value *v, int *cap, char *key)
{
    if (v->n == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        mj_value *ni = realloc(v->items, sizeof *ni * (size_t)nc);
        if (!ni)
            return NULL;
        v->items = ni;
        if (v->type == MJ_OBJECT) {
            char **nk = realloc(v->keys, sizeof *nk * (size_t)nc);
            if (!nk)
                return NULL;
            v->keys = nk;
        }
        *cap = nc;
    }
    memset(&v->items[v->n], 0, sizeof v->items[v->n]);
    if (v->type == MJ_OBJECT)
        v->keys[v->n] = key;
    (void)p;
    return &v->items[v->n++];
}

static int container(parser *p, mj_value *v, int depth)
{
    char close = p->s[p->i] == '{' ? '}' : ']';
    int cap = 0;

    v->type = close == '}' ? MJ_OBJECT : MJ_ARRAY;
    p->i++;
    skip_ws(p);
    if (p->i < p->n && p->s[p->i] == close) {
        p->i++;
        return 0;
    }
    for (;;) {
        char *key = NULL;
        mj_value *item;

        skip_ws(p);
        if (v->type == MJ_OBJECT) {
            if (p->i >= p->n || p->s[p->i] != '"')
                return fail(p, "expected a key");
            if (string(p, &key) != 0)
                return -1;
            skip_ws(p);
            if (p->i >= p->n || p->s[p->i] != ':') {
                free(key);
                return fail(p, "expected ':'");
            }
            p->i++;
        }
        if (!(item = grow(p, v, &cap, key))) {
            free(key);
            return fail(p, "out of memory");
        }
        if (value(p, item, depth + 1) != 0)
            return -1;
        skip_ws(p);
        if (p->i < p->n && p->s[p->i] == close) {
            p->i++;
            return 0;
        }
        if (p->i >= p->n || p->s[p->i] != ',')
            return fail(p, "expected ',' or the end of the container");
        p->i++;
    }
}

static int value(parser *p, mj_value *v, int depth)
{
    skip_ws(p);
    if (depth > 64)
        return fail(p, "nested too deeply");
    if (p->i >= p->n)
        return fail(p, "unexpected end");
    switch (p->s[p->i]) {
    case '{':
    case '[':
        return container(p, v, depth);
    case '"':
        v->type = MJ_STRING;
        return string(p, &v->string);
    case 't':
        v->type = MJ_BOOL;
        v->number = 1;
        return lit(p, "true");
    case 'f':
        v->type = MJ_BOOL;
        return lit(p, "false");
    case 'n':
        v->type = MJ_NULL;
        return lit(p, "null");
    default:
        v->type = MJ_NUMBER;
        return number(p, &v->number);
    }
}

static void clear(mj_value *v)
{
    for (int k = 0; k < v->n; k++) {
        clear(&v->items[k]);
        if (v->keys)
            free(v->keys[k]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
}

mj_value *mj_parse(const char *text, size_t len, char *err, size_t errsize)
{
    parser p = {text, len, 0, err, errsize};
    mj_value *v = calloc(1, sizeof *v);

    if (err && errsize)
        err[0] = '\0';
    if (!v)
        return NULL;
    if (value(&p, v, 0) == 0) {
        skip_ws(&p);
        if (p.i == p.n)
            return v;
        fail(&p, "text after the value");
    }
    mj_free(v);
    return NULL;
}

void mj_free(mj_value *v)
{
    if (!v)
        return;
    clear(v);
    free(v);
}

const mj_value *mj_get(const mj_value *v, const char *key)
{
    for (int k = 0; v && v->type == MJ_OBJECT && k < v->n; k++)
        if (strcmp(v->keys[k], key) == 0)
            return &v->items[k];
    return NULL;
}

const mj_value *mj_at(const mj_value *v, int i)
{
    if (!v || v->type != MJ_ARRAY || i < 0 || i >= v->n)
        return NULL;
    return &v->items[i];
}

double mj_num(const mj_value *v, const char *key, double def)
{
    const mj_value *m = mj_get(v, key);

    return m && (m->type == MJ_NUMBER || m->type == MJ_BOOL) ? m->number
                                                             : def;
}

const char *mj_str(const mj_value *v, const char *key)
{
    const mj_value *m = mj_get(v, key);

    return m && m->type == MJ_STRING ? m->string : NULL;
}
