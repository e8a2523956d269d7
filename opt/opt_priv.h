/* opt_priv.h - what the passes of opt/ share: a sweep's view of the graph
** (who reads each value), pattern helpers and the pass table.
**
** A pass adds replacement nodes, points the uses of the values it replaces
** at the new ones (popc_graph_replace_uses) and marks the nodes it
** consumed as taken; the driver prunes the dead nodes after each pass and
** rescans. Within a sweep the read counts go stale only upward (a taken
** node still counts as a reader), which can only stop a match.
*/
#ifndef POPC_OPT_PRIV_H
#define POPC_OPT_PRIV_H

#include "popc/graph.h"
#include "popc/optimize.h"
#include "popc/registry.h"
#include "popc/tensor.h"

typedef struct opt_ctx {
    popc_graph *g;
    int level, training;
    const char *const *keep;
    int n_keep;
    int n_values, n_nodes;      /* at the sweep's start */
    int *uses;                  /* readers of each value, outputs included */
    int *reader;                /* a node reading the value (the only one
                                   when uses == 1), else -1 */
    unsigned char *taken;       /* nodes a rewrite consumed this sweep */
    popc_registry *reg;
} opt_ctx;

typedef struct opt_pass {
    const char *name;
    int level;                  /* lowest optimizationLevel that runs it */
    int inference_only;
    popc_status (*run)(opt_ctx *c, int *rewrites);
} opt_pass;

/* The passes, in the order they run (optimize.c). */
popc_status opt_fold_constants(opt_ctx *c, int *rewrites);
popc_status opt_fold_batchnorm(opt_ctx *c, int *rewrites);
popc_status opt_drop_identities(opt_ctx *c, int *rewrites);
popc_status opt_cancel_transposes(opt_ctx *c, int *rewrites);
popc_status opt_recognise_gelu(opt_ctx *c, int *rewrites);
popc_status opt_recognise_layernorm(opt_ctx *c, int *rewrites);
popc_status opt_recognise_attention(opt_ctx *c, int *rewrites);
popc_status opt_fuse_contractions(opt_ctx *c, int *rewrites);
/* Training graphs only (pass_linear.c). */
popc_status opt_linear_to_gemm(opt_ctx *c, int *rewrites);
popc_status opt_block_layout(opt_ctx *c, int *rewrites);
/* Lanes of the NCHWc blocks the layout pass makes (pass_layout.c); 0:
** none. */
int64_t opt_layout_block(void);

/* ---- the sweep (opt_ctx.c) ---------------------------------------------- */

/* Count every value's readers again (after a prune). */
popc_status opt_scan(opt_ctx *c);
void opt_ctx_free(opt_ctx *c);

/* Node n is a live, untaken ai.onnx (or "popc" when domain says so) node
** of op `op`. */
int opt_is(const opt_ctx *c, int n, const char *op);
int opt_is_in(const opt_ctx *c, int n, const char *domain, const char *op);
/* The node that alone reads value v, or -1 (more readers, a graph
** output, a kept value). */
int opt_sole_reader(const opt_ctx *c, int v);
/* v is a graph output or a kept value: readers outside the graph know
** it by its name, so it cannot become another value. */
int opt_exported(const opt_ctx *c, int v);
/* The producer of v when it is an untaken node, else -1. */
int opt_producer(const opt_ctx *c, int v);
/* The constant tensor of v (a CONSTANT value; never a weight), or NULL. */
const popc_tensor *opt_constant(const opt_ctx *c, int v);
/* v is a float32 constant holding one value (any shape of one element):
** *out receives it. */
int opt_scalar(const opt_ctx *c, int v, float *out);
/* The operand of binary node n that is not v (-1 when v is not one). */
int opt_other_operand(const opt_ctx *c, int n, int v);
/* A node other than `skip` with op `op` that reads v, or -1. */
int opt_reader_with(const opt_ctx *c, int v, const char *op, int skip);
/* try_at on every live node of (domain, op) in id order; *rewrites counts
** the nodes where it set *done. */
popc_status opt_each(opt_ctx *c, const char *domain, const char *op,
                     popc_status (*try_at)(opt_ctx *c, int n, int *done),
                     int *rewrites);
/* Node n's input i, or -1 when absent. */
int opt_input(const opt_ctx *c, int n, int i);
int opt_output(const opt_ctx *c, int n, int i);
/* Two views have the same dtype and shape. */
int opt_same_shape(const popc_view *a, const popc_view *b);
/* The op of the registry may be used (a plugin may lack it). */
int opt_has_op(const opt_ctx *c, const char *domain, const char *op);
/* Nodes a and b run in the same place (block, IPU, stage, phase), so one
** node may do the work of both. */
int opt_same_place(const opt_ctx *c, int a, int b);
/* A new float32 constant of the given shape, data copied from src (NULL:
** zeros); *id its value. */
popc_status opt_add_constant(opt_ctx *c, const char *base, const int64_t *dims,
                             int rank, const float *src, int *id,
                             float **data);
/* Add node d (its name is ignored) as "<base>/<suffix>", or
** "<base>/<suffix>_<k>" when that name is taken, with the annotations of
** `anchor`, so that it runs where anchor runs. *out: its first output;
** *node (may be NULL): the node. */
popc_status opt_add_beside(opt_ctx *c, int anchor, const char *base,
                           const char *suffix, const popc_node_desc *d,
                           int *out, int *node);
/* Add a node that replaces `last` (its first output): it takes last's
** name suffixed, annotations of `anchor`, and every reader of last's
** output reads its output instead. "fused" lists the consumed names. */
popc_status opt_replace(opt_ctx *c, int anchor, int last,
                        const popc_node_desc *d, int *out_value);

#endif /* POPC_OPT_PRIV_H */
