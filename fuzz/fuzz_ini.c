/* fuzz_ini.c - INI run files: load and validate, then build the model
** graph as `popc train` would (plugins from POPC_PLUGIN_PATH). */
#include "fuzz/fuzz_util.h"
#include "popc/popc.h"
#include "popc/run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    popc_run *r = NULL;
    const char *p = fuzz_file(data, size, ".ini");

    popc_log_set_level(POPC_LOG_OFF);
    if (p && popc_run_load(p, NULL, 0, &r) == POPC_OK) {
        popc_graph *g = NULL;

        if (popc_run_build_graph(r, 1, 2, &g) == POPC_OK)
            popc_graph_free(g);
        popc_run_free(r);
    }
    fuzz_file_close();
    return 0;
}
