/* fuzz_util.h - the input of a fuzz harness as a file: readers take
** paths, so each input is written to an anonymous in-memory file
** (memfd_create) and read back through /proc/self/fd/N. */
#ifndef POPC_FUZZ_UTIL_H
#define POPC_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* A path holding data[0..size), valid until fuzz_file_close; NULL when no
** memfd could be made. */
const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix);
void fuzz_file_close(void);

/* Readers of directories (weights, checkpoints) take a folder: the input
** is cut at each FUZZ_FOLDER_SEP into parts, part i is written to
** names[i] under a private directory (subdirectories made as needed; a
** name without a part is left absent). Returns that directory, the same
** for the whole process, emptied and refilled on each call; NULL when it
** cannot be made. */
#define FUZZ_FOLDER_SEP "\n%%popc-file%%\n"
const char *fuzz_folder(const uint8_t *data, size_t size,
                        const char *const *names, int n_names);

/* The harness entry point (libFuzzer's name). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* POPC_FUZZ_UTIL_H */
