/* cmd_compile.c - `popc compile RUN.ini -o FILE`: compile the model of a
** run file for its combined batch and export the executable (PopTorch's
** compileAndExport). Works for compile-only targets
** (options.useOfflineIpuTarget, backend offline).
*/
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "popc/popc.h"
#include "popc/run.h"
#include "tools/cli.h"

static const char usage[] =
    "Usage: popc compile RUN.ini -o FILE [OPTIONS]\n"
    "\n"
    "Compile the model of RUN.ini for the device ([options]) and write the\n"
    "executable to FILE (PopTorch's compileAndExport). Inputs have the\n"
    "combined batch: [data] batch_size x deviceIterations x\n"
    "(replicationFactor / inputReplicaGrouping) x gradientAccumulation\n"
    "(training). The inference graph is compiled with the weights of\n"
    "[infer] weights when set (else the [model] seed's initial weights);\n"
    "--train compiles the training graph with [optimizer]. With\n"
    "--set options.useOfflineIpuTarget=2 no device is needed. Run the file\n"
    "with popc run, look inside with popc inspect.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE        the executable to write (required; a\n"
    "                           directory gets FILE/model.popc)\n"
    "  --train                  compile for training\n"
    "  --allow-foreign          let the file load the shared libraries and\n"
    "                           call the symbols it names (foreign layers);\n"
    "                           only for files you trust\n"
    "  --set SECTION.KEY=VALUE  override a setting of the run file; may be\n"
    "                           repeated\n"
    "  -h, --help               show this help\n";

/* dim 0 of every input grows from the micro-batch to the combined batch */
static int64_t combined_factor(popc_options *o, int training)
{
    int64_t di = popc_options_get_int(o, "deviceIterations");
    int64_t r = popc_options_get_int(o, "replicationFactor");
    int64_t g = popc_options_get_int(o, "inputReplicaGrouping.size");
    int64_t ga = training ? popc_options_get_int(
                                o, "Training.gradientAccumulation")
                          : 1;

    if (g < 1 || r % g != 0)
        g = 1;
    return (di < 1 ? 1 : di) * (r < 1 ? 1 : r / g) * (ga < 1 ? 1 : ga);
}

/* [infer] weights: relative to the current directory, else to the run
** file's directory (where popc train's model INI points). */
static popc_status load_weights(popc_model *m, const char *ini,
                                const char *weights)
{
    struct stat sb;
    const char *slash = strrchr(ini, '/');
    char path[4096];

    if (weights[0] == '/' || stat(weights, &sb) == 0 || !slash)
        return popc_weights_load(m, weights);
    snprintf(path, sizeof path, "%.*s/%s", (int)(slash - ini), ini, weights);
    return popc_weights_load(m, path);
}

static int parse(int argc, char **argv, const char **out, int *train,
                 const char ***sets, int *n_sets, const char **ini)
{
    enum { O_SET = 256, O_TRAIN, O_FOREIGN };
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"train", no_argument, NULL, O_TRAIN},
        {"set", required_argument, NULL, O_SET},
        {"allow-foreign", no_argument, NULL, O_FOREIGN},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int c;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            *out = optarg;
            break;
        case O_TRAIN:
            *train = 1;
            break;
        case O_FOREIGN:
            popc_set_foreign_code_allowed(1);
            break;
        case O_SET:
            (*sets)[(*n_sets)++] = optarg;
            break;
        case 'h':
            fputs(usage, stdout);
            return -1;
        case ':':
            cli_error("compile: option %s needs a value (see popc compile "
                      "--help)", argv[optind - 1]);
            return EXIT_USAGE;
        default:
            cli_error("compile: unknown option '%s' (see popc compile "
                      "--help)", argv[optind - 1]);
            return EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        cli_error("compile: missing the run file (popc compile RUN.ini -o "
                  "FILE)");
        return EXIT_USAGE;
    }
    *ini = argv[optind++];
    if (optind < argc) {
        cli_error("compile: unexpected argument '%s' (see popc compile "
                  "--help)", argv[optind]);
        return EXIT_USAGE;
    }
    if (!*out) {
        cli_error("compile: give the executable to write with -o FILE");
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

int cmd_compile(int argc, char **argv)
{
    const char *out = NULL, *ini = NULL, **sets, *weights;
    int train = 0, n_sets = 0, n_in = 0, rc;
    popc_run *r = NULL;
    popc_graph *g = NULL;
    popc_model *m = NULL;
    popc_tensor *in[8] = {NULL};
    popc_options *o;
    int64_t factor;
    struct stat sb;
    popc_status st;

    if (!(sets = calloc((size_t)argc + 1, sizeof *sets))) {
        cli_error("out of memory");
        return EXIT_RUNTIME;
    }
    if ((rc = parse(argc, argv, &out, &train, &sets, &n_sets, &ini)) != 0) {
        free(sets);
        return rc < 0 ? EXIT_OK : rc;
    }
    if ((st = popc_run_load(ini, sets, n_sets, &r)) != POPC_OK) {
        rc = cli_fail_load(st);
        goto done;
    }
    o = popc_run_options(r);
    if ((st = popc_run_build_graph(r, train, popc_run_batch_size(r), &g)) !=
        POPC_OK) {
        rc = cli_fail(st);
        goto done;
    }
    if (train)
        st = popc_model_new_training(g, o, popc_run_optimizer(r), &m);
    else
        st = popc_model_new_inference(g, o, &m);
    weights = popc_run_value(r, "infer", "weights");
    if (st == POPC_OK && !train && weights)
        st = load_weights(m, ini, weights);
    if (st != POPC_OK) {
        rc = cli_fail(st);
        goto done;
    }
    factor = combined_factor(o, train);
    n_in = popc_graph_n_inputs(g);
    for (int i = 0; i < n_in && i < 8; i++) {
        popc_view v = popc_graph_value_info(g, popc_graph_input(g, i));
        if (v.rank > 0)
            v.dims[0] *= factor;
        if ((st = popc_tensor_new(v.dtype, v.dims, v.rank, &in[i])) !=
            POPC_OK) {
            rc = cli_fail(st);
            goto done;
        }
    }
    if ((st = popc_model_compile_and_export(m, in, n_in, out)) != POPC_OK) {
        rc = cli_fail(st);
        goto done;
    }
    printf("compiled '%s' for %s on backend %s in %.3f s\n",
           popc_graph_name(g), train ? "training" : "inference",
           popc_options_get_string(o, "backend"),
           popc_model_compilation_time(m));
    if (stat(out, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        printf("wrote %s/model.popc\n", out);
    } else {
        printf("wrote %s (%lld bytes)\n", out,
               stat(out, &sb) == 0 ? (long long)sb.st_size : -1LL);
    }
    rc = EXIT_OK;
done:
    for (int i = 0; i < 8; i++)
        popc_tensor_free(in[i]);
    popc_model_free(m);
    popc_graph_free(g);
    popc_run_free(r);
    free(sets);
    return rc;
}
