/* options_file.c - PopTorch's Options.loadFromFile.
**
** PopTorch executes every kept line of the file as "options.<line>" in
** Python. popc accepts the subset such files use: one PopTorch method call
** per line, possibly chained ("Training.gradientAccumulation(2)
** .accumulationAndReplicationReductionType(poptorch.ReductionType.Sum)"),
** whose arguments are literals (integers, floats, strings, True, False,
** None), dotted names (poptorch.OutputMode.Sum, torch.half), calls
** (poptorch.ShardedExecution(), poptorch.TensorLocationSettings()
** .useOnChipStorage(False)), lists, tuples, dicts and keyword arguments.
**
** As in PopTorch: lines are stripped; empty lines and lines starting with
** '#' are skipped; a '#' outside a string starts a comment; errors read
** "SyntaxError at line <n> of <basename>: <detail>\n> options.<line>"
** where n counts only the kept lines (PopTorch's numbering). Other errors
** name the Python exception PopTorch would raise (ValueError, TypeError,
** AttributeError, ...). The whole file is parsed before anything is
** applied, and the changes are applied to a copy that replaces the options
** only when every line succeeded: a failing file changes nothing.
*/
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/options.h"
#include "core/layer/alloc.h"
#include "optfmt/optfmt_priv.h"

/* Nesting depth of lists/calls in one line: plenty for options. */
#define MAX_DEPTH 16

typedef struct parser {
    const char *text;          /* the stripped line */
    const char *p;
    char err[256];             /* SyntaxError detail, empty when fine */
    int depth;
} parser;

/* ---- lexing helpers ------------------------------------------------------------- */

static void skip_space(parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t')
        ps->p++;
}

/* An error quotes its line, as Python's traceback does, but only its
** first SHOWN bytes: a line can be megabytes long. */
#define SHOWN 160

static const char *cut(const char *line)
{
    return strlen(line) > SHOWN ? " ..." : "";
}

static int syntax(parser *ps, const char *fmt, const char *arg)
{
    if (!ps->err[0]) {
        char what[64];

        snprintf(ps->err, sizeof ps->err, fmt, arg ? arg : "");
        if (*ps->p) {
            snprintf(what, sizeof what, " (at '%.20s')", ps->p);
            strncat(ps->err, what, sizeof ps->err - strlen(ps->err) - 1);
        } else {
            strncat(ps->err, " (at the end of the line)",
                    sizeof ps->err - strlen(ps->err) - 1);
        }
    }
    return 0;
}

static int accept(parser *ps, char c)
{
    skip_space(ps);
    if (*ps->p != c)
        return 0;
    ps->p++;
    return 1;
}

static int is_ident_start(int c)
{
    return isalpha(c) || c == '_';
}

static char *dup_n(const char *s, size_t n)
{
    char *d = popci_malloc(n + 1);

    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* identifier ('.' identifier)* */
static char *dotted(parser *ps)
{
    const char *b;

    skip_space(ps);
    b = ps->p;
    if (!is_ident_start((unsigned char)*ps->p)) {
        syntax(ps, "invalid syntax: expected a name%s", NULL);
        return NULL;
    }
    for (;;) {
        while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
            ps->p++;
        if (*ps->p == '.' && is_ident_start((unsigned char)ps->p[1]))
            ps->p++;
        else
            break;
    }
    return dup_n(b, (size_t)(ps->p - b));
}

static int parse_expr(parser *ps, popci_val *v);

/* args := [arg (',' arg)* [',']] ')' ; the '(' is consumed. */
static int parse_args(parser *ps, popci_val *call)
{
    skip_space(ps);
    while (*ps->p != ')') {
        popci_val *items, *a;
        const char *save = ps->p;
        char *kw = NULL;

        if (!(items = popci_realloc(call->items, (size_t)(call->n + 1) *
                                               sizeof *items)))
            return syntax(ps, "out of memory%s", NULL);
        call->items = items;
        a = &items[call->n];
        memset(a, 0, sizeof *a);
        call->n++;
        /* keyword argument: name '=' (not '==') */
        if (is_ident_start((unsigned char)*ps->p)) {
            const char *q = ps->p;

            while (isalnum((unsigned char)*q) || *q == '_')
                q++;
            while (*q == ' ' || *q == '\t')
                q++;
            if (*q == '=' && q[1] != '=') {
                kw = dup_n(ps->p, strspn(ps->p, "abcdefghijklmnopqrstuvwxyz"
                                                "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                "0123456789_"));
                if (!kw)
                    return syntax(ps, "out of memory%s", NULL);
                ps->p = q + 1;
            }
        }
        if (!parse_expr(ps, a)) {
            free(kw);
            return 0;
        }
        a->kw = kw;
        if (!kw)
            for (int i = 0; i + 1 < call->n; i++)
                if (call->items[i].kw) {
                    ps->p = save;
                    return syntax(ps, "positional argument follows keyword "
                                  "argument%s", NULL);
                }
        skip_space(ps);
        if (*ps->p == ',') {
            ps->p++;
            skip_space(ps);
            continue;
        }
        if (*ps->p != ')')
            return syntax(ps, "invalid syntax: expected ',' or ')'%s", NULL);
    }
    ps->p++;
    return 1;
}

/* A call's argument list and its chained method calls. */
static int parse_call_rest(parser *ps, popci_val *v)
{
    popci_val *last = v;

    v->kind = POPCI_V_CALL;
    if (!parse_args(ps, v))
        return 0;
    for (;;) {
        popci_val *m;

        skip_space(ps);
        if (*ps->p != '.')
            return 1;
        ps->p++;
        if (!(m = popci_calloc(1, sizeof *m)))
            return syntax(ps, "out of memory%s", NULL);
        last->next = m;
        last = m;
        m->kind = POPCI_V_CALL;
        if (!(m->s = dotted(ps)))
            return 0;
        if (strchr(m->s, '.'))
            return syntax(ps, "invalid syntax: expected '(' after a method "
                          "name%s", NULL);
        if (!accept(ps, '('))
            return syntax(ps, "invalid syntax: expected '(' after '%s'",
                          m->s);
        if (!parse_args(ps, m))
            return 0;
    }
}

static int parse_number(parser *ps, popci_val *v, int negative)
{
    const char *b = ps->p;
    char *end;

    while (isdigit((unsigned char)*ps->p) || *ps->p == '_')
        ps->p++;
    if (*ps->p == '.' || *ps->p == 'e' || *ps->p == 'E') {
        errno = 0;
        v->f = strtod(b, &end);
        if (end == b || errno)
            return syntax(ps, "invalid number%s", NULL);
        ps->p = end;
        v->kind = POPCI_V_FLOAT;
        if (negative)
            v->f = -v->f;
    } else {
        errno = 0;
        v->i = strtoll(b, &end, 10);
        if (end != ps->p || errno)
            return syntax(ps, "invalid integer literal%s", NULL);
        v->kind = POPCI_V_INT;
        if (negative)
            v->i = -v->i;
    }
    if (isalpha((unsigned char)*ps->p) || *ps->p == '_')
        return syntax(ps, "invalid decimal literal%s", NULL);
    return 1;
}

static int parse_string(parser *ps, popci_val *v)
{
    char quote = *ps->p++;
    size_t cap = 32, n = 0;
    char *s = popci_malloc(cap);

    if (!s)
        return syntax(ps, "out of memory%s", NULL);
    while (*ps->p && *ps->p != quote) {
        char c = *ps->p++;

        if (c == '\\') {
            c = *ps->p++;
            switch (c) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case '\\': case '\'': case '"': break;
            default:
                free(s);
                ps->p--;
                return syntax(ps, "unsupported escape sequence in a "
                              "string%s", NULL);
            }
        }
        if (n + 2 > cap) {
            char *t = popci_realloc(s, cap *= 2);
            if (!t) {
                free(s);
                return syntax(ps, "out of memory%s", NULL);
            }
            s = t;
        }
        s[n++] = c;
    }
    s[n] = '\0';
    if (*ps->p != quote) {
        free(s);
        return syntax(ps, "unterminated string literal%s", NULL);
    }
    ps->p++;
    v->kind = POPCI_V_STR;
    v->s = s;
    return 1;
}

/* '[' items ']', '(' items ')' or '{' key ':' value, ... '}' */
static int parse_collection(parser *ps, popci_val *v)
{
    char open = *ps->p++;
    char close = open == '[' ? ']' : open == '(' ? ')' : '}';

    v->kind = open == '{' ? POPCI_V_DICT : POPCI_V_LIST;
    skip_space(ps);
    while (*ps->p != close) {
        int per = open == '{' ? 2 : 1;
        popci_val *items = popci_realloc(v->items, (size_t)(v->n + per) *
                                                 sizeof *items);

        if (!items)
            return syntax(ps, "out of memory%s", NULL);
        v->items = items;
        memset(&items[v->n], 0, (size_t)per * sizeof *items);
        v->n += per;
        if (!parse_expr(ps, &items[v->n - per]))
            return 0;
        if (per == 2) {
            if (!accept(ps, ':'))
                return syntax(ps, "invalid syntax: expected ':' in a "
                              "dict%s", NULL);
            if (!parse_expr(ps, &items[v->n - 1]))
                return 0;
        }
        skip_space(ps);
        if (*ps->p == ',') {
            ps->p++;
            skip_space(ps);
        } else if (*ps->p != close) {
            char want[8];
            snprintf(want, sizeof want, "%c", close);
            return syntax(ps, "invalid syntax: expected ',' or '%s'", want);
        }
    }
    ps->p++;
    return 1;
}

static int parse_expr(parser *ps, popci_val *v)
{
    int ok;

    skip_space(ps);
    if (++ps->depth > MAX_DEPTH) {
        ps->depth--;
        return syntax(ps, "too many nested brackets%s", NULL);
    }
    if (*ps->p == '-' && isdigit((unsigned char)ps->p[1])) {
        ps->p++;
        ok = parse_number(ps, v, 1);
    } else if (isdigit((unsigned char)*ps->p) ||
               (*ps->p == '.' && isdigit((unsigned char)ps->p[1]))) {
        ok = parse_number(ps, v, 0);
    } else if (*ps->p == '"' || *ps->p == '\'') {
        ok = parse_string(ps, v);
    } else if (*ps->p == '[' || *ps->p == '(' || *ps->p == '{') {
        ok = parse_collection(ps, v);
    } else if (is_ident_start((unsigned char)*ps->p)) {
        char *name = dotted(ps);

        ok = name != NULL;
        if (ok && strcmp(name, "True") == 0) {
            v->kind = POPCI_V_BOOL, v->i = 1;
            free(name);
        } else if (ok && strcmp(name, "False") == 0) {
            v->kind = POPCI_V_BOOL, v->i = 0;
            free(name);
        } else if (ok && strcmp(name, "None") == 0) {
            v->kind = POPCI_V_NONE;
            free(name);
        } else if (ok) {
            v->kind = POPCI_V_NAME;
            v->s = name;
            if (accept(ps, '('))
                ok = parse_call_rest(ps, v);
        }
    } else {
        ok = syntax(ps, "invalid syntax: expected a value%s", NULL);
    }
    ps->depth--;
    return ok;
}

/* statement := dotted '(' args ')' ('.' name '(' args ')')* */
static int parse_statement(parser *ps, popci_val *v)
{
    if (!(v->s = dotted(ps)))
        return 0;
    if (!accept(ps, '(')) {
        skip_space(ps);
        if (*ps->p == '=')
            return syntax(ps, "invalid syntax: options are set by calling "
                          "them, e.g. deviceIterations(4)%s", NULL);
        return syntax(ps, "invalid syntax: expected '(' after '%s'", v->s);
    }
    if (!parse_call_rest(ps, v))
        return 0;
    skip_space(ps);
    if (*ps->p == ';')
        return syntax(ps, "invalid syntax: one option per line%s", NULL);
    if (*ps->p)
        return syntax(ps, "invalid syntax%s", NULL);
    return 1;
}

/* ---- the file --------------------------------------------------------------------- */

typedef struct stmt {
    char *line;                /* stripped, without the comment */
    int n;                     /* kept-line number (PopTorch's) */
    popci_val call;
} stmt;

/* The line without a trailing comment (a '#' outside quotes). */
static void cut_comment(char *s)
{
    char quote = 0;

    for (char *p = s; *p; p++) {
        if (quote) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == quote)
                quote = 0;
        } else if (*p == '"' || *p == '\'') {
            quote = *p;
        } else if (*p == '#') {
            *p = '\0';
            break;
        }
    }
}

static char *strip(char *s)
{
    char *e;

    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');

    return slash ? slash + 1 : path;
}

static void free_stmts(stmt *st, int n)
{
    for (int i = 0; i < n; i++) {
        free(st[i].line);
        popci_val_clear(&st[i].call);
    }
    free(st);
}

/* Read and parse every kept line; nothing is applied here. */
static popc_status read_statements(const char *path, stmt **out, int *count)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t cap = 0;
    stmt *sts = NULL;
    int n = 0, kept = 0, first = 1, lineno = 0;
    ssize_t got;
    popc_status st = POPC_OK;

    *out = NULL;
    *count = 0;
    if (!f)
        return popc_set_error(POPC_EIO, "%s: cannot open: %s", path,
                              strerror(errno));
    while ((got = getline(&buf, &cap, f)) >= 0) {
        char *line = buf, *code;
        parser ps;
        stmt *grown;

        lineno++;
        if (memchr(buf, '\0', (size_t)got)) {
            st = popc_set_error(POPC_ECONFIG, "%s:%d: contains NUL bytes; not "
                                "a text options file", path, lineno);
            break;
        }
        if ((st = popci_check_utf8(path, lineno, buf, (size_t)got)) !=
            POPC_OK)
            break;

        if (first && (unsigned char)line[0] == 0xEF &&
            (unsigned char)line[1] == 0xBB && (unsigned char)line[2] == 0xBF)
            line += 3;
        first = 0;
        line = strip(line);
        if (!*line || *line == '#')
            continue;
        kept++;
        if (!(grown = popci_realloc(sts, (size_t)(n + 1) * sizeof *sts))) {
            st = popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
            break;
        }
        sts = grown;
        memset(&sts[n], 0, sizeof sts[n]);
        if (!(sts[n].line = popci_strdup(line))) {
            st = popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
            break;
        }
        sts[n].n = kept;
        n++;
        cut_comment(line);
        code = strip(line);
        memset(&ps, 0, sizeof ps);
        ps.text = ps.p = code;
        if (!parse_statement(&ps, &sts[n - 1].call)) {
            st = popc_set_error(POPC_ECONFIG, "SyntaxError at line %d of "
                                "%s: %s\n> options.%.*s%s", kept,
                                base_name(path), ps.err, SHOWN,
                                sts[n - 1].line, cut(sts[n - 1].line));
            break;
        }
    }
    if (st == POPC_OK && ferror(f))
        st = popc_set_error(POPC_EIO, "%s: read error: %s", path,
                            strerror(errno));
    free(buf);
    fclose(f);
    if (st != POPC_OK) {
        free_stmts(sts, n);
        return st;
    }
    *out = sts;
    *count = n;
    return POPC_OK;
}

static popc_status apply_statement(popc_options *o, const stmt *s,
                                   const char *path)
{
    const char *prefix = "";
    const char *kind = "ValueError";
    popc_status st = POPC_OK;

    for (const popci_val *c = &s->call; c; c = c->next) {
        const char *next = "";

        st = popci_options_call(o, prefix, c->s, c->items, c->n, &kind,
                                &next);
        if (st != POPC_OK)
            break;
        prefix = next;
    }
    if (st == POPC_OK)
        return POPC_OK;
    if (st == POPC_EUNSUPPORTED)
        kind = "UnsupportedError";
    return popc_set_error(st, "%s at line %d of %s: %s\n> options.%.*s%s",
                          kind, s->n, base_name(path), popc_last_error(),
                          SHOWN, s->line, cut(s->line));
}

popc_status popci_options_loadable(const popc_options *o, const char *who,
                                   const char *path)
{
    if (!o || !path)
        return popc_set_error(POPC_EINVAL, "%s: NULL options or path", who);
    if (popc_options_frozen(o))
        return popc_set_error(POPC_ESTATE, "Can't modify frozen Options: "
                              "cannot load %s once a model uses these "
                              "options; load into a copy from "
                              "popc_options_clone", path);
    return POPC_OK;
}

popc_status popc_options_load_file(popc_options *o, const char *path)
{
    popc_options *work = NULL;
    stmt *sts = NULL;
    int n = 0;
    popc_status st;

    if ((st = popci_options_loadable(o, "popc_options_load_file", path)) !=
        POPC_OK)
        return st;
    if ((st = read_statements(path, &sts, &n)) != POPC_OK)
        return st;
    if ((st = popc_options_clone(o, &work)) != POPC_OK)
        goto done;
    for (int i = 0; i < n; i++)
        if ((st = apply_statement(work, &sts[i], path)) != POPC_OK)
            goto done;
    popci_options_move(o, work);
done:
    popc_options_free(work);
    free_stmts(sts, n);
    return st;
}
