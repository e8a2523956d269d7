/* layer/graph.h - what a layer that builds graph nodes for the user
** needs beyond the public popc/graph.h: a node added as a user's call
** adds it, the views and shape inference of an op before it is added, and
** the ops the core finds by role. The graph itself is
** core/graph/graph_priv.h.
*/
#ifndef POPC_LAYER_GRAPH_H
#define POPC_LAYER_GRAPH_H

#include "popc/graph.h"
#include "popc/plugin.h"

/* Add a node as popc_graph_add_node does for the user (the open block,
** the current scope and annotations, the caller's source location),
** named "<scope>/<base>" and made unique with a "_<n>" suffix; an
** unknown op is POPC_ECOMPILE. POPC_ESTATE after popc_block_end. */
popc_status popci_graph_add_named(popc_graph *g, const char *domain,
                                  const char *op, int version,
                                  const char *base, const int *inputs,
                                  int n_inputs, int *outputs, int n_outputs,
                                  const popc_attr *attrs, int n_attrs);

/* Views of these value ids as the graph knows them (data set for
** initializers and constants; -1 gives an empty view). *ready is 0 when a
** value is dangling or has no dtype yet (inference must wait). */
void popci_graph_input_views(const popc_graph *g, const int *ids, int n,
                             popc_view *in, int *ready);

/* Run def->infer on these input views and check what it produced (every
** output has a dtype, rank in range, non-negative dims). outs are zeroed
** first. */
popc_status popci_infer_run(const popc_op_def *def, const char *node_name,
    const popc_view *in, int n_in, popc_view *outs, int n_out,
    const popc_attrs *attrs, int training);

/* The return addresses recorded when node `node` of g was added (the
** innermost first; *frames borrowed from g), for popc_graph_node_source
** (profile/node_source.c); 0 with *frames NULL for a NULL g or a node out
** of range. */
int popci_graph_node_frames(const popc_graph *g, int node,
                            void *const **frames);

/* Give node dn of dst the call stack that added node sn of src (where it
** was added, popc_graph_node_source), for a copy of a graph. */
void popci_source_copy(popc_graph *dst, int dn, const popc_graph *src,
                       int sn);

/* popc_graph_set_initializer without the copy: g holds a reference to t
** (as popci_graph_clone_sharing's clone does), for a graph that only
** reads its weights, such as a compiled graph taken from the executable
** cache while the model keeps the weights. */
popc_status popci_graph_share_initializer(popc_graph *g, int value,
                                          const popc_tensor *t);

/* Look up the registered definition of every node's op, each distinct
** op once (a graph read from a file, e.g. a cached compiled graph, knows
** its ops only by name). */
void popci_graph_resolve_ops(popc_graph *g);

/* The registered definition of a node's op, looked up again (without
** caching it in g) when it was not known as the node was added; may be
** NULL. */
const popc_op_def *popci_graph_node_def_c(const popc_graph *g, int node);

/* The node named name, or -1 (NULL g: -1). */
int popci_graph_find_node(const popc_graph *g, const char *name);

/* Same shape and dtype (data ignored). */
int popci_view_same(const popc_view *a, const popc_view *b);

/* The op playing `role` in the global registry (popc_registry_find_role)
** in *out, or POPC_ENOTFOUND with a message that names the role, what
** needed it (`why`) and the fix. */
popc_status popci_role_op(popc_op_role role, const char *why,
                          const popc_op_def **out);

#endif /* POPC_LAYER_GRAPH_H */
