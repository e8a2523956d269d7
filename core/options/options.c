/* options.c - PopTorch's Options: values, text conversion, freezing,
** cloning, hashing and the environment.
**
** Values live in one array parallel to the table of options_table.c.
** Every change, whatever its source (typed setter, text, INI, loadFromFile,
** POPC_DEFAULT_OPTIONS), ends in popci_options_commit so that the checks
** and the `supported` rule are applied in one place.
*/
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "popc/log.h"
#include "popc/options.h"
#include "core/alloc_priv.h"
#include "core/layer/suggest.h"
#include "core/options/options_priv.h"

/* Other spellings PopTorch users write: the method name where the option
** is named after what it sets. */
static const struct {
    const char *alias, *name;
} aliases[] = {
    {"Training.setMeanAccumulationAndReplicationReductionStrategy",
     "Training.meanAccumulationAndReplicationReductionStrategy"},
    {"appendToLocationExcludes", "sourceLocationExcludes"},
};

#define MAX_OPTIONS 256

/* ---- lookup ----------------------------------------------------------------- */

int popci_options_index(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < popci_option_count; i++)
        if (strcmp(popci_option_table[i].info.name, name) == 0)
            return i;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(aliases[i].alias, name) == 0)
            return popci_options_index(aliases[i].name);
    return -1;
}

int popci_options_must(const char *name)
{
    int i = popci_options_index(name);

    assert(i >= 0 && "option missing from options_table.c");
    return i;
}

/* Does an option before index i start with the first len chars of n? */
static int group_seen(int i, const char *n, size_t len)
{
    for (int j = 0; j < i; j++)
        if (strncmp(popci_option_table[j].info.name, n, len) == 0)
            return 1;
    return 0;
}

/* The valid names near `name`, into buf: the options of its group
** ("Training." for "Training.foo"), else the ungrouped options and the
** groups. All 74 names would not fit one error message. */
static void valid_names(const char *name, char *buf, size_t size)
{
    const char *dot = name ? strrchr(name, '.') : NULL;
    size_t plen = dot ? (size_t)(dot - name) + 1 : 0, used = 0;
    int in_group = 0;

    buf[0] = '\0';
    for (int i = 0; plen && i < popci_option_count; i++)
        in_group |= strncmp(popci_option_table[i].info.name, name, plen) == 0;
    for (int i = 0; i < popci_option_count; i++) {
        const char *n = popci_option_table[i].info.name;
        const char *d = strchr(n, '.');
        size_t len = strlen(n);
        int w;

        if (in_group ? strncmp(n, name, plen) != 0 : d != NULL) {
            /* outside a group, a group is listed once, as "Training.*" */
            if (in_group || !d)
                continue;
            len = (size_t)(d - n) + 1;
            if (group_seen(i, n, len))
                continue;
            w = snprintf(buf + used, size - used, "%s%.*s*", used ? ", " : "",
                         (int)len, n);
        } else {
            w = snprintf(buf + used, size - used, "%s%s", used ? ", " : "",
                         n);
        }
        if (w < 0 || (size_t)w >= size - used) {
            buf[used] = '\0';
            return;
        }
        used += (size_t)w;
    }
}

popc_status popci_options_unknown(const char *name)
{
    const char *names[MAX_OPTIONS] = {NULL};
    const char *close;
    char valid[1400];
    int n = 0;

    for (int i = 0; i < popci_option_count && n < MAX_OPTIONS; i++)
        names[n++] = popci_option_table[i].info.name;
    close = popci_closest_name(name, names, n);
    valid_names(name, valid, sizeof valid);
    if (close)
        return popc_set_error(POPC_ENOTFOUND, "unknown option '%s'; did you "
                              "mean '%s'? Valid options: %s",
                              name ? name : "(null)", close, valid);
    return popc_set_error(POPC_ENOTFOUND, "unknown option '%s'. Valid "
                          "options: %s", name ? name : "(null)", valid);
}

const popci_optval *popci_options_val(const popc_options *o,
                                      const char *name)
{
    return &o->v[popci_options_must(name)];
}

static const popci_optdef *def_of(const char *name, int *idx)
{
    int i = popci_options_index(name);

    if (idx)
        *idx = i;
    return i < 0 ? NULL : &popci_option_table[i];
}

/* ---- text <-> value ------------------------------------------------------------ */

static const popci_enum_member *member_by_value(const popci_optdef *d,
                                                int64_t value)
{
    for (const popci_enum_member *m = d->members; m->name; m++)
        if (m->value == value && !(m->flags & POPCI_MEMBER_ALIAS))
            return m;
    for (const popci_enum_member *m = d->members; m->name; m++)
        if (m->value == value)
            return m;
    return NULL;
}

static void member_list(const popci_optdef *d, char *buf, size_t size)
{
    size_t used = 0;

    buf[0] = '\0';
    for (const popci_enum_member *m = d->members; m->name && used < size;
         m++) {
        int w;

        if (m->flags & (POPCI_MEMBER_ALIAS | POPCI_MEMBER_REJECT))
            continue;
        w = snprintf(buf + used, size - used, "%s%s", used ? ", " : "",
                     m->name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

static popc_status bad_enum(const popci_optdef *d, const char *text)
{
    const char *names[64];
    const char *close;
    char list[512], hint[128] = "";
    int n = 0;

    if (d->bad_value)
        return popc_set_error(POPC_EINVAL, "%s: %s (got '%s')", d->info.name,
                              d->bad_value, text);
    for (const popci_enum_member *m = d->members; m->name && n < 64; m++)
        names[n++] = m->name;
    close = popci_closest_name(text, names, n);
    if (close)
        snprintf(hint, sizeof hint, "; did you mean '%s'?", close);
    member_list(d, list, sizeof list);
    if (!d->enum_type)
        return popc_set_error(POPC_EINVAL, "%s: '%s' is not an execution "
                              "strategy%s (valid values: %s)", d->info.name,
                              text, hint, list);
    return popc_set_error(POPC_EINVAL, "%s: '%s' is not a member of %s%s "
                          "(valid values: %s)", d->info.name, text,
                          d->enum_type, hint, list);
}

static popc_status parse_enum(const popci_optdef *d, const char *text,
                              popci_optval *v)
{
    const char *t = text;
    size_t tl;

    /* "poptorch.OutputMode.Sum", "OutputMode.Sum" and "Sum" */
    if (strncmp(t, "poptorch.", 9) == 0)
        t += 9;
    if (d->enum_type) {
        tl = strlen(d->enum_type);
        if (strncmp(t, d->enum_type, tl) == 0 && t[tl] == '.')
            t += tl + 1;
    }
    for (const popci_enum_member *m = d->members; m->name; m++) {
        if (strcmp(t, m->name) != 0)
            continue;
        if (m->flags & POPCI_MEMBER_MAPPED)
            popc_log(POPC_LOG_WARN, "%s: %s", d->info.name, m->note);
        v->i = m->value;
        return POPC_OK;
    }
    return bad_enum(d, text);
}

static int parse_bool_text(const char *t, int *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};

    for (int i = 0; i < 4; i++) {
        if (strcasecmp(t, yes[i]) == 0)
            return *out = 1, 1;
        if (strcasecmp(t, no[i]) == 0)
            return *out = 0, 1;
    }
    return 0;
}

popc_status popci_options_parse(const popci_optdef *d, const char *text,
                                popci_optval *v)
{
    memset(v, 0, sizeof *v);
    if ((d->flags & POPCI_OPT_NULLABLE) &&
        (!text || !*text || strcmp(text, "None") == 0)) {
        v->none = 1;
        return POPC_OK;
    }
    if (!text)
        return popc_set_error(POPC_EINVAL, "%s: no value given (None is not "
                              "allowed)", d->info.name);
    switch (d->info.type) {
    case POPC_OPT_BOOL: {
        int b;

        if (!parse_bool_text(text, &b))
            return popc_set_error(POPC_EINVAL, "%s: must be true or false "
                                  "(got '%s')", d->info.name, text);
        v->i = b;
        return POPC_OK;
    }
    case POPC_OPT_INT: {
        char *end;
        long long x;

        errno = 0;
        x = strtoll(text, &end, 10);
        if (!*text || *end || errno) {
            if (d->bad_value)
                return popc_set_error(POPC_EINVAL, "%s: %s (got '%s')",
                                      d->info.name, d->bad_value, text);
            return popc_set_error(POPC_EINVAL, "%s: must be an integer (got "
                                  "'%s')", d->info.name, text);
        }
        v->i = (int64_t)x;
        return POPC_OK;
    }
    case POPC_OPT_FLOAT: {
        char *end;

        errno = 0;
        v->f = strtod(text, &end);
        if (!*text || *end || errno || !isfinite(v->f))
            return popc_set_error(POPC_EINVAL, "%s: must be a finite number "
                                  "(got '%s')", d->info.name, text);
        return POPC_OK;
    }
    case POPC_OPT_ENUM:
        return parse_enum(d, text, v);
    case POPC_OPT_STRING:
        if (!(v->s = popci_strdup(text)))
            return popc_set_error(POPC_ENOMEM, "%s: out of memory",
                                  d->info.name);
        return POPC_OK;
    }
    return popc_set_error(POPC_EINTERNAL, "%s: bad option type %d",
                          d->info.name, (int)d->info.type);
}

/* Shortest "%g" text that reads back to the same double. */
static void format_double(double x, char *buf, size_t size)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

const char *popci_options_format_val(const popci_optdef *d,
                                     const popci_optval *v, char *buf,
                                     size_t size)
{
    const popci_enum_member *m;

    if (!buf || size == 0)
        return NULL;
    if (v->none) {
        snprintf(buf, size, "None");
        return buf;
    }
    switch (d->info.type) {
    case POPC_OPT_BOOL:
        snprintf(buf, size, "%s", v->i ? "true" : "false");
        break;
    case POPC_OPT_INT:
        snprintf(buf, size, "%" PRId64, v->i);
        break;
    case POPC_OPT_FLOAT:
        format_double(v->f, buf, size);
        break;
    case POPC_OPT_ENUM:
        m = member_by_value(d, v->i);
        if (m)
            snprintf(buf, size, "%s", m->name);
        else
            snprintf(buf, size, "%" PRId64, v->i);
        break;
    case POPC_OPT_STRING:
        snprintf(buf, size, "%s", v->s ? v->s : "");
        break;
    }
    return buf;
}

/* ---- commit: the one place where values change --------------------------- */

static popc_status frozen_error(const char *name)
{
    return popc_set_error(POPC_ESTATE, "Can't modify frozen Options: %s "
                          "cannot change once a model uses these options; "
                          "change a copy from popc_options_clone", name);
}

/* Range, enum membership and None: what the value's type allows. */
static popc_status check_value(const popci_optdef *d, const popci_optval *v)
{
    const popci_enum_member *m;
    char list[512];

    if (v->none)
        return (d->flags & POPCI_OPT_NULLABLE)
                   ? POPC_OK
                   : popc_set_error(POPC_EINVAL, "%s: None is not allowed",
                                    d->info.name);
    switch (d->info.type) {
    case POPC_OPT_BOOL:
        if (v->i != 0 && v->i != 1)
            return popc_set_error(POPC_EINVAL, "%s: must be true or false "
                                  "(got %" PRId64 ")", d->info.name, v->i);
        return POPC_OK;
    case POPC_OPT_INT:
        if (v->i >= d->min && v->i <= d->max)
            return POPC_OK;
        if (d->bad_value)
            return popc_set_error(POPC_EINVAL, "%s: %s (got %" PRId64 ")",
                                  d->info.name, d->bad_value, v->i);
        if (d->max >= INT32_MAX)
            return popc_set_error(POPC_EINVAL, "%s: must be >= %" PRId64
                                  " (got %" PRId64 ")", d->info.name, d->min,
                                  v->i);
        return popc_set_error(POPC_EINVAL, "%s: must be between %" PRId64
                              " and %" PRId64 " (got %" PRId64 ")",
                              d->info.name, d->min, d->max, v->i);
    case POPC_OPT_FLOAT:
        if (isfinite(v->f) && v->f >= d->fmin && v->f <= d->fmax)
            return POPC_OK;
        return popc_set_error(POPC_EINVAL, "%s: must be between %g and %g "
                              "(got %g)", d->info.name, d->fmin, d->fmax,
                              v->f);
    case POPC_OPT_ENUM:
        if (!(m = member_by_value(d, v->i))) {
            member_list(d, list, sizeof list);
            return popc_set_error(POPC_EINVAL, "%s: %" PRId64 " is not a "
                                  "value of %s (valid values: %s)",
                                  d->info.name, v->i,
                                  d->enum_type ? d->enum_type : "the option",
                                  list);
        }
        if (m->flags & POPCI_MEMBER_REJECT)
            return popc_set_error(POPC_EINVAL, "%s: %s", d->info.name,
                                  m->note ? m->note : d->bad_value);
        return POPC_OK;
    case POPC_OPT_STRING:
        return POPC_OK;
    }
    return popc_set_error(POPC_EINTERNAL, "%s: bad option type",
                          d->info.name);
}

popc_status popci_options_commit(popc_options *o, int idx, popci_optval *v)
{
    const popci_optdef *d = &popci_option_table[idx];
    char text[512];
    popc_status st;

    if (o->frozen) {
        st = frozen_error(d->info.name);
        goto fail;
    }
    if ((st = check_value(d, v)) != POPC_OK)
        goto fail;
    if (!d->info.supported &&
        strcmp(popci_options_format_val(d, v, text, sizeof text),
               d->info.def) != 0) {
        st = popc_set_error(POPC_EUNSUPPORTED, "option %s is not supported "
                            "yet by popc (%s); leave it at its default (%s)",
                            d->info.name, d->why ? d->why : "its effect is "
                            "not built", d->info.def);
        goto fail;
    }
    if (d->hook && (st = d->hook(o, d, v)) != POPC_OK)
        goto fail;
    free(o->v[idx].s);
    o->v[idx] = *v;
    o->v[idx].set = 1;
    v->s = NULL;
    return POPC_OK;
fail:
    free(v->s);
    v->s = NULL;
    return st;
}

popc_status popci_options_commit_other(popc_options *o, const char *name,
                                       const char *text)
{
    int idx = popci_options_must(name);
    popci_optval v;
    popc_status st;

    if ((st = popci_options_parse(&popci_option_table[idx], text, &v)))
        return st;
    return popci_options_commit(o, idx, &v);
}

/* ---- life cycle ---------------------------------------------------------------- */

void popc_options_free(popc_options *o)
{
    if (!o)
        return;
    for (int i = 0; o->v && i < popci_option_count; i++)
        free(o->v[i].s);
    free(o->v);
    free(o);
}

void popci_options_move(popc_options *dst, popc_options *src)
{
    for (int i = 0; dst->v && i < popci_option_count; i++)
        free(dst->v[i].s);
    free(dst->v);
    dst->v = src->v;
    src->v = NULL;
}

static popc_status alloc_options(popc_options **out)
{
    popc_options *o;

    *out = NULL;
    if (!(o = popci_calloc(1, sizeof *o)) ||
        !(o->v = popci_calloc((size_t)popci_option_count, sizeof *o->v))) {
        free(o);
        return popc_set_error(POPC_ENOMEM, "popc_options_new: out of "
                              "memory");
    }
    *out = o;
    return POPC_OK;
}

void popci_options_set_start_int(popc_options *o, popci_opt_id id,
                                 int64_t v)
{
    o->v[id].i = v;
}

static popc_status set_defaults(popc_options *o)
{
    for (int i = 0; i < popci_option_count; i++) {
        const popci_optdef *d = &popci_option_table[i];
        popc_status st = popci_options_parse(d, d->info.def, &o->v[i]);

        if (st != POPC_OK)
            return popc_set_error(POPC_EINTERNAL, "options_table.c: bad "
                                  "default of %s: %s", d->info.name,
                                  popc_last_error());
    }
    return POPC_OK;
}

popc_status popc_options_new(popc_options **out)
{
    popc_options *o = NULL;
    popc_status st;

    *out = NULL;
    if ((st = alloc_options(&o)) != POPC_OK)
        return st;
    if ((st = set_defaults(o)) != POPC_OK ||
        (st = popci_layer_options_env(o)) != POPC_OK) {
        popc_options_free(o);
        return st;
    }
    *out = o;
    return POPC_OK;
}

popc_status popc_options_clone(const popc_options *o, popc_options **out)
{
    popc_options *c = NULL;
    popc_status st;

    *out = NULL;
    if (!o)
        return popc_set_error(POPC_EINVAL, "popc_options_clone: NULL "
                              "options");
    if ((st = alloc_options(&c)) != POPC_OK)
        return st;
    for (int i = 0; i < popci_option_count; i++) {
        c->v[i] = o->v[i];
        c->v[i].s = NULL;
        if (o->v[i].s && !(c->v[i].s = popci_strdup(o->v[i].s))) {
            popc_options_free(c);
            return popc_set_error(POPC_ENOMEM, "popc_options_clone: out of "
                                  "memory");
        }
    }
    *out = c;
    return POPC_OK;
}

void popc_options_freeze(popc_options *o)
{
    const popci_optval *v;

    if (!o || o->frozen)
        return;
    o->frozen = 1;
    /* maxRepeatLogs configures the process-wide log; only an explicit
    ** setting overrides what the application chose itself. */
    v = popci_options_val(o, "maxRepeatLogs");
    if (v->set)
        popc_log_set_max_repeats(v->none ? INT_MAX : (int)v->i);
}

int popc_options_frozen(const popc_options *o)
{
    return o ? o->frozen : 0;
}

/* ---- setters ---------------------------------------------------------------------- */

popc_status popc_options_set(popc_options *o, const char *name,
                             const char *value)
{
    const popci_optdef *d;
    popci_optval v;
    popc_status st;
    int idx;

    if (!o)
        return popc_set_error(POPC_EINVAL, "popc_options_set: NULL options");
    if (!(d = def_of(name, &idx)))
        return popci_options_unknown(name);
    if (o->frozen)
        return frozen_error(d->info.name);
    if ((st = popci_options_parse(d, value, &v)) != POPC_OK)
        return st;
    return popci_options_commit(o, idx, &v);
}

static popc_status typed_set(popc_options *o, const char *name,
                             popc_option_type want, int64_t i, double f,
                             const char *setter)
{
    const popci_optdef *d;
    popci_optval v = {0};
    int idx;

    if (!o)
        return popc_set_error(POPC_EINVAL, "%s: NULL options", setter);
    if (!(d = def_of(name, &idx)))
        return popci_options_unknown(name);
    switch (d->info.type) {
    case POPC_OPT_INT:
    case POPC_OPT_ENUM:
        if (want != POPC_OPT_INT && want != POPC_OPT_BOOL)
            goto mismatch;
        v.i = i;
        break;
    case POPC_OPT_BOOL:
        if (want != POPC_OPT_BOOL && want != POPC_OPT_INT)
            goto mismatch;
        v.i = i;
        break;
    case POPC_OPT_FLOAT:
        v.f = want == POPC_OPT_FLOAT ? f : (double)i;
        break;
    case POPC_OPT_STRING:
        goto mismatch;
    }
    return popci_options_commit(o, idx, &v);
mismatch:
    return popc_set_error(POPC_EINVAL, "%s: %s is a%s option; set it with "
                          "%s", setter, d->info.name,
                          d->info.type == POPC_OPT_STRING ? " string"
                          : d->info.type == POPC_OPT_ENUM ? "n enum"
                          : d->info.type == POPC_OPT_BOOL ? " boolean"
                          : d->info.type == POPC_OPT_INT  ? "n integer"
                                                          : " float",
                          d->info.type == POPC_OPT_STRING
                              ? "popc_options_set"
                          : d->info.type == POPC_OPT_FLOAT
                              ? "popc_options_set_float"
                              : "popc_options_set_int or popc_options_set");
}

popc_status popc_options_set_int(popc_options *o, const char *name,
                                 int64_t v)
{
    return typed_set(o, name, POPC_OPT_INT, v, 0.0, "popc_options_set_int");
}

popc_status popc_options_set_float(popc_options *o, const char *name,
                                   double v)
{
    return typed_set(o, name, POPC_OPT_FLOAT, 0, v,
                     "popc_options_set_float");
}

popc_status popc_options_set_bool(popc_options *o, const char *name, int v)
{
    return typed_set(o, name, POPC_OPT_BOOL, v ? 1 : 0, 0.0,
                     "popc_options_set_bool");
}

/* ---- getters ---------------------------------------------------------------------- */

/* ---- typed accessors by id ---------------------------------------------- */

int64_t popci_opt_int(const popc_options *o, popci_opt_id id)
{
    const popci_optval *v = &o->v[id];

    if (v->none)
        return 0;
    return popci_option_table[id].info.type == POPC_OPT_FLOAT ? (int64_t)v->f
                                                              : v->i;
}

double popci_opt_float(const popc_options *o, popci_opt_id id)
{
    const popci_optval *v = &o->v[id];

    if (v->none)
        return 0.0;
    return popci_option_table[id].info.type == POPC_OPT_FLOAT ? v->f
                                                              : (double)v->i;
}

int popci_opt_bool(const popc_options *o, popci_opt_id id)
{
    return popci_opt_float(o, id) != 0.0;
}

const char *popci_opt_string(const popc_options *o, popci_opt_id id)
{
    return o->v[id].none ? NULL : o->v[id].s;
}

int popci_opt_is_none(const popc_options *o, popci_opt_id id)
{
    return o->v[id].none;
}

int popci_opt_is_set(const popc_options *o, popci_opt_id id)
{
    return o->v[id].set;
}

/* The table index of a known option for the getters; -1 (logged: a bug in
** the caller) for an unknown name or no options. */
static int get(const popc_options *o, const char *name, const char *getter)
{
    int idx;

    if (!o || !def_of(name, &idx)) {
        popc_log(POPC_LOG_ERR, "%s: unknown option '%s' (a bug in the "
                 "caller)", getter, name ? name : "(null)");
        return -1;
    }
    return idx;
}

/* The by-name getters read what the typed accessors below read. */
int64_t popc_options_get_int(const popc_options *o, const char *name)
{
    int id = get(o, name, "popc_options_get_int");

    return id < 0 ? 0 : popci_opt_int(o, (popci_opt_id)id);
}

double popc_options_get_float(const popc_options *o, const char *name)
{
    int id = get(o, name, "popc_options_get_float");

    return id < 0 ? 0.0 : popci_opt_float(o, (popci_opt_id)id);
}

int popc_options_get_bool(const popc_options *o, const char *name)
{
    int id = get(o, name, "popc_options_get_bool");

    return id < 0 ? 0 : popci_opt_bool(o, (popci_opt_id)id);
}

const char *popc_options_get_string(const popc_options *o, const char *name)
{
    int id = get(o, name, "popc_options_get_string");

    return id < 0 ? NULL : popci_opt_string(o, (popci_opt_id)id);
}

int popc_options_is_none(const popc_options *o, const char *name)
{
    int id = get(o, name, "popc_options_is_none");

    return id < 0 ? 0 : popci_opt_is_none(o, (popci_opt_id)id);
}

const char *popc_options_format(const popc_options *o, const char *name,
                                char *buf, size_t size)
{
    const popci_optdef *d;
    int idx;

    if (!o || !(d = def_of(name, &idx)))
        return NULL;
    return popci_options_format_val(d, &o->v[idx], buf, size);
}

int popc_options_is_set(const popc_options *o, const char *name)
{
    int idx = popci_options_index(name);

    return o && idx >= 0 ? o->v[idx].set : 0;
}

int popc_options_count(void)
{
    return popci_option_count;
}

const popc_option_info *popc_options_info(int i)
{
    if (i < 0 || i >= popci_option_count)
        return NULL;
    return &popci_option_table[i].info;
}

const popc_option_info *popc_options_find_info(const char *name)
{
    int idx = popci_options_index(name);

    return idx < 0 ? NULL : &popci_option_table[idx].info;
}
