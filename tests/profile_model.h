/* profile_model.h - the model the profile tests run: an MLP on 784
** features (fc1 784 -> hidden, ReLU, fc2 hidden -> 10), on one IPU or with
** fc2 (and the loss) on a second IPU. Inference: input "x" [B, 784], output
** the logits. Training: inputs "x" and "labels" [B] (int32), output the
** cross-entropy loss. */
#ifndef POPC_TESTS_PROFILE_MODEL_H
#define POPC_TESTS_PROFILE_MODEL_H

#include <stdint.h>
#include "popc/popc.h"

/* NULL on failure (popc_last_error() says why). */
popc_graph *profile_mlp(int64_t batch, int64_t hidden, int two_ipus,
                        int training);
/* Deterministic inputs for `rows` rows (the combined batch): in[0] = x,
** in[1] = labels when training. Returns the input count, 0 on failure. */
int profile_inputs(int64_t rows, int training, popc_tensor **in);

#endif /* POPC_TESTS_PROFILE_MODEL_H */
