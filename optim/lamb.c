/* lamb.c - the "lamb" optimizer (PopTorch's poptorch.optim.LAMB).
**
** The gradient g reaching step() is final (loss scaling removed). With t
** the weight's 1-based step count and bc1 = 1 - b1^t, bc2 = 1 - b2^t (both
** 1 when bias_correction is 0):
**   m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2
**   x = (m/bc1) / (sqrt(v)/sqrt(bc2) + eps) + wd*w      (decoupled decay)
**   r1 = ||w||, r2 = ||x|| over this weight tensor; phi = min(r1, mwn)
**   trust = 1 if phi == 0 or r2 == 0, else phi/r2
**   w -= lr*trust*x
** x is needed twice (its norm, then the update) but there is no scratch
** tensor, so the second pass recomputes it from the updated m and v; both
** passes evaluate the same expression, so the values are identical. The
** norms are accumulated in double.
*/
#include "config.h"

#include <math.h>
#include <stdint.h>

#include "popc/plugin.h"
#include "optim/optim_util.h"

static const popc_host *host;

enum {
    LR,
    BETA1,
    BETA2,
    EPS,
    WEIGHT_DECAY,
    MAX_WEIGHT_NORM,
    BIAS_CORRECTION,
    LOSS_SCALING,
    ACCUM_TYPE,
    FIRST_ACCUM_TYPE,
    SECOND_ACCUM_TYPE,
    N_HYPERS
};

static const popc_hyper_def lamb_hypers[N_HYPERS] = {
    [LR] = {"lr", 1e-3, POPC_HYPER_GROUP},
    [BETA1] = {"beta1", 0.9, POPC_HYPER_GROUP},
    [BETA2] = {"beta2", 0.999, POPC_HYPER_GROUP},
    [EPS] = {"eps", 1e-8, POPC_HYPER_GROUP},
    [WEIGHT_DECAY] = {"weight_decay", 1e-2, POPC_HYPER_GROUP},
    [MAX_WEIGHT_NORM] = {"max_weight_norm", 65500.0, POPC_HYPER_GROUP},
    [BIAS_CORRECTION] = {"bias_correction", 1.0,
                         POPC_HYPER_BOOL | POPC_HYPER_FIXED},
    [LOSS_SCALING] = {"loss_scaling", 1.0, 0},
    [ACCUM_TYPE] = {"accum_type", OPTIM_ACCUM_F32, POPC_HYPER_FIXED},
    [FIRST_ACCUM_TYPE] = {"first_order_momentum_accum_type", OPTIM_ACCUM_F32,
                          POPC_HYPER_FIXED},
    [SECOND_ACCUM_TYPE] = {"second_order_momentum_accum_type",
                           OPTIM_ACCUM_F32, POPC_HYPER_FIXED},
};

static popc_status lamb_validate(const double *h)
{
    popc_status st;

    if (h[LR] < 0.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer lamb: Invalid learning rate: %g "
                               "(lr must be >= 0)", h[LR]);
    if (h[EPS] < 0.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer lamb: Invalid epsilon value: %g "
                               "(eps must be >= 0)", h[EPS]);
    if (h[BETA1] < 0.0 || h[BETA1] >= 1.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer lamb: Invalid beta parameter at "
                               "index 0: %g (beta1 must be in [0, 1))",
                               h[BETA1]);
    if (h[BETA2] < 0.0 || h[BETA2] >= 1.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer lamb: Invalid beta parameter at "
                               "index 1: %g (beta2 must be in [0, 1))",
                               h[BETA2]);
    if (h[WEIGHT_DECAY] < 0.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer lamb: Invalid weight_decay value: "
                               "%g (weight_decay must be >= 0)",
                               h[WEIGHT_DECAY]);
    if (h[MAX_WEIGHT_NORM] < 0.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer lamb: max_weight_norm must be >= 0 "
                               "(got %g; the default 65500 is float16's "
                               "largest value)", h[MAX_WEIGHT_NORM]);
    if ((st = optim_check_accum(host, "lamb", "accum_type",
                                h[ACCUM_TYPE])) != POPC_OK)
        return st;
    if ((st = optim_check_accum(host, "lamb",
                                "first_order_momentum_accum_type",
                                h[FIRST_ACCUM_TYPE])) != POPC_OK)
        return st;
    return optim_check_accum(host, "lamb", "second_order_momentum_accum_type",
                             h[SECOND_ACCUM_TYPE]);
}

static int lamb_n_state(const double *h)
{
    (void)h;
    return 2;
}

static popc_dtype lamb_state_dtype(const double *h, int index)
{
    return optim_accum_dtype(index == 0 ? h[FIRST_ACCUM_TYPE]
                                        : h[SECOND_ACCUM_TYPE]);
}

static popc_dtype lamb_accum_dtype(const double *h)
{
    return optim_accum_dtype(h[ACCUM_TYPE]);
}

static const char *lamb_state_name(const double *h, int index)
{
    (void)h;
    return index == 0 ? "exp_avg" : index == 1 ? "exp_avg_sq" : NULL;
}

typedef struct coefs {
    float b1, omb1, b2, omb2, bc1, bc2s, eps, wd;
} coefs;

/* Updates m and v, returns ||x||^2 and ||w||^2. */
static void lamb_moments(const float *restrict w, const float *restrict g,
                         float *restrict m, float *restrict v, int64_t n,
                         coefs k, double *xx, double *ww)
{
    double sx = 0.0, sw = 0.0;

    for (int64_t i = 0; i < n; i++) {
        float gi = g[i];
        float mi = m[i] * k.b1 + k.omb1 * gi;
        float vi = v[i] * k.b2 + k.omb2 * gi * gi;
        float x = (mi / k.bc1) / (sqrtf(vi) / k.bc2s + k.eps) + k.wd * w[i];
        m[i] = mi;
        v[i] = vi;
        sx += (double)x * x;
        sw += (double)w[i] * w[i];
    }
    *xx = sx;
    *ww = sw;
}

static void lamb_update(float *restrict w, const float *restrict m,
                        const float *restrict v, int64_t n, coefs k,
                        float nscale)
{
    for (int64_t i = 0; i < n; i++) {
        float x = (m[i] / k.bc1) / (sqrtf(v[i]) / k.bc2s + k.eps) +
                  k.wd * w[i];
        w[i] = w[i] + nscale * x;
    }
}

static popc_status lamb_step(const popc_optim_step_ctx *c)
{
    const double *h = c->hypers;
    const double t = (double)(c->step < 1 ? 1 : c->step);
    const int bias = h[BIAS_CORRECTION] != 0.0;
    double xx, ww, phi, r2, trust;
    popc_status st;
    coefs k;

    if ((st = optim_check_state(c, "lamb", 2, "exp_avg/exp_avg_sq")) !=
        POPC_OK)
        return st;
    k.b1 = (float)h[BETA1];
    k.omb1 = (float)(1.0 - h[BETA1]);
    k.b2 = (float)h[BETA2];
    k.omb2 = (float)(1.0 - h[BETA2]);
    k.bc1 = bias ? (float)(1.0 - pow(h[BETA1], t)) : 1.0f;
    k.bc2s = bias ? (float)sqrt(1.0 - pow(h[BETA2], t)) : 1.0f;
    k.eps = (float)h[EPS];
    k.wd = (float)h[WEIGHT_DECAY];
    lamb_moments(c->weight, c->grad, c->state[0], c->state[1], c->n, k, &xx,
                 &ww);
    phi = fmin(sqrt(ww), h[MAX_WEIGHT_NORM]);
    r2 = sqrt(xx);
    trust = (phi == 0.0 || r2 == 0.0) ? 1.0 : phi / r2;
    lamb_update(c->weight, c->state[0], c->state[1], c->n, k,
                (float)(-h[LR] * trust));
    optim_store_as(h[FIRST_ACCUM_TYPE], c->state[0], c->n);
    optim_store_as(h[SECOND_ACCUM_TYPE], c->state[1], c->n);
    return POPC_OK;
}

static const popc_optim_def lamb_def = {
    .size = sizeof(popc_optim_def),
    .hyper_size = sizeof(popc_hyper_def),
    .name = "lamb",
    .n_hypers = N_HYPERS,
    .hypers = lamb_hypers,
    .validate = lamb_validate,
    .n_state = lamb_n_state,
    .state_name = lamb_state_name,
    .init_state = NULL,
    .step = lamb_step,
    .state_dtype = lamb_state_dtype,
    .accum_dtype = lamb_accum_dtype,
};

static popc_status lamb_init(const popc_host *h, popc_registrar *reg)
{
    host = h;
    return h->register_optimizer(reg, &lamb_def);
}

POPC_PLUGIN_DEFINE(lamb, "0.1.0",
                   "LAMB: layer-wise adaptive moments with a per-tensor "
                   "trust ratio",
                   "MIT", lamb_init, NULL)
