/* config_priv.h - INI files: the one wrapper of libini_config.
**
** Nothing else in popc includes <ini_configobj.h>. A popci_config is an
** immutable snapshot of one parsed file: sections and keys in file order,
** each with its line number, so that every error names "<file>:<line>".
**
** Parsing rules (libini_config with INI_STOP_ON_ANY, INI_MV1S_ERROR,
** INI_MS_ERROR, INI_PARSE_NOWRAP, INI_PARSE_NO_C_COMMENTS):
**  - comments are lines starting with '#' or ';'. Trailing comments are NOT
**    stripped: "threads = 8 ; note" has the value "8 ; note". Typed getters
**    then fail with a hint to move the comment to its own line; string
**    getters return the text as written (validate strings, never trust them);
**  - a repeated key or a repeated section is an error, as is a key before
**    the first [section] (libini_config would silently drop the first one);
**  - an indented line is a new key, never a continuation of the previous
**    value [P9];
**  - section and key names are matched case-insensitively (libini_config
**    treats "Key" and "key" as the same key); the names returned are
**    spelled as in the file;
**  - a value in double quotes has the quotes removed by the string getter.
**
** Lists of names passed in (allowed keys, enum members) are NULL-terminated.
** Strings returned are borrowed from the popci_config and valid until
** popci_config_free.
*/
#ifndef POPC_CONFIG_PRIV_H
#define POPC_CONFIG_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include "popc/status.h"

typedef struct popci_config popci_config;

/* Read and parse an INI file. *out is NULL on failure. Returns POPC_OK,
** POPC_EIO ("<file>: cannot open: <reason>"), POPC_ECONFIG (the first
** parse error, "<file>: Error (5) on line 3: Equal sign is missing.",
** further errors are logged), POPC_ENOMEM. Free with popci_config_free. */
popc_status popci_config_open(const char *path, popci_config **out);
/* POPC_ECONFIG "<name>:<line>: invalid UTF-8 ..." at the first byte that
** is not valid UTF-8 in text[0..len), else POPC_OK; text starts on line
** first_line of the file. */
popc_status popci_check_utf8(const char *name, int first_line,
                             const char *text, size_t len);
/* The same from text (copied); name is used in messages like a path. */
popc_status popci_config_from_text(const char *name, const char *text,
                                   popci_config **out);
void popci_config_free(popci_config *c); /* NULL-safe */
/* The path or name given at open (borrowed). */
const char *popci_config_path(const popci_config *c);

/* Sections in file order, spelled as in the file. */
int popci_config_n_sections(const popci_config *c);
const char *popci_config_section(const popci_config *c, int i);
int popci_config_has_section(const popci_config *c, const char *section);
/* Line of the "[section]" header; 0 when absent. */
int popci_config_section_line(const popci_config *c, const char *section);

/* Keys of a section in file order (0 / NULL when the section is absent). */
int popci_config_n_keys(const popci_config *c, const char *section);
const char *popci_config_key(const popci_config *c, const char *section,
                             int i);
int popci_config_has_key(const popci_config *c, const char *section,
                         const char *key);
/* Line of the key; 0 when absent. */
int popci_config_key_line(const popci_config *c, const char *section,
                          const char *key);
/* Raw value text as libini_config gives it (trimmed, quotes kept);
** NULL when absent. */
const char *popci_config_raw(const popci_config *c, const char *section,
                             const char *key);

/* Typed getters. An absent key gives *out = def and POPC_OK (use
** popci_config_has_key to tell absent from default). A present but
** malformed or out-of-range value gives POPC_ECONFIG
** "<file>:<line>: [section] key: must be an integer between 1 and 64
** (got 'x')" and leaves *out = def. */
popc_status popci_config_get_int(const popci_config *c, const char *section,
                                 const char *key, int64_t def, int64_t min,
                                 int64_t max, int64_t *out);
popc_status popci_config_get_float(const popci_config *c,
                                   const char *section, const char *key,
                                   double def, double min, double max,
                                   double *out);
/* true/false, yes/no, on/off, 1/0 (any case). */
popc_status popci_config_get_bool(const popci_config *c, const char *section,
                                  const char *key, int def, int *out);
/* Borrowed; def may be NULL. Surrounding double quotes are removed. */
popc_status popci_config_get_string(const popci_config *c,
                                    const char *section, const char *key,
                                    const char *def, const char **out);
/* Index of the value in names (exact spelling); def is returned when the
** key is absent. The error lists the valid names. */
popc_status popci_config_get_enum(const popci_config *c, const char *section,
                                  const char *key,
                                  const char *const *names, int def,
                                  int *out);
/* Integers separated by commas and/or spaces ("1, 28, 28"); at most cap
** of them, each in [min, max]. Absent: *n = 0, POPC_OK. */
popc_status popci_config_get_int_list(const popci_config *c,
                                      const char *section, const char *key,
                                      int64_t min, int64_t max,
                                      int64_t *vals, int cap, int *n);

/* POPC_ECONFIG "<file>:<line>: [section] missing required key 'key'"
** when the key (or its section: "<file>: missing section [section]")
** is absent. */
popc_status popci_config_require(const popci_config *c, const char *section,
                                 const char *key);
/* Every key of the section must be in allowed; otherwise POPC_ECONFIG
** "<file>:<line>: [section] unknown key 'threds'; did you mean 'threads'?
** (valid keys: backend, threads)". An absent section is fine. */
popc_status popci_config_check_keys(const popci_config *c,
                                    const char *section,
                                    const char *const *allowed);
/* Every section must be in allowed (same message style). */
popc_status popci_config_check_sections(const popci_config *c,
                                        const char *const *allowed);

/* The candidate closest to word by edit distance (case-insensitive), or
** NULL when none is close enough to be a plausible typo. n < 0: cands is
** NULL-terminated. */
const char *popci_closest_name(const char *word, const char *const *cands,
                               int n);

#endif /* POPC_CONFIG_PRIV_H */
