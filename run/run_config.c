/* run_config.c - INI files through libini_config, as an immutable snapshot.
**
** libini_config parses and reports syntax errors; the result is copied into
** plain arrays (sections and keys in file order with their lines) and the
** library objects are destroyed at once, so every getter is a cheap
** read-only lookup. A light pre-scan of the text finds the line of each
** "[section]" header (libini_config keeps lines only for values) and
** refuses keys placed before the first section, which libini_config would
** otherwise put in a "default" section or silently drop.
*/
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini_configobj.h>
#include <ini_valueobj.h>

#include "popc/log.h"
#include "core/layer/alloc.h"
#include "optfmt/optfmt.h" /* popci_check_utf8 */
#include "run/run_config_priv.h"

/* Larger INI files are certainly a mistake (a weight file given as
** configuration, say); refuse them instead of parsing megabytes. */
#define MAX_CONFIG_BYTES (16u << 20)

typedef struct cfg_key {
    char *name;
    char *value;               /* as libini_config gives it */
    char *unquoted;            /* value without surrounding "..." or NULL */
    int line;
} cfg_key;

typedef struct cfg_section {
    char *name;
    int line;
    int n_keys;
    cfg_key *keys;
} cfg_section;

struct popci_config {
    char *path;
    int n_sections;
    cfg_section *sections;
};

/* ---- snapshot helpers ----------------------------------------------------- */

static const cfg_section *find_section(const popci_config *c,
                                       const char *section)
{
    if (!c || !section)
        return NULL;
    for (int i = 0; i < c->n_sections; i++)
        if (strcasecmp(c->sections[i].name, section) == 0)
            return &c->sections[i];
    return NULL;
}

static const cfg_key *find_key(const popci_config *c, const char *section,
                               const char *key)
{
    const cfg_section *s = find_section(c, section);

    if (!s || !key)
        return NULL;
    for (int i = 0; i < s->n_keys; i++)
        if (strcasecmp(s->keys[i].name, key) == 0)
            return &s->keys[i];
    return NULL;
}

void popci_config_free(popci_config *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n_sections; i++) {
        cfg_section *s = &c->sections[i];
        for (int j = 0; j < s->n_keys; j++) {
            free(s->keys[j].name);
            free(s->keys[j].value);
            free(s->keys[j].unquoted);
        }
        free(s->keys);
        free(s->name);
    }
    free(c->sections);
    free(c->path);
    free(c);
}

/* ---- pre-scan: section lines and keys outside sections -------------------- */

static char *dup_range(const char *b, const char *e)
{
    char *s = popci_malloc((size_t)(e - b) + 1);

    if (!s)
        return NULL;
    memcpy(s, b, (size_t)(e - b));
    s[e - b] = '\0';
    return s;
}

/* Trimmed copy of [b, e). */
static char *dup_trim(const char *b, const char *e)
{
    while (b < e && (*b == ' ' || *b == '\t'))
        b++;
    while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        e--;
    return dup_range(b, e);
}

/* Record the header line of every section (first occurrence) and refuse a
** key line before the first header. Runs after a successful parse, so the
** text is known to be well formed. */
static popc_status prescan(popci_config *c, const char *text)
{
    const char *p = text;
    int line = 0, in_section = 0;

    if ((unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB &&
        (unsigned char)p[2] == 0xBF)
        p += 3;
    while (*p) {
        const char *eol = strchr(p, '\n');
        const char *end = eol ? eol : p + strlen(p);
        const char *q = p;

        line++;
        while (q < end && (*q == ' ' || *q == '\t'))
            q++;
        if (q < end && *q == '[') {
            const char *close = memchr(q, ']', (size_t)(end - q));
            char *name = dup_trim(q + 1, close ? close : end);

            if (!name)
                return popc_set_error(POPC_ENOMEM, "%s: out of memory",
                                      c->path);
            for (int i = 0; i < c->n_sections; i++)
                if (c->sections[i].line == 0 &&
                    strcasecmp(c->sections[i].name, name) == 0)
                    c->sections[i].line = line;
            free(name);
            in_section = 1;
        } else if (q < end && *q != '#' && *q != ';' && *q != '\r' &&
                   !in_section) {
            char *text_line = dup_trim(q, end);
            popc_status st = popc_set_error(
                POPC_ECONFIG,
                "%s:%d: '%s' is outside any section; put keys under a "
                "[section] header",
                c->path, line, text_line ? text_line : "");
            free(text_line);
            return st;
        }
        p = eol ? eol + 1 : end;
    }
    return POPC_OK;
}

/* ---- parsing -------------------------------------------------------------- */

static popc_status copy_section(popci_config *c, struct ini_cfgobj *ini,
                                const char *name, cfg_section *s)
{
    char **attrs;
    int n = 0, err = 0;

    if (!(s->name = popci_strdup(name)))
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", c->path);
    attrs = ini_get_attribute_list(ini, name, &n, &err);
    if (err)
        return popc_set_error(POPC_ENOMEM, "%s: cannot list the keys of "
                              "[%s] (error %d)", c->path, name, err);
    if (n > 0 && !(s->keys = popci_calloc((size_t)n, sizeof *s->keys))) {
        ini_free_attribute_list(attrs);
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", c->path);
    }
    for (int i = 0; i < n; i++) {
        struct value_obj *vo = NULL;
        const char *v;
        uint32_t line = 0;
        cfg_key *k = &s->keys[s->n_keys];

        if (ini_get_config_valueobj(name, attrs[i], ini, INI_GET_FIRST_VALUE,
                                    &vo) != 0 || !vo)
            continue;
        v = ini_get_const_string_config_value(vo, &err);
        value_get_line(vo, &line);
        k->name = popci_strdup(attrs[i]);
        k->value = popci_strdup(v && !err ? v : "");
        k->line = (int)line;
        s->n_keys++;
        if (k->value && strlen(k->value) >= 2 && k->value[0] == '"' &&
            k->value[strlen(k->value) - 1] == '"' &&
            !(k->unquoted = dup_range(k->value + 1,
                                     k->value + strlen(k->value) - 1))) {
            ini_free_attribute_list(attrs);
            return popc_set_error(POPC_ENOMEM, "%s: out of memory", c->path);
        }
        if (!k->name || !k->value) {
            ini_free_attribute_list(attrs);
            return popc_set_error(POPC_ENOMEM, "%s: out of memory", c->path);
        }
    }
    ini_free_attribute_list(attrs);
    return POPC_OK;
}

/* Parse text (NUL-terminated, len bytes) into c. */
static popc_status parse_text(popci_config *c, char *text, size_t len)
{
    struct ini_cfgobj *ini = NULL;
    struct ini_cfgfile *file = NULL;
    char **sections = NULL;
    int n = 0, err = 0, rc;
    popc_status st = POPC_OK;

    if ((st = popci_check_utf8(c->path, 1, text, len)) != POPC_OK)
        return st;
    if (len > UINT32_MAX || ini_config_create(&ini) != 0)
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", c->path);
    if (ini_config_file_from_mem(text, (uint32_t)len, &file) != 0) {
        st = popc_set_error(POPC_ENOMEM, "%s: out of memory", c->path);
        goto done;
    }
    rc = ini_config_parse(file, INI_STOP_ON_ANY,
                          INI_MV1S_ERROR | INI_MS_ERROR,
                          INI_PARSE_NOWRAP | INI_PARSE_NO_C_COMMENTS, ini);
    if (rc != 0) {
        char **errors = NULL;

        if (ini_config_error_count(ini) > 0 &&
            ini_config_get_errors(ini, &errors) == 0 && errors &&
            errors[0]) {
            st = popc_set_error(POPC_ECONFIG, "%s: %s", c->path, errors[0]);
            for (int i = 1; errors[i]; i++)
                popc_log(POPC_LOG_WARN, "%s: %s", c->path, errors[i]);
        } else {
            st = popc_set_error(POPC_ECONFIG, "%s: cannot parse (%s)",
                                c->path, strerror(rc));
        }
        ini_config_free_errors(errors);
        goto done;
    }
    sections = ini_get_section_list(ini, &n, &err);
    if (err) {
        st = popc_set_error(POPC_ENOMEM, "%s: cannot list sections (error "
                            "%d)", c->path, err);
        goto done;
    }
    if (n > 0 && !(c->sections = popci_calloc((size_t)n, sizeof *c->sections))) {
        st = popc_set_error(POPC_ENOMEM, "%s: out of memory", c->path);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        c->n_sections++;
        if ((st = copy_section(c, ini, sections[i],
                               &c->sections[i])) != POPC_OK)
            goto done;
    }
    st = prescan(c, text);
done:
    ini_free_section_list(sections);
    ini_config_file_destroy(file);
    ini_config_destroy(ini);
    return st;
}

static popc_status config_new(const char *name, popci_config **out)
{
    popci_config *c;

    *out = NULL;
    if (!(c = popci_calloc(1, sizeof *c)) || !(c->path = popci_strdup(name))) {
        free(c);
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", name);
    }
    *out = c;
    return POPC_OK;
}

popc_status popci_config_from_text(const char *name, const char *text,
                                   popci_config **out)
{
    popci_config *c = NULL;
    char *copy = NULL;
    size_t len;
    popc_status st;

    *out = NULL;
    if (!name || !text)
        return popc_set_error(POPC_EINVAL, "popci_config_from_text: NULL "
                              "name or text");
    if ((st = config_new(name, &c)) != POPC_OK)
        return st;
    len = strlen(text);
    if (!(copy = popci_malloc(len + 1))) {
        st = popc_set_error(POPC_ENOMEM, "%s: out of memory", name);
        goto fail;
    }
    memcpy(copy, text, len + 1);
    if ((st = parse_text(c, copy, len)) != POPC_OK)
        goto fail;
    free(copy);
    *out = c;
    return POPC_OK;
fail:
    free(copy);
    popci_config_free(c);
    return st;
}

popc_status popci_config_open(const char *path, popci_config **out)
{
    popci_config *c = NULL;
    FILE *f = NULL;
    char *text = NULL;
    size_t len = 0, cap = 0;
    popc_status st;

    *out = NULL;
    if (!path || !*path)
        return popc_set_error(POPC_EINVAL, "popci_config_open: no file name "
                              "given");
    if (!(f = fopen(path, "rb")))
        return popc_set_error(POPC_EIO, "%s: cannot open: %s", path,
                              strerror(errno));
    for (;;) {
        size_t got;

        if (len + 1 >= cap) {
            size_t ncap = cap ? cap * 2 : 4096;
            char *nt;

            if (ncap > MAX_CONFIG_BYTES + 1) {
                st = popc_set_error(POPC_ECONFIG, "%s: larger than %u bytes; "
                                    "is this really an INI file?", path,
                                    MAX_CONFIG_BYTES);
                goto fail;
            }
            if (!(nt = popci_realloc(text, ncap))) {
                st = popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
                goto fail;
            }
            text = nt;
            cap = ncap;
        }
        got = fread(text + len, 1, cap - 1 - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        st = popc_set_error(POPC_EIO, "%s: read error: %s", path,
                            strerror(errno));
        goto fail;
    }
    text[len] = '\0';
    if (memchr(text, '\0', len)) {
        st = popc_set_error(POPC_ECONFIG, "%s: contains NUL bytes; not a "
                            "text INI file", path);
        goto fail;
    }
    fclose(f);
    f = NULL;
    if ((st = config_new(path, &c)) != POPC_OK)
        goto fail;
    if ((st = parse_text(c, text, len)) != POPC_OK)
        goto fail;
    free(text);
    *out = c;
    return POPC_OK;
fail:
    if (f)
        fclose(f);
    free(text);
    popci_config_free(c);
    return st;
}

/* ---- structure ------------------------------------------------------------- */

const char *popci_config_path(const popci_config *c)
{
    return c ? c->path : NULL;
}

int popci_config_n_sections(const popci_config *c)
{
    return c ? c->n_sections : 0;
}

const char *popci_config_section(const popci_config *c, int i)
{
    if (!c || i < 0 || i >= c->n_sections)
        return NULL;
    return c->sections[i].name;
}

int popci_config_has_section(const popci_config *c, const char *section)
{
    return find_section(c, section) != NULL;
}

int popci_config_section_line(const popci_config *c, const char *section)
{
    const cfg_section *s = find_section(c, section);

    return s ? s->line : 0;
}

int popci_config_n_keys(const popci_config *c, const char *section)
{
    const cfg_section *s = find_section(c, section);

    return s ? s->n_keys : 0;
}

const char *popci_config_key(const popci_config *c, const char *section,
                             int i)
{
    const cfg_section *s = find_section(c, section);

    if (!s || i < 0 || i >= s->n_keys)
        return NULL;
    return s->keys[i].name;
}

int popci_config_has_key(const popci_config *c, const char *section,
                         const char *key)
{
    return find_key(c, section, key) != NULL;
}

int popci_config_key_line(const popci_config *c, const char *section,
                          const char *key)
{
    const cfg_key *k = find_key(c, section, key);

    return k ? k->line : 0;
}

const char *popci_config_raw(const popci_config *c, const char *section,
                             const char *key)
{
    const cfg_key *k = find_key(c, section, key);

    return k ? k->value : NULL;
}

/* ---- typed getters ------------------------------------------------------- */

/* "<file>:<line>: [section] key: " for messages, spelled as in the file. */
static void where(const popci_config *c, const char *section,
                  const cfg_key *k, char *buf, size_t size)
{
    const cfg_section *s = find_section(c, section);

    snprintf(buf, size, "%s:%d: [%s] %s", c->path, k->line,
             s ? s->name : section, k->name);
}

/* libini_config keeps trailing comments in the value (B11): say so when a
** value that failed to convert looks like it carries one. */
static const char *comment_hint(const char *value)
{
    if (strchr(value, ';') || strchr(value, '#'))
        return " (comments must be on their own line: a trailing '; ...' "
               "or '# ...' is part of the value)";
    return "";
}

static int parse_i64(const char *s, int64_t *v)
{
    char *end;
    long long x;

    if (!*s)
        return 0;
    errno = 0;
    x = strtoll(s, &end, 10);
    if (errno || *end)
        return 0;
    *v = (int64_t)x;
    return 1;
}

static void range_text(int64_t min, int64_t max, char *buf, size_t size)
{
    if (min == INT64_MIN && max == INT64_MAX)
        snprintf(buf, size, "an integer");
    else if (max == INT64_MAX)
        snprintf(buf, size, "an integer >= %" PRId64, min);
    else if (min == INT64_MIN)
        snprintf(buf, size, "an integer <= %" PRId64, max);
    else
        snprintf(buf, size, "an integer between %" PRId64 " and %" PRId64,
                 min, max);
}

popc_status popci_config_get_int(const popci_config *c, const char *section,
                                 const char *key, int64_t def, int64_t min,
                                 int64_t max, int64_t *out)
{
    const cfg_key *k = find_key(c, section, key);
    char at[512], want[96];
    int64_t v;

    *out = def;
    if (!k)
        return POPC_OK;
    if (parse_i64(k->value, &v) && v >= min && v <= max) {
        *out = v;
        return POPC_OK;
    }
    where(c, section, k, at, sizeof at);
    range_text(min, max, want, sizeof want);
    return popc_set_error(POPC_ECONFIG, "%s: must be %s (got '%s')%s", at,
                          want, k->value, comment_hint(k->value));
}

popc_status popci_config_get_float(const popci_config *c,
                                   const char *section, const char *key,
                                   double def, double min, double max,
                                   double *out)
{
    const cfg_key *k = find_key(c, section, key);
    char at[512];
    char *end;
    double v;

    *out = def;
    if (!k)
        return POPC_OK;
    errno = 0;
    v = strtod(k->value, &end);
    if (*k->value && !*end && !errno && isfinite(v) && v >= min &&
        v <= max) {
        *out = v;
        return POPC_OK;
    }
    where(c, section, k, at, sizeof at);
    if (min == -HUGE_VAL && max == HUGE_VAL)
        return popc_set_error(POPC_ECONFIG, "%s: must be a finite number "
                              "(got '%s')%s", at, k->value,
                              comment_hint(k->value));
    return popc_set_error(POPC_ECONFIG, "%s: must be a number between %g "
                          "and %g (got '%s')%s", at, min, max, k->value,
                          comment_hint(k->value));
}

popc_status popci_config_get_bool(const popci_config *c, const char *section,
                                  const char *key, int def, int *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    const cfg_key *k = find_key(c, section, key);
    char at[512];

    *out = def;
    if (!k)
        return POPC_OK;
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(k->value, yes[i]) == 0) {
            *out = 1;
            return POPC_OK;
        }
        if (strcasecmp(k->value, no[i]) == 0) {
            *out = 0;
            return POPC_OK;
        }
    }
    where(c, section, k, at, sizeof at);
    return popc_set_error(POPC_ECONFIG, "%s: must be true or false (got "
                          "'%s')%s", at, k->value, comment_hint(k->value));
}

popc_status popci_config_get_string(const popci_config *c,
                                    const char *section, const char *key,
                                    const char *def, const char **out)
{
    const cfg_key *k = find_key(c, section, key);

    *out = def;
    if (k)
        *out = k->unquoted ? k->unquoted : k->value;
    return POPC_OK;
}

popc_status popci_config_get_enum(const popci_config *c, const char *section,
                                  const char *key,
                                  const char *const *names, int def,
                                  int *out)
{
    const cfg_key *k = find_key(c, section, key);
    const char *v;
    char at[512], list[512] = "";
    size_t used = 0;

    *out = def;
    if (!k)
        return POPC_OK;
    v = k->unquoted ? k->unquoted : k->value;
    for (int i = 0; names[i]; i++)
        if (strcmp(v, names[i]) == 0) {
            *out = i;
            return POPC_OK;
        }
    for (int i = 0; names[i] && used < sizeof list; i++) {
        int w = snprintf(list + used, sizeof list - used, "%s%s",
                         i ? ", " : "", names[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    where(c, section, k, at, sizeof at);
    {
        const char *close = popci_closest_name(v, names, -1);
        char hint[160] = "";

        if (close)
            snprintf(hint, sizeof hint, "; did you mean '%s'?", close);
        return popc_set_error(POPC_ECONFIG, "%s: unknown value '%s'%s "
                              "(valid values: %s)%s", at, v, hint, list,
                              comment_hint(v));
    }
}

popc_status popci_config_get_int_list(const popci_config *c,
                                      const char *section, const char *key,
                                      int64_t min, int64_t max,
                                      int64_t *vals, int cap, int *n)
{
    const cfg_key *k = find_key(c, section, key);
    const char *p;
    char at[512], want[96];

    *n = 0;
    if (!k)
        return POPC_OK;
    where(c, section, k, at, sizeof at);
    range_text(min, max, want, sizeof want);
    p = k->unquoted ? k->unquoted : k->value;
    while (*p) {
        char tok[64];
        size_t len = 0;
        int64_t v;

        while (*p == ' ' || *p == '\t')
            p++;
        while (p[len] && p[len] != ',' && p[len] != ' ' && p[len] != '\t')
            len++;
        if (len == 0 || len >= sizeof tok)
            return popc_set_error(POPC_ECONFIG, "%s: expected a list of "
                                  "integers separated by commas (got '%s')%s",
                                  at, k->value, comment_hint(k->value));
        memcpy(tok, p, len);
        tok[len] = '\0';
        if (!parse_i64(tok, &v) || v < min || v > max)
            return popc_set_error(POPC_ECONFIG, "%s: item %d must be %s "
                                  "(got '%s')%s", at, *n + 1, want, tok,
                                  comment_hint(k->value));
        if (*n >= cap)
            return popc_set_error(POPC_ECONFIG, "%s: at most %d values "
                                  "allowed (got more in '%s')", at, cap,
                                  k->value);
        vals[(*n)++] = v;
        p += len;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == ',') {
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
            if (!*p)
                return popc_set_error(POPC_ECONFIG, "%s: trailing comma in "
                                      "'%s'", at, k->value);
        }
    }
    return POPC_OK;
}

/* ---- key checks ------------------------------------------------------------ */

popc_status popci_config_require(const popci_config *c, const char *section,
                                 const char *key)
{
    const cfg_section *s = find_section(c, section);

    if (!s)
        return popc_set_error(POPC_ECONFIG, "%s: missing section [%s] (it "
                              "must set '%s')", c->path, section, key);
    if (!find_key(c, section, key))
        return popc_set_error(POPC_ECONFIG, "%s:%d: [%s] missing required "
                              "key '%s'", c->path, s->line, s->name, key);
    return POPC_OK;
}

static int in_list(const char *name, const char *const *allowed)
{
    for (int i = 0; allowed[i]; i++)
        if (strcasecmp(name, allowed[i]) == 0)
            return 1;
    return 0;
}

static void join(const char *const *names, char *buf, size_t size)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int i = 0; names[i] && used < size; i++) {
        int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
                         names[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

popc_status popci_config_check_keys(const popci_config *c,
                                    const char *section,
                                    const char *const *allowed)
{
    const cfg_section *s = find_section(c, section);
    char list[1024], hint[160];

    if (!s)
        return POPC_OK;
    for (int i = 0; i < s->n_keys; i++) {
        const cfg_key *k = &s->keys[i];
        const char *close;

        if (in_list(k->name, allowed))
            continue;
        join(allowed, list, sizeof list);
        close = popci_closest_name(k->name, allowed, -1);
        hint[0] = '\0';
        if (close)
            snprintf(hint, sizeof hint, "; did you mean '%s'?", close);
        return popc_set_error(POPC_ECONFIG, "%s:%d: [%s] unknown key '%s'%s "
                              "(valid keys: %s)", c->path, k->line, s->name,
                              k->name, hint, list);
    }
    return POPC_OK;
}

popc_status popci_config_check_sections(const popci_config *c,
                                        const char *const *allowed)
{
    char list[1024], hint[160];

    for (int i = 0; c && i < c->n_sections; i++) {
        const cfg_section *s = &c->sections[i];
        const char *close;

        if (in_list(s->name, allowed))
            continue;
        join(allowed, list, sizeof list);
        close = popci_closest_name(s->name, allowed, -1);
        hint[0] = '\0';
        if (close)
            snprintf(hint, sizeof hint, "; did you mean [%s]?", close);
        return popc_set_error(POPC_ECONFIG, "%s:%d: unknown section [%s]%s "
                              "(valid sections: %s)", c->path, s->line,
                              s->name, hint, list);
    }
    return POPC_OK;
}
