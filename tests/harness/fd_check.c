/* fd_check.c - see fd_check.h. */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/fd_check.h"

#define FD_SEED 20240611u
#define MAX_OUT 8

typedef struct fd {
    popc_graph *g;
    int n_out;
    int outs[MAX_OUT];          /* op output values (-1: not float32) */
    popc_tensor *w[MAX_OUT];    /* loss weights per output */
    int losses[MAX_OUT];
    int n_wrt;
    popc_tensor **feed;         /* graph inputs: the wrt tensors */
    int training;
} fd;

static popc_status fail(popc_status st, char *why, size_t size,
                        const char *fmt, ...) POPC_PRINTF(4, 5);

static popc_status fail(popc_status st, char *why, size_t size,
                        const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (why && size)
        snprintf(why, size, "%s", msg);
    return popc_set_error(st, "%s", msg);
}

/* splitmix64: fixed weights without touching libpopc internals */
static double weight_at(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    /* in [-1, -0.25] u [0.25, 1]: no weight near zero hides an element */
    {
        double u = (double)(z >> 11) * (1.0 / 9007199254740992.0);
        double m = 0.25 + 0.75 * (u < 0.5 ? u * 2 : (u - 0.5) * 2);
        return u < 0.5 ? -m : m;
    }
}

static popc_status add_losses(fd *f, int k)
{
    popc_view info = popc_graph_value_info(f->g, f->outs[k]);
    popc_attr red = {.name = "reduction", .type = POPC_ATTR_INT, .i = 0};
    uint64_t s = FD_SEED + 977u * (uint64_t)k;
    popc_status st;
    float *w;
    int c, in[2], m;

    if ((st = popc_tensor_new(POPC_DTYPE_F32, info.dims, info.rank,
                              &f->w[k])) != POPC_OK)
        return st;
    w = popc_tensor_data(f->w[k]);
    for (int64_t i = 0; i < popc_tensor_numel(f->w[k]); i++)
        w[i] = (float)weight_at(&s);
    if ((st = popc_graph_add_constant(f->g, NULL, f->w[k], &c)) != POPC_OK)
        return st;
    in[0] = f->outs[k];
    in[1] = c;
    if ((st = popc_graph_add_node(f->g, NULL, "Mul", 0, in, 2, &m, 1, NULL, 0,
                                  NULL, NULL)) != POPC_OK)
        return st;
    return popc_graph_add_node(f->g, POPC_DOMAIN_POPC, "IdentityLoss", 0, &m,
                               1, &f->losses[k], 1, &red, 1, NULL, NULL);
}

/* sum_k sum_i out_k[i] * w_k[i] in double, for the current feed. */
static popc_status loss_at(fd *f, double *loss)
{
    popc_tensor *out[MAX_OUT] = {0};
    int vals[MAX_OUT] = {0}, map[MAX_OUT] = {0}, n = 0;
    popc_status st;

    for (int k = 0; k < f->n_out; k++)
        if (f->outs[k] >= 0) {
            map[n] = k;
            vals[n++] = f->outs[k];
        }
    if ((st = popc_graph_eval(f->g, f->feed, f->n_wrt, vals, n, out,
                              f->training, FD_SEED)) != POPC_OK)
        return st;
    *loss = 0;
    for (int j = 0; j < n; j++) {
        const float *o = popc_tensor_cdata(out[j]);
        const float *w = popc_tensor_cdata(f->w[map[j]]);
        for (int64_t i = 0; i < popc_tensor_numel(out[j]); i++)
            *loss += (double)o[i] * (double)w[i];
        popc_tensor_free(out[j]);
    }
    return POPC_OK;
}

static void fd_free(fd *f)
{
    for (int k = 0; k < MAX_OUT; k++)
        popc_tensor_free(f->w[k]);
    if (f->feed)
        for (int i = 0; i < f->n_wrt; i++)
            popc_tensor_free(f->feed[i]);
    free(f->feed);
    popc_graph_free(f->g);
}

/* Analytic gradients of sum_k L_k for every wrt input (owned tensors). */
static popc_status analytic(fd *f, const int *wrt_vals, popc_tensor **grad)
{
    int ids[MAX_OUT][16], vals[MAX_OUT * 16], n = 0;
    popc_tensor *res[MAX_OUT * 16] = {0};
    popc_status st;

    for (int k = 0; k < f->n_out; k++) {
        if (f->outs[k] < 0)
            continue;
        if ((st = popc_graph_gradients(f->g, f->losses[k], wrt_vals, f->n_wrt,
                                       1.0, ids[k])) != POPC_OK)
            return st;
    }
    if ((st = popc_graph_verify(f->g, 0)) != POPC_OK)
        return st;
    for (int k = 0; k < f->n_out; k++)
        for (int i = 0; f->outs[k] >= 0 && i < f->n_wrt; i++)
            if (ids[k][i] >= 0)
                vals[n++] = ids[k][i];
    if ((st = popc_graph_eval(f->g, f->feed, f->n_wrt, vals, n, res,
                              f->training, FD_SEED)) != POPC_OK)
        return st;
    for (int i = 0; i < f->n_wrt; i++) {
        popc_view v = popc_tensor_view(f->feed[i]);
        if ((st = popc_tensor_new(POPC_DTYPE_F32, v.dims, v.rank, &grad[i])) !=
            POPC_OK)
            goto done;
    }
    n = 0;
    for (int k = 0; k < f->n_out; k++)
        for (int i = 0; f->outs[k] >= 0 && i < f->n_wrt; i++) {
            float *d;
            const float *s;
            if (ids[k][i] < 0)
                continue;
            if (popc_tensor_numel(res[n]) != popc_tensor_numel(grad[i])) {
                st = popc_set_error(POPC_EINTERNAL, "gradient of wrt input "
                                    "%d has %lld elements, the input %lld", i,
                                    (long long)popc_tensor_numel(res[n]),
                                    (long long)popc_tensor_numel(grad[i]));
                goto done;
            }
            d = popc_tensor_data(grad[i]);
            s = popc_tensor_cdata(res[n]);
            for (int64_t e = 0; e < popc_tensor_numel(grad[i]); e++)
                d[e] += s[e];
            n++;
        }
    st = POPC_OK;
done:
    for (int j = 0; j < MAX_OUT * 16; j++)
        popc_tensor_free(res[j]);
    return st;
}

static popc_status build(fd *f, const char *domain,
                         const char *op, popc_tensor *const *inputs, int n_in,
                         const int *wrt, const popc_attr *attrs, int n_attrs,
                         int *wrt_vals)
{
    int in[16], any = 0;
    popc_status st;

    if ((st = popc_graph_new("fd_check", &f->g)) != POPC_OK)
        return st;
    for (int i = 0; i < n_in; i++) {
        char name[32];
        int w = -1;

        for (int j = 0; j < f->n_wrt; j++)
            if (wrt[j] == i)
                w = j;
        in[i] = -1;
        snprintf(name, sizeof name, "in%d", i);
        if (w >= 0) {
            popc_view v = popc_tensor_view(inputs[i]);
            if ((st = popc_graph_add_input(f->g, name, v.dtype, v.dims, v.rank,
                                           &in[i])) != POPC_OK)
                return st;
            wrt_vals[w] = in[i];
        } else if (inputs[i] &&
                   (st = popc_graph_add_constant(f->g, name, inputs[i],
                                                 &in[i])) != POPC_OK) {
            return st;
        }
    }
    if ((st = popc_graph_add_node(f->g, domain, op, 0, in, n_in, f->outs,
                                  f->n_out, attrs, n_attrs, "op", NULL)) !=
        POPC_OK)
        return st;
    for (int k = 0; k < f->n_out; k++) {
        if (popc_graph_value_info(f->g, f->outs[k]).dtype != POPC_DTYPE_F32) {
            f->outs[k] = -1;
            continue;
        }
        if ((st = add_losses(f, k)) != POPC_OK)
            return st;
        any = 1;
    }
    if (!any)
        return popc_set_error(POPC_EINVAL, "the op has no float32 output to "
                              "differentiate");
    return POPC_OK;
}

popc_status fd_check_op_ex(const char *domain, const char *op,
                           popc_tensor *const *inputs, int n_in,
                           const int *wrt, int n_wrt, const popc_attr *attrs,
                           int n_attrs, int n_outputs, int training,
                           double tol, char *why, size_t why_size)
{
    popc_registry *reg;
    const popc_op_def *def;
    popc_tensor *grad[16] = {0};
    int wrt_vals[16];
    fd f;
    popc_status st;
    double worst = -1;
    char worst_msg[512] = "";
    const char *dom = domain ? domain : POPC_DOMAIN_ONNX;

    memset(&f, 0, sizeof f);
    if (why && why_size)
        why[0] = '\0';
    if (n_in > 16 || n_wrt > 16 || n_wrt < 1 || n_outputs > MAX_OUT)
        return fail(POPC_EINVAL, why, why_size, "fd_check %s::%s: at most 16 "
                    "inputs, 1..16 wrt and %d outputs", dom, op, MAX_OUT);
    if ((st = popc_registry_global(&reg)) != POPC_OK)
        return fail(st, why, why_size, "%s", popc_last_error());
    if (!(def = popc_registry_find_op(reg, domain, op, 0)))
        return fail(POPC_ENOTFOUND, why, why_size, "fd_check: op %s::%s is "
                    "not registered", dom, op);
    if (!def->grad)
        return fail(POPC_EUNSUPPORTED, why, why_size, "fd_check: op %s::%s has "
                    "no gradient", dom, op);
    if (!popc_registry_find_op(reg, NULL, "Mul", 0) ||
        !popc_registry_find_op(reg, POPC_DOMAIN_POPC, "IdentityLoss", 0))
        return fail(POPC_ENOTFOUND, why, why_size, "fd_check: needs ai.onnx "
                    "Mul and popc IdentityLoss in the registry");
    f.n_wrt = n_wrt;
    f.training = training;
    f.n_out = n_outputs > 0 ? n_outputs
                            : (def->min_outputs > 1 ? def->min_outputs : 1);
    if (f.n_out > MAX_OUT)
        f.n_out = MAX_OUT;
    if (!(f.feed = calloc((size_t)n_wrt, sizeof *f.feed)))
        return fail(POPC_ENOMEM, why, why_size, "fd_check: out of memory");
    for (int j = 0; j < n_wrt; j++) {
        if (wrt[j] < 0 || wrt[j] >= n_in || !inputs[wrt[j]] ||
            popc_tensor_dtype(inputs[wrt[j]]) != POPC_DTYPE_F32) {
            st = fail(POPC_EINVAL, why, why_size, "fd_check %s::%s: wrt[%d] "
                      "= %d is not a float32 input", dom, op, j, wrt[j]);
            goto done;
        }
        if ((st = popc_tensor_clone(inputs[wrt[j]], &f.feed[j])) != POPC_OK)
            goto done;
    }
    if ((st = build(&f, domain, op, inputs, n_in, wrt, attrs, n_attrs,
                    wrt_vals)) != POPC_OK ||
        (st = analytic(&f, wrt_vals, grad)) != POPC_OK) {
        st = fail(st, why, why_size, "fd_check %s::%s: %s", dom, op,
                  popc_last_error());
        goto done;
    }
    for (int j = 0; j < n_wrt; j++) {
        float *x = popc_tensor_data(f.feed[j]);
        const float *a = popc_tensor_cdata(grad[j]);

        for (int64_t e = 0; e < popc_tensor_numel(f.feed[j]); e++) {
            float x0 = x[e];
            double h = 3e-3 * (fabs(x0) > 1 ? fabs(x0) : 1), lp, lm, num;
            double err, scale;
            float xp = (float)(x0 + h), xm = (float)(x0 - h);

            x[e] = xp;
            if ((st = loss_at(&f, &lp)) != POPC_OK)
                break;
            x[e] = xm;
            st = loss_at(&f, &lm);
            x[e] = x0;
            if (st != POPC_OK)
                break;
            /* divide by the step float32 really took */
            num = (lp - lm) / ((double)xp - (double)xm);
            scale = fabs(a[e]) > fabs(num) ? fabs(a[e]) : fabs(num);
            err = fabs(a[e] - num) / (scale > 1 ? scale : 1);
            if (err > worst) {
                worst = err;
                snprintf(worst_msg, sizeof worst_msg, "input %d element %lld "
                         "(x = %.6g, h = %.3g): autodiff %.6g, finite "
                         "difference %.6g", wrt[j], (long long)e, (double)x0,
                         h, (double)a[e], num);
            }
        }
        if (st != POPC_OK) {
            st = fail(st, why, why_size, "fd_check %s::%s: %s", dom, op,
                      popc_last_error());
            goto done;
        }
    }
    if (worst > tol)
        st = fail(POPC_EINTERNAL, why, why_size, "fd_check %s::%s: gradient "
                  "mismatch (relative error %.3g > %.3g) at %s", dom, op,
                  worst, tol, worst_msg);
    else
        st = POPC_OK;
done:
    for (int j = 0; j < 16; j++)
        popc_tensor_free(grad[j]);
    fd_free(&f);
    return st;
}

popc_status fd_check_op(const char *domain, const char *op,
                        popc_tensor *const *inputs, int n_in, const int *wrt,
                        int n_wrt, const popc_attr *attrs, int n_attrs,
                        double tol, char *why, size_t why_size)
{
    return fd_check_op_ex(domain, op, inputs, n_in, wrt, n_wrt, attrs,
                          n_attrs, 0, 1, tol, why, why_size);
}
