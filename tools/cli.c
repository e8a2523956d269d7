/* cli.c - argument parsing, messages and signal handling shared by the
** popc subcommands.
*/
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>

#include "tools/cli.h"

volatile sig_atomic_t cli_stop;
volatile sig_atomic_t cli_signal;

void cli_error(const char *fmt, ...)
{
    va_list ap;

    const char *size = getenv("OMPI_COMM_WORLD_SIZE");
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");

    fflush(stdout);
    /* under mpirun every rank writes to the same terminal */
    if (size && atoi(size) > 1 && rank)
        fprintf(stderr, "popc: rank %s: ", rank);
    else
        fputs("popc: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void cli_print_profiles(const popc_options *o, time_t since)
{
    const char *dir = o ? popc_options_get_string(o, "enableProfiling")
                        : NULL;
    struct dirent *e;
    DIR *d;

    /* one subfolder per model (modelName), as PopTorch's report folders */
    if (!dir || !*dir || !(d = opendir(dir)))
        return;
    while ((e = readdir(d))) {
        char path[4096];
        struct stat sb;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s/profile.html", dir, e->d_name);
        if (stat(path, &sb) == 0 && sb.st_mtime >= since)
            printf("profile: %s\n", path);
    }
    closedir(d);
}

int cli_fail(popc_status st)
{
    cli_error("%s", popc_last_error());
    switch (st) {
    case POPC_ECONFIG:
    case POPC_EPERM:
        return EXIT_USAGE;
    case POPC_EINTERRUPTED:
        return 128 + (cli_signal ? (int)cli_signal : SIGINT);
    default:
        return EXIT_RUNTIME;
    }
}

int cli_fail_load(popc_status st)
{
    cli_error("%s", popc_last_error());
    return st == POPC_ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
}

static void on_signal(int sig)
{
    static const char msg[] =
        "\npopc: stopping after the current step (signal again to abort)\n";

    if (cli_stop) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    cli_stop = 1;
    cli_signal = sig;
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
}

void cli_catch_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int cli_parse(int argc, char **argv, unsigned accepted, const char *usage,
              cli_args *a)
{
    enum { O_SET = 256, O_JSON, O_CKPT, O_RESUME, O_QUIET, O_HELP,
           O_FOREIGN };
    static const struct option all[] = {
        {"set", required_argument, NULL, O_SET},
        {"json", required_argument, NULL, O_JSON},
        {"checkpoint-every", required_argument, NULL, O_CKPT},
        {"resume", no_argument, NULL, O_RESUME},
        {"quiet", no_argument, NULL, O_QUIET},
        {"allow-foreign", no_argument, NULL, O_FOREIGN},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0}};
    int c;

    memset(a, 0, sizeof *a);
    if (!(a->sets = calloc((size_t)argc + 1, sizeof *a->sets))) {
        cli_error("out of memory");
        return EXIT_RUNTIME;
    }
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", all, NULL)) != -1) {
        switch (c) {
        case O_SET:
            if (!(accepted & ARG_SET))
                goto unknown;
            a->sets[a->n_sets++] = optarg;
            break;
        case O_JSON:
            if (!(accepted & ARG_JSON))
                goto unknown;
            a->json = optarg;
            break;
        case O_CKPT: {
            char *end;

            if (!(accepted & ARG_CHECKPOINT))
                goto unknown;
            errno = 0;
            a->checkpoint_every = strtoll(optarg, &end, 10);
            if (errno || *end || !*optarg || a->checkpoint_every < 1) {
                cli_error("--checkpoint-every %s: give a number of steps "
                          ">= 1",
                          optarg);
                return EXIT_USAGE;
            }
            break;
        }
        case O_RESUME:
            if (!(accepted & ARG_CHECKPOINT))
                goto unknown;
            a->resume = 1;
            break;
        case O_QUIET:
            if (!(accepted & ARG_QUIET))
                goto unknown;
            a->quiet = 1;
            break;
        case O_FOREIGN:
            if (!(accepted & ARG_FOREIGN))
                goto unknown;
            popc_set_foreign_code_allowed(1);
            break;
        case 'h':
        case O_HELP:
            fputs(usage, stdout);
            return -1;
        case ':':
            cli_error("%s: option %s needs a value (see popc %s --help)",
                      argv[0], argv[optind - 1], argv[0]);
            return EXIT_USAGE;
        default:
        unknown:
            cli_error("%s: unknown option '%s' (see popc %s --help)",
                      argv[0], argv[optind - 1], argv[0]);
            return EXIT_USAGE;
        }
    }
    if (accepted & ARG_INI) {
        if (optind >= argc) {
            cli_error("%s: missing the run file (popc %s RUN.ini)", argv[0],
                      argv[0]);
            return EXIT_USAGE;
        }
        a->ini = argv[optind++];
    }
    if (optind < argc) {
        cli_error("%s: unexpected argument '%s' (see popc %s --help)",
                  argv[0], argv[optind], argv[0]);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}
