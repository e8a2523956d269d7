/* op_expect.c - see op_expect.h. */
#include "config.h"

#include <math.h>

#include "tests/harness/op_expect.h"
#include "tests/harness/op_harness.h"

popc_tensor *expect_tensor(popc_dtype dt, const int64_t *dims, int rank,
                           const void *data)
{
    popc_tensor *t = NULL;

    ASSERT_OK(popc_tensor_from_data(dt, dims, rank, data, &t));
    return t;
}

popc_tensor *expect_run(const char *domain, const char *op,
                        popc_tensor *const *in, int n_in,
                        const popc_attr *attrs, int n_attrs, int training)
{
    popc_tensor *out = NULL;

    ASSERT_OK(harness_run_op(domain, op, in, n_in, attrs, n_attrs, &out, 1,
                             training));
    return out;
}

void expect_error(const char *domain, const char *op, popc_tensor *const *in,
                  int n_in, const popc_attr *attrs, int n_attrs,
                  popc_status want, const char *n1, const char *n2)
{
    popc_tensor *out = NULL;
    popc_status st = harness_run_op(domain, op, in, n_in, attrs, n_attrs,
                                    &out, 1, 0);

    ck_assert_msg(st == want, "%s: expected %s, got %s (%s)", op,
                  popc_status_name(want), popc_status_name(st),
                  popc_last_error());
    ck_assert_ptr_null(out);
    if (n1)
        ASSERT_HAS(popc_last_error(), n1);
    if (n2)
        ASSERT_HAS(popc_last_error(), n2);
}

void expect_close(const popc_tensor *got, const popc_tensor *want,
                  double atol, double rtol)
{
    const float *g, *w;

    ck_assert_int_eq(popc_tensor_dtype(got), POPC_DTYPE_F32);
    ck_assert_int_eq(popc_tensor_dtype(want), POPC_DTYPE_F32);
    ck_assert_int_eq(popc_tensor_rank(got), popc_tensor_rank(want));
    for (int d = 0; d < popc_tensor_rank(got); d++)
        ck_assert_int_eq(popc_tensor_dims(got)[d], popc_tensor_dims(want)[d]);
    g = popc_tensor_cdata(got);
    w = popc_tensor_cdata(want);
    for (int64_t i = 0; i < popc_tensor_numel(got); i++)
        ck_assert_msg(fabs((double)g[i] - w[i]) <= atol + rtol * fabs(w[i]),
                      "element %lld: got %.9g, want %.9g", (long long)i,
                      g[i], w[i]);
}
