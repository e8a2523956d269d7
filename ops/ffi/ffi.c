/* ffi.c - the "ffi" op plugin: popc::ForeignCall, a C function of any
** shared library called through libffi (added by popc_foreign_op).
**
**   library        string: absolute path, or a bare soname found by the
**                  dynamic linker's system search (never relative)
**   symbol         string: the function's name
**   signature      string: how tensors map to arguments (ops/ffi/sig.h)
**   output_shapes  strings (optional): one rule per output, "same_as:K"
**                  or dims ("4, 5"); default "same_as:0"
**
** infer() parses and checks the signature, so a bad one fails while the
** graph is built. prepare() runs when the model is compiled: it loads the
** library (dlopen), finds the symbol, checks the signature against the
** tensors once more and builds the call interface (ffi_prep_cif); a
** missing library or symbol is therefore a compile error, never a run
** error. forward() is one ffi_call on whole buffers, or, for a per-element
** signature such as "f32(in f32)" (erff), one ffi_call per element: about
** 10-30 ns each, so bind a function on buffers when one exists.
**
** An 'err' argument passes a libffi closure, void (*)(const char *msg):
** the function may call it to report a failure, which stops the run with
** that message. The closure is bound to the node, so calls of one node are
** serialised (the op is also a host op, which backends serialise).
**
** The function runs in the process: a crash in it is a crash of the
** program, as with any C library.
*/
#include "config.h"

#include <dlfcn.h>
#include <ffi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ffi/sig.h"

static const popc_host *host;

typedef struct fcall {
    ffs_sig sig;
    char *library, *symbol;
    void *lib;                      /* dlopen handle */
    void (*fn)(void);
    ffi_cif cif;
    ffi_type *atypes[FFS_MAX_ARGS];
    ffi_closure *closure;           /* 'err' reporter, or NULL */
    void *reporter;                 /* its code address */
    ffi_cif err_cif;
    ffi_type *err_atypes[1];
    pthread_mutex_t lock;
    int reported;                   /* the function called the reporter */
    char msg[512];
} fcall;

/* ---- attributes ------------------------------------------------------------- */

typedef struct fattrs {
    const char *library, *symbol, *signature;
    const popc_attr *shapes;
} fattrs;

static popc_status read_attrs(const popc_attrs *a, const char *node,
                              fattrs *f)
{
    f->library = popc_attr_string(a, "library", NULL);
    f->symbol = popc_attr_string(a, "symbol", NULL);
    f->signature = popc_attr_string(a, "signature", NULL);
    f->shapes = popc_attrs_find(a, "output_shapes");
    if (!f->library || !f->library[0] || !f->symbol || !f->symbol[0] ||
        !f->signature || !f->signature[0])
        return host->set_error(POPC_EINVAL, "ForeignCall '%s': attributes "
                               "library, symbol and signature are required "
                               "strings; add the node with popc_foreign_op()",
                               node);
    if (f->library[0] != '/' && strchr(f->library, '/'))
        return host->set_error(POPC_EINVAL, "ForeignCall '%s': library '%s' "
                               "is a relative path; give an absolute path or "
                               "a bare soname the dynamic linker finds",
                               node, f->library);
    return POPC_OK;
}

/* Parse the signature and give the outputs (infer and prepare). */
static popc_status check(const popc_infer_ctx *ic, const fattrs *f,
                         ffs_sig *sig, popc_view *outs)
{
    char err[600];

    if (!ffs_parse(f->signature, sig, err, sizeof err) ||
        !ffs_outputs(sig, ic->inputs, ic->n_inputs, f->shapes, outs,
                     ic->n_outputs, err, sizeof err))
        return host->set_error(POPC_EINVAL, "ForeignCall '%s' (%s in %s): "
                               "%s", ic->node_name, f->symbol, f->library,
                               err);
    return POPC_OK;
}

static popc_status ffi_infer(popc_infer_ctx *ic)
{
    fattrs f;
    ffs_sig sig;
    popc_status st;

    if ((st = read_attrs(ic->attrs, ic->node_name, &f)) != POPC_OK)
        return st;
    return check(ic, &f, &sig, ic->outputs);
}

/* ---- compile: load, bind, build the call interface ----------------------------- */

static ffi_type *ffi_of(ffs_type t)
{
    switch (t) {
    case FFS_F32: return &ffi_type_float;
    case FFS_F64: return &ffi_type_double;
    case FFS_I32: return &ffi_type_sint32;
    case FFS_I64: return &ffi_type_sint64;
    case FFS_U8: case FFS_BOOL: return &ffi_type_uint8;
    case FFS_F16: return &ffi_type_uint16;
    default: return &ffi_type_void;
    }
}

static void on_report(ffi_cif *cif, void *ret, void **args, void *user)
{
    fcall *c = user;
    const char *msg = *(const char *const *)args[0];

    (void)cif;
    (void)ret;
    if (c->reported)
        return;
    snprintf(c->msg, sizeof c->msg, "%s", msg ? msg : "(no message)");
    c->reported = 1;
}

static void ffi_release(void *state)
{
    fcall *c = state;

    if (!c)
        return;
    if (c->closure)
        ffi_closure_free(c->closure);
    if (c->lib)
        dlclose(c->lib);
    pthread_mutex_destroy(&c->lock);
    host->free(c->library);
    host->free(c->symbol);
    host->free(c);
}

static popc_status make_reporter(fcall *c, const char *node)
{
    c->closure = ffi_closure_alloc(sizeof(ffi_closure), &c->reporter);
    if (!c->closure)
        return host->set_error(POPC_ENOMEM, "ForeignCall '%s': cannot "
                               "allocate the error reporter (libffi "
                               "closure)", node);
    c->err_atypes[0] = &ffi_type_pointer;
    if (ffi_prep_cif(&c->err_cif, FFI_DEFAULT_ABI, 1, &ffi_type_void,
                     c->err_atypes) != FFI_OK ||
        ffi_prep_closure_loc(c->closure, &c->err_cif, on_report, c,
                             c->reporter) != FFI_OK)
        return host->set_error(POPC_EBACKEND, "ForeignCall '%s': libffi "
                               "cannot build the error reporter closure on "
                               "this platform", node);
    return POPC_OK;
}

static popc_status ffi_prepare(const popc_infer_ctx *ic, void **state)
{
    popc_view outs[FFS_MAX_ARGS];
    fattrs f;
    fcall *c;
    const char *why;
    void *sym;
    ffi_status fs;
    popc_status st;

    *state = NULL;
    if ((st = read_attrs(ic->attrs, ic->node_name, &f)) != POPC_OK)
        return st;
    if (ic->n_outputs > FFS_MAX_ARGS)
        return host->set_error(POPC_EINVAL, "ForeignCall '%s': %d outputs; "
                               "at most %d", ic->node_name, ic->n_outputs,
                               FFS_MAX_ARGS);
    if (!(c = popc_host_calloc(host, 1, sizeof *c)))
        return host->set_error(POPC_ENOMEM, "ForeignCall '%s': out of "
                               "memory", ic->node_name);
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        host->free(c);
        return host->set_error(POPC_ENOMEM, "ForeignCall '%s': cannot "
                               "create a mutex", ic->node_name);
    }
    if ((st = check(ic, &f, &c->sig, outs)) != POPC_OK)
        goto fail;
    for (int j = 0; j < ic->n_outputs; j++)
        if (outs[j].dtype != ic->outputs[j].dtype ||
            outs[j].rank != ic->outputs[j].rank ||
            memcmp(outs[j].dims, ic->outputs[j].dims,
                   sizeof(int64_t) * (size_t)outs[j].rank) != 0) {
            st = host->set_error(POPC_EINVAL, "ForeignCall '%s' (%s in %s): "
                                 "output %d does not have the shape the "
                                 "signature and shape rules give",
                                 ic->node_name, f.symbol, f.library, j);
            goto fail;
        }
    c->library = popc_host_strdup(host, f.library);
    c->symbol = popc_host_strdup(host, f.symbol);
    if (!c->library || !c->symbol) {
        st = host->set_error(POPC_ENOMEM, "ForeignCall '%s': out of memory",
                             ic->node_name);
        goto fail;
    }
    if (!(c->lib = dlopen(f.library, RTLD_NOW | RTLD_LOCAL))) {
        why = dlerror();
        st = host->set_error(POPC_ENOTFOUND, "ForeignCall '%s': cannot load "
                             "library '%s' for symbol '%s': %s; give an "
                             "absolute path, or a soname the dynamic linker "
                             "finds (ldconfig -p, LD_LIBRARY_PATH)",
                             ic->node_name, f.library, f.symbol,
                             why ? why : "unknown error");
        goto fail;
    }
    dlerror();
    sym = dlsym(c->lib, f.symbol);
    if ((why = dlerror()) != NULL || !sym) {
        st = host->set_error(POPC_ENOTFOUND, "ForeignCall '%s': library '%s' "
                             "has no symbol '%s' (%s); check the name (nm -D "
                             "%s) and that the function is exported",
                             ic->node_name, f.library, f.symbol,
                             why ? why : "NULL address", f.library);
        goto fail;
    }
    /* POSIX guarantees a function's address survives this round trip */
    memcpy(&c->fn, &sym, sizeof c->fn);
    if (c->sig.err_arg >= 0 &&
        (st = make_reporter(c, ic->node_name)) != POPC_OK)
        goto fail;
    for (int i = 0; i < c->sig.n_args; i++) {
        const ffs_arg *a = &c->sig.args[i];

        c->atypes[i] = a->kind == FFS_IN_PTR || a->kind == FFS_OUT_PTR ||
                               a->kind == FFS_ERR
                           ? &ffi_type_pointer
                           : ffi_of(a->type);
    }
    fs = ffi_prep_cif(&c->cif, FFI_DEFAULT_ABI, (unsigned)c->sig.n_args,
                      ffi_of(c->sig.ret), c->atypes);
    if (fs != FFI_OK) {
        st = host->set_error(POPC_EINVAL, "ForeignCall '%s': libffi refuses "
                             "the signature \"%s\" of '%s' in %s (ffi_prep_cif "
                             "status %d)", ic->node_name, f.signature,
                             f.symbol, f.library, (int)fs);
        goto fail;
    }
    *state = c;
    return POPC_OK;
fail:
    ffi_release(c);
    return st;
}

/* ---- run ---------------------------------------------------------------------- */

typedef union ret_slot {
    ffi_arg a;
    ffi_sarg s;
    float f;
    double d;
} ret_slot;

static void store(ffs_type t, const ret_slot *r, void *dst, int64_t i)
{
    switch (t) {
    case FFS_F32: ((float *)dst)[i] = r->f; break;
    case FFS_I32: ((int32_t *)dst)[i] = (int32_t)r->s; break;
    case FFS_I64: ((int64_t *)dst)[i] = (int64_t)r->s; break;
    case FFS_U8: ((uint8_t *)dst)[i] = (uint8_t)r->a; break;
    case FFS_BOOL: ((uint8_t *)dst)[i] = (uint8_t)(r->a != 0); break;
    default: break;
    }
}

/* Fill the argument slots that do not change per element. */
static popc_status bind_args(const popc_kernel_ctx *kc, fcall *c,
                             ffs_value *vals, void **avalue)
{
    for (int i = 0; i < c->sig.n_args; i++) {
        const ffs_arg *a = &c->sig.args[i];
        const popc_view *v = NULL;
        int64_t x = 0;

        avalue[i] = &vals[i];
        switch (a->kind) {
        case FFS_IN_PTR:
            vals[i].p = kc->inputs[a->tensor].data;
            break;
        case FFS_OUT_PTR:
            vals[i].p = kc->outputs[a->tensor].data;
            break;
        case FFS_ERR:
            vals[i].p = c->reporter;
            break;
        case FFS_CONST:
            avalue[i] = (void *)&a->value;
            break;
        case FFS_COUNT:
        case FFS_DIM:
            v = a->ref_output ? &kc->outputs[a->tensor]
                              : &kc->inputs[a->tensor];
            x = a->kind == FFS_COUNT
                    ? popc_view_numel(v)
                    : v->dims[a->dim < 0 ? a->dim + v->rank : a->dim];
            if (a->type == FFS_I32 && x > INT32_MAX)
                return kc->host->set_error(POPC_EINVAL, "ForeignCall '%s' "
                                           "(%s): argument %d is i32 but the "
                                           "size is %lld; declare it i64",
                                           kc->node_name, c->symbol, i + 1,
                                           (long long)x);
            if (a->type == FFS_I32)
                vals[i].i32 = (int32_t)x;
            else
                vals[i].i64 = x;
            break;
        default: /* IN_ELEM: set per element */
            break;
        }
    }
    return POPC_OK;
}

static void call_each(fcall *c, const popc_kernel_ctx *kc, void **avalue)
{
    int64_t n = popc_view_numel(&kc->outputs[0]);
    void *dst = kc->outputs[0].data;
    const char *base[FFS_MAX_ARGS];
    size_t size[FFS_MAX_ARGS];
    ret_slot r;

    for (int i = 0; i < c->sig.n_args; i++)
        if (c->sig.args[i].kind == FFS_IN_ELEM) {
            base[i] = kc->inputs[c->sig.args[i].tensor].data;
            size[i] = ffs_size(c->sig.args[i].type);
        }
    for (int64_t e = 0; e < n && !c->reported; e++) {
        for (int i = 0; i < c->sig.n_args; i++)
            if (c->sig.args[i].kind == FFS_IN_ELEM)
                avalue[i] = (void *)(base[i] + (size_t)e * size[i]);
        r.a = 0;
        ffi_call(&c->cif, c->fn, &r, avalue);
        store(c->sig.ret, &r, dst, e);
    }
}

static popc_status ffi_forward(const popc_kernel_ctx *kc)
{
    fcall *c = kc->state;
    ffs_value vals[FFS_MAX_ARGS];
    void *avalue[FFS_MAX_ARGS];
    ret_slot r;
    popc_status st;

    if (!c)
        return kc->host->set_error(POPC_ESTATE, "ForeignCall '%s': not "
                                   "prepared (the backend skipped "
                                   "prepare())", kc->node_name);
    if ((st = bind_args(kc, c, vals, avalue)) != POPC_OK)
        return st;
    pthread_mutex_lock(&c->lock);
    c->reported = 0;
    r.a = 0;
    if (c->sig.elementwise)
        call_each(c, kc, avalue);
    else
        ffi_call(&c->cif, c->fn, &r, avalue);
    if (c->reported)
        st = kc->host->set_error(POPC_ECALLBACK, "ForeignCall '%s': %s (in "
                                 "%s) reported: %s", kc->node_name, c->symbol,
                                 c->library, c->msg);
    else if (!c->sig.elementwise && c->sig.ret != FFS_VOID && r.s != 0)
        st = kc->host->set_error(POPC_ECALLBACK, "ForeignCall '%s': %s (in "
                                 "%s) returned %lld (non-zero is a failure)",
                                 kc->node_name, c->symbol, c->library,
                                 c->sig.ret == FFS_I32
                                     ? (long long)(int32_t)r.s
                                     : (long long)r.s);
    pthread_mutex_unlock(&c->lock);
    return st;
}

static const popc_op_def ffi_ops[] = {
    {
        .size = sizeof(popc_op_def),
        .domain = "popc",
        .name = "ForeignCall",
        .since_version = 1,
        .min_inputs = 0,
        .max_inputs = FFS_MAX_ARGS,
        .min_outputs = 0,
        .max_outputs = FFS_MAX_ARGS,
        .flags = POPC_OP_HOST | POPC_OP_NOFOLD | POPC_OP_FOREIGN,
        .infer = ffi_infer,
        .forward = ffi_forward,
        .grad = NULL,
        .cost = NULL,
        .prepare = ffi_prepare,
        .release = ffi_release,
        .doc = "calls a C function of a shared library through libffi "
               "(attributes library, symbol, signature)",
        .role = POPC_ROLE_FOREIGN_CALL,
    },
};

static popc_status ffi_init(const popc_host *h, popc_registrar *reg)
{
    popc_status st;

    host = h;
    for (size_t i = 0; i < sizeof ffi_ops / sizeof ffi_ops[0]; i++)
        if ((st = h->register_op(reg, &ffi_ops[i])) != POPC_OK)
            return st;
    return POPC_OK;
}

POPC_PLUGIN_DEFINE(ffi, "0.1.0", "foreign C functions through libffi",
                   "MIT", ffi_init, NULL)
