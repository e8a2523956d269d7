/* fuzz_exe.c - exported executables: describe (every section checked),
** then load as popc_load does (which compiles it). */
#include <stdlib.h>

#include "fuzz/fuzz_util.h"
#include "popc/popc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = NULL;
    const char *p = fuzz_file(data, size, ".popc");

    popc_log_set_level(POPC_LOG_OFF);
    if (p && popc_executable_describe(p, &text) == POPC_OK) {
        popc_model *m = NULL;

        free(text);
        if (popc_load(p, NULL, &m) == POPC_OK)
            popc_model_free(m);
    }
    fuzz_file_close();
    return 0;
}
