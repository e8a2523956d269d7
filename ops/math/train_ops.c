/* train_ops.c - the optimizer ops of ONNX's "ai.onnx.preview.training"
** domain: Adagrad, Momentum and Adam. Each updates any number of tensors
** at once: inputs R (learning rate), T (step count), then the tensors X,
** their gradients G and the optimizer state (V, H), each list as long as
** the others; outputs the new X then the new state, in the same order.
** float32 and float64; the formulas are the ONNX operator definitions.
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "ops/math/mathops.h"
#include "ops/util/elem.h"

typedef enum { T_ADAGRAD, T_MOMENTUM, T_ADAM } train_kind;

static const char *const names[] = {"Adagrad", "Momentum", "Adam"};
static const int states[] = {1, 1, 2}; /* state tensors per X */

static popc_status train_infer(popc_infer_ctx *ic, train_kind k)
{
    int per = 2 + states[k], n = (ic->n_inputs - 2) / per;

    if (ic->n_inputs < 2 + per || (ic->n_inputs - 2) % per ||
        ic->n_outputs != n * (1 + states[k]))
        return opu_error(POPC_EINVAL, names[k], ic->node_name,
                         "inputs must be R, T, then %d lists of equal "
                         "length (X, G%s), outputs the new X and state",
                         per, k == T_ADAM ? ", V, H" : k == T_MOMENTUM
                                                           ? ", V"
                                                           : ", H");
    for (int j = 0; j < ic->n_outputs; j++) {
        int src = 2 + (j < n ? j : n + j); /* X, then the state lists */

        if (!popc_dtype_is_float(ic->inputs[src].dtype))
            return opu_error(POPC_EINVAL, names[k], ic->node_name,
                             "tensors must be floating point");
        ic->outputs[j] = ic->inputs[src];
        ic->outputs[j].data = NULL;
    }
    return POPC_OK;
}

static popc_status train_forward(const popc_kernel_ctx *kc, train_kind k)
{
    const popc_attrs *a = kc->attrs;
    int per = 2 + states[k], n = (kc->n_inputs - 2) / per;
    double r = opu_load_f(&kc->inputs[0], 0);
    double t = (double)opu_load_i(&kc->inputs[1], 0);
    double norm = popc_attr_float(a, "norm_coefficient", 0.0);

    for (int i = 0; i < n; i++) {
        const popc_view *x = &kc->inputs[2 + i], *g = &kc->inputs[2 + n + i];
        const popc_view *s1 = &kc->inputs[2 + 2 * n + i];
        const popc_view *s2 = k == T_ADAM ? &kc->inputs[2 + 3 * n + i] : NULL;
        const popc_view *xo = &kc->outputs[i], *so = &kc->outputs[n + i];
        const popc_view *so2 = k == T_ADAM ? &kc->outputs[2 * n + i] : NULL;

        for (int64_t e = 0; e < popc_view_numel(x); e++) {
            double xv = opu_load_f(x, e);
            double gr = norm * xv + opu_load_f(g, e);

            if (k == T_ADAGRAD) {
                double decay = popc_attr_float(a, "decay_factor", 0.0);
                double eps = popc_attr_float(a, "epsilon", 0.0);
                double h = opu_load_f(s1, e) + gr * gr;

                opu_store_f(so, e, h);
                opu_store_f(xo, e, xv - r / (1 + t * decay) * gr /
                                            (sqrt(h) + eps));
            } else if (k == T_MOMENTUM) {
                const popc_attr *mode = popc_attrs_find(a, "mode");
                int nesterov = mode && mode->s && !strcmp(mode->s,
                                                          "nesterov");
                double alpha = popc_attr_float(a, "alpha", 0.0);
                double beta = t > 0 ? popc_attr_float(a, "beta", 0.0) : 1.0;
                double v = alpha * opu_load_f(s1, e) + beta * gr;

                opu_store_f(so, e, v);
                opu_store_f(xo, e, nesterov ? xv - r * (gr + alpha * v)
                                            : xv - r * v);
            } else {
                double alpha = popc_attr_float(a, "alpha", 0.9);
                double beta = popc_attr_float(a, "beta", 0.999);
                double eps = popc_attr_float(a, "epsilon", 1e-6);
                double post = popc_attr_float(a, "norm_coefficient_post", 0);
                double v = alpha * opu_load_f(s1, e) + (1 - alpha) * gr;
                double h = beta * opu_load_f(s2, e) + (1 - beta) * gr * gr;
                double ra = t > 0 ? r * sqrt(1 - pow(beta, t)) /
                                        (1 - pow(alpha, t))
                                  : r;

                opu_store_f(so, e, v);
                opu_store_f(so2, e, h);
                opu_store_f(xo, e, (1 - post) * (xv - ra * v /
                                                          (sqrt(h) + eps)));
            }
        }
    }
    return POPC_OK;
}

#define KIND(ID, K)                                                         \
    static popc_status ID##_infer(popc_infer_ctx *ic)                       \
    {                                                                       \
        return train_infer(ic, K);                                          \
    }                                                                       \
    static popc_status ID##_forward(const popc_kernel_ctx *kc)              \
    {                                                                       \
        return train_forward(kc, K);                                        \
    }

KIND(adagrad, T_ADAGRAD)
KIND(momentum, T_MOMENTUM)
KIND(adam, T_ADAM)

#define TDEF(NAME, MIN_IN, MIN_OUT, P, DOC)                                 \
    OPU_DEF("ai.onnx.preview.training", NAME, 1, MIN_IN, -1, MIN_OUT, -1,   \
            POPC_OP_NOFOLD, P, NULL, NULL, DOC)

const popc_op_def mop_train_ops[] = {
    TDEF("Adagrad", 5, 2, adagrad, "ONNX Adagrad update of X and H"),
    TDEF("Momentum", 5, 2, momentum, "ONNX Momentum (standard, nesterov)"),
    TDEF("Adam", 6, 3, adam, "ONNX Adam update of X, V and H"),
};

const int mop_train_count = sizeof mop_train_ops / sizeof mop_train_ops[0];
