/* run_options_ini.c - the [options] section of an INI file
** (popc_options_load_ini): PopTorch's options in INI form, read here next
** to the INI reader (run_config.c) and applied through the core's option
** table (core/layer/options_table.h).
**
** Keys are option names as `popc options` lists them (PopTorch's dotted
** names, case-sensitive), values their text ("4", "true", "Sum",
** "OutputMode.Sum", "None"). Other sections belong to other readers and
** are ignored here. An INI section is a set, not a sequence: values are
** applied in the table's order (replicationFactor before
** inputReplicaGrouping.size, shortcuts such as useOfflineIpuTarget before
** the options they imply), so the order of the lines does not matter.
** Every key is checked before anything is applied, the values are applied
** to a copy, and the options change only if the whole section is valid.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "popc/options.h"
#include "core/layer/alloc.h"
#include "core/layer/options_table.h"
#include "optfmt/optfmt.h"
#include "run/run_config_priv.h"

#define SECTION "options"

popc_status popc_options_load_ini(popc_options *o, const char *path)
{
    popci_config *c = NULL;
    popc_options *work = NULL;
    int *line_of = NULL;       /* per table entry: line of its key, or 0 */
    const char **key_of = NULL;
    const char *sec = SECTION;
    popc_status st;
    int n;

    if ((st = popci_options_loadable(o, "popc_options_load_ini", path)) !=
        POPC_OK)
        return st;
    if ((st = popci_config_open(path, &c)) != POPC_OK)
        return st;
    n = popci_config_n_keys(c, SECTION);
    if (n == 0)
        goto done;
    for (int i = 0; i < popci_config_n_sections(c); i++)
        if (strcasecmp(popci_config_section(c, i), SECTION) == 0)
            sec = popci_config_section(c, i);
    line_of = popci_calloc((size_t)popci_option_count, sizeof *line_of);
    key_of = popci_calloc((size_t)popci_option_count, sizeof *key_of);
    if (!line_of || !key_of) {
        st = popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    /* names first, in file order, so the first bad line is reported */
    for (int i = 0; i < n; i++) {
        const char *key = popci_config_key(c, SECTION, i);
        int line = popci_config_key_line(c, SECTION, key);
        int idx = popci_options_index(key);

        if (idx < 0) {
            popci_options_unknown(key);
            st = popc_set_error(POPC_ENOTFOUND, "%s:%d: [%s] %s", path, line,
                                sec, popc_last_error());
            goto done;
        }
        if (line_of[idx]) {
            st = popc_set_error(POPC_ECONFIG, "%s:%d: [%s] %s sets the same "
                                "option as %s on line %d", path, line, sec,
                                key, key_of[idx], line_of[idx]);
            goto done;
        }
        line_of[idx] = line;
        key_of[idx] = key;
    }
    if ((st = popc_options_clone(o, &work)) != POPC_OK)
        goto done;
    for (int idx = 0; idx < popci_option_count; idx++) {
        const char *text;
        popci_optval v;

        if (!line_of[idx])
            continue;
        popci_config_get_string(c, SECTION, key_of[idx], NULL, &text);
        st = popci_options_parse(&popci_option_table[idx], text, &v);
        if (st == POPC_OK)
            st = popci_options_commit(work, idx, &v);
        if (st != POPC_OK) {
            const char *raw = popci_config_raw(c, SECTION, key_of[idx]);
            int hint = raw && (strchr(raw, ';') || strchr(raw, '#')) &&
                       st == POPC_EINVAL;

            st = popc_set_error(st, "%s:%d: [%s] %s%s", path, line_of[idx],
                                sec, popc_last_error(),
                                hint ? " (comments must be on their own "
                                       "line: a trailing '; ...' is part of "
                                       "the value)" : "");
            goto done;
        }
    }
    popci_options_move(o, work);
done:
    free(line_of);
    free(key_of);
    popc_options_free(work);
    popci_config_free(c);
    return st;
}
