/* cmd_launch.c - `popc launch -n N [--hostfile FILE] [--] COMMAND ...`:
** PopRun's counterpart. It runs mpirun with the defaults a popc run wants
** and replaces itself with it:
**
** - COMMAND is a popc subcommand (train, infer, ...) run by this same popc
**   binary, or any program (a C application linked with libpopc);
** - `--bind-to none`: each rank runs the IPU model's worker threads, which
**   must not share the one core MPI would bind the rank to;
** - `--oversubscribe` when N exceeds this host's cores (without a
**   hostfile), so that a laptop can rehearse a multi-host run;
** - the POPC_* variables, LD_LIBRARY_PATH and OMP_NUM_THREADS reach
**   every rank, remote ones included (`-x`);
** - `--allow-run-as-root` only when the caller is root, which Open MPI
**   refuses by default (containers and CI run as root).
*/
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cli.h"

extern char **environ;

static const char launch_usage[] =
    "Usage: popc launch -n N [--hostfile FILE] [--dry-run] [--] COMMAND "
    "[ARGS]\n"
    "\n"
    "Start N ranks of a distributed run with mpirun (PopRun's role). COMMAND\n"
    "is a popc subcommand (popc launch -n 2 train RUN.ini) or a program.\n"
    "Each rank runs replicationFactor replicas; rank 0 reports and writes\n"
    "the outputs. See docs/distributed.md.\n"
    "\n"
    "  -n N             ranks to start (>= 1)\n"
    "  --hostfile FILE  hosts to start them on (mpirun's hostfile format);\n"
    "                   default: this host\n"
    "  --dry-run        print the mpirun command instead of running it\n";

static const char *const subcommands[] = {"train", "infer", "compile",
                                          "run", "inspect", NULL};

static int is_subcommand(const char *s)
{
    for (int i = 0; subcommands[i]; i++)
        if (strcmp(subcommands[i], s) == 0)
            return 1;
    return 0;
}

/* Names of the forwarded variables (argv points into it until exec). */
static char names[64][128];
static int used;

/* "-x NAME" for every variable a rank needs from this environment. */
static int forward_env(const char **argv, int n, int cap)
{
    static const char *const always[] = {"LD_LIBRARY_PATH",
                                         "OMP_NUM_THREADS", NULL};

    for (char **e = environ; *e && n + 2 < cap; e++) {
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        int want = strncmp(*e, "POPC_", 5) == 0;

        for (int i = 0; always[i]; i++)
            want |= strlen(always[i]) == len &&
                    strncmp(*e, always[i], len) == 0;
        if (!want || len >= sizeof names[0] || used >= 64)
            continue;
        memcpy(names[used], *e, len);
        names[used][len] = '\0';
        argv[n++] = "-x";
        argv[n++] = names[used++];
    }
    return n;
}

int cmd_launch(int argc, char **argv)
{
    const char *hostfile = NULL, **mpi;
    char self[4096], np[32];
    long ranks = 0;
    int i, n = 0, dry = 0, cap;
    ssize_t len;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(launch_usage, stdout);
            return EXIT_OK;
        } else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            char *end;

            ranks = strtol(argv[++i], &end, 10);
            if (*end || ranks < 1 || ranks > 1 << 20) {
                cli_error("launch: -n %s: give the number of ranks, a "
                          "whole number >= 1", argv[i]);
                return EXIT_USAGE;
            }
        } else if (strcmp(argv[i], "--hostfile") == 0 && i + 1 < argc) {
            hostfile = argv[++i];
            if (access(hostfile, R_OK) != 0) {
                cli_error("launch: --hostfile %s: %s", hostfile,
                          strerror(errno));
                return EXIT_USAGE;
            }
        } else if (strcmp(argv[i], "--dry-run") == 0) {
            dry = 1;
        } else if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else if (argv[i][0] == '-') {
            cli_error("launch: unknown option '%s'\n%s", argv[i],
                      launch_usage);
            return EXIT_USAGE;
        } else {
            break;
        }
    }
    if (!ranks || i >= argc) {
        cli_error("launch: %s\n%s", !ranks ? "-n N is required"
                                           : "no command to launch",
                  launch_usage);
        return EXIT_USAGE;
    }
    cap = argc - i + 256;
    if (!(mpi = calloc((size_t)cap, sizeof *mpi))) {
        cli_error("launch: out of memory");
        return EXIT_RUNTIME;
    }
    snprintf(np, sizeof np, "%ld", ranks);
    mpi[n++] = POPC_MPIRUN;
    mpi[n++] = "-np";
    mpi[n++] = np;
    mpi[n++] = "--bind-to";
    mpi[n++] = "none";
    if (hostfile) {
        mpi[n++] = "--hostfile";
        mpi[n++] = hostfile;
    } else if (ranks > sysconf(_SC_NPROCESSORS_ONLN)) {
        mpi[n++] = "--oversubscribe";
    }
    if (geteuid() == 0)
        mpi[n++] = "--allow-run-as-root";
    n = forward_env(mpi, n, cap - (argc - i) - 2);
    if (is_subcommand(argv[i])) {
        /* the ranks run this very popc */
        if ((len = readlink("/proc/self/exe", self, sizeof self - 1)) < 0) {
            cli_error("launch: cannot find this program's path: %s",
                      strerror(errno));
            free(mpi);
            return EXIT_RUNTIME;
        }
        self[len] = '\0';
        mpi[n++] = self;
    }
    for (; i < argc; i++)
        mpi[n++] = argv[i];
    mpi[n] = NULL;
    fputs("popc launch:", stderr);
    for (int k = 0; k < n; k++)
        fprintf(stderr, " %s", mpi[k]);
    fputc('\n', stderr);
    if (dry) {
        free(mpi);
        return EXIT_OK;
    }
    fflush(stdout);
    execvp(mpi[0], (char *const *)mpi);
    cli_error("launch: cannot run %s: %s; install openmpi-bin", mpi[0],
              strerror(errno));
    free(mpi);
    return EXIT_RUNTIME;
}
