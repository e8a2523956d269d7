/* cmd_infer_onnx.c - `popc infer MODEL.onnx -i NAME=FILE.npy ... -o DIR`:
** import an ONNX model, compile it for the shapes of the given inputs, run
** it once and write one .npy per graph output into DIR.
**
** Inputs that feed operands popc needs at compile time (a Reshape's shape,
** a Slice's starts) are frozen to the given values, as PopTorch's tracing
** turns shape arguments into constants; the others are run-time inputs
** whose shapes fix the model's symbolic dimensions. Every input is handed
** to the import as a candidate (popc_onnx_import_file_candidates), so the
** model is read once and the importer, which knows the graph, freezes
** the ones it needs. Each input keeps the dtype of its file (float64
** included); NumPy has no bfloat16, so a bfloat16 input is given as its
** uint16 bits (arr.view(np.uint16)) and a bfloat16 output is written that
** way. Output files are named after the
** outputs; characters that could leave DIR or are unsafe in file names
** ('/', a leading '.', control bytes, '%') are written %XX.
*/
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "popc/onnx.h"
#include "popc/popc.h"
#include "tools/cli.h"

#define MAX_INPUTS 256

static const char usage[] =
    "Usage: popc infer MODEL.onnx -i NAME=FILE.npy ... -o DIR [OPTIONS]\n"
    "\n"
    "Import an ONNX model, run it once on the given inputs and write one\n"
    "NumPy file per graph output to DIR/<output name>.npy. Give every graph\n"
    "input; its .npy file fixes the input's shape (symbolic dimensions\n"
    "included) and its dtype; outputs are written in their own dtype.\n"
    "bfloat16, which NumPy lacks, is read and written as its uint16 bits.\n"
    "Inputs that hold shapes or axes are compiled in as constants, as\n"
    "PopTorch's tracing does.\n"
    "\n"
    "Options:\n"
    "  -i, --input NAME=FILE    a graph input and its .npy file (repeat)\n"
    "  -o, --output DIR         the folder to write the outputs to (created\n"
    "                           when missing)\n"
    "  --backend NAME           cpu or ipumodel (default: the option's)\n"
    "  --option NAME=VALUE      set a PopTorch option (popc options lists\n"
    "                           them); may be repeated\n"
    "  --allow-foreign          let the model load the shared libraries and\n"
    "                           call the symbols it names; only for models\n"
    "                           you trust\n"
    "  -h, --help               show this help\n";

typedef struct onnx_args {
    const char *model, *out_dir, *backend;
    int n_in, n_opt;
    char *in_names[MAX_INPUTS];
    const char *in_files[MAX_INPUTS];
    const char *options[MAX_INPUTS];
} onnx_args;

static void free_args(onnx_args *a)
{
    for (int i = 0; i < a->n_in; i++)
        free(a->in_names[i]);
}

static int parse(int argc, char **argv, onnx_args *a)
{
    enum { O_BACKEND = 256, O_OPTION, O_FOREIGN };
    static const struct option opts[] = {
        {"input", required_argument, NULL, 'i'},
        {"output", required_argument, NULL, 'o'},
        {"backend", required_argument, NULL, O_BACKEND},
        {"option", required_argument, NULL, O_OPTION},
        {"allow-foreign", no_argument, NULL, O_FOREIGN},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int c;

    memset(a, 0, sizeof *a);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":i:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'i': {
            const char *eq = strchr(optarg, '=');

            if (!eq || eq == optarg || !eq[1]) {
                cli_error("infer: -i %s: give NAME=FILE.npy", optarg);
                return EXIT_USAGE;
            }
            if (a->n_in == MAX_INPUTS) {
                cli_error("infer: more than %d inputs", MAX_INPUTS);
                return EXIT_USAGE;
            }
            a->in_names[a->n_in] = strndup(optarg, (size_t)(eq - optarg));
            a->in_files[a->n_in++] = eq + 1;
            break;
        }
        case 'o':
            a->out_dir = optarg;
            break;
        case O_BACKEND:
            a->backend = optarg;
            break;
        case O_OPTION:
            if (a->n_opt == MAX_INPUTS) {
                cli_error("infer: too many --option");
                return EXIT_USAGE;
            }
            a->options[a->n_opt++] = optarg;
            break;
        case O_FOREIGN:
            popc_set_foreign_code_allowed(1);
            break;
        case 'h':
            fputs(usage, stdout);
            return -1;
        case ':':
            cli_error("infer: option %s needs a value (see popc infer "
                      "--help)", argv[optind - 1]);
            return EXIT_USAGE;
        default:
            cli_error("infer: unknown option '%s' (see popc infer --help)",
                      argv[optind - 1]);
            return EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        cli_error("infer: give exactly one MODEL.onnx (see popc infer "
                  "--help)");
        return EXIT_USAGE;
    }
    a->model = argv[optind];
    if (!a->out_dir) {
        cli_error("infer: -o DIR is required: the folder for the outputs");
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

/* name with %XX for every byte that is unsafe in a file name. */
static void file_name(const char *name, char *buf, size_t size)
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

static int is_frozen(const char *const *frozen, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(frozen[i], name) == 0)
            return 1;
    return 0;
}

/* The model's inputs, "'a', 'b'" (run-time ones, then frozen ones). */
static void list_inputs(const popc_graph *g, const char *const *frozen,
                        int n_frozen, char *buf, size_t size)
{
    size_t off = 0;
    int n = popc_graph_n_inputs(g);

    buf[0] = '\0';
    for (int k = 0; k < n + n_frozen && off + 1 < size; k++)
        off += (size_t)snprintf(
            buf + off, size - off, "%s'%s'", k ? ", " : "",
            k < n ? popc_graph_value_name(g, popc_graph_input(g, k))
                  : frozen[k - n]);
}

/* A uint16 file bound to a bfloat16 input holds its bits (NumPy has no
** bfloat16): retag it. Any other dtype that differs from the input's is
** the file's fault, named with the file. */
static int check_dtype(const onnx_args *a, int i, const popc_graph *g,
                       int id, popc_tensor **t)
{
    popc_dtype want = popc_graph_value_info(g, id).dtype;
    popc_dtype have = popc_tensor_dtype(*t);
    popc_tensor *c = NULL;

    if (have == want)
        return EXIT_OK;
    if (want == POPC_DTYPE_BF16 && have == POPC_DTYPE_U16) {
        if (popc_tensor_from_data(POPC_DTYPE_BF16, popc_tensor_dims(*t),
                                  popc_tensor_rank(*t), popc_tensor_cdata(*t),
                                  &c) != POPC_OK)
            return cli_fail(POPC_ENOMEM);
        popc_tensor_free(*t);
        *t = c;
        return EXIT_OK;
    }
    cli_error("infer: -i %s=%s: the file holds %s but graph input '%s' is "
              "%s; save the array as %s%s", a->in_names[i], a->in_files[i],
              popc_dtype_name(have), a->in_names[i], popc_dtype_name(want),
              popc_dtype_name(want),
              want == POPC_DTYPE_BF16 ? " bits (arr.view(np.uint16))" : "");
    return EXIT_USAGE;
}

/* Every graph input has a file and every file a graph input, of the
** input's dtype. */
static int check_inputs(const onnx_args *a, const popc_graph *g,
                        popc_tensor **run_in, popc_tensor **loaded,
                        const char *const *frozen, int n_frozen)
{
    int n = popc_graph_n_inputs(g), rc;

    for (int i = 0; i < a->n_in; i++) {
        int found = is_frozen(frozen, n_frozen, a->in_names[i]);

        for (int k = 0; k < n && !found; k++)
            found = !strcmp(popc_graph_value_name(g, popc_graph_input(g, k)),
                            a->in_names[i]);
        if (!found) {
            char names[1024];

            list_inputs(g, frozen, n_frozen, names, sizeof names);
            cli_error("infer: -i %s=%s: %s has no graph input named '%s'; "
                      "its inputs are %s", a->in_names[i], a->in_files[i],
                      a->model, a->in_names[i],
                      *names ? names : "none");
            return EXIT_USAGE;
        }
    }
    for (int k = 0; k < n; k++) {
        const char *name = popc_graph_value_name(g, popc_graph_input(g, k));
        int found = -1;

        for (int i = 0; i < a->n_in; i++)
            if (!strcmp(a->in_names[i], name))
                found = i;
        if (found < 0) {
            char shape[128];
            popc_view v = popc_graph_value_info(g, popc_graph_input(g, k));

            cli_error("infer: graph input '%s' (%s) needs a file: add -i "
                      "%s=FILE.npy", name,
                      popc_view_describe(&v, shape, sizeof shape), name);
            return EXIT_USAGE;
        }
        if ((rc = check_dtype(a, found, g, popc_graph_input(g, k),
                              &loaded[found])) != EXIT_OK)
            return rc;
        run_in[k] = loaded[found];
    }
    return EXIT_OK;
}

/* An import error about a bound input's shape is about its file: name
** it. */
static int fail_import(const onnx_args *a, popc_status st)
{
    const char *msg = popc_last_error();

    for (int i = 0; i < a->n_in; i++) {
        char quoted[300];

        snprintf(quoted, sizeof quoted, "input '%s'", a->in_names[i]);
        if (strstr(msg, quoted) && strstr(msg, "bound shape")) {
            cli_error("infer: -i %s=%s: %s (the file's shape does not fit "
                      "the input)", a->in_names[i], a->in_files[i], msg);
            return st == POPC_ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
        }
    }
    return cli_fail_load(st);
}

/* mkdir -p */
static int make_dirs(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);

    if (n >= sizeof path)
        return -1;
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++)
        if (path[i] == '/' || path[i] == '\0') {
            char c = path[i];

            path[i] = '\0';
            if (mkdir(path, 0777) != 0 && errno != EEXIST)
                return -1;
            path[i] = c;
        }
    return 0;
}

static int write_outputs(const char *dir, const popc_graph *g,
                         popc_tensor **out, int n)
{
    char base[1024], path[4096];
    popc_status st;

    if (make_dirs(dir) != 0) {
        cli_error("infer: cannot create '%s': %s", dir, strerror(errno));
        return EXIT_RUNTIME;
    }
    for (int i = 0; i < n; i++) {
        popc_tensor *bits = NULL;
        int bf16 = popc_tensor_dtype(out[i]) == POPC_DTYPE_BF16;

        file_name(popc_graph_value_name(g, popc_graph_output(g, i)), base,
                  sizeof base);
        snprintf(path, sizeof path, "%s/%s.npy", dir, base);
        /* .npy has no bfloat16: its bits, as the inputs take them */
        if (bf16 && (st = popc_tensor_from_data(
                         POPC_DTYPE_U16, popc_tensor_dims(out[i]),
                         popc_tensor_rank(out[i]), popc_tensor_cdata(out[i]),
                         &bits)) != POPC_OK)
            return cli_fail(st);
        st = popc_npy_save(path, bits ? bits : out[i]);
        popc_tensor_free(bits);
        if (st != POPC_OK)
            return cli_fail(st);
        printf("wrote %s%s\n", path, bf16 ? " (bfloat16 as uint16 bits)" : "");
    }
    return EXIT_OK;
}

int cmd_infer_onnx(int argc, char **argv)
{
    onnx_args a;
    popc_tensor *loaded[MAX_INPUTS] = {0}, *run_in[MAX_INPUTS] = {0};
    popc_tensor **out = NULL;
    const char *shape_names[MAX_INPUTS], *frozen[MAX_INPUTS];
    popc_view shapes[MAX_INPUTS];
    int was_frozen[MAX_INPUTS];
    int n_frozen = 0, n_out = 0, rc;
    popc_onnx_import_options o;
    popc_graph *g = NULL;
    popc_options *opts = NULL;
    popc_model *m = NULL;
    time_t started = time(NULL);
    popc_status st;

    if ((rc = parse(argc, argv, &a)) != EXIT_OK) {
        free_args(&a);
        return rc < 0 ? EXIT_OK : rc;
    }
    popc_onnx_import_options_init(&o);
    o.shape_names = shape_names;
    o.shapes = shapes;
    for (int i = 0; i < a.n_in; i++) {
        if ((st = popc_npy_load_exact(a.in_files[i], &loaded[i])) !=
            POPC_OK) {
            rc = cli_fail_load(st);
            goto done;
        }
        /* a frozen input's shape is not read: binding every one is
        ** harmless. The shape only: check_dtype compares dtypes and names
        ** the file (uint16 may be a bfloat16 input's bits) */
        shape_names[i] = a.in_names[i];
        shapes[i] = popc_tensor_view(loaded[i]);
        shapes[i].dtype = POPC_DTYPE_UNDEFINED;
    }
    o.n_shapes = a.n_in;
    if ((st = popc_onnx_import_file_candidates(
             a.model, &o, a.n_in, (const char *const *)a.in_names, loaded,
             was_frozen, &g)) != POPC_OK) {
        rc = fail_import(&a, st);
        goto done;
    }
    for (int i = 0; i < a.n_in; i++)
        if (was_frozen[i])
            frozen[n_frozen++] = a.in_names[i];
    if ((rc = check_inputs(&a, g, run_in, loaded, frozen, n_frozen)) !=
        EXIT_OK)
        goto done;
    if ((st = popc_options_new(&opts)) != POPC_OK ||
        (a.backend &&
         (st = popc_options_set(opts, "backend", a.backend)) != POPC_OK)) {
        rc = cli_fail(st == POPC_OK ? POPC_ECONFIG : st);
        goto done;
    }
    for (int i = 0; i < a.n_opt; i++) {
        char name[256];
        const char *eq = strchr(a.options[i], '=');

        if (!eq || (size_t)(eq - a.options[i]) >= sizeof name) {
            cli_error("infer: --option %s: give NAME=VALUE", a.options[i]);
            rc = EXIT_USAGE;
            goto done;
        }
        snprintf(name, sizeof name, "%.*s", (int)(eq - a.options[i]),
                 a.options[i]);
        if ((st = popc_options_set(opts, name, eq + 1)) != POPC_OK) {
            rc = cli_fail_load(st);
            goto done;
        }
    }
    n_out = popc_graph_n_outputs(g);
    if (!(out = calloc((size_t)n_out + 1, sizeof *out))) {
        cli_error("infer: out of memory");
        rc = EXIT_RUNTIME;
        goto done;
    }
    if ((st = popc_model_new_inference(g, opts, &m)) != POPC_OK ||
        (st = popc_model_run(m, run_in, popc_graph_n_inputs(g), out,
                             n_out)) != POPC_OK) {
        rc = cli_fail(st);
        goto done;
    }
    if ((rc = write_outputs(a.out_dir, g, out, n_out)) == EXIT_OK)
        cli_print_profiles(opts, started);
done:
    for (int i = 0; i < n_out && out; i++)
        popc_tensor_free(out[i]);
    free(out);
    for (int i = 0; i < a.n_in; i++)
        popc_tensor_free(loaded[i]);
    popc_model_free(m);
    popc_options_free(opts);
    popc_graph_free(g);
    free_args(&a);
    return rc;
}
