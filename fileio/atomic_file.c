/* atomic_file.c - see fileio/atomic_file.h and popc/file.h. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "popc/file.h"
#include "popc/log.h"
#include "core/layer/alloc.h"
#include "fileio/write_fault.h"
#include "fileio/atomic_file.h"

/* ---- stale temporaries -------------------------------------------------- */

static int remove_entry(const char *path, const struct stat *sb, int flag,
                        struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void popci_remove_tree(const char *path)
{
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The pid in "<base>.tmp-<pid>" or "<base>.old-<pid>", optionally followed
** by ".<anything>", or 0 when name is not such a temporary of base. */
static long temp_owner(const char *name, const char *base, size_t base_len)
{
    const char *p;
    char *end;
    long pid;

    if (strncmp(name, base, base_len) != 0)
        return 0;
    p = name + base_len;
    if (strncmp(p, ".tmp-", 5) != 0 && strncmp(p, ".old-", 5) != 0)
        return 0;
    p += 5;
    if (*p < '1' || *p > '9')
        return 0;
    errno = 0;
    pid = strtol(p, &end, 10);
    if (errno || pid <= 0 || (*end && *end != '.'))
        return 0;
    return pid;
}

static int process_is_gone(long pid)
{
    return (pid_t)pid != getpid() && kill((pid_t)pid, 0) != 0 &&
           errno == ESRCH;
}

void popci_remove_stale_temps(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dir_len = slash ? (size_t)(slash - path) : 0;
    size_t base_len = strlen(base);
    char *dir, *victim;
    DIR *d;
    struct dirent *e;

    if (!base_len || !(dir = popci_malloc(dir_len + 2)))
        return;
    if (slash) {
        memcpy(dir, path, dir_len ? dir_len : 1);
        dir[dir_len ? dir_len : 1] = '\0';
    } else
        strcpy(dir, ".");
    if (!(d = opendir(dir))) {
        free(dir);
        return;
    }
    while ((e = readdir(d))) {
        long pid = temp_owner(e->d_name, base, base_len);

        if (!pid || !process_is_gone(pid))
            continue;
        victim = popci_malloc(strlen(dir) + strlen(e->d_name) + 2);
        if (!victim)
            break;
        sprintf(victim, "%s/%s", dir, e->d_name);
        popci_remove_tree(victim);
        free(victim);
    }
    closedir(d);
    free(dir);
}

/* ---- writing ------------------------------------------------------------ */

/* With a write fault armed (popc/fault.h), the temporary file is written
** through this stream, which fills the file up to the limit and then
** fails the way a full disk does. */
typedef struct faulty_file {
    int fd;
    long long written;
} faulty_file;

static ssize_t faulty_write(void *cookie, const char *buf, size_t n)
{
    faulty_file *ff = cookie;
    int err = 0;
    long long room = popci_write_room(ff->written, &err);
    ssize_t done;

    /* the bytes that still fit go out first, as on a real disk */
    if (room <= 0) {
        errno = err;
        return 0;
    }
    if ((long long)n > room) {
        n = (size_t)room;
        errno = err; /* stdio takes a short write for an error */
    }
    if ((done = write(ff->fd, buf, n)) > 0)
        ff->written += done;
    return done < 0 ? 0 : done;
}

static int faulty_close(void *cookie)
{
    free(cookie);
    return 0;
}

/* The stream the data goes through; NULL with errno set. */
static FILE *open_stream(int fd)
{
    cookie_io_functions_t io = {.write = faulty_write, .close = faulty_close};
    faulty_file *ff;
    FILE *f;

    int err;

    if (popci_write_room(0, &err) == LLONG_MAX && !popci_sync_fault())
        return fdopen(fd, "wb");
    if (!(ff = popci_calloc(1, sizeof *ff))) {
        errno = ENOMEM;
        return NULL;
    }
    ff->fd = fd;
    if (!(f = fopencookie(ff, "wb", io)))
        free(ff);
    return f;
}

/* The rename is durable only once the directory holding the entry is
** synced too. Some file systems refuse fsync on a directory (EINVAL);
** there nothing more can be done. */
static int sync_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    size_t len = !slash ? 0 : slash == path ? 1 : (size_t)(slash - path);
    int fd, rc, err;

    if (len >= sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (len)
        memcpy(dir, path, len);
    else
        dir[len++] = '.';
    dir[len] = '\0';
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return -1;
    rc = popci_fsync(fd);
    err = errno;
    close(fd);
    if (rc != 0 && err == EINVAL)
        return 0;
    errno = err;
    return rc;
}

popc_status popci_write_atomic(const char *path,
                               popc_status (*fill)(FILE *f, void *arg),
                               void *arg)
{
    size_t n = strlen(path) + 48;
    char *tmp = popci_malloc(n);
    FILE *f = NULL;
    int fd, cookie = 0, rc;
    popc_status st;

    if (!tmp)
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
    popci_remove_stale_temps(path);
    snprintf(tmp, n, "%s.tmp-%ld.XXXXXX", path, (long)getpid());
    if ((fd = mkstemp(tmp)) < 0) {
        st = popc_set_error(POPC_EIO, "%s: cannot create a temporary file "
                            "next to it: %s", path, strerror(errno));
        free(tmp);
        return st;
    }
    /* mkstemp makes the file 0600; what popc writes is ordinary data. */
    if (fchmod(fd, 0644) != 0 || !(f = open_stream(fd))) {
        st = popc_set_error(POPC_EIO, "%s: %s", tmp, strerror(errno));
        close(fd);
        goto fail;
    }
    cookie = fileno(f) < 0;
    if ((st = fill(f, arg)) != POPC_OK) {
        if (!strstr(popc_last_error(), path))
            st = popc_set_error(st, "%s: %s", path, popc_last_error());
        goto fail;
    }
    errno = 0;
    if (ferror(f) || fflush(f) != 0 || popci_fsync(fd) != 0) {
        st = popc_set_error(POPC_EIO, "%s: write failed: %s", path,
                            strerror(errno ? errno : EIO));
        goto fail;
    }
    rc = fclose(f);
    f = NULL;
    if (cookie)
        rc |= close(fd);
    if (rc != 0) {
        st = popc_set_error(POPC_EIO, "%s: write failed: %s", path,
                            strerror(errno));
        goto fail_closed;
    }
    if (rename(tmp, path) != 0) {
        st = popc_set_error(POPC_EIO, "%s: cannot rename %s into place: %s",
                            path, tmp, strerror(errno));
        goto fail;
    }
    free(tmp);
    /* The file is whole and in place, so this is no failure of the write
    ** (which promises an untouched path on failure): only a crash could
    ** still lose the rename. */
    if (sync_parent_dir(path) != 0)
        popc_log(POPC_LOG_WARN, "%s: written, but syncing its directory "
                 "failed (%s): a crash may still lose the new file", path,
                 strerror(errno));
    return POPC_OK;
fail:
    if (f) {
        fclose(f);
        if (cookie)
            close(fd);
    }
fail_closed:
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

popc_status popc_write_file_atomic(const char *path, const void *data,
                                   size_t len)
{
    if (!path || !*path || (!data && len))
        return popc_set_error(POPC_EINVAL, "popc_write_file_atomic: %s",
                              !path || !*path ? "no path given"
                                              : "data is NULL");
    return popci_write_file_atomic(path, data, len);
}
