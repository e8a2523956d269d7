/* fuzz_npy.c - popc_npy_load on arbitrary bytes. */
#include "fuzz/fuzz_util.h"
#include "popc/popc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    popc_tensor *t = NULL;
    const char *p = fuzz_file(data, size, ".npy");

    if (p && popc_npy_load(p, &t) == POPC_OK)
        popc_tensor_free(t);
    fuzz_file_close();
    return 0;
}
