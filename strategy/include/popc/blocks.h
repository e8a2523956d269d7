/* blocks.h - PopTorch's Block / BeginBlock / Stage / Phase annotations for
** the C builder.
**
** A block groups the ops added between popc_block_begin and popc_block_end
** (or the next popc_block_begin): every node added meanwhile carries the
** block's id and, when one is given, its IPU (popc_annotations.block and
** .ipu). Ops added before any block run on IPU 0, stage 0. Once a block has
** ended, adding an op before another block begins fails with POPC_ESTATE
** "No active Block, all the ops must belong to a Block"
** (popc_graph_set_annotations also leaves the block context).
**
** When a model is compiled, the execution strategy (option
** setExecutionStrategy and setExecutionStrategy.autoStage) turns blocks into
** stages and IPUs:
**   - a stage given explicitly (popc_graph_set_stages, or an annotation
**     with stage >= 0) wins; its IPU is the stage's IPU, else the block's,
**     else the stage id;
**   - AutoStage SameAsIpu (the default): stage = the block's IPU; a block
**     without one fails with POPC_EINVAL "poptorch.AutoStage.SameAsIpu was
**     selected but no IPU was specified for block {id}";
**   - AutoStage AutoIncrement: each new block id, in the order the ops were
**     added, gets the next stage 1, 2, ... (ops before any block are stage
**     0; a block id used again keeps its stage); IPU = the block's, else
**     the stage id.
** PipelinedExecution pipelines the model when it uses more than one IPU:
** F = 1 + the number of IPU changes in op order forward stages (consecutive
** stages on one IPU merge; coming back to an IPU adds a stage), and
** training needs gradientAccumulation >= 2F - 1, inference
** deviceIterations >= F. A node may not read a value computed in a later
** stage: with SameAsIpu, blocks on IPUs 0, 1, 0 have stage ids 0, 1, 0
** and fail with POPC_EINVAL "poptorch.AutoStage.SameAsIpu gives block C
** (IPU 0) stage id 0, but it reads '...' from block B in the later stage
** 1: ..." (return to an IPU with AutoIncrement or explicit stages).
** ShardedExecution runs the stages one after the
** other on their IPUs, with no such constraint. The phased strategies run
** the phases of popc_graph_set_stages (or of phase annotations) in order,
** forward phases ascending and the backward pass descending (a node
** without a phase joins the latest phase it reads from; none at all fails
** with "There is currently no AutoStage for PhasedExecution, please
** explicitly specify the phases"); ParallelPhasedExecution needs even
** phases on even IPUs and odd phases on odd IPUs. With
** setExecutionStrategy.tensorsLiveness OffChip*, activations read in a
** later phase (or, OffChipAfterFwd, in the backward pass) are counted off
** chip in between (popc_model_get_plan_info, the ipumodel memory map).
**
** Not thread-safe: one thread builds a graph at a time.
**
** Since 0.1.0 unless a function says otherwise; the conventions of
** popc/status.h (ownership, status codes, threads) apply.
*/
#ifndef POPC_BLOCKS_H
#define POPC_BLOCKS_H

#include "popc/status.h"
#include "popc/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Start a block (entering `with poptorch.Block(user_id, ipu_id)`,
** Block.start, BeginBlock): nodes added from now on carry block user_id
** (copied; NULL: the next automatic id "0", "1", ...) and ipu_id (-1: none,
** resolved as above). Their stage and phase annotations are reset to -1;
** the name scope, recompute and available-memory annotations are kept.
** Starting a block while another is active switches to the new one.
** POPC_OK, POPC_EINVAL (NULL graph, empty user_id, ipu_id < -1),
** POPC_ENOMEM. Not thread-safe on one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_block_begin(popc_graph *g,
    const char *user_id, int ipu_id);

/* End the active block (leaving the `with` statement). Until the next
** popc_block_begin, popc_graph_add_node fails with "No active Block, all
** the ops must belong to a Block". POPC_OK, POPC_ESTATE when no block is
** active, POPC_EINVAL for a NULL graph. Not thread-safe on one graph.
** Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_block_end(popc_graph *g);

/* Block.useAutoId(): automatic ids start again at "0". NULL-safe. Not
** thread-safe on one graph. Since 0.1.0. */
POPC_API void popc_block_use_auto_id(popc_graph *g);

/* One stage of an explicit strategy: PipelinedExecution("A", "B",
** Stage("C", "D").ipu(1)), or, with a phase, one Stage of a Phase of
** SerialPhasedExecution / ParallelPhasedExecution. */
typedef struct popc_stage_spec {
    const char *const *blocks; /* block ids of the stage */
    int n_blocks;
    int ipu;                   /* Stage.ipu(n); -1: the blocks' own IPU,
                                  else the stage id */
    int phase;                 /* phase of the stage; -1: none */
} popc_stage_spec;

/* Give every node of the listed blocks its stage (the position in
** stages[]), the stage's IPU when set and its phase when set, as node
** annotations. Nodes outside any block keep theirs. All or nothing:
** POPC_EINVAL "{block} associated with more than one stage" when a block
** is listed twice, "Unknown Block '{id}' list of expected Blocks: [...]"
** when a node's block is not listed, or for a NULL graph or a bad spec
** (n_stages < 1, a stage without blocks, an empty block id, ipu or phase
** < -1); else POPC_OK. Not thread-safe on one graph. Since 0.1.0. */
POPC_API POPC_NODISCARD popc_status popc_graph_set_stages(popc_graph *g,
    const popc_stage_spec *stages, int n_stages);

#ifdef __cplusplus
}
#endif
#endif /* POPC_BLOCKS_H */
