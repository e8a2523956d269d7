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

/* Empty graph named name (NULL or "": "graph"). The caller owns *out and
** frees it with popc_graph_free(). POPC_OK, POPC_EINVAL (out NULL),
** POPC_ENOMEM. Thread-safe: the new graph is the caller's alone.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_new(const char *name,
    popc_graph **out);
/* Frees g, its values and nodes, and drops its references to their
** tensors (references the caller holds stay valid). Not thread-safe on
** one graph: no other thread may be using g. Since 0.1.0. */
POPC_API void popc_graph_free(popc_graph *g); /* NULL-safe */
/* Deep copy: weights are copied, not shared; the origin mark, name scope,
** current annotations and Block context (popc/blocks.h: whether a block
** ended, the next automatic block id) are kept. The caller owns *out and
** frees it with popc_graph_free(). POPC_OK, POPC_EINVAL (g or out NULL),
** POPC_ENOMEM. Safe from any thread while no thread changes g.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_clone(const popc_graph *g,
    popc_graph **out);
/* g's name; NULL for a NULL g. Borrowed: valid while g lives. Thread-safe
** (the name never changes). Since 0.1.0. */
POPC_API const char *popc_graph_name(const popc_graph *g);

/* Mark g as read from the file `origin` (copied; NULL clears the mark).
** Readers of run files, executables and ONNX models call this, so that a
** node that runs foreign code (an op with POPC_OP_FOREIGN: a library and
** symbol named by the file) compiles only with the user's consent,
** popc_set_foreign_code_allowed(1); without it popc_graph_verify fails
** with POPC_EPERM. Clones keep the mark. POPC_OK, POPC_EINVAL (g NULL),
** POPC_ENOMEM. Not thread-safe on one graph. Since 0.2.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_set_origin(popc_graph *g,
    const char *origin);
/* The file g was read from, or NULL when the program built it (or g is
** NULL). Borrowed: valid until popc_graph_set_origin or popc_graph_free
** on g. Safe from any thread while no thread changes g. Since 0.2.0. */
POPC_API const char *popc_graph_origin(const popc_graph *g);

/* A graph input of one micro-batch's shape (dim 0 is the micro-batch);
** dims are copied and *id receives its value id. POPC_OK, POPC_EINVAL (g
** or id NULL, no name, unknown dtype, bad rank or dims), POPC_EEXIST (a
** value has the name), POPC_ENOMEM. Not thread-safe on one graph.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_add_input(popc_graph *g,
    const char *name, popc_dtype dt, const int64_t *dims, int rank, int *id);

/* A weight or buffer. The graph takes a reference on t (popc_tensor_ref)
** instead of a copy, so the caller may drop its own, and writes through
** it change the weight; trainable = 0 for buffers (BatchNorm running
** statistics). POPC_OK, POPC_EINVAL (g, t or id NULL, no name),
** POPC_EEXIST (a value has the name), POPC_ENOMEM. Not thread-safe on one
** graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_add_initializer(popc_graph *g,
    const char *name, popc_tensor *t, int trainable, int *id);

/* A constant (reference taken, as for initializers). name may be NULL: a
** unique "const_<n>" is generated. POPC_OK, POPC_EINVAL (g, t or id NULL,
** name ""), POPC_EEXIST (a value has the name), POPC_ENOMEM. Not
** thread-safe on one graph. Since 0.1.0. */
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
** its outputs, *node (may be NULL) its id. The same rules and status
** codes as popc_graph_add_node, plus POPC_EINVAL for a NULL or too small
** d (size below the first version's). Not thread-safe on one graph.
** Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_add(popc_graph *g,
    const popc_node_desc *d, int *outputs, int *node);

/* Add a node. domain NULL means "ai.onnx"; version 0 means the domain's
** default opset. inputs may hold -1 for an absent optional input, or the
** id of a value added later (checked by popc_graph_verify). The
** outputs' ids are written to outputs[0..n_outputs). name may be NULL
** (generated from the scope and op); a name given gets the scope as a
** prefix. Attributes are copied. Shape inference runs at once if the op
** is registered; an unknown op is accepted here and reported by
** popc_graph_verify. *node may be NULL. A failed add leaves g as it was.
** POPC_OK, POPC_EINVAL (bad argument, input id, arity, attribute or
** shapes), POPC_EEXIST (name taken), POPC_ESTATE (after popc_block_end),
** POPC_EPLUGIN (a broken infer()), POPC_ENOMEM, or the op's infer() code.
** Not thread-safe on one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_add_node(popc_graph *g,
    const char *domain, const char *op, int version, const int *inputs,
    int n_inputs, int *outputs, int n_outputs, const popc_attr *attrs,
    int n_attrs, const char *name, int *node);

/* Rename a value (node outputs are named "<node>:<i>" when added; an
** importer gives them the names of its file). POPC_OK (also when the
** value has the name already), POPC_EINVAL (g NULL, empty name, no such
** value), POPC_EEXIST when another value has the name, POPC_ENOMEM. Not
** thread-safe on one graph. Since 0.2.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_set_value_name(popc_graph *g,
    int value, const char *name);

/* Mark a value as a graph output (returned by runs), in call order.
** POPC_OK, POPC_EINVAL (g NULL or no such value), POPC_ENOMEM. Not
** thread-safe on one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_add_output(popc_graph *g,
    int value);

/* After each training step, copy `value` into the initializer `weight`
** (running statistics of BatchNormalization); one update per weight.
** POPC_OK, POPC_EINVAL (g NULL, no such value, weight not an
** initializer), POPC_EEXIST (weight has an update), POPC_ENOMEM. Not
** thread-safe on one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_add_update(popc_graph *g,
    int weight, int value);

/* Annotations applied to every node added from now on (the Block /
** name-scope context). Strings are copied; a->scope replaces the whole
** scope stack; a NULL resets everything. Either way an ended Block no
** longer refuses new nodes (popc/blocks.h). POPC_OK, POPC_EINVAL (g NULL,
** ipu, stage, phase or recompute below -1, available memory outside
** (0, 1]), POPC_ENOMEM. Not thread-safe on one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_set_annotations(popc_graph *g,
    const popc_annotations *a);
/* The annotations new nodes get now. Its strings are borrowed: valid
** until g's annotations, scope or Block change. Safe from any thread
** while no thread changes g. Since 0.1.0. */
POPC_API popc_annotations popc_graph_annotations(const popc_graph *g);
/* Push one level of name scope ("layer1", copied): nodes added next are
** named "layer1/...". POPC_OK, POPC_EINVAL (g NULL or scope empty),
** POPC_ENOMEM. Not thread-safe on one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_push_scope(popc_graph *g,
    const char *scope);
/* Pop one level of name scope; nothing when none is pushed. NULL-safe.
** Not thread-safe on one graph. Since 0.1.0. */
POPC_API void popc_graph_pop_scope(popc_graph *g);
/* Replace node `node`'s annotations with a copy of *a (an empty string:
** none); where the node was added (popc_graph_node_source) is kept.
** POPC_OK, POPC_EINVAL (bad g, a or node id, a member out of range),
** POPC_ENOMEM. Not thread-safe on one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_set_node_annotations(
    popc_graph *g, int node, const popc_annotations *a);
/* Set attribute a->name of node `node` to a copy of a, replacing one of
** the same name. Shape inference does not run again: use it for
** attributes that change no output shape (the POPC_ATTR_* marks, a
** convolution's partials type), before compiling. POPC_OK, POPC_EINVAL
** for a bad graph, node or attribute, POPC_ENOMEM. Not thread-safe on
** one graph. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_set_node_attr(popc_graph *g,
    int node, const popc_attr *a);

/* ---- queries ------------------------------------------------------------ */

/* Number of values, ids 0..n-1; 0 for a NULL g. Safe from any thread
** while no thread changes g. Since 0.1.0. */
POPC_API int popc_graph_n_values(const popc_graph *g);
/* Number of nodes, ids 0..n-1; 0 for a NULL g. Safe from any thread
** while no thread changes g. Since 0.1.0. */
POPC_API int popc_graph_n_nodes(const popc_graph *g);
/* Number of graph inputs; 0 for a NULL g. Safe from any thread while no
** thread changes g. Since 0.1.0. */
POPC_API int popc_graph_n_inputs(const popc_graph *g);
/* Number of graph outputs; 0 for a NULL g. Safe from any thread while no
** thread changes g. Since 0.1.0. */
POPC_API int popc_graph_n_outputs(const popc_graph *g);
/* Graph input i in the order added; -1 for a bad i. Safe from any
** thread while no thread changes g. Since 0.1.0. */
POPC_API int popc_graph_input(const popc_graph *g, int i);   /* value id */
/* Graph output i in the order added; -1 for a bad i. Safe from any
** thread while no thread changes g. Since 0.1.0. */
POPC_API int popc_graph_output(const popc_graph *g, int i);  /* value id */
/* -1 when no value has that name. Safe from any thread while no thread
** changes g. Since 0.1.0. */
POPC_API int popc_graph_find_value(const popc_graph *g, const char *name);
/* Borrowed: valid until the value is renamed or g is freed; NULL for a
** bad id. Safe from any thread while no thread changes g. Since 0.1.0. */
POPC_API const char *popc_graph_value_name(const popc_graph *g, int value);
/* 0 (no kind) for a bad id. Safe from any thread while no thread changes
** g. Since 0.1.0. */
POPC_API popc_value_kind popc_graph_value_kind(const popc_graph *g, int value);
/* dtype/shape (dtype UNDEFINED when not inferred yet); data points at the
** tensor of an initializer or constant, else NULL: borrowed, valid until
** popc_graph_set_initializer replaces it or g is freed. Safe from any
** thread while no thread changes g. Since 0.1.0. */
POPC_API popc_view popc_graph_value_info(const popc_graph *g, int value);
/* Initializer or constant tensor, else NULL. Borrowed, no reference
** added: valid until popc_graph_set_initializer replaces it or g is
** freed (popc_tensor_ref keeps it longer). Safe from any thread while no
** thread changes g. Since 0.1.0. */
POPC_API popc_tensor *popc_graph_value_tensor(const popc_graph *g, int value);
/* 1 for a trainable initializer; 0 for a buffer, another kind or a bad
** id. Safe from any thread while no thread changes g. Since 0.1.0. */
POPC_API int popc_graph_value_trainable(const popc_graph *g, int value);
/* Node producing the value, or -1. Safe from any thread while no thread
** changes g. Since 0.1.0. */
POPC_API int popc_graph_value_producer(const popc_graph *g, int value);

/* The node's unique name. Borrowed: valid while g lives and is not
** changed; NULL for a bad id. Safe from any thread while no thread
** changes g. Since 0.1.0. */
POPC_API const char *popc_graph_node_name(const popc_graph *g, int node);
/* The op's domain ("ai.onnx" for a NULL one). Borrowed: valid while g
** lives and is not changed; NULL for a bad id. Safe from any thread
** while no thread changes g. Since 0.1.0. */
POPC_API const char *popc_graph_node_domain(const popc_graph *g, int node);
/* The op's type ("Relu"). Borrowed: valid while g lives and is not
** changed; NULL for a bad id. Safe from any thread while no thread
** changes g. Since 0.1.0. */
POPC_API const char *popc_graph_node_op(const popc_graph *g, int node);
/* The op's opset version (0 given for ai.onnx reads POPC_ONNX_OPSET); -1
** for a bad id. Safe from any thread while no thread changes g.
** Since 0.1.0. */
POPC_API int popc_graph_node_version(const popc_graph *g, int node);
/* Inputs of the node, absent optional ones included; 0 for a bad id.
** Safe from any thread while no thread changes g. Since 0.1.0. */
POPC_API int popc_graph_node_n_inputs(const popc_graph *g, int node);
/* Outputs of the node; 0 for a bad id. Safe from any thread while no
** thread changes g. Since 0.1.0. */
POPC_API int popc_graph_node_n_outputs(const popc_graph *g, int node);
/* Value id of input i; -1 for an absent one or a bad node or i. Safe
** from any thread while no thread changes g. Since 0.1.0. */
POPC_API int popc_graph_node_input(const popc_graph *g, int node, int i);
/* Value id of output i; -1 for a bad node or i. Safe from any thread
** while no thread changes g. Since 0.1.0. */
POPC_API int popc_graph_node_output(const popc_graph *g, int node, int i);
/* The node's attributes, borrowed: valid until popc_graph_set_node_attr
** on the node or g is freed; none for a bad id. Safe from any thread
** while no thread changes g. Since 0.1.0. */
POPC_API popc_attrs popc_graph_node_attrs(const popc_graph *g, int node);
/* The node's annotations; strings borrowed: valid until
** popc_graph_set_node_annotations on the node or g is freed; all unset
** for a bad id. Safe from any thread while no thread changes g.
** Since 0.1.0. */
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
** no thread changes g. Since 0.2.0. */
POPC_API size_t popc_graph_node_source(const popc_graph *g, int node,
                                       const char *excludes, char *buf,
                                       size_t size);

/* Buffer updates (popc_graph_add_update), in the order added. Safe from
** any thread while no thread changes g. Since 0.1.0. */
POPC_API int popc_graph_n_updates(const popc_graph *g);
/* Update i copies *value into the initializer *weight after each
** training step (weight or value may be NULL). POPC_OK, POPC_EINVAL (g
** NULL or a bad index; *weight and *value are then -1). Safe from any
** thread while no thread changes g. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_update(const popc_graph *g,
    int i, int *weight, int *value);

/* ---- rewriting a graph (graph optimization passes) ------------------ */

/* Every use of value `from` (node inputs, graph outputs, buffer updates'
** values) becomes a use of `to`; the caller keeps dtypes and shapes
** equal. Ids do not move. POPC_OK, POPC_EINVAL (g NULL, from or to not a
** value of g). Not thread-safe on one graph. Since 0.4.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_replace_uses(popc_graph *g,
    int from, int to);
/* Drop the nodes whose outputs nothing reads (no live node, graph output
** or buffer update), and the constants nothing reads; inputs,
** initializers and nodes with effects (host, loss, foreign, never-folded
** ops, subgraph holders, unknown ops) stay. Value and node ids are
** renumbered: ids held from before are invalid. *removed (may be NULL)
** receives the number of nodes dropped. POPC_OK, POPC_EINVAL (g NULL),
** POPC_ECOMPILE (a cycle), POPC_ENOMEM. Not thread-safe on one graph.
** Since 0.4.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_prune(popc_graph *g,
    int *removed);

/* Replace an initializer's tensor with a copy of t (same dtype and
** shape). The graph drops its reference to the old tensor: a pointer from
** popc_graph_value_tensor stays valid only if its holder took a
** reference. POPC_OK, POPC_EINVAL (bad g, t or id, not an initializer,
** other dtype or shape), POPC_ENOMEM. Not thread-safe on one graph.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_set_initializer(popc_graph *g,
    int value, const popc_tensor *t);

/* ---- checks ------------------------------------------------------------- */

/* Verify before compile: dangling values, cycles, unknown ops (all listed
** at once with node names), arity, dtype/shape mismatches (re-running
** inference on every node; outputs not inferred yet are filled in). With
** training set, the graph must also have exactly one final loss
** (PopTorch's errors: "Couldn't find a loss in graph!" / "Multiple
** independent losses ..."). POPC_OK, POPC_ECOMPILE with the full list,
** POPC_EPERM (foreign code in a graph read from a file, without the
** user's consent: popc_graph_set_origin), POPC_EINVAL (g NULL),
** POPC_ENOMEM. Not thread-safe on one graph: it fills in shapes.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_verify(popc_graph *g,
    int training);

/* Node ids in a topological order (caller-allocated, n_nodes long).
** POPC_OK, POPC_EINVAL (g NULL, order NULL), POPC_ECOMPILE (a cycle,
** naming its nodes), POPC_ENOMEM. Safe from any thread while no thread
** changes g. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_topo_order(const popc_graph *g,
    int *order);

/* ---- transforms and reference evaluation -------------------------------- */

/* Reverse-mode autodiff: add backward nodes computing d(loss)/d(wrt[i])
** for the value `loss`, whose gradient is seeded with `seed` (the loss
** scaling; 1.0 normally). grads[i] receives the gradient value id, or -1
** when wrt[i] does not influence the loss. Fails naming the node whose
** op has no gradient; a failure removes the nodes it added. POPC_OK,
** POPC_EINVAL (bad ids or arrays, loss not float), POPC_ECOMPILE (loss
** shape unknown, a cycle, an op without gradient), POPC_EPLUGIN (a bad
** grad()), POPC_ENOTFOUND (no op loaded to sum gradients), POPC_ENOMEM,
** or a grad()'s own code. Not thread-safe on one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_gradients(popc_graph *g,
    int loss, const int *wrt, int n_wrt, double seed, int *grads);

/* Evaluate values of the graph on the reference kernels, on the calling
** thread only (constant folding, tests, finite differences). inputs are
** the graph inputs in order (borrowed; only dim 0 may differ from the
** declared shape, as inference runs again on the actual ones). out[i]
** receives a new tensor for values[i]: the caller owns it and drops it
** with popc_tensor_unref() (all NULL on failure). training selects
** training-mode kernels; seed feeds random ops. POPC_OK, POPC_EINVAL (bad
** arguments or inputs), POPC_ECOMPILE (unknown op, dangling input,
** cycle), POPC_EPLUGIN, POPC_ENOMEM, or a kernel's own code. Safe from
** any thread while no thread changes g or writes the inputs.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_eval(const popc_graph *g,
    popc_tensor *const *inputs, int n_inputs, const int *values,
    int n_values, popc_tensor **out, int training, uint64_t seed);

/* Human-readable listing, one node per line. The caller owns *out (NULL
** on failure) and frees it with free(). POPC_OK, POPC_EINVAL (g or out
** NULL), POPC_ENOMEM. Safe from any thread while no thread changes g.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_dump(const popc_graph *g,
    char **out);

/* ---- graph serialization ------------------------------------------------ */

/* The graph as bytes: every value (with initializer and constant data),
** node, attribute, annotation, output and buffer update; not the origin
** mark (popc_graph_set_origin). *data is malloc'd: the caller owns it and
** frees it with free(). POPC_OK, POPC_EINVAL (an argument NULL),
** POPC_ENOMEM. Safe from any thread while no thread changes g.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_serialize(const popc_graph *g,
    void **data, size_t *size);
/* The graph back, with the same ids, names, shapes and tensor bytes
** (popc_graph_dump gives the same text). The caller owns *out and frees
** it with popc_graph_free. Its origin mark is "serialized graph bytes",
** so foreign code in it needs the user's consent like a file's; a
** program that vouches for the bytes clears it (popc_graph_set_origin(g,
** NULL)).
** POPC_OK, POPC_EINVAL (out NULL, data NULL with size > 0), POPC_EIO for
** bytes that are not a well-formed graph (the message says where),
** POPC_EUNSUPPORTED for another format version, POPC_ENOMEM. Thread-safe:
** data is only read. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_deserialize(const void *data,
    size_t size, popc_graph **out);

#ifdef __cplusplus
}
#endif
#endif /* POPC_GRAPH_H */
