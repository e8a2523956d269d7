/* fuzz_util.c - see fuzz_util.h. */
#define _GNU_SOURCE
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz/fuzz_util.h"

static int fd = -1;
static char path[64];

const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix)
{
    size_t done = 0;

    (void)suffix;
    fuzz_file_close();
    if ((fd = memfd_create("popc-fuzz", MFD_CLOEXEC)) < 0)
        return NULL;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);

        if (n <= 0)
            return NULL;
        done += (size_t)n;
    }
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return path;
}

void fuzz_file_close(void)
{
    if (fd >= 0)
        close(fd);
    fd = -1;
}

/* ---- folders ------------------------------------------------------------ */

static char folder[256];

static int remove_entry(const char *p, const struct stat *sb, int flag,
                        struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    return ftw->level > 0 ? remove(p) : 0;
}

static void remove_folder(void)
{
    nftw(folder, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    rmdir(folder);
}

static int write_part(const char *dir, const char *name, const uint8_t *data,
                      size_t size)
{
    char p[512];
    FILE *f;
    size_t ok;

    snprintf(p, sizeof p, "%s/%s", dir, name);
    for (char *s = strchr(p + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(p, 0700);
        *s = '/';
    }
    if (!(f = fopen(p, "wb")))
        return -1;
    ok = size ? fwrite(data, 1, size, f) : 0;
    return fclose(f) == 0 && ok == size ? 0 : -1;
}

const char *fuzz_folder(const uint8_t *data, size_t size,
                        const char *const *names, int n_names)
{
    const char *sep = FUZZ_FOLDER_SEP;
    size_t sep_len = strlen(sep), at = 0;

    if (!folder[0]) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                           : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

        snprintf(folder, sizeof folder, "%s/popc-fuzz-XXXXXX", base);
        if (!mkdtemp(folder)) {
            folder[0] = '\0';
            return NULL;
        }
        atexit(remove_folder);
    }
    nftw(folder, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    for (int i = 0; i < n_names && at <= size; i++) {
        const uint8_t *end = memmem(data + at, size - at, sep, sep_len);
        size_t len = end ? (size_t)(end - (data + at)) : size - at;

        if (write_part(folder, names[i], data + at, len) != 0)
            return NULL;
        if (!end)
            break;
        at += len + sep_len;
    }
    return folder;
}
