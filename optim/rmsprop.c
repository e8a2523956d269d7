/* rmsprop.c - the "rmsprop" optimizer: torch.optim.RMSprop, plus the
** centered form and PopTorch's TensorFlow variant.
**
** The gradient g reaching step() is final (loss scaling removed).
**   s = g + wd*w                          (L2 mode)
**   sq = a*sq + (1-a)*s^2
**   centered: ga = a*ga + (1-a)*s, den = sq - ga^2; else den = sq
**   torch:  x = s / (sqrt(den) + eps)
**   TF:     x = s / sqrt(den + eps), and sq starts at 1 instead of 0
**   momentum > 0: torch buf = mm*buf + x,    w -= lr*buf
**                 TF    buf = mm*buf + lr*x, w -= buf
**   momentum == 0: w -= lr*x
** State, in this order: square_avg, grad_avg (centered only; centered is
** fixed at compile time), momentum_buffer (momentum != 0; a NaN momentum,
** the core's probe for a variable value, also asks for it, so momentum can
** be switched on later). first_order_momentum_accum_type applies to
** square_avg, second_order_momentum_accum_type to grad_avg (PopART's
** accl1/accl2); the momentum buffer is always float32, as in PopART.
**
** The torch path follows torch's single-tensor CPU arithmetic operation by
** operation in float32.
*/
#include "config.h"

#include <math.h>
#include <stdint.h>

#include "popc/plugin.h"
#include "optim/optim_util.h"

static const popc_host *host;

enum {
    LR,
    ALPHA,
    EPS,
    WEIGHT_DECAY,
    MOMENTUM,
    CENTERED,
    USE_TF_VARIANT,
    LOSS_SCALING,
    ACCUM_TYPE,
    FIRST_ACCUM_TYPE,
    SECOND_ACCUM_TYPE,
    N_HYPERS
};

static const popc_hyper_def rmsprop_hypers[N_HYPERS] = {
    [LR] = {"lr", 1e-2, POPC_HYPER_GROUP},
    [ALPHA] = {"alpha", 0.99, POPC_HYPER_GROUP},
    [EPS] = {"eps", 1e-8, POPC_HYPER_GROUP},
    [WEIGHT_DECAY] = {"weight_decay", 0.0, POPC_HYPER_GROUP},
    [MOMENTUM] = {"momentum", 0.0, POPC_HYPER_GROUP},
    [CENTERED] = {"centered", 0.0, POPC_HYPER_BOOL | POPC_HYPER_FIXED},
    [USE_TF_VARIANT] = {"use_tf_variant", 0.0,
                        POPC_HYPER_BOOL | POPC_HYPER_FIXED},
    [LOSS_SCALING] = {"loss_scaling", 1.0, 0},
    [ACCUM_TYPE] = {"accum_type", OPTIM_ACCUM_F32, POPC_HYPER_FIXED},
    [FIRST_ACCUM_TYPE] = {"first_order_momentum_accum_type", OPTIM_ACCUM_F32,
                          POPC_HYPER_FIXED},
    [SECOND_ACCUM_TYPE] = {"second_order_momentum_accum_type",
                           OPTIM_ACCUM_F32, POPC_HYPER_FIXED},
};

static popc_status rmsprop_validate(const double *h)
{
    popc_status st;

    if (h[LR] < 0.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer rmsprop: Invalid learning rate: %g "
                               "(lr must be >= 0)", h[LR]);
    if (h[EPS] < 0.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer rmsprop: Invalid epsilon value: %g "
                               "(eps must be >= 0)", h[EPS]);
    if (h[MOMENTUM] < 0.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer rmsprop: Invalid momentum value: %g "
                               "(momentum must be >= 0)", h[MOMENTUM]);
    if (h[WEIGHT_DECAY] < 0.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer rmsprop: Invalid weight_decay "
                               "value: %g (weight_decay must be >= 0)",
                               h[WEIGHT_DECAY]);
    if (h[ALPHA] < 0.0)
        return host->set_error(POPC_EINVAL,
                               "Optimizer rmsprop: Invalid alpha value: %g "
                               "(alpha must be >= 0)", h[ALPHA]);
    if ((st = optim_check_accum(host, "rmsprop", "accum_type",
                                h[ACCUM_TYPE])) != POPC_OK)
        return st;
    if ((st = optim_check_accum(host, "rmsprop",
                                "first_order_momentum_accum_type",
                                h[FIRST_ACCUM_TYPE])) != POPC_OK)
        return st;
    return optim_check_accum(host, "rmsprop",
                             "second_order_momentum_accum_type",
                             h[SECOND_ACCUM_TYPE]);
}

static int rmsprop_n_state(const double *h)
{
    return 1 + (h[CENTERED] != 0.0) + (h[MOMENTUM] != 0.0);
}

/* square_avg and grad_avg follow the accumulation types; the momentum
** buffer stays float32 (see the header). */
static popc_dtype rmsprop_state_dtype(const double *h, int index)
{
    int centered = h[CENTERED] != 0.0;

    if (index == 0)
        return optim_accum_dtype(h[FIRST_ACCUM_TYPE]);
    if (index == 1 && centered)
        return optim_accum_dtype(h[SECOND_ACCUM_TYPE]);
    return POPC_DTYPE_F32;
}

static popc_dtype rmsprop_accum_dtype(const double *h)
{
    return optim_accum_dtype(h[ACCUM_TYPE]);
}

static const char *rmsprop_state_name(const double *h, int index)
{
    int centered = h[CENTERED] != 0.0;

    if (index == 0)
        return "square_avg";
    if (index == 1 && centered)
        return "grad_avg";
    if (index == 1 + centered)
        return "momentum_buffer";
    return NULL;
}

static void rmsprop_init_state(const double *h, float *const *state,
                               int64_t n)
{
    float one = h[USE_TF_VARIANT] != 0.0 ? 1.0f : 0.0f;

    for (int64_t i = 0; i < n; i++)
        state[0][i] = one;
}

/* The TF variant is folded into coefficients: eps goes inside (e_in) or
** outside (e_out) the square root, and lr scales either the buffer input
** (lr_in) or the weight update (nlr_out). Adding exactly 0 or multiplying
** by exactly 1 leaves the torch arithmetic unchanged. */
typedef struct coefs {
    float wd, a, oma, e_in, e_out, mm, lr_in, nlr_out, nlr;
} coefs;

static void loop_plain(float *restrict w, const float *restrict g,
                       float *restrict sq, int64_t n, coefs k)
{
    for (int64_t i = 0; i < n; i++) {
        float s = g[i] + k.wd * w[i];
        float q = sq[i] * k.a + k.oma * s * s;
        float avg = sqrtf(q + k.e_in) + k.e_out;
        sq[i] = q;
        w[i] = w[i] + k.nlr * s / avg;
    }
}

static void loop_momentum(float *restrict w, const float *restrict g,
                          float *restrict sq, float *restrict buf, int64_t n,
                          coefs k)
{
    for (int64_t i = 0; i < n; i++) {
        float s = g[i] + k.wd * w[i];
        float q = sq[i] * k.a + k.oma * s * s;
        float avg = sqrtf(q + k.e_in) + k.e_out;
        float b = buf[i] * k.mm + k.lr_in * s / avg;
        sq[i] = q;
        buf[i] = b;
        w[i] = w[i] + k.nlr_out * b;
    }
}

static void loop_centered(float *restrict w, const float *restrict g,
                          float *restrict sq, float *restrict ga, int64_t n,
                          coefs k)
{
    for (int64_t i = 0; i < n; i++) {
        float s = g[i] + k.wd * w[i];
        float q = sq[i] * k.a + k.oma * s * s;
        float m = ga[i] * k.a + k.oma * s;
        float avg = sqrtf(q + -1.0f * m * m + k.e_in) + k.e_out;
        sq[i] = q;
        ga[i] = m;
        w[i] = w[i] + k.nlr * s / avg;
    }
}

static void loop_centered_momentum(float *restrict w, const float *restrict g,
                                   float *restrict sq, float *restrict ga,
                                   float *restrict buf, int64_t n, coefs k)
{
    for (int64_t i = 0; i < n; i++) {
        float s = g[i] + k.wd * w[i];
        float q = sq[i] * k.a + k.oma * s * s;
        float m = ga[i] * k.a + k.oma * s;
        float avg = sqrtf(q + -1.0f * m * m + k.e_in) + k.e_out;
        float b = buf[i] * k.mm + k.lr_in * s / avg;
        sq[i] = q;
        ga[i] = m;
        buf[i] = b;
        w[i] = w[i] + k.nlr_out * b;
    }
}

static popc_status rmsprop_step(const popc_optim_step_ctx *c)
{
    const double *h = c->hypers;
    const int centered = h[CENTERED] != 0.0;
    const int tf = h[USE_TF_VARIANT] != 0.0;
    const int mom = h[MOMENTUM] > 0.0;
    popc_status st;
    coefs k;

    if ((st = optim_check_state(c, "rmsprop", 1 + centered + mom,
                                "this configuration")) != POPC_OK)
        return st;
    k.wd = (float)h[WEIGHT_DECAY];
    k.a = (float)h[ALPHA];
    k.oma = (float)(1.0 - h[ALPHA]);
    k.e_in = tf ? (float)h[EPS] : 0.0f;
    k.e_out = tf ? 0.0f : (float)h[EPS];
    k.mm = (float)h[MOMENTUM];
    k.lr_in = tf ? (float)h[LR] : 1.0f;
    k.nlr_out = tf ? -1.0f : (float)-h[LR];
    k.nlr = (float)-h[LR];
    if (centered && mom)
        loop_centered_momentum(c->weight, c->grad, c->state[0], c->state[1],
                               c->state[2], c->n, k);
    else if (centered)
        loop_centered(c->weight, c->grad, c->state[0], c->state[1], c->n, k);
    else if (mom)
        loop_momentum(c->weight, c->grad, c->state[0], c->state[1], c->n, k);
    else
        loop_plain(c->weight, c->grad, c->state[0], c->n, k);
    optim_store_as(h[FIRST_ACCUM_TYPE], c->state[0], c->n);
    if (centered)
        optim_store_as(h[SECOND_ACCUM_TYPE], c->state[1], c->n);
    return POPC_OK;
}

static const popc_optim_def rmsprop_def = {
    .size = sizeof(popc_optim_def),
    .hyper_size = sizeof(popc_hyper_def),
    .name = "rmsprop",
    .n_hypers = N_HYPERS,
    .hypers = rmsprop_hypers,
    .validate = rmsprop_validate,
    .n_state = rmsprop_n_state,
    .state_name = rmsprop_state_name,
    .init_state = rmsprop_init_state,
    .step = rmsprop_step,
    .state_dtype = rmsprop_state_dtype,
    .accum_dtype = rmsprop_accum_dtype,
};

static popc_status rmsprop_init(const popc_host *h, popc_registrar *reg)
{
    host = h;
    return h->register_optimizer(reg, &rmsprop_def);
}

POPC_PLUGIN_DEFINE(rmsprop, "0.1.0",
                   "RMSprop (torch), centered and TensorFlow variants",
                   "MIT", rmsprop_init, NULL)
