/* misc.c - Where, Cast, Identity, Constant, Dropout and popc::DropoutGrad.
**
** Dropout draws its mask from a counter-based generator: element i is kept
** when hash(seed, i) >= ratio, so the mask does not depend on how the work
** is split between workers. Dropout is active when the kernel runs in
** training mode and the optional training_mode input is absent or true.
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "ops/math/mathops.h"
#include "ops/util/elem.h"

/* ---- Where -------------------------------------------------------------- */

static popc_status where_infer(popc_infer_ctx *ic)
{
    const popc_view *in = ic->inputs;

    for (int i = 0; i < 3; i++)
        if (!opu_present(&in[i]))
            return opu_error(POPC_EINVAL, "Where", ic->node_name,
                             "input %d is missing", i);
    if (in[0].dtype != POPC_DTYPE_BOOL)
        return opu_error(POPC_EINVAL, "Where", ic->node_name,
                         "condition must be bool, got %s (compare with "
                         "Equal/Less or Cast to bool)",
                         popc_dtype_name(in[0].dtype));
    if (in[1].dtype != in[2].dtype)
        return opu_error(POPC_EINVAL, "Where", ic->node_name,
                         "X is %s but Y is %s; they must match",
                         popc_dtype_name(in[1].dtype),
                         popc_dtype_name(in[2].dtype));
    ic->outputs[0].dtype = in[1].dtype;
    return opu_broadcast("Where", ic->node_name, in, 3,
                         &ic->outputs[0]);
}

#define WHERE_RUN(T)                                                        \
    do {                                                                    \
        T *o = (T *)kc->outputs[0].data + it.out_off;                       \
        const T *x = (const T *)kc->inputs[1].data + it.in_off[1];          \
        const T *y = (const T *)kc->inputs[2].data + it.in_off[2];          \
        if (b.inner[0] && b.inner[1] && b.inner[2]) {                       \
            for (int64_t i = 0; i < it.n; i++)                             \
                o[i] = c[i] ? x[i] : y[i];                                  \
        } else {                                                            \
            for (int64_t i = 0; i < it.n; i++)                             \
                o[i] = c[i * b.inner[0]] ? x[i * b.inner[1]]                \
                                         : y[i * b.inner[2]];               \
        }                                                                   \
    } while (0)

/* Selects whole elements, so it works for every dtype by element size. */
static popc_status where_forward(const popc_kernel_ctx *kc)
{
    size_t es = popc_dtype_size(kc->outputs[0].dtype);
    opu_bcast b;
    opu_bcast_iter it;
    int64_t s, e;

    opu_bcast_init(&b, &kc->outputs[0], kc->inputs, 3);
    opu_range(popc_view_numel(&kc->outputs[0]), kc->part, kc->n_parts, &s,
              &e);
    opu_bcast_begin(&it, &b, s, e);
    while (opu_bcast_next(&it)) {
        const uint8_t *c = (const uint8_t *)kc->inputs[0].data + it.in_off[0];

        switch (es) {
        case 1: WHERE_RUN(uint8_t); break;
        case 2: WHERE_RUN(uint16_t); break;
        case 4: WHERE_RUN(uint32_t); break;
        default: WHERE_RUN(uint64_t); break;
        }
    }
    return POPC_OK;
}

static popc_status where_grad(popc_grad_ctx *gc)
{
    int g = gc->output_grads[0];
    int zero, in[3], t;
    popc_status st;

    if (g < 0)
        return POPC_OK;
    if ((st = opu_grad_scalar(gc, gc->output_info[0].dtype, 0.0, &zero)) !=
        POPC_OK)
        return st;
    for (int i = 1; i <= 2; i++) {
        in[0] = gc->inputs[0];
        in[1] = i == 1 ? g : zero;
        in[2] = i == 1 ? zero : g;
        if ((st = opu_grad_node(gc, NULL, "Where", in, 3, NULL, 0, &t)) !=
            POPC_OK)
            return st;
        if ((st = opu_grad_sum_to(gc, t, &gc->input_info[i],
                                  &gc->input_grads[i])) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

/* ---- Cast --------------------------------------------------------------- */

static popc_status cast_target(const char *node,
                               const popc_attrs *a, popc_dtype *out)
{
    const popc_attr *to = popc_attrs_find(a, "to");

    if (!to)
        return opu_error(POPC_EINVAL, "Cast", node,
                         "attribute 'to' is required");
    *out = opu_dtype_from_onnx(to->i);
    if (*out == POPC_DTYPE_UNDEFINED)
        return opu_error(POPC_EUNSUPPORTED, "Cast", node,
                         "to=%lld is not an element type popc has (strings "
                         "and complex numbers are not supported)",
                         (long long)to->i);
    return POPC_OK;
}

static popc_status cast_infer(popc_infer_ctx *ic)
{
    popc_dtype dt;
    popc_status st;

    if ((st = cast_target(ic->node_name, ic->attrs, &dt)) !=
        POPC_OK)
        return st;
    if (popc_dtype_size(ic->inputs[0].dtype) == 0)
        return opu_error(POPC_EINVAL, "Cast", ic->node_name,
                         "input has no known dtype");
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    ic->outputs[0].dtype = dt;
    return POPC_OK;
}

/* Float to integer truncates toward zero and saturates; NaN gives 0
** (C leaves out-of-range conversions undefined). */
static int64_t sat_i64(float v)
{
    if (v != v)
        return 0;
    if (v >= 9.2233720368547758e18f)
        return INT64_MAX;
    if (v < -9.2233720368547758e18f)
        return INT64_MIN;
    return (int64_t)v;
}

static int32_t sat_i32(float v)
{
    if (v != v)
        return 0;
    if (v >= 2147483648.0f)
        return INT32_MAX;
    if (v < -2147483648.0f)
        return INT32_MIN;
    return (int32_t)v;
}

static uint8_t sat_u8(float v)
{
    if (v != v || v <= 0.0f)
        return 0;
    return v >= 255.0f ? 255 : (uint8_t)v;
}

static void load_float(float *dst, const void *src, popc_dtype dt, int64_t n)
{
    if (dt == POPC_DTYPE_F32) {
        memcpy(dst, src, (size_t)n * sizeof *dst);
        return;
    }
    opu_h2f_n(dst, src, n);
}

static void load_int(int64_t *dst, const void *src, popc_dtype dt, int64_t n)
{
    switch (dt) {
    case POPC_DTYPE_I32:
        for (int64_t i = 0; i < n; i++)
            dst[i] = ((const int32_t *)src)[i];
        break;
    case POPC_DTYPE_I64:
        memcpy(dst, src, (size_t)n * sizeof *dst);
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            dst[i] = ((const uint8_t *)src)[i];
        break;
    }
}

static void store_from_float(void *dst, popc_dtype dt, const float *v,
                             int64_t n)
{
    if (dt == POPC_DTYPE_F16) {
        opu_f2h_n(dst, v, n);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        switch (dt) {
        case POPC_DTYPE_F32: ((float *)dst)[i] = v[i]; break;
        case POPC_DTYPE_I32: ((int32_t *)dst)[i] = sat_i32(v[i]); break;
        case POPC_DTYPE_I64: ((int64_t *)dst)[i] = sat_i64(v[i]); break;
        case POPC_DTYPE_U8: ((uint8_t *)dst)[i] = sat_u8(v[i]); break;
        default: ((uint8_t *)dst)[i] = v[i] != 0.0f; break;
        }
    }
}

static void store_from_int(void *dst, popc_dtype dt, const int64_t *v,
                           int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        switch (dt) {
        case POPC_DTYPE_F32: ((float *)dst)[i] = (float)v[i]; break;
        case POPC_DTYPE_F16:
            ((uint16_t *)dst)[i] = opu_f2h((float)v[i]);
            break;
        case POPC_DTYPE_I32: ((int32_t *)dst)[i] = (int32_t)v[i]; break;
        case POPC_DTYPE_I64: ((int64_t *)dst)[i] = v[i]; break;
        case POPC_DTYPE_U8: ((uint8_t *)dst)[i] = (uint8_t)v[i]; break;
        default: ((uint8_t *)dst)[i] = v[i] != 0; break;
        }
    }
}

/* The dtypes of the vectorised paths below; others go element by element
** through double or int64. */
static int cast_fast(popc_dtype dt)
{
    return dt == POPC_DTYPE_F32 || dt == POPC_DTYPE_F16 ||
           dt == POPC_DTYPE_I32 || dt == POPC_DTYPE_I64 ||
           dt == POPC_DTYPE_U8 || dt == POPC_DTYPE_BOOL;
}

/* float32 to bfloat16 keeps the upper 16 bits, as the ONNX reference of
** Cast-13 does (NaN stays NaN). */
static uint16_t f32_to_bf16_trunc(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)(u >> 16);
}

static void cast_wide(const popc_view *in, const popc_view *out, int64_t s,
                      int64_t e)
{
    for (int64_t i = s; i < e; i++) {
        if (out->dtype == POPC_DTYPE_BF16 && popc_dtype_is_float(in->dtype))
            ((uint16_t *)out->data)[i] =
                f32_to_bf16_trunc((float)opu_load_f(in, i));
        else if (popc_dtype_is_float(in->dtype))
            opu_store_f(out, i, opu_load_f(in, i));
        else
            opu_store_i(out, i, opu_load_i(in, i));
    }
}

static popc_status cast_forward(const popc_kernel_ctx *kc)
{
    popc_dtype from = kc->inputs[0].dtype, to = kc->outputs[0].dtype;
    size_t fs = popc_dtype_size(from), ts = popc_dtype_size(to);
    const char *src = kc->inputs[0].data;
    char *dst = kc->outputs[0].data;
    int64_t s, e;

    opu_range(popc_view_numel(&kc->outputs[0]), kc->part, kc->n_parts, &s,
              &e);
    if (from == to) {
        memcpy(dst + (size_t)s * ts, src + (size_t)s * fs,
               (size_t)(e - s) * ts);
        return POPC_OK;
    }
    if (!cast_fast(from) || !cast_fast(to)) {
        cast_wide(&kc->inputs[0], &kc->outputs[0], s, e);
        return POPC_OK;
    }
    for (int64_t c = s; c < e; c += OPU_CHUNK) {
        int64_t m = e - c < OPU_CHUNK ? e - c : OPU_CHUNK;

        if (opu_is_float(from) && to == POPC_DTYPE_F16) {
            float buf[OPU_CHUNK];
            uint16_t *h = (uint16_t *)dst + c;

            load_float(buf, src + (size_t)c * fs, from, m);
            opu_f2h_out(kc, h, buf, m, c);
        } else if (opu_is_float(from)) {
            float buf[OPU_CHUNK];

            load_float(buf, src + (size_t)c * fs, from, m);
            store_from_float(dst + (size_t)c * ts, to, buf, m);
        } else {
            int64_t buf[OPU_CHUNK];

            load_int(buf, src + (size_t)c * fs, from, m);
            store_from_int(dst + (size_t)c * ts, to, buf, m);
        }
    }
    return POPC_OK;
}

/* CastLike-15: Cast to the dtype of input 1. */
static popc_status castlike_infer(popc_infer_ctx *ic)
{
    if (popc_dtype_size(ic->inputs[0].dtype) == 0 ||
        popc_dtype_size(ic->inputs[1].dtype) == 0)
        return opu_error(POPC_EINVAL, "CastLike", ic->node_name,
                         "inputs have no known dtype");
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    ic->outputs[0].dtype = ic->inputs[1].dtype;
    return POPC_OK;
}

static popc_status castlike_forward(const popc_kernel_ctx *kc)
{
    return cast_forward(kc);
}

static popc_status cast_grad(popc_grad_ctx *gc)
{
    popc_attr a = {.name = "to", .type = POPC_ATTR_INT};

    if (gc->output_grads[0] < 0 || !opu_is_float(gc->input_info[0].dtype) ||
        !opu_is_float(gc->output_info[0].dtype))
        return POPC_OK;
    if (gc->input_info[0].dtype == gc->output_info[0].dtype) {
        gc->input_grads[0] = gc->output_grads[0];
        return POPC_OK;
    }
    a.i = opu_dtype_to_onnx(gc->input_info[0].dtype);
    return opu_grad_node(gc, NULL, "Cast", &gc->output_grads[0], 1, &a, 1,
                         &gc->input_grads[0]);
}

/* ---- Identity ------------------------------------------------------------ */

static popc_status identity_infer(popc_infer_ctx *ic)
{
    if (popc_dtype_size(ic->inputs[0].dtype) == 0)
        return opu_error(POPC_EINVAL, "Identity", ic->node_name,
                         "input has no known dtype");
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

/* Byte copy of this part's share of the elements. */
static void copy_share(const popc_kernel_ctx *kc, const popc_view *in,
                       const popc_view *out)
{
    size_t es = popc_dtype_size(out->dtype);
    int64_t s, e;

    opu_range(popc_view_numel(out), kc->part, kc->n_parts, &s, &e);
    if (e > s)
        memcpy((char *)out->data + (size_t)s * es,
               (const char *)in->data + (size_t)s * es, (size_t)(e - s) * es);
}

static popc_status identity_forward(const popc_kernel_ctx *kc)
{
    copy_share(kc, &kc->inputs[0], &kc->outputs[0]);
    return POPC_OK;
}

static popc_status identity_grad(popc_grad_ctx *gc)
{
    gc->input_grads[0] = gc->output_grads[0];
    return POPC_OK;
}

/* ---- Constant ------------------------------------------------------------ */

static const char *const constant_attrs[] = {
    "value", "value_float", "value_floats", "value_int", "value_ints"};

static popc_status constant_attr(const char *node,
                                 const popc_attrs *attrs,
                                 const popc_attr **out)
{
    *out = NULL;
    for (size_t i = 0; i < sizeof constant_attrs / sizeof *constant_attrs;
         i++) {
        const popc_attr *a = popc_attrs_find(attrs, constant_attrs[i]);

        if (!a)
            continue;
        if (*out)
            return opu_error(POPC_EINVAL, "Constant", node,
                             "attributes '%s' and '%s' both given; set "
                             "exactly one", (*out)->name, a->name);
        *out = a;
    }
    if (!*out)
        return opu_error(POPC_EINVAL, "Constant", node,
                         "no value: set one of value, value_float, "
                         "value_floats, value_int, value_ints%s",
                         popc_attrs_find(attrs, "value_string") ||
                                 popc_attrs_find(attrs, "value_strings")
                             ? " (string constants are not supported)"
                             : "");
    return POPC_OK;
}

static popc_status constant_infer(popc_infer_ctx *ic)
{
    const popc_attr *a;
    popc_view *o = &ic->outputs[0];
    popc_status st;

    if ((st = constant_attr(ic->node_name, ic->attrs, &a)) !=
        POPC_OK)
        return st;
    memset(o, 0, sizeof *o);
    if (strcmp(a->name, "value") == 0) {
        if (a->type != POPC_ATTR_TENSOR || !a->tensor || !a->tensor->data ||
            popc_dtype_size(a->tensor->dtype) == 0)
            return opu_error(POPC_EINVAL, "Constant",
                             ic->node_name,
                             "attribute 'value' must be a tensor with data");
        *o = *a->tensor;
        o->data = NULL;
    } else if (strcmp(a->name, "value_float") == 0 ||
               strcmp(a->name, "value_int") == 0) {
        if (a->type != POPC_ATTR_FLOAT && a->type != POPC_ATTR_INT)
            return opu_error(POPC_EINVAL, "Constant",
                             ic->node_name, "attribute '%s' must be a "
                             "number", a->name);
        o->dtype = a->name[6] == 'f' ? POPC_DTYPE_F32 : POPC_DTYPE_I64;
    } else {
        int floats = strcmp(a->name, "value_floats") == 0;

        if (a->type != (floats ? POPC_ATTR_FLOATS : POPC_ATTR_INTS))
            return opu_error(POPC_EINVAL, "Constant",
                             ic->node_name, "attribute '%s' must be a list",
                             a->name);
        o->dtype = floats ? POPC_DTYPE_F32 : POPC_DTYPE_I64;
        o->rank = 1;
        o->dims[0] = a->n;
    }
    return POPC_OK;
}

static popc_status constant_forward(const popc_kernel_ctx *kc)
{
    const popc_view *o = &kc->outputs[0];
    const popc_attr *a;
    int64_t s, e;
    popc_status st;

    if ((st = constant_attr(kc->node_name, kc->attrs, &a)) !=
        POPC_OK)
        return st;
    if (a->type == POPC_ATTR_TENSOR) {
        copy_share(kc, a->tensor, o);
        return POPC_OK;
    }
    opu_range(popc_view_numel(o), kc->part, kc->n_parts, &s, &e);
    for (int64_t i = s; i < e; i++) {
        switch (a->type) {
        case POPC_ATTR_FLOATS: ((float *)o->data)[i] = (float)a->floats[i];
            break;
        case POPC_ATTR_INTS: ((int64_t *)o->data)[i] = a->ints[i]; break;
        default:
            if (o->dtype == POPC_DTYPE_F32)
                ((float *)o->data)[i] =
                    (float)popc_attr_float(kc->attrs, a->name, 0);
            else
                ((int64_t *)o->data)[i] = popc_attr_int(kc->attrs, a->name, 0);
            break;
        }
    }
    return POPC_OK;
}

/* ---- Dropout ------------------------------------------------------------- */

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static popc_status ratio_check(const popc_infer_ctx *ic, const char *op,
                               int ratio_at)
{
    const popc_view *r =
        ic->n_inputs > ratio_at ? &ic->inputs[ratio_at] : NULL;
    const popc_view *tm =
        ic->n_inputs > ratio_at + 1 ? &ic->inputs[ratio_at + 1] : NULL;

    if (opu_present(r)) {
        double v;

        if (!opu_is_float(r->dtype) || popc_view_numel(r) != 1)
            return opu_error(POPC_EINVAL, op, ic->node_name,
                             "ratio must be a float scalar, got %s with "
                             "%lld elements", popc_dtype_name(r->dtype),
                             (long long)popc_view_numel(r));
        if (r->data && ((v = opu_scalar(r)) < 0.0 || v > 1.0 || v != v))
            return opu_error(POPC_EINVAL, op, ic->node_name,
                             "ratio %g is outside [0, 1]", v);
    }
    if (opu_present(tm) &&
        (tm->dtype != POPC_DTYPE_BOOL || popc_view_numel(tm) != 1))
        return opu_error(POPC_EINVAL, op, ic->node_name,
                         "training_mode must be a bool scalar, got %s",
                         popc_dtype_name(tm->dtype));
    return POPC_OK;
}

/* Whether dropout drops anything in this call; *ratio and the *scale of
** kept elements (0 when everything is dropped). */
static int dropout_active(const popc_kernel_ctx *kc, int ratio_at,
                          float *ratio, float *scale)
{
    const popc_view *r =
        kc->n_inputs > ratio_at ? &kc->inputs[ratio_at] : NULL;
    const popc_view *tm =
        kc->n_inputs > ratio_at + 1 ? &kc->inputs[ratio_at + 1] : NULL;

    *ratio = opu_present(r) ? (float)opu_scalar(r) : 0.5f;
    *scale = *ratio < 1.0f ? 1.0f / (1.0f - *ratio) : 0.0f;
    /* ratio 0 keeps everything at scale 1: a copy, without the hashing */
    return kc->training && *ratio > 0.0f &&
           !(opu_present(tm) && !*(const uint8_t *)tm->data);
}

static popc_status dropout_infer(popc_infer_ctx *ic)
{
    popc_status st;

    if ((st = mop_infer_ew(ic, "Dropout", 1, MOP_F, POPC_DTYPE_UNDEFINED)) !=
        POPC_OK)
        return st;
    if ((st = ratio_check(ic, "Dropout", 1)) != POPC_OK)
        return st;
    if (ic->n_outputs > 1) {
        ic->outputs[1] = ic->outputs[0];
        ic->outputs[1].dtype = POPC_DTYPE_BOOL;
    }
    return POPC_OK;
}

static popc_status dropout_forward(const popc_kernel_ctx *kc)
{
    const popc_view *x = &kc->inputs[0], *y = &kc->outputs[0];
    uint8_t *mask = kc->n_outputs > 1 ? kc->outputs[1].data : NULL;
    int half = x->dtype == POPC_DTYPE_F16;
    float ratio, scale;
    int active = dropout_active(kc, 1, &ratio, &scale);
    uint64_t key = mix64(kc->seed + 0x9e3779b97f4a7c15ull);
    /* keep when u = (z >> 40) / 2^24 >= ratio, compared in integers */
    uint64_t cut = (uint64_t)ceil((double)ratio * 16777216.0);
    int64_t s, e;

    opu_range(popc_view_numel(y), kc->part, kc->n_parts, &s, &e);
    if (!active) {
        copy_share(kc, x, y);
        if (mask)
            memset(mask + s, 1, (size_t)(e - s));
        return POPC_OK;
    }
    for (int64_t c = s; c < e; c += OPU_CHUNK) {
        int64_t m = e - c < OPU_CHUNK ? e - c : OPU_CHUNK;
        float buf[OPU_CHUNK];
        const float *in = buf;
        float *out = buf;

        if (half) { /* float16 goes through float32 a block at a time */
            opu_h2f_n(buf, (const uint16_t *)x->data + c, m);
        } else {
            in = (const float *)x->data + c;
            out = (float *)y->data + c;
        }
        for (int64_t k = 0; k < m; k++) {
            uint64_t z = mix64(key + (uint64_t)(c + k) *
                                         0x9e3779b97f4a7c15ull);
            int keep = (z >> 40) >= cut;

            out[k] = keep ? in[k] * scale : 0.0f;
            if (mask)
                mask[c + k] = (uint8_t)keep;
        }
        if (half)
            opu_f2h_n((uint16_t *)y->data + c, buf, m);
    }
    return POPC_OK;
}

static popc_status dropout_grad(popc_grad_ctx *gc)
{
    int in[4];

    if (gc->output_grads[0] < 0)
        return POPC_OK;
    if (gc->n_outputs < 2 || gc->outputs[1] < 0)
        return gc->host->set_error(
            POPC_EUNSUPPORTED,
            "Dropout '%s': training through Dropout needs its mask output "
            "so the backward pass drops the same elements; add the node "
            "with two outputs (output, mask)", gc->node_name);
    in[0] = gc->output_grads[0];
    in[1] = gc->outputs[1];
    in[2] = gc->n_inputs > 1 ? gc->inputs[1] : -1;
    in[3] = gc->n_inputs > 2 ? gc->inputs[2] : -1;
    return opu_grad_node(gc, "popc", "DropoutGrad", in, 4, NULL, 0,
                         &gc->input_grads[0]);
}

/* DropoutGrad(dY, mask, ratio?, training_mode?) -> dY * mask * scale */
static void dropout_grad_f32(void *const *o_, const void *const *in_,
                             const int *st, int64_t n, const mop_params *p)
{
    float *o = o_[0];
    const float *g = in_[0];
    const uint8_t *m = in_[1];

    (void)st;
    for (int64_t i = 0; i < n; i++)
        o[i] = m[i] ? g[i] * p->alpha : 0.0f;
}

static const mop_kernels k_dropout_grad = {dropout_grad_f32, NULL, NULL,
                                           NULL, NULL, NULL};

static popc_status dropout_grad_infer(popc_infer_ctx *ic)
{
    const popc_view *g = &ic->inputs[0], *m = &ic->inputs[1];
    char a[160], b[160];

    if (!opu_is_float(g->dtype) || m->dtype != POPC_DTYPE_BOOL)
        return opu_error(POPC_EINVAL, "DropoutGrad", ic->node_name,
                         "expects a float gradient and a bool mask, got %s "
                         "and %s", popc_dtype_name(g->dtype),
                         popc_dtype_name(m->dtype));
    if (!opu_same_shape(g, m))
        return opu_error(POPC_EINVAL, "DropoutGrad", ic->node_name,
                         "gradient shape %s differs from mask shape %s",
                         opu_shape_str(g, a, sizeof a),
                         opu_shape_str(m, b, sizeof b));
    ic->outputs[0] = *g;
    ic->outputs[0].data = NULL;
    return ratio_check(ic, "DropoutGrad", 2);
}

static popc_status dropout_grad_forward(const popc_kernel_ctx *kc)
{
    mop_params p = {0};
    float ratio, scale;

    /* inactive dropout passed everything through unscaled */
    p.alpha = dropout_active(kc, 2, &ratio, &scale) ? scale : 1.0f;
    return mop_map(kc, &k_dropout_grad, kc->inputs, 2, kc->outputs, 1, &p);
}

/* ---- table ------------------------------------------------------------------ */

const popc_op_def mop_misc_ops[] = {
    OPU_DEF("ai.onnx", "Where", 16, 3, 3, 1, 1, POPC_OP_SPLIT, where,
            where_grad, NULL, "Condition ? X : Y with broadcasting"),
    OPU_ROLE_DEF(POPC_ROLE_CAST, "ai.onnx", "Cast", 13, 1, 1, 1, 1,
                 POPC_OP_SPLIT, cast, cast_grad, NULL,
                 "convert to the element type 'to'"),
    OPU_DEF("ai.onnx", "CastLike", 15, 2, 2, 1, 1, POPC_OP_SPLIT, castlike,
            cast_grad, NULL, "convert to the element type of input 1"),
    OPU_ROLE_DEF(POPC_ROLE_IDENTITY, "ai.onnx", "Identity", 16, 1, 1, 1, 1,
                 POPC_OP_SPLIT, identity, identity_grad, NULL, "copy"),
    OPU_DEF("ai.onnx", "Constant", 13, 0, 0, 1, 1, POPC_OP_SPLIT, constant,
            NULL, NULL, "a tensor from the value* attributes"),
    OPU_DEF("ai.onnx", "Dropout", 13, 1, 3, 1, 2,
            POPC_OP_SPLIT | POPC_OP_RANDOM, dropout, dropout_grad, NULL,
            "zero with probability ratio and scale by 1/(1-ratio) when "
            "training"),
    OPU_DEF("popc", "DropoutGrad", 1, 2, 4, 1, 1, POPC_OP_SPLIT,
            dropout_grad, NULL, NULL,
            "(dY, mask, ratio?, training_mode?) -> dX of Dropout"),
};

const int mop_misc_count = sizeof mop_misc_ops / sizeof mop_misc_ops[0];
