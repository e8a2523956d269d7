/* npy_close.c - compare two .npy files for the ONNX CLI tests.
**
** Usage: npy_close GOT.npy WANT.npy TOLERANCE
** Exit 0 when dtype and shape agree and every element is within
** TOLERANCE (absolute; other dtypes than float32 must be equal bit for
** bit), 1 otherwise, 2 on a bad argument or file; prints the largest
** difference either way. Files keep their dtype (float64 included).
*/
#include <stdio.h>
#include <stdlib.h>

#include "popc/popc.h"

int main(int argc, char **argv)
{
    popc_tensor *a = NULL, *b = NULL;
    double tol, diff;
    int rc;

    if (argc != 4) {
        fprintf(stderr, "usage: npy_close GOT.npy WANT.npy TOLERANCE\n");
        return 2;
    }
    tol = atof(argv[3]);
    if (popc_npy_load_exact(argv[1], &a) != POPC_OK ||
        popc_npy_load_exact(argv[2], &b) != POPC_OK) {
        fprintf(stderr, "npy_close: %s\n", popc_last_error());
        popc_tensor_free(a);
        return 2;
    }
    if (popc_tensor_dtype(a) != popc_tensor_dtype(b)) {
        printf("dtype %s, expected %s\n",
               popc_dtype_name(popc_tensor_dtype(a)),
               popc_dtype_name(popc_tensor_dtype(b)));
        rc = 1;
    } else if (popc_tensor_dtype(a) != POPC_DTYPE_F32) {
        rc = !popc_tensor_equal(a, b);
        printf("%s %s\n", popc_dtype_name(popc_tensor_dtype(a)),
               rc ? "values or shape differ" : "equal");
    } else {
        diff = popc_tensor_max_abs_diff(a, b);
        printf("max abs diff %.3g (tolerance %.3g)\n", diff, tol);
        rc = diff >= 0 && diff <= tol ? 0 : 1;
    }
    popc_tensor_free(a);
    popc_tensor_free(b);
    return rc;
}
