/* check_graph.c - the graph IR: building, names, attributes, annotations,
** verification errors, topological order, clone, dump, evaluation and the
** final-loss rule of docs/semantics.md §3. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/graph_testops.h"

static popc_graph *g;

static void setup(void)
{
    ck_assert_msg(testops_register() == POPC_OK, "%s", popc_last_error());
    ck_assert_int_eq(popc_graph_new("g", &g), POPC_OK);
    testops_echo_extra = 0;
}

static void teardown(void)
{
    popc_graph_free(g);
    g = NULL;
}

#define OK(call) ck_assert_msg((call) == POPC_OK, "%s", popc_last_error())
#define STARTS(msg, lit)                                                   \
    ck_assert_msg(strncmp((msg), (lit), strlen(lit)) == 0, "%s", (msg))
#define HAS(msg, part)                                                     \
    ck_assert_msg(strstr((msg), (part)) != NULL, "'%s' not in: %s", (part), \
                  (msg))

static int input(const char *name, int64_t d0, int64_t d1)
{
    int64_t dims[2] = {d0, d1};
    int id;
    OK(popc_graph_add_input(g, name, POPC_DTYPE_F32, dims, 2, &id));
    return id;
}

static int node1(const char *domain, const char *op, const int *in, int n,
                 const char *name)
{
    int y;
    OK(popc_graph_add_node(g, domain, op, 0, in, n, &y, 1, NULL, 0, name,
                           NULL));
    return y;
}

START_TEST(build_and_query)
{
    int64_t wd[2] = {2, 3};
    float w[6] = {1, 2, 3, 4, 5, 6};
    popc_tensor *t = testops_f32(wd, 2, w);
    int x = input("x", 2, 3), wid, c, y, in[2], node;
    popc_view v;

    OK(popc_graph_add_initializer(g, "fc.weight", t, 1, &wid));
    OK(popc_graph_add_constant(g, NULL, t, &c));
    popc_tensor_free(t);
    ck_assert_int_eq(popc_graph_value_kind(g, x), POPC_VALUE_INPUT);
    ck_assert_int_eq(popc_graph_value_kind(g, wid), POPC_VALUE_INITIALIZER);
    ck_assert_int_eq(popc_graph_value_kind(g, c), POPC_VALUE_CONSTANT);
    ck_assert_int_eq(popc_graph_value_trainable(g, wid), 1);
    ck_assert_int_eq(popc_graph_find_value(g, "fc.weight"), wid);
    ck_assert_int_eq(popc_graph_find_value(g, "nope"), -1);
    ck_assert_ptr_nonnull(popc_graph_value_name(g, c));
    v = popc_graph_value_info(g, wid);
    ck_assert_ptr_nonnull(v.data);
    ck_assert_float_eq(((float *)v.data)[5], 6.0f);

    in[0] = x;
    in[1] = wid;
    OK(popc_graph_add_node(g, "test", "Add", 0, in, 2, &y, 1, NULL, 0, "add",
                           &node));
    ck_assert_str_eq(popc_graph_node_name(g, node), "add");
    ck_assert_str_eq(popc_graph_node_domain(g, node), "test");
    ck_assert_str_eq(popc_graph_node_op(g, node), "Add");
    ck_assert_int_eq(popc_graph_node_n_inputs(g, node), 2);
    ck_assert_int_eq(popc_graph_node_input(g, node, 1), wid);
    ck_assert_int_eq(popc_graph_node_output(g, node, 0), y);
    ck_assert_int_eq(popc_graph_value_producer(g, y), node);
    ck_assert_int_eq(popc_graph_value_producer(g, x), -1);
    ck_assert_str_eq(popc_graph_value_name(g, y), "add:0");
    v = popc_graph_value_info(g, y);
    ck_assert_int_eq(v.dtype, POPC_DTYPE_F32);
    ck_assert_int_eq(v.rank, 2);
    ck_assert_int_eq(v.dims[1], 3);
    ck_assert_ptr_null(v.data);
    OK(popc_graph_add_output(g, y));
    ck_assert_int_eq(popc_graph_n_outputs(g), 1);
    ck_assert_int_eq(popc_graph_output(g, 0), y);
    ck_assert_int_eq(popc_graph_n_inputs(g), 1);
    ck_assert_int_eq(popc_graph_input(g, 0), x);
    /* ONNX ops default to the opset popc implements */
    OK(popc_graph_add_node(g, NULL, "Unknown", 0, &x, 1, &y, 1, NULL, 0,
                           NULL, &node));
    ck_assert_str_eq(popc_graph_node_domain(g, node), "ai.onnx");
    ck_assert_int_eq(popc_graph_node_version(g, node), POPC_ONNX_OPSET);
    /* bad ids are refused or give neutral answers */
    ck_assert_ptr_null(popc_graph_node_name(g, 99));
    ck_assert_int_eq(popc_graph_node_input(g, 0, 7), -1);
    ck_assert_int_eq(popc_graph_add_output(g, 1000), POPC_EINVAL);
    in[0] = -5;
    ck_assert_int_eq(popc_graph_add_node(g, "test", "Add", 0, in, 2, &y, 1,
                                         NULL, 0, NULL, NULL), POPC_EINVAL);
}
END_TEST

/* popc_graph_add takes popc_graph_add_node's arguments by name. */
START_TEST(add_by_descriptor)
{
    popc_graph *dg = NULL;
    int64_t d[2] = {2, 3};
    popc_attr alpha = {.name = "alpha", .type = POPC_ATTR_FLOAT, .f = 0.2};
    int x, y, node = -1;
    popc_node_desc nd = {.size = sizeof nd, .op = "LeakyRelu",
                         .inputs = &x, .n_inputs = 1, .n_outputs = 1,
                         .attrs = &alpha, .n_attrs = 1, .name = "leaky"};
    popc_node_desc small = nd;
    popc_attrs at;

    ck_assert_int_eq(popc_graph_new("g", &dg), POPC_OK);
    ck_assert_int_eq(popc_graph_add_input(dg, "x", POPC_DTYPE_F32, d, 2, &x),
                     POPC_OK);
    ck_assert_int_eq(popc_graph_add(dg, &nd, &y, &node), POPC_OK);
    ck_assert_str_eq(popc_graph_node_name(dg, node), "leaky");
    ck_assert_str_eq(popc_graph_node_op(dg, node), "LeakyRelu");
    ck_assert_int_eq(popc_graph_node_output(dg, node, 0), y);
    at = popc_graph_node_attrs(dg, node);
    ck_assert(popc_attr_float(&at, "alpha", 0.0) == 0.2);
    ck_assert_int_eq(popc_graph_value_info(dg, y).dims[1], 3);
    small.size = 8;
    ck_assert_int_eq(popc_graph_add(dg, &small, &y, NULL), POPC_EINVAL);
    ck_assert_int_eq(popc_graph_add(dg, NULL, &y, NULL), POPC_EINVAL);
    popc_graph_free(dg);
}
END_TEST

START_TEST(names_unique_and_generated)
{
    int x = input("x", 2, 2), in[2] = {x, x}, y, n1, n2;

    ck_assert_int_eq(popc_graph_add_input(g, "x", POPC_DTYPE_F32, NULL, 0,
                                          &y), POPC_EEXIST);
    HAS(popc_last_error(), "'x'");
    OK(popc_graph_add_node(g, "test", "Add", 0, in, 2, &y, 1, NULL, 0, NULL,
                           &n1));
    ck_assert_str_eq(popc_graph_node_name(g, n1), "Add_0");
    OK(popc_graph_push_scope(g, "l1"));
    OK(popc_graph_push_scope(g, "inner"));
    OK(popc_graph_add_node(g, "test", "Add", 0, in, 2, &y, 1, NULL, 0, NULL,
                           &n2));
    ck_assert_str_eq(popc_graph_node_name(g, n2), "l1/inner/Add_1");
    ck_assert_str_eq(popc_graph_annotations(g).scope, "l1/inner");
    popc_graph_pop_scope(g);
    OK(popc_graph_add_node(g, "test", "Add", 0, in, 2, &y, 1, NULL, 0, "fc",
                           &n2));
    ck_assert_str_eq(popc_graph_node_name(g, n2), "l1/fc");
    ck_assert_int_eq(popc_graph_add_node(g, "test", "Add", 0, in, 2, &y, 1,
                                         NULL, 0, "fc", NULL), POPC_EEXIST);
    HAS(popc_last_error(), "l1/fc");
    popc_graph_pop_scope(g);
    popc_graph_pop_scope(g); /* extra pops are harmless */
    ck_assert_ptr_null(popc_graph_annotations(g).scope);
    /* a generated name that a user already took gets a suffix */
    OK(popc_graph_add_node(g, "test", "Add", 0, in, 2, &y, 1, NULL, 0,
                           "Add_4", &n1));
    OK(popc_graph_add_node(g, "test", "Add", 0, in, 2, &y, 1, NULL, 0, NULL,
                           &n2));
    ck_assert_str_eq(popc_graph_node_name(g, n2), "Add_4_1");
    ck_assert_int_eq(popc_graph_find_value(g, "Add_4_1:0"), y);
}
END_TEST

START_TEST(attributes_deep_copied)
{
    int64_t ints[3] = {1, 2, 3};
    double floats[2] = {0.5, 1.5};
    char s0[8] = "alpha", s1[8] = "beta";
    const char *strs[2] = {s0, s1};
    char str[16] = "hello";
    float tdata[2] = {7, 8};
    popc_view tv = {.dtype = POPC_DTYPE_F32, .rank = 1, .dims = {2},
                    .data = tdata};
    char name0[8] = "i";
    popc_attr a[7];
    popc_attrs got;
    const popc_attr *x;
    int in = input("x", 1, 1), y, node;
    int64_t buf[4];

    memset(a, 0, sizeof a);
    a[0].name = name0;
    a[0].type = POPC_ATTR_INT;
    a[0].i = 42;
    a[1].name = "f";
    a[1].type = POPC_ATTR_FLOAT;
    a[1].f = 2.5;
    a[2].name = "s";
    a[2].type = POPC_ATTR_STRING;
    a[2].s = str;
    a[3].name = "ints";
    a[3].type = POPC_ATTR_INTS;
    a[3].ints = ints;
    a[3].n = 3;
    a[4].name = "floats";
    a[4].type = POPC_ATTR_FLOATS;
    a[4].floats = floats;
    a[4].n = 2;
    a[5].name = "strings";
    a[5].type = POPC_ATTR_STRINGS;
    a[5].strings = strs;
    a[5].n = 2;
    a[6].name = "t";
    a[6].type = POPC_ATTR_TENSOR;
    a[6].tensor = &tv;
    OK(popc_graph_add_node(g, "custom", "Thing", 1, &in, 1, &y, 1, a, 7,
                           NULL, &node));
    /* scribble over everything the caller owned */
    memset(ints, 0, sizeof ints);
    memset(floats, 0, sizeof floats);
    strcpy(s0, "xxxx");
    strcpy(s1, "yyyy");
    strcpy(str, "zzzz");
    strcpy(name0, "q");
    tdata[0] = tdata[1] = 0;
    got = popc_graph_node_attrs(g, node);
    ck_assert_int_eq(got.n, 7);
    ck_assert_int_eq(popc_attr_int(&got, "i", 0), 42);
    ck_assert_double_eq(popc_attr_float(&got, "f", 0), 2.5);
    ck_assert_str_eq(popc_attr_string(&got, "s", ""), "hello");
    ck_assert_int_eq(popc_attr_ints(&got, "ints", buf, 4), 3);
    ck_assert_int_eq(buf[2], 3);
    x = popc_attrs_find(&got, "floats");
    ck_assert_double_eq(x->floats[1], 1.5);
    x = popc_attrs_find(&got, "strings");
    ck_assert_str_eq(x->strings[0], "alpha");
    ck_assert_str_eq(x->strings[1], "beta");
    x = popc_attrs_find(&got, "t");
    ck_assert_ptr_ne(x->tensor->data, tdata);
    ck_assert_float_eq(((float *)x->tensor->data)[1], 8.0f);
    /* duplicate attribute names are refused */
    a[1].name = "s";
    ck_assert_int_eq(popc_graph_add_node(g, "custom", "Thing", 1, &in, 1, &y,
                                         1, a, 3, NULL, NULL), POPC_EINVAL);
    HAS(popc_last_error(), "'s'");
}
END_TEST

START_TEST(annotations_copied_to_nodes)
{
    char block[16] = "blk";
    popc_annotations a = {.scope = "enc", .block = block, .ipu = 1,
                          .stage = 2, .phase = -1, .recompute = 1,
                          .available_memory = 0.3};
    popc_annotations got;
    int x = input("x", 2, 2), in[2] = {x, x}, y, n1, n2;

    OK(popc_graph_set_annotations(g, &a));
    strcpy(block, "changed");
    OK(popc_graph_add_node(g, "test", "Add", 0, in, 2, &y, 1, NULL, 0, NULL,
                           &n1));
    got = popc_graph_node_annotations(g, n1);
    ck_assert_str_eq(got.scope, "enc");
    ck_assert_str_eq(got.block, "blk");
    ck_assert_int_eq(got.ipu, 1);
    ck_assert_int_eq(got.stage, 2);
    ck_assert_int_eq(got.phase, -1);
    ck_assert_int_eq(got.recompute, 1);
    ck_assert_double_eq(got.available_memory, 0.3);
    ck_assert_str_eq(popc_graph_node_name(g, n1), "enc/Add_0");
    OK(popc_graph_set_annotations(g, NULL));
    OK(popc_graph_add_node(g, "test", "Add", 0, in, 2, &y, 1, NULL, 0, NULL,
                           &n2));
    got = popc_graph_node_annotations(g, n2);
    ck_assert_ptr_null(got.scope);
    ck_assert_ptr_null(got.block);
    ck_assert_int_eq(got.ipu, -1);
    ck_assert_int_eq(got.stage, -1);
    /* the first node kept its copy */
    ck_assert_int_eq(popc_graph_node_annotations(g, n1).ipu, 1);
    a.ipu = 3;
    a.available_memory = 0;
    OK(popc_graph_set_node_annotations(g, n2, &a));
    ck_assert_int_eq(popc_graph_node_annotations(g, n2).ipu, 3);
    a.available_memory = 1.5;
    ck_assert_int_eq(popc_graph_set_annotations(g, &a), POPC_EINVAL);
    HAS(popc_last_error(), "1.5");
}
END_TEST

START_TEST(inference_error_leaves_graph_unchanged)
{
    int a = input("a", 2, 3), b = input("b", 4, 5), in[2] = {a, b}, y;
    int nv = popc_graph_n_values(g);

    ck_assert_int_eq(popc_graph_add_node(g, "test", "Add", 0, in, 2, &y, 1,
                                         NULL, 0, "bad", NULL), POPC_EINVAL);
    HAS(popc_last_error(), "bad");
    ck_assert_int_eq(y, -1);
    ck_assert_int_eq(popc_graph_n_nodes(g), 0);
    ck_assert_int_eq(popc_graph_n_values(g), nv);
    /* arity comes from the definition */
    ck_assert_int_eq(popc_graph_add_node(g, "test", "Pair", 0, in, 1, &y, 1,
                                         NULL, 0, NULL, NULL), POPC_EINVAL);
    HAS(popc_last_error(), "1 inputs given");
    ck_assert_int_eq(popc_graph_n_nodes(g), 0);
}
END_TEST

START_TEST(verify_lists_all_unknown_ops)
{
    int x = input("x", 2, 2), y;
    const char *msg;

    OK(popc_graph_push_scope(g, "l1"));
    y = node1(NULL, "Foo", &x, 1, NULL);
    y = node1("acme", "Bar", &y, 1, NULL);
    y = node1(NULL, "Foo", &y, 1, NULL);
    popc_graph_pop_scope(g);
    y = node1("test", "Add", (int[]){x, x}, 2, NULL);
    ck_assert_int_eq(popc_graph_verify(g, 0), POPC_ECOMPILE);
    msg = popc_last_error();
    HAS(msg, "Unsupported ops found in graph: ai.onnx::Foo (nodes "
             "'l1/Foo_0', 'l1/Foo_2'), acme::Bar (node 'l1/Bar_1')");
    HAS(msg, "POPC_PLUGIN_PATH");
    ck_assert_ptr_null(strstr(msg, "Add_3"));
}
END_TEST

START_TEST(verify_dangling_and_cycle)
{
    int x = input("x", 2, 2), in[2], y1, y2, n1;

    /* a forward reference to a value that never appears */
    in[0] = x;
    in[1] = 57;
    OK(popc_graph_add_node(g, "test", "Add", 0, in, 2, &y1, 1, NULL, 0,
                           "dangler", NULL));
    ck_assert_int_eq(popc_graph_verify(g, 0), POPC_ECOMPILE);
    HAS(popc_last_error(), "node 'dangler' (test::Add): input 1 refers to "
                           "value 57, which does not exist");
    popc_graph_free(g);
    OK(popc_graph_new("cyc", &g));
    x = input("x", 2, 2);
    /* a consumes b's output (value 3, created next), b consumes a's */
    in[0] = x;
    in[1] = 3;
    OK(popc_graph_add_node(g, "test", "Add", 0, in, 2, &y1, 1, NULL, 0, "a",
                           &n1));
    ck_assert_int_eq(y1, 1);
    OK(popc_graph_add_node(g, "test", "Scale", 0, &y1, 1, &y2, 1, NULL, 0,
                           "b", NULL));
    ck_assert_int_eq(popc_graph_add_node(g, "test", "Scale", 0, &y1, 1, &y2,
                                         1, NULL, 0, "c", NULL), POPC_OK);
    ck_assert_int_eq(y2, 3);
    ck_assert_int_eq(popc_graph_verify(g, 0), POPC_ECOMPILE);
    HAS(popc_last_error(), "cycle through nodes 'a', 'c'");
    ck_assert_ptr_null(strstr(popc_last_error(), "'b'"));
    {
        int order[3];
        ck_assert_int_eq(popc_graph_topo_order(g, order), POPC_ECOMPILE);
    }
}
END_TEST

START_TEST(verify_fills_forward_references)
{
    int y, x, order[2], n0, n1;
    popc_view v;

    /* node 0 reads value 1 (the output of node 1, added after it) */
    OK(popc_graph_add_node(g, "test", "Add", 0, (int[]){2, 2}, 2, &y, 1,
                           NULL, 0, "late", &n0));
    ck_assert_int_eq(y, 0);
    x = input("x", 2, 5);
    ck_assert_int_eq(x, 1);
    OK(popc_graph_add_node(g, "test", "Square", 0, &x, 1, &y, 1, NULL, 0,
                           "early", &n1));
    ck_assert_int_eq(y, 2);
    ck_assert_int_eq(popc_graph_value_info(g, 0).dtype, POPC_DTYPE_UNDEFINED);
    OK(popc_graph_topo_order(g, order));
    ck_assert_int_eq(order[0], n1);
    ck_assert_int_eq(order[1], n0);
    OK(popc_graph_verify(g, 0));
    v = popc_graph_value_info(g, 0);
    ck_assert_int_eq(v.dtype, POPC_DTYPE_F32);
    ck_assert_int_eq(v.dims[1], 5);
}
END_TEST

START_TEST(verify_reports_shape_problems)
{
    int x = input("x", 2, 3), y, z, in[2];

    y = node1("test", "Echo", &x, 1, "echo");
    testops_echo_extra = 1; /* the op now infers [3, 3] */
    in[0] = y;
    in[1] = x;
    z = node1("test", "Square", &y, 1, "sq");
    (void)z;
    /* a node whose op the registry did not know when it was added */
    OK(popc_graph_add_node(g, "late", "Op", 1, in, 2, &z, 1, NULL, 0,
                           "later", NULL));
    ck_assert_int_eq(popc_graph_verify(g, 0), POPC_ECOMPILE);
    HAS(popc_last_error(), "node 'echo' (test::Echo): output 0 ('echo:0') "
                           "was recorded as float32[2, 3] but its inputs now "
                           "give float32[3, 3]");
    HAS(popc_last_error(), "late::Op (node 'later')");
    testops_echo_extra = 0;
    popc_graph_free(g);
    OK(popc_graph_new("g", &g));
    x = input("x", 2, 3);
    in[0] = x;
    in[1] = input("w", 4, 3);
    /* added while its op was unknown, then the op is registered: verify
    ** runs the inference the add could not, and lists its error */
    OK(popc_graph_add_node(g, "test", "LateAdd", 0, in, 2, &z, 1, NULL, 0,
                           "late2", NULL));
    {
        popc_registry *reg;
        OK(popc_registry_global(&reg));
        OK(popc_registry_add_op(reg, testops_late_add()));
    }
    ck_assert_int_eq(popc_graph_verify(g, 0), POPC_ECOMPILE);
    HAS(popc_last_error(), "node 'late2': input 1 does not match input 0");
}
END_TEST

START_TEST(updates_and_set_initializer)
{
    int64_t d[1] = {3}, d2[1] = {4};
    popc_tensor *t = testops_f32(d, 1, NULL), *t2;
    int w, x, y;

    OK(popc_graph_add_initializer(g, "bn.running_mean", t, 0, &w));
    ck_assert_int_eq(popc_graph_value_trainable(g, w), 0);
    x = input("x", 3, 1);
    ck_assert_int_eq(popc_graph_add_update(g, x, w), POPC_EINVAL);
    y = node1("test", "Scale", &w, 1, NULL);
    OK(popc_graph_add_update(g, w, y));
    ck_assert_int_eq(popc_graph_add_update(g, w, y), POPC_EEXIST);
    t2 = testops_f32(d2, 1, NULL);
    ck_assert_int_eq(popc_graph_set_initializer(g, w, t2), POPC_EINVAL);
    HAS(popc_last_error(), "float32[3]");
    popc_tensor_free(t2);
    ((float *)popc_tensor_data(t))[0] = 5;
    OK(popc_graph_set_initializer(g, w, t));
    /* the graph holds a copy now, not the caller's tensor */
    ck_assert_ptr_ne(popc_graph_value_tensor(g, w), t);
    ((float *)popc_tensor_data(t))[0] = 6;
    ck_assert_float_eq(
        ((float *)popc_tensor_data(popc_graph_value_tensor(g, w)))[0], 5.0f);
    popc_tensor_free(t);
    OK(popc_graph_verify(g, 0));
}
END_TEST

START_TEST(clone_and_dump)
{
    int64_t d[1] = {2};
    float wv[2] = {1, 2};
    popc_tensor *t = testops_f32(d, 1, wv);
    popc_graph *c = NULL;
    popc_annotations a = {.scope = "s", .block = NULL, .ipu = 1, .stage = -1,
                          .phase = -1, .recompute = -1};
    popc_attr at = {.name = "alpha", .type = POPC_ATTR_FLOAT, .f = 3};
    int w, y, y2, node;
    char *dump = NULL;

    OK(popc_graph_add_initializer(g, "w", t, 1, &w));
    popc_tensor_free(t);
    OK(popc_graph_set_annotations(g, &a));
    OK(popc_graph_add_node(g, "test", "Scale", 0, &w, 1, &y, 1, &at, 1, "sc",
                           &node));
    OK(popc_graph_add_output(g, y));
    OK(popc_graph_clone(g, &c));
    ck_assert_str_eq(popc_graph_name(c), "g");
    ck_assert_int_eq(popc_graph_n_nodes(c), 1);
    ck_assert_str_eq(popc_graph_node_name(c, 0), "s/sc");
    ck_assert_int_eq(popc_graph_node_annotations(c, 0).ipu, 1);
    ck_assert_int_eq(popc_graph_find_value(c, "w"), w);
    ck_assert_ptr_ne(popc_graph_value_tensor(c, w),
                     popc_graph_value_tensor(g, w));
    /* the clone is independent: builds on, keeps the scope, frees alone */
    OK(popc_graph_add_node(c, "test", "Scale", 0, &y, 1, &y2, 1, &at, 1,
                           NULL, NULL));
    ck_assert_str_eq(popc_graph_node_name(c, 1), "s/Scale_1");
    ck_assert_int_eq(popc_graph_n_nodes(g), 1);
    popc_graph_free(g);
    g = c;
    OK(popc_graph_dump(g, &dump));
    HAS(dump, "graph 'g'");
    HAS(dump, "init   %w: float32[2] trainable");
    HAS(dump, "'s/sc' test::Scale@0 (%w) -> (%s/sc:0 float32[2]) "
              "{alpha=3}  [ipu 1]");
    HAS(dump, "output %s/sc:0");
    free(dump);
}
END_TEST

START_TEST(eval_runs_needed_nodes)
{
    float xv[4] = {1, 2, 3, 4};
    int64_t d[2] = {2, 2};
    popc_tensor *xt = testops_f32(d, 2, xv), *out[3] = {0}, *bad;
    int x = input("x", 2, 2), sq, s2[2], nog, vals[3];
    const float *o;

    sq = node1("test", "Square", &x, 1, "sq");
    OK(popc_graph_add_node(g, "test", "Split2", 0, &sq, 1, s2, 2, NULL, 0,
                           "split", NULL));
    /* an unknown op nobody asks for must not stop the evaluation */
    nog = node1("nowhere", "Missing", &x, 1, "missing");
    vals[0] = s2[1];
    vals[1] = x;
    vals[2] = sq;
    OK(popc_graph_eval(g, &xt, 1, vals, 3, out, 0, 1));
    o = popc_tensor_cdata(out[0]);
    ck_assert_float_eq(o[3], 32.0f);
    ck_assert_ptr_ne(out[1], xt);
    ck_assert_int_eq(popc_tensor_equal(out[1], xt), 1);
    ck_assert_float_eq(((const float *)popc_tensor_cdata(out[2]))[2], 9.0f);
    for (int i = 0; i < 3; i++)
        popc_tensor_free(out[i]);
    ck_assert_int_eq(popc_graph_eval(g, &xt, 1, &nog, 1, out, 0, 1),
                     POPC_ECOMPILE);
    HAS(popc_last_error(), "nowhere::Missing (node 'missing')");
    ck_assert_ptr_null(out[0]);
    /* inputs must match their declaration (dim 0 may differ) */
    {
        int64_t d3[2] = {2, 3};
        bad = testops_f32(d3, 2, NULL);
        ck_assert_int_eq(popc_graph_eval(g, &bad, 1, vals, 1, out, 0, 1),
                         POPC_EINVAL);
        HAS(popc_last_error(), "float32[2, 3]");
        popc_tensor_free(bad);
        d3[0] = 5;
        d3[1] = 2;
        bad = testops_f32(d3, 2, NULL);
        OK(popc_graph_eval(g, &bad, 1, vals, 1, out, 0, 1));
        ck_assert_int_eq(popc_tensor_dims(out[0])[0], 5);
        popc_tensor_free(out[0]);
        popc_tensor_free(bad);
    }
    popc_tensor_free(xt);
}
END_TEST

START_TEST(eval_seeds_per_node_and_run)
{
    int64_t d[2] = {2, 4};
    popc_tensor *xt = testops_f32(d, 2, NULL), *a[2], *b[2];
    int x = input("x", 2, 4), r[2];

    r[0] = node1("test", "Rand", &x, 1, NULL);
    r[1] = node1("test", "Rand", &x, 1, NULL);
    OK(popc_graph_eval(g, &xt, 1, r, 2, a, 1, 42));
    OK(popc_graph_eval(g, &xt, 1, r, 2, b, 1, 42));
    ck_assert_int_eq(popc_tensor_equal(a[0], b[0]), 1);
    ck_assert_int_eq(popc_tensor_equal(a[0], a[1]), 0);
    popc_tensor_free(b[0]);
    popc_tensor_free(b[1]);
    OK(popc_graph_eval(g, &xt, 1, r, 2, b, 1, 43));
    ck_assert_int_eq(popc_tensor_equal(a[0], b[0]), 0);
    for (int i = 0; i < 2; i++) {
        popc_tensor_free(a[i]);
        popc_tensor_free(b[i]);
    }
    popc_tensor_free(xt);
}
END_TEST

/* ---- docs/semantics.md §3 ------------------------------------- */

START_TEST(final_loss_none)
{
    int x = input("x", 2, 2);

    node1("test", "Square", &x, 1, NULL);
    OK(popc_graph_verify(g, 0));
    ck_assert_int_eq(popc_graph_verify(g, 1), POPC_ECOMPILE);
    STARTS(popc_last_error(), "Couldn't find a loss in graph!");
}
END_TEST

START_TEST(final_loss_multiple)
{
    int x = input("x", 2, 2), sq;

    sq = node1("test", "Square", &x, 1, NULL);
    node1("test", "SumLoss", &sq, 1, "loss_a");
    node1("test", "SumLoss", &x, 1, "loss_b");
    ck_assert_int_eq(popc_graph_verify(g, 1), POPC_ECOMPILE);
    STARTS(popc_last_error(), "Multiple independent losses found in graph. "
                              "Graph must have one final loss. Wrap final "
                              "graph loss in poptorch.identity_loss.");
    HAS(popc_last_error(), "'loss_a', 'loss_b'");
}
END_TEST

START_TEST(final_loss_nested)
{
    int x = input("x", 2, 2), la, lb, sum;

    la = node1("test", "SumLoss", &x, 1, "inner_a");
    lb = node1("test", "SumLoss", &x, 1, "inner_b");
    sum = node1("test", "Add", (int[]){la, lb}, 2, NULL);
    node1("test", "SumLoss", &sum, 1, "outer");
    /* losses feeding another loss are not final: one remains */
    OK(popc_graph_verify(g, 1));
}
END_TEST

static Suite *graph_suite(void)
{
    Suite *s = suite_create("graph");
    TCase *tc = tcase_create("build");
    TCase *tv = tcase_create("verify");
    TCase *te = tcase_create("eval");
    TCase *tl = tcase_create("loss");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, build_and_query);
    tcase_add_test(tc, names_unique_and_generated);
    tcase_add_test(tc, add_by_descriptor);
    tcase_add_test(tc, attributes_deep_copied);
    tcase_add_test(tc, annotations_copied_to_nodes);
    tcase_add_test(tc, inference_error_leaves_graph_unchanged);
    tcase_add_test(tc, updates_and_set_initializer);
    tcase_add_test(tc, clone_and_dump);
    suite_add_tcase(s, tc);
    tcase_add_checked_fixture(tv, setup, teardown);
    tcase_add_test(tv, verify_lists_all_unknown_ops);
    tcase_add_test(tv, verify_dangling_and_cycle);
    tcase_add_test(tv, verify_fills_forward_references);
    tcase_add_test(tv, verify_reports_shape_problems);
    suite_add_tcase(s, tv);
    tcase_add_checked_fixture(te, setup, teardown);
    tcase_add_test(te, eval_runs_needed_nodes);
    tcase_add_test(te, eval_seeds_per_node_and_run);
    suite_add_tcase(s, te);
    tcase_add_checked_fixture(tl, setup, teardown);
    tcase_add_test(tl, final_loss_none);
    tcase_add_test(tl, final_loss_multiple);
    tcase_add_test(tl, final_loss_nested);
    suite_add_tcase(s, tl);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(graph_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
