/* graph.h - the ONNX-shaped graph IR and its builder API.
**
** A graph holds values (SSA: each is produced once) and nodes. A value is a
** graph input (fed per micro-batch), an initializer (a weight or buffer,
** owned by the graph), a constant, or the output of one node. Values and
** nodes are named by small integer ids, stable for the graph's life; names
** are unique strings.
**
** Nodes carry an op type (domain, name, opset version), typed attributes
** (copied on add) and annotations (name scope, block, ipu, stage, phase,
** recompute, available-memory proportion). Shapes and dtypes are inferred
** as nodes are added when the op is known to the registry; verification
** before compile reports what is still wrong (popc_graph_verify).
**
** Not thread-safe: one thread builds a graph at a time.
**
** Since 0.1.0 unless a function says otherwise; the conventions of
** popc/status.h (ownership, status codes, threads) apply.
*/
#ifndef POPC_GRAPH_H
#define POPC_GRAPH_H

#include <stdint.h>
#include "popc/status.h"
#include "popc/types.h"
#include "popc/tensor.h"
#include "popc/attrs.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct popc_graph popc_graph; /* opaque */

#define POPC_DOMAIN_ONNX "ai.onnx"
#define POPC_DOMAIN_POPC "popc"
#define POPC_ONNX_OPSET 17

typedef enum popc_value_kind {
    POPC_VALUE_INPUT = 1,
    POPC_VALUE_INITIALIZER,
    POPC_VALUE_CONSTANT,
    POPC_VALUE_NODE_OUTPUT
} popc_value_kind;

/* Per-node placement and memory annotations. -1 means "not set" for the
** integer members; block NULL means none. */
typedef struct popc_annotations {
    const char *scope;        /* name scope ("layer1/conv") */
    const char *block;        /* Block user id */
    int ipu;
    int stage;
    int phase;
    int recompute;            /* 1: recomputation checkpoint */
    double available_memory;  /* proportion in (0, 1]; 0: not set */
} popc_annotations;

/* Empty graph. Free with popc_graph_free(). */
POPC_API POPC_NODISCARD popc_status popc_graph_new(const char *name,
    popc_graph **out);
POPC_API void popc_graph_free(popc_graph *g); /* NULL-safe */
/* Deep copy (weights copied). */
POPC_API POPC_NODISCARD popc_status popc_graph_clone(const popc_graph *g,
    popc_graph **out);
POPC_API const char *popc_graph_name(const popc_graph *g);

/* Mark g as read from the file `origin` (copied; NULL clears the mark).
** Readers of run files, executables and ONNX models call this, so that a
** node that runs foreign code (an op with POPC_OP_FOREIGN: a library and
** symbol named by the file) compiles only with the user's consent,
** popc_set_foreign_code_allowed(1). Clones keep the mark. POPC_OK,
** POPC_EINVAL (g NULL), POPC_ENOMEM. Not thread-safe on one graph.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_set_origin(popc_graph *g,
    const char *origin);
/* The file g was read from, or NULL when the program built it. */
POPC_API const char *popc_graph_origin(const popc_graph *g);

/* A graph input of one micro-batch's shape (dim 0 is the micro-batch). */
POPC_API POPC_NODISCARD popc_status popc_graph_add_input(popc_graph *g,
    const char *name, popc_dtype dt, const int64_t *dims, int rank, int *id);

/* A weight or buffer. The graph takes a reference on t (popc_tensor_ref);
** trainable = 0 for buffers (BatchNorm running statistics). */
POPC_API POPC_NODISCARD popc_status popc_graph_add_initializer(popc_graph *g,
    const char *name, popc_tensor *t, int trainable, int *id);

/* A constant (reference taken). name may be NULL: one is generated. */
POPC_API POPC_NODISCARD popc_status popc_graph_add_constant(popc_graph *g,
    const char *name, popc_tensor *t, int *id);

/* A node to add with popc_graph_add: the arguments of popc_graph_add_node
** by name. Start from {.size = sizeof(popc_node_desc)}; members a later
** version adds go at the end, so code built against this header keeps
** working. */
typedef struct popc_node_desc {
    uint32_t size;             /* sizeof(popc_node_desc) */
    const char *domain;        /* NULL: "ai.onnx" */
    const char *op;            /* "Relu" */
    int version;               /* 0: the domain's default opset */
    const int *inputs;         /* value ids; -1: absent optional input */
    int n_inputs;
    int n_outputs;
    const popc_attr *attrs;    /* copied */
    int n_attrs;
    const char *name;          /* NULL: generated from the scope and op */
} popc_node_desc;

/* Adds the node d describes; outputs[0..d->n_outputs) receive the ids of
** its outputs, *node (may be NULL) its id. The same rules and errors as
** popc_graph_add_node, plus POPC_EINVAL for a NULL or too small d (size
** below the first version's). Not thread-safe on one graph. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_add(popc_graph *g,
    const popc_node_desc *d, int *outputs, int *node);

/* Add a node. domain NULL means "ai.onnx"; version 0 means the domain's
** default opset. inputs may hold -1 for an absent optional input, or the
** id of a value added later (checked by popc_graph_verify). The
** outputs' ids are written to outputs[0..n_outputs). name may be NULL
** (generated from the scope and op). Attributes are copied. Shape inference
** runs at once if the op is registered; an unknown op is accepted here and
** reported by popc_graph_verify. *node may be NULL. */
POPC_API POPC_NODISCARD popc_status popc_graph_add_node(popc_graph *g,
    const char *domain, const char *op, int version, const int *inputs,
    int n_inputs, int *outputs, int n_outputs, const popc_attr *attrs,
    int n_attrs, const char *name, int *node);

/* Rename a value (node outputs are named "<node>:<i>" when added; an
** importer gives them the names of its file). POPC_EEXIST when another
** value has the name, POPC_EINVAL, POPC_ENOMEM. Rebuilds the name index:
** O(values). Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_set_value_name(popc_graph *g,
    int value, const char *name);

/* Mark a value as a graph output (returned by runs), in call order. */
POPC_API POPC_NODISCARD popc_status popc_graph_add_output(popc_graph *g,
    int value);

/* After each training step, copy `value` into the initializer `weight`
** (running statistics of BatchNormalization). */
POPC_API POPC_NODISCARD popc_status popc_graph_add_update(popc_graph *g,
    int weight, int value);

/* Annotations applied to every node added from now on (the Block /
** name-scope context). Strings are copied. */
POPC_API POPC_NODISCARD popc_status popc_graph_set_annotations(popc_graph *g,
    const popc_annotations *a);
POPC_API popc_annotations popc_graph_annotations(const popc_graph *g);
/* Push/pop one level of name scope ("layer1"). */
POPC_API POPC_NODISCARD popc_status popc_graph_push_scope(popc_graph *g,
    const char *scope);
POPC_API void popc_graph_pop_scope(popc_graph *g);
POPC_API POPC_NODISCARD popc_status popc_graph_set_node_annotations(
    popc_graph *g, int node, const popc_annotations *a);
/* Set attribute a->name of node `node` to a copy of a, replacing one of
** the same name. Shape inference does not run again: use it for
** attributes that change no output shape (the POPC_ATTR_* marks, a
** convolution's partials type), before compiling. POPC_EINVAL for a bad
** graph, node or attribute, POPC_ENOMEM. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_set_node_attr(popc_graph *g,
    int node, const popc_attr *a);

/* ---- queries ------------------------------------------------------------ */

POPC_API int popc_graph_n_values(const popc_graph *g);
POPC_API int popc_graph_n_nodes(const popc_graph *g);
POPC_API int popc_graph_n_inputs(const popc_graph *g);
POPC_API int popc_graph_n_outputs(const popc_graph *g);
POPC_API int popc_graph_input(const popc_graph *g, int i);   /* value id */
POPC_API int popc_graph_output(const popc_graph *g, int i);  /* value id */
/* -1 when no value has that name. */
POPC_API int popc_graph_find_value(const popc_graph *g, const char *name);
/* Borrowed; NULL for a bad id. */
POPC_API const char *popc_graph_value_name(const popc_graph *g, int value);
POPC_API popc_value_kind popc_graph_value_kind(const popc_graph *g, int value);
/* dtype/shape (dtype UNDEFINED when not inferred yet); data points at the
** tensor of an initializer or constant, else NULL. */
POPC_API popc_view popc_graph_value_info(const popc_graph *g, int value);
/* Initializer or constant tensor (borrowed), else NULL. */
POPC_API popc_tensor *popc_graph_value_tensor(const popc_graph *g, int value);
POPC_API int popc_graph_value_trainable(const popc_graph *g, int value);
/* Node producing the value, or -1. */
POPC_API int popc_graph_value_producer(const popc_graph *g, int value);

POPC_API const char *popc_graph_node_name(const popc_graph *g, int node);
POPC_API const char *popc_graph_node_domain(const popc_graph *g, int node);
POPC_API const char *popc_graph_node_op(const popc_graph *g, int node);
POPC_API int popc_graph_node_version(const popc_graph *g, int node);
POPC_API int popc_graph_node_n_inputs(const popc_graph *g, int node);
POPC_API int popc_graph_node_n_outputs(const popc_graph *g, int node);
POPC_API int popc_graph_node_input(const popc_graph *g, int node, int i);
POPC_API int popc_graph_node_output(const popc_graph *g, int node, int i);
POPC_API popc_attrs popc_graph_node_attrs(const popc_graph *g, int node);
POPC_API popc_annotations popc_graph_node_annotations(const popc_graph *g,
                                                      int node);
/* Where node was added: the first frame of the call stack that
** popc_graph_add_node recorded that lies outside popc itself (its
** libraries libpopc*, functions named popc_* or popci_*) and whose
** object path and symbol name contain none of the
** comma-separated strings of excludes (NULL or "None": none; PopTorch's
** sourceLocationExcludes). Written as "symbol+0xOFF (object)", or
** "object+0xOFF" (from the object's load address) when the dynamic symbol
** table does not name the function (link programs with -rdynamic to name
** theirs; addr2line -e object OFF gives file and line). The backward,
** recomputed and model.half() nodes derived from a node have its
** location; nodes read from files have none. Writes at most size bytes,
** NUL-terminated (buf may be NULL with size 0); returns the length of the
** whole text, 0 when the location is unknown. Safe from any thread while
** no thread changes g. Since 0.3.0. */
POPC_API size_t popc_graph_node_source(const popc_graph *g, int node,
                                       const char *excludes, char *buf,
                                       size_t size);

/* Buffer updates (popc_graph_add_update), in the order added: update i
** copies *value into the initializer *weight after each training step.
** POPC_EINVAL for a bad index. */
POPC_API int popc_graph_n_updates(const popc_graph *g);
POPC_API POPC_NODISCARD popc_status popc_graph_update(const popc_graph *g,
    int i, int *weight, int *value);

/* Replace an initializer's tensor (same dtype and shape; copied). */
POPC_API POPC_NODISCARD popc_status popc_graph_set_initializer(popc_graph *g,
    int value, const popc_tensor *t);

/* ---- checks ------------------------------------------------------------- */

/* Verify before compile: dangling values, cycles, unknown ops (all listed
** at once with node names), arity, dtype/shape mismatches (re-running
** inference on every node; outputs not inferred yet are filled in).
** POPC_ECOMPILE with the full list on failure. With training set, the
** graph must also have exactly one final loss (PopTorch's errors:
** "Couldn't find a loss in graph!" / "Multiple independent losses ..."). */
POPC_API POPC_NODISCARD popc_status popc_graph_verify(popc_graph *g,
    int training);

/* Node ids in a topological order (caller-allocated, n_nodes long). */
POPC_API POPC_NODISCARD popc_status popc_graph_topo_order(const popc_graph *g,
    int *order);

/* ---- transforms and reference evaluation ---------------------------------- */

/* Reverse-mode autodiff: add backward nodes computing d(loss)/d(wrt[i])
** for the scalar value `loss`, whose gradient is seeded with `seed` (the
** loss scaling; 1.0 normally). grads[i] receives the gradient value id, or
** -1 when wrt[i] does not influence the loss. Fails naming the node whose
** op has no gradient. */
POPC_API POPC_NODISCARD popc_status popc_graph_gradients(popc_graph *g,
    int loss, const int *wrt, int n_wrt, double seed, int *grads);

/* Evaluate values of the graph on the reference kernels, single-threaded
** (constant folding, tests, finite differences). inputs are the graph
** inputs in order (borrowed; shapes may differ from the declared ones in
** dim 0 only if shapes are re-inferred: they must match). out[i] receives
** a new tensor for values[i]. training selects training-mode kernels;
** seed feeds random ops. */
POPC_API POPC_NODISCARD popc_status popc_graph_eval(const popc_graph *g,
    popc_tensor *const *inputs, int n_inputs, const int *values,
    int n_values, popc_tensor **out, int training, uint64_t seed);

/* Human-readable listing, one node per line, into a malloc'd string the
** caller frees. */
POPC_API POPC_NODISCARD popc_status popc_graph_dump(const popc_graph *g,
    char **out);

#ifdef __cplusplus
}
#endif
#endif /* POPC_GRAPH_H */
