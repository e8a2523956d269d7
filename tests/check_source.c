/* check_source.c - where nodes were added (popc_graph_node_source) and
** PopTorch's sourceLocationExcludes: the first frame of the recorded call
** stack outside popc's libraries and the excludes; derived nodes
** (backward, model.half()) keep their origin's location; profile.json
** lists them.
**
** The program links with -export-dynamic, so that dladdr names the
** functions below: user_build calls user_add_matmul, which adds
** the node.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/minijson.h"
#include "tests/profile_files.h"

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())

/* Exported (default visibility: the build hides symbols), so that their
** names are in the dynamic table; noinline keeps them separate frames. */
#define EXPORTED __attribute__((noinline, visibility("default")))
EXPORTED int user_add_matmul(popc_graph *g, int x);
EXPORTED popc_graph *user_build(int training);

int user_add_matmul(popc_graph *g, int x)
{
    static const float w[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    int64_t wd[2] = {2, 2};
    popc_tensor *t = NULL;
    int in[2] = {x, -1}, y;

    OK(popc_tensor_from_data(POPC_DTYPE_F32, wd, 2, w, &t));
    OK(popc_graph_add_initializer(g, "w", t, 1, &in[1]));
    popc_tensor_free(t);
    OK(popc_graph_add_node(g, NULL, "MatMul", 0, in, 2, &y, 1, NULL, 0, "mm",
                           NULL));
    return y;
}

popc_graph *user_build(int training)
{
    popc_graph *g = NULL;
    int64_t xd[2] = {2, 2};
    int x, y;

    OK(popc_graph_new("source", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    y = user_add_matmul(g, x);
    if (training) {
        popc_layers *L = NULL;
        int l;

        OK(popc_layers_new(g, 1, &L));
        OK(popc_nn_identity_loss(L, y, "sum", &l));
        popc_layers_free(L);
        OK(popc_graph_add_output(g, l));
    } else {
        OK(popc_graph_add_output(g, y));
    }
    return g;
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

START_TEST(first_frame_outside_popc_and_the_excludes)
{
    popc_graph *g = user_build(0), *h = NULL;
    char where[512], small[8];
    size_t n;

    /* the node is the last one; popc_graph_add_node's own frames skipped */
    n = popc_graph_node_source(g, 0, NULL, where, sizeof where);
    ck_assert_msg(n > 0 && starts(where, "user_add_matmul+0x"),
                  "source '%s'", where);
    ck_assert_msg(strstr(where, "check_source") != NULL, "object in '%s'",
                  where);
    ck_assert_int_eq(strlen(where), n);
    /* "None" is no excludes */
    popc_graph_node_source(g, 0, "None", small, sizeof small);
    ck_assert_int_eq(strlen(small), sizeof small - 1);
    ck_assert(strncmp(small, where, sizeof small - 1) == 0);
    /* a symbol name excluded: the caller's frame */
    popc_graph_node_source(g, 0, "nothing,user_add", where,
                           sizeof where);
    ck_assert_msg(starts(where, "user_build+0x"), "source '%s'", where);
    /* model.half(): the converted node keeps the location */
    OK(popc_graph_to_half(g, NULL, NULL, &h));
    for (int k = 0; k < popc_graph_n_nodes(h); k++)
        if (strcmp(popc_graph_node_op(h, k), "MatMul") == 0) {
            popc_graph_node_source(h, k, NULL, where, sizeof where);
            ck_assert_msg(starts(where, "user_add_matmul+0x"),
                          "half node source '%s'", where);
        }
    /* bad arguments: unknown */
    ck_assert_int_eq(popc_graph_node_source(NULL, 0, NULL, where,
                                            sizeof where), 0);
    ck_assert_int_eq(popc_graph_node_source(g, 99, NULL, where,
                                            sizeof where), 0);
    ck_assert_str_eq(where, "");
    ck_assert_int_eq(popc_graph_node_source(g, 0, NULL, NULL, 0), n);
    popc_graph_free(g);
    popc_graph_free(h);
}
END_TEST

/* The sources of a training profile: node -> source. */
static mj_value *train_profile(const char *excludes, char **dir)
{
    popc_graph *g = user_build(1);
    popc_options *o = NULL;
    popc_optimizer *opt = NULL;
    popc_model *m = NULL;
    popc_tensor *x = NULL, *loss = NULL;
    int64_t xd[2] = {2, 2};
    char *sub;
    mj_value *v;

    *dir = pf_temp_dir();
    sub = pf_sub_dir(*dir, "training");
    OK(popc_options_new(&o));
    OK(popc_options_set(o, "backend", "cpu"));
    OK(popc_options_set(o, "enableProfiling", *dir));
    if (excludes)
        OK(popc_options_set(o, "sourceLocationExcludes", excludes));
    OK(popc_optimizer_new("sgd", &opt));
    OK(popc_optimizer_set(opt, "lr", 0.1));
    OK(popc_model_new_training(g, o, opt, &m));
    OK(popc_tensor_new(POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_model_run(m, &x, 1, &loss, 1));
    v = pf_read_profile(sub);
    popc_model_free(m);
    popc_tensor_free(x);
    popc_tensor_free(loss);
    popc_optimizer_free(opt);
    popc_options_free(o);
    popc_graph_free(g);
    free(sub);
    return v;
}

/* Every scheduled node that derives from "mm" (the node and its gradient
** nodes) has a source starting with want; returns how many. */
static int check_sources(const mj_value *v, const char *want)
{
    const mj_value *src = mj_get(v, "sources");
    int n = 0;

    ck_assert_ptr_nonnull(src);
    for (int i = 0; i < src->n; i++) {
        const char *node = mj_str(mj_at(src, i), "node");
        const char *where = mj_str(mj_at(src, i), "source");

        ck_assert_ptr_nonnull(node);
        ck_assert_ptr_nonnull(where);
        if (strncmp(node, "mm", 2) != 0)
            continue;
        ck_assert_msg(starts(where, want), "node %s: source '%s', want "
                      "'%s...'", node, where, want);
        n++;
    }
    return n;
}

START_TEST(profile_lists_sources_with_the_excludes)
{
    char *dir;
    mj_value *v = train_profile(NULL, &dir);

    /* mm and at least one backward node (mm/grad/...) */
    ck_assert_int_ge(check_sources(v, "user_add_matmul+0x"), 2);
    mj_free(v);
    pf_remove_dir(dir);
    free(dir);
    v = train_profile("user_add", &dir);
    ck_assert_int_ge(check_sources(v, "user_build+0x"), 2);
    mj_free(v);
    pf_remove_dir(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("source");
    TCase *tc = tcase_create("source");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, first_frame_outside_popc_and_the_excludes);
    tcase_add_test(tc, profile_lists_sources_with_the_excludes);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
