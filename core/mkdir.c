/* mkdir.c - mkdir -p for the core's own directories (logDir) and the
** layers' (core/layer/mkdir.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "popc/status.h"
#include "core/alloc_priv.h"
#include "core/layer/mkdir.h"

popc_status popci_mkdir_p(const char *dir, const char *what)
{
    size_t n = strlen(dir);
    char *path = popci_malloc(n + 1);

    if (!path)
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", what);
    memcpy(path, dir, n + 1);
    /* every parent first, then the directory itself (mkdir -p) */
    for (size_t i = 1; i <= n; i++) {
        struct stat sb;
        if (path[i] != '/' && path[i] != '\0')
            continue;
        path[i] = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST) {
            int err = errno;
            popc_status st = popc_set_error(
                POPC_EIO, "%s: cannot create the directory '%s': %s", what,
                path, strerror(err));
            free(path);
            return st;
        }
        if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            popc_status st = popc_set_error(
                POPC_EIO, "%s: cannot create the directory '%s': %s", what,
                dir, i < n ? "a parent is not a directory"
                           : "a file of that name exists");
            free(path);
            return st;
        }
        path[i] = i < n ? '/' : '\0';
    }
    free(path);
    return POPC_OK;
}
