/* module.h - PopXL-style modules for graphs built in C (since 0.3.0).
**
** A module is a graph built once by a build function:
** - its inputs;
** - its variables, each made by a named variable factory (zeros, ones,
**   a constant, uniform, normal, or a given tensor);
** - its named outputs.
**
** Binding a module to a parent graph creates its variables there, as
** weights named "<prefix>/<variable>". A bound module is PopXL's
** BoundGraph.
**
** Calling a bound module adds one popc::Call node whose body is the
** module's graph: a module called N times is one outlined body, not N
** copies of its ops. Calls of one binding share its variables; bind
** again for separate variables.
**
** popc_module_autodiff returns the module's backward graph as another
** module. The user calls it and combines it as PopXL's autodiff
** transform allows: for an explicit forward, backward and optimizer
** program.
** - Its inputs: the module's inputs and variables, in the module's order,
**   then "grad:<output>" for each output.
** - Its outputs: "grad:<name>" for each input and variable, in the
**   module's order.
** - It recomputes the forward pass from its inputs instead of reading
**   saved activations.
**
** Gradients of a model's loss flow through calls (the Call op's gradient
** is a call of the backward body), so a module trains inside an ordinary
** training model too.
**
** Modules are immutable once built and may be shared by threads; building,
** binding and calling are not thread-safe on one parent graph.
**
** The conventions of popc/status.h (ownership, status codes, threads)
** apply.
*/
#ifndef POPC_MODULE_H
#define POPC_MODULE_H

#include <stdint.h>

#include "popc/graph.h"
#include "popc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct popc_model;
typedef struct popc_module popc_module;                 /* opaque */
typedef struct popc_module_builder popc_module_builder; /* opaque */
typedef struct popc_bound popc_bound;                   /* opaque */

/* How a variable's value is made when its module is bound. */
typedef enum popc_init_kind {
    POPC_INIT_ZEROS = 0,
    POPC_INIT_ONES,
    POPC_INIT_CONSTANT,        /* a */
    POPC_INIT_UNIFORM,         /* uniform in [a, b) */
    POPC_INIT_NORMAL,          /* mean a, standard deviation b */
    POPC_INIT_TENSOR           /* a copy of tensor (same dtype and shape) */
} popc_init_kind;

typedef struct popc_variable_factory {
    popc_init_kind kind;
    double a, b;
    const popc_tensor *tensor;
    int frozen;                /* 1: a buffer the optimizer never updates */
} popc_variable_factory;

/* A build function: declares the module's inputs, variables and outputs
** through b and adds its nodes; returns POPC_OK or an error. */
typedef popc_status (*popc_module_build_fn)(popc_module_builder *b,
                                            void *user);
/* Runs build(b, user) on a fresh graph and keeps what it declared; the
** graph is then verified. The module owns its graph; the caller owns *out
** and frees it with popc_module_free. POPC_OK, POPC_EINVAL (out NULL, a
** missing name or build function, a module without outputs, a weight
** added other than by popc_module_add_variable), POPC_ECOMPILE (the graph
** fails popc_graph_verify), POPC_ENOMEM, or build's own error. Thread-safe
** for distinct modules. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_module_new(const char *name,
    popc_module_build_fn build, void *user, popc_module **out);
/* Frees m, its graph and its variable factories' tensor copies; bindings
** and calls already added to graphs stay valid (a Call node holds a copy
** of the body), but bindings of m must not be used after. NULL-safe. Not
** thread-safe: no other thread may use m. Since 0.3.0. */
POPC_API void popc_module_free(popc_module *m); /* NULL-safe */

/* ---- inside build ------------------------------------------------------- */

/* The graph being built: add its nodes with popc/graph.h or popc/layers.h
** (the layer helpers' own weights are refused: declare variables here).
** Borrowed: the module owns it; use it only inside build. NULL for NULL.
** Not thread-safe: only the thread running build uses b. Since 0.3.0. */
POPC_API popc_graph *popc_module_builder_graph(popc_module_builder *b);
/* Declares the module's next input, a graph input of the body; *value
** receives its id. POPC_OK, POPC_EINVAL (b, name or value NULL, a bad
** dtype or shape), POPC_EEXIST (the name is taken), POPC_ENOMEM. Not
** thread-safe: only inside build. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_module_add_input(
    popc_module_builder *b, const char *name, popc_dtype dt,
    const int64_t *dims, int rank, int *value);
/* Declares a variable: a body input that each binding fills with a weight
** made by factory (copied, with a copy of factory->tensor). Factories
** other than POPC_INIT_TENSOR make float32 variables only.
** POPC_OK, POPC_EINVAL (b, factory, name or value NULL, rank outside
** 0..POPC_MAX_RANK, dims NULL with rank > 0, a tensor factory
** without a tensor or with another dtype or shape), POPC_EUNSUPPORTED
** (another dtype without a tensor), POPC_EEXIST (the name is taken),
** POPC_ENOMEM. Not thread-safe: only inside build. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_module_add_variable(
    popc_module_builder *b, const char *name, popc_dtype dt,
    const int64_t *dims, int rank, const popc_variable_factory *factory,
    int *value);
/* Declares value as the module's next output, named name (copied).
** POPC_OK, POPC_EINVAL (b or name NULL, a bad value id), POPC_EEXIST (an
** output of that name exists), POPC_ENOMEM. Not thread-safe: only inside
** build. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_module_add_output(
    popc_module_builder *b, const char *name, int value);

/* ---- what a module holds ------------------------------------------------ */

/* The module's name. Borrowed: valid while m lives; NULL for NULL.
** Thread-safe (m never changes once built). Since 0.3.0. */
POPC_API const char *popc_module_name(const popc_module *m);
/* The body: inputs and variables in declaration order (popc_module_slot
** tells which is which), outputs in declaration order. Borrowed: valid
** while m lives; NULL for NULL. Thread-safe to read. Since 0.3.0. */
POPC_API const popc_graph *popc_module_graph(const popc_module *m);
/* The number of body inputs (inputs and variables); 0 for NULL.
** Thread-safe. Since 0.3.0. */
POPC_API int popc_module_n_slots(const popc_module *m);
/* Body input k: its name, and 1 in *is_variable (may be NULL) when it is
** a variable. Borrowed: valid while m lives; NULL for a bad k (then
** *is_variable is not written). Thread-safe. Since 0.3.0. */
POPC_API const char *popc_module_slot(const popc_module *m, int k,
                                      int *is_variable);
/* The number of outputs; 0 for NULL. Thread-safe. Since 0.3.0. */
POPC_API int popc_module_n_outputs(const popc_module *m);
/* Output i's name. Borrowed: valid while m lives; NULL for a bad i.
** Thread-safe. Since 0.3.0. */
POPC_API const char *popc_module_output_name(const popc_module *m, int i);

/* ---- binding and calling ------------------------------------------------ */

/* Create m's variables in parent as weights "<prefix>/<name>" (trainable
** unless the factory says frozen), drawing random factories from seed and
** the variable's name. The caller owns *out and frees it with
** popc_bound_free. The binding refers to m, which must outlive it, and
** holds value ids of parent: use it in calls in parent only (not checked).
** POPC_OK, POPC_EINVAL (an argument NULL or prefix empty), POPC_EEXIST (a
** weight name is taken in parent), POPC_ENOMEM; parent keeps the weights
** made before a failure. Not thread-safe on one parent graph; m is only
** read. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_module_bind(const popc_module *m,
    popc_graph *parent, const char *prefix, uint64_t seed, popc_bound **out);
/* Frees b; its weights stay in the parent graph. NULL-safe. Not
** thread-safe: no other thread may use b. Since 0.3.0. */
POPC_API void popc_bound_free(popc_bound *b); /* NULL-safe */
/* The parent's value id of variable name, or -1 (also for NULL).
** Thread-safe (b never changes once made). Since 0.3.0. */
POPC_API int popc_bound_variable(const popc_bound *b, const char *name);

/* One call of m in parent: inputs[i] feeds m's i-th input (declaration
** order, variables excluded), outputs[j] receives its j-th output. b gives
** the variables (NULL only for a module without variables, such as a
** backward module, whose variables are then inputs). The Call node holds
** its own copy of the body. POPC_OK, POPC_EINVAL (an argument NULL, b of
** another module or missing, input or output counts that differ from m's,
** inputs the body cannot read), POPC_ESTATE (after popc_block_end),
** POPC_ENOMEM. Not thread-safe on one parent graph; m and b are only read.
** Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_module_call(popc_graph *parent,
    const popc_module *m, const popc_bound *b, const int *inputs,
    int n_inputs, int *outputs, int n_outputs);

/* ---- autodiff and weights ----------------------------------------------- */

/* The backward module of m (see the header comment). The caller owns
** *grad and frees it with popc_module_free. POPC_OK, POPC_EINVAL (m or
** grad NULL), POPC_ECOMPILE (an op of m without a gradient),
** POPC_ENOTFOUND (no loaded op plays Mul, ReduceSum or Add), POPC_ENOMEM.
** Thread-safe: m is only read (through a copy). Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_module_autodiff(
    const popc_module *m, popc_module **grad);

/* Copy every weight of src whose name starts with prefix (NULL: all) into
** the weight of the same name in dst, as PopXL's tutorial copies trained
** weights into its test session; *copied (may be NULL) counts them.
** Reading src first copies its weights from its device if they changed
** there. POPC_OK, POPC_EINVAL (a model NULL, a weight of another dtype or
** shape), POPC_ENOTFOUND (dst lacks one of them), POPC_ENOMEM; the weights
** copied before a failure stay copied. Not thread-safe on dst or src.
** Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_model_copy_weights(
    struct popc_model *dst, struct popc_model *src, const char *prefix,
    int *copied);

#ifdef __cplusplus
}
#endif
#endif /* POPC_MODULE_H */
