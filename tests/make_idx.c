/* make_idx.c - write the synthetic IDX dataset of synth.h for the shell
** tests: make_idx DIR N_TRAIN N_TEST [SEED].
*/
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/synth.h"

int main(int argc, char **argv)
{
    int n_train, n_test;

    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: make_idx DIR N_TRAIN N_TEST [SEED]\n");
        return 2;
    }
    n_train = atoi(argv[2]);
    n_test = atoi(argv[3]);
    if (n_train < 1 || n_test < 1) {
        fprintf(stderr, "make_idx: sample counts must be >= 1\n");
        return 2;
    }
    if (synth_write(argv[1], n_train, n_test,
                    argc == 5 ? (unsigned)atoi(argv[4]) : 1u) != 0) {
        fprintf(stderr, "make_idx: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    return 0;
}
