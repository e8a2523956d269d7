/* graph_priv.h - the graph IR's internals, shared by the core files that
** build, check, evaluate and transform graphs.
**
** Invariants: values and nodes live in arrays indexed by their id; ids are
** never reused while a graph lives (popc_graph_gradients compacts only the
** nodes and values it added itself). Every string and array a node or
** value points at is owned by the graph. A node's input ids may name a
** value that does not exist yet (a forward reference); popc_graph_verify
** reports those that never appear ("dangling") and the cycles they allow.
*/
#ifndef POPC_GRAPH_PRIV_H
#define POPC_GRAPH_PRIV_H

#include <stdarg.h>
#include <stddef.h>

#include "popc/graph.h"
#include "popc/registry.h"
#include "core/layer/graph.h"
#include "core/layer/graph_ids.h"
#include "core/layer/strbuf.h"

/* Annotations as stored: strings owned (may be NULL). */
/* Return addresses kept per node (core/graph/graph_source.c). */
#define POPCI_FRAMES 12

typedef struct popci_annot {
    char *scope;
    char *block;
    int ipu, stage, phase, recompute;
    double available_memory;
    /* the call stack that added the node (popc_graph_node_source); copied
    ** with the annotations, so derived nodes keep their origin's */
    void *frames[POPCI_FRAMES];
    int n_frames;
} popci_annot;

typedef struct popci_value {
    char *name;
    popc_value_kind kind;
    popc_view info;          /* dtype UNDEFINED until inferred; data NULL */
    popc_tensor *tensor;     /* initializer or constant (one reference) */
    int trainable;
    int producer;            /* node id, or -1 */
    int producer_slot;       /* output index in the producer */
} popci_value;

typedef struct popci_node {
    char *name;
    char *domain;
    char *op;
    int version;             /* resolved: never 0 for ai.onnx */
    int n_inputs, n_outputs;
    int *inputs;             /* -1: absent optional input */
    int *outputs;
    int n_attrs;
    popc_attr *attrs;        /* deep copies */
    popci_annot annot;
    const popc_op_def *def;  /* NULL while the op is unknown */
} popci_node;

/* Open-addressing map from name to id; keys point at the names owned by
** the values and nodes (stable: strings are never moved). */
typedef struct popci_name_slot {
    const char *key;         /* NULL: empty */
    int id;
} popci_name_slot;

typedef struct popci_name_map {
    popci_name_slot *slots;
    size_t cap;              /* power of two, or 0 */
    size_t used;
} popci_name_map;

typedef struct popci_update {
    int weight, value;
} popci_update;

struct popc_graph {
    char *name;
    popci_value *values;
    int n_values, cap_values;
    popci_node *nodes;
    int n_nodes, cap_nodes;
    int *inputs;
    int n_inputs, cap_inputs;
    int *outputs;
    int n_outputs, cap_outputs;
    popci_update *updates;
    int n_updates, cap_updates;
    popci_name_map value_names;
    popci_name_map node_names;
    /* current annotations for new nodes; the scope is a stack */
    char **scopes;
    int n_scopes, cap_scopes;
    char *scope_joined;      /* "a/b", NULL when the stack is empty */
    popci_annot annot;       /* annot.scope unused: see scopes */
    int n_constants;         /* for generated constant names */
    /* Block context (strategy/blocks.c): set when a block ended and no other
    ** began, so popc_graph_add_node refuses ops outside any block; the
    ** next automatic block id ("0", "1", ...) */
    int block_ended;
    int block_next_id;
    /* the file the graph was read from (core/graph/trust.c); NULL when the
    ** program built it */
    char *origin;
};

/* ---- graph.c ------------------------------------------------------------- */

/* Grow *arr (elements of elem bytes) to hold need; POPC_ENOMEM. */
popc_status popci_grow(void **arr, int *cap, int need, size_t elem);
#define POPCI_GROW(g, arr, cap, need) \
    popci_grow((void **)&(g)->arr, &(g)->cap, (need), sizeof *(g)->arr)

/* Add a node with explicit annotations (copied). name is used as given;
** NULL gives "<a->scope>/<op>_<id>".
** When unique_name is set, an existing name gets a "_<n>" suffix instead of
** failing with POPC_EEXIST. Shape inference runs at once if the op is
** known (require_known: an unknown op is POPC_ECOMPILE instead of being
** accepted). */
popc_status popci_graph_add_node_ex(popc_graph *g, const char *domain,
    const char *op, int version, const int *inputs, int n_inputs,
    int *outputs, int n_outputs, const popc_attr *attrs, int n_attrs,
    const char *name, const popci_annot *a, int unique_name,
    int require_known, int *node);

/* Constant with a name made unique from `base` (copied view data). */
popc_status popci_graph_add_constant_view(popc_graph *g, const char *base,
    const popc_view *v, int *id);

/* popci_graph_compact_tail is in core/layer/graph_ids.h. */


/* The registered definition of a node's op, looked up again if it was not
** known when the node was added (a plugin loaded since). May be NULL. */
const popc_op_def *popci_graph_node_def(popc_graph *g, int node);

/* ---- trust.c ------------------------------------------------------------- */

/* POPC_EPERM naming every node (subgraphs included) whose op runs foreign
** code (POPC_OP_FOREIGN) when g was read from a file and the user has not
** allowed foreign code; else POPC_OK. */
popc_status popci_graph_check_foreign(const popc_graph *g);
/* popc_graph_clone whose initializers share g's tensors (no copy): for a
** clone that never writes its weights' data. */
popc_status popci_graph_clone_sharing(const popc_graph *g, popc_graph **out);
/* popci_graph_node_def_c (the same without caching, for const graphs)
** is in core/layer/graph.h. */

/* ---- graph_source.c ----------------------------------------------------- */

/* Record the current call stack in a (the node being added by a user). */
void popci_source_capture(popci_annot *a);
/* Have glibc load what backtrace() needs (libgcc_s) now, before any
** plugin maps it as a dependency: glibc's own late dlopen of a library a
** module already pulled in leaks the loader's dependency list (40 bytes
** valgrind reports as definitely lost). The plugin loader calls it
** before it opens a module; once per process. */
void popci_source_prepare(void);
/* popci_source_copy, for copies of graphs: core/layer/graph.h. */

/* ---- graph_names.c ------------------------------------------------------ */

/* Unique name from base: base itself if free in map, else base_1,
** base_2, ... Returns a malloc'd string, NULL when out of memory. */
char *popci_unique_name(const popci_name_map *map, const char *base);

/* id, or -1 when absent. */
int popci_name_map_find(const popci_name_map *m, const char *name);
/* Room for one more key; POPC_ENOMEM. */
popc_status popci_name_map_reserve(popci_name_map *m);
/* Insert (after popci_name_map_reserve; key must stay valid). */
void popci_name_map_put(popci_name_map *m, const char *key, int id);
void popci_name_map_free(popci_name_map *m);
/* Rebuild both maps from the values and nodes (after ids moved). */
popc_status popci_graph_rebuild_names(popc_graph *g);
/* Drop each node's name scope from its name (disableModuleNamescope),
** keeping names unique. */
popc_status popci_graph_drop_scopes(popc_graph *g);

/* ---- graph_annot.c ------------------------------------------------------- */

void popci_annot_free(popci_annot *a);
popc_status popci_annot_copy(popci_annot *dst, const popci_annot *src);
/* Free the strings and set every integer to -1 ("not set"). */
void popci_annot_reset(popci_annot *a);
void popci_graph_clear_scopes(popc_graph *g);

/* ---- graph_attr.c --------------------------------------------------------- */

/* Deep copy n attributes (names, strings, lists, tensors). *out NULL when
** n == 0. Returns POPC_OK, POPC_EINVAL (bad type, missing name, duplicate
** name), POPC_ENOMEM. */
popc_status popci_attrs_copy(const popc_attr *src, int n, popc_attr **out);
/* popci_attrs_free is in core/layer/graph_ids.h. */

/* ---- growable string (graph_attr.c): core/layer/strbuf.h ------------- */

/* ---- topo.c ----------------------------------------------------------- */

/* Consumers of every value in CSR form: the nodes reading value v are
** idx[start[v] .. start[v + 1]) (a node appears once per input slot).
** Dangling inputs are ignored. Free with popci_consumers_free. */
typedef struct popci_consumers {
    int *start;   /* n_values + 1 */
    int *idx;
} popci_consumers;

popc_status popci_consumers_build(const popc_graph *g, popci_consumers *c);
void popci_consumers_free(popci_consumers *c);

/* Topological order, ties broken by node id. On a cycle returns
** POPC_ECOMPILE naming nodes on it. Dangling inputs are ignored. */
popc_status popci_graph_topo(const popc_graph *g, int *order);

/* ---- infer.c ------------------------------------------------------------ */

/* Run def->infer on these input views and check what it produced (every
** output has a dtype, rank in range, non-negative dims). outs are zeroed
** first. */
popc_status popci_infer_run(const popc_op_def *def, const char *node_name,
    const popc_view *in, int n_in, popc_view *outs, int n_out,
    const popc_attrs *attrs, int training);

/* Views of these value ids as the graph knows them (data set for
** initializers and constants; -1 gives an empty view). *ready is 0 when a
** value is dangling or has no dtype yet (inference must wait). */
void popci_graph_input_views(const popc_graph *g, const int *ids, int n,
                             popc_view *in, int *ready);

/* Infer node's outputs into outs (n_outputs views). *ran is 0 when the op
** is unknown or an input is not ready. */
popc_status popci_graph_infer_node(popc_graph *g, int node, int training,
                                   popc_view *outs, int *ran);

/* Same shape and dtype (data ignored). */
int popci_view_same(const popc_view *a, const popc_view *b);

/* ---- loss.c ------------------------------------------------------------- */

/* The one final loss of the graph (PopTorch's rule, semantics §3): loss
** nodes are those whose op has POPC_OP_LOSS; a loss whose result flows
** into another loss is not final. *loss_value receives output 0 of the
** final loss node. POPC_ECOMPILE "Couldn't find a loss in graph!" or
** "Multiple independent losses found in graph. ..." otherwise. */
popc_status popci_graph_final_loss(const popc_graph *g, int *loss_value);

#endif /* POPC_GRAPH_PRIV_H */
