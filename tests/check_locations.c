/* check_locations.c - Options.TensorLocations on the IPU model: weights in
** streaming memory, optimizer state sharded over replicas, I/O tiles, the
** element thresholds and the refusals. The memory report and the cycle
** estimate move; the trained weights never do.
**
** The model: x [8, 784] -> fc1 (784 x 256) -> Relu -> fc2 (256 x 10) ->
** cross entropy, one Adam step on the ipumodel backend.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/minijson.h"
#include "tests/profile_model.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

#define FC1_W (784 * 256)
#define WEIGHT_BYTES ((784 * 256 + 256 + 256 * 10 + 10) * 4)

typedef struct result {
    mj_value *report;          /* profile.json */
    double cycles;
    popc_tensor *fc1;          /* fc1.weight after the step */
} result;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *s;
    long n;

    ck_assert_msg(f != NULL, "%s is missing", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    s = malloc((size_t)n + 1);
    ck_assert(s && fread(s, 1, (size_t)n, f) == (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

/* One step with the options of `set` ("name=value", NULL-terminated) and
** R replicas; st receives the compile's status (the result is empty when
** it fails). */
static result step(const char *const *set, int64_t R, popc_status *st)
{
    char dir[] = "/tmp/popc-locations-XXXXXX", path[256], err[128];
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_graph *g = profile_mlp(8, 256, 0, 1);
    popc_model *m = NULL;
    popc_tensor *in[2], *loss = NULL;
    int64_t xd[2] = {8 * R, 784}, ld[1] = {8 * R};
    const popc_tensor *w;
    result res = {0};
    char *text;

    ck_assert(mkdtemp(dir) != NULL);
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "ipumodel"));
    OK(popc_options_set(o, "enableProfiling", dir));
    OK(popc_options_set(o, "logCycleCount", "true"));
    OK(popc_options_set(o, "showCompilationProgressBar", "false"));
    OK(popc_options_set_int(o, "replicationFactor", R));
    for (int i = 0; set && set[i]; i++) {
        char name[160];
        const char *eq = strchr(set[i], '=');

        snprintf(name, sizeof name, "%.*s", (int)(eq - set[i]), set[i]);
        OK(popc_options_set(o, name, eq + 1));
    }
    OK(popc_optimizer_new("adam", &opt));
    OK(popc_optimizer_set(opt, "lr", 0.01));
    OK(popc_model_new_training(g, o, opt, &m));
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &in[0]));
    OK(popc_tensor_new(POPC_DTYPE_I32, ld, 1, &in[1]));
    for (int64_t i = 0; i < 8 * R * 784; i++)
        ((float *)popc_tensor_data(in[0]))[i] =
            (float)((i * 7919) % 1000) / 1000.0f;
    for (int64_t i = 0; i < 8 * R; i++)
        ((int32_t *)popc_tensor_data(in[1]))[i] = (int32_t)(i % 10);
    *st = popc_model_run(m, in, 2, &loss, 1);
    if (*st == POPC_OK) {
        OK(popc_model_cycle_count(m, &res.cycles));
        OK(popc_model_get_weight(m, "fc1.weight", &w));
        OK(popc_tensor_clone(w, &res.fc1));
        snprintf(path, sizeof path, "%s/training/profile.json", dir);
        text = slurp(path);
        res.report = mj_parse(text, strlen(text), err, sizeof err);
        ck_assert_msg(res.report != NULL, "profile.json: %s", err);
        free(text);
        unlink(path);
        snprintf(path, sizeof path, "%s/training/profile.html", dir);
        unlink(path);
        snprintf(path, sizeof path, "%s/training", dir);
        rmdir(path);
    }
    rmdir(dir);
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_tensor_free(loss);
    popc_model_free(m);
    popc_optimizer_free(opt);
    popc_graph_free(g);
    popc_options_free(o);
    return res;
}

static double mem(const result *r, const char *section, const char *what)
{
    return mj_num(mj_get(mj_get(r->report, "memory"), section), what, -1.0);
}

static void done(result *r)
{
    mj_free(r->report);
    popc_tensor_free(r->fc1);
}

static void same_weights(const result *a, const result *b)
{
    ck_assert(popc_tensor_max_abs_diff(a->fc1, b->fc1) == 0.0);
}

/* Weights in streaming memory: no weight bytes on the tiles, all of them
** off chip, loads in the cycle estimate. */
START_TEST(weights_off_chip)
{
    static const char *const off[] = {
        "TensorLocations.setWeightLocation.useOnChipStorage=false", NULL};
    popc_status st;
    result on = step(NULL, 1, &st), o = step(off, 1, &st);

    OK(st);
    ck_assert(mem(&on, "totals", "weights") >= WEIGHT_BYTES);
    ck_assert(mem(&on, "off_chip", "weights") == 0.0);
    ck_assert(mem(&o, "off_chip", "weights") == WEIGHT_BYTES);
    ck_assert(mem(&o, "totals", "weights") ==
              mem(&on, "totals", "weights") - WEIGHT_BYTES);
    ck_assert_msg(o.cycles > on.cycles, "%g <= %g", o.cycles, on.cycles);
    same_weights(&on, &o);
    done(&on);
    done(&o);
}
END_TEST

/* minElementsForOffChip: only fc1.weight (200704 elements) leaves. */
START_TEST(off_chip_threshold)
{
    static const char *const big[] = {
        "TensorLocations.setWeightLocation.useOnChipStorage=false",
        "TensorLocations.setWeightLocation.minElementsForOffChip=10000",
        NULL};
    popc_status st;
    result r = step(big, 1, &st);

    OK(st);
    ck_assert(mem(&r, "off_chip", "weights") == FC1_W * 4);
    done(&r);
}
END_TEST

/* Adam's state of fc1.weight (2 x 200704 floats, above the 8192-element
** threshold) is split over 2 replicas: each holds half; the small
** tensors' state stays whole. The weights match an unsharded run. (The
** optimizer step is outside the per-micro-batch cycle estimate, so the
** state's gather costs nothing there; sharded weights read by nodes do.) */
START_TEST(optimizer_state_sharded)
{
    static const char *const rts[] = {
        "TensorLocations.setOptimizerLocation.useReplicatedTensorSharding="
        "true",
        NULL};
    popc_status st;
    result plain = step(NULL, 2, &st), s = step(rts, 2, &st);
    double small = 2.0 * (256 + 2560 + 10) * 4;

    OK(st);
    ck_assert(mem(&plain, "totals", "state") == 2.0 * FC1_W * 4 + small);
    ck_assert(mem(&s, "totals", "state") == FC1_W * 4 + small);
    same_weights(&plain, &s);
    done(&plain);
    done(&s);
}
END_TEST

/* Loads through the I/O tiles overlap compute: cheaper than plain
** streaming, never cheaper than on chip. Without numIOTiles: PopTorch's
** error. */
START_TEST(io_tiles)
{
    static const char *const tiles[] = {"TensorLocations.numIOTiles=32",
                                        NULL};
    static const char *const stream[] = {
        "TensorLocations.numIOTiles=32",
        "TensorLocations.setWeightLocation.useOnChipStorage=false", NULL};
    static const char *const io[] = {
        "TensorLocations.numIOTiles=32",
        "TensorLocations.setWeightLocation.useOnChipStorage=false",
        "TensorLocations.setWeightLocation.useIOTilesToLoad=true", NULL};
    static const char *const no_tiles[] = {
        "TensorLocations.setWeightLocation.useOnChipStorage=false",
        "TensorLocations.setWeightLocation.useIOTilesToLoad=true", NULL};
    popc_status st;
    result on = step(tiles, 1, &st), a = step(stream, 1, &st),
           b = step(io, 1, &st);

    OK(st);
    ck_assert_msg(b.cycles < a.cycles, "%g >= %g", b.cycles, a.cycles);
    ck_assert_msg(b.cycles >= on.cycles, "%g < %g", b.cycles, on.cycles);
    same_weights(&on, &b);
    done(&on);
    done(&a);
    done(&b);
    (void)step(no_tiles, 1, &st);
    ck_assert_int_eq(st, POPC_EINVAL);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "No IO tiles allocated. "
                                 "You must allocate at least 32 IO tiles"));
}
END_TEST

/* Activations leave the chip only under phased execution; they are never
** sharded. */
START_TEST(activation_refusals)
{
    static const char *const off[] = {
        "TensorLocations.setActivationLocation.useOnChipStorage=false",
        NULL};
    static const char *const rts[] = {
        "TensorLocations.setActivationLocation.useReplicatedTensorSharding="
        "true",
        NULL};
    popc_status st;

    (void)step(off, 1, &st);
    ck_assert_int_eq(st, POPC_EINVAL);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "phased execution"));
    (void)step(rts, 1, &st);
    ck_assert_int_eq(st, POPC_EINVAL);
    ck_assert_ptr_nonnull(strstr(popc_last_error(), "not activations"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("locations");
    TCase *tc = tcase_create("ipumodel");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, weights_off_chip);
    tcase_add_test(tc, off_chip_threshold);
    tcase_add_test(tc, optimizer_state_sharded);
    tcase_add_test(tc, io_tiles);
    tcase_add_test(tc, activation_refusals);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
