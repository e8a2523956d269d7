/* fuzz_weights.c - weights directories: the input's parts become the
** model's .npy files (fuzz_folder), then popc_weights_load reads them. */
#include "fuzz/fuzz_model.h"
#include "fuzz/fuzz_util.h"
#include "popc/run.h"

static const char *const files[] = {
    "fc1.weight.npy", "fc1.bias.npy", "fc2.weight.npy", "fc2.bias.npy",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    popc_model *m = fuzz_training_model();
    const char *dir;

    popc_log_set_level(POPC_LOG_OFF);
    if (m && (dir = fuzz_folder(data, size, files, 4)) &&
        popc_weights_load(m, dir) == POPC_OK) {
        const popc_tensor *w = NULL;

        if (popc_model_get_weight(m, "fc2.bias", &w) != POPC_OK || !w)
            __builtin_trap(); /* a loaded model must keep its weights */
    }
    return 0;
}
