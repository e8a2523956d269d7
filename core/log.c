/* log.c - leveled logging to stderr, stdout, a file or a callback.
**
** Settings are process-global (the log settings are one of the few pieces
** of global state popc allows: one process has one log) and guarded by one
** mutex so lines from worker threads do
** not interleave. The environment (POPC_LOG_LEVEL, POPC_LOG_DEST) is read
** once, on first use; a bad value there is reported through the log itself
** rather than printed behind the application's back.
**
** The callback runs with the log mutex held, one call at a time. A line
** it logs itself (directly or through any popc function) cannot wait for
** that mutex: it goes straight to the destination instead of hanging.
*/
#include "config.h"

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "popc/log.h"
#include "core/log_priv.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static atomic_int log_level = POPC_LOG_WARN;
static int max_repeats = 4;       /* PopTorch's maxRepeatLogs default */
static FILE *log_dest;
static popc_log_fn log_cb;
static void *log_cb_user;
static char last_line[1024];
static int last_level;
static int seen;                  /* times last_line came in a row */
static char env_problem[512];     /* reported on the first emitted line */
static _Thread_local FILE *thread_file; /* log_priv.h */
static _Thread_local int in_callback;   /* this thread runs log_cb */
static atomic_int log_rank = -1;  /* distributed: lines say which rank */

static const char *const level_names[] = {"TRACE", "DEBUG", "INFO",
                                          "WARN",  "ERR",   "OFF"};

popc_status popc_log_parse_level(const char *s, int *level)
{
    for (int i = 0; i <= POPC_LOG_OFF; i++)
        if (s && strcasecmp(s, level_names[i]) == 0) {
            *level = i;
            return POPC_OK;
        }
    if (s && strcasecmp(s, "ERROR") == 0) {
        *level = POPC_LOG_ERR;
        return POPC_OK;
    }
    return popc_set_error(POPC_EINVAL,
                          "Unknown POPC_LOG_LEVEL '%s'. Valid values are "
                          "TRACE, DEBUG, INFO, WARN, ERR and OFF.",
                          s ? s : "(null)");
}

static void read_environment(void)
{
    const char *lvl = getenv("POPC_LOG_LEVEL");
    const char *dest = getenv("POPC_LOG_DEST");
    int parsed;

    const char *size = getenv("OMPI_COMM_WORLD_SIZE");
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");

    log_dest = stderr;
    /* under mpirun every rank writes to the same terminal */
    if (size && atoi(size) > 1 && rank)
        atomic_store(&log_rank, atoi(rank));
    if (lvl && *lvl) {
        if (popc_log_parse_level(lvl, &parsed) == POPC_OK)
            atomic_store(&log_level, parsed);
        else
            snprintf(env_problem, sizeof env_problem, "%s Using WARN.",
                     popc_last_error());
    }
    if (dest && strcmp(dest, "stdout") == 0)
        log_dest = stdout;
    else if (dest && *dest && strcmp(dest, "stderr") != 0) {
        FILE *f = fopen(dest, "a");
        if (f)
            log_dest = f;
        else
            snprintf(env_problem, sizeof env_problem,
                     "cannot open POPC_LOG_DEST '%s'; logging to stderr",
                     dest);
    }
}

void popc_log_set_level(int level)
{
    pthread_once(&log_once, read_environment);
    if (level >= POPC_LOG_TRACE && level <= POPC_LOG_OFF)
        atomic_store(&log_level, level);
}

int popc_log_level(void)
{
    pthread_once(&log_once, read_environment);
    return atomic_load(&log_level);
}

/* n lines of a run of identical lines are shown; negative: no limit
** (maxRepeatLogs(None)); 0 is taken as 1, the first line always shows. */
void popc_log_set_max_repeats(int n)
{
    pthread_mutex_lock(&log_lock);
    max_repeats = n < 0 ? INT_MAX : n == 0 ? 1 : n;
    pthread_mutex_unlock(&log_lock);
}

void popc_log_set_callback(popc_log_fn fn, void *user)
{
    pthread_mutex_lock(&log_lock);
    log_cb = fn;
    log_cb_user = user;
    pthread_mutex_unlock(&log_lock);
}

void popci_log_set_rank(int rank)
{
    pthread_once(&log_once, read_environment);
    atomic_store(&log_rank, rank);
}

FILE *popci_log_swap_thread_file(FILE *f)
{
    FILE *prev = thread_file;

    thread_file = f;
    return prev;
}

static void emit(int level, const char *msg)
{
    char who[32] = "";
    int rank = atomic_load(&log_rank);

    if (rank >= 0)
        snprintf(who, sizeof who, " rank %d", rank);
    if (thread_file) {
        fprintf(thread_file, "[popc%s %s] %s\n", who, level_names[level],
                msg);
        fflush(thread_file);
    }
    if (log_cb) {
        in_callback = 1;
        log_cb(level, msg, log_cb_user);
        in_callback = 0;
        return;
    }
    fprintf(log_dest, "[popc%s %s] %s\n", who, level_names[level], msg);
    /* A log file must be complete even if the program dies next. */
    fflush(log_dest);
}

void popc_log(int level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    pthread_once(&log_once, read_environment);
    if (level < 0 || level >= POPC_LOG_OFF || level < atomic_load(&log_level))
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    if (in_callback) { /* log_lock is ours already: do not wait for it */
        fprintf(log_dest, "[popc %s] %s\n", level_names[level], msg);
        fflush(log_dest);
        return;
    }
    pthread_mutex_lock(&log_lock);
    if (env_problem[0]) {
        emit(POPC_LOG_WARN, env_problem);
        env_problem[0] = '\0';
    }
    /* maxRepeatLogs: a line seen again is counted, and shown only while
    ** the run is short; the count is reported when the run ends. */
    if (seen > 0 && strcmp(msg, last_line) == 0) {
        if (seen < INT_MAX)
            seen++;
        if (seen <= max_repeats)
            emit(level, msg);
    } else {
        if (seen > max_repeats) {
            char note[64];
            snprintf(note, sizeof note, "(last message repeated %d more "
                     "times)", seen - max_repeats);
            emit(last_level, note);
        }
        seen = 1;
        last_level = level;
        snprintf(last_line, sizeof last_line, "%s", msg);
        emit(level, msg);
    }
    pthread_mutex_unlock(&log_lock);
}
