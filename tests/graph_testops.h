/* graph_testops.h - tiny float32 ops in the "test" domain, registered into
** the global registry, so the graph tests do not depend on the op plugins.
**
**   test::Add(a, b)        same shapes; grad passes g to both
**   test::Mul(a, b)        same shapes; grad g*b, g*a (test::Mul nodes)
**   test::Square(x)        grad 2*x*g (test::Mul and test::Add nodes)
**   test::Scale(x){alpha}  y = alpha * x; grad test::Scale(g){alpha}
**   test::Split2(x)        two outputs x and 2x; grad handles absent g's
**   test::NoGrad(x)        identity without a gradient
**   test::SumLoss(x)       POPC_OP_LOSS: scalar sum; grad test::Fill
**   test::Fill(s, like)    like's shape filled with scalar s (no grad)
**   test::Rand(x)          POPC_OP_RANDOM: x's shape, uniform from kc->seed
**   test::Echo(x)          y = x; infer adds testops_echo_extra to dim 0
**   test::Pair(a, b)       min 2 inputs: arity checks
**   test::BadGrad(x)       y = 3x with a wrong gradient (2.9 g)
**
** When the plugins do not provide them, stand-ins are registered for
** ai.onnx Sum (no grad) and Mul and popc IdentityLoss (sum only), which
** autodiff and the finite-difference checker build on.
*/
#ifndef POPC_GRAPH_TESTOPS_H
#define POPC_GRAPH_TESTOPS_H

#include "popc/popc.h"

/* Registers the ops once (idempotent). Returns the registry status. */
popc_status testops_register(void);

/* test::LateAdd (as test::Add), not registered by testops_register: for
** nodes added before their op is known. */
const popc_op_def *testops_late_add(void);

/* 1 when def is one of the stand-ins above (not a plugin's op). */
int testops_is_standin(const popc_op_def *def);

/* Dim-0 growth applied by test::Echo's infer (to provoke mismatches). */
extern int testops_echo_extra;

/* A float32 tensor from values (NULL data: zeros). Aborts the test on
** failure via ck_assert in the caller's context, so returns non-NULL. */
popc_tensor *testops_f32(const int64_t *dims, int rank, const float *data);

#endif /* POPC_GRAPH_TESTOPS_H */
