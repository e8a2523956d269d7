/* matmul.c - ai.onnx MatMul (numpy semantics: batched, broadcast, 1-D
** operands) and Gemm, on OpenBLAS sgemm.
**
** Work is cut into fixed tiles (nn_tiles, see tiles.c) so that a split
** run issues the same sgemm calls as the whole run and agrees bitwise.
** Gradients are built from MatMul, Gemm, Transpose, Reshape, Mul and
** popc::SumToShape nodes (the core marks those of a float16 operation,
** POPC_ATTR_FLOAT16), and a Gemm's weight and bias gradients from one
** popc::GemmGradWeightBias (matmul_grad.c). With half partials, rows are
** the units (half_partials.c).
*/
#include "config.h"

#include <limits.h>
#include <string.h>

#include "ops/nn/half_partials.h"
#include "ops/nn/matmul_grad.h"
#include "ops/nn/matmul_serial.h"
#include "ops/nn/nn_priv.h"
#include "ops/util/oputil.h"

/* Tiles per run the split aims at (several workers, a few tiles each). */
#define TILE_TARGET 8

/* ---- MatMul shape ------------------------------------------------------- */

typedef struct mm_shape {
    int64_t M, N, K;
    int nb;                       /* broadcast batch rank */
    int64_t bdims[POPC_MAX_RANK]; /* broadcast batch dims */
    int64_t astr[POPC_MAX_RANK];  /* A's matrix stride per batch dim */
    int64_t bstr[POPC_MAX_RANK];  /* B's matrix stride per batch dim */
    int64_t batch;
    int rank; /* of the output */
    int64_t dims[POPC_MAX_RANK];
} mm_shape;

static popc_status mm_parse(const char *node, const popc_view *a,
                            const popc_view *b, mm_shape *s)
{
    char sa[OPU_DIMS_LEN], sb[OPU_DIMS_LEN];
    int ra = a->rank, rb = b->rank;
    int nba = ra > 2 ? ra - 2 : 0, nbb = rb > 2 ? rb - 2 : 0;
    int64_t ka, kb, mult;

    memset(s, 0, sizeof *s);
    if (ra < 1 || rb < 1)
        return opu_error(POPC_EINVAL, "MatMul", node, "operands must have "
                         "rank 1 or more, got A %s and B %s", opu_dims(a, sa),
                         opu_dims(b, sb));
    s->M = ra == 1 ? 1 : a->dims[ra - 2];
    ka = a->dims[ra - 1];
    kb = rb == 1 ? b->dims[0] : b->dims[rb - 2];
    s->N = rb == 1 ? 1 : b->dims[rb - 1];
    if (ka != kb)
        return opu_error(POPC_EINVAL, "MatMul", node, "A %s has %lld columns "
                         "but B %s has %lld rows; the inner dimensions must "
                         "agree", opu_dims(a, sa), (long long)ka,
                         opu_dims(b, sb), (long long)kb);
    s->K = ka;
    s->nb = nba > nbb ? nba : nbb;
    /* numpy broadcasting of the batch dims, aligned at the right */
    for (int i = 0; i < s->nb; i++) {
        int ia = i - (s->nb - nba), ib = i - (s->nb - nbb);
        int64_t da = ia >= 0 ? a->dims[ia] : 1;
        int64_t db = ib >= 0 ? b->dims[ib] : 1;

        if (da != db && da != 1 && db != 1)
            return opu_error(POPC_EINVAL, "MatMul", node, "batch dimensions "
                             "of A %s and B %s do not broadcast (%lld vs "
                             "%lld)", opu_dims(a, sa), opu_dims(b, sb),
                             (long long)da, (long long)db);
        s->bdims[i] = da == 1 ? db : da;
    }
    mult = 1;
    for (int i = s->nb - 1; i >= 0; i--) {
        int ia = i - (s->nb - nba);
        int64_t da = ia >= 0 ? a->dims[ia] : 1;

        s->astr[i] = da == 1 ? 0 : mult;
        mult *= da;
    }
    mult = 1;
    for (int i = s->nb - 1; i >= 0; i--) {
        int ib = i - (s->nb - nbb);
        int64_t db = ib >= 0 ? b->dims[ib] : 1;

        s->bstr[i] = db == 1 ? 0 : mult;
        mult *= db;
    }
    s->batch = 1;
    for (int i = 0; i < s->nb; i++) {
        s->batch *= s->bdims[i];
        s->dims[s->rank++] = s->bdims[i];
    }
    if (ra > 1)
        s->dims[s->rank++] = s->M;
    if (rb > 1)
        s->dims[s->rank++] = s->N;
    if (s->M > INT_MAX || s->N > INT_MAX || s->K > INT_MAX)
        return opu_error(POPC_EUNSUPPORTED, "MatMul", node, "A %s x B %s has "
                         "a matrix dimension above %d, too large for BLAS",
                         opu_dims(a, sa), opu_dims(b, sb), INT_MAX);
    return POPC_OK;
}

static popc_status matmul_infer(popc_infer_ctx *ic)
{
    mm_shape s;
    popc_status st;

    if ((st = opu_want_f32(ic, "MatMul", 0, "input A")) != POPC_OK ||
        (st = opu_want_f32(ic, "MatMul", 1, "input B")) != POPC_OK)
        return st;
    mms ser;

    if ((st = mm_parse(ic->node_name, &ic->inputs[0], &ic->inputs[1], &s)) !=
            POPC_OK ||
        (st = mms_parse("MatMul", ic->node_name, ic->attrs, s.M, s.N, s.K,
                           &ser)) !=
            POPC_OK)
        return st;
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, s.dims, s.rank);
    return POPC_OK;
}

/* Matrix offsets of batch entry b in A and B. */
static void mm_offsets(const mm_shape *s, int64_t b, int64_t *oa, int64_t *ob)
{
    *oa = 0;
    *ob = 0;
    for (int i = s->nb - 1; i >= 0; i--) {
        int64_t idx = b % s->bdims[i];

        b /= s->bdims[i];
        *oa += idx * s->astr[i];
        *ob += idx * s->bstr[i];
    }
}

/* Rows are cut into blocks of this many, the same whatever the split, so
** that a split run adds the same products as the whole run. */
#define SERIAL_ROWS 64

/* A MatMul serialized over its reducing dimension: units are blocks of
** rows of one batch entry, each summed over the slices of K. */
static popc_status matmul_reduce_serialized(const popc_kernel_ctx *kc,
                                            const mm_shape *s, const mms *ser)
{
    const float *A = kc->inputs[0].data, *B = kc->inputs[1].data;
    float *C = kc->outputs[0].data;
    int64_t blocks = (s->M + SERIAL_ROWS - 1) / SERIAL_ROWS, lo, hi;
    popc_status st = POPC_OK;

    opu_range(s->batch * blocks, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t u = lo; u < hi && st == POPC_OK; u++) {
        int64_t b = u / blocks, r0 = (u % blocks) * SERIAL_ROWS, oa, ob;
        int64_t rows = s->M - r0 < SERIAL_ROWS ? s->M - r0 : SERIAL_ROWS;

        mm_offsets(s, b, &oa, &ob);
        st = mms_reduce_rows(kc, ser, 0, 0,
                             A + oa * s->M * s->K + r0 * s->K, s->K,
                             B + ob * s->K * s->N, s->N,
                             C + b * s->M * s->N + r0 * s->N, rows, s->N,
                             s->K);
    }
    return st;
}

static popc_status matmul_forward(const popc_kernel_ctx *kc)
{
    const float *A = kc->inputs[0].data, *B = kc->inputs[1].data;
    float *C = kc->outputs[0].data;
    mm_shape s;
    nn_tiles t;
    int64_t lo, hi;
    popc_status st;

    mms ser;

    if ((st = mm_parse(kc->node_name, &kc->inputs[0], &kc->inputs[1], &s)) !=
            POPC_OK ||
        (st = mms_parse("MatMul", kc->node_name, kc->attrs, s.M, s.N, s.K,
                           &ser)) !=
            POPC_OK)
        return st;
    if (ser.mode == MMS_REDUCING_DIM && ser.factor > 1)
        return matmul_reduce_serialized(kc, &s, &ser);
    if (nn_half_partials(kc)) {
        opu_range(s.batch * s.M, kc->part, kc->n_parts, &lo, &hi);
        while (lo < hi) { /* this part's rows, one batch entry at a time */
            int64_t b = lo / s.M, i = lo % s.M, oa, ob;
            int64_t end = s.M < i + hi - lo ? s.M : i + hi - lo;

            mm_offsets(&s, b, &oa, &ob);
            if ((st = nn_gemm_half(kc, 0, 0, s.K, 1.0f, A + oa * s.M * s.K,
                                   s.K, B + ob * s.K * s.N, s.N, 0.0f,
                                   C + b * s.M * s.N, s.N, i, end, 0,
                                   s.N)) != POPC_OK)
                return st;
            lo += end - i;
        }
        return POPC_OK;
    }
    nn_tiles_plan(s.batch, s.M, s.N, s.K, TILE_TARGET, 64, NN_TILE_AUTO, &t);
    opu_range(s.batch * t.n, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        int64_t b = u / t.n, oa, ob;

        mm_offsets(&s, b, &oa, &ob);
        nn_sgemm_tile(&t, u % t.n, 0, 0, s.M, s.N, s.K, 1.0f,
                      A + oa * s.M * s.K, s.K, B + ob * s.K * s.N, s.N, 0.0f,
                      C + b * s.M * s.N, s.N);
    }
    return POPC_OK;
}

static popc_status matmul_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    mm_shape s;
    mms ser;
    popc_status st;

    if ((st = mm_parse(ic->node_name, &ic->inputs[0], &ic->inputs[1], &s)) !=
        POPC_OK)
        return st;
    c->flops = 2.0 * (double)s.batch * (double)s.M * (double)s.N * (double)s.K;
    c->bytes = 4.0 * ((double)popc_view_numel(&ic->inputs[0]) +
                      (double)popc_view_numel(&ic->inputs[1]) +
                      (double)s.batch * (double)s.M * (double)s.N);
    if ((st = mms_parse("MatMul", ic->node_name, ic->attrs, s.M, s.N, s.K,
                           &ser)) !=
        POPC_OK)
        return st;
    c->temp_bytes = mms_temp_bytes(&ser,
                                   (double)popc_view_numel(&ic->inputs[0]),
                                   (double)popc_view_numel(&ic->inputs[1]),
                                   (double)s.batch * (double)s.M *
                                       (double)s.N);
    return POPC_OK;
}

/* Transpose of the last two dims of value (rank r >= 2). */
static popc_status transpose_last(popc_grad_ctx *gc, int value, int r, int *out)
{
    int64_t perm[POPC_MAX_RANK];
    popc_attr a;

    for (int i = 0; i < r; i++)
        perm[i] = i;
    perm[r - 2] = r - 1;
    perm[r - 1] = r - 2;
    a = popc_attr_make_ints("perm", perm, r);
    return opu_grad_node(gc, NULL, "Transpose", &value, 1, &a, 1, out);
}

/* x @ y for the gradient of input `which` (0: A, 1: B) of a MatMul
** serialized as ser (matmul_serial.h). */
static popc_status matmul2(popc_grad_ctx *gc, const mms *ser, int which,
                           int x, int y, int *out)
{
    int in[2] = {x, y}, n;
    popc_attr a[3];
    mms_mode roles[3];

    if (which == 0)
        mms_roles_da(0, roles);
    else
        mms_roles_db(0, roles);
    mms_grad_attrs(ser, roles, a, &n);
    return opu_grad_node(gc, NULL, "MatMul", in, 2, n ? a : NULL, n, out);
}

/* dY with a unit dimension put back where a 1-D operand dropped it:
** before the last dim (A was 1-D) or after it (B was 1-D). */
static popc_status lift_dy(popc_grad_ctx *gc, int dy, const popc_view *y,
                           int a_was_1d, int b_was_1d, int *out)
{
    int64_t d[POPC_MAX_RANK + 2];
    int r = 0;

    for (int i = 0; i < y->rank - (a_was_1d != b_was_1d); i++)
        d[r++] = y->dims[i];
    if (a_was_1d && b_was_1d) {
        d[r++] = 1;
        d[r++] = 1;
    } else if (a_was_1d) {
        d[r++] = 1;
        d[r++] = y->dims[y->rank - 1];
    } else {
        d[r++] = y->dims[y->rank - 1];
        d[r++] = 1;
    }
    if (r > POPC_MAX_RANK)
        return gc->host->set_error(POPC_EUNSUPPORTED,
                                   "MatMul '%s': gradient needs rank %d, "
                                   "above %d",
                                   gc->node_name, r, POPC_MAX_RANK);
    return opu_grad_reshape_dims(gc, dy, d, r, out);
}

/* The gradients when B is a matrix under a batched A (a Linear layer on
** [batch, seq, K]): the batch dims fold into the rows, so dA = dY B^T and
** dB = A^T dY are each one Gemm over all R rows. Per batch entry, dB
** would be R / M products of M rows each, materialized and then added up
** by SumToShape: the transformer's largest temporaries and 10% of its
** step. */
static popc_status matmul_grad_folded(popc_grad_ctx *gc, const popc_view *ai,
                                      const popc_view *bi, int a, int b,
                                      int dy)
{
    int64_t K = bi->dims[0], N = bi->dims[1], R = 1, ra[2], ry[2];
    int in[2], a2, dy2, da;
    popc_attr t;
    popc_status st;

    for (int i = 0; i + 1 < ai->rank; i++)
        R *= ai->dims[i];
    ra[0] = ry[0] = R;
    ra[1] = K;
    ry[1] = N;
    if ((st = opu_grad_reshape_dims(gc, a, ra, 2, &a2)) != POPC_OK ||
        (st = opu_grad_reshape_dims(gc, dy, ry, 2, &dy2)) != POPC_OK)
        return st;
    in[0] = dy2;
    in[1] = b;
    t = popc_attr_make_int("transB", 1);
    if ((st = opu_grad_node(gc, NULL, "Gemm", in, 2, &t, 1, &da)) != POPC_OK ||
        (st = opu_grad_reshape_dims(gc, da, ai->dims, ai->rank,
                           &gc->input_grads[0])) != POPC_OK)
        return st;
    in[0] = a2;
    in[1] = dy2;
    t = popc_attr_make_int("transA", 1);
    return opu_grad_node(gc, NULL, "Gemm", in, 2, &t, 1, &gc->input_grads[1]);
}

static popc_status matmul_grad(popc_grad_ctx *gc)
{
    const popc_view *ai = &gc->input_info[0], *bi = &gc->input_info[1];
    int a = gc->inputs[0], b = gc->inputs[1], dy = gc->output_grads[0];
    int a1 = ai->rank == 1, b1 = bi->rank == 1;
    int dy2, a2, b2, t, full;
    int64_t row[2], col[2];
    popc_status st;

    mm_shape s;
    mms ser;

    if (dy < 0)
        return POPC_OK;
    if ((st = mm_parse(gc->node_name, ai, bi, &s)) != POPC_OK ||
        (st = mms_parse("MatMul", gc->node_name, gc->attrs, s.M, s.N, s.K,
                           &ser)) !=
            POPC_OK)
        return st;
    /* the folded Gemm form would lose the serialization */
    if (ai->rank > 2 && bi->rank == 2 && ser.mode == MMS_NONE)
        return matmul_grad_folded(gc, ai, bi, a, b, dy);
    if (a1 || b1) {
        if ((st = lift_dy(gc, dy, &gc->output_info[0], a1, b1, &dy2)) !=
            POPC_OK)
            return st;
    } else {
        dy2 = dy;
    }
    /* operands as matrices: A [K] -> [1, K], B [K] -> [K, 1] */
    a2 = a;
    b2 = b;
    if (a1) {
        row[0] = 1;
        row[1] = ai->dims[0];
        if ((st = opu_grad_reshape_dims(gc, a, row, 2, &a2)) != POPC_OK)
            return st;
    }
    if (b1) {
        col[0] = bi->dims[0];
        col[1] = 1;
        if ((st = opu_grad_reshape_dims(gc, b, col, 2, &b2)) != POPC_OK)
            return st;
    }
    /* dA = dY2 @ B2^T, summed over broadcast batch dims */
    if ((st = transpose_last(gc, b2, b1 ? 2 : bi->rank, &t)) != POPC_OK ||
        (st = matmul2(gc, &ser, 0, dy2, t, &full)) != POPC_OK)
        return st;
    if (a1) {
        row[0] = 1;
        row[1] = ai->dims[0];
        if ((st = opu_grad_sum_to_dims(gc, full, row, 2, &full)) != POPC_OK ||
            (st = opu_grad_reshape_dims(gc, full, ai->dims, 1, &gc->input_grads[0])) !=
                POPC_OK)
            return st;
    } else if ((st = opu_grad_sum_to_dims(gc, full, ai->dims, ai->rank,
                                 &gc->input_grads[0])) != POPC_OK) {
        return st;
    }
    /* dB = A2^T @ dY2 */
    if ((st = transpose_last(gc, a2, a1 ? 2 : ai->rank, &t)) != POPC_OK ||
        (st = matmul2(gc, &ser, 1, t, dy2, &full)) != POPC_OK)
        return st;
    if (b1) {
        col[0] = bi->dims[0];
        col[1] = 1;
        if ((st = opu_grad_sum_to_dims(gc, full, col, 2, &full)) != POPC_OK ||
            (st = opu_grad_reshape_dims(gc, full, bi->dims, 1, &gc->input_grads[1])) !=
                POPC_OK)
            return st;
    } else if ((st = opu_grad_sum_to_dims(gc, full, bi->dims, bi->rank,
                                 &gc->input_grads[1])) != POPC_OK) {
        return st;
    }
    return POPC_OK;
}

/* ---- Gemm ---------------------------------------------------------------- */

typedef struct gemm_p {
    int ta, tb;
    float alpha, beta;
    int64_t M, N, K;
    int has_c;
    int64_t cm, cn; /* C's dims as [cm, cn] after broadcasting rules */
} gemm_p;

static popc_status gemm_parse(const char *node, const popc_view *in, int n_in,
                              const popc_attrs *attrs, gemm_p *p)
{
    const popc_view *a = &in[0], *b = &in[1];
    char sa[OPU_DIMS_LEN], sb[OPU_DIMS_LEN];
    int64_t ka, kb;

    memset(p, 0, sizeof *p);
    p->ta = popc_attr_int(attrs, "transA", 0) != 0;
    p->tb = popc_attr_int(attrs, "transB", 0) != 0;
    p->alpha = (float)popc_attr_float(attrs, "alpha", 1.0);
    p->beta = (float)popc_attr_float(attrs, "beta", 1.0);
    if (a->rank != 2 || b->rank != 2)
        return opu_error(POPC_EINVAL, "Gemm", node, "A %s and B %s must both "
                         "be matrices (rank 2); use MatMul for other ranks",
                         opu_dims(a, sa), opu_dims(b, sb));
    p->M = p->ta ? a->dims[1] : a->dims[0];
    ka = p->ta ? a->dims[0] : a->dims[1];
    kb = p->tb ? b->dims[1] : b->dims[0];
    p->N = p->tb ? b->dims[0] : b->dims[1];
    if (ka != kb)
        return opu_error(POPC_EINVAL, "Gemm", node, "A %s (transA %d) gives "
                         "K = %lld but B %s (transB %d) gives K = %lld; the "
                         "inner dimensions must agree", opu_dims(a, sa), p->ta,
                         (long long)ka, opu_dims(b, sb), p->tb, (long long)kb);
    p->K = ka;
    if (p->M > INT_MAX || p->N > INT_MAX || p->K > INT_MAX)
        return opu_error(POPC_EUNSUPPORTED, "Gemm", node, "a dimension is "
                         "above %d, too large for BLAS", INT_MAX);
    p->has_c = opu_present_at(in, n_in, 2);
    if (p->has_c) {
        const popc_view *c = &in[2];
        int ok = c->rank <= 2;

        p->cm = c->rank == 2 ? c->dims[0] : 1;
        p->cn = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
        ok = ok && (p->cm == 1 || p->cm == p->M) &&
             (p->cn == 1 || p->cn == p->N);
        if (!ok)
            return opu_error(POPC_EINVAL, "Gemm", node, "C %s does not "
                             "broadcast to the result [%lld, %lld]",
                             opu_dims(c, sa), (long long)p->M,
                             (long long)p->N);
    }
    return POPC_OK;
}

static popc_status gemm_infer(popc_infer_ctx *ic)
{
    gemm_p p;
    mms ser;
    int64_t d[2];
    popc_status st;

    if ((st = opu_want_f32(ic, "Gemm", 0, "input A")) != POPC_OK ||
        (st = opu_want_f32(ic, "Gemm", 1, "input B")) != POPC_OK)
        return st;
    if (opu_present_at(ic->inputs, ic->n_inputs, 2) &&
        (st = opu_want_f32(ic, "Gemm", 2, "input C")) != POPC_OK)
        return st;
    if ((st = gemm_parse(ic->node_name, ic->inputs, ic->n_inputs, ic->attrs,
                         &p)) != POPC_OK ||
        (st = mms_parse("Gemm", ic->node_name, ic->attrs, p.M, p.N, p.K,
                        &ser)) != POPC_OK)
        return st;
    d[0] = p.M;
    d[1] = p.N;
    opu_set(&ic->outputs[0], POPC_DTYPE_F32, d, 2);
    return POPC_OK;
}

/* Rows [r0, r1) and columns [c0, c1) of Y = beta * C, C broadcast. */
static void beta_c(const gemm_p *p, const float *Cin, float *Y, int64_t r0,
                   int64_t r1, int64_t c0, int64_t c1)
{
    for (int64_t i = r0; i < r1; i++) {
        const float *crow = Cin + (p->cm == 1 ? 0 : i * p->cn);
        float *yrow = Y + i * p->N;

        if (p->cn == 1)
            for (int64_t j = c0; j < c1; j++)
                yrow[j] = p->beta * crow[0];
        else
            for (int64_t j = c0; j < c1; j++)
                yrow[j] = p->beta * crow[j];
    }
}

/* A Gemm serialized over its reducing dimension: blocks of rows summed
** over the slices of K, then alpha * sum + beta * C. */
static popc_status gemm_reduce_serialized(const popc_kernel_ctx *kc,
                                          const gemm_p *p, const mms *ser,
                                          const float *Cin)
{
    const float *A = kc->inputs[0].data, *B = kc->inputs[1].data;
    float *Y = kc->outputs[0].data;
    int64_t blocks = (p->M + SERIAL_ROWS - 1) / SERIAL_ROWS, lo, hi;
    int64_t lda = p->ta ? p->M : p->K, ldb = p->tb ? p->K : p->N;
    popc_status st = POPC_OK;

    opu_range(blocks, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t u = lo; u < hi && st == POPC_OK; u++) {
        int64_t r0 = u * SERIAL_ROWS;
        int64_t rows = p->M - r0 < SERIAL_ROWS ? p->M - r0 : SERIAL_ROWS;

        st = mms_reduce_rows(kc, ser, p->ta, p->tb,
                             p->ta ? A + r0 : A + r0 * lda, lda, B, ldb,
                             Y + r0 * p->N, rows, p->N, p->K);
        for (int64_t i = r0; st == POPC_OK && i < r0 + rows; i++) {
            const float *crow = Cin ? Cin + (p->cm == 1 ? 0 : i * p->cn)
                                    : NULL;
            float *yrow = Y + i * p->N;

            for (int64_t j = 0; j < p->N; j++)
                yrow[j] = p->alpha * yrow[j] +
                          (crow ? p->beta * crow[p->cn == 1 ? 0 : j] : 0.0f);
        }
    }
    return st;
}

static popc_status gemm_forward(const popc_kernel_ctx *kc)
{
    const float *A = kc->inputs[0].data, *B = kc->inputs[1].data;
    const float *Cin = NULL;
    float *Y = kc->outputs[0].data;
    mms ser;
    gemm_p p;
    nn_tiles t;
    int64_t lo, hi;
    float beta = 0.0f;
    popc_status st;

    if ((st = gemm_parse(kc->node_name, kc->inputs, kc->n_inputs, kc->attrs,
                         &p)) != POPC_OK ||
        (st = mms_parse("Gemm", kc->node_name, kc->attrs, p.M, p.N, p.K,
                        &ser)) != POPC_OK)
        return st;
    if (p.has_c && p.beta != 0.0f) {
        Cin = kc->inputs[2].data;
        beta = 1.0f;
    }
    if (ser.mode == MMS_REDUCING_DIM && ser.factor > 1)
        return gemm_reduce_serialized(kc, &p, &ser, Cin);
    if (nn_half_partials(kc)) {
        /* parts take columns when B is transposed, so that each packs
        ** only its own columns of op(B) */
        int64_t r0 = 0, r1 = p.M, c0 = 0, c1 = p.N;

        if (p.tb)
            opu_range(p.N, kc->part, kc->n_parts, &c0, &c1);
        else
            opu_range(p.M, kc->part, kc->n_parts, &r0, &r1);
        if (Cin)
            beta_c(&p, Cin, Y, r0, r1, c0, c1);
        return nn_gemm_half(kc, p.ta, p.tb, p.K, p.alpha, A,
                            p.ta ? p.M : p.K, B, p.tb ? p.K : p.N, beta, Y,
                            p.N, r0, r1, c0, c1);
    }
    nn_tiles_plan(1, p.M, p.N, p.K, TILE_TARGET, 64, NN_TILE_AUTO, &t);
    opu_range(t.n, kc->part, kc->n_parts, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        if (Cin) {
            /* beta * C broadcast into this tile, then accumulate */
            int64_t r0, r1, c0, c1;

            nn_tile_bounds(&t, u, p.M, p.N, &r0, &r1, &c0, &c1);
            beta_c(&p, Cin, Y, r0, r1, c0, c1);
        }
        nn_sgemm_tile(&t, u, p.ta, p.tb, p.M, p.N, p.K, p.alpha, A,
                      p.ta ? p.M : p.K, B, p.tb ? p.K : p.N, beta, Y, p.N);
    }
    return POPC_OK;
}

static popc_status gemm_cost(const popc_infer_ctx *ic, popc_cost *c)
{
    gemm_p p;
    mms ser;
    popc_status st;

    if ((st = gemm_parse(ic->node_name, ic->inputs, ic->n_inputs, ic->attrs,
                         &p)) != POPC_OK)
        return st;
    c->flops = 2.0 * (double)p.M * (double)p.N * (double)p.K +
               (p.has_c ? 2.0 * (double)p.M * (double)p.N : 0.0);
    c->bytes = 4.0 * ((double)p.M * (double)p.K + (double)p.K * (double)p.N +
                      (p.has_c ? (double)(p.cm * p.cn) : 0.0) +
                      (double)p.M * (double)p.N);
    if ((st = mms_parse("Gemm", ic->node_name, ic->attrs, p.M, p.N, p.K,
                        &ser)) != POPC_OK)
        return st;
    c->temp_bytes = mms_temp_bytes(&ser, (double)p.M * (double)p.K,
                                   (double)p.K * (double)p.N,
                                   (double)p.M * (double)p.N);
    return POPC_OK;
}

/* alpha op(x) op(y) for the gradient of a Gemm serialized as ser, whose
** forward dims play `roles` in it (matmul_serial.h). */
static popc_status gemm_node(popc_grad_ctx *gc, const mms *ser,
                             const mms_mode roles[3], int x, int y,
                             double alpha, int ta, int tb, int *out)
{
    int in[2] = {x, y}, n;
    popc_attr a[6];

    a[0] = popc_attr_make_float("alpha", alpha);
    a[1] = popc_attr_make_int("transA", ta);
    a[2] = popc_attr_make_int("transB", tb);
    mms_grad_attrs(ser, roles, a + 3, &n);
    return opu_grad_node(gc, NULL, "Gemm", in, 2, a, 3 + n, out);
}

/* Y = alpha op(A) op(B) + beta C. With G = dY:
**   dA = alpha G op(B)^T (transposed back when transA),
**   dB = alpha op(A)^T G (transposed back when transB),
**   dC = beta * G summed down to C's shape.
** When C is a bias (the same for every row), dB and dC are one
** popc::GemmGradWeightBias node (matmul_grad.c). */
static popc_status gemm_grad(popc_grad_ctx *gc)
{
    int a = gc->inputs[0], b = gc->inputs[1], g = gc->output_grads[0];
    int ta = popc_attr_int(gc->attrs, "transA", 0) != 0;
    int tb = popc_attr_int(gc->attrs, "transB", 0) != 0;
    double alpha = popc_attr_float(gc->attrs, "alpha", 1.0);
    double beta = popc_attr_float(gc->attrs, "beta", 1.0);
    mms_mode ra[3], rb[3];
    gemm_p p;
    mms ser;
    popc_status st;
    int sum, fused = 0;

    if (g < 0)
        return POPC_OK;
    if ((st = gemm_parse(gc->node_name, gc->input_info, gc->n_inputs,
                         gc->attrs, &p)) != POPC_OK ||
        (st = mms_parse("Gemm", gc->node_name, gc->attrs, p.M, p.N, p.K,
                        &ser)) != POPC_OK)
        return st;
    mms_roles_da(ta, ra);
    mms_roles_db(tb, rb);
    if (!ta)
        st = gemm_node(gc, &ser, ra, g, b, alpha, 0, !tb,
                       &gc->input_grads[0]);
    else
        st = gemm_node(gc, &ser, ra, b, g, alpha, tb, 1,
                       &gc->input_grads[0]);
    if (st != POPC_OK)
        return st;
    /* dB and dC from one read of G (matmul_grad.c) when C is a bias */
    if (ser.mode == MMS_NONE &&
        (st = nn_gemm_grad_weight_bias(gc, ta, tb, alpha, beta, &fused)) !=
            POPC_OK)
        return st;
    if (fused)
        return POPC_OK;
    if (!tb)
        st = gemm_node(gc, &ser, rb, a, g, alpha, !ta, 0,
                       &gc->input_grads[1]);
    else
        st = gemm_node(gc, &ser, rb, g, a, alpha, 1, ta,
                       &gc->input_grads[1]);
    if (st != POPC_OK)
        return st;
    if (gc->n_inputs > 2 && gc->inputs[2] >= 0 &&
        gc->input_info[2].dtype != POPC_DTYPE_UNDEFINED) {
        const popc_view *ci = &gc->input_info[2];

        if ((st = opu_grad_sum_to_dims(gc, g, ci->dims, ci->rank, &sum)) != POPC_OK ||
            (st = opu_grad_scale(gc, sum, beta, &gc->input_grads[2])) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

static const popc_op_def matmul_ops[] = {
    {
        .size = sizeof(popc_op_def),
        .domain = "ai.onnx",
        .name = "MatMul",
        .since_version = 13,
        .min_inputs = 2,
        .max_inputs = 2,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = matmul_infer,
        .forward = matmul_forward,
        .grad = matmul_grad,
        .cost = matmul_cost,
        .doc = "numpy matmul (batched, broadcast, 1-D operands) on sgemm",
    },
    {
        .size = sizeof(popc_op_def),
        .domain = "ai.onnx",
        .name = "Gemm",
        .since_version = 13,
        .min_inputs = 2,
        .max_inputs = 3,
        .min_outputs = 1,
        .max_outputs = 1,
        .flags = POPC_OP_SPLIT,
        .infer = gemm_infer,
        .forward = gemm_forward,
        .grad = gemm_grad,
        .cost = gemm_cost,
        .doc = "alpha * op(A) op(B) + beta * C on sgemm",
    },
};

popc_status nn_register_matmul(const popc_host *h, popc_registrar *r)
{
    return opu_register_ops(h, r, matmul_ops,
                            (int)(sizeof matmul_ops / sizeof matmul_ops[0]));
}
