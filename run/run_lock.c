/* run_lock.c - a run claims its checkpoint folder for itself: an exclusive
** flock on "<path>.lock", so that two training processes never write the
** same checkpoint (run_priv.h).
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "popc/log.h"
#include "core/layer/alloc.h"
#include "run/run_priv.h"

popc_status popci_lock_path(const char *path, const char *what, int *fd)
{
    size_t n = strlen(path) + 8;
    char *lock = popci_malloc(n);

    *fd = -1;
    if (!lock)
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
    snprintf(lock, n, "%s.lock", path);
    if ((*fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
                    0644)) < 0) {
        popc_status st = popc_set_error(POPC_EIO, "%s: cannot create the "
                                        "lock file: %s", lock,
                                        strerror(errno));
        free(lock);
        return st;
    }
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;

        if (err == EWOULDBLOCK) {
            popc_status st = popc_set_error(
                POPC_ESTATE, "%s: another popc process is using this %s "
                "(it holds %s); wait for it to finish or choose another "
                "path", path, what, lock);
            close(*fd);
            *fd = -1;
            free(lock);
            return st;
        }
        popc_log(POPC_LOG_WARN, "%s: cannot lock (%s); nothing stops "
                 "another process from using the same %s", lock,
                 strerror(err), what);
    }
    free(lock);
    return POPC_OK;
}

void popci_unlock_path(int fd)
{
    if (fd >= 0)
        close(fd); /* releases the flock */
}
