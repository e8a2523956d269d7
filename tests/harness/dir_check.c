/* dir_check.c - see dir_check.h. */
#include "config.h"

#include <dirent.h>
#include <string.h>
#include <check.h>

#include "tests/harness/dir_check.h"

int dir_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    ck_assert_msg(d != NULL, "cannot open %s", dir);
    while ((e = readdir(d)))
        n += strstr(e->d_name, ".tmp-") != NULL ||
             strstr(e->d_name, ".old-") != NULL;
    closedir(d);
    return n;
}
