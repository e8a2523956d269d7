/* check_model_grads.c - whole-model gradients of the example MLP and CNN
** against PyTorch (tests/ref/gen_model_grads.py, files in
** tests/ref/model_grads/).
**
** Both models are built with layers.h exactly as the example run files
** describe them (and once more from the run files themselves), their
** weights are overwritten with the reference's formula, and one batch of
** 16 Fashion-MNIST test images gives the loss and every parameter's
** gradient three ways: autodiff on the reference kernels
** (popc_graph_gradients + popc_graph_eval), and one step of plain SGD with
** lr 1 through a training model on the cpu and ipumodel backends, where
** w_before - w_after is the gradient.
**
** Tolerance. The reference is computed in float64, popc in float32. An
** element that is a sum of many products of both signs (every weight
** gradient here) carries a float32 error proportional to the tensor's
** magnitude, not its own: torch's own float32 gradients differ from
** float64 by up to 8e-4 relative on their smallest elements, but by at
** most 1.6e-6 of the tensor's largest gradient (gen_model_grads.py prints
** these). So an element passes when
**
**   |got - want| <= 1e-5 |want| + min(1e-6, 4e-6 max|want|)
**
** 1e-5 relative, with an absolute floor for tiny values: 1e-6, tightened
** to 4e-6 of the tensor's largest gradient where that is smaller (the
** largest gradients range from 7e-4 to 1.3, and a fixed 1e-6 would be
** 1.4e-3 of fc1.bias's). Recovering a gradient from an SGD step adds the
** rounding of w - g, half an ulp of w: 2^-24 |w| more. The fingerprint
** statistics compare the sum to 1e-5 of sum |g|, the L2 norm and max |g|
** to 1e-5 relative, and the loss to 1e-5 relative. Each check prints the
** largest relative differences it saw.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <check.h>

#include "popc/popc.h"
#include "popc/run.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

#define BATCH 16
#define RTOL 1e-5
#define ATOL 1e-6
#define ATOL_OF_MAX 4e-6
#define N_PARAMS 6

#define DATA_DIR "/usr/share/datasets/fashion-mnist/"
#define IMAGES DATA_DIR "t10k-images-idx3-ubyte.gz"
#define LABELS DATA_DIR "t10k-labels-idx1-ubyte.gz"

typedef struct model_spec {
    const char *tag;                /* "mlp": file prefix */
    const char *ini;                /* the example run file */
    const char *params[N_PARAMS];   /* in torch's named_parameters order */
} model_spec;

static const model_spec mlp = {
    "mlp", "fashion-mnist-mlp.ini",
    {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight",
     "fc3.bias"}};
static const model_spec cnn = {
    "cnn", "fashion-mnist-cnn.ini",
    {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc.weight",
     "fc.bias"}};

/* ---- reference files and data ------------------------------------------- */

static popc_tensor *ref(const char *name)
{
    const char *dir = getenv("POPC_TEST_REF");
    char path[4096];
    popc_tensor *t = NULL;

    snprintf(path, sizeof path, "%s/model_grads/%s.npy",
             dir ? dir : "tests/ref", name);
    OK(popc_npy_load(path, &t));
    return t;
}

/* "<tag>_<param>_<what>" with '.' as '_'; NULL when the file is absent
** (only _idx is optional: small gradients are stored whole). */
static popc_tensor *ref_param(const char *tag, const char *param,
                              const char *what, int optional)
{
    const char *dir = getenv("POPC_TEST_REF");
    char name[256], path[4096];

    snprintf(name, sizeof name, "%s_%s_%s", tag, param, what);
    for (char *p = name; *p; p++)
        if (*p == '.')
            *p = '_';
    snprintf(path, sizeof path, "%s/model_grads/%s.npy",
             dir ? dir : "tests/ref", name);
    if (optional && access(path, R_OK) != 0)
        return NULL;
    return ref(name);
}

/* The first BATCH test images, normalised as the examples do, each of
** the given sample shape; labels int32. Checked against the
** reference's labels and statistics so both sides are known to use the
** same batch. */
static void load_batch(const int64_t *shape, int rank, popc_tensor **x,
                       popc_tensor **labels)
{
    static const float mean = 0.2860f, std = 0.3530f;
    popc_dataset *ds = NULL;
    popc_tensor *want_labels = ref("batch_labels"), *want_stats;
    int64_t idx[BATCH], dims[POPC_MAX_RANK], n = BATCH;
    const float *stats, *p;
    double sum = 0.0, sq = 0.0;

    OK(popc_dataset_load_idx(IMAGES, LABELS, &ds));
    OK(popc_dataset_normalize(ds, &mean, &std, 1));
    OK(popc_dataset_set_sample_shape(ds, shape, rank));
    dims[0] = BATCH;
    memcpy(dims + 1, shape, (size_t)rank * sizeof *dims);
    OK(popc_tensor_new(POPC_DTYPE_F32, dims, rank + 1, x));
    OK(popc_tensor_new(POPC_DTYPE_I32, &n, 1, labels));
    for (int i = 0; i < BATCH; i++)
        idx[i] = i;
    OK(popc_dataset_gather(ds, idx, BATCH, popc_tensor_data(*x),
                           popc_tensor_data(*labels)));
    popc_dataset_free(ds);

    ck_assert(memcmp(popc_tensor_cdata(*labels),
                     popc_tensor_cdata(want_labels),
                     BATCH * sizeof(int32_t)) == 0);
    p = popc_tensor_cdata(*x);
    for (int64_t i = 0; i < popc_tensor_numel(*x); i++) {
        sum += p[i];
        sq += (double)p[i] * p[i];
    }
    want_stats = ref("batch_stats");
    stats = popc_tensor_cdata(want_stats);
    ck_assert_msg(fabs(sum - stats[0]) < 1e-5 * sq &&
                      fabs(sq - stats[1]) < 1e-5 * sq,
                  "the batch differs from the reference's: sum %.6f "
                  "(want %.6f), sum of squares %.6f (want %.6f)",
                  sum, (double)stats[0], sq, (double)stats[1]);
    popc_tensor_free(want_stats);
    popc_tensor_free(want_labels);
}

/* ---- the models ---------------------------------------------------------- */

/* Weights by gen_model_grads.py's formula: element i of the k-th
** parameter is s sin(0.37 i + 0.5 + k), s = 1/sqrt(fan_in of its layer).
** The model must have no other trainable weight. */
static void set_formula_weights(popc_graph *g, const model_spec *spec)
{
    int trainable = 0;

    for (int v = 0; v < popc_graph_n_values(g); v++)
        trainable += popc_graph_value_kind(g, v) == POPC_VALUE_INITIALIZER &&
                     popc_graph_value_trainable(g, v);
    ck_assert_int_eq(trainable, N_PARAMS);
    for (int k = 0; k < N_PARAMS; k++) {
        const char *name = spec->params[k];
        char wname[64];
        int id = popc_graph_find_value(g, name), wid;
        popc_tensor *t = NULL;
        popc_view wv;
        int64_t fan_in = 1;
        float *w;

        ck_assert_msg(id >= 0, "%s: no parameter %s", spec->tag, name);
        snprintf(wname, sizeof wname, "%.*s.weight",
                 (int)(strrchr(name, '.') - name), name);
        wid = popc_graph_find_value(g, wname);
        ck_assert_int_ge(wid, 0);
        wv = popc_graph_value_info(g, wid);
        for (int d = 1; d < wv.rank; d++)
            fan_in *= wv.dims[d];
        OK(popc_tensor_clone(popc_graph_value_tensor(g, id), &t));
        w = popc_tensor_data(t);
        for (int64_t i = 0; i < popc_tensor_numel(t); i++)
            w[i] = (float)(sin(0.37 * (double)i + 0.5 + k) /
                           sqrt((double)fan_in));
        OK(popc_graph_set_initializer(g, id, t));
        popc_tensor_free(t);
    }
}

/* The example architectures with layers.h; inputs "x" and "labels", the
** mean cross-entropy as the only output. */
static popc_graph *build(const model_spec *spec)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int64_t lab_dims[1] = {BATCH};
    int x, labels, v, loss;

    OK(popc_graph_new(spec->tag, &g));
    OK(popc_layers_new(g, 0, &L));
    if (spec == &mlp) {
        int64_t dims[2] = {BATCH, 784};

        OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, dims, 2, &x));
        OK(popc_nn_linear(L, "fc1", x, 784, 512, 1, &v));
        OK(popc_nn_activation(L, "Relu", v, 0.0, &v));
        OK(popc_nn_linear(L, "fc2", v, 512, 512, 1, &v));
        OK(popc_nn_activation(L, "Relu", v, 0.0, &v));
        OK(popc_nn_linear(L, "fc3", v, 512, 10, 1, &v));
    } else {
        int64_t dims[4] = {BATCH, 1, 28, 28};

        OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, dims, 4, &x));
        OK(popc_nn_conv2d(L, "conv1", x, 1, 32, 3, 1, 1, 1, 1, 1, &v));
        OK(popc_nn_activation(L, "Relu", v, 0.0, &v));
        OK(popc_nn_maxpool2d(L, v, 2, 0, 0, &v));
        OK(popc_nn_conv2d(L, "conv2", v, 32, 64, 3, 1, 1, 1, 1, 1, &v));
        OK(popc_nn_activation(L, "Relu", v, 0.0, &v));
        OK(popc_nn_maxpool2d(L, v, 2, 0, 0, &v));
        OK(popc_nn_flatten(L, v, 1, &v));
        OK(popc_nn_linear(L, "fc", v, 3136, 10, 1, &v));
    }
    OK(popc_graph_add_input(g, "labels", POPC_DTYPE_I32, lab_dims, 1,
                            &labels));
    OK(popc_nn_cross_entropy(L, v, labels, "mean", &loss));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    set_formula_weights(g, spec);
    return g;
}

/* The same model from its example run file (training graph). */
static popc_graph *build_from_ini(const model_spec *spec)
{
    const char *src = getenv("POPC_SRCDIR");
    char path[4096];
    popc_run *r = NULL;
    popc_graph *g = NULL;

    snprintf(path, sizeof path, "%s/examples/%s", src ? src : ".", spec->ini);
    OK(popc_run_load(path, NULL, 0, &r));
    OK(popc_run_build_graph(r, 1, BATCH, &g));
    popc_run_free(r);
    set_formula_weights(g, spec);
    return g;
}

static void load_model_batch(const model_spec *spec, popc_tensor **x,
                             popc_tensor **labels)
{
    static const int64_t flat[1] = {784}, image[3] = {1, 28, 28};

    if (spec == &mlp)
        load_batch(flat, 1, x, labels);
    else
        load_batch(image, 3, x, labels);
}

/* ---- comparison ---------------------------------------------------------- */

static void check_loss(const char *what, const popc_tensor *loss,
                       const model_spec *spec)
{
    char name[64];
    popc_tensor *want;
    double w, got = *(const float *)popc_tensor_cdata(loss);

    snprintf(name, sizeof name, "%s_loss", spec->tag);
    want = ref(name);
    w = *(const float *)popc_tensor_cdata(want);
    ck_assert_int_eq(popc_tensor_numel(loss), 1);
    printf("%s %s: loss %.7f, torch %.7f (rel %.1e)\n", spec->tag, what,
           got, w, fabs(got - w) / w);
    ck_assert_msg(fabs(got - w) <= RTOL * fabs(w),
                  "%s %s: loss %.8g, torch %.8g", spec->tag, what, got, w);
    popc_tensor_free(want);
}

/* Compare a full float32 gradient (as doubles, n elements) with the
** reference fingerprint of spec's parameter. w_before, when not NULL,
** holds the weights the gradient was recovered from (the SGD rounding). */
static void check_grad(const char *what, const model_spec *spec,
                       const char *param, const double *got, int64_t n,
                       const float *w_before)
{
    popc_tensor *idx_t = ref_param(spec->tag, param, "idx", 1);
    popc_tensor *want_t = ref_param(spec->tag, param, "grad", 0);
    popc_tensor *stats_t = ref_param(spec->tag, param, "stats", 0);
    const int64_t *idx = idx_t ? popc_tensor_cdata(idx_t) : NULL;
    const float *want = popc_tensor_cdata(want_t);
    const float *st = popc_tensor_cdata(stats_t);
    int64_t m = popc_tensor_numel(want_t);
    double sum = 0.0, sq = 0.0, amax = 0.0;
    double worst_rel = 0.0, worst_norm = 0.0;
    double want_max = st[2], want_l2 = sqrt((double)st[1]);

    ck_assert_int_eq(popc_tensor_numel(stats_t), 4);
    ck_assert_msg(idx || m == n, "%s %s: %lld elements, reference %lld",
                  spec->tag, param, (long long)n, (long long)m);
    for (int64_t j = 0; j < m; j++) {
        int64_t i = idx ? idx[j] : j;
        double d, tol;

        ck_assert(i >= 0 && i < n);
        d = fabs(got[i] - want[j]);
        tol = RTOL * fabs(want[j]) + fmin(ATOL, ATOL_OF_MAX * want_max);
        if (w_before)
            tol += ldexp(fabs(w_before[i]), -24);
        ck_assert_msg(d <= tol,
                      "%s %s %s[%lld]: %.9g, torch %.9g (differ by %.3g, "
                      "tolerance %.3g)",
                      spec->tag, what, param, (long long)i, got[i],
                      (double)want[j], d, tol);
        /* the relative error reported: elements of at least a tenth of
        ** the largest (the smaller ones are bounded by the floor) */
        if (fabs(want[j]) >= 0.1 * want_max && d / fabs(want[j]) > worst_rel)
            worst_rel = d / fabs(want[j]);
        if (d / want_max > worst_norm)
            worst_norm = d / want_max;
    }
    for (int64_t i = 0; i < n; i++) {
        sum += got[i];
        sq += got[i] * got[i];
        if (fabs(got[i]) > amax)
            amax = fabs(got[i]);
    }
    printf("%s %-8s %-13s max rel %.1e, max diff/max|g| %.1e, "
           "L2 rel %.1e\n",
           spec->tag, what, param, worst_rel, worst_norm,
           fabs(sqrt(sq) - want_l2) / want_l2);
    ck_assert_msg(fabs(sum - st[0]) <= RTOL * st[3],
                  "%s %s %s: sum %.9g, torch %.9g (sum |g| %.9g)", spec->tag,
                  what, param, sum, (double)st[0], (double)st[3]);
    ck_assert_msg(fabs(sqrt(sq) - want_l2) <= RTOL * want_l2,
                  "%s %s %s: L2 norm %.9g, torch %.9g", spec->tag, what,
                  param, sqrt(sq), want_l2);
    ck_assert_msg(fabs(amax - want_max) <= RTOL * want_max,
                  "%s %s %s: max |g| %.9g, torch %.9g", spec->tag, what,
                  param, amax, want_max);
    popc_tensor_free(idx_t);
    popc_tensor_free(want_t);
    popc_tensor_free(stats_t);
}

static double *as_doubles(const popc_tensor *t)
{
    int64_t n = popc_tensor_numel(t);
    const float *p = popc_tensor_cdata(t);
    double *d = malloc((size_t)n * sizeof *d);

    ck_assert_ptr_nonnull(d);
    for (int64_t i = 0; i < n; i++)
        d[i] = p[i];
    return d;
}

/* ---- autodiff on the reference kernels ----------------------------------- */

static void autodiff_case(const model_spec *spec, popc_graph *g,
                          const char *what)
{
    popc_tensor *x = NULL, *labels = NULL, *out[N_PARAMS + 1] = {NULL};
    int wrt[N_PARAMS], grads[N_PARAMS], values[N_PARAMS + 1];

    load_model_batch(spec, &x, &labels);
    for (int k = 0; k < N_PARAMS; k++)
        wrt[k] = popc_graph_find_value(g, spec->params[k]);
    values[0] = popc_graph_output(g, 0);
    OK(popc_graph_gradients(g, values[0], wrt, N_PARAMS, 1.0, grads));
    for (int k = 0; k < N_PARAMS; k++) {
        ck_assert_int_ge(grads[k], 0);
        values[k + 1] = grads[k];
    }
    OK(popc_graph_eval(g, (popc_tensor *[]){x, labels}, 2, values,
                       N_PARAMS + 1, out, 1, 0));
    check_loss(what, out[0], spec);
    for (int k = 0; k < N_PARAMS; k++) {
        double *d = as_doubles(out[k + 1]);

        check_grad(what, spec, spec->params[k], d,
                   popc_tensor_numel(out[k + 1]), NULL);
        free(d);
    }
    for (int k = 0; k <= N_PARAMS; k++)
        popc_tensor_free(out[k]);
    popc_tensor_free(x);
    popc_tensor_free(labels);
}

START_TEST(mlp_autodiff)
{
    popc_graph *g = build(&mlp);
    autodiff_case(&mlp, g, "autodiff");
    popc_graph_free(g);
}
END_TEST

START_TEST(cnn_autodiff)
{
    popc_graph *g = build(&cnn);
    autodiff_case(&cnn, g, "autodiff");
    popc_graph_free(g);
}
END_TEST

/* The example run files build the same models, parameter for parameter. */
START_TEST(mlp_ini_autodiff)
{
    popc_graph *g = build_from_ini(&mlp);
    autodiff_case(&mlp, g, "ini");
    popc_graph_free(g);
}
END_TEST

START_TEST(cnn_ini_autodiff)
{
    popc_graph *g = build_from_ini(&cnn);
    autodiff_case(&cnn, g, "ini");
    popc_graph_free(g);
}
END_TEST

/* ---- one SGD step (lr 1) through a training model ------------------------ */

static void sgd_case(const model_spec *spec, const char *backend)
{
    popc_graph *g = build(spec);
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    popc_tensor *x = NULL, *labels = NULL, *loss = NULL;
    popc_tensor *before[N_PARAMS];

    load_model_batch(spec, &x, &labels);
    for (int k = 0; k < N_PARAMS; k++)
        OK(popc_tensor_clone(popc_graph_value_tensor(
                                 g, popc_graph_find_value(g, spec->params[k])),
                             &before[k]));
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", 1.0));
    OK(popc_model_new_training(g, o, opt, &m));
    OK(popc_model_run(m, (popc_tensor *[]){x, labels}, 2, &loss, 1));
    ck_assert_int_eq(popc_model_steps(m), 1);
    check_loss(backend, loss, spec);
    for (int k = 0; k < N_PARAMS; k++) {
        const popc_tensor *after = NULL;
        const float *a, *b = popc_tensor_cdata(before[k]);
        int64_t n = popc_tensor_numel(before[k]);
        double *d;

        OK(popc_model_get_weight(m, spec->params[k], &after));
        ck_assert_int_eq(popc_tensor_numel(after), n);
        a = popc_tensor_cdata(after);
        ck_assert_ptr_nonnull(d = malloc((size_t)n * sizeof *d));
        for (int64_t i = 0; i < n; i++)
            d[i] = (double)b[i] - (double)a[i];
        check_grad(backend, spec, spec->params[k], d, n, b);
        free(d);
        popc_tensor_free(before[k]);
    }
    popc_tensor_free(loss);
    popc_tensor_free(x);
    popc_tensor_free(labels);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_options_free(o);
    popc_graph_free(g);
}

START_TEST(mlp_sgd_cpu)
{
    sgd_case(&mlp, "cpu");
}
END_TEST

START_TEST(mlp_sgd_ipumodel)
{
    sgd_case(&mlp, "ipumodel");
}
END_TEST

START_TEST(cnn_sgd_cpu)
{
    sgd_case(&cnn, "cpu");
}
END_TEST

START_TEST(cnn_sgd_ipumodel)
{
    sgd_case(&cnn, "ipumodel");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("model_grads");
    TCase *tc = tcase_create("torch");
    SRunner *sr;
    int failed;

    /* the batch is real data: without the dataset there is nothing to
    ** compare (automake's SKIP) */
    if (access(IMAGES, R_OK) != 0 || access(LABELS, R_OK) != 0) {
        printf("SKIP: %s or %s is missing\n", IMAGES, LABELS);
        return 77;
    }
    /* the figures printed reach the log in order */
    setvbuf(stdout, NULL, _IOLBF, 0);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, mlp_autodiff);
    tcase_add_test(tc, cnn_autodiff);
    tcase_add_test(tc, mlp_ini_autodiff);
    tcase_add_test(tc, cnn_ini_autodiff);
    tcase_add_test(tc, mlp_sgd_cpu);
    tcase_add_test(tc, mlp_sgd_ipumodel);
    tcase_add_test(tc, cnn_sgd_cpu);
    tcase_add_test(tc, cnn_sgd_ipumodel);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
