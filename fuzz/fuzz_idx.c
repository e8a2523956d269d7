/* fuzz_idx.c - IDX datasets (plain or gzip, detected from the content):
** the input is the images file, then the same bytes as its labels. */
#include "fuzz/fuzz_util.h"
#include "popc/popc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    popc_dataset *ds = NULL;
    const char *p = fuzz_file(data, size, ".idx");

    if (p && popc_dataset_load_idx(p, NULL, &ds) == POPC_OK)
        popc_dataset_free(ds);
    ds = NULL;
    if (p && popc_dataset_load_idx(p, p, &ds) == POPC_OK)
        popc_dataset_free(ds);
    fuzz_file_close();
    return 0;
}
