/* oputil.h - helpers shared by the math and tensor op plugins.
**
** oputil.c is compiled into both modules (each gets its own hidden copy),
** so nothing here is exported and the plugins stay independent. Functions
** that fail record the message through the host table they are given and
** name the op and the node ("Add 'add1': ...").
*/
#ifndef POPC_OPS_OPUTIL_H
#define POPC_OPS_OPUTIL_H

#include <stdint.h>
#include <string.h>

#include "popc/plugin.h"
#include "popc/tensor.h"

/* Elements converted per step when a float16 kernel goes through float. */
#define OPU_CHUNK 256

/* ONNX TensorProto element types (Cast's "to"). */
enum {
    OPU_ONNX_FLOAT = 1, OPU_ONNX_UINT8 = 2, OPU_ONNX_INT8 = 3,
    OPU_ONNX_UINT16 = 4, OPU_ONNX_INT16 = 5, OPU_ONNX_INT32 = 6,
    OPU_ONNX_INT64 = 7, OPU_ONNX_BOOL = 9, OPU_ONNX_FLOAT16 = 10,
    OPU_ONNX_DOUBLE = 11, OPU_ONNX_UINT32 = 12, OPU_ONNX_UINT64 = 13,
    OPU_ONNX_BFLOAT16 = 16
};

/* ---- float16 ------------------------------------------------------------- */

static inline float opu_h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t bits;
    float f;

    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {
        /* subnormal half: normalise into a float */
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while (!(man & 0x400u));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Round to nearest even; NaN stays NaN, overflow gives infinity. */
static inline uint16_t opu_f2h(float f)
{
    uint32_t x;
    uint32_t sign, exp, man;

    memcpy(&x, &f, sizeof x);
    sign = (x >> 16) & 0x8000u;
    exp = (x >> 23) & 0xffu;
    man = x & 0x7fffffu;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
    if (exp > 142)
        return (uint16_t)(sign | 0x7c00u);
    if (exp >= 113) {
        uint32_t h = ((exp - 112) << 10) | (man >> 13);
        uint32_t rest = man & 0x1fffu;

        if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
    if (exp >= 102) {
        /* subnormal half: shift the mantissa with its hidden bit */
        uint32_t m = man | 0x800000u;
        int shift = (int)(126 - exp);
        uint32_t h = m >> shift;
        uint32_t rest = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1);

        if (rest > half || (rest == half && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
    return (uint16_t)sign;
}

/* A uniform 32-bit number for element i of a kernel run: depends on the
** seed and the index only, so whole and split runs agree. */
static inline uint32_t opu_random32(uint64_t seed, int64_t i)
{
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* Element i of a float16 result: to nearest, or stochastically under
** Precision.enableStochasticRounding (POPC_KERNEL_STOCHASTIC_ROUNDING). */
static inline uint16_t opu_f2h_at(const popc_kernel_ctx *kc, float f,
                                  int64_t i)
{
    if (!(kc->flags & POPC_KERNEL_STOCHASTIC_ROUNDING))
        return opu_f2h(f);
    return popc_f16_stochastic(f, opu_random32(kc->seed, i), opu_f2h,
                               opu_h2f);
}

/* ---- small helpers ---------------------------------------------------------- */

static inline int opu_present(const popc_view *v)
{
    return v && v->dtype != POPC_DTYPE_UNDEFINED;
}

static inline int opu_is_float(popc_dtype dt)
{
    return dt == POPC_DTYPE_F32 || dt == POPC_DTYPE_F16;
}

/* The share [*s, *e) of n items that part `part` of n_parts owns. */
static inline void opu_range(int64_t n, int part, int n_parts, int64_t *s,
                             int64_t *e)
{
    if (n_parts <= 1) {
        *s = 0;
        *e = n;
        return;
    }
    *s = n * part / n_parts;
    *e = n * (part + 1) / n_parts;
}

static inline int opu_same_shape(const popc_view *a, const popc_view *b)
{
    if (a->rank != b->rank)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

/* ONNX TensorProto number -> popc dtype; UNDEFINED when unsupported. */
popc_dtype opu_dtype_from_onnx(int64_t onnx);
int64_t opu_dtype_to_onnx(popc_dtype dt);

/* "[2, 3]" into buf (always terminated); returns buf. */
char *opu_dims_str(const int64_t *dims, int rank, char *buf, size_t size);
char *opu_shape_str(const popc_view *v, char *buf, size_t size);

/* Record "<op> '<node>': <message>" and return st. */
popc_status opu_error(const popc_host *h, popc_status st, const char *op,
                      const char *node, const char *fmt, ...)
    POPC_PRINTF(5, 6);

/* Normalise an axis in [-rank, rank) to [0, rank). */
popc_status opu_axis(const popc_host *h, const char *op, const char *node,
                     int64_t axis, int rank, const char *what, int *out);

/* Read a compile-time constant int32/int64 scalar or 1-D input (at most cap
** values) into out; *n receives the count. Fails naming the input `what`
** when the value is not known at compile time. */
popc_status opu_const_ints(const popc_host *h, const char *op,
                           const char *node, const popc_view *v,
                           const char *what, int64_t *out, int cap, int *n);

/* Read a scalar of any numeric dtype as double (data must be present). */
double opu_scalar(const popc_view *v);

/* Numpy multidirectional broadcast of in[0..n) into *out (rank and dims;
** dtype untouched). The error names both shapes that disagree. */
popc_status opu_broadcast(const popc_host *h, const char *op,
                          const char *node, const popc_view *in, int n,
                          popc_view *out);

/* ---- broadcast iteration ------------------------------------------------- */

#define OPU_MAX_IN 4

/* The output's dims with each input's element strides (0 where the input
** is broadcast), adjacent dims merged where every stride allows it. */
typedef struct opu_bcast {
    int rank;
    int n_in;
    int64_t dims[POPC_MAX_RANK];
    int64_t stride[OPU_MAX_IN][POPC_MAX_RANK];
    int inner[OPU_MAX_IN];      /* stride of the innermost dim: 0 or 1 */
} opu_bcast;

/* A walk over output elements [pos, end) in runs along the innermost dim.
** After opu_bcast_next() returns 1, the run is out_off, in_off[k], n. */
typedef struct opu_bcast_iter {
    const opu_bcast *b;
    int64_t pos, end;
    int64_t idx[POPC_MAX_RANK];
    int64_t cur[OPU_MAX_IN];
    int64_t out_off, in_off[OPU_MAX_IN], n;
} opu_bcast_iter;

/* in[k] must broadcast to out (checked by opu_broadcast before). */
void opu_bcast_init(opu_bcast *b, const popc_view *out, const popc_view *in,
                    int n_in);
void opu_bcast_begin(opu_bcast_iter *it, const opu_bcast *b, int64_t start,
                     int64_t end);
int opu_bcast_next(opu_bcast_iter *it);

/* ---- op tables ------------------------------------------------------------ */

/* One popc_op_def; P names the op's P##_infer and P##_forward. */
/* A definition that plays `ROLE` (POPC_ROLE_*) in the core's passes. */
#define OPU_ROLE_DEF(ROLE, DOMAIN, NAME, VER, MIN_IN, MAX_IN, MIN_OUT,     \
                     MAX_OUT, FLAGS, P, GRAD, COST, DOC)                   \
    {                                                                       \
        .size = sizeof(popc_op_def), .domain = DOMAIN, .name = NAME,        \
        .since_version = VER, .min_inputs = MIN_IN, .max_inputs = MAX_IN,   \
        .min_outputs = MIN_OUT, .max_outputs = MAX_OUT, .flags = FLAGS,     \
        .infer = P##_infer, .forward = P##_forward, .grad = GRAD,           \
        .cost = COST, .doc = DOC, .role = ROLE                              \
    }

#define OPU_DEF(DOMAIN, NAME, VER, MIN_IN, MAX_IN, MIN_OUT, MAX_OUT, FLAGS, \
                P, GRAD, COST, DOC)                                         \
    OPU_ROLE_DEF(POPC_ROLE_NONE, DOMAIN, NAME, VER, MIN_IN, MAX_IN,         \
                 MIN_OUT, MAX_OUT, FLAGS, P, GRAD, COST, DOC)

/* ---- gradient builders ----------------------------------------------------- */

/* A rank-0 constant of dtype dt holding v. */
popc_status opu_grad_scalar(popc_grad_ctx *gc, popc_dtype dt, double v,
                            int *out);
/* A 1-D int64 constant. */
popc_status opu_grad_ints(popc_grad_ctx *gc, const int64_t *v, int n,
                          int *out);
/* One node with one output (domain NULL: ai.onnx). */
popc_status opu_grad_node(popc_grad_ctx *gc, const char *domain,
                          const char *op, const int *in, int n_in,
                          const popc_attr *attrs, int n_attrs, int *out);
/* g summed down to target's shape with popc::SumToShape (g itself when the
** shapes already agree). */
popc_status opu_grad_sum_to(popc_grad_ctx *gc, int g, const popc_view *target,
                            int *out);
/* g reshaped to target's shape (g itself when already equal). */
popc_status opu_grad_reshape(popc_grad_ctx *gc, int g,
                             const popc_view *target, int *out);

#endif /* POPC_OPS_OPUTIL_H */
