/* sgd.c - the "sgd" optimizer: torch.optim.SGD with PopTorch's separate
** and combined (use_combined_accum) velocity variants.
**
** The gradient g reaching step() is final (loss scaling removed, clipped).
**
** Separate variant (default), torch.optim.SGD exactly (docs/semantics.md
** R4.3: on a weight's first update the velocity starts at d, not at zero
** as on PopTorch's IPU):
**   d = g + wd*w
**   buf = d on step 1, else buf = mm*buf + (1-dm)*d
**   w -= lr*(d + mm*buf) with nesterov, else w -= lr*buf
** momentum == 0: w -= lr*d (dampening unused, as in torch). Velocity
** scaling changes nothing here: PopTorch ties it to loss scaling in this
** variant and the gradient arrives unscaled.
**
** Combined variant (PopART's SGD1): one tensor v = vs*buf, into which the
** next step's share mm*v + (1-dm)*vs*wd*w is folded right after each
** update, so a step only adds (1-dm)*vs*g and then w -= (lr/vs)*v. While
** the hyper-parameters stay put this equals the separate variant; a new
** momentum, dampening, weight decay or velocity scaling reaches the folded
** share one step late (the "lagged update" PopTorch documents). The first
** step starts from v = vs*d to match torch, like the separate variant.
**
** The velocity exists iff momentum != 0; a NaN momentum (the core's probe
** for a variable value) also asks for it, so that momentum can later be
** switched on without recompiling. velocity_accum_type float16 rounds the
** stored velocity to half precision after every update; accum_type
** float16 makes the core keep the gradient accumulator in half (unused by
** the combined variant, as in PopTorch).
*/
#include "config.h"

#include <math.h>
#include <stdint.h>

#include "popc/plugin.h"
#include "optim/optim_util.h"

static const popc_host *host;

enum {
    LR,
    MOMENTUM,
    DAMPENING,
    WEIGHT_DECAY,
    NESTEROV,
    VELOCITY_SCALING,
    LOSS_SCALING,
    USE_COMBINED_ACCUM,
    ACCUM_TYPE,
    VELOCITY_ACCUM_TYPE,
    MAX_GRAD_NORM,
    N_HYPERS
};

static const popc_hyper_def sgd_hypers[N_HYPERS] = {
    [LR] = {"lr", NAN, POPC_HYPER_GROUP},
    [MOMENTUM] = {"momentum", 0.0, POPC_HYPER_GROUP},
    [DAMPENING] = {"dampening", 0.0, POPC_HYPER_GROUP},
    [WEIGHT_DECAY] = {"weight_decay", 0.0, POPC_HYPER_GROUP},
    [NESTEROV] = {"nesterov", 0.0, POPC_HYPER_GROUP | POPC_HYPER_BOOL},
    [VELOCITY_SCALING] = {"velocity_scaling", 1.0, POPC_HYPER_GROUP},
    [LOSS_SCALING] = {"loss_scaling", 1.0, 0},
    [USE_COMBINED_ACCUM] = {"use_combined_accum", 0.0,
                            POPC_HYPER_BOOL | POPC_HYPER_FIXED},
    [ACCUM_TYPE] = {"accum_type", OPTIM_ACCUM_F32, POPC_HYPER_FIXED},
    [VELOCITY_ACCUM_TYPE] = {"velocity_accum_type", OPTIM_ACCUM_F32,
                             POPC_HYPER_FIXED},
    [MAX_GRAD_NORM] = {"max_grad_norm", INFINITY, POPC_HYPER_FIXED},
};

/* Single-value checks only (texts of torch.optim.SGD): the core calls this
** after every set, so checks across values would depend on set order. */
static popc_status sgd_validate(const double *h)
{
    popc_status st;

    if (h[LR] < 0.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer sgd: Invalid learning rate: %g "
                               "(lr must be >= 0)", h[LR]);
    if (h[MOMENTUM] < 0.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer sgd: Invalid momentum value: %g "
                               "(momentum must be >= 0)", h[MOMENTUM]);
    if (h[WEIGHT_DECAY] < 0.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer sgd: Invalid weight_decay value: %g "
                               "(weight_decay must be >= 0)",
                               h[WEIGHT_DECAY]);
    if (!(h[VELOCITY_SCALING] > 0.0) && !isnan(h[VELOCITY_SCALING]))
        return host->set_error(POPC_EINVAL,
                               "Optimizer sgd: velocity_scaling must be > 0 "
                               "(got %g)", h[VELOCITY_SCALING]);
    if ((st = optim_check_accum(host, "sgd", "accum_type",
                                h[ACCUM_TYPE])) != POPC_OK)
        return st;
    return optim_check_accum(host, "sgd", "velocity_accum_type",
                             h[VELOCITY_ACCUM_TYPE]);
}

static int sgd_n_state(const double *h)
{
    return h[MOMENTUM] != 0.0 ? 1 : 0;
}

static const char *sgd_state_name(const double *h, int index)
{
    if (index != 0)
        return NULL;
    return h[USE_COMBINED_ACCUM] != 0.0 ? "combined_velocity"
                                        : "momentum_buffer";
}

static popc_dtype sgd_state_dtype(const double *h, int index)
{
    return index == 0 ? optim_accum_dtype(h[VELOCITY_ACCUM_TYPE])
                      : POPC_DTYPE_F32;
}

/* The combined variant has no separate accumulator: accum_type is unused
** there, as in PopTorch. */
static popc_dtype sgd_accum_dtype(const double *h)
{
    return h[USE_COMBINED_ACCUM] != 0.0 ? POPC_DTYPE_F32
                                        : optim_accum_dtype(h[ACCUM_TYPE]);
}

static void step_plain(float *restrict w, const float *restrict g, int64_t n,
                       float nlr, float wd)
{
    for (int64_t i = 0; i < n; i++) {
        float d = g[i] + wd * w[i];
        w[i] = w[i] + nlr * d;
    }
}

/* Flags are folded into coefficients so that one branch-free loop covers
** first step / later steps and nesterov / plain: multiplying by exactly 0
** or 1 leaves every finite value unchanged. */
static void step_separate(float *restrict w, const float *restrict g,
                          float *restrict v, int64_t n, float nlr, float wd,
                          float keep, float take, float nd, float nm)
{
    for (int64_t i = 0; i < n; i++) {
        float d = g[i] + wd * w[i];
        float b = v[i] * keep + take * d;
        v[i] = b;
        w[i] = w[i] + nlr * (nd * d + nm * b);
    }
}

static void step_combined(float *restrict w, const float *restrict g,
                          float *restrict v, int64_t n, float keep,
                          float take_g, float take_w, float nlr_vs,
                          float nest_vs, float nest_vs_wd, float nm,
                          float mm, float fold_w)
{
    for (int64_t i = 0; i < n; i++) {
        float wi = w[i];
        float gi = g[i];
        float vi = v[i] * keep + take_g * gi + take_w * wi;
        float u = nest_vs * gi + nest_vs_wd * wi + nm * vi;
        wi = wi + nlr_vs * u;
        w[i] = wi;
        v[i] = vi * mm + fold_w * wi;
    }
}

static popc_status sgd_step(const popc_optim_step_ctx *c)
{
    const double *h = c->hypers;
    const float wd = (float)h[WEIGHT_DECAY];
    const float mm = (float)h[MOMENTUM];
    const int nesterov = h[NESTEROV] != 0.0;
    const int first = c->step <= 1;
    popc_status st;

    if (h[MOMENTUM] == 0.0) {
        step_plain(c->weight, c->grad, c->n, (float)-h[LR], wd);
        return POPC_OK;
    }
    if ((st = optim_check_state(c, "sgd", 1, "momentum")) != POPC_OK)
        return st;
    if (h[USE_COMBINED_ACCUM] == 0.0) {
        step_separate(c->weight, c->grad, c->state[0], c->n, (float)-h[LR],
                      wd, first ? 0.0f : mm,
                      first ? 1.0f : (float)(1.0 - h[DAMPENING]),
                      nesterov ? 1.0f : 0.0f, nesterov ? mm : 1.0f);
    } else {
        const double vs = h[VELOCITY_SCALING];
        const double dm1 = 1.0 - h[DAMPENING];

        step_combined(c->weight, c->grad, c->state[0], c->n,
                      first ? 0.0f : 1.0f,
                      (float)(first ? vs : dm1 * vs),
                      first ? (float)(vs * h[WEIGHT_DECAY]) : 0.0f,
                      (float)(-h[LR] / vs),
                      nesterov ? (float)vs : 0.0f,
                      nesterov ? (float)(vs * h[WEIGHT_DECAY]) : 0.0f,
                      nesterov ? mm : 1.0f, mm,
                      (float)(dm1 * h[WEIGHT_DECAY] * vs));
    }
    optim_store_as(h[VELOCITY_ACCUM_TYPE], c->state[0], c->n);
    return POPC_OK;
}

static const popc_optim_def sgd_def = {
    .size = sizeof(popc_optim_def),
    .hyper_size = sizeof(popc_hyper_def),
    .name = "sgd",
    .n_hypers = N_HYPERS,
    .hypers = sgd_hypers,
    .validate = sgd_validate,
    .n_state = sgd_n_state,
    .state_name = sgd_state_name,
    .init_state = NULL,
    .step = sgd_step,
    .state_dtype = sgd_state_dtype,
    .accum_dtype = sgd_accum_dtype,
};

static popc_status sgd_init(const popc_host *h, popc_registrar *reg)
{
    host = h;
    return h->register_optimizer(reg, &sgd_def);
}

POPC_PLUGIN_DEFINE(sgd, "0.1.0",
                   "SGD with momentum, dampening, nesterov, weight decay; "
                   "separate or combined velocity",
                   "MIT", sgd_init, NULL)
