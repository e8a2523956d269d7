/* fuzz_csv.c - CSV datasets with each way of naming the label column. */
#include "fuzz/fuzz_util.h"
#include "popc/popc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const labels[] = {NULL, "label", "first", "last",
                                         "none", "1"};
    const char *p;

    if (size < 1)
        return 0;
    p = fuzz_file(data + 1, size - 1, ".csv");
    if (p) {
        popc_dataset *ds = NULL;

        if (popc_dataset_load_csv(p, labels[data[0] % 6], &ds) == POPC_OK)
            popc_dataset_free(ds);
    }
    fuzz_file_close();
    return 0;
}
