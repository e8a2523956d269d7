/* oputil.h - the op utility library: helpers every op plugin shares.
**
** ops/util/ is built once, as a convenience library linked into each op
** plugin with hidden symbols, so nothing here is exported and each plugin
** keeps its own state (host.h), set by opu_init() in its init(). Functions
** that fail record a message naming the op and the node ("Add 'add1':
** ..."), in the host's wording (popc/services.h).
*/
#ifndef POPC_OPS_OPUTIL_H
#define POPC_OPS_OPUTIL_H

#include <stdint.h>
#include <string.h>

#include "popc/plugin.h"
#include "popc/tensor.h"
#include "ops/util/half.h"
#include "ops/util/host.h"

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

/* 1 when views[i] exists (i < n) and has a dtype: absent optional inputs
** and outputs have dtype UNDEFINED. */
int opu_present_at(const popc_view *views, int n, int i);

/* Output i can be written by a kernel (present and with data). */
int opu_out_ready(const popc_kernel_ctx *kc, int i);

/* dtype and shape into dst (data NULL). */
void opu_set(popc_view *dst, popc_dtype dt, const int64_t *dims, int rank);
void opu_set_like(popc_view *dst, const popc_view *src);

/* Row-major element strides of v's dims into st[0..rank). */
void opu_strides(const popc_view *v, int64_t *st);

/* Attribute name as a number (INT or FLOAT), def when absent. */
double opu_attr_num(const popc_attrs *a, const char *name, double def);

/* Identity kernel share: copies input i to output i for every output,
** bytes split over the parts. */
void opu_copy_share(const popc_kernel_ctx *kc);

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

/* Room for any shape written by opu_dims ("[a, b, ...]"). */
#define OPU_DIMS_LEN 200

/* The same into a buffer of OPU_DIMS_LEN, for a view and for dims. */
char *opu_dims(const popc_view *v, char *buf);
char *opu_dims_n(const int64_t *dims, int rank, char *buf);

/* Record "<op> '<node>': <message>" and return st. */
popc_status opu_error(popc_status st, const char *op, const char *node,
                      const char *fmt, ...) POPC_PRINTF(4, 5);

/* Normalise an axis in [-rank, rank) to [0, rank). */
popc_status opu_axis(const char *op, const char *node,
                     int64_t axis, int rank, const char *what, int *out);

/* Read a compile-time constant int32/int64 scalar or 1-D input (at most cap
** values) into out; *n receives the count. Fails naming the input `what`
** when the value is not known at compile time. */
popc_status opu_const_ints(const char *op,
                           const char *node, const popc_view *v,
                           const char *what, int64_t *out, int cap, int *n);

/* POPC_EINVAL unless input i is float32 ("<op> '<node>': <what> must be
** float32, got ...; cast it to float32 first"). */
popc_status opu_want_f32(const popc_infer_ctx *ic, const char *op, int i,
                         const char *what);

/* POPC_EINVAL unless input 0 exists with a known dtype. */
popc_status opu_need_dtype(const popc_infer_ctx *ic, const char *op);

/* Loss reductions, as torch.nn.functional spells them. */
enum { OPU_RED_NONE = 0, OPU_RED_SUM, OPU_RED_MEAN };

/* Reads string attribute "reduction" (default "mean"); POPC_EINVAL for
** anything but "mean", "sum" or "none". */
popc_status opu_reduction(const char *op, const char *node,
                          const popc_attrs *attrs, int *out);

/* Read a scalar of any numeric dtype as double (data must be present). */
double opu_scalar(const popc_view *v);

/* Numpy multidirectional broadcast of in[0..n) into *out (rank and dims;
** dtype untouched). The error names both shapes that disagree. */
popc_status opu_broadcast(const char *op,
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
** shapes already agree); _dims: to dims. */
popc_status opu_grad_sum_to(popc_grad_ctx *gc, int g, const popc_view *target,
                            int *out);
popc_status opu_grad_sum_to_dims(popc_grad_ctx *gc, int g,
                                 const int64_t *dims, int rank, int *out);
/* g reshaped to target's shape (g itself when already equal); _dims: to
** dims. */
popc_status opu_grad_reshape(popc_grad_ctx *gc, int g,
                             const popc_view *target, int *out);
popc_status opu_grad_reshape_dims(popc_grad_ctx *gc, int g,
                                  const int64_t *dims, int rank, int *out);
/* g times the float scalar s (g itself when s == 1). */
popc_status opu_grad_scale(popc_grad_ctx *gc, int g, double s, int *out);
/* Refuses a gradient flowing into output j of a node whose grad builder
** cannot propagate it; what names the output. */
popc_status opu_no_grad_output(const popc_grad_ctx *gc, const char *op,
                               int j, const char *what);

#endif /* POPC_OPS_OPUTIL_H */
