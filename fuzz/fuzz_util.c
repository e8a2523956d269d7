/* fuzz_util.c - see fuzz_util.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/mman.h>
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
