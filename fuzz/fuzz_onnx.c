/* fuzz_onnx.c - ONNX models (import, and export of what imports) and
** TensorProto files; the first byte picks. */
#include <stdlib.h>

#include "fuzz/fuzz_util.h"
#include "popc/onnx.h"
#include "popc/popc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p;

    if (size < 1)
        return 0;
    popc_log_set_level(POPC_LOG_OFF);
    if (data[0] & 1) {
        popc_tensor *t = NULL;
        char *name = NULL;

        if ((p = fuzz_file(data + 1, size - 1, ".pb")) &&
            popc_onnx_read_tensor(p, &t, &name) == POPC_OK) {
            popc_tensor_free(t);
            free(name);
        }
    } else {
        popc_graph *g = NULL;

        if (popc_onnx_import_bytes(data + 1, size - 1, "fuzz.onnx", NULL,
                                   NULL, &g) == POPC_OK)
            popc_graph_free(g);
    }
    fuzz_file_close();
    return 0;
}
