/* cmd_run.c - `popc run FILE [INPUT.npy ...]`: load an exported executable
** (poptorch.load) and run it: once per call on the given inputs (zeros when
** none are given), printing each output's shape and summary and writing
** it to -o DIR. A training executable trains; --save writes it back with
** the new weights and optimizer state.
*/
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "popc/popc.h"
#include "tools/cli.h"

static const char usage[] =
    "Usage: popc run FILE [INPUT.npy ...] [OPTIONS]\n"
    "\n"
    "Load the executable FILE (written by popc compile or\n"
    "popc_model_save) and run it. Give one .npy file per model input, in\n"
    "order, each with the shape and dtype it was compiled for (the\n"
    "combined batch; popc inspect FILE lists them); without inputs the\n"
    "model runs on zeros. A training executable takes one training step\n"
    "per run. Outputs are summarised on stdout.\n"
    "\n"
    "Options:\n"
    "  -o, --output DIR         write each output to DIR/<name>.npy\n"
    "  --backend NAME           run on this backend (default: the file's;\n"
    "                           compile-only files run on ipumodel)\n"
    "  --option NAME=VALUE      change another option before the model is\n"
    "                           compiled; may be repeated\n"
    "  --runs N                 run N times (default 1)\n"
    "  --save FILE              write the executable after the runs\n"
    "  --allow-foreign          let the file load the shared libraries and\n"
    "                           call the symbols it names (ForeignCall nodes);\n"
    "                           only for files you trust\n"
    "  -h, --help               show this help\n";

typedef struct run_args {
    const char *file, *out_dir, *backend, *save;
    const char **inputs;
    int n_inputs;
    const char **options;
    int n_options;
    long runs;
} run_args;

static int parse(int argc, char **argv, run_args *a)
{
    enum { O_BACKEND = 256, O_OPTION, O_RUNS, O_SAVE, O_FOREIGN };
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"backend", required_argument, NULL, O_BACKEND},
        {"option", required_argument, NULL, O_OPTION},
        {"runs", required_argument, NULL, O_RUNS},
        {"save", required_argument, NULL, O_SAVE},
        {"allow-foreign", no_argument, NULL, O_FOREIGN},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    char *end;
    int c;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            a->out_dir = optarg;
            break;
        case O_BACKEND:
            a->backend = optarg;
            break;
        case O_OPTION:
            a->options[a->n_options++] = optarg;
            break;
        case O_RUNS:
            errno = 0;
            a->runs = strtol(optarg, &end, 10);
            if (errno || *end || !*optarg || a->runs < 1) {
                cli_error("run: --runs %s: give a number >= 1", optarg);
                return EXIT_USAGE;
            }
            break;
        case O_SAVE:
            a->save = optarg;
            break;
        case O_FOREIGN:
            popc_set_foreign_code_allowed(1);
            break;
        case 'h':
            fputs(usage, stdout);
            return -1;
        case ':':
            cli_error("run: option %s needs a value (see popc run --help)",
                      argv[optind - 1]);
            return EXIT_USAGE;
        default:
            cli_error("run: unknown option '%s' (see popc run --help)",
                      argv[optind - 1]);
            return EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        cli_error("run: missing the executable (popc run FILE)");
        return EXIT_USAGE;
    }
    a->file = argv[optind++];
    while (optind < argc)
        a->inputs[a->n_inputs++] = argv[optind++];
    return EXIT_OK;
}

/* The options to apply on load (--backend, --option). */
static popc_status edit_options(const run_args *a, popc_options **out)
{
    popc_options *o = NULL;
    popc_status st;

    *out = NULL;
    if (!a->backend && !a->n_options)
        return POPC_OK;
    if ((st = popc_options_new(&o)) != POPC_OK)
        return st;
    if (a->backend && (st = popc_options_set(o, "backend", a->backend)) !=
                          POPC_OK)
        goto fail;
    for (int i = 0; i < a->n_options; i++) {
        const char *eq = strchr(a->options[i], '=');
        char name[256];

        if (!eq || eq == a->options[i] ||
            (size_t)(eq - a->options[i]) >= sizeof name) {
            st = popc_set_error(POPC_ECONFIG, "--option %s: give NAME=VALUE "
                                "(e.g. --option deviceIterations=2)",
                                a->options[i]);
            goto fail;
        }
        memcpy(name, a->options[i], (size_t)(eq - a->options[i]));
        name[eq - a->options[i]] = '\0';
        if ((st = popc_options_set(o, name, eq + 1)) != POPC_OK) {
            st = popc_set_error(POPC_ECONFIG, "--option %s: %s",
                                a->options[i], popc_last_error());
            goto fail;
        }
    }
    *out = o;
    return POPC_OK;
fail:
    popc_options_free(o);
    return st;
}

/* The inputs: the .npy files, checked against the compiled signature, or
** zeros of it. */
static popc_status load_inputs(popc_model *m, const run_args *a,
                               popc_tensor **in, int n)
{
    const popc_graph *g = popc_model_graph(m);
    char s1[128], s2[128];
    popc_status st;

    if (a->n_inputs && a->n_inputs != n)
        return popc_set_error(POPC_ECONFIG, "the model has %d inputs but %d "
                              "files were given", n, a->n_inputs);
    for (int i = 0; i < n; i++) {
        popc_view v;
        popc_view t;

        if ((st = popc_model_input_info(m, i, &v)) != POPC_OK)
            return st;
        if (!a->n_inputs) {
            if ((st = popc_tensor_new(v.dtype, v.dims, v.rank, &in[i])) !=
                POPC_OK)
                return st;
            continue;
        }
        if ((st = popc_npy_load(a->inputs[i], &in[i])) != POPC_OK)
            return st;
        t = popc_tensor_view(in[i]);
        if (t.dtype != v.dtype || t.rank != v.rank ||
            memcmp(t.dims, v.dims, sizeof(int64_t) * (size_t)v.rank) != 0)
            return popc_set_error(POPC_ECONFIG, "%s: input '%s' is %s but "
                                  "the executable was compiled for %s",
                                  a->inputs[i],
                                  popc_graph_value_name(
                                      g, popc_graph_input(g, i)),
                                  popc_view_describe(&t, s1, sizeof s1),
                                  popc_view_describe(&v, s2, sizeof s2));
    }
    return POPC_OK;
}

/* "fc.out:0" -> "fc.out_0": a file name from an output's value name. */
static void file_name(const char *name, char *buf, size_t size)
{
    size_t k = 0;

    for (const char *p = name; *p && k + 1 < size; p++)
        buf[k++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                           (*p >= '0' && *p <= '9') || *p == '.' ||
                           *p == '-'
                       ? *p
                       : '_';
    buf[k] = '\0';
}

static void summary(const char *name, const popc_tensor *t)
{
    char shape[128];
    double sum = 0.0;
    int64_t n = popc_tensor_numel(t);

    popc_tensor_describe(t, shape, sizeof shape);
    printf("  %s: %s", name, shape);
    if (popc_tensor_dtype(t) == POPC_DTYPE_F32 && n > 0) {
        const float *p = popc_tensor_cdata(t);
        for (int64_t i = 0; i < n; i++)
            sum += p[i];
        printf(" mean %.6g", sum / (double)n);
        if (n == 1)
            printf(" (value %.6g)", (double)p[0]);
    }
    printf("\n");
}

static popc_status write_outputs(const char *dir, const popc_graph *g,
                                 popc_tensor **out, int n)
{
    char base[256], path[4096];
    popc_status st;

    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return popc_set_error(POPC_EIO, "cannot create '%s': %s", dir,
                              strerror(errno));
    for (int i = 0; i < n; i++) {
        file_name(popc_graph_value_name(g, popc_graph_output(g, i)), base,
                  sizeof base);
        snprintf(path, sizeof path, "%s/%s.npy", dir, base);
        if ((st = popc_npy_save(path, out[i])) != POPC_OK)
            return st;
        printf("wrote %s\n", path);
    }
    return POPC_OK;
}

int cmd_run(int argc, char **argv)
{
    run_args a;
    popc_options *edit = NULL;
    popc_model *m = NULL;
    popc_tensor **in = NULL, **out = NULL;
    const popc_graph *g;
    int n_in = 0, n_out = 0, rc = EXIT_OK;
    popc_status st;

    memset(&a, 0, sizeof a);
    a.runs = 1;
    a.inputs = calloc((size_t)argc + 1, sizeof *a.inputs);
    a.options = calloc((size_t)argc + 1, sizeof *a.options);
    if (!a.inputs || !a.options) {
        cli_error("out of memory");
        rc = EXIT_RUNTIME;
        goto done;
    }
    if ((rc = parse(argc, argv, &a)) != 0) {
        rc = rc < 0 ? EXIT_OK : rc;
        goto done;
    }
    if ((st = edit_options(&a, &edit)) != POPC_OK ||
        (st = popc_load(a.file, edit, &m)) != POPC_OK) {
        rc = cli_fail(st);
        goto done;
    }
    g = popc_model_graph(m);
    n_in = popc_graph_n_inputs(g);
    n_out = popc_graph_n_outputs(g);
    in = calloc((size_t)n_in + 1, sizeof *in);
    out = calloc((size_t)n_out + 1, sizeof *out);
    if (!in || !out) {
        cli_error("out of memory");
        rc = EXIT_RUNTIME;
        goto done;
    }
    if ((st = load_inputs(m, &a, in, n_in)) != POPC_OK) {
        rc = cli_fail(st);
        goto done;
    }
    printf("loaded '%s' (%s) from %s\n", popc_graph_name(g),
           popc_model_training(m) ? "training" : "inference", a.file);
    for (long r = 0; r < a.runs; r++) {
        for (int i = 0; i < n_out; i++) {
            popc_tensor_free(out[i]);
            out[i] = NULL;
        }
        if ((st = popc_model_run(m, in, n_in, out, n_out)) != POPC_OK) {
            rc = cli_fail(st);
            goto done;
        }
        printf("run %ld:\n", r + 1);
        for (int i = 0; i < n_out; i++)
            summary(popc_graph_value_name(g, popc_graph_output(g, i)),
                    out[i]);
    }
    if (a.out_dir && (st = write_outputs(a.out_dir, g, out, n_out)) !=
                         POPC_OK) {
        rc = cli_fail(st);
        goto done;
    }
    if (a.save) {
        if ((st = popc_model_save(m, a.save)) != POPC_OK) {
            rc = cli_fail(st);
            goto done;
        }
        printf("saved %s\n", a.save);
    }
done:
    for (int i = 0; in && i < n_in; i++)
        popc_tensor_free(in[i]);
    for (int i = 0; out && i < n_out; i++)
        popc_tensor_free(out[i]);
    free(in);
    free(out);
    popc_model_free(m);
    popc_options_free(edit);
    free(a.inputs);
    free(a.options);
    return rc;
}
