/* linalg_grad.c - gradients of Einsum and Det.
**
** Einsum: the gradient of operand i is another Einsum, of dY and the other
** operands, back to operand i's subscripts ("out,others->term_i"), summed
** down to its shape where an ellipsis or a size-1 label broadcast it. A
** label repeated within one operand (a diagonal) or appearing in no other
** term nor the output has no gradient yet.
**
** Det: popc::DetGrad(dY, X) gives dY times the cofactor matrix of X
** (det(X) inv(X)^T where X is invertible), each cofactor a determinant of
** a minor by LU in double, so singular matrices get their exact gradient
** too. O(n^5) per matrix: meant for the small matrices models take
** determinants of.
**
** DFT: popc::DFTGrad(dY, X, dft_length?) applies the conjugate transpose
** of the forward's (linear) map: dX_t = sum_k conj(c_kt) dY_k over the
** frequencies the forward kept (onesided keeps n/2 + 1), with the forward's
** 1/n for inverse; a real input takes the real part, and signal elements
** past dft_length (cut by the forward) get 0.
*/
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/util/elem.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#include "ops/tensor/tensorops.h"

#define MAX_TERMS 8
#define TERM_LEN 64

/* The equation's input terms and output, spaces removed; the implicit
** output (labels used once, "..." first, then a..z, A..Z) made explicit. */
static popc_status split_equation(const popc_grad_ctx *gc, const char *eq,
                                  char terms[MAX_TERMS][TERM_LEN], int *n,
                                  char *out)
{
    char flat[4 * MAX_TERMS * TERM_LEN];
    const char *arrow, *p;
    size_t k = 0;
    int count[128] = {0}, ellipsis = 0;

    for (const char *c = eq; *c && k + 1 < sizeof flat; c++)
        if (*c != ' ')
            flat[k++] = *c;
    flat[k] = 0;
    arrow = strstr(flat, "->");
    *n = 0;
    for (p = flat; *n < MAX_TERMS;) {
        const char *end = strchr(p, ',');
        size_t len;

        if (!end || (arrow && end > arrow))
            end = arrow ? arrow : p + strlen(p);
        len = (size_t)(end - p);
        if (len >= TERM_LEN)
            return opu_error(POPC_EUNSUPPORTED, "Einsum",
                             gc->node_name, "a term is too long");
        memcpy(terms[*n], p, len);
        terms[(*n)++][len] = 0;
        for (size_t i = 0; i < len; i++) {
            count[(unsigned char)p[i] & 127]++;
            ellipsis |= p[i] == '.';
        }
        if (*end != ',')
            break;
        p = end + 1;
    }
    if (arrow) {
        if (strlen(arrow + 2) >= TERM_LEN)
            return opu_error(POPC_EUNSUPPORTED, "Einsum",
                             gc->node_name, "the output term is too long");
        strcpy(out, arrow + 2);
        return POPC_OK;
    }
    k = 0;
    if (ellipsis) {
        memcpy(out, "...", 3);
        k = 3;
    }
    for (int pass = 0; pass < 2; pass++)
        for (int c = pass ? 'A' : 'a'; c <= (pass ? 'Z' : 'z'); c++)
            if (count[c] == 1 && k + 1 < TERM_LEN)
                out[k++] = (char)c;
    out[k] = 0;
    return POPC_OK;
}

/* Every label of term i appears once in it, and in the output or another
** term. */
static int term_invertible(char terms[MAX_TERMS][TERM_LEN], int n, int i,
                           const char *out)
{
    for (const char *c = terms[i]; *c; c++) {
        int elsewhere = 0;

        if (!isalpha((unsigned char)*c))
            continue;
        if (strchr(c + 1, *c))
            return 0;
        elsewhere = strchr(out, *c) != NULL;
        for (int j = 0; j < n && !elsewhere; j++)
            elsewhere = j != i && strchr(terms[j], *c) != NULL;
        if (!elsewhere)
            return 0;
    }
    return 1;
}

popc_status top_einsum_grad(popc_grad_ctx *gc)
{
    const char *eq = popc_attr_string(gc->attrs, "equation", "");
    char terms[MAX_TERMS][TERM_LEN], out[TERM_LEN];
    int n;
    popc_status st;

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if ((st = split_equation(gc, eq, terms, &n, out)) != POPC_OK)
        return st;
    for (int i = 0; i < n && i < gc->n_inputs; i++) {
        char geq[(MAX_TERMS + 2) * TERM_LEN];
        popc_attr a = {.name = "equation", .type = POPC_ATTR_STRING,
                       .s = geq};
        int in[MAX_TERMS], k = 1, g;

        if (!popc_dtype_is_float(gc->input_info[i].dtype))
            continue;
        if (!term_invertible(terms, n, i, out))
            return opu_error(POPC_EUNSUPPORTED, "Einsum",
                             gc->node_name, "the gradient of operand %d of "
                             "'%s' needs a label that is repeated in it or "
                             "used nowhere else; not supported yet", i, eq);
        snprintf(geq, sizeof geq, "%s", out);
        in[0] = gc->output_grads[0];
        for (int j = 0; j < n; j++) {
            if (j == i)
                continue;
            snprintf(geq + strlen(geq), sizeof geq - strlen(geq), ",%s",
                     terms[j]);
            in[k++] = gc->inputs[j];
        }
        snprintf(geq + strlen(geq), sizeof geq - strlen(geq), "->%s",
                 terms[i]);
        if ((st = opu_grad_node(gc, NULL, "Einsum", in, k, &a, 1, &g)) !=
                POPC_OK ||
            (st = opu_grad_sum_to(gc, g, &gc->input_info[i],
                                  &gc->input_grads[i])) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

popc_status top_det_grad(popc_grad_ctx *gc)
{
    int in[2] = {gc->output_grads[0], gc->inputs[0]};

    if (in[0] < 0)
        return POPC_OK;
    return opu_grad_node(gc, "popc", "DetGrad", in, 2, NULL, 0,
                         &gc->input_grads[0]);
}

static popc_status det_grad_infer(popc_infer_ctx *ic)
{
    const popc_view *x = &ic->inputs[1];

    if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2] ||
        !popc_dtype_is_float(x->dtype) ||
        popc_view_numel(&ic->inputs[0]) * x->dims[x->rank - 1] *
                x->dims[x->rank - 1] !=
            popc_view_numel(x))
        return opu_error(POPC_EINVAL, "DetGrad", ic->node_name,
                         "X must be [..., M, M] floating point and dY its "
                         "batch");
    ic->outputs[0] = *x;
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

static popc_status det_grad_forward(const popc_kernel_ctx *kc)
{
    const popc_view *dy = &kc->inputs[0], *x = &kc->inputs[1];
    int64_t m = x->dims[x->rank - 1], batch = popc_view_numel(dy);
    double *a = kc->host->alloc(sizeof(double) * (size_t)(2 * m * m + 1));
    double *minor = a + m * m;

    if (!a)
        return opu_error(POPC_ENOMEM, "DetGrad", kc->node_name,
                         "out of memory");
    for (int64_t b = 0; b < batch; b++) {
        double g = opu_load_f(dy, b);

        for (int64_t i = 0; i < m * m; i++)
            a[i] = opu_load_f(x, b * m * m + i);
        for (int64_t r = 0; r < m; r++)
            for (int64_t c = 0; c < m; c++) {
                int64_t k = 0;
                double cof;

                for (int64_t i = 0; i < m; i++)
                    for (int64_t j = 0; j < m; j++)
                        if (i != r && j != c)
                            minor[k++] = a[i * m + j];
                cof = m == 1 ? 1.0 : top_lu_det(minor, m - 1);
                opu_store_f(&kc->outputs[0], b * m * m + r * m + c,
                            g * ((r + c) % 2 ? -cof : cof));
            }
    }
    kc->host->free(a);
    return POPC_OK;
}

popc_status top_dft_grad(popc_grad_ctx *gc)
{
    int in[3] = {gc->output_grads[0], gc->inputs[0],
                 gc->n_inputs > 1 ? gc->inputs[1] : -1};

    if (in[0] < 0)
        return POPC_OK;
    return opu_grad_node(gc, "popc", "DFTGrad", in, gc->n_inputs + 1,
                         gc->attrs->items, gc->attrs->n, &gc->input_grads[0]);
}

static popc_status dft_grad_infer(popc_infer_ctx *ic)
{
    int axis;
    int64_t len;
    popc_status st;

    if ((st = top_dft_geom(ic->node_name, ic->inputs + 1,
                           ic->n_inputs - 1, ic->attrs, &axis, &len)) !=
        POPC_OK)
        return st;
    if (!popc_dtype_is_float(ic->inputs[0].dtype))
        return opu_error(POPC_EINVAL, "DFTGrad", ic->node_name,
                         "dY must be floating point");
    ic->outputs[0] = ic->inputs[1];
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

static popc_status dft_grad_forward(const popc_kernel_ctx *kc)
{
    const popc_view *dy = &kc->inputs[0], *x = &kc->inputs[1];
    const popc_view *dx = &kc->outputs[0];
    int inv = (int)popc_attr_int(kc->attrs, "inverse", 0), axis;
    int64_t len, inner = 1, outer = 1, n_in, n_out, cx;
    popc_status st;

    if ((st = top_dft_geom(kc->node_name, kc->inputs + 1,
                           kc->n_inputs - 1, kc->attrs, &axis, &len)) !=
        POPC_OK)
        return st;
    cx = x->dims[x->rank - 1];
    n_in = x->dims[axis];
    n_out = dy->dims[axis];
    for (int d = 0; d < axis; d++)
        outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank - 1; d++)
        inner *= x->dims[d];
    for (int64_t a = 0; a < outer; a++)
        for (int64_t t = 0; t < n_in; t++)
            for (int64_t b = 0; b < inner; b++) {
                int64_t at_ = ((a * n_in + t) * inner + b) * cx;
                double re = 0, im = 0;

                for (int64_t k = 0; t < len && k < n_out; k++) {
                    int64_t g = ((a * n_out + k) * inner + b) * 2;
                    double gr = opu_load_f(dy, g), gi = opu_load_f(dy, g + 1);
                    double ang = (inv ? 2 : -2) * M_PI *
                                 (double)(k * t % len) / (double)len;
                    double c = cos(ang), sn = sin(ang);

                    re += c * gr + sn * gi;
                    im += c * gi - sn * gr;
                }
                if (inv) {
                    re /= (double)len;
                    im /= (double)len;
                }
                opu_store_f(dx, at_, re);
                if (cx == 2)
                    opu_store_f(dx, at_ + 1, im);
            }
    return POPC_OK;
}

const popc_op_def top_linalg_grad_ops[] = {
    OPU_DEF("popc", "DFTGrad", 1, 2, 3, 1, 1, 0, dft_grad, NULL, NULL,
            "(dY, X, dft_length?) -> dX of DFT"),
    OPU_DEF("popc", "DetGrad", 1, 2, 2, 1, 1, 0, det_grad, NULL, NULL,
            "(dY, X) -> dY times X's cofactors"),
};

const int top_linalg_grad_count =
    sizeof top_linalg_grad_ops / sizeof top_linalg_grad_ops[0];
