/* layer/bytes.h - the 64-bit FNV-1a hash the core keys compiles and
** checksums with, for the layers that must agree with it. */
#ifndef POPC_LAYER_BYTES_H
#define POPC_LAYER_BYTES_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a, 64 bits, continued from h (start with POPCI_FNV_INIT). */
#define POPCI_FNV_INIT 14695981039346656037ull
uint64_t popci_fnv1a(uint64_t h, const void *p, size_t n);

#endif /* POPC_LAYER_BYTES_H */
