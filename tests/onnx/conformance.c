/* conformance.c - the ONNX backend test suite on popc.
**
** Each case of the suite (Debian's libonnx-testdata: <data>/<folder>/
** <case>/model.onnx with test_data_set_N/input_N.pb and output_N.pb) is
** imported, compiled as an inference model on a backend, run once per data
** set, and its outputs compared with the expected ones: same dtype and
** shape; floating-point values within |a - b| <= 1e-7 + 1e-3 |b| (NaN
** matches NaN), other types exactly.
**
** Graph inputs that feed operands popc needs at compile time (a Reshape's
** shape, a Slice's starts) are frozen to the data set's values, as
** PopTorch's tracing makes shape arguments constants; the other inputs'
** shapes are bound from the data. A case whose model uses a type popc has
** no dtype for (strings, sequences, maps, optionals) is skipped, with the
** reason.
**
** With --cli POPC, each data set goes through the command line instead:
** its inputs are written as .npy files (bfloat16 as its uint16 bits), the
** case runs as `POPC infer model.onnx -i NAME=FILE.npy ... -o DIR
** --backend B`, and the .npy files it writes are compared the same way.
**
** Usage: conformance [--data DIR] [--folder NAME]... [--case FOLDER/CASE]
**          [--backend cpu|ipumodel|both] [--expected FILE] [--cli POPC]
**          [--update-expected] [--list-failures] [--verbose]
** With --expected, the exit status is 1 when a case outside the list
** fails or a listed case passes (the list may only shrink; rewrite it
** with --update-expected).
*/
#include "config.h"

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "popc/popc.h"
#include "popc/onnx.h"
#include "onnx.pb-c.h"

#define MAX_IO 64
#define MAX_CASES 4096

static const char *default_folders[] = {"node", "pytorch-converted",
                                        "pytorch-operator", "simple"};

typedef enum outcome { PASS, FAIL, SKIP } outcome;

typedef struct result {
    char name[300];     /* folder/case */
    outcome o[2];       /* per backend */
    char why[2][600];
} result;

static int verbose;
static const char *cli_popc;    /* --cli: the popc command */

/* snprintf for paths and messages that may be cut short (a vsnprintf
** wrapper, so the compiler does not warn about the possibility). */
static void fmt(char *buf, size_t size, const char *f, ...)
    __attribute__((format(printf, 3, 4)));

static void fmt(char *buf, size_t size, const char *f, ...)
{
    va_list ap;

    va_start(ap, f);
    vsnprintf(buf, size, f, ap);
    va_end(ap);
}

/* ---- files ------------------------------------------------------------------ */

static void *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
        fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) &&
        fread(buf, 1, (size_t)n, f) == (size_t)n)
        *len = (size_t)n;
    else {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted subdirectory names of dir matching prefix; count in *n. */
static char **list_dirs(const char *dir, const char *prefix, int *n)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL, path[4096];
    int cap = 0;
    struct stat sb;

    *n = 0;
    if (!d)
        return NULL;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' ||
            strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        fmt(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, (size_t)cap * sizeof *names);
        }
        names[(*n)++] = strdup(e->d_name);
    }
    closedir(d);
    if (*n)
        qsort(names, (size_t)*n, sizeof *names, cmp_str);
    return names;
}

static void free_list(char **l, int n)
{
    for (int i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

/* ---- the model's interface ---------------------------------------------- */

typedef struct model_io {
    int n_inputs;                /* graph inputs that are not initializers */
    char *inputs[MAX_IO];
    int in_type[MAX_IO];         /* ONNX element types */
    int n_outputs;
    int out_type[MAX_IO];
    char *outputs[MAX_IO];
    char *skip;                  /* why the case is skipped, or NULL */
} model_io;

static int tensor_type_ok(const Onnx__TypeProto *t)
{
    return t && t->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
           t->tensor_type &&
           t->tensor_type->elem_type != 8 &&   /* string */
           t->tensor_type->elem_type != 14 &&  /* complex */
           t->tensor_type->elem_type != 15;
}

static int graph_has_string_values(const Onnx__GraphProto *g)
{
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i]->data_type == 8)
            return 1;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];

        for (size_t a = 0; a < n->n_attribute; a++) {
            const Onnx__AttributeProto *ap = n->attribute[a];

            if ((ap->t && ap->t->data_type == 8) ||
                (ap->g && graph_has_string_values(ap->g)))
                return 1;
        }
    }
    return 0;
}

static int read_model_io(const char *path, model_io *io)
{
    size_t len;
    void *buf = slurp(path, &len);
    Onnx__ModelProto *mp;
    const Onnx__GraphProto *g;

    memset(io, 0, sizeof *io);
    if (!buf)
        return -1;
    mp = onnx__model_proto__unpack(NULL, len, buf);
    free(buf);
    if (!mp || !mp->graph) {
        if (mp)
            onnx__model_proto__free_unpacked(mp, NULL);
        return -1;
    }
    g = mp->graph;
    for (size_t i = 0; i < g->n_input && io->n_inputs < MAX_IO; i++) {
        int init = 0;

        for (size_t k = 0; k < g->n_initializer; k++)
            init |= g->initializer[k]->name &&
                    strcmp(g->initializer[k]->name, g->input[i]->name) == 0;
        if (init)
            continue;
        if (!tensor_type_ok(g->input[i]->type) && !io->skip)
            io->skip = strdup("an input is not a numeric tensor (string, "
                              "sequence, map or optional)");
        if (g->input[i]->type && g->input[i]->type->value_case ==
                                     ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
            g->input[i]->type->tensor_type)
            io->in_type[io->n_inputs] =
                g->input[i]->type->tensor_type->elem_type;
        io->inputs[io->n_inputs++] = strdup(g->input[i]->name);
    }
    io->n_outputs = (int)g->n_output < MAX_IO ? (int)g->n_output : MAX_IO;
    for (int i = 0; i < io->n_outputs; i++)
        io->outputs[i] = strdup(g->output[i]->name ? g->output[i]->name : "");
    for (int i = 0; i < io->n_outputs; i++)
        if (g->output[i]->type && g->output[i]->type->value_case ==
                                      ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
            g->output[i]->type->tensor_type)
            io->out_type[i] = g->output[i]->type->tensor_type->elem_type;
    for (size_t i = 0; i < g->n_output; i++)
        if (!tensor_type_ok(g->output[i]->type) && !io->skip)
            io->skip = strdup("an output is not a numeric tensor (string, "
                              "sequence, map or optional)");
    if (!io->skip && graph_has_string_values(g))
        io->skip = strdup("the model holds string tensors");
    onnx__model_proto__free_unpacked(mp, NULL);
    return 0;
}

static void model_io_free(model_io *io)
{
    for (int i = 0; i < io->n_inputs; i++)
        free(io->inputs[i]);
    for (int i = 0; i < io->n_outputs; i++)
        free(io->outputs[i]);
    free(io->skip);
}

/* The suite stores bfloat16 data as uint16 (the same bits): retag it when
** the model says bfloat16 (ONNX type 16). */
static void retag_bf16(popc_tensor **t, int onnx_type)
{
    popc_tensor *c = NULL;

    if (onnx_type != 16 || popc_tensor_dtype(*t) != POPC_DTYPE_U16 ||
        popc_tensor_from_data(POPC_DTYPE_BF16, popc_tensor_dims(*t),
                              popc_tensor_rank(*t), popc_tensor_cdata(*t),
                              &c) != POPC_OK)
        return;
    popc_tensor_free(*t);
    *t = c;
}

/* ---- comparing ---------------------------------------------------------- */

static double as_double(const popc_tensor *t, int64_t i)
{
    const void *p = popc_tensor_cdata(t);

    switch (popc_tensor_dtype(t)) {
    case POPC_DTYPE_F32: return ((const float *)p)[i];
    case POPC_DTYPE_F64: return ((const double *)p)[i];
    case POPC_DTYPE_F16: return popc_f16_to_f32(((const uint16_t *)p)[i]);
    case POPC_DTYPE_BF16: {
        uint32_t b = (uint32_t)((const uint16_t *)p)[i] << 16;
        float f;
        memcpy(&f, &b, sizeof f);
        return f;
    }
    default: return 0;
    }
}

/* 0 when equal enough; else a message in why. */
static int compare(const popc_tensor *got, const popc_tensor *want, int k,
                   char *why, size_t size)
{
    char a[160], b[160];
    popc_dtype dt = popc_tensor_dtype(want);
    int64_t n = popc_tensor_numel(want);

    if (popc_tensor_dtype(got) != dt || popc_tensor_rank(got) !=
                                            popc_tensor_rank(want) ||
        memcmp(popc_tensor_dims(got), popc_tensor_dims(want),
               sizeof(int64_t) * (size_t)popc_tensor_rank(want)) != 0) {
        fmt(why, size, "output %d is %s, expected %s", k,
                 popc_tensor_describe(got, a, sizeof a),
                 popc_tensor_describe(want, b, sizeof b));
        return 1;
    }
    if (!popc_dtype_is_float(dt)) {
        size_t es = popc_dtype_size(dt);
        const char *x = popc_tensor_cdata(got), *y = popc_tensor_cdata(want);

        for (int64_t i = 0; i < n; i++)
            if (memcmp(x + i * (int64_t)es, y + i * (int64_t)es, es) != 0) {
                fmt(why, size, "output %d element %lld differs "
                         "(integer/bool data)", k, (long long)i);
                return 1;
            }
        return 0;
    }
    for (int64_t i = 0; i < n; i++) {
        double x = as_double(got, i), y = as_double(want, i);

        if (isnan(x) && isnan(y))
            continue;
        if (isinf(y) && x == y)
            continue;
        if (!(fabs(x - y) <= 1e-7 + 1e-3 * fabs(y))) {
            fmt(why, size, "output %d element %lld is %.9g, expected "
                     "%.9g", k, (long long)i, x, y);
            return 1;
        }
    }
    return 0;
}

/* ---- through the command line -------------------------------------------- */

/* The file name popc infer gives an output (tools/cmd_infer_onnx.c). */
static void output_file_name(const char *name, char *buf, size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0;

    for (const unsigned char *p = (const unsigned char *)name;
         *p && k + 4 < size; p++) {
        int ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                 (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' ||
                 *p == ':' || (*p == '.' && p != (const unsigned char *)name);

        if (ok) {
            buf[k++] = (char)*p;
        } else {
            buf[k++] = '%';
            buf[k++] = hex[*p >> 4];
            buf[k++] = hex[*p & 15];
        }
    }
    if (k == 0 && size > 6)
        k = (size_t)snprintf(buf, size, "%%00");
    buf[k] = '\0';
}

/* Every file in dir (popc infer's outputs). */
static void remove_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4400];

    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            fmt(path, sizeof path, "%s/%s", dir, e->d_name);
            remove(path);
        }
    if (d)
        closedir(d);
}

/* .npy has no bfloat16: write its bits as uint16. */
static popc_status save_input(const char *path, const popc_tensor *t)
{
    popc_tensor *bits = NULL;
    popc_status st;

    if (popc_tensor_dtype(t) != POPC_DTYPE_BF16)
        return popc_npy_save(path, t);
    if ((st = popc_tensor_from_data(POPC_DTYPE_U16, popc_tensor_dims(t),
                                    popc_tensor_rank(t), popc_tensor_cdata(t),
                                    &bits)) != POPC_OK)
        return st;
    st = popc_npy_save(path, bits);
    popc_tensor_free(bits);
    return st;
}

/* Run argv with stdout and stderr in log; its exit status, or -1. */
static int run_command(char **argv, const char *log)
{
    pid_t pid;
    int status;

    fflush(stdout);
    if ((pid = fork()) < 0)
        return -1;
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The first line of the command's messages, into why. */
static void first_message(const char *log, int rc, char *why, size_t size)
{
    FILE *f = fopen(log, "r");
    char line[600] = "";

    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "popc: ", 6) == 0)
            break;
    if (f)
        fclose(f);
    line[strcspn(line, "\n")] = '\0';
    fmt(why, size, "popc infer exited %d: %s", rc, line);
}

/* in[] (n_inputs tensors) through `popc infer`; the outputs into got. */
static outcome run_cli(const char *model, const model_io *io,
                       popc_tensor **in, const char *backend,
                       popc_tensor **got, char *why, size_t size)
{
    char dir[] = "/tmp/popc-conformance.XXXXXX";
    char path[4096], out_dir[4200], log[4200], base[1024];
    char *argv[2 * MAX_IO + 16], *args[MAX_IO];
    int argc = 0, rc;
    outcome res = FAIL;

    memset(args, 0, sizeof args);
    if (!mkdtemp(dir)) {
        fmt(why, size, "cannot create a temporary folder");
        return FAIL;
    }
    fmt(out_dir, sizeof out_dir, "%s/out", dir);
    fmt(log, sizeof log, "%s/log.txt", dir);
    argv[argc++] = (char *)cli_popc;
    argv[argc++] = "infer";
    argv[argc++] = (char *)model;
    for (int i = 0; i < io->n_inputs; i++) {
        fmt(path, sizeof path, "%s/input_%d.npy", dir, i);
        if (save_input(path, in[i]) != POPC_OK) {
            fmt(why, size, "input %d: %s", i, popc_last_error());
            goto done;
        }
        if (!(args[i] = malloc(strlen(io->inputs[i]) + strlen(path) + 2)))
            goto done;
        sprintf(args[i], "%s=%s", io->inputs[i], path);
        argv[argc++] = "-i";
        argv[argc++] = args[i];
    }
    argv[argc++] = "-o";
    argv[argc++] = out_dir;
    argv[argc++] = "--backend";
    argv[argc++] = (char *)backend;
    argv[argc] = NULL;
    if ((rc = run_command(argv, log)) != 0) {
        first_message(log, rc, why, size);
        goto done;
    }
    res = PASS;
    for (int k = 0; k < io->n_outputs; k++) {
        output_file_name(io->outputs[k], base, sizeof base);
        fmt(path, sizeof path, "%s/%s.npy", out_dir, base);
        if (popc_npy_load_exact(path, &got[k]) != POPC_OK) {
            fmt(why, size, "output %d: %s", k, popc_last_error());
            res = FAIL;
            break;
        }
        retag_bf16(&got[k], io->out_type[k]);
        remove(path);
    }
done:
    for (int i = 0; i < io->n_inputs; i++) {
        fmt(path, sizeof path, "%s/input_%d.npy", dir, i);
        remove(path);
        free(args[i]);
    }
    remove(log);
    remove_files(out_dir);
    rmdir(out_dir);
    rmdir(dir);
    return res;
}

/* ---- one case ------------------------------------------------------------- */

static outcome run_set(const char *case_dir, const char *set,
                       const model_io *io, char **frozen, int n_frozen,
                       const char *backend, char *why, size_t size)
{
    char path[4096], model[4096];
    popc_tensor *in[MAX_IO] = {0}, *want[MAX_IO] = {0}, *got[MAX_IO] = {0};
    popc_tensor *run_in[MAX_IO];
    const char *shape_names[MAX_IO], *value_names[MAX_IO];
    popc_view shapes[MAX_IO];
    popc_tensor *values[MAX_IO];
    int n_shapes = 0, n_values = 0, n_run = 0, n_want = 0;
    popc_onnx_import_options o;
    popc_graph *g = NULL;
    popc_options *opts = NULL;
    popc_model *m = NULL;
    outcome res = FAIL;
    popc_status st;

    fmt(model, sizeof model, "%s/model.onnx", case_dir);
    for (int i = 0; i < io->n_inputs; i++) {
        int is_frozen = 0;

        fmt(path, sizeof path, "%s/%s/input_%d.pb", case_dir, set, i);
        if (popc_onnx_read_tensor(path, &in[i], NULL) != POPC_OK) {
            fmt(why, size, "input %d: %s", i, popc_last_error());
            res = strstr(popc_last_error(), "no dtype") ? SKIP : FAIL;
            goto done;
        }
        retag_bf16(&in[i], io->in_type[i]);
        for (int f = 0; f < n_frozen; f++)
            is_frozen |= strcmp(frozen[f], io->inputs[i]) == 0;
        if (is_frozen) {
            value_names[n_values] = io->inputs[i];
            values[n_values++] = in[i];
        } else {
            shape_names[n_shapes] = io->inputs[i];
            shapes[n_shapes++] = popc_tensor_view(in[i]);
            run_in[n_run++] = in[i];
        }
    }
    for (n_want = 0; n_want < io->n_outputs; n_want++) {
        fmt(path, sizeof path, "%s/%s/output_%d.pb", case_dir, set,
                 n_want);
        if (popc_onnx_read_tensor(path, &want[n_want], NULL) != POPC_OK) {
            fmt(why, size, "expected output %d: %s", n_want,
                     popc_last_error());
            res = strstr(popc_last_error(), "no dtype") ? SKIP : FAIL;
            goto done;
        }
        retag_bf16(&want[n_want], io->out_type[n_want]);
    }
    if (cli_popc) {
        res = run_cli(model, io, in, backend, got, why, size);
        goto compare;
    }
    popc_onnx_import_options_init(&o);
    o.n_shapes = n_shapes;
    o.shape_names = shape_names;
    o.shapes = shapes;
    o.n_values = n_values;
    o.value_names = value_names;
    o.values = values;
    if ((st = popc_onnx_import_file(model, &o, &g)) != POPC_OK) {
        fmt(why, size, "import: %s", popc_last_error());
        goto done;
    }
    if ((st = popc_options_new(&opts)) != POPC_OK ||
        (st = popc_options_set(opts, "backend", backend)) != POPC_OK ||
        (st = popc_model_new_inference(g, opts, &m)) != POPC_OK ||
        (st = popc_model_run(m, run_in, n_run, got, io->n_outputs)) !=
            POPC_OK) {
        fmt(why, size, "%s", popc_last_error());
        goto done;
    }
    res = PASS;
compare:
    for (int k = 0; k < io->n_outputs && res == PASS; k++)
        if (compare(got[k], want[k], k, why, size)) {
            res = FAIL;
            break;
        }
done:
    for (int i = 0; i < MAX_IO; i++) {
        popc_tensor_free(in[i]);
        popc_tensor_free(want[i]);
        popc_tensor_free(got[i]);
    }
    popc_model_free(m);
    popc_options_free(opts);
    popc_graph_free(g);
    /* messages on one line */
    for (char *p = why; *p; p++)
        if (*p == '\n')
            *p = ' ';
    return res;
}

static outcome run_case(const char *case_dir, const char *backend, char *why,
                        size_t size)
{
    char model[4096];
    model_io io;
    char **sets, **frozen = NULL;
    int n_sets, n_frozen = 0;
    outcome res = PASS;

    why[0] = '\0';
    fmt(model, sizeof model, "%s/model.onnx", case_dir);
    if (read_model_io(model, &io) != 0) {
        fmt(why, size, "cannot read %s", model);
        return FAIL;
    }
    if (io.skip) {
        fmt(why, size, "%s", io.skip);
        model_io_free(&io);
        return SKIP;
    }
    if (popc_onnx_compile_time_inputs(model, &frozen, &n_frozen) != POPC_OK) {
        fmt(why, size, "%s", popc_last_error());
        model_io_free(&io);
        return FAIL;
    }
    sets = list_dirs(case_dir, "test_data_set_", &n_sets);
    if (n_sets == 0) {
        fmt(why, size, "no test_data_set_* folder");
        res = FAIL;
    }
    for (int s = 0; s < n_sets && res == PASS; s++)
        res = run_set(case_dir, sets[s], &io, frozen, n_frozen, backend, why,
                      size);
    free_list(sets, n_sets);
    popc_onnx_free_names(frozen, n_frozen);
    model_io_free(&io);
    return res;
}

/* ---- expected failures ----------------------------------------------------- */

typedef struct expected {
    char **names;
    int n;
} expected;

static void load_expected(const char *path, expected *e)
{
    FILE *f = fopen(path, "r");
    char line[1024];

    memset(e, 0, sizeof *e);
    if (!f)
        return;
    e->names = calloc(MAX_CASES, sizeof *e->names);
    while (fgets(line, sizeof line, f) && e->n < MAX_CASES) {
        char *p = line, *end;

        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '#' || *p == '\n' || !*p)
            continue;
        end = p;
        while (*end && *end != ' ' && *end != '\t' && *end != '\n' &&
               *end != '#')
            end++;
        *end = '\0';
        e->names[e->n++] = strdup(p);
    }
    fclose(f);
}

static int is_expected(const expected *e, const char *name)
{
    for (int i = 0; i < e->n; i++)
        if (strcmp(e->names[i], name) == 0)
            return 1;
    return 0;
}

static int write_expected(const char *path, result *r, int n, int nb)
{
    char tmp[4096];
    FILE *f;

    fmt(tmp, sizeof tmp, "%s.tmp", path);
    if (!(f = fopen(tmp, "w")))
        return -1;
    fprintf(f, "# ONNX backend test cases popc does not pass yet, with the "
               "first reason.\n# tests/onnx/conformance --update-expected "
               "rewrites this file; the test fails\n# when a case outside it "
               "fails or a case in it passes.\n");
    for (int i = 0; i < n; i++)
        for (int b = 0; b < nb; b++)
            if (r[i].o[b] == FAIL) {
                char reason[200];

                fmt(reason, sizeof reason, "%s", r[i].why[b]);
                fprintf(f, "%s  # %s\n", r[i].name, reason);
                break;
            }
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        return -1;
    return 0;
}

/* ---- main ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    const char *data = "/usr/share/libonnx-testdata/data";
    const char *folders[16], *only_case = NULL, *expected_path = NULL;
    const char *backends[2] = {"cpu", "ipumodel"};
    int n_folders = 0, nb = 2, update = 0, list = 0, unexpected = 0;
    result *results = calloc(MAX_CASES, sizeof *results);
    int n_results = 0;
    expected exp;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--data") && i + 1 < argc)
            data = argv[++i];
        else if (!strcmp(argv[i], "--folder") && i + 1 < argc &&
                 n_folders < 16)
            folders[n_folders++] = argv[++i];
        else if (!strcmp(argv[i], "--case") && i + 1 < argc)
            only_case = argv[++i];
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
            const char *b = argv[++i];

            if (!strcmp(b, "both"))
                nb = 2;
            else {
                backends[0] = b;
                nb = 1;
            }
        } else if (!strcmp(argv[i], "--expected") && i + 1 < argc)
            expected_path = argv[++i];
        else if (!strcmp(argv[i], "--cli") && i + 1 < argc)
            cli_popc = argv[++i];
        else if (!strcmp(argv[i], "--update-expected"))
            update = 1;
        else if (!strcmp(argv[i], "--list-failures"))
            list = 1;
        else if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v"))
            verbose = 1;
        else {
            fprintf(stderr, "conformance: unknown argument '%s' (see the "
                    "comment at the top of tests/onnx/conformance.c)\n",
                    argv[i]);
            return 2;
        }
    }
    if (!results)
        return 1;
    if (!n_folders)
        for (int i = 0; i < 4; i++)
            folders[n_folders++] = default_folders[i];
    load_expected(expected_path ? expected_path : "", &exp);
    popc_log_set_level(POPC_LOG_ERR);
    for (int fi = 0; fi < n_folders; fi++) {
        char dir[4096];
        char **cases;
        int n_cases, counts[2][3] = {{0}};

        fmt(dir, sizeof dir, "%s/%s", data, folders[fi]);
        cases = list_dirs(dir, "", &n_cases);
        if (!cases && !only_case) {
            fprintf(stderr, "conformance: no cases in %s (install "
                    "libonnx-testdata)\n", dir);
            return 77;
        }
        for (int c = 0; c < n_cases && n_results < MAX_CASES; c++) {
            result *r = &results[n_results];
            char case_dir[4096];

            fmt(r->name, sizeof r->name, "%s/%s", folders[fi], cases[c]);
            if (only_case && strcmp(only_case, r->name) != 0)
                continue;
            fmt(case_dir, sizeof case_dir, "%s/%s", dir, cases[c]);
            for (int b = 0; b < nb; b++) {
                r->o[b] = run_case(case_dir, backends[b], r->why[b],
                                   sizeof r->why[b]);
                counts[b][r->o[b]]++;
                if (verbose || only_case)
                    printf("%s %s: %s%s%s\n", r->name, backends[b],
                           r->o[b] == PASS ? "pass"
                           : r->o[b] == FAIL ? "FAIL" : "skip",
                           r->why[b][0] ? ": " : "", r->why[b]);
            }
            n_results++;
        }
        free_list(cases, n_cases);
        if (!only_case)
            for (int b = 0; b < nb; b++)
                printf("%s (%s): %d passed, %d failed, %d skipped (of %d)\n",
                       folders[fi], backends[b], counts[b][PASS],
                       counts[b][FAIL], counts[b][SKIP], n_cases);
    }
    for (int i = 0; i < n_results; i++) {
        int failed = 0, listed = is_expected(&exp, results[i].name);

        for (int b = 0; b < nb; b++) {
            if (results[i].o[b] == SKIP && (list || verbose))
                printf("skip %s (%s): %s\n", results[i].name, backends[b],
                       results[i].why[b]);
            if (results[i].o[b] != FAIL)
                continue;
            failed = 1;
            if (list || (expected_path && !listed && !update))
                printf("%s %s (%s): %s\n", listed ? "expected failure"
                                                  : "FAIL",
                       results[i].name, backends[b], results[i].why[b]);
        }
        if (expected_path && !update && !only_case) {
            if (failed && !listed) {
                unexpected++;
            } else if (!failed && listed) {
                printf("UNEXPECTED PASS %s: remove it from %s\n",
                       results[i].name, expected_path);
                unexpected++;
            }
        }
    }
    if (update && expected_path) {
        if (write_expected(expected_path, results, n_results, nb) != 0) {
            fprintf(stderr, "conformance: cannot write %s\n", expected_path);
            return 1;
        }
        printf("wrote %s\n", expected_path);
    }
    for (int i = 0; i < exp.n; i++)
        free(exp.names[i]);
    free(exp.names);
    free(results);
    if (unexpected)
        printf("%d unexpected result%s\n", unexpected,
               unexpected == 1 ? "" : "s");
    return unexpected ? 1 : 0;
}
