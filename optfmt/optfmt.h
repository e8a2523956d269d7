/* optfmt.h - what the option front-ends layer gives the layers above it
** and lib/: the JSON form the core applies POPC_DEFAULT_OPTIONS with, and
** the UTF-8 check every reader of text files runs first (the loadFromFile
** reader here, the INI reader in run/).
**
** optfmt/ parses the text forms of PopTorch's options into calls of the
** core's option table: PopTorch's loadFromFile files (options_file.c,
** popc_options_load_file), JSON objects (options_json.c,
** popc_options_load_json and POPC_DEFAULT_OPTIONS) and the method calls
** both are made of (options_call.c). INI [options] sections are read in
** run/, next to the INI reader they need.
*/
#ifndef POPC_OPTFMT_H
#define POPC_OPTFMT_H

#include <stddef.h>
#include "popc/options.h"

/* Parse a JSON object of "dotted.name": value and apply each entry as
** PopTorch's method call (a list value is splatted as positional
** arguments). what names the source in messages ("POPC_DEFAULT_OPTIONS").
** o changes only when every entry applies. The function lib/layers.c
** hands the core as popci_layer_options_json. */
popc_status popci_options_apply_json(popc_options *o, const char *what,
                                     const char *json);

/* POPC_ECONFIG "<name>:<line>: invalid UTF-8 ..." at the first byte that
** is not valid UTF-8 in text[0..len), else POPC_OK; text starts on line
** first_line of the file. */
popc_status popci_check_utf8(const char *name, int first_line,
                             const char *text, size_t len);

#endif /* POPC_OPTFMT_H */
