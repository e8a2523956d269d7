/* onnx.h - ONNX models in and out of popc (library popc-onnx).
**
** Import turns an ONNX ModelProto into a popc graph:
**  - graph inputs and outputs keep the names of the file; initializers
**    become weights, trainable or constants as the caller chooses;
**  - every node becomes a popc node of the same domain, op and opset
**    ("" and "ai.onnx" are popc's ONNX domain; any other domain resolves
**    through the plugin registry, so a third-party op plugin serves its
**    own domain). Opsets 1 to 17 of ai.onnx are read; older node forms are
**    upgraded the way onnx's version converter does (attributes that
**    became inputs, removed attributes) to the form popc's ops implement;
**  - shapes are fixed at import, as PopTorch fixes them when it traces:
**    symbolic dimensions of graph inputs are bound from the shapes the
**    caller gives, and graph inputs that feed operands which must be known
**    at compile time (a Reshape's shape, a Slice's starts) can be frozen to
**    values. Shape computations on constants (Shape -> Gather -> Concat
**    -> Reshape, as PyTorch exports them) are folded to constants;
**  - a model with ops popc does not have fails once, listing every such
**    node: its name, op, domain and opset.
**
** Errors name the file, the node and the fix. All functions are
** thread-safe for distinct arguments. Since 0.2.0.
**
** The conventions of popc/status.h (ownership, status codes, threads)
** apply.
*/
#ifndef POPC_ONNX_H
#define POPC_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "popc/graph.h"
#include "popc/model.h"
#include "popc/registry.h"
#include "popc/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PopTorch's annotations for every node whose name starts with prefix
** (an empty prefix matches every node); later entries win. */
typedef struct popc_onnx_annotation {
    const char *prefix;
    popc_annotations annot;
} popc_onnx_annotation;

typedef struct popc_onnx_import_options {
    uint32_t size;             /* sizeof(popc_onnx_import_options) */
    int trainable;             /* initializers: 1 trainable, 0 constants */
    popc_registry *registry;   /* NULL: the global registry */
    /* Shapes of graph inputs (binding symbolic or unknown dimensions):
    ** shapes[i] (dtype, rank, dims; data ignored) for shape_names[i]. */
    int n_shapes;
    const char *const *shape_names;
    const popc_view *shapes;
    /* Graph inputs frozen to values (borrowed; copied): they become
    ** constants, as PopTorch's tracing turns shape arguments into
    ** constants. */
    int n_values;
    const char *const *value_names;
    popc_tensor *const *values;
    /* Annotations by node-name prefix. */
    int n_annotations;
    const popc_onnx_annotation *annotations;
    /* 1: add no graph outputs; the caller picks values by name
    ** (popc_graph_find_value) and adds its own, e.g. a loss. */
    int no_outputs;
    /* (since 0.3.0) 1: PyTorch's model.eval() for a model exported for
    ** training (TrainingMode.TRAINING): every BatchNormalization
    ** normalises with its running statistics (training_mode 0, the
    ** running mean and variance outputs left out, so they are never
    ** updated) and every Dropout passes its input through (its
    ** training_mode input is left out: false). Use it for inference and
    ** export; an exported eval-mode graph is what torch.onnx.export
    ** writes for model.eval(). 0 (the default) keeps ONNX's meaning of
    ** each node: a BatchNormalization with training_mode 1 normalises
    ** with the statistics of its batch even in an inference model, as
    ** PopTorch's inferenceModel of a model left in train() does. A
    ** training model normalises with batch statistics either way. */
    int eval_mode;
} popc_onnx_import_options;

/* Defaults: constants, the global registry, nothing bound or frozen.
** Thread-safe (writes *o only). Since 0.2.0. */
POPC_API void popc_onnx_import_options_init(popc_onnx_import_options *o);

/* Import the model in path (external data files are looked up next to
** it). opt may be NULL. Returns POPC_OK, POPC_EIO (unreadable or corrupt
** file, naming it), POPC_EUNSUPPORTED (unsupported ops, all listed; an
** opset outside what popc reads; a type popc has no dtype for),
** POPC_EINVAL (path or out NULL; an unbound symbolic dimension, naming
** the input and how to bind it; a bound shape that does not fit; a node
** its op refuses), POPC_ENOMEM. The caller owns *out (NULL on failure)
** and frees it with popc_graph_free(). Thread-safe; without
** opt->registry it loads the global registry on first use.
** Since 0.2.0. */
POPC_API POPC_NODISCARD popc_status popc_onnx_import_file(const char *path,
    const popc_onnx_import_options *opt, popc_graph **out);

/* popc_onnx_import_file for a runner that holds a value for graph inputs
** (typically every input it has), reading the model once: a candidate
** (names[i], values[i], i < n) for a graph input that must be known at
** compile time (one popc_onnx_compile_time_inputs lists) is frozen to
** it, as opt->values freezes (opt->values wins over a candidate of the
** same name); any other candidate is left alone (bind its shape with
** opt->shapes). frozen (may be NULL): n flags, written once the
** arguments are checked: 1 for a candidate frozen, 0 for one that was
** not (a run-time input, or no graph input of that name). values are
** borrowed (copied when frozen). Statuses as popc_onnx_import_file,
** POPC_EINVAL also for n < 0, names or values NULL with n > 0, or a
** values[i] NULL. The caller owns *out (NULL on failure) and frees it
** with popc_graph_free(). Thread-safe. Since 0.4.0. */
POPC_API POPC_NODISCARD popc_status popc_onnx_import_file_candidates(
    const char *path, const popc_onnx_import_options *opt, int n,
    const char *const *names, popc_tensor *const *values, int *frozen,
    popc_graph **out);

/* The same from bytes; name is used in messages, base_dir (may be NULL:
** no external data allowed) resolves external data files. data is
** borrowed for the call. Statuses as popc_onnx_import_file (POPC_EINVAL
** also for data NULL with size > 0). The caller owns *out (NULL on
** failure) and frees it with popc_graph_free(). Thread-safe.
** Since 0.2.0. */
POPC_API POPC_NODISCARD popc_status popc_onnx_import_bytes(const void *data,
    size_t size, const char *name, const char *base_dir,
    const popc_onnx_import_options *opt, popc_graph **out);

/* The graph inputs whose values must be known at compile time because
** they feed such operands (a Reshape's shape, a Slice's starts, ...):
** *names and *n, in the order of the model's inputs. For runners that
** freeze inputs; one that already holds every input's value can call
** popc_onnx_import_file_candidates instead and read the model once
** (this reads the whole file too, though without copying the weights).
** Returns POPC_OK, POPC_EINVAL (a NULL argument), POPC_EIO (unreadable
** file or not an ONNX model), POPC_ENOMEM. The caller owns *names (a
** malloc'd array of *n malloc'd strings, also when *n is 0) and frees it
** with popc_onnx_free_names(*names, *n). Thread-safe. Since 0.2.0. */
POPC_API POPC_NODISCARD popc_status popc_onnx_compile_time_inputs(
    const char *path, char ***names, int *n);

/* Free names[0..n) and the array names. NULL-safe. Thread-safe for
** distinct arrays. Since 0.2.0. */
POPC_API void popc_onnx_free_names(char **names, int n);

/* Export (popc to ONNX). Writes g as an ONNX model (atomically): graph
** inputs with their compiled shapes, weights and constants as
** initializers, every node with its attributes; ai.onnx nodes at one
** opset (the newest among them), other domains with their own opset
** imports. Importing the file gives a graph that computes bitwise the same
** outputs. Subgraph attributes (Loop, If, Scan bodies) are written too.
** Returns POPC_OK, POPC_EINVAL (g or path NULL, an empty path),
** POPC_EUNSUPPORTED (a dtype ONNX has no type for, op versions that no
** single opset holds, opset 8's batched Scan, a model over 2 GiB),
** POPC_EIO naming the file, POPC_ENOMEM. Thread-safe for distinct
** paths (g is only read). Since 0.2.0. */
POPC_API POPC_NODISCARD popc_status popc_onnx_export_graph(
    const popc_graph *g, const char *path);

/* The same for a model's graph with its current weights (copied from the
** device first: the trained values). Export an inference model; a
** training model's graph holds its loss. Statuses as
** popc_onnx_export_graph (POPC_EINVAL also for m NULL), or the error of
** copying the weights from the device. Not thread-safe on one model.
** Since 0.2.0. */
POPC_API POPC_NODISCARD popc_status popc_onnx_export_model(
    popc_model *m, const char *path);

/* Let INI runs name ONNX models (popc/run.h: [model] onnx = FILE,
** [train] export_onnx = FILE): registers the "onnx" model format with
** libpopc. The popc command calls it at start; a program using
** popc_run_* with ONNX models calls it once; calling it again is
** harmless. Returns POPC_OK, POPC_EINVAL (the format table is full).
** Thread-safe; process-wide. Since 0.2.0. */
POPC_API POPC_NODISCARD popc_status popc_onnx_register_run_format(void);

/* A TensorProto file (such as the conformance suite's input_0.pb): *out a
** new tensor; *name (may be NULL) the tensor's name, or NULL when it has
** none. External data is read next to path. Returns POPC_OK, POPC_EINVAL
** (path or out NULL), POPC_EIO (unreadable or corrupt file, missing
** external data), POPC_EUNSUPPORTED (a type popc has no dtype for),
** POPC_ENOMEM. The caller owns *out (popc_tensor_free()) and
** *name (free()). Thread-safe. Since 0.2.0. */
POPC_API POPC_NODISCARD popc_status popc_onnx_read_tensor(const char *path,
    popc_tensor **out, char **name);

/* Write t as a TensorProto file (atomically); name may be NULL. Returns
** POPC_OK, POPC_EINVAL (path or t NULL, an empty path), POPC_EUNSUPPORTED
** (a dtype ONNX has no type for), POPC_EIO naming the file, POPC_ENOMEM.
** Thread-safe for distinct paths. Since 0.2.0. */
POPC_API POPC_NODISCARD popc_status popc_onnx_write_tensor(const char *path,
    const popc_tensor *t, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* POPC_ONNX_H */
