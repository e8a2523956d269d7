/* check_serialize.c - graph serialization: exact round trips of graphs
** built with layers.h (an MLP, a CNN with BatchNorm and its buffer
** updates) and of a node with every attribute type and annotation; the
** same listing, ids, shapes, tensor bytes and update list after the trip;
** and malformed bytes (every truncation, flipped bytes, a foreign buffer)
** refused with POPC_EIO rather than crashing; and bytes an older build
** wrote (tests/data/graph/, made by this file's generation mode, below)
** read back and written again unchanged, with the same messages for
** damaged copies. Needs the build tree's op plugins (POPC_PLUGIN_PATH,
** set by make check). tests/ref/gen_graph_fixtures.c wrote the fixtures
** with this file's graphs. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"

#ifndef OK
#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())
#endif
#define HAS(msg, part)                                                     \
    ck_assert_msg(strstr((msg), (part)) != NULL, "'%s' not in: %s", (part), \
                  (msg))

static void need_plugins(void)
{
    popc_registry *reg;

    OK(popc_registry_global(&reg));
    ck_assert_msg(popc_registry_find_op(reg, NULL, "Conv", 0) != NULL,
                  "the op plugins are not loaded (POPC_PLUGIN_PATH=%s)",
                  getenv("POPC_PLUGIN_PATH") ? getenv("POPC_PLUGIN_PATH")
                                             : "");
}

static popc_graph *mlp(void)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int64_t xd[2] = {4, 20};
    int64_t ld[1] = {4};
    int x, lab, h, a, o, loss;

    OK(popc_graph_new("mlp", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &x));
    OK(popc_graph_add_input(g, "labels", POPC_DTYPE_I32, ld, 1, &lab));
    OK(popc_layers_new(g, 7, &L));
    OK(popc_nn_linear(L, "fc1", x, 20, 16, 1, &h));
    OK(popc_nn_activation(L, "Relu", h, 0.0, &a));
    OK(popc_nn_dropout(L, a, 0.25, &a));
    OK(popc_nn_linear(L, "fc2", a, 16, 5, 1, &o));
    OK(popc_nn_cross_entropy(L, o, lab, "mean", &loss));
    OK(popc_graph_add_output(g, o));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    return g;
}

static popc_graph *cnn(void)
{
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int64_t xd[4] = {2, 1, 8, 8};
    int64_t ld[1] = {2};
    int x, lab, y, loss;

    OK(popc_graph_new("cnn", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 4, &x));
    OK(popc_graph_add_input(g, "labels", POPC_DTYPE_I32, ld, 1, &lab));
    OK(popc_layers_new(g, 11, &L));
    OK(popc_graph_push_scope(g, "features"));
    OK(popc_nn_conv2d(L, "conv1", x, 1, 4, 3, 1, 1, 1, 1, 1, &y));
    OK(popc_nn_batchnorm2d(L, "bn1", y, 4, 1e-5, 0.1, &y));
    OK(popc_nn_activation(L, "Relu", y, 0.0, &y));
    OK(popc_nn_maxpool2d(L, y, 2, 0, 0, &y));
    popc_graph_pop_scope(g);
    OK(popc_nn_flatten(L, y, 1, &y));
    OK(popc_nn_linear(L, "fc", y, 4 * 4 * 4, 3, 1, &y));
    OK(popc_nn_cross_entropy(L, y, lab, NULL, &loss));
    OK(popc_graph_add_output(g, loss));
    popc_layers_free(L);
    return g;
}

/* A node of an unknown vendor op carrying every attribute type, custom
** annotations, a constant and a scope left open (builder state). */
static popc_graph *attrs_graph(void)
{
    static const int64_t ints[3] = {1, -2, 1LL << 40};
    static const double floats[2] = {0.1, -1e300};
    static const char *const strings[3] = {"a", "", "long string \xce\xbb"};
    float tdata[6] = {1.5f, -0.0f, 3.25f, 1e-30f, -7.0f, 2.0f};
    int64_t tdims[2] = {2, 3};
    popc_view tv = {POPC_DTYPE_F32, 2, {2, 3}, tdata};
    popc_attr at[8];
    popc_annotations an = {"scope/a", "block7", 1, 2, 3, 1, 0.25};
    popc_graph *g = NULL;
    popc_tensor *c = NULL;
    int x, k, outs[2], node;
    int64_t xd[1] = {6};

    memset(at, 0, sizeof at);
    at[0] = (popc_attr){.name = "i", .type = POPC_ATTR_INT, .i = -42};
    at[1] = (popc_attr){.name = "f", .type = POPC_ATTR_FLOAT, .f = 0.1};
    at[2] = (popc_attr){.name = "s", .type = POPC_ATTR_STRING, .s = "hello"};
    at[3] = (popc_attr){.name = "is", .type = POPC_ATTR_INTS, .n = 3,
                        .ints = ints};
    at[4] = (popc_attr){.name = "fs", .type = POPC_ATTR_FLOATS, .n = 2,
                        .floats = floats};
    at[5] = (popc_attr){.name = "ss", .type = POPC_ATTR_STRINGS, .n = 3,
                        .strings = strings};
    at[6] = (popc_attr){.name = "t", .type = POPC_ATTR_TENSOR, .tensor = &tv};
    at[7] = (popc_attr){.name = "empty", .type = POPC_ATTR_INTS, .n = 0};
    OK(popc_graph_new("attrs", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 1, &x));
    OK(popc_tensor_from_data(POPC_DTYPE_F32, tdims, 2, tdata, &c));
    OK(popc_graph_add_constant(g, NULL, c, &k));
    popc_tensor_free(c);
    OK(popc_graph_set_annotations(g, &an));
    OK(popc_graph_add_node(g, "acme.ops", "Mystery", 3, (int[]){x, -1, k},
                           3, outs, 2, at, 8, "mystery", &node));
    OK(popc_graph_add_output(g, outs[1]));
    OK(popc_graph_push_scope(g, "open"));
    return g;
}

static void check_same(const popc_graph *a, const popc_graph *b)
{
    char *da = NULL, *db = NULL;

    OK(popc_graph_dump(a, &da));
    OK(popc_graph_dump(b, &db));
    ck_assert_str_eq(da, db);
    free(da);
    free(db);
    ck_assert_str_eq(popc_graph_name(a), popc_graph_name(b));
    ck_assert_int_eq(popc_graph_n_values(a), popc_graph_n_values(b));
    ck_assert_int_eq(popc_graph_n_nodes(a), popc_graph_n_nodes(b));
    for (int v = 0; v < popc_graph_n_values(a); v++) {
        popc_view va = popc_graph_value_info(a, v);
        popc_view vb = popc_graph_value_info(b, v);
        popc_tensor *ta = popc_graph_value_tensor(a, v);
        popc_tensor *tb = popc_graph_value_tensor(b, v);

        ck_assert_str_eq(popc_graph_value_name(a, v),
                         popc_graph_value_name(b, v));
        ck_assert_int_eq(popc_graph_value_kind(a, v),
                         popc_graph_value_kind(b, v));
        ck_assert_int_eq(popc_graph_value_trainable(a, v),
                         popc_graph_value_trainable(b, v));
        ck_assert_int_eq(popc_graph_value_producer(a, v),
                         popc_graph_value_producer(b, v));
        ck_assert_int_eq(va.dtype, vb.dtype);
        ck_assert_int_eq(va.rank, vb.rank);
        ck_assert_int_eq(memcmp(va.dims, vb.dims, sizeof va.dims), 0);
        ck_assert_int_eq(ta != NULL, tb != NULL);
        if (ta) {
            ck_assert_uint_eq(popc_tensor_nbytes(ta), popc_tensor_nbytes(tb));
            ck_assert_int_eq(memcmp(popc_tensor_cdata(ta),
                                    popc_tensor_cdata(tb),
                                    popc_tensor_nbytes(ta)), 0);
        }
    }
    for (int n = 0; n < popc_graph_n_nodes(a); n++) {
        popc_annotations x = popc_graph_node_annotations(a, n);
        popc_annotations y = popc_graph_node_annotations(b, n);

        ck_assert_int_eq(popc_graph_node_version(a, n),
                         popc_graph_node_version(b, n));
        ck_assert_int_eq(x.ipu, y.ipu);
        ck_assert_int_eq(x.stage, y.stage);
        ck_assert_int_eq(x.phase, y.phase);
        ck_assert_int_eq(x.recompute, y.recompute);
        ck_assert(x.available_memory == y.available_memory);
        ck_assert_int_eq(!x.scope, !y.scope);
        ck_assert_int_eq(!x.block, !y.block);
        if (x.scope)
            ck_assert_str_eq(x.scope, y.scope);
        if (x.block)
            ck_assert_str_eq(x.block, y.block);
    }
    ck_assert_int_eq(popc_graph_n_updates(a), popc_graph_n_updates(b));
    for (int i = 0; i < popc_graph_n_updates(a); i++) {
        int wa, va_, wb, vb_;
        OK(popc_graph_update(a, i, &wa, &va_));
        OK(popc_graph_update(b, i, &wb, &vb_));
        ck_assert_int_eq(wa, wb);
        ck_assert_int_eq(va_, vb_);
    }
}

static popc_graph *round_trip(const popc_graph *g)
{
    void *data = NULL;
    size_t size = 0;
    popc_graph *back = NULL;

    OK(popc_graph_serialize(g, &data, &size));
    ck_assert_uint_gt(size, 12);
    OK(popc_graph_deserialize(data, size, &back));
    free(data);
    check_same(g, back);
    return back;
}

START_TEST(mlp_round_trip)
{
    popc_graph *g, *b;

    need_plugins();
    g = mlp();
    b = round_trip(g);
    /* the copy is a working graph: it verifies, and serializes to the
    ** same bytes again */
    OK(popc_graph_verify(b, 1));
    /* bytes are outside data: foreign code in them needs consent */
    ck_assert_str_eq(popc_graph_origin(b), "serialized graph bytes");
    {
        void *d1, *d2;
        size_t s1, s2;
        OK(popc_graph_serialize(g, &d1, &s1));
        OK(popc_graph_serialize(b, &d2, &s2));
        ck_assert_uint_eq(s1, s2);
        ck_assert_int_eq(memcmp(d1, d2, s1), 0);
        free(d1);
        free(d2);
    }
    popc_graph_free(b);
    popc_graph_free(g);
}
END_TEST

START_TEST(cnn_with_batchnorm_round_trip)
{
    popc_graph *g, *b;
    int w, v;

    need_plugins();
    g = cnn();
    ck_assert_int_eq(popc_graph_n_updates(g), 2);
    b = round_trip(g);
    OK(popc_graph_update(b, 0, &w, &v));
    ck_assert_str_eq(popc_graph_value_name(b, w), "bn1.running_mean");
    ck_assert_int_eq(popc_graph_value_trainable(b, w), 0);
    OK(popc_graph_verify(b, 1));
    /* scope annotations survived */
    ck_assert_ptr_nonnull(strstr(popc_graph_node_name(b, 0), "features/"));
    popc_graph_free(b);
    popc_graph_free(g);
}
END_TEST

START_TEST(every_attribute_type)
{
    popc_graph *g = attrs_graph(), *b = round_trip(g);
    popc_attrs a = popc_graph_node_attrs(b, 0);
    const popc_attr *t;
    int out, id;

    ck_assert_int_eq(a.n, 8);
    ck_assert_int_eq(popc_attr_int(&a, "i", 0), -42);
    ck_assert(popc_attr_float(&a, "f", 0) == 0.1);
    ck_assert_str_eq(popc_attr_string(&a, "s", ""), "hello");
    t = popc_attrs_find(&a, "is");
    ck_assert_int_eq(t->n, 3);
    ck_assert(t->ints[2] == (1LL << 40));
    t = popc_attrs_find(&a, "fs");
    ck_assert(t->floats[1] == -1e300);
    t = popc_attrs_find(&a, "ss");
    ck_assert_str_eq(t->strings[1], "");
    ck_assert_str_eq(t->strings[2], "long string \xce\xbb");
    t = popc_attrs_find(&a, "t");
    ck_assert_int_eq(t->tensor->rank, 2);
    ck_assert(((const float *)t->tensor->data)[3] == 1e-30f);
    t = popc_attrs_find(&a, "empty");
    ck_assert_int_eq(t->type, POPC_ATTR_INTS);
    ck_assert_int_eq(t->n, 0);
    ck_assert_int_eq(popc_graph_node_input(b, 0, 1), -1);
    /* the builder state came along: the open scope names the next node,
    ** and the next generated constant gets the next number */
    {
        popc_tensor *c = NULL;
        int64_t one = 1;
        OK(popc_tensor_new(POPC_DTYPE_F32, &one, 1, &c));
        OK(popc_graph_add_constant(b, NULL, c, &id));
        OK(popc_graph_add_constant(g, NULL, c, &out));
        popc_tensor_free(c);
        ck_assert_str_eq(popc_graph_value_name(b, id),
                         popc_graph_value_name(g, out));
        OK(popc_graph_add_node(b, "acme.ops", "Other", 1, &id, 1, &out, 1,
                               NULL, 0, NULL, &id));
        HAS(popc_graph_node_name(b, id), "open/");
    }
    popc_graph_free(b);
    popc_graph_free(g);
}
END_TEST

/* A node holding a subgraph (ONNX If/Loop/Scan bodies): the node owns a
** deep copy, which clones, lists, and survives a serialization round trip
** nested two levels deep. */
START_TEST(subgraph_attribute_round_trip)
{
    popc_graph *inner = NULL, *body = NULL, *g = NULL, *b = NULL, *c = NULL;
    int64_t d[1] = {3};
    int x, y, out, node;
    popc_attr ga = {0};
    popc_attrs a;
    const popc_attr *got;
    char *dump = NULL;

    OK(popc_graph_new("inner", &inner));
    OK(popc_graph_add_input(inner, "u", POPC_DTYPE_F32, d, 1, &x));
    OK(popc_graph_add_node(inner, NULL, "Neg", 0, &x, 1, &y, 1, NULL, 0,
                           "neg", NULL));
    OK(popc_graph_add_output(inner, y));

    OK(popc_graph_new("body", &body));
    OK(popc_graph_add_input(body, "v", POPC_DTYPE_F32, d, 1, &x));
    ga.name = "then_branch";
    ga.type = POPC_ATTR_GRAPH;
    ga.graph = inner;
    OK(popc_graph_add_node(body, "acme.ops", "Wrap", 1, &x, 1, &y, 1, &ga,
                           1, "wrap", NULL));
    OK(popc_graph_add_output(body, y));
    popc_graph_free(inner); /* the node holds its own copy */

    OK(popc_graph_new("outer", &g));
    OK(popc_graph_add_input(g, "x", POPC_DTYPE_F32, d, 1, &x));
    ga.name = "body";
    ga.graph = body;
    OK(popc_graph_add_node(g, "acme.ops", "Wrap", 1, &x, 1, &out, 1, &ga, 1,
                           "outer_wrap", &node));
    popc_graph_free(body);

    OK(popc_graph_clone(g, &c));
    b = round_trip(c);
    a = popc_graph_node_attrs(b, 0);
    got = popc_attrs_find(&a, "body");
    ck_assert_ptr_nonnull(got);
    ck_assert_int_eq(got->type, POPC_ATTR_GRAPH);
    ck_assert_str_eq(popc_graph_name(got->graph), "body");
    a = popc_graph_node_attrs(got->graph, 0);
    got = popc_attrs_find(&a, "then_branch");
    ck_assert_int_eq(got->type, POPC_ATTR_GRAPH);
    ck_assert_int_eq(popc_graph_n_nodes(got->graph), 1);
    ck_assert_str_eq(popc_graph_node_op(got->graph, 0), "Neg");
    OK(popc_graph_dump(b, &dump));
    HAS(dump, "graph 'body'");
    free(dump);
    ga.graph = NULL;
    ck_assert_int_eq(popc_graph_add_node(g, "acme.ops", "Wrap", 1, &x, 1,
                                         &out, 1, &ga, 1, NULL, NULL),
                     POPC_EINVAL);
    HAS(popc_last_error(), "subgraph is NULL");
    popc_graph_free(b);
    popc_graph_free(c);
    popc_graph_free(g);
}
END_TEST

START_TEST(malformed_bytes_refused)
{
    popc_graph *g = attrs_graph(), *b = NULL;
    unsigned char *data = NULL;
    size_t size = 0;
    int refused = 0, accepted = 0;

    OK(popc_graph_serialize(g, (void **)&data, &size));
    /* every truncation */
    for (size_t n = 0; n < size; n++) {
        popc_status st = popc_graph_deserialize(data, n, &b);
        ck_assert_msg(st == POPC_EIO, "length %zu: %s (%s)", n,
                      popc_status_name(st), popc_last_error());
        ck_assert_ptr_null(b);
    }
    /* every flipped byte: refused or a graph that is still well formed
    ** (a changed weight value, name letter or annotation), never a crash */
    for (size_t i = 0; i < size; i++) {
        popc_status st;
        data[i] ^= 0x5a;
        st = popc_graph_deserialize(data, size, &b);
        data[i] ^= 0x5a;
        if (st == POPC_OK) {
            char *d = NULL;
            OK(popc_graph_dump(b, &d));
            free(d);
            popc_graph_free(b);
            b = NULL;
            accepted++;
        } else {
            ck_assert_msg(st == POPC_EIO || st == POPC_EUNSUPPORTED ||
                              st == POPC_ENOMEM,
                          "byte %zu: %s", i, popc_status_name(st));
            refused++;
        }
    }
    ck_assert_int_gt(refused, 0);
    ck_assert_int_gt(accepted, 0);
    ck_assert_int_eq(popc_graph_deserialize("not a graph at all", 18, &b),
                     POPC_EIO);
    HAS(popc_last_error(), "not a serialized popc graph");
    /* trailing garbage */
    data = realloc(data, size + 1);
    data[size] = 0;
    ck_assert_int_eq(popc_graph_deserialize(data, size + 1, &b), POPC_EIO);
    HAS(popc_last_error(), "unexpected bytes");
    free(data);
    popc_graph_free(g);
}
END_TEST

START_TEST(bad_arguments)
{
    void *d = (void *)1;
    size_t n = 1;
    popc_graph *g = (popc_graph *)1;
    int w, v;

    ck_assert_int_eq(popc_graph_serialize(NULL, &d, &n), POPC_EINVAL);
    ck_assert_ptr_null(d);
    ck_assert_int_eq(popc_graph_deserialize(NULL, 0, &g), POPC_EIO);
    ck_assert_ptr_null(g);
    ck_assert_int_eq(popc_graph_update(NULL, 0, &w, &v), POPC_EINVAL);
    ck_assert_int_eq(w, -1);
    ck_assert_int_eq(popc_graph_n_updates(NULL), 0);
}
END_TEST

/* The bytes of a file, or NULL (size 0) when it cannot be read. */
static unsigned char *read_fixture(const char *name, size_t *size)
{
    const char *dir = getenv("POPC_TEST_DATA");
    char path[4096];
    unsigned char *buf;
    long n;
    FILE *f;

    *size = 0;
    snprintf(path, sizeof path, "%s/graph/%s", dir ? dir : "tests/data",
             name);
    if (!(f = fopen(path, "rb")))
        return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) <= 0 ||
        fseek(f, 0, SEEK_SET) != 0 || !(buf = malloc((size_t)n))) {
        fclose(f);
        return NULL;
    }
    *size = fread(buf, 1, (size_t)n, f);
    fclose(f);
    return buf;
}

/* Bytes an older build wrote load, and are written again byte for byte;
** a graph built now encodes to the same bytes; damaged copies are refused
** with the messages that build gave. */
START_TEST(older_build_bytes_read_unchanged)
{
    static const char *const names[] = {"attrs.popcgrf", "cnn.popcgrf"};
    /* (truncated length, or byte changed by xor, message) as popc 0.4.0
    ** gave them for attrs.popcgrf */
    static const struct {
        size_t len;
        int at;
        unsigned char xor;
        const char *msg;
    } damaged[] = {
        {12, -1, 0, "malformed graph at byte 12: data ends early"},
        {100, -1, 0, "malformed graph at byte 30: a count is larger than the "
                     "data that follows"},
        {0, 708, 0x80, "malformed graph at byte 709: an available-memory "
                       "proportion is out of range"},
        {0, 222, 0x01, "malformed graph at byte 828: a value's producer does "
                       "not list it"},
        {0, 713, 0x01, "malformed graph at byte 828: a graph input is out of "
                       "range"},
    };

    for (int k = 0; k < 2; k++) {
        size_t size, size2;
        unsigned char *old = read_fixture(names[k], &size);
        popc_graph *g = NULL;
        void *again = NULL;

        ck_assert_msg(old != NULL, "cannot read tests/data/graph/%s",
                      names[k]);
        OK(popc_graph_deserialize(old, size, &g));
        OK(popc_graph_serialize(g, &again, &size2));
        ck_assert_msg(size2 == size && memcmp(again, old, size) == 0,
                      "%s: written again as %zu bytes, not the same %zu",
                      names[k], size2, size);
        free(again);
        popc_graph_free(g);
        if (k == 0) {
            g = attrs_graph();
            OK(popc_graph_serialize(g, &again, &size2));
            ck_assert_msg(size2 == size && memcmp(again, old, size) == 0,
                          "attrs_graph() encodes to other bytes than the "
                          "older build's");
            free(again);
            popc_graph_free(g);
            for (size_t d = 0; d < sizeof damaged / sizeof *damaged; d++) {
                unsigned char *m = malloc(size);
                size_t len = damaged[d].at >= 0 ? size : damaged[d].len;

                memcpy(m, old, size);
                if (damaged[d].at >= 0)
                    m[damaged[d].at] ^= damaged[d].xor;
                g = NULL;
                ck_assert_int_eq(popc_graph_deserialize(m, len, &g),
                                 POPC_EIO);
                ck_assert_ptr_null(g);
                HAS(popc_last_error(), damaged[d].msg);
                free(m);
            }
        }
        free(old);
    }
}
END_TEST

static Suite *serialize_suite(void)
{
    Suite *s = suite_create("serialize");
    TCase *tc = tcase_create("graph");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, mlp_round_trip);
    tcase_add_test(tc, cnn_with_batchnorm_round_trip);
    tcase_add_test(tc, every_attribute_type);
    tcase_add_test(tc, subgraph_attribute_round_trip);
    tcase_add_test(tc, malformed_bytes_refused);
    tcase_add_test(tc, bad_arguments);
    tcase_add_test(tc, older_build_bytes_read_unchanged);
    suite_add_tcase(s, tc);
    return s;
}

#ifndef POPC_SERIALIZE_NO_MAIN
int main(void)
{
    SRunner *sr;
    int failed;

    sr = srunner_create(serialize_suite());
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
#endif
