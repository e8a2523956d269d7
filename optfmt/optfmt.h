/* optfmt.h - what the option front-ends layer gives the layers above it
** and lib/: the environment's options, which every new popc_options
** takes, and the UTF-8 check every reader of text files runs first (the
** loadFromFile reader here, the INI reader in run/).
**
** optfmt/ parses the text forms of PopTorch's options into calls of the
** core's option table: PopTorch's loadFromFile files (options_file.c,
** popc_options_load_file), JSON objects (options_json.c,
** popc_options_load_json and POPC_DEFAULT_OPTIONS), the method calls both
** are made of (options_call.c) and the environment (options_env.c). INI [options] sections are read in
** run/, next to the INI reader they need.
*/
#ifndef POPC_OPTFMT_H
#define POPC_OPTFMT_H

#include <stddef.h>
#include "popc/options.h"

/* The environment's options applied to new options o (options_env.c):
** the function lib/options_env.c hands the core as popci_layer_options_env. */
popc_status popci_options_apply_environment(popc_options *o);

/* Whether a file loader (who: "popc_options_load_ini") may change o from
** path: POPC_EINVAL for NULL arguments, POPC_ESTATE ("Can't modify frozen
** Options") once a model uses o. */
popc_status popci_options_loadable(const popc_options *o, const char *who,
                                   const char *path);

/* POPC_ECONFIG "<name>:<line>: invalid UTF-8 ..." at the first byte that
** is not valid UTF-8 in text[0..len), else POPC_OK; text starts on line
** first_line of the file. */
popc_status popci_check_utf8(const char *name, int first_line,
                             const char *text, size_t len);

#endif /* POPC_OPTFMT_H */
