/* matmul_serial.c - serialized MatMul: attributes, temporaries, gradient
** attributes and the reducing_dim kernel (matmul_serial.h states the
** rules). */
#include "config.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn/half_partials.h"
#include "ops/nn/matmul_serial.h"
#include "ops/util/oputil.h"

static const char *const mode_names[] = {"none", "input_channels",
                                         "reducing_dim", "output_channels"};

popc_status mms_parse(const char *op, const char *node,
                      const popc_attrs *attrs, int64_t M, int64_t N,
                      int64_t K, mms *s)
{
    const char *mode = popc_attr_string(attrs, "serialization_mode", "none");
    int64_t dim = 0;

    memset(s, 0, sizeof *s);
    s->factor = 1;
    s->float16 = popc_attr_int(attrs, POPC_ATTR_FLOAT16, 0) != 0;
    s->keep_precision = popc_attr_int(attrs, "keep_precision", 0) != 0;
    for (int i = 0; i < 4; i++)
        if (strcmp(mode, mode_names[i]) == 0)
            s->mode = (mms_mode)i;
    if (s->mode == MMS_NONE && strcmp(mode, "none") != 0)
        return opu_error(POPC_EINVAL, op, node, "serialization_mode '%s' is "
                         "unknown; use input_channels, reducing_dim, "
                         "output_channels or none", mode);
    if (s->mode == MMS_NONE)
        return POPC_OK;
    s->factor = popc_attr_int(attrs, POPC_ATTR_SERIAL_FACTOR, 1);
    dim = s->mode == MMS_INPUT_CHANNELS ? M
          : s->mode == MMS_REDUCING_DIM ? K
                                        : N;
    if (s->factor < 1 || dim % s->factor != 0)
        return opu_error(POPC_EINVAL, op, node, "serialization factor %lld "
                         "does not divide the %s dimension (%lld); use a "
                         "divisor of %lld", (long long)s->factor, mode,
                         (long long)dim, (long long)dim);
    return POPC_OK;
}

double mms_temp_bytes(const mms *s, double a_elems, double b_elems,
                      double out_elems)
{
    double es = s->float16 ? 2.0 : 4.0, f = (double)s->factor;

    switch (s->mode) {
    case MMS_INPUT_CHANNELS:
        return es * (a_elems / f + b_elems) + 4.0 * out_elems / f;
    case MMS_REDUCING_DIM:
        return es * (a_elems / f + b_elems / f) + 4.0 * out_elems;
    case MMS_OUTPUT_CHANNELS:
        return es * (a_elems + b_elems / f) + 4.0 * out_elems / f;
    default:
        return es * (a_elems + b_elems) + 4.0 * out_elems;
    }
}

void mms_grad_attrs(const mms *s, const mms_mode roles[3], popc_attr out[3],
                    int *n)
{
    /* the forward dimension each mode splits: M, K, N */
    int dim = s->mode == MMS_INPUT_CHANNELS ? 0
              : s->mode == MMS_OUTPUT_CHANNELS ? 1
                                               : 2;

    *n = 0;
    if (s->mode == MMS_NONE || s->factor < 2)
        return;
    out[(*n)++] = popc_attr_make_string("serialization_mode",
                                   mode_names[roles[dim]]);
    out[(*n)++] = popc_attr_make_int(POPC_ATTR_SERIAL_FACTOR, s->factor);
    out[(*n)++] = popc_attr_make_int("keep_precision", s->keep_precision);
}

void mms_roles_da(int trans_a, mms_mode roles[3])
{
    /* dA = dC op(B)^T: [M, N] x [N, K]; transposed, op(B) dC^T: [K, M] */
    roles[0] = trans_a ? MMS_OUTPUT_CHANNELS : MMS_INPUT_CHANNELS;
    roles[1] = MMS_REDUCING_DIM;
    roles[2] = trans_a ? MMS_INPUT_CHANNELS : MMS_OUTPUT_CHANNELS;
}

void mms_roles_db(int trans_b, mms_mode roles[3])
{
    /* dB = op(A)^T dC: [K, M] x [M, N]; transposed, dC^T op(A): [N, K] */
    roles[0] = MMS_REDUCING_DIM;
    roles[1] = trans_b ? MMS_INPUT_CHANNELS : MMS_OUTPUT_CHANNELS;
    roles[2] = trans_b ? MMS_OUTPUT_CHANNELS : MMS_INPUT_CHANNELS;
}

/* C += P, each product and sum rounded to float16 (half additions). */
static void add_half(float *C, float *P, int64_t n, int first)
{
    nn_round_half_n(P, n);
    if (first) {
        memcpy(C, P, (size_t)n * sizeof *C);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        C[i] += P[i];
    nn_round_half_n(C, n);
}

popc_status mms_reduce_rows(const popc_kernel_ctx *kc, const mms *s,
                            int trans_a, int trans_b, const float *A,
                            int64_t lda, const float *B, int64_t ldb,
                            float *C, int64_t rows, int64_t N, int64_t K)
{
    int64_t kc_len = K / s->factor;
    int half_sums = s->float16 && !s->keep_precision;
    int half_partials = nn_half_partials(kc);
    CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
    CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
    float *P = NULL;
    popc_status st = POPC_OK;

    if (rows <= 0 || N <= 0)
        return POPC_OK;
    if ((half_sums || half_partials) &&
        !(P = malloc((size_t)(rows * N) * sizeof *P)))
        return kc->host->set_error(POPC_ENOMEM, "'%s': out of memory for "
                                   "%lld partial rows", kc->node_name,
                                   (long long)rows);
    for (int64_t c = 0; c < s->factor && st == POPC_OK; c++) {
        /* slice c of K: columns of op(A), rows of op(B) */
        const float *Ac = A + c * kc_len * (trans_a ? lda : 1);
        const float *Bc = B + c * kc_len * (trans_b ? 1 : ldb);

        if (!P) {
            cblas_sgemm(CblasRowMajor, ta, tb, (int)rows, (int)N,
                        (int)kc_len, 1.0f, Ac, (int)lda, Bc, (int)ldb,
                        c ? 1.0f : 0.0f, C, (int)N);
            continue;
        }
        if (half_partials)
            st = nn_gemm_half(kc, trans_a, trans_b, kc_len, 1.0f, Ac, lda, Bc,
                              ldb, 0.0f, P, N, 0, rows, 0, N);
        else
            cblas_sgemm(CblasRowMajor, ta, tb, (int)rows, (int)N,
                        (int)kc_len, 1.0f, Ac, (int)lda, Bc, (int)ldb, 0.0f,
                        P, (int)N);
        if (st != POPC_OK)
            break;
        if (half_sums) {
            add_half(C, P, rows * N, c == 0);
        } else if (c == 0) {
            memcpy(C, P, (size_t)(rows * N) * sizeof *C);
        } else {
            for (int64_t i = 0; i < rows * N; i++)
                C[i] += P[i];
        }
    }
    free(P);
    return st;
}
