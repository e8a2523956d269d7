/* fuzz_options.c - options in the three syntaxes: a PopTorch options
** file, an INI [options] section and JSON (the first byte picks). */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "popc/popc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    popc_options *o = NULL;
    popc_status st = POPC_OK; /* any outcome is fine; crashes are not */
    const char *p;

    if (size < 1 || popc_options_new(&o) != POPC_OK)
        return 0;
    popc_log_set_level(POPC_LOG_OFF);
    switch (data[0] % 3) {
    case 0:
        if ((p = fuzz_file(data + 1, size - 1, ".txt")))
            st = popc_options_load_file(o, p);
        break;
    case 1:
        if ((p = fuzz_file(data + 1, size - 1, ".ini")))
            st = popc_options_load_ini(o, p);
        break;
    default: {
        char *s = malloc(size);

        if (s) {
            memcpy(s, data + 1, size - 1);
            s[size - 1] = '\0';
            st = popc_options_load_json(o, s);
            free(s);
        }
    }
    }
    (void)st;
    fuzz_file_close();
    popc_options_free(o);
    return 0;
}
