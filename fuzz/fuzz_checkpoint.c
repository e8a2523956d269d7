/* fuzz_checkpoint.c - training checkpoints: the input's parts become
** state.ini and the weights/ and optimizer/ .npy files (fuzz_folder),
** then popc_checkpoint_load reads them into an Adam-trained model. */
#include "fuzz/fuzz_model.h"
#include "fuzz/fuzz_util.h"
#include "popc/run.h"

static const char *const files[] = {
    "state.ini",
    "weights/fc1.weight.npy",
    "weights/fc1.bias.npy",
    "weights/fc2.weight.npy",
    "weights/fc2.bias.npy",
    "optimizer/fc1.weight%2Fexp_avg.npy",
    "optimizer/fc1.weight%2Fexp_avg_sq.npy",
    "optimizer/fc1.weight%2Fstep.npy",
    "optimizer/fc1.bias%2Fexp_avg.npy",
    "optimizer/fc1.bias%2Fexp_avg_sq.npy",
    "optimizer/fc1.bias%2Fstep.npy",
    "optimizer/fc2.weight%2Fexp_avg.npy",
    "optimizer/fc2.weight%2Fexp_avg_sq.npy",
    "optimizer/fc2.weight%2Fstep.npy",
    "optimizer/fc2.bias%2Fexp_avg.npy",
    "optimizer/fc2.bias%2Fexp_avg_sq.npy",
    "optimizer/fc2.bias%2Fstep.npy",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    popc_model *m = fuzz_training_model();
    const char *dir;
    int64_t step;

    popc_log_set_level(POPC_LOG_OFF);
    if (m && (dir = fuzz_folder(data, size, files,
                                (int)(sizeof files / sizeof *files))) &&
        popc_checkpoint_load(m, dir, &step) == POPC_OK && step < 0)
        __builtin_trap(); /* the reader must refuse a negative step */
    return 0;
}
