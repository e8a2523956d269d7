/* check_ipu_device.c - the options that describe the IPU device itself,
** on the IPU model (the profile's backend report shows their effect):
**   useIpuId: a device of the modelled POD16's list, sized to the model;
**   syncPattern: with Full, every IPU of a pipeline waits for every host
**     transfer; SinglePipeline and ReplicaAndLadder do not;
**   Training.setConvolutionDithering: convolutions start on different
**     tiles instead of all on tile 0.
** The cpu reference models no device and refuses all three.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/minijson.h"
#include "tests/profile_files.h"
#include "tests/profile_model.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())
#define B 4

/* Status and message of the last failed compile. */
static popc_status failed;
static char message[1024];

/* A 3-convolution network, x [1, 2, 8, 8]: small convolutions of
** different shapes, each on fewer tiles than the IPU has, with im2col
** temporaries. */
static popc_graph *convs(void)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int64_t xd[4] = {1, 2, 8, 8};
    int x, c1, r1, c2, r2, c3;

    OK(popc_graph_new("convs", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 4, &x));
    OK(popc_layers_new(g, 3, &L));
    OK(popc_nn_conv2d(L, "conv1", x, 2, 8, 3, 1, 1, 1, 1, 1, &c1));
    OK(popc_nn_activation(L, "Relu", c1, 0.0, &r1));
    OK(popc_nn_conv2d(L, "conv2", r1, 8, 8, 3, 1, 1, 1, 1, 1, &c2));
    OK(popc_nn_activation(L, "Relu", c2, 0.0, &r2));
    OK(popc_nn_conv2d(L, "conv3", r2, 8, 4, 5, 1, 2, 1, 1, 1, &c3));
    OK(popc_graph_add_output(g, c3));
    popc_layers_free(L);
    return g;
}

/* The profile of one inference run of g on `backend` with option `name`
** set to `value` (name NULL: none) and `replicas` replicas, with as many
** device iterations as g's `ipus` (a pipeline needs one per stage); NULL
** when compiling fails (failed and message say why). Takes g. */
static mj_value *profile_of(popc_graph *g, int ipus, const char *backend,
                            int64_t replicas, const char *name,
                            const char *value)
{
    char *dir = pf_temp_dir(), *sub = pf_sub_dir(dir, "inference");
    popc_options *o = NULL;
    popc_model *m = NULL;
    popc_tensor *x = NULL, *y = NULL;
    popc_view info = popc_graph_value_info(g, popc_graph_input(g, 0));
    mj_value *v = NULL;
    popc_status st;

    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", backend));
    OK(popc_options_set(o, "enableProfiling", dir));
    OK(popc_options_set_int(o, "replicationFactor", replicas));
    OK(popc_options_set_int(o, "deviceIterations", ipus));
    if (name)
        OK(popc_options_set(o, name, value));
    info.dims[0] *= replicas * ipus;
    OK(popc_tensor_new(POPC_DTYPE_F32, info.dims, info.rank, &x));
    for (int64_t i = 0; i < popc_tensor_numel(x); i++)
        ((float *)popc_tensor_data(x))[i] = (float)(i % 13) / 13.0f;
    OK(popc_model_new_inference(g, o, &m));
    /* the offline target compiles only */
    st = popc_model_compile(m, &x, 1);
    if (st == POPC_OK && strcmp(backend, "offline") != 0)
        st = popc_model_run(m, &x, 1, &y, 1);
    if (st == POPC_OK) {
        v = pf_read_profile(sub);
    } else {
        failed = st;
        snprintf(message, sizeof message, "%s", popc_last_error());
    }
    popc_tensor_free(x);
    popc_tensor_free(y);
    popc_model_free(m);
    popc_options_free(o);
    popc_graph_free(g);
    pf_remove_dir(dir);
    free(sub);
    free(dir);
    return v;
}

static popc_graph *mlp(int two_ipus)
{
    popc_graph *g = profile_mlp(B, 64, two_ipus, 0);

    ck_assert_msg(g != NULL, "%s", popc_last_error());
    return g;
}

static void expect_failure(popc_graph *g, int ipus, const char *backend,
                           int64_t replicas, const char *name,
                           const char *value, popc_status want,
                           const char *text)
{
    mj_value *v = profile_of(g, ipus, backend, replicas, name, value);

    ck_assert_msg(v == NULL, "%s = %s compiled on %s", name, value, backend);
    ck_assert_int_eq(failed, want);
    ck_assert_msg(strstr(message, text) != NULL, "message '%s' lacks '%s'",
                  message, text);
}

/* ---- useIpuId -------------------------------------------------------------- */

static void check_device(mj_value *v, int id, int first, int last)
{
    const mj_value *d = mj_get(v, "device"), *ipus;

    ck_assert_msg(v != NULL, "device %d: %s", id, message);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq((int)mj_num(d, "device_id", -1), id);
    ipus = mj_get(d, "physical_ipus");
    ck_assert_ptr_nonnull(ipus);
    ck_assert_int_eq((int)mj_at(ipus, 0)->number, first);
    ck_assert_int_eq((int)mj_at(ipus, 1)->number, last);
    mj_free(v);
}

START_TEST(ipu_id_picks_a_device_of_the_right_size)
{
    mj_value *v = profile_of(mlp(1), 2, "ipumodel", 1, NULL, NULL);

    /* no id: no device in the report */
    ck_assert(mj_get(mj_get(v, "device"), "device_id") == NULL);
    mj_free(v);
    check_device(profile_of(mlp(0), 1, "ipumodel", 1, "useIpuId", "5"), 5, 5,
                 5);
    check_device(profile_of(mlp(1), 2, "ipumodel", 1, "useIpuId", "17"), 17, 2,
                 3);
    check_device(profile_of(mlp(1), 2, "offline", 1, "useIpuId", "16"), 16, 0,
                 1);
    /* 2 IPUs x 2 replicas: the groups of 4 */
    check_device(profile_of(mlp(1), 2, "ipumodel", 2, "useIpuId", "25"), 25, 4,
                 7);
    check_device(profile_of(mlp(0), 1, "ipumodel", 16, "useIpuId", "30"), 30,
                 0, 15);
}
END_TEST

START_TEST(ipu_id_errors)
{
    expect_failure(mlp(1), 2, "ipumodel", 1, "useIpuId", "3", POPC_ECONFIG,
                   "useIpuId(3): device 3 has 1 IPU but the model reserves "
                   "2 (IPUs per replica x replicas, rounded up to a power of "
                   "2); use a device of 2 IPUs: ids 16 to 23");
    expect_failure(mlp(0), 1, "ipumodel", 1, "useIpuId", "28", POPC_ECONFIG,
                   "device 28 has 8 IPUs but the model reserves 1");
    expect_failure(mlp(0), 1, "ipumodel", 1, "useIpuId", "31", POPC_ECONFIG,
                   "useIpuId(31): the ipumodel backend has no device 31");
    expect_failure(mlp(1), 2, "ipumodel", 16, "useIpuId", "30", POPC_ECONFIG,
                   "the model reserves 32 IPUs but the ipumodel backend's "
                   "largest device (id 30) has 16");
    expect_failure(mlp(0), 1, "cpu", 1, "useIpuId", "0", POPC_ECONFIG,
                   "useIpuId: the cpu backend models no IPU device");
}
END_TEST

/* ---- syncPattern ------------------------------------------------------------ */

/* The cycles of phase `ph` and of the run. */
static void phase_cycles(mj_value *v, int ph, double *phase, double *run)
{
    const mj_value *phases = mj_get(v, "phases");

    ck_assert_ptr_nonnull(phases);
    *phase = mj_num(mj_at(phases, ph), "cycles", -1.0);
    *run = mj_num(v, "run_cycles", -1.0);
    mj_free(v);
}

/* Two IPUs, two phases: under Full the second waits for the host transfer
** of x [B, 784] (float32) too: B * 784 * 4 bytes at 12 bytes per cycle plus
** 3000 cycles of latency (backends/ipumodel/cost.c). */
START_TEST(full_sync_makes_every_ipu_wait_for_the_host)
{
    double full1, full_run, single1, single_run, ladder1, ladder_run, d;
    double one_full, one_single, r;

    phase_cycles(profile_of(mlp(1), 2, "ipumodel", 1, NULL, NULL), 1, &full1,
                 &full_run);
    phase_cycles(profile_of(mlp(1), 2, "ipumodel", 1, "syncPattern",
                            "SinglePipeline"),
                 1, &single1, &single_run);
    phase_cycles(profile_of(mlp(1), 2, "ipumodel", 1, "syncPattern",
                            "ReplicaAndLadder"),
                 1, &ladder1, &ladder_run);
    d = B * 784 * 4 / 12.0 + 3000.0;
    ck_assert_msg(fabs(full1 - single1 - d) < 1e-6 * full1, "phase 1: Full "
                  "%.1f, SinglePipeline %.1f cycles; want a difference of "
                  "%.1f", full1, single1, d);
    ck_assert(full_run > single_run);
    ck_assert(ladder1 == single1 && ladder_run == single_run);
    /* one IPU has no other IPU to wait for */
    phase_cycles(profile_of(mlp(0), 1, "ipumodel", 1, NULL, NULL), 0, &r,
                 &one_full);
    phase_cycles(profile_of(mlp(0), 1, "ipumodel", 1, "syncPattern",
                            "SinglePipeline"),
                 0, &r, &one_single);
    ck_assert(one_full == one_single);
    expect_failure(mlp(1), 2, "cpu", 1, "syncPattern", "SinglePipeline",
                   POPC_ECONFIG, "syncPattern: the cpu backend models "
                   "no IPU device");
}
END_TEST

/* ---- convolution dithering -------------------------------------------------- */

typedef struct layout {
    int conv_first[3], n_conv;
    int temp_tiles;            /* tiles holding temporaries at their peak */
    double weights;            /* weight bytes of the replica */
} layout;

static layout layout_of(mj_value *v)
{
    const mj_value *ops = mj_get(v, "ops"), *tiles;
    layout l = {{0}, 0, 0, 0.0};

    ck_assert_ptr_nonnull(ops);
    for (int i = 0; i < ops->n; i++) {
        const char *op = mj_str(mj_at(ops, i), "op");

        /* the graph optimizer fuses a Conv and its Relu */
        if (op && (strcmp(op, "Conv") == 0 || strcmp(op, "FusedConv") == 0) &&
            l.n_conv < 3)
            l.conv_first[l.n_conv++] =
                (int)mj_num(mj_at(ops, i), "first_tile", -1);
    }
    tiles = mj_get(mj_at(mj_get(mj_get(v, "memory"), "ipus"), 0), "tiles");
    ck_assert_ptr_nonnull(tiles);
    for (int t = 0; t < tiles->n; t++)
        l.temp_tiles += mj_num(mj_at(tiles, t), "temporaries", 0) > 0;
    l.weights = mj_num(mj_get(mj_get(v, "memory"), "totals"), "weights",
                       -1);
    ck_assert(mj_get(mj_get(v, "device"), "conv_dithering") != NULL);
    mj_free(v);
    return l;
}

START_TEST(dithering_spreads_convolutions_over_the_tiles)
{
    layout plain = layout_of(profile_of(convs(), 1, "ipumodel", 1, NULL, NULL));
    layout dith = layout_of(profile_of(convs(), 1, "ipumodel", 1,
                                       "Training.setConvolutionDithering",
                                       "true"));

    ck_assert_int_eq(plain.n_conv, 3);
    ck_assert_int_eq(dith.n_conv, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(plain.conv_first[i] == 0, "conv %d starts on tile %d "
                      "without dithering", i, plain.conv_first[i]);
    ck_assert_msg(dith.conv_first[0] != dith.conv_first[1] &&
                      dith.conv_first[1] != dith.conv_first[2] &&
                      dith.conv_first[0] != dith.conv_first[2],
                  "dithered convolutions start on tiles %d, %d, %d",
                  dith.conv_first[0], dith.conv_first[1],
                  dith.conv_first[2]);
    /* the three no longer share their first tiles: their temporaries
    ** spread over more tiles */
    ck_assert_msg(dith.temp_tiles > plain.temp_tiles, "%d tiles hold "
                  "temporaries dithered, %d not", dith.temp_tiles,
                  plain.temp_tiles);
    ck_assert(dith.weights == plain.weights); /* tensors stay */
    expect_failure(convs(), 1, "cpu", 1, "Training.setConvolutionDithering",
                   "true", POPC_ECONFIG,
                   "Training.setConvolutionDithering: the cpu backend "
                   "models no IPU device");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ipu_device");
    TCase *tc = tcase_create("ipu_device");
    SRunner *sr;
    int n_failed;

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, ipu_id_picks_a_device_of_the_right_size);
    tcase_add_test(tc, ipu_id_errors);
    tcase_add_test(tc, full_sync_makes_every_ipu_wait_for_the_host);
    tcase_add_test(tc, dithering_spreads_convolutions_over_the_tiles);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    n_failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return n_failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
