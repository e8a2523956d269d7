/* options_validate.c - popc_options_validate (popc/options.h): the
** checks across options PopTorch makes when a model is compiled, with its
** texts, for a program that wants them before it builds a model. The
** core never calls it (a compile makes its own checks,
** core/runtime/model.c and model_config.c); it reads the options through
** the public getters only.
*/
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "popc/log.h"
#include "popc/options.h"

popc_status popc_options_validate(const popc_options *o, int training)
{
    int64_t r, g, di, ga, period, mode, pid, np;
    const char *backend;

    if (!o)
        return popc_set_error(POPC_EINVAL, "popc_options_validate: NULL "
                              "options");
    r = popc_options_get_int(o, "replicationFactor");
    g = popc_options_get_int(o, "inputReplicaGrouping.size");
    di = popc_options_get_int(o, "deviceIterations");
    ga = popc_options_get_int(o, "Training.gradientAccumulation");
    period = popc_options_get_int(o, "outputReturnPeriod");
    mode = popc_options_get_int(o, "outputMode");
    pid = popc_options_get_int(o, "Distributed.processId");
    np = popc_options_get_int(o, "Distributed.numProcesses");
    backend = popc_options_get_string(o, "backend");

    if (!training && ga != 1)
        return popc_set_error(
            POPC_EINVAL,
            "You must set poptorch.Options().Training.gradientAccumulation "
            "to 1 or leave it as its default value (1) when running a "
            "poptorch.inferenceModel().%s",
            popc_options_get_int(o, "setExecutionStrategy") ==
                    POPC_EXEC_PIPELINED
                ? " Use poptorch.Options().deviceIterations to process a "
                  "sufficient number of batches each run for pipelined "
                  "execution instead."
                : "");
    if (g > r)
        return popc_set_error(POPC_EINVAL, "inputReplicaGrouping.size: "
                              "input_group_size cannot be larger than "
                              "replication_factor (%lld > replicationFactor "
                              "%lld)", (long long)g, (long long)r);
    if (r % g != 0)
        return popc_set_error(POPC_EINVAL, "inputReplicaGrouping.size: "
                              "input_group_size must be a factor of "
                              "replication_factor (%lld does not divide "
                              "replicationFactor %lld)", (long long)g,
                              (long long)r);
    if (pid >= np)
        return popc_set_error(POPC_EINVAL, "Distributed.processId (%lld) must "
                              "be less than Distributed.numProcesses (%lld)",
                              (long long)pid, (long long)np);
    if (mode == POPC_OUTPUT_EVERYN) {
        if (period > di)
            return popc_set_error(POPC_EINVAL, "outputReturnPeriod: Return "
                                  "period must be <= to the number of "
                                  "batches per step (outputReturnPeriod "
                                  "%lld, deviceIterations %lld)",
                                  (long long)period, (long long)di);
        if (di % period != 0)
            return popc_set_error(POPC_EINVAL, "outputReturnPeriod: Return "
                                  "period must be a factor of the number of "
                                  "batches per step (outputReturnPeriod "
                                  "%lld, deviceIterations %lld)",
                                  (long long)period, (long long)di);
    } else if (period != 1) {
        popc_log(POPC_LOG_INFO, "Anchor return period argument ignored with "
                 "output_mode set to %s",
                 mode == POPC_OUTPUT_FINAL ? "Final"
                 : mode == POPC_OUTPUT_ALL ? "All"
                 : mode == POPC_OUTPUT_SUM ? "Sum" : "Default");
    }
    if (popc_options_get_int(o, "connectionType") == POPC_CONNECTION_NEVER &&
        popc_options_get_int(o, "useIpuModel"))
        return popc_set_error(POPC_EINVAL, "ConnectionType.Never / "
                              "poptorch.Options.useOfflineIpuTarget not "
                              "supported for the IPU model (useIpuModel is "
                              "true)");
    if (popc_options_get_int(o, "logCycleCount") &&
        (popc_options_get_int(o, "connectionType") == POPC_CONNECTION_NEVER ||
         (backend && strcmp(backend, "offline") == 0)))
        return popc_set_error(POPC_EINVAL, "logCycleCount: Cycle count "
                              "logging is only supported on actual IPU "
                              "hardware. (popc: on a backend that runs, such "
                              "as ipumodel; this model only compiles)");
    return POPC_OK;
}
