/* layer/options_list.h - every option, in the order of the option table
** (core/options/options_table.c): the one list both the table and the option ids
** (popci_opt_id, core/layer/options.h) are made from.
**
** Each entry is OPTION(ID, initializer): ID is the option's name with '.'
** as '_' (POPCI_O_ID), the initializer its popci_optdef. Include it with
** OPTION defined; the identifiers an initializer uses (hooks, enum member
** arrays, C, N, P, MAX32, BOOLV) need to exist only where the
** initializers are used. Table order is also the order in which an INI
** [options] section is applied, so options that others depend on come
** first (replicationFactor before inputReplicaGrouping.size) and explicit
** settings come after the shortcuts that imply them (useOfflineIpuTarget
** before connectionType, ipuVersion and backend).
*/
#ifndef OPTION
#error "define OPTION(ID, ...) before including core/layer/options_list.h"
#endif

/* The six TensorLocationSettings of one tensor class, flattened; their
** effect is strategy/locations.c's. */
#define LOCATION(CLS, what)                                                 \
    OPTION(TensorLocations_set##CLS##Location_useOnChipStorage,             \
    {.info = {"TensorLocations.set" #CLS "Location.useOnChipStorage",       \
              POPC_OPT_BOOL, "None",                                        \
              "Keep " what " on chip (None: backend default)",              \
              BOOLV " | None", 1},                                          \
     .flags = C | N, .call_default = "true",                                \
     .param = "use"})                                                       \
    OPTION(TensorLocations_set##CLS##Location_useReplicatedTensorSharding,  \
    {.info = {"TensorLocations.set" #CLS "Location.useReplicatedTensorSharding",\
              POPC_OPT_BOOL, "None", "Shard " what " across replicas",      \
              BOOLV " | None", 1},                                          \
     .flags = C | N, .call_default = "true",                                \
     .param = "use"})                                                       \
    OPTION(TensorLocations_set##CLS##Location_useIOTilesToLoad,             \
    {.info = {"TensorLocations.set" #CLS "Location.useIOTilesToLoad",       \
              POPC_OPT_BOOL, "None", "Load " what " through IO tiles",      \
              BOOLV " | None", 1},                                          \
     .flags = C | N, .call_default = "true",                                \
     .param = "use"})                                                       \
    OPTION(TensorLocations_set##CLS##Location_useIOTilesToStore,            \
    {.info = {"TensorLocations.set" #CLS "Location.useIOTilesToStore",      \
              POPC_OPT_BOOL, "None", "Store " what " on IO tiles",          \
              BOOLV " | None", 1},                                          \
     .flags = C | N, .call_default = "true",                                \
     .param = "use"})                                                       \
    OPTION(TensorLocations_set##CLS##Location_minElementsForOffChip,        \
    {.info = {"TensorLocations.set" #CLS "Location.minElementsForOffChip",  \
              POPC_OPT_INT, "None",                                         \
              "Smallest " what " considered for off-chip storage (None: "   \
              "2)",                                                         \
              ">= 0 | None", 1},                                            \
     .flags = C | N, .min = 0, .max = INT64_MAX,                            \
     .param = "min_elements"})                                              \
    OPTION(TensorLocations_set##CLS##Location_minElementsForReplicatedTensorSharding,\
    {.info = {"TensorLocations.set" #CLS "Location.minElementsForReplicatedTensorSharding",\
              POPC_OPT_INT, "None",                                         \
              "Smallest " what " considered for replicated tensor sharding "\
              "(None: 8192)",                                               \
              ">= 0 | None", 1},                                            \
     .flags = C | N, .min = 0, .max = INT64_MAX,                            \
     .param = "min_elements"})

    /* ---- Options ---- */
OPTION(deviceIterations,
    {.info = {"deviceIterations", POPC_OPT_INT, "1",
              "Batches the device processes per run (loop on the device)",
              ">= 1", 1},
     .flags = C, .min = 1, .max = MAX32,
     .param = "device_iterations"})
OPTION(replicationFactor,
    {.info = {"replicationFactor", POPC_OPT_INT, "1",
              "Number of replicas of the model (each on its own IPUs)",
              ">= 1", 1},
     .flags = C, .min = 1, .max = MAX32,
     .param = "replication_factor"})
OPTION(inputReplicaGrouping_size,
    {.info = {"inputReplicaGrouping.size", POPC_OPT_INT, "1",
              "Replicas per input group (replicas of a group get the same "
              "data); a factor of replicationFactor", ">= 1", 1},
     .flags = C, .min = 1, .max = MAX32, .hook = hook_group_size})
OPTION(inputReplicaGrouping_type,
    {.info = {"inputReplicaGrouping.type", POPC_OPT_ENUM, "Consecutive",
              "Arrangement of replicas in input groups",
              "Consecutive | Orthogonal | NoGrouping", 1},
     .flags = C, .enum_type = "CommGroupType", .members = comm_groups,
     .hook = hook_group_type})
OPTION(broadcastBuffers,
    {.info = {"broadcastBuffers", POPC_OPT_BOOL, "true",
              "Broadcast buffers to all replicas", BOOLV, 1},
     .flags = C, .call_default = "true",
     .param = "broadcast_buffers"})
OPTION(outputMode,
    {.info = {"outputMode", POPC_OPT_ENUM, "Default",
              "Which outputs a run returns (Default: All for inference, "
              "Final for training)", "Final | EveryN | All | Sum | Default",
              1},
     .flags = C, .enum_type = "OutputMode", .members = output_modes})
OPTION(outputReturnPeriod,
    {.info = {"outputReturnPeriod", POPC_OPT_INT, "1",
              "N of OutputMode.EveryN: return every N-th batch; must divide "
              "deviceIterations", ">= 1", 1},
     .flags = C, .min = 1, .max = MAX32,
     .bad_value = "EveryN anchor must have output_return_period set to valid "
                  "positive integer"})
OPTION(randomSeed,
    {.info = {"randomSeed", POPC_OPT_INT, "None",
              "Seed of the device's random number generator", "integer", 1},
     .flags = N, .min = INT64_MIN, .max = INT64_MAX,
     .param = "random_seed"})
OPTION(useIpuModel,
    {.info = {"useIpuModel", POPC_OPT_BOOL, "false",
              "Use the IPU model (sets backend = ipumodel; popc has no IPU "
              "hardware, so false keeps the backend option)", BOOLV, 1},
     .flags = C, .hook = hook_use_ipu_model,
     .param = "use_model"})
OPTION(useOfflineIpuTarget,
    {.info = {"useOfflineIpuTarget", POPC_OPT_INT, "None",
              "Compile only, for this IPU version (sets connectionType = "
              "Never, ipuVersion, backend = offline)", "1 | 2 | 21 | None",
              1},
     .flags = C | N, .min = INT64_MIN, .max = INT64_MAX,
     .call_default = "2", .hook = hook_offline,
     .param = "ipu_version"})
OPTION(connectionType,
    {.info = {"connectionType", POPC_OPT_ENUM, "Always",
              "When to attach to the device (Never: compile only)",
              "Always | OnDemand | Never", 1},
     .enum_type = "ConnectionType", .members = connection_types,
     .param = "connection_type"})
OPTION(ipuVersion,
    {.info = {"ipuVersion", POPC_OPT_INT, "2",
              "popc: IPU version of the device (1: Mk1, 2: Mk2, 21: Mk2 "
              "with FP8); also set by useOfflineIpuTarget", "1 | 2 | 21", 1},
     .flags = C | P, .min = INT64_MIN, .max = INT64_MAX,
     .hook = hook_ipu_version})
OPTION(useIpuId,
    {.info = {"useIpuId", POPC_OPT_INT, "None",
              "Use the IPU device with this id: on ipumodel and offline, "
              "the device list of a POD16 as gc-info numbers it (0-15 one "
              "IPU, 16-23 two, 24-27 four, 28-29 eight, 30 sixteen)",
              ">= 0 | None", 1},
     .flags = C | N, .min = 0, .max = MAX32,
     .param = "ipu_id"})
OPTION(syncPattern,
    {.info = {"syncPattern", POPC_OPT_ENUM, "Full",
              "Synchronisation between IPUs and with the host: with Full, "
              "every IPU waits for every host transfer (ipumodel cycle "
              "estimates)",
              "Full | SinglePipeline | ReplicaAndLadder", 1},
     .flags = C, .enum_type = "SyncPattern", .members = sync_patterns,
     .param = "sync_pattern"})
OPTION(autoRoundNumIPUs,
    {.info = {"autoRoundNumIPUs", POPC_OPT_BOOL, "false",
              "Round the number of IPUs up to a power of 2 instead of "
              "failing", BOOLV, 1},
     .flags = C, .call_default = "true",
     .param = "auto_round_num_ipus"})
OPTION(setExecutionStrategy,
    {.info = {"setExecutionStrategy", POPC_OPT_ENUM, "PipelinedExecution",
              "How stages are run: pipelined, sharded or phased (stages and "
              "phases come from the graph's annotations)",
              "PipelinedExecution | ShardedExecution | SerialPhasedExecution "
              "| ParallelPhasedExecution", 1},
     .flags = C, .members = strategies})
OPTION(setExecutionStrategy_autoStage,
    {.info = {"setExecutionStrategy.autoStage", POPC_OPT_ENUM, "SameAsIpu",
              "How blocks get stage ids when the graph gives none",
              "SameAsIpu | AutoIncrement", 1},
     .flags = C, .enum_type = "AutoStage", .members = auto_stages})
OPTION(setExecutionStrategy_tensorsLiveness,
    {.info = {"setExecutionStrategy.tensorsLiveness", POPC_OPT_ENUM,
              "AlwaysLive", "Phased execution: when tensors leave the chip",
              "AlwaysLive | OffChipAfterFwd | OffChipAfterFwdNoOverlap | "
              "OffChipAfterEachPhase", 1},
     .flags = C, .enum_type = "Liveness", .members = livenesses})
OPTION(setExecutionStrategy_useSeparateBackwardPhase,
    {.info = {"setExecutionStrategy.useSeparateBackwardPhase", POPC_OPT_BOOL,
              "false", "Phased execution: no phase shared by forward and "
              "backward", BOOLV, 1},
     .flags = C, .call_default = "true"})
OPTION(setAvailableMemoryProportion,
    {.info = {"setAvailableMemoryProportion", POPC_OPT_STRING, "None",
              "Temporary memory proportion per IPU (IPU0=0.5,IPU1=0.3)",
              "IPUn=0..1,... | None", 1},
     .flags = C | N, .hook = hook_amp})
OPTION(logCycleCount,
    {.info = {"logCycleCount", POPC_OPT_BOOL, "false",
              "Log the device cycles of each run (IPU model estimates)",
              BOOLV, 1},
     .flags = C,
     .param = "log_cycle_count"})
OPTION(enableProfiling,
    {.info = {"enableProfiling", POPC_OPT_STRING, "None",
              "Write a profile report to this directory", "path | None", 1},
     .flags = N, .call_default = ".", .hook = hook_nonempty,
     .param = "profile_dir"})
OPTION(enableExecutableCaching,
    {.info = {"enableExecutableCaching", POPC_OPT_STRING, "None",
              "Cache compiled executables in this directory (env "
              "POPC_CACHE_DIR)", "path | None", 1},
     .flags = N, .hook = hook_nonempty,
     .param = "path"})
OPTION(showCompilationProgressBar,
    {.info = {"showCompilationProgressBar", POPC_OPT_BOOL, "true",
              "Show a progress bar while compiling", BOOLV, 1},
     .call_default = "true",
     .param = "show"})
OPTION(maxRepeatLogs,
    {.info = {"maxRepeatLogs", POPC_OPT_INT, "4",
              "Repeated log lines shown before they are summarised (None: "
              "all). Process-wide, as the log is: applied when a model "
              "uses the options, the last such model's value holds",
              ">= 0 | None",
              1},
     .flags = N, .min = 0, .max = MAX32,
     .param = "max_lines"})
OPTION(logDir,
    {.info = {"logDir", POPC_OPT_STRING, ".",
              "Directory of the model's log file, NAME.log (NAME: "
              "modelName); written only when this option is set", "path",
              1},
     .hook = hook_nonempty,
     .param = "log_dir"})
OPTION(modelName,
    {.info = {"modelName", POPC_OPT_STRING, "None",
              "Model name for reports (None: inference or training)",
              "text | None", 1},
     .flags = N, .hook = hook_nonempty,
     .param = "name"})
OPTION(anchorTensor,
    {.info = {"anchorTensor", POPC_OPT_STRING, "None",
              "Graph values returned after each run by a short name "
              "(popc_model_get_anchored_tensor); MODE: Final, All, Sum or "
              "EveryN:N, else the output mode",
              "SHORT=LONG[@MODE],... | None", 1},
     .flags = C | N, .hook = hook_anchor})
OPTION(disableModuleNamescope,
    {.info = {"disableModuleNamescope", POPC_OPT_BOOL, "false",
              "Do not prefix op names with the module's name scope (the "
              "model's copy of the graph; names stay unique)", BOOLV, 1},
     .flags = C, .call_default = "true"})
OPTION(enableStableNorm,
    {.info = {"enableStableNorm", POPC_OPT_BOOL, "false",
              "Norms take the variance about the mean in a second pass "
              "(slower, more accurate) instead of one pass of sums of "
              "squares", BOOLV, 1},
     .flags = C, .param = "enabled"})
OPTION(optimizationLevel,
    {.info = {"optimizationLevel", POPC_OPT_INT, "2",
              "popc: graph optimization at compile (opt/), as ONNX "
              "Runtime's levels: 0 none; 1 basic (constant folding, "
              "BatchNorm folded into Conv and Gemm, transposes and "
              "reshapes that cancel); 2 extended (also Conv, Gemm and "
              "MatMul fused with bias, residual Add and activation, "
              "LayerNorm, GELU and attention as one op, blocked NCHWc "
              "layouts for convolutions; fusions and layouts apply to "
              "inference models); 3 is not supported yet",
              "0 | 1 | 2", 1},
     .flags = C | P, .min = 0, .max = 3, .hook = hook_opt_level,
     .param = "level"})
OPTION(kernelSelection,
    {.info = {"kernelSelection", POPC_OPT_ENUM, "score",
              "popc: how each node's kernel is chosen at compile "
              "(docs/kernels.md): score, the op's own forward or the "
              "registered kernel that supports the node with the best "
              "score; reference, the op's own forward everywhere (the "
              "oracle)", "score | reference", 1},
     .flags = C | P, .enum_type = "KernelSelection",
     .members = kernel_selections})
OPTION(enableSyntheticData,
    {.info = {"enableSyntheticData", POPC_OPT_BOOL, "false",
              "No host I/O: inputs are generated on the device "
              "(syntheticDataMode), outputs stay zero; for benchmarking",
              BOOLV, 1},
     .flags = C, .param = "enabled"})
OPTION(syntheticDataMode,
    {.info = {"syntheticDataMode", POPC_OPT_ENUM, "RandomNormal",
              "popc: values of generated floating-point inputs under "
              "enableSyntheticData (integer inputs are zeros)",
              "RandomNormal | RandomUniform | Zeros", 1},
     .flags = C | P, .enum_type = "SyntheticDataMode",
     .members = synthetic_modes})
OPTION(relaxOptimizerAttributesChecks,
    {.info = {"relaxOptimizerAttributesChecks", POPC_OPT_BOOL, "false",
              "A run file's [optimizer] key the optimizer does not know is "
              "ignored (logged at DEBUG) instead of refused", BOOLV, 1},
     .call_default = "true",
     .param = "relax"})
OPTION(sourceLocationExcludes,
    {.info = {"sourceLocationExcludes", POPC_OPT_STRING, "None",
              "Call-stack frames whose object path or symbol contains one "
              "of these (comma-separated) are skipped when locating where "
              "a node was added (profile.json's sources, "
              "popc_graph_node_source)",
              "text,... | None", 1},
     .flags = N, .param = "excludes"})
    /* ---- Options.Training ---- */
OPTION(Training_gradientAccumulation,
    {.info = {"Training.gradientAccumulation", POPC_OPT_INT, "1",
              "Micro-batches accumulated per optimizer step", ">= 1", 1},
     .flags = C, .min = 1, .max = MAX32,
     .param = "gradient_accumulation"})
OPTION(Training_accumulationAndReplicationReductionType,
    {.info = {"Training.accumulationAndReplicationReductionType",
              POPC_OPT_ENUM, "Mean",
              "Reduction of gradients over accumulation steps and replicas",
              "Mean | Sum", 1},
     .flags = C, .enum_type = "ReductionType", .members = reduction_types,
     .bad_value = "accumulationAndReplicationReductionType must be set to "
                  "poptorch.ReductionType.Mean or poptorch.ReductionType.Sum",
     .param = "reduction_type"})
OPTION(Training_meanAccumulationAndReplicationReductionStrategy,
    {.info = {"Training.meanAccumulationAndReplicationReductionStrategy",
              POPC_OPT_ENUM, "Post",
              "Where the mean reduction divides (PostAndLoss is mapped to "
              "Post)", "Running | Post", 1},
     .flags = C, .enum_type = "MeanReductionStrategy",
     .members = mean_strategies,
     .param = "mean_reduction_strategy"})
OPTION(Training_setAutomaticLossScaling,
    {.info = {"Training.setAutomaticLossScaling", POPC_OPT_BOOL, "false",
              "The device adjusts the loss scaling: a step with inf or NaN "
              "gradients is skipped and halves it, 2000 finite steps "
              "double it (popc_model_loss_scaling)", BOOLV, 1},
     .flags = C, .param = "enabled"})
OPTION(Training_setConvolutionDithering,
    {.info = {"Training.setConvolutionDithering", POPC_OPT_BOOL, "false",
              "Lay out convolutions with different parameters from "
              "different tiles (ipumodel, offline)", BOOLV, 1},
     .flags = C, .param = "enabled"})
    /* ---- Options.Precision ---- */
OPTION(Precision_setPartialsType,
    {.info = {"Precision.setPartialsType", POPC_OPT_ENUM, "float",
              "dtype of the partial sums of float16 MatMul, Gemm, Conv "
              "and reductions (torch.float or torch.half: rounded to "
              "float16 after every term)", "float | half", 1},
     .flags = C, .enum_type = "torch", .members = partials_types,
     .bad_value = "parameter to setPartialsType should be eithertorch.float "
                  "or torch.half",
     .param = "dtype"})
OPTION(Precision_enableFloatingPointExceptions,
    {.info = {"Precision.enableFloatingPointExceptions", POPC_OPT_BOOL,
              "false", "An overflow, invalid operation or division by zero "
              "in any op fails the run, naming the op", BOOLV, 1},
     .flags = C, .param = "enabled"})
OPTION(Precision_enableStochasticRounding,
    {.info = {"Precision.enableStochasticRounding", POPC_OPT_BOOL, "false",
              "Round float16 results (and half weight updates) up or down "
              "with probability proportional to the distance, seeded by "
              "randomSeed (ipumodel; the cpu reference refuses it)", BOOLV,
              1},
     .flags = C, .param = "enabled"})
OPTION(Precision_halfFloatCasting,
    {.info = {"Precision.halfFloatCasting", POPC_OPT_ENUM, "Default",
              "Ops mixing float16 and float32 in a half model: compute in "
              "float16 (FloatDowncastToHalf, Default) or float32 "
              "(HalfUpcastToFloat)",
              "FloatDowncastToHalf | HalfUpcastToFloat | Default", 1},
     .flags = C, .enum_type = "HalfFloatCastingBehavior",
     .members = half_castings, .param = "half_float_casting"})
OPTION(Precision_runningStatisticsAlwaysFloat,
    {.info = {"Precision.runningStatisticsAlwaysFloat", POPC_OPT_BOOL, "true",
              "Keep buffers (batch-norm running statistics) in float32 in a "
              "half model (popc_graph_to_half, [model] half)", BOOLV, 1},
     .flags = C, .param = "value"})
    /* ---- Options.TensorLocations ---- */
OPTION(TensorLocations_numIOTiles,
    {.info = {"TensorLocations.numIOTiles", POPC_OPT_INT, "0",
              "Tiles per IPU reserved for IO, taken from compute (even, 32 "
              "to 192)",
              "0 | even 32..192", 1},
     .flags = C, .min = INT64_MIN, .max = INT64_MAX, .hook = hook_io_tiles,
     .param = "num_tiles"})
LOCATION(Activation, "activations")
LOCATION(Weight, "weights")
LOCATION(Optimizer, "optimizer states")
LOCATION(Accumulator, "gradient accumulators")
    /* ---- Options.Distributed ---- */
OPTION(Distributed_numProcesses,
    {.info = {"Distributed.numProcesses", POPC_OPT_INT, "1",
              "Processes the execution is distributed over (env "
              "OMPI_COMM_WORLD_SIZE)", ">= 1", 1},
     .min = 1, .max = MAX32})
OPTION(Distributed_processId,
    {.info = {"Distributed.processId", POPC_OPT_INT, "0",
              "Id of this process, below numProcesses (env "
              "OMPI_COMM_WORLD_RANK)", ">= 0", 1},
     .min = 0, .max = MAX32})
    /* ---- Options.Jit ---- */
OPTION(Jit_traceModel,
    {.info = {"Jit.traceModel", POPC_OPT_BOOL, "false",
              "Deprecated: only false is accepted", "false", 1},
     .hook = hook_trace_model,
     .param = "trace_model"})
    /* ---- popc's own ---- */
OPTION(backend,
    {.info = {"backend", POPC_OPT_STRING, "ipumodel",
              "popc: device backend (cpu: reference, ipumodel: threaded IPU "
              "model, offline: compile only)",
              "cpu | ipumodel | offline | plugin backend", 1},
     .flags = C | P, .hook = hook_backend})
OPTION(threads,
    {.info = {"threads", POPC_OPT_INT, "0",
              "popc: worker threads of the IPU model (0: core count; env "
              "POPC_THREADS)", "0..4096", 1},
     .flags = P, .min = 0, .max = 4096})
OPTION(collectives,
    {.info = {"collectives", POPC_OPT_STRING, "auto",
              "popc: communication between the processes of a distributed "
              "run (auto: the best loaded collectives plugin that fits "
              "the launcher)", "auto | collectives plugin", 1},
     .flags = P})
OPTION(collectivesTimeout,
    {.info = {"collectivesTimeout", POPC_OPT_INT, "300",
              "popc: seconds a rank waits for another in a collective "
              "before the run stops with an error naming it (0: forever)",
              "0..1000000", 1},
     .flags = P, .min = 0, .max = 1000000})
OPTION(pluginPath,
    {.info = {"pluginPath", POPC_OPT_STRING, "None",
              "popc: plugin directories loaded when the option is set "
              "(absolute, colon-separated; process-wide)",
              "dir:dir:... | None", 1},
     .flags = N | P, .hook = hook_plugin_path})

#undef LOCATION
