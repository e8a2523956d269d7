/* helpers.h - PopTorch's op helpers for graphs built in C (since 0.3.0):
** poptorch.for_loop, dynamic_slice and dynamic_update, serializedMatMul,
** set_overlap_for_input / set_overlap_for_output, MultiConv,
** ctc_beam_search_decoder, removeBlocks, ipuHardwareIsAvailable and
** ipuHardwareVersion.
**
** Each helper adds ordinary nodes to a popc_graph (ONNX Loop, Gather,
** ScatterElements, MatMul, ...), so the result trains, compiles to an
** executable and runs on every backend like any other graph. Value ids
** are those of popc/graph.h; every helper checks its inputs' dtypes and
** shapes (they must be known: inputs, weights, or outputs of nodes whose
** shapes were inferred) and reports a mistake naming the helper, the
** value and the fix. Helpers are not thread-safe on one graph.
**
** The conventions of popc/status.h (ownership, status codes, threads)
** apply.
*/
#ifndef POPC_HELPERS_H
#define POPC_HELPERS_H

#include <stdint.h>

#include "popc/graph.h"
#include "popc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* poptorch.for_loop(count, body, inputs): run body count times on the
** device, each iteration reading what the previous one returned.
**
** body has n_inputs inputs and n_inputs outputs, output i with input i's
** dtype and shape; it is copied (the caller keeps it). The weights of body
** (its initializers) become weights of g named "<name>/<weight>", so they
** train, shared by every iteration. The Loop node and its constant
** "<name>/trips" take the name too; name NULL gives "for_loop", or
** "for_loop_<n>" when g already uses that (a second loop). Values of g
** that body needs besides its inputs cannot be referenced from another
** graph: make them body weights, or
** loop-carried inputs returned unchanged. count >= 0 (0 returns the
** inputs), n_inputs >= 1. outputs[i] receives the value of input i after
** the last iteration. Gradients flow through every iteration to the inputs
** and the weights.
**
** POPC_OK, POPC_EINVAL (NULL argument, no input, count < 0, a body that
** does not fit the inputs), POPC_EEXIST (a name is taken in g),
** POPC_ESTATE (after popc_block_end), POPC_ENOMEM, or the Loop op's shape
** inference error; g may keep the weights lifted before a failure.
** Not thread-safe on one graph; body is only read. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_for_loop(popc_graph *g,
    const char *name, int64_t count, const popc_graph *body,
    const int *inputs, int n_inputs, int *outputs);

/* poptorch.dynamic_slice(tensor, dim, start, size, step): size elements of
** x along dim from a start known only at run time (start: an int32 or
** int64 value with one element). As on the IPU (Poplar's dynamic slice),
** a start outside 0..dim_size-1 reads from 0, and a slice running past the
** end wraps around to the start of the dimension. Only step 1 is
** supported (PopTorch's own limit in practice); gradients flow to x.
** POPC_OK, POPC_EINVAL (g or y NULL, x of unknown shape, dim or size out
** of range, a bad start), POPC_EUNSUPPORTED (step other than 1),
** POPC_ESTATE (after popc_block_end), POPC_ENOMEM. Not thread-safe on one
** graph. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_dynamic_slice(popc_graph *g, int x,
    int dim, int start, int64_t size, int64_t step, int *y);

/* poptorch.dynamic_update(input, src, dim, start, size): input with size
** elements along dim, from a run-time start, replaced by src (src has
** input's rank and dtype, size along dim, input's other dims). Offsets
** follow popc_dynamic_slice's rule. Gradients flow to input (zero where
** replaced) and to src. POPC_OK, POPC_EINVAL (g or y NULL, input of
** unknown shape, dim or size out of range, src of another type or shape,
** a bad start), POPC_ESTATE (after popc_block_end), POPC_ENOMEM. Not
** thread-safe on one graph. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_dynamic_update(popc_graph *g,
    int input, int src, int dim, int start, int64_t size, int *y);

/* poptorch.MatMulSerializationMode: which dimension of A (M x K) times B
** (K x N) serializedMatMul splits. */
typedef enum popc_matmul_serialization {
    POPC_MATMUL_SERIALIZE_DISABLED = 0,       /* an ordinary MatMul */
    POPC_MATMUL_SERIALIZE_INPUT_CHANNELS,     /* split M */
    POPC_MATMUL_SERIALIZE_REDUCING_DIM,       /* split K */
    POPC_MATMUL_SERIALIZE_OUTPUT_CHANNELS     /* split N */
} popc_matmul_serialization;

/* poptorch.serializedMatMul(lhs, rhs, mode, factor, keep_precision): *out
** = lhs @ rhs (numpy matmul, as ONNX MatMul) computed as factor smaller
** products one after the other, so the device needs about 1/factor of the
** split operands' and partials' temporary memory, at the price of factor
** syncs (the ipumodel report's "temp_bytes" and "serial" per op).
** factor must divide the split dimension (checked by shape inference:
** here when the operands' shapes are known, else at popc_graph_verify).
** M and N splits give exactly the plain MatMul's values; a K split adds
** the partial products in order, rounded to float16 after each addition
** for a float16 model (model.half()) unless keep_precision. The backward
** MatMuls are serialized too (dA and dB as PopART splits them).
** POPC_OK, POPC_EINVAL (g or out NULL, a bad mode, factor < 1 or not a
** divisor, operands that do not multiply), POPC_ESTATE (after
** popc_block_end), POPC_ENOMEM. Not thread-safe on one graph.
** Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_serialized_matmul(popc_graph *g,
    int lhs, int rhs, popc_matmul_serialization mode, int64_t factor,
    int keep_precision, int *out);

/* Serializes an existing MatMul or Gemm node the same way (op(A) op(B) for
** a Gemm): a Linear layer of popc/layers.h, or a product of an imported
** ONNX model. Mode DISABLED makes it an ordinary product again.
** POPC_OK, POPC_EINVAL naming the node for a bad node id or mode, another
** op, operands of unknown shape, or a factor that does not divide the
** split dimension; POPC_ENOMEM. Not thread-safe on one graph.
** Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_serialize_matmul_node(
    popc_graph *g, int node, popc_matmul_serialization mode, int64_t factor,
    int keep_precision);

/* poptorch.OverlapMode (the values of POPC_ATTR_OVERLAP_*, popc/attrs.h). */
typedef enum popc_overlap_mode {
    /* the host copies the tensor only when the device needs it */
    POPC_OVERLAP_MODE_NONE = POPC_OVERLAP_NONE,
    /* preload the next micro-batch of the accumulation loop on I/O tiles */
    POPC_OVERLAP_MODE_ACCUMULATION_LOOP = POPC_OVERLAP_ACCUMULATION_LOOP,
    /* also across device iterations: twice the I/O-tile buffers */
    POPC_OVERLAP_MODE_DEVICE_ITERATION_LOOP =
        POPC_OVERLAP_DEVICE_ITERATION_LOOP
} popc_overlap_mode;

/* poptorch.set_overlap_for_input(input, mode): *out is the graph input
** `input` passed through an Identity whose host copy overlaps compute;
** read *out instead of input. Mode NONE returns the value itself. As in
** PopTorch, compiling needs setExecutionStrategy ShardedExecution (not
** pipelined, even on one IPU), I/O tiles (TensorLocations.numIOTiles
** >= 32) and outputMode All or Sum; else the compile fails with
** POPC_EINVAL and PopTorch's message. On the IPU model the copies then
** hide behind compute (all but the first of each accumulation loop, or of
** each run of device iterations) and their buffers take I/O-tile memory:
** the report's "memory.io_tiles" and "cycles". Results never change.
** POPC_OK, POPC_EINVAL (g or out NULL, a bad mode, input not an input of
** g), POPC_ESTATE (after popc_block_end), POPC_ENOMEM. Not thread-safe on
** one graph. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_set_overlap_for_input(
    popc_graph *g, int input, popc_overlap_mode mode, int *out);
/* poptorch.set_overlap_for_output(output, mode): *out passes `output`
** through an Identity whose copy to the host overlaps compute; add *out
** as the graph's output (popc_graph_add_output). Mode NONE returns the
** value itself. Compiling needs what popc_set_overlap_for_input says.
** POPC_OK, POPC_EINVAL (g or out NULL, a bad mode or value id),
** POPC_ESTATE (after popc_block_end), POPC_ENOMEM. Not thread-safe on one
** graph. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_set_overlap_for_output(
    popc_graph *g, int output, popc_overlap_mode mode, int *out);

/* poptorch.MultiConv: the convolutions (ONNX Conv nodes) added to g between
** popc_multiconv_begin and popc_multiconv_end are planned together, like
** `with poptorch.MultiConv():`. Under the parallel plan the IPU model runs
** them at once on disjoint tiles, so they cost the slowest of them and one
** sync (the report's "parallel_with" and "first_tile" per op); the serial
** plan leaves them independent. Their values are those of the separate
** convolutions. The settings (PopTorch's MultiConv methods) are given at
** the end, once for all convolutions or as lists in the order the
** convolutions were added; backward convolutions inherit them. */
typedef struct popc_multiconv popc_multiconv;

/* poptorch.MultiConvPlanType. */
typedef enum popc_multiconv_plan_type {
    POPC_MULTICONV_PLAN_PARALLEL = POPC_MULTICONV_PARALLEL,
    POPC_MULTICONV_PLAN_SERIAL = POPC_MULTICONV_SERIAL
} popc_multiconv_plan_type;

typedef struct popc_multiconv_options {
    uint32_t size;             /* set by popc_multiconv_options_init */
    /* entries of each list below that is not NULL (one per convolution) */
    int n_convs;
    /* availableMemoryProportions, each in (0, 1); 0 leaves the default */
    double available_memory_proportion;
    const double *available_memory_proportions;
    /* partialsTypes: POPC_DTYPE_F32 or POPC_DTYPE_F16 (half partials need
    ** a float16 model, popc_graph_to_half); UNDEFINED: the option's */
    popc_dtype partials_type;
    const popc_dtype *partials_types;
    /* enableConvDithering: 1 or 0; -1: Training.setConvolutionDithering.
    ** Dithering needs the serial plan (not supported yet in parallel). */
    int conv_dithering;
    const int *conv_dithering_list;
    popc_multiconv_plan_type plan_type;   /* planType (parallel) */
    double cycle_back_off;                /* cycleBackOff in [0, 1] (0.1) */
    int64_t per_conv_reserved_tiles;      /* perConvReservedTiles (50) */
} popc_multiconv_options;

/* Fills *o (not NULL) with PopTorch's defaults (the values in parentheses
** above) and sets o->size. Thread-safe: it writes *o only. Since 0.3.0. */
POPC_API void popc_multiconv_options_init(popc_multiconv_options *o);

/* Opens a scope on g. The scope is the handle *mc, which remembers g and
** its node count: every Conv node added to g until popc_multiconv_end
** joins it, whoever adds it. There is no per-thread or process-wide
** state, so scopes on different graphs are independent; two scopes open
** on one graph overlap, and of those sharing a convolution the one closed
** first takes it and closing the other fails. The caller owns *mc until
** popc_multiconv_end frees it; g must outlive it. POPC_OK, POPC_EINVAL
** (g or mc NULL), POPC_ENOMEM. Not thread-safe on one graph.
** Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_multiconv_begin(popc_graph *g,
    popc_multiconv **mc);

/* Closes the scope and frees mc (always). opts NULL: the defaults.
** POPC_OK; POPC_EINVAL naming the setting or convolution when mc is NULL,
** the scope holds no convolution, opts->size was not set by
** popc_multiconv_options_init, a list's length differs from the
** convolutions', a value is out of range, or a convolution is already in
** another MultiConv; POPC_ENOMEM. A parallel group the IPU model cannot
** plan (reserved tiles beyond the IPU) fails at compile. Not thread-safe
** on one graph. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_multiconv_end(popc_multiconv *mc,
    const popc_multiconv_options *opts);

/* poptorch.ctc_beam_search_decoder(probs, lengths, blank, beam_width,
** top_paths): log_probs [T, B, C] float32 log probabilities, lengths [B]
** int32 or int64. outputs[0] receives the paths' log probabilities
** [B, top_paths] float32, outputs[1] their lengths [B, top_paths] int32,
** outputs[2] the paths [B, top_paths, T] int32, padded with blank. CTC
** prefix beam search with a total order on candidates (probability, then
** shorter, then lexicographically smaller): ops/popc/ctc_beam.c states the
** rules. Inference only (no gradient). POPC_OK, POPC_EINVAL (g or outputs
** NULL; shapes, dtypes, blank, beam_width or top_paths the op refuses),
** POPC_ESTATE (after popc_block_end), POPC_ENOMEM. Not thread-safe on one
** graph. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_ctc_beam_search_decoder(
    popc_graph *g, int log_probs, int lengths, int blank, int beam_width,
    int top_paths, int outputs[3]);

/* poptorch.removeBlocks(module): every node of g loses its block, IPU,
** stage and phase annotations (popc/blocks.h), as do nodes added later:
** the model then runs on one IPU whatever execution strategy its options
** name. Name scopes, recomputation and available-memory annotations stay,
** but name scopes open on g merge into one (a later popc_graph_pop_scope
** closes them all). Ops may be added again after popc_block_end. POPC_OK,
** POPC_EINVAL (g NULL), POPC_ENOMEM. Not thread-safe on one graph.
** Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_remove_blocks(popc_graph *g);

/* poptorch.ipuHardwareIsAvailable(num_ipus): whether IPU hardware with at
** least num_ipus IPUs is present. popc's backends model IPUs (ipumodel)
** or compile for them (offline) but drive no hardware: 0. Thread-safe.
** Since 0.3.0. */
POPC_API int popc_ipu_hardware_is_available(int num_ipus);

/* poptorch.ipuHardwareVersion(): the IPU version of the hardware present.
** Without hardware (always, with popc's backends) it fails as PopTorch
** raises: POPC_ENOTFOUND "No IPU hardware is available...", with
** *version (may be NULL) set to -1. Thread-safe. Since 0.3.0. */
POPC_API POPC_NODISCARD popc_status popc_ipu_hardware_version(int *version);

#ifdef __cplusplus
}
#endif
#endif /* POPC_HELPERS_H */
