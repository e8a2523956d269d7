/* cmd_inspect.c - `popc inspect FILE`: what an exported executable holds
** (versions, model, inputs, backend plan and memory per IPU, plugins,
** optimizer, weights, optimizer state, options, sections with CRCs). The
** file is checked completely first; no plugin is needed.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/popc.h"
#include "tools/cli.h"

static const char usage[] =
    "Usage: popc inspect FILE\n"
    "\n"
    "Describe the executable FILE (written by popc compile or\n"
    "popc_model_save): the popc version that wrote it, the model and the\n"
    "input shapes it was compiled for, the backend's plan (IPUs, stages,\n"
    "memory per IPU, cycle estimate), the plugins and versions it needs,\n"
    "the optimizer, weights and optimizer state, the options, and every\n"
    "section with its size and CRC32. A damaged file is reported with the\n"
    "section at fault.\n"
    "\n"
    "Options:\n"
    "  -h, --help   show this help\n";

int cmd_inspect(int argc, char **argv)
{
    char *text = NULL;
    const char *file = NULL;
    popc_status st;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(usage, stdout);
            return EXIT_OK;
        }
        if (argv[i][0] == '-' && argv[i][1]) {
            cli_error("inspect: unknown option '%s' (see popc inspect "
                      "--help)", argv[i]);
            return EXIT_USAGE;
        }
        if (file) {
            cli_error("inspect: unexpected argument '%s' (one FILE)",
                      argv[i]);
            return EXIT_USAGE;
        }
        file = argv[i];
    }
    if (!file) {
        cli_error("inspect: missing the executable (popc inspect FILE)");
        return EXIT_USAGE;
    }
    if ((st = popc_executable_describe(file, &text)) != POPC_OK)
        return cli_fail(st);
    fputs(text, stdout);
    free(text);
    return EXIT_OK;
}
