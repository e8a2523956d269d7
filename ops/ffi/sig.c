/* sig.c - parse foreign-call signatures and check them against a node's
** tensors (grammar in sig.h). Messages quote the argument and its position
** so a user can find the mistake in the string they wrote.
*/
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ffi/sig.h"

static const struct {
    const char *name;
    ffs_type type;
} type_names[] = {
    {"void", FFS_VOID},   {"f16", FFS_F16},     {"f32", FFS_F32},
    {"float", FFS_F32},   {"f64", FFS_F64},     {"double", FFS_F64},
    {"i32", FFS_I32},     {"int", FFS_I32},     {"int32", FFS_I32},
    {"i64", FFS_I64},     {"int64", FFS_I64},   {"long", FFS_I64},
    {"u8", FFS_U8},       {"uint8", FFS_U8},    {"bool", FFS_BOOL},
};

const char *ffs_type_name(ffs_type t)
{
    static const char *const names[] = {"void", "f16", "f32", "f64",
                                        "i32",  "i64", "u8",  "bool"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

popc_dtype ffs_dtype(ffs_type t)
{
    switch (t) {
    case FFS_F16: return POPC_DTYPE_F16;
    case FFS_F32: return POPC_DTYPE_F32;
    case FFS_I32: return POPC_DTYPE_I32;
    case FFS_I64: return POPC_DTYPE_I64;
    case FFS_U8: return POPC_DTYPE_U8;
    case FFS_BOOL: return POPC_DTYPE_BOOL;
    default: return POPC_DTYPE_UNDEFINED;
    }
}

size_t ffs_size(ffs_type t)
{
    switch (t) {
    case FFS_F16: return 2;
    case FFS_F32: case FFS_I32: return 4;
    case FFS_F64: case FFS_I64: return 8;
    case FFS_U8: case FFS_BOOL: return 1;
    default: return 0;
    }
}

/* ---- lexer ------------------------------------------------------------------ */

typedef struct lex {
    const char *text, *p;
    char *err;
    size_t err_size;
    int failed;
} lex;

static int fail(lex *L, const char *fmt, ...) POPC_PRINTF(2, 3);

static int fail(lex *L, const char *fmt, ...)
{
    char what[256];
    va_list ap;

    if (L->failed)
        return 0;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(L->err, L->err_size, "signature \"%s\", at column %d: %s",
             L->text, (int)(L->p - L->text) + 1, what);
    L->failed = 1;
    return 0;
}

static void skip(lex *L)
{
    while (isspace((unsigned char)*L->p))
        L->p++;
}

static int punct(lex *L, char c)
{
    skip(L);
    if (*L->p != c)
        return 0;
    L->p++;
    return 1;
}

/* An identifier into buf; 0 when none is next. */
static int ident(lex *L, char *buf, size_t size)
{
    size_t n = 0;

    skip(L);
    if (!isalpha((unsigned char)*L->p) && *L->p != '_')
        return 0;
    while (isalnum((unsigned char)L->p[n]) || L->p[n] == '_')
        n++;
    if (n >= size)
        return fail(L, "name '%.*s' is too long", (int)n, L->p);
    memcpy(buf, L->p, n);
    buf[n] = '\0';
    L->p += n;
    return 1;
}

static int type_of(const char *name, ffs_type *t)
{
    for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
        if (strcmp(type_names[i].name, name) == 0) {
            *t = type_names[i].type;
            return 1;
        }
    return 0;
}

static int want_type(lex *L, ffs_type *t)
{
    char name[64];
    const char *at;

    skip(L);
    at = L->p;
    if (!ident(L, name, sizeof name)) {
        if (!L->failed)
            fail(L, "expected a type (f32, f64, i32, i64, u8, bool, f16)");
        return 0;
    }
    if (!type_of(name, t)) {
        L->p = at;
        return fail(L, "unknown type '%s' (types: f32|float, f64|double, "
                    "i32|int|int32, i64|int64|long, u8|uint8, bool, f16)",
                    name);
    }
    return 1;
}

/* 'in'K or 'out'K */
static int want_ref(lex *L, ffs_arg *a)
{
    char name[32];
    const char *digits;
    char *end;
    long k;

    if (!ident(L, name, sizeof name))
        return L->failed ? 0 : fail(L, "expected in0, in1, ... or out0, ...");
    if (strncmp(name, "in", 2) == 0) {
        a->ref_output = 0;
        digits = name + 2;
    } else if (strncmp(name, "out", 3) == 0) {
        a->ref_output = 1;
        digits = name + 3;
    } else {
        return fail(L, "'%s' is not a tensor; use in0, in1, ... or out0, ...",
                    name);
    }
    errno = 0;
    k = strtol(digits, &end, 10);
    if (!*digits || *end || errno || k < 0 || k >= FFS_MAX_ARGS)
        return fail(L, "'%s' is not a tensor; use in0, in1, ... or out0, ...",
                    name);
    a->tensor = (int)k;
    return 1;
}

static int want_number(lex *L, ffs_arg *a)
{
    char *end;

    skip(L);
    errno = 0;
    switch (a->type) {
    case FFS_F32:
        a->value.f32 = strtof(L->p, &end);
        break;
    case FFS_F64:
        a->value.f64 = strtod(L->p, &end);
        break;
    case FFS_I32: {
        long long v = strtoll(L->p, &end, 10);
        if (v < INT32_MIN || v > INT32_MAX)
            errno = ERANGE;
        a->value.i32 = (int32_t)v;
        break;
    }
    case FFS_I64:
        a->value.i64 = strtoll(L->p, &end, 10);
        break;
    case FFS_U8:
    case FFS_BOOL: {
        long long v = strtoll(L->p, &end, 10);
        if (v < 0 || v > (a->type == FFS_BOOL ? 1 : 255))
            errno = ERANGE;
        a->value.u8 = (uint8_t)v;
        break;
    }
    default:
        return fail(L, "a %s constant is not supported",
                    ffs_type_name(a->type));
    }
    if (end == L->p)
        return fail(L, "expected a %s value", ffs_type_name(a->type));
    if (errno == ERANGE)
        return fail(L, "the value does not fit in %s",
                    ffs_type_name(a->type));
    L->p = end;
    return 1;
}

/* ---- parser ----------------------------------------------------------------- */

static int is_int(ffs_type t)
{
    return t == FFS_I32 || t == FFS_I64;
}

static int parse_arg(lex *L, ffs_sig *s, ffs_arg *a)
{
    char word[64], name[64];
    const char *at, *start;

    memset(a, 0, sizeof *a);
    skip(L);
    at = start = L->p;
    if (!ident(L, word, sizeof word))
        return L->failed ? 0 : fail(L, "expected an argument");
    if (strcmp(word, "err") == 0) {
        if (s->err_arg >= 0)
            return fail(L, "only one 'err' argument is allowed");
        a->kind = FFS_ERR;
        s->err_arg = s->n_args;
        ident(L, name, sizeof name);
        return !L->failed;
    }
    if (strcmp(word, "in") == 0 || strcmp(word, "out") == 0) {
        int out = word[0] == 'o';

        if (!want_type(L, &a->type))
            return 0;
        if (punct(L, '*')) {
            if (a->type == FFS_VOID)
                return fail(L, "void* says nothing about the data; give "
                            "the element type (in f32*)");
            a->kind = out ? FFS_OUT_PTR : FFS_IN_PTR;
            a->tensor = out ? s->n_out++ : s->n_in++;
        } else if (out) {
            return fail(L, "an output is a buffer: write 'out %s*'",
                        ffs_type_name(a->type));
        } else {
            if (a->type == FFS_VOID || a->type == FFS_F16 ||
                a->type == FFS_F64)
                return fail(L, "a per-element argument needs a tensor "
                            "element type (f32, i32, i64, u8, bool), not "
                            "%s", ffs_type_name(a->type));
            a->kind = FFS_IN_ELEM;
            a->tensor = s->n_in++;
            s->elementwise = 1;
        }
        ident(L, name, sizeof name);
        return !L->failed;
    }
    L->p = at;
    if (!want_type(L, &a->type))
        return 0;
    if (a->type == FFS_VOID || a->type == FFS_F16)
        return fail(L, "a %s argument cannot be passed by value",
                    ffs_type_name(a->type));
    at = L->p;
    if (punct(L, '*'))
        return fail(L, "a buffer needs a direction: 'in %s*' or 'out %s*'",
                    ffs_type_name(a->type), ffs_type_name(a->type));
    if (!ident(L, name, sizeof name))
        return L->failed ? 0
                         : fail(L, "expected a name after %s (n, dim(...) "
                                "or 'name = value')", ffs_type_name(a->type));
    if (punct(L, '=')) {
        a->kind = FFS_CONST;
        return want_number(L, a);
    }
    if (strcmp(name, "n") == 0 || strcmp(name, "numel") == 0) {
        if (!is_int(a->type))
            return fail(L, "an element count is i32 or i64, not %s",
                        ffs_type_name(a->type));
        a->kind = FFS_COUNT;
        a->tensor = -1;
        if (punct(L, '(') && (!want_ref(L, a) || !punct(L, ')')))
            return L->failed ? 0 : fail(L, "expected ')'");
        return 1;
    }
    if (strcmp(name, "dim") == 0) {
        char *end;
        long k;

        if (!is_int(a->type))
            return fail(L, "a dimension is i32 or i64, not %s",
                        ffs_type_name(a->type));
        a->kind = FFS_DIM;
        if (!punct(L, '('))
            return fail(L, "write dim(in0, 1): the tensor and the axis");
        if (!want_ref(L, a))
            return 0;
        if (!punct(L, ','))
            return fail(L, "write dim(in0, 1): the tensor and the axis");
        skip(L);
        k = strtol(L->p, &end, 10);
        if (end == L->p || k < -POPC_MAX_RANK || k >= POPC_MAX_RANK)
            return fail(L, "expected an axis in -%d..%d", POPC_MAX_RANK,
                        POPC_MAX_RANK - 1);
        L->p = end;
        a->dim = (int)k;
        if (!punct(L, ')'))
            return fail(L, "expected ')'");
        return 1;
    }
    L->p = start;
    return fail(L, "'%s %s' has no value: write '%s %s = <value>' for a "
                "constant, or use n, n(in1) or dim(in0, 1) for sizes",
                ffs_type_name(a->type), name, ffs_type_name(a->type), name);
}

/* Whole-signature rules, after the arguments are known. */
static int check_sig(lex *L, ffs_sig *s)
{
    int n_ptr = 0;

    for (int i = 0; i < s->n_args; i++)
        n_ptr += s->args[i].kind == FFS_IN_PTR ||
                 s->args[i].kind == FFS_OUT_PTR;
    if (s->elementwise) {
        if (n_ptr)
            return fail(L, "per-element arguments ('in f32') and buffers "
                        "('in f32*') cannot be mixed");
        if (ffs_dtype(s->ret) == POPC_DTYPE_UNDEFINED ||
            s->ret == FFS_F16)
            return fail(L, "a per-element function returns the output "
                        "element: f32, i32, i64, u8 or bool, not %s",
                        ffs_type_name(s->ret));
        s->n_out = 1;
    } else if (s->ret != FFS_VOID && !is_int(s->ret)) {
        return fail(L, "a function on buffers returns void or an integer "
                    "status (non-zero = failure), not %s",
                    ffs_type_name(s->ret));
    }
    if (s->n_in == 0 && s->n_out == 0)
        return fail(L, "the function neither reads an input nor writes an "
                    "output");
    for (int i = 0; i < s->n_args; i++) {
        ffs_arg *a = &s->args[i];

        if (a->kind == FFS_COUNT && a->tensor < 0) {
            a->ref_output = s->n_in == 0;
            a->tensor = 0;
        }
        if ((a->kind == FFS_COUNT || a->kind == FFS_DIM) &&
            a->tensor >= (a->ref_output ? s->n_out : s->n_in))
            return fail(L, "argument %d refers to %s%d, but the signature "
                        "has %d %s", i + 1, a->ref_output ? "out" : "in",
                        a->tensor, a->ref_output ? s->n_out : s->n_in,
                        a->ref_output ? "outputs" : "inputs");
    }
    return 1;
}

int ffs_parse(const char *text, ffs_sig *s, char *err, size_t err_size)
{
    lex L = {text ? text : "", text ? text : "", err, err_size, 0};
    char word[64];

    memset(s, 0, sizeof *s);
    s->err_arg = -1;
    if (!want_type(&L, &s->ret))
        return 0;
    if (!punct(&L, '('))
        return fail(&L, "expected '(' after the return type");
    skip(&L);
    /* "(void)" is C's empty list */
    if (strncmp(L.p, "void", 4) == 0) {
        const char *save = L.p;

        ident(&L, word, sizeof word);
        if (strcmp(word, "void") != 0 || !punct(&L, ')'))
            L.p = save;
        else
            goto end;
    }
    if (!punct(&L, ')')) {
        do {
            if (s->n_args == FFS_MAX_ARGS)
                return fail(&L, "more than %d arguments", FFS_MAX_ARGS);
            if (!parse_arg(&L, s, &s->args[s->n_args]))
                return 0;
            s->n_args++;
        } while (punct(&L, ','));
        if (!punct(&L, ')'))
            return fail(&L, "expected ',' or ')'");
    }
end:
    skip(&L);
    if (*L.p)
        return fail(&L, "unexpected text after ')'");
    return check_sig(&L, s);
}

/* ---- against the tensors ------------------------------------------------------- */

static int64_t numel(const popc_view *v)
{
    return popc_view_numel(v);
}

static void dims_text(const popc_view *v, char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "[");

    for (int d = 0; d < v->rank && n < size; d++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", d ? ", " : "",
                              (long long)v->dims[d]);
    if (n < size)
        snprintf(buf + n, size - n, "]");
}

/* "same_as:K", "same_as:inK", "scalar", "[4, 5]", "4, 5" or "4 5". */
static int shape_rule(const char *rule, const popc_view *in, int n_in,
                      popc_view *out, char *err, size_t err_size)
{
    const char *p = rule;

    if (strncmp(p, "same_as:", 8) == 0) {
        char *end;
        long k;

        p += 8;
        if (strncmp(p, "in", 2) == 0)
            p += 2;
        k = strtol(p, &end, 10);
        if (end == p || *end || k < 0 || k >= n_in) {
            snprintf(err, err_size, "output shape rule \"%s\": same_as needs "
                     "an input index 0..%d", rule, n_in - 1);
            return 0;
        }
        out->rank = in[k].rank;
        memcpy(out->dims, in[k].dims, sizeof out->dims);
        return 1;
    }
    out->rank = 0;
    if (strcmp(p, "scalar") == 0)
        return 1;
    while (*p) {
        char *end;
        long long d;

        if (isspace((unsigned char)*p) || *p == ',' || *p == '[' ||
            *p == ']') {
            p++;
            continue;
        }
        d = strtoll(p, &end, 10);
        if (end == p || d < 0 || out->rank == POPC_MAX_RANK) {
            snprintf(err, err_size, "output shape rule \"%s\": use "
                     "\"same_as:K\" (the shape of input K), \"scalar\" or "
                     "dims such as \"4, 5\" (at most %d, none negative)",
                     rule, POPC_MAX_RANK);
            return 0;
        }
        out->dims[out->rank++] = d;
        p = end;
    }
    return 1;
}

int ffs_outputs(const ffs_sig *s, const popc_view *in, int n_in,
                const popc_attr *shape_rules, popc_view *out, int n_out,
                char *err, size_t err_size)
{
    char a[96], b[96];

    if (n_in != s->n_in) {
        snprintf(err, err_size, "the signature reads %d input%s but the "
                 "node has %d", s->n_in, s->n_in == 1 ? "" : "s", n_in);
        return 0;
    }
    if (n_out != s->n_out) {
        snprintf(err, err_size, "the signature writes %d output%s but the "
                 "node has %d", s->n_out, s->n_out == 1 ? "" : "s", n_out);
        return 0;
    }
    if (shape_rules && shape_rules->type != POPC_ATTR_STRINGS) {
        snprintf(err, err_size, "attribute output_shapes must be a list of "
                 "strings");
        return 0;
    }
    for (int i = 0; i < s->n_args; i++) {
        const ffs_arg *x = &s->args[i];
        const popc_view *v;

        if (x->kind != FFS_IN_PTR && x->kind != FFS_IN_ELEM)
            continue;
        v = &in[x->tensor];
        if (v->dtype != ffs_dtype(x->type)) {
            snprintf(err, err_size, "argument %d is '%s %s%s' but input %d "
                     "is %s", i + 1, "in", ffs_type_name(x->type),
                     x->kind == FFS_IN_PTR ? "*" : "", x->tensor,
                     popc_dtype_name(v->dtype));
            return 0;
        }
    }
    for (int j = 0; j < n_out; j++) {
        const char *rule = "same_as:0";

        memset(&out[j], 0, sizeof out[j]);
        if (shape_rules && j < shape_rules->n)
            rule = shape_rules->strings[j];
        if (!rule || (n_in == 0 && strncmp(rule, "same_as:", 8) == 0)) {
            snprintf(err, err_size, "output %d needs an explicit shape (the "
                     "function has no input to copy it from)", j);
            return 0;
        }
        if (!shape_rule(rule, in, n_in, &out[j], err, err_size))
            return 0;
        if (s->elementwise)
            out[j].dtype = ffs_dtype(s->ret);
        for (int i = 0; i < s->n_args; i++)
            if (s->args[i].kind == FFS_OUT_PTR && s->args[i].tensor == j)
                out[j].dtype = ffs_dtype(s->args[i].type);
    }
    /* per element: every input has the output's element count */
    for (int i = 0; s->elementwise && i < n_in; i++)
        if (numel(&in[i]) != numel(&out[0])) {
            dims_text(&in[i], a, sizeof a);
            dims_text(&out[0], b, sizeof b);
            snprintf(err, err_size, "a per-element call needs every input "
                     "to have the output's %lld elements; input %d is %s, "
                     "the output %s", (long long)numel(&out[0]), i, a, b);
            return 0;
        }
    for (int i = 0; i < s->n_args; i++) {
        const ffs_arg *x = &s->args[i];
        const popc_view *v;
        int axis;

        if (x->kind != FFS_DIM)
            continue;
        v = x->ref_output ? &out[x->tensor] : &in[x->tensor];
        axis = x->dim < 0 ? x->dim + v->rank : x->dim;
        if (axis < 0 || axis >= v->rank) {
            dims_text(v, a, sizeof a);
            snprintf(err, err_size, "argument %d asks for dim %d of %s%d, "
                     "which is %s", i + 1, x->dim,
                     x->ref_output ? "out" : "in", x->tensor, a);
            return 0;
        }
    }
    return 1;
}
