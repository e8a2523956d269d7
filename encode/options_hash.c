/* options_hash.c - popc_options_hash (popc/options.h): the options' part
** of what identifies a compile, beside the rest of the compile key
** (compile_key.c) and the run files' (run/run_ini.c). The core never
** hashes options; the table's compile-affecting flag comes from
** core/layer/options_table.h, each value's text from popc_options_format.
*/
#include "config.h"

#include <stdint.h>

#include "popc/options.h"
#include "core/layer/options_table.h"

/* FNV-1a over "name=value;" of every option marked compile-affecting, in
** table order. Stable across runs and processes. */
uint64_t popc_options_hash(const popc_options *o)
{
    uint64_t h = 14695981039346656037ull;
    char text[1024];

    if (!o)
        return 0;
    for (int i = 0; i < popci_option_count; i++) {
        const popci_optdef *d = &popci_option_table[i];
        const char *parts[3];

        if (!(d->flags & POPCI_OPT_COMPILE))
            continue;
        parts[0] = d->info.name;
        parts[1] = popc_options_format(o, d->info.name, text, sizeof text);
        parts[2] = ";";
        for (int k = 0; k < 3; k++) {
            for (const unsigned char *p = (const unsigned char *)parts[k]; *p;
                 p++) {
                h ^= *p;
                h *= 1099511628211ull;
            }
            if (k == 0) {
                h ^= '=';
                h *= 1099511628211ull;
            }
        }
    }
    return h;
}
