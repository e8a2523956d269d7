/* profile_files.h - what the tests that read enableProfiling's files
** share: a temporary directory, its removal, and profile.json parsed.
** Failures are Check assertions. */
#ifndef POPC_TESTS_PROFILE_FILES_H
#define POPC_TESTS_PROFILE_FILES_H

#include <stddef.h>

#include "tests/minijson.h"

/* A new directory under /tmp (free() the name). */
char *pf_temp_dir(void);
/* rm -r dir. */
void pf_remove_dir(const char *dir);
/* dir/name (free() it). */
char *pf_sub_dir(const char *dir, const char *name);
/* The whole file dir/name, NUL-terminated; *len its size (free() it). */
char *pf_slurp(const char *dir, const char *name, size_t *len);
/* dir/profile.json parsed; its top-level keys are unique (mj_free it). */
mj_value *pf_read_profile(const char *dir);

struct popc_graph;
struct popc_tensor;
/* The IPU model's profile of one inference run of g on the inputs (at most
** 8 outputs, freed here), parsed (mj_free it); the files are removed. */
mj_value *pf_inference_report(struct popc_graph *g,
                              struct popc_tensor *const *inputs, int n_inputs,
                              int n_outputs);
/* The same at optimizationLevel level (-1: the default). */
mj_value *pf_inference_report_at(struct popc_graph *g,
                                 struct popc_tensor *const *inputs,
                                 int n_inputs, int n_outputs, int level);

#endif /* POPC_TESTS_PROFILE_FILES_H */
