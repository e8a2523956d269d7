/* atomic_file.c - see atomic_file_priv.h. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_file_priv.h"

popc_status popci_write_atomic(const char *path,
                               popc_status (*fill)(FILE *f, void *arg),
                               void *arg)
{
    size_t n = strlen(path) + sizeof ".tmp.XXXXXX";
    char *tmp = malloc(n);
    FILE *f = NULL;
    int fd;
    popc_status st;

    if (!tmp)
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
    snprintf(tmp, n, "%s.tmp.XXXXXX", path);
    if ((fd = mkstemp(tmp)) < 0) {
        st = popc_set_error(POPC_EIO, "%s: cannot create a temporary file "
                            "next to it: %s", path, strerror(errno));
        free(tmp);
        return st;
    }
    /* mkstemp makes the file 0600; what popc writes is ordinary data. */
    if (fchmod(fd, 0644) != 0 || !(f = fdopen(fd, "wb"))) {
        st = popc_set_error(POPC_EIO, "%s: %s", tmp, strerror(errno));
        close(fd);
        goto fail;
    }
    if ((st = fill(f, arg)) != POPC_OK)
        goto fail;
    if (ferror(f) || fflush(f) != 0 || fsync(fileno(f)) != 0) {
        st = popc_set_error(POPC_EIO, "%s: write failed: %s", path,
                            strerror(errno ? errno : EIO));
        goto fail;
    }
    if (fclose(f) != 0) {
        f = NULL;
        st = popc_set_error(POPC_EIO, "%s: write failed: %s", path,
                            strerror(errno));
        goto fail;
    }
    f = NULL;
    if (rename(tmp, path) != 0) {
        st = popc_set_error(POPC_EIO, "%s: cannot rename %s into place: %s",
                            path, tmp, strerror(errno));
        goto fail;
    }
    free(tmp);
    return POPC_OK;
fail:
    if (f)
        fclose(f);
    unlink(tmp);
    free(tmp);
    return st;
}

typedef struct bytes {
    const void *data;
    size_t len;
} bytes;

static popc_status write_bytes(FILE *f, void *arg)
{
    const bytes *b = arg;

    errno = 0;
    if (b->len && fwrite(b->data, 1, b->len, f) != b->len)
        return popc_set_error(POPC_EIO, "write failed: %s",
                              strerror(errno ? errno : ENOSPC));
    return POPC_OK;
}

popc_status popci_write_file_atomic(const char *path, const void *data,
                                    size_t len)
{
    bytes b = {data, len};

    return popci_write_atomic(path, write_bytes, &b);
}
