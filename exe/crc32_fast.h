/* crc32_fast.h - the CRC-32 of executables (zlib's crc32: the reflected
** polynomial 0xEDB88320, inverted before and after), fast on large buffers.
** Private to libpopc. */
#ifndef POPC_EXE_CRC32_FAST_H
#define POPC_EXE_CRC32_FAST_H

#include <stddef.h>
#include <stdint.h>

/* The same value as zlib's crc32(c, p, n) for any n, chained the same way:
** popci_crc32(popci_crc32(c, a, na), b, nb) is the CRC of a followed by b.
** Uses carry-less multiplication (PCLMULQDQ) where the CPU has it, zlib
** elsewhere. */
uint32_t popci_crc32(uint32_t c, const void *p, size_t n);

/* zlib's crc32 over any length: the path popci_crc32 takes without
** PCLMULQDQ (exposed so a test can compare the two on one machine). */
uint32_t popci_crc32_zlib(uint32_t c, const void *p, size_t n);

/* 1 when popci_crc32 folds with PCLMULQDQ on this CPU (buffers of 256
** bytes and more), 0 when it is zlib's crc32 throughout. */
int popci_crc32_folds(void);

#endif
