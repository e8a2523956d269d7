/* cli.h - what the `popc` subcommands share: exit codes, argument
** parsing, messages, signals and the JSON writer.
**
** Exit codes: 0 success, 1 runtime error, 2 usage or configuration
** error, 128 + signal number when SIGINT or SIGTERM stopped a run.
*/
#ifndef POPC_TOOLS_CLI_H
#define POPC_TOOLS_CLI_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include "popc/popc.h"

#define EXIT_OK 0
#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

/* ---- common arguments (cli.c) ------------------------------------------- */

typedef struct cli_args {
    const char *ini;            /* the run file, NULL when not given */
    const char **sets;          /* --set values (argv pointers) */
    int n_sets;
    const char *json;           /* --json FILE */
    long long checkpoint_every; /* --checkpoint-every N, 0 when absent */
    int resume;                 /* --resume */
    int quiet;                  /* --quiet */
} cli_args;

/* Which options a command accepts. */
enum {
    ARG_INI = 1,
    ARG_SET = 2,
    ARG_JSON = 4,
    ARG_CHECKPOINT = 8,
    ARG_QUIET = 16,
    ARG_FOREIGN = 32
};

/* Parse argv[1..argc) of a subcommand (argv[0] is its name). Prints
** "popc: ..." and returns EXIT_USAGE on a bad argument, -1 after --help
** (printed), else EXIT_OK. a->sets is malloc'd: free it. */
/* cmd_infer_onnx.c: `popc infer MODEL.onnx ...` (cmd_infer hands over). */
int cmd_infer_onnx(int argc, char **argv);

int cli_parse(int argc, char **argv, unsigned accepted, const char *usage,
              cli_args *a);

/* "popc: <formatted message>\n" on stderr. */
void cli_error(const char *fmt, ...) POPC_PRINTF(1, 2);

/* The exit code of a failed library call, after printing its message. */
int cli_fail(popc_status st);
/* The same for popc_run_load: a run file that cannot be read or is wrong
** is a usage error. */
int cli_fail_load(popc_status st);

/* enableProfiling: "profile: DIR/NAME/profile.html" for every model's
** profile under the option's folder written since `since` (time(NULL)
** when the command started); nothing when the option is None. */
void cli_print_profiles(const popc_options *o, time_t since);

/* SIGINT and SIGTERM set cli_stop (and the number in cli_signal); a
** second signal ends the process at once. */
extern volatile sig_atomic_t cli_stop;
extern volatile sig_atomic_t cli_signal;
void cli_catch_signals(void);

/* ---- JSON (json.c) ------------------------------------------------------ */

/* A JSON document built in memory and written atomically. */
typedef struct json {
    char *buf;
    size_t len, cap;
    int failed;
    int need_comma;
} json;

void json_begin(json *j, char open);         /* '{' or '[' */
void json_end(json *j, char close);
void json_key(json *j, const char *key);     /* "key": (then a value) */
void json_str(json *j, const char *s);       /* NULL writes null */
void json_num(json *j, double v);            /* NaN/inf write null */
void json_int(json *j, long long v);
void json_bool(json *j, int v);
/* Write to path through a temporary file; prints and returns EXIT_RUNTIME
** on failure, EXIT_OK otherwise. Frees the buffer. */
int json_write(json *j, const char *path);

/* ---- commands ----------------------------------------------------------- */

int cmd_train(int argc, char **argv);
int cmd_infer(int argc, char **argv);
int cmd_compile(int argc, char **argv);  /* cmd_compile.c */
int cmd_run(int argc, char **argv);      /* cmd_run.c */
int cmd_inspect(int argc, char **argv);  /* cmd_inspect.c */
int cmd_plugins(int argc, char **argv);
int cmd_options(int argc, char **argv);
int cmd_launch(int argc, char **argv);   /* cmd_launch.c */

#endif /* POPC_TOOLS_CLI_H */
