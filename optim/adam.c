/* adam.c - the "adam" and "adamw" optimizers (torch.optim.Adam / AdamW).
**
** The gradient g reaching step() is final (loss scaling removed, clipped).
** With t the weight's 1-based step count:
**   adam (L2 mode):   g' = g + wd*w
**   adamw (decoupled): w *= 1 - lr*wd first (torch's order), g' = g
**   m = b1*m + (1-b1)*g';  v = b2*v + (1-b2)*g'^2
**   w -= (lr/bc1) * m / (sqrt(v)/sqrt(bc2) + eps)
** with bc1 = 1 - b1^t, bc2 = 1 - b2^t. adamw with bias_correction 0 uses
** bc1 = bc2 = 1 (PopTorch intends this but its code still corrects; popc
** does what the option says: docs/semantics.md §4, R4.3). amsgrad is
** refused, as in PopTorch. first/second_order_momentum_accum_type float16
** round m / v to half precision after every update.
**
** The arithmetic follows torch's single-tensor CPU path operation by
** operation, in float32 with scalars rounded to float, so results agree
** to a few ulps.
*/
#include "config.h"

#include <math.h>
#include <stdint.h>

#include "popc/plugin.h"
#include "optim/optim_util.h"

static const popc_host *host;

/* adamw appends BIAS_CORRECTION; adam stops before it. */
enum {
    LR,
    BETA1,
    BETA2,
    EPS,
    WEIGHT_DECAY,
    AMSGRAD,
    LOSS_SCALING,
    ACCUM_TYPE,
    FIRST_ACCUM_TYPE,
    SECOND_ACCUM_TYPE,
    MAX_GRAD_NORM,
    N_ADAM_HYPERS,
    BIAS_CORRECTION = N_ADAM_HYPERS,
    N_ADAMW_HYPERS
};

#define ADAM_HYPERS(WD)                                                     \
    [LR] = {"lr", 1e-3, POPC_HYPER_GROUP},                                  \
    [BETA1] = {"beta1", 0.9, POPC_HYPER_GROUP},                             \
    [BETA2] = {"beta2", 0.999, POPC_HYPER_GROUP},                           \
    [EPS] = {"eps", 1e-8, POPC_HYPER_GROUP},                                \
    [WEIGHT_DECAY] = {"weight_decay", WD, POPC_HYPER_GROUP},                \
    [AMSGRAD] = {"amsgrad", 0.0, POPC_HYPER_BOOL | POPC_HYPER_FIXED},       \
    [LOSS_SCALING] = {"loss_scaling", 1.0, 0},                              \
    [ACCUM_TYPE] = {"accum_type", OPTIM_ACCUM_F32, POPC_HYPER_FIXED},       \
    [FIRST_ACCUM_TYPE] = {"first_order_momentum_accum_type",                \
                          OPTIM_ACCUM_F32, POPC_HYPER_FIXED},               \
    [SECOND_ACCUM_TYPE] = {"second_order_momentum_accum_type",              \
                           OPTIM_ACCUM_F32, POPC_HYPER_FIXED},              \
    [MAX_GRAD_NORM] = {"max_grad_norm", INFINITY, POPC_HYPER_FIXED}

static const popc_hyper_def adam_hypers[N_ADAM_HYPERS] = {
    ADAM_HYPERS(0.0)
};

static const popc_hyper_def adamw_hypers[N_ADAMW_HYPERS] = {
    ADAM_HYPERS(1e-2),
    [BIAS_CORRECTION] = {"bias_correction", 1.0,
                         POPC_HYPER_BOOL | POPC_HYPER_FIXED},
};

static popc_status check(const double *h, const char *name)
{
    popc_status st;

    if (h[AMSGRAD] != 0.0)
        return host->set_error(POPC_EINVAL,
                               "Only non-amsgrad Adam/AdamW optimizers are "
                               "supported. (optimizer %s: set amsgrad to 0)",
                               name);
    if (h[LR] < 0.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer %s: Invalid learning rate: %g "
                               "(lr must be >= 0)", name, h[LR]);
    if (h[EPS] < 0.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer %s: Invalid epsilon value: %g "
                               "(eps must be >= 0)", name, h[EPS]);
    if (h[BETA1] < 0.0 || h[BETA1] >= 1.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer %s: Invalid beta parameter at index "
                               "0: %g (beta1 must be in [0, 1))", name,
                               h[BETA1]);
    if (h[BETA2] < 0.0 || h[BETA2] >= 1.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer %s: Invalid beta parameter at index "
                               "1: %g (beta2 must be in [0, 1))", name,
                               h[BETA2]);
    if (h[WEIGHT_DECAY] < 0.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer %s: Invalid weight_decay value: %g "
                               "(weight_decay must be >= 0)", name,
                               h[WEIGHT_DECAY]);
    if ((st = optim_check_accum(host, name, "accum_type",
                                h[ACCUM_TYPE])) != POPC_OK)
        return st;
    if ((st = optim_check_accum(host, name, "first_order_momentum_accum_type",
                                h[FIRST_ACCUM_TYPE])) != POPC_OK)
        return st;
    return optim_check_accum(host, name, "second_order_momentum_accum_type",
                             h[SECOND_ACCUM_TYPE]);
}

static popc_status adam_validate(const double *h)
{
    return check(h, "adam");
}

static popc_status adamw_validate(const double *h)
{
    return check(h, "adamw");
}

static int adam_n_state(const double *h)
{
    (void)h;
    return 2;
}

static popc_dtype adam_state_dtype(const double *h, int index)
{
    return optim_accum_dtype(index == 0 ? h[FIRST_ACCUM_TYPE]
                                        : h[SECOND_ACCUM_TYPE]);
}

static popc_dtype adam_accum_dtype(const double *h)
{
    return optim_accum_dtype(h[ACCUM_TYPE]);
}

static const char *adam_state_name(const double *h, int index)
{
    (void)h;
    return index == 0 ? "exp_avg" : index == 1 ? "exp_avg_sq" : NULL;
}

/* decay: factor applied to w before the moments (1 for adam); l2: weight
** decay added to the gradient (0 for adamw). */
static void adam_loop(float *restrict w, const float *restrict g,
                      float *restrict m, float *restrict v, int64_t n,
                      float decay, float l2, float b1, float omb1, float b2,
                      float omb2, float bc2s, float eps, float nss)
{
    for (int64_t i = 0; i < n; i++) {
        float wi = w[i] * decay;
        float gi = g[i] + l2 * wi;
        float mi = m[i] * b1 + omb1 * gi;
        float vi = v[i] * b2 + omb2 * gi * gi;
        float den = sqrtf(vi) / bc2s + eps;
        m[i] = mi;
        v[i] = vi;
        w[i] = wi + nss * mi / den;
    }
}

static popc_status run(const popc_optim_step_ctx *c, const char *name,
                       int decoupled, int bias_correction)
{
    const double *h = c->hypers;
    const double t = (double)(c->step < 1 ? 1 : c->step);
    const double bc1 = bias_correction ? 1.0 - pow(h[BETA1], t) : 1.0;
    const double bc2 = bias_correction ? 1.0 - pow(h[BETA2], t) : 1.0;
    popc_status st;

    if ((st = optim_check_state(c, name, 2, "exp_avg/exp_avg_sq")) != POPC_OK)
        return st;
    adam_loop(c->weight, c->grad, c->state[0], c->state[1], c->n,
              decoupled ? (float)(1.0 - h[LR] * h[WEIGHT_DECAY]) : 1.0f,
              decoupled ? 0.0f : (float)h[WEIGHT_DECAY], (float)h[BETA1],
              (float)(1.0 - h[BETA1]), (float)h[BETA2],
              (float)(1.0 - h[BETA2]), (float)sqrt(bc2), (float)h[EPS],
              (float)(-h[LR] / bc1));
    optim_store_as(h[FIRST_ACCUM_TYPE], c->state[0], c->n);
    optim_store_as(h[SECOND_ACCUM_TYPE], c->state[1], c->n);
    return POPC_OK;
}

static popc_status adam_step(const popc_optim_step_ctx *c)
{
    return run(c, "adam", 0, 1);
}

static popc_status adamw_step(const popc_optim_step_ctx *c)
{
    return run(c, "adamw", 1, c->hypers[BIAS_CORRECTION] != 0.0);
}

static const popc_optim_def adam_defs[] = {
    {
        .size = sizeof(popc_optim_def),
        .hyper_size = sizeof(popc_hyper_def),
        .name = "adam",
        .n_hypers = N_ADAM_HYPERS,
        .hypers = adam_hypers,
        .validate = adam_validate,
        .n_state = adam_n_state,
        .state_name = adam_state_name,
        .init_state = NULL,
        .step = adam_step,
        .state_dtype = adam_state_dtype,
        .accum_dtype = adam_accum_dtype,
    },
    {
        .size = sizeof(popc_optim_def),
        .hyper_size = sizeof(popc_hyper_def),
        .name = "adamw",
        .n_hypers = N_ADAMW_HYPERS,
        .hypers = adamw_hypers,
        .validate = adamw_validate,
        .n_state = adam_n_state,
        .state_name = adam_state_name,
        .init_state = NULL,
        .step = adamw_step,
        .state_dtype = adam_state_dtype,
        .accum_dtype = adam_accum_dtype,
    },
};

static popc_status adam_init(const popc_host *h, popc_registrar *reg)
{
    popc_status st;

    host = h;
    for (size_t i = 0; i < sizeof adam_defs / sizeof adam_defs[0]; i++)
        if ((st = h->register_optimizer(reg, &adam_defs[i])) != POPC_OK)
            return st;
    return POPC_OK;
}

POPC_PLUGIN_DEFINE(adam, "0.1.0",
                   "Adam (L2 weight decay) and AdamW (decoupled weight "
                   "decay, optional bias correction)",
                   "MIT", adam_init, NULL)
