/* fuzz_model.c - see fuzz_model.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz/fuzz_model.h"
#include "popc/run.h"

static const char run_ini[] =
    "[options]\nbackend = cpu\n"
    "[model]\ninput = 8\nclasses = 3\nlayers = fc1, relu, fc2\n"
    "[layer fc1]\ntype = linear\nout_features = 4\n"
    "[layer fc2]\ntype = linear\nout_features = 3\n"
    "[optimizer]\nname = adam\nlr = 0.001\n"
    "[data]\nbatch_size = 2\n";

static popc_model *model;

static void free_model(void)
{
    popc_model_free(model);
    model = NULL;
}

static popc_status build(const char *ini, popc_model **out)
{
    popc_run *r = NULL;
    popc_graph *g = NULL;
    popc_status st;

    if ((st = popc_run_load(ini, NULL, 0, &r)) == POPC_OK &&
        (st = popc_run_build_graph(r, 1, popc_run_batch_size(r), &g)) ==
            POPC_OK &&
        (st = popc_model_new_training(g, popc_run_options(r),
                                      popc_run_optimizer(r), out)) == POPC_OK &&
        popc_model_n_optimizer_states(*out) == 0)
        st = popc_set_error(POPC_ESTATE, "the model has no optimizer state");
    popc_graph_free(g);
    popc_run_free(r);
    return st;
}

popc_model *fuzz_training_model(void)
{
    char path[] = "/tmp/popc-fuzz-model-XXXXXX.ini";
    FILE *f;
    int fd;

    if (model)
        return model;
    if ((fd = mkstemps(path, 4)) < 0)
        return NULL;
    if ((f = fdopen(fd, "w"))) {
        fputs(run_ini, f);
        fclose(f);
        if (build(path, &model) != POPC_OK) {
            fprintf(stderr, "fuzz model: %s\n", popc_last_error());
            popc_model_free(model);
            model = NULL;
        }
    } else {
        close(fd);
    }
    unlink(path);
    if (model)
        atexit(free_model);
    return model;
}
