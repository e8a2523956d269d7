/* replay.c - run a harness over files without libFuzzer: every file named
** on the command line (directories: every file in them) goes through
** LLVMFuzzerTestOneInput once. `make check` replays the committed corpora
** and crash regressions this way, plain and under the sanitizers. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz/fuzz_util.h"

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n;

    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0 || !(buf = malloc((size_t)n + 1)) ||
        fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(buf);
        fclose(f);
        return 1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0, bad = 0;

    for (int i = 1; i < argc; i++) {
        struct stat sb;

        if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
            DIR *d = opendir(argv[i]);
            struct dirent *e;
            char path[4096];

            while (d && (e = readdir(d))) {
                if (e->d_name[0] == '.')
                    continue;
                snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
                bad += replay_file(path);
                files++;
            }
            if (d)
                closedir(d);
        } else {
            bad += replay_file(argv[i]);
            files++;
        }
    }
    printf("replayed %d inputs\n", files);
    return bad ? 1 : 0;
}
