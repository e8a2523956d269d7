/* linalg.c - Einsum (any equation with up to 26 labels and an ellipsis,
** summing by direct iteration) and Det (LU with partial pivoting in
** double, over a batch of square matrices), for the float dtypes (Einsum
** also the integer ones). Gradients: linalg_grad.c.
*/
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/util/elem.h"
#include "ops/tensor/tensorops.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define MAX_TERMS 8
#define MAX_LABELS 52 /* letters; '.' dims use the slots after them */

typedef struct ein {
    int n_in;
    int lab[MAX_TERMS][POPC_MAX_RANK]; /* label id per input dim */
    int out[POPC_MAX_RANK], n_out;
    int64_t size[MAX_LABELS + POPC_MAX_RANK];
    int n_labels;                      /* ids in use */
} ein;

static int label_id(char c)
{
    return islower((unsigned char)c) ? c - 'a' : c - 'A' + 26;
}

/* Parse one term against an input of rank r; ellipsis dims get ids
** MAX_LABELS + k, aligned from the right. */
static int parse_term(const char *t, size_t len, int r, int *lab, int *n_ell)
{
    int k = 0, letters = 0, ell = -1;

    for (size_t i = 0; i < len; i++)
        if (isalpha((unsigned char)t[i]))
            letters++;
    for (size_t i = 0; i < len; i++) {
        if (t[i] == ' ')
            continue;
        if (t[i] == '.') {
            if (i + 2 >= len || t[i + 1] != '.' || t[i + 2] != '.')
                return -1;
            ell = r - letters;
            if (ell < 0)
                return -1;
            for (int e = 0; e < ell; e++)
                lab[k++] = MAX_LABELS + (POPC_MAX_RANK - ell) + e;
            i += 2;
            *n_ell = ell > *n_ell ? ell : *n_ell;
        } else if (isalpha((unsigned char)t[i])) {
            lab[k++] = label_id(t[i]);
        } else {
            return -1;
        }
    }
    return k == r ? 0 : -1;
}

static popc_status parse(const char *node,
                         const popc_view *in, int n_in, const popc_attrs *a,
                         ein *e)
{
    const popc_attr *eq = popc_attrs_find(a, "equation");
    const char *s, *arrow, *p;
    int seen[MAX_LABELS + POPC_MAX_RANK] = {0}, n_ell = 0, term = 0;

    memset(e, 0, sizeof *e);
    for (int i = 0; i < MAX_LABELS + POPC_MAX_RANK; i++)
        e->size[i] = -1;
    if (!eq || !eq->s || n_in > MAX_TERMS)
        return opu_error(POPC_EINVAL, "Einsum", node, "attribute "
                         "'equation' is required (at most %d inputs)",
                         MAX_TERMS);
    s = eq->s;
    arrow = strstr(s, "->");
    for (p = s; term < n_in; term++) {
        const char *end = strchr(p, ',');
        size_t len;

        if (!end || (arrow && end > arrow))
            end = arrow ? arrow : p + strlen(p);
        len = (size_t)(end - p);
        if (parse_term(p, len, in[term].rank, e->lab[term], &n_ell) != 0)
            return opu_error(POPC_EINVAL, "Einsum", node, "term %d of "
                             "'%s' does not match input %d of rank %d",
                             term, s, term, in[term].rank);
        for (int d = 0; d < in[term].rank; d++) {
            int id = e->lab[term][d];

            if (e->size[id] >= 0 && e->size[id] != in[term].dims[d] &&
                in[term].dims[d] != 1 && e->size[id] != 1)
                return opu_error(POPC_EINVAL, "Einsum", node, "label "
                                 "sizes disagree in '%s'", s);
            if (e->size[id] < 0 || e->size[id] == 1)
                e->size[id] = in[term].dims[d];
            seen[id]++;
        }
        p = *end == ',' ? end + 1 : end;
    }
    e->n_in = n_in;
    if (arrow) {
        int lab[POPC_MAX_RANK];
        const char *o = arrow + 2;
        int k = 0;

        for (const char *c = o; *c; c++)
            if (*c == '.') {
                for (int x = 0; x < n_ell && k < POPC_MAX_RANK; x++)
                    lab[k++] = MAX_LABELS + (POPC_MAX_RANK - n_ell) + x;
                c += 2;
            } else if (isalpha((unsigned char)*c) && k < POPC_MAX_RANK) {
                lab[k++] = label_id(*c);
            }
        memcpy(e->out, lab, sizeof(int) * (size_t)k);
        e->n_out = k;
    } else {
        for (int x = 0; x < n_ell; x++)
            e->out[e->n_out++] = MAX_LABELS + (POPC_MAX_RANK - n_ell) + x;
        for (int id = 0; id < MAX_LABELS; id++)
            if (seen[id] == 1 && e->n_out < POPC_MAX_RANK)
                e->out[e->n_out++] = id;
    }
    for (int k = 0; k < e->n_out; k++)
        if (e->size[e->out[k]] < 0)
            return opu_error(POPC_EINVAL, "Einsum", node, "output label "
                             "%d of '%s' appears in no input", k, s);
    return POPC_OK;
}

static popc_status einsum_infer(popc_infer_ctx *ic)
{
    ein e;
    popc_status st;

    for (int i = 1; i < ic->n_inputs; i++)
        if (ic->inputs[i].dtype != ic->inputs[0].dtype)
            return opu_error(POPC_EINVAL, "Einsum", ic->node_name,
                             "inputs must share one dtype");
    if ((st = parse(ic->node_name, ic->inputs, ic->n_inputs,
                    ic->attrs, &e)) != POPC_OK)
        return st;
    ic->outputs[0].dtype = ic->inputs[0].dtype;
    ic->outputs[0].rank = e.n_out;
    for (int k = 0; k < e.n_out; k++)
        ic->outputs[0].dims[k] = e.size[e.out[k]];
    return POPC_OK;
}

static popc_status einsum_forward(const popc_kernel_ctx *kc)
{
    ein e;
    int all[MAX_LABELS + POPC_MAX_RANK], n_all = 0;
    int64_t idx[MAX_LABELS + POPC_MAX_RANK] = {0}, n_sum = 1;
    int fl = popc_dtype_is_float(kc->inputs[0].dtype);
    popc_status st;

    if ((st = parse(kc->node_name, kc->inputs, kc->n_inputs,
                    kc->attrs, &e)) != POPC_OK)
        return st;
    /* summed labels: used by an input, not in the output */
    for (int id = 0; id < MAX_LABELS + POPC_MAX_RANK; id++) {
        int used = 0, out = 0;

        for (int t = 0; t < e.n_in; t++)
            for (int d = 0; d < kc->inputs[t].rank; d++)
                used |= e.lab[t][d] == id;
        for (int k = 0; k < e.n_out; k++)
            out |= e.out[k] == id;
        if (used && !out) {
            all[n_all++] = id;
            n_sum *= e.size[id];
        }
    }
    for (int64_t o = 0; o < popc_view_numel(&kc->outputs[0]); o++) {
        int64_t rem = o;
        double facc = 0;
        int64_t iacc = 0;

        for (int k = e.n_out - 1; k >= 0; k--) {
            idx[e.out[k]] = rem % e.size[e.out[k]];
            rem /= e.size[e.out[k]];
        }
        for (int64_t sidx = 0; sidx < n_sum; sidx++) {
            int64_t r2 = sidx;
            double fp = 1;
            int64_t ip = 1;

            for (int k = n_all - 1; k >= 0; k--) {
                idx[all[k]] = r2 % e.size[all[k]];
                r2 /= e.size[all[k]];
            }
            for (int t = 0; t < e.n_in; t++) {
                const popc_view *v = &kc->inputs[t];
                int64_t off = 0;

                for (int d = 0; d < v->rank; d++)
                    off = off * v->dims[d] +
                          (v->dims[d] == 1 ? 0 : idx[e.lab[t][d]]);
                if (fl)
                    fp *= opu_load_f(v, off);
                else
                    ip *= opu_load_i(v, off);
            }
            facc += fp;
            iacc += ip;
        }
        if (fl)
            opu_store_f(&kc->outputs[0], o, facc);
        else
            opu_store_i(&kc->outputs[0], o, iacc);
    }
    return POPC_OK;
}

/* ---- Det ------------------------------------------------------------------------ */

static popc_status det_infer(popc_infer_ctx *ic)
{
    const popc_view *x = &ic->inputs[0];

    if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2] ||
        !popc_dtype_is_float(x->dtype))
        return opu_error(POPC_EINVAL, "Det", ic->node_name,
                         "input must be [..., M, M] floating point");
    ic->outputs[0] = *x;
    ic->outputs[0].data = NULL;
    ic->outputs[0].rank = x->rank - 2;
    return POPC_OK;
}

double top_lu_det(double *a, int64_t m)
{
    double det = 1;

    for (int64_t c = 0; c < m; c++) {
        int64_t piv = c;

        for (int64_t r = c + 1; r < m; r++)
            if (fabs(a[r * m + c]) > fabs(a[piv * m + c]))
                piv = r;
        if (a[piv * m + c] == 0)
            return 0;
        if (piv != c) {
            for (int64_t k = 0; k < m; k++) {
                double t = a[c * m + k];

                a[c * m + k] = a[piv * m + k];
                a[piv * m + k] = t;
            }
            det = -det;
        }
        det *= a[c * m + c];
        for (int64_t r = c + 1; r < m; r++) {
            double f = a[r * m + c] / a[c * m + c];

            for (int64_t k = c; k < m; k++)
                a[r * m + k] -= f * a[c * m + k];
        }
    }
    return det;
}

static popc_status det_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0];
    int64_t m = x->dims[x->rank - 1], batch = popc_view_numel(&kc->outputs[0]);
    double *a = kc->host->alloc(sizeof(double) * (size_t)(m * m + 1));

    if (!a)
        return opu_error(POPC_ENOMEM, "Det", kc->node_name,
                         "out of memory");
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t i = 0; i < m * m; i++)
            a[i] = opu_load_f(x, b * m * m + i);
        opu_store_f(&kc->outputs[0], b, top_lu_det(a, m));
    }
    kc->host->free(a);
    return POPC_OK;
}

/* ---- DFT -------------------------------------------------------------------------- */

/* DFT-17: x is [..., signal..., 1 or 2] (real, or real and imaginary);
** the transform runs along axis, of length dft_length (input 1, known at
** compile time; the signal is cut or zero-padded) or the signal's; output
** [..., 2]; onesided keeps the first n/2 + 1 frequencies of a real
** signal; inverse scales by 1/n. Computed directly in double. */
popc_status top_dft_geom(const char *node,
                            const popc_view *in, int n_in,
                            const popc_attrs *a, int *axis, int64_t *len)
{
    const popc_view *x = &in[0];
    popc_status st;

    if (x->rank < 3 || (x->dims[x->rank - 1] != 1 &&
                        x->dims[x->rank - 1] != 2) ||
        !popc_dtype_is_float(x->dtype))
        return opu_error(POPC_EINVAL, "DFT", node, "input must be "
                         "[batch, signal..., 1 or 2] floating point");
    if ((st = opu_axis("DFT", node, popc_attr_int(a, "axis", 1),
                       x->rank - 1, "axis", axis)) != POPC_OK)
        return st;
    *len = x->dims[*axis];
    if (n_in > 1 && in[1].dtype != POPC_DTYPE_UNDEFINED) {
        int n;

        if ((st = opu_const_ints("DFT", node, &in[1], "dft_length", len,
                                 1, &n)) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

static popc_status dft_infer(popc_infer_ctx *ic)
{
    int axis;
    int64_t len;
    popc_status st;

    if ((st = top_dft_geom(ic->node_name, ic->inputs, ic->n_inputs,
                       ic->attrs, &axis, &len)) != POPC_OK)
        return st;
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    ic->outputs[0].dims[axis] =
        popc_attr_int(ic->attrs, "onesided", 0) ? len / 2 + 1 : len;
    ic->outputs[0].dims[ic->inputs[0].rank - 1] = 2;
    return POPC_OK;
}

static popc_status dft_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *o = &kc->outputs[0];
    int inv = (int)popc_attr_int(kc->attrs, "inverse", 0), axis;
    int64_t len, inner = 1, outer = 1, n_in, n_out, cx;
    popc_status st;

    if ((st = top_dft_geom(kc->node_name, kc->inputs, kc->n_inputs,
                       kc->attrs, &axis, &len)) != POPC_OK)
        return st;
    cx = x->dims[x->rank - 1];
    n_in = x->dims[axis];
    n_out = o->dims[axis];
    for (int d = 0; d < axis; d++)
        outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank - 1; d++)
        inner *= x->dims[d];
    for (int64_t a = 0; a < outer; a++)
        for (int64_t k = 0; k < n_out; k++)
            for (int64_t b = 0; b < inner; b++) {
                double re = 0, im = 0;

                for (int64_t t = 0; t < len && t < n_in; t++) {
                    int64_t at_ = ((a * n_in + t) * inner + b) * cx;
                    double xr = opu_load_f(x, at_);
                    double xi = cx == 2 ? opu_load_f(x, at_ + 1) : 0;
                    double ang = (inv ? 2 : -2) * M_PI * (double)(k * t % len) /
                                 (double)len;

                    re += xr * cos(ang) - xi * sin(ang);
                    im += xr * sin(ang) + xi * cos(ang);
                }
                if (inv) {
                    re /= (double)len;
                    im /= (double)len;
                }
                opu_store_f(o, ((a * n_out + k) * inner + b) * 2, re);
                opu_store_f(o, ((a * n_out + k) * inner + b) * 2 + 1, im);
            }
    return POPC_OK;
}

const popc_op_def top_linalg_ops[] = {
    OPU_DEF("ai.onnx", "DFT", 17, 1, 2, 1, 1, 0, dft, top_dft_grad, NULL,
            "discrete Fourier transform along axis (direct)"),
    OPU_DEF("ai.onnx", "Einsum", 12, 1, MAX_TERMS, 1, 1, 0, einsum,
            top_einsum_grad, NULL, "Einstein summation over an equation"),
    OPU_DEF("ai.onnx", "Det", 11, 1, 1, 1, 1, 0, det, top_det_grad, NULL,
            "determinant of square matrices"),
};

const int top_linalg_count = sizeof top_linalg_ops / sizeof top_linalg_ops[0];
