/* model_log.c - logDir: a model's log file, LOGDIR/NAME.log (NAME: the
** modelName option, "training" or "inference" by default).
**
** PopTorch writes log files into logDir. popc writes one per model, and
** only when logDir is set: the lines logged (at the current level) by the
** thread that calls the model's compile and run, appended, in the format
** of the main log. Lines logged by backend worker threads go to the main
** log only.
*/
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_priv.h"
#include "core/layer/mkdir.h"
#include "core/log_priv.h"
#include "core/runtime/model_priv.h"
#include "core/options/options_priv.h"

popc_status popci_model_open_log(popc_model *m)
{
    const char *dir = popci_opt_string(m->opts, POPCI_O_logDir);
    const char *name = popci_model_name(m);
    size_t n;
    char *path;
    popc_status st;

    if (!popci_opt_is_set(m->opts, POPCI_O_logDir) || !dir)
        return POPC_OK;
    if ((st = popci_mkdir_p(dir, "logDir")) != POPC_OK)
        return st;
    n = strlen(dir) + strlen(name) + sizeof "/.log";
    if (!(path = popci_malloc(n)))
        return popc_set_error(POPC_ENOMEM, "logDir: out of memory");
    snprintf(path, n, "%s/%s.log", dir, name);
    m->log_file = fopen(path, "a");
    if (!m->log_file) {
        int err = errno;
        st = popc_set_error(POPC_EIO, "logDir: cannot open the log file "
                            "'%s': %s; choose a writable directory",
                            path, strerror(err));
    }
    free(path);
    return st;
}

FILE *popci_model_log_begin(const popc_model *m)
{
    FILE *prev = popci_log_swap_thread_file(NULL);

    /* a model without a file leaves an enclosing model's file in place */
    (void)popci_log_swap_thread_file(m->log_file ? m->log_file : prev);
    return prev;
}

void popci_model_log_end(FILE *prev)
{
    (void)popci_log_swap_thread_file(prev);
}
