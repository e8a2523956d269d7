/* hostile.c - popc's readers on hostile but well-formed input, in process.
**
** Usage: hostile DIR [THREADS]
** DIR holds gen_onnx.py's and gen_exe.py's files. Each case reads one
** input (an ONNX file or executable of DIR, or an options file, JSON
** text, .npy or gzip IDX file written here) and must end in the error it names (a substring) or succeed.
** The cases that change a limit (popc_limit_set) run first, one by one;
** then every default-limit case runs on THREADS threads at once (the
** readers are documented thread-safe; tests/hostile/test_hostile.sh runs
** this under ThreadSanitizer in CI) with each thread's results checked.
** Prints one line per case; exit 1 when one failed.
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "popc/onnx.h"
#include "popc/popc.h"

static const char *dir;
static char tmp[4096];
static atomic_int failures;

typedef struct hcase {
    const char *name;
    popc_status (*run)(const struct hcase *c);
    const char *arg;      /* file of DIR, or the generated input's kind */
    const char *want;     /* substring of the error; NULL: success */
    popc_limit limit;     /* with value > 0: set for this case only */
    int64_t value;
} hcase;

/* ---- inputs -------------------------------------------------------------- */

/* A file of tmp named after the thread, so that threads do not share. */
static void temp_path(char *out, size_t size, const char *name)
{
    snprintf(out, size, "%s/%lx.%s", tmp, (unsigned long)pthread_self(),
             name);
}


static popc_status onnx_file(const hcase *c)
{
    char path[4096];
    popc_graph *g = NULL;
    popc_status st;

    snprintf(path, sizeof path, "%s/%s", dir, c->arg);
    st = popc_onnx_import_file(path, NULL, &g);
    popc_graph_free(g);
    return st;
}

/* A chain that stays whole (x is an input): autodiff, shape inference,
** scheduling and the reference evaluation over its 20000 nodes, with
** y = x + 20000 and dy/dx = 1 checked at x = 0.5. */
static popc_status chain_passes(const hcase *c)
{
    char path[4096];
    popc_graph *g = NULL;
    popc_tensor *x = NULL, *out[2] = {NULL, NULL};
    int64_t one = 1;
    int wrt, values[2];
    popc_status st;

    snprintf(path, sizeof path, "%s/%s", dir, c->arg);
    if ((st = popc_onnx_import_file(path, NULL, &g)) != POPC_OK)
        return st;
    wrt = popc_graph_find_value(g, "x");
    values[0] = popc_graph_find_value(g, "y");
    if ((st = popc_graph_gradients(g, values[0], &wrt, 1, 1.0,
                                   &values[1])) == POPC_OK &&
        (st = popc_tensor_new(POPC_DTYPE_F32, &one, 1, &x)) == POPC_OK) {
        *(float *)popc_tensor_data(x) = 0.5f;
        st = popc_graph_eval(g, &x, 1, values, 2, out, 1, 0);
    }
    if (st == POPC_OK &&
        (*(const float *)popc_tensor_data(out[0]) != 20000.5f ||
         *(const float *)popc_tensor_data(out[1]) != 1.0f))
        st = popc_set_error(POPC_EINTERNAL, "%s: y = %g, dy/dx = %g; want "
                            "20000.5 and 1", path,
                            *(const float *)popc_tensor_data(out[0]),
                            *(const float *)popc_tensor_data(out[1]));
    popc_tensor_unref(out[0]);
    popc_tensor_unref(out[1]);
    popc_tensor_unref(x);
    popc_graph_free(g);
    return st;
}

/* if_40_input.onnx imported with the nesting limit raised (the case sets 64),
** written back and read again; then writing it is refused once the
** limit is back at its default, as the exporter recurses per level. */
static popc_status onnx_export_nested(const hcase *c)
{
    char path[4096], out[4200];
    popc_graph *g = NULL, *again = NULL;
    popc_status st;

    snprintf(path, sizeof path, "%s/%s", dir, c->arg);
    temp_path(out, sizeof out, "nested.onnx");
    if ((st = popc_onnx_import_file(path, NULL, &g)) == POPC_OK &&
        (st = popc_onnx_export_graph(g, out)) == POPC_OK &&
        (st = popc_onnx_import_file(out, NULL, &again)) == POPC_OK) {
        (void)popc_limit_set(POPC_LIMIT_NESTING, 0);
        st = popc_onnx_export_graph(g, out);
        (void)popc_limit_set(c->limit, c->value);
    }
    popc_graph_free(again);
    popc_graph_free(g);
    unlink(out);
    return st;
}

/* An executable of DIR (gen_exe.py): loaded (the cpu backend) and, for
** good measure, described. */
static popc_status exe_file(const hcase *c)
{
    char path[4096], *text = NULL;
    popc_options *edit = NULL;
    popc_model *m = NULL;
    popc_status st;

    snprintf(path, sizeof path, "%s/%s", dir, c->arg);
    if ((st = popc_options_new(&edit)) != POPC_OK ||
        (st = popc_options_set(edit, "backend", "cpu")) != POPC_OK) {
        popc_options_free(edit);
        return st;
    }
    st = popc_load(path, edit, &m);
    popc_model_free(m);
    popc_options_free(edit);
    if (st == POPC_OK) {
        st = popc_executable_describe(path, &text);
        free(text);
    }
    return st;
}

/* n copies of unit between head and tail, NUL-terminated. */
static char *repeat(const char *head, const char *unit, size_t n,
                    const char *tail)
{
    size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
    char *s = malloc(hl + ul * n + tl + 1), *p = s;

    if (!s)
        return NULL;
    memcpy(p, head, hl), p += hl;
    for (size_t i = 0; i < n; i++)
        memcpy(p, unit, ul), p += ul;
    memcpy(p, tail, tl + 1);
    return s;
}

static int write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(data, 1, n, f) == n;

    if (f && fclose(f) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

static popc_status options_text(const hcase *c)
{
    char path[4200];
    char *text = NULL;
    popc_options *o = NULL;
    popc_status st;

    if (strcmp(c->arg, "brackets") == 0)
        text = repeat("replicationFactor(", "[", 100000, "\n");
    else /* a method chain as long as the line */
        text = repeat("TensorLocations.setActivationLocation("
                      "poptorch.TensorLocationSettings()",
                      ".useOnChipStorage(True)", 200000, ")\n");
    temp_path(path, sizeof path, "opts.txt");
    if (!text || write_file(path, text, strlen(text)) != 0) {
        free(text);
        return popc_set_error(POPC_EIO, "cannot write %s", path);
    }
    free(text);
    if ((st = popc_options_new(&o)) == POPC_OK)
        st = popc_options_load_file(o, path);
    /* the chain sets one setting 200000 times */
    if (st == POPC_OK &&
        popc_options_get_bool(o, "TensorLocations.setActivationLocation."
                                 "useOnChipStorage") != 1)
        st = popc_set_error(POPC_EINTERNAL, "%s: useOnChipStorage is not "
                            "True after the chain", path);
    popc_options_free(o);
    unlink(path);
    return st;
}

static popc_status options_json(const hcase *c)
{
    char *text = repeat("{\"a\": ", "[", 100000, "");
    popc_options *o = NULL;
    popc_status st;

    (void)c;
    if (!text)
        return popc_set_error(POPC_ENOMEM, "out of memory");
    if ((st = popc_options_new(&o)) == POPC_OK)
        st = popc_options_load_json(o, text);
    popc_options_free(o);
    free(text);
    return st;
}

/* A .npy header claiming 2^40 float32 values over 16 bytes. */
static popc_status npy_claim(const hcase *c)
{
    char path[4200], buf[256];
    const char *hdr = "{'descr': '<f4', 'fortran_order': False, "
                      "'shape': (1099511627776,), }";
    size_t hl = strlen(hdr), pad = 64 - (10 + hl + 1) % 64, n;
    popc_tensor *t = NULL;
    popc_status st;

    (void)c;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)((hl + pad + 1) & 0xff);
    buf[9] = (char)((hl + pad + 1) >> 8);
    memcpy(buf + 10, hdr, hl);
    memset(buf + 10 + hl, ' ', pad);
    buf[10 + hl + pad] = '\n';
    n = 10 + hl + pad + 1;
    memset(buf + n, 0, 16);
    temp_path(path, sizeof path, "claim.npy");
    if (write_file(path, buf, n + 16) != 0)
        return popc_set_error(POPC_EIO, "cannot write %s", path);
    st = popc_npy_load(path, &t);
    popc_tensor_free(t);
    unlink(path);
    return st;
}

/* gzip IDX files: "honest" decompresses 8 MiB of zeros from a few KiB
** into the images it declares (a correct result); "bomb" declares
** 64 MiB, which its size allows (deflate expands 1032 times at most),
** but stored (uncompressed) blocks hold only 64 KiB of it. */
static popc_status idx_gzip(const hcase *c)
{
    char images[4200], labels[4200];
    int honest = strcmp(c->arg, "honest") == 0;
    uint32_t n = honest ? 8192 : 65536, side = 32;
    unsigned char hdr[16] = {0, 0, 8, 3}, lhdr[8] = {0, 0, 8, 1};
    size_t body = honest ? (size_t)n * side * side : 65536;
    unsigned char *zeros = calloc(1, body), *lab = calloc(1, n);
    popc_dataset *ds = NULL;
    popc_status st;
    gzFile gz;

    for (int i = 0; i < 4; i++) {
        hdr[4 + i] = (unsigned char)(n >> (24 - 8 * i));
        hdr[8 + i] = hdr[12 + i] = (unsigned char)(side >> (24 - 8 * i));
        lhdr[4 + i] = (unsigned char)(n >> (24 - 8 * i));
    }
    temp_path(images, sizeof images, "images.gz");
    temp_path(labels, sizeof labels, "labels.idx");
    if (!zeros || !lab || !(gz = gzopen(images, honest ? "wb9" : "wb0"))) {
        free(zeros);
        free(lab);
        return popc_set_error(POPC_EIO, "cannot write %s", images);
    }
    gzwrite(gz, hdr, sizeof hdr);
    gzwrite(gz, zeros, (unsigned)body);
    gzclose(gz);
    {
        FILE *f = fopen(labels, "wb");

        if (f) {
            fwrite(lhdr, 1, sizeof lhdr, f);
            fwrite(lab, 1, n, f);
            fclose(f);
        }
    }
    st = popc_dataset_load_idx(images, labels, &ds);
    if (st == POPC_OK && popc_dataset_size(ds) != n)
        st = popc_set_error(POPC_EINTERNAL, "%s: %lld samples, want %u",
                            images, (long long)popc_dataset_size(ds), n);
    popc_dataset_free(ds);
    free(zeros);
    free(lab);
    unlink(images);
    unlink(labels);
    return st;
}

/* ---- cases --------------------------------------------------------------- */

#define NO_LIMIT POPC_LIMIT_COUNT, 0

static const hcase cases[] = {
    /* limits changed for one case: run alone */
    {"If nested 40 deep, POPC_MAX_NESTING raised to 64", onnx_file,
     "if_40.onnx", NULL, POPC_LIMIT_NESTING, 64},
    {"If nested 40 deep written back, then refused at limit 32",
     onnx_export_nested, "if_40_input.onnx",
     "nested.onnx: subgraphs (If, Loop or Scan bodies) nested too deep to "
     "write: 33, over popc's limit of 32", POPC_LIMIT_NESTING, 64},
    {"2000-node chain, node limit 1000", onnx_file, "chain_2000.onnx",
     "too many nodes: 1001, over popc's limit of 1000 (POPC_MAX_NODES)",
     POPC_LIMIT_NODES, 1000},
    {"2000-node chain, message limit 1000", onnx_file, "chain_2000.onnx",
     "(POPC_MAX_MESSAGES)", POPC_LIMIT_MESSAGES, 1000},
    {"100000 unknown fields, message limit 1000", onnx_file,
     "unknown_fields.onnx", "too many protobuf messages, strings and "
     "unknown fields: 1001", POPC_LIMIT_MESSAGES, 1000},
    {"attribute of 200 values, limit 100", onnx_file, "attr_200.onnx",
     "an attribute list with too many values: 200",
     POPC_LIMIT_ATTRIBUTE_ELEMENTS, 100},
    {"20000 small initializers, 1000-byte limit", onnx_file,
     "chain_20000.onnx", "(POPC_MAX_INITIALIZER_BYTES)",
     POPC_LIMIT_INITIALIZER_BYTES, 1000},
    {"type nested 100000 deep, depth limit raised to 1000", onnx_file,
     "type_100000.onnx", "nested too deep: 1001, over popc's limit of 1000",
     POPC_LIMIT_MESSAGE_DEPTH, 1000},
    {"executable of 2000 nodes, node limit 1000", exe_file,
     "exe_nodes_2000.popc", "a graph has more nodes than popc's limit "
     "(POPC_MAX_NODES", POPC_LIMIT_NODES, 1000},
    /* default limits: also run on several threads at once */
    {"If nested 3000 deep", onnx_file, "if_3000.onnx",
     "if_3000.onnx: subgraphs (If, Loop or Scan bodies) nested too deep: "
     "33, over popc's limit of 32 (POPC_MAX_NESTING)", NO_LIMIT},
    {"If nested 40 deep", onnx_file, "if_40.onnx", "(POPC_MAX_NESTING)",
     NO_LIMIT},
    {"GRAPHS lists nested 3000 deep", onnx_file, "graphs_3000.onnx",
     "(POPC_MAX_NESTING)", NO_LIMIT},
    {"sequence type nested 100000 deep", onnx_file, "type_100000.onnx",
     "nested too deep: 129, over popc's limit of 128 "
     "(POPC_MAX_MESSAGE_DEPTH)", NO_LIMIT},
    {"20000-node chain of 20000 initializers", onnx_file,
     "chain_20000.onnx", NULL, NO_LIMIT},
    {"20000-node chain: autodiff, inference, schedule, evaluation",
     chain_passes, "chain_input_20000.onnx", NULL, NO_LIMIT},
    {"100 KiB names", onnx_file, "names_100k.onnx", NULL, NO_LIMIT},
    {"100000 unknown fields", onnx_file, "unknown_fields.onnx", NULL,
     NO_LIMIT},
    {"2 MiB name", onnx_file, "name_2m.onnx",
     "in bytes: 2097153, over popc's limit of 1048576 "
     "(POPC_MAX_STRING_BYTES)", NO_LIMIT},
    {"dims claiming 2^40 values", onnx_file, "dims_huge.onnx",
     "initializer 'big': its shape needs 4398046511104 bytes of float data "
     "but 4 are present", NO_LIMIT},
    {"dims overflowing int64", onnx_file, "dims_overflow.onnx",
     "claims too many elements", NO_LIMIT},
    {"length past the end of the file", onnx_file, "packed_past_end.onnx",
     "not a valid ONNX model", NO_LIMIT},
    {"cycle", onnx_file, "cycle.onnx", "reads 'b', which no graph input",
     NO_LIMIT},
    {"node reading its own output", onnx_file, "self_loop.onnx",
     "reads 'y'", NO_LIMIT},
    {"two nodes writing one name", onnx_file, "shared_output.onnx",
     "a value is already named 'y'", NO_LIMIT},
    {"two initializers of one name", onnx_file, "shared_initializer.onnx",
     "already has a constant named 'one'", NO_LIMIT},
    {"external data at ../", onnx_file, "ext_dotdot.onnx",
     "leaves the model's folder", NO_LIMIT},
    {"external data at an absolute path", onnx_file, "ext_absolute.onnx",
     "leaves the model's folder", NO_LIMIT},
    {"external data at /dev/zero", onnx_file, "ext_devzero.onnx",
     "leaves the model's folder", NO_LIMIT},
    {"external data through a symlink to /dev/zero", onnx_file,
     "ext_link_zero.onnx", "through a symbolic link", NO_LIMIT},
    {"external data through a symlinked folder", onnx_file,
     "ext_link_dir.onnx", "through a symbolic link", NO_LIMIT},
    {"external data shorter than its shape", onnx_file, "ext_short.onnx",
     "holds fewer than offset 0 + 4194304 bytes", NO_LIMIT},
    {"external data offset of 30 digits", onnx_file, "ext_offset.onnx",
     "is not a byte count", NO_LIMIT},
    {"external data inside the folder", onnx_file, "ext_ok.onnx", NULL,
     NO_LIMIT},
    {"executable, graph nested 3000 deep", exe_file, "exe_nest_3000.popc",
     "subgraphs are nested deeper than popc's limit (POPC_MAX_NESTING",
     NO_LIMIT},
    {"executable, 2^32-1 values claimed", exe_file,
     "exe_values_claim.popc", "a count is larger than the data that follows",
     NO_LIMIT},
    {"executable, 4 GiB name claimed", exe_file, "exe_name_claim.popc",
     "a string length is out of range", NO_LIMIT},
    {"executable reassembled unchanged", exe_file, "exe_same.popc", NULL,
     NO_LIMIT},
    {"options file nested 100000 deep", options_text, "brackets",
     "too many nested brackets", NO_LIMIT},
    {"options file with a 200000-call method chain", options_text, "chain",
     NULL, NO_LIMIT},
    {"JSON nested 100000 deep", options_json, "", "nested too deeply",
     NO_LIMIT},
    {".npy claiming 2^40 values", npy_claim, "", "claim.npy", NO_LIMIT},
    {"gzip IDX of 8 MiB of zeros", idx_gzip, "honest", NULL, NO_LIMIT},
    {"gzip IDX claiming 64 MiB, holding 64 KiB", idx_gzip, "bomb",
     "needs 67108864 bytes but the file ends after 65536", NO_LIMIT},
};
#define N_CASES (sizeof cases / sizeof cases[0])

static int check(const hcase *c, const char *who)
{
    popc_status st = c->run(c);
    const char *err = st == POPC_OK ? "" : popc_last_error();
    int ok = c->want ? st != POPC_OK && strstr(err, c->want) != NULL
                     : st == POPC_OK;

    if (!ok) {
        atomic_fetch_add(&failures, 1);
        printf("FAIL: %s%s: %s (want %s)\n", who, c->name,
               st == POPC_OK ? "succeeded" : err,
               c->want ? c->want : "success");
    } else if (!*who) {
        printf("ok: %s: %s\n", c->name,
               st == POPC_OK ? "correct result" : err);
    }
    return ok;
}

static void *thread_main(void *arg)
{
    char who[32];

    snprintf(who, sizeof who, "thread %d: ", (int)(intptr_t)arg);
    for (size_t i = 0; i < N_CASES; i++)
        if (cases[i].limit == POPC_LIMIT_COUNT)
            check(&cases[i], who);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 2 ? atoi(argv[2]) : 0;
    pthread_t tid[16];

    if (argc < 2) {
        fprintf(stderr, "usage: hostile DIR [THREADS]\n");
        return 2;
    }
    dir = argv[1];
    snprintf(tmp, sizeof tmp, "%s", dir);
    popc_log_set_level(POPC_LOG_OFF);
    for (size_t i = 0; i < N_CASES; i++) {
        const hcase *c = &cases[i];

        if (c->limit != POPC_LIMIT_COUNT &&
            popc_limit_set(c->limit, c->value) != POPC_OK)
            return 2;
        check(c, "");
        if (c->limit != POPC_LIMIT_COUNT)
            (void)popc_limit_set(c->limit, 0);
    }
    if (threads > 16)
        threads = 16;
    for (int t = 0; t < threads; t++)
        if (pthread_create(&tid[t], NULL, thread_main, (void *)(intptr_t)t))
            return 2;
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    if (threads)
        printf("%s: every default-limit case on %d threads at once\n",
               atomic_load(&failures) ? "FAIL" : "ok", threads);
    return atomic_load(&failures) ? 1 : 0;
}
