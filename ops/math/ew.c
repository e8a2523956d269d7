/* ew.c - the elementwise engine of the math plugin (see mathops.h). */
#include "config.h"

#include <string.h>

#include "ops/math/mathops.h"
#include "ops/util/elem.h"

static mop_fn pick(const mop_kernels *k, popc_dtype dt)
{
    switch (dt) {
    case POPC_DTYPE_F32: case POPC_DTYPE_F16: return k->f32;
    case POPC_DTYPE_I32: return k->i32;
    case POPC_DTYPE_I64: return k->i64;
    case POPC_DTYPE_BOOL: case POPC_DTYPE_U8: return k->b8;
    default: return NULL;
    }
}

/* One run through float32 with float16 inputs/outputs converted. */
static void run_converted(const popc_kernel_ctx *kc, mop_fn fn,
                          const popc_view *in, int n_in,
                          const popc_view *out, int n_out,
                          const opu_bcast_iter *it, const int *inner,
                          const mop_params *p)
{
    float ib[OPU_MAX_IN][OPU_CHUNK];
    float ob[2][OPU_CHUNK];
    const void *ip[OPU_MAX_IN];
    void *op[2];

    for (int64_t c = 0; c < it->n; c += OPU_CHUNK) {
        int64_t m = it->n - c < OPU_CHUNK ? it->n - c : OPU_CHUNK;

        for (int k = 0; k < n_in; k++) {
            size_t es = popc_dtype_size(in[k].dtype);
            const char *src = (const char *)in[k].data +
                              (size_t)(it->in_off[k] + c * inner[k]) * es;

            if (in[k].dtype == POPC_DTYPE_F16) {
                opu_h2f_n(ib[k], (const uint16_t *)src, inner[k] ? m : 1);
                ip[k] = ib[k];
            } else {
                ip[k] = src;
            }
        }
        for (int j = 0; j < n_out; j++) {
            size_t es = popc_dtype_size(out[j].dtype);

            op[j] = out[j].dtype == POPC_DTYPE_F16
                        ? (void *)ob[j]
                        : (char *)out[j].data + (size_t)(it->out_off + c) * es;
        }
        fn(op, ip, inner, m, p);
        for (int j = 0; j < n_out; j++)
            if (out[j].dtype == POPC_DTYPE_F16)
                opu_f2h_out(kc, (uint16_t *)out[j].data + it->out_off + c,
                            ob[j], m, it->out_off + c);
    }
}

static int wide_dtype(popc_dtype dt)
{
    return ((MOP_WF | MOP_WI) >> dt) & 1u;
}

/* Element by element through the wide functions (one output). */
static popc_status map_wide(const popc_kernel_ctx *kc, const mop_kernels *k,
                            const popc_view *in, int n_in,
                            const popc_view *out)
{
    int fl = popc_dtype_is_float(in[0].dtype) ||
             (n_in > 1 && popc_dtype_is_float(in[1].dtype));
    opu_bcast b;
    opu_bcast_iter it;
    int64_t s, e;

    if ((fl && !k->wf) || (!fl && !k->wi))
        return opu_error(POPC_EINTERNAL, "elementwise",
                         kc->node_name, "no kernel for %s inputs",
                         popc_dtype_name(in[0].dtype));
    opu_bcast_init(&b, out, in, n_in);
    opu_range(popc_view_numel(out), kc->part, kc->n_parts, &s, &e);
    opu_bcast_begin(&it, &b, s, e);
    while (opu_bcast_next(&it)) {
        for (int64_t j = 0; j < it.n; j++) {
            int64_t i0 = it.in_off[0] + j * b.inner[0];
            int64_t i1 = n_in > 1 ? it.in_off[1] + j * b.inner[1] : 0;

            if (fl)
                opu_store_f(out, it.out_off + j,
                            k->wf(opu_load_f(&in[0], i0),
                                  n_in > 1 ? opu_load_f(&in[1], i1) : 0));
            else
                opu_store_i(out, it.out_off + j,
                            k->wi(opu_load_i(&in[0], i0),
                                  n_in > 1 ? opu_load_i(&in[1], i1) : 0));
        }
    }
    return POPC_OK;
}

popc_status mop_map(const popc_kernel_ctx *kc, const mop_kernels *k,
                    const popc_view *in, int n_in, const popc_view *out,
                    int n_out, const mop_params *p)
{
    mop_fn fn = pick(k, in[0].dtype);
    int convert = 0;
    opu_bcast b;
    opu_bcast_iter it;
    int64_t s, e;

    if ((!fn || wide_dtype(in[0].dtype) ||
         (n_in > 1 && in[1].dtype != in[0].dtype)) &&
        (k->wf || k->wi) && n_out == 1 && n_in <= 2)
        return map_wide(kc, k, in, n_in, out);
    if (!fn)
        return opu_error(POPC_EINTERNAL, "elementwise",
                         kc->node_name, "no kernel for %s inputs",
                         popc_dtype_name(in[0].dtype));
    for (int i = 0; i < n_in; i++)
        if (in[i].dtype == POPC_DTYPE_F16)
            convert = 1;
    for (int j = 0; j < n_out; j++)
        if (out[j].dtype == POPC_DTYPE_F16)
            convert = 1;
    opu_bcast_init(&b, &out[0], in, n_in);
    opu_range(popc_view_numel(&out[0]), kc->part, kc->n_parts, &s, &e);
    opu_bcast_begin(&it, &b, s, e);
    while (opu_bcast_next(&it)) {
        const void *ip[OPU_MAX_IN];
        void *op[2];

        if (convert) {
            run_converted(kc, fn, in, n_in, out, n_out, &it, b.inner, p);
            continue;
        }
        for (int i = 0; i < n_in; i++)
            ip[i] = (const char *)in[i].data +
                    (size_t)it.in_off[i] * popc_dtype_size(in[i].dtype);
        for (int j = 0; j < n_out; j++)
            op[j] = (char *)out[j].data +
                    (size_t)it.out_off * popc_dtype_size(out[j].dtype);
        fn(op, ip, b.inner, it.n, p);
    }
    return POPC_OK;
}

popc_status mop_infer_ew(popc_infer_ctx *ic, const char *op, int n_in,
                         unsigned allowed, popc_dtype out_dt)
{
    popc_dtype dt;
    popc_status st;

    if (n_in > ic->n_inputs)
        n_in = ic->n_inputs;
    for (int i = 0; i < n_in; i++)
        if (!opu_present(&ic->inputs[i]))
            return opu_error(POPC_EINVAL, op, ic->node_name,
                             "input %d is missing", i);
    dt = ic->inputs[0].dtype;
    if (!(allowed & (1u << dt)))
        return opu_error(POPC_EINVAL, op, ic->node_name,
                         "input 0 has dtype %s, which %s does not support",
                         popc_dtype_name(dt), op);
    for (int i = 1; i < n_in; i++)
        if (ic->inputs[i].dtype != dt)
            return opu_error(POPC_EINVAL, op, ic->node_name,
                             "input 0 is %s but input %d is %s; the inputs "
                             "must have one dtype (insert a Cast)",
                             popc_dtype_name(dt), i,
                             popc_dtype_name(ic->inputs[i].dtype));
    if ((st = opu_broadcast(op, ic->node_name, ic->inputs, n_in,
                            &ic->outputs[0])) != POPC_OK)
        return st;
    ic->outputs[0].dtype = out_dt == POPC_DTYPE_UNDEFINED ? dt : out_dt;
    return POPC_OK;
}

popc_status mop_grad_unary_helper(popc_grad_ctx *gc, const char *op, int t,
                                  const popc_attr *attrs, int n_attrs)
{
    int in[2];

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    in[0] = gc->output_grads[0];
    in[1] = t;
    return opu_grad_node(gc, "popc", op, in, 2, attrs, n_attrs,
                         &gc->input_grads[0]);
}
