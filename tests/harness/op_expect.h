/* op_expect.h - the assertions op tests share (Check): a status that must
** be POPC_OK, a message that must hold a text, one op's single output, an
** op that must fail with a given status and message, and float32 tensors
** that must agree within a tolerance. */
#ifndef POPC_OP_EXPECT_H
#define POPC_OP_EXPECT_H

#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/harness/assert.h"

/* A tensor copied from data (dims NULL and rank 0: a scalar). */
popc_tensor *expect_tensor(popc_dtype dt, const int64_t *dims, int rank,
                           const void *data);

/* The single output of op on in (harness_run_op); fails the test on error. */
popc_tensor *expect_run(const char *domain, const char *op,
                        popc_tensor *const *in, int n_in,
                        const popc_attr *attrs, int n_attrs, int training);

/* The op must fail with want and a message holding n1 and n2 (NULL: no
** check). */
void expect_error(const char *domain, const char *op, popc_tensor *const *in,
                  int n_in, const popc_attr *attrs, int n_attrs,
                  popc_status want, const char *n1, const char *n2);

/* |got - want| <= atol + rtol * |want| everywhere (float32, same shape). */
void expect_close(const popc_tensor *got, const popc_tensor *want,
                  double atol, double rtol);

#endif /* POPC_OP_EXPECT_H */
