/* gen_graph_fixtures.c - writes tests/data/graph/attrs.popcgrf and
** cnn.popcgrf: popc_graph_serialize of the graphs tests/check_serialize.c
** builds (attrs_graph(), cnn()), which that test reads back as bytes an
** older build wrote. The committed files were written by popc 0.4.0 at
** commit efc1a45 of main (the serializer still in core/graph/), this
** program compiled against that build's libpopc:
**
**   cc -std=c11 -I$SRC/core/include -I$SRC/helpers/include -I$SRC \
**      -I$BUILD $(pkg-config --cflags check) tests/ref/gen_graph_fixtures.c \
**      -L$BUILD/.libs -lpopc $(pkg-config --libs check)
**   POPC_PLUGIN_PATH=$BUILD/ops ./a.out tests/data/graph
*/
#include <stdio.h>
#include <stdlib.h>

#include "popc/status.h"

#define OK(call)                                                          \
    do {                                                                  \
        if ((call) != POPC_OK) {                                          \
            fprintf(stderr, "gen_graph_fixtures: %s\n", popc_last_error()); \
            exit(EXIT_FAILURE);                                           \
        }                                                                 \
    } while (0)
#define POPC_SERIALIZE_NO_MAIN
#include "tests/check_serialize.c"

/* Serialize both graphs into DIR. */
static int write_fixtures(const char *dir)
{
    popc_graph *gs[2] = {attrs_graph(), cnn()};
    static const char *const names[] = {"attrs.popcgrf", "cnn.popcgrf"};

    for (int k = 0; k < 2; k++) {
        char path[4096];
        void *data = NULL;
        size_t size;
        FILE *f;

        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        if (popc_graph_serialize(gs[k], &data, &size) != POPC_OK ||
            !(f = fopen(path, "wb"))) {
            fprintf(stderr, "%s: %s\n", path, popc_last_error());
            return EXIT_FAILURE;
        }
        fwrite(data, 1, size, f);
        fclose(f);
        free(data);
        popc_graph_free(gs[k]);
    }
    return EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_graph_fixtures DIR\n");
        return 2;
    }
    (void)serialize_suite; /* the tests are check_serialize's */
    return write_fixtures(argv[1]);
}
