/* check_optim.c - the optimizer plugins against torch.optim, step by step.
**
** tests/ref/gen_optim.py trained a small MLP with every optimizer case and
** saved, per step, the gradients it fed (before clipping) and the
** parameters after the step (tests/ref/optim/). Here each case replays
** those gradients through popc: the hyper-parameters of its cases.txt
** line, global clipping with popci_clip_by_global_norm when max_grad_norm
** is set, then popci_optimizer_apply per weight. After every step the
** parameters must match torch's within TOL. The gradients come from the
** reference trajectory, so errors cannot feed back through the model.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "core/layer/optimizer.h"

#define TOL 1e-5
#define MAX_CASES 64
#define MAX_TENSORS 8
#define MAX_TOKENS 32

typedef struct ref_case {
    char name[64];
    char optim[32];
    int steps;
    int n_tokens;
    char tokens[MAX_TOKENS][96];
} ref_case;

static ref_case cases[MAX_CASES];
static int n_cases;
static char tensor_name[MAX_TENSORS][32];
static int64_t tensor_size[MAX_TENSORS];
static int n_tensors;
static char load_problem[4608];

/* Every optimizer and variant the parity run must cover. */
static const char *const required[] = {
    "sgd", "sgd_momentum", "sgd_dampening", "sgd_nesterov",
    "sgd_weight_decay", "sgd_all", "sgd_lr_change", "sgd_groups",
    "sgd_velocity_fp16", "sgd_combined", "sgd_combined_nesterov",
    "sgd_combined_lagged", "sgd_clip", "adam", "adam_weight_decay",
    "adam_betas", "adam_fp16_moments", "adam_clip", "adamw",
    "adamw_weight_decay", "adamw_no_bias", "adamw_clip", "rmsprop",
    "rmsprop_centered", "rmsprop_momentum", "rmsprop_weight_decay",
    "rmsprop_centered_momentum", "rmsprop_tf", "rmsprop_tf_momentum",
    "rmsprop_tf_centered", "lamb", "lamb_no_bias", "lamb_max_weight_norm",
    "lamb_trust_above_one",
};

static const char *ref_dir(void)
{
    const char *d = getenv("POPC_TEST_REF");
    return d ? d : "tests/ref";
}

static int parse_layout(char *rest)
{
    for (char *tok = strtok(rest, " \n"); tok; tok = strtok(NULL, " \n")) {
        char *colon = strrchr(tok, ':');

        if (!colon || n_tensors == MAX_TENSORS)
            return -1;
        *colon = '\0';
        snprintf(tensor_name[n_tensors], sizeof tensor_name[0], "%s", tok);
        tensor_size[n_tensors++] = strtoll(colon + 1, NULL, 10);
    }
    return n_tensors > 0 ? 0 : -1;
}

static int parse_case(char *rest)
{
    ref_case *c;
    char *tok;

    if (n_cases == MAX_CASES)
        return -1;
    c = &cases[n_cases];
    memset(c, 0, sizeof *c);
    if (!(tok = strtok(rest, " \n")))
        return -1;
    snprintf(c->name, sizeof c->name, "%s", tok);
    if (!(tok = strtok(NULL, " \n")))
        return -1;
    snprintf(c->optim, sizeof c->optim, "%s", tok);
    if (!(tok = strtok(NULL, " \n")) || (c->steps = atoi(tok)) < 1)
        return -1;
    while ((tok = strtok(NULL, " \n")) && c->n_tokens < MAX_TOKENS)
        snprintf(c->tokens[c->n_tokens++], sizeof c->tokens[0], "%s", tok);
    n_cases++;
    return 0;
}

/* Reads cases.txt; on failure load_problem says why (reported by a test). */
static void load_manifest(void)
{
    char path[4096], line[4096];
    FILE *f;

    snprintf(path, sizeof path, "%s/optim/cases.txt", ref_dir());
    if (!(f = fopen(path, "r"))) {
        snprintf(load_problem, sizeof load_problem, "cannot open %s", path);
        return;
    }
    while (fgets(line, sizeof line, f)) {
        int bad = 0;

        if (strncmp(line, "layout ", 7) == 0)
            bad = parse_layout(line + 7);
        else if (strncmp(line, "case ", 5) == 0)
            bad = parse_case(line + 5);
        if (bad) {
            snprintf(load_problem, sizeof load_problem,
                     "%s: cannot parse line: %.200s", path, line);
            break;
        }
    }
    fclose(f);
}

static popc_tensor *load_npy(const char *case_name, const char *what)
{
    char path[4096];
    popc_tensor *t = NULL;
    popc_status st;

    snprintf(path, sizeof path, "%s/optim/%s_%s.npy", ref_dir(), case_name,
             what);
    st = popc_npy_load(path, &t);
    ck_assert_msg(st == POPC_OK, "%s", popc_last_error());
    ck_assert_int_eq(popc_tensor_dtype(t), POPC_DTYPE_F32);
    ck_assert_int_eq(popc_tensor_rank(t), 2);
    return t;
}

/* Applies the tokens of a case that belong to step `step` (0: before
** compiling: key=value and group=PREFIX:key=value). */
static void apply_tokens(popc_optimizer *o, const ref_case *c, int step)
{
    for (int i = 0; i < c->n_tokens; i++) {
        char key[64], prefix[64];
        const char *tok = c->tokens[i];
        const char *eq = strchr(tok, '=');
        const char *at = strchr(tok, '@');
        popc_status st = POPC_OK;
        double value;
        int at_step = 0;

        ck_assert_ptr_nonnull(eq);
        value = strtod(strrchr(tok, '=') + 1, NULL);
        if (strncmp(tok, "group=", 6) == 0) {
            const char *colon = strchr(tok + 6, ':');
            const char *eq2 = colon ? strchr(colon, '=') : NULL;
            int g = -1;

            ck_assert_ptr_nonnull(eq2);
            if (step != 0)
                continue;
            snprintf(prefix, sizeof prefix, "%.*s", (int)(colon - tok - 6),
                     tok + 6);
            snprintf(key, sizeof key, "%.*s", (int)(eq2 - colon - 1),
                     colon + 1);
            for (int k = 1; k < popci_optimizer_group_count(o); k++)
                if (popci_optimizer_group_of(o, prefix) == k)
                    g = k;
            if (g < 0)
                ck_assert_int_eq(popc_optimizer_add_group(o, prefix, &g),
                                 POPC_OK);
            st = popc_optimizer_set_group(o, g, key, value);
        } else {
            if (at && at < eq)
                at_step = atoi(at + 1);
            if (at_step != step)
                continue;
            snprintf(key, sizeof key, "%.*s",
                     (int)((at && at < eq ? at : eq) - tok), tok);
            st = popc_optimizer_set(o, key, value);
        }
        ck_assert_msg(st == POPC_OK, "case %s, token %s: %s", c->name, tok,
                      popc_last_error());
    }
}

/* Largest difference over the whole run; fails at the first step beyond
** TOL. */
static double run_case(const ref_case *c)
{
    popc_tensor *grads = load_npy(c->name, "grads");
    popc_tensor *params = load_npy(c->name, "params");
    const float *gdata = popc_tensor_cdata(grads);
    const float *pdata = popc_tensor_cdata(params);
    int64_t total = 0, off[MAX_TENSORS];
    float *w[MAX_TENSORS], *g[MAX_TENSORS], *state[MAX_TENSORS][8];
    int n_state[MAX_TENSORS];
    popc_optimizer *o = NULL;
    double worst = 0.0;
    popc_status st;

    for (int t = 0; t < n_tensors; t++) {
        off[t] = total;
        total += tensor_size[t];
    }
    ck_assert_int_eq(popc_tensor_dims(grads)[0], c->steps);
    ck_assert_int_eq(popc_tensor_dims(grads)[1], total);
    ck_assert_int_eq(popc_tensor_dims(params)[0], c->steps + 1);
    ck_assert_int_eq(popc_tensor_dims(params)[1], total);

    st = popc_optimizer_new(c->optim, &o);
    ck_assert_msg(st == POPC_OK, "%s", popc_last_error());
    apply_tokens(o, c, 0);

    for (int t = 0; t < n_tensors; t++) {
        int grp = popci_optimizer_group_of(o, tensor_name[t]);

        w[t] = malloc((size_t)tensor_size[t] * sizeof(float));
        g[t] = malloc((size_t)tensor_size[t] * sizeof(float));
        ck_assert(w[t] && g[t]);
        memcpy(w[t], pdata + off[t], (size_t)tensor_size[t] * sizeof(float));
        n_state[t] = popci_optimizer_n_state(o, grp);
        ck_assert_int_le(n_state[t], 8);
        for (int k = 0; k < n_state[t]; k++) {
            state[t][k] = malloc((size_t)tensor_size[t] * sizeof(float));
            ck_assert_ptr_nonnull(state[t][k]);
        }
        popci_optimizer_init_state(o, grp, state[t], tensor_size[t]);
    }

    for (int s = 1; s <= c->steps; s++) {
        double mgn;

        if (s > 1)
            apply_tokens(o, c, s);
        for (int t = 0; t < n_tensors; t++)
            memcpy(g[t], gdata + (s - 1) * total + off[t],
                   (size_t)tensor_size[t] * sizeof(float));
        mgn = popci_optimizer_max_grad_norm(o);
        if (!isinf(mgn))
            popci_clip_by_global_norm(g, tensor_size, n_tensors, mgn);
        for (int t = 0; t < n_tensors; t++) {
            const float *want = pdata + s * total + off[t];
            double d = 0.0;

            st = popci_optimizer_apply(o, tensor_name[t], s, w[t], g[t],
                                       state[t], tensor_size[t]);
            ck_assert_msg(st == POPC_OK, "%s", popc_last_error());
            for (int64_t i = 0; i < tensor_size[t]; i++) {
                double e = fabs((double)w[t][i] - want[i]);
                if (!(e <= d))
                    d = e;
            }
            ck_assert_msg(d <= TOL,
                          "case %s, step %d, %s: max |popc - torch| = %g > "
                          "%g", c->name, s, tensor_name[t], d, TOL);
            if (d > worst)
                worst = d;
        }
    }

    for (int t = 0; t < n_tensors; t++) {
        for (int k = 0; k < n_state[t]; k++)
            free(state[t][k]);
        free(w[t]);
        free(g[t]);
    }
    popc_optimizer_free(o);
    popc_tensor_free(grads);
    popc_tensor_free(params);
    return worst;
}

START_TEST(manifest_complete)
{
    ck_assert_msg(!load_problem[0], "%s", load_problem);
    ck_assert_int_ge(n_tensors, 2);
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        int found = 0;

        for (int k = 0; k < n_cases; k++)
            found |= strcmp(cases[k].name, required[i]) == 0;
        ck_assert_msg(found, "tests/ref/optim/cases.txt lacks case %s; run "
                      "tests/ref/gen_optim.py", required[i]);
    }
}
END_TEST

START_TEST(parity)
{
    const ref_case *c = &cases[_i];
    double worst = run_case(c);

    /* The log shows how close each case came. */
    printf("optim parity %-28s %-8s max |popc - torch| = %.3g\n", c->name,
           c->optim, worst);
}
END_TEST

/* The clipping reference is torch's clip_grad_norm_; this checks that
** clipping really took place in the clip cases (norms >> 0.001). */
START_TEST(clip_cases_clip)
{
    for (int k = 0; k < n_cases; k++) {
        popc_tensor *grads;
        float *rows[1];
        int64_t n[1];
        double norm;

        if (!strstr(cases[k].name, "_clip"))
            continue;
        grads = load_npy(cases[k].name, "grads");
        rows[0] = popc_tensor_data(grads);
        n[0] = popc_tensor_dims(grads)[1];
        norm = popci_clip_by_global_norm(rows, n, 1, 0.001);
        ck_assert_double_gt(norm, 0.01);
        popc_tensor_free(grads);
    }
}
END_TEST

static Suite *optim_suite(void)
{
    Suite *s = suite_create("optim_parity");
    TCase *tc = tcase_create("torch");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, manifest_complete);
    tcase_add_loop_test(tc, parity, 0, n_cases);
    tcase_add_test(tc, clip_cases_clip);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr;
    int failed;

    load_manifest();
    sr = srunner_create(optim_suite());
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
