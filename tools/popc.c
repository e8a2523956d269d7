/* popc.c - the `popc` command line: dispatch to the subcommands.
**
**   popc train RUN.ini    train as the run file says
**   popc infer RUN.ini    classify with trained weights
**   popc compile RUN.ini -o FILE   compile and export an executable
**   popc run FILE         run an exported executable
**   popc inspect FILE     what an executable holds
**   popc plugins          loaded plugins and refused files
**   popc options          every option with its default and meaning
**   popc launch -n N ...  start N ranks of a distributed run (mpirun)
*/
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "popc/onnx.h"
#include "popc/plugin.h"
#include "popc/registry.h"
#include "tools/cli.h"

#ifdef POPC_PRELOAD_PLUGINS
#include <ltdl.h>
#endif

static const char usage[] =
    "Usage: popc COMMAND [ARGS]\n"
    "\n"
    "PopTorch for C: compile a model for an IPU-like device and train or\n"
    "run it, with PopTorch's semantics.\n"
    "\n"
    "Commands:\n"
    "  train RUN.ini    train the model described by a run file\n"
    "  infer RUN.ini    classify a dataset with trained weights\n"
    "  infer MODEL.onnx -i NAME=FILE.npy ... -o DIR\n"
    "                   run an ONNX model once on .npy inputs\n"
    "  compile RUN.ini -o FILE\n"
    "                   compile the model and export the executable\n"
    "  run FILE         load an exported executable and run it\n"
    "  inspect FILE     show what an executable holds\n"
    "  plugins          list the plugins (ops, optimizers, backends) and\n"
    "                   the files that were refused\n"
    "  options          list every option with its default and meaning\n"
    "  launch -n N COMMAND ...\n"
    "                   start N ranks of a distributed run with mpirun\n"
    "  help [COMMAND]   this text, or a command's\n"
    "\n"
    "Options:\n"
    "  -h, --help       show help and exit\n"
    "  --version        show the version and exit\n"
    "\n"
    "Run files are INI files: see docs/ini-format.md and the examples in\n"
    POPC_DATADIR "/examples.\n"
    "\n"
    "Exit status: 0 success, 1 runtime error, 2 usage or configuration\n"
    "error, 128+N when stopped by signal N (SIGINT, SIGTERM).\n"
    "Environment: POPC_PLUGIN_PATH (plugin directories), POPC_LOG_LEVEL\n"
    "(TRACE, DEBUG, INFO, WARN, ERR, OFF).\n";

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
} command;

static const command commands[] = {
    {"train", cmd_train},
    {"infer", cmd_infer},
    {"compile", cmd_compile},
    {"run", cmd_run},
    {"inspect", cmd_inspect},
    {"plugins", cmd_plugins},
    {"options", cmd_options},
    {"launch", cmd_launch},
};
#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

static const command *find(const char *name)
{
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

/* The command whose name is closest to a typo (one or two edits). */
static const char *suggest(const char *word)
{
    const char *best = NULL;
    int best_d = 3;

    for (int i = 0; i < N_COMMANDS; i++) {
        const char *c = commands[i].name;
        size_t n = strlen(word), m = strlen(c);
        int d[32][32];

        if (n >= 31 || m >= 31)
            continue;
        for (size_t a = 0; a <= n; a++)
            d[a][0] = (int)a;
        for (size_t b = 0; b <= m; b++)
            d[0][b] = (int)b;
        for (size_t a = 1; a <= n; a++)
            for (size_t b = 1; b <= m; b++) {
                int sub = d[a - 1][b - 1] + (word[a - 1] != c[b - 1]);
                int del = d[a - 1][b] + 1, ins = d[a][b - 1] + 1;
                int v = sub < del ? sub : del;

                d[a][b] = v < ins ? v : ins;
                if (a > 1 && b > 1 && word[a - 1] == c[b - 2] &&
                    word[a - 2] == c[b - 1] && d[a - 2][b - 2] + 1 < d[a][b])
                    d[a][b] = d[a - 2][b - 2] + 1;
            }
        if (d[n][m] < best_d) {
            best_d = d[n][m];
            best = c;
        }
    }
    return best;
}

int main(int argc, char **argv)
{
    const command *c;
    const char *hint;

#ifdef POPC_PRELOAD_PLUGINS
    popc_registry_use_preloaded(lt_preloaded_symbols);
#endif
    /* run files may name ONNX models ([model] onnx, [train] export_onnx) */
    if (popc_onnx_register_run_format() != POPC_OK) {
        cli_error("%s", popc_last_error());
        return EXIT_RUNTIME;
    }
    if (argc < 2) {
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage, stdout);
        return EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("popc %s (plugin ABI %u.%u)\n", POPC_VERSION_STRING,
               (unsigned)POPC_PLUGIN_ABI_MAJOR,
               (unsigned)POPC_PLUGIN_ABI_MINOR);
        return EXIT_OK;
    }
    if (strcmp(argv[1], "help") == 0) {
        char *help_argv[3];

        if (argc < 3) {
            fputs(usage, stdout);
            return EXIT_OK;
        }
        if (!(c = find(argv[2]))) {
            cli_error("help: unknown command '%s' (commands: train, infer, "
                      "compile, run, inspect, plugins, options)",
                      argv[2]);
            return EXIT_USAGE;
        }
        help_argv[0] = argv[2];
        help_argv[1] = (char *)"--help";
        help_argv[2] = NULL;
        return c->run(2, help_argv);
    }
    if (argv[1][0] == '-') {
        cli_error("unknown option '%s' (see popc --help)", argv[1]);
        return EXIT_USAGE;
    }
    if (!(c = find(argv[1]))) {
        hint = suggest(argv[1]);
        cli_error("unknown command '%s'%s%s%s (see popc --help)", argv[1],
                  hint ? "; did you mean '" : "", hint ? hint : "",
                  hint ? "'?" : "");
        return EXIT_USAGE;
    }
    return c->run(argc - 1, argv + 1);
}
