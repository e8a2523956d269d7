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

/* The harness entry point (libFuzzer's name). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* POPC_FUZZ_UTIL_H */
