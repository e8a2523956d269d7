/* options.h - PopTorch's Options: every option with its PopTorch name,
** default and validation.
**
** Names are PopTorch's dotted accessors: "deviceIterations",
** "replicationFactor", "Training.gradientAccumulation",
** "Precision.setPartialsType", "TensorLocations.numIOTiles",
** "Distributed.configureProcessId", "Jit.traceModel", ... Values are given
** as text in PopTorch spelling ("4", "true", "OutputMode.Sum", "Sum",
** "0.5") or through the typed setters. Every set is validated at once
** (deviceIterations < 1 is refused); an option whose effect popc does not
** build yet is refused with POPC_EUNSUPPORTED naming the option. Options
** are frozen when a model uses them: a later set fails with POPC_ESTATE
** "Can't modify frozen Options"; popc_options_clone gives an unfrozen copy.
**
** Since 0.1.0 unless a function says otherwise; the conventions of
** popc/status.h (ownership, status codes, threads) apply.
*/
#ifndef POPC_OPTIONS_H
#define POPC_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include "popc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct popc_options popc_options; /* opaque */

/* Enum values are PopTorch's and are stored in executables. */
typedef enum { POPC_OUTPUT_FINAL = 0, POPC_OUTPUT_EVERYN = 1,
               POPC_OUTPUT_ALL = 2, POPC_OUTPUT_SUM = 3,
               POPC_OUTPUT_DEFAULT = 4 } popc_output_mode;
typedef enum { POPC_CONNECTION_ALWAYS = 0, POPC_CONNECTION_ONDEMAND = 1,
               POPC_CONNECTION_NEVER = 2 } popc_connection_type;
typedef enum { POPC_REDUCTION_SUM = 0, POPC_REDUCTION_MEAN = 1,
               POPC_REDUCTION_NONE = 2 } popc_reduction_type;
typedef enum { POPC_MEAN_RUNNING = 0, POPC_MEAN_POST = 1 } popc_mean_strategy;
typedef enum { POPC_SYNC_FULL = 0, POPC_SYNC_SINGLE_PIPELINE = 1,
               POPC_SYNC_REPLICA_AND_LADDER = 2 } popc_sync_pattern;
typedef enum { POPC_AUTOSTAGE_SAME_AS_IPU = 0,
               POPC_AUTOSTAGE_AUTO_INCREMENT = 1 } popc_auto_stage;
typedef enum { POPC_EXEC_PIPELINED = 0, POPC_EXEC_SHARDED = 1,
               POPC_EXEC_SERIAL_PHASED = 2, POPC_EXEC_PARALLEL_PHASED = 3 }
    popc_execution_strategy;
typedef enum { POPC_LIVENESS_ALWAYS_LIVE = 0,
               POPC_LIVENESS_OFF_CHIP_AFTER_FWD = 1,
               POPC_LIVENESS_OFF_CHIP_AFTER_FWD_NO_OVERLAP = 2,
               POPC_LIVENESS_OFF_CHIP_AFTER_EACH_PHASE = 3 } popc_liveness;
typedef enum { POPC_COMM_ALL = 0, POPC_COMM_CONSECUTIVE = 1,
               POPC_COMM_ORTHOGONAL = 2, POPC_COMM_NO_GROUPING = 3 }
    popc_comm_group_type;

typedef enum { POPC_OPT_BOOL = 1, POPC_OPT_INT, POPC_OPT_FLOAT,
               POPC_OPT_STRING, POPC_OPT_ENUM } popc_option_type;

/* Defaults for every option; POPC_CACHE_DIR and POPC_DEFAULT_OPTIONS from
** the environment are applied as PopTorch does (also POPC_THREADS, the
** default of "threads", and OMPI_COMM_WORLD_SIZE/_RANK for Distributed).
** A bad variable fails with a message naming it. The caller owns *out and
** frees it with popc_options_free(). Since 0.1.0. Thread-safe while no
** thread changes the environment. POPC_OK, POPC_EINVAL (bad POPC_THREADS
** or OMPI_COMM_WORLD_*), POPC_ECONFIG (bad POPC_DEFAULT_OPTIONS JSON),
** POPC_ENOMEM, or the status of an option a variable sets. */
POPC_API POPC_NODISCARD popc_status popc_options_new(popc_options **out);
/* Free o and the strings it owns. Since 0.1.0. Not thread-safe: no other
** thread may use o during the call. */
POPC_API void popc_options_free(popc_options *o); /* NULL-safe */
/* Unfrozen deep copy in *out, owned by the caller, who frees it with
** popc_options_free(). Since 0.1.0. Thread-safe while no thread changes
** o. POPC_OK, POPC_EINVAL (o NULL), POPC_ENOMEM. */
POPC_API POPC_NODISCARD popc_status popc_options_clone(const popc_options *o,
    popc_options **out);
/* NULL-safe. Also applies maxRepeatLogs to the process log when the user
** set it: that setting is process-wide (docs/architecture.md lists the
** process-wide settings), so the last frozen options that set it win.
** Since 0.1.0. Not thread-safe on one object; the update of the process
** log is thread-safe, and across threads the last freeze wins. */
POPC_API void popc_options_freeze(popc_options *o);
/* Nonzero when o is frozen (0 for NULL o). Since 0.1.0. Not thread-safe
** while another thread freezes o. */
POPC_API int popc_options_frozen(const popc_options *o);

/* Set from text. POPC_OK, POPC_ENOTFOUND for an unknown name (message
** lists close names), POPC_EINVAL for a bad value or NULL o (message gives
** the valid range or enum members), POPC_EUNSUPPORTED for options not
** built yet, POPC_ESTATE when frozen, POPC_ENOMEM. Setting pluginPath
** loads its plugins into the process-wide registry at once (they stay
** loaded; the codes of popc_registry_load_path). Since 0.1.0. Not
** thread-safe on one object; the registry side is thread-safe. */
POPC_API POPC_NODISCARD popc_status popc_options_set(popc_options *o,
    const char *name, const char *value);
/* Set an integer, enum (PopTorch's value), boolean or float option to v,
** with the checks of popc_options_set. Since 0.1.0. Not thread-safe on one
** object. POPC_OK, POPC_EINVAL (bad value, NULL o, or a string option),
** POPC_ENOTFOUND, POPC_EUNSUPPORTED, POPC_ESTATE (frozen). */
POPC_API POPC_NODISCARD popc_status popc_options_set_int(popc_options *o,
    const char *name, int64_t v);
/* Set a float option to v, with the checks of popc_options_set.
** Since 0.1.0. Not thread-safe on one object. POPC_OK, POPC_EINVAL (bad
** value, NULL o, or not a float option), POPC_ENOTFOUND,
** POPC_EUNSUPPORTED, POPC_ESTATE (frozen). */
POPC_API POPC_NODISCARD popc_status popc_options_set_float(popc_options *o,
    const char *name, double v);
/* Set a boolean (or integer, enum or float) option to v != 0, with the
** checks of popc_options_set. Since 0.1.0. Not thread-safe on one object.
** POPC_OK, POPC_EINVAL (bad value, NULL o, or a string option),
** POPC_ENOTFOUND, POPC_EUNSUPPORTED, POPC_ESTATE (frozen). */
POPC_API POPC_NODISCARD popc_status popc_options_set_bool(popc_options *o,
    const char *name, int v);

/* Getters for the core and backends; an unknown name (or NULL o) is a
** programming error: it is logged and returns 0 / NULL; None reads as 0.
** popc_options_get_int: enums read as int, floats are truncated.
** Since 0.1.0. Thread-safe while no thread changes o (frozen options
** never change). */
POPC_API int64_t popc_options_get_int(const popc_options *o, const char *name);
/* The value as a double (integers and enums converted). Since 0.1.0.
** Thread-safe while no thread changes o. */
POPC_API double popc_options_get_float(const popc_options *o,
    const char *name);
/* Nonzero when the option's value is nonzero. Since 0.1.0. Thread-safe
** while no thread changes o. */
POPC_API int popc_options_get_bool(const popc_options *o, const char *name);
/* The text of a string option (a default such as backend's "ipumodel"
** too). Borrowed, valid until the option changes or o is freed. NULL for
** None, a non-string option or an unknown name. Since 0.1.0. Thread-safe
** while no thread changes o. */
POPC_API const char *popc_options_get_string(const popc_options *o,
                                             const char *name);
/* Current value as text ("None" for None), into buf, the caller's (cut to
** size). Returns buf, or NULL for an unknown name, NULL o or buf, or size
** 0. Since 0.1.0. Thread-safe while no thread changes o. */
POPC_API const char *popc_options_format(const popc_options *o,
    const char *name, char *buf, size_t size);
/* True when the option was set, even to its default value (by a setter, a
** file or POPC_DEFAULT_OPTIONS); 0 for NULL o or an unknown name.
** Since 0.1.0. Thread-safe while no thread changes o. */
POPC_API int popc_options_is_set(const popc_options *o, const char *name);

/* The text forms of options: libpopc reads them in the layers above its
** core, which parse text into the same checked setters (INI sections in
** run/, loadFromFile files and JSON in optfmt/); the functions are part
** of libpopc like the rest of this header. */

/* Apply an INI file's [options] section (keys are option names, e.g.
** "Training.gradientAccumulation = 4"). Errors name the file and line:
** "<file>:<line>: [options] deviceIterations: must be >= 1 (got 0)".
** Values are applied in the order of `popc options` (replicationFactor
** before inputReplicaGrouping.size), whatever the order of the lines;
** other sections are ignored. All or nothing: on failure the options are
** unchanged (plugins a pluginPath line loaded stay loaded). Since 0.1.0.
** Not thread-safe on one object. POPC_OK, POPC_EINVAL (o or path NULL),
** POPC_ESTATE (frozen), POPC_EIO/POPC_ECONFIG for the file (as every
** INI file popc reads, docs/ini-format.md), POPC_ENOMEM, else the failing option's
** status (POPC_ENOTFOUND, POPC_EINVAL, POPC_EUNSUPPORTED). */
POPC_API POPC_NODISCARD popc_status popc_options_load_ini(popc_options *o,
    const char *path);
/* PopTorch's loadFromFile: one "name(args)" call per line, e.g.
** "outputMode(poptorch.OutputMode.EveryN, 2)"; '#' comments. Errors as
** PopTorch's: "SyntaxError at line 2 of opts.txt: ...\n> options.<line>"
** (POPC_ECONFIG; n counts non-empty, non-comment lines), or
** "ValueError at line ..." with the option's status. All or nothing.
** Since 0.1.0. Not thread-safe on one object. Also POPC_OK, POPC_EINVAL
** (o or path NULL), POPC_ESTATE (frozen), POPC_EIO, POPC_ENOMEM. */
POPC_API POPC_NODISCARD popc_status popc_options_load_file(popc_options *o,
    const char *path);

/* The option table, for `popc options` and documentation. */
typedef struct popc_option_info {
    const char *name;
    popc_option_type type;
    const char *def;          /* default as text */
    const char *help;         /* one line */
    const char *values;       /* enum members or range, may be NULL */
    int supported;            /* 0: refused with "not supported yet" */
} popc_option_info;
/* Number of entries in the option table. Since 0.1.0. Thread-safe (a
** static table). */
POPC_API int popc_options_count(void);
/* Entry i of the table (0 <= i < popc_options_count()), NULL when out of
** range. Static, never freed. Since 0.1.0. Thread-safe. */
POPC_API const popc_option_info *popc_options_info(int i);

/* A hash of every option that affects compilation (executable cache key),
** stable across runs and processes; 0 for NULL o. Since 0.1.0.
** Thread-safe while no thread changes o. */
POPC_API uint64_t popc_options_hash(const popc_options *o);

/* ---- additions (helper "options") ---- */

/* True when a nullable option (randomSeed, maxRepeatLogs, modelName,
** enableExecutableCaching, useOfflineIpuTarget, ...) holds PopTorch's
** None; the getters then return 0 / NULL. 0 for NULL o or an unknown name
** (logged). Since 0.1.0. Thread-safe while no thread changes o. */
POPC_API int popc_options_is_none(const popc_options *o, const char *name);
/* The table entry of one option by name (aliases such as
** "Training.setMeanAccumulationAndReplicationReductionStrategy" work);
** NULL when unknown. Static, never freed. Since 0.1.0. Thread-safe. */
POPC_API const popc_option_info *popc_options_find_info(const char *name);
/* outputMode with Default resolved: All for inference, Final for
** training (PopTorch's PoplarExecutor). NULL o is logged and reads as
** Final. Since 0.1.0. Thread-safe while no thread changes o. */
POPC_API popc_output_mode popc_options_output_mode(const popc_options *o,
                                                   int training);
/* setAvailableMemoryProportion for one IPU, or Poplar's default 0.6.
** Since 0.1.0. Thread-safe while no thread changes o. */
POPC_API double popc_options_get_available_memory(const popc_options *o,
                                                  int ipu);
/* Checks across options that PopTorch makes when a model is compiled,
** with its texts: gradientAccumulation != 1 for inference,
** inputReplicaGrouping vs replicationFactor, the EveryN period vs
** deviceIterations ("Return period must be a factor of the number of
** batches per step"), processId < numProcesses, offline target with the
** IPU model or cycle logging. POPC_OK or POPC_EINVAL (also for NULL o).
** Since 0.1.0. Thread-safe while no thread changes o. */
POPC_API POPC_NODISCARD popc_status popc_options_validate(
    const popc_options *o, int training);
/* Apply a JSON object of PopTorch method names and arguments, the form of
** POPC_DEFAULT_OPTIONS: {"deviceIterations": 2, "outputMode":
** ["OutputMode.EveryN", 2]} (a list is splatted as arguments). All or
** nothing: POPC_ECONFIG (bad JSON) or the failing option's status, and
** the options are unchanged. Also POPC_OK, POPC_EINVAL (o or json NULL),
** POPC_ESTATE (frozen), POPC_ENOMEM. Since 0.1.0. Not thread-safe on one
** object. */
POPC_API POPC_NODISCARD popc_status popc_options_load_json(popc_options *o,
    const char *json);

#ifdef __cplusplus
}
#endif
#endif /* POPC_OPTIONS_H */
