/* check_services.c - the host services plugins find by name
** (popc/services.h), reached the way a plugin reaches them: through the
** host table an op's infer() is given. Expected values are derived by
** hand from the binary16 format (1 sign, 5 exponent, 10 fraction bits),
** and the F16C answer from the CPU's own flags in /proc/cpuinfo. The op
** plugins' and the SDK example's init() run on a host missing a service:
** each fails naming it.
*/
#include "config.h"

#include <check.h>
#include <ltdl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/popc.h"
#include "popc/plugin.h"
#include "popc/kernel.h"
#include "popc/services.h"

static const popc_host *host;

static popc_status probe_infer(popc_infer_ctx *ic)
{
    host = ic->host;
    ic->outputs[0] = ic->inputs[0];
    ic->outputs[0].data = NULL;
    return POPC_OK;
}

static popc_status probe_forward(const popc_kernel_ctx *kc)
{
    (void)kc;
    return POPC_OK;
}

static const popc_op_def probe_def = {
    .size = sizeof(popc_op_def), .domain = "svc_test", .name = "Probe",
    .since_version = 1, .min_inputs = 1, .max_inputs = 1, .min_outputs = 1,
    .max_outputs = 1, .infer = probe_infer, .forward = probe_forward,
    .doc = "captures the host table"};

/* The host table, from a node's infer() (once per process). */
static void get_host(void)
{
    popc_registry *reg;
    popc_graph *g;
    int64_t dims[1] = {2};
    int x, y;

    if (host)
        return;
    ck_assert_int_eq(popc_registry_global(&reg), POPC_OK);
    ck_assert_int_eq(popc_registry_add_op(reg, &probe_def), POPC_OK);
    ck_assert_int_eq(popc_graph_new("probe", &g), POPC_OK);
    ck_assert_int_eq(popc_graph_add_input(g, "x", POPC_DTYPE_F32, dims, 1, &x),
                     POPC_OK);
    ck_assert_int_eq(popc_graph_add_node(g, "svc_test", "Probe", 1, &x, 1,
                                         &y, 1, NULL, 0, "p", NULL),
                     POPC_OK);
    popc_graph_free(g);
    ck_assert_ptr_nonnull(host);
    ck_assert(POPC_HAS_FIELD(popc_host, host->size, get_proc));
    ck_assert_ptr_nonnull(host->get_proc);
}

static void *svc(const char *name)
{
    void *fn;

    get_host();
    fn = host->get_proc(name);
    ck_assert_msg(fn != NULL, "service '%s' missing", name);
    return fn;
}

static uint32_t bits(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof u);
    return u;
}

static float from_bits(uint32_t u)
{
    float f;

    memcpy(&f, &u, sizeof f);
    return f;
}

START_TEST(unknown_names)
{
    get_host();
    ck_assert_ptr_null(host->get_proc(NULL));
    ck_assert_ptr_null(host->get_proc(""));
    ck_assert_ptr_null(host->get_proc("popc_no_such_service"));
    ck_assert_ptr_null(host->get_proc("popc_f16_to_f32 "));
}
END_TEST

/* Hand-derived pairs: 1 = 0x3c00 (exponent 15), -2 = 0xc000, 65504 =
** 0x7bff (largest finite), 2^-24 = 0x0001 (smallest subnormal), 2^-14 =
** 0x0400 (smallest normal), 0.5 = 0x3800. */
static const struct {
    uint32_t f32;
    uint16_t f16;
} exact[] = {{0x3f800000u, 0x3c00}, {0xc0000000u, 0xc000},
             {0x477fe000u, 0x7bff}, {0x33800000u, 0x0001},
             {0x38800000u, 0x0400}, {0x3f000000u, 0x3800},
             {0x00000000u, 0x0000}, {0x80000000u, 0x8000},
             {0x7f800000u, 0x7c00}, {0xff800000u, 0xfc00}};

START_TEST(scalar_conversion)
{
    popc_f32_to_f16_fn f2h = (popc_f32_to_f16_fn)svc(POPC_SERVICE_F32_TO_F16);
    popc_f16_to_f32_fn h2f = (popc_f16_to_f32_fn)svc(POPC_SERVICE_F16_TO_F32);

    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        ck_assert_uint_eq(f2h(from_bits(exact[i].f32)), exact[i].f16);
        ck_assert_uint_eq(bits(h2f(exact[i].f16)), exact[i].f32);
    }
    /* ties go to the even fraction: 1 + 2^-11 is halfway between 0x3c00
    ** and 0x3c01, 1 + 3 * 2^-11 halfway between 0x3c01 and 0x3c02 */
    ck_assert_uint_eq(f2h(1.0f + ldexpf(1, -11)), 0x3c00);
    ck_assert_uint_eq(f2h(1.0f + 3 * ldexpf(1, -11)), 0x3c02);
    /* 65520 is halfway between 65504 and 2^16: rounds to infinity */
    ck_assert_uint_eq(f2h(65520.0f), 0x7c00);
    ck_assert_uint_eq(f2h(65519.0f), 0x7bff);
    /* 2^-25 is a tie between 0 and 2^-24: to 0 (even) */
    ck_assert_uint_eq(f2h(ldexpf(1, -25)), 0x0000);
    ck_assert(isnan(h2f(0x7e00)));
    ck_assert(isnan(h2f(0xfc01)));
    ck_assert_uint_eq(f2h(NAN) & 0x7c00, 0x7c00);
    ck_assert_uint_ne(f2h(NAN) & 0x03ff, 0);
    /* the same bits as the public API */
    for (uint32_t h = 0; h < 0x10000u; h++)
        if (!isnan(h2f((uint16_t)h)))
            ck_assert_uint_eq(bits(h2f((uint16_t)h)),
                              bits(popc_f16_to_f32((uint16_t)h)));
}
END_TEST

/* Every binary16 value through the array services equals the one-value
** services, whichever loop (F16C or scalar) this CPU takes. */
START_TEST(array_conversion)
{
    popc_f32_to_f16_fn f2h = (popc_f32_to_f16_fn)svc(POPC_SERVICE_F32_TO_F16);
    popc_f16_to_f32_fn h2f = (popc_f16_to_f32_fn)svc(POPC_SERVICE_F16_TO_F32);
    popc_f32_to_f16_n_fn f2h_n =
        (popc_f32_to_f16_n_fn)svc(POPC_SERVICE_F32_TO_F16_N);
    popc_f16_to_f32_n_fn h2f_n =
        (popc_f16_to_f32_n_fn)svc(POPC_SERVICE_F16_TO_F32_N);
    enum { N = 65536 + 7 }; /* not a multiple of the 8-wide loop */
    uint16_t *h = malloc(sizeof *h * N), *back = malloc(sizeof *back * N);
    float *f = malloc(sizeof *f * N), *r = malloc(sizeof *r * N);
    uint32_t seed = 12345;

    ck_assert(h && back && f && r);
    for (int i = 0; i < N; i++)
        h[i] = (uint16_t)i;
    h2f_n(f, h, N);
    for (int i = 0; i < N; i++)
        if (!isnan(f[i]))
            ck_assert_uint_eq(bits(f[i]), bits(h2f(h[i])));
    f2h_n(back, f, N);
    for (int i = 0; i < N; i++)
        if (!isnan(f[i]))
            ck_assert_uint_eq(back[i], h[i]);
    /* arbitrary floats, in and beyond the binary16 range */
    for (int i = 0; i < N; i++) {
        seed = seed * 1664525u + 1013904223u;
        r[i] = ldexpf((float)(seed >> 8) / 16777216.0f, (int)(seed % 50) - 30);
        if (seed & 0x80)
            r[i] = -r[i];
    }
    f2h_n(back, r, N);
    for (int i = 0; i < N; i++)
        ck_assert_msg(back[i] == f2h(r[i]), "%a: %04x vs %04x", r[i],
                      back[i], f2h(r[i]));
    h2f_n(f, h, 0); /* an empty block writes nothing */
    free(h);
    free(back);
    free(f);
    free(r);
}
END_TEST

/* x = 1 + 2^-12 lies a quarter of the way from 1 (0x3c00) to 1 + 2^-10
** (0x3c01): stochastic rounding picks 0x3c01 with probability 1/4. */
START_TEST(stochastic_rounding)
{
    popc_f32_to_f16_stochastic_n_fn sr =
        (popc_f32_to_f16_stochastic_n_fn)svc(
            POPC_SERVICE_F32_TO_F16_STOCHASTIC_N);
    enum { N = 40000 };
    float *x = malloc(sizeof *x * N);
    uint16_t *a = malloc(sizeof *a * N), *b = malloc(sizeof *b * N);
    int up = 0, differ = 0;

    ck_assert(x && a && b);
    for (int i = 0; i < N; i++)
        x[i] = 1.0f + ldexpf(1, -12);
    sr(a, x, N, 42, 0);
    for (int i = 0; i < N; i++) {
        ck_assert(a[i] == 0x3c00 || a[i] == 0x3c01);
        up += a[i] == 0x3c01;
    }
    /* binomial(40000, 1/4): sd 87, so 1/4 +- 0.011 is 5 sd */
    ck_assert_msg(fabs((double)up / N - 0.25) < 0.011, "%d of %d up", up, N);
    /* repeats bitwise; two halves with their first index give the whole */
    sr(b, x, N / 2, 42, 0);
    sr(b + N / 2, x + N / 2, N - N / 2, 42, N / 2);
    ck_assert_mem_eq(a, b, sizeof *a * N);
    sr(b, x, N, 43, 0);
    for (int i = 0; i < N; i++)
        differ += a[i] != b[i];
    ck_assert_int_gt(differ, 0);
    /* exact values, infinities and NaN are kept */
    x[0] = 0.5f;
    x[1] = INFINITY;
    x[2] = NAN;
    x[3] = -1.0f - ldexpf(1, -12);
    sr(a, x, 4, 7, 0);
    ck_assert_uint_eq(a[0], 0x3800);
    ck_assert_uint_eq(a[1], 0x7c00);
    ck_assert_uint_eq(a[2] & 0x7c00, 0x7c00);
    ck_assert_uint_ne(a[2] & 0x03ff, 0);
    ck_assert(a[3] == 0xbc00 || a[3] == 0xbc01);
    free(x);
    free(a);
    free(b);
}
END_TEST

/* 1 when /proc/cpuinfo lists flag for the first CPU; -1 when unreadable. */
static int cpu_flag(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    int found = -1;

    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0) {
            char *p = line;
            size_t n = strlen(flag);

            found = 0;
            while ((p = strstr(p, flag)))
                if ((p[-1] == ' ' || p[-1] == '\t') &&
                    (p[n] == ' ' || p[n] == '\n' || p[n] == '\0')) {
                    found = 1;
                    break;
                } else {
                    p += n;
                }
            break;
        }
    fclose(f);
    return found;
}

START_TEST(f16c_detection)
{
    popc_have_f16c_fn have = (popc_have_f16c_fn)svc(POPC_SERVICE_HAVE_F16C);
    int f16c = cpu_flag("f16c"), avx = cpu_flag("avx");
    int v = have();

    ck_assert(v == 0 || v == 1);
    ck_assert_int_eq(have(), v);
#if defined(__x86_64__) || defined(__i386__)
    if (f16c >= 0 && avx >= 0)
        ck_assert_int_eq(v, f16c && avx);
#else
    (void)f16c;
    (void)avx;
    ck_assert_int_eq(v, 0);
#endif
}
END_TEST

START_TEST(dims_text)
{
    popc_dims_format_fn fmt = (popc_dims_format_fn)svc(
        POPC_SERVICE_DIMS_FORMAT);
    int64_t d[3] = {2, 3, 4}, big[2] = {-1, 123456789012LL};
    char buf[64];

    ck_assert_str_eq(fmt(d, 3, buf, sizeof buf), "[2, 3, 4]");
    ck_assert_str_eq(fmt(d, 0, buf, sizeof buf), "[]");
    ck_assert_str_eq(fmt(big, 2, buf, sizeof buf), "[-1, 123456789012]");
    memset(buf, 'x', sizeof buf);
    fmt(d, 3, buf, 5);
    ck_assert_uint_lt(strlen(buf), 5);
    ck_assert(strncmp(buf, "[2, ", 4) == 0);
}
END_TEST

static popc_status call_op_error(popc_op_error_fn fn, popc_status st,
                                 const char *op, const char *node,
                                 const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    st = fn(st, op, node, fmt, ap);
    va_end(ap);
    return st;
}

START_TEST(error_texts)
{
    popc_op_error_fn err = (popc_op_error_fn)svc(POPC_SERVICE_OP_ERROR);
    popc_op_dtype_error_fn dt = (popc_op_dtype_error_fn)svc(
        POPC_SERVICE_OP_DTYPE_ERROR);

    ck_assert_int_eq(call_op_error(err, POPC_EUNSUPPORTED, "Gather", "g1",
                                   "axis %d of %s", 3, "X"),
                     POPC_EUNSUPPORTED);
    ck_assert_str_eq(popc_last_error(), "Gather 'g1': axis 3 of X");
    ck_assert_int_eq(call_op_error(err, POPC_EINVAL, "Add", NULL, "bad"),
                     POPC_EINVAL);
    ck_assert_str_eq(popc_last_error(), "Add '?': bad");
    ck_assert_int_eq(dt("Softmax", "sm", "input X", POPC_DTYPE_F16,
                        "float32"),
                     POPC_EINVAL);
    ck_assert_str_eq(popc_last_error(), "Softmax 'sm': input X must be "
                     "float32, got float16; cast it to float32 first");
}
END_TEST

/* ---- an op plugin on a host that lacks a service --------------------- */

static const char *hidden; /* the service the fake host hides */

static popc_status fake_register_kernel(popc_registrar *r,
                                       const popc_kernel_def *d)
{
    (void)r;
    (void)d;
    return POPC_OK; /* as fake_register_op */
}

static void *fake_get_proc(const char *name)
{
    if (hidden && name && strcmp(name, hidden) == 0)
        return NULL;
    if (name && strcmp(name, POPC_SERVICE_REGISTER_KERNEL) == 0)
        return (void *)fake_register_kernel;
    return host->get_proc(name);
}

static popc_status fake_register_op(popc_registrar *r, const popc_op_def *d)
{
    (void)r;
    (void)d;
    return POPC_OK; /* nothing to keep: only init()'s look-ups matter */
}

/* Runs plugin `name`'s init() on a copy of the host table whose get_proc
** hides `missing` (NULL: hides nothing); returns init's status. */
static popc_status init_on_fake_host(const char *dir, const char *name,
                                     const char *missing)
{
    char path[4096], sym[128];
    lt_dlhandle mod;
    const popc_plugin_info *(*entry)(void);
    static popc_host fake; /* a plugin may keep the table past init() */
    popc_status st;

    get_host();
    memcpy(&fake, host, sizeof fake);
    fake.get_proc = fake_get_proc;
    fake.register_op = fake_register_op;
    hidden = missing;
    ck_assert_int_eq(lt_dlinit(), 0);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    mod = lt_dlopenext(path);
    ck_assert_msg(mod != NULL, "%s: %s", path, lt_dlerror());
    snprintf(sym, sizeof sym, "%s_LTX_popc_plugin_entry", name);
    entry = (const popc_plugin_info *(*)(void))lt_dlsym(mod, sym);
    ck_assert_ptr_nonnull(entry);
    st = entry()->init(&fake, NULL);
    lt_dlclose(mod);
    lt_dlexit();
    hidden = NULL;
    return st;
}

static const char *const op_plugins[] = {"math", "tensor", "nn", "loss",
                                         "popc"};

START_TEST(plugin_init_names_missing_service)
{
    const char *name = op_plugins[_i];
    char want[256];

    ck_assert_int_eq(init_on_fake_host(TEST_OPS_DIR, name, NULL), POPC_OK);
    ck_assert_int_eq(init_on_fake_host(TEST_OPS_DIR, name, POPC_SERVICE_F16_TO_F32_N),
                     POPC_EUNSUPPORTED);
    snprintf(want, sizeof want, "plugin '%s': the host has no service "
             "'popc_f16_to_f32_n'", name);
    ck_assert_msg(strstr(popc_last_error(), want) != NULL, "%s",
                  popc_last_error());
    ck_assert_int_eq(init_on_fake_host(TEST_OPS_DIR, name, POPC_SERVICE_OP_DTYPE_ERROR),
                     POPC_EUNSUPPORTED);
    ck_assert_msg(strstr(popc_last_error(), "'popc_op_dtype_error'") != NULL,
                  "%s", popc_last_error());
}
END_TEST

/* The SDK example shows an out-of-tree plugin failing init() cleanly. */
START_TEST(example_plugin_names_missing_service)
{
    ck_assert_int_eq(init_on_fake_host(TEST_OOT_DIR, "leaky_relu", NULL),
                     POPC_OK);
    ck_assert_int_eq(init_on_fake_host(TEST_OOT_DIR, "leaky_relu",
                                       POPC_SERVICE_F32_TO_F16_N),
                     POPC_EUNSUPPORTED);
    ck_assert_str_eq(popc_last_error(), "leaky_relu: the host has no "
                     "service 'popc_f32_to_f16_n'; load this plugin into "
                     "libpopc 0.4.0 or later");
}
END_TEST

static Suite *services_suite(void)
{
    Suite *s = suite_create("services");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, unknown_names);
    tcase_add_test(tc, scalar_conversion);
    tcase_add_test(tc, array_conversion);
    tcase_add_test(tc, stochastic_rounding);
    tcase_add_test(tc, f16c_detection);
    tcase_add_test(tc, dims_text);
    tcase_add_test(tc, error_texts);
    tcase_add_loop_test(tc, plugin_init_names_missing_service, 0,
                        (int)(sizeof op_plugins / sizeof op_plugins[0]));
    tcase_add_test(tc, example_plugin_names_missing_service);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(services_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
