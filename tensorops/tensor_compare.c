/* tensor_compare.c - popc_tensor_equal and popc_tensor_max_abs_diff
** (popc/tensor.h): how programs and tests compare results, built on the
** core's public tensor API; the core never compares two tensors.
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "popc/tensor.h"

static int same_shape(const popc_tensor *a, const popc_tensor *b)
{
    if (popc_tensor_dtype(a) != popc_tensor_dtype(b) ||
        popc_tensor_rank(a) != popc_tensor_rank(b))
        return 0;
    for (int i = 0; i < popc_tensor_rank(a); i++)
        if (popc_tensor_dims(a)[i] != popc_tensor_dims(b)[i])
            return 0;
    return 1;
}

int popc_tensor_equal(const popc_tensor *a, const popc_tensor *b)
{
    if (!a || !b)
        return a == b;
    return same_shape(a, b) &&
           memcmp(popc_tensor_cdata(a), popc_tensor_cdata(b),
                  popc_tensor_nbytes(a)) == 0;
}

/* A NaN on one side only counts as an infinite difference, so a test that
** compares against a threshold fails; NaN against NaN counts as equal. */
double popc_tensor_max_abs_diff(const popc_tensor *a, const popc_tensor *b)
{
    const float *x, *y;
    int64_t n;
    double worst = 0.0;

    if (!a || !b || popc_tensor_dtype(a) != POPC_DTYPE_F32 ||
        !same_shape(a, b))
        return -1.0;
    x = popc_tensor_cdata(a);
    y = popc_tensor_cdata(b);
    n = popc_tensor_numel(a);
    for (int64_t i = 0; i < n; i++) {
        double d;
        if (isnan(x[i]) || isnan(y[i])) {
            if (isnan(x[i]) != isnan(y[i]))
                return INFINITY;
            continue;
        }
        if (x[i] == y[i])
            continue; /* also covers inf == inf */
        d = fabs((double)x[i] - (double)y[i]);
        if (d > worst)
            worst = d;
    }
    return worst;
}
