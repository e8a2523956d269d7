/* plugin.h - the plugin ABI: what an op, optimizer, backend or collectives
** plugin sees.
**
** A plugin is a shared module that exports one entry symbol, made by
** POPC_PLUGIN_DEFINE, returning a static popc_plugin_info. The core checks
** the ABI version and struct size, then calls init() with a host table;
** init() registers definitions through host->register_*. Registrations are
** staged and committed only if init() returns POPC_OK.
**
** Plugins never link libpopc: they call the core only through the host
** table they were given (keep the pointer in a static). Every struct that
** crosses the boundary starts with its size and grows only at the end;
** read a later member only if POPC_HAS_FIELD says the writer had it.
** Arrays cross with their element size (popc_plan.node_size and
** slot_size, popc_attrs.item_size, popc_optim_def.hyper_size): index them
** with the accessors below, never with [] across the boundary. The one
** exception is popc_view, frozen for the whole major version (see its
** definition in popc/types.h). docs/plugins.md states the promise and
** the rules.
**
** Definitions (popc_op_def, its strings and function pointers) must stay
** valid while the plugin is loaded; the core copies the struct itself.
*/
#ifndef POPC_PLUGIN_H
#define POPC_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "popc/status.h"
#include "popc/types.h"
#include "popc/attrs.h"
#include "popc/services.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The plugin ABI's version. The major changes only with an incompatible
** change (a member moved, removed or retyped); the loader takes a plugin
** of the same major whatever its minor, because every struct is read
** through its size both ways. The minor counts compatible additions.
** 2 was popc 0.2 and 0.3 (no size on contexts); 0.4.0 made 3.0, and
** 3.1 added kernel providers (popc/kernel.h) and POPC_OP_INPLACE. The
** loader still takes ABI 2 op and optimizer plugins through an adapter
** (docs/plugins.md). */
#define POPC_PLUGIN_ABI_MAJOR 3u
#define POPC_PLUGIN_ABI_MINOR 1u
/* What popc_plugin_info.abi_version holds: the major alone, so that an
** ABI 2 plugin's 2 still reads as major 2. */
#define POPC_PLUGIN_ABI_VERSION POPC_PLUGIN_ABI_MAJOR

#define POPC_HAS_FIELD(T, size, m) \
    ((size) >= offsetof(T, m) + sizeof(((T *)0)->m))

#if defined(__GNUC__)
#define POPC_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define POPC_PLUGIN_EXPORT
#endif

/* ---- shape inference ----------------------------------------------------- */

typedef struct popc_host popc_host;
struct popc_op_def;
struct popc_optim_def;
struct popc_kernel_def;

/* What an op's infer() sees. Input views have data != NULL when the value
** is known at compile time (an initializer or a constant), e.g. Reshape's
** shape. infer() sets dtype, rank and dims of every output and reports a
** problem with host->set_error naming node_name. */
typedef struct popc_infer_ctx {
    uint32_t size;            /* sizeof(popc_infer_ctx) of the core */
    const popc_host *host;
    const char *node_name;
    int n_inputs;
    const popc_view *inputs;  /* absent optional input: dtype UNDEFINED */
    int n_outputs;
    popc_view *outputs;
    const popc_attrs *attrs;
    int training;             /* graph is compiled for training */
    const struct popc_op_def *op; /* the definition being called */
} popc_infer_ctx;

/* Work estimate used by the IPU model's cycle counts and memory plan. */
typedef struct popc_cost {
    double flops;             /* arithmetic operations */
    double bytes;             /* bytes read and written */
    double temp_bytes;        /* temporaries alive during the op */
} popc_cost;

/* ---- kernels --------------------------------------------------------------- */

/* A forward call. On a worker pool the backend calls forward() once per
** part with the same ctx but part = 0..n_parts-1, then waits for all parts
** (a BSP step); each part must write a disjoint share of the outputs. Ops
** without POPC_OP_SPLIT are called once with n_parts == 1. */
typedef struct popc_kernel_ctx {
    uint32_t size;            /* sizeof(popc_kernel_ctx) of the core */
    const popc_host *host;
    const char *node_name;
    int n_inputs;
    const popc_view *inputs;
    int n_outputs;
    const popc_view *outputs;
    const popc_attrs *attrs;
    int part, n_parts;
    int training;             /* Dropout, BatchNormalization modes */
    uint64_t seed;            /* unique per run, replica and node */
    void *state;              /* from prepare(), or NULL */
    void *user;               /* the host-callback registry for host ops */
    unsigned flags;           /* POPC_KERNEL_* (the core zero-fills what
                                 it does not set) */
    const struct popc_op_def *op; /* the definition being called */
} popc_kernel_ctx;

/* enableStableNorm: norms compute the mean, then the variance about it
** (two passes). Without it they take one pass of sums and sums of squares,
** PopART's faster default, less accurate when |mean| >> std. */
#define POPC_KERNEL_STABLE_NORM (1u << 0)
/* Precision.enableFloatingPointExceptions: the backend fails a run when
** a kernel raises an overflow, invalid operation or division by zero. */
#define POPC_KERNEL_FP_EXCEPTIONS (1u << 1)
/* Precision.enableStochasticRounding: float16 results of kernels round
** stochastically (popc_f16_stochastic, seeded by kc->seed and the
** element's index). */
#define POPC_KERNEL_STOCHASTIC_ROUNDING (1u << 2)
/* Precision.setPartialsType(torch.half): float16 operations keep their
** partial sums in float16, rounded after every term. Native float16
** reductions honour it by dtype; ops that compute a float16 operation in
** float32 honour it by the mark POPC_ATTR_FLOAT16. Since 0.3.0. */
#define POPC_KERNEL_HALF_PARTIALS (1u << 3)
/* The INT attribute model.half() (popc_graph_to_half) puts on the nodes
** it runs in float32 for a float16 model: 1 on ops without float16
** arithmetic, 2 on the casts around them, which an IPU would not need. The
** core gives every backward node of a marked node the same mark. Memory
** models count the float32 results of a node marked 1 as float16, and
** those of a node marked 2 as aliases of its input (popc_plan.store_dtype).
** Since 0.3.0. */
#define POPC_ATTR_FLOAT16 "__float16"
#define POPC_FLOAT16_OP 1
#define POPC_FLOAT16_CAST 2
/* The INT attribute of a node that computes in this many serial steps to
** cut its temporaries (poptorch.serializedMatMul's factor): the op's
** cost() counts one step's temporaries, and device models count one sync
** and one exchange of the operands per step. Absent: 1. Since 0.3.0. */
#define POPC_ATTR_SERIAL_FACTOR "serialization_factor"

/* ---- gradient builders ----------------------------------------------------- */

/* What an op's grad() sees while the core differentiates the graph. Values
** are ids in the graph being built. grad() adds backward nodes with
** host->grad_add_node and stores d(loss)/d(input i) in input_grads[i]
** (leave -1 for inputs with no gradient). output_grads[j] is -1 when no
** gradient flows into output j (treat it as zero). */
typedef struct popc_grad_ctx {
    uint32_t size;            /* sizeof(popc_grad_ctx) of the core */
    const popc_host *host;
    void *impl;               /* core-private */
    const char *node_name;
    int n_inputs;
    const int *inputs;
    const popc_view *input_info;   /* dtype and shape of each input */
    int n_outputs;
    const int *outputs;
    const popc_view *output_info;
    const int *output_grads;
    const popc_attrs *attrs;
    int *input_grads;
    const struct popc_op_def *op; /* the definition being called */
} popc_grad_ctx;

/* ---- op definitions --------------------------------------------------------- */

#define POPC_OP_SPLIT    (1u << 0) /* forward() honours part/n_parts */
#define POPC_OP_HOST     (1u << 1) /* runs on the host (CPU op) */
#define POPC_OP_LOSS     (1u << 2) /* marks a loss (identity_loss, losses) */
#define POPC_OP_RANDOM   (1u << 3) /* uses kc->seed */
#define POPC_OP_NOFOLD   (1u << 4) /* never constant-folded (side effects) */
/* Runs code that its attributes name (loads a library, resolves a symbol).
** In a graph read from a file (popc_graph_set_origin) such a node compiles
** only when the user allowed foreign code (popc_set_foreign_code_allowed),
** so a file that looks like data cannot run code by itself. */
#define POPC_OP_FOREIGN  (1u << 5)
/* Output 0 may share input 0's bytes (in-place execution): forward()
** reads element i of input 0 only to write element i of output 0, for
** any part (same shape and dtype). The planner aliases them only when
** input 0 dies at the node. Since 0.1.0 (additions after it). */
#define POPC_OP_INPLACE  (1u << 6)

/* The part an op plays in the core's own passes. The core names no op:
** autodiff's gradient sums, the float16 pass's casts, a subgraph's
** gradient, recomputation checkpoints, overlapped outputs, CPU ops and
** foreign calls ask the registry for the op that declares the role
** (popc_registry_find_role). The contract each role's op must keep: */
typedef enum popc_op_role {
    POPC_ROLE_NONE = 0,
    POPC_ROLE_SUM,          /* 1..n inputs, broadcast: their sum */
    POPC_ROLE_ADD,          /* A + B, broadcast */
    POPC_ROLE_MUL,          /* A * B, broadcast */
    POPC_ROLE_REDUCE_SUM,   /* one input, no axes: the sum of all its
                               elements; int attribute "keepdims" */
    POPC_ROLE_CAST,         /* int attribute "to" (an ONNX data type) */
    POPC_ROLE_IDENTITY,     /* one input, its copy */
    POPC_ROLE_CHECKPOINT,   /* identity that ends a recomputation stretch */
    POPC_ROLE_HOST_CALL,    /* calls the host callback "id"; string
                               "id", ints "output_dtypes", "output_shapes"
                               (rank, dims...), int "batch" (popc_cpu_op) */
    POPC_ROLE_FOREIGN_CALL, /* calls a C function; strings "library",
                               "symbol", "signature", "output_shapes"
                               (popc_foreign_op) */
    POPC_ROLE_COUNT
} popc_op_role;

struct popc_op_def {
    uint32_t size;            /* sizeof(popc_op_def) */
    const char *domain;       /* "ai.onnx", "popc", or a vendor domain */
    const char *name;         /* "MatMul" */
    int since_version;        /* opset version this definition implements */
    int min_inputs, max_inputs;
    int min_outputs, max_outputs;
    unsigned flags;           /* POPC_OP_* */
    popc_status (*infer)(popc_infer_ctx *ic);
    popc_status (*forward)(const popc_kernel_ctx *kc);
    /* (optional) NULL: not differentiable; training through it fails with
    ** an error naming the node. */
    popc_status (*grad)(popc_grad_ctx *gc);
    /* (optional) NULL: flops = output elements, bytes = inputs + outputs. */
    popc_status (*cost)(const popc_infer_ctx *ic, popc_cost *cost);
    /* (optional) per-node state built once at compile time (shapes and
    ** attributes are final); freed with release(). */
    popc_status (*prepare)(const popc_infer_ctx *ic, void **state);
    void (*release)(void *state);
    const char *doc;          /* (optional) one line for `popc plugins` */
    /* (optional) POPC_ROLE_*: 0 for most ops */
    int role;
};
typedef struct popc_op_def popc_op_def;

/* ---- optimizers ---------------------------------------------------------- */

#define POPC_HYPER_GROUP  (1u << 0) /* may differ per parameter group */
#define POPC_HYPER_BOOL   (1u << 1) /* value is 0 or 1 */
#define POPC_HYPER_FIXED  (1u << 2) /* fixed at compile (never streamed) */

typedef struct popc_hyper_def {
    const char *name;          /* torch.optim spelling: "lr", "momentum" */
    double def;                /* default; NAN: required */
    unsigned flags;            /* POPC_HYPER_* */
} popc_hyper_def;

/* One weight tensor's update. The gradient is final: accumulated, reduced
** over replicas, unscaled by loss scaling and clipped by max_grad_norm. */
typedef struct popc_optim_step_ctx {
    uint32_t size;             /* sizeof(popc_optim_step_ctx) of the core */
    const popc_host *host;
    const char *weight_name;
    const double *hypers;      /* values in definition order */
    int64_t step;              /* 1-based count of this weight's updates */
    int64_t n;                 /* elements */
    float *weight;
    const float *grad;
    float *const *state;       /* n_state arrays of n floats */
    const struct popc_optim_def *optim; /* the definition being called */
} popc_optim_step_ctx;

struct popc_optim_def {
    uint32_t size;             /* sizeof(popc_optim_def) */
    const char *name;          /* "sgd", "adam", "adamw", "rmsprop", "lamb" */
    int n_hypers;
    const popc_hyper_def *hypers; /* n_hypers of hyper_size bytes each */
    /* (optional) refuse a combination with a clear message (amsgrad). */
    popc_status (*validate)(const double *hypers);
    /* Number of state arrays per weight, each the weight's size. */
    int (*n_state)(const double *hypers);
    /* Names of the state arrays ("exp_avg"); index < n_state. */
    const char *(*state_name)(const double *hypers, int index);
    /* (optional) initial state; NULL: zeros. */
    void (*init_state)(const double *hypers, float *const *state, int64_t n);
    popc_status (*step)(const popc_optim_step_ctx *c);
    /* (optional) The dtype the
    ** device stores state array `index` in. step() receives float32
    ** arrays either way; for POPC_DTYPE_F16 it rounds them to half after
    ** each update, and the memory reports count 2 bytes an element.
    ** NULL: float32. */
    popc_dtype (*state_dtype)(const double *hypers, int index);
    /* (optional) The dtype of the gradient accumulator
    ** (PopTorch's accum_type). POPC_DTYPE_F16: the core rounds the
    ** accumulated gradients to half and, as PopTorch does, switches the
    ** mean reduction strategy to Running. NULL: float32. */
    popc_dtype (*accum_dtype)(const double *hypers);
    /* sizeof(popc_hyper_def): the stride of hypers. Required when
    ** n_hypers > 0 (the registry refuses a smaller one). */
    uint32_t hyper_size;
};
typedef struct popc_optim_def popc_optim_def;

/* Hyperparameter i of d, at the stride d declares. */
static inline const popc_hyper_def *popc_optim_hyper_at(
    const popc_optim_def *d, int i)
{
    return (const popc_hyper_def *)(const void *)((const char *)d->hypers +
                                                  (size_t)i *
                                                      d->hyper_size);
}

/* ---- backends ----------------------------------------------------------- */

/* Storage classes of plan slots. */
typedef enum popc_slot_kind {
    POPC_SLOT_INPUT = 1,   /* streamed from the host per micro-batch */
    POPC_SLOT_WEIGHT,      /* initializer, trained or not */
    POPC_SLOT_CONST,       /* compile-time constant */
    POPC_SLOT_ACT,         /* activation / temporary */
    POPC_SLOT_GRAD,        /* gradient accumulator of a weight */
    POPC_SLOT_STATE        /* optimizer state */
} popc_slot_kind;

typedef struct popc_plan_slot {
    const char *name;
    popc_slot_kind kind;
    popc_view info;            /* dtype and shape; data = constant or NULL */
    int ipu;                   /* IPU holding it */
    int first_use, last_use;   /* node indices (liveness) */
} popc_plan_slot;

typedef struct popc_plan_node {
    const popc_op_def *op;
    const char *name;
    const popc_attrs *attrs;
    int n_inputs, n_outputs;
    const int *inputs;         /* slot indices; -1: absent optional */
    const int *outputs;
    int ipu, stage, phase;
    int recompute;
    double available_memory;   /* proportion, 0: default */
    popc_cost cost;
    void *state;               /* from op->prepare */
} popc_plan_node;

/* A compiled, scheduled graph: nodes in execution order. Forward nodes are
** [0, n_forward); backward nodes (training) follow. */
typedef struct popc_plan {
    uint32_t size;
    int n_slots;
    const popc_plan_slot *slots;
    int n_nodes;
    const popc_plan_node *nodes;
    int n_forward;
    int n_ipus;                /* per replica */
    int n_stages;
    int replicas;
    int training;
    /* Phased execution with tensorsLiveness OffChip*: per slot, the
    ** activation leaves the chip after schedule position offchip_from[s]
    ** and is back on chip from position offchip_to[s] (n_nodes: only at the
    ** end of the micro-batch); -1: it stays on chip. NULL: every slot stays
    ** on chip. */
    const int *offchip_from;
    const int *offchip_to;
    /* Per slot, the dtype the device stores it in when that differs from
    ** info.dtype: float16 optimizer state and gradient accumulators, whose
    ** host copies are float32 arrays holding half values, and the results
    ** of POPC_ATTR_FLOAT16 nodes (float16; POPC_DTYPE_UNDEFINED, no bytes,
    ** for a marked Cast). Memory models count these bytes. NULL:
    ** info.dtype everywhere. */
    const popc_dtype *store_dtype;
    /* POPC_KERNEL_* flags for every kernel of the plan (kc->flags). */
    unsigned kernel_flags;
    /* Per slot, where the device keeps it (POPC_LOC_* bits, from
    ** Options.TensorLocations); NULL: everything on chip. */
    const unsigned char *slot_location;
    /* The strides of slots and nodes: index them with popc_plan_slot_at
    ** and popc_plan_node_at, so either struct can grow at its end. */
    uint32_t slot_size;
    uint32_t node_size;
    /* Per node, the kernel (popc/kernel.h) chosen for it at compile; NULL:
    ** the op's own forward. Since 0.4.0: read only when
    ** POPC_HAS_FIELD(popc_plan, size, node_kernel). */
    const struct popc_kernel_def *const *node_kernel;
} popc_plan;

/* Slot s and node k of a plan, at the core's strides. */
static inline const popc_plan_slot *popc_plan_slot_at(const popc_plan *p,
                                                      int s)
{
    return (const popc_plan_slot *)(const void *)((const char *)p->slots +
                                                  (size_t)s * p->slot_size);
}

static inline const popc_plan_node *popc_plan_node_at(const popc_plan *p,
                                                      int k)
{
    return (const popc_plan_node *)(const void *)((const char *)p->nodes +
                                                  (size_t)k * p->node_size);
}

/* slot_location bits. */
#define POPC_LOC_OFF_CHIP  (1u << 0) /* streaming memory, loaded per use */
#define POPC_LOC_SHARDED   (1u << 1) /* each replica holds 1/replicas */
#define POPC_LOC_IO_LOAD   (1u << 2) /* loaded through I/O tiles */
#define POPC_LOC_IO_STORE  (1u << 3) /* stored through I/O tiles */
/* Host I/O (since 0.3.0): the slot is copied to the host every micro-batch
** (a graph output; inputs are POPC_SLOT_INPUT), and its host copy overlaps
** compute through the I/O tiles (set_overlap_for_input/output): with the
** next micro-batch of the accumulation loop (OVERLAP_ACCUM), or across
** device iterations too (OVERLAP_ITER, which sets both bits). */
#define POPC_LOC_HOST_OUTPUT   (1u << 4)
#define POPC_LOC_OVERLAP_ACCUM (1u << 5)
#define POPC_LOC_OVERLAP_ITER  (1u << 6)

/* The data of every slot for one replica during one micro-batch. */
typedef struct popc_frame {
    uint32_t size;             /* sizeof(popc_frame) of the core */
    popc_view *slots;          /* plan->n_slots views with data */
    int replica;
    int training;
    uint64_t seed;
    void *user;                /* passed to kernels as kc->user */
} popc_frame;

/* How a backend builds a kernel call and a node's seed is a host service
** (popc/services.h: POPC_SERVICE_PLAN_KERNEL_CTX, POPC_SERVICE_NODE_SEED),
** so that every backend agrees with the core's own, however it changes. */

/* What a backend is asked to model; filled by the core from the options. */
typedef struct popc_backend_config {
    uint32_t size;
    int threads;               /* workers; 0: core count */
    int ipu_version;           /* 1, 2 or 21 */
    int n_ipus;                /* per replica */
    int replicas;
    int tiles_per_ipu;         /* 0: the version's default */
    int64_t bytes_per_tile;    /* 0: the version's default */
    double available_memory;   /* default proportion for temporaries */
    int log_cycles;
    const char *profile_dir;   /* NULL: no profiling */
    int io_tiles;              /* per IPU, taken from compute (numIOTiles);
                                  since 0.2.0 (check with POPC_HAS_FIELD) */
    /* The loops host I/O can overlap across. */
    int64_t device_iterations;       /* deviceIterations */
    int64_t gradient_accumulation;   /* 1 for inference */
    /* Any other PopTorch option's value, by PopTorch's name
    ** ("Training.setConvolutionDithering", "syncPattern", "useIpuId"): an
    ** integer (a bool as 0/1, an enum as popc/options.h numbers it) in
    ** *value; POPC_ENOTFOUND when the name is no integer option. Options
    ** that only IPU models honour are refused by the core on backends
    ** without POPC_BACKEND_MODELS_IPUS. */
    popc_status (*option_int)(const struct popc_backend_config *cfg,
                              const char *name, int64_t *value);
    const void *impl;          /* the core's, for option_int */
} popc_backend_config;

#define POPC_BACKEND_CAN_RUN      (1u << 0)
#define POPC_BACKEND_CONCURRENT   (1u << 1) /* parallel() really overlaps */
/* Models IPU hardware: PopTorch's IPU count rules apply (a power of 2 of
** IPUs per process, at most 64; autoRoundNumIPUs). */
#define POPC_BACKEND_MODELS_IPUS  (1u << 2)
/* Runs POPC_KERNEL_STOCHASTIC_ROUNDING (the cpu reference does not: it is
** the deterministic oracle). */
#define POPC_BACKEND_STOCHASTIC_ROUNDING (1u << 3)

/* Where a backend writes its report (popc_backend_def.report_to). */
typedef popc_status (*popc_report_sink)(void *user, const void *bytes,
                                        size_t n);

typedef struct popc_backend_def {
    uint32_t size;
    const char *name;          /* "cpu", "ipumodel", "offline" */
    unsigned caps;             /* POPC_BACKEND_* */
    popc_status (*open)(const popc_backend_config *cfg, void **ctx);
    void (*close)(void *ctx);
    /* Map the plan onto the device; fails with POPC_ECOMPILE ("out of
    ** memory on IPU i tile t: ...") when it does not fit. */
    popc_status (*compile)(void *ctx, const popc_plan *plan, void **exe);
    void (*exe_free)(void *ctx, void *exe);
    /* Run nodes [first, last) of the plan on one frame. */
    popc_status (*run_nodes)(void *ctx, void *exe, const popc_frame *frame,
                             int first, int last);
    /* (optional) Run fn(arg, 0..n-1), concurrently if the backend can; the
    ** first failing status is returned. NULL: the core runs them in order. */
    popc_status (*parallel)(void *ctx, int n,
                            popc_status (*fn)(void *arg, int i), void *arg);
    /* (optional) Estimated device cycles for nodes [first, last). */
    double (*cycles)(void *ctx, void *exe, int first, int last);
    /* How well the backend
    ** stands in for another: when the backend the options name is not
    ** loaded (the default), or an executable compiled by a backend that
    ** cannot run is loaded to run, the core takes the highest-scoring
    ** backend with the capabilities needed. 0: never chosen so. */
    int score;
    /* (optional) Write the
    ** plan's JSON memory and cycle report to the host's sink: call
    ** write(user, bytes, n) as often as needed; a status other than
    ** POPC_OK from it ends the report with that status. The host owns
    ** where it goes (enableProfiling's profile.json, written atomically). */
    popc_status (*report_to)(void *ctx, void *exe, popc_report_sink write,
                             void *user);
} popc_backend_def;

/* ---- the host table and registration ---------------------------------------- */

typedef struct popc_registrar popc_registrar; /* opaque */
struct popc_collectives_def;               /* popc/collectives.h */

enum popc_log_level {
    POPC_LOG_TRACE = 0,
    POPC_LOG_DEBUG,
    POPC_LOG_INFO,
    POPC_LOG_WARN,
    POPC_LOG_ERR,
    POPC_LOG_OFF
};

struct popc_host {
    uint32_t abi_version;      /* POPC_PLUGIN_ABI_MAJOR */
    uint32_t size;             /* sizeof(popc_host) */
    popc_status (*register_op)(popc_registrar *r, const popc_op_def *def);
    popc_status (*register_optimizer)(popc_registrar *r,
                                      const popc_optim_def *def);
    popc_status (*register_backend)(popc_registrar *r,
                                    const popc_backend_def *def);
    popc_status (*set_error)(popc_status st, const char *fmt, ...)
        POPC_PRINTF(2, 3);
    void (*log_msg)(int level, const char *fmt, ...) POPC_PRINTF(2, 3);
    /* Plugins allocate here, not with malloc, so that popc's allocation
    ** fault tests (popc/fault.h) reach them too. */
    void *(*alloc)(size_t n);  /* POPC_TENSOR_ALIGN-aligned, zeroed */
    void (*free)(void *p);
    /* Add a node while building gradients. domain NULL means "ai.onnx".
    ** Output value ids are written to outputs[0..n_outputs). Shapes are
    ** inferred at once; errors name the node being differentiated. */
    popc_status (*grad_add_node)(popc_grad_ctx *gc, const char *domain,
                                 const char *op, const int *inputs,
                                 int n_inputs, int *outputs, int n_outputs,
                                 const popc_attr *attrs, int n_attrs);
    /* Add a constant value (copied). */
    popc_status (*grad_constant)(popc_grad_ctx *gc, const popc_view *value,
                                 int *out);
    /* dtype and shape of a value (data NULL unless constant). */
    popc_status (*value_info)(popc_grad_ctx *gc, int value, popc_view *info);
    /* Call the host callback registered under id (CPU ops). */
    popc_status (*host_call)(void *user, const char *id,
                             const popc_view *inputs, int n_inputs,
                             const popc_view *outputs, int n_outputs);
    /* The calling thread's last error message (popc_last_error), so that a
    ** backend can hand the reason of a failure on a worker thread to the
    ** thread that joins it: an error is reported where the operation
    ** that failed was asked for, never lost on the thread it happened
    ** on. May be NULL: read it only when
    ** POPC_HAS_FIELD(popc_host, size, last_error) and it is set. */
    const char *(*last_error)(void);
    /* Subgraphs (POPC_ATTR_GRAPH attributes: the bodies of If, Loop and
    ** Scan). Read only when POPC_HAS_FIELD(popc_host, size, graph_run).
    ** graph_signature: how many inputs and outputs g has, and the dtype
    ** and shape of each (up to cap of each; arrays may be NULL). */
    popc_status (*graph_signature)(const struct popc_graph *g, int *n_inputs,
                                   popc_view *inputs, int *n_outputs,
                                   popc_view *outputs, int cap);
    /* Run g once on the reference kernels: inputs as g declares them, the
    ** results written into outputs (allocated by the caller with the
    ** dtype and shape of each result; a mismatch is an error naming it). */
    popc_status (*graph_run)(const struct popc_graph *g,
                             const popc_view *inputs, int n_inputs,
                             const popc_view *outputs, int n_outputs,
                             int training, uint64_t seed);
    /* Gradients through subgraphs (read only when POPC_HAS_FIELD(
    ** popc_host, size, grad_inline)). graph_gradient: a new graph whose
    ** inputs are g's inputs then one gradient per output of g, and whose
    ** outputs are d(sum_j <out_j, dout_j>)/d(input_i) for every input i
    ** (zeros where none flows); it recomputes g's forward. Free it with
    ** graph_free. */
    popc_status (*graph_gradient)(const struct popc_graph *g,
                                  struct popc_graph **out);
    void (*graph_free)(struct popc_graph *g);
    /* Inside grad(): add g's nodes to the graph being differentiated, g's
    ** inputs bound to inputs[]; outputs[] receives the values of g's
    ** outputs (to unroll a body into the backward pass). */
    popc_status (*grad_inline)(popc_grad_ctx *gc, const struct popc_graph *g,
                               const int *inputs, int n_inputs, int *outputs,
                               int n_outputs);
    /* Register communication between the processes of a distributed run
    ** (popc/collectives.h; since 0.3.0: read only when
    ** POPC_HAS_FIELD(popc_host, size, register_collectives)). */
    popc_status (*register_collectives)(
        popc_registrar *r, const struct popc_collectives_def *def);
    /* The work of one run of subgraph g, for the cost() of ops that run a
    ** body (Call, Loop, If, Scan): the sums of its nodes' flops and bytes;
    ** temp_bytes its values plus its largest node temporaries. Since 0.3.0:
    ** read only when POPC_HAS_FIELD(popc_host, size, graph_cost). */
    popc_status (*graph_cost)(const struct popc_graph *g, popc_cost *cost);
    /* Host services by name (popc/services.h): the way the host grows
    ** from now on. Read only when POPC_HAS_FIELD(popc_host, size,
    ** get_proc). Since 0.4.0. */
    popc_get_proc_fn get_proc;
};

typedef struct popc_plugin_info {
    uint32_t abi_version;      /* POPC_PLUGIN_ABI_MAJOR at build time */
    uint32_t size;             /* sizeof(popc_plugin_info) at build time */
    const char *name;          /* must equal the module's file basename */
    const char *version;
    const char *description;
    const char *license;
    popc_status (*init)(const popc_host *host, popc_registrar *reg);
    void (*fini)(void);        /* (optional) */
    uint32_t abi_minor;        /* POPC_PLUGIN_ABI_MINOR at build time */
} popc_plugin_info;

#define POPC_PLUGIN_DEFINE(NAME, VERSION, DESC, LICENSE, INIT, FINI)      \
    static const popc_plugin_info popc_plugin_info_ = {                   \
        POPC_PLUGIN_ABI_MAJOR, sizeof(popc_plugin_info), #NAME, VERSION,   \
        DESC, LICENSE, INIT, FINI, POPC_PLUGIN_ABI_MINOR};                \
    POPC_PLUGIN_EXPORT const popc_plugin_info                              \
        *NAME##_LTX_popc_plugin_entry(void);                              \
    const popc_plugin_info *NAME##_LTX_popc_plugin_entry(void)             \
    {                                                                     \
        return &popc_plugin_info_;                                        \
    }

/* These two stay inline: they add only overflow arithmetic and a copy
** to h->alloc, whose contract the ABI fixes anyway, so no behaviour of the
** host is frozen into plugins by them. */

/* n zeroed objects of size bytes from h->alloc; NULL when n * size
** overflows or memory runs out. Release with h->free. */
static inline void *popc_host_calloc(const popc_host *h, size_t n,
                                     size_t size)
{
    return size && n > SIZE_MAX / size ? NULL : h->alloc(n * size);
}

/* A copy of s from h->alloc (NULL when out of memory). */
static inline char *popc_host_strdup(const popc_host *h, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = (char *)h->alloc(n);

    return p ? (char *)memcpy(p, s, n) : NULL;
}

#ifdef __cplusplus
}
#endif
#endif /* POPC_PLUGIN_H */
