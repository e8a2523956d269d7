/* make_profile.c - writes an enableProfiling directory for
** tests/test_profile_html.sh: the MLP of profile_model.h trained on the
** ipumodel backend, fc2 and the loss on a second IPU (a pipeline), two
** replicas, deviceIterations 2, gradientAccumulation 4, three runs.
**
**   make_profile DIR [training|inference [BACKEND]]
*/
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "popc/popc.h"
#include "tests/profile_model.h"

#define B 16

static int check(popc_status st, const char *what)
{
    if (st != POPC_OK)
        fprintf(stderr, "make_profile: %s: %s\n", what, popc_last_error());
    return st == POPC_OK;
}

int main(int argc, char **argv)
{
    int training = !(argc > 2 && strcmp(argv[2], "inference") == 0);
    const char *backend = argc > 3 ? argv[3] : "ipumodel";
    int64_t di = 2, ga = training ? 4 : 1, r = 2;
    popc_options *o = NULL;
    popc_graph *g = NULL;
    popc_model *m = NULL;
    popc_tensor *in[2] = {NULL, NULL}, *out = NULL;
    int n_in = 0, ok;

    if (argc < 2) {
        fprintf(stderr, "usage: make_profile DIR [training|inference "
                "[BACKEND]]\n");
        return 2;
    }
    ok = check(popc_options_new(&o), "options") &&
         check(popc_options_set(o, "backend", backend), "backend") &&
         check(popc_options_set(o, "enableProfiling", argv[1]), "profile") &&
         check(popc_options_set_int(o, "deviceIterations", di), "DI") &&
         check(popc_options_set_int(o, "replicationFactor", r), "R") &&
         (strcmp(backend, "ipumodel") != 0 ||
          check(popc_options_set(o, "logCycleCount", "true"), "cycles")) &&
         (!training ||
          check(popc_options_set_int(o, "Training.gradientAccumulation", ga),
                "GA"));
    if (ok && !(g = profile_mlp(B, 256, 1, training)))
        ok = check(POPC_EINVAL, "graph");
    if (ok)
        ok = training ? check(popc_model_new_training(g, o, NULL, &m),
                              "model")
                      : check(popc_model_new_inference(g, o, &m), "model");
    if (ok && !(n_in = profile_inputs(B * di * ga * r, training, in)))
        ok = check(POPC_ENOMEM, "inputs");
    for (int run = 0; ok && run < 3; run++) {
        ok = check(popc_model_run(m, in, n_in, &out, 1), "run");
        popc_tensor_free(out);
        out = NULL;
    }
    popc_tensor_free(in[0]);
    popc_tensor_free(in[1]);
    popc_model_free(m);
    popc_graph_free(g);
    popc_options_free(o);
    return ok ? 0 : 1;
}
