/* layer/graph_ids.h - a graph's values and nodes by id, exactly as
** stored, for the layer that writes graphs as bytes and reads them back
** (encode/serialize.c) or lists them as text (encode/graph_text.c): every
** field a copy keeps, and a graph rebuilt id by id, without shape
** inference or renaming, then checked as a whole; and the renumbering
** that drops dead nodes (opt/prune.c).
** The IR itself is core/graph/graph_priv.h.
*/
#ifndef POPC_LAYER_GRAPH_IDS_H
#define POPC_LAYER_GRAPH_IDS_H

#include "popc/graph.h"

/* A node's annotations (the graph's current ones: scope unused). Strings
** may be NULL (not set); integers are -1 when not set. */
typedef struct popci_annot_rec {
    const char *scope;
    const char *block;
    int ipu, stage, phase, recompute;
    double available_memory;
} popci_annot_rec;

typedef struct popci_value_rec {
    const char *name;
    popc_value_kind kind;
    int trainable;
    popc_view info;          /* dtype UNDEFINED until inferred; data NULL */
    popc_tensor *tensor;     /* initializer or constant, else NULL */
    int producer;            /* node id, or -1 */
    int producer_slot;       /* output index in the producer */
} popci_value_rec;

typedef struct popci_node_rec {
    const char *name, *domain, *op;
    int version;
    const int *inputs;       /* -1: absent optional input */
    const int *outputs;
    int n_inputs, n_outputs;
    popc_attr *attrs;
    int n_attrs;
    popci_annot_rec annot;
} popci_node_rec;

/* What the builder gives the next node: the scope stack, the current
** annotations and the counter of generated constant names. */
typedef struct popci_graph_state {
    const char *const *scopes;
    int n_scopes;
    popci_annot_rec annot;
    int n_constants;
} popci_graph_state;

/* ---- reading: borrowed, valid while g is not changed ---------------- */

/* Value v / node n of g (ids in range). */
void popci_graph_value_rec(const popc_graph *g, int v, popci_value_rec *out);
void popci_graph_node_rec(const popc_graph *g, int n, popci_node_rec *out);
void popci_graph_state_get(const popc_graph *g, popci_graph_state *out);

/* ---- rebuilding, id by id ------------------------------------------- */

/* Room for n_values values and n_nodes nodes in all, for a reader that
** knows its counts before it appends. POPC_ENOMEM. */
popc_status popci_graph_reserve(popc_graph *g, int n_values, int n_nodes);

/* Append a value (the next id) or a node. Strings and id arrays are
** copied; the value's tensor and the node's attributes (allocated as
** popci_attrs_free frees them) are taken, even on failure. Nothing is
** checked until popci_graph_seal. POPC_ENOMEM. */
popc_status popci_graph_put_value(popc_graph *g, const popci_value_rec *v);
popc_status popci_graph_put_node(popc_graph *g, const popci_node_rec *n);
/* The graph's inputs, outputs and buffer updates (updates: n_updates
** pairs of weight and value ids), replacing any. POPC_ENOMEM. */
popc_status popci_graph_put_ids(popc_graph *g, const int *inputs,
                                int n_inputs, const int *outputs,
                                int n_outputs, const int *updates,
                                int n_updates);
/* The builder state (annot.scope is ignored: the stack holds it). */
popc_status popci_graph_put_state(popc_graph *g, const popci_graph_state *s);

/* ---- checking and renumbering -------------------------------------- */

/* Index the names and check that ids are in range, producers and their
** outputs agree and names are unique, so that nothing downstream indexes
** out of bounds. *why is NULL, or a static text of the first problem.
** POPC_ENOMEM. */
popc_status popci_graph_seal(popc_graph *g, const char **why);

/* Drop nodes [first_node, n_nodes) and values [first_value, n_values)
** that keep[] does not mark (keep_node/keep_value are indexed from the
** first id), renumbering the survivors in order. remap[v - first_value]
** receives the new id of each dropped-range value or -1. Only nodes and
** values that nothing outside the range refers to may be dropped (the
** dead code popc_graph_prune drops, opt/prune.c). */
popc_status popci_graph_compact_tail(popc_graph *g, int first_node,
    const unsigned char *keep_node, int first_value,
    const unsigned char *keep_value, int *remap);

/* Free n attributes read for popci_graph_put_node (a failed read). */
void popci_attrs_free(popc_attr *a, int n);

#endif /* POPC_LAYER_GRAPH_IDS_H */
