/* onnx_priv.h - shared internals of the ONNX layer (libpopc-onnx).
**
** proto.c     reading files and unpacking messages, with size checks
** wire.c      the wire format walked without recursion; limits checked
** lean.c      unpacking without copying the weights
** tensor.c    TensorProto <-> popc_tensor (every dtype, raw and typed
**             fields, external data)
** history.c   the version history of every ai.onnx op (generated)
** upgrade.c   old node forms rewritten to the forms popc's ops implement
** import.c    ModelProto -> popc_graph
** import_attrs.c  AttributeProto -> popc_attr
** fold.c      constant folding at import
** sequence.c  ONNX sequences, resolved at import into tensor values
*/
#ifndef POPC_ONNX_PRIV_H
#define POPC_ONNX_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "popc/model.h"
#include "popc/onnx.h"
#include "popc/limits.h"
#include "popc/plugin.h"
#include "onnx.pb-c.h"

/* Files larger than this are refused before reading (protobuf's own 2 GiB
** limit; larger weights must be external data). */
#define POPCO_MAX_MODEL_BYTES ((size_t)2 << 30)

/* ---- proto.c ------------------------------------------------------------- */

/* A file's bytes, mapped read-only. */
typedef struct popco_map {
    void *data;
    size_t size;
} popco_map;

popc_status popco_map_file(const char *path, popco_map *m);
void popco_unmap(popco_map *m);

/* Unpack with protobuf-c; POPC_EIO "<name>: not a valid ONNX ... file". */
popc_status popco_unpack_model(const void *data, size_t size,
                               const char *name, Onnx__ModelProto **out);

/* ---- wire.c -------------------------------------------------------------- */

/* One varint at *at (< end); -1 when malformed. */
int popco_wire_varint(const uint8_t *p, size_t end, size_t *at, uint64_t *v);
/* One field starting at *at: its number, wire type, and for wire type 2
** the payload [*payload, *payload + *len). *at moves past it; -1 when
** malformed (groups included). */
int popco_wire_field(const uint8_t *p, size_t end, size_t *at,
                     uint32_t *field, int *wire, size_t *payload, size_t *len);
/* Walks an encoded message of type desc without recursing and refuses it
** (naming file and the limit) when it exceeds a limit of popc/limits.h:
** message depth, subgraph nesting, messages, nodes, string bytes,
** attribute list values. Call before any protobuf-c unpack. */
popc_status popco_wire_check(const void *data, size_t size,
                             const ProtobufCMessageDescriptor *desc,
                             const char *file);

/* ---- lean.c -------------------------------------------------------------- */

/* Where an initializer's raw_data lies in the file (len 0: none). */
typedef struct popco_raw_ref {
    size_t off, len;
} popco_raw_ref;

/* popco_unpack_model without copying the main graph's initializer
** raw_data: those point into data (which must stay mapped) and *refs
** (one per initializer) says so; *refs is NULL when the model was
** unpacked the usual way (owning every byte). */
popc_status popco_unpack_model_lean(const void *data, size_t size,
                                    const char *name, Onnx__ModelProto **out,
                                    popco_raw_ref **refs);
/* After its bytes were copied: drop an initializer's pages of the mapping
** and its borrowed raw_data pointer. */
void popco_lean_release(Onnx__TensorProto *tp, const popco_map *map);
/* memcpy from a read-only file mapping, dropping the source's pages as
** they are copied, so that source and copy are not both resident. */
void popco_copy_from_mapping(void *dst, const void *src, size_t n);
/* Before onnx__model_proto__free_unpacked: clear the borrowed pointers
** left, and free refs (NULL-safe). */
void popco_lean_forget(Onnx__ModelProto *mp, popco_raw_ref *refs);
popc_status popco_unpack_tensor(const void *data, size_t size,
                                const char *name, Onnx__TensorProto **out);

/* ---- tensor.c ------------------------------------------------------------ */

/* ONNX TensorProto.DataType <-> popc; -1 / POPC_DTYPE_UNDEFINED when none. */
popc_dtype popco_dtype_from_onnx(int onnx_type);
int popco_dtype_to_onnx(popc_dtype dt);
const char *popco_onnx_type_name(int onnx_type);

/* Where a tensor's external data may come from: files under base_dir
** (NULL: none allowed). */
typedef struct popco_tensor_src {
    const char *file;      /* for messages */
    const char *base_dir;
    int raw_is_mapped;     /* raw_data points into a file mapping (lean.c) */
    int64_t *bytes_made;   /* tensor bytes made from this file so far,
                           ** checked against POPC_LIMIT_INITIALIZER_BYTES;
                           ** NULL: each tensor alone */
} popco_tensor_src;

/* A new popc tensor from a TensorProto; what names the tensor in errors. */
popc_status popco_tensor_from_proto(const Onnx__TensorProto *tp,
                                    const popco_tensor_src *src,
                                    const char *what, popc_tensor **out);
/* Fill tp (zero-initialised by the caller) from t: dims, data_type and
** raw_data (little-endian), pointing into t's data (t must outlive tp). */
popc_status popco_tensor_to_proto(const popc_tensor *t, const char *name,
                                  Onnx__TensorProto *tp, int64_t *dims_buf);

/* ---- history.c ----------------------------------------------------------- */

/* The versions (ascending) at which ai.onnx op `op` changed; NULL when the
** op is unknown to the table. *n their count. */
const int *popco_op_history(const char *op, int *n);
/* The version of the op's schema in force at opset `opset`: the largest
** history entry <= opset; 0 when none. */
int popco_schema_version(const char *op, int opset);

/* ---- import_attrs.c ------------------------------------------------------ */

/* Converted attributes; owns every string, list and tensor they point at.
** Subgraph attributes are converted by the importer (it knows scopes) and
** handed over to be freed. */
typedef struct popco_attrs {
    popc_attr *items;
    int n, cap;
    void **owned;          /* allocations to free */
    int n_owned, cap_owned;
    popc_tensor **tensors; /* tensor attributes, freed with the list */
    int n_tensors, cap_tensors;
    popc_graph **graphs;   /* subgraphs, freed with the list */
    int n_graphs, cap_graphs;
} popco_attrs;

void popco_attrs_free(popco_attrs *a);
/* np's attribute called name, or NULL. */
const Onnx__AttributeProto *popco_node_attr(const Onnx__NodeProto *np,
                                            const char *name);
/* np's INT attribute called name, or def when it has none. */
int64_t popco_node_attr_int(const Onnx__NodeProto *np, const char *name,
                            int64_t def);
/* Append one ONNX attribute (not GRAPH/GRAPHS: the importer adds those
** with popco_attrs_add_graph). where names the node in errors. */
popc_status popco_attrs_add_proto(popco_attrs *a,
                                  const Onnx__AttributeProto *ap,
                                  const popco_tensor_src *src,
                                  const char *where);
popc_status popco_attrs_add_int(popco_attrs *a, const char *name, int64_t v);
popc_status popco_attrs_add_float(popco_attrs *a, const char *name, double v);
popc_status popco_attrs_add_string(popco_attrs *a, const char *name,
                                   const char *v);
popc_status popco_attrs_add_ints(popco_attrs *a, const char *name,
                                 const int64_t *v, int64_t n);
/* Takes ownership of g. */
popc_status popco_attrs_add_graph(popco_attrs *a, const char *name,
                                  popc_graph *g);
popc_attr *popco_attrs_find(popco_attrs *a, const char *name);
/* Remove by name (no-op when absent). */
void popco_attrs_remove(popco_attrs *a, const char *name);

/* ---- upgrade.c ----------------------------------------------------------- */

/* A node being imported: its op and version may be rewritten, inputs
** appended (value ids; -1 absent) and attributes moved to inputs. */
typedef struct popco_node {
    const char *domain;    /* POPC_DOMAIN_ONNX or the file's domain */
    const char *op;
    int version;           /* the opset version to look the op up at */
    int *inputs;
    int n_inputs, cap_inputs;
    popco_attrs attrs;
    const char *name;
} popco_node;

struct popco_importer;

/* Rewrite an ai.onnx node from its form at `opset` to the form of the
** newest version popc registers, as onnx's version converter does.
** POPC_EUNSUPPORTED with the reason when a change cannot be expressed. */
popc_status popco_upgrade(struct popco_importer *im, popco_node *n,
                          int opset);
popc_status popco_node_add_input(popco_node *n, int value);

/* ---- fold.c / import.c --------------------------------------------------- */

/* The importer's state, shared by import.c, upgrade.c and fold.c. */
typedef struct popco_seqs popco_seqs; /* sequence.c */

/* Values offered for graph inputs (popc_onnx_import_file_candidates):
** those the graph needs at compile time are frozen. */
typedef struct popco_candidates {
    int n;
    const char *const *names;
    popc_tensor *const *values;
    int *frozen; /* NULL, or n flags: 1 for a candidate frozen */
} popco_candidates;

typedef struct popco_importer {
    const char *file;
    popco_tensor_src src;
    const popc_onnx_import_options *opt;
    const popco_candidates *cand; /* NULL: none (subgraphs have none) */
    popc_registry *reg;
    popc_graph *g;
    const popco_map *lean_map; /* initializers borrow its bytes (lean.c) */
    const struct popco_importer *parent; /* importing a subgraph: the outer
                                         ** graph's importer; else NULL */
    popco_seqs *seqs;          /* this graph's sequences; NULL: none yet */
    int64_t tensor_bytes;      /* src.bytes_made of the top importer */
} popco_importer;

/* ---- sequence.c -------------------------------------------------------- */

/* op is one of ONNX's sequence ops popc resolves at import. */
int popco_is_sequence_op(const char *op);
/* Apply one sequence op (np, named `where` in messages) to im's
** sequences; tensor results become values of im->g named as np's output.
** POPC_EUNSUPPORTED when a sequence would have to exist at run time. */
popc_status popco_sequence_node(popco_importer *im,
                                const Onnx__NodeProto *np, const char *where);
/* name is a sequence im made. */
int popco_is_sequence(const popco_importer *im, const char *name);
void popco_seqs_free(popco_seqs *s); /* NULL-safe */

/* Initializers (as constants), nodes and outputs of a subgraph into
** im->g, whose inputs the caller has added (subgraph.c). */
popc_status popco_import_body(popco_importer *im, const Onnx__ModelProto *mp,
                              const Onnx__GraphProto *gp);

/* ---- subgraph.c ------------------------------------------------------------ */

/* The node has a GRAPH attribute (If, Loop, Scan). */
int popco_has_subgraphs(const Onnx__NodeProto *np);

/* Import every GRAPH attribute of np into n: each becomes a popc graph
** whose inputs are the body's own inputs, with the dtype and shape the
** node gives them (Loop: iteration count, condition, loop-carried values;
** Scan: states, one slice of each scan input), followed by the values of
** the enclosing graph that any of the bodies reads. Those captured values
** are appended to n's inputs, in the same order, and counted by the INT
** attribute `__captures` (popc/plugin.h). */
popc_status popco_import_subgraphs(popco_importer *im,
                                   const Onnx__ModelProto *mp,
                                   const Onnx__NodeProto *np, popco_node *n,
                                   int opset, const char *where);

/* The graph has an initializer called name (IR < 4 lists them among
** the inputs too). */
int popco_is_initializer(const Onnx__GraphProto *gp, const char *name);

/* ---- compile_time.c -------------------------------------------------------- */

/* The graph inputs of gp that feed operands needed at compile time, in
** the order of gp's inputs: *names (malloc'd, also when *n is 0) of *n
** malloc'd strings; free with popc_onnx_free_names. POPC_ENOMEM naming
** file. */
popc_status popco_compile_time_names(const Onnx__GraphProto *gp,
                                     const char *file, char ***names, int *n);

/* A constant value (a copy of t is not taken: reference added). */
popc_status popco_add_constant(popco_importer *im, popc_tensor *t, int *id);

/* Try to compute the node's outputs at import: all inputs constant and
** the op foldable, or Shape/Size of a known shape. *folded = 1 and the
** outputs' constant ids in outputs[] when it did. */
popc_status popco_try_fold(popco_importer *im, const popco_node *n,
                           const popc_op_def *def, int n_outputs,
                           int *outputs, int *folded);

#endif /* POPC_ONNX_PRIV_H */
