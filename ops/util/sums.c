/* sums.c - see sums.h. Each loop keeps its eight lanes in locals, so
** that they stay in registers. */
#include "config.h"

/* GCC's -O2 vectorizes only loops that need no runtime alias check. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include "ops/util/sums.h"

#define LOAD(acc)                                                          \
    double a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];             \
    double a4 = acc[4], a5 = acc[5], a6 = acc[6], a7 = acc[7]
#define STORE(acc)                                                         \
    do {                                                                   \
        acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;                \
        acc[4] = a4, acc[5] = a5, acc[6] = a6, acc[7] = a7;                \
    } while (0)
/* the eight lanes of one block of eight, E(k) the term of element q + k */
#define BLOCK(E)                                                           \
    do {                                                                   \
        a0 += E(0), a1 += E(1), a2 += E(2), a3 += E(3);                    \
        a4 += E(4), a5 += E(5), a6 += E(6), a7 += E(7);                    \
    } while (0)

void opu_sum8_add(double *acc, const float *r, int64_t n)
{
    int64_t q = 0;
    LOAD(acc);

#define TERM(k) (double)r[q + k]
    for (; q + 8 <= n; q += 8)
        BLOCK(TERM);
#undef TERM
    STORE(acc);
    for (int j = 0; q + j < n; j++)
        acc[j] += (double)r[q + j];
}

void opu_sqdev8_add(double *acc, const float *r, int64_t n, double m)
{
    int64_t q = 0;
    LOAD(acc);

#define TERM(k) (((double)r[q + k] - m) * ((double)r[q + k] - m))
    for (; q + 8 <= n; q += 8)
        BLOCK(TERM);
#undef TERM
    STORE(acc);
    for (int j = 0; q + j < n; j++) {
        double d = (double)r[q + j] - m;

        acc[j] += d * d;
    }
}

void opu_dot8_add(double *acc, const float *a, const float *b, int64_t n,
                 float m)
{
    int64_t q = 0;
    LOAD(acc);

#define TERM(k) ((double)(a[q + k] - m) * (double)b[q + k])
    for (; q + 8 <= n; q += 8)
        BLOCK(TERM);
#undef TERM
    STORE(acc);
    for (int j = 0; q + j < n; j++)
        acc[j] += (double)(a[q + j] - m) * (double)b[q + j];
}

double opu_sum8_total(const double *acc)
{
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
           ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}
