/* check_optim_api.c - popc_optimizer: values, groups, variable/constant
** flags, validation texts, replacement rules, state layout, clipping and
** edge cases of the optimizer plugins. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "core/layer/optimizer.h"

static popc_optimizer *make(const char *name)
{
    popc_optimizer *o = NULL;
    popc_status st = popc_optimizer_new(name, &o);

    ck_assert_msg(st == POPC_OK, "%s", popc_last_error());
    return o;
}

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

#define FAILS(call, status, text)                                          \
    do {                                                                   \
        ck_assert_int_eq((call), (status));                                \
        ck_assert_msg(strstr(popc_last_error(), (text)) != NULL,           \
                      "message \"%s\" lacks \"%s\"", popc_last_error(),    \
                      (text));                                             \
    } while (0)

START_TEST(unknown_optimizer)
{
    popc_optimizer *o = (popc_optimizer *)1;

    FAILS(popc_optimizer_new("nope", &o), POPC_ENOTFOUND,
          "Unknown optimizer 'nope'");
    ck_assert_ptr_null(o);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "sgd"));
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "lamb"));
}
END_TEST

START_TEST(all_registered)
{
    const char *names[] = {"sgd", "adam", "adamw", "rmsprop", "lamb"};

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        popc_optimizer *o = make(names[i]);

        ck_assert_str_eq(popc_optimizer_name(o), names[i]);
        ck_assert_str_eq(popci_optimizer_def(o)->name, names[i]);
        popc_optimizer_free(o);
    }
    popc_optimizer_free(NULL);
}
END_TEST

START_TEST(defaults)
{
    popc_optimizer *o = make("adamw");

    ck_assert_double_eq(popc_optimizer_get(o, 0, "lr"), 1e-3);
    ck_assert_double_eq(popc_optimizer_get(o, 0, "weight_decay"), 1e-2);
    ck_assert_double_eq(popc_optimizer_get(o, 0, "bias_correction"), 1.0);
    ck_assert_double_eq(popci_optimizer_loss_scaling(o), 1.0);
    ck_assert(isinf(popci_optimizer_max_grad_norm(o)));
    ck_assert(isnan(popc_optimizer_get(o, 0, "nope")));
    ck_assert(isnan(popc_optimizer_get(o, 3, "lr")));
    popc_optimizer_free(o);

    o = make("adam");
    ck_assert_double_eq(popc_optimizer_get(o, 0, "weight_decay"), 0.0);
    ck_assert_int_eq(popci_optimizer_hyper_index(o, "bias_correction"), -1);
    popc_optimizer_free(o);

    o = make("lamb");
    ck_assert_double_eq(popc_optimizer_get(o, 0, "max_weight_norm"),
                        65500.0);
    ck_assert_double_eq(popc_optimizer_get(o, 0, "weight_decay"), 1e-2);
    popc_optimizer_free(o);

    o = make("rmsprop");
    ck_assert_double_eq(popc_optimizer_get(o, 0, "lr"), 1e-2);
    ck_assert_double_eq(popc_optimizer_get(o, 0, "alpha"), 0.99);
    /* RMSprop has no clipping: the core sees "no limit". */
    ck_assert(isinf(popci_optimizer_max_grad_norm(o)));
    popc_optimizer_free(o);
}
END_TEST

START_TEST(sgd_lr_required)
{
    popc_optimizer *o = make("sgd");
    double vals[POPCI_OPTIM_MAX_HYPERS];

    FAILS(popci_optimizer_hypers(o, 0, vals), POPC_EINVAL, "'lr'");
    OK(popc_optimizer_set(o, "lr", 0.1));
    OK(popci_optimizer_hypers(o, 0, vals));
    ck_assert_double_eq(vals[popci_optimizer_hyper_index(o, "lr")], 0.1);
    popc_optimizer_free(o);
}
END_TEST

/* R4.4: variable iff passed explicitly or marked. */
START_TEST(variable_flags)
{
    popc_optimizer *o = make("adam");

    ck_assert_int_eq(popc_optimizer_is_variable(o, "lr"), 0);
    OK(popc_optimizer_set(o, "lr", 0.01));
    ck_assert_int_eq(popc_optimizer_is_variable(o, "lr"), 1);
    OK(popc_optimizer_mark_constant(o, "lr"));
    ck_assert_int_eq(popc_optimizer_is_variable(o, "lr"), 0);
    ck_assert_double_eq(popc_optimizer_get(o, 0, "lr"), 0.01);
    OK(popc_optimizer_mark_variable(o, "eps"));
    ck_assert_int_eq(popc_optimizer_is_variable(o, "eps"), 1);
    OK(popc_optimizer_mark_variable(o, "loss_scaling"));
    ck_assert_int_eq(popc_optimizer_is_variable(o, "loss_scaling"), 1);
    /* fixed attributes are never variable, even when passed */
    OK(popc_optimizer_set(o, "max_grad_norm", 2.0));
    ck_assert_int_eq(popc_optimizer_is_variable(o, "max_grad_norm"), 0);
    ck_assert_int_eq(popc_optimizer_is_variable(o, "nope"), 0);
    popc_optimizer_free(o);
}
END_TEST

START_TEST(unknown_attribute)
{
    popc_optimizer *o = make("sgd");

    FAILS(popc_optimizer_mark_variable(o, "lrr"), POPC_ENOTFOUND,
          "Unknown attribute lrr, allowed values: ['lr', 'momentum', "
          "'dampening', 'weight_decay', 'nesterov', 'velocity_scaling', "
          "'loss_scaling']");
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "did you mean 'lr'?"));
    FAILS(popc_optimizer_mark_constant(o, "max_grad_norm"), POPC_ENOTFOUND,
          "Unknown attribute max_grad_norm, allowed values: [");
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "fixed"));
    FAILS(popc_optimizer_set(o, "betas", 0.9), POPC_ENOTFOUND,
          "Unknown attribute betas, allowed values: ['lr'");
    /* set lists every attribute, fixed ones included */
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "'max_grad_norm'"));
    FAILS(popc_optimizer_set_group(o, 0, "betas", 0.9), POPC_ENOTFOUND,
          "Unknown attribute betas");
    popc_optimizer_free(o);
}
END_TEST

START_TEST(value_checks)
{
    popc_optimizer *o = make("adam");

    FAILS(popc_optimizer_set(o, "amsgrad", 1), POPC_EINVAL,
          "Only non-amsgrad Adam/AdamW optimizers are supported.");
    ck_assert_double_eq(popc_optimizer_get(o, 0, "amsgrad"), 0.0);
    FAILS(popc_optimizer_set(o, "max_grad_norm", NAN), POPC_EINVAL,
          "Maximum norm of gradients cannot be NaN");
    FAILS(popc_optimizer_set(o, "max_grad_norm", -1.0), POPC_EINVAL,
          "Maximum norm of gradients must be > 0");
    FAILS(popc_optimizer_set(o, "loss_scaling", 0.0), POPC_EINVAL,
          "Loss scaling cannot be 0");
    FAILS(popc_optimizer_set(o, "lr", NAN), POPC_EINVAL, "cannot be NaN");
    FAILS(popc_optimizer_set(o, "lr", -0.1), POPC_EINVAL,
          "Invalid learning rate");
    FAILS(popc_optimizer_set(o, "beta1", 1.0), POPC_EINVAL,
          "Invalid beta parameter at index 0");
    FAILS(popc_optimizer_set(o, "beta2", -0.5), POPC_EINVAL,
          "Invalid beta parameter at index 1");
    FAILS(popc_optimizer_set(o, "second_order_momentum_accum_type", 2),
          POPC_EINVAL, "Accumulation types must be either torch.float32 or "
          "torch.float16");
    OK(popc_optimizer_set(o, "loss_scaling", 128.0));
    ck_assert_double_eq(popci_optimizer_loss_scaling(o), 128.0);
    OK(popc_optimizer_set(o, "max_grad_norm", 0.5));
    ck_assert_double_eq(popci_optimizer_max_grad_norm(o), 0.5);
    popc_optimizer_free(o);

    o = make("adamw");
    FAILS(popc_optimizer_set(o, "amsgrad", 1), POPC_EINVAL,
          "Only non-amsgrad Adam/AdamW optimizers are supported.");
    FAILS(popc_optimizer_set(o, "bias_correction", 0.5), POPC_EINVAL,
          "boolean");
    popc_optimizer_free(o);

    o = make("sgd");
    FAILS(popc_optimizer_set(o, "nesterov", 2), POPC_EINVAL, "boolean");
    FAILS(popc_optimizer_set(o, "momentum", -0.9), POPC_EINVAL,
          "Invalid momentum value");
    FAILS(popc_optimizer_set(o, "velocity_scaling", 0), POPC_EINVAL,
          "velocity_scaling must be > 0");
    FAILS(popc_optimizer_set(o, "velocity_accum_type", 3), POPC_EINVAL,
          "Accumulation types");
    popc_optimizer_free(o);

    o = make("lamb");
    FAILS(popc_optimizer_set(o, "max_weight_norm", -1), POPC_EINVAL,
          "max_weight_norm must be >= 0");
    popc_optimizer_free(o);
}
END_TEST

START_TEST(groups)
{
    popc_optimizer *o = make("sgd");
    int g1 = 0, g2 = 0, g3 = 0;

    OK(popc_optimizer_set(o, "lr", 0.1));
    OK(popc_optimizer_add_group(o, " fc1. , fc2.", &g1));
    ck_assert_int_eq(g1, 1);
    OK(popc_optimizer_add_group(o, "fc1.bias", &g2));
    ck_assert_int_eq(g2, 2);
    ck_assert_int_eq(popci_optimizer_group_count(o), 3);
    ck_assert_int_eq(popci_optimizer_group_of(o, "fc1.weight"), 1);
    ck_assert_int_eq(popci_optimizer_group_of(o, "fc2.bias"), 1);
    /* the longest matching prefix wins */
    ck_assert_int_eq(popci_optimizer_group_of(o, "fc1.bias"), 2);
    ck_assert_int_eq(popci_optimizer_group_of(o, "fc3.weight"), 0);
    ck_assert_int_eq(popci_optimizer_group_of(o, NULL), 0);
    FAILS(popc_optimizer_add_group(o, "fc2.", &g3), POPC_EINVAL,
          "already belongs to parameter group 1");
    ck_assert_int_eq(g3, -1);
    FAILS(popc_optimizer_add_group(o, "fc4.,,fc5.", &g3), POPC_EINVAL,
          "empty weight-name prefix");
    ck_assert_int_eq(popci_optimizer_group_count(o), 3);

    OK(popc_optimizer_set_group(o, g1, "lr", 0.5));
    ck_assert_double_eq(popc_optimizer_get(o, g1, "lr"), 0.5);
    ck_assert_double_eq(popc_optimizer_get(o, g2, "lr"), 0.1);
    /* groups without their own value follow later changes of group 0 */
    OK(popc_optimizer_set(o, "lr", 0.2));
    ck_assert_double_eq(popc_optimizer_get(o, g1, "lr"), 0.5);
    ck_assert_double_eq(popc_optimizer_get(o, g2, "lr"), 0.2);
    FAILS(popc_optimizer_set_group(o, g1, "loss_scaling", 2.0), POPC_EINVAL,
          "is global");
    FAILS(popc_optimizer_set_group(o, 7, "lr", 2.0), POPC_EINVAL,
          "no parameter group 7");
    /* validation sees the group's own values */
    FAILS(popc_optimizer_set_group(o, g2, "momentum", -1.0), POPC_EINVAL,
          "Invalid momentum value");
    popc_optimizer_free(o);
}
END_TEST

START_TEST(clone_is_deep)
{
    popc_optimizer *o = make("rmsprop"), *c = NULL;
    int g = 0;

    OK(popc_optimizer_set(o, "lr", 0.05));
    OK(popc_optimizer_add_group(o, "a.", &g));
    OK(popc_optimizer_set_group(o, g, "momentum", 0.3));
    OK(popc_optimizer_clone(o, &c));
    OK(popc_optimizer_set(o, "lr", 0.07));
    ck_assert_double_eq(popc_optimizer_get(c, 0, "lr"), 0.05);
    ck_assert_double_eq(popc_optimizer_get(c, g, "momentum"), 0.3);
    ck_assert_int_eq(popci_optimizer_group_of(c, "a.x"), g);
    ck_assert_int_eq(popc_optimizer_is_variable(c, "lr"), 1);
    OK(popci_optimizer_check_replacement(o, c));
    popc_optimizer_free(o);
    popc_optimizer_free(c);
}
END_TEST

/* R4.5: PopART's texts. */
START_TEST(replacement)
{
    popc_optimizer *a = make("adam"), *b = make("adam");
    popc_optimizer *s = make("sgd");
    int g = 0;

    OK(popci_optimizer_check_replacement(a, b));
    FAILS(popci_optimizer_check_replacement(a, s), POPC_EINVAL,
          "Can not replace optimizer of type adam with new optimizer of "
          "type sgd");
    /* constant lr (never passed) vs a passed one */
    OK(popc_optimizer_set(b, "lr", 0.02));
    FAILS(popci_optimizer_check_replacement(a, b), POPC_EINVAL,
          "Problem with learning rates. Can not replace a constant value "
          "with a non constant value.");
    OK(popc_optimizer_mark_constant(b, "lr"));
    FAILS(popci_optimizer_check_replacement(a, b), POPC_EINVAL,
          "Problem with learning rates. Values are constant but do not "
          "match.");
    ck_assert_ptr_nonnull(strstr(popc_last_error(),
                                 "popc_optimizer_mark_variable"));
    /* both variable: any value */
    OK(popc_optimizer_set(a, "lr", 0.5));
    OK(popc_optimizer_mark_variable(b, "lr"));
    OK(popci_optimizer_check_replacement(a, b));
    /* loss scaling is checked first */
    OK(popc_optimizer_set(b, "loss_scaling", 64.0));
    OK(popc_optimizer_set(b, "eps", 1e-6));
    FAILS(popci_optimizer_check_replacement(a, b), POPC_EINVAL,
          "Problem with loss scaling. Can not replace a constant value");
    OK(popc_optimizer_set(a, "loss_scaling", 2.0));
    FAILS(popci_optimizer_check_replacement(a, b), POPC_EINVAL,
          "Problem with eps.");
    OK(popc_optimizer_set(a, "eps", 1e-7));
    OK(popci_optimizer_check_replacement(a, b));
    /* clipping */
    OK(popc_optimizer_set(b, "max_grad_norm", 1.0));
    FAILS(popci_optimizer_check_replacement(a, b), POPC_EINVAL,
          "Clip norm settings do not match.");
    OK(popc_optimizer_set(a, "max_grad_norm", 1.0));
    OK(popci_optimizer_check_replacement(a, b));
    /* groups are part of the compiled program */
    OK(popc_optimizer_add_group(b, "fc.", &g));
    FAILS(popci_optimizer_check_replacement(a, b), POPC_EINVAL,
          "parameter group");
    OK(popc_optimizer_add_group(a, "conv.", &g));
    FAILS(popci_optimizer_check_replacement(a, b), POPC_EINVAL,
          "parameter group 1");
    popc_optimizer_free(a);
    popc_optimizer_free(b);
    popc_optimizer_free(s);

    /* a constant group value (group values do not change the flags) */
    a = make("sgd");
    b = make("sgd");
    OK(popc_optimizer_set(a, "lr", 0.1));
    OK(popc_optimizer_set(b, "lr", 0.1));
    OK(popc_optimizer_add_group(a, "x.", &g));
    OK(popc_optimizer_add_group(b, "x.", &g));
    OK(popc_optimizer_set_group(a, g, "momentum", 0.9));
    OK(popc_optimizer_set_group(b, g, "momentum", 0.8));
    FAILS(popci_optimizer_check_replacement(a, b), POPC_EINVAL,
          "Problem with momentums. Values are constant but do not match.");
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "group 1"));
    popc_optimizer_free(a);
    popc_optimizer_free(b);

    /* fixed attributes */
    a = make("rmsprop");
    b = make("rmsprop");
    OK(popc_optimizer_set(b, "centered", 1));
    FAILS(popci_optimizer_check_replacement(a, b), POPC_EINVAL,
          "Problem with centered.");
    popc_optimizer_free(a);
    popc_optimizer_free(b);
}
END_TEST

START_TEST(state_layout)
{
    popc_optimizer *o = make("sgd");
    float s0[3] = {5, 5, 5}, s1[3] = {5, 5, 5}, s2[3] = {5, 5, 5};
    float *st[3] = {s0, s1, s2};

    OK(popc_optimizer_set(o, "lr", 0.1));
    /* momentum left constant at 0: no velocity */
    ck_assert_int_eq(popci_optimizer_n_state(o, 0), 0);
    ck_assert_ptr_null(popci_optimizer_state_name(o, 0, 0));
    /* passed explicitly, even as 0: variable, so the velocity exists */
    OK(popc_optimizer_set(o, "momentum", 0.0));
    ck_assert_int_eq(popci_optimizer_n_state(o, 0), 1);
    ck_assert_str_eq(popci_optimizer_state_name(o, 0, 0), "momentum_buffer");
    OK(popc_optimizer_set(o, "use_combined_accum", 1));
    ck_assert_str_eq(popci_optimizer_state_name(o, 0, 0),
                     "combined_velocity");
    popc_optimizer_free(o);

    o = make("rmsprop");
    OK(popc_optimizer_set(o, "centered", 1));
    OK(popc_optimizer_set(o, "use_tf_variant", 1));
    ck_assert_int_eq(popci_optimizer_n_state(o, 0), 2);
    OK(popc_optimizer_mark_variable(o, "momentum"));
    ck_assert_int_eq(popci_optimizer_n_state(o, 0), 3);
    ck_assert_str_eq(popci_optimizer_state_name(o, 0, 0), "square_avg");
    ck_assert_str_eq(popci_optimizer_state_name(o, 0, 1), "grad_avg");
    ck_assert_str_eq(popci_optimizer_state_name(o, 0, 2), "momentum_buffer");
    ck_assert_ptr_null(popci_optimizer_state_name(o, 0, 3));
    popci_optimizer_init_state(o, 0, st, 3);
    for (int i = 0; i < 3; i++) {
        ck_assert_float_eq(s0[i], 1.0f); /* TF: square average starts at 1 */
        ck_assert_float_eq(s1[i], 0.0f);
        ck_assert_float_eq(s2[i], 0.0f);
    }
    popc_optimizer_free(o);

    o = make("adam");
    ck_assert_int_eq(popci_optimizer_n_state(o, 0), 2);
    ck_assert_str_eq(popci_optimizer_state_name(o, 0, 0), "exp_avg");
    ck_assert_str_eq(popci_optimizer_state_name(o, 0, 1), "exp_avg_sq");
    popc_optimizer_free(o);
}
END_TEST

/* A variable momentum of 0 has a velocity but must not use it until
** momentum becomes non-zero. */
START_TEST(sgd_variable_momentum)
{
    popc_optimizer *o = make("sgd");
    float w[2] = {1.0f, -2.0f}, g[2] = {0.5f, 0.25f}, v[2] = {0, 0};
    float *st[1] = {v};

    OK(popc_optimizer_set(o, "lr", 0.1));
    OK(popc_optimizer_set(o, "momentum", 0.0));
    OK(popci_optimizer_apply(o, "w", 1, w, g, st, 2));
    ck_assert_float_eq_tol(w[0], 0.95f, 1e-7f);
    ck_assert_float_eq_tol(w[1], -2.025f, 1e-7f);
    ck_assert_float_eq(v[0], 0.0f);
    OK(popc_optimizer_set(o, "momentum", 0.5));
    OK(popci_optimizer_apply(o, "w", 2, w, g, st, 2));
    /* v = 0.5*0 + g; w -= 0.1*v */
    ck_assert_float_eq_tol(v[0], 0.5f, 1e-7f);
    ck_assert_float_eq_tol(w[0], 0.90f, 1e-6f);
    /* a velocity that was never allocated is an error, not a crash */
    FAILS(popci_optimizer_apply(o, "w", 3, w, g, NULL, 2), POPC_EINTERNAL,
          "weight 'w'");
    popc_optimizer_free(o);
}
END_TEST

/* LAMB's trust ratio falls back to 1 for a zero weight (phi == 0). */
START_TEST(lamb_zero_weight)
{
    popc_optimizer *o = make("lamb");
    float w[2] = {0, 0}, g[2] = {0.5f, -2.0f}, m[2] = {0}, v[2] = {0};
    float *st[2] = {m, v};

    OK(popc_optimizer_set(o, "lr", 0.1));
    OK(popci_optimizer_apply(o, "w", 1, w, g, st, 2));
    /* step 1: m_hat = g, v_hat = g^2, x = g / (|g| + eps) = sign(g) */
    ck_assert_float_eq_tol(w[0], -0.1f, 1e-6f);
    ck_assert_float_eq_tol(w[1], 0.1f, 1e-6f);
    popc_optimizer_free(o);
}
END_TEST

/* AdamW without bias correction (R4.3) really skips it: on step 1 the
** update is lr * (1-b1) g / (sqrt(1-b2) |g| + eps). */
START_TEST(adamw_no_bias_step1)
{
    popc_optimizer *o = make("adamw");
    float w[1] = {1.0f}, g[1] = {0.5f}, m[1] = {0}, v[1] = {0};
    float *st[2] = {m, v};
    double want;

    OK(popc_optimizer_set(o, "lr", 0.1));
    OK(popc_optimizer_set(o, "weight_decay", 0.0));
    OK(popc_optimizer_set(o, "bias_correction", 0));
    OK(popci_optimizer_apply(o, "w", 1, w, g, st, 1));
    want = 1.0 - 0.1 * (0.1 * 0.5) / (sqrt(0.001 * 0.25) + 1e-8);
    ck_assert_double_eq_tol(w[0], want, 1e-6);
    popc_optimizer_free(o);
}
END_TEST

START_TEST(clip_by_global_norm)
{
    float a[2] = {3.0f, 0.0f}, b[1] = {4.0f};
    float *grads[2] = {a, b};
    int64_t n[2] = {2, 1};
    double norm;

    norm = popci_clip_by_global_norm(grads, n, 2, INFINITY);
    ck_assert_double_eq_tol(norm, 5.0, 1e-12);
    ck_assert_float_eq(a[0], 3.0f);
    norm = popci_clip_by_global_norm(grads, n, 2, 10.0);
    ck_assert_double_eq_tol(norm, 5.0, 1e-12);
    ck_assert_float_eq(b[0], 4.0f);
    norm = popci_clip_by_global_norm(grads, n, 2, 1.0);
    ck_assert_double_eq_tol(norm, 5.0, 1e-12);
    ck_assert_float_eq_tol(a[0], 0.6f, 1e-7f);
    ck_assert_float_eq_tol(b[0], 0.8f, 1e-7f);
    ck_assert_float_eq(a[1], 0.0f);
}
END_TEST

/* Long tensors exercise the 8-wide partial sums and their tail. */
START_TEST(clip_long_tensor)
{
    enum { N = 1003 };
    float *g = malloc(N * sizeof *g);
    float *grads[1] = {g};
    int64_t n[1] = {N};
    double want = 0.0, norm, after = 0.0;

    ck_assert_ptr_nonnull(g);
    for (int i = 0; i < N; i++) {
        g[i] = (float)((i % 7) - 3) * 0.5f;
        want += (double)g[i] * g[i];
    }
    norm = popci_clip_by_global_norm(grads, n, 1, 1.0);
    ck_assert_double_eq_tol(norm, sqrt(want), 1e-9);
    for (int i = 0; i < N; i++)
        after += (double)g[i] * g[i];
    ck_assert_double_eq_tol(sqrt(after), 1.0, 1e-5);
    free(g);
}
END_TEST

/* float16 state: the velocity is stored rounded to half precision. */
START_TEST(fp16_velocity)
{
    popc_optimizer *o = make("sgd");
    float w[3] = {0, 0, 0}, g[3] = {1.0f / 3.0f, 1e-6f, 70000.0f};
    float v[3] = {0};
    float *st[1] = {v};

    OK(popc_optimizer_set(o, "lr", 0.0));
    OK(popc_optimizer_set(o, "momentum", 0.9));
    OK(popc_optimizer_set(o, "velocity_accum_type", 1));
    OK(popci_optimizer_apply(o, "w", 1, w, g, st, 3));
    ck_assert_float_eq(v[0], 0.333251953125f);  /* nearest half of 1/3 */
    ck_assert_float_eq(v[1], 1.013278961181640625e-06f); /* subnormal */
    ck_assert(isinf(v[2]));
    popc_optimizer_free(o);
}
END_TEST

static Suite *api_suite(void)
{
    Suite *s = suite_create("optim_api");
    TCase *tc = tcase_create("api");

    tcase_add_test(tc, unknown_optimizer);
    tcase_add_test(tc, all_registered);
    tcase_add_test(tc, defaults);
    tcase_add_test(tc, sgd_lr_required);
    tcase_add_test(tc, variable_flags);
    tcase_add_test(tc, unknown_attribute);
    tcase_add_test(tc, value_checks);
    tcase_add_test(tc, groups);
    tcase_add_test(tc, clone_is_deep);
    tcase_add_test(tc, replacement);
    tcase_add_test(tc, state_layout);
    tcase_add_test(tc, sgd_variable_momentum);
    tcase_add_test(tc, lamb_zero_weight);
    tcase_add_test(tc, adamw_no_bias_step1);
    tcase_add_test(tc, clip_by_global_norm);
    tcase_add_test(tc, clip_long_tensor);
    tcase_add_test(tc, fp16_velocity);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(api_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
