/* calibrate.h - the host's measured sgemm rate (calibrate.c). */
#ifndef POPC_BACKENDS_IPUMODEL_CALIBRATE_H
#define POPC_BACKENDS_IPUMODEL_CALIBRATE_H

/* Flops per nanosecond of one core's sgemm on a 128-cube product (with
** the caller's OpenBLAS threading), measured on the first call; clamped
** to [4, 1000]. */
double ipum_host_gemm_rate(void);

#endif /* POPC_BACKENDS_IPUMODEL_CALIBRATE_H */
