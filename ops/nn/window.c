/* window.c - sliding-window geometry of Conv and the pools (ONNX
** attributes kernel_shape, strides, pads, dilations, auto_pad, ceil_mode).
**
** Output sizes follow PyTorch where ONNX opset 17 is silent: with
** ceil_mode, a last window that would start inside the end padding is
** dropped (torch's pooling_output_shape), so popc matches torch.
*/
#include "config.h"

#include <string.h>

#include "ops/nn/nn_priv.h"
#include "ops/util/oputil.h"

/* Reads an ints attribute of exactly n values (default def when absent). */
static popc_status read_ints(const char *op, const char *node,
                             const popc_attrs *attrs, const char *name, int n,
                             int sp, int64_t def, int64_t min, int64_t *out)
{
    int64_t got = popc_attr_ints(attrs, name, out, n);

    if (got < 0) {
        for (int i = 0; i < n; i++)
            out[i] = def;
        return POPC_OK;
    }
    if (got != n)
        return opu_error(POPC_EINVAL, op, node, "attribute %s has %lld "
                         "values but the input has %d spatial dimension%s, "
                         "so it needs %d", name, (long long)got, sp,
                         sp == 1 ? "" : "s", n);
    for (int i = 0; i < n; i++)
        if (out[i] < min)
            return opu_error(POPC_EINVAL, op, node, "attribute %s[%d] is "
                             "%lld; it must be at least %lld", name, i,
                             (long long)out[i], (long long)min);
    return POPC_OK;
}

/* Output length of one spatial dim; 0 with a message when impossible. */
static popc_status out_len(const char *op, const char *node, const char *dim,
                           int64_t in, int64_t k, int64_t s, int64_t d,
                           int64_t p0, int64_t p1, int ceil_mode, int64_t *out)
{
    int64_t dk = d * (k - 1) + 1;
    int64_t num = in + p0 + p1 - dk;
    int64_t n;

    if (num < 0)
        return opu_error(POPC_EINVAL, op, node, "the %s kernel spans %lld "
                         "elements (kernel %lld, dilation %lld) but the "
                         "padded input has only %lld (size %lld, pads %lld + "
                         "%lld); use a smaller kernel or more padding", dim,
                         (long long)dk, (long long)k, (long long)d,
                         (long long)(in + p0 + p1), (long long)in,
                         (long long)p0, (long long)p1);
    if (ceil_mode) {
        n = (num + s - 1) / s + 1;
        if ((n - 1) * s >= in + p0)
            n--;
    } else {
        n = num / s + 1;
    }
    *out = n;
    return POPC_OK;
}

popc_status nn_window_parse(const char *op, const char *node,
                            const popc_attrs *attrs, int sp, const int64_t *in,
                            const int64_t *kdims, int ceil_ok, int is_pool,
                            nn_window *w)
{
    int64_t k[2], s[2], d[2], p[4];
    const char *auto_pad = popc_attr_string(attrs, "auto_pad", "NOTSET");
    int64_t ceil_mode = ceil_ok ? popc_attr_int(attrs, "ceil_mode", 0) : 0;
    int64_t got;
    popc_status st;

    memset(w, 0, sizeof *w);
    if (sp != 1 && sp != 2)
        return opu_error(POPC_EUNSUPPORTED, op, node, "%d spatial dimensions "
                         "are not supported; inputs must be [N, C, W] or [N, "
                         "C, H, W]", sp);
    got = popc_attr_ints(attrs, "kernel_shape", k, sp);
    if (kdims) {
        if (got >= 0 && got != sp)
            return opu_error(POPC_EINVAL, op, node, "kernel_shape has %lld "
                             "values for %d spatial dimensions",
                             (long long)got, sp);
        for (int i = 0; got >= 0 && i < sp; i++)
            if (k[i] != kdims[i]) {
                char a[OPU_DIMS_LEN], b[OPU_DIMS_LEN];
                return opu_error(POPC_EINVAL, op, node, "kernel_shape %s "
                                 "disagrees with the weight's spatial shape "
                                 "%s; drop kernel_shape or fix it",
                                 opu_dims_n(k, sp, a),
                                 opu_dims_n(kdims, sp, b));
            }
        for (int i = 0; i < sp; i++)
            k[i] = kdims[i];
    } else if (got != sp) {
        return opu_error(POPC_EINVAL, op, node, "attribute kernel_shape is "
                         "%s; it needs %d values",
                         got < 0 ? "missing" : "wrong", sp);
    }
    for (int i = 0; i < sp; i++)
        if (k[i] < 1)
            return opu_error(POPC_EINVAL, op, node, "kernel_shape[%d] is "
                             "%lld; it must be at least 1", i,
                             (long long)k[i]);
    if ((st = read_ints(op, node, attrs, "strides", sp, sp, 1, 1, s)) !=
        POPC_OK)
        return st;
    if ((st = read_ints(op, node, attrs, "dilations", sp, sp, 1, 1, d)) !=
        POPC_OK)
        return st;
    if (strcmp(auto_pad, "NOTSET") == 0) {
        if ((st = read_ints(op, node, attrs, "pads", 2 * sp, sp, 0, 0, p)) !=
            POPC_OK)
            return st;
    } else if (popc_attrs_find(attrs, "pads")) {
        return opu_error(POPC_EINVAL, op, node, "pads and auto_pad '%s' are "
                         "both given; use only one of them", auto_pad);
    } else if (strcmp(auto_pad, "VALID") == 0) {
        memset(p, 0, sizeof p);
    } else if (strcmp(auto_pad, "SAME_UPPER") == 0 ||
               strcmp(auto_pad, "SAME_LOWER") == 0) {
        for (int i = 0; i < sp; i++) {
            int64_t o = (in[i] + s[i] - 1) / s[i];
            int64_t total = (o - 1) * s[i] + d[i] * (k[i] - 1) + 1 - in[i];

            if (total < 0)
                total = 0;
            p[i] = auto_pad[5] == 'U' ? total / 2 : total - total / 2;
            p[i + sp] = total - p[i];
        }
    } else {
        return opu_error(POPC_EINVAL, op, node, "auto_pad '%s' is unknown; "
                         "use NOTSET, VALID, SAME_UPPER or SAME_LOWER",
                         auto_pad);
    }
    if (is_pool)
        for (int i = 0; i < 2 * sp; i++) {
            int64_t dk = d[i % sp] * (k[i % sp] - 1) + 1;

            if (p[i] >= dk)
                return opu_error(POPC_EINVAL, op, node, "pads[%d] is %lld "
                                 "but the window spans %lld; a window inside "
                                 "the padding would see no input, so pads "
                                 "must be smaller than the (dilated) kernel",
                                 i, (long long)p[i], (long long)dk);
        }
    if (sp == 2) {
        w->H = in[0];
        w->W = in[1];
        w->kh = k[0];
        w->kw = k[1];
        w->sh = s[0];
        w->sw = s[1];
        w->dh = d[0];
        w->dw = d[1];
        w->pt = p[0];
        w->pl = p[1];
        w->pb = p[2];
        w->pr = p[3];
    } else {
        w->H = 1;
        w->W = in[0];
        w->kh = w->sh = w->dh = 1;
        w->kw = k[0];
        w->sw = s[0];
        w->dw = d[0];
        w->pl = p[0];
        w->pr = p[1];
    }
    w->sp = sp;
    if ((st = out_len(op, node, "height", w->H, w->kh, w->sh, w->dh, w->pt,
                      w->pb, (int)ceil_mode, &w->OH)) != POPC_OK)
        return st;
    return out_len(op, node, "width", w->W, w->kw, w->sw, w->dw, w->pl, w->pr,
                   (int)ceil_mode, &w->OW);
}

int nn_window_attrs_make(const nn_window *w, int ceil_mode, nn_window_attrs *st)
{
    int sp = w->sp;
    int n = 0;

    if (sp == 2) {
        st->k[0] = w->kh;
        st->k[1] = w->kw;
        st->s[0] = w->sh;
        st->s[1] = w->sw;
        st->d[0] = w->dh;
        st->d[1] = w->dw;
        st->p[0] = w->pt;
        st->p[1] = w->pl;
        st->p[2] = w->pb;
        st->p[3] = w->pr;
    } else {
        st->k[0] = w->kw;
        st->s[0] = w->sw;
        st->d[0] = w->dw;
        st->p[0] = w->pl;
        st->p[1] = w->pr;
    }
    st->a[n++] = popc_attr_make_ints("kernel_shape", st->k, sp);
    st->a[n++] = popc_attr_make_ints("strides", st->s, sp);
    st->a[n++] = popc_attr_make_ints("pads", st->p, 2 * sp);
    st->a[n++] = popc_attr_make_ints("dilations", st->d, sp);
    if (ceil_mode)
        st->a[n++] = popc_attr_make_int("ceil_mode", 1);
    return n;
}
