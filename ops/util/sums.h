/* sums.h - float data summed in double with eight running sums ("lanes"):
** element q goes to lane q mod 8, so that the loops vectorize and carry
** no add latency chain, and the lanes are added pairwise at the end. The
** order depends on the length only, so every caller's result depends on
** the shape only. Compiled into the nn and tensor plugins (hidden symbols).
*/
#ifndef POPC_OPS_MATH_SUMS_H
#define POPC_OPS_MATH_SUMS_H

#include <stdint.h>

/* acc[q mod 8] += r[q] for q < n. */
void opu_sum8_add(double *acc, const float *r, int64_t n);

/* acc[q mod 8] += (r[q] - m)^2 for q < n. */
void opu_sqdev8_add(double *acc, const float *r, int64_t n, double m);

/* acc[q mod 8] += (double)(a[q] - m) * b[q] for q < n (m = 0: a dot b). */
void opu_dot8_add(double *acc, const float *a, const float *b, int64_t n,
                 float m);

/* The eight lanes added pairwise. */
double opu_sum8_total(const double *acc);

#endif /* POPC_OPS_MATH_SUMS_H */
