/* run_custom.c - INI layers of type custom (an op plugin's op, through
** popc_custom_op) and foreign (a C function through popc_foreign_op):
** their keys, checked when the run file is loaded, and their node, added
** when the graph is built (run/run_model.c calls both).
**
**   [layer act]                     [layer erf]
**   type = custom                   type = foreign
**   domain = com.acme               library = libm.so.6
**   op = LeakyRelu                  symbol = erff
**   version = 1                     signature = f32(in f32)
**   attr.alpha = 0.2                output_shapes = same_as:0
**
** Both take the previous layer's output as their one input. outputs (the
** node's output count, default 1) and output (the one that feeds the next
** layer, default 0) apply to both. Attribute values: an integer, a float,
** a string (quoted, or any other word), or a comma-separated list of one
** of those ("1, 2, 3"; brackets "[3]" make a one-element list).
** output_shapes separates one rule per output with ';'.
*/
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "popc/custom.h"
#include "core/layer/alloc.h"
#include "run/run_custom_priv.h"

#define MAX_ATTRS 64
#define MAX_ITEMS 256
#define MAX_OUT 16

static const char *const custom_keys[] = {"type", "domain", "op", "version",
                                          "outputs", "output", NULL};
static const char *const foreign_keys[] = {"type", "library", "symbol",
                                           "signature", "output_shapes",
                                           "outputs", "output", NULL};

static int is_attr_key(const char *key)
{
    return strncasecmp(key, "attr.", 5) == 0 && key[5];
}

/* Every key of the section (file and overrides), each once, in order. */
typedef struct keys {
    int n;
    const char *name[MAX_ATTRS + 16];
} keys;

static void collect_keys(const popc_run *r, const char *section, keys *k)
{
    k->n = 0;
    for (int pass = 0; pass <= r->n_sets; pass++) {
        const popci_config *src = pass ? r->sets[pass - 1].cfg : r->file;

        for (int i = 0; i < popci_config_n_keys(src, section); i++) {
            const char *key = popci_config_key(src, section, i);
            int seen = 0;

            for (int j = 0; j < k->n; j++)
                seen |= strcasecmp(k->name[j], key) == 0;
            if (!seen && k->n < (int)(sizeof k->name / sizeof k->name[0]))
                k->name[k->n++] = key;
        }
    }
}

static popc_status check_keys(const popc_run *r, const char *section,
                              int custom)
{
    const char *const *allowed = custom ? custom_keys : foreign_keys;
    char where[700];
    keys k;
    int n_attrs = 0;

    collect_keys(r, section, &k);
    for (int i = 0; i < k.n; i++) {
        int ok = 0;

        for (int j = 0; allowed[j]; j++)
            ok |= strcasecmp(k.name[i], allowed[j]) == 0;
        if (custom && is_attr_key(k.name[i])) {
            ok = 1;
            n_attrs++;
        }
        if (ok)
            continue;
        return popc_set_error(POPC_ECONFIG,
                              "%s: unknown key '%s' for a %s layer (valid "
                              "keys: %s%s)",
                              popci_run_where(r, section, k.name[i], where,
                                              sizeof where),
                              k.name[i], custom ? "custom" : "foreign",
                              custom ? "type, domain, op, version, outputs, "
                                       "output"
                                     : "type, library, symbol, signature, "
                                       "output_shapes, outputs, output",
                              custom ? " and attr.NAME for each attribute"
                                     : "");
    }
    if (n_attrs > MAX_ATTRS)
        return popc_set_error(POPC_ECONFIG, "[%s]: %d attributes; at most %d",
                              section, n_attrs, MAX_ATTRS);
    return POPC_OK;
}

/* ---- attribute values ---------------------------------------------------- */

/* One value from text [p, end) (trimmed): quoted string, int, float or
** bare word. Strings point into buf (copied there, terminated). */
static void parse_scalar(const char *p, const char *end, char **buf,
                         popc_custom_value *v)
{
    char tmp[256], *e;
    size_t n;

    while (p < end && isspace((unsigned char)*p))
        p++;
    while (end > p && isspace((unsigned char)end[-1]))
        end--;
    if (end - p >= 2 && (*p == '"' || *p == '\'') && end[-1] == *p) {
        p++;
        end--;
        goto string;
    }
    n = (size_t)(end - p) < sizeof tmp - 1 ? (size_t)(end - p)
                                           : sizeof tmp - 1;
    memcpy(tmp, p, n);
    tmp[n] = '\0';
    if (n > 0) {
        errno = 0;
        v->i = strtoll(tmp, &e, 10);
        if (!*e && !errno) {
            v->type = POPC_CUSTOM_INT;
            return;
        }
        v->f = strtod(tmp, &e);
        if (!*e) {
            v->type = POPC_CUSTOM_FLOAT;
            return;
        }
    }
string:
    n = (size_t)(end - p);
    memcpy(*buf, p, n);
    (*buf)[n] = '\0';
    v->type = POPC_CUSTOM_STRING;
    v->s = *buf;
    *buf += n + 1;
}

/* The value of an attr.NAME key: a scalar or a list (items from pool). */
static popc_status parse_value(const char *where, const char *raw,
                               char **buf, popc_custom_value *pool,
                               int *n_pool, popc_custom_value *v)
{
    const char *p = raw, *end = raw + strlen(raw), *start;
    int bracket = 0, list = 0, first;
    char quote = 0;

    memset(v, 0, sizeof *v);
    while (p < end && isspace((unsigned char)*p))
        p++;
    while (end > p && isspace((unsigned char)end[-1]))
        end--;
    if (end > p && *p == '[' && end[-1] == ']') {
        bracket = 1;
        p++;
        end--;
    }
    for (const char *q = p; q < end; q++) {
        if (quote && *q == quote)
            quote = 0;
        else if (!quote && (*q == '"' || *q == '\''))
            quote = *q;
        else if (!quote && *q == ',')
            list = 1;
    }
    if (!list && !bracket) {
        parse_scalar(p, end, buf, v);
        return POPC_OK;
    }
    v->type = POPC_CUSTOM_LIST;
    v->items = pool + *n_pool;
    first = *n_pool;
    start = p;
    quote = 0;
    for (const char *q = p; q <= end; q++) {
        if (q < end && quote && *q == quote) {
            quote = 0;
            continue;
        }
        if (q < end && !quote && (*q == '"' || *q == '\'')) {
            quote = *q;
            continue;
        }
        if (q < end && (quote || *q != ','))
            continue;
        if (*n_pool == MAX_ITEMS)
            return popc_set_error(POPC_ECONFIG, "%s: more than %d list "
                                  "elements in the layer", where,
                                  MAX_ITEMS);
        parse_scalar(start, q, buf, &pool[(*n_pool)++]);
        start = q + 1;
    }
    v->n = *n_pool - first;
    /* "[]" is an empty list */
    if (v->n == 1 && bracket && pool[first].type == POPC_CUSTOM_STRING &&
        !pool[first].s[0] && p == end)
        v->n = 0;
    return POPC_OK;
}

/* ---- reading a layer
 * ------------------------------------------------------------- */

typedef struct spec {
    int custom;
    const char *domain, *op, *library, *symbol, *signature;
    int64_t version, outputs, output;
    int n_attrs;
    popc_custom_attr attrs[MAX_ATTRS];
    popc_custom_value pool[MAX_ITEMS];
    int n_pool;
    int n_shapes;
    const char *shapes[MAX_OUT];
    char *text;               /* owned: strings of attrs and shapes */
} spec;

static popc_status get_str(const popc_run *r, const char *section,
                           const char *key, int required, const char **out)
{
    const popci_config *c = popci_run_src(r, section, key);
    popc_status st;

    *out = NULL;
    if (required && (st = popci_config_require(c, section, key)) != POPC_OK)
        return st;
    return popci_config_get_string(c, section, key, NULL, out);
}

static popc_status get_int(const popc_run *r, const char *section,
                           const char *key, int64_t def, int64_t min,
                           int64_t max, int64_t *out)
{
    return popci_config_get_int(popci_run_src(r, section, key), section, key,
                                def, min, max, out);
}

/* Scratch for strings: every value's text fits. */
static size_t text_size(const popc_run *r, const char *section,
                        const keys *k)
{
    size_t n = 16;

    for (int i = 0; i < k->n; i++) {
        const char *raw = popci_config_raw(popci_run_src(r, section,
                                                         k->name[i]),
                                           section, k->name[i]);
        n += (raw ? strlen(raw) : 0) * 2 + 2;
    }
    return n;
}

static popc_status read_spec(const popc_run *r, const char *section,
                             int custom, spec *s)
{
    char where[700], *buf;
    const char *shapes = NULL;
    keys k;
    popc_status st;

    memset(s, 0, sizeof *s);
    s->custom = custom;
    if ((st = check_keys(r, section, custom)) != POPC_OK)
        return st;
    if ((st = get_int(r, section, "outputs", 1, 1, MAX_OUT, &s->outputs)) ||
        (st = get_int(r, section, "output", 0, 0, MAX_OUT - 1, &s->output)))
        return st;
    if (s->output >= s->outputs)
        return popc_set_error(POPC_ECONFIG, "%s: output %lld does not exist: "
                              "the layer has %lld outputs (outputs = ...)",
                              popci_run_where(r, section, "output", where,
                                              sizeof where),
                              (long long)s->output, (long long)s->outputs);
    collect_keys(r, section, &k);
    if (!(s->text = popci_malloc(text_size(r, section, &k))))
        return popc_set_error(POPC_ENOMEM, "out of memory");
    buf = s->text;
    if (custom) {
        if ((st = get_str(r, section, "domain", 1, &s->domain)) ||
            (st = get_str(r, section, "op", 1, &s->op)) ||
            (st = get_int(r, section, "version", 1, 1, INT32_MAX,
                          &s->version)))
            return st;
        for (int i = 0; i < k.n; i++) {
            const char *key = k.name[i], *raw;

            if (!is_attr_key(key))
                continue;
            raw = popci_config_raw(popci_run_src(r, section, key), section,
                                   key);
            popci_run_where(r, section, key, where, sizeof where);
            s->attrs[s->n_attrs].key = key + 5;
            if ((st = parse_value(where, raw ? raw : "", &buf, s->pool,
                                  &s->n_pool,
                                  &s->attrs[s->n_attrs].value)) != POPC_OK)
                return st;
            s->n_attrs++;
        }
        return POPC_OK;
    }
    if ((st = get_str(r, section, "library", 1, &s->library)) ||
        (st = get_str(r, section, "symbol", 1, &s->symbol)) ||
        (st = get_str(r, section, "signature", 1, &s->signature)) ||
        (st = get_str(r, section, "output_shapes", 0, &shapes)))
        return st;
    if (s->library[0] != '/' && strchr(s->library, '/'))
        return popc_set_error(POPC_ECONFIG, "%s: '%s' is a relative path; "
                              "give an absolute path or a bare soname "
                              "(libm.so.6) that the dynamic linker finds",
                              popci_run_where(r, section, "library", where,
                                              sizeof where),
                              s->library);
    while (shapes && *shapes) {
        const char *semi = strchr(shapes, ';');
        size_t n = semi ? (size_t)(semi - shapes) : strlen(shapes);

        if (s->n_shapes == MAX_OUT)
            return popc_set_error(POPC_ECONFIG, "%s: more than %d rules",
                                  popci_run_where(r, section, "output_shapes",
                                                  where, sizeof where),
                                  MAX_OUT);
        while (n && isspace((unsigned char)*shapes)) {
            shapes++;
            n--;
        }
        while (n && isspace((unsigned char)shapes[n - 1]))
            n--;
        memcpy(buf, shapes, n);
        buf[n] = '\0';
        s->shapes[s->n_shapes++] = buf;
        buf += n + 1;
        shapes = semi ? semi + 1 : NULL;
    }
    if (s->n_shapes && s->n_shapes != s->outputs)
        return popc_set_error(POPC_ECONFIG, "%s: %d rules for %lld outputs; "
                              "give one per output, separated by ';'",
                              popci_run_where(r, section, "output_shapes",
                                              where, sizeof where),
                              s->n_shapes, (long long)s->outputs);
    return POPC_OK;
}

/* ---- the entry points
 * -------------------------------------------------------------- */

popc_status popci_run_parse_custom(const popc_run *r, const char *section,
                                   int foreign)
{
    spec *s = popci_malloc(sizeof *s);
    popc_status st;

    if (!s)
        return popc_set_error(POPC_ENOMEM, "out of memory");
    st = read_spec(r, section, !foreign, s);
    free(s->text);
    free(s);
    return st;
}

popc_status popci_run_add_custom(const popc_run *r, popc_graph *g,
                                 const char *section, int foreign, int x,
                                 int *y)
{
    spec *s = popci_malloc(sizeof *s);
    int outs[MAX_OUT];
    popc_status st;

    *y = -1;
    if (!s)
        return popc_set_error(POPC_ENOMEM, "out of memory");
    if ((st = read_spec(r, section, !foreign, s)) != POPC_OK)
        goto done;
    if (foreign)
        st = popc_foreign_op(g, s->library, s->symbol, s->signature, &x, 1,
                             s->n_shapes ? s->shapes : NULL,
                             (int)s->outputs, outs);
    else
        st = popc_custom_op(g, &x, 1, s->op, s->domain, (int)s->version,
                            NULL, (int)s->outputs, s->attrs, s->n_attrs,
                            outs);
    if (st == POPC_OK)
        *y = outs[s->output];
done:
    free(s->text);
    free(s);
    return st;
}
