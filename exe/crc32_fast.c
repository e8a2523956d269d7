/* crc32_fast.c - zlib's CRC-32, folded with carry-less multiplication.
**
** A cache hit checks the CRC of the compiled graph section, which holds the
** model's folded constants (46 MB for ResNet-18): zlib's table-driven crc32
** spends about 20 ms there, the better part of the hit. Folding with
** PCLMULQDQ runs at memory speed and gives the same value, so the file
** format does not change.
**
** The arithmetic, in the bit-reflected order zlib uses (bit 0 of byte 0 is
** the highest power): the CRC of a message M is M(x) * x^32 mod P, after the
** starting value is XORed into the first 4 bytes. A 16-byte block B followed
** by D more bits of message contributes B(x) * x^D, and with B = L x^64 + H
** (L the low 8 bytes, H the high 8) that is congruent to
** L * (x^(64+D) mod P) + H * (x^D mod P): two 64x32-bit carry-less products
** of at most 95 bits, which are XORed into the block D bits on. Four blocks
** (64 bytes) are folded at a time, 512 bits on; the four are then folded
** into one, 128 bits at a time, as is every whole 16-byte block left. The
** final 16 bytes R are congruent to the message folded so far, so zlib's
** crc32 over R (from a zero register) and then over the last n % 16 bytes
** finishes it: no Barrett reduction is needed.
**
** A product of two reflected 64-bit lanes lands one bit lower than the
** block's order; the constants are therefore x^(63+D) and x^(D-1) mod P,
** bit-reversed into the high half of their lane (the reflected degree-d
** coefficient at bit 63 - d), and the product needs no shift. The four
** values below are those for D = 512 and D = 128 (tests/check_crc32
** compares the result with zlib's crc32 on every length to 300 and beyond,
** at every alignment, chained).
*/
#include "config.h"

#include <zlib.h>

#include "exe/crc32_fast.h"

uint32_t popci_crc32_zlib(uint32_t c, const void *p, size_t n)
{
    const unsigned char *b = p;

    /* zlib takes uInt lengths */
    while (n > 0) {
        uInt k = n > 0x40000000u ? 0x40000000u : (uInt)n;
        c = (uint32_t)crc32(c, b, k);
        b += k;
        n -= k;
    }
    return c;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* below this zlib is as fast (and the fold needs four blocks) */
#define FOLD_MIN 256

#define FOLD_TARGET __attribute__((target("sse2,pclmul")))

/* x^575 mod P and x^511 mod P: fold 512 bits on */
#define K512_LO 0x653d982200000000ULL
#define K512_HI 0xcad38e8f00000000ULL
/* x^191 mod P and x^127 mod P: fold 128 bits on */
#define K128_LO 0x65673b4600000000ULL
#define K128_HI 0x9ba54c6f00000000ULL

FOLD_TARGET static inline __m128i fold(__m128i x, __m128i k, __m128i next)
{
    __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
    __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);

    return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

FOLD_TARGET static uint32_t crc32_clmul(uint32_t c, const unsigned char *b,
                                        size_t n)
{
    const __m128i k512 = _mm_set_epi64x((long long)K512_HI,
                                        (long long)K512_LO);
    const __m128i k128 = _mm_set_epi64x((long long)K128_HI,
                                        (long long)K128_LO);
    __m128i a0 = _mm_loadu_si128((const __m128i *)b);
    __m128i a1 = _mm_loadu_si128((const __m128i *)(b + 16));
    __m128i a2 = _mm_loadu_si128((const __m128i *)(b + 32));
    __m128i a3 = _mm_loadu_si128((const __m128i *)(b + 48));
    unsigned char r[16];

    /* zlib's register starts as ~c: that is ~c XORed into the message */
    a0 = _mm_xor_si128(a0, _mm_cvtsi32_si128((int)~c));
    b += 64;
    n -= 64;
    while (n >= 64) {
        a0 = fold(a0, k512, _mm_loadu_si128((const __m128i *)b));
        a1 = fold(a1, k512, _mm_loadu_si128((const __m128i *)(b + 16)));
        a2 = fold(a2, k512, _mm_loadu_si128((const __m128i *)(b + 32)));
        a3 = fold(a3, k512, _mm_loadu_si128((const __m128i *)(b + 48)));
        b += 64;
        n -= 64;
    }
    a1 = fold(a0, k128, a1);
    a2 = fold(a1, k128, a2);
    a0 = fold(a2, k128, a3);
    while (n >= 16) {
        a0 = fold(a0, k128, _mm_loadu_si128((const __m128i *)b));
        b += 16;
        n -= 16;
    }
    _mm_storeu_si128((__m128i *)r, a0);
    /* crc32(0xffffffff, ...) runs from a zero register, as R needs */
    c = (uint32_t)crc32(0xffffffffu, r, 16);
    return (uint32_t)crc32(c, b, (uInt)n);
}

int popci_crc32_folds(void)
{
    /* every thread that races here stores the same answer */
    static int known = -1;
    int k = __atomic_load_n(&known, __ATOMIC_RELAXED);

    if (k < 0) {
        __builtin_cpu_init();
        k = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse2");
        __atomic_store_n(&known, k, __ATOMIC_RELAXED);
    }
    return k;
}

uint32_t popci_crc32(uint32_t c, const void *p, size_t n)
{
    if (n >= FOLD_MIN && popci_crc32_folds())
        return crc32_clmul(c, p, n);
    return popci_crc32_zlib(c, p, n);
}

#else

int popci_crc32_folds(void)
{
    return 0;
}

uint32_t popci_crc32(uint32_t c, const void *p, size_t n)
{
    return popci_crc32_zlib(c, p, n);
}

#endif
