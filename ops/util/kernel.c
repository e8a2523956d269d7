/* kernel.c - views and kernel shares of the op utility library (oputil.h). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "ops/util/oputil.h"

int opu_present_at(const popc_view *views, int n, int i)
{
    return i >= 0 && i < n && views[i].dtype != POPC_DTYPE_UNDEFINED;
}

int opu_out_ready(const popc_kernel_ctx *kc, int i)
{
    return opu_present_at(kc->outputs, kc->n_outputs, i) &&
           kc->outputs[i].data != NULL;
}

void opu_set(popc_view *dst, popc_dtype dt, const int64_t *dims, int rank)
{
    memset(dst, 0, sizeof *dst);
    dst->dtype = dt;
    dst->rank = rank;
    for (int i = 0; i < rank; i++)
        dst->dims[i] = dims[i];
}

void opu_set_like(popc_view *dst, const popc_view *src)
{
    opu_set(dst, src->dtype, src->dims, src->rank);
}

void opu_copy_share(const popc_kernel_ctx *kc)
{
    for (int i = 0; i < kc->n_outputs && i < kc->n_inputs; i++) {
        const popc_view *x = &kc->inputs[i];
        int64_t lo, hi;
        size_t nb;

        if (!opu_out_ready(kc, i) || !x->data)
            continue;
        nb = popc_view_nbytes(x);
        opu_range((int64_t)nb, kc->part, kc->n_parts, &lo, &hi);
        if (hi > lo && kc->outputs[i].data != x->data)
            memcpy((char *)kc->outputs[i].data + lo, (const char *)x->data + lo,
                   (size_t)(hi - lo));
    }
}

void opu_strides(const popc_view *v, int64_t *st)
{
    int64_t s = 1;

    for (int d = v->rank - 1; d >= 0; d--) {
        st[d] = s;
        s *= v->dims[d];
    }
}

double opu_attr_num(const popc_attrs *a, const char *name, double def)
{
    const popc_attr *x = popc_attrs_find(a, name);

    if (!x)
        return def;
    return x->type == POPC_ATTR_INT ? (double)x->i : x->f;
}
